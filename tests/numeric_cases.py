"""Pinned values of the numerical core: every function of judgekit/stats, the VB-Score
metric and distribution, the on-demand estimators, the No-Data protocol and the
probe's analysis, called on fixed inputs (edge cases included: n = 1 and 2, ties,
constant raters, skew, levels 0.8 / 0.9 / 0.95 / 0.99).

The values in tests/golden/numerics.json were produced by this code after its point
statistics were checked against scikit-learn, krippendorff, statsmodels, pingouin,
scipy and ppi_py (tests/test_differential.py keeps those checks). A wrong operator,
sign, bound or constant in a formula changes at least one pinned value; the test
fails and names the case. Regenerate only for an intended change of a formula,
after the differential tests pass:  python -m tests.numeric_cases --write
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN = Path(__file__).parent / "golden" / "numerics.json"
LEVELS = (0.8, 0.9, 0.95, 0.99)


def lcg(seed: int, n: int, mod: int) -> list[int]:
    """Fixed pseudo-random integers in [0, mod) (pure Python: the same on any numpy)."""
    out, s = [], seed
    for _ in range(n):
        s = (1103515245 * s + 12345) % 2**31
        out.append((s >> 8) % mod)
    return out


def unit(seed: int, n: int) -> list[float]:
    return [v / 9973 for v in lcg(seed, n, 9973)]


def plain(v: Any) -> Any:
    """JSON-able form of a result (NamedTuples, dataclasses, arrays, NaN)."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)
                if f.name not in ("x_primes",)}
    if hasattr(v, "_asdict"):
        return {k: plain(x) for k, x in v._asdict().items()}
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return "nan" if math.isnan(f) else ("inf" if math.isinf(f) else f)
    if isinstance(v, (np.integer, int)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


CASES: dict[str, Callable[[], Any]] = {}


def case(name: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def deco(fn: Callable[[], Any]) -> Callable[[], Any]:
        CASES[name] = fn
        return fn
    return deco


# ---- inputs --------------------------------------------------------------------------
A = lcg(1, 40, 2)
B = [a if u < 0.75 else 1 - a for a, u in zip(A, unit(2, 40))]
SKEW_A = [1] * 36 + [0, 1, 0, 1]
SKEW_B = [1] * 37 + [0, 0, 1]
ORD_A = lcg(3, 30, 5)
ORD_B = [min(4, max(0, a + d - 1)) for a, d in zip(ORD_A, lcg(4, 30, 3))]
X01 = lcg(5, 25, 2)
Y01 = [x if u < 0.6 else 1 - x for x, u in zip(X01, unit(6, 25))]


# ---- stats/proportions.py ------------------------------------------------------------
@case("wilson_interval")
def _wilson() -> Any:
    from judgekit.stats.proportions import wilson_interval

    return [wilson_interval(k, n, lv) for (k, n) in [(0, 1), (1, 1), (0, 2), (1, 2),
                                                     (2, 2), (0, 10), (3, 10), (10, 10),
                                                     (81, 263), (1, 29)]
            for lv in LEVELS]


@case("rate_with_interval")
def _rate() -> Any:
    from judgekit.stats.proportions import rate_with_interval

    return [rate_with_interval([bool(a) for a in A[:m]], lv) for m in (0, 1, 7, 40)
            for lv in LEVELS]


@case("newcombe_paired")
def _newcombe() -> Any:
    from judgekit.stats.proportions import newcombe_paired

    tables = [(36, 12, 2, 0), (5, 5, 5, 5), (0, 10, 0, 0), (3, 0, 4, 13), (1, 0, 0, 0),
              (0, 1, 1, 0)]
    out = []
    for a, b, c, d in tables:
        x = [1] * a + [1] * b + [0] * c + [0] * d
        y = [1] * a + [0] * b + [1] * c + [0] * d
        out += [newcombe_paired(x, y, lv) for lv in LEVELS]
    out.append(newcombe_paired(X01, Y01))
    return out


@case("wilson_effective")
def _wilson_eff() -> Any:
    from judgekit.stats.proportions import wilson_effective

    return [wilson_effective(p, n, lv, cc) for p in (0.0, 0.05, 0.3, 0.5, 0.97, 1.0)
            for n in (0.5, 3.0, 17.5, 263.0) for lv in (0.8, 0.95) for cc in (True, False)]


@case("paired_bootstrap_accuracy_f1")
def _paired_boot() -> Any:
    from judgekit.stats.proportions import accuracy, binary_f1, paired_bootstrap_interval

    t, p = np.array(X01), np.array(Y01)
    return {"accuracy": accuracy(t, p), "f1": binary_f1(t, p),
            "f1_none": binary_f1(np.zeros(3), np.zeros(3)),
            "f1_skew": binary_f1(np.array(SKEW_A), np.array(SKEW_B)),
            "acc_ci": [paired_bootstrap_interval(t, p, accuracy, 3, 400, lv) for lv in LEVELS],
            "f1_ci": [paired_bootstrap_interval(t, p, binary_f1, 4, 400, lv)
                      for lv in LEVELS]}


# ---- stats/tests.py ------------------------------------------------------------------
@case("paired_t_test")
def _ttest() -> Any:
    from judgekit.stats.tests import paired_t_test

    a = np.array(unit(7, 12))
    b = np.array(unit(8, 12))
    return [paired_t_test(a, b), paired_t_test(a, a * 0.5), paired_t_test(a[:1], b[:1]),
            paired_t_test(a, a - 0.25), paired_t_test(np.array([0.2, 0.8]),
                                                     np.array([0.8, 0.2]))]


@case("hoeffding_replicas")
def _hoeffding() -> Any:
    from judgekit.stats.tests import hoeffding_bound, replicas_needed

    return {"bound": [hoeffding_bound(b, d) for b in (1, 20, 200) for d in (0.05, 0.1, 0.3)],
            "needed": [replicas_needed(d, p) for d in (0.05, 0.1, 0.3)
                       for p in (0.01, 0.05, 0.5)]}


# ---- stats/bootstrap.py --------------------------------------------------------------
@case("bootstrap")
def _bootstrap() -> Any:
    from judgekit.core import seeds
    from judgekit.stats import bootstrap as bs

    x = np.array(unit(9, 15))
    rows = np.array([unit(10, 9), unit(11, 9), [0.5] * 9])
    return {
        "derive_seed": [seeds.derive_seed(1), seeds.derive_seed(1, 2), seeds.derive_seed(7, 0, 3)],
        "t_quantile": [bs.t_quantile(p, df) for p in (0.9, 0.975) for df in (1, 4, 30)],
        "normal": [bs.normal_interval(x, lv) for lv in LEVELS] + [
            bs.normal_interval(np.array([0.3]), 0.95),
            bs.normal_interval(np.array([0.2, 0.2]), 0.95),
            bs.normal_interval(np.array([0.0, 1.0]), 0.9)],
        "percentile": [bs.percentile_interval(x, lv, 500, 5) for lv in LEVELS] + [
            bs.percentile_interval(np.array([0.4, 0.4, 0.4]), 0.95, 50, 1)],
        "means": bs.bootstrap_means(x, 7, np.random.default_rng(3), chunk_elems=40),
        "shared": [bs.shared_bootstrap_intervals(rows, lv, 300, 2, chunk_elems=100)
                   for lv in (0.8, 0.99)],
        "batched": bs.batched_percentile_intervals(rows, 0.9, 200, 6),
        "cluster": bs.cluster_bootstrap_interval(x, 0.8, 300, 8),
        "matrix": bs.replica_matrix_interval(
            np.array([[0.1, 0.3, np.nan], [0.9, 0.7, 0.8], [0.5, np.nan, 0.4],
                      [0.0, 0.2, 0.1]]), 0.9, 300, 9),
    }


# ---- stats/agreement.py --------------------------------------------------------------
@case("agreement_point_statistics")
def _agreement_points() -> Any:
    from judgekit.stats import agreement as ag

    pairs = [(A, B), (SKEW_A, SKEW_B), (ORD_A, ORD_B), ([0, 0, 0], [0, 0, 0]),
             ([1, 0], [0, 1]), ([1, 1, 0], [1, 1, 1])]
    out = []
    for a, b in pairs:
        out.append({"percent": ag.percent_agreement(a, b),
                    "kappa": ag.cohen_kappa(a, b), "kappa_q": ag.cohen_kappa(a, b, "quadratic"),
                    "ac1": ag.gwet_ac(a, b), "ac2": ag.gwet_ac(a, b, "quadratic"),
                    "alpha": ag.krippendorff_alpha(a, b),
                    "alpha_i": ag.krippendorff_alpha(a, b, "interval"),
                    "flips": ag.flips(a, b)})
    return out


@case("agreement_intervals")
def _agreement() -> Any:
    from judgekit.stats.agreement import agreement

    return [agreement(A, B, seed=1, resamples=300, level=lv) for lv in (0.8, 0.95)] + [
        agreement(ORD_A, ORD_B, ordinal=True, seed=2, resamples=300, level=0.9),
        agreement(SKEW_A, SKEW_B, seed=3, resamples=300),
        agreement([1, 0, 1, 1], [1, 0, 1, 1], seed=4, resamples=100, level=0.9),
        agreement([2, 0, 1, 1], [2, 0, 1, 1], ordinal=True, seed=4, resamples=100),
        agreement([1, 1, 1], [1, 1, 1], seed=5, resamples=50)]


@case("flip_excess_bh_bias")
def _excess() -> Any:
    from judgekit.stats import agreement as ag

    t = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
    r = [0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    return {"excess": [ag.flip_excess(t, r, level=lv) for lv in LEVELS],
            "bh": [ag.benjamini_hochberg(p) for p in (
                [0.01, 0.04, 0.03, 0.2], [0.5], [], [0.001, 0.9, 0.02, 0.02, 0.04])],
            "bias": [ag.signed_bias(c, seed=2, resamples=300, level=lv)
                     for c in ([1, 1, 0.5, 0, 1, 1, 0.5, 1], [1, 1, 1]) for lv in (0.8, 0.95)]}


@case("repeat_reliability_ceiling")
def _reliability() -> Any:
    from judgekit.stats.agreement import ceiling, item_bootstrap, repeat_reliability

    m = np.array([[1, 1, 1], [0, 0, 1], [1, 0, 1], [0, 0, 0], [1, 1, 0], [1, 1, 1]])
    return {"rel": [repeat_reliability(m, t, lv) for t in (0.5, 0.8, 0.95)
                    for lv in (0.8, 0.95)],
            "rel_const": repeat_reliability(np.ones((3, 2)), 0.8),
            "rel_one": repeat_reliability(np.array([[1, 0, 1]]), 0.8),
            "rel_perfect": repeat_reliability(np.array([[1, 1], [0, 0], [1, 1]]), 0.9),
            "ceiling": ceiling([[1, 1, 0], [0, 0], [1, 0, 1], [1, 1], [0, 1, 0], [1, 1, 1]],
                               seed=3, resamples=200),
            "item_boot": item_bootstrap(lambda i: float(np.mean(np.array(A)[i])), 40, 6,
                                        300, 0.8),
            "item_boot_nan": item_bootstrap(lambda i: float("nan"), 5, 1, 10)}


# ---- stats/ppi.py --------------------------------------------------------------------
@case("ppi")
def _ppi() -> Any:
    from judgekit.stats import ppi

    f = np.array(lcg(12, 60, 2), float)
    lab = np.array(lcg(13, 20, 60))
    lab = np.array(sorted(set(lab.tolist())))
    y = np.array([f[i] if u < 0.8 else 1 - f[i] for i, u in zip(lab, unit(14, len(lab)))])
    pi = ppi.importance_inclusion(np.array(unit(15, 60)), 15)
    k3 = np.array(lcg(16, 50, 3))
    h3 = np.array([k if u < 0.7 else (k + 1) % 3 for k, u in zip(k3[:18], unit(17, 18))])
    out = {"mean": [ppi.ppi_mean(f, f[lab], y, lv) for lv in LEVELS],
           "mean_lam0": ppi.ppi_mean(f, f[lab], y, 0.9, lam=0.0),
           "mean_const": ppi.ppi_mean(np.ones(10), np.ones(4), np.array([1, 0, 1, 1.0])),
           "shares": ppi.ppi_shares(k3, k3[:18], h3, 0.9),
           "inclusion": [pi, ppi.importance_inclusion(np.array([0, 0, 0, 5.0, 1, 0]), 3, 0.2),
                         ppi.importance_inclusion(np.zeros(4), 2),
                         ppi.importance_inclusion(np.array([1, 1, 50.0, 1]), 2, 0.0)],
           "weighted": [ppi.ppi_weighted(f, lab, y, np.full(60, 0.3), lv) for lv in (0.8, 0.95)]
           + [ppi.ppi_weighted(f, lab, y, np.where(np.arange(60) % 2 == 0, 0.2, 0.6))]}
    # a judge that agrees with the humans on 95% of items: power tuning keeps lambda > 0
    # and the judge-assisted interval (no fallback to the human labels alone)
    good = np.where(np.array(unit(21, 60)) < 0.95, f, 1 - f)
    lab2 = np.arange(0, 60, 3)
    inc = np.where(np.arange(60) % 3 == 0, 0.5, 0.25)
    out["weighted_helpful"] = [ppi.ppi_weighted(good, lab2, f[lab2], inc, lv)
                               for lv in (0.8, 0.95)]
    out["weighted_all_in"] = ppi.ppi_weighted(good, lab2, f[lab2], np.ones(60), 0.9)
    out["mean_helpful"] = [ppi.ppi_mean(good, good[lab2], f[lab2], lv) for lv in (0.8, 0.99)]
    c = out["mean"][2]
    out["labels_for"] = [c.labels_for_halfwidth(h) for h in (0.0, 0.01, 0.05, 1.0)]
    return out


# ---- vbscore/metric.py and distribution.py -------------------------------------------
@case("vbscore_metric")
def _metric() -> Any:
    from judgekit.methods.vbscore import metric as m

    intents = ["E1", "E2", "E3"]
    tags = ["E2", "none", "E1", "E3", None]
    pi = np.array([0.5, 0.3, 0.2])
    g = m.binary_gains(intents, tags)
    gd = m.dcg_gains(intents, tags, k=3)
    return {"binary": g, "binary_k2": m.binary_gains(intents, tags, 2), "dcg": gd,
            "dcg_all": m.dcg_gains(intents, tags),
            "es": [m.expected_success(pi, g), m.expected_success(pi, gd)],
            "var": [m.variance(pi, gd), m.variance(pi, gd, "spread"), m.variance(pi, g)],
            "vb_from": [m.vb_from(0.6, 0.09, a, c) for a in (0.0, 0.5, 2.0)
                        for c in (False, True)] + [m.vb_from(0.1, 0.25, 1.0, True)],
            "vb_of_es": [m.vb_of_es(e, a) for e in (0.0, 0.3, 1.0) for a in (0.25, 1.0)],
            "score": [m.score(pi, gd), m.score(pi, gd, (0.0, 3.0), "spread", True),
                      m.score(np.array([0.25, 0.25, 0.5]), np.array([1.0, 0.0, 1.0]))]}


@case("vbscore_distribution")
def _distribution() -> Any:
    from judgekit.methods.vbscore import distribution as d

    p = np.array([0.5, 0.25, 0.15, 0.07, 0.03])
    cands = [d.Candidate("New York City", score=2.0), d.Candidate("new york", score=1.5),
             d.Candidate("Paris", score=1.0, violated=["geo"]),
             d.Candidate("NYC", score=0.2), d.Candidate("Lyon", score=-1.0)]
    return {"softmax": [d.softmax([1.0, 2.0, 3.0], t) for t in (0.5, 1.0, 4.0)]
            + [d.softmax([0.0])],
            "penalty": d.violation_penalty([["a"], [], ["a", "b"]], {"a": 0.5, "b": 2.0}),
            "penalty_default": d.violation_penalty([["a"], [], ["a", "b"]]),
            "combined": [d.combined([1.0, 0.5, 0.0], [["x"], [], []], 2.0),
                         d.combined(None, [["x"], [], ["x", "y"]]),
                         d.combined([1.0, 2.0], None, 0.5)],
            "truncate": [d.truncate(p, tau=0.1), d.truncate(p, top_k=2), d.truncate(p, rho=0.8),
                         d.truncate(p, rho=0.5), d.truncate(p, tau=0.5), d.truncate(p)],
            "check": d.check_distribution(np.array([0.2, 0.3, 0.5])),
            "build": [dataclasses.asdict(d.build(cands, temperature=t, truncation=tr, value=v,
                                                  aliases={"nyc": "new york city"}))
                      for t, tr, v in ((1.0, "none", None), (0.5, "top_k", 2),
                                       (2.0, "tau", 0.1), (1.0, "rho", 0.9))]}


# ---- ondemand/estimators.py ----------------------------------------------------------
@case("ondemand_estimators")
def _estimators() -> Any:
    from judgekit.methods.ondemand import estimators as e

    d1 = np.array([0.4, 0.3, 0.2, 0.1, 0.0, 0.0])
    d2 = np.array([0.0, 0.1, 0.2, 0.3, 0.2, 0.2])
    f = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    s1, s2 = np.array([0, 0, 1, 2, 3, 0, 2]), np.array([1, 3, 4, 5, 5, 2])
    out: dict[str, Any] = {}
    for scheme in ("heuristic", "size", "uniform"):
        w = e.weights_for([d1, d2], [7, 6], scheme)  # type: ignore[arg-type]
        out[scheme] = {
            "w": w, "q": e.proposals([d1, d2], w),
            "joint": e.joint_precision([d1, d2], [s1, s2], f, w),
            "var": e.joint_precision_variance([d1, d2], [s1, s2], f, w),
            "recall": e.pool_relative_recall([d1, d2], [s1, s2], f, d1 + 0.05,
                                             (np.vstack([d1, d2]) > 0).astype(float)),
            "conservative": e.conservative_variance(1, [d1, d2], [7, 6], [s1, s2], f,
                                                    scheme),  # type: ignore[arg-type]
            "adaptive": e.adaptive_sample_size([d1, d2], [7, 6], [s1, s2], f, budget=40,
                                               rtol=0.05, scheme=scheme)}  # type: ignore
    mw = e.MixingWeights()
    mw.add(d1, 7)
    mw.add(d2, 6)
    mw.add(np.array([0.0, 0.0, 0.0, 0.0, 0.5, 0.5]), 0)
    mw.set_size(0, 9)
    boot = e.stratified_boot_means(np.array([[0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]]),
                                   6, np.random.default_rng(4))
    out.update(mixing=mw.matrix(), simple=[e.simple_precision(f), e.simple_recall(f[:3])],
               ratio=e.ratio_estimate(np.array([1.0, 2.0, 0.0]), np.array([2.0, 0.0, 4.0])),
               product=[e.product_variance(0.5, 0.01, 0.8, 0.02),
                        e.product_variance(0.0, 0.0, 1.0, 0.5)],
               boot=boot,
               percentile=[e.percentile(np.array(unit(18, 50)), lv, n)
                           for lv in (0.8, 0.95) for n in (None, 3, 40)])
    return out


# ---- nodata/protocol.py --------------------------------------------------------------
class _Verifier:
    def total(self, x: Any) -> tuple[int, ...]:
        return tuple(int(c) for c in str(x)[:3])

    def top(self, x: Any) -> tuple[int, ...]:
        return (int(str(x).count("1") % 2 == 0), int(str(x)[0]))


class _Evaluator:
    """Labels by the first bit; an honest paraphrase (the same string) except for the
    strings it lies on (every fourth), whose paraphrase flips the last bit."""

    def label(self, x: Any, rng: np.random.Generator) -> int:
        return int(str(x)[0])

    def generate(self, x: Any, label: int, round_: int, rng: np.random.Generator) -> Any:
        s = str(x)
        if int(s, 2) % 4 == 0:
            return s[:-1] + ("0" if s[-1] == "1" else "1")
        if int(s, 2) % 4 == 1 and round_ == 1:
            return s[::-1]
        return s


@case("nodata_protocol")
def _protocol() -> Any:
    from judgekit.methods.nodata import protocol as p

    items = [format(v, "06b") for v in lcg(19, 40, 64)]
    truth = [int(s[1]) for s in items]
    out: dict[str, Any] = {
        "passes": [p.challenge_passes(c, (1, 0, 1), t, (1, 0), tp, eps)
                   for c in (1, 2) for t in ((1, 0, 1), (1, 1, 1)) for tp in ((1, 0), (1, 1),
                                                                              (0, 1))
                   for eps in (0.0, 0.5, 0.6, 1.0)],
        "bound": [p.theorem_5_2_bound(a, phi, r) for a in (0.5, 0.9) for phi in (0.0, 0.3, 1.0)
                  for r in (1, 3)],
        "one_vs_all": p.one_vs_all([0, 1, 2, 2, 1, 0], 3),
        "flip": [p.flip(1, 2, np.random.default_rng(0)), p.flip(0, 2, np.random.default_rng(0)),
                 [p.flip(1, 4, np.random.default_rng(s)) for s in range(6)]]}
    for phi in (0.0, 0.4, 1.0):
        recs = p.no_data(items, _Evaluator(), _Verifier(), rounds=3, phi=phi, seed=5)
        out[f"records_{phi}"] = [(r.label, r.success, r.failed_round, r.failed_challenge,
                                  r.challenges, r.flipped, r.final_label) for r in recs]
        out[f"summary_{phi}"] = p.summarise(recs, truth, phi=phi, rounds=3, seed=2,
                                            level=0.9)
    k3 = p.no_data(items[:20], _Evaluator(), _Verifier(), rounds=2, phi=0.7, seed=1, k=3)
    out["k3"] = p.summarise(k3, [t + int(s[2]) for t, s in zip(truth, items)][:20], phi=0.7,
                            rounds=2, k=3)
    out["no_truth"] = p.summarise(k3, None, phi=0.7, rounds=2)
    out["defaults"] = p.summarise(p.no_data(items, _Evaluator(), _Verifier(), rounds=2, phi=0.5,
                                            seed=9), truth, phi=0.5, rounds=2)
    out["run_ev_default"] = [(r.success, r.failed_round) for r in (
        p.run_ev(x, _Evaluator(), _Verifier(), 3, np.random.default_rng(i))
        for i, x in enumerate(items[:16]))]
    zeros = p.no_data(["000000"] * 6, _Evaluator(), _Verifier(), rounds=1, phi=0.0, seed=1)
    out["all_negative"] = p.summarise(zeros, [0] * 6, phi=0.0, rounds=1, seed=1)
    out["one_vs_all_k4"] = p.one_vs_all([3, 1, 0, 2, 3], 4)
    out["eps"] = [r.success for r in p.run_protocol(items[:10], _Evaluator(), _Verifier(),
                                                    rounds=2, seed=3, eps=0.5)]
    return out


# ---- probe/analysis.py ---------------------------------------------------------------
@case("probe_analysis")
def _probe() -> Any:
    from judgekit.judging.placebo import PLACEBO
    from judgekit.methods.probe.analysis import analyse
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.methods.probe.pairs import Pair

    n = 24
    pairs = [Pair(f"p{i}", f"q{i}", f"a{i}", f"b{i}", "a" if i % 3 else "b",
                  human=("a" if (i * 7) % 5 < 3 else "b") if i < 16 else None,
                  humans=["a", "b" if i % 4 == 0 else "a"] if i < 8 else [])
             for i in range(n)]
    bits = lcg(20, 8 * n, 100)
    verdicts = []
    for i in range(n):
        u = bits[8 * i: 8 * i + 8]
        first = "a" if u[0] < 70 else "b"
        v = {"run0": first, "run1": first if u[1] < 80 else ("b" if first == "a" else "a"),
             "swap": "a" if u[2] < 40 else "b", "rename": first if u[3] < 85 else "b",
             "pad": "a" if u[4] < 55 else "b", "pad:side": "a" if i % 2 else "b",
             PLACEBO: first if u[5] < 90 else ("b" if first == "a" else "a")}
        v["run0:first"] = "first" if v["run0"] == "a" else "second"
        v["swap:first"] = "first" if v["swap"] == "b" else "second"
        v["rename:first"] = "first" if v["rename"] == "a" else "second"
        if i == 5:
            v["swap"] = None
        verdicts.append(v)
    out = []
    for level, placebo, sample, sampling in ((0.95, True, None, "random"),
                                             (0.8, False, 6, "random"),
                                             (0.9, True, 8, "importance")):
        cfg = ProbeConfig(data_path="pairs.jsonl", models={"judge": "mock/x"}, seed=4,
                          level=level, placebo=placebo, resamples=200, human_sample=sample,
                          human_sampling=sampling)
        res = analyse(cfg, pairs, verdicts)
        res["items"] = [it["flipped_under"] for it in res["items"]]
        out.append(res)
    cfg = ProbeConfig(data_path="pairs.jsonl", models={"judge": "mock/x"}, seed=4,
                      judge_mode="pointwise", transforms=["pad"], resamples=200)
    res = analyse(cfg, pairs, verdicts, pointwise=True)
    res["items"] = [it["flipped_under"] for it in res["items"]]
    out.append(res)
    # humans agreeing with the judge on most pairs (power tuning has something to use),
    # some verdict keys missing, exactly two repeat rows, a ceiling from exactly two
    # multiply-annotated pairs, and resamples above the ceiling's cap
    pairs2 = [Pair(f"h{i}", f"q{i}", "x", "y", "a",
                   human=(v0 if (i * 5) % 7 else ("b" if v0 == "a" else "a")),
                   humans=[v0, v0] if i in (3, 4) else ([v0] if i == 5 else []))
              for i, v0 in enumerate(v["run0"] for v in verdicts)]
    partial = [dict(v) for v in verdicts]
    for i, v in enumerate(partial):
        if i % 5 == 1:
            v.pop("run0:first", None)
        if i % 7 == 2:
            v.pop("rename:first", None)
            v.pop("swap:first", None)
        if i >= 2:
            v.pop("run1", None)
        if i % 6 == 3:
            v[PLACEBO] = None
    for sample, sampling, seed in ((None, "random", 1), (8, "random", 2), (24, "random", 3),
                                   (10, "importance", 4)):
        cfg = ProbeConfig(data_path="pairs.jsonl", models={"judge": "mock/x"}, seed=seed,
                          level=0.9, resamples=1500, human_sample=sample,
                          human_sampling=sampling)
        res = analyse(cfg, pairs2, partial)
        res["items"] = [it["flipped_under"] for it in res["items"]]
        out.append(res)
    two = [Pair(f"t{i}", "q", "x", "y", human="a" if i else "b") for i in range(2)]
    cfg = ProbeConfig(data_path="pairs.jsonl", models={"judge": "mock/x"}, resamples=200)
    res = analyse(cfg, two, [{"run0": "a", "run1": "a", "swap": "b", "run0:first": "first",
                              "swap:first": "first"}, {"run0": "b", "run1": "a"}])
    res["items"] = [it["flipped_under"] for it in res["items"]]
    out.append(res)
    return out


@case("self_checks")
def _self_checks() -> Any:
    """stats/preference.py, stats/sequential.py, the VB tagger check and the probe's
    plan on fixed inputs."""
    from judgekit.methods.probe.bias import audit_plan, plan
    from judgekit.methods.vbscore.selfcheck import TagCheck, interpretation_stability, tagger_check
    from judgekit.stats import preference as pf
    from judgekit.stats import sequential as sq

    bits = lcg(40, 600, 100)
    groups = [[b < 60 for b in bits[i: i + 1 + i % 5]] for i in range(0, 120, 6)]
    side = ["a" if b % 2 else "b" for b in bits[:80]]
    better = ["a" if b < 45 else "b" for b in bits[80:160]]
    chosen = ["a" if b < 55 else "b" for b in bits[160:240]]
    side[3], better[5], chosen[7] = None, None, None
    x = [float(b < 30) for b in bits[240:400]]
    d = [(1 if b < 20 else -1 if b > 90 else 0) for b in bits[400:600]]
    tags = ["0", "1", "2", "none"]
    checks = [TagCheck([tags[b % 4] for b in bits[i: i + 3]], [1, 2, 0],
                       [tags[b % 4] for b in bits[i + 3: i + 6]] if i % 4 else None,
                       [tags[(b // 3) % 4] for b in bits[i: i + 3]])
              for i in range(0, 300, 6)]
    probe_like = {"level": 0.9, "noise_floor": {"rate": 0.12},
                  "transforms": [{"name": "t", "question": "consistency", "n": 30,
                                  "discordant": 0.2}],
                  "biases": [{"name": "swap", "question": "direction", "n": 30,
                              "discordant": None, "scale": 0.5}]}
    return {
        "clustered": [pf.clustered_rate(groups, lv) for lv in LEVELS],
        "clustered_one": pf.clustered_rate([[True, False, False]]),
        "sign": [pf.sign_test(a, b, lv) for a, b, lv in ((7, 2, 0.95), (3, 3, 0.8),
                                                         (0, 5, 0.99), (1, 0, 0.9))],
        "unpaired": [pf.newcombe_unpaired(k1, n1, k2, n2, lv) for k1, n1, k2, n2, lv in
                     ((56, 70, 48, 80, 0.95), (0, 10, 10, 10, 0.9), (5, 5, 0, 3, 0.8),
                      (9, 10, 3, 10, 0.99))],
        "preference": [pf.feature_preference(side, better, chosen, lv) for lv in LEVELS],
        "preference_default": pf.feature_preference(side, better, chosen),
        "n_needed": [pf.paired_n_needed(psi, e, pw, lv) for psi, e, pw, lv in
                     ((0.3, 0.1, 0.8, 0.95), (0.5, 0.05, 0.9, 0.99), (0.12, 0.1, 0.5, 0.8),
                      (0.05, 0.1, 0.8, 0.95))],
        "n_needed_default": pf.paired_n_needed(0.25, 0.1),
        "rate_needed": [pf.rate_n_needed(r, h, lv) for r, h, lv in
                        ((0.5, 0.05, 0.95), (0.9, 0.1, 0.8), (1.0, 0.02, 0.99))],
        "rate_needed_default": pf.rate_n_needed(0.3, 0.05),
        "cs": sq.betting_cs(x, 0.9),
        "cs_default": sq.betting_cs(x[:40]),
        "cs_null": sq.betting_cs(x[:60], 0.95, null=0.2, c=0.75, grid=501),
        "paired_cs": [sq.paired_difference_cs(d[:m], lv, mg, g) for m, lv, mg, g in
                      ((200, 0.95, 0.05, False), (120, 0.9, 0.1, True),
                       (60, 0.99, 0.2, False))],
        "paired_cs_default": sq.paired_difference_cs(d),
        "tagger": [tagger_check(checks, lv) for lv in (0.8, 0.95)],
        "tagger_default": tagger_check(checks[:10]),
        "stability": interpretation_stability(
            [[(tags[b % 4], tags[b % 3:]) for b in bits[i: i + 1 + i % 4]]
             for i in range(0, 60, 5)], 0.9),
        "plan": plan(probe_like, 0.8, (0.05, 0.1, 0.3)),
        "plan_default": plan(probe_like),
        "audit_plan": audit_plan(0.7, 0.9),
        "logistic": [pf.logistic_slope([int(b < 50) for b in bits[i: i + 60]],
                                       [(b % 17) / 8 - 1 for b in bits[i + 60: i + 120]],
                                       [[(b % 3) - 1.0 for b in bits[i + 120: i + 180]]]
                                       if i % 2 else [], lv)
                     for i, lv in ((0, 0.95), (200, 0.9), (300, 0.99))],
        "logistic_default": pf.logistic_slope([0, 1, 1, 0, 1, 0, 1, 1],
                                              [0.1, 0.5, 0.9, 0.2, 0.4, 0.3, 0.1, 0.8]),
    }


@case("defaults_and_boundaries")
def _defaults() -> Any:
    """Every function called with only its required arguments (its defaults pinned),
    and inputs at the edges of each branch."""
    from judgekit.core import seeds
    from judgekit.stats import agreement as ag
    from judgekit.stats import bootstrap as bs
    from judgekit.stats import ppi
    from judgekit.stats import proportions as pr

    x = np.array(unit(30, 12))
    rows = np.array([unit(31, 8), unit(32, 8)])
    f = np.array(lcg(33, 40, 2), float)
    lab = np.arange(0, 40, 4)
    y = f[lab].copy()
    y[0] = 1 - y[0]
    perfect = [1] * 99 + [0]
    ordinal_a = [a + 1 for a in ORD_A]
    ordinal_b = [b + 1 for b in ORD_B]
    big = ppi.Corrected(0.5, [0.4, 0.6], 0.5, [0.3, 0.7], 50, 10_000)
    return {
        "agreement": ag.agreement(A, B),
        "agreement_ordinal_from_1": ag.agreement(ordinal_a, ordinal_b, ordinal=True,
                                                 resamples=200),
        "kappa_ordinal_from_1": ag.cohen_kappa(ordinal_a, ordinal_b, "quadratic"),
        "ac2_ordinal_from_1": ag.gwet_ac(ordinal_a, ordinal_b, "quadratic"),
        "perfect_skewed_99": ag.agreement(perfect, perfect, level=0.99, resamples=50),
        "flip_excess": ag.flip_excess([1, 0, 1, 1, 0, 1], [0, 0, 1, 0, 0, 0]),
        "flip_excess_one": ag.flip_excess([1], [0]),
        "signed_bias": ag.signed_bias([1, 0.5, 1, 0, 1, 1]),
        "signed_bias_one": ag.signed_bias([1.0]),
        "item_bootstrap": ag.item_bootstrap(lambda i: float(np.mean(x[i])), 12, 3),
        "reliability": ag.repeat_reliability(np.array([[1, 1, 0], [0, 0, 1], [1, 1, 1],
                                                       [0, 1, 0]])),
        "reliability_two_items": ag.repeat_reliability(np.array([[1, 0], [1, 1]]), 0.6),
        "reliability_zero": ag.repeat_reliability(np.array([[1, 0], [0, 1], [1, 0]])),
        "reliability_targets": [ag.repeat_reliability(np.array([[1, 1], [0, 0], [1, 0]]), t)
                                for t in (0.0, 1.0, 0.3)],
        "ceiling": ag.ceiling([[1, 1], [0, 1], [1, 1], [0, 0]]),
        "ceiling_ragged": ag.ceiling([[1, 1, 0], [0, 1], [1], [1, 0, 0], [0, 0, 1]],
                                     resamples=100),
        "shared": bs.shared_bootstrap_intervals(rows),
        "normal": bs.normal_interval(x), "percentile": bs.percentile_interval(x),
        "batched": bs.batched_percentile_intervals(rows),
        "cluster": bs.cluster_bootstrap_interval(x),
        "matrix": bs.replica_matrix_interval(rows),
        "derive_seed": [seeds.derive_seed(i, 7) for i in range(16)],
        "wilson": pr.wilson_interval(3, 7), "rate": pr.rate_with_interval([True, False, True]),
        "newcombe": pr.newcombe_paired(X01, Y01), "wilson_eff": pr.wilson_effective(0.3, 12.5),
        "paired_boot": pr.paired_bootstrap_interval(X01, Y01, pr.accuracy, 1),
        "ppi_mean": ppi.ppi_mean(f, f[lab], y),
        "ppi_shares": ppi.ppi_shares(f.astype(int), f[lab].astype(int), y.astype(int)),
        "inclusion": ppi.importance_inclusion(np.array(unit(34, 10)), 4),
        "inclusion_capped": [ppi.importance_inclusion(np.array([100.0, 90, 1, 1, 1, 0]), n, 0.0)
                             for n in (1, 2, 3, 5, 6)],
        "weighted": ppi.ppi_weighted(f, lab, y, np.full(40, 0.25)),
        "ppi_two": ppi.ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0, 1.0]),
        "ppi_same_size": ppi.ppi_mean([1.0, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        "weighted_two": ppi.ppi_weighted([1.0, 0.0, 1.0], [0, 1], [1.0, 1.0], [0.5, 0.5, 0.5]),
        "labels_for_uncapped": [big.labels_for_halfwidth(h) for h in (0.05, 0.1, 0.2, -1.0)],
    }


def compute(names: list[str] | None = None) -> dict[str, Any]:
    return {k: plain(fn()) for k, fn in CASES.items() if names is None or k in names}


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("usage: python -m tests.numeric_cases --write   (regenerates the pins)")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n",
                      encoding="utf-8")
    print(f"wrote {GOLDEN}")
