"""Issue 33's designs for benchmarks/coverage.py: intervals and plans at the edges.

- ``ppi``: the corrected pass rate (PPI++, judgekit.stats.ppi.ppi_mean) over 60
  designs: judges 0.7-0.95 sensitive and specific, 30/50/100 labels of N = 1,000,
  pass rates 0.05-0.5, nominal 0.90; coverage of the true rate, width over the human
  labels alone, beside ppi_py's ``ppi_mean_ci`` and truescore's ``ppi_estimate`` on the
  same draws (optional: ``pip install ppi-python truescore``). Plus labels 5% flipped,
  uncorrected and corrected for a stated 5% (``with_label_error``).
- ``paired``: the corrected paired difference (``ppi_difference``) of two systems on
  shared questions, labels on some, independent and nested outcomes; beside
  truescore's ``ppi_compare``.
- ``agreement``: kappa, alpha and AC1 at n = 50 (also 20 and 30), prevalence 0.9,
  nominal 0.95, eight judges from chance-level to near-perfect.
- ``plan``: the labels the plan asks for (from the design's variance terms, and the
  mean over 200 pilots of 100 labels) against the labels the simulation needs for a
  mean half-width at the target.
- ``vb``: the VB-Score headline over 4-20 queries (Student t with the range's ends as
  pseudo-observations) against the percentile bootstrap it replaced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judgekit.stats.agreement import agreement
from judgekit.stats.bootstrap import bounded_mean_interval, percentile_interval
from judgekit.stats.ppi import ppi_difference, ppi_mean, with_label_error

LEVEL = 0.90


def _peers() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        from ppi_py import ppi_mean_ci

        def ppi_py_ci(f_all, lab, y):  # type: ignore[no-untyped-def]
            unl = np.delete(f_all, lab)
            lo, hi = ppi_mean_ci(y, f_all[lab], unl, alpha=1 - LEVEL)
            return float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
        out["ppi_py"] = ppi_py_ci
    except Exception:  # noqa: BLE001 - an optional peer that does not import is left out
        pass
    try:
        from truescore.correct import ppi_estimate

        def truescore_ci(f_all, lab, y):  # type: ignore[no-untyped-def]
            e = ppi_estimate(f_all, y, lab, alpha=1 - LEVEL)
            return float(e.low), float(e.high)
        out["truescore"] = truescore_ci
    except Exception:  # noqa: BLE001 - an optional peer that does not import is left out
        pass
    return out


def _draw(rng: np.random.Generator, p: float, acc: float, big_n: int
          ) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(big_n) < p).astype(float)
    f = np.where(rng.random(big_n) < acc, y, 1 - y)
    return y, f


def ppi(reps: int, rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    peers = _peers()
    rows, cov_min, cov_all, ratio_max = [], 1.0, [], 0.0
    peer_cov: dict[str, list[float]] = {k: [] for k in peers}
    peer_out: dict[str, int] = {k: 0 for k in peers}
    width_vs_peer: list[float] = []
    for acc in (0.95, 0.9, 0.8, 0.7):
        for n in (30, 50, 100):
            for p in (0.05, 0.1, 0.2, 0.3, 0.5):
                hits = 0
                w = hw = 0.0
                ph = {k: 0 for k in peers}
                pw = {k: 0.0 for k in peers}
                for _ in range(reps):
                    y, f = _draw(rng, p, acc, 1000)
                    lab = rng.choice(1000, n, replace=False)
                    c = ppi_mean(f, f[lab], y[lab], LEVEL)
                    hits += c.ci[0] <= p <= c.ci[1]
                    w += c.ci[1] - c.ci[0]
                    hw += c.human_only_ci[1] - c.human_only_ci[0]
                    for k, fn in peers.items():
                        lo, hi = fn(f, lab, y[lab])
                        ph[k] += lo <= p <= hi
                        pw[k] += hi - lo
                        peer_out[k] += lo < 0 or hi > 1
                cov = hits / reps
                cov_min = min(cov_min, cov)
                cov_all.append(cov)
                ratio_max = max(ratio_max, w / hw)
                valid = [pw[k] for k in peers if ph[k] / reps >= LEVEL - 0.03]
                if valid:
                    width_vs_peer.append(w / min(valid))
                for k in peers:
                    peer_cov[k].append(ph[k] / reps)
                rows.append(f"ppi   acc {acc:<4} n {n:<3} p {p:<4} coverage {cov:.3f}  "
                            f"width/human {w / hw:.3f}" + "".join(
                                f"  {k} {ph[k] / reps:.3f}" for k in peers))
    figs = {"ppi_coverage_min": cov_min, "ppi_coverage_mean": float(np.mean(cov_all)),
            "ppi_width_over_human_max": ratio_max, "ppi_designs": len(cov_all)}
    if width_vs_peer:
        figs["ppi_width_over_best_valid_peer_max"] = float(np.max(width_vs_peer))
        figs["ppi_width_over_best_valid_peer_mean"] = float(np.mean(width_vs_peer))
    for k, v in peer_cov.items():
        figs[f"peer/{k}/ppi_coverage_min"] = float(np.min(v))
        figs[f"peer/{k}/ppi_coverage_mean"] = float(np.mean(v))
        figs[f"peer/{k}/ppi_outside_unit_share"] = peer_out[k] / (reps * len(v))
    # human labels 5% flipped: every tool misses; corrected for the stated rate it covers
    noisy = {"raw": 0, "fixed": 0}
    for _ in range(reps):
        p = 0.2
        y, f = _draw(rng, p, 0.9, 2000)
        flipped = np.where(rng.random(2000) < 0.05, 1 - y, y)
        lab = rng.choice(2000, 300, replace=False)
        c = ppi_mean(f, f[lab], flipped[lab], LEVEL)
        noisy["raw"] += c.ci[0] <= p <= c.ci[1]
        g = with_label_error(c, 0.05)
        noisy["fixed"] += g.ci[0] <= p <= g.ci[1]
    figs["noisy_labels_uncorrected_coverage"] = noisy["raw"] / reps
    figs["noisy_labels_corrected_coverage"] = noisy["fixed"] / reps
    rows.append(f"ppi   labels 5% flipped: uncorrected {noisy['raw'] / reps:.3f}, corrected "
                f"{noisy['fixed'] / reps:.3f}")
    return figs, rows


def paired(reps: int, rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    try:
        from truescore.compare import ppi_compare
    except Exception:  # noqa: BLE001 - optional peer
        ppi_compare = None
    rows, covs, peer = [], [], []
    for big_n, n, pa, pb, acc, nested in ((200, 20, 0.6, 0.5, 0.9, False),
                                          (200, 50, 0.3, 0.25, 0.95, True),
                                          (500, 30, 0.1, 0.05, 0.95, True),
                                          (500, 100, 0.7, 0.65, 0.8, False),
                                          (1000, 50, 0.5, 0.45, 0.9, True),
                                          (1000, 50, 0.9, 0.85, 0.7, False)):
        truth = pa - pb
        hits = ph = 0
        for _ in range(reps):
            u = rng.random(big_n)
            ya = (u < pa).astype(float)
            yb = (u < pb).astype(float) if nested else (rng.random(big_n) < pb).astype(float)
            fa = np.where(rng.random(big_n) < acc, ya, 1 - ya)
            fb = np.where(rng.random(big_n) < acc, yb, 1 - yb)
            lab = rng.choice(big_n, n, replace=False)
            c = ppi_difference(fa - fb, (fa - fb)[lab], (ya - yb)[lab], LEVEL)
            hits += c.ci[0] <= truth <= c.ci[1]
            if ppi_compare is not None:
                r = ppi_compare(fa, fb, ya[lab], yb[lab], lab, alpha=1 - LEVEL)
                ph += r.low <= truth <= r.high
        covs.append(hits / reps)
        if ppi_compare is not None:
            peer.append(ph / reps)
        rows.append(f"paired N {big_n:<5} n {n:<4} {pa}-{pb} acc {acc} "
                    f"{'nested' if nested else 'independent'}: coverage {hits / reps:.3f}"
                    + (f"  truescore {ph / reps:.3f}" if ppi_compare is not None else ""))
    figs = {"paired_ppi_coverage_min": float(np.min(covs)),
            "paired_ppi_coverage_mean": float(np.mean(covs))}
    if peer:
        figs["peer/truescore/paired_coverage_min"] = float(np.min(peer))
    return figs, rows


def _population(prev: float, se: float, sp: float) -> dict[str, float]:
    p = np.array([[sp * (1 - prev), (1 - se) * prev], [(1 - sp) * (1 - prev), se * prev]])
    po = float(np.trace(p))
    r, c = p.sum(axis=1), p.sum(axis=0)
    m = (r + c) / 2
    pe = {"kappa": float(r @ c), "alpha": float(m @ m), "ac": float(np.sum(m * (1 - m)))}
    return {k: (po - e) / (1 - e) for k, e in pe.items()}


def agreement_cov(reps: int, rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    rows, figs = [], {}
    judges = ((0.95, 0.8), (0.97, 0.5), (0.99, 0.9), (0.9, 0.3), (0.85, 0.85),
              (0.99, 0.99), (0.9, 0.9), (0.999, 0.95))
    for n in (20, 30, 50):
        worst = {"kappa": 1.0, "alpha": 1.0, "ac": 1.0}
        for se, sp in judges:
            truth = _population(0.9, se, sp)
            cells = rng.multinomial(n, [sp * 0.1, (1 - se) * 0.9, (1 - sp) * 0.1, se * 0.9],
                                    size=reps)
            hits = {k: 0 for k in truth}
            for i, cnt in enumerate(cells):
                j = np.repeat([0, 0, 1, 1], cnt)
                h = np.repeat([0, 1, 0, 1], cnt)
                ag = agreement(j, h, seed=i, resamples=2000, level=0.95)
                for k in truth:
                    ci = ag.cis.get(k)
                    # undefined (one class only): no interval, counted as a miss
                    hits[k] += ci is not None and ci[0] <= truth[k] <= ci[1]
            for k in truth:
                worst[k] = min(worst[k], hits[k] / reps)
            rows.append(f"agree n {n:<3} prev 0.9 se {se} sp {sp}: " + "  ".join(
                f"{k} {hits[k] / reps:.3f}" for k in truth))
        for k, v in worst.items():
            figs[f"agreement/{k}/n={n}"] = v
    figs["agreement_coverage_min"] = min(figs[f"agreement/{k}/n=50"]
                                         for k in ("kappa", "alpha", "ac"))
    return figs, rows


def plan(reps: int, rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    """The plan against the simulated need: the labels whose mean half-width over
    ``reps`` draws reaches the target (bisection). ``plan_error_max``: the plan from the
    design's own variance terms (lambda, Var(y - lambda f), Var(y) of a 10^6-item
    population: is every term of the interval in the plan?); ``plan_error_pilot_max``:
    the mean plan over 200 pilots of 100 labels (the pilot's own noise included; at
    5-10% pass rates a 100-label pilot sees 5-10 passes and plans a few % low)."""
    from judgekit.stats.ppi import Corrected

    rows, errs, pilot_errs = [], [], []
    for acc, p, big_n, h in ((0.95, 0.3, 5000, 0.03), (0.9, 0.1, 5000, 0.02),
                             (0.8, 0.5, 3000, 0.05), (0.95, 0.05, 5000, 0.015),
                             (0.7, 0.3, 2000, 0.06)):
        y, f = _draw(np.random.default_rng(7), p, acc, 10**6)
        lam = float(np.cov(f, y)[0, 1] / f.var(ddof=1))
        design = Corrected(p, [0.0, 1.0], p, [0.0, 1.0], 2, big_n, lam, LEVEL, "random",
                           float((y - lam * f).var()), float(y.var()))
        planned = design.labels_for_halfwidth(h)
        pilots = []
        for _ in range(200):
            y, f = _draw(rng, p, acc, big_n)
            lab = rng.choice(big_n, 100, replace=False)
            need = ppi_mean(f, f[lab], y[lab], LEVEL).labels_for_halfwidth(h)
            pilots.append(100 if need is None else need)  # None: 100 labels already do
        pilot = float(np.mean(pilots))  # the expected plan

        def mean_half(n: int, draws: int = reps, p: float = p, acc: float = acc,
                      big_n: int = big_n) -> float:
            g = np.random.default_rng(n)
            tot = 0.0
            for _ in range(draws):
                y, f = _draw(g, p, acc, big_n)
                lab = g.choice(big_n, n, replace=False)
                c = ppi_mean(f, f[lab], y[lab], LEVEL)
                tot += (c.ci[1] - c.ci[0]) / 2
            return tot / draws

        lo, hi = 2, big_n  # the smallest n whose mean half-width reaches h
        while hi - lo > max(1, lo // 200):
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if mean_half(mid) <= h else (mid, hi)
        assert planned is not None
        errs.append(abs(planned - hi) / hi)
        pilot_errs.append(abs(pilot - hi) / hi)
        rows.append(f"plan  acc {acc} p {p} N {big_n} +-{h}: simulated need {hi}; planned "
                    f"{planned} (error {errs[-1]:.3f}), from 100-label pilots {pilot:.0f} "
                    f"(error {pilot_errs[-1]:.3f})")
    return {"plan_error_max": float(np.max(errs)), "plan_error_mean": float(np.mean(errs)),
            "plan_error_pilot_max": float(np.max(pilot_errs))}, rows


def _vb_queries(model: str, rng: np.random.Generator, q: int, b: int, alpha: float
                ) -> np.ndarray:
    if model == "binary_high":  # one-interpretation queries that nearly always succeed
        es = (rng.random((q, b)) < rng.uniform(0.9, 1.0, q)[:, None]).astype(float)
    elif model == "binary":
        es = (rng.random((q, b)) < rng.uniform(0.5, 1.0, q)[:, None]).astype(float)
    else:
        es = np.clip(rng.uniform(0.2, 0.9, q)[:, None] + rng.normal(0, 0.15, (q, b)), 0, 1)
    return (es - alpha * np.sqrt(es * (1 - es))).mean(axis=1)  # VB_hat per query


def vb(reps: int, rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    rows, ours, perc = [], [], []
    alpha = 0.5
    for model in ("binary_high", "binary", "continuous"):
        truth = float(_vb_queries(model, np.random.default_rng(99), 400_000, 5, alpha).mean())
        for q in (4, 6, 10, 20):
            hits = ph = 0
            for _ in range(reps):
                v = _vb_queries(model, rng, q, 5, alpha)
                ci = bounded_mean_interval(v, -alpha / 2, 1.0, 0.95)
                hits += ci.lo <= truth <= ci.hi
                pc = percentile_interval(v, 0.95, 1000, rng)
                ph += pc.lo <= truth <= pc.hi
            ours.append(hits / reps)
            perc.append(ph / reps)
            rows.append(f"vb    {model:<11} Q {q:<3}: judgekit {hits / reps:.3f}  "
                        f"percentile {ph / reps:.3f}")
    return {"vb_headline_coverage_min": float(np.min(ours)),
            "vb_headline_nominal": 0.95,
            "vb_percentile_coverage_min": float(np.min(perc))}, rows


SMALL_JUDGES = ((0.95, 0.8), (0.97, 0.5), (0.99, 0.9), (0.9, 0.3), (0.85, 0.85),
                (0.99, 0.99), (0.9, 0.9), (0.999, 0.95), (0.98, 0.7), (0.95, 0.95))


def small_edges(reps: int, rng: np.random.Generator) -> tuple[dict[str, float], list[str]]:
    """Issue 49's small edges: kappa at n = 40 and 95/5 skew, AC1 at n = 50 (prevalence
    0.9 and 0.95), at 0.95 over judges (sensitivity, specificity) of SMALL_JUDGES; and
    the corrected pass rate at a pass rate of 0.05 with 100 labels of 2,000 items, at
    0.90, against the population's own rate, over judges from near-perfect to weak,
    also in the draws whose labels show at most two false passes."""
    rows, worst = [], {"kappa": 1.0, "ac": 1.0}
    for key, prev, n in (("kappa", 0.95, 40), ("ac", 0.9, 50), ("ac", 0.95, 50)):
        for se, sp in SMALL_JUDGES:
            truth = _population(prev, se, sp)[key]
            cells = rng.multinomial(n, [sp * (1 - prev), (1 - se) * prev,
                                        (1 - sp) * (1 - prev), se * prev], size=reps)
            hits = 0
            for i, cnt in enumerate(cells):
                ag = agreement(np.repeat([0, 0, 1, 1], cnt), np.repeat([0, 1, 0, 1], cnt),
                               seed=i, resamples=2000, level=0.95)
                ci = ag.cis.get(key)
                hits += ci is not None and ci[0] <= truth <= ci[1]
            worst[key] = min(worst[key], hits / reps)
            rows.append(f"small {key} n {n} prev {prev} se {se} sp {sp}: {hits / reps:.3f}")
    covs, few_covs = [], []
    for se, sp in ((0.9, 0.95), (0.7, 0.99), (0.95, 0.8), (0.5, 0.98), (0.99, 0.9),
                   (0.8, 0.8), (0.95, 0.99), (0.6, 0.9), (1.0, 0.97), (0.99, 0.995)):
        hits = few = few_hits = 0
        for _ in range(reps):
            y = (rng.random(2000) < 0.05).astype(float)
            f = np.where(y == 1, rng.random(2000) < se, rng.random(2000) >= sp).astype(float)
            lab = rng.choice(2000, 100, replace=False)
            c = ppi_mean(f, f[lab], y[lab], LEVEL)
            ok = c.ci[0] <= y.mean() <= c.ci[1]
            hits += ok
            if np.sum((f[lab] == 1) & (y[lab] == 0)) <= 2:
                few += 1
                few_hits += ok
        covs.append(hits / reps)
        if few >= 50:
            few_covs.append(few_hits / few)
        rows.append(f"ppi pass 0.05 n 100 se {se} sp {sp}: {hits / reps:.3f}"
                    + (f" (at most 2 false passes: {few_hits / few:.3f} of {few})" if few
                       else ""))
    return {"kappa_small_skew_coverage": worst["kappa"], "ac1_small_coverage": worst["ac"],
            "ppi_low_prevalence_coverage": float(min(covs)),
            # (None: no design had 50 draws with few errors, as at --smoke's few reps)
            "ppi_low_prevalence_few_errors_coverage": float(min(few_covs)) if few_covs
            else None}, rows


def run(reps: int = 1000) -> tuple[dict[str, float], list[str]]:
    rng = np.random.default_rng(33)
    figs: dict[str, float] = {}
    rows: list[str] = []
    for part in (ppi, paired, agreement_cov, plan, vb, small_edges):
        f, r = part(reps if part is not plan else min(300, reps), rng)
        figs.update(f)
        rows += r
    return figs, rows
