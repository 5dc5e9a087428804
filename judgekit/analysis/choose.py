"""Choose a judge, or a jury (``judgekit choose``): several judges' recorded verdicts on
the same items, aligned by item id, compared pairwise, combined into juries, and,
with ``selective``, a confidence threshold under which the judge's verdicts agree with
people at the target with a guarantee. No model call.

Every paired difference is at a Bonferroni-adjusted level (the run's level spread over
all the comparisons made), so the decision's error rate holds across them: a judge is
"not worse within the margin" when the adjusted interval of (best - it) lies below the
margin, "worse" when it lies above 0. The choice is the cheapest judge not worse than
the best (by agreement with people) within the margin, or, with a target, the cheapest
whose agreement's lower limit reaches it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from judgekit.analysis.choose_sources import load_judges
from judgekit.analysis.choose_types import (
    Choice,
    Estimate,
    JudgeItems,
    JudgeRow,
    PairRow,
    rate,
)
from judgekit.core.errors import ConfigError
from judgekit.core.spec import Shape
from judgekit.stats.decide import paired_difference

__all__ = ["Choice", "JudgeItems", "choose", "label_id", "load_judges", "write"]


def label_id(key: str, shape: Shape) -> str:
    """An item's key here as `judgekit label` names it: a pair's n-th order (0 first)
    is PAIR for the first and PAIR#(n+1) after it; pointwise ids are the same."""
    if shape != "pairwise":
        return key
    pair, _, order = key.rpartition("#")
    return pair if order in ("", "0") else f"{pair}#{int(order) + 1}"


# ---- measures ----------------------------------------------------------------------------
def _kappa(a: list[str], b: list[str], level: float, seed: int,
           resamples: int = 1000) -> Estimate:
    from judgekit.stats.agreement import cohen_kappa, item_bootstrap

    if len(a) < 2:
        return Estimate(estimate=None, ci=None, n=len(a))
    code = {c: i for i, c in enumerate(sorted(set(a) | set(b)))}
    x = np.array([code[v] for v in a])
    y = np.array([code[v] for v in b])
    value = cohen_kappa(x, y)
    iv = item_bootstrap(lambda idx: cohen_kappa(x[idx], y[idx]), len(x), seed, resamples,
                        level)
    ok = np.isfinite(value) and np.isfinite(iv.lo)
    return Estimate(estimate=float(value) if np.isfinite(value) else None,
                    ci=[float(iv.lo), float(iv.hi)] if ok else None, n=len(a))


def _judge_row(j: JudgeItems, level: float, seed: int, resamples: int) -> JudgeRow:
    keys = [k for k in j.verdict if k in j.human]
    row = JudgeRow(name=j.name, n=len(j.verdict), shape=j.shape, cost_per_item=j.cost,
                   cost_source=j.cost_source, seconds_per_item=j.seconds,
                   uninformed=j.uninformed)
    if keys:
        row.agreement = rate([float(j.verdict[k] == j.human[k]) for k in keys], level,
                             [j.cluster.get(k, k) for k in keys])
        row.kappa = _kappa([j.verdict[k] for k in keys], [j.human[k] for k in keys], level,
                           seed, resamples)
    if j.shape == "pointwise" and len(keys) >= 2:
        est, ci, _ = paired_difference([float(j.verdict[k] == "1") for k in keys],
                                       [float(j.human[k] == "1") for k in keys],
                                       [j.cluster.get(k, k) for k in keys], level)
        row.leniency = Estimate(estimate=est, ci=ci, n=len(keys))
    if j.shape == "pairwise":
        from judgekit.stats.decide import cluster_mean

        dec = [k for k in j.verdict if j.verdict[k] != "tie"]
        if dec:
            m = cluster_mean([float(j.verdict[k] == "first") - 0.5 for k in dec],
                             [j.cluster[k] for k in dec], level, bounds=(-0.5, 0.5))
            row.position_bias = Estimate(estimate=m.estimate, ci=m.ci, n=m.n)
    return row


def _pairs(judges: list[JudgeItems], level: float, seed: int, resamples: int
           ) -> list[PairRow]:
    from judgekit.stats.decide import cluster_mean

    out = []
    for i, a in enumerate(judges):
        for b in judges[i + 1:]:
            lab = [k for k in a.verdict if k in b.verdict and k in a.human]
            if lab:
                # paired on the same items, clustered by question (or pair) as analyse's
                ca = [float(a.verdict[k] == a.human[k]) for k in lab]
                cb = [float(b.verdict[k] == a.human[k]) for k in lab]
                est, ci, _ = paired_difference(ca, cb, [a.cluster.get(k, k) for k in lab],
                                               level)
                out.append(PairRow(a=a.name, b=b.name, measure="agreement",
                                   difference=est, ci=ci, n=len(lab)))
                ka = _kappa([a.verdict[k] for k in lab], [a.human[k] for k in lab], level,
                            seed, resamples)
                kb = _kappa([b.verdict[k] for k in lab], [a.human[k] for k in lab], level,
                            seed, resamples)
                out.append(_kappa_difference(a, b, lab, level, seed, ka, kb, resamples))
            shared = [k for k in a.verdict if k in b.verdict]
            if a.shape == "pointwise" and shared:
                est, ci, _ = paired_difference([float(a.verdict[k] == "1") for k in shared],
                                               [float(b.verdict[k] == "1") for k in shared],
                                               [a.cluster.get(k, k) for k in shared], level)
                out.append(PairRow(a=a.name, b=b.name, measure="leniency",
                                   difference=est, ci=ci, n=len(shared)))
            if a.shape == "pairwise":
                dec = [k for k in shared if "tie" not in (a.verdict[k], b.verdict[k])]
                if len(dec) >= 2:
                    m = cluster_mean([float(a.verdict[k] == "first")
                                      - float(b.verdict[k] == "first") for k in dec],
                                     [a.cluster[k] for k in dec], level)
                    out.append(PairRow(a=a.name, b=b.name, measure="position_bias",
                                       difference=m.estimate, ci=m.ci, n=m.n))
    return out


def _kappa_difference(a: JudgeItems, b: JudgeItems, lab: list[str], level: float,
                      seed: int, ka: Estimate, kb: Estimate, resamples: int) -> PairRow:
    """Kappa of a minus kappa of b on the same labelled items, paired percentile
    bootstrap over items."""
    from judgekit.stats.agreement import cohen_kappa, item_bootstrap

    code = {c: i for i, c in enumerate(sorted({a.verdict[k] for k in lab} |
                                              {b.verdict[k] for k in lab} |
                                              {a.human[k] for k in lab}))}
    x = np.array([code[a.verdict[k]] for k in lab])
    y = np.array([code[b.verdict[k]] for k in lab])
    h = np.array([code[a.human[k]] for k in lab])
    if ka.estimate is None or kb.estimate is None or len(lab) < 2:
        return PairRow(a=a.name, b=b.name, measure="kappa", difference=None, ci=None,
                       n=len(lab))
    iv = item_bootstrap(lambda idx: cohen_kappa(x[idx], h[idx]) - cohen_kappa(y[idx], h[idx]),
                        len(lab), seed, resamples, level)
    ok = np.isfinite(iv.lo) and np.isfinite(iv.hi)
    return PairRow(a=a.name, b=b.name, measure="kappa", difference=ka.estimate - kb.estimate,
                   ci=[float(iv.lo), float(iv.hi)] if ok else None, n=len(lab))


# ---- the decision ------------------------------------------------------------------------
def choose(judges: list[JudgeItems], *, level: float = 0.95, margin: float = 0.05,
           target_agreement: float | None = None, max_leniency: float | None = None,
           selective: bool = False, risk: float = 0.1, seed: int = 0,
           resamples: int = 1000, cascade: bool = False) -> Choice:
    """Compare, combine and choose (see the module docstring)."""
    from judgekit.analysis.jury import cascade_evaluation, juries, selective_evaluation

    rows = [_judge_row(j, level, seed, resamples) for j in judges]
    n_pairs = len(judges) * (len(judges) - 1) // 2
    per_pair = 4
    adjusted = 1 - (1 - level) / max(1, n_pairs * per_pair)
    pairs = _pairs(judges, adjusted, seed, resamples)
    jury = juries(judges, level) if len(judges) > 1 else {}
    chosen, decision = _decide(rows, pairs, margin, target_agreement, max_leniency)
    weighted = jury.get("weighted")
    mine = next((r for r in rows if r.name == chosen), None)
    if weighted is not None and weighted.agreement is not None and mine is not None and \
            weighted.agreement.estimate is not None and \
            weighted.agreement.estimate > _agreement(mine):
        decision += (f"; the weighted jury of all {len(judges)} agrees more with people "
                     f"({weighted.agreement.estimate:.3f}, cross-fitted, against "
                     f"{_agreement(mine):.3f}): consider it when every judge's cost is paid")
    out = Choice(level=level, adjusted_level=round(adjusted, 6), margin=margin, judges=rows,
                 pairs=pairs, decision=decision, chosen=chosen, jury=jury)
    if selective:
        if target_agreement is None:
            raise ConfigError("--selective needs --target-agreement (e.g. 0.8)")
        if cascade:
            try:
                out.selective = cascade_evaluation(judges, target_agreement, risk, level, seed)
            except ValueError:
                raise ConfigError("--cascade needs judges that record a confidence column "
                                  "(their probability for their own verdict)") from None
        else:
            out.selective = selective_evaluation(judges, target_agreement, risk, level)
    elif cascade:
        raise ConfigError("--cascade goes with --selective --target-agreement T")
    return out


def _diff(pairs: list[PairRow], x: str, y: str, measure: str) -> tuple[float, list[float]] | None:
    """x - y on ``measure`` with its adjusted interval."""
    for p in pairs:
        if p.measure != measure or p.difference is None or p.ci is None:
            continue
        if (p.a, p.b) == (x, y):
            return p.difference, list(p.ci)
        if (p.a, p.b) == (y, x):
            return -p.difference, [-p.ci[1], -p.ci[0]]
    return None


def _agreement(r: JudgeRow) -> float:
    return -1.0 if r.agreement is None or r.agreement.estimate is None else \
        r.agreement.estimate


def _decide(rows: list[JudgeRow], pairs: list[PairRow], margin: float,
            target: float | None, max_leniency: float | None) -> tuple[str | None, str]:
    rated = [r for r in rows if r.agreement is not None and r.agreement.estimate is not None]
    if not rated:
        return None, ("no human labels: no judge can be chosen by its agreement with "
                      "people; label a random sample of items (judgekit label) and run again")
    best = max(rated, key=lambda r: (r.agreement.estimate, -(r.cost_per_item or 0)))  # type: ignore[union-attr]
    notes, ok, within = [], [best], set()
    for r in rated:
        if r is best:
            continue
        d = _diff(pairs, best.name, r.name, "agreement")
        if d is None:
            continue
        if d[1][1] < margin:
            ok.append(r)
            within.add(r.name)
            notes.append(f"{r.name} and {best.name} are not distinguishable within margin "
                         f"{margin:g} (best - it {d[0]:+.3f}, interval [{d[1][0]:+.3f}, "
                         f"{d[1][1]:+.3f}])")
        elif d[1][0] > 0:
            notes.append(f"{r.name} agrees less with people than {best.name}")
    if target is not None:
        ok = [r for r in rated if r.agreement.ci and r.agreement.ci[0] >= target]  # type: ignore[union-attr]
        if not ok:
            return None, (f"no judge's agreement with people is shown at least {target:g} "
                          f"(the best: {best.name}, {best.agreement.estimate:.3f}); label "  # type: ignore[union-attr]
                          "more items, or escalate to people")
    if max_leniency is not None:
        ok = [r for r in ok if r.leniency is None or (
            r.leniency.ci is not None and max(abs(r.leniency.ci[0]),
                                              abs(r.leniency.ci[1])) <= max_leniency)]
        if not ok:
            return None, f"no judge is shown within +/-{max_leniency:g} of people's pass rate"
    priced = [r for r in ok if r.cost_per_item is not None]
    if priced and len(priced) == len(ok):
        pick = min(priced, key=lambda r: float(r.cost_per_item or 0.0))
    else:
        pick = best if best in ok else max(ok, key=lambda r: _agreement(r))
    text = f"use {pick.name}"
    if pick is not best and pick.name in within and pick.cost_per_item and best.cost_per_item:
        text += (f"; it is not distinguishable from {best.name} within margin {margin:g} and "
                 f"costs {best.cost_per_item / pick.cost_per_item:.3g}x less")
    elif pick is not best and target is not None:
        text += (f"; its agreement with people is shown at least {target:g} "
                 f"({_agreement(pick):.3f}, lower limit {pick.agreement.ci[0]:.3f})"  # type: ignore[union-attr,index]
                 + ("" if pick.name in within else
                    f", but it is not shown within margin {margin:g} of {best.name}'s "
                    f"({_agreement(best):.3f})"))
    elif pick is best and within:
        text += (f" or {', '.join(sorted(within))}: not distinguishable within margin "
                 f"{margin:g}; give --price to name the cheaper")
    elif pick is best:
        text += f" (highest agreement with people, {best.agreement.estimate:.3f})"  # type: ignore[union-attr]
    bad = [r.name for r in rows if (r.uninformed or "").startswith("no better")]
    if bad:
        text += f"; {', '.join(bad)} no better than an uninformed judge"
    rest = [n for n in notes if not n.startswith(pick.name)]
    return pick.name, text + ("; " + "; ".join(rest) if rest else "")


def write(choice: Choice, out: str | Path, *, overwrite: bool = False) -> Path:
    """choice.json, report.md and report.html in ``out``."""
    from judgekit.report.document import Doc
    from judgekit.runs.folder import write_folder
    from judgekit.runs.io import prepare_out, record_outputs

    folder = Path(out)
    before = prepare_out(folder, overwrite=overwrite, kind="choice")
    d = Doc("Choosing a judge")
    d.h(1, "Choosing a judge").p(f"Decision: {choice.decision}.")

    def est(e: Estimate | None) -> str:
        if e is None or e.estimate is None:
            return "n/a"
        ci = "" if not e.ci else f" [{e.ci[0]:.3f}, {e.ci[1]:.3f}]"
        return f"{e.estimate:.3f}{ci} (n = {e.n})"

    d.h(2, "Judges").table(
        ["judge", "items", "agreement with people", "kappa", "leniency", "position bias",
         "cost per item", "uninformed"],
        [[r.name, r.n, est(r.agreement), est(r.kappa), est(r.leniency), est(r.position_bias),
          "n/a" if r.cost_per_item is None else f"${r.cost_per_item:.5g}",
          r.uninformed or "n/a"] for r in choice.judges], "judges")
    d.h(2, f"Paired differences (A - B; {choice.adjusted_level:.4g} intervals, Bonferroni "
        f"over the comparisons at {choice.level:g})").table(
        ["A", "B", "measure", "difference", "interval", "n"],
        [[p.a, p.b, p.measure, "n/a" if p.difference is None else f"{p.difference:+.3f}",
          "n/a" if not p.ci else f"[{p.ci[0]:+.3f}, {p.ci[1]:+.3f}]", p.n]
         for p in choice.pairs], "pairs")
    d.h(2, "Juries").table(
        ["jury", "agreement with people", "effective judges", "ties", "no verdict"],
        [[k, est(j.agreement), f"{j.effective_judges:.2f}", j.ties, j.no_verdict]
         for k, j in choice.jury.items()], "jury")
    queue: dict[str, str] = {}
    if choice.selective is not None:
        s = choice.selective
        cost = "" if s.cost_per_item is None else f", judges' cost ${s.cost_per_item:.5g} " \
            "per item (people not counted)"
        d.h(2, "Selective evaluation").p(
            f"{s.judge}: threshold {s.threshold}, coverage {s.coverage:.3f}, agreement on "
            f"the kept labelled items {est(s.agreement)}{cost}; {s.escalated} item(s) "
            f"escalated to people (escalated.jsonl: `judgekit label SOURCE --queue "
            f"escalated.jsonl` puts them first on the labelling page). {s.guarantee}.")
        if s.cascade:
            d.table(["stage", "threshold", "reaches", "decides", "agreement", "cost per item"],
                    [[c.judge, "none" if c.threshold is None else f"{c.threshold:.3g}",
                      f"{c.reached:.3f}", f"{c.decided:.3f}", est(c.agreement),
                      "n/a" if c.cost_per_item is None else f"${c.cost_per_item:.5g}"]
                     for c in s.cascade], "cascade")
        shape = choice.judges[0].shape if choice.judges else "pointwise"
        queue["escalated.jsonl"] = "".join(
            json.dumps({"id": label_id(k, shape), "reason": "no judge was sure enough"})
            + "\n" for k in s.escalated_ids)
    write_folder(folder, d, json_files={"choice.json": choice}, text_files=queue)
    record_outputs(folder, before, "choice")
    return folder
