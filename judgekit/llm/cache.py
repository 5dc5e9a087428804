"""On-disk response cache (diskcache), keyed by the request identity's sha256.

Values are stored as JSON text, never as pickles: a cache directory is data,
and loading it must not run code. An entry in any other form (a pickle planted
or left by an older version) is refused and counted as a miss. A cache that
cannot be opened or read (a truncated ``cache.db``, a full disk) is reported
once as a warning and bypassed: calls go to the provider and the run goes on. A cache
that can be read but not written (a read-only folder or file system) is used read-only:
its answers are served, new answers are not stored, with one warning.
Only successful answers are stored; a failed call is simply a miss next time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import diskcache
from platformdirs import user_cache_dir

from judgekit.core.textio import json_loads
from judgekit.llm import cache_rows
from judgekit.llm.cache_process import ProcessWriter
from judgekit.llm.types import CallRecord
from judgekit.llm.writer import BatchWriter

log = logging.getLogger("judgekit.cache")

_STATS_KEY = "__judgekit_last_run_stats__"
_CACHE_ERRORS = (sqlite3.Error, OSError, ValueError, diskcache.Timeout)
# answers asked on an event loop are written by a process of its own where the platform
# allows (see judgekit.llm.cache_process); else by a thread of this one
PROCESS_WRITER = os.name == "posix"


def default_cache_dir() -> Path:
    env = os.environ.get("JUDGEKIT_CACHE_DIR")
    return Path(env) if env else Path(user_cache_dir("judgekit")) / "responses"


class UnsafeEntry(ValueError):
    """A cache row that is not plain JSON text (e.g. a pickle)."""


class _JSONOnlyDisk(diskcache.Disk):
    """A diskcache Disk that stores and returns text only and never unpickles."""

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise UnsafeEntry("cache key is not stored as raw text")
        return super().get(key, raw)

    def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
        if mode in (diskcache.core.MODE_PICKLE,) or read:
            raise UnsafeEntry("cache value is not JSON text (a pickle?)")
        return super().fetch(mode, filename, value, read)


@dataclass
class CacheStats:
    entries: int
    bytes: int
    directory: str
    last_run_hits: int
    last_run_misses: int


class _ReadOnlyCache:
    """The part of diskcache.Cache the response cache uses, on a cache it may not write
    (a read-only folder or file system): lookups read SQLite directly, with ``mode=ro``
    (or ``immutable=1`` where even SQLite's shared-memory file cannot be made), and
    writes are refused (``set_many`` does not call them)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        db = directory / "cache.db"
        if not db.is_file():
            raise sqlite3.OperationalError(f"no cache.db in {directory}")
        last: sqlite3.Error | None = None
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                con = sqlite3.connect(f"file:{db}?{flags}", uri=True, check_same_thread=False)
                con.execute("SELECT count(*) FROM Cache").fetchone()
                self._con = con
                return
            except sqlite3.Error as exc:
                last = exc
        raise last or sqlite3.OperationalError("cannot open the cache read-only")

    def get(self, key: str) -> str | None:
        row = self._con.execute("SELECT value, filename, mode, raw FROM Cache WHERE key = ?",
                                (key,)).fetchone()
        if row is None:
            return None
        value, filename, mode, raw = row
        if not raw or mode == diskcache.core.MODE_PICKLE:
            raise UnsafeEntry("cache value is not JSON text (a pickle?)")
        if filename:
            return (self.directory / filename).read_text(encoding="utf-8")
        return value if isinstance(value, str) else None

    def __contains__(self, key: str) -> bool:
        return self._con.execute("SELECT 1 FROM Cache WHERE key = ?", (key,)).fetchone() \
            is not None

    def __len__(self) -> int:
        return int(self._con.execute("SELECT count(*) FROM Cache").fetchone()[0])

    def volume(self) -> int:
        return sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())

    def close(self) -> None:
        self._con.close()


class ResponseCache:
    """A JSON-valued diskcache that counts hits and misses and never raises on I/O."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory else default_cache_dir()
        self.hits = 0
        self.misses = 0
        self.refused = 0
        self._prefetched: dict[str, str] = {}
        self._absent: set[str] = set()  # prefetched and not there: the lookup is a miss
        self._cache: diskcache.Cache | None = None
        self._writer: BatchWriter[tuple[str, CallRecord]] | None = None
        self._process: ProcessWriter | None = None
        self._no_process = not PROCESS_WRITER  # not here, or it could not start
        self._reader: sqlite3.Connection | None = None  # prefetch's read-only connection
        self._writes: sqlite3.Connection | None = None  # set_many's bulk inserts
        self.read_only = False  # answers are served, new ones not stored
        self.unusable = False  # said so, and bypassed
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # cull_limit 0: no eviction query on every write (two more SQL statements per
            # answer); judgekit never sets an expiry, and `judgekit cache clear` empties it
            self._cache = diskcache.Cache(str(self.directory), size_limit=2**34,
                                          disk=_JSONOnlyDisk, cull_limit=0)
        except _CACHE_ERRORS as exc:
            try:  # a folder it may read but not write: used read-only
                self._cache = cast(diskcache.Cache, _ReadOnlyCache(self.directory))
                self.read_only = True
                log.warning("judgekit: the response cache at %s cannot be written (%s); its "
                            "answers are served and new answers are not stored",
                            self.directory, type(exc).__name__)
            except (*_CACHE_ERRORS, UnsafeEntry):
                self._disable(exc)

    @property
    def available(self) -> bool:
        return self._cache is not None

    def _disable(self, exc: BaseException) -> None:
        self._disabled(type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")

    def _disabled(self, kind: str, message: str) -> None:
        """Say once why the cache is unusable, and bypass it from now on."""
        if self.unusable:  # a second batch failing as the first did
            return
        self.unusable = True
        log.warning("judgekit: the response cache at %s is unusable (%s: %s); it is bypassed "
                    "for this run and calls go to the provider (`judgekit cache clear` starts it "
                    "afresh; do not delete the folder while batches run: it holds their "
                    "journal)", self.directory, kind, message)
        cache, self._cache = self._cache, None
        if cache is not None:
            with contextlib.suppress(*_CACHE_ERRORS):  # already unusable: best effort
                cache.close()

    def prefetch(self, keys: list[str]) -> None:
        """Read many entries in one query (a replay's lookups then cost no query each).
        Only plain inline text rows are read this way; anything else is left to ``get``.
        Best effort: any problem leaves the entries to be read one by one."""
        if self._cache is None or not keys:
            return
        found: dict[str, str] = {}
        present: set[str] = set()  # every stored key, inline or not
        try:
            if self._reader is None:  # one read-only connection for the cache's life
                self._reader = sqlite3.connect(f"file:{self.directory / 'cache.db'}?mode=ro",
                                               uri=True)
            con = self._reader
            for i in range(0, len(keys), 900):  # under SQLite's variable limit
                chunk = keys[i:i + 900]
                rows = con.execute(
                    "SELECT key, value, raw = 1 AND filename IS NULL FROM Cache WHERE "
                    "(expire_time IS NULL OR expire_time > ?) AND key IN "
                    f"({','.join('?' * len(chunk))})", [time.time(), *chunk])
                for k, v, inline in rows:
                    present.add(k)
                    if inline and isinstance(v, str):
                        found[k] = v
        except (sqlite3.Error, OSError):
            return
        self._prefetched = found
        self._absent = set(keys) - present

    def get(self, key: str) -> CallRecord | None:
        if self._cache is None:
            self.misses += 1
            return None
        if key in self._absent:  # read a moment ago in the prefetch: a miss, no query
            self._absent.discard(key)  # (a later peek, after a claim, reads the table)
            self.misses += 1
            return None
        try:
            text = self._prefetched.pop(key, None) if self._prefetched else None
            if text is None:
                text = self._cache.get(key)
        except UnsafeEntry:
            self.refused += 1
            text = None
        except _CACHE_ERRORS as exc:
            self._disable(exc)
            text = None
        return self._counted(text)

    def get_many(self, keys: list[str]) -> list[CallRecord | None]:
        """``get`` of each key; the entries ``prefetch`` read are parsed here in one loop
        (no query, and no call of ``get``, for each)."""
        pre = self._prefetched
        if self._cache is None or not pre:
            return [self.get(k) for k in keys]
        out: list[CallRecord | None] = []
        for k in keys:
            text = pre.pop(k, None)
            # an entry the prefetch did not read (absent, or stored otherwise): ``get``
            out.append(self.get(k) if text is None else self._counted(text))
        return out

    def _counted(self, text: object) -> CallRecord | None:
        """The record an entry's ``text`` holds, counted as a hit; else a miss (and text
        that is not JSON is also counted as refused)."""
        value = None
        if isinstance(text, str):
            try:
                value = json_loads(text)
            except json.JSONDecodeError:
                self.refused += 1
        if not isinstance(value, dict):
            self.misses += 1
            return None
        self.hits += 1
        return cast(CallRecord, value)

    def peek(self, key: str) -> CallRecord | None:
        """``get`` without counting a hit or miss (a re-check, not a lookup)."""
        hits, misses = self.hits, self.misses
        try:
            return self.get(key)
        finally:
            self.hits, self.misses = hits, misses

    def set(self, key: str, value: CallRecord) -> None:
        self.set_many([(key, value)], sync=False)

    def set_later(self, key: str, value: CallRecord) -> Future[None]:
        """Queue ``value`` for the background writer; the future resolves once its
        batch is committed (check ``available`` after: a failed write disables the
        cache, as ``set`` does)."""
        return self._background().submit((key, value))

    def set_soon(self, key: str, value: CallRecord) -> asyncio.Future[None]:
        """``set_later`` with a future of the running loop, written by the writer process
        where it runs, else by the writer thread (see :mod:`judgekit.llm.writer`)."""
        if self._cache is None or self.read_only:  # nothing to write to
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            fut.set_result(None)
            return fut
        if self._process is None and not self._no_process:
            self._process = ProcessWriter.start(self.directory, self._disabled, self.set_many)
            self._no_process = self._process is None
        if self._process is not None and not self._process.broken:
            queued = self._process.submit_async((key, value))
            if queued is not None:
                return queued
        return self._background().submit_async((key, value))

    @property
    def writes_proven(self) -> bool:
        """Whether a write has been confirmed (or is not waited on): until the writer
        process has answered its first batch (it starts in about 0.06 s), the client
        keeps each call's slot until its answer is written, so a cache that cannot be
        written stops a run after at most one round of calls, as the thread does."""
        p = self._process
        return self._no_process or self._cache is None or p is not None and p.proven

    def _background(self) -> BatchWriter[tuple[str, CallRecord]]:
        if self._writer is None:
            self._writer = BatchWriter(self.set_many, "judgekit-cache-writer")
        return self._writer

    def set_many(self, items: list[tuple[str, CallRecord]], sync: bool = True) -> None:
        """Store many answers in one transaction; with ``sync``, then sync SQLite's
        write-ahead log, so a committed batch survives a crash of the machine, not only
        of the process."""
        cache = self._cache
        if cache is None or not items or self.read_only:
            return
        try:
            cache_rows.set_rest(cache, self._insert_new(cache_rows.texts(items)))
            if sync:
                cache_rows.sync_file(self.directory / "cache.db-wal")
        except _CACHE_ERRORS as exc:
            self._disable(exc)

    def _insert_new(self, items: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """:func:`judgekit.llm.cache_rows.insert_new` on this cache's own write
        connection (used by one writer at a time)."""
        if self._writes is None:
            self._writes = cache_rows.write_connection(self.directory)
        return cache_rows.insert_new(self._writes, cast(diskcache.Cache, self._cache), items)

    def delete(self, key: str) -> None:
        if self._cache is None or self.read_only:
            return
        try:
            self._cache.delete(key)
        except _CACHE_ERRORS as exc:
            self._disable(exc)

    def __contains__(self, key: str) -> bool:
        if self._cache is None:
            return False
        try:
            return key in self._cache
        except _CACHE_ERRORS:
            return False

    def close(self) -> None:
        if self._process is not None:
            self._process.close()  # every answer sent is written first
            self._process = None
        if self._writer is not None:
            self._writer.close()  # every queued answer is written first
            self._writer = None
        for con in (self._reader, self._writes):
            if con is not None:
                with contextlib.suppress(sqlite3.Error):
                    con.close()
        self._reader = self._writes = None
        if self._cache is None:
            return
        with contextlib.suppress(*_CACHE_ERRORS):  # the counts are informative only
            if (self.hits or self.misses) and not self.read_only:
                self._cache.set(_STATS_KEY, json.dumps({"hits": self.hits,
                                                        "misses": self.misses}))
            self._cache.close()
        self._cache = None

    def stats(self) -> CacheStats:
        """The whole cache (entries, bytes on disk) and the last run's hits and misses."""
        if self._cache is None:
            return CacheStats(0, 0, str(self.directory), 0, 0)
        try:
            raw = self._cache.get(_STATS_KEY)
            last = json.loads(raw) if isinstance(raw, str) else {}
        except (UnsafeEntry, json.JSONDecodeError, *_CACHE_ERRORS):
            last = {}
        entries = len(self._cache) - (1 if _STATS_KEY in self._cache else 0)
        return CacheStats(entries, int(self._cache.volume()), str(self.directory),
                          int(last.get("hits", 0)), int(last.get("misses", 0)))

    def clear(self) -> int:
        if self._cache is None or self.read_only:
            return 0
        return int(self._cache.clear())
