"""Reading recorded verdicts: the file's rows, its shape (pointwise, pairwise,
alpaca_eval) and the column that plays each role.

A role given in ``roles`` (``--map ROLE=COLUMN``) is taken as is; the others are
detected from the column names, and a role two columns could play is an error that
lists them, as is a required role no column plays."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

from judgekit.errors import DataError
from judgekit.jsontypes import JSONObject
from judgekit.textio import read_jsonl, read_text

# Column names each role is detected from (case and spaces ignored).
POINTWISE = {"id": ("id", "item_id", "sample_id", "uid"),
             "question_id": ("question_id", "qid", "prompt_id", "question"),
             "system": ("system", "model", "generator", "policy"),
             "judge": ("judge", "verdict", "judge_verdict", "grade", "score"),
             "human": ("human", "human_label", "gold", "label", "annotation")}
PAIRWISE = {"pair_id": ("pair_id", "pair", "pid"),
            "question": ("question", "instruction", "prompt", "input"),
            "first": ("first", "answer_first", "output_first", "shown_first"),
            "second": ("second", "answer_second", "output_second", "shown_second"),
            "winner": ("winner", "verdict", "judge", "preference"),
            "label": ("label", "human", "gold", "human_label"),
            "model_first": ("model_first", "first_model", "system_first"),
            "model_second": ("model_second", "second_model", "system_second"),
            "dataset": ("dataset", "source", "subset", "task")}
REQUIRED = {"pointwise": ("judge",), "pairwise": ("first", "second", "winner")}


class Table(NamedTuple):
    shape: str  # pointwise | pairwise | alpaca_eval
    rows: list[JSONObject]
    roles: dict[str, str]


def read(path: Path, fmt: str, roles: dict[str, str]) -> Table:
    """The rows of ``path`` in format ``fmt`` (auto: by suffix and content) with each
    role's column."""
    fmt = _format(path, fmt)
    if fmt in ("inspect", "promptfoo"):
        return Table("pointwise", _graded(path, fmt), {
            "id": "id", "judge": "judge", "question_id": "question_id"})
    if fmt == "llmbar":
        return Table("pairwise", _llmbar(path), {
            "pair_id": "pair_id", "question": "question", "first": "first",
            "second": "second", "winner": "winner", "label": "label"})
    if fmt == "alpaca_eval":
        return Table("alpaca_eval", _alpaca(path), {
            "baseline": "generator_1", "model": "generator_2", "preference": "preference",
            "first": "output_1", "second": "output_2", "question": "instruction"})
    rows = _csv(path) if fmt == "csv" else read_jsonl(path)
    if not rows:
        raise DataError(f"{path}: no rows")
    columns = list(rows[0])
    shape = "pairwise" if _detect(columns, PAIRWISE, {}, lenient=True).keys() >= {
        "first", "second"} or {"first", "second", "winner"} & set(roles) else "pointwise"
    known = PAIRWISE if shape == "pairwise" else POINTWISE
    bad = [r for r in roles if r not in known]
    if bad:
        raise DataError(f"--map {bad[0]}=...: {shape} verdicts have the roles "
                        f"{', '.join(known)}")
    missing_cols = [c for c in roles.values() if c not in columns and "," not in c]
    if missing_cols:
        raise DataError(f"{path}: no column {missing_cols[0]!r}; it has {', '.join(columns)}")
    people = "human" if shape == "pointwise" else "label"
    if people not in roles:
        several = [c for c in columns if re.fullmatch(
            r"(human|annotator|rater|label)_?\d+", c.strip().lower())]
        if len(several) >= 2:  # several annotators: one role, its columns joined by ","
            roles = {**roles, people: ",".join(several)}
    judge_role = "judge" if shape == "pointwise" else "winner"
    if judge_role not in roles:
        # several judges side by side: judge_gpt4, judge_claude (pairwise: winner_...)
        judges = [c for c in columns if re.fullmatch(
            rf"{judge_role}[_:.\-].+", c.strip().lower())
            and c.strip().lower() not in POINTWISE["judge"] + PAIRWISE["winner"]]
        if len(judges) >= 2:
            roles = {**roles, judge_role: ",".join(judges)}
    missing_several = [c for role in (people, judge_role)
                       for c in roles.get(role, "").split(",") if c and c not in columns]
    if missing_several:
        raise DataError(f"{path}: no column {missing_several[0]!r}; it has "
                        f"{', '.join(columns)}")
    found = _detect(columns, known, roles, lenient=False)
    absent = [r for r in REQUIRED[shape] if r not in found]
    if absent:
        raise DataError(f"{path}: no column plays the role {absent[0]!r} of {shape} verdicts "
                        f"(columns: {', '.join(columns)}); name it with --map "
                        f"{absent[0]}=COLUMN")
    return Table(shape, rows, found)


def _format(path: Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".json":
        return _json_kind(path)
    if suffix == ".eval":
        return "inspect"
    raise DataError(f"{path}: cannot tell the format from the suffix {suffix or '(none)'}; "
                    "pass --format csv, jsonl, alpaca_eval, llmbar, inspect or promptfoo")


def _graded(path: Path, fmt: str) -> list[JSONObject]:
    """An Inspect log or a promptfoo results file as pointwise rows: the grader's verdict
    per sample (and epoch), its explanation and the sample's id."""
    from judgekit.data.external import read_inspect, read_promptfoo

    items = read_inspect(path, None, 0.5) if fmt == "inspect" else read_promptfoo(path, None)
    rows: list[JSONObject] = []
    for it in items:
        source = str(it.get("Source", ""))
        parts = source.split(":")
        # inspect:TASK:SAMPLE:EPOCH:SCORER -> the sample is the cluster its epochs share
        sample = ":".join(parts[:3]) if fmt == "inspect" and len(parts) >= 3 else source
        grader = (f"{parts[4]} ({parts[1]})" if fmt == "inspect" and len(parts) >= 5
                  else "promptfoo llm-rubric")
        rows.append({"id": source, "question_id": sample, "grader": grader,
                     "judge": "" if it.get("Label") is None else it["Label"],
                     "explanation": it.get("Reason"), "prompt": it.get("Prompt"),
                     "output": it.get("Output")})
    return rows


def _json_kind(path: Path) -> str:
    """alpaca_eval annotations or an LLMBar result.json, by their fields."""
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    first = doc[0] if isinstance(doc, list) and doc and isinstance(doc[0], dict) else {}
    if "results" in first and "output_1" in first:
        return "llmbar"
    if "preference" in first:
        return "alpaca_eval"
    if isinstance(doc, dict) and ("eval" in doc or "samples" in doc):
        return "inspect"
    if isinstance(doc, dict) and "results" in doc:
        return "promptfoo"
    raise DataError(f"{path}: neither alpaca_eval annotations (generator_1, generator_2, "
                    "preference) nor an LLMBar result.json (output_1, output_2, label, "
                    "results); pass --format")


def _llmbar(path: Path) -> list[JSONObject]:
    """An LLMBar evaluator's result.json (princeton-nlp/LLMBar): each instance judged in
    both orders. Its winners name the output (1 or 2) whatever the order shown, and its
    label the better output; here they become two rows in the order shown."""
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, list):
        raise DataError(f"{path}: an LLMBar result.json is a list of instances")
    rows: list[JSONObject] = []
    for i, inst in enumerate(doc):
        try:
            last = inst["results"][-1]
            out = (str(inst["output_1"]), str(inst["output_2"]))
            label = int(inst["label"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: instance {i} has no {exc} (LLMBar's result.json has "
                            "output_1, output_2, label and results)") from None
        for swap in (False, True):
            got = (last.get(f"swap = {swap}") or {}).get("winner")
            shown = out[::-1] if swap else out
            # the output the verdict (and the label) name, as the slot it was shown in
            slot = {("1", False): "first", ("2", False): "second", ("1", True): "second",
                    ("2", True): "first"}
            rows.append({"pair_id": str(i), "question": str(inst.get("input", "")),
                         "first": shown[0], "second": shown[1],
                         "winner": slot.get((str(got), swap), "unparsed"),
                         "label": slot.get((str(label), swap))})
    return rows


def _detect(columns: list[str], known: dict[str, tuple[str, ...]], given: dict[str, str],
            lenient: bool) -> dict[str, str]:
    """Role -> column: the given ones, then one unambiguous column per other role."""
    norm = {c: c.strip().lower().replace(" ", "_") for c in columns}
    out = dict(given)
    taken = set(given.values())
    for role, names in known.items():
        if role in out:
            continue
        hits = [c for c in columns if norm[c] in names and c not in taken]
        exact = [c for c in hits if norm[c] == role]
        hits = exact or hits
        if len(hits) > 1 and not lenient:
            raise DataError(f"columns {', '.join(map(repr, hits))} could each be the "
                            f"{role!r}; choose one with --map {role}=COLUMN")
        if hits:
            out[role] = hits[0]
            taken.add(hits[0])
    return out


def _csv(path: Path) -> list[JSONObject]:
    from judgekit.csvsafe import read_dicts

    return [dict(r) for r in read_dicts(path)[1]]


def _alpaca(path: Path) -> list[JSONObject]:
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise DataError(f"{path}: an alpaca_eval annotations.json is a list of objects")
    need = ("generator_1", "generator_2", "preference")
    for i, r in enumerate(doc):
        gone = [k for k in need if k not in r]
        if gone:
            raise DataError(f"{path}: annotation {i} has no field {gone[0]!r} (alpaca_eval's "
                            "annotations.json has generator_1, generator_2, preference)")
    return doc

