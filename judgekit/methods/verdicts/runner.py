"""Analyse a file of recorded verdicts (no provider, no key, no network)."""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NamedTuple

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.payload import DetailFile
from judgekit.core.textio import jsonl_line
from judgekit.methods.verdicts import graded, pairwise, pointwise
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import JudgeVerdicts, Measure, VerdictsPayload
from judgekit.recorded.base import StreamedRows
from judgekit.recorded.tables import Table, read, unused_people_columns


def execute(cfg: VerdictsConfig, client: Any = None) -> VerdictsPayload:
    """Every figure the file's verdicts allow (see judgekit.methods.verdicts.analysis), for each
    judge column when the file holds several (one card per judge, side by side).
    Pointwise rows of a format that streams (CSV, JSONL, Parquet) pass through once per
    judge, none held: the item records go to a spill file as they are read."""
    path = Path(cfg.data_path)
    table = read(path, cfg.data_format, cfg.roles, stream=True)
    if table.shape != "pointwise" and isinstance(table.rows, StreamedRows):
        table = table._replace(rows=list(table.rows))
    if cfg.labels_file:
        table = _with_labels(table, Path(cfg.labels_file))
    role = {"pointwise": "judge", "pairwise": "winner"}.get(table.shape)
    columns = table.roles[role].split(",") if role else [""]
    fd, name = tempfile.mkstemp(prefix="judgekit-items-", suffix=".jsonl")
    spill = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            judged = [_one(cfg, path, table, {**table.roles, role: c} if role else table.roles,
                           several=len(columns) > 1, fh=fh)
                      for c in columns]
    except BaseException:  # a failed or interrupted analysis leaves no spill behind
        spill.unlink(missing_ok=True)
        raise
    first = judged[0]
    items = DetailFile.spilled("items", spill, sum(j.items for j in judged))
    if cfg.labels_file:
        _active_measures(cfg, path, first)
    unused = unused_people_columns(list(table.rows[0]) if table.rows else [], table.roles)
    if unused:
        first.notes.append(f"column(s) {', '.join(map(repr, unused))} look like people's "
                           "labels but were not used; name one with --map human=COLUMN "
                           "(pairwise: --map label=COLUMN)")
    others = [JudgeVerdicts(judge=j.judge, column=c, unreadable=j.unreadable,
                            measures=j.measures, notes=j.notes)
              for c, j in zip(columns[1:], judged[1:])]
    return VerdictsPayload(
        judge=first.judge, shape="graded" if first.graded else table.shape,  # type: ignore[arg-type]
        source=path.name, roles=table.roles,
        n_rows=len(table.rows), unreadable=first.unreadable, level=cfg.level,
        measures=first.measures, notes=first.notes, items=items,
        **({"others": others} if others else {}))


class _Judged(NamedTuple):
    judge: str
    unreadable: int
    measures: list[Measure]
    notes: list[str]
    items: int  # item records written
    graded: bool = False  # scores on a scale (judgekit.methods.verdicts.graded)


def _one(cfg: VerdictsConfig, path: Path, table: Table, roles: dict[str, str],
         several: bool, fh: IO[str]) -> _Judged:
    """One judge's measures; its item records written to ``fh`` (with the judge's name
    when the file holds several)."""
    notes: list[str] = []
    column = roles.get({"pointwise": "judge", "pairwise": "winner"}.get(table.shape, ""), "")
    tag = re.sub(r"^(judge|winner)[_:.\-]", "", column, flags=re.I) or column

    def write(record: JSONObject) -> None:
        fh.write(jsonl_line({"judge": tag, **record} if several else record))

    is_graded = table.shape == "pointwise" and graded.is_graded(
        list(itertools.islice(table.rows, 2000)), roles, cfg.scale)
    if is_graded:
        measures, g = graded.graded(table.rows, roles, cfg, write)
        count, unread, judge = len(g.score), g.unreadable, roles["judge"]
        notes.append(f"graded verdicts on the scale {g.scale.text()}"
                     + (" (--scale LO-HI overrides it)" if g.scale.how == "detected" else ""))
        if unread:
            notes.append(f"{unread} value(s) unreadable (off the scale, NaN or text; never "
                         "averaged): " + "; ".join(g.reasons[:5])
                         + ("; ..." if unread > 5 else ""))
    elif table.shape == "pointwise":
        got = pointwise.pointwise(table.rows, roles, cfg, write)
        measures, count, unread = got.measures, got.items, got.unreadable
        judge = ", ".join(got.graders) or roles["judge"]
        if unread:
            shown = got.bad[:pointwise.SHOWN_UNREADABLE]
            notes.append(f"{unread} row(s) of {roles['judge']!r} could not be read as a "
                         "verdict and were left out (pass/fail, 1/0, or a finite score in "
                         "[0, 1]): " + ", ".join(f"row {k} ({str(v)[:20]!r})"
                                                for k, v in shown)
                         + (", ..." if unread > len(shown) else ""))
    else:
        if table.shape == "pairwise":
            measures, items, unread, notes = pairwise.pairwise(table.rows, roles, cfg)  # type: ignore[arg-type]
            judge = roles["winner"]
        else:
            measures, items, unread, notes = pairwise.alpaca_eval(table.rows, cfg)  # type: ignore[arg-type]
            names = sorted({str(r.get("annotator")) for r in table.rows if r.get("annotator")})
            judge = ", ".join(names) or "alpaca_eval annotator"
        for x in items:
            write(x)
        count = len(items)
    if not several:
        judge = cfg.judge or file_judge(path, judge)
    else:  # judge_gpt4 -> gpt4 (winner_gpt4 -> gpt4)
        judge = re.sub(r"^(judge|winner)[_:.\-]", "", judge, flags=re.I) or judge
    if not count:
        raise DataError(f"{path}: none of its {len(table.rows)} verdicts" +
                        (f" in column {judge!r}" if several else "") + " could be read "
                        "(pointwise: pass/fail, 1/0, yes/no, C/I or a score; pairwise: "
                        "first, second or tie; alpaca_eval: preference 1, 2 or 1.5)")
    if unread:
        notes.append(f"{unread} of {len(table.rows)} verdicts could not be read and are "
                     "left out of every figure")
    return _Judged(judge, unread, measures, notes, count, is_graded)


# column names that say what a column holds, not whose verdicts they are
GENERIC = {"judge", "winner", "verdict", "verdicts", "label", "score", "pass", "passed",
           "prediction", "pred", "output", "result", "decision", "grade", "rating",
           "preference", "choice", "answer", "judgement", "judgment", "evaluation"}
GENERIC_FILES = {"result", "results"}  # LLMBar's JUDGE/SETTING/result.json


def file_judge(path: Path, column: str) -> str:
    """The judge's name: its column's when that names someone, else the file's (an
    LLMBar-style ``JUDGE/SETTING/result.json`` gives "JUDGE (SETTING)"; other files
    their name without the extension). ``--judge NAME`` overrides both."""
    if column.strip().lower() not in GENERIC:
        return column
    stem = path.stem if path.suffix else path.name
    if stem.lower() in GENERIC_FILES and path.parent.name:
        up = path.parent.parent.name
        return f"{up} ({path.parent.name})" if up else path.parent.name
    return stem or column


def headline(p: VerdictsPayload) -> str:
    shown = [m for m in p.measures if m.estimate is not None][:4]
    parts = [f"{m.key} {m.estimate:+.3f} {_ci(m.ci)} (n = {m.n})" if m.units.startswith(
        "difference") else f"{m.key} {m.estimate:.3f} {_ci(m.ci)} (n = {m.n})"
        for m in shown if m.estimate is not None]
    flagged = [m.key for m in p.measures if m.finding]
    others = [o.judge + (f" (findings: {', '.join(m.key for m in o.measures if m.finding)})"
                         if any(m.finding for m in o.measures) else "")
              for o in p.others or []]
    return (f"{p.judge} ({p.shape}, {p.n_rows} rows): " + "; ".join(parts) +
            (f"; findings: {', '.join(flagged)}" if flagged else "") +
            (f"; side by side with {', '.join(others)}" if others else ""))


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _with_labels(table: Table, labels_path: Path) -> Table:
    """The rows with a ``_labels`` column from the labels file, as the human role (a
    streamed table stays streamed: the labels are joined to each row as it passes)."""
    from judgekit.recorded.labels import unknown_ids, values
    from judgekit.recorded.tables import source_aliases

    if table.shape not in ("pointwise", "pairwise"):
        raise DataError(f"{labels_path}: labels apply to pointwise or pairwise verdicts, not "
                        f"{table.shape}")
    labels = values(labels_path, table.shape, warn_drawn=False)  # weighted below
    key = "id" if table.shape == "pointwise" else "pair_id"
    col = table.roles.get(key)
    matched: set[str] = set()
    role = "human" if table.shape == "pointwise" else "label"
    # the file's own labels stay: a label from the labels file is one more annotator's
    # where the file has several, and stands in for the file's where it has one (or none)
    own = [c for c in table.roles.get(role, "").split(",") if c]

    def joiner() -> Callable[[JSONObject], JSONObject]:
        times: dict[str, int] = {}
        at = iter(range(1 << 62))

        def join(r: JSONObject) -> JSONObject:
            i = next(at)
            base = str(r.get(col, i)) if col else str(i)
            times[base] = times.get(base, 0) + 1  # a repeat (or the other order): "ID#2"
            item = base if times[base] == 1 else f"{base}#{times[base]}"
            names = [item, *source_aliases(item)]
            hit = [n for n in names if n in labels]
            matched.update(hit)
            v = labels[hit[0]] if hit else None
            label = None if v not in (0.0, 1.0) else (
                int(v) if table.shape == "pointwise" else ("first" if v == 1.0 else "second"))
            if label is None and len(own) == 1:
                label = r.get(own[0])  # the file's own label, read as the role reads it
            return {**r, "_labels": label}
        return join

    if isinstance(table.rows, StreamedRows):
        rows: list[JSONObject] | StreamedRows = table.rows.map(joiner)
        for _ in rows:  # one pass to name labels no row has, before any figure
            pass
    else:
        join = joiner()
        rows = [join(r) for r in table.rows]
    unknown = sorted(set(labels) - matched)
    if unknown:
        raise DataError(unknown_ids(labels_path, unknown, key))
    return Table(table.shape, rows, {**table.roles, role: ",".join([*own, "_labels"])
                                     if len(own) > 1 else "_labels"})


def _active_measures(cfg: VerdictsConfig, path: Path, judged: _Judged) -> None:
    """Labels drawn by `judgekit label` were chosen where the judge is unsure: the
    corrected rates weight each by its draw probability (judgekit.analysis.label_estimate), and the
    plain prediction-powered ones, which assume a random sample, are dropped."""
    from judgekit.analysis import label_estimate as session
    from judgekit.analysis import source as label_items
    from judgekit.recorded.labels import read as read_labels

    if not read_labels(Path(cfg.labels_file or "")).draws:
        return
    src = label_items.load(path)._replace(labels_path=Path(cfg.labels_file or ""))
    got = session.recorded(src)  # the design and label error the session was run with
    err = cfg.label_error if cfg.label_error is not None else got.label_error
    st = session.estimate(src, 2 * cfg.target_halfwidth, cfg.level, "all", got.design,
                          err, got.seed)
    judged.measures[:] = [m for m in judged.measures if not m.key.startswith("corrected_")]
    for f in st.figures:
        if f.estimate is None:
            continue
        judged.measures.append(Measure(
            key=f"corrected_{f.name}", what=f"{f.name.replace('_', ' ')} from actively drawn "
            f"human labels (inverse-probability weighted; {f.interval})",
            estimate=f.estimate, ci=f.ci, n=len(src.items),
            decision=f"{st.labels} human labels", labelled=st.labels,
            labels_for_target=f.labels_needed or None,
            units="difference of shares" if f.name.startswith("difference") else "share"))
    judged.notes.append(f"{st.labels} labels were drawn by judgekit label where the judge "
                        "was unsure: agreement and kappa on them over-represent hard items; "
                        "the corrected figures weight each label by its draw probability")
