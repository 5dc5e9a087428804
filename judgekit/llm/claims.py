"""Claims on in-flight requests, shared by every process that uses one cache or cassette.

Inside one process, identical calls already share one request (the client's in-flight
table). Two processes (two ``judgekit run`` of one config started together, or two
experiments sharing a cache) would each pay for the same call. Before calling a
provider, the client claims the request key: an exclusive OS lock on a file named by
the key in a folder beside the shared storage. A process that finds the key claimed
waits until the claim is released, then looks the answer up again (the holder stored
it before releasing) and pays only if the holder failed.

On POSIX systems every claim is a one-byte record lock (fcntl) at an offset derived
from the key, in one shared file: a process holds one descriptor for all its claims,
however many calls are in flight (a 20,000-call map at concurrency 64 used to hold 64
lock files besides its 64 sockets). Record locks do not exclude each other inside one
process, so claims held in this process are also kept in a process-wide set.

Each user also announces itself when its store opens, before any lookup: it holds a
shared presence lock for as long as it uses the file and bumps a generation number
kept in it. A user that found nobody else present, and whose generation is still the
latest, knows nobody else can have stored an answer since its lookup, so a claim that
did not wait needs no second read of the cache.

A user alone with the file (nobody else present, its generation still the latest) also
takes the SOLO byte exclusively and then holds its claims without a record lock each
(two system calls per call, which at 0 ms latency cost more than judgekit's own work):
every other user takes SOLO shared before its first claim, so it waits at that gate
until the one alone has noticed it (its generation changed: checked at each claim and
every WATCH_S seconds, through a shared mapping of the file, no system call) and turned
its claims into record locks. The gate is also passed when the one alone has no claim
left (it lets SOLO go at once). Elsewhere
(Windows) each claim is a lock file, removed when released. If a waiter holds an old
file while a third process creates a new one, both may end up calling, but only when
the first holder failed to store an answer; a stored answer is always found first.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import mmap
import os
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

from filelock import FileLock, Timeout

try:
    import fcntl
except ImportError:  # Windows: one lock file per claim
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("judgekit.claims")

# (claims file, offset) held by any Claims object of this process: record locks do not
# exclude each other within one process, this set does
_HELD: set[tuple[str, int]] = set()
_HELD_LOCK = threading.Lock()
# one descriptor per claims file per process, shared by every Claims object on it and
# closed with the last: closing any descriptor of a file drops all of this process's
# record locks on it (POSIX), so no object may close one another still uses
_FILES: dict[str, _File] = {}
_GATED: set[str] = set()  # claims files this process holds SOLO shared in (for life)
_ALONE: dict[str, Claims] = {}  # claims file -> this process's user holding SOLO
CLAIMS_FILE = "claims"
# Byte offsets in the claims file: a shared lock on PRESENT is held by every process
# using it; GENERATION_LOCK guards the 8-byte user generation stored at GENERATION_AT,
# bumped by every user that opens the file; per-key claims lock bytes from KEYS_FROM.
PRESENT, GENERATION_LOCK, SOLO, GENERATION_AT, KEYS_FROM = 0, 1, 2, 8, 64
WATCH_S = 0.05  # how often a user alone checks that nobody else has come


def _open_present(path: str) -> int:
    """The claims file, opened with this process's presence lock held. A file being
    removed by its last user is reopened (it would hold nobody else's claims)."""
    for _ in range(100):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            return fd
        with contextlib.suppress(OSError):  # removed meanwhile: open it again
            fcntl.lockf(fd, fcntl.LOCK_SH, 1, PRESENT)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        os.close(fd)
    raise OSError(f"cannot open the claims file {path}")


def _others_present(fd: int) -> bool:
    """Whether another process holds its presence lock (ours is turned exclusive for a
    moment, then shared again)."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, PRESENT)
    except OSError:
        return True
    fcntl.lockf(fd, fcntl.LOCK_SH, 1, PRESENT)
    return False


def _bump_generation(fd: int) -> bytes:
    """Add one to the user generation; returns the new value's bytes."""
    fcntl.lockf(fd, fcntl.LOCK_EX, 1, GENERATION_LOCK)
    try:
        now = int.from_bytes(os.pread(fd, 8, GENERATION_AT).ljust(8, b"\0"), "big") + 1
        new = (now % 2**63).to_bytes(8, "big")
        os.pwrite(fd, new, GENERATION_AT)
        return new
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, GENERATION_LOCK)


class _File:
    """A claims file open in this process: its descriptor, how many Claims objects use
    it, and a read-only shared mapping of its generation. The mapping holds a duplicate
    of the descriptor, and closing any descriptor of a file drops every record lock this
    process holds on it: it is closed only with the file, by its last user."""

    __slots__ = ("fd", "users", "map")

    def __init__(self, fd: int) -> None:
        self.fd, self.users = fd, 0
        self.map: mmap.mmap | None = None

    def generation(self) -> bytes:
        """The user generation now (b"" if unreadable)."""
        try:
            if self.map is not None:
                return self.map[GENERATION_AT:GENERATION_AT + 8]
            return os.pread(self.fd, 8, GENERATION_AT)
        except (OSError, ValueError):
            return b""


class Claims:
    """Per-key cross-process claims in ``directory``."""

    def __init__(self, directory: Path, *, poll: float = 0.02, max_poll: float = 0.5) -> None:
        self.dir = Path(directory)
        self.name = str(self.dir)
        self.poll, self.max_poll = poll, max_poll
        self.waited = 0  # claims found held by another process (for tests and benchmarks)
        self._fd: int | None = None
        self.warned = False
        # whether another user (process, or Claims object in this process) may share the
        # storage: until one is seen, a claim that did not wait needs no re-read
        self.shared = fcntl is None
        self._generation = b""
        self._open: _File | None = None
        self._solo = False  # SOLO held: claims are kept in _HELD only
        self._virtual: set[int] = set()  # offsets claimed while alone (no record lock)
        self._epoch = 0  # which time alone a watcher belongs to

    def open(self) -> None:
        """Announce this user, before any lookup: take the claims file (shared presence
        lock, bump the user generation) and note whether anyone else is there. On any
        problem, assume others are."""
        try:
            self._file()
        except OSError:  # said when a claim is first needed (a replay needs none)
            self.shared = True

    def alone(self) -> bool:
        """No other user has had the storage open since this one opened it: an answer
        missing at our lookup cannot have been stored since by anyone else."""
        if self.shared or self._fd is None:
            return False
        if self._current() == self._generation:
            return True
        self.shared = True  # another user came: from now on every claim re-reads
        return False

    def _current(self) -> bytes:
        """The file's user generation now (from the shared mapping; b"" if unreadable)."""
        return self._open.generation() if self._open is not None else b""

    def _file(self) -> int:
        if self._fd is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            path = str(self.dir / CLAIMS_FILE)
            with _HELD_LOCK:
                shared = _FILES.get(path)
                if shared is None:
                    shared = _FILES[path] = _File(_open_present(path))
                shared.users += 1
                self._fd = fd = shared.fd
                self._open = shared
                if fcntl is not None:
                    owner = _ALONE.get(path)
                    if owner is not None:  # a second user here: the one alone shares
                        owner._share_held()
                    self.shared = self.shared or shared.users > 1 or _others_present(fd)
                    self._generation = _bump_generation(fd)  # the file is 16 bytes at least
                    if shared.map is None:
                        with contextlib.suppress(OSError, ValueError):
                            shared.map = mmap.mmap(fd, GENERATION_AT + 8, mmap.MAP_SHARED,
                                                   mmap.PROT_READ)
        return self._fd

    def _try(self, fd: int, offset: int) -> bool:
        """Take the record lock at ``offset`` if neither this process nor another
        holds it."""
        name = self.name
        with _HELD_LOCK:
            if (name, offset) in _HELD:
                return False
            if self._solo:  # nobody else can claim anything meanwhile
                self._virtual.add(offset)
            else:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                except (BlockingIOError, PermissionError):
                    return False
            _HELD.add((name, offset))
            return True

    def _release(self, fd: int, offset: int) -> None:
        with _HELD_LOCK:
            _HELD.discard((self.name, offset))
            if offset in self._virtual:
                self._virtual.discard(offset)
                if not self._virtual:  # nothing held: the gate opens for others, unless
                    try:               # a claim comes before the loop turns (a run's next)
                        asyncio.get_running_loop().call_soon(self._idle, self._epoch)
                    except RuntimeError:
                        self._unsolo()
                return
            with contextlib.suppress(OSError):
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    async def _gate(self, fd: int) -> None:
        """Before a claim: be the user alone (SOLO exclusive) if nobody else has come,
        else pass the gate (SOLO shared, kept) once whoever is alone has shared."""
        if self._solo:
            if self._current() == self._generation:
                return
            self._share()  # somebody came: record locks from now on
        path = str(self.dir / CLAIMS_FILE)
        if path in _GATED or self._go_solo(fd, path):
            return
        delay = self.poll
        while not self._pass_gate(fd, path):
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self.max_poll)

    def _pass_gate(self, fd: int, path: str) -> bool:
        """Take SOLO shared (kept for this file's life in this process), unless a user
        alone holds it exclusively."""
        with _HELD_LOCK:
            if path not in _GATED:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, SOLO)
                except (BlockingIOError, PermissionError):
                    return False
                _GATED.add(path)
            return True

    def _go_solo(self, fd: int, path: str) -> bool:
        """Take SOLO exclusively if this user is still the only one since it opened."""
        if self.shared:
            return False
        with _HELD_LOCK:
            if self._open is None or self._open.users > 1 \
                    or self._current() != self._generation:
                self.shared = True
                return False
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SOLO)
            except OSError:
                self.shared = True
                return False
            if _others_present(fd):  # came after our generation was read
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, SOLO)
                self.shared = True
                return False
            self._solo = True
            _ALONE[path] = self
            self._epoch += 1
            epoch = self._epoch
        asyncio.get_running_loop().call_later(WATCH_S, self._watch, epoch)
        return True

    def _watch(self, epoch: int) -> None:
        """While alone: share as soon as somebody else comes (on the loop, every
        WATCH_S), even when no claim is taken meanwhile."""
        if not self._solo or epoch != self._epoch:
            return
        if self._current() != self._generation:
            self._share()
            return
        asyncio.get_running_loop().call_later(WATCH_S, self._watch, epoch)

    def _idle(self, epoch: int) -> None:
        """Let SOLO go if no claim was taken since the last one was let go."""
        with _HELD_LOCK:
            if epoch == self._epoch and not self._virtual:
                self._unsolo()

    def _share(self) -> None:
        """Stop being alone: each claim held becomes a record lock (nobody else can
        hold one: they wait at the gate), then SOLO is let go; from now on claims take
        record locks and every claim re-reads."""
        with _HELD_LOCK:
            self._share_held()

    def _share_held(self) -> None:
        """:meth:`_share` with _HELD_LOCK held."""
        if not self._solo:
            return
        fd = self._fd
        assert fd is not None
        for offset in self._virtual:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            except OSError as exc:
                self._unprotected(exc)
        self._virtual.clear()
        self.shared = True
        self._unsolo()

    def _unsolo(self) -> None:
        """Let SOLO go (with _HELD_LOCK held)."""
        if self._solo:
            self._solo = False
            self._epoch += 1
            _ALONE.pop(str(self.dir / CLAIMS_FILE), None)
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, SOLO)

    def hold(self, key: str) -> _Hold:
        """An async context holding the claim on ``key``; it gives True if another
        process held it first (so the caller should look the answer up again before
        paying)."""
        return _Hold(self, key)

    def _unprotected(self, exc: OSError) -> None:
        """Say once, loudly, that calls go on without cross-process protection (another
        process sharing this cache may pay for the same call)."""
        if not self.warned:
            self.warned = True
            log.warning("cannot claim calls in %s (%s): going on without protection "
                        "against another process paying for the same call", self.dir, exc)

    def _offset(self, key: str) -> int:
        """The key's byte in the claims file: 61 bits of its hash (past the bytes kept for
        presence and the generation); a collision only makes one call wait for another.
        A request key is a sha256 already: its first 16 hex digits are used as they are."""
        try:
            bits = int(key[:16], 16) if len(key) == 64 else -1
        except ValueError:
            bits = -1
        if bits < 0:
            bits = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
        return KEYS_FROM + (bits >> 3)

    def _lockfile(self, key: str) -> tuple[Callable[[], bool], Callable[[], None]]:
        """(try, release) of a lock file of its own (where record locks are absent)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"{key}.lock"
        lock = FileLock(str(path), timeout=0, thread_local=False)

        def attempt() -> bool:
            try:
                lock.acquire()
                return True
            except Timeout:
                return False

        def release() -> None:
            with contextlib.suppress(OSError):
                path.unlink()
            lock.release()
        return attempt, release

    def close(self) -> None:
        """Close the claims file; remove it and the folder when no process holds a
        claim in it (a whole-file lock can be taken)."""
        if self._fd is not None:
            path = str(self.dir / CLAIMS_FILE)
            with _HELD_LOCK:
                self._unsolo()
                self._virtual.clear()
                self._fd, self._open = None, None
                shared = _FILES[path]
                shared.users -= 1
                if shared.users > 0:
                    return
                del _FILES[path]
                _GATED.discard(path)
                fd = shared.fd
                # no other process holds a claim: the file and folder can go (one that
                # does keeps them: the lock or the unlink fails, and that is fine)
                try:
                    with contextlib.suppress(OSError):
                        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
                        os.unlink(path)
                finally:
                    if shared.map is not None:  # its descriptor goes with the file's
                        with contextlib.suppress(BufferError, ValueError, OSError):
                            shared.map.close()
                    os.close(fd)
        with contextlib.suppress(OSError):
            self.dir.rmdir()


class _Hold:
    """:meth:`Claims.hold`'s context (a class: a generator-based one cost a frame and
    an async generator per call)."""

    __slots__ = ("claims", "key", "release")

    def __init__(self, claims: Claims, key: str) -> None:
        self.claims, self.key = claims, key
        self.release: Callable[[], None] | None = None

    async def __aenter__(self) -> bool:
        c = self.claims
        try:
            if fcntl is not None:
                fd, offset = c._file(), c._offset(self.key)
                if not c._solo or c._current() != c._generation:  # else: still alone
                    await c._gate(fd)
                attempt: Callable[[], bool] = partial(c._try, fd, offset)
                release: Callable[[], None] = partial(c._release, fd, offset)
            else:
                attempt, release = c._lockfile(self.key)
        except OSError as exc:  # no claims possible: go on as a single process would
            c._unprotected(exc)
            return False
        waited, delay = False, c.poll
        try:
            while not attempt():
                waited = True
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, c.max_poll)
        except OSError as exc:
            c._unprotected(exc)
            return False
        if waited:
            c.waited += 1
        self.release = release
        return waited

    async def __aexit__(self, *exc: object) -> None:
        release, self.release = self.release, None
        if release is not None:
            release()
