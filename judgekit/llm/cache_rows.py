"""The response cache's writes: one batch of answers in one SQLite transaction, then the
write-ahead log synced. Used in this process (``ResponseCache.set_many``) and, at the
cache's usual rate, by the writer process (:mod:`judgekit.llm.cache_process`), which
runs this file on its own: it imports only the standard library and diskcache.

The writer process reads frames from its standard input and answers each with one
frame on its standard output, once the batch is committed and synced. A frame is a
4-byte little-endian length, then a ``marshal`` payload (both ends are the same
interpreter): a batch is a list of (key, record) pairs, an answer is None or the
(type name, message) of the error that stopped the batch. At the end of its input (the
client closed it, or was killed) it has written every batch it received, and exits.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import signal
import sqlite3
import struct
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import diskcache

HEADER = struct.Struct("<I")


def open_rows(directory: str | Path) -> diskcache.Cache:
    """The cache as diskcache opens it for writing, with the client's settings: no
    eviction query on every write (cull_limit 0; judgekit never sets an expiry)."""
    return diskcache.Cache(str(directory), size_limit=2**34, cull_limit=0)


def write_connection(directory: str | Path) -> sqlite3.Connection:
    """A connection for bulk inserts, with diskcache's settings (write-ahead log,
    synchronous NORMAL, its timeout)."""
    con = sqlite3.connect(str(Path(directory) / "cache.db"), timeout=60,
                          isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA synchronous = 1")
    return con


def sync_file(path: str | Path) -> None:
    """fsync a file written by another connection (SQLite's WAL), if it exists."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def texts(items: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """(key, record) pairs as the JSON text the cache stores."""
    return [(k, json.dumps(v, ensure_ascii=False, sort_keys=True)) for k, v in items]


def insert_new(con: sqlite3.Connection, cache: diskcache.Cache,
               items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Insert the answers whose keys are not stored yet, as the row diskcache's ``set``
    writes for a short text (inline raw text, no expiry, no tag), in one statement and
    one transaction: diskcache's ``set`` costs a Python call and three statements per
    answer. Returns the (key, text) pairs left to diskcache's ``set``: a key already
    stored (its row is updated, an old file removed) or a text long enough to be kept
    in a file."""
    by_key = dict(items)  # a key given twice: its last text
    limit = int(getattr(cache, "disk_min_file_size", 32768))
    short = [k for k, t in by_key.items() if len(t) < limit]
    there: set[str] = set()
    if short:
        now = time.time()
        con.execute("BEGIN IMMEDIATE")
        try:
            for i in range(0, len(short), 900):  # under SQLite's variable limit
                chunk = short[i:i + 900]
                there.update(r[0] for r in con.execute(
                    "SELECT key FROM Cache WHERE raw = 1 AND key IN "
                    f"({','.join('?' * len(chunk))})", chunk))
            con.executemany(
                "INSERT INTO Cache(key, raw, store_time, expire_time, access_time, "
                "access_count, tag, size, mode, filename, value) "
                f"VALUES (?, 1, ?, NULL, ?, 0, NULL, 0, {diskcache.core.MODE_RAW}, NULL, ?)",
                [(k, now, now, by_key[k]) for k in short if k not in there])
            con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            raise
    return [(k, t) for k, t in by_key.items() if len(t) >= limit or k in there]


def set_rest(cache: diskcache.Cache, rest: list[tuple[str, str]]) -> None:
    """diskcache's own ``set`` of the pairs ``insert_new`` left, in one transaction."""
    if rest:
        with cache.transact():
            for key, text in rest:
                cache.set(key, text)


def write_batch(con: sqlite3.Connection, cache: diskcache.Cache, directory: str | Path,
                items: list[tuple[str, str]], sync: bool = True) -> None:
    """Store a batch of (key, JSON text); with ``sync``, then sync the write-ahead log, so
    a committed batch survives a crash of the machine, not only of the process."""
    set_rest(cache, insert_new(con, cache, items))
    if sync:
        sync_file(Path(directory) / "cache.db-wal")


def read_frame(stream: BinaryIO) -> Any:
    """The next frame's payload, or raise EOFError at the end of the stream."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        raise EOFError
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        raise EOFError
    return marshal.loads(body)


def frame(payload: Any) -> bytes:
    body = marshal.dumps(payload)
    return HEADER.pack(len(body)) + body


def serve(directory: str) -> int:
    """The writer process: write each batch read, answer when it is on disk."""
    # Ctrl-C reaches the whole process group: the client stops and closes our input,
    # and every batch it sent is still written
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cache = open_rows(directory)
    con = write_connection(directory)
    src, out = sys.stdin.buffer, sys.stdout.buffer
    try:
        while True:
            try:
                batch = read_frame(src)
            except EOFError:
                return 0
            answer: Any = None
            try:
                write_batch(con, cache, directory, texts(batch))
            except Exception as exc:  # the client disables the cache and says why
                answer = (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
            with contextlib.suppress(OSError):  # the client is gone; what it sent is written
                out.write(frame(answer))
                out.flush()
    finally:
        con.close()
        cache.close()


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1]))
