"""Where answers are kept: the cassette (replayable records), the response cache, and
the cross-process claims that keep two runs from paying for one request.

``lookup`` serves a recorded answer that still fits the stage's output model;
``save`` keeps a fresh one (answers in the cache; the model's own failures only in
the cassette, so a replay reproduces them; transport failures nowhere).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from judgekit.core.errors import CassetteMissError, RunAborted
from judgekit.llm.cache import ResponseCache
from judgekit.llm.calls import Prepared, check_record
from judgekit.llm.cassette import Cassette
from judgekit.llm.claims import Claims
from judgekit.llm.stage import Stage
from judgekit.llm.types import ANSWER_FAILURES, CallRecord, Identity

log = logging.getLogger("judgekit.llm")

__all__ = ["Store", "persisted_calls"]

# Calls whose answers this process has stored (cache or cassette journal); the CLI
# reports it when a run is interrupted.
PERSISTED = [0]


def persisted_calls() -> int:
    return PERSISTED[0]


class Store:
    """The cassette, cache and claims of one client."""

    def __init__(self, *, cache_dir: Any = None, use_cache: bool = True,
                 cassette: Any = None, cassette_mode: str = "new",
                 retry_failed: bool = False) -> None:
        self.mode = cassette_mode
        # a cassette entry recording the model's own failure (truncated, refused,
        # unreadable) is replayed as that failure unless asked to call again
        self.retry_failed = retry_failed
        self.cache = ResponseCache(cache_dir) if use_cache else None
        self.cassette = Cassette(cassette, cassette_mode) if cassette else None
        if cassette_mode == "none" and self.cassette is None:
            raise CassetteMissError("cassette mode none needs a cassette path")
        self.claims = _claims_for(self.cache, self.cassette)
        if self.claims is not None:
            self.claims.open()  # before any lookup: see ``recheck``

    def lookup(self, prep: Prepared, stage: Stage) -> tuple[CallRecord | None, Any, str]:
        """(record, value, source) of a recorded answer that still fits, or a miss
        (None, None, "provider"). In mode none a miss raises, naming what differs."""
        key = prep.key
        cas, mode = self.cassette, self.mode
        if cas is not None and mode != "all":
            rec = cas.get(key)
            if rec is not None:
                why, value = check_record(rec, stage)
                if why is None and (rec["ok"] or mode == "none" or not self.retry_failed):
                    return rec, value, "cassette"
                if mode == "none":
                    raise cas.miss_error(key, prep.identity, why=why)
                if why:
                    log.warning("judgekit: cassette entry %s is re-recorded: %s", key[:12], why)
                cas.forget(key)
            elif mode == "none":
                raise cas.miss_error(key, prep.identity)
        if self.cache is not None and mode != "all":
            return self.from_cache(prep, stage, self.cache.get(key))
        return None, None, "provider"

    def lookup_many(self, preps: list[Prepared], stage: Stage
                    ) -> list[tuple[CallRecord | None, Any, str]]:
        """:meth:`lookup` of each call, the cache's entries read in one query (a cached
        replay is mostly this)."""
        cas, cache = self.cassette, self.cache
        if cas is not None:  # its entries are in memory: the cache is read for the rest
            self.prefetch([p.key for p in preps if p.key not in cas])
            return [self.lookup(p, stage) for p in preps]
        keys = [p.key for p in preps]
        self.prefetch(keys)
        if self.mode == "all" or cache is None:
            return [self.lookup(p, stage) for p in preps]
        return [self.from_cache(p, stage, rec) for p, rec in zip(preps, cache.get_many(keys))]

    def from_cache(self, prep: Prepared, stage: Stage, rec: CallRecord | None
                   ) -> tuple[CallRecord | None, Any, str]:
        """The cache's answer ``rec`` to ``prep`` if it still fits, else a miss."""
        if rec is not None:
            why, value = check_record(rec, stage)
            why = why or (None if rec.get("ok") else "a failed call")
            if why is None:
                if self.cassette is not None:  # journalled in the background
                    self.cassette.put_later(prep.key, prep.identity, rec)
                return rec, value, "cache"
            log.warning("judgekit: cached answer %s is not used (%s); calling the "
                        "provider again", prep.key[:12], why)
        return None, None, "provider"

    def prefetch(self, keys: list[str]) -> None:
        """Read the cache entries of many keys at once (a replay's fast path)."""
        if self.cache is not None and self.mode != "all":
            self.cache.prefetch(keys)

    def claim(self, key: str) -> Any:
        """An async context holding ``key`` against other processes; it yields whether
        it had to wait for one."""
        if self.claims is None:
            return contextlib.nullcontext(False)
        return self.claims.hold(key)

    def recheck(self, key: str, identity: Identity, stage: Stage, waited: bool
                ) -> CallRecord | None:
        """Another process's stored answer, if it fits: the cache is checked (one read)
        unless the claim did not wait and nobody else has opened the storage since this
        store did (then nobody can have stored it since our lookup); the cassette journal
        only after waiting on that process's claim."""
        if self.claims is None or (not waited and self.claims.alone()):
            return None
        rec = self.cache.peek(key) if self.cache is not None else None
        if rec is None and waited and self.cassette is not None:
            rec = self.cassette.refresh(key)
        if rec is None or check_record(rec, stage)[0] is not None or not rec.get("ok"):
            return None
        if self.cassette is not None and key not in self.cassette:
            self.cassette.put(key, identity, rec)
        return rec

    def save(self, key: str, identity: Identity, record: CallRecord) -> None:
        """Keep a fresh record now; stop the run if the only storage can no longer be
        written."""
        cache, cassette = self._targets(record)
        was = cache is not None and cache.available
        if cache is not None:
            cache.set(key, record)
        if cassette is not None:
            cassette.put(key, identity, record)
        self._kept(was, cache, cassette)

    async def keep(self, key: str, identity: Identity, record: CallRecord,
                   secrets: list[str] | None = None) -> None:
        """``save`` through the background writers: returns once the batches holding the
        record are written (so a claim released after it lets another process find it)."""
        cache, cassette = self._targets(record)
        was = cache is not None and cache.available
        # each write's future (of this loop) awaited here: a coroutine to wait in cost a
        # frame per call
        cached = None if cache is None else cache.set_soon(key, record)
        journaled = None if cassette is None else \
            cassette.put_soon(key, identity, record, secrets)
        if cached is not None:
            await cached
        if journaled is not None:
            await journaled
        self._kept(was, cache, cassette)

    def proven(self) -> bool:
        """Whether a call's slot may be freed before its answer is kept (see
        :attr:`ResponseCache.writes_proven`)."""
        return self.cache is None or self.cache.writes_proven

    def _targets(self, record: CallRecord) -> tuple[ResponseCache | None, Cassette | None]:
        """Where a fresh record goes: answers to the cache; the model's own failures only
        to the cassette, so a replay reproduces them."""
        answer = bool(record["ok"])
        return (self.cache if answer else None,
                self.cassette if answer or record.get("kind") in ANSWER_FAILURES else None)

    def _kept(self, was: bool, cache: ResponseCache | None, cassette: Cassette | None
              ) -> None:
        stored = cassette is not None or (cache is not None and cache.available)
        if cache is not None and was and not stored:
            raise RunAborted(
                f"the response cache at {cache.directory} can no longer be written "
                "(see the warning above); stopping so no more calls are paid for without "
                "being kept. Answers stored before are kept; fix the disk and rerun.")
        PERSISTED[0] += stored

    def close(self) -> None:
        """Compact the cassette and close the cache. Safe to call twice."""
        if self.cassette is not None:
            self.cassette.save()
            self.cassette.close()
        if self.cache is not None:
            self.cache.close()
            self.cache = None
        if self.claims is not None:
            self.claims.close()


def _claims_for(cache: ResponseCache | None, cassette: Cassette | None) -> Claims | None:
    """Claims live beside the storage runs share: the cache, else the cassette."""
    if cache is not None and cache.available:
        return Claims(cache.directory / "inflight")
    if cassette is not None and cassette.mode != "none":
        return Claims(cassette.path.with_name(f".{cassette.path.name}.inflight"))
    return None
