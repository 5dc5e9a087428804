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

__all__ = ["Selection", "calibrate_threshold"]


class Selection(NamedTuple):
    threshold: float | None  # keep items with confidence >= threshold (None: keep none)
    kept_labelled: int  # calibration items kept
    agreement: float | None  # on the kept calibration items
    tested: int  # thresholds tested before stopping


STEPS = 20  # candidate thresholds: the confidence quantiles keeping 5%, 10%, ... 100%


def calibrate_threshold(confidence: np.ndarray, agree: np.ndarray, target: float,
                        risk: float, min_kept: int = 30) -> Selection:
    """The lowest threshold fixed-sequence testing accepts (see the module docstring).
    ``confidence`` and ``agree`` (0/1: the judge matched people) are the labelled
    calibration items'. The candidates are the confidence quantiles keeping 5%, 10%,
    ..., 100% of the items (fixed before any label is read: the order stays valid),
    those keeping fewer than ``min_kept`` skipped (too few to reject anything)."""
    from scipy.stats import binom

    c = np.asarray(confidence, float)
    a = np.asarray(agree, float)
    if c.shape != a.shape or c.ndim != 1:
        raise StatsError("confidence and agreement are two equal lists")
    if not 0 < target < 1 or not 0 < risk < 1:
        raise StatsError("target agreement and risk lie in (0, 1)")
    chosen: Selection = Selection(None, 0, None, 0)
    tested = 0
    grid = np.quantile(c, 1 - np.arange(1, STEPS + 1) / STEPS, method="higher") \
        if c.size else np.array([])
    for t in np.unique(grid)[::-1]:
        keep = c >= t
        n = int(keep.sum())
        if n < min_kept:
            continue
        k = int(a[keep].sum())
        tested += 1
        p = float(binom.sf(k - 1, n, target))  # P(X >= k) under agreement = target
        if p > risk:
            break
        chosen = Selection(float(t), n, k / n, tested)
    return chosen._replace(tested=tested)
