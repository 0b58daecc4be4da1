"""One cheap check of an endpoint before a run spends episodes on it.

`check(config)` asks the endpoint for its models list. When the list names the model,
the endpoint, the key and the model are all confirmed without generating anything;
otherwise (no list, or the model is not in it: llama.cpp accepts any name, proxies list
a subset) it sends one chat completion capped at one token. A failure raises
`PreflightError` with one line that says what failed and which flag or variable fixes it.
Only rate limits and server errors are retried (briefly); a refused connection, a
rejected key or an unknown model fail at once.

`check_learning(config)` also returns what the run should know of the server: its
context length where the server says it (`context.py`: vLLM's `max_model_len`,
llama.cpp's `/props`), and in json mode the `response_format` form it takes (one
1-token request with a small schema, then the other form if the first is refused).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import openai

from textenvs.agents.llm import context, faults, json_mode
from textenvs.agents.llm.base_url import client_options
from textenvs.agents.llm.config import LLMConfig
from textenvs.core.redact import redact_url

ATTEMPTS = 3  # for 429 / 5xx answers only
MAX_WAIT_S = 2.0
CONNECT_S = 5.0  # the check's own time limits (the run's may be minutes)
READ_S = 20.0
PING = [{"role": "user", "content": "Reply with one word: ready."}]


class PreflightError(Exception):
    """The endpoint, key or model cannot be used (a one-line message)."""


PROBE_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def check(config: LLMConfig) -> str:
    """Blocking `preflight`: what was confirmed, or `PreflightError`."""
    return asyncio.run(preflight(config))


def check_learning(config: LLMConfig) -> tuple[str, dict[str, Any]]:
    """Blocking: what was confirmed, and the settings the server showed that the config
    leaves open (`context_window`, `response_format`), or `PreflightError`."""
    return asyncio.run(_preflight(config))


async def preflight(config: LLMConfig) -> str:
    """What was confirmed (one line), or `PreflightError`. With several endpoints
    (`base_urls`) each is checked and one that answers is enough: the pool fails over."""
    return (await _preflight(config))[0]


async def _preflight(config: LLMConfig) -> tuple[str, dict[str, Any]]:
    if config.base_urls:
        return await _preflight_pool(config), {}
    base_url = config.resolved_base_url()
    if config.is_local:
        from textenvs.agents.llm import local

        try:
            n_ctx = local.context_size(config.resolved_prompt_budget, config.reply_room)
            threads = config.local_threads
            base_url = await asyncio.to_thread(local.ensure_server, n_ctx, threads)
        except local.LocalModelError as exc:
            raise PreflightError(f"the embedded model cannot start: {exc}") from None
    try:
        key = config.api_key(required=base_url is None)
    except ValueError as exc:
        raise PreflightError(str(exc)) from None
    try:
        options = client_options(base_url, key)
    except ValueError as exc:
        raise PreflightError(str(exc)) from None
    # A check of its own, short: a hanging endpoint fails in seconds, not minutes.
    read_s = min(config.read_timeout_s, READ_S)
    connect_s = min(config.connect_timeout_s, CONNECT_S)
    client = openai.AsyncOpenAI(
        **options, max_retries=0, timeout=openai.Timeout(read_s, connect=connect_s)
    )
    where = redact_url(str(client.base_url).rstrip("/"))
    try:
        entries = await _listed_models(client, config, where)
        listed = [str(getattr(m, "id", "")) for m in entries]
        if config.model in listed:
            line = f"{where} lists model {config.model!r}"
        else:
            await _one_token(client, config, where, listed)
            line = f"{where} answered model {config.model!r}"
        return line, await _learn(client, config, entries, where)
    finally:
        await client.close()


async def _learn(
    client: openai.AsyncOpenAI, config: LLMConfig, models: list[Any], where: str
) -> dict[str, Any]:
    """The settings the server shows that `config` leaves open."""
    learned: dict[str, Any] = {}
    if config.context_window is None and not config.is_local:  # local: sized by the agent
        window = context.window_from_models(models, config.model)
        for url in [] if window else context.props_urls(str(client.base_url)):
            try:
                props = await client.get(url, cast_to=object)
            except (openai.APIError, ValueError, TypeError):
                continue
            window = context.window_from_props(props)
            if window:
                break
        if window:
            learned["context_window"] = window
    if config.mode == "json" and config.response_format == "auto" and not config.is_local:
        learned["response_format"] = await _json_form(client, config, where)
    return learned


async def _json_form(client: openai.AsyncOpenAI, config: LLMConfig, where: str) -> str:
    """The `response_format` form the endpoint takes (json_schema first)."""
    failures = []
    for form in json_mode.FORMS:
        body: dict[str, Any] = {"model": config.model, "messages": PING, **config.extra_body}
        body[config.max_tokens_field] = 1
        body["response_format"] = json_mode.response_format(PROBE_SCHEMA, form)
        try:
            # once: a refusal of the form is not a passing fault (and not wait_for, which
            # on 3.11 can swallow a Ctrl-C's cancel: see endpoints.complete)
            async with asyncio.timeout(config.total_timeout_s):
                await client.post("/chat/completions", body=body, cast_to=object)
            json_mode.forms.set(str(client.base_url).rstrip("/"), form)
            return form
        except openai.APIStatusError as exc:
            text = faults.classify(exc).message
            if not json_mode.names_response_format(text):
                raise PreflightError(f"{where} refused a json-mode request ({text})") from None
            failures.append(text)
    raise PreflightError(
        f"{where} takes no response_format with a schema ({failures[-1]}): use --action-mode "
        "text or tools"
    )


async def _preflight_pool(config: LLMConfig) -> str:
    singles = [config.model_copy(update={"base_url": url, "base_urls": []})
               for url in config.base_urls]  # fmt: skip
    answers = await asyncio.gather(*(preflight(one) for one in singles), return_exceptions=True)
    failed = [str(a) for a in answers if isinstance(a, PreflightError)]
    for answer in answers:  # anything but a PreflightError is a bug: let it show
        if isinstance(answer, BaseException) and not isinstance(answer, PreflightError):
            raise answer
    if len(failed) == len(answers):
        raise PreflightError(f"none of the {len(answers)} endpoints answered; {failed[0]}")
    line = f"{len(answers) - len(failed)} of {len(answers)} endpoints answered"
    return line + (f"; not answering: {'; '.join(failed)}" if failed else "")


async def _listed_models(client: openai.AsyncOpenAI, config: LLMConfig, where: str) -> list[Any]:
    """The endpoint's models (ids and any metadata); [] when it has no usable list (the
    completion decides)."""
    try:
        page = await _retrying(lambda: client.models.list(), config)
        return list(page.data)
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            raise PreflightError(_key_message(exc, config, where)) from None
        return []
    except (openai.APIConnectionError, TimeoutError) as exc:
        raise PreflightError(_connection_message(exc, config, where)) from None
    except (openai.APIError, ValueError, TypeError, AttributeError):  # not a models list
        return []


async def _one_token(
    client: openai.AsyncOpenAI, config: LLMConfig, where: str, listed: list[str]
) -> None:
    body: dict[str, Any] = {"model": config.model, "messages": PING, **config.extra_body}
    body[config.max_tokens_field] = 1
    try:
        await _retrying(lambda: client.post("/chat/completions", body=body, cast_to=object), config)
    except openai.APIStatusError as exc:
        status, text = exc.status_code, faults.classify(exc).message
        if status in (401, 403):
            raise PreflightError(_key_message(exc, config, where)) from None
        if status in faults.TRANSIENT_STATUS or status >= 500:
            raise PreflightError(
                f"{where} is not serving requests now ({text}): try again later "
                "(--no-preflight skips this check)"
            ) from None
        hint = "check --model" + (" and --base-url" if status == 404 else "")
        if listed:
            shown = ", ".join(listed[:5]) + (", ..." if len(listed) > 5 else "")
            hint += f"; the endpoint lists: {shown}"
        if status == 400:
            hint += " (and --extra-body / --agent-config settings)"
        raise PreflightError(f"{where} refused model {config.model!r} ({text}): {hint}") from None
    except (openai.APIConnectionError, TimeoutError) as exc:
        raise PreflightError(_connection_message(exc, config, where)) from None


async def _retrying(call: Any, config: LLMConfig) -> Any:
    """`call()`, again after a short wait on 429 or 5xx (a busy server is still usable)."""
    rng = random.Random(0)  # jitter only
    for attempt in range(1, ATTEMPTS + 1):
        try:
            async with asyncio.timeout(min(config.total_timeout_s, READ_S + CONNECT_S)):
                return await call()
        except openai.APIStatusError as exc:
            fault = faults.classify(exc)
            if fault.kind != "transient" or attempt == ATTEMPTS or _out_of_quota(exc):
                raise
            wait = faults.backoff_s(
                attempt, base=0.5, cap=MAX_WAIT_S, rng=rng, retry_after_s=fault.retry_after_s,
                retry_after_cap=MAX_WAIT_S,
            )  # fmt: skip
            await asyncio.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _out_of_quota(exc: openai.APIStatusError) -> bool:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    return isinstance(error, dict) and error.get("code") == "insufficient_quota"


def _key_message(exc: openai.APIStatusError, config: LLMConfig, where: str) -> str:
    return (
        f"{where} rejected the API key ({faults.classify(exc).message}): check "
        f"${config.api_key_env} (or name another variable with --api-key-env)"
    )


def _connection_message(exc: Exception, config: LLMConfig, where: str) -> str:
    timed_out = isinstance(exc, openai.APITimeoutError | TimeoutError)
    what = "did not answer in time" if timed_out else "cannot be reached"
    cause = f" ({type(exc.__cause__).__name__})" if exc.__cause__ is not None else ""
    source = "--base-url" if config.base_url else "--base-url or $OPENAI_BASE_URL"
    return f"the endpoint {where} {what}{cause}: check {source}"


def first_prompt_fits(config: LLMConfig, env_name: str, options: dict[str, Any] | None) -> None:
    """`PreflightError` (one line) when the rules and the first observation of `env_name`
    alone exceed the prompt budget: no history cut could then make a request fit."""
    import textenvs
    from textenvs.agents.llm.agent import LLMAgent
    from textenvs.agents.llm.history import prompt_chars
    from textenvs.episodes.loop import context_for

    env = textenvs.make(env_name)
    observation, _ = env.reset(seed=0, options=options)
    agent = LLMAgent(config)
    agent.reset(context_for(env, 0, options))
    chars = prompt_chars(agent.first_prompt(observation))
    budget = config.resolved_prompt_budget
    if context.fits(chars, budget):
        return
    window = f" under a context of {config.context_window:,}" if config.context_window else ""
    need = round(chars * context.FIT_TOKENS_PER_CHAR)
    raise PreflightError(
        f"the rules and one observation of {env_name} need about {need:,} tokens, more than "
        f"the prompt budget of {budget:,}{window}: serve the model with a larger context "
        "(or set --context-window / --prompt-budget)"
    )
