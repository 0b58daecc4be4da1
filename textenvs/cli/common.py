"""Options and output shared by the commands that play episodes (`run`, `play`, `eval`)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import secrets
import shlex
import sys
from collections.abc import Callable
from typing import Any

from textenvs.agents import AGENTS, Agent, make_agent
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.options import add_llm_options, llm_config_from_args
from textenvs.core.extras import install_hint
from textenvs.core.redact import Scrubber, secrets_in_data, secrets_in_url
from textenvs.episodes.record import EpisodeResult, Turn
from textenvs.episodes.specs import try_reset_options

# Exit codes of `run` and `eval` beyond 0 (done) and 1 (incomplete).
EXIT_USAGE = 2  # a bad option, an unusable --out, a failed preflight
EXIT_AGENT_ERRORS = 3  # finished, but some episodes ended in agent errors
EXIT_STOPPED = 4  # stopped early: the fail-fast checks saw a run that cannot succeed


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        required=True,
        choices=[a for a in AGENTS if a != "human"],
        help="who plays: 'random' (uniform random commands), 'scripted' (the scenario's "
        "heuristic, reads only the observation), 'reactive' (em-anomaly, squad-recon: acts "
        "on the current observation alone, no memory), 'learner' (magnetic-field and em-anomaly: "
        "starts ignorant and learns across --trials from what episodes show), 'llm' (an "
        "OpenAI-compatible model)",
    )
    add_llm_options(parser)
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="with --agent llm: skip the check of the endpoint, key and model (one models "
        "list or one 1-token completion) that runs before any episode",
    )


def agent_factory(
    args: argparse.Namespace, learned: dict[str, Any] | None = None
) -> Callable[[], Agent]:
    """Builds fresh agents as the options say (and, for an LLM agent, with the settings
    preflight `learned`). Picklable (Ray actors build agents with it) and settled here: an
    --agent-config file is read once, where the command runs."""
    if args.agent == "llm":
        config = llm_config_from_args(args)
        if learned:
            config = LLMConfig.model_validate({**config.model_dump(), **learned})
        return functools.partial(make_agent, "llm", config=config)
    return functools.partial(make_agent, args.agent)


def agent_from_args(args: argparse.Namespace, learned: dict[str, Any] | None = None) -> Agent:
    return agent_factory(args, learned)()


def fail(args: argparse.Namespace, message: str, code: int = EXIT_USAGE) -> SystemExit:
    """Print `textenvs CMD: error: message` on stderr; raise the result to exit."""
    print(f"textenvs {args.command}: error: {message}", file=sys.stderr, flush=True)
    return SystemExit(code)


def missing_extra(args: argparse.Namespace, who: str, exc: ImportError, *extras: str) -> SystemExit:
    """The error line for an optional extra that is not installed: what needs it, the
    module found missing, and the pip command this installation needs."""
    missing = getattr(exc, "name", None) or str(exc)
    return fail(
        args,
        f"{who} needs the [{extras[0]}] extra ({missing} is missing): {install_hint(*extras)}",
    )


def preflight(
    args: argparse.Namespace, agent: Agent, scrub: Scrubber, envs: list[str] | None = None
) -> dict[str, Any]:
    """For an LLM agent, check the endpoint, key and model once (unless --no-preflight),
    and that the rules and one observation of each of `envs` fit the prompt budget under
    the server's context; a failure exits at once with one line. Returns the settings the
    server showed (its context window, its json-mode form) for `agent_factory`."""
    config = getattr(agent, "cfg", None)
    if args.no_preflight or not isinstance(config, LLMConfig):
        return {}
    from textenvs.agents.llm.preflight import PreflightError, check_learning, first_prompt_fits

    try:
        confirmed, learned = check_learning(config)
        config = LLMConfig.model_validate({**config.model_dump(), **learned})
        options = env_options_from_args(args) if getattr(args, "env_options", None) else None
        for name in envs or []:
            first_prompt_fits(config, name, options)
    except PreflightError as exc:
        raise fail(args, scrub.text(f"preflight: {exc}")) from None
    if config.base_urls:  # which of the endpoints answered
        print(scrub.text(f"note: preflight: {confirmed}"), file=sys.stderr, flush=True)
    return learned


def scrubber_for(args: argparse.Namespace, agent: Agent) -> Scrubber:
    """The secrets this command knows of: credentials in --env-url, the service token and,
    for an LLM agent, the API key, credentials in its base URL and key-like --extra-body
    fields."""
    from textenvs.service.client import TOKEN_ENV

    found = [*secrets_in_url(getattr(args, "env_url", None)), os.environ.get(TOKEN_ENV)]
    config = getattr(agent, "cfg", None)
    if isinstance(config, LLMConfig):
        found += secrets_in_url(config.resolved_base_url()) + secrets_in_data(config.extra_body)
        found += [secret for url in config.base_urls for secret in secrets_in_url(url)]
        found.append(os.environ.get(config.api_key_env))
    return Scrubber(found)


def seed_from_args(seed: int | None) -> int:
    """The given seed, or a fresh one (printed, so the episode can be replayed)."""
    return seed if seed is not None else secrets.randbelow(2**31)


def print_turn(turn: Turn, scrub: Scrubber | None = None) -> None:
    """The observation the agent saw, then its command (and any reward it earned)."""
    print()
    print(turn.observation)
    reward = f"   [reward {turn.reward:+g}]" if turn.reward else ""
    command = scrub.text(turn.command) if scrub is not None else turn.command
    print(f"\n> {command}{reward}", flush=True)


def print_outcome(result: EpisodeResult, scrub: Scrubber | None = None) -> None:
    error = scrub.text(result.error) if scrub is not None and result.error else result.error
    print(
        f"\nOutcome: {result.outcome} | return {result.total_reward:g} | "
        f"steps {result.steps} | invalid commands {result.invalid_actions}"
        + (f" | error: {error}" if error else "")
    )


def env_argument(parser: argparse.ArgumentParser) -> None:
    """The one scenario a command plays or shows, named as `textenvs list` names it."""
    parser.add_argument("env", metavar="ENV", help="scenario name, e.g. treasure-hunt")


def env_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-url",
        metavar="URL",
        default=None,
        help="play on a textenvs service (e.g. http://host:8000) instead of locally; "
        "a bearer token is read from $TEXTENVS_TOKEN",
    )


def env_option_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-option",
        dest="env_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the scenario's reset, e.g. 'level=0' for magnetic-field or "
        "megacity (levels 0-3) (repeatable; values are read as JSON when they parse, else "
        "as text)",
    )


def env_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """`--env-option KEY=VALUE` pairs as reset options ('2' -> 2, 'true' -> True)."""
    options: dict[str, Any] = {}
    for pair in args.env_options:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--env-option takes KEY=VALUE, got {pair!r}")
        options[key.strip()] = option_value(value)
    return options


def option_value(text: str) -> Any:
    """A `--env-option` value: JSON where it parses ('2' -> 2, 'true' -> True), else text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def env_option_flags(options: dict[str, Any]) -> str:
    """The `--env-option KEY=VALUE` flags, as shell text, that give back `options` (the
    inverse of env_options_from_args): a text that would parse as JSON is written as JSON
    text. Empty for no options."""
    flags = []
    for key, value in options.items():
        plain = isinstance(value, str) and option_value(value) == value
        text = value if plain else json.dumps(value)
        flags += ["--env-option", f"{key}={text}"]
    return shlex.join(flags)


def checked_env_options(args: argparse.Namespace, env: Any, seed: int) -> dict[str, Any] | None:
    """The reset options, after trying them on `env`: a bad key or value is a one-line
    error (exit 2), not a traceback."""
    try:
        options = env_options_from_args(args)
        if options:
            try_reset_options(env, options, seed)
    except ValueError as exc:
        raise fail(args, str(exc)) from None
    return options or None


def non_negative(text: str) -> int:
    """argparse type: an integer >= 0 (seeds, counts where 0 means "never")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def positive(text: str) -> int:
    """argparse type: an integer >= 1 (trials, counts)."""
    value = non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seed_argument(parser: argparse.ArgumentParser, **kwargs: Any) -> None:
    parser.add_argument(
        "--seed",
        type=non_negative,
        default=None,
        help="episode seed (same seed, same episode); random and printed when omitted",
        **kwargs,
    )
