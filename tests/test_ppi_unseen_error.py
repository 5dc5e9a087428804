"""ppi_mean when the labelled sample shows no judge-human disagreement: one unseen
disagreement is counted (as ppi_weighted does), so the interval does not collapse onto
the judge's rate; pinned against the formula and checked by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from judgekit.stats.ppi import ppi_mean
from judgekit.stats.proportions import wilson_effective


def _case():
    y = np.array([1.0] * 12 + [0.0] * 28)  # 40 labelled, all agreeing with the judge
    f_all = np.concatenate([y, np.array([1.0] * 150 + [0.0] * 210)])  # N = 400
    return f_all, y.copy(), y


def test_no_disagreement_counts_one_unseen_error():
    f_all, fl, y = _case()
    c = ppi_mean(f_all, fl, y, level=0.9)
    n, big_n = y.size, f_all.size
    s_y = float(y.var(ddof=1))
    lam = c.lam  # Cov(f, y) / Var(f) on identical vectors: 1 up to rounding
    rect = y - lam * fl
    var = (1 / n - 1 / big_n) * (float(rect.var(ddof=1)) + lam**2 / n) + s_y / big_n
    est = float(lam * f_all.mean() + rect.mean())
    expected = wilson_effective(est, n * (s_y / n / var), 0.9, 0.5, df=n - 1).as_list()
    assert lam == pytest.approx(1.0) and c.estimate == pytest.approx(f_all.mean())
    assert c.ci == pytest.approx(expected, abs=1e-12)
    # without the unseen error the variance would be s_y / N alone: a narrower interval
    collapsed = wilson_effective(est, n * (s_y / n / (s_y / big_n)), 0.9, 0.5,
                                 df=n - 1).as_list()
    assert c.ci[1] - c.ci[0] > collapsed[1] - collapsed[0] + 0.01


def test_coverage_when_the_judges_errors_all_go_one_way():
    """The reported case: 17 false passes in 400 answers, 50 labels; about 10% of draws
    see no disagreement. Those draws covered 0 times; now the interval covers them and
    the corrected rate covers at least its nominal 0.90 overall."""
    rng = np.random.default_rng(2)
    hits = cond_hits = cond_n = 0
    reps = 600
    for _ in range(reps):
        y = (rng.random(400) < 0.3).astype(float)
        f = y.copy()
        f[rng.choice(np.flatnonzero(y == 0), 17, replace=False)] = 1.0
        lab = rng.choice(400, 50, replace=False)
        c = ppi_mean(f, f[lab], y[lab], level=0.9)
        hit = c.ci[0] <= y.mean() <= c.ci[1]
        hits += hit
        if np.all(f[lab] == y[lab]):
            cond_hits += hit
            cond_n += 1
    assert cond_n > 20 and cond_hits / cond_n >= 0.9
    assert hits / reps >= 0.9
