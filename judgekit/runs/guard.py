"""One run per output folder, and honest ends for runs that fail after paying.

``claim_folder`` takes an exclusive lock on the output folder (``.judgekit.lock``, with
the holder's PID) for the whole run: a second run aimed at the same explicit folder
is refused with the holder's PID; a second run of the same config with the default
folder moves on to the next free one (``runs/demo-2``). The lock file is removed at
the end, and a folder the failed run left empty is removed too.

``failed_run`` turns an error raised after calls were made into a failed run: the
failure log is written (failures.jsonl), results.json says why (``status: failed``),
and the message names the failed calls by kind and the file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from judgekit.core.errors import ConfigError, RunAborted
from judgekit.core.jsontypes import JSONObject
from judgekit.runs.io import LOCK_NAME, write_failures, write_json

# The clients a run has used, so a failure can write what they saw.
_CLIENTS: ContextVar[list[Any] | None] = ContextVar("judgekit_run_clients", default=None)


def track(client: Any) -> None:
    clients = _CLIENTS.get()
    if clients is not None:
        clients.append(client)


class FolderBusy(ConfigError):
    """Another live process holds the output folder."""


class _FolderLock:
    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.read(fd, 64).decode("ascii", "replace").strip() or "?"
                os.close(fd)
                raise FolderBusy(f"another run is writing to {self.path.parent} (PID "
                                 f"{holder}); wait for it to finish or choose another "
                                 "--out") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self.fd)
        self.fd = None


def busy(directory: Path) -> bool:
    return (directory / LOCK_NAME).exists()


@contextlib.contextmanager
def claim_folder(directory: Path) -> Iterator[None]:
    """Hold ``directory`` for one run (created if needed); see the module docstring.
    Folders it created (``runs/`` included) are removed again if the run leaves them
    empty."""
    made = [p for p in (directory, *directory.parents) if not p.exists()]
    created = bool(made)
    directory.mkdir(parents=True, exist_ok=True)
    lock = _FolderLock(directory)

    def tidy() -> None:
        for p in made:  # innermost first; rmdir refuses a folder that is not empty
            with contextlib.suppress(OSError):
                p.rmdir()

    try:
        lock.acquire()
    except BaseException:
        tidy()
        raise
    token = _CLIENTS.set([])
    try:
        yield
    finally:
        _CLIENTS.reset(token)
        lock.release()
        if created:
            tidy()  # only what the run left empty


def check_stages(client: Any) -> None:
    """A stage whose every call failed is a failed run, whatever its size."""
    for name, st in getattr(client, "stats", {}).items():
        if st.done and st.failed == st.done:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(st.failed_by_kind.items()))
            last = st.failures[-1]["error"] if st.failures else ""
            raise RunAborted(f"stage {name}: all {st.done} call(s) failed ({kinds}); last "
                             f"error: {str(last)[:200]}")


def failed_run(directory: Path, method: str, exc: BaseException) -> RunAborted | None:
    """If ``exc`` ended a run that had made calls, write failures.jsonl and a results.json
    that says why, and return the RunAborted to raise; None if no call was made."""
    clients = _CLIENTS.get() or []
    if not any(getattr(c, "stats", None) for c in clients):
        return None
    merged = _MergedLog(clients)
    counts = write_failures(directory, merged.failure_log)
    n = sum(counts.values())
    kinds = ", ".join(f"{k} {c}" for k, c in sorted(counts.items())) or "none"
    calls = merged.summary()
    write_json(directory / "results.json", {
        "method": method, "status": "failed", "error": str(exc), "calls": calls,
        "failed_calls": counts})
    where = f"written to {directory / 'failures.jsonl'}" if n else "none failed"
    return RunAborted(f"{exc} [{calls['total']} call(s) made, {n} failed ({kinds}), "
                      f"{where}; {directory / 'results.json'} says why; rerun the same "
                      "command to resume without paying again for the answered calls]")


class _MergedLog:
    def __init__(self, clients: list[Any]) -> None:
        self.clients = clients
        self.failure_log = [r for c in clients for r in getattr(c, "failure_log", [])]

    def summary(self) -> JSONObject:
        total: JSONObject = {"total": 0, "provider_calls": 0, "cached": 0, "failed": 0}
        for c in self.clients:
            s = c.summary()
            for k in total:
                total[k] += int(s.get(k) or 0)
        return total
