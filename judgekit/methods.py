"""The method registry: one registration per method (or sub-experiment) names its
config model, results model, ``execute``, report, templates and detail views.

Adding a method is its package plus one ``register(...)`` line below. Everything
that lists methods (config dispatch, ``judgekit schema``, ``prompts list``, the
results loader) reads this registry. Imports are lazy: naming a method loads nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judgekit.errors import ConfigError

__all__ = ["Method", "all_methods", "find", "register", "stages"]


def _lazy(path: str) -> Callable[[], Any]:
    module, _, attr = path.partition(":")

    def get() -> Any:
        return getattr(importlib.import_module(module), attr)
    get.__qualname__ = path
    return get


@dataclass(frozen=True)
class Method:
    """A method's parts, each ``module:attribute`` (imported on first use).

    ``execute(cfg, client) -> dict`` computes the payload (``client`` is None when
    ``uses_client`` is False); ``report(cfg, payload) -> Doc`` builds its report;
    ``figures(cfg, payload, folder)`` draws its figures (optional); ``headline`` is
    one line for the console. ``details`` are the payload's per-record lists (written
    as JSONL) with the HTML view of each; ``templates`` maps each packaged template the
    method renders to the stage it serves.
    """

    name: str
    experiment: str | None
    config_path: str
    result_path: str
    execute_path: str
    report_path: str
    headline_path: str
    figures_path: str | None = None
    title: str = ""
    uses_client: bool = True
    details: dict[str, str] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)

    def config(self) -> Any:
        return _lazy(self.config_path)()

    def result(self) -> Any:
        return _lazy(self.result_path)()

    def execute(self) -> Any:
        return _lazy(self.execute_path)()

    def report(self) -> Any:
        return _lazy(self.report_path)()

    def headline(self) -> Any:
        return _lazy(self.headline_path)()

    def figures(self) -> Any:
        return _lazy(self.figures_path)() if self.figures_path else None

    @property
    def key(self) -> str:
        return self.name if self.experiment is None else f"{self.name}/{self.experiment}"


_REGISTRY: dict[tuple[str, str | None], Method] = {}


def register(method: Method) -> Method:
    _REGISTRY[(method.name, method.experiment)] = method
    return method


def all_methods() -> list[Method]:
    return list(_REGISTRY.values())


def names() -> list[str]:
    return sorted({m.name for m in _REGISTRY.values()})


def experiments() -> list[str]:
    """Every registration as METHOD or METHOD/EXPERIMENT (what `judgekit schema` takes)."""
    return sorted(f"{m.name}/{m.experiment}" if m.experiment else m.name
                  for m in _REGISTRY.values())


def find(name: str, experiment: str | None = None) -> Method:
    """The registration for a method and sub-experiment (the method's default when the
    experiment is not given)."""
    m = _REGISTRY.get((name, experiment))
    if m is None and experiment is None:
        m = next((x for x in _REGISTRY.values() if x.name == name), None)
    if m is None:
        if any(x.name == name for x in _REGISTRY.values()):
            known = ", ".join(sorted(str(x.experiment) for x in _REGISTRY.values()
                                     if x.name == name))
            raise ConfigError(f"method {name}: experiment {experiment!r} is not one of "
                              f"{known}")
        raise ConfigError(f"method {name!r} is not one of {', '.join(names())}")
    return m


def stages() -> dict[str, str]:
    """Packaged template -> the method stage that renders it."""
    out: dict[str, str] = {}
    for m in _REGISTRY.values():
        for template, what in m.templates.items():
            out.setdefault(template, f"{m.name}: {what}")
    return out


register(Method(
    "vbscore", None, "judgekit.vbscore.config:VBScoreConfig",
    "judgekit.results:VBScoreResults", "judgekit.vbscore.runner:execute",
    "judgekit.report.vbscore:build", "judgekit.vbscore.runner:headline",
    "judgekit.report.vbscore:figures", title="VB-Score case study",
    details={"queries": "vb", "replica_failures": "generic"},
    templates={"interpretations.j2": "interpretation generator",
               "system.j2": "system under test", "tagger.j2": "open-world entity tagger",
               "correctness.j2": "correctness judge"}))
register(Method(
    "nodata", "llm", "judgekit.nodata.config:NoDataConfig",
    "judgekit.results:NoDataResults", "judgekit.nodata.audit:execute",
    "judgekit.report.nodata:build_audit", "judgekit.nodata.audit:headline",
    "judgekit.report.nodata:audit_figures", title="No-Data audit",
    details={"items": "audit"},
    templates={"nodata_evaluator.j2": "evaluator (all criteria)",
               "nodata_evaluator_one.j2": "evaluator (one criterion)",
               "nodata_generator.j2": "generator (paraphraser)",
               "nodata_verifier.j2": "verifier (all criteria)",
               "nodata_verifier_one.j2": "verifier (one criterion)"}))
register(Method(
    "nodata", "synthetic", "judgekit.nodata.config:NoDataConfig",
    "judgekit.results:NoDataSyntheticResults", "judgekit.nodata.synthetic:execute",
    "judgekit.report.nodata:build_synthetic", "judgekit.nodata.synthetic:headline",
    "judgekit.report.nodata:synthetic_figures", title="No-Data Algorithm: synthetic study",
    uses_client=False, details={"items": "synthetic"}))
register(Method(
    "probe", None, "judgekit.probe.config:ProbeConfig",
    "judgekit.results:ProbeResults", "judgekit.probe.runner:execute",
    "judgekit.report.probe:build", "judgekit.probe.runner:headline",
    "judgekit.report.probe:figures", title="Probe",
    details={"items": "probe"},
    templates={"probe_pairwise.j2": "pairwise judge"}))
register(Method(
    "ondemand", "simulation", "judgekit.ondemand.config:OnDemandConfig",
    "judgekit.results:OnDemandResults", "judgekit.ondemand.runner:execute_simulation",
    "judgekit.report.ondemand:build_simulation", "judgekit.ondemand.runner:headline_simulation",
    "judgekit.report.ondemand:simulation_figures", title="On-demand estimators: simulation",
    uses_client=False))
register(Method(
    "ondemand", "label", "judgekit.ondemand.config:OnDemandConfig",
    "judgekit.results:OnDemandLabelResults", "judgekit.ondemand.runner:execute_labelling",
    "judgekit.report.ondemand:build_labelling", "judgekit.ondemand.runner:headline_labelling",
    title="On-demand precision from sampled labels",
    templates={"ondemand_judge.j2": "labelling judge"}))
