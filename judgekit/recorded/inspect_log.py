"""Inspect AI eval logs: ``.eval`` (a zip of ``samples/*.json``, members deflated or
Zstandard) or ``.json`` (one document with ``samples``). Per sample: the input (a string
or chat messages), the answer the scorer saw (``scores[scorer].answer``, else the
model's output), and the scorer's value as the label: C / I (Inspect's correct /
incorrect) or a number (at least ``pass_threshold`` passes); P (partial) and other
values give no label. ``scorer`` names the score (default: the sample's first). The
grader's prompt and model are kept where a model-graded scorer recorded them.

Items are keyed ``inspect:TASK:SAMPLE:EPOCH:SCORER``; a sample's epochs share one
cluster (its question)."""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, RecordedFormat, Table, label_of, text_of
from judgekit.recorded.judged import JudgedInput
from judgekit.recorded.tables import table_from_judged

__all__ = ["INSPECT_GRADE_PATTERN", "read_inspect"]


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
        return json_loads(bytes(buf).decode("utf-8"))
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
            header = json_loads(read_text(path))
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
    return {"GraderPrompt": text_of(grading[0].get("content")),
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
        prompt = text_of(inp) if not isinstance(inp, list) else "\n".join(
            text_of(m.get("content")) for m in inp if m.get("role", "user") == "user")
        answer = sc.get("answer")
        if answer is None:
            choices = (s.get("output") or {}).get("choices") or [{}]
            answer = text_of((choices[0].get("message") or {}).get("content"))
        out.append({"Prompt": prompt, "Output": str(answer),
                    "Label": label_of(sc.get("value"), threshold),
                    "Reason": sc.get("explanation"),
                    **({"Reference": text_of(s["target"]) if not isinstance(s["target"], list)
                        else "\n".join(map(str, s["target"]))} if s.get("target") else {}),
                    "Source": f"inspect:{task}:{s.get('id')}:{s.get('epoch', 1)}:{name}",
                    **_grader(header, name, sc)})
        cost = _grader_cost(s, out[-1].get("GraderModel"))
        if cost is not None:
            out[-1]["Cost"] = cost
    return out


def _grader_cost(sample: JSONObject, model: Any) -> float | None:
    """What the grader's calls on a sample cost: Inspect records each model's tokens in
    the sample's ``model_usage``; priced from judgekit.llm.pricing where the grader's
    model has a known price (None otherwise, never a guess). Only a grader that is not
    the model under test is counted apart from its answers."""
    from judgekit.llm.pricing import cost_usd

    usage = sample.get("model_usage")
    if not isinstance(model, str) or not isinstance(usage, dict):
        return None
    got = usage.get(model)
    if not isinstance(got, dict):
        return None
    try:
        return cost_usd(model, int(got.get("input_tokens") or 0),
                        int(got.get("output_tokens") or 0))
    except (TypeError, ValueError):
        return None


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    return read_inspect(path, spec.scorer, spec.pass_threshold)


def _table(path: Path, roles: dict[str, str]) -> Table:
    return table_from_judged(read_inspect(path, None, 0.5), cluster=3,
                             grader=lambda parts: f"{parts[4]} ({parts[1]})"
                             if len(parts) >= 5 else "inspect")


def _sniff(doc: Any) -> bool:
    return isinstance(doc, dict) and ("eval" in doc or "samples" in doc)


FORMAT = FORMATS.add("inspect", RecordedFormat(
    "inspect", suffixes=(".eval",), sniff=_sniff, table=_table, judged=_judged,
    description="Inspect AI eval log (.eval or .json)"))
