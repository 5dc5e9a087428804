"""Exact numbers out, small-sample intervals, strict vbscore input, loaders, on-demand fixes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgekit.core.errors import ConfigError, DataError
from judgekit.methods.vbscore.metric import expected_success, score
from judgekit.methods.vbscore.scorefile import score_file
from judgekit.runs.io import write_json
from judgekit.stats import normal_interval


def test_results_json_keeps_tiny_and_exact_floats(tmp_path):
    write_json(tmp_path / "r.json", {"p": 7.65e-206, "x": 0.1 + 0.2, "nan": float("nan")})
    back = json.loads((tmp_path / "r.json").read_text())
    assert back == {"p": 7.65e-206, "x": 0.30000000000000004, "nan": None}


def test_full_coverage_gives_exactly_one_and_none_exactly_zero():
    pi = np.array([0.1, 0.2, 0.3, 0.4]) / 1.0000000000000002
    assert expected_success(pi, np.ones(4)) == 1.0
    assert score(pi, np.ones(4)).vb[1.0] == 1.0
    assert expected_success(pi, np.zeros(4)) == 0.0
    assert expected_success(pi, np.array([1, 0, 0, 1.0])) == pytest.approx(0.5)


def test_normal_interval_is_student_t():
    lo, hi = normal_interval(np.array([0.0, 1, 1, 1, 0]))
    # mean 0.6, sd 0.547723, t(4, 0.975) = 2.776445 -> half-width 0.680087
    assert (lo, hi) == pytest.approx((0.6 - 0.680087, 0.6 + 0.680087), abs=1e-6)


def line(qid, rep, interps, tags, gold=None):
    return json.dumps({"query_id": qid, "replica": rep, "interpretations": interps,
                       "outputs": [{"tag": t} for t in tags], "gold": gold})


def write(tmp_path, *lines):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


OPTS = dict(alphas=[0.0, 1.0], k=None, seed=0, resamples=200)


def test_unnormalised_probabilities_are_an_error_unless_normalize(tmp_path):
    p = write(tmp_path, line("q", 0, [{"id": "A", "prob": 0.5}, {"id": "B", "prob": 0.3}],
                             ["A"]))
    with pytest.raises(DataError, match=r"line 1: .* sum to 0.8, not 1; .*--normalize"):
        score_file(p, **OPTS)
    r = score_file(p, normalize=True, **OPTS)
    assert r["queries"][0]["es"] == pytest.approx(0.625)


def test_mixed_prob_and_score_is_an_error(tmp_path):
    p = write(tmp_path, line("q", 0, [{"id": "A", "prob": 1.0}, {"id": "B", "score": 2.0}],
                             ["A"]))
    with pytest.raises(DataError, match="mixes 'prob' and 'score'"):
        score_file(p, **OPTS)


def test_duplicate_replicas_are_an_error(tmp_path):
    one = line("q", 0, [{"id": "A", "prob": 1.0}], ["A"])
    with pytest.raises(DataError, match="line 2: .*replica 0 already appears at 1"):
        score_file(write(tmp_path, one, one), **OPTS)


def test_tags_match_ids_case_and_form_insensitively(tmp_path):
    p = write(tmp_path, line("q", 0, [{"id": "Paris", "prob": 0.75},
                                      {"id": "Paris, Texas", "prob": 0.25}],
                             ["paris", "PARIS TEXAS"], gold="PARIS"))
    r = score_file(p, **OPTS)
    assert r["queries"][0]["es"] == 1.0 and r["queries"][0]["accuracy"] == 1.0


def test_vb_of_mean_es_honours_spread_and_clip(tmp_path):
    p = write(tmp_path,
              line("q", 0, [{"id": "A", "prob": 0.5}, {"id": "B", "prob": 0.5}], ["A"]),
              line("q", 1, [{"id": "A", "prob": 0.5}, {"id": "B", "prob": 0.5}], ["A", "B"]))
    bern = score_file(p, **OPTS)["queries"][0]["vb_of_mean_es"]["1.0"]
    spread = score_file(p, variance="spread", **OPTS)["queries"][0]["vb_of_mean_es"]["1.0"]
    clipped = score_file(p, clip=True, **{**OPTS, "alphas": [3.0]})
    # mean ES 0.75; Bernoulli sqrt(0.75*0.25) = 0.4330; spread: mean of (0.25, 0) = 0.125
    assert bern == pytest.approx(0.75 - 0.4330127)
    assert spread == pytest.approx(0.75 - np.sqrt(0.125))
    assert clipped["queries"][0]["vb_of_mean_es"]["3.0"] == 0.0


@pytest.mark.parametrize("kw, message", [({"k": 0}, "--k 0 must be >= 1"),
                                         ({"resamples": 0}, "--resamples 0"),
                                         ({"alphas": [-1.0]}, "--alpha -1.0")])
def test_bad_numeric_options_are_one_line_errors(tmp_path, kw, message):
    p = write(tmp_path, line("q", 0, [{"id": "A", "prob": 1.0}], ["A"]))
    with pytest.raises(ConfigError, match=message.replace("-", r"\-").replace(".", r"\.")):
        score_file(p, **{**OPTS, **kw})


def test_agreeing_replicas_are_flagged(tmp_path):
    a = [{"id": "A", "prob": 1.0}]
    r = score_file(write(tmp_path, line("q", 0, a, ["A"]), line("q", 1, a, ["A"])), **OPTS)
    assert r["queries"][0]["replicas_agree"] is True


# ---- loaders ----------------------------------------------------------------------------
def test_wsc_names_the_quoted_span_when_the_pronoun_repeats(tmp_path):
    from judgekit.data.qa import load_winograd

    xml = """<?xml version="1.0"?><collection><schema><text><txt1>Sam's drawing was hung above
    Tina's and</txt1><pron> it </pron><txt2>did look better with another one below it.</txt2>
    </text><quote><quote1></quote1><pron>it</pron><quote2>did look better</quote2></quote>
    <answers><answer>Sam's drawing</answer><answer>Tina's drawing</answer></answers>
    <correctAnswer> B </correctAnswer></schema><schema><text><txt1>The trophy does not fit
    because</txt1><pron> it </pron><txt2>is too large.</txt2></text><answers><answer>The
    trophy</answer><answer>the suitcase</answer></answers><correctAnswer>A.</correctAnswer>
    </schema></collection>"""
    (tmp_path / "w.xml").write_text(xml)
    q1, q2 = load_winograd(tmp_path / "w.xml")
    assert q1.text.endswith('does "it" refer to in "it did look better"?')
    assert q2.text.endswith('does "it" refer to?') and q1.gold == "Tina's drawing"


def test_arc_accepts_the_key_letter_only_when_no_option_text_equals_it():
    from judgekit.data.qa import arc_accepted

    assert arc_accepted({"A": "cat", "B": "dog", "C": "cow"}, "C") == ["cow", "C"]
    assert arc_accepted({"1": "2", "2": "4", "3": "6"}, "2") == ["4"]


def test_judged_items_report_label_rubric_disagreements_and_unknown_fields():
    from judgekit.data.judged import JudgedItem, check_judged

    items = [JudgedItem(Prompt="p", Output="o", Label=1, Rubric={"c1": 1, "c3": 0}),
             JudgedItem(Prompt="p", Output="o", Label=0, Rubric={"c1": 1, "c2": 1})]
    rep = check_judged(items, ["c1", "c3"], lambda v: int(all(v)), [10, 11], "f.json")
    assert rep["label_rubric_disagreements"] == {"count": 1, "items": [10]}
    assert rep["unknown_rubric_fields"] == {"c2": {"count": 1, "items": [11]}}
    with pytest.raises(DataError, match=r"f.json: 1 item.*\(--strict\)"):
        check_judged(items, ["c1", "c3"], lambda v: int(all(v)), [10, 11], "f.json",
                     strict=True)


# ---- on-demand --------------------------------------------------------------------------
def test_disjoint_systems_give_finite_joint_intervals():
    from judgekit.methods.ondemand.simulation import Population, one_repeat

    f = np.array([1.0, 0, 1, 1, 0, 1])
    members = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], bool)
    dists = [m / m.sum() for m in members.astype(float)]
    pop = Population(f, members, dists, f / f.sum(), np.array([2 / 3, 2 / 3]),
                     members.astype(float) @ (f / f.sum()), 0)
    r = one_repeat(pop, np.random.default_rng(0), 30, 30, 200, 0.9)
    assert np.isfinite(r["joint_p_ci"]).all()
    # disjoint systems: the joint estimator reduces to each system's own sample mean
    assert r["joint_p"] == pytest.approx(r["simple_p"])


def test_labelling_loop_resampling_does_not_repeat_positions():
    from judgekit.methods.ondemand.loop import Instance, LabellingLoop

    pool = [Instance(str(i), str(i)) for i in range(1000)]
    loop = LabellingLoop({"a": pool, "b": list(pool)}, lambda b: {x.id: True for x in b},
                         seed=1)
    loop.sample("a", 20)
    loop.sample("a", 20)  # re-sampled
    loop.sample("b", 20)
    first_a = loop.samples["a"]
    assert loop.samples["b"] != first_a


def test_expanded_percentile_is_wider_than_plain():
    from judgekit.methods.ondemand.estimators import percentile

    boot = np.random.default_rng(0).normal(size=(1, 20000))
    plain, expanded = percentile(boot, 0.9)[0], percentile(boot, 0.9, n=10)[0]
    assert plain == pytest.approx([-1.645, 1.645], abs=0.05)
    # t(9, 0.95) * sqrt(10/9) = 1.9456
    assert expanded == pytest.approx([-1.946, 1.946], abs=0.05)


def test_pattern_quantiles_equal_the_expanded_bootstrap():
    from judgekit.methods.vbscore.replicas import pattern_quantiles

    rng = np.random.default_rng(1)
    for b in (2, 5, 8):
        draws = rng.multinomial(b, np.full(b, 1 / b), size=10_000)
        pats, freq = np.unique(draws, axis=0, return_counts=True)
        x = rng.random((40, b))
        ref = np.quantile(x @ (draws.T / b), [0.025, 0.975], axis=1)
        lo, hi = pattern_quantiles(x, pats, freq, (0.025, 0.975))
        assert np.allclose(lo, ref[0], atol=1e-12) and np.allclose(hi, ref[1], atol=1e-12)


def test_batch_query_intervals_depend_only_on_the_query_and_seed():
    from judgekit.methods.vbscore.replicas import batch_query_intervals

    rng = np.random.default_rng(0)
    a, b, c = rng.random((3, 5)), rng.random((3, 5)), rng.random((3, 20))
    first = batch_query_intervals([a, b, c], 0.95, 2000, seed=7)
    again = batch_query_intervals([c, a], 0.95, 2000, seed=7)
    assert first[0] == again[1] and first[2] == again[0]
    assert batch_query_intervals([a], 0.95, 2000, seed=8)[0] != first[0]
    const = np.full((2, 5), 0.4)
    assert batch_query_intervals([const], 0.95, 2000, seed=7)[0][0] == (0.4, 0.4)
    for lo, hi in first[0]:
        assert lo <= hi
