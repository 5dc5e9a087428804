"""Choose a judge or a jury (issue 48): the command's contract, the jury and selective
statistics pinned on small cases."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from judgekit.stats.jury import dawid_skene, effective_judges, majority_vote
from judgekit.stats.selective import calibrate_threshold

JK = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([JK, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def test_majority_counts_abstentions_and_surfaces_ties():
    v = np.array([[0, 0, 1], [1, -1, 1], [0, 1, -1], [-1, -1, -1], [1, 1, 1]])
    got = majority_vote(v, 2)
    assert got.labels.tolist() == [0, 1, -1, -1, 1]
    assert (got.ties, got.empty) == (1, 1)


def test_dawid_skene_outvotes_a_majority_of_weak_judges():
    rng = np.random.default_rng(0)
    n = 600
    t = (rng.random(n) < 0.5).astype(int)
    acc = [0.95, 0.6, 0.6, 0.6, 0.6]
    v = np.stack([np.where(rng.random(n) < a, t, 1 - t) for a in acc], axis=1)
    ds = dawid_skene(v, 2)
    mv = majority_vote(v, 2)
    assert (ds.labels == t).mean() > (mv.labels == t).mean() + 0.05
    assert (ds.labels == t).mean() > 0.9
    # with people's labels fixed the fit follows them where given
    half = t.copy()
    half[n // 2:] = -1
    semi = dawid_skene(v, 2, half)
    assert (semi.labels[: n // 2] == t[: n // 2]).all()


def test_effective_judges_is_kish_for_equally_correlated_errors():
    rng = np.random.default_rng(1)
    base = rng.random(5000) < 0.2
    independent = np.stack([rng.random(5000) < 0.2 for _ in range(4)], axis=1).astype(float)
    assert effective_judges(independent) == pytest.approx(4, abs=0.15)
    same = np.stack([base] * 4, axis=1).astype(float)
    assert effective_judges(same) == 1.0
    # each error is the shared one half the time: rho = 0.5^2 = 0.25, 4 / (1 + 3 * 0.25)
    mix = np.stack([np.where(rng.random(5000) < 0.5, base, rng.random(5000) < 0.2)
                    for _ in range(4)], axis=1).astype(float)
    assert effective_judges(mix) == pytest.approx(4 / (1 + 3 * 0.25 / 1.0), abs=0.3)


def test_fixed_sequence_threshold_stops_at_the_first_acceptance_failure():
    # 100 items: the 40 most confident all right, then 30 at 70%, then 30 at 50%
    c = np.concatenate([np.full(40, 0.95), np.full(30, 0.8), np.full(30, 0.6)])
    a = np.concatenate([np.ones(40), np.tile([1, 1, 1, 1, 1, 1, 1, 0, 0, 0], 3),
                        np.tile([1, 0], 15)])
    sel = calibrate_threshold(c, a, target=0.8, risk=0.1)
    # at 0.95: 40/40, p = 0.8^40; at 0.8: 61/70, p = P(Bin(70, 0.8) >= 61) ~ 0.07 <= 0.1;
    # at 0.6: 76/100, p > 0.1: stop, keep 0.8
    assert float(binom.sf(60, 70, 0.8)) <= 0.1 < float(binom.sf(75, 100, 0.8))
    assert sel.threshold == 0.8 and sel.kept_labelled == 70
    assert sel.agreement == pytest.approx(61 / 70)
    assert calibrate_threshold(c, a, target=0.99, risk=0.1).threshold is None


def _pairwise(path: Path, acc: float, seed: int, truth: list[str]) -> Path:
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["pair_id", "question", "first", "second", "winner", "confidence", "label"])
        for i, lab in enumerate(truth):
            conf = 0.5 + 0.5 * rng.random()
            right = rng.random() < min(1.0, acc + (conf - 0.75))
            win = lab if right else ("second" if lab == "first" else "first")
            w.writerow([f"p{i}", f"Q{i}", f"a{i}", f"b{i}", win, round(conf, 4), lab])
    return path


def test_choose_writes_the_contract_and_calls_no_model(tmp_path):
    rng = np.random.default_rng(7)
    truth = ["first" if rng.random() < 0.5 else "second" for _ in range(400)]
    a = _pairwise(tmp_path / "strong.csv", 0.9, 1, truth)
    b = _pairwise(tmp_path / "weak.csv", 0.7, 2, truth)
    env_free = _cli("choose", str(a), str(b), "--price", "strong=0.01", "--price",
                    "weak=0.001", "--selective", "--target-agreement", "0.8", "--risk",
                    "0.1", "--out", "c", cwd=tmp_path)
    assert env_free.returncode == 0, env_free.stderr
    doc = json.loads((tmp_path / "c" / "choice.json").read_text())
    names = [j["name"] for j in doc["judges"]]
    assert names == ["strong", "weak"]
    for j in doc["judges"]:
        assert j["n"] == 400 and set(j["agreement"]) >= {"estimate", "ci"}
        assert j["cost_per_item"] in (0.01, 0.001)
    assert all("ci" in p for p in doc["pairs"])
    agree = next(p for p in doc["pairs"] if p["measure"] == "agreement")
    assert agree["difference"] > 0 and agree["ci"][0] > 0  # strong agrees more
    assert doc["decision"].startswith("use strong") and doc["chosen"] == "strong"
    for name in ("majority", "weighted"):
        assert set(doc["jury"][name]["agreement"]) >= {"estimate", "ci"}
        assert 1 <= doc["jury"][name]["effective_judges"] <= 2
    sel = doc["selective"]
    assert set(sel) >= {"threshold", "coverage", "agreement", "guarantee"}
    assert sel["confidence"] == "the judge's own confidence column"
    assert 0 < sel["coverage"] <= 1 and sel["agreement"]["estimate"] >= 0.8
    # a bad price is one line, exit 2
    r = _cli("choose", str(a), str(b), "--price", "strong", "--out", "d", cwd=tmp_path)
    assert r.returncode == 2 and "--price 'strong'" in r.stderr


def test_choose_reads_analyse_runs_and_several_judge_columns(tmp_path):
    rng = np.random.default_rng(3)
    f = tmp_path / "multi.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "judge_big", "judge_small", "human"])
        for i in range(300):
            h = int(rng.random() < 0.5)
            w.writerow([f"i{i}", h if rng.random() < 0.92 else 1 - h,
                        h if rng.random() < 0.9 else 1 - h, h])
    assert _cli("analyse", str(f), "--out", "run", cwd=tmp_path).returncode == 0
    r = _cli("choose", "run", "--price", "big=0.01", "--price", "small=0.0005",
             "--margin", "0.1", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "c" / "choice.json").read_text())
    assert {j["name"] for j in doc["judges"]} == {"big", "small"}
    assert all(j["leniency"] is not None for j in doc["judges"])
    # small is within 0.1 of big, 20x cheaper: it is chosen, and the sentence says why
    assert doc["chosen"] == "small" and "20x less" in doc["decision"]


def _with_cost(src: Path, dst: Path, column: str, value: float) -> Path:
    rows = list(csv.DictReader(src.open()))
    with open(dst, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, [*rows[0], column])
        w.writeheader()
        for r in rows:
            w.writerow({**r, column: value})
    return dst


def test_costs_come_from_the_files_and_a_cascade_escalates_to_people(tmp_path):
    """Cost per item read from the files' own columns (price_per_example, cost); a
    cheapest-first cascade whose thresholds are chosen together (Learn-then-Test); the
    escalated items land in escalated.jsonl under the ids `judgekit label` uses, and
    `judgekit label --queue` offers them first."""
    rng = np.random.default_rng(11)
    truth = ["first" if rng.random() < 0.5 else "second" for _ in range(600)]
    cheap = _with_cost(_pairwise(tmp_path / "c0.csv", 0.72, 5, truth),
                       tmp_path / "cheap.csv", "price_per_example", 0.0005)
    dear = _with_cost(_pairwise(tmp_path / "d0.csv", 0.9, 6, truth),
                      tmp_path / "dear.csv", "cost", 0.01)
    r = _cli("choose", str(dear), str(cheap), "--selective", "--cascade",
             "--target-agreement", "0.88", "--risk", "0.1", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "c" / "choice.json").read_text())
    cost = {j["name"]: (j["cost_per_item"], j["cost_source"]) for j in doc["judges"]}
    assert cost["cheap"][0] == pytest.approx(0.0005) and cost["dear"][0] == pytest.approx(0.01)
    assert "cost column" in cost["cheap"][1]
    sel = doc["selective"]
    stages = sel["cascade"]
    assert [s["judge"] for s in stages] == ["cheap", "dear"]  # cheapest first
    assert stages[0]["reached"] == 1.0
    assert stages[1]["reached"] == pytest.approx(1 - stages[0]["decided"], abs=1e-6)
    # what the cascade costs: everything reaches the cheap judge, the rest the dear one
    assert sel["cost_per_item"] == pytest.approx(0.0005 + stages[1]["reached"] * 0.01)
    # the risk is not split among the stages: one Learn-then-Test path at the full risk
    assert "Learn-then-Test" in sel["guarantee"] and "at risk 0.1 " in sel["guarantee"]
    assert set(sel["judges"]) == {"cheap", "dear"}
    assert sel["agreement"]["estimate"] >= 0.88 and 0 < sel["coverage"] < 1
    assert sel["coverage"] == pytest.approx(stages[0]["decided"] + stages[1]["decided"])
    esc = [json.loads(x) for x in (tmp_path / "c" / "escalated.jsonl").read_text()
           .splitlines()]
    assert len(esc) == sel["escalated"] > 0
    assert sel["escalated"] == round((1 - sel["coverage"]) * 600)
    # the ids are the labelling ids: queue them on the unlabelled items (the judge's
    # verdicts without people's labels), and they come first
    rows = list(csv.DictReader(cheap.open()))
    bare = tmp_path / "bare.csv"
    with open(bare, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, [k for k in rows[0] if k != "label"])
        w.writeheader()
        for row in rows:
            w.writerow({k: v for k, v in row.items() if k != "label"})
    cheap = bare
    r = _cli("label", str(cheap), "--queue", str(tmp_path / "c" / "escalated.jsonl"),
             "--out", "NEXT.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    nxt = [json.loads(x) for x in (tmp_path / "NEXT.jsonl").read_text().splitlines()]
    assert nxt[0]["id"] == esc[0]["id"] and nxt[0]["queued"] is True
    assert f"queued {len(esc)} item(s)" in r.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "nope"}\n')
    r = _cli("label", str(cheap), "--queue", str(bad), cwd=tmp_path)
    assert r.returncode == 2 and "'nope' matches no item" in r.stderr
    # --cascade alone is a usage error
    r = _cli("choose", str(dear), str(cheap), "--cascade", "--out", "e", cwd=tmp_path)
    assert r.returncode == 2 and "--cascade" in r.stderr


def test_alpaca_eval_annotations_are_judges_with_their_price_and_time(tmp_path):
    rows = []
    rng = np.random.default_rng(2)
    for ann, acc, price, secs in (("gpt4_turbo", 0.85, 0.004, 1.5),
                                  ("haiku", 0.7, 0.0005, 0.4)):
        for i in range(80):
            t = int(rng.integers(1, 3))
            rows.append({"instruction": f"q{i}", "output_1": f"a{i}", "output_2": f"b{i}",
                         "generator_1": "base", "generator_2": "m", "annotator": ann,
                         "preference": t if rng.random() < acc else 3 - t,
                         "price_per_example": price, "time_per_example": secs})
    rows.append({**rows[0], "preference": 1.5})  # a tie: left out
    (tmp_path / "annotations.json").write_text(json.dumps(rows))
    r = _cli("choose", "annotations.json", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "c" / "choice.json").read_text())
    got = {j["name"]: j for j in doc["judges"]}
    assert set(got) == {"gpt4_turbo", "haiku"} and got["haiku"]["n"] == 80
    assert got["gpt4_turbo"]["cost_per_item"] == pytest.approx(0.004)
    assert got["haiku"]["seconds_per_item"] == pytest.approx(0.4)
    assert any(p["measure"] == "kappa" and p["ci"] is not None or p["measure"] != "kappa"
               for p in doc["pairs"])


def test_inspect_grader_cost_from_model_usage(tmp_path):
    from judgekit.recorded.inspect_log import read_inspect

    log = {"eval": {"task": "t", "model": "openai/gpt-4o-mini",
                    "scorers": [{"name": "model_graded_qa",
                                 "options": {"model": "openai/gpt-4o"}}]},
           "samples": [{"id": i, "epoch": 1, "input": f"q{i}", "target": "x",
                        "scores": {"model_graded_qa": {
                            "value": "C", "answer": "a",
                            "metadata": {"grading": [{"role": "user", "content": "p"},
                                                     {"role": "assistant", "content": "C",
                                                      "model": "gpt-4o"}]}}},
                        "model_usage": {"openai/gpt-4o-mini": {"input_tokens": 10,
                                                               "output_tokens": 10},
                                        "openai/gpt-4o": {"input_tokens": 1000,
                                                          "output_tokens": 100}}}
                       for i in range(3)]}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    got = read_inspect(path, None, 0.5)
    # gpt-4o: $2.50 / M input, $10 / M output
    assert got[0]["Cost"] == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)


def test_choose_on_real_llmbar_judges(tmp_path):
    """LLMBar's Natural set (MIT; excerpt in tests/fixtures/llmbar): GPT-4 and LLaMA-2,
    every pair in both orders with its gold label. GPT-4 is chosen; the paired agreement
    difference and LLaMA-2's position bias come with intervals."""
    from .conftest import ROOT

    base = ROOT / "tests" / "fixtures" / "llmbar" / "Natural"
    for judge in ("GPT-4", "LLaMA2"):
        dst = tmp_path / judge / "Vanilla_NoRules"
        dst.mkdir(parents=True)
        shutil.copy(base / judge / "Vanilla_NoRules" / "result.json", dst / "result.json")
    r = _cli("choose", "GPT-4/Vanilla_NoRules/result.json",
             "LLaMA2/Vanilla_NoRules/result.json", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "c" / "choice.json").read_text())
    rows = {j["name"]: j for j in doc["judges"]}
    assert len(rows) == 2 and all(j["n"] == 200 for j in rows.values())
    gpt4 = next(k for k in rows if "GPT-4" in k)
    llama = next(k for k in rows if "LLaMA2" in k)
    assert doc["chosen"] == gpt4
    assert rows[gpt4]["agreement"]["estimate"] > rows[llama]["agreement"]["estimate"]
    pair = next(p for p in doc["pairs"] if p["measure"] == "agreement")
    lo, hi = pair["ci"]
    diff = pair["difference"] if pair["a"] == gpt4 else -pair["difference"]
    assert diff > 0 and (lo > 0 if pair["a"] == gpt4 else hi < 0)
    assert rows[llama]["position_bias"]["ci"] is not None
