"""The online scheduler's loop (:meth:`judgekit.llm.client.Client.each`): calls are
prepared a chunk at a time; answers already recorded are served at once, in order,
without a task; the others wait in a queue that a pool of worker tasks drains.

A worker runs one call after another, so a run of any size makes at most ``size``
tasks (a task per call cost a tenth of a call's own work at 0 ms latency). The queue
holds at most one chunk: a worker that finds it empty prepares the next, so the first
requests leave while later calls are still to be rendered, and memory holds the calls
in flight and one chunk, whatever the number of calls.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from itertools import islice
from typing import Generic, TypeVar

__all__ = ["Limit", "Pool"]

C = TypeVar("C")  # a call as given
P = TypeVar("P")  # a call prepared


class Pool(Generic[C, P]):
    """Runs ``calls``: ``serve(chunk, first_index)`` prepares a chunk, hands on what it
    can answer at once and returns the rest as (index, prepared) pairs, which ``run``
    (a coroutine per call) answers, ``size`` at a time at most (a number, or a function
    asked after each chunk is served). One worker's exception
    is a run-wide error: the others are cancelled and :meth:`drain` raises it."""

    def __init__(self, serve: Callable[[list[C], int], list[tuple[int, P]]],
                 run: Callable[[int, P], Awaitable[None]], *,
                 size: int | Callable[[], int], chunk: int) -> None:
        self.serve, self.run, self.size, self.chunk = serve, run, size, chunk
        self.queue: deque[tuple[int, P]] = deque()
        self.workers: set[asyncio.Future[None]] = set()
        self.errors: list[BaseException] = []
        self.changed = asyncio.Event()  # set when the last worker ends, or on an error
        self.n = 0  # calls read so far
        self.more = True  # calls may remain to be read

    async def drain(self, calls: Iterable[C]) -> int:
        """Run every call; returns how many there were."""
        self.source = iter(calls)
        try:
            self._refill()
            while self.workers:
                self.changed.clear()
                await self.changed.wait()
                self._raise_first()
            self._raise_first()
        except BaseException:  # a run-wide error, or cancelled from outside (Ctrl-C)
            workers = list(self.workers)
            for t in workers:
                t.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        return self.n

    def _refill(self) -> None:
        """Prepare chunks until one leaves calls to run (or none is left); start the
        workers they need."""
        while not self.queue and self.more:
            chunk = list(islice(self.source, self.chunk))
            if not chunk:
                self.more = False
                return
            lo = self.n
            self.n += len(chunk)
            self.queue.extend(self.serve(chunk, lo))
        size = self.size if isinstance(self.size, int) else self.size()
        while len(self.workers) < min(size, len(self.workers) + len(self.queue)):
            task = asyncio.ensure_future(self._work())
            task.add_done_callback(self._ended)
            self.workers.add(task)

    async def _work(self) -> None:
        queue = self.queue
        while True:
            if not queue:
                self._refill()
                if not queue:
                    return
            i, prep = queue.popleft()
            await self.run(i, prep)

    def _ended(self, task: asyncio.Future[None]) -> None:
        self.workers.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.errors.append(task.exception())  # type: ignore[arg-type]
            self.changed.set()
        elif not self.workers:
            self.changed.set()

    def _raise_first(self) -> None:
        if self.errors:
            raise self.errors[0]


class Limit:
    """At most ``n`` holders at once, served first come first served: what
    ``asyncio.Semaphore`` does, at less cost per wait (on Python 3.11 each release scans
    the waiters already woken but not yet run, and each woken waiter removes itself from
    the queue by search). A slot freed while calls wait is handed to the first of them."""

    __slots__ = ("free", "waiters")

    def __init__(self, n: int) -> None:
        self.free = n
        self.waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.free > 0:
            self.free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot as it was cancelled
                self.release()
            raise

    def release(self) -> None:
        waiters = self.waiters
        while waiters:
            fut = waiters.popleft()
            if not fut.done():  # (a waiter cancelled meanwhile is passed over)
                fut.set_result(None)
                return
        self.free += 1

