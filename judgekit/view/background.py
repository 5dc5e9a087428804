"""The viewer's background work and the requests it yields to: the row facts of a
large item file (ids, verdicts, labels: every row parsed once, for search and filter)
are built in a process of their own, started once the server is quiet, paused while a
label is computed, and ended with the server."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

STEP = 4096  # rows between a builder's checks of the gate
PAUSE_S = 5.0  # the longest a builder waits at one check before it looks again
IDLE_S = 1.0  # background facts start once no request was served for this long
_GATE: Any = None  # a builder process's gate: set while no label is being computed
_BUSY: list[Any] = [0, None]  # labelling requests computing, and the gate (once made)
_SERVING: list[float] = [0, -IDLE_S]  # requests being served, and when the last one ended


def gated(gate: Any, server: int) -> None:
    """A builder process's start: it keeps the server's gate and process id, and asks
    Linux to end it with its server (a server killed mid-build left builders holding
    400 MB each, blocked on sending their facts to nobody)."""
    global _GATE, _SERVER
    _GATE, _SERVER = gate, server
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the check at every STEP rows remains
        return
    if os.getppid() != server:  # gone before the request was made
        os._exit(0)


_SERVER = 0  # a builder's server (its parent) process id


def wait_gate() -> None:
    """A builder's check: it stops when its server is gone (a server stopped mid-build
    left builders parsing for minutes), and waits while a label is computed."""
    if _SERVER and os.getppid() != _SERVER:
        os._exit(0)
    if _GATE is not None:
        _GATE.wait(PAUSE_S)


def when_quiet(then: Any) -> None:
    """``then()`` once the server is quiet (no request served for IDLE_S): a builder
    started by a page would otherwise compete with the label asked right after it. A
    request that needs the facts meanwhile builds them itself."""
    while _SERVING[0] or time.monotonic() - _SERVING[1] < IDLE_S:
        time.sleep(0.05)
    then()


def gate(ctx: Any) -> Any:
    """The server's one gate for every builder (made with ``ctx``, set while no label is
    computed). A performance hint only: a label that starts as it is made may find it
    open, nothing worse."""
    with _MAKING:
        got = _BUSY[1]
        if got is None:
            got = _BUSY[1] = ctx.Event()
            if _BUSY[0] == 0:
                got.set()
        return got


_MAKING = threading.Lock()


class serving:
    """``with serving():`` around each request the server answers (on its event loop)."""

    def __enter__(self) -> None:
        _SERVING[0] += 1

    def __exit__(self, *exc: object) -> None:
        _SERVING[0] -= 1
        _SERVING[1] = time.monotonic()


class foreground:
    """``with foreground():`` around a label's computation: facts built apart wait (at
    their next ``STEP`` rows) until no label is being computed. On a two-core machine a
    builder parsing 10^6 rows slowed a label by half or more. Entered and left on the
    server's event loop only; never around a request that waits for the facts."""

    def __enter__(self) -> None:
        _BUSY[0] += 1
        if _BUSY[1] is not None:
            _BUSY[1].clear()

    def __exit__(self, *exc: object) -> None:
        _BUSY[0] -= 1
        if _BUSY[0] == 0 and _BUSY[1] is not None:
            _BUSY[1].set()
