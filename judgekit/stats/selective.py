"""Selective evaluation with a guarantee: keep the items a judge is confident on, send
the rest to people, so that agreement with people on the kept items is at least the
target with probability at least 1 - risk.

Calibration by fixed-sequence testing (Jung, Brahman & Choi, "Trust or Escalate: LLM
Judges with Provable Guarantees for Human Agreement", ICLR 2025, section 3): on a
labelled random sample, the candidate thresholds are tested from the most confident
down; at threshold t the null "agreement on items with confidence >= t is below the
target" is rejected when the exact binomial p-value P(Bin(n_t, target) >= k_t) is at
most ``risk``; testing stops at the first threshold not rejected, and the last
rejected one is chosen. Fixed-sequence testing controls the family-wise error at
``risk`` without any correction (each test is at the full level, in an order set in
advance), so the chosen threshold's agreement falls below the target with probability
at most ``risk`` (for items drawn like the calibration sample).

Pure numpy/scipy; no I/O.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from judgekit.core.errors import StatsError

__all__ = ["Selection", "calibrate_threshold", "fixed_sequence", "quantile_grid"]


class Selection(NamedTuple):
    threshold: float | None  # keep items with confidence >= threshold (None: keep none)
    kept_labelled: int  # calibration items kept
    agreement: float | None  # on the kept calibration items
    tested: int  # thresholds tested before stopping


STEPS = 20  # candidate thresholds: the confidence quantiles keeping 5%, 10%, ... 100%


def quantile_grid(confidence: np.ndarray) -> np.ndarray:
    """The candidate thresholds, most conservative first: the confidence quantiles
    keeping 5%, 10%, ..., 100% of the items (read from confidences alone, never from a
    label, so the order is fixed in advance)."""
    c = np.asarray(confidence, float)
    if not c.size:
        return np.array([])
    return np.quantile(c, 1 - np.arange(1, STEPS + 1) / STEPS, method="higher")


def fixed_sequence(counts: list[tuple[int, int]], target: float, risk: float,
                   min_kept: int = 30) -> tuple[int | None, int]:
    """Fixed-sequence testing of "agreement below ``target``" over candidates in an order
    set in advance: ``counts`` holds each candidate's (labelled items kept, of them
    agreeing with people). Each test is the exact binomial one at the full ``risk``;
    candidates keeping fewer than ``min_kept``, or too few to reject even if every one
    agreed (target ** n > risk), are skipped: a skip reads no label, so the order stays
    fixed in advance; testing stops at the first not rejected. Returns (the index of the
    last candidate rejected, or None; the number tested). The family-wise error is at
    most ``risk``, so the chosen candidate's agreement lies below the target with
    probability at most ``risk``."""
    from scipy.stats import binom

    if not 0 < target < 1 or not 0 < risk < 1:
        raise StatsError("target agreement and risk lie in (0, 1)")
    chosen, tested = None, 0
    for i, (n, k) in enumerate(counts):
        if n < min_kept or target ** n > risk:
            continue
        tested += 1
        if float(binom.sf(k - 1, n, target)) > risk:  # P(X >= k) at agreement = target
            break
        chosen = i
    return chosen, tested


def calibrate_threshold(confidence: np.ndarray, agree: np.ndarray, target: float,
                        risk: float, min_kept: int = 30) -> Selection:
    """The lowest threshold fixed-sequence testing accepts (see the module docstring).
    ``confidence`` and ``agree`` (0/1: the judge matched people) are the labelled
    calibration items'. The candidates are :func:`quantile_grid`'s, those keeping fewer
    than ``min_kept`` skipped (too few to reject anything)."""
    c = np.asarray(confidence, float)
    a = np.asarray(agree, float)
    if c.shape != a.shape or c.ndim != 1:
        raise StatsError("confidence and agreement are two equal lists")
    grid = np.unique(quantile_grid(c))[::-1]
    counts = [(int((c >= t).sum()), int(a[c >= t].sum())) for t in grid]
    at, tested = fixed_sequence(counts, target, risk, min_kept)
    if at is None:
        return Selection(None, 0, None, tested)
    n, k = counts[at]
    return Selection(float(grid[at]), n, k / n, tested)
