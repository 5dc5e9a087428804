"""Recorded verdicts (`judgekit analyse FILE`): the three file shapes of the contract, no
model call, figures pinned against independent computations, the card's keys and
findings, role detection and its errors, exit codes of the installed command."""

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
from sklearn.metrics import cohen_kappa_score

import judgekit

JK = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([JK, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _pointwise(path: Path, agree: int = 18, n: int = 24) -> Path:
    """24 items of 8 questions x 3 systems; human labels on every other row; the judge
    agrees with people on ``agree`` of the 12 labelled rows' ... (fixed pattern)."""
    rows = []
    for i in range(n):
        truth = i % 3 != 0
        judge = truth if (i * 7) % 24 < agree else not truth
        rows.append([f"i{i}", f"q{i // 3}", "ABC"[i % 3], "pass" if judge else "fail",
                     ("pass" if truth else "fail") if i % 2 == 0 else ""])
    return _write_csv(path, ["id", "question_id", "system", "judge", "human"], rows)


def _measures(res: judgekit.RunResult) -> dict[str, judgekit.RunResult]:
    return {m.key: m for m in res.payload.measures}


def test_pointwise_csv_figures_match_independent_computation(tmp_path):
    f = _pointwise(tmp_path / "v.csv")
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = _measures(res)
    with open(f, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    judge = [int(r["judge"] == "pass") for r in rows]
    lab = [(int(r["judge"] == "pass"), int(r["human"] == "pass")) for r in rows if r["human"]]
    j, h = np.array(lab).T
    assert m["pass_rate"].estimate == pytest.approx(np.mean(judge), abs=1e-12)
    assert m["pass_rate"].clusters == 8 and m["pass_rate"].n == 24  # questions are clusters
    assert m["accuracy"].estimate == pytest.approx(np.mean(j == h), abs=1e-12)
    assert m["accuracy"].n == len(lab) == 12
    assert m["kappa"].estimate == pytest.approx(cohen_kappa_score(j, h), abs=1e-12)
    best = max(np.mean(h), 1 - np.mean(h),
               np.mean(j) * np.mean(h) + (1 - np.mean(j)) * (1 - np.mean(h)))
    assert m["accuracy"].baseline == pytest.approx(best, abs=1e-12)
    for key in ("pass_rate", "accuracy", "kappa", "ac1", "corrected_pass_rate"):
        lo, hi = m[key].ci
        assert lo <= m[key].estimate <= hi and (key in ("kappa", "ac1") or 0 <= lo <= hi <= 1)
    assert {"corrected_pass_rate[A]", "corrected_pass_rate[B]",
            "corrected_pass_rate[C]"} <= set(m)
    # the label plan: labels for +/- 0.05 scale as (half-width / 0.05)^2 from these 12
    lo, hi = m["corrected_pass_rate"].ci
    need = min(24, int(np.ceil(12 * ((hi - lo) / 2 / 0.05) ** 2)))
    assert f"about {need} human labels for +/- 0.05" in m["corrected_pass_rate"].note
    assert res.calls.total == 0 and res.payload.shape == "pointwise"


def test_pairwise_both_orders_position_bias_and_consistency(tmp_path):
    rows = []
    # 40 pairs, both orders; the judge always picks the first-shown answer in 30 pairs
    # (position), and the better answer in both orders in the other 10
    for p in range(40):
        good, bad = f"good answer {p} with some words", f"bad {p}"
        for order in (0, 1):
            first, second = (good, bad) if order == 0 else (bad, good)
            label = "first" if order == 0 else "second"
            winner = "first" if p < 30 else label
            rows.append([f"p{p}", f"Q{p}", first, second, winner, label])
    f = _write_csv(tmp_path / "pairs.csv",
                   ["pair_id", "question", "first", "second", "winner", "label"], rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = _measures(res)
    # first-shown wins: 60 (positional) + 10 (good shown first) of 80
    assert m["position_bias"].estimate == pytest.approx(70 / 80 - 0.5)
    assert m["position_bias"].decision == "biased" and m["position_bias"].clusters == 40
    assert m["order_consistency"].estimate == pytest.approx(10 / 40)
    # the order as given shows the good answer first: always right in that order
    assert m["accuracy"].estimate == 1.0 and m["accuracy"].n == 40
    assert m["accuracy_both_orders"].estimate == pytest.approx(10 / 40)
    assert m["length_preference"].key == "length_preference"


LLMBAR = Path(__file__).resolve().parent / "fixtures" / "llmbar" / "MT-Bench"


@pytest.mark.parametrize("judge, biased", [("GPT-4", False), ("ChatGPT", True)])
def test_llmbar_result_files_reproduce_the_published_figures(tmp_path, judge, biased):
    """LLMBar's MT-Bench Vanilla_NoRules (both orders, no unparsed verdict): judgekit's
    order consistency, accuracy (order as given), both-order accuracy and the kappa of
    the two orders equal the published equal, correct_False, correct_both and
    kappa_agreement; GPT-4 is not position-biased (0.510 first-shown), ChatGPT is
    (0.7025)."""
    folder = LLMBAR / judge / "Vanilla_NoRules"
    stats = json.loads((folder / "statistics.json").read_text(encoding="utf-8"))

    def share(text: str) -> float:
        k, n = text.split("=")[0].split("/")
        return int(k) / int(n)

    proc = _cli("analyse", str(folder / "result.json"), "--out", "run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    m = _measures(judgekit.load_results(tmp_path / "run"))
    assert m["order_consistency"].estimate == pytest.approx(share(stats["equal"]), abs=1e-12)
    assert m["accuracy"].estimate == pytest.approx(share(stats["correct_False"]), abs=1e-12)
    assert m["accuracy_both_orders"].estimate == pytest.approx(share(stats["correct_both"]),
                                                               abs=1e-12)
    assert m["order_kappa"].estimate == pytest.approx(stats["kappa_agreement"], abs=1e-12)
    assert m["position_bias"].decision == ("biased" if biased else "no bias shown")
    assert m["position_bias"].estimate == pytest.approx(0.2025 if biased else 0.01)
    proc = _cli("card", "run", "--out", "card", cwd=tmp_path)
    card = json.loads((tmp_path / "card" / "card.json").read_text(encoding="utf-8"))
    pos = next(r for r in card["rows"] if r["key"] == "position_bias")
    assert pos["decision"] == ("biased" if biased else "no bias shown")


def test_alpaca_eval_win_rate_counts_ties_as_half(tmp_path):
    prefs = [2, 2, 1, 1.5, 2, 1, 2, 1.5, 2, 2]
    ann = [{"instruction": f"i{k}", "output_1": "x" * 10, "output_2": "y" * (5 + k),
            "generator_1": "gpt4_turbo", "generator_2": "mine", "preference": p,
            "annotator": "alpaca_eval_gpt4"} for k, p in enumerate(prefs)]
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(ann), encoding="utf-8")
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = _measures(res)
    assert m["win_rate"].estimate == pytest.approx(np.mean([p - 1 for p in prefs]))
    assert m["win_rate"].n == 10 and 0 <= m["win_rate"].ci[0] <= m["win_rate"].ci[1] <= 1
    assert res.payload.judge == "alpaca_eval_gpt4"
    assert any("position bias is not measurable" in n for n in res.payload.notes)


def test_a_chance_level_judge_is_a_finding_on_its_card(tmp_path):
    rng = np.random.default_rng(3)
    rows = [[f"i{i}", f"q{i}", "A", "pass" if rng.random() < 0.5 else "fail",
             "pass" if rng.random() < 0.8 else "fail"] for i in range(200)]
    f = _write_csv(tmp_path / "coin.csv", ["id", "question_id", "system", "judge", "human"],
                   rows)
    assert _cli("analyse", str(f), "--out", "run", cwd=tmp_path).returncode == 0
    proc = _cli("card", "run", "--out", "card", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    card = json.loads((tmp_path / "card" / "card.json").read_text(encoding="utf-8"))
    keys = {r["key"] for r in card["rows"]}
    assert {"accuracy", "kappa", "ac1", "corrected_pass_rate"} <= keys
    for r in card["rows"]:
        assert {"key", "estimate", "ci", "n", "decision"} <= set(r)
    acc = next(r for r in card["rows"] if r["key"] == "accuracy")
    # accuracy about 0.5 where always saying "pass" scores 0.8: shown below it, paired
    assert acc["decision"] == "no better than an uninformed judge"
    assert any("no better than an uninformed judge" in x for x in card["findings"])
    len_ = next(r for r in card["rows"] if r["key"] == "leniency")
    assert len_["decision"].startswith("severe") and len_["ci"][1] < 0
    assert card["decision"] == "do not trust" and card["labels_needed"] <= card["items"]


def test_cli_contract_shapes_write_results_and_report(tmp_path):
    point = _pointwise(tmp_path / "point.csv")
    rows = [[f"p{i // 2}", "Q", "a", "bb", "first", "first" if i % 2 == 0 else "second"]
            for i in range(8)]
    pair = _write_csv(tmp_path / "pair.csv",
                      ["pair_id", "question", "first", "second", "winner", "label"], rows)
    ann = tmp_path / "annotations.json"
    ann.write_text(json.dumps([{"generator_1": "b", "generator_2": "m", "preference": p,
                                "output_1": "o", "output_2": "oo"} for p in (1, 2, 2, 1.5)]))
    for f in (point, pair, ann):
        out = tmp_path / f"out_{f.stem}"
        proc = _cli("analyse", str(f), "--out", str(out), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert (out / "results.json").exists() and (out / "report.html").exists()
        assert json.loads((out / "results.json").read_text())["method"] == "verdicts"
        assert judgekit.load_results(out).payload.shape in ("pointwise", "pairwise",
                                                             "alpaca_eval")


def test_format_and_map_override_detection(tmp_path):
    f = _write_csv(tmp_path / "odd.txt", ["item", "gpt4_says", "people"],
                   [[i, "yes" if i % 2 else "no", "yes"] for i in range(6)])
    proc = _cli("analyse", str(f), "--out", "o", cwd=tmp_path)
    assert proc.returncode == 2 and "--format" in proc.stderr  # no suffix to go by
    proc = _cli("analyse", str(f), "--format", "csv", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 2 and "--map judge=COLUMN" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = _cli("analyse", str(f), "--format", "csv", "--map", "judge=gpt4_says",
                "--map", "human=people", "--out", "o2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    res = judgekit.load_results(tmp_path / "o2")
    assert res.payload.roles["judge"] == "gpt4_says" and res.payload.judge == "gpt4_says"
    assert _measures(res)["accuracy"].estimate == pytest.approx(0.5)


def test_ambiguous_columns_and_unreadable_verdicts_say_so(tmp_path):
    f = _write_csv(tmp_path / "two.csv", ["verdict", "judge", "label"],
                   [["pass", "fail", "pass"]] * 3)
    proc = _cli("analyse", str(f), "--out", "o", cwd=tmp_path)
    assert proc.returncode == 0  # "judge" names the role exactly: no ambiguity
    f = _write_csv(tmp_path / "amb.csv", ["verdict", "grade", "label"],
                   [["pass", "fail", "pass"]] * 3)
    proc = _cli("analyse", str(f), "--out", "o3", cwd=tmp_path)
    assert proc.returncode == 2 and "could each be the 'judge'" in proc.stderr
    f = _write_csv(tmp_path / "bad.csv", ["judge"], [["maybe"]] * 3)
    proc = _cli("analyse", str(f), "--out", "o4", cwd=tmp_path)
    assert proc.returncode == 2 and "none of its 3 verdicts could be read" in proc.stderr
    f = _write_csv(tmp_path / "some.csv", ["judge", "human"],
                   [["pass", "pass"], ["maybe", "fail"], ["fail", "fail"]])
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    assert res.payload.unreadable == 1 and any("1 of 3 verdicts" in n
                                               for n in res.payload.notes)


EXTERNAL = Path(__file__).resolve().parent / "fixtures" / "external"


@pytest.mark.parametrize("name, n, graders", [
    ("inspect_popularity.eval", 10, "match (popularity)"),
    ("inspect_security_guide.json", 3, None),
    ("promptfoo_sample_export.json", 4, "promptfoo llm-rubric")])
def test_inspect_and_promptfoo_logs_are_recorded_verdicts(tmp_path, name, n, graders):
    """The grader's verdicts of real Inspect and promptfoo files, through the Python API
    and the command alike; the sample id and the grader's explanation travel with each
    item."""
    proc = _cli("analyse", str(EXTERNAL / name), "--out", "o", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    res = judgekit.load_results(tmp_path / "o")
    assert res.payload.shape == "pointwise" and res.payload.n_rows == n
    assert graders is None or res.payload.judge == graders
    items = list(res.detail("items"))
    assert all(x["id"].startswith(("inspect:", "promptfoo:")) for x in items)
    same = judgekit.run({"method": "verdicts", "data_path": str(EXTERNAL / name)},
                        save=False)
    assert same.payload.model_dump() == res.payload.model_dump()
    if name.startswith("promptfoo"):
        assert any(x.get("explanation") for x in items)


def test_python_audit_reads_an_inspect_eval_zip(tmp_path):
    """judgekit.audit("x.eval", data_format="inspect") counts the log's samples (it used
    to read the zip as UTF-8 text and crash)."""
    res = judgekit.audit(EXTERNAL / "inspect_popularity.eval", "west_frisian_ip.yaml",
                         evaluator="mock/auto", verifier="mock/auto:1",
                         data_format="inspect", phi=[0.1], out=tmp_path / "a")
    assert res.payload.sample_size == 10 and res.payload.verdict is not None


def test_several_annotators_majority_label_and_fleiss_kappa(tmp_path):
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(5)
    truth = rng.random(60) < 0.5
    people = np.where(rng.random((60, 3)) < 0.8, truth[:, None], ~truth[:, None])
    judge = np.where(rng.random(60) < 0.75, truth, ~truth)
    rows = [[f"i{i}", "pass" if judge[i] else "fail",
             *["pass" if p else "fail" for p in people[i]]] for i in range(60)]
    f = _write_csv(tmp_path / "three.csv", ["id", "judge", "human_1", "human_2", "human_3"],
                   rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = _measures(res)
    assert res.payload.roles["human"] == "human_1,human_2,human_3"
    assert m["fleiss_kappa"].estimate == pytest.approx(
        sm_fleiss(aggregate_raters(people.astype(int))[0]), abs=1e-12)
    lo, hi = m["fleiss_kappa"].ci
    assert lo <= m["fleiss_kappa"].estimate <= hi
    majority = people.sum(axis=1) >= 2
    assert m["accuracy"].estimate == pytest.approx(np.mean(judge == majority), abs=1e-12)
    assert m["accuracy"].n == 60


def test_pairwise_win_rates_with_ties_as_half(tmp_path):
    # m1 against base in both orders over 10 pairs: wins 6 pairs both times, ties 2, loses 2
    rows = []
    for p in range(10):
        for order in (0, 1):
            models = ("m1", "base") if order == 0 else ("base", "m1")
            m1_slot = "first" if order == 0 else "second"
            other = "second" if order == 0 else "first"
            winner = m1_slot if p < 6 else "tie" if p < 8 else other
            rows.append([f"p{p}", "Q", "x", "y", winner, models[0], models[1]])
    f = _write_csv(tmp_path / "wins.csv", ["pair_id", "question", "first", "second",
                                          "winner", "model_first", "model_second"], rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f), "baseline": "base"},
                       save=False)
    m = _measures(res)
    assert m["win_rate"].estimate == pytest.approx((12 + 0.5 * 4) / 20)
    lo, hi = m["win_rate"].ci
    assert m["win_rate"].clusters == 10 and 0 <= lo <= 0.7 <= hi <= 1
