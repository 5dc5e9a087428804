"""Answers written off the event loop in batches: the background writer's order and
failures, and the client's promise that an answer is on disk (cache and cassette
journal) before its call counts as kept."""

from __future__ import annotations

import errno
import json
import threading
import time

import pytest

from judgekit.core.errors import RunAborted
from judgekit.llm import Call, Stage
from judgekit.llm.cache import ResponseCache
from judgekit.llm.writer import BatchWriter

from .conftest import Reply, openai_body
from .test_client import GOOD, STAGE, Answer


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")


def test_the_writer_batches_in_order_and_fails_a_whole_batch():
    seen: list[list[int]] = []
    gate = threading.Event()

    def flush(items: list[int]) -> None:
        gate.wait(5)  # the first batch waits, so the rest queue up behind it
        if 13 in items:
            raise OSError(errno.ENOSPC, "No space left on device")
        seen.append(items)

    w = BatchWriter(flush, "test-writer")
    futs = [w.submit(i) for i in range(40)]
    gate.set()
    outcomes = []
    for f in futs:
        try:
            f.result(5)
            outcomes.append("ok")
        except OSError:
            outcomes.append("failed")
    w.close()
    flat = [i for batch in seen for i in batch]
    assert flat == sorted(flat) and len(seen) < 40  # in order, and batched
    failed = {i for i, o in enumerate(outcomes) if o == "failed"}
    assert 13 in failed and not failed & set(flat)  # the whole batch with 13, nothing else
    assert len(failed) + len(flat) == 40
    w2 = BatchWriter(lambda items: seen.append(items), "again")
    w2.submit(99)
    w2.close()  # close writes what is queued
    assert seen[-1] == [99]


def test_a_cancelled_waiter_neither_stops_the_writer_nor_loses_its_item():
    """A waiter cancelled while its batch is being written (Ctrl-C, a stopping run)
    used to make the writer's thread die on the cancelled future, so every later answer
    waited for ever; its item is written all the same (the answer was paid for)."""
    import asyncio

    from judgekit.llm.writer import wait_kept

    seen: list[int] = []
    gate = threading.Event()

    def flush(items: list[int]) -> None:
        gate.wait(5)
        seen.extend(items)

    w = BatchWriter(flush, "test-writer")

    async def main() -> None:
        first = w.submit(1)
        waiter = asyncio.ensure_future(wait_kept([first]))
        await asyncio.sleep(0.05)
        waiter.cancel()  # cancels the concurrent future through wrap_future
        with pytest.raises(asyncio.CancelledError):
            await waiter
        gate.set()
        await asyncio.wait_for(wait_kept([w.submit(2), w.submit(3)]), 5)

    asyncio.run(main())
    w.close()
    assert seen == [1, 2, 3]


@pytest.mark.parametrize("process", [True, False], ids=["process", "thread"])
def test_every_answer_is_on_disk_when_map_returns(fake_api, make_client, tmp_path,
                                                  monkeypatch, process):
    from judgekit.llm import cache as cache_mod
    from judgekit.llm.cache_process import ProcessWriter

    monkeypatch.setattr(cache_mod, "PROCESS_WRITER", process)
    flushes = []
    real_set, real_frame = cache_mod.ResponseCache.set_many, ProcessWriter._write_frame

    def counting(self, items, sync=True):
        flushes.append(len(items))
        return real_set(self, items, sync)

    def framed(self):
        flushes.append(len(self._pending))
        return real_frame(self)

    monkeypatch.setattr(cache_mod.ResponseCache, "set_many", counting)
    monkeypatch.setattr(ProcessWriter, "_write_frame", framed)
    fake_api.default = Reply(body=openai_body(GOOD), delay=0.01)
    client = make_client(cassette=tmp_path / "c.json", cassette_mode="new", concurrency=32)
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    calls = [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini") for i in range(120)]
    res = client.map_sync(STAGE, calls)
    assert all(r.ok for r in res)
    assert (client.cache._process is not None) is process
    # before close: the cache holds every answer and the journal one line per answer
    assert all(client.cache.peek(r.key) is not None for r in res)
    lines = client.cassette.journal.read_text().splitlines()
    assert sorted(json.loads(ln)["key"] for ln in lines) == sorted(r.key for r in res)
    assert sum(flushes) == 120 and len(flushes) < 120  # batched
    client.close()
    assert Answer.model_validate(json.loads(GOOD))


def test_a_journal_that_cannot_be_written_stops_the_run(fake_api, make_client, tmp_path,
                                                        monkeypatch):
    from judgekit.llm import cassette as cas_mod

    def full(journal, line, sync=True):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cas_mod, "append", full)
    fake_api.default = Reply(body=openai_body(GOOD))
    client = make_client(use_cache=False, cassette=tmp_path / "c.json", cassette_mode="new")
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    with pytest.raises(RunAborted, match="cannot record to .*No space left"):
        client.map_sync(STAGE, [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini")
                                for i in range(5)])
    assert len(fake_api.requests) <= 5


def slow_writer_process(monkeypatch, seconds):
    """Writer processes that take ``seconds`` more for every batch (a slow disk)."""
    from judgekit.llm import cache_process

    monkeypatch.setattr(cache_process, "BOOT", cache_process.BOOT.replace(
        "raise SystemExit", "import time; w = m.write_batch; m.write_batch = lambda *a: "
        f"(time.sleep({seconds}), w(*a)); raise SystemExit"))


def failing_writer_process(monkeypatch, message):
    """Writer processes whose every batch fails as SQLite does on a full disk."""
    from judgekit.llm import cache_process

    monkeypatch.setattr(cache_process, "BOOT", cache_process.BOOT.replace(
        "raise SystemExit", "import sqlite3\ndef full(*a): raise sqlite3.OperationalError("
        f"{message!r})\nm.write_batch = full\nraise SystemExit").replace("; ", "\n"))


@pytest.mark.parametrize("process", [True, False], ids=["process", "thread"])
def test_a_claim_is_released_only_after_its_answer_is_written(fake_api, make_client,
                                                              monkeypatch, process):
    """Another process waiting on the claim must find the answer: the claim outlives a
    slow write (read at release time through a connection of its own)."""
    import sqlite3

    from judgekit.llm import cache as cache_mod

    monkeypatch.setattr(cache_mod, "PROCESS_WRITER", process)
    if process:
        slow_writer_process(monkeypatch, 0.2)
    else:
        real = cache_mod.ResponseCache.set_many

        def slow(self, items, sync=True):
            time.sleep(0.2)
            real(self, items, sync)
        monkeypatch.setattr(cache_mod.ResponseCache, "set_many", slow)
    events = []
    fake_api.default = Reply(body=openai_body(GOOD))
    client = make_client()
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    hold = client.store.claims.hold

    def stored(key):
        con = sqlite3.connect(str(client.cache.directory / "cache.db"))
        try:
            return con.execute("SELECT count(*) FROM Cache WHERE key = ?", (key,)).fetchone()[0]
        finally:
            con.close()

    def traced(key):
        cm = hold(key)

        class Wrap:
            async def __aenter__(self):
                return await cm.__aenter__()

            async def __aexit__(self, *exc):
                events.append(("released", stored(key)))
                return await cm.__aexit__(*exc)
        return Wrap()

    client.store.claim = traced
    res = client.map_sync(Stage("answer", "answer.j2", Answer),
                          [Call({"question": "q"}, "openai/gpt-4.1-mini")])
    assert res[0].ok and events == [("released", 1)]
    client.close()


@pytest.mark.parametrize("process", [True, False], ids=["process", "thread"])
def test_a_cache_that_cannot_be_written_stops_the_run(fake_api, make_client, monkeypatch,
                                                      caplog, process):
    """With no cassette, a cache whose batch write fails (a full disk) stops the run at
    once with a one-line reason, instead of paying for answers nobody keeps."""
    import sqlite3

    import diskcache

    from judgekit.llm import cache as cache_mod

    def full(self, *args, **kw):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(cache_mod, "PROCESS_WRITER", process)
    if process:
        failing_writer_process(monkeypatch, "database or disk is full")
    fake_api.default = Reply(body=openai_body(GOOD))
    client = make_client(concurrency=4)
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    # both of a batch's write paths: the bulk insert of new answers, diskcache's set
    monkeypatch.setattr(diskcache.Cache, "transact", full)
    monkeypatch.setattr(ResponseCache, "_insert_new", full)
    with pytest.raises(RunAborted, match="can no longer be written"):
        client.map_sync(STAGE, [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini")
                                for i in range(50)])
    # the calls in flight when the first write failed, plus those a freed slot started
    # while that write was still queued (the writer may lag on a loaded machine): at
    # most 3 per slot, far from the 50 a run that did not stop would pay for
    assert len(fake_api.requests) <= 3 * 4
    assert not client.cache.available
    said = [r.getMessage() for r in caplog.records if "unusable" in r.getMessage()]
    assert len(said) == 1 and "OperationalError: database or disk is full" in said[0]
    client.close()


def test_the_bulk_insert_writes_the_rows_diskcache_itself_writes(tmp_path):
    """A batch's new short answers are inserted in one statement on the cache's own
    connection: diskcache reads them as if it had written them (its own get, its count,
    no pickle), a key already stored is updated in place (not a second row), a text too
    long for a row goes to diskcache's file, and a key twice in one batch keeps the last."""
    import diskcache

    rec = {"ok": True, "text": "t", "parsed": {"answer": "a", "confidence": 0.5}}
    cache = ResponseCache(tmp_path)
    cache.set_many([(f"k{i}", {**rec, "text": f"t{i}"}) for i in range(5)])
    cache.set_many([("k1", {**rec, "text": "again"}), ("k9", {**rec, "text": "x"}),
                    ("k9", {**rec, "text": "last"}),
                    ("big", {**rec, "text": "y" * 40_000})])
    cache.close()
    dc = diskcache.Cache(str(tmp_path))
    try:
        assert len(dc) == 7  # k0-k4, k9, big: the update and the repeat add no row
        assert json.loads(dc.get("k3"))["text"] == "t3"
        assert json.loads(dc.get("k1"))["text"] == "again"
        assert json.loads(dc.get("k9"))["text"] == "last"
        assert json.loads(dc.get("big"))["text"] == "y" * 40_000
        rows = dict(dc._sql("SELECT key, mode FROM Cache").fetchall())
        assert rows["k3"] == diskcache.core.MODE_RAW
        assert rows["big"] == diskcache.core.MODE_TEXT  # in a file of its own
    finally:
        dc.close()
    again = ResponseCache(tmp_path)
    assert again.get("k3")["text"] == "t3" and again.stats().entries == 7
    again.close()
