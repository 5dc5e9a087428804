"""`judgekit compare` and `judgekit export`: paired comparison of two runs on the same
items, and runs as tables (CSV, JSONL, pandas)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import judgekit
from judgekit.llm import Client, ClientSettings
from judgekit.llm.providers.mock import FunctionProvider

from .test_nodata_audit import evaluator, make_items, verifier
from .test_probe import _first_label


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("judgekit")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))


def _audit(tmp_path: Path, name: str, lying: bool) -> Path:
    with Client(ClientSettings(use_cache=False, progress=False), providers={
            "mock/ev": FunctionProvider(evaluator(lying)),
            "mock/ver": FunctionProvider(verifier)}) as client:
        res = judgekit.run({"method": "nodata", "experiment": "llm", "seed": 2, "rounds": 3,
                            "phi": [0.1], "data_path": str(make_items(tmp_path)),
                            "sample_size": 30,
                            "models": {"evaluator": "mock/ev", "verifier": "mock/ver"}},
                           client=client)
    return res.save(tmp_path / name)


def _pairs(tmp_path: Path, n: int = 16) -> Path:
    p = tmp_path / "pairs.jsonl"
    p.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Q{i}?", "a": f"good {i}",
                                     "b": f"bad {i}", "correct": "a"}) + "\n"
                         for i in range(n)))
    return p


def _probe(tmp_path: Path, name: str, fn, pairs: Path | None = None, **extra) -> Path:
    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"mock/j": FunctionProvider(fn)}) as client:
        res = judgekit.run({"method": "probe", "data_path": str(pairs or _pairs(tmp_path)),
                            "models": {"judge": "mock/j"}, "resamples": 200, **extra},
                           client=client)
    return res.save(tmp_path / name)


def test_compare_pairwise_probes_without_swap_compares_a_win_rates(tmp_path):
    """Runs made without the swap transform have no order inconsistency to compare:
    compare falls back to the measure both have, A's win rate as given."""
    pairs = tmp_path / "alternating.jsonl"
    pairs.write_text("".join(json.dumps(
        {"id": f"p{i}", "question": f"Q{i}?", "a": f"good {i}" if i % 4 else f"bad {i}",
         "b": f"bad {i}" if i % 4 else f"good {i}"}) + "\n" for i in range(16)))
    a = _probe(tmp_path, "first", lambda r: {"winner": _first_label(r)}, pairs,
               transforms=["pad"])
    b = _probe(tmp_path, "content", _content_judge, pairs, transforms=["pad"])
    out = tmp_path / "cmp"
    proc = _cli("compare", str(a), str(b), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "compare.json").read_text())
    assert doc["measure"] == "rate at which answer A wins (verdicts as given)"
    # always-first picks A on every pair; the content judge picks the "good" answer
    good_first = sum('"a": "good' in ln for ln in pairs.read_text().splitlines())
    n = doc["n_paired"]
    assert good_first == 12 and n == 16
    assert doc["a"]["rate"] == 1.0 and doc["b"]["rate"] == pytest.approx(good_first / n)
    assert doc["difference"] == pytest.approx(-0.25)
    assert doc["difference_ci"][0] <= doc["difference"] <= doc["difference_ci"][1]


def _content_judge(req):
    """Prefers the answer saying "good", wherever it stands: order consistent."""
    import re

    parts = re.split(r"^Answer (\w+):$", req.messages[-1]["content"], flags=re.M)
    labels, bodies = parts[1::2], parts[2::2]
    return {"winner": next((lab for lab, body in zip(labels, bodies) if "good" in body),
                           labels[0])}


def test_compare_two_audits_on_the_same_items(tmp_path):
    a, b = _audit(tmp_path, "truthful", False), _audit(tmp_path, "lying", True)
    out = tmp_path / "cmp"
    proc = _cli("compare", str(a / "results.json"), str(b / "results.json"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "compare.json").read_text())
    assert {"method", "n_paired", "difference", "difference_ci", "p_value"} <= set(doc)
    assert doc["method"] == "nodata" and doc["n_paired"] == 30
    # the liar fails the protocol on most items the truthful evaluator passes
    assert doc["a"]["rate"] >= 0.95 and doc["b"]["rate"] <= 0.1
    assert doc["difference"] == pytest.approx(doc["b"]["rate"] - doc["a"]["rate"])
    assert doc["difference_ci"][1] < 0 and doc["p_value"] < 0.001
    assert doc["verdict"] == "B is lower than A"
    assert doc["a"]["path"] == "truthful"  # no absolute local path
    rows = list(csv.DictReader(io.StringIO((out / "differences.csv").read_text())))
    assert len(rows) == 30 and sum(r["changed"] == "True" for r in rows) == doc["changed"]
    assert "B - A" in (out / "report.html").read_text()
    assert "B - A =" in proc.stdout


def test_compare_two_probes_on_the_same_pairs(tmp_path):
    pairs = _pairs(tmp_path)
    a = _probe(tmp_path, "first", lambda r: {"winner": _first_label(r)}, pairs)
    b = _probe(tmp_path, "content", _content_judge, pairs)
    out = tmp_path / "cmp"
    proc = _cli("compare", str(a / "results.json"), str(b / "results.json"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "compare.json").read_text())
    # always-first flips on every swapped pair; the content judge on none
    assert doc["method"] == "probe" and doc["n_paired"] == 16
    assert (doc["a"]["rate"], doc["b"]["rate"], doc["difference"]) == (1.0, 0.0, -1.0)
    assert doc["difference_ci"][0] >= -1.0 and doc["difference_ci"][1] < -0.5
    acc = next(r for r in doc["secondary"] if r["name"].startswith("accuracy"))
    # in the given order "a" stands first and is correct: both score 1.0 there
    assert acc["b"] == acc["a"] == 1.0 and acc["difference"] == 0.0 and acc["n"] == 16
    assert doc["agreement"]["n"] == 16 and (out / "report.html").exists()


def test_compare_refuses_runs_that_share_no_items_or_method(tmp_path):
    a = _probe(tmp_path / "x", "a", _content_judge) if (tmp_path / "x").mkdir() is None \
        else None
    other = tmp_path / "y"
    other.mkdir()
    p = other / "pairs.jsonl"
    p.write_text("".join(json.dumps({"id": f"q{i}", "question": "Q", "a": "good",
                                     "b": "bad"}) + "\n" for i in range(4)))
    b = _probe(other, "b", _content_judge, p)
    proc = _cli("compare", str(a), str(b), "--out", str(tmp_path / "c"))
    assert proc.returncode == 2 and "must share their items" in proc.stderr
    audit = _audit(tmp_path, "audit", False)
    proc = _cli("compare", str(a), str(audit), "--out", str(tmp_path / "c2"))
    assert proc.returncode == 2 and "two runs of one method" in proc.stderr
    proc = _cli("compare", str(tmp_path / "nowhere"), str(a), "--out", str(tmp_path / "c3"))
    assert proc.returncode == 2 and "no results.json" in proc.stderr


def test_compare_vbscore_runs_in_python(tmp_path):
    from judgekit.analysis.comparison import compare

    from .test_vbscore_case_study import run_case, script

    run_case(tmp_path, script, out="a")

    def worse(req):
        out = script(req)
        if req.schema_name == "tagger":
            out = {"tags": ["none" for _ in out["tags"]]}
        return out

    (tmp_path / "cache").rename(tmp_path / "cache_a")
    run_case(tmp_path, worse, out="b")
    comp, items = compare(tmp_path / "a", tmp_path / "b")
    assert comp.method == "vbscore" and comp.n_paired == 2 and len(items) == 2
    assert comp.difference < 0 and comp.b.rate == 0.0
    lo, hi = comp.difference_ci
    # VB at alpha = 0.5 lies in [-0.25, 1]: a difference in [-1.25, 1.25]; two queries
    # give Student t on 1 df with the range's ends as half-weight pseudo-observations
    assert -1.25 <= lo <= comp.difference <= hi <= 1.25 and hi > lo
    from judgekit.stats.bootstrap import bounded_mean_interval
    d = [i.difference for i in items]
    assert [lo, hi] == pytest.approx(bounded_mean_interval(np.array(d), -1.25, 1.25, 0.95))


def test_export_csv_jsonl_and_pandas(tmp_path):
    run = _audit(tmp_path, "audit", False)
    out = tmp_path / "items.csv"
    proc = _cli("export", str(run), "--format", "csv", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 30
    assert {"index", "label", "success", "evaluator.label", "x.Prompt"} <= set(rows[0])
    assert json.loads(rows[0]["challenges"]) == json.loads(rows[0]["challenges"])
    proc = _cli("export", str(run / "results.json"), "--format", "jsonl", "--headline",
                "--out", str(tmp_path / "head.jsonl"))
    assert proc.returncode == 0, proc.stderr
    head = [json.loads(x) for x in (tmp_path / "head.jsonl").read_text().splitlines()]
    assert len(head) == 1 and head[0]["phi"] == 0.1 and "success_rate" in head[0]
    proc = _cli("export", str(run), "--format", "xlsx", "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and "csv, jsonl or parquet" in proc.stderr
    pd = pytest.importorskip("pandas")
    res = judgekit.load_results(run / "results.json")
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df["phi"]) == [0.1]
    items = res.detail_frame()
    assert len(items) == 30 and "evaluator.label" in items.columns
