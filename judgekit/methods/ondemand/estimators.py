"""Importance-sampling estimators of precision and recall (Chaganty et al., EMNLP 2017).

Distributions are dense arrays over a universe of N instances. Every estimator
takes explicit samples (index arrays) drawn by the caller with a seeded Generator.
Differences from the authors' code: intervals use the stated level (their "90%"
took the 10th/90th percentiles, an 80% interval), bisection stops on an exact
integer bracket or a *relative* tolerance, and Var(theta nu) keeps the squares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from judgekit.core.errors import StatsError

Scheme = Literal["heuristic", "uniform", "size"]


@dataclass
class MixingWeights:
    """Mixing weights w_ij ∝ n_j · sum_x p_i(x) p_j(x) (heuristic), 1[overlap] (uniform)
    or n_j 1[overlap] (size), rows normalised; updated incrementally per new system."""

    scheme: Scheme = "heuristic"
    dists: list[np.ndarray] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    overlap: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def add(self, p: np.ndarray, n: int) -> None:
        """Add a system: only its overlaps with existing systems are computed (O(m))."""
        p = np.asarray(p, float)
        if n < 0:
            raise StatsError(f"sample size {n} must be >= 0")
        m = len(self.dists)
        new = np.zeros((m + 1, m + 1))
        new[:m, :m] = self.overlap
        col = np.array([float(d @ p) for d in self.dists] + [float(p @ p)])
        new[m, :] = col
        new[:, m] = col
        self.overlap, self.dists, self.sizes = new, [*self.dists, p], [*self.sizes, int(n)]

    def set_size(self, i: int, n: int) -> None:
        self.sizes[i] = int(n)

    def matrix(self) -> np.ndarray:
        n = np.asarray(self.sizes, float)
        if self.scheme == "heuristic":
            raw = self.overlap * n[None, :]
        elif self.scheme == "uniform":
            raw = (self.overlap > 0).astype(float) * (n[None, :] > 0)
        elif self.scheme == "size":
            raw = (self.overlap > 0) * n[None, :]
        else:
            raise StatsError(f"unknown weight scheme {self.scheme!r}")
        rows = raw.sum(axis=1, keepdims=True)
        return np.divide(raw, rows, out=np.zeros_like(raw), where=rows > 0)


def weights_for(dists: Sequence[np.ndarray], sizes: Sequence[int],
                scheme: Scheme = "heuristic") -> np.ndarray:
    mw = MixingWeights(scheme)
    for p, n in zip(dists, sizes):
        mw.add(p, n)
    return mw.matrix()


def proposals(dists: Sequence[np.ndarray], w: np.ndarray) -> np.ndarray:
    """q_i(x) = sum_j w_ij p_j(x), one row per system."""
    return np.asarray(w) @ np.vstack(dists)


def simple_precision(f_sample: np.ndarray) -> float:
    return float(np.mean(f_sample)) if len(f_sample) else float("nan")


def simple_recall(g_on_p0_sample: np.ndarray) -> float:
    return float(np.mean(g_on_p0_sample)) if len(g_on_p0_sample) else float("nan")


def ratio_estimate(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.full_like(num, np.nan, dtype=float), where=den != 0)


def joint_precision(dists: Sequence[np.ndarray], samples: Sequence[np.ndarray], f: np.ndarray,
                    w: np.ndarray) -> np.ndarray:
    """pi_i = sum_j w_ij mean_{x in sample_j} p_i(x) f(x) / q_i(x), for every i."""
    P = np.vstack(dists)
    Q = proposals(dists, w)
    out = np.zeros(len(dists))
    for j, s in enumerate(samples):
        if len(s) == 0:
            continue
        ratio = ratio_estimate(P[:, s] * f[s][None, :], Q[:, s])
        out += w[:, j] * np.nan_to_num(ratio).mean(axis=1)
    return out


def joint_precision_variance(dists: Sequence[np.ndarray], samples: Sequence[np.ndarray],
                             f: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum_j w_ij^2 / n_j · sample Var_j(p_i f / q_i) (independent samples)."""
    P, Q = np.vstack(dists), proposals(dists, w)
    out = np.zeros(len(dists))
    for j, s in enumerate(samples):
        if len(s) < 2:
            continue
        v = np.nan_to_num(ratio_estimate(P[:, s] * f[s][None, :], Q[:, s]))
        out += w[:, j] ** 2 * v.var(axis=1, ddof=1) / len(s)
    return out


def pool_relative_recall(dists: Sequence[np.ndarray], samples: Sequence[np.ndarray],
                         f: np.ndarray, p0: np.ndarray, members: np.ndarray) -> np.ndarray:
    """nu_i: the p0-weighted share of the pool's correct instances that system i outputs.

    Importance-weighted from every labelled system sample with the pool mixture
    q(x) = sum_j (n_j / N) p_j(x), which is positive wherever a sample can fall
    (a per-system q_i can vanish on other systems' samples). A ratio estimator:
    consistent, not exactly unbiased.
    """
    n = np.array([len(s) for s in samples], float)
    if n.sum() == 0:
        return np.full(len(dists), np.nan)  # no labelled sample yet
    q = (n / n.sum()) @ np.vstack(dists)
    num, den = np.zeros(len(dists)), 0.0
    for j, s in enumerate(samples):
        if len(s) == 0:
            continue
        wt = (n[j] / n.sum()) * f[s] * p0[s] / q[s]
        num += members[:, s] @ wt / len(s)
        den += wt.sum() / len(s)
    return num / den if den > 0 else np.full(len(dists), np.nan)


def product_variance(a: float, var_a: float, b: float, var_b: float) -> float:
    """Var(ab) of independent estimates: a^2 Var(b) + b^2 Var(a) + Var(a) Var(b)."""
    return a * a * var_b + b * b * var_a + var_a * var_b


def conservative_variance(new: int, dists: Sequence[np.ndarray], sizes: Sequence[int],
                          samples: Sequence[np.ndarray], f: np.ndarray,
                          scheme: Scheme = "heuristic") -> float:
    """Variance bound of the joint precision of system ``new`` (last) with n_new samples:
    observed variance from the earlier samples plus the bound
    w_mm^2 / n_m · sum_x p_m (p_m / q_m)^2 for its own (not yet drawn) sample."""
    w = weights_for(dists, sizes, scheme)
    P, Q = np.vstack(dists), proposals(dists, w)
    pm, qm = P[new], Q[new]
    total = 0.0
    for j, s in enumerate(samples):
        if j == new or len(s) < 2:
            continue
        v = np.nan_to_num(ratio_estimate(pm[s] * f[s], qm[s]))
        total += w[new, j] ** 2 * float(v.var(ddof=1)) / len(s)
    n_new = sizes[new]
    if n_new > 0:
        mask = pm > 0
        total += w[new, new] ** 2 / n_new * float(np.sum(pm[mask] * (pm[mask] / qm[mask]) ** 2))
    return total


def adaptive_sample_size(dists: Sequence[np.ndarray], sizes: Sequence[int],
                         samples: Sequence[np.ndarray], f: np.ndarray, *, budget: int,
                         rtol: float = 0.0, scheme: Scheme = "heuristic") -> int:
    """Smallest n in [1, budget] whose conservative variance for the newest system is at
    most 1/budget (what a fixed budget gives a system that shares nothing), by bisection.

    ``rtol`` stops when (hi - lo) <= rtol · hi; rtol = 0 brackets to the exact integer.
    (The authors stopped at an absolute tolerance and asked too few labels.)"""
    target = 1.0 / budget
    sizes = list(sizes)
    new = len(dists) - 1

    def ok(n: int) -> bool:
        sizes[new] = n
        return conservative_variance(new, dists, sizes, samples, f, scheme) <= target

    lo, hi = 0, budget
    if not ok(hi):
        return budget
    while hi - lo > max(1, rtol * hi):
        mid = (lo + hi) // 2
        if mid >= 1 and ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def stratified_boot_means(values: np.ndarray, resamples: int, rng: np.random.Generator
                          ) -> np.ndarray:
    """Bootstrap means of each row of ``values`` (rows share one resampling of columns):
    returns (rows, resamples)."""
    n = values.shape[1]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)  # (R, n)
    return values @ counts.T / n


def percentile(boot: np.ndarray, level: float, n: int | None = None) -> np.ndarray:
    """Percentile interval at the stated level: a 90% interval is the 5th-95th percentile.

    With ``n`` (the number of labelled samples behind the estimate) it is Hesterberg's
    expanded percentile interval: the tail area is taken at
    Phi(-sqrt(n/(n-1)) t_{n-1, 1-a}) instead of a, which corrects the bootstrap's
    narrowness in small samples (the plain percentile interval covered 0.87-0.89 at
    nominal 0.90 with n = 100 per system in the simulation)."""
    a = (1 - level) / 2
    if n is not None and n > 2:
        from scipy.stats import norm, t

        a = float(norm.cdf(-np.sqrt(n / (n - 1)) * t.ppf(1 - a, n - 1)))
    return np.quantile(boot, [a, 1 - a], axis=-1).T
