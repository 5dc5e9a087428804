"""Cross-process claims: one descriptor per process whatever the number of claims held,
exclusion between processes and between two clients of one process, cleanup."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from judgekit.llm.claims import Claims, fcntl

pytestmark = pytest.mark.skipif(fcntl is None, reason="record locks are POSIX")


def test_many_claims_share_one_descriptor_and_two_objects_exclude_each_other(tmp_path):
    a, b = Claims(tmp_path / "c", poll=0.01), Claims(tmp_path / "c", poll=0.01)

    async def go():
        before = len(os.listdir("/proc/self/fd"))
        async with contextlib_all([a.hold(f"k{i}") for i in range(200)]):
            held = len(os.listdir("/proc/self/fd"))
            order = []

            async def second():
                async with b.hold("k7") as waited:
                    order.append(("b", waited))

            task = asyncio.create_task(second())
            await asyncio.sleep(0.05)
            assert not order  # k7 is held by a: b waits
        await task
        return before, held, order

    before, held, order = asyncio.run(go())
    assert held - before <= 1  # 200 claims, one file
    assert order == [("b", True)]
    a.close()
    assert (tmp_path / "c" / "claims").exists()  # b still uses it
    b.close()
    assert not (tmp_path / "c").exists()


def test_a_claim_held_by_another_process_is_waited_for(tmp_path):
    code = (
        "import asyncio, sys, time\n"
        "from judgekit.llm.claims import Claims\n"
        "async def main():\n"
        f"    async with Claims({str(tmp_path / 'c')!r}).hold('key'):\n"
        "        print('held', flush=True)\n"
        "        await asyncio.sleep(0.6)\n"
        "asyncio.run(main())\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    mine = Claims(tmp_path / "c", poll=0.01)

    async def take():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with mine.hold("key") as waited:
            return waited, loop.time() - t0
    waited, took = asyncio.run(take())
    p.wait(10)
    assert waited and took > 0.2
    assert asyncio.run(_free(mine, "other")) is False
    mine.close()


async def _free(c, key):
    async with c.hold(key) as waited:
        return waited


class contextlib_all:
    """Enter several async context managers at once (for the test)."""

    def __init__(self, cms):
        self.cms = cms

    async def __aenter__(self):
        for cm in self.cms:
            await cm.__aenter__()

    async def __aexit__(self, *exc):
        for cm in reversed(self.cms):
            await cm.__aexit__(None, None, None)


def test_claims_that_cannot_be_taken_are_said_once_not_dropped_silently(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    c = Claims(blocker / "claims")

    async def go():
        for k in ("a", "b"):
            async with c.hold(k) as waited:
                assert waited is False
    with caplog.at_level("WARNING", logger="judgekit.claims"):
        asyncio.run(go())
    said = [r for r in caplog.records if "without protection" in r.getMessage()]
    assert len(said) == 1


def test_a_user_alone_skips_the_reread_until_another_process_opens_the_storage(tmp_path):
    """The re-read after an unwaited claim is skipped only while nobody else has opened
    the claims file since this user did: a process that opens, stores and exits in
    between (even after we took our claim) makes us re-read from then on."""
    mine = Claims(tmp_path / "c")
    mine.open()
    assert mine.alone()
    code = ("from judgekit.llm.claims import Claims\n"
            f"c = Claims({str(tmp_path / 'c')!r}); c.open(); print(c.alone()); c.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"  # it saw us present
    assert not mine.alone() and mine.shared  # and we saw it come and go
    mine.close()


def test_a_second_user_in_this_process_or_one_already_present_is_not_alone(tmp_path):
    a = Claims(tmp_path / "c")
    a.open()
    b = Claims(tmp_path / "c")
    b.open()
    assert not b.alone() and not a.alone()
    a.close()
    b.close()
    code = ("import sys, time\nfrom judgekit.llm.claims import Claims\n"
            f"c = Claims({str(tmp_path / 'd')!r}); c.open(); print('open', flush=True)\n"
            "sys.stdin.readline(); c.close()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "open"
    late = Claims(tmp_path / "d")
    late.open()
    assert not late.alone()  # the other process was there first
    p.communicate("\n", timeout=10)
    late.close()
    assert not (tmp_path / "d").exists()  # the last user removed it


def test_the_store_rereads_only_when_it_may_have_been_answered_elsewhere(tmp_path):
    """Store.recheck: no cache read for an unwaited claim while alone; after another
    store opened the same cache and answered the key, the answer is found (not paid
    twice)."""
    from pydantic import BaseModel

    from judgekit.llm.stage import Stage
    from judgekit.llm.store import Store

    class Out(BaseModel):
        x: int

    stage = Stage("s", "s.j2", Out)
    rec = {"ok": True, "text": '{"x": 1}', "parsed": {"x": 1}, "attempts": 1,
           "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "model": "m",
           "error": None, "mean_token_entropy": None}
    mine = Store(cache_dir=tmp_path / "cache")
    reads = []
    real_peek = mine.cache.peek
    mine.cache.peek = lambda k: reads.append(k) or real_peek(k)
    assert mine.recheck("k" * 64, {}, stage, waited=False) is None and reads == []
    other = Store(cache_dir=tmp_path / "cache")
    other.save("k" * 64, {}, rec)
    other.close()
    found = mine.recheck("k" * 64, {}, stage, waited=False)
    assert found is not None and found["parsed"] == {"x": 1} and reads == ["k" * 64]
    mine.close()
