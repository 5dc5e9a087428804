"""A call's deadline: one timer per event loop for every call, within a twentieth of the
deadline, and the same exceptions as ``asyncio.timeout``."""

from __future__ import annotations

import asyncio
import gc
import sys

import pytest

from judgekit.llm import attempts
from judgekit.llm.attempts import Deadline


def test_a_block_past_its_deadline_ends_in_a_timeout_within_one_step():
    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        steps = []
        with pytest.raises(asyncio.TimeoutError):
            async with Deadline(0.2):
                steps.append(attempts._WATCHES[loop].step)
                await asyncio.sleep(5)
        took = loop.time() - t0
        return took, steps, dict(attempts._WATCHES[loop].due)

    took, steps, due = asyncio.run(main())
    assert steps == [pytest.approx(0.01)]  # checked every twentieth of the deadline
    assert 0.2 <= took < 5  # not before the deadline; the sleep was cut short
    assert due == {}


def test_a_block_that_ends_in_time_is_untouched_and_forgotten():
    async def main():
        async with Deadline(0.05):
            await asyncio.sleep(0)
        await asyncio.sleep(0.2)  # past the deadline: nothing is cancelled later
        watch = attempts._WATCHES[asyncio.get_running_loop()]
        return watch.due, watch.armed

    due, armed = asyncio.run(main())
    assert due == {} and armed is False  # the timer stopped with nothing to watch


def test_a_cancel_from_outside_stays_a_cancel():
    async def inner(started):
        async with Deadline(10):
            started.set()
            await asyncio.sleep(5)

    async def main():
        started = asyncio.Event()
        task = asyncio.ensure_future(inner(started))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.uncancel is 3.11's")
def test_a_timeout_leaves_the_task_uncancelled():
    async def main():
        with pytest.raises(asyncio.TimeoutError):
            async with Deadline(0.02):
                await asyncio.sleep(5)
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0.01)  # the task goes on

    asyncio.run(main())


def test_many_deadlines_share_one_watch_and_the_loop_is_not_kept():
    import weakref

    seen = []

    async def one(i):
        async with Deadline(1 + i):
            watch = attempts._WATCHES[asyncio.get_running_loop()]
            seen.append((id(watch), watch.step))
            await asyncio.sleep(0)

    async def main():
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(one(i) for i in range(200)))
        return weakref.ref(loop), attempts._WATCHES[loop].due

    ref, due = asyncio.run(main())
    assert due == {} and len({w for w, _ in seen}) == 1  # one watch for all 200
    assert [s for _, s in seen] == [pytest.approx(0.05)] * 200  # the shortest one's 1/20
    gc.collect()
    assert ref() is None  # the watch does not keep a closed loop alive
