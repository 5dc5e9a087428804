"""``execution: vllm``: vLLM's offline batch runner as a batch engine.

No GPU is lent here, so ``vllm run-batch`` itself never runs in these tests: the runner
is judgekit.testing.vllm_standin (vLLM's command line, input checks and output format,
answers from a loopback OpenAI-compatible server). The formats are checked against the
shapes in vLLM's own run-batch tests and protocol (BatchRequestInput / BatchRequestOutput,
``tests/entrypoints/.../test_run_batch.py`` and ``run_batch.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from judgekit.llm import Call, Client, ClientSettings
from judgekit.llm.providers import make_provider
from judgekit.llm.templates import TemplateLibrary
from judgekit.llm.types import ProviderRequest
from judgekit.llm.vllm_batch import VLLMBatch, read_output_line
from judgekit.testing.chaos import ChaosServer, default_answer

from .conftest import TEST_PROMPTS
from .engine_calls import STAGE, Answer, run

STANDIN = [sys.executable, "-m", "judgekit.testing.vllm_standin"]


def settings(cache: Path, url: str, execution: str = "vllm", *, forward: str | None = None,
             **kw) -> ClientSettings:
    return ClientSettings(
        cache_dir=cache, execution=execution, progress=False, base_urls={"local": url},
        backoff_base=0.0, vllm_command=[*STANDIN, "--forward", forward or url, "run-batch"],
        **kw)




def test_input_lines_are_vllms_batch_request_input_with_the_output_models_schema(tmp_path):
    api = VLLMBatch(make_provider("local/org/model-7b", "http://127.0.0.1:9/v1"), tmp_path,
                    ["vllm", "run-batch"], [])
    req = ProviderRequest(model="local/org/model-7b",
                          messages=[{"role": "user", "content": "hi"}],
                          sampling={"temperature": 0.0, "max_tokens": 64},
                          schema=Answer.model_json_schema(), schema_name="Answer")
    line = api.line("k1", req)
    # the keys and url of vLLM's INPUT_BATCH lines; the model name as served
    assert set(line) == {"custom_id", "method", "url", "body"}
    assert (line["custom_id"], line["method"], line["url"]) == \
        ("k1", "POST", "/v1/chat/completions")
    body = line["body"]
    assert body["model"] == "org/model-7b" and body["max_tokens"] == 64
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Answer", "schema": Answer.model_json_schema(), "strict": False}}


def test_output_lines_in_each_documented_shape():
    ok = read_output_line({"id": "vllm-1", "custom_id": "a", "error": None, "response": {
        "status_code": 200, "request_id": "vllm-batch-1", "body": {
            "id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [{
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": '{"answer": "x"}'}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}}})
    assert ok.completion is not None and ok.completion.text == '{"answer": "x"}'
    assert ok.completion.usage.prompt_tokens == 7
    # ErrorResponse, current (nested) and older (flat); a plain string with status 400
    nested = read_output_line({"id": "v", "custom_id": "b", "response": {
        "status_code": 404, "request_id": "r", "body": None}, "error": {"error": {
            "message": "The model `x` does not exist.", "type": "NotFoundError",
            "code": 404}}})
    flat = read_output_line({"id": "v", "custom_id": "c", "response": {
        "status_code": 400, "request_id": "r"}, "error": {
            "object": "error", "message": "bad", "type": "BadRequestError", "code": 400}})
    text = read_output_line({"id": "v", "custom_id": "d", "response": {
        "status_code": 400, "request_id": "r"}, "error": "Request must not be sent in "
                                                          "stream mode"})
    server = read_output_line({"id": "v", "custom_id": "e", "response": {
        "status_code": 500, "request_id": "r"}, "error": {"error": {"message": "oom"}}})
    assert (nested.kind, flat.kind, text.kind, server.kind) == \
        ("http_4xx", "http_4xx", "http_4xx", "transport")
    assert "does not exist" in str(nested.error) and "(404)" in str(nested.error)
    assert "bad" in str(flat.error) and "stream mode" in str(text.error)


def test_vllm_answers_equal_online_and_parse_failures_are_reasked_online(tmp_path):
    def answer(prompt: str) -> dict:
        if "Q-4\n" in prompt:  # the batch answer lacks a field: re-asked online
            return {"answer": "no confidence"}
        return default_answer(prompt)

    with ChaosServer(answer=answer) as srv:
        online = asyncio.run(run(settings(tmp_path / "a", srv.url, "online"), 12))
        srv.log.clear()
        got = asyncio.run(run(settings(tmp_path / "b", srv.url), 12))
        reasks = [p for p, _ in srv.log if "could not be used" in p]
    # Q-4's first answer lacks a field; the re-ask (its last message the parse error)
    # gets a valid one, online as in the batch
    assert [(r.ok, r.kind, r.value) for r in got] == \
        [(r.ok, r.kind, r.value) for r in online]
    assert got[0].value == Answer(**default_answer("Question: <QUESTION>\nQ-0\n</QUESTION>"))
    assert all(r.source == "batch" for r in got)
    assert got[4].ok and got[4].attempts == 2  # 1 in the batch, then 1 online
    assert len(reasks) == 1 and online[4].attempts == 2
    files = sorted(p.name for p in (tmp_path / "b" / "vllm").iterdir())
    assert any(f.endswith(".output.jsonl") for f in files) and \
        any(f.endswith(".rc") for f in files)


def test_a_runner_that_cannot_start_fails_its_calls_with_one_line_and_the_run_goes_on(
        tmp_path):
    s = ClientSettings(cache_dir=tmp_path / "c", execution="vllm", progress=False,
                       base_urls={"local": "http://127.0.0.1:9/v1"}, backoff_base=0.0,
                       vllm_command=[str(tmp_path / "no-such-vllm"), "run-batch"],
                       max_failures=None)
    res = asyncio.run(run(s, 3))
    assert [r.ok for r in res] == [False] * 3
    assert {r.kind for r in res} == {"http_4xx"}
    assert "install vLLM" in str(res[0].error) and "\n" not in str(res[0].error)


def test_an_interrupted_run_polls_the_runner_it_started_instead_of_starting_another(
        tmp_path):
    """The runner is detached: a second judgekit process finds its batch by the same
    submission, waits for it, and sends nothing itself; a supervisor that died with the
    machine (no exit code, no live pid) is started again."""
    with ChaosServer() as srv:
        s = settings(tmp_path / "d", srv.url)
        api = VLLMBatch(make_provider("local/m", srv.url), s.cache_dir,
                        [*STANDIN, "--forward", srv.url, "run-batch", "--sleep", "1"], [])
        lines = [{"custom_id": f"k{i}", "method": "POST", "url": "/v1/chat/completions",
                  "body": {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}}
                 for i in range(3)]
        bid = asyncio.run(api.submit(lines, "tag1"))
        other = VLLMBatch(make_provider("local/m", srv.url), s.cache_dir, ["false"], [])
        assert asyncio.run(other.find("tag1")) == bid
        assert not asyncio.run(other.status(bid)).done
        st = _until_done(other, bid)
        assert st.status == "completed" and st.counts == {"completed": 3}
        items = asyncio.run(_collect(other, bid, st))
        assert [i.custom_id for i in items] == ["k0", "k1", "k2"]
        assert sum(srv.counts.values()) == 3
        # the supervisor died without an exit code: status starts it again
        folder = Path(s.cache_dir) / "vllm"
        (folder / "tag1.rc").unlink()
        (folder / "tag1.output.jsonl").unlink()
        (folder / "tag1.pid").write_text(str(_dead_pid()))
        assert not asyncio.run(api.status(bid)).done
        assert _until_done(api, bid).status == "completed"


def _until_done(api, bid):
    for _ in range(300):
        st = asyncio.run(api.status(bid))
        if st.done:
            return st
        time.sleep(0.1)
    raise AssertionError(f"{bid} did not finish")


async def _collect(api, bid, st):
    return [i async for i in api.results(bid, st)]


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_the_runners_log_reaches_the_error_scrubbed(tmp_path, monkeypatch):
    key = "sk-" + "proj-VLLMsentinel0123456789abcdefXYZ"  # built: no key literal
    monkeypatch.setenv("OPENAI_API_KEY", key)
    script = tmp_path / "fake-vllm"
    script.write_text(f"#!/bin/sh\necho 'CUDA out of memory with {key}' >&2\nexit 1\n")
    script.chmod(0o755)
    s = ClientSettings(cache_dir=tmp_path / "e", execution="vllm", progress=False,
                       base_urls={"local": "http://127.0.0.1:9/v1"}, backoff_base=0.0,
                       vllm_command=[str(script)], max_failures=None)
    res = asyncio.run(run(s, 2))
    assert not res[0].ok and "CUDA out of memory" in str(res[0].error)
    assert key not in str(res[0].error)
    assert key not in json.dumps([r.error for r in res])


def test_batches_cancel_stops_a_running_runner(tmp_path):
    from judgekit.llm.batch import cancel
    from judgekit.llm.batch_journal import BatchJournal

    with ChaosServer() as srv:
        s = settings(tmp_path / "f", srv.url, vllm_args=["--sleep", "30"])
        c = Client(s, templates=TemplateLibrary(TEST_PROMPTS))

        async def go():
            task = asyncio.ensure_future(c.map(STAGE, [Call({"question": "Q-1"}, "local/m")]))
            journal = BatchJournal(Path(s.cache_dir))
            for _ in range(100):
                open_ = [e for e in journal.entries().values() if e["status"] == "submitted"]
                if open_:
                    break
                await asyncio.sleep(0.05)
            st = await cancel(c, open_[0]["id"])
            res = await task
            await c.aclose_providers()
            return st, res
        st, res = asyncio.run(go())
    assert st.status == "cancelled"
    # as a cancelled provider batch: its requests never ran, so they run online
    # (batch_fallback: online); the runner was stopped before it answered anything
    assert res[0].ok and res[0].source == "provider" and sum(srv.counts.values()) == 1
    rc = list((Path(s.cache_dir) / "vllm").glob("*.rc"))
    assert [p.read_text() for p in rc] == ["cancelled"]


def test_only_local_models_go_to_the_runner(tmp_path, monkeypatch):
    from judgekit.llm.batch import engine_for

    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "test0123456789")
    s = ClientSettings(cache_dir=tmp_path, execution="vllm")
    assert engine_for(s, make_provider("openai/gpt-4.1-mini")) is None
    assert engine_for(s, make_provider("mock/x")) is None
    assert isinstance(engine_for(s, make_provider("local/org/m", "http://127.0.0.1:9/v1")),
                      VLLMBatch)


def test_cli_executor_vllm_writes_the_local_runs_results(tmp_path):
    """The installed command, in a subprocess: ``--executor vllm`` (the stand-in runner)
    exits 0 and its results.json is byte-equal to the online run's."""
    import subprocess

    from .engine_calls import judge_answer

    exe = Path(sys.executable).with_name("judgekit")
    root = Path(__file__).resolve().parents[1]
    with ChaosServer(answer=judge_answer) as srv:
        outs = {}
        for ex in ("online", "vllm"):
            out = tmp_path / f"run-{ex}"
            runner = json.dumps([*STANDIN, "--forward", srv.url, "run-batch"])
            r = subprocess.run(
                [str(exe), "run", str(root / "experiments" / "probe_local.yaml"),
                 "--executor", ex, "--model", "judge=local/judge",
                 "--set", f"base_urls.local={srv.url}", "--set", "cassette=null",
                 "--set", f"vllm_command={runner}",
                 "--set", f"cache_dir={tmp_path / ('cache-' + ex)}", "--out", str(out)],
                capture_output=True, text=True, timeout=600,
                env={**os.environ, "JUDGEKIT_LOCAL_BASE_URL": ""})
            assert r.returncode == 0, r.stderr[-2000:]
            outs[ex] = (out / "results.json").read_bytes()
    assert outs["vllm"] == outs["online"]
    assert list((tmp_path / "cache-vllm" / "vllm").glob("*.output.jsonl"))
