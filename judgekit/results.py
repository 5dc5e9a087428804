"""Typed, versioned run results: one Pydantic model per method, written as results.json.

Large per-item detail (a VB query with its replicas, an audited item with its
challenges) goes to a JSONL file beside results.json, one line per query or item,
so results.json stays small; results.json names the file and its line count.
``load_results(path)`` returns the method's model; ``.detail()`` streams the JSONL.
No timestamps inside: the same seed and cassette give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judgekit.errors import DataError, describe_validation

SCHEMA_VERSION = 1


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class DetailFile(BaseModel):
    """Where a run's per-query or per-item records are: a JSONL file beside results.json."""

    file: str
    count: int


class CallSummary(_Open):
    total: int = 0
    cached: int = 0
    failed: int = 0
    provider_calls: int = 0
    failed_by_kind: dict[str, int] = Field(default_factory=dict)


class RunResult(_Open):
    """Fields every method's results share."""

    schema_version: int = SCHEMA_VERSION
    method: str
    experiment: str | None = None
    seed: int | None = None
    calls: CallSummary | None = None
    _path: Path | None = None

    def detail(self, name: str | None = None) -> Iterator[dict[str, Any]]:
        """The per-query / per-item records (JSONL beside results.json)."""
        fields = [k for k, v in self.__dict__.items() if isinstance(v, DetailFile)]
        fields += [k for k, v in (self.model_extra or {}).items()
                   if isinstance(v, dict) and set(v) == {"file", "count"}]
        key = name or (fields[0] if fields else None)
        ref = getattr(self, key, None) if key else None
        if isinstance(ref, dict):
            ref = DetailFile(**ref)
        if ref is None or self._path is None:
            return iter(())
        return _jsonl(self._path.parent / ref.file)


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


class VBScoreResults(RunResult):
    method: Literal["vbscore"] = "vbscore"
    alpha: float
    alphas: list[float]
    datasets: list[VBDataset]
    queries: DetailFile


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
    method: Literal["nodata"] = "nodata"
    runs: list[NoDataRun]
    verdict: Verdict | None = None
    items: DetailFile | None = None


class OnDemandResults(RunResult):
    method: Literal["ondemand"] = "ondemand"


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
    method: Literal["probe"] = "probe"
    judge: str
    n_pairs: int
    transforms: list[ProbeTransform]
    mode: str = "pairwise"
    position_bias: dict[str, Any] | None
    biases: list[dict[str, Any]] = []
    items: DetailFile


MODELS: dict[str, type[RunResult]] = {"vbscore": VBScoreResults, "nodata": NoDataResults,
                                      "ondemand": OnDemandResults, "probe": ProbeResults}


def model_for(method: str) -> type[RunResult]:
    try:
        return MODELS[method]
    except KeyError:
        raise DataError(f"no results schema for method {method!r}; methods: "
                        f"{', '.join(sorted(MODELS))}") from None


def json_schema(method: str) -> dict[str, Any]:
    return model_for(method).model_json_schema()


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
        model = RunResult if doc.get("status") == "failed" else model_for(doc["method"])
        res = model.model_validate(doc)
    except ValidationError as exc:
        raise DataError(f"{p}: {describe_validation(exc)}") from exc
    res._path = p
    return res


def split_detail(results: dict[str, Any], keys: tuple[str, ...]
                 ) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Move the large per-record lists out of ``results``: (small results, details)."""
    small, details = dict(results), {}
    for k in keys:
        rows = small.get(k)
        if isinstance(rows, list):
            details[k] = rows
            small[k] = {"file": f"{k}.jsonl", "count": len(rows)}
    small.setdefault("schema_version", SCHEMA_VERSION)
    return small, details


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
