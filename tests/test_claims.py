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
