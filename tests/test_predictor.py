"""The labelling predictor fitted by group (judgekit.stats.predictor): when the features
take few distinct rows, summing the labels by row gives the fit item by item gives (the
same likelihood), for every model, with and without its recalibration, and only then."""

from __future__ import annotations

import numpy as np
import pytest

from judgekit.stats import active, predictor
from judgekit.stats.predictor import Design, Population


def _pop(n: int, rng: np.random.Generator, score: str, systems: int = 3,
         unstable: bool = True) -> Population:
    verdict = (rng.random(n) < 0.6).astype(np.int64)
    s = None
    if score == "likert":  # a 1-5 score as a probability: five values
        s = (rng.integers(1, 6, n) - 0.5) / 5
    elif score == "continuous":
        s = rng.random(n)
    system = rng.integers(0, systems, n).astype(np.int64)
    names = tuple("ABCDE"[:systems]) if systems > 1 else ("",)
    flags = (rng.random(n) < 0.1).astype(np.int64) if unstable else None
    return Population(verdict, s, system, names, flags)


def _labels(pop: Population, rng: np.random.Generator, k: int, frac: bool
            ) -> tuple[np.ndarray, np.ndarray]:
    at = np.sort(rng.choice(pop.n, k, replace=False))
    p = 0.15 + 0.7 * pop.verdict[at] - 0.1 * (pop.system[at] == 1)
    y = (rng.random(k) < p).astype(float)
    if frac:  # two annotators' mean on some items
        y[::7] = 0.5
    return at, y


@pytest.mark.parametrize("score", ["none", "likert"])
@pytest.mark.parametrize("model", active.MODELS)
@pytest.mark.parametrize("k", [6, 40, 900])
def test_grouped_fit_is_the_fit_item_by_item(score, model, k):
    rng = np.random.default_rng([k, len(model), len(score)])
    pop = _pop(20_000, rng, score)
    grouped = predictor.design_of(pop)
    assert grouped.code is not None and grouped.x.shape[0] <= predictor.GROUPS
    every = Design(predictor._features(pop))  # the same features, one row per item
    at, y = _labels(pop, rng, k, frac=k == 900)
    a = active.fit_predictor(pop, at, y, model=model, features=grouped)
    b = active.fit_predictor(pop, at, y, model=model, features=every)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    rows = rng.choice(pop.n, 50)
    np.testing.assert_array_equal(
        active.fit_predictor(pop, at, y, model=model, features=grouped, rows=rows), a[rows])
    if k >= 10 and model != "flat":  # the recalibration moved it off the logistic curve
        assert float(np.abs(a - 0.5).max()) > 0.05


def test_many_distinct_rows_are_fitted_item_by_item():
    rng = np.random.default_rng(5)
    pop = _pop(5_000, rng, "continuous")
    assert predictor.design_of(pop).code is None  # 5,000 scores: no groups
    small = _pop(40, rng, "none", systems=2, unstable=False)  # 4 rows of 40 items: n / 4
    assert predictor.design_of(small).code is None or \
        predictor.design_of(small).x.shape[0] <= 10


def test_groups_hold_items_of_one_feature_row_and_every_kind():
    rng = np.random.default_rng(8)
    pop = _pop(3_000, rng, "likert")
    d = predictor.design_of(pop)
    full = predictor._features(pop)
    assert d.code is not None and d.rep is not None
    np.testing.assert_array_equal(full, d.x[d.code])  # each item's row is its group's
    assert d.x.shape[1] == full.shape[1]  # no column lost (unstable, systems, score)
    assert len({tuple(r) for r in d.x}) == d.x.shape[0]  # one group per distinct row
    assert predictor.design_of(pop) is d  # kept for the population


def test_labels_sum_by_group_as_the_likelihood_needs():
    # two groups, verdict 0 and 1, labelled at rates 0.25 and 0.75: the ridge logistic
    # fit shrinks the slope, and the least-squares recalibration on top (two distinct
    # predictions: a line through both) gives back each group's own rate
    n = 4_000
    verdict = np.repeat([0, 1], n // 2)
    pop = Population(verdict, None, np.zeros(n, np.int64), ("",), None)
    at = np.arange(n)
    y = np.r_[np.tile([1.0, 0, 0, 0], n // 8), np.tile([1.0, 1, 1, 0], n // 8)]
    m = active.fit_predictor(pop, at, y, model="verdict")
    assert predictor.design_of(pop).x.shape[0] == 2
    np.testing.assert_allclose([m[0], m[-1]], [0.25, 0.75], rtol=0, atol=1e-12)
    flat = active.fit_predictor(pop, at, y, model="flat")  # no feature: the mean
    np.testing.assert_allclose(flat, 0.5, rtol=0, atol=1e-9)
    few = active.fit_predictor(pop, np.array([0, 1, n - 1]), np.array([0.0, 0.0, 1.0]),
                               model="verdict")  # under 10 labels: the curve alone
    assert 0.0 < few[0] < few[-1] < 1.0  # the slope keeps its sign (the ridge shrinks it)
