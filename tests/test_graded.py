"""Graded verdicts (a score on a scale, several raters an item): the point values equal
the libraries users trust, every measure carries its interval and n, grade
distributions give the expected score, ECE and Brier, and a value off the scale is
counted, never averaged (judgekit.methods.verdicts.graded)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from judgekit.recorded import graded
from judgekit.stats import graded as graded_stats

KEYS = ("spearman", "kendall_tau_b", "pearson", "weighted_kappa",
        "krippendorff_alpha_interval", "krippendorff_alpha_ordinal", "mae", "score_bias",
        "human_ceiling", "system_kendall", "corrected_mean_score")


def _jk(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("judgekit", path=str(Path(sys.executable).parent))
    assert exe is not None
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _write(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _three_raters(n: int = 90, seed: int = 3) -> tuple[list[str], list[list[object]]]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)

    def noisy(shift: float = 0.0) -> np.ndarray:
        return np.clip(np.rint(truth + shift + rng.normal(0, 0.7, n)), 1, 5).astype(int)

    judge, people = noisy(0.6), [noisy() for _ in range(3)]
    rows = [[f"i{i}", f"q{i // 3}", "ABC"[i % 3], int(judge[i]), *(int(p[i]) for p in people)]
            for i in range(n)]
    return ["id", "question_id", "system", "judge_score", "human_1", "human_2", "human_3"], rows


def _measures(run: Path) -> dict[str, dict]:
    doc = json.loads((run / "results.json").read_text())
    assert doc["shape"] == "graded"
    return {m["key"]: m for m in doc["measures"]}


def test_one_judge_one_rater_equals_scipy_and_scikit_learn(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(11)
    people = rng.integers(1, 6, 80)
    judge = np.clip(people + rng.integers(-1, 2, 80), 1, 5)
    data = _write(tmp_path / "g.csv", ["id", "judge_score", "human"],
                  [[f"i{i}", int(j), int(h)] for i, (j, h) in enumerate(zip(judge, people))])
    r = _jk("analyse", str(data), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = _measures(tmp_path / "run")
    want = {"spearman": stats.spearmanr(judge, people).statistic,
            "kendall_tau_b": stats.kendalltau(judge, people).statistic,
            "pearson": stats.pearsonr(judge, people).statistic,
            "weighted_kappa": cohen_kappa_score(judge, people, weights="quadratic")}
    for key, value in want.items():
        assert got[key]["estimate"] == pytest.approx(value, abs=1e-6), key
        lo, hi = got[key]["ci"]
        assert -1 <= lo <= got[key]["estimate"] <= hi <= 1 and got[key]["n"] == 80


def test_krippendorff_alpha_equals_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(5)
    data = rng.integers(1, 6, (3, 40)).astype(float)
    data[0, :10] = data[1, :10]
    data[2, ::7] = np.nan
    for metric in ("interval", "ordinal"):
        assert graded_stats.krippendorff_alpha(data, metric) == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement=metric),
            abs=1e-9), metric
    # perfect agreement is 1; two coders disagreeing on everything at opposite ends < 0
    assert graded_stats.krippendorff_alpha(np.array([[1, 2, 3.0], [1, 2, 3.0]]), "interval") == 1
    assert graded_stats.krippendorff_alpha(np.array([[1, 5, 1.0], [5, 1, 5.0]]), "ordinal") < 0


def test_weighted_kappa_pinned_by_hand():
    # categories 1..3, quadratic weights 0, 1/4, 1: observed 1/4 of one cell off by one
    a, b = np.array([1, 2, 3, 3]), np.array([1, 2, 3, 2])
    # confusion [[1,0,0],[0,1,0],[0,1,1]]; expected from margins (1,1,2) x (1,2,1) / 4
    obs = 0.25  # one item off by one: weight 1/4
    exp = (1 * 2 * 0.25 + 1 * 1 * 1 + 1 * 1 * 0.25 + 1 * 1 * 0.25 + 2 * 1 * 1 + 2 * 2 * 0.25) / 4
    assert graded_stats.weighted_kappa(a, b) == pytest.approx(1 - obs / exp, abs=1e-12)


def test_three_raters_give_every_measure_with_its_interval_and_per_system_rows(tmp_path):
    header, rows = _three_raters()
    data = _write(tmp_path / "g.csv", header, rows)
    r = _jk("analyse", str(data), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = _measures(tmp_path / "run")
    for key in KEYS:
        m = got[key]
        assert m["estimate"] is not None and len(m["ci"]) == 2 and m["n"] > 0, key
        assert m["ci"][0] <= m["ci"][1], key
    for key in ("score_bias", "corrected_mean_score"):
        assert {f"{key}[{s}]" for s in "ABC"} <= set(got), key
    # the judge was made about half a point lenient: the bias says so, in points
    assert 0.2 < got["score_bias"]["estimate"] < 0.8 and got["score_bias"]["ci"][0] > 0
    people = np.array([np.mean(r[4:]) for r in rows])
    assert got["score_bias"]["estimate"] == pytest.approx(
        float(np.mean([r[3] for r in rows]) - people.mean()), abs=1e-12)
    assert 1 <= got["corrected_mean_score"]["ci"][0] <= got["corrected_mean_score"]["ci"][1] <= 5
    assert "judge against the same others" in got["human_ceiling"]["note"]
    card = _jk("card", "run", "--out", "card", cwd=tmp_path)
    assert card.returncode == 0, card.stderr
    assert set(json.loads((tmp_path / "card" / "card.json").read_text())["decisions"]) == {
        "rate", "rank", "items"}


def test_a_grade_distribution_gives_the_expected_score_ece_and_brier(tmp_path):
    rows = []
    rng = np.random.default_rng(9)
    for i in range(60):
        y = int(rng.integers(1, 6))
        p = np.full(5, 0.05)
        p[y - 1] = 0.8
        rows.append([f"i{i}", *np.round(p, 3), y])
    data = _write(tmp_path / "d.csv", ["id", "p_1", "p_2", "p_3", "p_4", "p_5", "human"],
                  rows)
    r = _jk("analyse", str(data), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = _measures(tmp_path / "run")
    # every top grade right with confidence 0.8: ECE 0.2; Brier 0.2^2 + 4 x 0.05^2 = 0.05
    assert got["ece"]["estimate"] == pytest.approx(0.2, abs=1e-9)
    assert got["brier"]["estimate"] == pytest.approx(0.05, abs=1e-9)
    assert all(len(got[k]["ci"]) == 2 for k in ("ece", "brier"))
    first = json.loads((tmp_path / "run" / "items.jsonl").read_text().splitlines()[0])
    y0 = rows[0][-1]
    assert first["score"] == pytest.approx(0.8 * y0 + 0.05 * (15 - y0), abs=1e-9)


def test_off_scale_values_are_counted_and_map_and_scale_are_taken(tmp_path):
    header, rows = _three_raters(30)
    rows[0][3] = 7          # the judge off a 1-5 scale: the row goes
    rows[1][4] = "n/a"      # one rater's text: that rating goes
    data = _write(tmp_path / "g.csv", ["id", "question_id", "system", "model_grade", "r1",
                                       "r2", "r3"], rows)
    r = _jk("analyse", str(data), "--map", "judge=model_grade", "--map", "human=r1,r2,r3",
            "--scale", "1-5", "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["unreadable"] == 2 and doc["measures"][0]["n"] == 29
    notes = " ".join(doc["notes"])
    assert "2 value(s) unreadable" in notes and "off the scale" in notes
    assert "1-5 (integers), --scale" in notes
    bad = _jk("analyse", str(data), "--map", "judge=model_grade", "--map", "human=r1,r2,r3",
              "--scale", "5-1", "--out", "r2", cwd=tmp_path)
    assert bad.returncode == 2 and "--scale '5-1'" in bad.stderr


def test_pass_fail_and_probabilities_stay_pass_fail(tmp_path):
    roles = {"judge": "judge", "human": "human"}
    assert not graded.is_graded([{"judge": v % 2, "human": 1} for v in range(10)], roles, None)
    assert not graded.is_graded([{"judge": v / 10, "human": 1} for v in range(10)], roles, None)
    assert graded.is_graded([{"judge": v % 5 + 1, "human": 2} for v in range(10)], roles, None)
    assert graded.is_graded([{"judge": 1, "human": 1}], roles, "1-5")
    assert graded.score_of("Feedback: fine. [RESULT] 4") == 4
    assert graded.score_of("Rating: [[7]]") == 7 and graded.score_of("nan") is None
