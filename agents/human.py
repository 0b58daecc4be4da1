"""The `human` agent: a person at the terminal types the commands.

Unreadable commands are explained and asked again without spending a step (the same
re-ask an LLM agent gets). `help` shows the rules and the valid commands; `quit` ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TextIO

from textenvs.core.parsing import ParseError
from textenvs.episodes.protocol import Agent, Decision

HELP = "Type a command, 'help' for the rules and commands, or 'quit' to stop."


class HumanAgent(Agent):
    name = "human"

    def __init__(self, read: Callable[[str], str] = input, out: TextIO | None = None) -> None:
        self._read = read
        self._out = out

    def _say(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    async def _read_line(self, prompt: str) -> str:
        """`read(prompt)` in a daemon thread: Ctrl-C ends the game at once, where a pool
        thread blocked in `input()` would hold the exit until Enter is pressed."""
        loop = asyncio.get_running_loop()
        line: asyncio.Future[str] = loop.create_future()

        def deliver(text: str | None, error: BaseException | None) -> None:
            if line.done():  # the game was cancelled meanwhile
                return
            if error is not None:
                line.set_exception(error)
            else:
                line.set_result(text or "")

        def read() -> None:
            try:
                text, error = self._read(prompt), None
            except BaseException as exc:  # EOFError above all: the awaiting task raises it
                text, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(deliver, text, error)

        threading.Thread(target=read, name="textenvs-input", daemon=True).start()
        return await line

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        self._say("\n" + observation)
        reasks = 0
        while True:
            try:
                line = await self._read_line("> ")
            except EOFError:
                return Decision("", outcome="quit", error="input ended")
            command = line.strip()
            lowered = command.lower()
            if lowered in ("quit", "exit", "q"):
                return Decision("", outcome="quit")
            if lowered in ("help", "?", "h", "rules"):
                self._say(self.context.rules)
                self._say("Valid commands now: " + "; ".join(info["valid_commands"]))
                continue
            try:
                self.context.parse(command)
            except ParseError as exc:
                reasks += 1
                self._say(f"Cannot read that: {exc.message}")
                self._say("Valid commands: " + "; ".join(exc.valid or info["valid_commands"]))
                self._say(HELP)
                continue
            return Decision(command, raw=line, reasks=reasks)
