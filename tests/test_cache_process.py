"""The cache's writer process: answers asked on an event loop are written by a child
process; what it confirms is on disk, what it had not confirmed when it died is written
by the client itself, and a killed client's batches are still written."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgekit.llm import Call, cache_process
from judgekit.llm import cache as cache_mod
from judgekit.llm.cache import ResponseCache
from judgekit.llm.claims import KEYS_FROM, Claims

from .conftest import Reply, openai_body
from .test_client import GOOD, STAGE

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the writer process is POSIX's")

REC = {"ok": True, "text": "t", "parsed": {"answer": "a", "confidence": 0.5}}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")
    monkeypatch.setattr(cache_mod, "PROCESS_WRITER", True)


def rows(directory: Path) -> dict[str, str]:
    con = sqlite3.connect(str(directory / "cache.db"))
    try:
        return dict(con.execute("SELECT key, value FROM Cache WHERE key != ?",
                                ("__judgekit_last_run_stats__",)).fetchall())
    finally:
        con.close()


def test_answers_are_written_by_a_child_and_the_child_exits_on_close(tmp_path):
    cache = ResponseCache(tmp_path / "c")

    async def main():
        futs = [cache.set_soon(f"k{i}", {**REC, "text": f"t{i}"}) for i in range(300)]
        await asyncio.gather(*futs)
        return cache._process

    writer = asyncio.run(main())
    assert writer is not None and writer._proc.pid != os.getpid()
    got = rows(tmp_path / "c")  # every future resolved: every answer is on disk
    assert len(got) == 300 and json.loads(got["k7"]) == {**REC, "text": "t7"}
    assert writer.proven and writer._proc.poll() is None  # alive between runs
    # a second event loop (each map_sync is one) uses the same process
    async def again():
        await asyncio.wait_for(cache.set_soon("again", REC), 30)
    asyncio.run(again())
    assert cache._process is writer and "again" in rows(tmp_path / "c")
    cache.close()
    assert writer._proc.returncode == 0  # ended with its input, nothing left behind
    assert ResponseCache(tmp_path / "c").get("k299")["text"] == "t299"


def test_a_writer_process_that_dies_leaves_its_batches_to_the_client(
        fake_api, make_client, monkeypatch, caplog):
    """The process ends (killed, out of memory) holding a batch it never confirmed: the
    client writes it itself, the writer thread takes over, and the run goes on with
    every answer kept."""
    monkeypatch.setattr(cache_process, "BOOT", cache_process.BOOT.replace(
        "raise SystemExit", "import os; m.write_batch = lambda *a: os._exit(9); "
        "raise SystemExit"))
    fake_api.default = Reply(body=openai_body(GOOD), delay=0.005)
    client = make_client(concurrency=8)
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    res = client.map_sync(STAGE, [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini")
                                  for i in range(60)])
    assert all(r.ok for r in res) and len(fake_api.requests) == 60
    assert client.cache._process.broken and client.cache.available
    said = [r.getMessage() for r in caplog.records if "writer process ended" in r.getMessage()]
    assert len(said) == 1 and "exit code 9" in said[0]
    assert all(client.cache.peek(r.key) is not None for r in res)
    client.close()


KILLED = r"""
import asyncio, os, signal, sys
from judgekit.llm import cache as cache_mod, cache_process
from judgekit.llm.cache import ResponseCache
cache_mod.PROCESS_WRITER = True
cache_process.BOOT = cache_process.BOOT.replace(
    "raise SystemExit", "import time; w = m.write_batch; "
    "m.write_batch = lambda *a: (time.sleep(0.5), w(*a)); raise SystemExit")
cache = ResponseCache(sys.argv[1])
async def main():
    for i in range(50):
        cache.set_soon(f"k{i}", {"ok": True, "text": f"t{i}"})
    await asyncio.sleep(0.3)  # the batch is sent; the slow process has not answered
    print(cache._process._proc.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
asyncio.run(main())
"""


def test_a_killed_client_s_batches_are_still_written(tmp_path):
    """kill -9 of the client: the writer process reaches the end of its input, writes
    the batch it holds, and exits."""
    out = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGKILL, out.stderr
    child = int(out.stdout.split()[0])
    for _ in range(300):  # it finishes on its own
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the writer process did not exit after its client was killed")
    got = rows(tmp_path / "c")
    assert sorted(got) == sorted(f"k{i}" for i in range(50))
    assert json.loads(got["k49"]) == {"ok": True, "text": "t49"}


def test_until_the_first_write_is_confirmed_a_call_keeps_its_slot(fake_api, make_client,
                                                                  monkeypatch):
    """While the writer process starts (and before it has confirmed anything), no more
    than `concurrency` answers wait for their write: a cache that turns out unwritable
    has cost one round of calls, not the run."""
    monkeypatch.setattr(cache_process, "BOOT", cache_process.BOOT.replace(
        "raise SystemExit", "import time; time.sleep(0.5); raise SystemExit"))
    fake_api.default = Reply(body=openai_body(GOOD))
    client = make_client(concurrency=3)
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    seen = []
    real = cache_process.ProcessWriter.submit_async

    def counted(self, item):
        seen.append((len(fake_api.requests), self.proven))
        return real(self, item)

    monkeypatch.setattr(cache_process.ProcessWriter, "submit_async", counted)
    res = client.map_sync(STAGE, [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini")
                                  for i in range(12)])
    assert all(r.ok for r in res)
    unproven = [n for n, proven in seen if not proven]
    assert unproven and max(unproven) <= 3  # one slot each, until the first answer
    client.close()


def _sha_bits(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


@pytest.mark.parametrize("key,offset", [
    ("ab" * 32, KEYS_FROM + (0xABABABABABABABAB >> 3)),
    ("0123456789abcdef" + "0" * 48, KEYS_FROM + (0x0123456789ABCDEF >> 3)),
    # not a sha256 hex digest: the first 8 bytes of its own sha256
    ("k" * 64, KEYS_FROM + (_sha_bits("k" * 64) >> 3)),
    ("short", KEYS_FROM + (_sha_bits("short") >> 3)),
    ("-" + "f" * 63, KEYS_FROM + (_sha_bits("-" + "f" * 63) >> 3)),
])
def test_a_claim_s_byte_comes_from_the_key(key, offset, tmp_path):
    assert Claims(tmp_path)._offset(key) == offset


FORKED = r"""
import asyncio, os, sys, time
from judgekit.llm import cache as cache_mod
from judgekit.llm.cache import ResponseCache
cache_mod.PROCESS_WRITER = True
cache = ResponseCache(sys.argv[1])
async def put(key):
    await cache.set_soon(key, {"ok": True, "text": key})
asyncio.run(put("before"))
pid = os.fork()
if pid == 0:  # the child writes through its own thread, and lives on a while
    asyncio.run(put("child"))
    assert cache._process.forked and cache._writer is not None
    cache.close()
    time.sleep(1.0)
    os._exit(0)
asyncio.run(put("parent"))
cache.close()  # must not wait for the child: it holds no copy of the pipe
print("closed", flush=True)
_, status = os.waitpid(pid, 0)
print("child", status, flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_does_not_share_the_writer_process(tmp_path):
    out = subprocess.run([sys.executable, "-c", FORKED, str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["closed", "child", "0"]
    assert sorted(rows(tmp_path / "c")) == ["before", "child", "parent"]


def test_a_second_thread_s_loop_writes_through_the_thread_while_the_first_runs(tmp_path):
    """The writer process is one running loop's at a time: a loop in another thread,
    while the first still runs, writes through the cache's thread instead."""
    import threading

    cache = ResponseCache(tmp_path / "c")
    entered, release = threading.Event(), threading.Event()
    writers = {}

    async def first():
        await cache.set_soon("a", REC)
        writers["first"] = cache._process
        entered.set()
        while not release.is_set():  # this loop keeps running meanwhile
            await asyncio.sleep(0.01)

    async def second():
        await cache.set_soon("b", REC)
        writers["thread"] = cache._writer

    t = threading.Thread(target=asyncio.run, args=(first(),))
    t.start()
    assert entered.wait(30)
    asyncio.run(second())
    release.set()
    t.join(30)
    assert writers["first"] is not None and writers["thread"] is not None
    cache.close()
    assert sorted(rows(tmp_path / "c")) == ["a", "b"]


def test_a_record_that_is_not_plain_data_fails_its_own_call(tmp_path, caplog):
    """A record the pipe cannot carry (not plain data) is written here if it can be, and
    its call is told when it cannot; the writer thread takes over."""
    cache = ResponseCache(tmp_path / "c")

    async def main():
        await cache.set_soon("plain", REC)
        with pytest.raises(TypeError):
            await cache.set_soon("odd", {**REC, "text": object()})
        await cache.set_soon("after", REC)

    asyncio.run(main())
    assert cache._process.broken and cache._writer is not None
    cache.close()
    assert sorted(rows(tmp_path / "c")) == ["after", "plain"]
