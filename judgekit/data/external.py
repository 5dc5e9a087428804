"""Judgements made elsewhere, read as judged items (Prompt, Output, Label, Reason,
Source) so that the No-Data audit and the pointwise probe run on them.

- ``inspect``: an Inspect AI eval log, ``.eval`` (a zip of ``samples/*.json``) or
  ``.json`` (one document with ``samples``). Per sample: the input (a string or chat
  messages), the answer the scorer saw (``scores[scorer].answer``, else the model's
  output), and the scorer's value as the label: C / I (Inspect's correct / incorrect)
  or a number (at least ``pass_threshold`` passes); P (partial) and other values give
  no label. ``scorer`` names the score (default: the sample's first).
- ``promptfoo``: a promptfoo results file (``promptfoo eval -o out.json``). Per result
  row and per ``llm-rubric`` grading component: the rendered prompt, the response
  output, pass as the label and the grader's reason; ``scorer`` keeps only the
  components whose rubric text contains it.
- ``csv`` / ``jsonl``: any table with a ``columns`` mapping from judgekit's fields
  (``prompt``, ``output``, ``label``, ``reason``, ``source``) to the file's column
  names; labels read as 1 / 0 (also true / false, pass / fail, yes / no, C / I).

The label is the verdict of the judge that produced the file: the audit reports its
agreement with the audited evaluator as "known" accuracy, so say which judge made it.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from judgekit.errors import DataError
from judgekit.jsontypes import JSONObject
from judgekit.textio import read_jsonl, read_text

__all__ = ["JudgedInput", "formats", "judged_format", "label_of", "read_records"]

# A reader of one judged-items format: the file and the config naming it -> raw records
# (judgekit's judged-item dicts: Prompt, Output, Label?, Reason?, Source?).
Reader = Callable[[Path, "JudgedInput"], list[Any]]
_FORMATS: dict[str, Reader] = {}


def judged_format(name: str) -> Callable[[Reader], Reader]:
    """Register the decorated reader as judged-items format ``name`` (``data_format``)."""

    def deco(fn: Reader) -> Reader:
        _FORMATS[name] = fn
        return fn

    return deco


def formats() -> list[str]:
    """Every registered judged-items format."""
    return list(_FORMATS)


FIELDS = ("prompt", "output", "label", "reason", "source")
PASS = {"c", "correct", "pass", "passed", "true", "yes", "1", "1.0"}
FAIL = {"i", "incorrect", "fail", "failed", "false", "no", "0", "0.0"}


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
        if v not in _FORMATS:
            raise ValueError(f"{v!r} is not one of {', '.join(repr(f) for f in _FORMATS)}")
        return v


def label_of(value: Any, threshold: float = 0.5) -> int | None:
    """A verdict as 1 / 0, or None when it is neither (partial credit, empty)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value >= threshold)
    text = str(value).strip().casefold() if value is not None else ""
    if text in PASS:
        return 1
    if text in FAIL:
        return 0
    try:
        return int(float(text) >= threshold)
    except ValueError:
        return None


def _text(content: Any) -> str:
    """Message content: a string or a list of content parts ({"type": "text", ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type", "text") == "text")
    return "" if content is None else str(content)


# An .eval member larger than this, or inflating more than RATIO times its compressed
# size, is refused before it is read (a 1 MB zip can inflate to 1 GiB).
MEMBER_LIMIT = 256 * 1024 * 1024
RATIO_LIMIT = 1000


def _member(zf: zipfile.ZipFile, name: str, path: Path) -> Any:
    """One JSON member of an .eval zip, read in bounded chunks (the declared size can
    lie): refused with a one-line error past MEMBER_LIMIT or RATIO_LIMIT."""
    info = zf.getinfo(name)
    limit = min(MEMBER_LIMIT, max(info.compress_size, 1) * RATIO_LIMIT + 65536)
    if info.file_size > limit:
        raise DataError(f"{path}: member {name} inflates to {info.file_size} bytes "
                        f"(limit {limit}); not a plausible Inspect log")
    buf = bytearray()
    with _open_member(zf, info) as fh:
        while chunk := fh.read(1 << 20):
            buf += chunk
            if len(buf) > limit:
                raise DataError(f"{path}: member {name} inflates past {limit} bytes; not "
                                "a plausible Inspect log")
    try:
        return json.loads(bytes(buf).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: member {name} is not UTF-8 ({exc.reason} at byte "
                        f"{exc.start})") from None


ZSTD = 93  # the zip compression method Inspect writes .eval members with (0.3.1xx on)


def _open_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    """A readable stream of one member: zipfile's own for stored and deflated members,
    and for Zstandard ones (which Python's zipfile reads only from 3.14) the raw bytes
    after the member's local header through a zstd stream reader."""
    if info.compress_type != ZSTD:
        return zf.open(info)
    import struct

    import zstandard

    fp = zf.fp
    if fp is None:
        raise ValueError("the zip file is closed")
    fp.seek(info.header_offset)
    head = fp.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename}")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = io.BytesIO(fp.read(info.compress_size))
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


def _inspect_samples(path: Path) -> tuple[JSONObject, list[JSONObject]]:
    if path.suffix == ".eval":
        try:
            with zipfile.ZipFile(path) as zf:
                header = _member(zf, "header.json", path) if "header.json" in \
                    zf.namelist() else {}
                names = [n for n in zf.namelist() if n.startswith("samples/")
                         and n.endswith(".json")]
                samples = [_member(zf, n, path) for n in names]
        except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, zlib.error,
                EOFError, NotImplementedError, ValueError, OSError) as exc:
            if isinstance(exc, DataError):
                raise
            raise DataError(f"{path}: not an Inspect .eval log ({exc})") from exc
        if not isinstance(header, dict) or not all(isinstance(x, dict) for x in samples):
            raise DataError(f"{path}: not an Inspect .eval log (header and samples must be "
                            "JSON objects)")
    else:
        try:
            header = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: not an Inspect JSON log ({exc.msg})") from exc
        if not isinstance(header, dict) or "eval" not in header:
            raise DataError(f"{path}: not an Inspect log (no 'eval' field); give "
                            "data_format: json for judgekit's own items")
        samples = header.get("samples") or []
        if not isinstance(samples, list) or not all(isinstance(x, dict) for x in samples):
            raise DataError(f"{path}: the log's samples are not a list of objects")
    try:
        samples.sort(key=lambda s: (str(s.get("id")), int(s.get("epoch") or 0)))
    except (TypeError, ValueError):
        raise DataError(f"{path}: a sample's epoch is not a number") from None
    return header, samples


# Inspect's model_graded_qa/model_graded_fact read the grade with this pattern unless the
# scorer was given its own grade_pattern (inspect_ai.scorer._model.DEFAULT_GRADE_PATTERN)
INSPECT_GRADE_PATTERN = r"(?i)GRADE\s*:\s*([CPI])(.*)$"


def _grader(header: JSONObject, name: str, sc: JSONObject) -> JSONObject:
    """What a model-graded score recorded about its grader: the prompt it was sent (its
    template filled in; Inspect keeps it in the score's ``metadata.grading``), the model
    that answered, and the pattern its grade is read by. Empty for other scorers."""
    grading = (sc.get("metadata") or {}).get("grading") if isinstance(sc, dict) else None
    if not isinstance(grading, list) or not grading or not isinstance(grading[0], dict):
        return {}
    ev = header.get("eval") or {}
    scorer = next((x for x in ev.get("scorers") or [] if isinstance(x, dict)
                   and x.get("name") == name), {})
    options = scorer.get("options") or {}
    answered = grading[1] if len(grading) > 1 and isinstance(grading[1], dict) else {}
    role = options.get("model_role", "grader")
    roles = ev.get("model_roles") or {}
    # the model the scorer was configured with (Inspect's provider/name), else the one
    # that answered (a server's own name), else the task's model (Inspect's default)
    model = ((options.get("model") if isinstance(options.get("model"), str) else None)
             or (roles.get(role) or {}).get("model") or answered.get("model")
             or ev.get("model"))
    return {"GraderPrompt": _text(grading[0].get("content")),
            "GraderModel": None if model is None else str(model),
            "GradePattern": str(options.get("grade_pattern") or INSPECT_GRADE_PATTERN)}


def read_inspect(path: Path, scorer: str | None, threshold: float) -> list[JSONObject]:
    header, samples = _inspect_samples(path)
    task = str((header.get("eval") or {}).get("task", "inspect"))
    if not samples:
        raise DataError(f"{path}: the Inspect log holds no samples (was it written with "
                        "--no-log-samples?)")
    out = []
    for s in samples:
        scores = s.get("scores") or {}
        if not isinstance(scores, dict) or not all(isinstance(v, dict)
                                                    for v in scores.values()):
            raise DataError(f"{path}: sample {s.get('id')} has scores that are not objects "
                            "(Inspect's scores map a scorer's name to its score)")
        if not scores:
            raise DataError(f"{path}: sample {s.get('id')} has no scores; score the log "
                            "first (inspect score)")
        name = scorer or next(iter(scores))
        if name not in scores:
            raise DataError(f"{path}: sample {s.get('id')} has no score {name!r}; it has "
                            f"{', '.join(scores)}")
        sc = scores[name]
        inp = s.get("input")
        prompt = _text(inp) if not isinstance(inp, list) else "\n".join(
            _text(m.get("content")) for m in inp if m.get("role", "user") == "user")
        answer = sc.get("answer")
        if answer is None:
            choices = (s.get("output") or {}).get("choices") or [{}]
            answer = _text((choices[0].get("message") or {}).get("content"))
        out.append({"Prompt": prompt, "Output": str(answer),
                    "Label": label_of(sc.get("value"), threshold),
                    "Reason": sc.get("explanation"),
                    "Source": f"inspect:{task}:{s.get('id')}:{s.get('epoch', 1)}:{name}",
                    **_grader(header, name, sc)})
    return out


def read_promptfoo(path: Path, scorer: str | None) -> list[JSONObject]:
    try:
        doc = json.loads(read_text(path))
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
        prompt = (row.get("prompt") or {}).get("raw", "")
        output = (row.get("response") or {}).get("output")
        provider = (row.get("provider") or {}).get("id", "?")
        for comp in grading.get("componentResults") or []:
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


def read_table(path: Path, fmt: str, columns: dict[str, str] | None,
               threshold: float) -> list[JSONObject]:
    if not columns or "prompt" not in columns or "output" not in columns:
        raise DataError(f"{path}: data_format {fmt} needs columns: {{prompt: COLUMN, "
                        "output: COLUMN, label: COLUMN?, reason: COLUMN?}}")
    bad = [k for k in columns if k not in FIELDS]
    if bad:
        raise DataError(f"columns: unknown field {bad[0]!r}; use {', '.join(FIELDS)}")
    if fmt == "csv":
        from judgekit.csvsafe import read_dicts

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


def read_records(path: Path, spec: JudgedInput | None) -> list[Any]:
    """The raw judged-item records of ``path`` in the format ``spec`` names."""
    spec = spec or JudgedInput.model_validate({})
    return _FORMATS[spec.data_format](path, spec)


@judged_format("json")
def _read_json(path: Path, spec: JudgedInput) -> list[Any]:
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(doc, list):
        hint = "; an Inspect log? set data_format: inspect" if isinstance(doc, dict) \
            and "eval" in doc else ""
        raise DataError(f"{path}: expected a JSON list of judged items{hint}")
    return doc


@judged_format("inspect")
def _read_inspect(path: Path, spec: JudgedInput) -> list[Any]:
    return read_inspect(path, spec.scorer, spec.pass_threshold)


@judged_format("promptfoo")
def _read_promptfoo(path: Path, spec: JudgedInput) -> list[Any]:
    return read_promptfoo(path, spec.scorer)


@judged_format("csv")
def _read_csv(path: Path, spec: JudgedInput) -> list[Any]:
    return read_table(path, "csv", spec.columns, spec.pass_threshold)


@judged_format("jsonl")
def _read_jsonl(path: Path, spec: JudgedInput) -> list[Any]:
    return read_table(path, "jsonl", spec.columns, spec.pass_threshold)

