"""Reading recorded verdicts as tables: the file's format (by suffix, then by the
formats' content sniffers), its rows, its shape (pointwise, pairwise, alpaca_eval) and
the column that plays each role.

A role given in ``roles`` (``--map ROLE=COLUMN``) is taken as is; the others are
detected from the column names, and a role two columns could play is an error that
lists them, as is a required role no column plays."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.spec import Shape
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, StreamedRows, Table

# Column names each role is detected from (case and spaces ignored).
POINTWISE = {"id": ("id", "item_id", "sample_id", "uid"),
             "question_id": ("question_id", "qid", "prompt_id", "question"),
             "system": ("system", "model", "generator", "policy"),
             "judge": ("judge", "verdict", "judge_verdict", "grade", "score", "judge_score",
                       "judge_rating", "judge_grade", "rating"),
             "human": ("human", "human_label", "gold", "label", "annotation", "human_rating",
                       "human_score", "human_judgment", "human_judgement", "gold_label",
                       "human_verdict")}
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
# The texts a person reads beside a verdict, carried into the items (first column
# matching, case and spaces ignored; never a column that plays a role)
TEXTS = {"input": ("input", "question", "prompt", "instruction", "query"),
         "output": ("output", "answer", "response", "completion", "generation"),
         "reference": ("reference", "target", "expected", "ideal", "gold_answer"),
         "explanation": ("explanation", "reason", "rationale", "critique", "feedback"),
         "grader": ("grader",),
         "confidence": ("confidence", "judge_confidence"),
         # what the judge's verdict cost and took, where the file records it (alpaca_eval:
         # price_per_example, time_per_example); `judgekit choose` averages them
         "cost": ("cost", "cost_usd", "price_per_example", "judge_cost", "price"),
         "seconds": ("seconds", "time_per_example", "latency", "latency_s", "duration",
                     "judge_seconds")}


def source_aliases(item: str) -> list[str]:
    """Other names of an item in its source tool's own ids: an Inspect item
    ``inspect:TASK:SAMPLE:EPOCH:SCORER`` is also ``SAMPLE:EPOCH`` and ``SAMPLE`` (every
    epoch)."""
    if item.startswith("inspect:"):
        parts = item.split("#")[0].split(":")
        if len(parts) >= 4:
            return [f"{parts[2]}:{parts[3]}", parts[2]]
    return []


PEOPLE_LIKE = re.compile(r"human|annotat|rater|gold|label|expert|crowd", re.I)


def unused_people_columns(columns: list[str], roles: dict[str, str]) -> list[str]:
    """Columns whose names say they hold people's labels but that play no role (a
    human_rating column the detection did not take): named in one line, never silently
    dropped."""
    taken = {c for v in roles.values() for c in v.split(",")}
    return [c for c in columns if c not in taken and not c.startswith("_")
            and PEOPLE_LIKE.search(c)]


def text_columns(columns: list[str], roles: dict[str, str]) -> dict[str, str]:
    """Text kind -> the column holding it (see TEXTS)."""
    taken = {c for v in roles.values() for c in v.split(",")} - {roles.get("question_id")}
    norm = {c: c.strip().lower().replace(" ", "_") for c in columns}
    out = {}
    for kind, names in TEXTS.items():
        hit = next((c for name in names for c in columns
                    if norm[c] == name and c not in taken), None)
        if hit is not None:
            out[kind] = hit
    return out


__all__ = ["PAIRWISE", "POINTWISE", "REQUIRED", "TEXTS", "Table", "detect_rows", "format_of",
           "read", "table_from_judged", "text_columns", "source_aliases", "unused_people_columns"]


def read(path: Path, fmt: str, roles: dict[str, str], stream: bool = False) -> Table:
    """The rows of ``path`` in format ``fmt`` (auto: by suffix and content) with each
    role's column; with ``stream``, a format that can stream gives its rows as
    :class:`StreamedRows` (read from the file on each pass, none held)."""
    import judgekit.recorded  # noqa: F401  (registers the built-in formats)

    got = FORMATS.get(format_of(path, fmt))
    if stream and got.stream is not None:
        reader = got.stream
        return detect_rows(path, StreamedRows(lambda: reader(path)), roles)
    if got.table is None:
        raise DataError(f"{path}: format {got.name} has no verdicts table")
    return got.table(path, roles)


def detect_rows(path: Path, rows: list[JSONObject] | StreamedRows,
                roles: dict[str, str]) -> Table:
    """A table of plain rows (CSV, JSONL): its shape and roles detected from the column
    names, the roles given in ``roles`` taken as they are."""
    if not rows:
        raise DataError(f"{path}: no rows")
    columns = list(rows[0])
    shape: Shape = "pairwise" if _detect(columns, PAIRWISE, {}, lenient=True).keys() >= {
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
    grades = [c for c in columns if re.fullmatch(r"p_-?\d+(\.\d+)?", c.strip(), re.I)]
    if shape == "pointwise" and "judge" not in found and len(grades) >= 2:
        found["judge"] = grades[0]  # a judge's grade distribution: p_<grade> columns
    absent = [r for r in REQUIRED[shape] if r not in found]
    if absent:
        raise DataError(f"{path}: no column plays the role {absent[0]!r} of {shape} verdicts "
                        f"(columns: {', '.join(columns)}); name it with --map "
                        f"{absent[0]}=COLUMN")
    return Table(shape, rows, found)


def format_of(path: Path, fmt: str) -> str:
    """``fmt``, or (``auto``) the one format registered for the file's suffix, or among
    the formats that sniff its content (a ``.json`` document), the first that claims it."""
    if fmt != "auto":
        return fmt
    if path.is_dir() and any(path.rglob("*.parquet")):  # a partitioned dataset
        return "parquet"
    suffix = path.suffix.lower()
    by_suffix = [f for _, f in FORMATS.items() if suffix in f.suffixes]
    if len(by_suffix) == 1:
        return by_suffix[0].name
    sniffers = [f for _, f in FORMATS.items() if f.sniff is not None]
    if suffix == ".json" and sniffers:
        try:
            doc = json_loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        for f in sniffers:
            if f.sniff is not None and f.sniff(doc):
                return f.name
        raise DataError(f"{path}: none of the JSON formats ("
                        f"{', '.join(f.name for f in sniffers)}) recognises it; pass --format")
    names = ", ".join(FORMATS.names())
    raise DataError(f"{path}: cannot tell the format from the suffix {suffix or '(none)'}; "
                    f"pass --format ({names})")


def table_from_judged(items: list[Any], cluster: int,
                      grader: Callable[[list[str]], str]) -> Table:
    """Judged items (a format that supplies ``judged``) as pointwise rows: the grader's
    verdict per item, its explanation and the item's id. ``cluster``: how many leading
    ``:``-parts of the id name the question an item's repeats share (0: the whole id)."""
    rows: list[JSONObject] = []
    for it in items:
        source = str(it.get("Source", ""))
        parts = source.split(":")
        sample = ":".join(parts[:cluster]) if cluster and len(parts) >= cluster else source
        rows.append({"id": source, "question_id": sample, "grader": grader(parts),
                     "judge": "" if it.get("Label") is None else it["Label"],
                     "explanation": it.get("Reason"), "prompt": it.get("Prompt"),
                     "output": it.get("Output"),
                     **({"reference": it["Reference"]} if it.get("Reference") else {}),
                     **({"cost": it["Cost"]} if it.get("Cost") is not None else {})})
    return Table("pointwise", rows, {"id": "id", "judge": "judge",
                                     "question_id": "question_id"})


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
