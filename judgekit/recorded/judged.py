"""Judgements made elsewhere, read as judged items (Prompt, Output, Label, Reason,
Source) so that the No-Data audit and the pointwise probe run on them. Every format of
:data:`~judgekit.recorded.base.FORMATS` can be read this way: Inspect and promptfoo
logs, judgekit's own judged-items JSON, and CSV / JSONL tables, whose columns are given
by a ``columns`` mapping from judgekit's fields (``prompt``, ``output``, ``label``,
``reason``, ``source``) or, without one, detected as ``judgekit analyse`` detects them.
Labels read as 1 / 0 (also true / false, pass / fail, yes / no, C / I).

The label is the verdict of the judge that produced the file: the audit reports its
agreement with the audited evaluator as "known" accuracy, so say which judge made it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.recorded.base import FORMATS, Table, label_of

__all__ = ["FIELDS", "JudgedInput", "formats", "judged_from_rows", "judged_from_table",
           "label_of", "read_records", "read_table"]

FIELDS = ("prompt", "output", "label", "reason", "source")


def formats() -> list[str]:
    """Every registered recorded format."""
    import judgekit.recorded  # noqa: F401  (registers the built-in formats)

    return FORMATS.names()


class JudgedInput(BaseModel):
    """Config fields naming where judged items come from (audit and pointwise probe)."""

    data_format: str = "json"  # json: judgekit's own judged-items list (see formats())
    columns: dict[str, str] | None = None  # csv/jsonl: judgekit field -> column name
    scorer: str | None = None  # inspect: the score's name; promptfoo: rubric text filter
    pass_threshold: float = Field(0.5, ge=0)  # numeric scores at or above pass
    # human labels from a labels file (`judgekit label`, `judgekit view`, or JSONL of
    # {"id", "label"}): they replace the items' Label, matched by the item's id (or its
    # position in the file when items have no id)
    labels_file: str | None = None

    @field_validator("data_format")
    @classmethod
    def _known_format(cls, v: str) -> str:
        known = formats()
        if v not in known:
            raise ValueError(f"{v!r} is not one of {', '.join(repr(f) for f in known)}")
        return v


def read_table(path: Path, fmt: str, columns: dict[str, str] | None,
               threshold: float) -> list[JSONObject]:
    """Judged items from a CSV / JSONL table whose ``columns`` map judgekit's fields to
    the file's columns."""
    from judgekit.core.textio import read_jsonl

    if not columns or "prompt" not in columns or "output" not in columns:
        raise DataError(f"{path}: data_format {fmt} needs columns: {{prompt: COLUMN, "
                        "output: COLUMN, label: COLUMN?, reason: COLUMN?}}")
    bad = [k for k in columns if k not in FIELDS]
    if bad:
        raise DataError(f"columns: unknown field {bad[0]!r}; use {', '.join(FIELDS)}")
    if fmt == "csv":
        from judgekit.recorded.csvsafe import read_dicts

        rows = list(read_dicts(path)[1])
    else:
        rows = read_jsonl(path)
    if rows:
        missing = [c for c in columns.values() if c not in rows[0]]
        if missing:
            raise DataError(f"{path}: no column {missing[0]!r}; it has "
                            f"{', '.join(map(str, rows[0]))}")
    out = []
    for i, r in enumerate(rows):
        item: JSONObject = {
            "Prompt": str(r[columns["prompt"]]), "Output": str(r[columns["output"]]),
            "Source": str(r[columns["source"]]) if "source" in columns else f"{path.name}:{i}"}
        if "label" in columns:
            item["Label"] = label_of(r[columns["label"]], threshold)
        if "reason" in columns:
            item["Reason"] = r[columns["reason"]]
        out.append(item)
    return out


def judged_from_table(path: Path, table: Table, threshold: float = 0.5) -> list[JSONObject]:
    """Judged items from a pointwise table read with its roles (a format that supplies
    only ``table``): the input and output texts, the judge's verdict as the label, its
    explanation as the reason, the row's id as the source."""
    if table.shape != "pointwise":
        raise DataError(f"{path}: {table.shape} verdicts compare two answers; the audit and "
                        "the pointwise probe need one answer per item")
    roles = table.roles
    text = {k: next((c for c in names if c in (table.rows[0] if table.rows else {})), None)
            for k, names in {"prompt": ("input", "prompt", "question"),
                             "output": ("output", "answer", "response")}.items()}
    if text["prompt"] is None or text["output"] is None:
        raise DataError(f"{path}: no input and output columns to audit (name them with "
                        "columns: {prompt: COLUMN, output: COLUMN})")
    out: list[JSONObject] = []
    for i, r in enumerate(table.rows):
        out.append({"Prompt": str(r[text["prompt"]]), "Output": str(r[text["output"]]),
                    "Label": label_of(r.get(roles.get("judge", "")), threshold),
                    "Reason": r.get("explanation"),
                    "Source": str(r[roles["id"]]) if "id" in roles else f"{path.name}:{i}"})
    return out


def judged_from_rows(path: Path, fmt: str, spec: JudgedInput,
                     table: Any) -> list[JSONObject]:
    """Judged items of a CSV / JSONL-like table: by the ``columns`` mapping when the
    config gives one, else from its detected roles (``table(path, {})``)."""
    if spec.columns:
        return read_table(path, fmt, spec.columns, spec.pass_threshold)
    try:
        return judged_from_table(path, table(path, {}), spec.pass_threshold)
    except DataError as exc:  # nothing detected: say what the mapping is
        raise DataError(f"{path}: data_format {fmt} needs columns: {{prompt: COLUMN, "
                        f"output: COLUMN, label: COLUMN?}} ({exc})") from None


def read_records(path: Path, spec: JudgedInput | None) -> list[Any]:
    """The raw judged-item records of ``path`` in the format ``spec`` names."""
    spec = spec or JudgedInput.model_validate({})
    fmt = FORMATS.get(spec.data_format)
    if fmt.judged is not None:
        return fmt.judged(path, spec)
    assert fmt.table is not None
    return judged_from_table(path, fmt.table(path, {}), spec.pass_threshold)
