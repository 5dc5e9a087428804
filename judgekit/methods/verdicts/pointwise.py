"""Pointwise verdicts: one verdict per item (pass/fail, 1/0, yes/no, C/I, or a score
against a threshold), human labels from one or several annotators on some items.

Columnar, in one pass over the rows at any size: each item's record goes to the
caller's ``write`` as it is read (the run's items file), and only numbers stay in
memory: the verdict, and integer codes of the item's id, question and system (keys
are hashed, then numbered in the order they first appear). The labelled items, a
few, are kept whole: the agreement figures resample their questions by name."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from judgekit.core.jsontypes import JSONObject
from judgekit.core.progress import track
from judgekit.methods.verdicts.analysis import (
    agreement_measures,
    first_codes,
    fleiss_measure,
    label_error_measure,
    label_error_note,
    rate_measure,
    sorted_runs,
)
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure
from judgekit.recorded.base import label_of
from judgekit.recorded.items import majority
from judgekit.recorded.tables import text_columns
from judgekit.stats.decide import family_level, paired_difference
from judgekit.stats.ppi import (
    LabelError,
    ppi_difference,
    ppi_mean,
    resolve_label_error,
    with_label_error,
)

SHOWN_UNREADABLE = 5  # unreadable rows named in the note (the rest counted)


class Labelled(NamedTuple):
    """An item people labelled: what its figures read of it."""

    at: int  # its position among the readable items
    group: str  # its question, or its id where it has none
    system: str | None
    verdict: int
    human: Any
    humans: tuple[Any, ...]  # every annotator's label (kept with several annotators)


class Items(NamedTuple):
    """The readable items as columns (see the module's docstring)."""

    verdict: np.ndarray  # 1 / 0 (int8)
    group: np.ndarray  # codes of the question (or, without one, the id)
    # ids judged more than once: (how many, how many whose verdicts all agree, fewest
    # and most times judged); None: no id column, or no id repeats
    repeats: tuple[int, int, int, int] | None
    question: np.ndarray | None  # codes of the question (None: no question column)
    system: np.ndarray  # index into systems, -1 without one
    systems: list[str]
    labelled: list[Labelled]
    annotators: int
    error: LabelError | None = None  # the annotators' flip rate corrected for


class _Column:
    """Integers appended one at a time into a Python array (grown by ``realloc``, which
    moves a large block's pages instead of copying them) and taken once as a numpy
    view of it, with no copy."""

    def __init__(self, code: str, dtype: type) -> None:
        self.dtype = dtype
        self.values: array | None = array(code)  # type: ignore[type-arg]
        self.append = self.values.append

    def __len__(self) -> int:
        return len(self.values or ())

    def take(self) -> np.ndarray:
        """Every value, once: the view holds the array, freed when the view goes."""
        assert self.values is not None, "a column is taken once"
        out: np.ndarray = np.frombuffer(self.values, self.dtype) if len(self.values) else \
            np.zeros(0, self.dtype)
        self.values = None
        del self.append
        return out


class Read(NamedTuple):
    """What one pass over a judge's column gives."""

    measures: list[Measure]
    items: int  # records written
    unreadable: int
    bad: list[tuple[int, Any]]  # the first unreadable rows: (row number, value)
    graders: list[str]


def pointwise(rows: Iterable[JSONObject], roles: dict[str, str], cfg: VerdictsConfig,
              write: Callable[[JSONObject], None]) -> Read:
    """Measures of pointwise rows, each readable row's item record given to ``write``.
    Several annotators (``human`` naming several columns): the majority label is the
    human label (a tie gives none), and their Fleiss' kappa is the ceiling reported."""
    items, read = _read(rows, roles, cfg, write)
    if not len(items.verdict):
        return Read([], 0, *read)
    out = [rate_measure("pass_rate", "the judge's pass rate", items.verdict == 1, items.group,
                        cfg.level)]
    lab = [x for x in items.labelled if x.human is not None]
    out += agreement_measures([str(x.verdict) for x in lab], [str(x.human) for x in lab],
                              cfg, "human labels", [x.group for x in lab])
    if items.annotators >= 2:
        out.append(fleiss_measure([{"humans": list(x.humans)} for x in items.labelled],
                                  items.annotators,
                                  cfg))
    repeated = _repeats(items, cfg)
    if repeated is not None:
        out.append(repeated)
    items = items._replace(error=resolve_label_error(
        cfg.label_error, [x.humans for x in items.labelled], cfg.level, cfg.data_path))
    if items.error is not None:
        out.append(label_error_measure(items.error))
    out += _corrected(items, cfg)
    out += _leniency(items, cfg)
    out += _paired(items, cfg)
    return Read(out, len(items.verdict), *read)


def _read(rows: Iterable[JSONObject], roles: dict[str, str], cfg: VerdictsConfig,
          write: Callable[[JSONObject], None]
          ) -> tuple[Items, tuple[int, list[tuple[int, Any]], list[str]]]:
    """One pass: the columns, and (unreadable count, the first unreadable rows, the
    graders named)."""
    humans = [c for c in roles.get("human", "").split(",") if c]
    judge, id_col = roles["judge"], roles.get("id")
    q_col, s_col = roles.get("question_id"), roles.get("system")
    verdict, ids, questions = _Column("b", np.int8), _Column("q", np.int64), \
        _Column("q", np.int64)
    blank: list[tuple[int, int]] = []  # rows with an empty question: (position, id hash)
    system, systems = _Column("i", np.int32), {}  # type: ignore[var-annotated]
    sys_names: list[str] = []
    labelled: list[Labelled] = []
    bad: list[tuple[int, Any]] = []
    graders: set[str] = set()
    texts: dict[str, str] | None = None
    unread = 0
    for i, r in enumerate(track(rows, "reading verdicts", unit="rows")):
        if texts is None:
            texts = text_columns(list(r), roles)
        if r.get("grader"):
            graders.add(str(r["grader"]))
        v = label_of(r.get(judge), cfg.pass_threshold)
        if v is None:
            unread += 1
            if len(bad) < SHOWN_UNREADABLE + 1:
                bad.append((i + 1, r.get(judge)))
            continue
        people = [label_of(r.get(c), cfg.pass_threshold) for c in humans
                  if r.get(c) not in (None, "")]
        h = majority(people)
        item_id = str(r.get(id_col, i)) if id_col is not None else str(i)
        qid = str(r.get(q_col)) if q_col is not None else None
        sysname = str(r.get(s_col)) if s_col is not None else None
        write({"id": item_id, "question_id": qid, "system": sysname, "verdict": v,
               "human": h, "humans": people,
               **{k: str(r[c]) for k, c in texts.items() if r.get(c) not in (None, "")}})
        code = -1 if sysname is None else systems.setdefault(sysname, len(systems))
        if code == len(sys_names):
            sys_names.append(sysname or "")  # one string per system, shared by its items
        if h is not None or (len(humans) >= 2 and people):
            labelled.append(Labelled(len(verdict), qid or item_id,
                                     None if code < 0 else sys_names[code], v, h,
                                     tuple(people) if len(humans) >= 2 else ()))
        if id_col is not None:
            ids.append(hash(item_id))
        if qid is not None:
            questions.append(hash(qid))
            if not qid:  # its group is its id
                blank.append((len(verdict), hash(item_id)))
        verdict.append(v)
        system.append(code)
    names = sorted(systems)  # codes renumbered in name order
    order = np.array([names.index(n) for n in systems] or [0], np.int32)
    sys_codes = system.take()
    sys_codes = np.where(sys_codes < 0, -1, order[np.maximum(sys_codes, 0)]).astype(np.int32)

    def coded(hashes: _Column) -> np.ndarray:
        return first_codes(hashes.take())  # the hashes go as soon as they are coded

    # an item's group is its question, or its id where it has none (each row its own
    # without either); the same codes serve both where they coincide
    flags = verdict.take()
    repeats = None
    id_codes: np.ndarray | None = None
    if id_col is not None:
        hashes = ids.take()
        repeats = _repeated(hashes, flags)
        id_codes = first_codes(hashes) if q_col is None else None
        del hashes
    q_codes: np.ndarray | None = None
    if q_col is None:
        group = id_codes if id_codes is not None else np.arange(len(flags), dtype=np.int32)
    else:
        if blank:
            hashes = questions.take()
            keys = hashes.copy()
            for at, key in blank:
                keys[at] = key
            group = first_codes(keys)
            del keys
            q_codes = first_codes(hashes)
            del hashes
        else:
            q_codes = group = coded(questions)
    cols = Items(flags, group, repeats, q_codes, sys_codes, names, labelled, len(humans))
    return cols, (unread, bad, sorted(graders))


def _repeated(hashes: np.ndarray, verdict: np.ndarray) -> tuple[int, int, int, int] | None:
    """(ids judged more than once, of them those whose verdicts all agree, fewest and
    most times judged) from the rows' id hashes (a sort, compared a block at a time;
    no codes kept, nothing more when every id is distinct)."""
    n = hashes.size
    if n < 2:
        return None
    perm, new = sorted_runs(hashes)
    if new.all():
        return None
    start = np.flatnonzero(new)
    del new
    size = np.diff(np.append(start, n))
    passed = np.add.reduceat(verdict[perm], start, dtype=np.int64)
    again = size >= 2
    agree = (passed[again] == 0) | (passed[again] == size[again])
    return (int(again.sum()), int(agree.sum()), int(size[again].min()),
            int(size[again].max()))


def _repeats(items: Items, cfg: VerdictsConfig) -> Measure | None:
    """Repeat consistency: items judged more than once (rows sharing an ``id``) whose
    verdicts all agree, with the share's interval; None when no item repeats."""
    if items.repeats is None:
        return None
    n, agree, least, most = items.repeats
    return rate_measure("repeat_consistency", "items judged more than once whose verdicts "
                        "all agree", np.arange(n) < agree, None, cfg.level,
                        note=f"{n} items judged {least}-{most} times (rows sharing an id)")


def _by_system(items: Items) -> list[tuple[str | None, np.ndarray, list[Labelled]]]:
    """(system, the mask of its items, those people labelled), overall first (None), for
    every system with at least 2 labelled items."""
    out = []
    for code, name in [(None, None), *enumerate(items.systems)]:
        mask = np.ones(len(items.verdict), bool) if code is None else items.system == code
        lab = [x for x in items.labelled if x.human is not None
               and (name is None or x.system == name)]
        if len(lab) >= 2:
            out.append((name, mask, lab))
    return out


def _corrected(items: Items, cfg: VerdictsConfig) -> list[Measure]:
    """The pass rate corrected for the judge's errors by the human labels (PPI++), over
    every item and per system; the labelled items must be a random sample of them."""
    out = []
    for name, mask, lab in _by_system(items):
        c = ppi_mean(items.verdict[mask].astype(float), [float(x.verdict) for x in lab],
                     [float(x.human) for x in lab], level=cfg.level)
        if items.error is not None:
            c = with_label_error(c, items.error.rate, items.error.ci)
        key = "corrected_pass_rate" if name is None else f"corrected_pass_rate[{name}]"
        need = c.labels_for_halfwidth(cfg.target_halfwidth)  # in all, at most every item
        out.append(Measure(key=key, what="pass rate corrected by human labels "
                           f"(prediction-powered){'' if name is None else f', {name}'}",
                           estimate=c.estimate, ci=list(c.ci), n=c.n_items,
                           decision=f"{c.n_labelled} human labels",
                           labelled=c.n_labelled,
                           labels_for_target=need,
                           note=f"human labels alone: {c.human_only:.3f} "
                                f"[{c.human_only_ci[0]:.3f}, {c.human_only_ci[1]:.3f}]; "
                                + _plan(need, cfg.target_halfwidth)
                                + label_error_note(items.error)))
    return out


def _plan(labels: int | None, halfwidth: float) -> str:
    """The label plan: human labels in all for an interval of +/- ``halfwidth`` (same
    design; never more than the items)."""
    if labels is None:
        return f"the interval is already within +/- {halfwidth:g}"
    return f"about {labels} human labels for +/- {halfwidth:g} (same design)"


def _leniency(items: Items, cfg: VerdictsConfig) -> list[Measure]:
    """Leniency (severity when negative): the judge's pass rate minus people's corrected
    pass rate, overall and per system. With the prediction-powered correction at
    lambda = 1 it is the mean of (verdict - human label) over the labelled items, a
    paired difference (Newcombe's interval; clustered by question where questions
    repeat, a cluster-robust t interval; never of zero width: labels that show no
    disagreement give the exact bound of an unseen one); with --label-error, the
    judge's rate minus the corrected rate that accounts for it. The decision is the
    interval's: lenient or severe when it excludes 0. Each row also carries
    ``family_ci``, its interval at the level that holds over the family's rows together
    (overall and every system), on which any claim resting on one of them rests."""
    out = []
    family = _by_system(items)
    wide = family_level(cfg.level, len(family))
    for name, mask, lab in family:
        v = [float(x.verdict) for x in lab]
        h = [float(x.human) for x in lab]
        groups = [x.group for x in lab]
        if items.error is not None:
            mine = items.verdict[mask]
            judge = float(np.mean(mine))
            cis = []
            for lv in (cfg.level, wide):
                c = with_label_error(ppi_mean(mine.astype(float), v, h, level=lv),
                                     items.error.rate, items.error.ci)
                cis.append([judge - c.ci[1], judge - c.ci[0]])
            est, ci, fam, how = judge - c.estimate, cis[0], cis[1], (
                "the judge's pass rate minus the label-error-corrected rate")
        else:
            est, ci, how = paired_difference(v, h, groups, cfg.level)
            fam = paired_difference(v, h, groups, wide)[1]
        key = "leniency" if name is None else f"leniency[{name}]"
        out.append(Measure(
            key=key, what="the judge's pass rate minus people's (corrected) on the same "
            "items" + ("" if name is None else f", {name}"), estimate=est, ci=ci,
            n=len(lab), baseline=0.0, units="difference of shares", family_ci=fam,
            decision=("lenient" if ci[0] > 0 else "severe" if ci[1] < 0 else
                      "no leniency shown") + f" ({len(lab)} human labels)",
            finding=ci[0] > 0 or ci[1] < 0, note=how + f"; {len(family)} rows in the "
            f"family (overall and per system): together at {wide:.4g} each"
            + label_error_note(items.error)))
    return out


MAX_SYSTEMS = 6  # every pair of up to this many systems is compared (15 comparisons)


def _paired(items: Items, cfg: VerdictsConfig) -> list[Measure]:
    """Two systems judged by the same judge on the same questions, compared corrected
    for the judge's errors: PPI++ on the per-question difference (judge A - B on every
    question both answered, human A - B where both answers carry a label; those
    questions must be a random sample of the shared ones). Several rows of one system
    and question (repeats) are averaged. Each pair of up to six systems."""
    systems = items.systems
    if len(systems) < 2 or items.question is None:
        return []
    if len(systems) > MAX_SYSTEMS:
        return [Measure(key="corrected_difference", what="paired difference of pass rates",
                        decision=f"not measured: {len(systems)} systems (compare up to "
                        f"{MAX_SYSTEMS} at once; filter the file)")]
    shared_q, judged = _shared_means(items.question, items.system, items.verdict,
                                     len(systems))
    human: dict[tuple[int, int], list[float]] = {}
    for x in items.labelled:
        if x.human is not None and x.system is not None:
            q = items.question[x.at]
            at = int(np.searchsorted(shared_q, q))  # its row of judged, if it has one
            if at < shared_q.size and shared_q[at] == q:  # else only one system answered
                human.setdefault((systems.index(x.system), at), []).append(float(x.human))
    out = []
    for i, a in enumerate(systems):
        for j in range(i + 1, len(systems)):
            out.append(_difference((i, a), (j, systems[j]), judged, human, cfg,
                                   items.error))
    return out


def _shared_means(question: np.ndarray, system: np.ndarray, verdict: np.ndarray, s: int,
                  step: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """(the codes of questions answered by two or more systems, ascending; each one's mean
    verdict per system, NaN where that system did not answer), a block of rows at a time:
    memory follows those questions, not every question times every system (10^7 rows of
    distinct questions held 350 MB of means nobody could pair)."""
    k, n = int(question.max()) + 1, question.size
    seen = np.zeros(k, np.uint8)  # a bit per system (at most MAX_SYSTEMS <= 8)
    for a in range(0, n, step):
        q, sy = question[a:a + step], system[a:a + step]
        ok = sy >= 0
        np.bitwise_or.at(seen, q[ok], np.left_shift(1, sy[ok]).astype(np.uint8))
    systems_of = np.zeros(k, np.uint8)
    for code in range(s):
        systems_of += (seen >> code) & 1
    del seen
    shared = np.flatnonzero(systems_of >= 2)
    del systems_of
    row = np.full(k, -1, np.int32)
    row[shared] = np.arange(shared.size, dtype=np.int32)
    total, count = np.zeros((shared.size, s)), np.zeros((shared.size, s), np.int64)
    for a in range(0, n, step):
        r, sy = row[question[a:a + step]], system[a:a + step]
        ok = (r >= 0) & (sy >= 0)
        np.add.at(total, (r[ok], sy[ok]), verdict[a:a + step][ok])
        np.add.at(count, (r[ok], sy[ok]), 1)
    judged = np.full((shared.size, s), np.nan)
    np.divide(total, count, out=judged, where=count > 0)
    return shared, judged


def _difference(first: tuple[int, str], second: tuple[int, str], judged: np.ndarray,
                human: dict[tuple[int, int], list[float]], cfg: VerdictsConfig,
                err: LabelError | None = None) -> Measure:
    """System ``a`` minus ``b`` on the questions both answered (see ``_paired``):
    ``judged`` is each shared question's mean verdict per system (NaN: not answered) and
    ``human`` is keyed by (system, row of ``judged``)."""
    (ia, a), (ib, b) = first, second
    every = judged[:, ia] - judged[:, ib]  # NaN where either did not answer
    both = ~np.isnan(every)
    every = every[both]  # one per question both answered, in question order
    lab = sorted(q for (si, q) in human if si == ia and (ib, q) in human and both[q])
    what = (f"pass rate of {a} minus {b} on the same questions, corrected by human "
            "labels (prediction-powered)")
    key = f"corrected_difference[{a}-{b}]"
    if len(lab) < 2:
        return Measure(key=key, what=what, n=len(every), units="difference of shares",
                       decision=f"not measured: {len(lab)} question(s) with human labels "
                       "on both systems (need 2)")
    c = ppi_difference(every, [float(judged[q, ia] - judged[q, ib]) for q in lab],
                       [float(np.mean(human[(ia, q)]) - np.mean(human[(ib, q)]))
                        for q in lab], level=cfg.level)
    if err is not None:
        c = with_label_error(c, err.rate, err.ci, difference=True)
    return Measure(
        key=key, what=what, estimate=c.estimate, ci=c.ci, n=c.n_items, baseline=0.0,
        units="difference of shares", labelled=c.n_labelled,
        labels_for_target=c.labels_for_halfwidth(cfg.target_halfwidth),
        decision=(f"{a} better" if c.ci[0] > 0 else f"{b} better" if c.ci[1] < 0
                  else "no difference shown") + f" ({c.n_labelled} labelled questions)",
        note=f"{a} - {b}: human labels alone {c.human_only:+.3f} "
             f"[{c.human_only_ci[0]:.3f}, {c.human_only_ci[1]:.3f}] on {c.n_labelled} "
             f"questions; the judge alone {float(np.mean(every)):+.3f} on {c.n_items} "
             "(uncorrected); " + _plan(c.labels_for_halfwidth(cfg.target_halfwidth),
                                       cfg.target_halfwidth).replace("labels", "labelled "
                                                                     "questions", 1)
             + label_error_note(err))
