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


def secret_values() -> list[str]:
    """Values of secret-named environment variables long enough to be credentials."""
    return sorted({v for k, v in os.environ.items()
                   if _SECRET_ENV.search(k) and len(v) >= _MIN_SECRET_LEN}, key=len,
                  reverse=True)


def scrub_text(text: str, secrets: list[str] | None = None) -> str:
    secrets = secret_values() if secrets is None else secrets
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    if "sk-" in text or "Bearer" in text:
        text = _KEY_SHAPES.sub(_redact_if_keyish, text)
    return text


def _redact_if_keyish(m: re.Match[str]) -> str:
    for core in _KEY_CORE.findall(m.group(0)):
        if any(c.isdigit() for c in core) and any(c.isalpha() for c in core):
            return REDACTED
    return m.group(0)


def scrub(obj: Any, secrets: list[str] | None = None) -> Any:
    """Return ``obj`` with every secret value and key-shaped string redacted."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, str):
        return scrub_text(obj, secrets)
    if isinstance(obj, dict):
        return {k: scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v, secrets) for v in obj]
    return obj


def has_secret(text: str) -> bool:
    return scrub_text(text) != text
