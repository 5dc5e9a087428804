"""Batch execution: a stage's cache misses go to the provider's batch service.

``Client.map`` in ``execution: batch`` mode gathers the misses, writes them as
provider batches (custom_id = the request key; split by the provider's request and
size limits), records each accepted batch in a journal in the cache directory, polls
with backoff, validates every answer against the stage's output model and stores it
in the cache and cassette exactly as an online answer (same identity, same record).
Parse failures are re-asked in follow-up batches, up to the same 5 attempts in total;
errored and expired requests fall back to online calls (``batch_fallback: online``)
or become explicit failures (``fail``). An interrupted run resumes polling the
journaled batches instead of submitting them again. LiteLLM, local and mock models
run online, with a one-line notice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from judgekit.errors import ProviderError, RunAborted
from judgekit.llm.batch_api import BatchAPI, BatchItem, BatchStatus, batch_api_for
from judgekit.llm.secrets import clip, scrub, scrub_text
from judgekit.llm.stage import Call, Stage
from judgekit.llm.structured import ParseFailure, parse_output
from judgekit.llm.types import ProviderRequest, StageResult, Usage

if TYPE_CHECKING:
    from judgekit.llm.client import Client, _Prepared

log = logging.getLogger("judgekit.batch")


class BatchJournal:
    """``batches.jsonl`` in the cache directory: one line per event (submitted,
    collected, cancelled), and ``batches/<id>.keys`` listing each batch's request keys."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.path = self.dir / "batches.jsonl"
        self.keys_dir = self.dir / "batches"
        self.lock = FileLock(str(self.dir / "batches.lock"))

    def record(self, entry: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")
            fh.flush()

    def write_keys(self, keys: Sequence[str]) -> str:
        self.keys_dir.mkdir(parents=True, exist_ok=True)
        name = f"{uuid.uuid4().hex}.keys"
        (self.keys_dir / name).write_text("\n".join(keys) + "\n", encoding="utf-8")
        return name

    def keys(self, entry: dict[str, Any]) -> list[str]:
        p = self.keys_dir / str(entry.get("keys_file"))
        return p.read_text(encoding="utf-8").split() if p.exists() else []

    def entries(self) -> dict[str, dict[str, Any]]:
        """The latest state of every batch, by id."""
        out: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return out
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a kill mid-write
            out[e["id"]] = {**out.get(e["id"], {}), **e}
        return out

    def open_batches(self, provider: str, base_url: str) -> list[dict[str, Any]]:
        return [e for e in self.entries().values() if e.get("provider") == provider
                and e.get("base_url") == base_url and e.get("status") == "submitted"]


@dataclass
class _State:
    prep: _Prepared
    messages: list[dict[str, str]]
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    raw: str = ""
    model: str = ""
    entropy: float | None = None
    error: str | None = None


async def run_batch(client: Client, stage: Stage, calls: Sequence[Call]
                    ) -> list[StageResult[Any]]:
    """``Client.map`` in batch mode; same results, in order, as online."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    from judgekit.llm.client import StageStats

    st = client.stats.setdefault(stage.name, StageStats())
    preps = [client._prepare(stage, c) for c in calls]
    got: dict[str, tuple[dict[str, Any], Any, str]] = {}
    misses: dict[str, dict[str, _Prepared]] = {}
    for p in preps:
        st.calls += 1
        if p.key in got or any(p.key in m for m in misses.values()):
            continue
        rec, val, src = client._lookup(p.key, p.identity, stage)
        if rec is not None:
            got[p.key] = (rec, val, src)
        else:
            misses.setdefault(p.model, {})[p.key] = p
    for model, group in misses.items():
        api = batch_api_for(next(iter(group.values())).provider)
        if api is None:
            if model not in client.batch_notices:
                client.batch_notices.add(model)
                log.warning("judgekit: %s has no batch service; its calls run online", model)
            got.update(await _online(client, stage, list(group.values())))
        else:
            got.update(await _batched(client, api, stage, group))
    seen: set[str] = set()
    out = []
    for p in preps:
        rec, val, src = got[p.key]
        if p.key in seen and src in ("batch", "provider"):
            src = "inflight"  # a duplicate call shares the one request made for its key
        seen.add(p.key)
        out.append(client._finish(stage, st, p, rec, val, src, t0))
    return out


async def _online(client: Client, stage: Stage, preps: list[_Prepared]
                  ) -> dict[str, tuple[dict[str, Any], Any, str]]:
    from judgekit.llm.client import _validated

    async def one(p: _Prepared) -> tuple[str, tuple[dict[str, Any], Any, str]]:
        rec, src = await client._fetch(p.key, p.identity, p.provider, stage, p.messages,
                                       p.sampling, p.draw)
        return p.key, (rec, _validated(rec, stage), src)

    return dict(await asyncio.gather(*(one(p) for p in preps)))


def _journal(client: Client) -> BatchJournal:
    from judgekit.llm.cache import default_cache_dir

    return BatchJournal(Path(client.settings.cache_dir or default_cache_dir()))


async def _batched(client: Client, api: BatchAPI, stage: Stage, group: dict[str, _Prepared]
                   ) -> dict[str, tuple[dict[str, Any], Any, str]]:
    journal = _journal(client)
    base_url = str(api.provider.base_url)
    states = {k: _State(p, list(p.messages)) for k, p in group.items()}
    done: dict[str, tuple[dict[str, Any], Any, str]] = {}
    fallback: list[str] = []
    # Resume: batches submitted by an earlier, interrupted run are polled, not resent.
    waiting: list[dict[str, Any]] = []
    covered: set[str] = set()
    await _reconcile(api, journal, base_url, set(states))
    for entry in journal.open_batches(api.name, base_url):
        ks = set(journal.keys(entry)) & set(states)
        if ks:
            waiting.append(entry)
            covered |= ks
            for k in ks:
                states[k].attempts = int(entry.get("attempt", 1)) - 1
    while True:
        todo = [k for k in states if k not in done and k not in covered and k not in fallback]
        if todo:
            waiting += await _submit(client, api, stage, journal, [states[k] for k in todo])
        if not waiting:
            break
        finished = await _poll(client, api, waiting, stage.name)
        covered = set()
        for entry, status in finished:
            items = await _items(client, api, entry, status, stage.name)
            sent = set(journal.keys(entry))
            answered = set()
            for item in items:
                state = states.get(item.custom_id)
                if state is None or item.custom_id in done:
                    continue
                answered.add(item.custom_id)
                _handle(client, stage, state, item, done, fallback)
            missing = _missing_kind(status)
            for k in sent & set(states):
                if k not in answered and k not in done and k not in fallback:
                    why = f": {status.errors}" if status.errors else ""
                    _handle(client, stage, states[k], BatchItem(
                        k, kind=missing, error=f"batch {entry['id']} ended {status.status} "
                        f"without a result for this request{why}"), done, fallback)
            journal.record({"id": entry["id"], "status": "collected",
                            "collected_at": time.time()})
        waiting = []
    if fallback:
        client.batch_fallbacks += len(fallback)
        log.warning("judgekit: %d batch request(s) expired, were cancelled or met a transient "
                    "error before running; calling them online", len(fallback))
        done.update(await _online(client, stage, [group[k] for k in fallback]))
    return done


def _missing_kind(status: BatchStatus) -> str:
    """What a request with no result in an ended batch becomes: requests of an expired or
    cancelled batch never ran (online fallback is safe); a failed batch was rejected
    (final, with the batch's errors); a completed one that lost a result is a failure,
    never sent again (it may have been billed)."""
    return {"expired": "expired", "cancelled": "canceled", "canceled": "canceled",
            "failed": "http_4xx"}.get(status.status, "missing")


async def _items(client: Client, api: BatchAPI, entry: dict[str, Any], status: BatchStatus,
                 stage: str) -> list[BatchItem]:
    """A batch's results, read with retries; a result whose custom_id was not sent, or a
    second, different result for one request, is logged as a failure, never used."""
    async def read() -> list[BatchItem]:
        return [item async for item in api.results(entry["id"], status)]

    items = await _retry(client, read)
    sent = set(_journal(client).keys(entry))
    first: dict[str, BatchItem] = {}
    out = []
    for item in items:
        cid = item.custom_id
        problem = None
        if cid not in sent:
            problem = "a result whose custom_id this batch did not send"
        elif cid in first:
            if _same(first[cid], item):
                continue
            problem = "a second, different result for one request (the first is kept)"
        if problem:
            client.failure_log.append({"stage": stage, "key": cid, "kind": "batch_protocol",
                                       "model": entry.get("model"), "attempts": 0,
                                       "error": f"batch {entry['id']}: {problem}",
                                       "source": "batch", "transcript": None})
            log.warning("judgekit: batch %s returned %s (custom_id %s); logged in "
                        "failures.jsonl", entry["id"], problem, cid[:12])
            continue
        first[cid] = item
        out.append(item)
    return out


def _same(a: BatchItem, b: BatchItem) -> bool:
    ta = a.completion.text if a.completion else None
    tb = b.completion.text if b.completion else None
    return (ta, a.kind, a.error) == (tb, b.kind, b.error)


async def _retry(client: Client, fn: Any) -> Any:
    """Run an idempotent batch request (status, results), retrying transient errors with
    the client's backoff, as any online call is."""
    s = client.settings
    for attempt in range(1, s.transport_attempts + 1):
        try:
            return await fn()
        except ProviderError as exc:
            if exc.fatal:
                raise RunAborted(scrub_text(str(exc))) from None
            if not exc.retryable or attempt == s.transport_attempts:
                raise
            wait = exc.retry_after if exc.retry_after is not None else \
                s.backoff_base * 2 ** (attempt - 1)
            log.warning("judgekit: %s; retrying (%d of %d)", exc, attempt,
                        s.transport_attempts - 1)
            await client._sleep(min(wait, s.max_wait))
    raise AssertionError("unreachable")  # pragma: no cover


async def _reconcile(api: BatchAPI, journal: BatchJournal, base_url: str,
                     wanted: set[str]) -> None:
    """Submissions recorded as sent but never answered (the process died in between):
    find them at the provider and journal them, so they are polled, not paid twice."""
    for e in journal.entries().values():
        if e.get("status") != "submitting" or e.get("provider") != api.name or \
                e.get("base_url") != base_url or not set(journal.keys(e)) & wanted:
            continue
        found = await api.find(str(e["submission"]))
        if found is not None:
            journal.record({**{k: v for k, v in e.items() if k != "id"}, "id": found,
                            "status": "submitted", "submitted_at": time.time()})
            log.warning("judgekit: found batch %s from an interrupted submission; polling "
                        "it instead of paying again", found)
        else:
            log.warning("judgekit: a submission interrupted before its reply cannot be "
                        "found at %s; its %s requests are sent again", api.name,
                        e.get("requests"))
        journal.record({"id": e["id"], "status": "resolved"})


async def _submit(client: Client, api: BatchAPI, stage: Stage, journal: BatchJournal,
                  states: list[_State]) -> list[dict[str, Any]]:
    s = client.settings
    limit = min(api.max_requests, s.batch_max_requests or api.max_requests)
    chunks: list[list[tuple[_State, dict[str, Any]]]] = [[]]
    size = 0
    for state in states:
        p = state.prep
        req = ProviderRequest(model=p.provider.resolve_model(), messages=state.messages,
                              sampling=p.sampling, schema=stage.schema, schema_name=stage.name,
                              base_url=p.provider.base_url, timeout=s.timeout, draw=p.draw)
        line = api.line(p.key, req)
        n = len(json.dumps(line, ensure_ascii=False).encode("utf-8")) + 1
        if chunks[-1] and (len(chunks[-1]) >= limit or size + n > api.max_bytes):
            chunks.append([])
            size = 0
        chunks[-1].append((state, line))
        size += n
    entries = []
    for chunk in chunks:
        keys = [st.prep.key for st, _ in chunk]
        keys_file = journal.write_keys(keys)
        attempt = max(st.attempts for st, _ in chunk) + 1
        # The tag is a function of what is sent: a run that lost its journal (the cache
        # folder deleted mid-batch) finds the batch again instead of paying twice.
        submission = hashlib.sha256("\n".join([api.name, str(api.provider.base_url),
                                               stage.name, str(attempt), *sorted(keys)])
                                    .encode()).hexdigest()[:32]
        base = {"provider": api.name, "base_url": str(api.provider.base_url),
                "model": chunk[0][0].prep.model, "stage": stage.name, "attempt": attempt,
                "requests": len(chunk), "keys_file": keys_file, "submission": submission}
        found = await _retry(client, lambda tag=submission: api.find(tag))
        if found is not None:
            log.warning("judgekit: batch %s already holds these %d requests (its journal "
                        "was lost); polling it instead of paying again", found, len(chunk))
            entry = {**base, "id": found, "status": "submitted", "submitted_at": time.time()}
            journal.record(entry)
            entries.append(entry)
            continue
        # Recorded before sending: if the process dies before the provider's reply is
        # journaled, a resumed run can look the batch up by this tag (OpenAI metadata).
        journal.record({**base, "id": f"pending:{submission}", "status": "submitting"})
        try:
            batch_id = await api.submit([line for _, line in chunk], submission)
        except ProviderError as exc:
            if exc.fatal:
                raise RunAborted(scrub_text(str(exc))) from None
            raise
        entry = {**base, "id": batch_id, "status": "submitted", "submitted_at": time.time()}
        journal.record(entry)  # at once: a kill from here on resumes, never resubmits
        journal.record({"id": f"pending:{submission}", "status": "resolved"})
        client.batches_submitted += 1
        client.batch_requests_submitted += len(chunk)
        entries.append(entry)
    return entries


async def _poll(client: Client, api: BatchAPI, entries: list[dict[str, Any]], label: str
                ) -> list[tuple[dict[str, Any], BatchStatus]]:
    """Poll until every batch has ended, backing off; show the provider's counts."""
    from judgekit.llm.client import _progress

    s = client.settings
    interval = s.batch_poll_interval
    finished: dict[str, tuple[dict[str, Any], BatchStatus]] = {}
    stuck: dict[str, tuple[str, float]] = {}  # batch id -> (transitional status, since)
    total = sum(int(e.get("requests", 0)) for e in entries)
    with _progress(s.progress, f"{label} (batch)", total) as tick:
        shown = 0
        while len(finished) < len(entries):
            counted = 0
            for e in entries:
                if e["id"] in finished:
                    counted += int(e.get("requests", 0))
                    continue
                st = await _retry(client, lambda e=e: api.status(e["id"]))
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
                await client._sleep(interval)
                interval = min(interval * 1.5, s.batch_max_poll_interval)
    return [finished[e["id"]] for e in entries]


TRANSITIONAL = ("cancelling", "finalizing", "canceling")


def _deadline(s: Any, entry: dict[str, Any], st: BatchStatus,
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


def _handle(client: Client, stage: Stage, state: _State, item: BatchItem,
            done: dict[str, tuple[dict[str, Any], Any, str]], fallback: list[str]) -> None:
    from judgekit.llm.client import _reask, _validated

    s = client.settings
    key = state.prep.key
    if item.completion is None:
        if s.batch_fallback == "online" and item.kind in ("transport", "expired", "canceled"):
            fallback.append(key)
            return
        kind = {"expired": "timeout", "canceled": "transport",
                "missing": "transport"}.get(str(item.kind), str(item.kind))
        _fail(client, stage, state, kind, item.error or "batch request failed", done)
        return
    comp = item.completion
    state.attempts += 1
    state.usage.add(comp.usage)
    state.raw, state.entropy = comp.text, comp.mean_token_entropy
    state.model = comp.model or state.prep.provider.resolve_model()
    if comp.refusal is not None or comp.finish_reason == "refusal":
        _fail(client, stage, state, "refusal", f"the model refused: "
              f"{clip(comp.refusal or comp.text, 300)}", done)
        return
    try:
        parsed = parse_output(comp.text, stage.output)
    except ParseFailure as exc:
        if comp.finish_reason == "length":
            _fail(client, stage, state, "truncated", "the answer was cut off at the token "
                  f"limit and does not parse: {exc}", done)
        elif state.attempts >= s.max_parse_attempts:
            _fail(client, stage, state, "parse", str(exc), done)
        else:
            state.error = str(exc)
            state.messages = _reask(state.messages, comp.text, str(exc))  # next batch
        return
    record = scrub({"ok": True, "text": comp.text, "parsed": parsed.model_dump(mode="json"),
                    "attempts": state.attempts, "usage": state.usage.as_dict(),
                    "model": state.model, "error": None,
                    "mean_token_entropy": state.entropy})
    client._store(key, state.prep.identity, record)
    done[key] = (record, _validated(record, stage), "batch")


def _fail(client: Client, stage: Stage, state: _State, kind: str, error: str,
          done: dict[str, tuple[dict[str, Any], Any, str]]) -> None:
    record = scrub({"ok": False, "text": state.raw, "parsed": None,
                    "attempts": state.attempts, "usage": state.usage.as_dict(),
                    "model": state.model or state.prep.provider.resolve_model(),
                    "error": scrub_text(error), "mean_token_entropy": state.entropy,
                    "kind": kind, "transcript": state.messages})
    client._store(state.prep.key, state.prep.identity, record)
    done[state.prep.key] = (record, None, "batch")


async def cancel(client: Client, batch_id: str) -> BatchStatus:
    """Cancel a journaled batch at its provider and record it."""
    from judgekit.errors import ConfigError
    from judgekit.llm.providers import make_provider

    journal = _journal(client)
    entry = journal.entries().get(batch_id)
    if entry is None:
        raise ConfigError(f"batch {batch_id} is not in the journal {journal.path}")
    provider = make_provider(entry["model"], entry["base_url"])
    api = batch_api_for(provider)
    assert api is not None
    try:
        st = await api.cancel(batch_id)
    finally:
        await provider.aclose()
    journal.record({"id": batch_id, "status": "cancelled"})
    return st
