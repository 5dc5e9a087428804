"""Does `judgekit choose` choose right, and does its selective guarantee hold?
Simulated judges with known accuracies, costs and confidences, run through the real
judgekit.analysis.choose.choose (and judgekit.stats.selective); every draw seeded.

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

- single_judge_selective_violation_rate: one judge given to `choose --selective` (the
  single-judge case, calibrated at the full risk): the share whose kept items of the
  population agree with people below 0.8 at risk 0.1, worst of the three confidence
  designs above. Bound: 0.12.
- cascade_coverage_vs_best_single: the cascade's coverage minus the best single judge's
  that a user can validly get from the same labels (`choose --selective` over the same
  judges: each calibrated at risk / m, the one keeping the most items used), mean over
  three designs (with cascade_coverage_vs_hindsight_single: against each judge alone at
  the full risk with the best picked in hindsight, which no valid procedure can; cheap then dear;
  three judges of rising quality; a weak overconfident judge then a strong one; target
  0.9, risk 0.1), with cascade_guarantee_violation_rate the worst design's share of
  cascades whose decided items agree below the target (bound 0.12; with the design
  above) and cascade_coverage_by_design.
- shift_said_rate / shift_false_alarm_rate: how often `selective.shift` says the
  items to decide do not look like the labelled ones, when the unlabelled items'
  confidences come from [0.5, 0.8] against labelled ones from [0.5, 1] / when both
  come from [0.5, 1] (bound 0.05 at the 0.95 level).
- dropped_confidence_items: items of a judge whose confidence is NaN, negative, above
  1 or text on 10% of items that are neither kept nor escalated (0).
- no_common_items_exit: the exit code of the installed `judgekit choose` on two files
  that share no item id (2).

Usage: python benchmarks/choose.py [SIMS] [--smoke]   (default 400; --smoke 20)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

SMOKE = "--smoke" in sys.argv
_ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
SIMS = int(_ARGS[0]) if _ARGS else (20 if SMOKE else 400)
CURVES = {
    "calibrated": lambda c: c,
    "overconfident by 0.1": lambda c: np.clip(c - 0.1, 0.0, 1.0),
    "flat at the top": lambda c: np.minimum(c, 0.85),
}


def _judge(name: str, truth: np.ndarray, correct: np.ndarray, labelled: np.ndarray,
           conf: np.ndarray | None = None, cost: float | None = None) -> object:
    from judgekit.analysis.choose import JudgeItems

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

    designs = CURVES
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
    from judgekit.analysis.choose import choose

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
    from judgekit.analysis.choose import choose

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
    from judgekit.analysis.jury import cascade_evaluation

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


def single_judge(sims: int) -> dict[str, float]:
    """One judge through the real `choose --selective` path: 500 labelled of 2,000
    items, its true agreement on the kept items E[p(c) | c >= t], known exactly."""
    from judgekit.analysis.choose import choose

    grid = np.linspace(0.5, 1.0, 20001)
    out = {}
    n = 2000
    for name, curve in CURVES.items():
        bad = 0
        for s in range(sims):
            rng = np.random.default_rng([48, 5, s, len(name)])
            c = rng.uniform(0.5, 1.0, n)
            truth = (rng.random(n) < 0.5).astype(int)
            lab = np.zeros(n, bool)
            lab[:500] = True
            j = _judge("solo", truth, rng.random(n) < curve(c), lab, c)
            sel = choose([j], target_agreement=0.8, selective=True, risk=0.1, seed=s,
                         resamples=50).selective
            if sel is None or sel.threshold is None:
                continue
            bad += float(np.mean(curve(grid[grid >= sel.threshold]))) < 0.8
        out[name] = bad / sims
    return out


HARD = 0.9  # the cascade designs' target: their judges pass 0.8 on nearly every item


def cascade_designs(sims: int) -> dict[str, object]:
    """The cascade against the best single judge calibrated alone, three designs at
    target 0.9 (where thresholds bind); 600 of 3,000 items labelled; the true agreement
    of the decided items from each judge's drawn correctness on every item."""
    from judgekit.analysis.jury import cascade_evaluation, selective_evaluation

    designs = {
        "cheap overconfident, then dear": [(lambda c: np.clip(c - 0.05, 0, 1), 0.001),
                                           (lambda c: np.minimum(1.0, c + 0.1), 0.01)],
        "three of rising quality": [(lambda c: np.clip(c - 0.1, 0, 1), 0.001),
                                    (lambda c: c, 0.003),
                                    (lambda c: np.minimum(1.0, c + 0.1), 0.01)],
        "weak overconfident, then strong": [(lambda c: np.full_like(c, 0.6), 0.001),
                                            (lambda c: np.minimum(1.0, c + 0.15), 0.01)],
    }
    n, lab_n = 3000, 600
    gains, hind, bad, coverage = {}, {}, {}, {}
    for name, spec in designs.items():
        diff, late, viol, cov = [], [], 0, []
        for s in range(sims):
            rng = np.random.default_rng([48, 6, s, len(name)])
            truth = (rng.random(n) < 0.5).astype(int)
            labelled = np.zeros(n, bool)
            labelled[rng.choice(n, lab_n, replace=False)] = True
            judges, right = [], {}
            for k, (curve, price) in enumerate(spec):
                c = rng.uniform(0.5, 1.0, n)
                ok = rng.random(n) < curve(c)
                right[f"j{k}"] = ok
                judges.append(_judge(f"j{k}", truth, ok, labelled, c, price))
            sel = cascade_evaluation(judges, HARD, 0.1, 0.95, seed=s)
            # the valid single-judge alternative on the same labels: `choose --selective`
            # over these judges (each at risk / m, the one keeping most used); and the best
            # judge alone at the full risk picked in hindsight (not a valid procedure)
            best = selective_evaluation(judges, HARD, 0.1, 0.95).coverage
            hindsight = max(selective_evaluation([j], HARD, 0.1, 0.95).coverage
                            for j in judges)
            diff.append(sel.coverage - best)
            late.append(sel.coverage - hindsight)
            cov.append(sel.coverage)
            esc = {int(k[1:]) for k in sel.escalated_ids}
            th = [st.threshold for st in sel.cascade or []]
            if any(t is not None for t in th):
                got = []
                for i in range(n):
                    if i in esc:
                        continue
                    for j, t in zip(judges_sorted(judges), th):
                        if t is not None and j.confidence[f"i{i}"] >= t:
                            got.append(bool(right[j.name][i]))
                            break
                viol += bool(got) and float(np.mean(got)) < HARD
        gains[name] = round(float(np.mean(diff)), 4)
        hind[name] = round(float(np.mean(late)), 4)
        bad[name] = viol / sims
        coverage[name] = round(float(np.mean(cov)), 4)
    return {"cascade_coverage_vs_best_single": round(float(np.mean(list(gains.values()))), 4),
            "cascade_coverage_vs_best_single_by_design": gains,
            "cascade_coverage_vs_hindsight_single": round(float(np.mean(list(hind.values()))),
                                                          4),
            "cascade_coverage_vs_hindsight_single_by_design": hind,
            "cascade_design_violation_rate": max(bad.values()),
            "cascade_coverage_by_design": coverage}


def shift(sims: int) -> dict[str, float]:
    """How often `selective.shift` speaks: 500 labelled items with confidences uniform on
    [0.5, 1], 1,500 unlabelled drawn the same way (no shift) or from [0.5, 0.8] (the
    items to decide are the judge's unsure ones: a shift that breaks the guarantee)."""
    from judgekit.analysis.jury import selective_evaluation

    out = {}
    for name, top in (("no shift", 1.0), ("shifted to [0.5, 0.8]", 0.8)):
        said = 0
        for s in range(sims):
            rng = np.random.default_rng([48, 8, s, int(top * 10)])
            c = np.concatenate([rng.uniform(0.5, 1.0, 500), rng.uniform(0.5, top, 1500)])
            truth = (rng.random(2000) < 0.5).astype(int)
            lab = np.arange(2000) < 500
            j = _judge("j", truth, rng.random(2000) < c, lab, c)
            said += selective_evaluation([j], 0.8, 0.1, 0.95).shift is not None
        out[name] = said / sims
    return out


def dropped_confidence() -> int:
    """Items of a judge with unusable confidences on 10% of them, neither kept nor
    escalated (through the real loader: a CSV analysed in memory)."""
    import csv
    import tempfile
    from pathlib import Path

    from judgekit.analysis.choose import choose, load_judges

    rng = np.random.default_rng([48, 7])
    bad = ["nan", "-0.2", "1.7", "sure", ""]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conf.csv"
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "judge", "human", "confidence"])
            for i in range(1000):
                y = int(rng.random() < 0.5)
                c = float(rng.uniform(0.5, 1.0))
                v = y if rng.random() < c else 1 - y
                conf = bad[i % 5] if i % 10 == 0 else f"{c:.4f}"
                w.writerow([f"i{i}", v, y if i < 600 else "", conf])
        judges = load_judges([path], minimum=1)
        sel = choose(judges, target_agreement=0.8, selective=True, risk=0.1).selective
    assert sel is not None
    kept = round(sel.coverage * 1000)
    return 1000 - kept - sel.escalated


def no_common_items_exit() -> int:
    """The installed command's exit code on two files that share no item id."""
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    exe = shutil.which("judgekit") or str(Path(sys.executable).parent / "judgekit")
    with tempfile.TemporaryDirectory() as tmp:
        for name, off in (("a.csv", 0), ("b.csv", 1000)):
            rows = "".join(f"i{i + off},{i % 2},{(i // 2) % 2}\n" for i in range(60))
            (Path(tmp) / name).write_text("id,judge,human\n" + rows)
        r = subprocess.run([exe, "choose", "a.csv", "b.csv", "--out", "c"], cwd=tmp,
                           capture_output=True, text=True, timeout=300)
    return r.returncode


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
    solo = single_judge(SIMS)
    print("one judge, selective guarantee violated:", json.dumps(solo))
    designs = cascade_designs(max(10, SIMS // 4))
    print("cascade against the best single judge:", json.dumps(designs))
    moved = shift(SIMS)
    print("selective.shift said:", json.dumps(moved))
    print(json.dumps({
        "sims": SIMS,
        "guarantee_violation_rate": max(viol.values()),
        "risk": 0.1,
        "selective_coverage_at_0.8": round(coverage, 4),
        "wrong_choice_rate": max(wrong.values()),
        "jury_vs_best_single": round(float(np.mean(list(gain.values()))), 4),
        **cas,
        "single_judge_selective_violation_rate": max(solo.values()),
        **{k: v for k, v in designs.items() if k != "cascade_design_violation_rate"},
        "cascade_guarantee_violation_rate": max(cas["cascade_guarantee_violation_rate"],
                                                designs["cascade_design_violation_rate"]),
        "shift_said_rate": moved["shifted to [0.5, 0.8]"],
        "shift_false_alarm_rate": moved["no shift"],
        "dropped_confidence_items": dropped_confidence(),
        "no_common_items_exit": no_common_items_exit(),
        "smoke": SMOKE,
        "seconds": round(time.perf_counter() - t0, 1),
    }))


if __name__ == "__main__":
    main()
