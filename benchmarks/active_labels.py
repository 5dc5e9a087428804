"""Active labelling against uniform random PPI++: human labels needed to reach a target
half-width of the corrected pass rate, and coverage of the intervals.

Designs (N = 4,000 items, two systems of 2,000): judge accuracy 0.6, 0.75, 0.9, 0.95;
pass rate 0.05, 0.2, 0.5; judge errors spread evenly over the items' strata or
concentrated in one system's items; the judge with a confidence score (its calibrated
probability of being right, seen through logit noise of sd 0.5) or without one (the
same data, the score hidden). Item-level error probabilities vary (Beta with
concentration 2 around each stratum's rate), so a score has something to tell.

Each run labels until the stopping rule is met, checked after every label: the
confidence sequence's half-width at most TARGET (nominal 0.90). Active: judgekit's draws
(judgekit.stats.active: predictor refitted as labels arrive, probabilities mixed with
25% uniform, with replacement; a draw of an item already labelled costs nothing).
Random: a uniform sample without replacement with PPI++ (the judge's verdict, weighted by
its power-tuning lambda fitted on the labels so far), the same sequence and rule. A
second random baseline gives PPI++ the judge's score as its prediction where there is
one (``..._score_baseline``), so the gain of the draws alone is shown too.

Keys: labels_ratio_median (active over random labels, median over designs with a score),
labels_ratio_worst (any design), the same for the fixed-n interval (``_fixed``),
coverage_min (the fixed-n t interval after 100, 200 and 400 draws, nominal 0.90, over
5 x REPS further runs) and
sequential_coverage_min (the sequence at the stop). The last line is one JSON object.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgekit.stats import active  # noqa: E402

N = 4000
TARGET = 0.03
LEVEL = 0.90
REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
COVER_REPS = 5 * REPS  # short runs (400 draws) for the fixed-n coverage
FIXED_AT = (100, 200, 400)


def population(rng, acc, rate, concentrated):
    system = (np.arange(N) >= N // 2).astype(int)
    y = (rng.random(N) < rate).astype(int)
    err = 1 - acc
    mean = np.where(system == 1, min(2 * err, 0.9), 0.0) if concentrated else np.full(N, err)
    e = np.zeros(N)
    pos = mean > 0
    e[pos] = rng.beta(2 * mean[pos], 2 * (1 - mean[pos]))
    flip = rng.random(N) < e
    verdict = np.where(flip, 1 - y, y)
    conf = np.clip(1 - e, 1e-3, 1 - 1e-3)
    noisy = 1 / (1 + np.exp(-(np.log(conf / (1 - conf)) + rng.normal(0, 0.5, N))))
    score = np.where(verdict == 1, noisy, 1 - noisy)
    return y, verdict, score, system


def _blocks(limit):
    t = 0
    size = 10
    while t < limit:
        yield t, min(size, limit - t)
        t += size
        size = max(5, int(0.25 * t))


def run_active(pop, y, est, rng, rho, limit):
    labelled = np.zeros(N, bool)
    z, pv, uniq = [], [], []
    for _, size in _blocks(limit):
        idx = np.flatnonzero(labelled)
        m = active.fit_predictor(pop, idx, y[idx])
        q = active.sampling_probabilities(m, [est])
        drawn = rng.choice(N, size=size, p=q)
        z.append(active.terms(est, m, q, drawn, y[drawn]))
        pv.append(np.full(size, active.model_variance(est, m, q)))
        for j in drawn:
            labelled[j] = True
            uniq.append(int(labelled.sum()))
        if labelled.all():
            break
    zz = np.concatenate(z)
    return active.running(zz, np.concatenate(pv), LEVEL, rho), np.array(uniq)


def run_random(f, y, est, rng, rho, limit, v0):
    order = rng.permutation(N)[:limit]
    z, pv = [], []
    fbar = float(f.mean())
    for t0, size in _blocks(limit):
        seen = order[:t0]
        lam = 1.0
        if seen.size >= 10 and np.var(f[seen]) > 0:
            c = np.cov(y[seen], f[seen])
            lam = float(np.clip(c[0, 1] / c[1, 1] / (1 + seen.size / N), 0, 1))
        d = order[t0:t0 + size]
        z.append(lam * fbar + y[d] - lam * f[d])
        # the residual variance seen so far, shrunk to the plan's prior variance v0 as
        # PRIOR_DRAWS labels (as the active predictor is shrunk to its prior)
        resid = y[seen] - lam * f[seen]
        ss = float(np.sum((resid - resid.mean()) ** 2)) if seen.size else 0.0
        pv.append(np.full(size, (ss + active.PRIOR_DRAWS * v0) / (seen.size + active.PRIOR_DRAWS)))
    zz = np.concatenate(z)
    return active.running(zz, np.concatenate(pv), LEVEL, rho), np.arange(1, zz.size + 1)


def labels_to_target(r, uniq, which):
    lo, hi = (r.cs_low, r.cs_high) if which == "cs" else (r.fixed_low, r.fixed_high)
    ok = np.flatnonzero(((hi - lo) / 2 <= TARGET) & (np.arange(1, lo.size + 1) >= active.MIN_DRAWS))
    if ok.size == 0:
        return N, None
    return int(uniq[ok[0]]), int(ok[0])


def design(args):
    acc, rate, concentrated, seed = args
    rng = np.random.default_rng(seed)
    out = {"labels": {k: [] for k in ("active", "active_noscore", "random", "random_score",
                                      "active_fixed", "active_noscore_fixed",
                                      "random_fixed", "random_score_fixed")},
           "cover_fixed": {"score": [], "noscore": []},
           "cover_seq": {"score": [], "noscore": []}}
    est = active.Estimand("pass_rate", 0.0, np.full(N, 1 / N))
    z = 1.6448536269514722
    limit = 3 * N
    for _ in range(REPS):
        y, verdict, score, system = population(rng, acc, rate, concentrated)
        theta = float(y.mean())
        for kind, sc in (("score", score), ("noscore", None)):
            pop = active.Population(verdict, sc, system, ("A", "B"))
            m0 = active.fit_predictor(pop, np.array([], int), np.array([]))
            q0 = active.sampling_probabilities(m0, [est])
            horizon = (z * math.sqrt(active.model_variance(est, m0, q0)) / TARGET) ** 2
            rho = active.cs_rho(horizon, 1 - LEVEL)
            r, uniq = run_active(pop, y, est, rng, rho, limit)
            name = "active" if kind == "score" else "active_noscore"
            labs, stop = labels_to_target(r, uniq, "cs")
            out["labels"][name].append(labs)
            out["labels"][name + "_fixed"].append(labels_to_target(r, uniq, "fixed")[0])
            if stop is not None:
                out["cover_seq"][kind].append(bool(r.cs_low[stop] <= theta <= r.cs_high[stop]))
        m0 = active.fit_predictor(active.Population(verdict, None, system, ("A", "B")),
                                  np.array([], int), np.array([]))
        v0 = active.model_variance(est, m0, np.full(N, 1 / N))  # the plan before any label
        for name, f in (("random", verdict.astype(float)), ("random_score", score)):
            rho = active.cs_rho((z * math.sqrt(v0) / TARGET) ** 2, 1 - LEVEL)
            r, uniq = run_random(f, y, est, rng, rho, N, v0)
            out["labels"][name].append(labels_to_target(r, uniq, "cs")[0])
            out["labels"][name + "_fixed"].append(labels_to_target(r, uniq, "fixed")[0])
    for _ in range(COVER_REPS):
        y, verdict, score, system = population(rng, acc, rate, concentrated)
        theta = float(y.mean())
        for kind, sc in (("score", score), ("noscore", None)):
            pop = active.Population(verdict, sc, system, ("A", "B"))
            r, _ = run_active(pop, y, est, rng, 1.0, max(FIXED_AT))
            for n0 in FIXED_AT:
                out["cover_fixed"][kind].append(
                    bool(r.fixed_low[n0 - 1] <= theta <= r.fixed_high[n0 - 1]))
    return (acc, rate, concentrated), out


def main() -> None:
    t0 = time.time()
    grid = list(itertools.product((0.6, 0.75, 0.9, 0.95), (0.05, 0.2, 0.5), (False, True)))
    jobs = [(a, p, c, 1000 + i) for i, (a, p, c) in enumerate(grid)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(design, jobs))
    ratios, ratios_fixed, worst, cov, seq = [], [], [], [], []
    print(f"{'acc':>5} {'rate':>5} {'errors':>13} {'score':>6} {'active':>7} {'random':>7}"
          f" {'ratio':>6} {'fixed':>6} {'vs score-PPI':>12} {'cov_fix':>7} {'cov_seq':>7}")
    for (acc, rate, conc), o in results:
        lab = {k: float(np.median(v)) for k, v in o["labels"].items()}
        for kind in ("score", "noscore"):
            act = "active" if kind == "score" else "active_noscore"
            ratio = lab[act] / lab["random"]
            fixed = lab[act + "_fixed"] / lab["random_fixed"]
            vs_score = lab[act] / lab["random_score"] if kind == "score" else float("nan")
            cf = float(np.mean(o["cover_fixed"][kind]))
            cs = float(np.mean(o["cover_seq"][kind])) if o["cover_seq"][kind] else float("nan")
            worst.append(ratio)
            if kind == "score":
                ratios.append(ratio)
                ratios_fixed.append(fixed)
            cov.append(cf)
            if not math.isnan(cs):
                seq.append(cs)
            print(f"{acc:5.2f} {rate:5.2f} {'concentrated' if conc else 'even':>13} "
                  f"{kind:>6} {lab[act]:7.0f} {lab['random']:7.0f} {ratio:6.2f} {fixed:6.2f}"
                  f" {vs_score:12.2f} {cf:7.3f} {cs:7.3f}")
    vs_score_all = [float(np.median(o["labels"]["active"]) / np.median(o["labels"]["random_score"]))
                    for _, o in results]
    print(json.dumps({
        "labels_ratio_median": round(float(np.median(ratios)), 3),
        "labels_ratio_worst": round(float(max(worst)), 3),
        "labels_ratio_median_fixed": round(float(np.median(ratios_fixed)), 3),
        "labels_ratio_median_vs_score_baseline": round(float(np.median(vs_score_all)), 3),
        "coverage_min": round(float(min(cov)), 3),
        "coverage_mean": round(float(np.mean(cov)), 3),
        "sequential_coverage_min": round(float(min(seq)), 3),
        "sequential_coverage_mean": round(float(np.mean(seq)), 3),
        "designs": len(results) * 2, "runs_per_design": REPS,
        "coverage_runs_per_design": COVER_REPS, "n_items": N,
        "target_halfwidth": TARGET, "level": LEVEL, "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
