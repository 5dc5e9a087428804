"""promptfoo results files (``promptfoo eval -o out.json``): per result row and per
``llm-rubric`` grading component, the rendered prompt, the response output, pass as the
label and the grader's reason; ``scorer`` keeps only the components whose rubric text
contains it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, RecordedFormat, Table, label_of
from judgekit.recorded.judged import JudgedInput
from judgekit.recorded.tables import table_from_judged

__all__ = ["read_promptfoo"]


def read_promptfoo(path: Path, scorer: str | None) -> list[JSONObject]:
    try:
        doc = json_loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not a promptfoo results file ({exc.msg})") from exc
    results = doc.get("results") if isinstance(doc, dict) else None
    rows = results.get("results") if isinstance(results, dict) else results
    if not isinstance(rows, list):
        raise DataError(f"{path}: no results list (expected promptfoo's "
                        "{\"results\": {\"results\": [...]}})")
    out = []
    for k, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(f"{path}: result {k} is a {type(row).__name__}, not an object "
                            "(promptfoo's results are objects with gradingResult)")
        grading = row.get("gradingResult") or {}
        if not isinstance(grading, dict):
            raise DataError(f"{path}: result {k} has a gradingResult that is not an object")
        prompt = _field(row, "prompt", "raw", "")
        output = _field(row, "response", "output", None)
        provider = _field(row, "provider", "id", "?")
        comps = grading.get("componentResults") or []
        if not isinstance(comps, list):
            raise DataError(f"{path}: result {k}: gradingResult.componentResults is not a "
                            "list")
        for comp in comps:
            assertion = comp.get("assertion") if isinstance(comp, dict) else None
            if not isinstance(assertion, dict) or assertion.get("type") != "llm-rubric":
                continue
            rubric = str(assertion.get("value", ""))
            if scorer and scorer not in rubric:
                continue
            out.append({"Prompt": prompt, "Output": "" if output is None else
                        (output if isinstance(output, str) else json.dumps(output)),
                        "Label": label_of(comp.get("pass")), "Reason": comp.get("reason"),
                        "Source": f"promptfoo:{provider}:test {row.get('testIdx')}:{rubric}"})
    if not out:
        raise DataError(f"{path}: no llm-rubric grading results"
                        + (f" whose rubric contains {scorer!r}" if scorer else ""))
    return out


def _field(row: JSONObject, key: str, inner: str, default: Any) -> Any:
    """``row[key][inner]``; promptfoo writes ``prompt`` and ``provider`` as objects, and
    some versions as a plain string (the raw prompt, the provider id)."""
    got = row.get(key)
    if isinstance(got, dict):
        return got.get(inner, default)
    if isinstance(got, str):
        return got
    return default


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    return read_promptfoo(path, spec.scorer)


def _table(path: Path, roles: dict[str, str]) -> Table:
    return table_from_judged(read_promptfoo(path, None), cluster=0,
                             grader=lambda parts: "promptfoo llm-rubric")


def _sniff(doc: Any) -> bool:
    return isinstance(doc, dict) and "results" in doc


FORMAT = FORMATS.add("promptfoo", RecordedFormat(
    "promptfoo", sniff=_sniff, table=_table, judged=_judged,
    description="promptfoo results file (promptfoo eval -o out.json)"))
