"""The decisions built on the statistics: audit trust against the perfect-judge reference
and uninformed judges, probe direction vs consistency against a placebo floor, and
prediction-powered rates that keep coverage. Small versions of benchmarks/verdicts.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgekit.methods.nodata.decision import DecisionSettings, decide
from judgekit.methods.nodata.readings import perfect_reference
from judgekit.testing.simulate import audit_items, probe_verdicts


def _decide(judge, **kw):
    seed = kw.pop("seed", 0)
    return _json(decide(audit_items(judge, seed=seed, **kw),
                        DecisionSettings(seed=seed, resamples=300)))


def _json(verdict):
    """The verdict as results.json holds it (the tests read it as JSON)."""
    return verdict.model_dump(mode="json")


def test_reference_formula_pinned():
    # three criteria misread independently with p = 0.05: two readings differ somewhere
    # with probability d = 1 - (1 - 2 p (1 - p))^3; one reading is wholly right with
    # q = sqrt(1 - d), about 0.95^3
    d = 1 - (1 - 2 * 0.05 * 0.95) ** 3
    q = math.sqrt(1 - d)
    assert q == pytest.approx(0.95 ** 3, abs=0.005)
    assert perfect_reference(d, d, 3, "both") == pytest.approx(q * q ** 3)
    assert perfect_reference(d, d, 2, "paper") == pytest.approx(q ** 2)
    assert perfect_reference(d, d, 3, "pair") == pytest.approx((1 - d) ** 3)
    # totals and top-level criteria differ: q_top ((q_total + q_top) / 2)^rounds
    assert perfect_reference(0.19, 0.0975, 2, "both") == pytest.approx(
        math.sqrt(1 - 0.0975) * ((0.9 + math.sqrt(1 - 0.0975)) / 2) ** 2)


@pytest.mark.parametrize("rate", [0.88, 0.5])
def test_always_pass_judge_is_never_trusted_skewed_or_balanced(rate):
    d = _decide("always_pass", n=200, pass_rate=rate)
    assert d["decision"] == "do not trust" and d["rule"] == "constant_judge"
    if rate == 0.88:  # its success rate alone would have looked trustworthy
        assert d["success_rate"] > 0.8


def test_perfect_judge_under_a_noisy_verifier_is_judged_against_the_reference():
    d = _decide("oracle", n=200, noise=0.05)
    assert d["decision"] != "do not trust"
    assert d["success_rate"] < 0.75  # ~0.95^12 = 0.54: a fixed 0.8 threshold would fail it
    assert d["reference"] == pytest.approx(0.95 ** 12, abs=0.12)
    assert d["relative_success_ci"][0] <= 1.0 <= d["relative_success_ci"][1] + 0.05
    assert d["verifier"]["disagreement"] == pytest.approx(0.095, abs=0.03)


def test_too_noisy_a_verifier_is_inconclusive_and_says_so():
    # with human rubric values the lower reference comes from them, and the reason says
    # so; a judge people do not confirm cannot be decided through this verifier
    d = _decide("mostly_right", n=200, noise=0.15)
    assert d["decision"] == "inconclusive" and d["rule"] == "verifier_inconsistent"
    assert "match the human rubric values on only" in d["reason"]
    # people outrank the verifier: a perfect judge they confirm is trusted whatever the
    # verifier reads (issue 67)
    d = _decide("oracle", n=200, noise=0.15)
    assert d["decision"] == "trust" and d["rule"] == "confirmed_by_people"
    d = _decide("oracle", n=200, noise=0.15, labelled=False)
    assert d["rule"] == "verifier_inconsistent" and "disagrees with itself on" in d["reason"]
    assert "temperature 0" not in d["reason"]  # a temperature-0 verifier hides misreads


@pytest.mark.parametrize("judge,rule", [("random", "below_reference"),
                                        ("liar", "below_reference")])
def test_uninformed_and_lying_judges_are_not_trusted(judge, rule):
    d = _decide(judge, n=200)
    assert d["decision"] == "do not trust" and d["rule"] == rule


def test_oracle_is_trusted_and_a_partly_random_judge_is_not():
    assert _decide("oracle", n=200)["decision"] == "trust"
    d = _decide("mostly_right", n=200)
    assert d["decision"] == "inconclusive" and d["skill"] > 0


def test_one_class_items_cannot_separate_a_judge_from_a_constant():
    d = _decide("oracle", n=60, pass_rate=1.0)
    # every item passes: the verifier's readings are all alike, so nothing can be decided
    assert d["decision"] == "inconclusive" and d["rule"] in ("verifier_constant", "one_class")


def test_audit_through_the_runner_on_skewed_data(tmp_path):
    from judgekit.testing import judges

    judges.write_audit_data(tmp_path, 60, seed=1, pass_rate=0.88)
    result = judges.scripted_audit(tmp_path, "constant", "faithful", n=60, as_result=True)
    res = result.model_dump(mode="json")
    v = res["verdict"]
    assert v["decision"] == "do not trust" and v["rule"] == "constant_judge"
    assert "whole claimed breakdown" in v["measures"]
    assert v["verifier"]["rereads"] == 60 and v["verifier"]["disagreement"] == 0.0
    from judgekit.report.document import to_markdown
    from judgekit.runs.folder import report_doc

    report = to_markdown(report_doc(result))
    assert "Which criterion the judge gets wrong" in report and "constant_judge" in report


# ---- the probe ----------------------------------------------------------------------
def _probe(kind, bias=0.0, seed=0, n=400, level=0.95):
    from judgekit.methods.probe.analysis import analyse
    from judgekit.methods.probe.config import ProbeConfig

    cfg = ProbeConfig.model_validate({"method": "probe", "data_path": "p.jsonl",
                                      "models": {"judge": "mock/x"}, "level": level})
    pairs, v = probe_verdicts(kind, n=n, seed=seed, bias=bias)
    return analyse(cfg, pairs, v)


def test_deterministic_unbiased_judge_is_neither_biased_nor_inconsistent():
    flagged = 0
    for s in range(5):
        r = _probe("deterministic", seed=s)
        assert r["rerun_flips"]["rate"] == 0.0  # temperature 0: re-runs never differ
        assert r["noise_floor"]["rate"] > 0.1  # ... but the placebo moves unsure items
        flagged += any(t["verdict"].startswith("inconsistent") for t in r["transforms"]) \
            or any(b["verdict"] == "biased" for b in r["biases"])
    assert flagged <= 1


def test_a_five_point_position_bias_is_found_and_named_bias():
    r = _probe("position", bias=0.05, seed=1)
    pos = r["position_bias"]
    assert pos["verdict"] == "biased" and pos["ci"][0] > 0
    assert pos["bias"] == pytest.approx(0.05, abs=0.03)
    assert r["padding_bias"]["verdict"] == "no bias shown"


def test_probe_level_is_honoured_everywhere():
    r90, r99 = _probe("position", bias=0.05, level=0.90), _probe("position", bias=0.05,
                                                                level=0.99)
    w = [p["position_bias"]["ci"][1] - p["position_bias"]["ci"][0] for p in (r90, r99)]
    assert w[0] < w[1] and r90["level"] == 0.90
    nf = [p["noise_floor"]["ci"][1] - p["noise_floor"]["ci"][0] for p in (r90, r99)]
    assert nf[0] < nf[1]


# ---- prediction-powered rates ---------------------------------------------------------
def test_importance_sampling_keeps_coverage_when_the_judge_errs_on_stable_items():
    from judgekit.stats.agreement import importance_inclusion, ppi_weighted

    rng = np.random.default_rng(5)
    n_items, rate, hits, draws = 2000, 0.3, 0, 300
    for _ in range(draws):
        y = (rng.random(n_items) < rate).astype(float)
        unstable = rng.random(n_items) < 0.3
        wrong = ~unstable & (rng.random(n_items) < 0.15 / 0.7)  # errors on stable items
        f = np.where(wrong, 1 - y, y)
        pi = importance_inclusion(unstable.astype(float), 30)
        assert pi.min() >= 0.5 * 30 / n_items  # the uniform half of the mixture
        lab = np.flatnonzero(rng.random(n_items) < pi)
        c = ppi_weighted(f, lab, y[lab], pi, level=0.90)
        assert 0.0 <= c.ci[0] <= c.ci[1] <= 1.0
        hits += c.ci[0] <= rate <= c.ci[1]
    assert hits / draws >= 0.87


def test_power_tuning_never_makes_a_weak_judge_widen_the_interval():
    from judgekit.stats.agreement import ppi_mean

    rng = np.random.default_rng(2)
    ratios = []
    for _ in range(200):
        y = (rng.random(1000) < 0.1).astype(float)
        f = np.where(rng.random(1000) < 0.4, 1 - y, y)  # accuracy 0.6
        lab = rng.choice(1000, 30, replace=False)
        c = ppi_mean(f, f[lab], y[lab], level=0.90)
        assert 0.0 <= c.ci[0] <= c.ci[1] <= 1.0 and c.human_only_ci[1] > c.human_only_ci[0]
        ratios.append((c.ci[1] - c.ci[0]) / (c.human_only_ci[1] - c.human_only_ci[0]))
    assert np.mean(ratios) <= 1.02


def test_vb_answer_keys_keep_what_changes_meaning():
    from judgekit.data.qa import normalise_answer as key

    for a, b in [("+1", "-1"), ("Rr", "RR"), ("1.5", "15"), ("CO", "Co"), ("50%", "50")]:
        assert key(a) != key(b), (a, b)
    assert key("Paris.") == key("paris") and key("  The  Answer ") == key("The answer")


def test_pairs_from_draws_from_every_named_dataset(tmp_path):
    from pathlib import Path

    from judgekit.methods.probe.pairs import pairs_from_datasets

    data = Path(__file__).resolve().parents[1] / "experiments" / "data"
    paths = {"truthfulqa": str(data / "truthfulqa_excerpt.csv"),
             "arc": str(data / "arc_challenge_dev_excerpt.jsonl")}
    got = pairs_from_datasets(["truthfulqa", "arc"], paths, 6, seed=3)
    assert {p.id.split(":")[0] for p in got} == {"truthfulqa", "arc"} and len(got) == 6
    again = pairs_from_datasets(["truthfulqa", "arc"], paths, 6, seed=3)
    assert [p.id for p in got] == [p.id for p in again]
    other = pairs_from_datasets(["truthfulqa", "arc"], paths, 6, seed=4)
    assert [p.id for p in got] != [p.id for p in other]


def test_a_temperature_0_verifiers_fixed_misreads_show_when_reread_in_other_words(tmp_path):
    """Through the real runner: a verifier misreading 5% of criteria as a fixed function
    of text and instruction. Re-read under the same words it agrees with itself (the
    old reference, 1.0, distrusted a perfect judge); under reworded instructions the
    misreads show, and with human rubric values the reference sees them anyway."""
    from judgekit.testing import judges

    judges.write_audit_data(tmp_path, 120, seed=3, pass_rate=0.5)
    same = judges.scripted_audit(tmp_path, "oracle", "faithful", n=120, verifier_noise=0.05,
                                 fixed=True, reread_instruction="same", concurrency=16)
    reworded = judges.scripted_audit(tmp_path, "oracle", "faithful", n=120,
                                     verifier_noise=0.05, fixed=True, concurrency=16)
    assert same["verdict"]["verifier"]["disagreement"] == 0.0
    assert reworded["verdict"]["verifier"]["disagreement"] > 0.02
    for d in (same, reworded):
        assert d["verdict"]["decision"] != "do not trust"
        assert d["verdict"]["claims_vs_people"]["rate"] == 1.0  # the judge is right


@pytest.mark.parametrize("labelled", [True, False])
def test_a_blind_spot_shared_with_the_verifier_is_never_trusted(labelled):
    s = DecisionSettings(seed=1, resamples=300, same_family=True)
    for seed in range(5):
        d = _json(decide(audit_items("blind_spot", n=200, seed=seed, blind_spot=0.3,
                                     labelled=labelled), s))
        assert d["decision"] != "trust"
        if not labelled:  # nobody can tell the two apart: the verdict says so
            assert d["rule"] == "cannot_separate"
            assert "cannot separate the judge from the verifier" in d["reason"]
        else:  # people see what the verifier cannot
            assert d["claims_vs_people"]["rate"] < 0.8


def test_wholesale_reading_failures_do_not_lower_the_reference_criterion_by_criterion():
    """5% of readings lose the whole breakdown (10 criteria): counted per criterion the
    reference was 0.38 and a judge right on 70% of items looked as good as a perfect
    one; counted per reading it is about 0.81."""
    for seed in range(5):
        d = _json(decide(audit_items("mostly_right", n=200, seed=seed, wholesale=0.05,
                                     criteria=10, labelled=False),
                         DecisionSettings(seed=seed, resamples=300)))
        assert d["decision"] != "trust" and d["reference"] > 0.7
        good = _json(decide(audit_items("oracle", n=200, seed=seed, wholesale=0.05,
                                        criteria=10, labelled=False),
                            DecisionSettings(seed=seed, resamples=300)))
        assert good["decision"] != "do not trust"


def test_a_judge_flipping_often_under_any_change_is_unstable_not_consistent():
    from judgekit.methods.probe.analysis import analyse, consistency_words
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.testing.simulate import probe_verdicts

    # unsure on 80% of pairs and a fresh coin each call: about 40% of verdicts flip under
    # the placebo and under every transform alike
    pairs, v = probe_verdicts("stochastic", n=400, seed=3, sure=0.2)
    cfg = ProbeConfig.model_validate({"method": "probe", "data_path": "p.jsonl",
                                      "models": {"judge": "mock/x"}})
    r = analyse(cfg, pairs, v)
    for t in r["transforms"]:
        assert t["flip_rate"] > 0.3 and t["verdict"].startswith("unstable: flips on")
    # low flips on enough items: consistent; a few items: too few to say
    assert consistency_words(0.01, 400, "the placebo", 0.95).startswith("consistent")
    assert consistency_words(0.0, 10, "the placebo", 0.95).endswith(
        "too few to call it consistent")


def test_a_label_name_preference_is_its_own_effect_and_qualifies_position_bias():
    from judgekit.judging.placebo import PLACEBO
    from judgekit.methods.probe.analysis import analyse
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.methods.probe.pairs import Pair

    rng = np.random.default_rng(0)
    pairs, verdicts = [], []
    for i in range(400):
        pairs.append(Pair(f"p{i}", "q", "x", "y"))
        good = "a" if rng.random() < 0.5 else "b"
        # picks whatever stands under the name "A" 30% of the time; labels 1/2 remove it
        named = rng.random() < 0.3
        v = {"run0": "a" if named else good, "run1": "a" if named else good,
             PLACEBO: "a" if named else good, "swap": "b" if named else good,
             "rename": good}
        v["run0:first"] = "first" if v["run0"] == "a" else "second"
        v["swap:first"] = "first" if v["swap"] == "b" else "second"
        v["rename:first"] = "first" if v["rename"] == "a" else "second"
        verdicts.append(v)
    cfg = ProbeConfig.model_validate({"method": "probe", "data_path": "p.jsonl",
                                      "models": {"judge": "mock/x"},
                                      "transforms": ["swap", "rename"]})
    r = analyse(cfg, pairs, verdicts)
    assert r["label_bias"]["verdict"] == "biased" and r["label_bias"]["bias"] < 0
    assert r["position_bias"]["verdict"] == "biased"
    assert "label name" in r["position_bias"]["note"]


def test_a_verifier_that_never_matches_people_gives_a_zero_reference_not_a_crash():
    d = _decide("mostly_right", n=60, fixed=1.0)  # every criterion misread, every time
    assert d["reference"] == 0.0 and d["relative_success"] is None
    assert d["decision"] == "inconclusive" and d["rule"] == "verifier_inconsistent"
    assert "match the human rubric values on only 0.0%" in d["reason"]
    # the perfect judge people confirm is trusted: the verifier's misreads are its own
    d = _decide("oracle", n=60, fixed=1.0)
    assert d["reference"] == 0.0 and d["rule"] == "confirmed_by_people"
