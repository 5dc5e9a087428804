"""Confidence sequences for the mean of bounded observations: intervals that hold at
every sample size at once, so a probe may stop as soon as its decisions are settled
and still keep its error rates (a fixed-n interval looked at after every batch would
not: its false-positive rate grows with the number of looks).

The sequence is the hedged betting confidence sequence of Waudby-Smith and Ramdas
(2024, JRSS-B 86:1, "Estimating means of bounded random variables by betting",
Theorem 3 with the predictable plug-in bets of their eq. 26): for x_i in [0, 1] and
each candidate mean m, two capital processes

    K+_t(m) = prod_i (1 + l+_i(m) (x_i - m)),   K-_t(m) = prod_i (1 - l-_i(m) (x_i - m)),

with bets l_i = sqrt(2 log(2/alpha) / (s2_{i-1} i log(i + 1))) truncated at c/m and
c/(1 - m) (c = 1/2), s2 a running variance estimate. m stays in the set while
max(K+, K-)/2 < 1/alpha; by Ville's inequality the true mean leaves it with
probability at most alpha over all t. The running intersection is reported."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from judgekit.core.errors import StatsError

GRID = 2001


class Sequence_(NamedTuple):
    lo: np.ndarray  # running-intersection lower limit after each observation
    hi: np.ndarray
    p_value: np.ndarray  # anytime-valid p-value of "mean = null" after each observation


def betting_cs(x: ArrayLike, level: float = 0.95, null: float = 0.5, c: float = 0.5,
               grid: int = GRID) -> Sequence_:
    """The hedged betting confidence sequence of the mean of ``x`` (values in [0, 1]),
    after each observation, on a grid of candidate means; and the anytime-valid
    p-value of ``null`` (1 / the largest hedged capital so far, capped at 1)."""
    v = np.asarray(x, float)
    if v.ndim != 1 or v.size == 0:
        raise StatsError("a confidence sequence needs a non-empty list of observations")
    if np.any((v < 0) | (v > 1)):
        raise StatsError("confidence sequence observations must lie in [0, 1]")
    if not 0 < level < 1:
        raise StatsError(f"confidence level {level} must lie in (0, 1)")
    alpha = 1 - level
    t = np.arange(1, v.size + 1, dtype=float)
    mu = (0.5 + np.cumsum(v)) / (t + 1)
    s2 = (0.25 + np.cumsum((v - mu) ** 2)) / (t + 1)
    s2_prev = np.concatenate([[0.25], s2[:-1]])
    lam = np.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * np.log(t + 1)))
    m = np.concatenate([np.linspace(0, 1, grid), [null]])
    with np.errstate(divide="ignore"):
        cap_up = np.minimum(lam[:, None], c / m[None, :])
        cap_dn = np.minimum(lam[:, None], c / (1 - m[None, :]))
    dx = v[:, None] - m[None, :]
    log_up = np.cumsum(np.log1p(cap_up * dx), axis=0)
    log_dn = np.cumsum(np.log1p(-cap_dn * dx), axis=0)
    log_k = np.maximum(log_up, log_dn) - math.log(2)
    inside = log_k[:, :-1] < math.log(1 / alpha)
    grid_m = m[:-1]
    lo = np.where(inside.any(1), grid_m[np.argmax(inside, axis=1)], np.nan)
    hi = np.where(inside.any(1), grid_m[grid - 1 - np.argmax(inside[:, ::-1], axis=1)],
                  np.nan)
    # one grid step of slack outward, so the grid never cuts into the set
    step = 1.0 / (grid - 1)
    lo = np.maximum.accumulate(np.clip(np.nan_to_num(lo, nan=1.0) - step, 0, 1))
    hi = np.minimum.accumulate(np.clip(np.nan_to_num(hi, nan=0.0) + step, 0, 1))
    hi = np.maximum(hi, lo)
    p = np.minimum(1.0, np.exp(-np.maximum.accumulate(log_k[:, -1])))
    return Sequence_(lo, hi, p)


class Settled(NamedTuple):
    decision: str  # "shown" | "ruled out" | "open"
    ci: list[float]  # the confidence sequence for the difference, in [-1, 1]
    p_value: float
    n: int


def paired_difference_cs(d: ArrayLike, level: float = 0.95, margin: float = 0.05,
                         greater: bool = False) -> Settled:
    """A paired difference (per-pair values in {-1, 0, 1}, e.g. event under the
    transform minus event as given) through :func:`betting_cs` on (d + 1) / 2.
    Two-sided question: "shown" when the sequence excludes 0, "ruled out" when it lies
    inside (-margin, margin). ``greater`` (is the difference above 0, e.g. flips above
    the placebo): "shown" when the sequence lies above 0, "ruled out" when it lies below
    margin. "open" otherwise."""
    x = (np.asarray(d, float) + 1) / 2
    s = betting_cs(x, level)
    lo, hi = float(2 * s.lo[-1] - 1), float(2 * s.hi[-1] - 1)
    if lo > 0 or (hi < 0 and not greater):
        decision = "shown"
    elif hi < margin and (greater or -margin < lo):
        decision = "ruled out"
    else:
        decision = "open"
    return Settled(decision, [lo, hi], float(s.p_value[-1]), int(x.size))
