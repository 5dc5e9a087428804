"""Edges of the numerical core the pinned values do not reach: every rejected input,
branches taken only by unusual inputs (probabilities given, embeddings, census
designs), each with the value it must give."""

from __future__ import annotations

import numpy as np
import pytest

from judgekit.core.errors import StatsError
from judgekit.methods.vbscore import distribution as d


@pytest.mark.parametrize("call, message", [
    (lambda: d.check_distribution(np.array([])), "empty"),
    (lambda: d.check_distribution(np.array([0.5, np.nan])), "NaN"),
    (lambda: d.check_distribution(np.array([1.2, -0.2])), "negative"),
    (lambda: d.check_distribution(np.array([0.5, 0.4])), "sum to 0.900000"),
    (lambda: d.softmax([]), "empty"),
    (lambda: d.softmax([1.0, float("nan")]), "NaN"),
    (lambda: d.softmax([1.0], 0.0), "temperature 0.0"),
    (lambda: d.softmax([1.0], -1.0), "temperature -1.0"),
    (lambda: d.violation_penalty([["a"]], {"a": -0.5}), ">= 0"),
    (lambda: d.combined(None, None), "need scores"),
    (lambda: d.truncate(np.array([0.5, 0.5]), tau=0.1, top_k=1), "choose one"),
    (lambda: d.truncate(np.array([0.5, 0.5]), top_k=0), "top_k 0"),
    (lambda: d.truncate(np.array([0.5, 0.5]), rho=0.0), "rho 0.0"),
    (lambda: d.truncate(np.array([0.5, 0.5]), rho=1.5), "rho 1.5"),
    (lambda: d.build([]), "empty"),
    (lambda: d.build([d.Candidate("a", prob=0.5), d.Candidate("b", prob=-0.1)]), "invalid"),
    (lambda: d.build([d.Candidate("a", prob=0.5), d.Candidate("b", prob=float("nan"))]),
     "invalid"),
    (lambda: d.build([d.Candidate("a", score=1.0)], truncation="tau"), "needs a value"),
])
def test_distribution_rejects(call, message):
    with pytest.raises(StatsError, match=message):
        call()


def test_check_distribution_tolerance_and_edges():
    assert d.check_distribution(np.array([0.5, 0.5 + 5e-7])).tolist() == [0.5, 0.5 + 5e-7]
    with pytest.raises(StatsError):
        d.check_distribution(np.array([0.5, 0.5 + 2e-6]))
    assert d.check_distribution(np.array([0.0, 1.0]), tol=0.0).tolist() == [0.0, 1.0]
    assert d.check_distribution(np.array([0.5, 0.6]), tol=0.2).tolist() == [0.5, 0.6]


def test_softmax_is_shift_invariant_and_tempered():
    p = d.softmax([1.0, 2.0, 3.0])
    assert p == pytest.approx(np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    assert d.softmax([1001.0, 1002.0, 1003.0]) == pytest.approx(p)
    assert d.softmax([1.0, 2.0, 3.0], 2.0) == pytest.approx(np.exp([0.5, 1, 1.5]) /
                                                            np.exp([0.5, 1, 1.5]).sum())


def test_penalty_combined_and_truncation_values():
    assert d.violation_penalty([["a", "b"], [], ["c"]], {"a": 0.5}).tolist() == [1.5, 0.0, 1.0]
    got = d.combined([1.0, 1.0], [["x"], []], 1.0, {"x": np.log(3.0)})
    assert got == pytest.approx([0.25, 0.75])
    got = d.combined([2.0, 0.0], None, 2.0)
    assert got == pytest.approx(np.exp([1.0, 0.0]) / np.exp([1.0, 0.0]).sum())
    p = np.array([0.1, 0.6, 0.3])
    keep, q, rule = d.truncate(p, tau=0.3)
    assert keep.tolist() == [1, 2] and q == pytest.approx([2 / 3, 1 / 3]) and rule == "tau=0.3"
    keep, q, rule = d.truncate(p, tau=0.9)  # nothing reaches tau: the top one is kept
    assert keep.tolist() == [1] and q.tolist() == [1.0]
    keep, q, _ = d.truncate(p, rho=0.9)
    assert keep.tolist() == [1, 2]
    keep, q, _ = d.truncate(p, rho=0.6)
    assert keep.tolist() == [1]
    keep, q, _ = d.truncate(p, rho=1.0)
    assert keep.tolist() == [1, 2, 0] and q == pytest.approx([0.6, 0.3, 0.1])
    keep, _, rule = d.truncate(p, top_k=2)
    assert keep.tolist() == [1, 2] and rule == "top_k=2"


def test_probabilities_given_are_normalised_and_merged_by_kb_id():
    c = [d.Candidate("Paris", prob=2.0, kb_id="Q90"), d.Candidate("paris (city)", prob=1.0,
                                                                  kb_id="Q90"),
         d.Candidate("Paris, Texas", prob=1.0)]
    dist = d.build(c)
    assert dist.labels == ["Paris", "Paris, Texas"]
    assert dist.probs == pytest.approx([0.75, 0.25])
    assert dist.members == [["Paris", "paris (city)"], ["Paris, Texas"]]
    zero = d.build([d.Candidate("a", prob=0.0), d.Candidate("b", prob=1.0)])
    assert zero.probs.tolist() == [0.0, 1.0]


def test_merge_names_a_group_by_its_most_probable_member():
    p = np.array([0.1, 0.5, 0.4])
    dist = d.dedup([d.Candidate("nyc"), d.Candidate("NYC!"), d.Candidate("Boston")], p)
    assert dist.labels == ["NYC!", "Boston"] and dist.probs == pytest.approx([0.6, 0.4])
    tie = d.dedup([d.Candidate("a b"), d.Candidate("A-B")], np.array([0.5, 0.5]))
    assert tie.labels == ["a b"]


def test_semantic_merge_joins_labels_above_the_threshold():
    vec = {"car": [1.0, 0.0], "automobile": [0.99, 0.141], "banana": [0.0, 1.0],
           "plantain": [0.2, 0.98]}

    def embed(labels):
        return np.array([vec[x] for x in labels])

    c = [d.Candidate(x) for x in ("car", "banana", "automobile", "plantain")]
    p = np.array([0.4, 0.3, 0.2, 0.1])
    dist = d.dedup(c, p, embed=embed, threshold=0.95)
    assert dist.labels == ["car", "banana"] and dist.probs == pytest.approx([0.6, 0.4])
    strict = d.dedup(c, p, embed=embed, threshold=0.999)
    assert strict.labels == ["car", "banana", "automobile", "plantain"]
    every = d.dedup(c, p, embed=embed, threshold=-1.0)
    assert every.labels == ["car"] and every.probs.tolist() == [1.0]
    exact = d.dedup(c[:1] + c[2:3], p[[0, 2]] / 0.6,
                    embed=lambda labels: np.array([[1.0, 0.0], [1.0, 0.0]]), threshold=1.0)
    assert exact.labels == ["car"]


def test_surface_normal_form_and_aliases():
    assert d.normalise_surface("  New-York_City!! ") == "new york city"
    assert d.normalise_surface("NYC", {"nyc": "New York City"}) == "new york city"
    assert d.normalise_surface("Ünïcode") == d.normalise_surface("Ünïcode")


# ---- on-demand estimators -----------------------------------------------------------
def test_mixing_weights_by_hand_and_rejections():
    from judgekit.methods.ondemand import estimators as e

    d1, d2 = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    w = e.weights_for([d1, d2], [2, 6])
    # heuristic: w_ij ∝ n_j <p_i, p_j>: overlaps 0.5, 0.25, 0.5
    assert np.allclose(w, [[0.5 * 2 / (1 + 1.5), 0.25 * 6 / 2.5],
                           [0.25 * 2 / (0.5 + 3), 0.5 * 6 / 3.5]])
    assert np.allclose(e.weights_for([d1, d2], [2, 6], "size"), [[0.25, 0.75], [0.25, 0.75]])
    assert np.allclose(e.weights_for([d1, d2], [2, 0], "uniform"), [[1, 0], [1, 0]])
    far = np.array([0.0, 0.0, 1.0])
    assert np.allclose(e.weights_for([d1, far], [3, 3], "uniform"), [[1, 0], [0, 1]])
    assert np.allclose(e.weights_for([d1], [0]), [[0.0]])
    with pytest.raises(StatsError, match="sample size -1"):
        e.MixingWeights().add(d1, -1)
    bad = e.MixingWeights("nope")  # type: ignore[arg-type]
    bad.add(d1, 1)
    with pytest.raises(StatsError, match="unknown weight scheme"):
        bad.matrix()


def test_joint_precision_and_variance_by_hand():
    from judgekit.methods.ondemand import estimators as e

    d = np.array([0.5, 0.5])
    w = e.weights_for([d, d], [2, 2])
    assert np.allclose(w, [[0.5, 0.5], [0.5, 0.5]])
    f = np.array([1.0, 0.0])
    s1, s2 = np.array([0, 1]), np.array([0, 0])
    assert e.joint_precision([d, d], [s1, s2], f, w) == pytest.approx([0.75, 0.75])
    assert e.joint_precision([d, d], [s1, np.array([], int)], f, w) == pytest.approx(
        [0.25, 0.25])
    # w^2 / n_j * Var_j(f): 0.25 / 2 * 0.5 + 0.25 / 2 * 0
    assert e.joint_precision_variance([d, d], [s1, s2], f, w) == pytest.approx(
        [0.0625, 0.0625])
    assert e.joint_precision_variance([d, d], [s1[:1], s2[:1]], f, w) == pytest.approx([0, 0])
    assert np.isnan(e.simple_precision(np.array([]))) and np.isnan(e.simple_recall([]))
    assert e.simple_precision(np.array([1.0, 0.0, 1.0])) == pytest.approx(2 / 3)
    assert e.product_variance(0.5, 0.01, 0.8, 0.02) == pytest.approx(
        0.25 * 0.02 + 0.64 * 0.01 + 0.0002)
    r = e.ratio_estimate(np.array([1.0, 2.0]), np.array([4.0, 0.0]))
    assert r[0] == 0.25 and np.isnan(r[1])


def test_pool_recall_and_conservative_variance_edges():
    from judgekit.methods.ondemand import estimators as e

    d = np.array([0.5, 0.5])
    f, p0 = np.array([1.0, 1.0]), np.array([0.5, 0.5])
    members = np.array([[1.0, 0.0], [1.0, 1.0]])
    got = e.pool_relative_recall([d, d], [np.array([0, 1]), np.array([0, 1])], f, p0, members)
    assert got == pytest.approx([0.5, 1.0])
    none = e.pool_relative_recall([d, d], [np.array([], int), np.array([], int)], f, p0,
                                  members)
    assert np.all(np.isnan(none))
    zero_f = e.pool_relative_recall([d, d], [np.array([0]), np.array([1])], np.zeros(2), p0,
                                    members)
    assert np.all(np.isnan(zero_f))
    w = e.weights_for([d, d], [2, 0])
    # nothing drawn for the new system yet: only the other system's observed variance
    v0 = e.conservative_variance(1, [d, d], [2, 0], [np.array([0, 1]), np.array([], int)],
                                 np.array([1.0, 0.0]))
    assert v0 == pytest.approx(w[1, 0] ** 2 * 0.5 / 2)
    v4 = e.conservative_variance(1, [d, d], [2, 4], [np.array([0, 1]), np.array([], int)],
                                 np.array([1.0, 0.0]))
    w4 = e.weights_for([d, d], [2, 4])
    assert v4 == pytest.approx(w4[1, 0] ** 2 * 0.5 / 2 + w4[1, 1] ** 2 / 4 * 1.0)


def test_adaptive_sample_size_brackets_the_exact_integer():
    from judgekit.methods.ondemand import estimators as e

    d1, d2 = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    f = np.array([1.0, 0.0, 1.0])
    samples = [np.array([0, 1, 0, 1]), np.array([], int)]
    n = e.adaptive_sample_size([d1, d2], [4, 0], samples, f, budget=50)
    target = 1 / 50

    def var(k):
        return e.conservative_variance(1, [d1, d2], [4, k], samples, f)

    assert var(n) <= target and (n == 1 or var(n - 1) > target)
    loose = e.adaptive_sample_size([d1, d2], [4, 0], samples, f, budget=50, rtol=0.5)
    assert loose >= n
    # a budget no sample size satisfies returns the budget itself
    assert e.adaptive_sample_size([d1, d2], [4, 0], [np.array([0, 1]), np.array([], int)],
                                  np.array([1.0, 0.0, 1.0]), budget=1) == 1


def test_percentile_expansion_only_from_three_samples():
    from scipy.stats import norm, t

    from judgekit.methods.ondemand.estimators import percentile

    boot = np.linspace(0.0, 1.0, 1001)
    assert percentile(boot, 0.9).tolist() == pytest.approx([0.05, 0.95])
    assert percentile(boot, 0.9, 2).tolist() == pytest.approx([0.05, 0.95])
    a = float(norm.cdf(-np.sqrt(3 / 2) * t.ppf(0.95, 2)))
    assert percentile(boot, 0.9, 3).tolist() == pytest.approx([a, 1 - a])
    assert percentile(boot, 0.8).tolist() == pytest.approx([0.1, 0.9])


# ---- prediction-powered inference: designs by hand ------------------------------------
def test_importance_inclusion_by_hand():
    from judgekit.stats.ppi import importance_inclusion

    # one weight dominates: capped at 1, the remaining mass spread over the others
    assert importance_inclusion(np.array([1.0, 1, 50, 1]), 2, 0.0) == pytest.approx(
        [1 / 3, 1 / 3, 1.0, 1 / 3])
    assert importance_inclusion(np.array([1.0, 1, 50, 1]), 2, 0.5) == pytest.approx(
        [0.5 / 3 + 0.25, 0.5 / 3 + 0.25, 0.75, 0.5 / 3 + 0.25])
    # zero weights get only the uniform share; capped items cannot exceed 1
    assert importance_inclusion(np.array([0.0, 0, 0, 5, 1, 0]), 3, 0.2) == pytest.approx(
        [0.1, 0.1, 0.1, 0.9, 0.9, 0.1])
    # more labels asked for than items: every item, and negative weights count as 0
    assert importance_inclusion(np.array([-1.0, 2.0]), 5, 0.0) == pytest.approx([0.0, 1.0])
    assert importance_inclusion(np.array([0.0, 0.0]), 1, 0.3) == pytest.approx([0.5, 0.5])
    assert importance_inclusion(np.array([1.0, 3.0]), 1, 0.0) == pytest.approx([0.25, 0.75])
    # weights summing to less than 1 are still proportional (not treated as empty)
    assert importance_inclusion(np.array([0.2, 0.6]), 1, 0.0) == pytest.approx([0.25, 0.75])


def test_ppi_mean_lambda_and_clipping_by_hand():
    from judgekit.stats.ppi import ppi_mean

    # a judge constant on the labelled items: Var(f) = 0, lambda = 0 (human labels alone)
    c = ppi_mean([1.0, 1, 0, 0], [1.0, 1], [1.0, 0])
    assert c.lam == 0.0 and c.estimate == 0.5 and c.human_only == 0.5
    # an anti-correlated judge: lambda clipped at 0
    c = ppi_mean([1.0, 0, 1, 0, 1, 0], [1.0, 0, 1, 0], [0.0, 1, 0, 1])
    assert c.lam == 0.0 and c.estimate == 0.5
    # a perfect judge on 20 labelled items: lambda = 1, estimate = mean over all items
    fl = [1.0, 0.0] * 10
    c = ppi_mean(fl + [1.0] * 20, fl, fl)
    assert c.lam == 1.0 and c.estimate == pytest.approx(30 / 40)
    # ... on 3 labelled items it is not trusted: the rectifier's variance with one
    # pseudo-disagreement each way (1/3) exceeds the labels' own (0.28), so lambda = 0
    c = ppi_mean([1.0, 0, 1, 1, 1, 1], [1.0, 0, 1], [1.0, 0, 1])
    assert c.lam == 0.0 and c.estimate == pytest.approx(2 / 3)
    # the judge scaled: Cov / Var > 1 is clipped to 1
    c = ppi_mean([0.5, 0.0] * 10 + [0.5, 0.5], [0.5, 0.0] * 10, [1.0, 0.0] * 10)
    assert c.lam == 1.0 and c.estimate == pytest.approx(6 / 22 + 0.25)
    assert 0.0 <= c.ci[0] <= c.estimate <= c.ci[1] <= 1.0
    # an estimate outside [0, 1] (a small sample) is reported clipped
    c = ppi_mean([1.0] * 8 + [0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0], lam=1.0)
    assert c.estimate == 1.0


def test_labels_for_halfwidth_by_hand():
    from judgekit.stats.ppi import Corrected

    c = Corrected(0.5, [0.4, 0.6], 0.5, [0.3, 0.7], 50, 10_000, 0.5, 0.9, "random")
    assert c.labels_for_halfwidth(0.05) == 200  # (0.1 / 0.05)^2 x 50
    assert c.labels_for_halfwidth(0.1) is None and c.labels_for_halfwidth(0.0) is None
    assert c.labels_for_halfwidth(0.03) == 556  # ceil(50 x 11.11)
    small = Corrected(0.5, [0.2, 0.8], 0.5, [0.2, 0.8], 10, 30, 0.0, 0.9, "random")
    assert small.labels_for_halfwidth(0.05) == 30  # never more than the items
