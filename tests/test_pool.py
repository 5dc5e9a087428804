"""The online scheduler's worker pool and its concurrency limit (judgekit.llm.pool)."""

from __future__ import annotations

import asyncio

import pytest

from judgekit.llm.pool import Limit, Pool


def test_limit_serves_waiters_first_come_first_served_and_never_over_n():
    order: list[int] = []
    inside = [0]
    most = [0]

    async def main() -> None:
        limit = Limit(2)

        async def one(i: int) -> None:
            await limit.acquire()
            order.append(i)
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            inside[0] -= 1
            limit.release()
        await asyncio.gather(*(one(i) for i in range(7)))
        assert limit.free == 2 and not any(not f.done() for f in limit.waiters)

    asyncio.run(main())
    assert order == list(range(7)) and most[0] == 2


def test_limit_passes_over_a_cancelled_waiter_and_hands_on_a_slot_given_as_it_was_cancelled():
    async def main() -> None:
        limit = Limit(1)
        await limit.acquire()
        first = asyncio.ensure_future(limit.acquire())
        second = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        first.cancel()  # cancelled while waiting: passed over
        await asyncio.sleep(0)
        limit.release()  # goes to the second
        await asyncio.sleep(0)
        assert second.done() and not second.cancelled() and limit.free == 0
        # a slot handed to a waiter that is cancelled before it runs is handed on
        third = asyncio.ensure_future(limit.acquire())
        fourth = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        limit.release()  # handed to the third ...
        third.cancel()   # ... which is cancelled before it runs
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert third.cancelled() and fourth.done() and not fourth.cancelled()
        assert limit.free == 0
        limit.release()
        assert limit.free == 1

    asyncio.run(main())


def _serve(answered: set[int]):
    def serve(chunk: list[int], lo: int) -> list[tuple[int, int]]:
        assert chunk == list(range(lo, lo + len(chunk)))
        return [(i, c) for i, c in zip(range(lo, lo + len(chunk)), chunk) if c not in answered]
    return serve


def test_pool_runs_every_call_once_with_at_most_size_workers():
    seen: list[int] = []
    most = [0]

    async def main() -> int:
        running = [0]

        async def run(i: int, prep: int) -> None:
            running[0] += 1
            most[0] = max(most[0], running[0])
            await asyncio.sleep(0)
            seen.append(i)
            running[0] -= 1
        pool = Pool(_serve({3, 4, 500}), run, size=5, chunk=16)
        n = await pool.drain(iter(range(1000)))
        assert not pool.workers
        return n

    assert asyncio.run(main()) == 1000
    assert sorted(seen) == [i for i in range(1000) if i not in {3, 4, 500}]
    assert most[0] == 5


def test_pool_stops_at_a_run_wide_error_cancelling_the_other_workers():
    cancelled = []

    async def main() -> None:
        async def run(i: int, prep: int) -> None:
            if i == 2:  # among the first four, while the others wait
                raise RuntimeError("run-wide")
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(i)
                raise
        pool = Pool(_serve(set()), run, size=4, chunk=4)
        with pytest.raises(RuntimeError, match="run-wide"):
            await pool.drain(iter(range(100)))
        assert not pool.workers

    asyncio.run(main())
    assert len(cancelled) == 3  # the other three workers, each at its own call


def test_pool_with_nothing_to_ask_starts_no_worker():
    async def main() -> int:
        async def run(i: int, prep: int) -> None:
            raise AssertionError("nothing should be asked")
        pool = Pool(_serve(set(range(300))), run, size=8, chunk=64)
        n = await pool.drain(iter(range(300)))
        assert not pool.workers and not pool.errors
        return n

    assert asyncio.run(main()) == 300
