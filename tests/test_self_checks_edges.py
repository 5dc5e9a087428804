"""Edges of the self-check statistics found by mutation testing: defaults, input checks,
boundaries and the probe-level helpers, each pinned to a value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgekit.core.errors import StatsError
from judgekit.methods.probe.bias import (
    EFFECTS,
    family_of,
    injection,
    length_preference,
    plan,
    self_preference,
)
from judgekit.methods.probe.pairs import Pair
from judgekit.methods.vbscore.selfcheck import TagCheck, tagger_check
from judgekit.stats import preference as pf
from judgekit.stats.proportions import wilson_interval

Z95, Z80 = 1.959963984540054, 1.2815515655446004


def test_defaults_are_95_percent():
    assert pf.sign_test(7, 2).ci == list(wilson_interval(7, 9, 0.95))
    assert pf.newcombe_unpaired(3, 7, 5, 9) == pf.newcombe_unpaired(3, 7, 5, 9, 0.95)
    assert pf.newcombe_unpaired(3, 7, 5, 9, 0.8) != pf.newcombe_unpaired(3, 7, 5, 9)
    checks = [TagCheck(["0", "1", "none"], [1, 2, 0], ["0", "1", "none"], None)] * 6
    assert tagger_check(checks)["decision"] == "position"  # p = 2 / 64 < 0.05
    # five of five: the sign test's p = 0.0625 is not below 0.05, but the share of
    # positional calls has its Wilson interval [0.57, 1] above 10%
    assert tagger_check(checks[:5])["decision"] == "partly position"
    content = TagCheck(["0", "1", "none"], [1, 2, 0], ["1", "none", "0"], None)
    # one positional call of eight: share 1/8, interval [0.02, 0.47], sign test p = 0.07
    mixed = tagger_check(checks[:1] + [content] * 7)
    assert mixed["decision"] == "undecided"
    assert mixed["position_share"]["ci"] == pytest.approx(list(wilson_interval(1, 8, 0.95)))


def test_input_checks():
    for args in ((-1, 2), (2, -1)):
        with pytest.raises(StatsError, match=">= 0"):
            pf.sign_test(*args)
    assert pf.sign_test(0, 0) == (None, None, 1.0, 0, 0)
    assert pf.sign_test(0, 1).share == 0.0
    for args in ((1, 0, 1, 1), (1, 1, 1, 0)):
        with pytest.raises(StatsError, match="at least one"):
            pf.newcombe_unpaired(*args)
    assert pf.newcombe_unpaired(1, 1, 0, 1, 0.95)[1] == 1.0
    for kw in ({"effect": 0.0}, {"effect": 1.0}, {"power": 0.0}, {"power": 1.0},
               {"level": 0.0}, {"level": 1.0}):
        args = {"discordant": 0.5, "effect": 0.1, "power": 0.8, "level": 0.95, **kw}
        with pytest.raises(StatsError, match="lie in"):
            pf.paired_n_needed(**args)
    assert pf.paired_n_needed(1.01, 0.1) is None
    assert pf.paired_n_needed(0.1, 0.1) == math.ceil((Z95 * math.sqrt(0.1) + 0.8416212335729143
                                                      * math.sqrt(0.09)) ** 2 / 0.01)
    for kw in ({"halfwidth": 0.0}, {"halfwidth": 1.0}, {"level": 0.0}, {"level": 1.0}):
        with pytest.raises(StatsError, match="lie in"):
            pf.rate_n_needed(**{"rate": 0.5, "halfwidth": 0.1, "level": 0.95, **kw})
    assert pf.rate_n_needed(0.5, 0.1, 0.8) == math.ceil(Z80 ** 2 * 0.25 / 0.01) == 42


def test_newcombe_unpaired_stays_in_range():
    assert pf.newcombe_unpaired(0, 5, 5, 5, 0.99)[0] == -1.0
    assert pf.newcombe_unpaired(5, 5, 0, 5, 0.99)[1] == 1.0


def test_clustered_rate_with_two_clusters_has_a_design_effect():
    from judgekit.stats.proportions import wilson_effective

    r = pf.clustered_rate([[True] * 5, [False] * 5], 0.95)
    p, n = 0.5, 10.0
    resid = np.array([5 - 2.5, 0 - 2.5])
    deff = 2 * float(np.sum(resid ** 2)) / n ** 2 / (p * (1 - p) / n)
    assert deff == pytest.approx(10.0)
    assert r.ci == pytest.approx(list(wilson_effective(p, n / deff, 0.95)))
    with pytest.raises(StatsError, match="non-empty cluster"):
        pf.clustered_rate([[], []])


def test_feature_preference_without_both_groups():
    p = pf.feature_preference(["a", "a"], ["b", "b"], ["a", "b"])
    assert p == (None, None, 1.0, 2, None, 2, None, 0, 1)
    with pytest.raises(StatsError, match="one entry per pair"):
        pf.feature_preference(["a"], ["a", "b"], ["a"])


def test_logistic_slope_needs_more_pairs_than_columns():
    assert pf.logistic_slope([0, 1, 1], [0.1, 0.2, 0.3], [[1.0, -1.0, 0.0]]).slope is None
    assert pf.logistic_slope([0, 1, 1, 0], [0.5] * 4).slope is None  # x does not vary
    s = pf.logistic_slope([0, 1, 0, 1, 1], [0.1, 0.2, 0.3, 0.4, 0.9])
    assert s.slope is not None and s.n == 5


def _pairs(n, **kw):
    return [Pair(f"p{i}", "q", "short" if i % 2 else "a much longer answer here",
                 "a much longer answer here" if i % 2 else "short", **kw) for i in range(n)]


def test_length_preference_without_a_reference_is_descriptive():
    pairs = _pairs(10)
    chosen = ["b" if i % 2 else "a" for i in range(10)]  # always the longer one
    r = length_preference(pairs, chosen, 0.95)
    assert r["preference"] == 0.5 and r["n"] == 10 and r["p_value"] is None
    lo, hi = wilson_interval(10, 10, 0.95)
    assert r["ci"] == pytest.approx([lo - 0.5, hi - 0.5])
    assert r["verdict"] == "not controlled: descriptive only"
    assert r["regression"]["slope"] is None  # the length predicts every pick
    # answers within 10% of each other carry no feature
    same = [Pair("x", "q", "a" * 20, "b" * 21, "a")]
    assert length_preference(same, ["a"], 0.95) is None
    assert length_preference(_pairs(4), [None] * 4, 0.95) is None


def test_length_preference_threshold_and_regression_columns():
    a, b = "x" * 110, "y" * 100  # exactly 10% longer: the feature holds
    pairs = [Pair(f"p{i}", "q", a, b, "a" if i % 3 else "b") for i in range(12)]
    chosen = ["a" if i % 4 else "b" for i in range(12)]
    r = length_preference(pairs, chosen, 0.95)
    assert r["n"] == 12 and r["reference"] == "known correct answer on 12 pairs"
    reg = r["regression"]
    assert reg["controls"] == "quality reference" and reg["n"] == 12
    assert reg["slope"] is None  # x is the same on every pair: no slope to fit


def test_self_preference_reference_note_and_shown_rule():
    pairs = [Pair(f"p{i}", "q", "x", "y", None, "a" if i % 2 else "b",
                  model_a="openai/gpt-4o", model_b="anthropic/claude")
             for i in range(20)]
    for p in pairs[:5]:
        p.reference = "a"
    chosen = ["a"] * 20  # always its own (A is gpt)
    r = self_preference(pairs, chosen, "gpt", 0.95)
    assert r["reference"] == "second judge on 5 pairs, human preference on 15 pairs"
    assert r["preference"] == 1.0 and r["verdict"] == "preference shown"
    assert r["pairs_with_one_own"] == 20
    weak = self_preference(pairs[:4], ["a"] * 4, "gpt", 0.95)
    assert weak["verdict"] == "no preference shown"  # too few pairs for the test
    assert self_preference([Pair("p", "q", "x", "y")], ["a"], "gpt", 0.95) is None
    assert family_of("openai/o1-mini") == "o" and family_of("local/gemma-3-270m") == "gemma"
    assert family_of("anthropic/123") == "123"


def test_injection_phrasings_cycle():
    assert injection("en", "a", 4) == injection("en", "a", 1)
    assert injection("en", "pair", 2, ["x {verdict}", "y"]) == "x this answer"
    assert injection("en", "a", 3, ["x {verdict}", "y {verdict}"]) == "y 1"


def test_plan_rows_by_hand():
    res = {"level": 0.95, "noise_floor": {"rate": 0.1},
           "transforms": [{"name": "t", "question": "consistency", "n": 30}],
           "biases": [{"name": "swap", "question": "direction", "n": 30, "discordant": 0.2,
                       "scale": 0.5}]}
    p = plan(res, 0.8)
    assert p["effects"] == list(EFFECTS) == [0.05, 0.1, 0.2]
    t, s = p["rows"]
    assert t["source"] == "noise floor" and t["discordant"] == pytest.approx(0.2)
    assert t["pairs_needed"]["0.1"] == pf.paired_n_needed(0.3, 0.1, 0.8, 0.95)
    # swap reports half the paired difference: 0.1 reported = 0.2 paired
    assert s["pairs_needed"]["0.1"] == pf.paired_n_needed(0.4, 0.2, 0.8, 0.95)
    assert s["pairs_needed"]["0.2"] == pf.paired_n_needed(0.6, 0.4, 0.8, 0.95)
    big = plan({**res, "noise_floor": {"rate": 0.7}}, 0.8, (0.6,))
    assert big["rows"][0]["discordant"] == 1.0
    assert big["rows"][1]["pairs_needed"]["0.6"] == pf.paired_n_needed(1.0, 0.99, 0.8, 0.95)
    none = plan({**res, "noise_floor": {"rate": None}}, 0.8)
    assert none["rows"][0]["discordant"] == 0.0


def test_probe_sequential_decisions_by_hand():
    """Two decisions (swap consistency and direction): each at level 1 - alpha/2, p-values
    Bonferroni-scaled, the swap's interval in reported units (half the paired one)."""
    from judgekit.judging.placebo import PLACEBO
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.methods.probe.sequential import decisions, differences
    from judgekit.stats.sequential import paired_difference_cs

    cfg = ProbeConfig(data_path="x", models={"judge": "mock/x"}, transforms=["swap"],
                      sequential=True, sequential_margin=0.05)
    verdicts = []
    for i in range(40):
        v = {"run0": "a", "run1": "a", PLACEBO: "a" if i % 5 else "b",
             "swap": "b" if i % 3 else "a"}
        v["run0:first"] = "first"
        v["swap:first"] = "first" if v["swap"] == "b" else "second"
        verdicts.append(v)
    diffs = differences(cfg, verdicts, False)
    assert sorted(diffs) == ["swap:consistency", "swap:direction"]
    q, scale, d = diffs["swap:consistency"]
    flips = np.array([float(v["swap"] != "a") for v in verdicts])
    floor = np.array([float(v[PLACEBO] != "a") for v in verdicts])
    assert q == "consistency" and scale == 1.0 and np.array_equal(d, flips - floor)
    rows = {r["question"]: r for r in decisions(cfg, verdicts, False)}
    exp = paired_difference_cs(flips - floor, 0.975, 0.05, greater=True)
    assert rows["consistency"]["ci"] == exp.ci and rows["consistency"]["decision"] == \
        exp.decision
    assert rows["consistency"]["p_value"] == min(1.0, 2 * exp.p_value)
    assert rows["consistency"]["level_each"] == 0.975
    x = np.array([float(v["run0"] == "a") for v in verdicts])
    y = np.array([float(v["swap"] == "a") for v in verdicts])
    exp = paired_difference_cs(x - y, 0.975, 0.1)
    assert rows["direction"]["ci"] == [c * 0.5 for c in exp.ci]
    assert rows["direction"]["decision"] == exp.decision == "shown"
    assert rows["direction"]["stops_the_probe"] is True


def test_sequential_gather_and_apply():
    import asyncio

    from judgekit.judging.placebo import PLACEBO
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.methods.probe.sequential import apply, gather

    cfg = ProbeConfig(data_path="x", models={"judge": "mock/x"}, transforms=["swap"],
                      sequential=True, sequential_batch=10)
    first = [{"run0": "a", "run1": "a", PLACEBO: "a", "swap": "b", "run0:first": "first",
              "swap:first": "first"} for _ in range(50)]
    asked = []

    async def ask(idx):
        asked.append(list(idx))
        return [first[i] for i in idx]

    idx, got, seq = asyncio.run(gather(cfg, 50, ask, False))
    # a seeded random order (not the file's), returned in file order; the stream is
    # judgekit.core.seeds' "probe.sequential" (named: its old words [seed, 515] were
    # VB-Score's rotation stream too)
    from judgekit.core import seeds

    order = seeds.rng("probe.sequential", cfg.seed).permutation(50)
    assert order[:10].tolist() == [42, 14, 21, 20, 13, 22, 28, 6, 19, 24]
    assert asked == [order[:10].tolist(), order[10:20].tolist()]
    assert idx == sorted(order[:20].tolist()) and seq["order"] == "random"
    assert len(got) == 20 and seq["looks"] == 2 and seq["stopped"] == "settled"
    assert seq["share_saved"] == pytest.approx(0.6)
    results = {"transforms": [{"name": "swap", "excess_ci": [0, 0]}],
               "biases": [{"name": "swap", "ci": [0, 0]}, {"name": "pad", "ci": [9, 9]}],
               "position_bias": {"ci": [0, 0]}, "padding_bias": None}
    apply(results, seq)
    dec = {d["question"]: d for d in seq["decisions"]}
    assert results["biases"][0]["ci"] == dec["direction"]["ci"]
    assert results["biases"][0]["verdict"] == "biased"
    assert results["biases"][1]["ci"] == [9, 9]  # no decision for pad: left alone
    assert results["position_bias"]["ci"] == dec["direction"]["ci"]
    assert results["transforms"][0]["verdict"] == "inconsistent: flips more than the placebo"
    assert results["padding_bias"] is None and results["sequential"] is seq
    cfg_fixed = cfg.model_copy(update={"sequential": False})
    idx, got, seq = asyncio.run(gather(cfg_fixed, 50, ask, False))
    assert len(got) == 50 and seq is None and idx == list(range(50))


def test_betting_cs_input_checks_and_bounds():
    from judgekit.stats.sequential import betting_cs, paired_difference_cs

    for bad, msg in (([], "non-empty"), ([[0.5]], "non-empty"), ([-0.1], r"\[0, 1\]")):
        with pytest.raises(StatsError, match=msg):
            betting_cs(bad)
    for level in (0.0, 1.0):
        with pytest.raises(StatsError, match="level"):
            betting_cs([0.5], level)
    cs = betting_cs([1.0] * 3, 0.95)
    assert cs.lo[0] == 0.0 and cs.hi[0] == 1.0  # one observation cannot exclude anything
    assert np.all(cs.lo <= cs.hi)
    # a difference far below 0: shown two-sided, ruled out when only "greater" matters
    assert paired_difference_cs([-1] * 80, 0.95).decision == "shown"
    assert paired_difference_cs([-1] * 80, 0.95, greater=True).decision == "ruled out"
    s = paired_difference_cs([0] * 3000, 0.95, 0.03)
    assert s.decision == "ruled out" and s.ci == pytest.approx([-0.003, 0.003])
    assert paired_difference_cs([0] * 200, 0.95, 0.03).decision == "open"  # +-0.036
    assert paired_difference_cs([0] * 200, 0.95, 0.04).decision == "ruled out"


def test_stratified_preference_is_the_mantel_haenszel_risk_difference_by_hand():
    # stratum x: feature worse on 10 pairs (judge errs toward it on 4), better on 20
    # (errs away on 2); stratum y: worse 30 (errs 3), better 10 (errs 5)
    feature, better, chosen, strata = [], [], [], []
    for st, nw, kw, nb, kb in (("x", 10, 4, 20, 2), ("y", 30, 3, 10, 5)):
        for i in range(nw):
            feature.append("a"), better.append("b"), strata.append(st)
            chosen.append("a" if i < kw else "b")
        for i in range(nb):
            feature.append("a"), better.append("a"), strata.append(st)
            chosen.append("b" if i < kb else "a")
    p = pf.feature_preference(feature, better, chosen, 0.95, strata=strata)
    w = [10 * 20 / 30, 30 * 10 / 40]
    d = [0.4 - 0.1, 0.1 - 0.5]
    assert p.strata == 2 and p.preference == pytest.approx((w[0] * d[0] + w[1] * d[1]) / sum(w))

    def v(k, n):
        t = (k + 0.5) / (n + 1)
        return t * (1 - t) / n

    se = math.sqrt(w[0] ** 2 * (v(4, 10) + v(2, 20)) + w[1] ** 2 * (v(3, 30) + v(5, 10))) / sum(w)
    z = 1.959963984540054
    assert p.ci == pytest.approx([p.preference - z * se, p.preference + z * se])
    # pooled, the same rows give another answer: the strata are what separates them
    pooled = pf.feature_preference(feature, better, chosen, 0.95)
    assert pooled.strata == 1 and pooled.preference != pytest.approx(p.preference)
