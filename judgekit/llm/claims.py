"""Claims on in-flight requests, shared by every process that uses one cache or cassette.

Inside one process, identical calls already share one request (the client's in-flight
table). Two processes (two ``judgekit run`` of one config started together, or two
experiments sharing a cache) would each pay for the same call. Before calling a
provider, the client claims the request key: an exclusive OS lock on a file named by
the key in a folder beside the shared storage. A process that finds the key claimed
waits until the claim is released, then looks the answer up again (the holder stored
it before releasing) and pays only if the holder failed.

Lock files are removed when released. If a waiter holds the old file while a third
process creates a new one, both may end up calling, but only when the first holder
failed to store an answer; a stored answer is always found first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from filelock import FileLock, Timeout

log = logging.getLogger("judgekit.claims")


class Claims:
    """Per-key cross-process claims in ``directory``."""

    def __init__(self, directory: Path, *, poll: float = 0.02, max_poll: float = 0.5) -> None:
        self.dir = Path(directory)
        self.poll, self.max_poll = poll, max_poll
        self.waited = 0  # claims found held by another process (for tests and benchmarks)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[bool]:
        """Hold the claim on ``key``; yields True if another process held it first (so
        the caller should look the answer up again before paying)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # no claims possible: go on as a single process would
            log.debug("claims disabled: %s", exc)
            yield False
            return
        path = self.dir / f"{key}.lock"
        lock = FileLock(str(path), timeout=0, thread_local=False)
        waited, delay = False, self.poll
        while True:
            try:
                lock.acquire()
                break
            except Timeout:
                waited = True
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, self.max_poll)
            except OSError as exc:
                log.debug("claim on %s not possible: %s", key[:12], exc)
                yield False
                return
        if waited:
            self.waited += 1
        try:
            yield waited
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
            lock.release()

    def close(self) -> None:
        """Remove the claims folder if nothing is left in it."""
        with contextlib.suppress(OSError):
            self.dir.rmdir()
