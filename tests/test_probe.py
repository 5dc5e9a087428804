"""Judge reliability statistics pinned to values, and the probe end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgekit.stats.agreement import (
    agreement,
    benjamini_hochberg,
    cohen_kappa,
    flip_excess,
    gwet_ac,
    krippendorff_alpha,
    ppi_mean,
    repeat_reliability,
    signed_bias,
)

SKEW_J = [1] * 90 + [0] * 5 + [1] * 5
SKEW_H = [1] * 90 + [1] * 5 + [0] * 5


def test_agreement_under_skew_pinned():
    # 90% raw agreement, but all disagreement on the rare class
    assert cohen_kappa(SKEW_J, SKEW_H) == pytest.approx(-0.05263157894736842)
    assert gwet_ac(SKEW_J, SKEW_H) == pytest.approx((0.9 - 0.095) / (1 - 0.095))
    # Krippendorff: 1 - (n - 1) o_01 / (n_0 n_1) = 1 - 199 * 10 / (190 * 10)
    assert krippendorff_alpha(SKEW_J, SKEW_H) == pytest.approx(1 - 199 / 190)
    ag = agreement(SKEW_J, SKEW_H, seed=0, resamples=300)
    assert ag.percent == 0.9 and ag.prevalence == 0.95 and ag.majority_baseline == 0.95
    assert ag.cis["percent"][0] < 0.9 < ag.cis["percent"][1]


def test_weighted_kappa_matches_sklearn():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 300)
    b = np.clip(a + rng.integers(-1, 2, 300), 0, 3)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert cohen_kappa(a, b, "quadratic") == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic"))
    # AC2 with quadratic weights stays within [-1, 1] and above AC1 for near misses
    assert gwet_ac(a, b, "quadratic") > gwet_ac(a, b)


def test_benjamini_hochberg_pinned():
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, 0.04, 0.02])
    assert benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9])


def test_flip_excess_uses_exact_mcnemar_on_discordant_items():
    t = [1] * 8 + [0] * 12
    r = [1] * 2 + [0] * 18
    e = flip_excess(t, r, seed=0, resamples=500)
    assert (e.flip_rate, e.noise_floor, e.excess) == pytest.approx((0.4, 0.1, 0.3))
    from scipy.stats import binomtest

    assert e.p_value == pytest.approx(binomtest(6, 6, 0.5).pvalue)  # 0.03125
    assert e.excess_ci[0] > 0


def test_signed_bias_and_interval():
    b, ci, n = signed_bias([1.0, 1.0, 0.5, 1.0], seed=0, resamples=500)
    assert (b, n) == (0.375, 4) and ci[0] <= b <= ci[1]


def test_repeat_reliability_spearman_brown():
    x = np.array([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0]], float)
    rel = repeat_reliability(x, target=0.9)
    p = x.mean(axis=1)
    msb, msw = 4 * np.var(p, ddof=1), np.sum((x - p[:, None]) ** 2) / (4 * 3)
    r1 = (msb - msw) / (msb + 3 * msw)
    assert rel.single_run_reliability == pytest.approx(r1)
    assert rel.k_for_target == int(np.ceil(0.9 * (1 - r1) / (r1 * 0.1)))
    assert rel.unstable_share == 0.5 and rel.pass_ci[0] == pytest.approx([0.5101, 1.0],
                                                                          abs=1e-4)


def test_ppi_formula_pinned():
    from judgekit.stats.bootstrap import pseudo_variance
    from judgekit.stats.proportions import wilson_effective

    f = np.array([1, 1, 0, 1, 0, 1, 1, 0] * 5, float)
    fl, y = np.array([1, 0, 1, 1] * 5, float), np.array([1, 0, 0, 1] * 5, float)
    c = ppi_mean(f, fl, y, level=0.90)
    # power tuning: lambda = Cov(f, y) / Var(f) = (1/8) / (3/16)
    assert c.lam == pytest.approx(2 / 3)
    rect = y - c.lam * fl
    assert c.estimate == pytest.approx(c.lam * f.mean() + rect.mean()) == pytest.approx(5 / 12)
    # the rectifier's variance counts a pseudo-disagreement each way (range [-lam, 1])
    resid = pseudo_variance(rect, -c.lam, 1.0)
    var = (1 / 20 - 1 / 40) * resid + y.var(ddof=1) / 40
    n_eff = 20 * (y.var(ddof=1) / 20) / var
    assert c.ci == pytest.approx(list(wilson_effective(5 / 12, n_eff, 0.90, 0.5, df=19)))
    assert c.human_only == 0.5 and c.n_labelled == 20
    assert c.human_only_ci == pytest.approx(list(wilson_effective(0.5, 20, 0.90, 0.5, df=19)))
    # lambda = 0 is the human labels alone
    c0 = ppi_mean(f, fl, y, level=0.90, lam=0.0)
    assert c0.estimate == 0.5 and c0.ci == pytest.approx(c0.human_only_ci)
    # four labels: the tuned judge no longer helps once its rectifier counts the
    # pseudo-disagreements, so the human labels alone are reported
    small = ppi_mean(f[:8], fl[:4], y[:4], level=0.90)
    assert small.lam == 0.0 and small.ci == pytest.approx(small.human_only_ci)


def test_wilson_continuity_corrected_matches_newcombe_1998_table():
    from judgekit.stats.proportions import wilson_effective

    # Newcombe (1998) Statistics in Medicine 17:857, methods 3 and 4
    assert list(wilson_effective(81 / 263, 263, 0.95, continuity=False)) == pytest.approx(
        [0.2553, 0.3662], abs=1e-4)
    assert list(wilson_effective(81 / 263, 263, 0.95)) == pytest.approx([0.2535, 0.3682],
                                                                        abs=1e-4)
    assert list(wilson_effective(1 / 29, 29, 0.95)) == pytest.approx([0.0018, 0.1963],
                                                                     abs=1e-4)
    assert list(wilson_effective(0.0, 20, 0.95)) == pytest.approx([0.0, 0.2005], abs=1e-4)
    # the level is honoured: 90% is narrower than 95%
    lo90, hi90 = wilson_effective(81 / 263, 263, 0.90)
    assert 0.2535 < lo90 and hi90 < 0.3682


def test_newcombe_paired_difference_pinned():
    from judgekit.stats.proportions import newcombe_paired

    def table(a, b, c, d):
        return [1] * a + [1] * b + [0] * c + [0] * d, [1] * a + [0] * b + [1] * c + [0] * d

    # Newcombe (1998) Statistics in Medicine 17:2635, example (a), method 10
    r = newcombe_paired(*table(36, 12, 2, 0))
    assert r.diff == pytest.approx(0.2) and r.ci == pytest.approx([0.0569, 0.3404], abs=1e-4)
    from scipy.stats import binomtest

    assert r.p_value == pytest.approx(binomtest(12, 14, 0.5).pvalue)
    assert (r.only_first, r.only_second, r.n) == (12, 2, 50)
    # no item moved: a width from Wilson, not [0, 0]; sign flips the interval
    z = newcombe_paired(*table(0, 0, 0, 20))
    assert z.ci == pytest.approx([-0.1611, 0.1611], abs=1e-4)
    m = newcombe_paired(*table(36, 2, 12, 0))
    assert m.ci == pytest.approx([-0.3404, -0.0569], abs=1e-4)
    assert newcombe_paired(*table(36, 12, 2, 0), level=0.90).ci[0] > 0.0569


def test_kappa_undefined_when_both_raters_use_one_class_never_one():
    import math

    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(krippendorff_alpha([0, 0], [0, 0]))
    ag = agreement([1] * 10, [1] * 10, seed=0, resamples=200)
    assert ag.kappa is None and ag.alpha is None and "kappa" in ag.undefined
    # resamples where both raters are constant are dropped, not scored 1.0
    j = [1] * 28 + [0, 1]
    h = [1] * 28 + [1, 0]
    ag = agreement(j, h, seed=0, resamples=500)
    assert ag.cis["kappa"][1] < 1.0
    # perfect agreement: Wilson-bounded, not [1, 1]
    ag = agreement([1, 0] * 15, [1, 0] * 15, seed=0, resamples=200, level=0.9)
    assert ag.cis["percent"][1] == 1.0 and ag.cis["percent"][0] < 1.0
    assert ag.cis["kappa"][0] < 1.0 and ag.level == 0.9


# ---- the probe end to end ---------------------------------------------------------
def _pairs(tmp_path, n=40):
    p = tmp_path / "pairs.jsonl"
    p.write_text("".join(json.dumps({
        "id": f"p{i}", "question": f"Q{i}?", "a": f"ans {i} [good]" if i % 2 else f"x{i} [bad]",
        "b": f"x{i} [bad]" if i % 2 else f"ans {i} [good]", "correct": "a" if i % 2 else "b",
        "human": "a" if i % 2 else "b"}) + "\n" for i in range(n)))
    return p


def _in_memory(config, name, fn, out=None):
    """One call of the run pipeline with the judge passed in as a provider object;
    nothing is written unless ``out``. Returns the result as results.json holds it."""
    import judgekit
    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.providers.mock import FunctionProvider

    with Client(ClientSettings(use_cache=False, progress=False),
                providers={f"mock/{name}": FunctionProvider(fn)}) as client:
        result = judgekit.run(config, client=client)
    if out is not None:
        result.save(out)
    return result.model_dump(mode="json")


def _run(tmp_path, name, fn, **extra):
    return _in_memory({"method": "probe", "data_path": str(_pairs(tmp_path)),
                       "use_cache": False, "models": {"judge": f"mock/{name}"},
                       "resamples": 300, **extra}, name, fn, out=tmp_path / name)


def _first_label(req):
    import re

    return re.findall(r"^Answer (\w+):", req.messages[-1]["content"], re.MULTILINE)[0]


def test_always_first_judge_is_maximally_position_biased(tmp_path):
    r = _run(tmp_path, "first", lambda req: {"winner": _first_label(req)}, human_sample=10)
    assert r["position_bias"]["bias"] == 0.5 and r["noise_floor"]["rate"] == 0.0
    assert r["position_bias"]["verdict"] == "biased" and r["noise_floor"]["source"] == "placebo"
    swap = next(t for t in r["transforms"] if t["name"] == "swap")
    assert swap["flip_rate"] == 1.0 and swap["excess"] == 1.0
    assert swap["verdict"].startswith("inconsistent")
    assert {t["name"] for t in r["transforms"]} == {"swap", "rename", "pad", "inject"}
    for t in r["transforms"]:
        assert set(t) >= {"name", "flip_rate", "noise_floor", "excess", "excess_ci",
                          "p_value"}
    assert r["order_consistency"]["rate"] == 0.0
    assert r["human"]["agreement"]["percent"] == 0.5
    assert "a_win_rate" in r["human"]


def test_an_oracle_judge_shows_no_bias(tmp_path):
    import re

    def oracle(req):
        user = req.messages[-1]["content"]
        labels = re.findall(r"^Answer (\w+):", user, re.MULTILINE)
        return {"winner": labels[0] if user.index("[good]") < user.index("[bad]")
                else labels[1]}

    r = _run(tmp_path, "oracle", oracle)
    assert r["position_bias"]["bias"] == 0.0 and r["accuracy"]["both_orders"]["rate"] == 1.0
    assert all(t["flip_rate"] == 0.0 and t["verdict"].startswith("consistent")
               for t in r["transforms"])
    assert all(b["verdict"] == "no bias shown" for b in r["biases"])
    assert (tmp_path / "oracle" / "report.html").exists()


def test_unanimous_items_get_a_wilson_bound_not_certainty():
    from judgekit.stats.proportions import wilson_interval

    b, ci, n = signed_bias([1.0] * 15, seed=0)
    lo, _ = wilson_interval(15, 15)
    assert (b, n) == (0.5, 15) and ci == pytest.approx([lo - 0.5, 0.5])
    e = flip_excess([1] * 20, [0] * 20, seed=0)
    assert e.excess == 1.0 and 0 < e.excess_ci[0] < 1.0


def test_ppi_shares_for_k_ary_labels_sum_to_one():
    from judgekit.stats.agreement import ppi_shares

    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 400)
    f = np.where(rng.random(400) < 0.8, y, rng.integers(0, 3, 400))
    lab = rng.choice(400, 60, replace=False)
    shares = ppi_shares(f, f[lab], y[lab])
    assert set(shares) == {0, 1, 2}
    assert sum(s.estimate for s in shares.values()) == pytest.approx(1.0)


def _pointwise(tmp_path, name, fn, out=None, **extra):
    from judgekit.testing import judges

    (tmp_path / "items.json").write_text(json.dumps(judges.make_items(40, seed=5)))
    (tmp_path / "rubric.yaml").write_text(judges.rubric_yaml())
    para = judges.rubric_yaml().replace("holds.", "is present in the response.")
    (tmp_path / "para.yaml").write_text(para)
    return _in_memory({
        "method": "probe", "judge_mode": "pointwise", "data_path": str(tmp_path / "items.json"),
        "rubric": str(tmp_path / "rubric.yaml"), "rubric_paraphrase": str(tmp_path / "para.yaml"),
        "use_cache": False, "resamples": 300, "models": {"judge": f"mock/{name}"}, **extra},
        name, fn, out)


def test_pointwise_oracle_is_stable_under_every_transform(tmp_path):
    from judgekit.testing import judges

    r = _pointwise(tmp_path, "pw_oracle", judges.judge("oracle"), human_sample=10)
    assert r["mode"] == "pointwise" and r["position_bias"] is None
    assert [t["name"] for t in r["transforms"]] == ["reorder", "paraphrase", "pad", "inject"]
    assert all(t["flip_rate"] == 0.0 for t in r["transforms"])
    assert r["human"]["agreement"]["percent"] == 1.0 and r["human"]["agreement"]["kappa"] == 1.0


def test_pointwise_length_biased_judge_is_caught_by_padding(tmp_path):
    from judgekit.testing import judges

    oracle = judges.judge("oracle")

    def lengthy(req):
        out = json.loads(oracle(req))
        if "once more in other words" in req.messages[-1]["content"]:
            out["label"] = 1  # a padded answer always passes
            out["criteria"] = [{**c, "value": 1} for c in out["criteria"]]
        return out

    r = _pointwise(tmp_path, "pw_long", lengthy)
    pad = next(t for t in r["transforms"] if t["name"] == "pad")
    assert pad["verdict"].startswith("inconsistent") and pad["excess_ci"][0] > 0
    assert r["padding_bias"]["bias"] > 0 and r["padding_bias"]["ci"][0] > 0
    assert r["padding_bias"]["verdict"] == "biased"


def test_probe_judge_python_api(tmp_path):
    import judgekit
    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.providers.mock import FunctionProvider

    pairs = [{"id": f"p{i}", "question": f"Q{i}?", "a": f"a{i}", "b": f"b{i}"}
             for i in range(12)]
    first = FunctionProvider(lambda req: {"winner": _first_label(req)})
    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"mock/api_first": first}) as client:
        res = judgekit.probe_judge(pairs, judge="mock/api_first", client=client,
                                   resamples=300, out=tmp_path / "o")
    assert res.method == "probe" and res.payload.position_bias.bias == 0.5
    assert [t.name for t in res.payload.transforms] == ["swap", "rename", "pad", "inject"]
    assert len(list(res.detail("items"))) == 12


def test_importance_sampled_ppi_is_unbiased_and_covers():
    from judgekit.stats.agreement import importance_inclusion, ppi_weighted

    rng = np.random.default_rng(11)
    n_items, truth = 1500, 0.6
    hits, ests = 0, []
    for _ in range(300):
        y = (rng.random(n_items) < truth).astype(float)
        unsure = rng.random(n_items) < 0.3
        f = np.where(unsure & (rng.random(n_items) < 0.5), 1 - y, y)
        pi = importance_inclusion(unsure.astype(float), 120)
        assert pi.sum() == pytest.approx(120, rel=1e-6) and pi.min() > 0
        lab = np.flatnonzero(rng.random(n_items) < pi)
        c = ppi_weighted(f, lab, y[lab], pi, level=0.90)
        ests.append(c.estimate)
        hits += c.ci[0] <= y.mean() <= c.ci[1]
    assert np.mean(ests) == pytest.approx(truth, abs=0.01)
    assert hits / 300 >= 0.87


def test_human_ceiling_pinned():
    from judgekit.stats.agreement import ceiling

    ann = [[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 1, 0]]
    c = ceiling(ann, seed=0, resamples=200)
    # pairs (0,1): 3/4, (0,2): 3/4, (1,2): 2/4
    assert c["percent"] == pytest.approx((0.75 + 0.75 + 0.5) / 3)
    assert c["annotator_pairs"] == 3 and c["n"] == 4


def test_probe_reports_the_human_ceiling_and_importance_sampled_rate(tmp_path):
    import re

    rows = []
    for i in range(60):
        good_first = i % 2 == 0
        humans = ["a" if good_first else "b"] * 2 + (["b" if good_first else "a"]
                                                      if i % 5 == 0 else ["a" if good_first
                                                                          else "b"])
        rows.append({"id": f"p{i}", "question": f"Q{i}?",
                     "a": f"ans{i} [good]" if good_first else f"x{i} [bad]",
                     "b": f"x{i} [bad]" if good_first else f"ans{i} [good]",
                     "humans": humans})
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def oracle(req):
        user = req.messages[-1]["content"]
        labels = re.findall(r"^Answer (\w+):", user, re.MULTILINE)
        return {"winner": labels[0] if user.index("[good]") < user.index("[bad]")
                else labels[1]}

    r = _in_memory({
        "method": "probe", "data_path": str(tmp_path / "pairs.jsonl"), "use_cache": False,
        "resamples": 300, "models": {"judge": "mock/hum"}, "human_sample": 20,
        "human_sampling": "importance"}, "hum", oracle)
    # annotators 1 and 2 always agree; annotator 3 disagrees on 12 of 60 items
    assert r["human"]["human_ceiling"]["percent"] == pytest.approx((1 + 0.8 + 0.8) / 3)
    assert r["human"]["agreement"]["percent"] == 1.0
    assert r["human"]["a_win_rate"]["sampling"] == "importance"
    assert r["human"]["a_win_rate"]["estimate"] == pytest.approx(0.5)


def test_compare_two_pointwise_probes_by_their_pass_rates(tmp_path):

    from judgekit.testing import judges

    for name, kind in (("a", "oracle"), ("b", "constant")):
        (tmp_path / name).mkdir()
        _pointwise(tmp_path / name, f"pw_{name}", judges.judge(kind), transforms=["pad"],
                   out=tmp_path / name / "run")
    doc = _compare_cli(tmp_path)
    items = json.loads((tmp_path / "a" / "items.json").read_text())
    truth = sum(int(x["Label"]) for x in items) / len(items)  # the oracle passes these
    assert doc["measure"] == "pass rate (verdicts as given)" and doc["n_paired"] == 40
    assert doc["difference"] == pytest.approx(1.0 - truth)
    lo, hi = doc["difference_ci"]
    assert lo <= doc["difference"] <= hi and -1 <= lo and hi <= 1


def test_compare_two_pointwise_probes_corrects_by_their_human_labels(tmp_path):
    """Two systems' answers to the same 40 questions, each judged pointwise with human
    labels: compare's main row is the prediction-powered B - A (labels on every item:
    exactly the people's difference), the judges' own difference a secondary row."""

    from judgekit.testing import judges

    labels = {}
    for name, kind, seed in (("a", "oracle", 5), ("b", "constant", 6)):
        (tmp_path / name).mkdir()
        items = judges.make_items(40, seed=seed)
        labels[name] = [int(x["Label"]) for x in items]
        (tmp_path / name / "items.json").write_text(json.dumps(items))
        (tmp_path / name / "rubric.yaml").write_text(judges.rubric_yaml())
        para = judges.rubric_yaml().replace("holds.", "is present in the response.")
        (tmp_path / name / "para.yaml").write_text(para)
        _in_memory({
            "method": "probe", "judge_mode": "pointwise",
            "data_path": str(tmp_path / name / "items.json"),
            "rubric": str(tmp_path / name / "rubric.yaml"),
            "rubric_paraphrase": str(tmp_path / name / "para.yaml"), "transforms": ["pad"],
            "use_cache": False, "resamples": 300, "models": {"judge": f"mock/pw2_{name}"}},
            f"pw2_{name}", judges.judge(kind), tmp_path / name / "run")
    doc = _compare_cli(tmp_path)
    people = (sum(labels["b"]) - sum(labels["a"])) / 40
    assert doc["measure"].startswith("pass rate corrected by 40 human labels")
    assert doc["difference"] == pytest.approx(people)
    lo, hi = doc["difference_ci"]
    assert lo <= people <= hi and -1 <= lo and hi <= 1
    raw = next(x for x in doc["secondary"] if x["name"] == "pass rate (verdicts as given)")
    assert raw["difference"] == pytest.approx(1.0 - sum(labels["a"]) / 40)


def test_plan_prints_the_label_plan_of_a_probes_corrected_rate(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from judgekit.stats.ppi import Corrected
    from judgekit.testing import judges

    r = _pointwise(tmp_path, "pw_plan", judges.judge("oracle"), transforms=["pad"],
                   human_sample=10, out=tmp_path / "run")
    c = r["human"]["a_win_rate"]
    jk = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))
    out = subprocess.run([jk, "plan", str(tmp_path / "run")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "human labels for a corrected interval of +/- 0.05" in out.stdout
    line = next(x for x in out.stdout.splitlines() if x.startswith("corrected pass rate"))
    fields = {k: c[k] for k in Corrected._fields if k in c}
    need = Corrected(**fields).labels_for_halfwidth(0.05)
    assert c["labels_for_target"] == need and need is not None and 10 < need <= 40
    assert line.split()[-1] == str(need) and line.split()[-2] == "10"


def _compare_cli(tmp_path):
    """`judgekit compare a/run b/run` through the installed command; its compare.json."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    jk = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))
    r = subprocess.run([jk, "compare", str(tmp_path / "a" / "run"), str(tmp_path / "b" / "run"),
                        "--out", str(tmp_path / "cmp")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "cmp" / "compare.json").read_text())
