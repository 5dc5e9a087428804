"""Fault injection: the client against a loopback server that misbehaves like real APIs."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from pydantic import BaseModel

from judgekit.core.errors import MissingKeyError, RunAborted
from judgekit.llm import Call, Stage
from judgekit.llm.secrets import scrub
from judgekit.testing import ChaosServer
from judgekit.testing.chaos import default_answer

KEY = "sk-" + "proj-SENTINEL0123456789abcdefXYZ"  # built: no key literal


class Answer(BaseModel):
    answer: str
    confidence: float


STAGE = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0, "max_tokens": 64})


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def chaos():
    servers = []

    def make(**kw):
        s = ChaosServer(**kw)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.stop()


def client_for(make_client, server, **kw):
    kw.setdefault("timeout", 0.5)
    kw.setdefault("backoff_base", 0.0)
    c = make_client(**kw)
    c.settings.base_urls["openai"] = server.url
    return c


async def ask(client, questions):
    try:
        return await client.map(STAGE, [Call({"question": q}, "openai/gpt-4.1-mini")
                                        for q in questions])
    finally:
        await client.aclose_providers()


@pytest.mark.parametrize("fault", ["429", "500", "503", "529", "reset_before", "reset_mid",
                                   "non_json", "hang"])
async def test_each_transient_fault_is_retried_to_success(chaos, make_client, sleeps, fault):
    srv = chaos(plan={"Q-": [fault, "ok"]}, hang_s=2.0)
    client = client_for(make_client, srv)
    [res] = await ask(client, ["Q-1"])
    assert res.ok and res.kind is None, res.error
    assert res.value == Answer(**default_answer(srv.log[-1][0]))
    assert [w for _, w in srv.log] == [fault, "ok"]
    assert all(0 <= s <= client.settings.max_wait for s in sleeps)


async def test_retry_after_nan_and_huge_are_capped(chaos, make_client, sleeps):
    srv = chaos(plan={"Q-": ["429", "429", "429", "429", "ok"]}, seed=3)
    client = client_for(make_client, srv, max_wait=2.0)
    [res] = await ask(client, ["Q-1"])
    assert res.ok
    assert len(sleeps) == 4 and all(0 <= s <= 2.0 for s in sleeps)


async def test_a_permanent_400_is_one_counted_failure_and_map_goes_on(chaos, make_client):
    srv = chaos(plan={"BAD": ["400"]})
    client = client_for(make_client, srv)
    res = await ask(client, [f"Q-{i}" for i in range(20)] + ["BAD-1"])
    assert [r.ok for r in res] == [True] * 20 + [False]
    bad = res[-1]
    assert bad.kind == "http_4xx" and "HTTP 400" in bad.error
    assert KEY not in bad.error and "<redacted>" in bad.error  # the body echoed the key
    assert sum(1 for _, w in srv.log if w == "400") == 1  # never retried
    assert client.summary()["failed_by_kind"] == {"http_4xx": 1}
    assert client.failure_log[0]["kind"] == "http_4xx"


async def test_failures_are_not_cached_and_a_rerun_retries_exactly_them(chaos, make_client):
    srv = chaos(plan={"BAD": ["400", "ok"]})
    first = client_for(make_client, srv)
    res = await ask(first, ["Q-1", "Q-2", "BAD-1"])
    assert [r.ok for r in res] == [True, True, False]
    first.close()
    n = len(srv.log)
    again = client_for(make_client, srv)
    res = await ask(again, ["Q-1", "Q-2", "BAD-1"])
    assert all(r.ok for r in res)
    bad_prompt = next(p for p, w in srv.log[:n] if w == "400")
    assert [p for p, _ in srv.log[n:]] == [bad_prompt]  # only the failed call


async def test_transport_exhaustion_and_timeouts_are_failures(chaos, make_client):
    srv = chaos(plan={"DOWN": ["503"], "SLOW": ["hang"]}, hang_s=1.0)
    client = client_for(make_client, srv, transport_attempts=3, timeout=0.2)
    down, slow, fine = await ask(client, ["DOWN-1", "SLOW-1", "Q-1"])
    assert (down.kind, slow.kind, fine.ok) == ("transport", "timeout", True)
    # at most the 3 attempts reach the server (a pooled connection that the server
    # closed can fail an attempt client-side, which also counts against the cap)
    assert 1 <= sum(1 for _, w in srv.log if w == "503") <= 3


async def test_call_deadline_bounds_a_call(chaos, make_client):
    srv = chaos(plan={"SLOW": ["hang"]}, hang_s=3.0)
    client = client_for(make_client, srv, timeout=10.0, call_deadline=0.3)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    [res] = await ask(client, ["SLOW-1"])
    assert res.kind == "timeout" and "deadline" in res.error
    assert loop.time() - t0 < 2.0


async def test_refusal_and_truncation_are_their_own_kinds_without_reask(chaos, make_client):
    srv = chaos(plan={"NO": ["refusal"], "CUT": ["length"]})
    client = client_for(make_client, srv)
    no, cut = await ask(client, ["NO-1", "CUT-1"])
    assert (no.kind, no.attempts) == ("refusal", 1) and "can't help" in no.error
    assert (cut.kind, cut.attempts) == ("truncated", 1)


@pytest.mark.parametrize("status", ["401", "404"])
async def test_auth_and_unknown_model_stop_the_run_with_the_key_scrubbed(chaos, make_client,
                                                                         status):
    srv = chaos(plan={"Q-": [status]})
    client = client_for(make_client, srv)
    with pytest.raises(RunAborted) as err:
        await ask(client, [f"Q-{i}" for i in range(30)])
    assert f"HTTP {status}" in str(err.value) and KEY not in str(err.value)
    assert len(srv.log) <= client.settings.concurrency  # stopped, not one per item


async def test_missing_key_stops_the_run(chaos, make_client, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    srv = chaos()
    client = client_for(make_client, srv)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        await ask(client, ["Q-1", "Q-2"])
    assert srv.log == []


async def test_failure_budget_stops_a_broken_endpoint(chaos, make_client):
    srv = chaos(plan={"Q-": ["400"]})
    client = client_for(make_client, srv, max_failures=0.25, failure_budget_min_calls=10,
                        concurrency=1)
    with pytest.raises(RunAborted, match=r"10 of 10 calls failed .*budget 25%"):
        await ask(client, [f"Q-{i}" for i in range(200)])
    assert len(srv.log) == 10


async def test_failure_budget_as_a_count(chaos, make_client):
    srv = chaos(plan={"BAD": ["400"]})
    client = client_for(make_client, srv, max_failures=2, concurrency=1)
    res = await ask(client, ["BAD-1", "BAD-2", "Q-1"])
    assert [r.ok for r in res] == [False, False, True]
    with pytest.raises(RunAborted, match="3 failed calls .budget 2."):
        await ask(client, ["BAD-3"])


async def test_empty_answer_reask_never_sends_an_empty_assistant_turn(fake_api, make_client):
    from .conftest import Reply, openai_body

    fake_api.replies = [Reply(body=openai_body("")),
                        Reply(body=openai_body(json.dumps({"answer": "a", "confidence": 1})))]
    client = make_client()
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    [res] = await ask(client, ["Q-1"])
    assert res.ok and res.attempts == 2
    second = fake_api.requests[1]["json"]["messages"]
    assert all(m["content"] for m in second) and second[-1]["role"] == "user"
    assert "previous answer was empty" in second[-1]["content"]


async def test_duplicate_calls_in_flight_reach_the_provider_once(chaos, make_client):
    srv = chaos(plan={"SLOW": ["hang"]}, hang_s=0.2)
    client = client_for(make_client, srv, timeout=5.0)
    res = await ask(client, ["SLOW-1"] * 5)
    assert all(r.ok for r in res) and len(srv.log) == 1
    assert sorted(r.source for r in res) == ["inflight"] * 4 + ["provider"]


def test_scrub_leaves_ordinary_hyphenated_text_byte_identical():
    text = ("use task-management-software; a risk-based, state-of-the-art, desk-top sk-learn-"
            "style approach for the well-known ask-me-anything format, 2024-2025-2026-release; "
            "Bearer of bad news; disk-based mask-wearing husk-like") * 20
    assert scrub(text) == text
    assert scrub(f"key {KEY}.") == "key <redacted>."
    bearer = "Authorization: " + "Bearer abcDEF0123456789xyz"
    assert scrub(bearer) == "Authorization: <redacted>"


# ---- cache -------------------------------------------------------------------------
def test_cache_refuses_planted_pickles(tmp_path):
    import diskcache

    from judgekit.llm.cache import ResponseCache

    class Boom:
        def __reduce__(self):
            target = str(tmp_path / "pwned")
            return (exec, (f"open({target!r}, 'w').write('pwned')",))

    plain = diskcache.Cache(str(tmp_path / "c"))
    plain.set("k" * 64, Boom())
    plain.close()
    cache = ResponseCache(tmp_path / "c")
    assert cache.get("k" * 64) is None and cache.refused == 1
    assert not (tmp_path / "pwned").exists()
    cache.set("j" * 64, {"ok": True, "parsed": {"a": 1}})
    assert cache.get("j" * 64) == {"ok": True, "parsed": {"a": 1}}
    cache.close()


def test_a_corrupt_cache_is_bypassed_with_one_warning(tmp_path, caplog):
    from judgekit.llm.cache import ResponseCache

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "cache.db").write_bytes(b"SQLite format 3\x00" + b"\x13" * 200)
    cache = ResponseCache(tmp_path / "c")
    assert cache.get("k" * 64) is None
    cache.set("k" * 64, {"ok": True})
    assert cache.get("k" * 64) is None
    assert sum("bypassed" in r.message for r in caplog.records) == 1


async def test_corrupt_cache_does_not_stop_calls(chaos, make_client, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cache.db").write_bytes(b"not a database" * 100)
    srv = chaos()
    client = client_for(make_client, srv, cache_dir=tmp_path / "bad")
    res = await ask(client, ["Q-1", "Q-2"])
    assert all(r.ok for r in res)


async def test_cached_record_that_no_longer_fits_the_model_is_a_miss(chaos, make_client):
    srv = chaos()
    client = client_for(make_client, srv)
    [first] = await ask(client, ["Q-1"])
    client.cache.set(first.key, {**json.loads(json.dumps(client.cache.get(first.key))),
                                 "parsed": {"answer": "x"}})  # no confidence
    [again] = await ask(client, ["Q-1"])
    assert again.ok and again.source == "provider" and len(srv.log) == 2


def test_cache_file_holds_json_not_pickles(tmp_path):
    from judgekit.llm.cache import ResponseCache

    c = ResponseCache(tmp_path / "c")
    c.set("a" * 64, {"ok": True, "text": "hello"})
    c.close()
    rows = sqlite3.connect(tmp_path / "c" / "cache.db").execute(
        "select mode, value from Cache where key = ?", ("a" * 64,)).fetchall()
    assert rows and json.loads(rows[0][1]) == {"ok": True, "text": "hello"}
