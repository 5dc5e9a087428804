"""Does `judgekit choose` choose right, and does its selective guarantee hold?
Simulated judges with known accuracies, costs and confidences, run through the real
judgekit.report.choice.choose (and judgekit.stats.selective); every draw seeded.

Figures (the last line is one JSON object):

- guarantee_violation_rate: the share of calibrations (500 labelled items) whose
  agreement on the kept items of the whole population, known exactly from the
  simulation, falls below the target 0.8 at risk 0.1, worst of three confidence
  designs (calibrated, overconfident by 0.1, flat at the top). Bound: risk + 0.02.
- selective_coverage_at_0.8: the mean share of items kept at target 0.8, risk 0.1, for
  the strong judge of the strong-and-weak design (confidence calibrated, agreement 0.85
  overall, 0.75 for the weak one).
- wrong_choice_rate: the share of simulations whose chosen judge is worse than another
  by more than the margin (0.05), over designs of two and three judges with and without
  prices, 300 labelled items. Bound: 0.05.
- jury_vs_best_single: the weighted jury's agreement with people minus the best single
  judge's, mean over designs with independent errors (five judges).
- cascade_guarantee_violation_rate: the share of cheapest-first cascades (a cheap judge
  overconfident by 0.05, then a dear one; 500 labelled of 5,000 items) whose decided
  items agree with people below 0.8 at risk 0.1 (bound: risk + 0.02), with the cascade's
  mean coverage and its judges' cost against the dear judge alone.

Usage: python benchmarks/choose.py [SIMS]   (default 400)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

SIMS = int(sys.argv[1]) if len(sys.argv) > 1 else 400


def _judge(name: str, truth: np.ndarray, correct: np.ndarray, labelled: np.ndarray,
           conf: np.ndarray | None = None, cost: float | None = None) -> object:
    from judgekit.report.choice import JudgeItems

    keys = [f"i{i}" for i in range(truth.size)]
    verdict = {k: str(int(t if c else 1 - t)) for k, t, c in zip(keys, truth, correct)}
    human = {k: str(int(t)) for k, t, lab in zip(keys, truth, labelled) if lab}
    confidence = {} if conf is None else {k: float(c) for k, c in zip(keys, conf)}
    return JudgeItems(name, "pointwise", verdict, human, confidence,
                      {k: k for k in keys}, None, cost)


def guarantee(sims: int) -> tuple[dict[str, float], float]:
    """Calibrate on 500 labelled items; the true agreement on the kept items follows
    from the confidence curve p(c), known exactly: E[p(c) | c >= t] over c ~ U(0.5, 1)."""
    from judgekit.stats.selective import calibrate_threshold

    designs = {
        "calibrated": lambda c: c,
        "overconfident by 0.1": lambda c: np.clip(c - 0.1, 0.0, 1.0),
        "flat at the top": lambda c: np.minimum(c, 0.85),
    }
    grid = np.linspace(0.5, 1.0, 20001)
    out, coverage = {}, []
    for name, curve in designs.items():
        bad = 0
        for s in range(sims):
            rng = np.random.default_rng([48, 1, s, len(name)])
            c = rng.uniform(0.5, 1.0, 500)
            agree = (rng.random(500) < curve(c)).astype(float)
            sel = calibrate_threshold(c, agree, 0.8, 0.1)
            if sel.threshold is None:
                continue
            kept = grid >= sel.threshold
            true = float(np.mean(curve(grid[kept])))
            bad += true < 0.8
        out[name] = bad / sims
    # the strong judge of the strong-and-weak design: p(c) = min(1, c + 0.1)
    for s in range(sims):
        rng = np.random.default_rng([48, 2, s])
        c = rng.uniform(0.5, 1.0, 500)
        agree = (rng.random(500) < np.minimum(1.0, c + 0.1)).astype(float)
        sel = calibrate_threshold(c, agree, 0.8, 0.1)
        coverage.append(0.0 if sel.threshold is None else float(np.mean(grid >= sel.threshold)))
    return out, float(np.mean(coverage))


def wrong_choices(sims: int) -> dict[str, float]:
    from judgekit.report.choice import choose

    designs = {
        "0.85 / 0.84 (5x cheaper) / 0.70": ([0.85, 0.84, 0.70], [0.01, 0.002, 0.001]),
        "0.80 / 0.72 (10x cheaper)": ([0.80, 0.72], [0.01, 0.001]),
        "0.82 / 0.80 / 0.76, no prices": ([0.82, 0.80, 0.76], [None, None, None]),
    }
    out = {}
    for name, (accs, costs) in designs.items():
        wrong = 0
        for s in range(sims):
            rng = np.random.default_rng([48, 3, s, len(accs), int(accs[-1] * 100)])
            n = 300
            truth = (rng.random(n) < 0.6).astype(int)
            lab = np.ones(n, bool)
            judges = [_judge(f"j{k}", truth, rng.random(n) < a, lab, cost=c)
                      for k, (a, c) in enumerate(zip(accs, costs))]
            got = choose(judges, margin=0.05, seed=s, resamples=200)
            if got.chosen is None:
                continue
            true = accs[int(got.chosen[1:])]
            wrong += true < max(accs) - 0.05
        out[name] = wrong / sims
    return out


def juries(sims: int) -> dict[str, float]:
    from judgekit.report.choice import choose

    designs = {"0.80 0.75 0.75 0.70 0.70": [0.80, 0.75, 0.75, 0.70, 0.70],
               "five at 0.70": [0.70] * 5, "0.90 0.65 0.65 0.65 0.65": [0.9] + [0.65] * 4}
    out = {}
    for name, accs in designs.items():
        gains = []
        for s in range(max(50, sims // 8)):
            rng = np.random.default_rng([48, 4, s, int(sum(accs) * 100)])
            n = 400
            truth = (rng.random(n) < 0.5).astype(int)
            lab = np.zeros(n, bool)
            lab[:200] = True
            judges = [_judge(f"j{k}", truth, rng.random(n) < a, lab)
                      for k, a in enumerate(accs)]
            got = choose(judges, margin=0.05, seed=s, resamples=200)
            best = max(r.agreement.estimate for r in got.judges if r.agreement)
            gains.append(got.jury["weighted"].agreement.estimate - best)
        out[name] = float(np.mean(gains))
    return out


def cascade(sims: int) -> dict[str, float]:
    """A cheap judge (overconfident by 0.05) then a dear one (p(c) = min(1, c + 0.1)),
    confidences uniform on [0.5, 1], 5,000 items of which 500 labelled at random: the
    real cascade_evaluation, and the agreement on every decided item of the population
    (each judge's correctness drawn, so known) against the target 0.8 at risk 0.1."""
    from judgekit.report.jury import cascade_evaluation

    n, lab_n = 5000, 500
    bad, coverage, cost = 0, [], []
    for s in range(sims):
        rng = np.random.default_rng([48, 4, s])
        truth = (rng.random(n) < 0.5).astype(int)
        labelled = np.zeros(n, bool)
        labelled[rng.choice(n, lab_n, replace=False)] = True
        judges, right = [], {}
        for name, curve, price in (("cheap", lambda c: np.clip(c - 0.05, 0, 1), 0.001),
                                   ("dear", lambda c: np.minimum(1.0, c + 0.1), 0.01)):
            c = rng.uniform(0.5, 1.0, n)
            ok = rng.random(n) < curve(c)
            right[name] = ok
            judges.append(_judge(name, truth, ok, labelled, c, price))
        sel = cascade_evaluation(judges, 0.8, 0.1, 0.95)
        decided = set(range(n)) - {int(k[1:]) for k in sel.escalated_ids}
        if decided:
            got = []
            reached = set(range(n))
            for stage, j in zip(sel.cascade or [], judges_sorted(judges)):
                if stage.threshold is None:
                    continue
                mine = {i for i in reached if j.confidence[f"i{i}"] >= stage.threshold}
                got += [bool(right[j.name][i]) for i in mine]
                reached -= mine
            bad += float(np.mean(got)) < 0.8
        coverage.append(sel.coverage)
        cost.append(sel.cost_per_item or 0.0)
    return {"cascade_guarantee_violation_rate": bad / sims,
            "cascade_coverage": round(float(np.mean(coverage)), 4),
            "cascade_cost_vs_dear_alone": round(float(np.mean(cost)) / 0.01, 4)}


def judges_sorted(judges: list) -> list:
    return sorted(judges, key=lambda j: (j.cost is None, j.cost or 0.0))


def main() -> None:
    t0 = time.perf_counter()
    viol, coverage = guarantee(SIMS)
    print("selective guarantee violated:", json.dumps(viol), "coverage:", round(coverage, 3))
    cas = cascade(SIMS)
    print("cascade:", json.dumps(cas))
    wrong = wrong_choices(SIMS)
    print("wrong choices:", json.dumps(wrong))
    gain = juries(SIMS)
    print("weighted jury minus the best single judge:", json.dumps(gain))
    print(json.dumps({
        "sims": SIMS,
        "guarantee_violation_rate": max(viol.values()),
        "risk": 0.1,
        "selective_coverage_at_0.8": round(coverage, 4),
        "wrong_choice_rate": max(wrong.values()),
        "jury_vs_best_single": round(float(np.mean(list(gain.values()))), 4),
        **cas,
        "seconds": round(time.perf_counter() - t0, 1),
    }))


if __name__ == "__main__":
    main()
