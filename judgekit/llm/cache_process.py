"""The response cache's writer process.

A writer thread in the client's process holds the interpreter lock for its Python work
(each answer's JSON, its SQLite parameters, its queue), and the event loop waits for
it: at a fast judge's rate (0 ms latency) that cost a quarter of each call. So, where
the platform allows (POSIX), the answers of an event loop go to a process of its own
(:mod:`judgekit.llm.cache_rows`, run on its own, importing only the standard library
and diskcache), driven from the loop with no thread: a batch is sent when the process
is idle (what is queued meanwhile goes together next), and its answer is read when the
pipe is readable. A future resolves once its batch is committed and synced.

If the process cannot start, or ends while it holds unconfirmed batches, those are
written in this process at once (writes of one key are idempotent), the cache's writer
thread takes over, and a warning says so. If the client is killed, the process reaches
the end of its input, writes every batch it received, and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import marshal
import os
import subprocess
import sys
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgekit.llm import cache_rows

log = logging.getLogger("judgekit.cache")

__all__ = ["ProcessWriter"]

# run cache_rows.py by path, with the current directory off sys.path (a file there
# named like a standard module must not be imported instead)
BOOT = ("import sys, importlib.util as u; del sys.path[0]; "
        "s = u.spec_from_file_location('judgekit_cache_rows', sys.argv[1]); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); "
        "raise SystemExit(m.serve(sys.argv[2]))")
PIPE_BYTES = 1 << 20  # asked of Linux for the batch pipe (a batch is sent whole)

Item = tuple[str, Any]
Waiting = list[tuple[Item, "asyncio.Future[None]"]]


class ProcessWriter:
    """Batches of (key, record) written by a child process; see the module's text."""

    def __init__(self, proc: subprocess.Popen[bytes], on_error: Callable[[str, str], None],
                 fallback: Callable[[list[Item]], None]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._in, self._out = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(self._out, False)
        self._on_error, self._fallback = on_error, fallback
        self._pending: Waiting = []
        self._sent: deque[Waiting] = deque()  # batches sent, oldest first
        self._buf = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False
        self.broken = False
        self.proven = False  # a batch has been answered (or this writer has stopped)
        self.forked = False  # this is a copy in a forked child: the process is not ours
        _WRITERS.add(self)

    @classmethod
    def start(cls, directory: Path, on_error: Callable[[str, str], None],
              fallback: Callable[[list[Item]], None]) -> ProcessWriter | None:
        """The writer process for the cache in ``directory``, or None where it cannot
        run (not POSIX, or the process cannot be started)."""
        if os.name != "posix":
            return None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", BOOT, cache_rows.__file__, str(directory)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, close_fds=True)
        except OSError as exc:
            log.warning("judgekit: cannot start the cache's writer process (%s); answers "
                        "are written from this process", exc)
            return None
        with contextlib.suppress(AttributeError, OSError):  # Linux: room for a batch
            import fcntl

            fcntl.fcntl(proc.stdin.fileno(), fcntl.F_SETPIPE_SZ,  # type: ignore[union-attr,attr-defined]
                        PIPE_BYTES)
        return cls(proc, on_error, fallback)

    def submit_async(self, item: Item) -> asyncio.Future[None] | None:
        """Queue ``item``; the future (of the running loop) resolves once it is written.
        None while another thread's loop is running with this writer (it is one loop's
        at a time): the caller writes through its thread instead."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None and self._loop.is_running():
                return None
            self._attach(loop)
        fut: asyncio.Future[None] = loop.create_future()
        self._pending.append((item, fut))
        if not self._sent and not self._scheduled:  # idle: send what this turn queues
            self._scheduled = True
            loop.call_soon(self._send)
        return fut

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the process's answers on ``loop`` (each ``asyncio.run`` is a new one)."""
        self._detach()
        loop.add_reader(self._out, self._readable)
        self._loop = loop

    def _detach(self) -> None:
        old, self._loop = self._loop, None
        if old is not None and not old.is_closed():
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                old.remove_reader(self._out)

    def _send(self) -> None:
        self._scheduled = False
        if not self.broken and not self._sent and self._pending:
            self._write_frame()

    def _write_frame(self) -> None:
        """Send every queued item as one batch."""
        batch, self._pending = self._pending, []
        self._sent.append(batch)
        try:
            data = memoryview(cache_rows.frame([item for item, _ in batch]))
            while data:  # the process is idle, reading: a full pipe empties at once
                data = data[os.write(self._in, data):]
        except (OSError, ValueError):  # it has gone (or a record is not plain data)
            self._broke()

    def _readable(self) -> None:
        try:
            chunk = os.read(self._out, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # the process ended with batches unconfirmed
            self._broke()
            return
        self._answers(chunk)
        if not self._sent and self._pending:
            self._send()

    def _answers(self, chunk: bytes) -> None:
        """Settle each batch whose answer ``chunk`` completes."""
        buf = self._buf
        buf += chunk
        size = cache_rows.HEADER.size
        while len(buf) >= size and self._sent:
            (n,) = cache_rows.HEADER.unpack_from(buf)
            if len(buf) < size + n:
                return
            answer = marshal.loads(bytes(buf[size:size + n]))
            del buf[:size + n]
            batch = self._sent.popleft()
            self.proven = True
            if answer is not None:  # the batch was not written: the cache says why
                self._on_error(str(answer[0]), str(answer[1]))
            _settle(batch)

    def _broke(self) -> None:
        """The process is gone: write what it had not confirmed here, and stop."""
        if self.broken:
            return
        self.broken = self.proven = True
        self._detach()
        waiting = [w for batch in self._sent for w in batch] + self._pending
        self._sent.clear()
        self._pending = []
        code = None
        with contextlib.suppress(OSError):  # the end of its input, if it is still there
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = self._proc.wait(timeout=5)
        log.warning("judgekit: the cache's writer process ended (exit code %s); answers are "
                    "written from this process", code)
        try:
            self._fallback([item for item, _ in waiting])
        except Exception as exc:  # not written after all: each waiting call is told
            _settle(waiting, exc)
        else:
            _settle(waiting)

    def _close_pipes(self) -> None:
        """Close this end of both pipes (safe to repeat)."""
        for stream in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        """Send what is queued, wait until the process has written everything, and let
        it exit. Safe to call twice."""
        if self.forked:
            return
        if not self.broken:
            self._detach()
            if self._pending:
                self._write_frame()
            assert self._proc.stdin is not None
            with contextlib.suppress(OSError):
                self._proc.stdin.close()  # the end of its input: it writes all, exits
            os.set_blocking(self._out, True)
            while self._sent and not self.broken:
                try:
                    chunk = os.read(self._out, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    self._broke()
                    break
                self._answers(chunk)
            self.broken = self.proven = True  # closed: later answers go to the thread
        self._close_pipes()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=60)


_WRITERS: weakref.WeakSet[ProcessWriter] = weakref.WeakSet()


def _forked() -> None:
    """In a child made by fork: its copies of the writers are not its own. Their pipe
    ends are closed (an inherited copy would keep the process from ever seeing the end
    of its input), and the child's answers go to its own writer thread."""
    for writer in list(_WRITERS):
        writer.forked = writer.broken = writer.proven = True
        writer._pending, writer._loop = [], None
        writer._sent.clear()
        writer._close_pipes()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _settle(waiting: Waiting, error: BaseException | None = None) -> None:
    """Resolve the futures of items now written, or fail them with ``error`` (those of a
    closed loop, or cancelled, are nobody's concern any more)."""
    for _, fut in waiting:
        if not fut.done() and not fut.get_loop().is_closed():
            if error is None:
                fut.set_result(None)
            else:
                fut.set_exception(error)
