"""Typed, versioned run results: a :class:`RunResult` base (schema version, method,
the resolved config, one :class:`CallSummary` shape for every method) and one payload
model per method that forbids unknown fields.

Large per-item detail (a VB query with its replicas, an audited item with its
challenges) is held in memory by the result and written to a JSONL file beside
results.json by :meth:`RunResult.save`, one line per query or item, so results.json
stays small; results.json names the file and its line count. ``load_results(path)``
returns the method's model; ``.detail()`` streams the records (from memory or from the
JSONL). No timestamps inside: the same seed and cassette give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from judgekit.errors import DataError, describe_validation

SCHEMA_VERSION = 1

__all__ = ["SCHEMA_VERSION", "CallSummary", "DetailFile", "NoDataResults",
           "NoDataSyntheticResults", "OnDemandLabelResults", "OnDemandResults",
           "ProbeResults", "RunResult", "StageCalls", "VBScoreResults", "load_results",
           "model_for", "json_schema", "save"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DetailFile(_Closed):
    """Where a run's per-query or per-item records are: a JSONL file beside results.json."""

    file: str
    count: int


class StageCalls(_Closed):
    """One stage's calls: how many, from where, how they ended, what they used."""

    calls: int = 0
    provider_calls: int = 0
    cached: int = 0
    failed: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    failed_by_kind: dict[str, int] = Field(default_factory=dict)


class CallSummary(_Closed):
    """The same shape for every method (all zero for a method that makes no call).
    ``cost_usd`` counts what this run paid a provider for (None: a price is unknown)."""

    total: int = 0
    provider_calls: int = 0
    cached: int = 0
    failed: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    failed_by_kind: dict[str, int] = Field(default_factory=dict)
    per_stage: dict[str, StageCalls] = Field(default_factory=dict)

    @classmethod
    def from_summary(cls, s: dict[str, Any]) -> CallSummary:
        """From a client's ``summary()``."""
        stages = {name: StageCalls(**{k: v.get(k, 0) for k in StageCalls.model_fields})
                  for name, v in s.get("stages", {}).items()}
        return cls(total=s["total"], provider_calls=s["provider_calls"], cached=s["cached"],
                   failed=s["failed"], attempts=sum(x.attempts for x in stages.values()),
                   prompt_tokens=s["prompt_tokens"], completion_tokens=s["completion_tokens"],
                   cost_usd=s["cost_usd"], failed_by_kind=s["failed_by_kind"],
                   per_stage=stages)


class RunResult(_Open):
    """Fields every method's results share. A method's payload model subclasses it and
    forbids unknown fields; the base reads any results.json (a failed run's too)."""

    schema_version: int = SCHEMA_VERSION
    method: str
    experiment: str | None = None
    seed: int | None = None
    config: dict[str, Any] | None = None
    calls: CallSummary | None = None
    _path: Path | None = PrivateAttr(default=None)
    _details: dict[str, list[dict[str, Any]]] = PrivateAttr(default_factory=dict)
    _failures: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _settings: Any = PrivateAttr(default=None)
    _unused: list[str] = PrivateAttr(default_factory=list)

    @property
    def failures(self) -> list[dict[str, Any]]:
        """Every failed call of the run, with its transcript (failures.jsonl)."""
        if self._failures or self._path is None:
            return list(self._failures)
        p = self._path.parent / "failures.jsonl"
        return list(_jsonl(p)) if p.exists() else []

    @property
    def folder(self) -> Path | None:
        """The folder this result was loaded from or saved to (None: in memory only)."""
        return self._path.parent if self._path is not None else None

    def detail_frame(self, name: str | None = None) -> Any:
        """The per-item / per-query records as a pandas DataFrame, one row per record:
        nested fields flattened with "." (``evaluator.label``), lists kept as JSON text.
        Needs pandas (``pip install 'judgekit[pandas]'``)."""
        from judgekit.export import frame

        return frame(list(self.detail(name)))

    def to_pandas(self) -> Any:
        """The headline rows as a pandas DataFrame (see judgekit.export.headline_rows)."""
        from judgekit.export import frame, headline_rows

        return frame(headline_rows(self))

    @property
    def unused_cassette_entries(self) -> list[str]:
        """Cassette entries this run did not use (known for runs made in this process)."""
        return list(self._unused)

    def detail_names(self) -> list[str]:
        names = [k for k, v in self.__dict__.items() if isinstance(v, DetailFile)]
        names += [k for k, v in (self.model_extra or {}).items()
                  if isinstance(v, dict) and set(v) == {"file", "count"}]
        return names

    def detail(self, name: str | None = None) -> Iterator[dict[str, Any]]:
        """The per-query / per-item records (in memory, or the JSONL beside results.json)."""
        names = self.detail_names()
        key = name or (names[0] if names else None)
        if key is None:
            return iter(())
        if key in self._details:
            return iter(self._details[key])
        ref = getattr(self, key, None)
        if isinstance(ref, dict):
            ref = DetailFile(**ref)
        if ref is None or self._path is None:
            return iter(())
        return _jsonl(self._path.parent / ref.file)

    def save(self, out: str | Path, *, overwrite: bool = False) -> Path:
        """Write the run's folder: results.json, the detail JSONL files, failures.jsonl,
        figures, report.md and report.html. Returns the folder (also ``.folder`` from
        then on)."""
        folder = save(self, Path(out), overwrite=overwrite)
        if self._path is None:
            self._path = folder / "results.json"
        return folder


class VBDataset(_Open):
    name: str
    n_queries: int
    replicas: int
    vb: float | None
    vb_ci: list[float | None]
    es: float | None
    es_ci: list[float | None] | None = None
    accuracy: float | None = None
    accuracy_ci: list[float | None] | None = None
    p_value: float | None = None
    reliable: bool = True
    # keyed by alpha, a number in Python (JSON keys are strings: "0.5")
    vb_by_alpha: dict[float, float] | None = None
    vb_ci_by_alpha: dict[float, list[float | None]] | None = None


class VBScoreResults(RunResult):
    model_config = ConfigDict(extra="forbid")
    method: Literal["vbscore"] = "vbscore"
    alpha: float
    alphas: list[float]
    replicas: int
    k: int
    datasets: list[VBDataset]
    queries: DetailFile
    replica_failures: DetailFile
    failures_by_stage: dict[str, int]
    self_check: dict[str, Any] | None = None


class NoDataRun(_Open):
    phi: float
    rounds: int
    n_items: int
    success_rate: float
    success_ci: list[float] | None
    flip_rate: float
    flip_ci: list[float] | None = None
    accuracy: float | None = None
    accuracy_ci: list[float] | None = None
    claim_agreement: float | None = None
    evaluator: str


class Verdict(_Open):
    decision: Literal["trust", "do not trust", "inconclusive"]
    reason: str
    success_rate: float | None
    success_ci: list[float] | None
    n_items: int
    rule: str | None = None  # which rule decided (judgekit.nodata.decision)


class NoDataResults(RunResult):
    model_config = ConfigDict(extra="forbid")
    method: Literal["nodata"] = "nodata"
    experiment: Literal["llm"] = "llm"
    runs: list[NoDataRun]
    verdict: Verdict | None = None
    items: DetailFile | None = None
    data: str
    start: int
    sample_size: int
    indices: list[int] | None
    rubric: str
    verifier_rubric: str
    models: dict[str, str]
    known: dict[str, Any]
    problems_by_stage: dict[str, dict[str, int]]
    excluded_items: dict[str, str]
    verifier_note: str
    baseline: dict[str, Any] | None
    data_checks: dict[str, Any]
    claim_agreement: dict[str, Any]


class NoDataSyntheticResults(RunResult):
    model_config = ConfigDict(extra="forbid")
    method: Literal["nodata"] = "nodata"
    experiment: Literal["synthetic"] = "synthetic"
    runs: list[dict[str, Any]]
    items: DetailFile
    data: dict[str, Any]
    escape: list[dict[str, Any]]
    baselines: dict[str, Any]
    phi_meaning: str


class OnDemandResults(RunResult):
    model_config = ConfigDict(extra="forbid")
    method: Literal["ondemand"] = "ondemand"
    experiment: Literal["simulation"] = "simulation"
    repeats: int
    level: float
    estimators: dict[str, dict[str, Any]]
    truth: dict[str, Any]
    joint_to_simple_width_ratio: dict[str, float]
    adaptive: list[int]
    adaptive_new_labels: list[int]
    adaptive_total: float
    fixed_total: int


class OnDemandLabelResults(RunResult):
    model_config = ConfigDict(extra="forbid")
    method: Literal["ondemand"] = "ondemand"
    experiment: Literal["label"] = "label"
    samples_per_system: int
    estimates: dict[str, dict[str, float | None]]
    labels_used: int
    samples_drawn: int


class ProbeTransform(_Open):
    name: str
    n: int
    flip_rate: float
    noise_floor: float
    excess: float
    excess_ci: list[float]
    p_value: float
    p_adjusted: float
    verdict: str


class ProbeResults(RunResult):
    model_config = ConfigDict(extra="forbid")
    method: Literal["probe"] = "probe"
    judge: str
    n_pairs: int
    transforms: list[ProbeTransform]
    mode: str = "pairwise"
    position_bias: dict[str, Any] | None
    biases: list[dict[str, Any]] = []
    items: DetailFile
    level: float
    repeats: int
    accuracy: dict[str, Any] | None = None
    human: dict[str, Any] | None = None
    noise_floor: dict[str, Any]
    order_consistency: dict[str, Any] | None = None
    padding_bias: dict[str, Any] | None = None
    reliability: dict[str, Any] | None = None
    rerun_flips: dict[str, Any] | None = None
    pass_rate: dict[str, Any] | None = None
    self_preference: dict[str, Any] | None = None
    length_bias: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    sequential: dict[str, Any] | None = None


def model_for(method: str, experiment: str | None = None) -> type[RunResult]:
    """The results model of a method (and sub-experiment), from the method registry."""
    from judgekit.methods import find

    return find(method, experiment).result()


def json_schema(method: str, experiment: str | None = None) -> dict[str, Any]:
    return model_for(method, experiment).model_json_schema()


def load_results(path: str | Path) -> RunResult:
    """Load a run's results.json (or its folder) as the method's typed model."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{p}: not a readable results.json ({exc})") from exc
    if not isinstance(doc, dict) or "method" not in doc:
        raise DataError(f"{p}: no 'method' field; is it a judgekit results.json?")
    try:
        # A failed run's results.json says why (status, error, calls), nothing more.
        model = RunResult if doc.get("status") == "failed" else \
            model_for(doc["method"], doc.get("experiment"))
        res = model.model_validate(doc)
    except ValidationError as exc:
        raise DataError(f"{p}: {describe_validation(exc)}") from exc
    except Exception as exc:
        if type(exc).__name__ != "ConfigError":
            raise
        raise DataError(f"{p}: {exc}") from None
    res._path = p
    return res


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _method(result: RunResult) -> Any:
    from judgekit.methods import find

    return find(result.method, result.experiment)


def settings_of(result: RunResult) -> Any:
    """The validated config a result was computed with (rebuilt from results.json)."""
    if result._settings is None:
        method = _method(result)
        result._settings = method.config().model_validate(
            {**(result.config or {}), "method": result.method})
    return result._settings


def payload_of(result: RunResult) -> dict[str, Any]:
    """The result as the dict a report reads, detail records included."""
    doc = result.model_dump(mode="json")
    for name in result.detail_names():
        doc[name] = list(result.detail(name))
    return doc


def headline(result: RunResult) -> str:
    method = _method(result)
    return str(method.headline()(payload_of(result)))


def report_doc(result: RunResult) -> Any:
    method = _method(result)
    return method.report()(settings_of(result), payload_of(result))


def save(result: RunResult, out: Path, *, overwrite: bool = False) -> Path:
    """Write ``result``'s folder (see the module docstring)."""
    from judgekit.report.document import to_markdown
    from judgekit.report.html import write_report_html
    from judgekit.runio import jsonl_line, prepare_out, write_failures, write_json, write_text

    method = _method(result)
    prepare_out(out, overwrite=overwrite)
    cfg, payload = settings_of(result), payload_of(result)
    details = {name: payload[name] for name in result.detail_names()}
    for name, rows in details.items():
        write_text(out / f"{name}.jsonl", "".join(jsonl_line(r) for r in rows))
    write_json(out / "results.json", result.model_dump(mode="json", exclude_none=False))
    figures = method.figures()
    if figures is not None:
        figures(cfg, payload, out)
    doc = method.report()(cfg, payload)
    write_text(out / "report.md", to_markdown(doc))
    write_report_html(out, doc, details, method.details)
    write_failures(out, result.failures)
    return out
