"""Issue 67: `judgekit choose` is honest: one-line errors for nothing shared, unknown
prices and conflicting labels; selective evaluation on one judge and on each of
several; unusable confidences escalated, never dropped; intervals clustered as
analyse's; a pick that does not rest on a sample difference within the margin."""

from __future__ import annotations

import csv
import json
import random
import subprocess
from pathlib import Path

import pytest

from .test_standalone import EXE


def _write(path: Path, rows: list[list[object]], header: list[str]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _choose(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, "choose", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


def _judge_file(path: Path, seed: int, n: int = 400, acc: float = 0.85,
                offset: int = 0, bad_conf: bool = False) -> Path:
    r = random.Random(seed)
    rows = []
    for i in range(n):
        y = int(r.random() < 0.5)
        c = r.uniform(0.5, 1.0)
        v = y if r.random() < min(1.0, c + acc - 0.75) else 1 - y
        conf: object = round(c, 4)
        if bad_conf and i % 10 == 0:
            conf = ["nan", "-0.3", "1.5", "sure", ""][i // 10 % 5]
        rows.append([f"i{i + offset}", f"q{(i + offset) // 2}", v, y if i < 300 else "", conf])
    return _write(path, rows, ["id", "question_id", "judge", "human", "confidence"])


def test_nothing_shared_an_unknown_price_and_conflicting_labels_are_one_line_errors(tmp_path):
    _judge_file(tmp_path / "a.csv", 1)
    _judge_file(tmp_path / "b.csv", 2, offset=5000)
    r = _choose(tmp_path, "a.csv", "b.csv", "--out", "c1")
    assert r.returncode == 2 and "share no item id" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "c1").exists()
    _judge_file(tmp_path / "b.csv", 2)  # same ids, other (random) labels
    r = _choose(tmp_path, "a.csv", "b.csv", "--out", "c2")
    assert r.returncode == 2 and "people's labels differ" in r.stderr and "i" in r.stderr
    r = _choose(tmp_path, "a.csv", "a.csv", "--out", "c3", "--price", "nobody=0.1")
    assert r.returncode == 2 and "'nobody'" in r.stderr


def test_selective_on_one_judge_and_on_each_of_several(tmp_path):
    _judge_file(tmp_path / "solo.csv", 3, bad_conf=True)
    r = _choose(tmp_path, "solo.csv", "--selective", "--target-agreement", "0.8",
                "--out", "one")
    assert r.returncode == 0, r.stderr
    sel = json.loads((tmp_path / "one" / "choice.json").read_text())["selective"]
    assert list(sel["judges"]) == ["solo"]
    solo = sel["judges"]["solo"]
    assert {"threshold", "coverage", "agreement"} <= set(solo)
    assert solo["threshold"] is not None and 0 < solo["coverage"] < 1
    # 40 of 400 confidences are unusable: counted, and escalated with the unsure ones
    assert sel["unusable_confidence"] == 40 == solo["unusable_confidence"]
    kept = round(sel["coverage"] * 400)
    assert kept + sel["escalated"] == 400
    esc = (tmp_path / "one" / "escalated.jsonl").read_text().splitlines()
    assert len(esc) == sel["escalated"]
    assert {"i0", "i10", "i20"} <= {json.loads(x)["id"] for x in esc}
    # two judges: each calibrated (at risk / 2), each reported
    rows = list(csv.reader((tmp_path / "solo.csv").open()))
    r2 = random.Random(9)
    for row in rows[1:]:
        row[4] = str(round(r2.uniform(0.5, 1.0), 4))  # a second judge of the same items
    _write(tmp_path / "other.csv", rows[1:], rows[0])
    r = _choose(tmp_path, "solo.csv", "other.csv", "--selective", "--target-agreement",
                "0.8", "--out", "two")
    assert r.returncode == 0, r.stderr
    sel = json.loads((tmp_path / "two" / "choice.json").read_text())["selective"]
    assert set(sel["judges"]) == {"solo", "other"}
    assert "0.05 each" in sel["guarantee"]


def test_a_single_judge_without_selective_is_still_refused(tmp_path):
    _judge_file(tmp_path / "solo.csv", 3)
    r = _choose(tmp_path, "solo.csv", "--out", "x")
    assert r.returncode == 2 and "at least 2 judges" in r.stderr and "--selective" in r.stderr


def test_choose_intervals_are_clustered_as_analyses_are(tmp_path):
    _judge_file(tmp_path / "a.csv", 1)
    rows = list(csv.reader((tmp_path / "a.csv").open()))
    _write(tmp_path / "b.csv", [[*r[:2], 1 - int(r[2]) if i % 7 == 0 else r[2], *r[3:]]
                               for i, r in enumerate(rows[1:])], rows[0])
    assert subprocess.run([EXE, "analyse", "a.csv", "--out", "ra"], cwd=tmp_path,
                          capture_output=True, timeout=300).returncode == 0
    r = _choose(tmp_path, "a.csv", "b.csv", "--out", "c")
    assert r.returncode == 0, r.stderr
    choice = json.loads((tmp_path / "c" / "choice.json").read_text())
    res = json.loads((tmp_path / "ra" / "results.json").read_text())
    acc = next(m for m in res["measures"] if m["key"] == "accuracy")
    row = next(j for j in choice["judges"] if j["name"] == "a")
    # two answers per question: one cluster, as analyse counts it
    assert row["agreement"]["ci"] == pytest.approx(acc["ci"], abs=1e-9)


def test_judges_within_the_margin_are_not_distinguishable(tmp_path):
    _judge_file(tmp_path / "a.csv", 1)
    rows = list(csv.reader((tmp_path / "a.csv").open()))
    # b differs from a on 1 item in 50: a sample difference far inside the margin
    _write(tmp_path / "b.csv", [[*r[:2], 1 - int(r[2]) if i % 50 == 0 else r[2], *r[3:]]
                               for i, r in enumerate(rows[1:])], rows[0])
    r = _choose(tmp_path, "a.csv", "b.csv", "--out", "c")
    assert r.returncode == 0, r.stderr
    decision = json.loads((tmp_path / "c" / "choice.json").read_text())["decision"]
    assert "not distinguishable within margin 0.05" in decision
    r = _choose(tmp_path, "a.csv", "b.csv", "--out", "d", "--price", "a=0.01",
                "--price", "b=0.001")
    decision = json.loads((tmp_path / "d" / "choice.json").read_text())["decision"]
    assert decision.startswith("use b;") and "costs 10x less" in decision
