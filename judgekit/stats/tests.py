"""Hypothesis tests and concentration bounds used across methods."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from judgekit.core.errors import StatsError


class PairedTest(NamedTuple):
    t: float | None
    p_value: float | None
    n: int
    note: str


def paired_t_test(a: np.ndarray, b: np.ndarray) -> PairedTest:
    """Two-sided paired t-test of a against b (e.g. VB against ES across queries).

    When every difference is identical the statistic is undefined; p is None
    and the note says why (e.g. the ceiling effect VB = ES = 1 on ARC).
    """
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.ndim != 1:
        raise StatsError("paired test needs two 1-D arrays of equal length")
    d = a - b
    if d.size < 2:
        return PairedTest(None, None, int(d.size), "fewer than two pairs")
    if np.allclose(d, d[0]):
        return PairedTest(None, None, int(d.size), "all differences equal: t undefined")
    res = stats.ttest_rel(a, b)
    return PairedTest(float(res.statistic), float(res.pvalue), int(d.size), "")


def hoeffding_bound(replicas: int, delta: float) -> float:
    """P(|mean - E| >= delta) <= 2 exp(-2 B delta^2) for scores in [0, 1].

    Can exceed 1 (vacuous); the paper's printed 0.67 for B=20, delta=0.1 is wrong.
    """
    if replicas < 1 or delta <= 0:
        raise StatsError("Hoeffding needs B >= 1 and delta > 0")
    return 2.0 * math.exp(-2.0 * replicas * delta**2)


def replicas_needed(delta: float, p: float) -> int:
    """Smallest B with 2 exp(-2 B delta^2) <= p: B >= ln(2/p) / (2 delta^2)."""
    if delta <= 0 or not 0 < p < 1:
        raise StatsError("need delta > 0 and p in (0, 1)")
    return math.ceil(math.log(2.0 / p) / (2.0 * delta**2) - 1e-12)
