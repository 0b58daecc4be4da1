"""A base URL as users mean it.

- `https://KEY@host/v1` or `https://user:KEY@host/v1` names the API key: it is sent as a
  Bearer token, like `$OPENAI_API_KEY` (which wins when set). Left in the URL, httpx would
  turn the user info into Basic authorization and the key would never be sent.
- `https://host/v1?api-version=2024-06-01&api_key=KEY` keeps its query parameters on
  every request (the SDK would glue them into the path: `/v1/?api_key=...chat/completions`).
- A URL that cannot be taken apart (`http://[::1`, port 99999, no host, not http(s)) is a
  one-line `ValueError` that shows no credential.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from textenvs.core.redact import redact_url


@dataclass(frozen=True)
class BaseURL:
    url: str  # scheme, host, port and path: no user info, no query
    query: dict[str, str] = field(default_factory=dict)
    key: str | None = None  # from the user info


def parse_base_url(text: str) -> BaseURL:
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 (raises for a port out of range)
    except ValueError as exc:
        raise ValueError(f"bad base URL {redact_url(text)!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"bad base URL {redact_url(text)!r}: use http(s)://host[:port]/path")
    host = parts.netloc.rpartition("@")[2]
    key = parts.password or parts.username
    return BaseURL(
        urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", "")),
        dict(parse_qsl(parts.query, keep_blank_values=True)),
        unquote(key) if key else None,
    )


def client_options(base_url: str | None, key: str | None) -> dict[str, Any]:
    """`api_key`, `base_url` and `default_query` for `openai.AsyncOpenAI`: `key` (the
    environment's), else the key in the URL's user info, else the placeholder "EMPTY"
    (`key` may be that placeholder itself: it yields to a key in the URL)."""
    key = None if key == "EMPTY" else key
    if base_url is None:
        return {"api_key": key or "EMPTY"}
    parsed = parse_base_url(base_url)
    return {
        "api_key": key or parsed.key or "EMPTY",
        "base_url": parsed.url,
        "default_query": parsed.query or None,
    }


def request_options(base_url: str, key: str | None) -> dict[str, Any]:
    """Per-request options for one endpoint of several (an absolute URL): its query, and its
    own key from its user info when the environment gives none."""
    parsed = parse_base_url(base_url)
    options: dict[str, Any] = {"params": parsed.query} if parsed.query else {}
    if parsed.key and not key:
        options["headers"] = {"Authorization": f"Bearer {parsed.key}"}
    return options


def base_url_argument(text: str) -> str:
    """argparse type for `--base-url`: the URL as given, once it parses."""
    try:
        parse_base_url(text.replace("{node_ip}", "127.0.0.1"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
