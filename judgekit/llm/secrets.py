"""Keep API keys out of everything judgekit writes (cache, cassettes, logs, reports)."""

from __future__ import annotations

import os
import re
from typing import Any

_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|PASSWORD)$")
_KEY_SHAPES = re.compile(r"(sk-[A-Za-z0-9_\-]{16,}|sk-ant-[A-Za-z0-9_\-]{16,}|Bearer\s+\S{12,})")
REDACTED = "<redacted>"


def secret_values() -> list[str]:
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 6]


def scrub(obj: Any, secrets: list[str] | None = None) -> Any:
    """Return ``obj`` with every secret value and key-shaped string redacted."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, str):
        for s in secrets:
            if s in obj:
                obj = obj.replace(s, REDACTED)
        return _KEY_SHAPES.sub(REDACTED, obj) if ("sk-" in obj or "Bearer" in obj) else obj
    if isinstance(obj, dict):
        return {k: scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v, secrets) for v in obj]
    return obj
