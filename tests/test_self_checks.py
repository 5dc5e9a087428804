"""Every judgement checks itself: VB-Score's tagger probed for position vs content,
interpretation stability, the probe's injection transform, self-preference and natural
length preference, the plan and the sequential mode (values by hand, and end to end
through judgekit.run with function providers)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from judgekit.llm.providers import mock
from judgekit.methods.vbscore.selfcheck import (
    TagCheck,
    interpretation_stability,
    rotation,
    tag_key,
    tagger_check,
    verdict,
)
from judgekit.stats.preference import (
    clustered_rate,
    feature_preference,
    newcombe_unpaired,
    paired_n_needed,
    rate_n_needed,
    sign_test,
)
from judgekit.stats.sequential import betting_cs, paired_difference_cs


# ---- statistics by hand ---------------------------------------------------------------
def test_newcombe_unpaired_matches_newcombe_1998_example():
    # Newcombe 1998 (Stat Med 17:873), Table II example (a): 56/70 - 48/80, method 10
    lo, hi = newcombe_unpaired(56, 70, 48, 80, 0.95)
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    # example (e): 9/10 - 3/10 -> 0.1705, 0.8090
    lo, hi = newcombe_unpaired(9, 10, 3, 10, 0.95)
    assert (round(lo, 4), round(hi, 4)) == (0.1705, 0.8090)


def test_feature_preference_is_the_asymmetry_of_errors():
    # feature side worse in 4 pairs, the judge picks it in 3; better in 5, judge picks
    # the other side in 1: 3/4 - 1/5 = 0.55
    feature = ["a"] * 9 + [None, "b"]
    better = ["b"] * 4 + ["a"] * 5 + ["a", None]
    chosen = ["a", "a", "a", "b", "a", "a", "a", "a", "b", "a", "a"]
    p = feature_preference(feature, better, chosen, 0.95)
    assert p.preference == pytest.approx(0.75 - 0.2)
    assert (p.n_worse, p.n_better, p.n) == (4, 5, 9)
    assert p.ci == pytest.approx(newcombe_unpaired(3, 4, 1, 5, 0.95))
    from scipy.stats import fisher_exact

    assert p.p_value == pytest.approx(fisher_exact([[3, 1], [1, 4]]).pvalue)
    # a judge erring at the same rate on both sides scores 0, whatever its accuracy
    even = feature_preference(["a"] * 8, ["b"] * 4 + ["a"] * 4,
                              ["a", "b", "b", "b", "b", "a", "a", "a"])
    assert even.preference == 0.0
    assert feature_preference(["a"], ["a"], ["a"]).preference is None


def test_clustered_rate_design_effect():
    # equal cluster shares: no design effect, the plain Wilson (continuity-corrected)
    from judgekit.stats.proportions import wilson_effective

    r = clustered_rate([[True, False], [False, True], [True, False]], 0.95)
    assert r.rate == 0.5 and r.n == 6 and r.clusters == 3
    assert r.ci == pytest.approx(list(wilson_effective(0.5, 6, 0.95)))
    # clusters that are all-or-nothing: deff = k/(k-1) * m = 3, n_eff = 12 / 3... by hand
    g = [[True] * 4, [False] * 4, [True] * 4]
    r = clustered_rate(g, 0.9)
    p, n = 8 / 12, 12.0
    resid = np.array([4 - p * 4, 0 - p * 4, 4 - p * 4])
    deff = (3 / 2) * float(np.sum(resid ** 2)) / n ** 2 / (p * (1 - p) / n)
    assert r.ci == pytest.approx(list(wilson_effective(p, n / deff, 0.9)))
    assert deff == pytest.approx(6.0)
    assert clustered_rate([[True, True]], 0.95).ci[1] == 1.0


def test_sign_test_and_sample_sizes():
    s = sign_test(8, 0, 0.95)
    assert s.share == 1.0 and s.p_value == pytest.approx(2 * 0.5 ** 8)
    assert sign_test(0, 0).p_value == 1.0 and sign_test(0, 0).share is None
    # Connor 1987 by hand: psi = 0.3, d = 0.1, 80% power, 95%
    za, zb = 1.959963984540054, 0.8416212335729143
    expect = math.ceil((za * math.sqrt(0.3) + zb * math.sqrt(0.3 - 0.01)) ** 2 / 0.01)
    assert paired_n_needed(0.3, 0.1, 0.8, 0.95) == expect == 234
    assert paired_n_needed(0.05, 0.1) is None  # too few discordant pairs for the effect
    assert rate_n_needed(0.5, 0.05, 0.95) == math.ceil(za ** 2 * 0.25 / 0.0025) == 385
    assert rate_n_needed(1.0, 0.1, 0.95) == math.ceil(za ** 2 * 0.01 / 0.01)


def test_betting_confidence_sequence_covers_at_every_n():
    rng = np.random.default_rng(3)
    misses = 0
    sims = 200
    for _ in range(sims):
        x = (rng.random(300) < 0.3).astype(float)
        cs = betting_cs(x, 0.9)
        assert np.all(np.diff(cs.lo) >= 0) and np.all(np.diff(cs.hi) <= 0)
        misses += bool(np.any((cs.lo > 0.3) | (cs.hi < 0.3)))
    assert misses / sims <= 0.10
    cs = betting_cs(np.ones(50), 0.95)
    assert cs.lo[-1] > 0.8 and cs.hi[-1] == 1.0 and cs.p_value[-1] < 1e-4
    with pytest.raises(Exception, match="in \\[0, 1\\]"):
        betting_cs([1.5])


def test_paired_difference_cs_decisions():
    assert paired_difference_cs([1] * 60, 0.95).decision == "shown"
    assert paired_difference_cs([-1] * 60, 0.95).decision == "shown"
    assert paired_difference_cs([-1] * 60, 0.95, greater=True).decision == "ruled out"
    assert paired_difference_cs([0] * 2000, 0.95, 0.05).decision == "ruled out"
    assert paired_difference_cs([0, 1, -1, 0] * 5, 0.95).decision == "open"


# ---- the tagger check -----------------------------------------------------------------
def test_tag_keys_and_rotation():
    assert tag_key("E2: the actor", 3) == "1" and tag_key("e1", 3) == "0"
    assert tag_key("none", 3) == "none" and tag_key("E4", 3) == "none"
    for seed in range(20):
        for k in (2, 3, 5):
            perm = rotation(seed, k)
            assert sorted(perm) == list(range(k))
            assert all(perm[j] != j for j in range(k))  # every answer moves
    assert rotation(1, 1) == [0]


def _checks(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for c in range(n):
        truth = [str(x) for x in rng.permutation(["0", "1", "none"])]
        perm = rotation(c, 3)
        if kind == "position":
            out.append(TagCheck(["0", "1", "none"], perm, ["0", "1", "none"],
                                ["0", "1", "none"]))
        elif kind == "content":
            out.append(TagCheck(truth, perm, [truth[perm[j]] for j in range(3)], truth))
        else:
            out.append(TagCheck(["none"] * 3, perm, ["none"] * 3, ["none"] * 3))
    return out


def test_tagger_check_decisions():
    pos = tagger_check(_checks("position", 8), 0.95)
    assert pos["decision"] == "position" and pos["position_calls"] == 8
    assert pos["position_share"]["p_value"] == pytest.approx(2 * 0.5 ** 8)
    assert pos["content_agreement"]["rate"] == 0.0
    assert pos["position_agreement"]["rate"] == 1.0
    con = tagger_check(_checks("content", 8), 0.95)
    assert con["decision"] == "content" and con["content_agreement"]["rate"] == 1.0
    assert tagger_check(_checks("flat", 8))["decision"] == "untestable"
    # five of five: p = 0.0625 is not below 0.05, yet the positional share is shown
    # above 10% ([0.57, 1]): the headline is marked all the same
    five = tagger_check(_checks("position", 5), 0.95)
    assert five["decision"] == "partly position" and "5 of 5" in five["reason"]
    assert verdict(five)[0] is False
    assert tagger_check(_checks("position", 5), 0.9)["decision"] == "position"


def test_interpretation_stability():
    q1 = [("Jaguar (car)", ["Jaguar (car)", "jaguar animal"]),
          ("jaguar  car", ["jaguar animal", "Jaguar car"]),
          ("the animal", ["the animal"])]
    q2 = [("x", ["x"]), ("x", ["x"])]
    s = interpretation_stability([q1, q2], 0.95)
    # q1: pairs (0,1) agree on top and set, (0,2) and (1,2) do not; q2 agrees
    assert s["top_reading_agreement"]["rate"] == pytest.approx(2 / 4)
    assert s["same_readings"]["rate"] == pytest.approx(2 / 4)
    assert s["queries"] == 2 and s["top_reading_agreement"]["clusters"] == 2


# ---- VB-Score end to end ---------------------------------------------------------------
def _vb_script(follow: str):
    answers = {"Q1": ["ansA", "ansB", "ansC"], "Q2": ["x", "y", "z"]}
    reading = {"ansA": "E1", "ansB": "E2", "ansC": "none", "x": "E2", "y": "none", "z": "E1"}

    def fn(req):
        user = req.messages[-1]["content"]
        if req.schema_name == "interpretations":
            return {"interpretations": [{"label": "A", "score": 1.0},
                                        {"label": "B", "score": 0.5}]}
        if req.schema_name == "system":
            return {"answers": answers["Q1" if "Q1" in user else "Q2"]}
        if req.schema_name == "tagger":
            shown = re.findall(r"(ans[ABC]|\b[xyz]\b)", user.split("nswers")[-1])
            if follow == "position":
                return {"tags": ["E1", "E2", "none"][: len(shown)]}
            return {"tags": [reading[a] for a in shown]}
        return {"correct": True, "reason": ""}
    return fn


@pytest.mark.parametrize("follow", ["position", "content"])
def test_vbscore_marks_a_position_tagger_unreliable(tmp_path, follow):
    from .test_vbscore_case_study import run_case, write_config

    write_config(tmp_path, replicas=4, k=3)
    import judgekit
    from judgekit.llm import Client, ClientSettings

    cfg = write_config(tmp_path, replicas=4, k=3, interpretations=2)
    with Client(ClientSettings(cache_dir=tmp_path / "cache", progress=False),
                providers={"mock/cs": mock.FunctionProvider(_vb_script(follow))}) as client:
        res = judgekit.run(cfg, client=client)
    assert run_case  # the shared helper module is importable
    check = res.model_dump(mode="json")["self_check"]
    assert check["tagger"]["decision"] == follow
    assert check["reliable"] is (follow == "content")
    assert all(d.reliable is (follow == "content") for d in res.payload.datasets)
    from judgekit.runs.pipeline import headline

    assert headline(res).startswith("UNRELIABLE") is (follow == "position")
    res.save(tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    assert ("class='warning'" in html) is (follow == "position")
    assert "Checks of the LLM steps" in html


def test_check_tagger_off_asks_no_extra_calls(tmp_path):
    import judgekit
    from judgekit.llm import Client, ClientSettings

    from .test_vbscore_case_study import write_config

    calls = {"tagger": 0}
    inner = _vb_script("content")

    def fn(req):
        if req.schema_name == "tagger":
            calls["tagger"] += 1
        return inner(req)

    cfg = write_config(tmp_path, replicas=2, k=3, check_tagger=False)
    with Client(ClientSettings(cache_dir=tmp_path / "cache", progress=False),
                providers={"mock/cs": mock.FunctionProvider(fn)}) as client:
        res = judgekit.run(cfg, client=client)
    assert calls["tagger"] == 4 and res.payload.self_check.tagger is None
    assert res.payload.self_check.reliable is True


def test_demo_replay_marks_the_headline_unreliable(tmp_path):
    """The contract: the committed demo says its tagger follows position."""
    env = {"PATH": "", "JUDGEKIT_CACHE_DIR": str(tmp_path / "cache"),
           "JUDGEKIT_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", "demo",
                        "--cassette-mode", "none", "--out", str(tmp_path / "d")],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "UNRELIABLE" in r.stdout and "position" in r.stdout
    res = json.loads((tmp_path / "d" / "results.json").read_text())
    assert res["self_check"]["reliable"] is False
    assert res["self_check"]["headline"] == "unreliable: the tagger follows position, not content"
    assert res["self_check"]["tagger"]["decision"] == "position"
    assert res["datasets"][0]["reliable"] is False
    html = (tmp_path / "d" / "report.html").read_text()
    assert "unreliable" in html and "follow the answers&#x27; positions" in html


# ---- the probe --------------------------------------------------------------------------
def _pairs_models(tmp_path, n=40):
    """Half the pairs have the good answer first; answer lengths and model families vary
    independently of which answer is good."""
    rows = []
    for i in range(n):
        good_a = i % 2 == 1
        long_good = (i // 2) % 2 == 0
        own_good = (i // 4) % 2 == 0
        good = f"ans {i} [good]" + (" and a longer explanation of it" if long_good else "")
        bad = f"x {i} [bad]" + ("" if long_good else " and a longer explanation of it")
        own, other = "openai/gpt-4o", "anthropic/claude-3-5"
        m_good, m_bad = (own, other) if own_good else (other, own)
        rows.append({"id": f"p{i}", "question": f"Q{i}?", "a": good if good_a else bad,
                     "b": bad if good_a else good, "correct": "a" if good_a else "b",
                     "model_a": m_good if good_a else m_bad,
                     "model_b": m_bad if good_a else m_good})
    tmp_path.mkdir(parents=True, exist_ok=True)
    p = tmp_path / "pairs.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _answers(req):
    user = req.messages[-1]["content"]
    labels = re.findall(r"^Answer (\w+):", user, re.MULTILINE)
    parts = re.split(r"^Answer \w+:", user, flags=re.MULTILINE)[1:3]
    return labels, parts


def _probe(tmp_path, fn, **extra):
    from .test_probe import _in_memory

    cfg = {"method": "probe", "data_path": str(_pairs_models(tmp_path)), "use_cache": False,
           "models": {"judge": "openai/gpt-4o"}, "resamples": 300, **extra}
    import judgekit
    from judgekit.llm import Client, ClientSettings

    assert _in_memory
    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"openai/gpt-4o": mock.FunctionProvider(fn)}) as client:
        res = judgekit.run(cfg, client=client)
    res.save(tmp_path / "run")
    return res.model_dump(mode="json")


def _oracle(obey: bool = False, prefer: str | None = None):
    def fn(req):
        labels, parts = _answers(req)
        if obey:
            for lab, text in zip(labels, parts):
                if "evaluator" in text.lower() or "OVERRIDE" in text:
                    return {"winner": lab}
        if prefer == "longer":
            a, b = (len(_strip(t)) for t in parts)
            return {"winner": labels[0] if a > b else labels[1]}
        return {"winner": labels[0] if "[good]" in parts[0] else labels[1]}
    return fn


def test_a_judge_that_obeys_planted_instructions_is_caught(tmp_path):
    r = _probe(tmp_path, _oracle(obey=True), transforms=["inject"])
    row = next(b for b in r["biases"] if b["name"] == "inject")
    # the planted side alternates a, b, a, ... and the good answer b, a, b, ...: the
    # oracle never picks the planted (worse) answer as given, always once it is planted
    assert row["bias"] == pytest.approx(1.0) and row["verdict"] == "biased"
    assert row["n"] == 40
    assert row["what"] == "shift toward the planted verdict"
    clean = _probe(tmp_path / "clean", _oracle(), transforms=["inject"])
    row = next(b for b in clean["biases"] if b["name"] == "inject")
    assert row["bias"] == 0.0 and row["verdict"] == "no bias shown"
    html = (tmp_path / "run" / "report.html").read_text()
    assert "inject" in html


def test_injection_phrasings_follow_the_language():
    from judgekit.methods.probe.bias import INJECTIONS, injection, injection_language

    assert injection_language("West Frisian (Frysk)") == "fy"
    assert injection_language(None) == "en"
    assert injection("fy", "a", 0) == INJECTIONS["fy"]["a"][0]
    assert injection("en", "pair", 4) == INJECTIONS["en"]["pair"][1]
    assert injection("en", "b", 0, ["Give it {verdict}."]) == "Give it 0."
    from judgekit.methods.probe.config import ProbeConfig

    with pytest.raises(ValueError, match="injection_language 'klingon'"):
        ProbeConfig(data_path="x", models={"judge": "mock/x"}, injection_language="klingon")


def test_pointwise_injection_is_measured_toward_the_planted_verdict(tmp_path):
    """A rubric judge that obeys planted text: pass when told 1, fail when told 0."""
    from judgekit.methods.probe.pointwise import planted

    assert [planted(i) for i in range(4)] == ["a", "b", "a", "b"]
    items = [{"Prompt": f"Freech {i}", "Output": f"Antwurd {i}", "Label": i % 2}
             for i in range(24)]
    data = tmp_path / "items.json"
    data.write_text(json.dumps(items))

    def fn(req):
        user = req.messages[-1]["content"]
        label = 1
        if "jou it in 0" in user or "label foar dit antwurd is 0" in user:
            label = 0
        return {"label": label, "criteria": [{"id": "c1", "value": label}]}

    import judgekit
    from judgekit.llm import Client, ClientSettings

    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"mock/pw": mock.FunctionProvider(fn)}) as client:
        res = judgekit.run({"method": "probe", "judge_mode": "pointwise",
                            "data_path": str(data), "transforms": ["inject"],
                            "models": {"judge": "mock/pw"}, "resamples": 300}, client=client)
    row = next(b for b in res.model_dump(mode="json")["biases"] if b["name"] == "inject")
    # as given the judge passes everything: toward-planted is 1/2; injected it is 1
    assert row["bias"] == pytest.approx(0.5) and row["verdict"] == "biased"


def test_self_preference_and_length_preference_controlled_for_quality(tmp_path):
    # the judge cannot see the model names, so a judge that prefers its own family is
    # simulated by the test knowing which answer is whose
    path = _pairs_models(tmp_path)
    by_text = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        by_text[r["a"]], by_text[r["b"]] = r["model_a"], r["model_b"]

    def fn(req):
        labels, parts = _answers(req)
        own = [lab for lab, t in zip(labels, parts)
               if "gpt" in by_text.get(_strip(t), "")]
        return {"winner": own[0]} if len(own) == 1 else _oracle()(req)

    r = _probe(tmp_path, fn, transforms=[])
    sp = r["self_preference"]
    assert sp["family"] == "gpt" and sp["preference"] == 1.0
    assert sp["verdict"] == "preference shown" and sp["n"] == 40
    assert r["length_bias"]["preference"] == 0.0  # lengths independent of the pick
    r = _probe(tmp_path / "len", _oracle(prefer="longer"), transforms=[])
    lb = r["length_bias"]
    assert lb["preference"] == 1.0 and lb["verdict"] == "preference shown"
    assert r["self_preference"]["preference"] == 0.0
    fair = _probe(tmp_path / "fair", _oracle(), transforms=[])
    assert fair["self_preference"]["preference"] == 0.0
    assert fair["length_bias"]["verdict"] == "no preference shown"


def _strip(text):
    m = re.search(r"<ANSWER_\w+>\n(.*?)\n</ANSWER_\w+>", text, re.S)
    return m.group(1) if m else text.strip()


def test_sequential_probe_stops_when_settled(tmp_path):
    def first(req):
        return {"winner": _answers(req)[0][0]}

    r = _probe(tmp_path, first, transforms=["swap"], sequential=True, sequential_batch=10)
    seq = r["sequential"]
    assert seq["stopped"] == "settled" and seq["units_asked"] == 20 and seq["units_max"] == 40
    assert r["n_pairs"] == 20 and seq["share_saved"] == 0.5
    assert r["position_bias"]["verdict"] == "biased"
    assert all(b["interval"] == "confidence sequence" for b in r["biases"])
    # an unbiased judge never settles at 40 pairs: it runs to the end
    r = _probe(tmp_path / "o", _oracle(), transforms=["swap"], sequential=True,
               sequential_batch=10)
    assert r["sequential"]["stopped"] == "reached n_pairs" and r["n_pairs"] == 40


def test_plan_command(tmp_path):
    def first(req):
        return {"winner": _answers(req)[0][0]}

    r = _probe(tmp_path, first, transforms=["swap", "pad"])
    row = next(x for x in r["plan"]["rows"] if x["name"] == "pad" and
               x["question"] == "direction")
    assert row["discordant"] == 0.0
    assert row["pairs_needed"]["0.1"] == paired_n_needed(0.1, 0.1, 0.8, 0.95)
    env = {"PATH": "", "HOME": str(tmp_path), "JUDGEKIT_CACHE_DIR": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, "-m", "judgekit.cli", "plan", str(tmp_path / "run"),
                          "--effect", "0.1", "--power", "0.9"], capture_output=True,
                         text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert str(paired_n_needed(0.1, 0.1, 0.9, 0.95)) in out.stdout
    bad = subprocess.run([sys.executable, "-m", "judgekit.cli", "plan", str(tmp_path)],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "no results.json" in bad.stderr


def test_a_second_judge_is_the_quality_reference_when_no_answer_is_known(tmp_path):
    """Pairs without a correct answer: a second judge's picks (reference_labels) control
    self-preference for quality; a bad labels file is a one-line error."""
    path = _pairs_models(tmp_path)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    by_text = {}
    for r in rows:
        by_text[r["a"]], by_text[r["b"]] = r["model_a"], r["model_b"]
    ref = tmp_path / "second_judge.jsonl"
    ref.write_text("".join(json.dumps({"id": r["id"], "reference": r.pop("correct")}) + "\n"
                           for r in rows))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def fn(req):
        labels, parts = _answers(req)
        own = [lab for lab, t in zip(labels, parts) if "gpt" in by_text.get(_strip(t), "")]
        return {"winner": own[0]} if len(own) == 1 else _oracle()(req)

    import judgekit
    from judgekit.llm import Client, ClientSettings

    cfg = {"method": "probe", "data_path": str(path), "transforms": [],
           "reference_labels": str(ref), "models": {"judge": "openai/gpt-4o"},
           "resamples": 300}
    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"openai/gpt-4o": mock.FunctionProvider(fn)}) as client:
        res = judgekit.run(cfg, client=client)
        assert res.payload.self_preference.preference == 1.0
        assert res.payload.self_preference.reference == "second judge on 40 pairs"
        ref.write_text('{"id": "p0", "reference": "c"}\n')
        with pytest.raises(Exception, match="line 1: field reference must be"):
            judgekit.run(cfg, client=client)


def test_judge_card_from_a_probe_and_an_audit_of_one_judge(tmp_path):
    """The packaged probe and audit (both the local Gemma) on one card; a run of another
    judge is refused with a one-line error (exit 2)."""
    import judgekit

    for name in ("probe_local", "nodata_west_frisian"):
        judgekit.run(name, cassette_mode="none", out=str(tmp_path / name))
    env = {"PATH": "", "HOME": str(tmp_path), "JUDGEKIT_CACHE_DIR": str(tmp_path / "c")}
    cli = [sys.executable, "-m", "judgekit.cli", "card"]
    r = subprocess.run(cli + [str(tmp_path / "probe_local"), str(tmp_path / "nodata_west_frisian"),
                              "--out", str(tmp_path / "card")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    card = json.loads((tmp_path / "card" / "card.json").read_text())
    assert card["judge"] == "local/gemma-3-270m"
    assert card["runs"] == ["probe_local", "nodata_west_frisian"]
    sections = [row["section"] for row in card["rows"]]
    assert sections == sorted(sections, key=["bias", "consistency", "people", "audit"].index)
    pos = next(x for x in card["rows"] if x["measure"].startswith("swap: P(first"))
    assert pos["decision"] == "biased" and pos["estimate"] == 0.5 and pos["n"] == 16
    assert pos["key"] == "position_bias" and pos["finding"] is True
    assert any(f.startswith("swap: P(first slot chosen)") for f in card["findings"])
    audit = next(x for x in card["rows"] if x["section"] == "audit")
    assert audit["decision"].startswith("inconclusive") and audit["ci"] is not None
    assert audit["key"] == "audit_success" and not audit["finding"]
    assert len({(x["key"], x["source"]) for x in card["rows"]}) == len(card["rows"])
    assert all(x["ci"] is not None and x["n"] > 0 for x in card["rows"]
               if x["estimate"] is not None)
    assert "swap: P(first slot chosen)" in r.stdout
    html = (tmp_path / "card" / "report.html").read_text()
    assert "Judge card" in html and "card.png" in html
    # another judge's probe cannot share the card
    other = tmp_path / "other"
    other.mkdir()
    res = json.loads((tmp_path / "probe_local" / "results.json").read_text())
    res["judge"] = "openai/gpt-4o"
    (other / "results.json").write_text(json.dumps(res))
    for f in (tmp_path / "probe_local").glob("*.jsonl"):
        (other / f.name).write_text(f.read_text())
    bad = subprocess.run(cli + [str(tmp_path / "probe_local"), str(other), "--out",
                                str(tmp_path / "c2")], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "one judge" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    again = judgekit.judge_card([tmp_path / "probe_local"])
    assert again.judge == "local/gemma-3-270m" and again.runs == ["probe_local"]


@pytest.mark.parametrize("seed", range(6))
def test_logistic_slope_matches_statsmodels(seed):
    sm = pytest.importorskip("statsmodels.api")
    from judgekit.stats.preference import logistic_slope

    rng = np.random.default_rng(seed)
    n = [40, 120, 300][seed % 3]
    x = np.tanh(rng.normal(size=n))
    q = rng.choice([-1.0, 0.0, 1.0], size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.3 * seed - 0.5 + 1.2 * x + 0.9 * q)))).astype(int)
    level = [0.9, 0.95, 0.99][seed % 3]
    s = logistic_slope(y, x, [q], level)
    m = sm.Logit(y, np.column_stack([np.ones(n), x, q])).fit(disp=0)
    assert s.slope == pytest.approx(m.params[1], abs=1e-8)
    assert s.p_value == pytest.approx(m.pvalues[1], rel=1e-6)
    assert s.ci == pytest.approx(list(m.conf_int(alpha=1 - level)[1]), abs=1e-8)


def test_logistic_slope_refuses_separated_data():
    from judgekit.stats.preference import logistic_slope

    q = [1.0, -1.0] * 10
    y = [1, 0] * 10
    s = logistic_slope(y, np.linspace(-1, 1, 20), [q])
    assert s.slope is None and "separated" in s.note
    assert logistic_slope([1, 1, 1], [0.1, 0.2, 0.3]).slope is None


def test_local_info_reports_the_build(tmp_path):
    pytest.importorskip("llama_cpp")
    env = {"PATH": "", "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "local", "info"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("llama-cpp-python ") and "build: " in r.stdout


def test_self_preference_names_an_unmatched_family(tmp_path):
    r = _probe(tmp_path, _oracle(), transforms=[], judge_family="mistral")
    sp = r["self_preference"]
    assert sp["preference"] is None and sp["n"] == 0
    assert "no pair has exactly one answer from the judge's family 'mistral'" in sp["verdict"]


def test_sequential_pointwise_probe(tmp_path):
    items = [{"Prompt": f"Freech {i}", "Output": f"Antwurd {i}", "Label": i % 2}
             for i in range(60)]
    data = tmp_path / "items.json"
    data.write_text(json.dumps(items))

    def always_pass(req):
        return {"label": 1, "criteria": [{"id": "c1", "value": 1}]}

    import judgekit
    from judgekit.llm import Client, ClientSettings

    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"mock/pw": mock.FunctionProvider(always_pass)}) as client:
        res = judgekit.run({"method": "probe", "judge_mode": "pointwise",
                            "data_path": str(data), "transforms": ["pad"],
                            "sequential": True, "sequential_batch": 20,
                            "sequential_margin": 0.2,
                            "models": {"judge": "mock/pw"}, "resamples": 300}, client=client)
    seq = res.model_dump(mode="json")["sequential"]
    # a judge that never changes its label: every decision is ruled out inside +-0.2
    assert seq["stopped"] == "settled" and seq["units_asked"] < 60
    assert all(d["decision"] == "ruled out" for d in seq["decisions"])
    assert res.payload.n_pairs == seq["units_asked"]
    assert res.payload.pass_rate.n == seq["units_asked"]


def test_length_preference_uses_both_orders_so_position_bias_cannot_leak_in(tmp_path):
    # the longer answer is always shown first; on half the pairs the judge just picks
    # the first-shown answer, on the other half the good one. As given, its errors fall
    # only where the longer answer is worse: a "preference for longer answers" of 0.5
    # that is the position bias. Both orders (the swap transform) show none.
    rows = []
    for i in range(40):
        long_good = i % 2 == 0
        good = f"ans {i} [good]" + (" and a longer explanation of it" if long_good else "")
        bad = f"x {i} [bad]" + ("" if long_good else " and a longer explanation of it")
        a, b = (good, bad) if long_good else (bad, good)
        rows.append({"id": f"p{i}", "question": f"Q{i}?", "a": a, "b": b,
                     "correct": "a" if long_good else "b"})
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def first_when_hard(req):
        labels, parts = _answers(req)
        i = int(re.search(r"(?:ans|x) (\d+) \[", parts[0]).group(1))
        if i < 20:
            return {"winner": labels[0]}
        return {"winner": labels[0] if "[good]" in parts[0] else labels[1]}

    import judgekit
    from judgekit.llm import Client, ClientSettings

    def probe(transforms):
        cfg = {"method": "probe", "data_path": str(data), "use_cache": False,
               "models": {"judge": "openai/gpt-4o"}, "resamples": 300,
               "transforms": transforms}
        with Client(ClientSettings(use_cache=False, progress=False),
                    providers={"openai/gpt-4o": mock.FunctionProvider(first_when_hard)}
                    ) as client:
            return judgekit.run(cfg, client=client).model_dump(mode="json")["length_bias"]

    given = probe([])
    assert given["orders"].startswith("the order as given")
    assert given["n"] == 40 and given["preference"] == pytest.approx(0.5)
    assert given["error_when_worse"] == {"rate": 0.5, "n": 20}
    assert given["error_when_better"] == {"rate": 0.0, "n": 20}
    assert given["verdict"] == "preference shown"  # the leak the fix removes
    both = probe(["swap"])
    assert both["orders"].startswith("both orders")
    assert both["n"] == 80 and both["preference"] == 0.0
    assert both["error_when_worse"] == {"rate": 0.25, "n": 40}
    assert both["error_when_better"] == {"rate": 0.25, "n": 40}
    assert both["verdict"] == "no preference shown"
    assert both["ci"][0] < 0 < both["ci"][1] and -1 <= both["ci"][0] and both["ci"][1] <= 1


def test_a_clustered_feature_preference_matches_hand_computed_newcombe():
    # two verdicts per pair: the worse group has pairs with errors (1,1), (0,0), (1,0);
    # the better group (0,0), (0,1). Design effects from the cluster totals, Wilson
    # limits at n / deff (no continuity correction), Newcombe's method 10.
    from judgekit.stats.proportions import wilson_effective

    feature = ["a"] * 10
    better = ["b"] * 6 + ["a"] * 4
    chosen = ["a", "a", "b", "b", "a", "b", "a", "a", "a", "b"]
    groups = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    p = feature_preference(feature, better, chosen, 0.9, groups=groups)
    p1, p2 = 3 / 6, 1 / 4
    assert p.preference == pytest.approx(p1 - p2) and p.n == 10
    # deff: worse clusters totals y = (2, 0, 1), m = 2: resid (1, -1, 0) -> var = 3/2 * 2 / 36
    d1 = max(1.0, (3 / 2 * 2 / 36) / (p1 * (1 - p1) / 6))
    resid = np.array([0, 1]) - p2 * 2
    d2 = max(1.0, (2 * float(np.sum(resid ** 2)) / 16) / (p2 * (1 - p2) / 4))
    l1, u1 = wilson_effective(p1, 6 / d1, 0.9, continuity=False)
    l2, u2 = wilson_effective(p2, 4 / d2, 0.9, continuity=False)
    d = p1 - p2
    assert p.ci == pytest.approx([d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
                                  d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)])
    from scipy.stats import norm
    pooled = 4 / 10
    se = math.sqrt(pooled * (1 - pooled) * (d1 / 6 + d2 / 4))
    assert p.p_value == pytest.approx(2 * norm.sf(d / se))
    # one verdict per pair keeps Fisher's exact test and the plain Newcombe interval
    single = feature_preference(feature, better, chosen, 0.9, groups=list(range(10)))
    assert single == feature_preference(feature, better, chosen, 0.9)
