"""Keeping credentials out of everything textenvs writes or prints.

Two layers. Structural: URLs lose their user info and the values of key-like query
parameters, JSON data loses the values of key-like fields and of anything under a
`headers` field, command lines get both treatments. Textual: a `Scrubber` knows the
secret strings of one run (found by the structural pass, plus the API key itself) and
masks them wherever they turn up, e.g. in an error message a server echoed back.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import (
    parse_qsl,
    quote,
    quote_plus,
    unquote,
    unquote_plus,
    urlencode,
    urlsplit,
    urlunsplit,
)

REDACTED = "***"
# Name parts that mark a credential; `max_tokens` is not one ("tokens" is not "token").
_SECRET_PARTS = frozenset(
    {"key", "apikey", "secret", "token", "password", "passwd", "pwd", "pass", "auth",
     "authorization", "credential", "credentials", "signature", "sig", "cookie", "bearer"}
)  # fmt: skip
_HEADERS = re.compile(r"headers?$", re.IGNORECASE)
# Shorter strings are masked only where they stand (a URL's user info, a key-like field),
# never searched for in free text: "user" would otherwise mask every chat role.
MIN_SCRUB_LENGTH = 6


def is_secret_name(name: str) -> bool:
    """`api_key`, `X-Api-Key`, `accessToken`, `password` yes; `max_tokens`, `top_k` no."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    parts = re.split(r"[^a-z0-9]+", spaced.lower())
    return any(part in _SECRET_PARTS for part in parts)


def redact_url(url: str) -> str:
    """`http://u:p@host/v1?api-key=K&v=2` -> `http://***@host/v1?api-key=***&v=2`."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL we can take apart: keep nothing that could be a secret
        return REDACTED
    _, at, host = parts.netloc.rpartition("@")
    netloc = f"{REDACTED}@{host}" if at else host
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if is_secret_name(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _looks_like_url(text: str) -> bool:
    return "://" in text and " " not in text.strip()


def redact_data(data: Any) -> Any:
    """A copy of JSON-like `data` with key-like fields, header values and URL credentials
    masked."""
    return _walk(data, False, [])


def _walk(data: Any, mask_all: bool, found: list[str]) -> Any:
    """`data` redacted; each masked value is appended to `found`."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            secret = mask_all or is_secret_name(str(key)) or bool(_HEADERS.search(str(key)))
            out[key] = _walk(value, secret, found)
        return out
    if isinstance(data, list | tuple):
        return [_walk(item, mask_all, found) for item in data]
    if isinstance(data, bool) or data is None:
        return data
    if mask_all and isinstance(data, str | int | float):
        found.append(str(data))
        return REDACTED
    if isinstance(data, str) and _looks_like_url(data):
        found += secrets_in_url(data)
        return redact_url(data)
    return data


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with URLs and JSON-object arguments redacted (`--flag=value` too)."""
    out: list[str] = []
    for arg in argv:
        flag, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        out.append(flag + eq + _redact_arg(value) if eq or not flag else arg)
    return out


def _redact_arg(value: str) -> str:
    if _looks_like_url(value):
        return redact_url(value)
    if value.lstrip().startswith("{"):
        try:
            return json.dumps(redact_data(json.loads(value)))
        except json.JSONDecodeError:
            return value
    return value


def secrets_in_url(url: str | None) -> list[str]:
    """The user info and key-like query values of `url` (what `redact_url` masks), with the
    Basic authorization an HTTP client would make of the user info, and the raw query text
    of each value (`%2B` as written, besides the decoded `+`)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    userinfo = parts.netloc.rpartition("@")[0]
    found = [parts.username or "", parts.password or "", userinfo]
    for info in {userinfo, unquote(userinfo)} - {""}:
        found.append(base64.b64encode(info.encode("utf-8")).decode("ascii"))
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if is_secret_name(k)]
    for pair in parts.query.split("&"):
        name, _, raw = pair.partition("=")
        if is_secret_name(unquote_plus(name)):
            found.append(raw)
    return [s for s in found if s]


def secrets_in_data(data: Any) -> list[str]:
    """The values `redact_data` masks, as strings."""
    found: list[str] = []
    _walk(data, False, found)
    return found


def forms_of(secret: str) -> set[str]:
    """Every way `secret` may be written: as is, URL-encoded (path and form styles),
    URL-decoded, and escaped inside JSON text."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret), unquote(secret)}
    forms |= {unquote_plus(secret), json.dumps(secret)[1:-1]}
    return forms


class Scrubber:
    """Masks a run's known secret strings, in every form (`forms_of`), in text and in
    JSON-like data."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        every = {form for s in secrets if s for form in forms_of(s)}
        unique = {s for s in every if len(s) >= MIN_SCRUB_LENGTH}
        # longest first: a secret that contains another is masked whole
        self.secrets = sorted(unique, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, REDACTED)
        return value

    def __call__(self, value: Any) -> Any:
        """`value` with every secret masked (strings, and strings inside dicts/lists)."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(item) for item in value]
        return value


class _LogScrubbing:
    """The log record factory that masks secrets (one, however often it is installed)."""

    def __init__(self) -> None:
        self.scrub = Scrubber()
        self.make_record = logging.getLogRecordFactory()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.make_record(*args, **kwargs)
        scrub = self.scrub
        if scrub.secrets:
            record.msg, record.args = scrub.text(record.getMessage()), ()
            if record.exc_info:
                text = logging.Formatter().formatException(record.exc_info)
                record.exc_text = scrub.text(text)
        return record


def scrub_logs(scrub: Scrubber) -> None:
    """From now on every log record of the process has its message (and traceback)
    masked by `scrub` as it is made, whatever handler prints it: retry warnings repeat
    server answers, which may echo a header or a URL. A later call replaces `scrub`."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _LogScrubbing):
        factory = _LogScrubbing()
        logging.setLogRecordFactory(factory)
    factory.scrub = scrub
