"""Polling batches until they end: backing off, showing the counts, and giving a batch
stuck in a transitional status (cancelling, finalizing) a deadline."""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

from judgekit.llm.batch_api import BatchAPI, BatchStatus
from judgekit.llm.ledger import Progress
from judgekit.llm.types import JSONObject

__all__ = ["TRANSITIONAL", "poll"]

log = logging.getLogger("judgekit.batch")


async def poll(client: Any, api: BatchAPI, entries: list[JSONObject], label: str
                ) -> list[tuple[JSONObject, BatchStatus]]:
    """Poll until every batch has ended, backing off; show the provider's counts."""
    s = client.settings
    interval = api.poll_interval or s.batch_poll_interval
    longest = api.max_poll_interval or s.batch_max_poll_interval
    finished: dict[str, tuple[JSONObject, BatchStatus]] = {}
    stuck: dict[str, tuple[str, float]] = {}  # batch id -> (transitional status, since)
    total = sum(int(e.get("requests", 0)) for e in entries)
    with Progress(s.progress, f"{label} (batch)", total) as tick:
        shown = 0
        while len(finished) < len(entries):
            counted = 0
            for e in entries:
                if e["id"] in finished:
                    counted += int(e.get("requests", 0))
                    continue
                st = await client.retry.call(functools.partial(api.status, e["id"]),
                                             api.provider.should_retry, f"batch {e['id']}")
                st = _deadline(s, e, st, stuck)
                c = st.counts
                counted += int(c.get("completed", 0)) + int(c.get("failed", 0)) + \
                    int(c.get("succeeded", 0)) + int(c.get("errored", 0)) + \
                    int(c.get("expired", 0)) + int(c.get("canceled", 0))
                if st.done:
                    finished[e["id"]] = (e, st)
            for _ in range(max(0, counted - shown)):
                tick()
            shown = max(shown, counted)
            if len(finished) < len(entries):
                await client.retry.sleep(interval)
                interval = min(interval * 1.5, longest)
    return [finished[e["id"]] for e in entries]


TRANSITIONAL = ("cancelling", "finalizing", "canceling")


def _deadline(s: Any, entry: JSONObject, st: BatchStatus,
              stuck: dict[str, tuple[str, float]]) -> BatchStatus:
    """A batch in a transitional status (cancelling, finalizing) gets a deadline; past it,
    it is treated as ended without results, with a message, instead of polled forever."""
    if st.done or st.status not in TRANSITIONAL:
        stuck.pop(entry["id"], None)
        return st
    now = time.monotonic()
    status, since = stuck.setdefault(entry["id"], (st.status, now))
    if status != st.status:
        stuck[entry["id"]] = (st.status, now)
        since = now
    if now - since == 0:
        log.warning("judgekit: batch %s is %s; waiting up to %.0fs", entry["id"], st.status,
                    s.batch_stuck_deadline)
    if now - since < s.batch_stuck_deadline:
        return st
    log.warning("judgekit: batch %s has been %s for %.0fs; giving up on it (its requests "
                "are failed; `judgekit batches list` shows it)", entry["id"], st.status,
                now - since)
    raw = {**st.raw, "errors": {"data": [{"code": f"stuck_{st.status}", "message":
                                          f"still {st.status} after {now - since:.0f}s"}]}}
    return BatchStatus(True, f"stuck {st.status}", st.counts, raw)
