"""Judgements made by other tools, read from their real log files (tests/fixtures/
external, from the tools' own repositories), then audited and probed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import judgekit
from judgekit.core.errors import DataError
from judgekit.data.judged import load_judged
from judgekit.recorded.judged import JudgedInput, label_of, read_records

FIX = Path(__file__).parent / "fixtures" / "external"


def test_inspect_json_log_model_graded_fact():
    items = read_records(FIX / "inspect_security_guide.json",
                         JudgedInput(data_format="inspect"))
    assert len(items) == 3
    first = items[0]
    assert first["Prompt"] == "How do I prevent SQL Injection attacks?"
    assert first["Output"].startswith("Use parameterized queries and prepared statements")
    assert first["Label"] == 1 and first["Reason"].startswith("To evaluate the submission")
    assert first["Source"].startswith("inspect:security_guide:")
    assert first["Source"].endswith(":model_graded_fact")
    got = load_judged(FIX / "inspect_security_guide.json", spec=JudgedInput(
        data_format="inspect"))
    assert [it.Prompt for it in got] == [it["Prompt"] for it in items]


def test_inspect_eval_logs_zip_format():
    items = read_records(FIX / "inspect_input_task.eval", JudgedInput(data_format="inspect"))
    assert len(items) == 1 and items[0]["Label"] == 1
    assert "International Falls" in items[0]["Output"]
    pop = read_records(FIX / "inspect_popularity.eval", JudgedInput(data_format="inspect"))
    assert len(pop) >= 10 and {i["Label"] for i in pop} <= {0, 1, None}
    assert all(i["Source"].endswith(":match") for i in pop)
    with pytest.raises(DataError, match="no score 'nope'"):
        read_records(FIX / "inspect_popularity.eval",
                     JudgedInput(data_format="inspect", scorer="nope"))


def test_promptfoo_results_llm_rubric_components():
    items = read_records(FIX / "promptfoo_sample_export.json",
                         JudgedInput(data_format="promptfoo"))
    # four result rows, one llm-rubric component each (cost/latency/contains skipped)
    assert len(items) == 4 and all(i["Label"] == 1 for i in items)
    assert items[1]["Output"] == "An echo."
    assert items[0]["Prompt"].startswith("Solve this riddle: I speak without a mouth")
    assert "Do not apologize" in items[0]["Source"]
    married = read_records(FIX / "promptfoo_sample_export.json",
                           JudgedInput(data_format="promptfoo", scorer="married"))
    assert len(married) == 2
    with pytest.raises(DataError, match="no llm-rubric"):
        read_records(FIX / "promptfoo_sample_export.json",
                     JudgedInput(data_format="promptfoo", scorer="no such rubric"))


def test_csv_and_jsonl_with_a_column_mapping(tmp_path):
    f = tmp_path / "j.csv"
    f.write_text("q,a,verdict,why\nWhat is 2+2?,4,PASS,right\nCapital of France?,Lyon,fail,"
                 "wrong\nHi,hello,partial,unsure\n")
    spec = JudgedInput(data_format="csv", columns={"prompt": "q", "output": "a",
                                                   "label": "verdict", "reason": "why"})
    items = load_judged(f, spec=spec)
    assert [(i.Prompt, i.Output, i.Label) for i in items] == [
        ("What is 2+2?", "4", 1), ("Capital of France?", "Lyon", 0), ("Hi", "hello", None)]
    j = tmp_path / "j.jsonl"
    j.write_text(json.dumps({"in": "x", "out": "y", "ok": True}) + "\n")
    got = read_records(j, JudgedInput(data_format="jsonl", columns={
        "prompt": "in", "output": "out", "label": "ok"}))
    assert got == [{"Prompt": "x", "Output": "y", "Source": "j.jsonl:0", "Label": 1}]
    with pytest.raises(DataError, match="no column 'answer'"):
        read_records(f, JudgedInput(data_format="csv", columns={"prompt": "q",
                                                                "output": "answer"}))
    with pytest.raises(DataError, match="needs columns"):
        read_records(f, JudgedInput(data_format="csv"))
    with pytest.raises(DataError, match="unknown field 'score'"):
        read_records(f, JudgedInput(data_format="csv", columns={
            "prompt": "q", "output": "a", "score": "verdict"}))


def test_labels_from_verdicts():
    assert [label_of(v) for v in ("C", "I", "P", True, 0, 0.7, 0.2, "yes", None, "0.9")] == \
        [1, 0, None, 1, 0, 1, 0, 1, None, 1]
    assert label_of(0.7, threshold=0.8) == 0


def test_a_json_inspect_log_given_as_json_says_what_to_set():
    with pytest.raises(DataError, match="set data_format: inspect"):
        load_judged(FIX / "inspect_security_guide.json")


def test_audit_and_pointwise_probe_run_on_other_tools_logs(tmp_path):
    """`judgekit run CONFIG` with data_format: inspect (audit) and promptfoo (pointwise
    probe), through the installed command."""
    audit = tmp_path / "audit.yaml"
    audit.write_text(json.dumps({
        "method": "nodata", "experiment": "llm", "data_format": "inspect",
        "data_path": str(FIX / "inspect_security_guide.json"), "sample_size": 3,
        "rounds": 2, "phi": [0.1], "rubric": "west_frisian_ip.yaml",
        "models": {"evaluator": "mock/auto", "verifier": "mock/auto:1"}}))
    probe = tmp_path / "probe.yaml"
    probe.write_text(json.dumps({
        "method": "probe", "judge_mode": "pointwise", "data_format": "promptfoo",
        "data_path": str(FIX / "promptfoo_sample_export.json"),
        "models": {"judge": "mock/auto"}}))
    exe = Path(sys.executable).with_name("judgekit")
    for cfg, name in ((audit, "a"), (probe, "p")):
        proc = subprocess.run([str(exe), "run", str(cfg), "--out", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=300,
                              env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr
    a = judgekit.load_results(tmp_path / "a" / "results.json")
    assert a.method == "nodata" and a.payload.sample_size == 3
    assert [r["x"]["Prompt"] for r in a.detail("items")][0] == \
        "How do I prevent SQL Injection attacks?"
    p = judgekit.load_results(tmp_path / "p" / "results.json")
    assert p.method == "probe" and p.payload.n_pairs == 4
