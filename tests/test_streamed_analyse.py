"""`judgekit analyse` streams pointwise rows (one pass per judge, item records spilled
as read, only numeric columns held): the figures are those of the rows, whatever the
process's string-hash seed, and a labelling session's repeated intervals resume from
their last state with the same numbers."""

from __future__ import annotations

import csv
import json
import random

import numpy as np

from .test_standalone import jk


def _write(path, n=900, seed=4):
    r = random.Random(seed)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question_id", "system", "input", "judge", "human"])
        for i in range(n):
            q = i // 6  # three systems' answers twice each: repeats share an id
            sys_ = "ABC"[i % 3]
            y = r.random() < 0.45 + 0.1 * (sys_ == "A")
            w.writerow([f"{q}-{sys_}", f"q{q}", sys_, f"question {q}",
                        int(y if r.random() < 0.8 else not y),
                        int(y) if r.random() < 0.3 else ""])


def test_streamed_rows_are_read_again_on_each_pass(tmp_path):
    from judgekit.recorded.base import StreamedRows
    from judgekit.recorded.tables import read

    path = tmp_path / "v.csv"
    _write(path, n=30)
    table = read(path, "auto", {}, stream=True)
    assert isinstance(table.rows, StreamedRows)
    assert table.roles["judge"] == "judge" and table.rows[0]["id"] == "0-A"
    first, second = list(table.rows), list(table.rows)
    assert first == second and len(first) == 30 == len(table.rows)
    labelled = table.rows.map(lambda: lambda r: {**r, "x": 1})
    assert [r["x"] for r in labelled] == [1] * 30


def test_first_codes_number_keys_as_they_first_appear():
    from judgekit.methods.verdicts.analysis import first_codes

    h = np.array([5, -3, 5, 9, -3, 1, 9, 5], np.int64)
    assert first_codes(h).tolist() == [0, 1, 0, 2, 1, 3, 2, 0]
    assert first_codes(["b", "a", "b", "c"]).tolist() == [0, 1, 0, 2]
    assert first_codes(np.zeros(0, np.int64)).size == 0


def test_the_figures_do_not_depend_on_the_hash_seed(tmp_path):
    path = tmp_path / "v.csv"
    _write(path)
    got = []
    for seed in ("1", "2"):
        out = tmp_path / f"run{seed}"
        r = jk("analyse", str(path), "--out", str(out), cwd=tmp_path,
               env={"PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        doc = json.loads((out / "results.json").read_text())
        got.append(({k: doc[k] for k in ("measures", "n_rows", "notes", "unreadable")},
                    (out / "items.jsonl").read_bytes()))
    assert got[0] == got[1]
    payload = got[0][0]
    keys = {m["key"]: m for m in payload["measures"]}
    # 900 rows, 450 ids judged twice, three systems on 150 questions: every figure kind
    assert payload["n_rows"] == 900 and keys["repeat_consistency"]["n"] == 450
    assert keys["pass_rate"]["clusters"] == 150
    assert {"corrected_difference[A-B]", "corrected_difference[A-C]",
            "corrected_difference[B-C]", "leniency[A]"} <= set(keys)
    assert len(got[0][1].splitlines()) == 900


def test_a_betting_sequence_resumed_from_its_state_gives_the_same_interval():
    import judgekit.stats.label_intervals as li

    rng = np.random.default_rng(7)
    z = rng.random(700) * 1.2 - 0.1
    lo, hi = np.full(700, -0.2), np.full(700, 1.2)
    li._STATES.clear()
    cold = li.betting_cs(z, lo, hi, 0.9, -0.2, 1.2)
    li._STATES.clear()
    li.betting_cs(z[:613], lo[:613], hi[:613], 0.9, -0.2, 1.2)  # kept after 613 draws
    assert li.betting_cs(z, lo, hi, 0.9, -0.2, 1.2) == cold
    # the path's last interval is the same numbers
    assert li.betting_cs_path(z, lo, hi, 0.9, -0.2, 1.2)[-1] == cold
    # a changed prefix is not resumed from
    z2 = z.copy()
    z2[100] += 0.05
    li._STATES.clear()
    want = li.betting_cs(z2, lo, hi, 0.9, -0.2, 1.2)
    li._STATES.clear()
    li.betting_cs(z[:613], lo[:613], hi[:613], 0.9, -0.2, 1.2)
    assert li.betting_cs(z2, lo, hi, 0.9, -0.2, 1.2) == want
    li._STATES.clear()


def test_shared_means_keep_only_questions_two_systems_answered():
    """Per-question means per system, for the questions two or more systems answered
    (repeats averaged, NaN where a system did not answer), a block of rows at a time."""
    import numpy as np

    from judgekit.methods.verdicts.pointwise import _shared_means

    question = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4], np.int32)
    system = np.array([0, 1, 0, 0, 2, 2, 1, 1, 2], np.int32)
    verdict = np.array([1, 0, 1, 0, 1, 0, 1, 1, 1], np.int8)
    for step in (2, 1 << 20):  # blocks smaller than the rows give the same means
        shared, judged = _shared_means(question, system, verdict, 3, step=step)
        assert shared.tolist() == [0, 2, 4]  # questions 1 and 3: one system each
        assert np.array_equal(judged, np.array([[1.0, 0.0, np.nan], [0.0, np.nan, 0.5],
                                                [np.nan, 1.0, 1.0]]), equal_nan=True)


def test_the_last_interval_by_bisection_equals_the_full_grids_at_every_kind_of_term():
    """betting_cs finds its ends by bisection between coarse grid points; the path
    computes every grid point at every draw. Same numbers, for shares, heavy weighted
    terms with bounds of their own, a sample's mean (horizon) and shifted ranges."""
    import judgekit.stats.label_intervals as li

    rng = np.random.default_rng(11)
    for case in range(24):
        t = int(rng.integers(2, 400))
        if case % 3 == 0:
            z, lo, hi, low, high = rng.random(t), np.zeros(t), np.ones(t), 0.0, 1.0
        elif case % 3 == 1:  # inverse-probability weighted terms
            q = rng.uniform(0.25, 3, t)
            y = (rng.random(t) < 0.2).astype(float)
            z, lo, hi, low, high = 0.3 + (y - 0.3) / q, 0.3 - 0.3 / q, 0.3 + 0.7 / q, 0.0, 1.0
        else:
            z = rng.random(t) * 1.2 - 0.1
            lo, hi, low, high = np.full(t, -0.2), np.full(t, 1.2), -0.2, 1.2
        level = (0.8, 0.9, 0.95)[case % 3]
        li._STATES.clear()
        got = li.betting_cs(z, lo, hi, level, low, high)
        assert got == li.betting_cs_path(z, lo, hi, level, low, high)[-1], case
        assert got.low <= got.estimate <= got.high
    li._STATES.clear()
