"""Keep API keys out of everything judgekit writes and raises.

Two things are redacted, nothing else: the exact values of secret environment
variables (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD``), and tokens
that are strictly key-shaped: ``sk-`` keys (OpenAI, Anthropic ``sk-ant-``) and
``Bearer`` credentials. "Strictly" matters: the scrubber runs over judged text,
the cache and cassettes, so ordinary prose (``task-management-software``,
``sk-learn-style``, "Bearer of bad news") must come back byte-identical. A key
shape therefore needs word boundaries and a long run of letters *and* digits, as
every real key has and hyphenated words do not.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|PASSWORD)$")
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9_\-]{20,}(?![A-Za-z0-9_\-])"
    r"|\bBearer\s+[A-Za-z0-9._~+/\-]{16,}=*"
)
# Every real key holds a long run of letters and digits mixed; words do not.
_KEY_CORE = re.compile(r"[A-Za-z0-9]{16,}")
_MIN_SECRET_LEN = 8
REDACTED = "<redacted>"


_SECRET_ENV_B = re.compile(rb"(API_KEY|_TOKEN|_SECRET|PASSWORD)$")


def public_url(url: str | None) -> str | None:
    """A base URL as it may be written down: without the password of a ``user:pass@``
    and with every query parameter's value replaced (``?api-key=...``: Azure-style
    gateways put keys there), so identities, cassettes and cache keys never hold one."""
    if not url:
        return url
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if parts.username:
        host = f"{parts.username}@{host}"
    query = urlencode([(k, REDACTED) for k, _ in parse_qsl(parts.query,
                                                           keep_blank_values=True)])
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def url_secrets(url: str | None) -> list[str]:
    """The secret parts of a URL: the password and the query parameters' values."""
    if not url:
        return []
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    found = [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    if parts.password:
        found.append(parts.password)
    return [v for v in found if len(v) >= _MIN_SECRET_LEN]


def secret_values() -> list[str]:
    """Values of secret-named environment variables long enough to be credentials.

    Read on every scrub (the environment can change), from the raw bytes where the
    platform has them: decoding every variable on every call cost 0.12 ms a call."""
    if os.supports_bytes_environ:
        env = os.environb
        found = {os.fsdecode(v) for k, v in env.items()
                 if _SECRET_ENV_B.search(k) and len(v) >= _MIN_SECRET_LEN}
        urls = [os.fsdecode(v) for k, v in env.items() if k.endswith(b"_BASE_URL")]
    else:  # pragma: no cover - Windows
        found = {v for k, v in os.environ.items()
                 if _SECRET_ENV.search(k) and len(v) >= _MIN_SECRET_LEN}
        urls = [v for k, v in os.environ.items() if k.endswith("_BASE_URL")]
    for url in urls:  # a key in a base URL's query or password is a secret too
        found.update(url_secrets(url))
    return sorted((v for v in found if len(v) >= _MIN_SECRET_LEN), key=len, reverse=True)


# Between two characters of a key, what a provider's echo may insert: whitespace and
# line breaks, their JSON escapes, and a backslash-newline continuation.
_SEP = r"(?:\s|\\[nrt]|\\\r?\n)*"


def _char(c: str) -> str:
    """A key character, literal or JSON-escaped (a backslash-u hex escape, or an escaped
    slash)."""
    forms = [re.escape(c), "\\\\u" + "".join(f"[{h.lower()}{h.upper()}]" if h.isalpha()
                                                else h for h in f"{ord(c):04x}")]
    if c == "/":
        forms.append(r"\\/")
    return "(?:" + "|".join(forms) + ")"


@lru_cache(maxsize=64)
def _value_pattern(secret: str) -> re.Pattern[str]:
    """Finds ``secret`` however an echo split or escaped it: each character literal or
    JSON-escaped, with whitespace or escaped line breaks allowed between characters."""
    chars = [c for c in secret if not c.isspace()]
    return re.compile(_SEP.join(_char(c) for c in chars))


def scrub_values(text: str, secrets: list[str] | None = None) -> str:
    """Redact the secret values themselves (exact, split or escaped); nothing else."""
    secrets = secret_values() if secrets is None else secrets
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
        if s[:1] in text or "\\u" in text:
            text = _value_pattern(s).sub(REDACTED, text)
    return text


def scrub_text(text: str, secrets: list[str] | None = None) -> str:
    """Redact secret values (however split or escaped) and key-shaped tokens. Scrub
    before cutting a text short: a key cut in half no longer matches anything."""
    text = scrub_values(text, secrets)
    if "sk-" in text or "Bearer" in text:
        text = _KEY_SHAPES.sub(_redact_if_keyish, text)
    return text


def clip(text: str, n: int) -> str:
    """``text`` scrubbed, then cut to ``n`` characters (never the other way round)."""
    return scrub_text(text)[:n]


def _redact_if_keyish(m: re.Match[str]) -> str:
    for core in _KEY_CORE.findall(m.group(0)):
        if any(c.isdigit() for c in core) and any(c.isalpha() for c in core):
            return REDACTED
    return m.group(0)


def scrub(obj: Any, secrets: list[str] | None = None) -> Any:
    """Return ``obj`` with every secret value and key-shaped string redacted."""
    return _scrub(obj, secret_values() if secrets is None else secrets)


def _scrub(obj: Any, secrets: list[str]) -> Any:
    """``obj`` scrubbed; a dict or list nothing in which changes is returned as it is (a
    record is scrubbed per call, and nearly every one is clean)."""
    t = type(obj)  # the exact types first
    if t is str:
        return scrub_text(obj, secrets) if secrets or "sk-" in obj or "Bearer" in obj else obj
    if t is int or t is float or t is bool or obj is None:
        return obj
    if isinstance(obj, str):
        return scrub_text(obj, secrets)
    if isinstance(obj, (dict, list)):
        for v in obj.values() if isinstance(obj, dict) else obj:
            tv = type(v)
            if tv is str:  # what scrub_text leaves alone, decided without a call
                if not secrets and "sk-" not in v and "Bearer" not in v:
                    continue
            elif tv is int or tv is float or tv is bool or v is None:
                continue
            if _scrub(v, secrets) is not v:  # something to redact: a scrubbed copy
                if isinstance(obj, dict):
                    return {k: _scrub(v, secrets) for k, v in obj.items()}
                return [_scrub(v, secrets) for v in obj]
    return obj


def scrub_data(obj: Any, secrets: list[str] | None = None) -> Any:
    """Scrub user data (prompts, judged text): only the secret values are redacted, never
    key-shaped text, which in data is the user's own content."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, str):
        return scrub_values(obj, secrets)
    if isinstance(obj, dict):
        return {k: scrub_data(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub_data(v, secrets) for v in obj]
    return obj


def has_secret(text: str) -> bool:
    return scrub_text(text) != text


def has_secret_value(text: str) -> bool:
    return scrub_values(text) != text
