"""Pointwise verdicts: one verdict per item (pass/fail, 1/0, yes/no, C/I, or a score
against a threshold), human labels from one or several annotators on some items."""

from __future__ import annotations

import numpy as np

from judgekit.core.jsontypes import JSONObject
from judgekit.core.progress import track
from judgekit.methods.verdicts.analysis import (
    agreement_measures,
    fleiss_measure,
    majority,
    rate_measure,
)
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure
from judgekit.recorded.base import label_of
from judgekit.recorded.tables import text_columns
from judgekit.stats.decide import cluster_mean
from judgekit.stats.ppi import ppi_difference, ppi_mean, with_label_error
from judgekit.stats.proportions import newcombe_paired, unconditional_mcnemar


def pointwise(rows: list[JSONObject], roles: dict[str, str], cfg: VerdictsConfig
              ) -> tuple[list[Measure], list[JSONObject], int]:
    """Measures, item records and the count of unreadable verdicts of pointwise rows.
    Several annotators (``human`` naming several columns): the majority label is the
    human label (a tie gives none), and their Fleiss' kappa is the ceiling reported."""
    humans = [c for c in roles.get("human", "").split(",") if c]
    items: list[JSONObject] = []
    unread = 0
    texts = text_columns(list(rows[0]) if rows else [], roles)
    for i, r in enumerate(track(rows, "reading verdicts", len(rows), "rows")):
        v = label_of(r.get(roles["judge"]), cfg.pass_threshold)
        people = [label_of(r.get(c), cfg.pass_threshold) for c in humans
                  if r.get(c) not in (None, "")]
        h = majority(people)
        if v is None:
            unread += 1
            continue
        items.append({"id": str(r.get(roles["id"], i)) if "id" in roles else str(i),
                      "question_id": str(r.get(roles["question_id"]))
                      if "question_id" in roles else None,
                      "system": str(r.get(roles["system"])) if "system" in roles else None,
                      "verdict": v, "human": h, "humans": people,
                      **{k: str(r[c]) for k, c in texts.items()
                         if r.get(c) not in (None, "")}})
    groups = [x["question_id"] or x["id"] for x in items]
    out = [rate_measure("pass_rate", "the judge's pass rate", [x["verdict"] == 1 for x in items],
                 groups, cfg.level)]
    lab = [x for x in items if x["human"] is not None]
    out += agreement_measures([str(x["verdict"]) for x in lab], [str(x["human"]) for x in lab],
                              cfg, "human labels",
                              [x["question_id"] or x["id"] for x in lab])
    if len(humans) >= 2:
        out.append(fleiss_measure(items, len(humans), cfg))
    repeated = _repeats(items, cfg)
    if repeated is not None:
        out.append(repeated)
    out += _corrected(items, cfg)
    out += _leniency(items, cfg)
    out += _paired(items, cfg)
    return out, items, unread


def _repeats(items: list[JSONObject], cfg: VerdictsConfig) -> Measure | None:
    """Repeat consistency: items judged more than once (rows sharing an ``id``) whose
    verdicts all agree, with the share's interval; None when no item repeats."""
    by: dict[str, list[int]] = {}
    for x in items:
        by.setdefault(x["id"], []).append(int(x["verdict"]))
    again = [v for v in by.values() if len(v) >= 2]
    if not again or "id" not in {k for x in items for k in x}:
        return None
    return rate_measure("repeat_consistency", "items judged more than once whose verdicts "
                        "all agree", [len(set(v)) == 1 for v in again], None, cfg.level,
                        note=f"{len(again)} items judged {min(map(len, again))}-"
                             f"{max(map(len, again))} times (rows sharing an id)")


def _by_system(items: list[JSONObject]
               ) -> list[tuple[str | None, list[JSONObject], list[JSONObject]]]:
    """(system, its items, those people labelled), overall first (None), for every
    system with at least 2 labelled items."""
    systems = sorted({x["system"] for x in items if x["system"] is not None})
    out = []
    for name in [None, *systems]:
        mine = [x for x in items if name is None or x["system"] == name]
        lab = [x for x in mine if x["human"] is not None]
        if len(lab) >= 2:
            out.append((name, mine, lab))
    return out


def _corrected(items: list[JSONObject], cfg: VerdictsConfig) -> list[Measure]:
    """The pass rate corrected for the judge's errors by the human labels (PPI++), over
    every item and per system; the labelled items must be a random sample of them."""
    out = []
    for name, mine, lab in _by_system(items):
        c = ppi_mean([float(x["verdict"]) for x in mine], [float(x["verdict"]) for x in lab],
                     [float(x["human"]) for x in lab], level=cfg.level)
        if cfg.label_error is not None:
            c = with_label_error(c, cfg.label_error)
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
                                + _plan(need, cfg.target_halfwidth) + label_error_note(cfg)))
    return out


def label_error_note(cfg: VerdictsConfig) -> str:
    """Whether a corrected figure accounts for annotator error."""
    if cfg.label_error is None:
        return ("; human labels taken as error-free (--label-error RATE corrects for "
                "annotators who flip labels)")
    return f"; corrected for annotators flipping {cfg.label_error:.1%} of labels (stated)"


def _plan(labels: int | None, halfwidth: float) -> str:
    """The label plan: human labels in all for an interval of +/- ``halfwidth`` (same
    design; never more than the items)."""
    if labels is None:
        return f"the interval is already within +/- {halfwidth:g}"
    return f"about {labels} human labels for +/- {halfwidth:g} (same design)"


def _leniency(items: list[JSONObject], cfg: VerdictsConfig) -> list[Measure]:
    """Leniency (severity when negative): the judge's pass rate minus people's corrected
    pass rate, overall and per system. With the prediction-powered correction at
    lambda = 1 it is the mean of (verdict - human label) over the labelled items, a
    paired difference (Newcombe's interval; clustered by question where questions
    repeat, a cluster-robust t interval); with --label-error, the judge's rate minus
    the corrected rate that accounts for it."""
    out = []
    for name, mine, lab in _by_system(items):
        v = [float(x["verdict"]) for x in lab]
        h = [float(x["human"]) for x in lab]
        groups = [x["question_id"] or x["id"] for x in lab]
        mid: float | None = None
        if cfg.label_error is not None:
            c = with_label_error(ppi_mean([float(x["verdict"]) for x in mine], v, h,
                                          level=cfg.level), cfg.label_error)
            judge = float(np.mean([x["verdict"] for x in mine]))
            est, ci, how = judge - c.estimate, [judge - c.ci[1], judge - c.ci[0]], (
                "the judge's pass rate minus the label-error-corrected rate")
        elif len(set(groups)) < len(groups):
            m = cluster_mean([a - b for a, b in zip(v, h)], groups, cfg.level)
            est, ci, how = m.estimate, m.ci, "paired, clustered by question"
        else:
            d = newcombe_paired(v, h, cfg.level)
            est, ci, how = d.diff, d.ci, ("paired (Newcombe's interval; exact "
                                          "unconditional test)")
            mid = unconditional_mcnemar(d.only_first, d.only_second, d.n)
            how += f"; p = {mid:.3g}"
        shown = (ci[0] > 0 or ci[1] < 0) and (mid < 1 - cfg.level if mid is not None
                                              else True)
        key = "leniency" if name is None else f"leniency[{name}]"
        out.append(Measure(
            key=key, what="the judge's pass rate minus people's (corrected) on the same "
            "items" + ("" if name is None else f", {name}"), estimate=est, ci=ci,
            n=len(lab), baseline=0.0, units="difference of shares",
            decision=("lenient" if ci[0] > 0 else "severe" if ci[1] < 0 else
                      "no leniency shown") + f" ({len(lab)} human labels)",
            finding=shown, note=how + label_error_note(cfg)))
    return out


MAX_SYSTEMS = 6  # every pair of up to this many systems is compared (15 comparisons)


def _paired(items: list[JSONObject], cfg: VerdictsConfig) -> list[Measure]:
    """Two systems judged by the same judge on the same questions, compared corrected
    for the judge's errors: PPI++ on the per-question difference (judge A - B on every
    question both answered, human A - B where both answers carry a label; those
    questions must be a random sample of the shared ones). Several rows of one system
    and question (repeats) are averaged. Each pair of up to six systems."""
    systems = sorted({x["system"] for x in items if x["system"] is not None})
    if len(systems) < 2 or all(x["question_id"] is None for x in items):
        return []
    if len(systems) > MAX_SYSTEMS:
        return [Measure(key="corrected_difference", what="paired difference of pass rates",
                        decision=f"not measured: {len(systems)} systems (compare up to "
                        f"{MAX_SYSTEMS} at once; filter the file)")]
    judged: dict[tuple[str, str], list[float]] = {}
    human: dict[tuple[str, str], list[float]] = {}
    for x in items:
        if x["system"] is None or x["question_id"] is None:
            continue
        key = (x["system"], x["question_id"])
        judged.setdefault(key, []).append(float(x["verdict"]))
        if x["human"] is not None:
            human.setdefault(key, []).append(float(x["human"]))
    out = []
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            out.append(_difference(a, b, judged, human, cfg))
    return out


def _difference(a: str, b: str, judged: dict[tuple[str, str], list[float]],
                human: dict[tuple[str, str], list[float]], cfg: VerdictsConfig) -> Measure:
    """System ``a`` minus ``b`` on the questions both answered (see ``_paired``)."""
    def diff(table: dict[tuple[str, str], list[float]], q: str) -> float:
        return float(np.mean(table[(a, q)]) - np.mean(table[(b, q)]))

    shared = sorted({q for s, q in judged if s == a} & {q for s, q in judged if s == b})
    lab = [q for q in shared if (a, q) in human and (b, q) in human]
    what = (f"pass rate of {a} minus {b} on the same questions, corrected by human "
            "labels (prediction-powered)")
    key = f"corrected_difference[{a}-{b}]"
    if len(lab) < 2:
        return Measure(key=key, what=what, n=len(shared), units="difference of shares",
                       decision=f"not measured: {len(lab)} question(s) with human labels "
                       "on both systems (need 2)")
    every = [diff(judged, q) for q in shared]
    c = ppi_difference(every, [diff(judged, q) for q in lab], [diff(human, q) for q in lab],
                       level=cfg.level)
    if cfg.label_error is not None:
        c = with_label_error(c, cfg.label_error, difference=True)
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
             + label_error_note(cfg))
