"""Intervals and plans at small samples and extreme rates, pinned by hand: Wilson with a fractional
continuity correction and Student's t, annotator error (Rogan-Gladen), the flip rate
from repeated labels, bounded means that keep a width, agreement's posterior prior,
and label plans from the interval's own variance terms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student

from judgekit.analysis.paired import mean_row
from judgekit.stats.agreement import agreement
from judgekit.stats.bootstrap import bounded_mean_interval, pseudo_variance
from judgekit.stats.ppi import (
    Corrected,
    label_error_from_repeats,
    ppi_interval,
    ppi_mean,
    with_label_error,
)
from judgekit.stats.proportions import wilson_effective, wilson_interval


def _wilson(x: float, n: float, z: float) -> tuple[float, float]:
    d = 1 + z * z / n
    c = (x + z * z / (2 * n)) / d
    h = z * math.sqrt(x * (1 - x) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def test_wilson_with_half_a_continuity_correction_and_t_by_hand():
    z = float(student.ppf(0.95, 11))
    lo, _ = _wilson(0.3 - 0.5 / (2 * 12.5), 12.5, z)
    _, hi = _wilson(0.3 + 0.5 / (2 * 12.5), 12.5, z)
    assert wilson_effective(0.3, 12.5, 0.9, 0.5, df=11) == pytest.approx((lo, hi), abs=1e-12)
    # c = 0 and no df is Wilson's own interval; c = 1 is Newcombe's method 4
    assert wilson_effective(7 / 20, 20, 0.95, False).as_list() == \
        pytest.approx(wilson_interval(7, 20, 0.95).as_list(), abs=1e-12)
    z95 = 1.959963984540054
    assert wilson_effective(0.3, 40, 0.95)[0] == pytest.approx(
        _wilson(0.3 - 1 / 80, 40, z95)[0], abs=1e-12)


def test_a_continuity_shift_past_zero_gives_zero_not_a_limit_above_the_estimate():
    # the old closed form gave [0.027, 0.697] for 0.01 at n = 3: its own estimate outside
    lo, hi = wilson_effective(0.01, 3, 0.95)
    assert lo == 0.0 and hi == pytest.approx(_wilson(0.01 + 1 / 6, 3, 1.959963984540054)[1])
    lo, hi = wilson_effective(0.99, 3, 0.95)
    assert hi == 1.0 and lo <= 0.99


def test_label_error_maps_estimate_and_limits_rogan_gladen():
    c = Corrected(0.55, [0.45, 0.65], 0.5, [0.4, 0.6], 40, 400)
    got = with_label_error(c, 0.05)
    assert got.estimate == pytest.approx(0.5 / 0.9)
    assert got.ci == pytest.approx([0.4 / 0.9, 0.6 / 0.9])
    assert got.human_only_ci == pytest.approx([0.35 / 0.9, 0.55 / 0.9])
    assert got.label_error == 0.05 and got.label_error_ci is None
    # with an interval on the error each limit takes the more extreme mapping
    got = with_label_error(c, 0.05, [0.02, 0.1])
    assert got.ci[0] == pytest.approx(min((0.45 - 0.02) / 0.96, (0.45 - 0.1) / 0.8))
    assert got.ci[1] == pytest.approx(max((0.65 - 0.02) / 0.96, (0.65 - 0.1) / 0.8))
    # a difference of two rates: the e cancels, only the scale remains
    d = Corrected(0.09, [-0.01, 0.19], 0.1, [-0.05, 0.25], 30, 300, kind="difference")
    got = with_label_error(d, 0.05, difference=True)
    assert got.estimate == pytest.approx(0.1) and got.ci == pytest.approx([-0.01 / 0.9, 0.19 / 0.9])
    with pytest.raises(Exception, match="must lie in"):
        with_label_error(c, 0.5)


def test_flip_rate_from_repeated_labels():
    a = np.zeros(100)
    b = np.zeros(100)
    b[:18] = 1  # 18% disagree: 2 e (1 - e) = 0.18 gives e = 0.1
    e, ci, n = label_error_from_repeats(a, b, 0.9)
    assert e == pytest.approx(0.1) and n == 100
    lo, hi = wilson_interval(18, 100, 0.9)
    assert ci == pytest.approx([(1 - math.sqrt(1 - 2 * lo)) / 2, (1 - math.sqrt(1 - 2 * hi)) / 2])


def test_noisy_labels_cover_once_corrected():
    """Labels 5% flipped: the uncorrected rate misses; corrected for the stated rate it
    covers (a smaller version of benchmarks/coverage.py's noisy-label design)."""
    rng = np.random.default_rng(4)
    raw = fixed = 0
    reps, p = 300, 0.2
    for _ in range(reps):
        y = (rng.random(2000) < p).astype(float)
        f = np.where(rng.random(2000) < 0.9, y, 1 - y)
        noisy = np.where(rng.random(2000) < 0.05, 1 - y, y)
        lab = rng.choice(2000, 400, replace=False)
        c = ppi_mean(f, f[lab], noisy[lab], level=0.9)
        raw += c.ci[0] <= p <= c.ci[1]
        g = with_label_error(c, 0.05)
        fixed += g.ci[0] <= p <= g.ci[1]
    assert raw / reps < 0.6 and fixed / reps >= 0.86


def test_bounded_mean_keeps_a_width_by_hand():
    # four agreeing queries at VB 1.0, VB in [-0.25, 1]: weights 4 + 1/2 + 1/2
    m = (4 + 0.5 * -0.25 + 0.5 * 1.0) / 5
    var = (4 * (1 - m) ** 2 + 0.5 * (-0.25 - m) ** 2 + 0.5 * (1 - m) ** 2) / 4
    assert pseudo_variance(np.ones(4), -0.25, 1.0) == pytest.approx(var)
    half = float(student.ppf(0.975, 3)) * math.sqrt(var / 4)
    assert bounded_mean_interval(np.ones(4), -0.25, 1.0, 0.95) == pytest.approx((1 - half, 1.0))
    assert 1 - half == pytest.approx(0.33286, abs=1e-5)
    # two identical runs over 100 queries: zero difference, +-t_99 * 0.01
    row = mean_row("vb", [(0.4, 0.4)] * 100, 0.95, 0)
    h = float(student.ppf(0.975, 99)) * 0.01
    assert row.difference == 0.0 and row.difference_ci == pytest.approx([-h, h])


def test_agreement_posterior_uses_its_stated_prior():
    j = np.array([0] * 3 + [0] * 1 + [1] * 1 + [1] * 45)
    h = np.array([0] * 3 + [1] * 1 + [0] * 1 + [1] * 45)
    ag = agreement(j, h, seed=3, resamples=4000, level=0.95)
    # the hull of the central intervals under two priors, drawn in turn from one stream:
    # Jeffreys' 1/2 on every cell, then 1/k on agreement and 1/(2k(k-1)) on disagreement
    rng = np.random.default_rng(3)
    kappa, ac1 = [], []
    for prior in (np.array([0.5, 0.5, 0.5, 0.5]), np.array([0.5, 0.25, 0.25, 0.5])):
        p = rng.dirichlet(np.array([3, 1, 1, 45]) + prior, 4000)
        po, r0, c0 = p[:, 0] + p[:, 3], p[:, 0] + p[:, 1], p[:, 0] + p[:, 2]
        pe = r0 * c0 + (1 - r0) * (1 - c0)
        kappa.append(np.quantile((po - pe) / (1 - pe), [0.025, 0.975]))
        m0 = (r0 + c0) / 2
        ac1.append(np.quantile((po - 2 * m0 * (1 - m0)) / (1 - 2 * m0 * (1 - m0)),
                               [0.025, 0.975]))
    for got, parts in ((ag.cis["kappa"], kappa), (ag.cis["ac"], ac1)):
        want = [min(parts[0][0], parts[1][0]), max(parts[0][1], parts[1][1])]
        assert got == pytest.approx(want, abs=1e-12)
        assert want[0] < max(parts[0][0], parts[1][0])  # the hull is wider than either
    assert ag.note is None
    # every item agrees: still a width; few items: a note
    same = agreement([0, 1] * 15, [0, 1] * 15, seed=1)
    assert same.cis["kappa"][0] < 0.9 and same.cis["kappa"][1] <= 1.0
    small = agreement([0, 1, 1, 0, 1] * 3, [0, 1, 0, 0, 1] * 3, seed=1)
    assert small.note and small.note.startswith("only 15 items")


def test_label_plan_is_the_smallest_n_whose_interval_reaches_the_target():
    rng = np.random.default_rng(5)
    y = (rng.random(3000) < 0.3).astype(float)
    f = np.where(rng.random(3000) < 0.9, y, 1 - y)
    lab = rng.choice(3000, 60, replace=False)
    c = ppi_mean(f, f[lab], y[lab], level=0.9)
    need = c.labels_for_halfwidth(0.03)
    assert need is not None

    def half(n: int) -> float:
        lo, hi = ppi_interval(c.estimate, c.label_var, c.residual_var, n, 3000, 0.9)
        return (hi - lo) / 2

    assert half(need) <= 0.03 < half(need - 1)
    assert c.labels_for_halfwidth(0.5) is None
    # out of reach (the Var(y) / N term alone is wider): every item
    assert c.labels_for_halfwidth(0.001) == 3000
