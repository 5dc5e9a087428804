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
import functools
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from judgekit.core.errors import ProviderError, RunAborted
from judgekit.llm.attempts import resume_record
from judgekit.llm.batch_api import BatchAPI, BatchItem, BatchStatus, batch_api_for
from judgekit.llm.batch_journal import BatchJournal
from judgekit.llm.batch_poll import poll
from judgekit.llm.cache import default_cache_dir
from judgekit.llm.calls import (
    CallState,
    ParseFailure,
    Prepared,
    Terminal,
    read_answer,
    request_for,
    validated,
)
from judgekit.llm.ledger import Ledger
from judgekit.llm.retry import RetryPolicy
from judgekit.llm.secrets import scrub, scrub_text
from judgekit.llm.stage import Call, Stage
from judgekit.llm.store import Store
from judgekit.llm.types import FAILURE_KINDS, CallRecord, JSONObject, StageResult

__all__ = ["BatchHost", "BatchJournal", "cancel", "run_batch"]


M = TypeVar("M", bound=BaseModel)


class BatchHost(Protocol):
    """What batch execution needs from a client (``judgekit.llm.Client`` is one)."""

    settings: Any
    store: Store
    ledger: Ledger
    retry: RetryPolicy

    def prepare(self, stage: Stage, call: Call) -> Prepared: ...

    async def fetch(self, prep: Prepared, stage: Stage) -> tuple[CallRecord, str]: ...

    def finish(self, stage: Stage, prep: Prepared, record: CallRecord, value: Any,
               source: str, t0: float) -> StageResult[Any]: ...

log = logging.getLogger("judgekit.batch")


@dataclass
class Pending:
    """A request waiting for its batch: the prepared call and what it has seen so far."""

    prep: Prepared
    state: CallState

    @property
    def attempts(self) -> int:
        return self.state.attempts


async def run_batch(client: BatchHost, stage: Stage[M], calls: Sequence[Call]
                    ) -> list[StageResult[M]]:
    """``Client.map`` in batch mode; same results, in order, as online."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    st = client.ledger.stage(stage.name)
    preps = [client.prepare(stage, c) for c in calls]
    got: dict[str, tuple[CallRecord, Any, str]] = {}
    misses: dict[str, dict[str, Prepared]] = {}
    for p in preps:
        st.calls += 1
        if p.key in got or any(p.key in m for m in misses.values()):
            continue
        rec, val, src = client.store.lookup(p, stage)
        if rec is not None:
            got[p.key] = (rec, val, src)
        else:
            misses.setdefault(p.model, {})[p.key] = p
    for model, group in misses.items():
        api = engine_for(client.settings, next(iter(group.values())).provider)
        if api is None:
            if model not in client.ledger.batch_notices:
                client.ledger.batch_notices.add(model)
                why = ("has no batch service" if client.settings.execution == "batch" else
                       f"cannot run on {client.settings.execution} (it speaks OpenAI's "
                       "chat API only)")
                log.warning("judgekit: %s %s; its calls run online", model, why)
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
        out.append(client.finish(stage, p, rec, val, src, t0))
    return out


def engine_for(settings: Any, provider: Any) -> BatchAPI | None:
    """The engine a model's batched calls go to under ``settings.execution``: the
    provider's batch service (``batch``), a Ray cluster (``ray``) or vLLM's offline
    runner (``vllm``); None where it cannot run them (they run online)."""
    from judgekit.llm.providers.openai import OpenAIProvider

    if settings.execution == "batch":
        return batch_api_for(provider)
    if not isinstance(provider, OpenAIProvider):  # Ray and vLLM speak OpenAI's chat API
        return None
    directory = Path(settings.cache_dir or default_cache_dir())
    if settings.execution == "vllm":
        if not provider.open_weights:  # vLLM loads open weights: local/<model> names them
            return None
        from judgekit.llm.vllm_batch import VLLMBatch

        return VLLMBatch(provider, directory, settings.vllm_command, settings.vllm_args)
    from judgekit.llm.ray_batch import RayBatch

    return RayBatch(provider, directory, settings)


async def _online(client: BatchHost, stage: Stage, preps: list[Prepared]
                  ) -> dict[str, tuple[CallRecord, Any, str]]:
    async def one(p: Prepared) -> tuple[str, tuple[CallRecord, Any, str]]:
        rec, src = await client.fetch(p, stage)
        return p.key, (rec, validated(rec, stage), src)

    return dict(await asyncio.gather(*(one(p) for p in preps)))


def _journal(client: BatchHost) -> BatchJournal:
    return BatchJournal(Path(client.settings.cache_dir or default_cache_dir()))


async def _batched(client: BatchHost, api: BatchAPI, stage: Stage, group: dict[str, Prepared]
                   ) -> dict[str, tuple[CallRecord, Any, str]]:
    journal = _journal(client)
    base_url = str(api.provider.base_url)
    states = {k: Pending(p, CallState(p.provider.resolve_model(), list(p.messages)))
              for k, p in group.items()}
    done: dict[str, tuple[CallRecord, Any, str]] = {}
    fallback: list[str] = []
    # Resume: batches submitted by an earlier, interrupted run are polled, not resent.
    waiting: list[JSONObject] = []
    covered: set[str] = set()
    await _reconcile(api, journal, base_url, set(states))
    for entry in journal.open_batches(api.name, base_url):
        ks = set(journal.keys(entry)) & set(states)
        if ks:
            waiting.append(entry)
            covered |= ks
            for k in ks:
                states[k].state.attempts = int(entry.get("attempt", 1)) - 1
    # vLLM's runner loads the model for each run: its parse failures are asked again
    # online (the model's server), not in another run, unless vllm_reask says batch
    reask: list[str] | None = [] if api.name == "vllm" and \
        client.settings.vllm_reask == "online" else None
    while True:
        todo = [k for k in states if k not in done and k not in covered and k not in fallback
                and k not in (reask or ())]
        if todo:
            waiting += await _submit(client, api, stage, journal, [states[k] for k in todo])
        if not waiting:
            break
        finished = await poll(client, api, waiting, stage.name)
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
                _handle(client, stage, state, item, done, fallback, reask)
            missing = _missing_kind(status)
            for k in sent & set(states):
                if k not in answered and k not in done and k not in fallback:
                    why = f": {status.errors}" if status.errors else ""
                    _handle(client, stage, states[k], BatchItem(
                        k, kind=missing, error=f"batch {entry['id']} ended {status.status} "
                        f"without a result for this request{why}"), done, fallback, reask)
            journal.record({"id": entry["id"], "status": "collected",
                            "collected_at": time.time()})
        waiting = []
    if reask:
        done.update(await _reask_online(client, stage, [states[k] for k in reask]))
    if fallback:
        client.ledger.batch_fallbacks += len(fallback)
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


async def _items(client: BatchHost, api: BatchAPI, entry: JSONObject, status: BatchStatus,
                 stage: str) -> list[BatchItem]:
    """A batch's results, read with retries; a result whose custom_id was not sent, or a
    second, different result for one request, is logged as a failure, never used."""
    async def read() -> list[BatchItem]:
        return [item async for item in api.results(entry["id"], status)]

    items = await client.retry.call(read, api.provider.should_retry, f"batch {entry['id']}")
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
            client.ledger.log_failure({"stage": stage, "key": cid, "kind": "batch_protocol",
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


async def _submit(client: BatchHost, api: BatchAPI, stage: Stage, journal: BatchJournal,
                  states: list[Pending]) -> list[JSONObject]:
    s = client.settings
    limit = min(api.max_requests, s.batch_max_requests or api.max_requests)
    chunks: list[list[tuple[Pending, JSONObject]]] = [[]]
    size = 0
    for state in states:
        p = state.prep
        line = api.line(p.key, request_for(p, stage, state.state.messages, s.timeout))
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
        found = await client.retry.call(functools.partial(api.find, submission),
                                        api.provider.should_retry, "batch lookup")
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
        batch_id = await _submit_once(client, api, [line for _, line in chunk], submission)
        entry = {**base, "id": batch_id, "status": "submitted", "submitted_at": time.time()}
        journal.record(entry)  # at once: a kill from here on resumes, never resubmits
        journal.record({"id": f"pending:{submission}", "status": "resolved"})
        client.ledger.batches_submitted += 1
        client.ledger.batch_requests_submitted += len(chunk)
        entries.append(entry)
    return entries


async def _reask_online(client: BatchHost, stage: Stage, pending: list[Pending]
                        ) -> dict[str, tuple[CallRecord, Any, str]]:
    """Continue calls whose batch answer did not parse, online: each keeps its
    transcript and its count of attempts."""
    s = client.settings

    async def one(p: Pending) -> tuple[str, tuple[CallRecord, Any, str]]:
        req = request_for(p.prep, stage, p.state.messages, s.timeout)
        rec = scrub(await resume_record(
            p.prep.provider, req, stage, p.state, retry=client.retry,
            parse_attempts=max(1, s.max_parse_attempts - p.attempts),
            deadline=s.call_deadline))
        client.store.save(p.prep.key, p.prep.identity, rec)
        return p.prep.key, (rec, validated(rec, stage), "batch")

    return dict(await asyncio.gather(*(one(p) for p in pending)))


def _handle(client: BatchHost, stage: Stage, pending: Pending, item: BatchItem,
            done: dict[str, tuple[CallRecord, Any, str]], fallback: list[str],
            reask: list[str] | None = None) -> None:
    """One batch result, read by the same rules as an online answer."""
    s = client.settings
    key, state = pending.prep.key, pending.state
    if item.completion is None:
        if s.batch_fallback == "online" and item.kind in ("transport", "expired", "canceled"):
            fallback.append(key)
            return
        kind = {"expired": "timeout", "canceled": "transport",
                "missing": "transport"}.get(str(item.kind), str(item.kind))
        state.fail(kind if kind in FAILURE_KINDS else "transport",
                   item.error or "batch request failed")
    else:
        state.attempts += 1
        try:
            read_answer(item.completion, stage, state)
        except Terminal as exc:
            state.fail(exc.kind, str(exc))
        except ParseFailure as exc:
            if state.attempts < s.max_parse_attempts:
                if reask is not None:
                    reask.append(key)  # asked again online (vLLM's runner)
                return  # state.messages holds the re-ask: it goes in the next batch
            state.fail("parse", str(exc))
    record = scrub(state.record())
    client.store.save(key, pending.prep.identity, record)
    done[key] = (record, validated(record, stage), "batch")


async def _submit_once(client: BatchHost, api: BatchAPI, lines: list[JSONObject],
                       tag: str) -> str:
    """Submit a batch, retrying transient errors; before each retry the provider is asked
    for a batch with this tag, so a submission that went through is never paid twice."""
    async def attempt() -> str:
        found = await api.find(tag)
        return found if found is not None else await api.submit(lines, tag)

    try:
        return await api.submit(lines, tag)
    except ProviderError as exc:
        if exc.fatal:
            raise RunAborted(scrub_text(str(exc))) from None
        if not api.provider.should_retry(exc):
            raise
        await client.retry.sleep(client.retry.wait(1, exc))
    return await client.retry.call(attempt, api.provider.should_retry, "batch submission")


async def cancel(client: BatchHost, batch_id: str) -> BatchStatus:
    """Cancel a journaled batch at its provider and record it."""
    from judgekit.core.errors import ConfigError
    from judgekit.llm.providers import make_provider

    journal = _journal(client)
    entry = journal.entries().get(batch_id)
    if entry is None:
        raise ConfigError(f"batch {batch_id} is not in the journal {journal.path}")
    if entry.get("provider") == "ray":
        raise ConfigError(f"batch {batch_id} ran on Ray: it stops with the run that drives "
                          "it (Ctrl-C); there is nothing to cancel")
    provider = make_provider(entry["model"], entry["base_url"])
    api: BatchAPI | None = batch_api_for(provider)
    if entry.get("provider") == "vllm":
        from judgekit.llm.vllm_batch import VLLMBatch

        api = VLLMBatch(provider, journal.dir, [], [])  # stops the runner it started
    assert api is not None
    try:
        st = await api.cancel(batch_id)
    finally:
        await provider.aclose()
    journal.record({"id": batch_id, "status": "cancelled"})
    return st
