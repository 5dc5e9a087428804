"""Intervals for rates: Wilson score intervals for proportions, and a seeded
percentile bootstrap for statistics of paired labels (accuracy, F1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

from judgekit.core.errors import StatsError
from judgekit.stats.bootstrap import Interval, Seed, rng_of


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    Unlike the Wald interval it never leaves [0, 1] and keeps a width at 0/n and
    n/n; e.g. 0 of 10 gives [0, 0.278] at 95%.
    """
    if n <= 0:
        raise StatsError("a rate needs at least one trial (n >= 1)")
    if not 0 <= successes <= n:
        raise StatsError(f"successes {successes} must lie in 0..{n}")
    if not 0.0 < level < 1.0:
        raise StatsError(f"confidence level {level} must lie in (0, 1)")
    z = float(ndtri(0.5 + level / 2.0))
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(lo, hi)


def rate_with_interval(flags: Sequence[bool], level: float = 0.95
                       ) -> tuple[float | None, list[float] | None, int]:
    """(rate, [lo, hi], n) of a list of booleans; (None, None, 0) when empty."""
    n = len(flags)
    if n == 0:
        return None, None, 0
    k = int(sum(bool(f) for f in flags))
    return k / n, wilson_interval(k, n, level).as_list(), n


def paired_bootstrap_interval(truth: Sequence[int], pred: Sequence[int],
                              metric: Callable[[np.ndarray, np.ndarray], float],
                              seed: Seed, resamples: int = 2000, level: float = 0.95
                              ) -> Interval:
    """Percentile bootstrap of ``metric(truth, pred)`` resampling items (pairs)."""
    t, p = np.asarray(truth), np.asarray(pred)
    if t.size == 0 or t.size != p.size:
        raise StatsError("paired bootstrap needs equal, non-empty label lists")
    rng = rng_of(seed)
    idx = rng.integers(0, t.size, size=(resamples, t.size))
    stats = np.array([metric(t[i], p[i]) for i in idx])
    a = (1.0 - level) / 2.0
    return Interval(float(np.quantile(stats, a)), float(np.quantile(stats, 1.0 - a)))


def accuracy(t: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(t == p))


def binary_f1(t: np.ndarray, p: np.ndarray) -> float:
    tp = float(np.sum((t == 1) & (p == 1)))
    denom = float(np.sum(t == 1) + np.sum(p == 1))
    return 0.0 if denom == 0 else 2.0 * tp / denom


class PairedDifference(NamedTuple):
    """A difference of two paired proportions p1 - p2 (the same n items measured twice)."""

    diff: float
    ci: list[float]
    p_value: float  # exact McNemar (two-sided binomial on the discordant items)
    n: int
    only_first: int  # items with x = 1, y = 0
    only_second: int  # items with x = 0, y = 1


def newcombe_paired(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                    level: float = 0.95) -> PairedDifference:
    """Newcombe's hybrid score interval for the difference of paired proportions
    (Newcombe 1998, Statistics in Medicine 17:2635, method 10): Wilson intervals
    (l1, u1), (l2, u2) for each margin, combined with the correlation phi of the 2x2
    table,

        lower = d - sqrt((p1-l1)^2 - 2 phi (p1-l1)(u2-p2) + (u2-p2)^2)
        upper = d + sqrt((u1-p1)^2 - 2 phi (u1-p1)(p2-l2) + (p2-l2)^2),

    phi = (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)), 0 when a margin is empty. A positive
    correlation is taken with Newcombe's continuity correction (his method 11's
    phi* = max(ad - bc - n/2, 0) / sqrt(...)): with the plain phi, tables with no
    discordant item and equal margins (a = d, b = c = 0) gave a zero-width interval
    [0, 0] from n = 2 items. It keeps a width when every item agrees (the bootstrap
    would give [d, d]) and stays in [-1, 1]. The p-value is the exact McNemar test on
    the discordant items."""
    from scipy.stats import binomtest

    u, v = np.asarray(x, float), np.asarray(y, float)
    if u.shape != v.shape or u.ndim != 1 or u.size == 0:
        raise StatsError("a paired difference needs two equal, non-empty 0/1 lists")
    if not (np.all(np.isin(u, (0, 1))) and np.all(np.isin(v, (0, 1)))):
        raise StatsError("a paired difference of proportions needs 0/1 values")
    n = int(u.size)
    a = int(np.sum((u == 1) & (v == 1)))
    b = int(np.sum((u == 1) & (v == 0)))
    c = int(np.sum((u == 0) & (v == 1)))
    d = n - a - b - c
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, level)
    l2, u2 = wilson_interval(a + c, n, level)
    denom = float(a + b) * (c + d) * (a + c) * (b + d)
    cross: float = float(a * d - b * c)
    if cross > 0:
        cross = max(cross - n / 2, 0.0)
    phi = 0.0 if denom == 0 else cross / math.sqrt(denom)
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    diff = p1 - p2
    p = 1.0 if b + c == 0 else float(binomtest(b, b + c, 0.5).pvalue)
    return PairedDifference(diff, [max(-1.0, diff - dl), min(1.0, diff + du)], p, n, b, c)


EXACT_UNCONDITIONAL_MAX_N = 300  # above it the asymptotic test is as good, and cheaper


def unconditional_mcnemar(b: int, c: int, n: int) -> float:
    """The exact unconditional test of paired proportions (Suissa & Shuster 1991,
    Biometrics 47:361): with the statistic |b - c| / sqrt(b + c), the p-value is the
    largest, over the nuisance share of discordant items pi, of the probability of a
    table at least as extreme among all n-item tables (b, c ~ multinomial with pi / 2
    each). Its type I error is at most nominal for every pi, and it is more powerful
    than the exact conditional McNemar test (5 of 50 items discordant one way: p =
    0.033 against 0.0625). The supremum is taken on a grid of 400 values of pi. Above
    EXACT_UNCONDITIONAL_MAX_N items, the two-sided normal test of the same statistic."""
    from scipy.special import gammaln, ndtr

    d = b + c
    if d == 0:
        return 1.0
    z0 = abs(b - c) / math.sqrt(d)
    if n > EXACT_UNCONDITIONAL_MAX_N:
        return float(2 * (1 - ndtr(z0)))
    bb, cc = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    dd = bb + cc
    ok = dd <= n
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(dd > 0, np.abs(bb - cc) / np.sqrt(np.maximum(dd, 1)), 0.0)
    bb, cc, dd = bb[ok & (z >= z0 - 1e-12)], cc[ok & (z >= z0 - 1e-12)], dd[ok & (z >= z0 - 1e-12)]
    base = gammaln(n + 1) - gammaln(bb + 1) - gammaln(cc + 1) - gammaln(n - dd + 1)
    pis = np.linspace(1e-4, 1 - 1e-4, 400)
    logp = base[None, :] + dd[None, :] * np.log(pis[:, None] / 2) + \
        (n - dd)[None, :] * np.log(1 - pis[:, None])
    return float(min(1.0, np.exp(logp).sum(axis=1).max()))


def wilson_effective(estimate: float, n_eff: float, level: float = 0.95,
                     continuity: bool | float = True, df: float | None = None) -> Interval:
    """Wilson's score interval for a proportion ``estimate`` at a real-valued effective
    sample size ``n_eff`` (a design other than simple random sampling: Kish's n for
    unequal weights, scaled by the variance a judge's predictions remove).

    ``continuity`` is the weight c of Wilson's continuity correction (Newcombe 1998,
    method 4, is c = 1; True is 1, False is 0): the lower limit is Wilson's for
    estimate - c / (2 n_eff), the upper Wilson's for estimate + c / (2 n_eff), and a
    limit is 0 (1) once its shifted estimate reaches 0 (1). ``df`` replaces the normal
    quantile z by Student's t on ``df`` degrees of freedom (the variance was estimated
    from df + 1 labels). Inside [0, 1]; a width at 0 and 1; always contains the
    estimate. With continuity=False, df=None and n_eff = n it is
    :func:`wilson_interval`."""
    if not 0.0 < level < 1.0:
        raise StatsError(f"confidence level {level} must lie in (0, 1)")
    p = min(max(float(estimate), 0.0), 1.0)
    n = max(float(n_eff), 1.0)
    if df is not None and df >= 1:
        from scipy.special import stdtrit  # what scipy.stats.t.ppf computes, without

        z = float(stdtrit(df, 0.5 + level / 2.0))  # importing scipy.stats (1.5 s)
    else:
        z = float(ndtri(0.5 + level / 2.0))
    delta = float(continuity) / (2 * n)

    def limits(x: float) -> tuple[float, float]:
        denom = 1.0 + z * z / n
        centre = (x + z * z / (2 * n)) / denom
        half = z * math.sqrt(x * (1 - x) / n + z * z / (4 * n * n)) / denom
        return centre - half, centre + half

    lo = 0.0 if p - delta <= 0 else limits(p - delta)[0]
    hi = 1.0 if p + delta >= 1 else limits(p + delta)[1]
    return Interval(max(0.0, min(lo, p)), min(1.0, max(hi, p)))
