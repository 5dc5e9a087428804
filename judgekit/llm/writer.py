"""Writes batched off the event loop: one background thread per store, which takes every
item queued since its last write and writes them together (one SQLite transaction, one
journal append and fsync), then resolves each item's future. A caller counts its answer
as kept only when its future resolves, so a batch is on disk before any of its answers
release their claims; a failed write fails every future of its batch.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["BatchWriter", "wait_kept"]

MAX_BATCH = 1024  # items written in one go at most


class BatchWriter(Generic[T]):
    """Queue items for ``flush`` (called with a list, in one thread, in queue order)."""

    def __init__(self, flush: Callable[[list[T]], None], name: str) -> None:
        self._flush = flush
        self._name = name
        self._queue: queue.SimpleQueue[tuple[T, Future[None]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, item: T) -> Future[None]:
        fut: Future[None] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name,
                                                daemon=True)
                self._thread.start()
            self._queue.put((item, fut))
        return fut

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            # A waiter cancelled (Ctrl-C, a run stopping) cancels its future; its item is
            # still written (a paid answer is kept), only nobody is told. The others are
            # marked running first, so a cancel arriving now cannot race their result.
            told = [fut for _, fut in batch if fut.set_running_or_notify_cancel()]
            try:
                self._flush([item for item, _ in batch])
            except BaseException as exc:  # every answer of the batch is not kept
                for fut in told:
                    fut.set_exception(exc)
            else:
                for fut in told:
                    fut.set_result(None)
            if stop:
                return

    def close(self) -> None:
        """Write what is queued and stop the thread (a later submit starts a new one)."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()


async def wait_kept(futures: list[Future[None]]) -> None:
    """Wait, on the event loop, until every future's batch is written (raising the
    first write's error)."""
    for fut in futures:
        await asyncio.wrap_future(fut)
