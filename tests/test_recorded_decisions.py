"""From a judge's verdicts and a few labels to a decision (issue 46): the decision
statistics pinned, texts and people's labels carried through, the card's verdict,
compare and card across analyse runs, the inputs users have."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student

import judgekit
from judgekit.stats.decide import beyond_chance, cluster_mean, random_ac1, versus_uninformed

FIX = Path(__file__).resolve().parent / "fixtures"
JK = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([JK, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def _csv(path: Path, header: list[str], rows: list[list[object]], delimiter: str = ","
         ) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(header)
        w.writerows(rows)
    return path


# ---- the statistics ---------------------------------------------------------------------
def test_cluster_mean_is_the_cr1_t_interval():
    """LLaMA-2 on LLMBar Natural: 19 pairs first both times, 7 second both times, 74
    consistent; per pair (f1 + f2) / 2 - 1/2. The interval is CR1 with t on 99 df."""
    y = np.array([0.5] * 19 + [-0.5] * 7 + [0.0] * 74)
    m = cluster_mean(y)
    se = math.sqrt(100 / 99 * float(np.sum((y - 0.06) ** 2))) / 100
    q = float(student.ppf(0.975, 99))
    assert m.estimate == pytest.approx(0.06)
    assert m.ci == pytest.approx([0.06 - q * se, 0.06 + q * se])
    assert m.ci[0] == pytest.approx(0.010585, abs=1e-6) and m.clusters == 100
    # verdict rows clustered by pair: the same figure from the 200 verdicts
    rows = [1.0, 1.0] * 19 + [0.0, 0.0] * 7 + [1.0, 0.0] * 74
    g = [i // 2 for i in range(200)]
    m2 = cluster_mean(np.array(rows) - 0.5, g)
    assert m2.estimate == pytest.approx(0.06) and m2.ci == pytest.approx(m.ci)
    # the negative correlation of a pair's two orders narrows it: rows taken as
    # independent give a wider interval
    assert cluster_mean(np.array(rows) - 0.5).ci[0] < m2.ci[0]
    # stays in its bounds and always holds its estimate
    b = cluster_mean([0.5] * 5, bounds=(-0.5, 0.5))
    assert b.ci == [0.5, 0.5] and b.p_value == 0.0
    assert cluster_mean([0.2]).ci == [-1.0, 1.0]


def test_uninformed_comparison_is_paired_and_decides_three_ways():
    # 95/5 labels, the judge right on 95 of 100: as good as always saying "pass"
    j, h = [1] * 90 + [0] * 10, [1] * 95 + [0] * 5
    u = versus_uninformed(j, h)
    assert (u.accuracy, u.majority) == (0.95, 0.95)
    assert u.random == pytest.approx(0.95 * 0.9 + 0.05 * 0.1)
    assert u.vs_majority.estimate == 0.0 and u.decision == "not distinguishable"
    # a coin against 80% passes: shown below the majority label
    rng = np.random.default_rng(3)
    h2 = (rng.random(300) < 0.8).astype(int)
    j2 = (rng.random(300) < 0.5).astype(int)
    assert versus_uninformed(j2, h2).decision == "no better"
    # a good judge on balanced labels
    j3 = np.where(rng.random(300) < 0.9, h2, 1 - h2)
    h3 = h2.copy()
    h3[:150] = 1 - h3[:150]
    j3[:150] = 1 - j3[:150]
    assert versus_uninformed(j3, h3).decision == "above"


def test_agreement_beyond_chance_is_a_permutation_test():
    got = beyond_chance([1, 1, 1, 0, 0, 0, 1, 0], [1, 1, 0, 0, 0, 1, 1, 0], seed=3,
                        permutations=500)
    assert (got.observed, got.expected) == (0.75, 0.5)
    # exact: P(agreement >= 6 of 8 | 4 ones each, permuted) = (1 + 16) / 70
    assert got.p_value == pytest.approx(17 / 70, abs=0.05)
    perfect = beyond_chance([1, 0] * 20, [1, 0] * 20, seed=1, permutations=999)
    assert perfect.p_value == pytest.approx(1 / 1000)
    # AC1 of a judge independent of people at 95/5 both: far above 0
    assert random_ac1([1] * 95 + [0] * 5, [1] * 95 + [0] * 5) == pytest.approx(0.895028, 1e-5)


# ---- analyse, label, card, compare --------------------------------------------------------
def _verdicts(tmp_path: Path, judge_leniency: float = 0.33, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(300):
        h = int(rng.random() < 0.55)
        v = 1 if h else int(rng.random() < judge_leniency)
        rows.append([f"i{i}", f"q{i // 3}", "AB"[i % 2], f"Question {i}, with a comma?",
                     f"Answer <b>{i}</b>", v, h if i % 8 == 0 else ""])
    return _csv(tmp_path / "v.csv", ["id", "question_id", "system", "input", "output",
                                     "judge", "human"], rows)


def test_texts_and_labels_reach_the_items_and_label_proposes_none_already_labelled(
        tmp_path):
    f = _verdicts(tmp_path)
    assert _cli("analyse", str(f), "--out", "run", cwd=tmp_path).returncode == 0
    items = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text()
             .splitlines()]
    assert len(items) == 300
    assert all(x["input"].startswith("Question") and x["output"].startswith("Answer")
               for x in items)
    labelled = {x["id"] for x in items if x["human"] is not None}
    assert len(labelled) == 38
    r = _cli("label", "run", "--out", "next.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "38 of 300 items labelled" in r.stdout
    proposed = [json.loads(x) for x in (tmp_path / "next.jsonl").read_text().splitlines()]
    assert proposed and all({"id", "probability"} <= set(p) for p in proposed)
    assert not {p["id"] for p in proposed} & labelled


def test_the_card_ends_with_a_verdict_and_compare_pairs_two_analyses(tmp_path):
    f = _verdicts(tmp_path)
    assert _cli("analyse", str(f), "--out", "a", cwd=tmp_path).returncode == 0
    r = _cli("card", "a", "--out", "card", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    card = json.loads((tmp_path / "card" / "card.json").read_text())
    assert card["decision"] in ("trust", "use corrected", "do not trust")
    assert card["items"] == 300 and 0 <= card["labels_needed"] <= 300
    keys = {r["key"] for r in card["rows"]}
    assert {"leniency", "pass_rate", "corrected_pass_rate"} <= keys
    len_ = next(r for r in card["rows"] if r["key"] == "leniency")
    assert len_["estimate"] > 0 and len_["units"] == "difference of shares"
    # a stricter judge on the same items: compare pairs them by id
    (tmp_path / "b").mkdir()
    g = _verdicts(tmp_path / "b", judge_leniency=0.0)
    assert _cli("analyse", str(g), "--out", "b_run", cwd=tmp_path).returncode == 0
    r = _cli("compare", "a", "b_run", "--out", "cmp", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "paired by item" in r.stdout and "n = 300 paired" in r.stdout
    # two judges' analyses on one card, side by side
    r = _cli("card", "a", "b_run", "--out", "both", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_a_lenient_judge_is_a_finding_and_not_trusted(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(300):
        h = int(rng.random() < 0.5)
        v = 1 if h else int(rng.random() < 0.5)  # passes about 25 points more
        rows.append([f"i{i}", v, h if i < 100 else ""])
    f = _csv(tmp_path / "l.csv", ["id", "judge", "human"], rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = {x.key: x for x in res.payload.measures}
    assert m["leniency"].decision.startswith("lenient") and m["leniency"].finding
    judged = [v for _, v, _ in rows]
    people = [h for _, _, h in rows[:100]]
    assert m["leniency"].estimate == pytest.approx(np.mean(judged[:100]) - np.mean(people))


def test_llmbar_natural_position_bias_llama2_shown_gpt4_not(tmp_path):
    for judge, shown in (("LLaMA2", True), ("GPT-4", False)):
        f = FIX / "llmbar" / "Natural" / judge / "Vanilla_NoRules" / "result.json"
        r = _cli("analyse", str(f), "--out", judge, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        res = judgekit.load_results(tmp_path / judge)
        pos = next(m for m in res.payload.measures if m.key == "position_bias")
        assert pos.decision == ("biased" if shown else "no bias shown"), judge
    # LLaMA2: 19 pairs first both times, 7 second both: +0.06 of 200 verdicts
    res = judgekit.load_results(tmp_path / "LLaMA2")
    pos = next(m for m in res.payload.measures if m.key == "position_bias")
    assert pos.estimate == pytest.approx(0.06) and pos.clusters == 100


def test_alpaca_eval_draws_count_half(tmp_path):
    prefs = [2.0, 1.0, 0, 2.0, 1.5, 0, 1.0, 2.0, 1.75, 2.0]
    doc = [{"instruction": f"q{i}", "output_1": "x" * 10, "output_2": "y" * 12,
            "generator_1": "base", "generator_2": "model", "preference": p}
           for i, p in enumerate(prefs)]
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(doc))
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    win = next(m for m in res.payload.measures if m.key == "win_rate")
    assert res.payload.unreadable == 0 and win.n == 10
    # 2 -> 1, 1 -> 0, 0 (a draw) and 1.5 -> 1/2, 1.75 -> 3/4
    assert win.estimate == pytest.approx((1 + 0 + 0.5 + 1 + 0.5 + 0.5 + 0 + 1 + 0.75 + 1)
                                         / 10)


# ---- the inputs users have ----------------------------------------------------------------
def test_tsv_semicolons_and_xlsx_read_like_csv(tmp_path):
    pytest.importorskip("openpyxl")
    import openpyxl

    header = ["id", "judge", "human_rating", "annotator_notes"]
    rows = [[f"i{i}", i % 2, (i + (i % 5 == 0)) % 2, "n"] for i in range(40)]
    got = []
    for name, delim in (("a.csv", ","), ("a.tsv", "\t"), ("b.csv", ";")):
        f = _csv(tmp_path / name, header, rows, delim)
        got.append(judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False))
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(header)
    for r in rows:
        ws.append(r)
    wb.save(tmp_path / "a.xlsx")
    got.append(judgekit.run({"method": "verdicts", "data_path": str(tmp_path / "a.xlsx")},
                            save=False))
    figures = [[(m.key, m.estimate) for m in r.payload.measures] for r in got]
    assert all(f == figures[0] for f in figures)
    res = got[0]
    assert res.payload.roles["human"] == "human_rating"
    assert any("'annotator_notes' look like people's labels but were not used" in n
               for n in res.payload.notes)


def test_xlsx_without_openpyxl_is_one_line(tmp_path):
    (tmp_path / "a.xlsx").write_bytes(b"PK\x03\x04 not really")
    code = ("import sys; sys.modules['openpyxl'] = None\n"
            "from pathlib import Path\nfrom judgekit.recorded.tables import read\n"
            "from judgekit.core.errors import DataError\n"
            f"try:\n    read(Path({str(tmp_path / 'a.xlsx')!r}), 'auto', {{}})\n"
            "except DataError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "ERR" in out.stdout and "pip install 'judgekit[xlsx]'" in out.stdout


def test_inspect_labels_keyed_by_sample_id_and_unknown_ids_one_line(tmp_path):
    log = FIX / "external" / "inspect_popularity.eval"
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "1", "label": 1}) + "\n" +
                      json.dumps({"id": "3:1", "label": 0}) + "\n")
    res = judgekit.run({"method": "verdicts", "data_path": str(log),
                        "labels_file": str(labels)}, save=False)
    items = {x["id"]: x for x in res.payload.items.rows()}
    assert items["inspect:popularity:1:1:match"]["human"] == 1
    assert items["inspect:popularity:3:1:match"]["human"] == 0
    labels.write_text(json.dumps({"id": "nope", "label": 1}) + "\n")
    r = _cli("analyse", str(log), "--labels", str(labels), "--out", "x", cwd=tmp_path)
    assert r.returncode == 2 and "id 'nope' matches no item" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unconditional_paired_test_pinned_and_at_most_nominal():
    from scipy.special import gammaln
    from scipy.stats import norm

    from judgekit.stats.proportions import unconditional_mcnemar

    assert unconditional_mcnemar(5, 0, 50) == pytest.approx(0.032782, abs=1e-5)
    assert unconditional_mcnemar(4, 0, 50) == pytest.approx(0.047843, abs=1e-5)
    assert unconditional_mcnemar(3, 3, 50) == 1.0 and unconditional_mcnemar(0, 0, 9) == 1.0
    # above 300 items: the normal test of the same statistic
    assert unconditional_mcnemar(10, 2, 400) == pytest.approx(2 * norm.sf(8 / math.sqrt(12)))
    # its size: for n = 20, at every share of discordant items, rejecting at p <= 0.05
    # happens with probability at most 0.05 (the whole table space enumerated)
    n = 20
    tables = [(b, c) for b in range(n + 1) for c in range(n + 1 - b)]
    reject = [(b, c) for b, c in tables if unconditional_mcnemar(b, c, n) <= 0.05]
    for pi in np.linspace(0.01, 0.99, 50):
        size = sum(math.exp(gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1)
                            - gammaln(n - b - c + 1) + (b + c) * math.log(pi / 2)
                            + (n - b - c) * math.log(1 - pi)) for b, c in reject)
        assert size <= 0.05 + 1e-9


def test_sign_flip_test_is_exact_for_few_clusters():
    from judgekit.stats.decide import sign_flip_p

    # three values 0.5, 0.5, 1: of the 8 sign patterns, 2 reach |T| >= 2
    assert sign_flip_p([0.5, 0.5, 1.0]) == 0.25
    # three clusters with totals 1, 1, 1: likewise 2 of 8 reach |T| >= 3
    assert sign_flip_p([1.0, 0.0, 1.0, 0.0, 1.0], ["a", "a", "b", "b", "c"]) == 0.25
    assert sign_flip_p([0.0, 0.0]) == 1.0
    # LLaMA-2 on LLMBar Natural: 19 + 7 pairs of +-1/2, near the exact sign test's 0.029
    p = sign_flip_p([0.5] * 19 + [-0.5] * 7 + [0.0] * 74, seed=0)
    assert 0.02 < p < 0.05


def test_non_finite_and_out_of_range_verdicts_are_unreadable_and_named(tmp_path):
    f = tmp_path / "odd.csv"
    f.write_text("id,judge,human\n1,1,1\n2,0,0\n3,nan,1\n4,inf,0\n5,2.5,1\n6,1,1\n7,0,1\n")
    r = _cli("analyse", str(f), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    keys = {m["key"]: m for m in res["measures"]}
    assert keys["pass_rate"]["n"] == 4 and res["unreadable"] == 3
    report = (tmp_path / "run" / "report.md").read_text()
    assert "row 3 ('nan'), row 4 ('inf'), row 5 ('2.5')" in report
