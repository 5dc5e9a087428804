"""judgekit: LLM-as-judge evaluation when there is no ground truth.

Importing judgekit is cheap and makes no network request: the client layer,
providers (aiohttp, litellm), numpy-heavy methods and matplotlib load on first
use of the names below.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

from judgekit.core.errors import (
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
    "load_results": "judgekit.runs.folder",
    "MethodSpec": "judgekit.core.spec",
    "RunOptions": "judgekit.core.options",
    "compare": "judgekit.analysis.comparison",
    "judge_card": "judgekit.analysis.card",
    "RunResult": "judgekit.core.results",
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


# The one-house step moved these modules (names under judgekit.); their old names
# import the new modules (the same objects, so a monkeypatch through either name is seen
# by both) with a DeprecationWarning, for one release.
_MOVED = {
    "errors": "core.errors",
    "jsontypes": "core.jsontypes",
    "textio": "core.textio",
    "progress": "core.progress",
    "resources": "core.resources",
    "settings": "core.settings",
    "spec": "core.spec",
    "payload": "core.payload",
    "results": "core.results",
    "pipeline": "runs.pipeline",
    "runfolder": "runs.folder",
    "runio": "runs.io",
    "runguard": "runs.guard",
    "config": "runs.config",
    "card": "analysis.card",
    "report.judgecard": "analysis.card",
    "report.choice": "analysis.choose",
    "report.choice_sources": "analysis.choose_sources",
    "report.choice_types": "analysis.choose_types",
    "report.jury": "analysis.jury",
    "report.decisions": "analysis.decisions",
    "labelling.store": "recorded.labels",
    "labelling.terms": "analysis.label_terms",
    "labelling.items": "analysis.source",
    "compare": "analysis.comparison",
    "report.comparison": "analysis.comparison",
    "export": "report.export",
    "csvsafe": "recorded.csvsafe",
    "report.csvsafe": "recorded.csvsafe",
    "paired": "analysis.paired",
    "report.paired": "analysis.paired",
    "cli_label": "cli.label",
    "cli_tables": "cli.tables",
    "vbscore": "methods.vbscore",
    "nodata": "methods.nodata",
    "probe": "methods.probe",
    "ondemand": "methods.ondemand",
    "verdicts": "methods.verdicts",
    "data.external": "recorded.judged",
    "methods.verdicts.read": "recorded.tables",
    "llm.options": "core.options",
    "core.pipeline": "runs.pipeline",
}


def moved(name: str) -> str | None:
    """The module an old module name now lives in (None: not moved)."""
    if not name.startswith("judgekit."):
        return None
    rel = name[len("judgekit."):]
    head = rel
    while head:
        if head in _MOVED:
            return "judgekit." + _MOVED[head] + rel[len(head):]
        head = head.rpartition(".")[0]
    return None


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Old module names import their new modules (re-export shims without files)."""

    def __init__(self) -> None:
        self._specs: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        new = moved(fullname) if fullname.startswith("judgekit.") else None
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> ModuleType:
        new = moved(spec.name)
        assert new is not None
        warnings.warn(f"{spec.name} is now {new}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system set the old name's spec on the module: put its own back
        for old, spec in list(self._specs.items()):
            if sys.modules.get(old) is module or spec.name == module.__name__:
                module.__spec__ = spec
                self._specs.pop(old, None)


if not any(isinstance(f, _OldNames) for f in sys.meta_path):
    sys.meta_path.insert(0, _OldNames())


class _Package(ModuleType):
    """The package keeps its public names: importing an old module path of the same
    name (``import judgekit.compare``) binds the module on the package, which would
    shadow ``judgekit.compare()`` for the rest of the process; that binding is
    dropped (the module stays importable under its name in sys.modules)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'judgekit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
