"""judgekit: LLM-as-judge evaluation when there is no ground truth.

Importing judgekit is cheap and makes no network request: the client layer,
providers (aiohttp, litellm), numpy-heavy methods and matplotlib load on first
use of the names below.
"""

from __future__ import annotations

import importlib
from typing import Any

from judgekit.errors import (
    CassetteMissError,
    ConfigError,
    DataError,
    JudgekitError,
    ProviderError,
    StatsError,
)

__version__ = "0.1.0"

_LAZY = {
    "Call": "judgekit.llm.stage",
    "Stage": "judgekit.llm.stage",
    "Client": "judgekit.llm.client",
    "ClientSettings": "judgekit.llm.client",
    "StageResult": "judgekit.llm.types",
    "run": "judgekit.api",
    "audit": "judgekit.api",
    "probe_judge": "judgekit.api",
    "load_results": "judgekit.runfolder",
    "MethodSpec": "judgekit.spec",
    "RunOptions": "judgekit.llm.options",
    "compare": "judgekit.compare",
    "judge_card": "judgekit.card",
    "RunResult": "judgekit.results",
}

__all__ = [
    "Call",
    "CassetteMissError",
    "Client",
    "ClientSettings",
    "ConfigError",
    "DataError",
    "JudgekitError",
    "MethodSpec",
    "ProviderError",
    "RunOptions",
    "RunResult",
    "Stage",
    "StageResult",
    "StatsError",
    "__version__",
    "audit",
    "compare",
    "judge_card",
    "load_results",
    "probe_judge",
    "run",
]


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'judgekit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
