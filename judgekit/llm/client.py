"""The one client every stage goes through: the online scheduler.

cassette -> cache -> in-flight dedupe -> per-provider concurrency limit -> provider
call -> transport retries (408/409/425/429/5xx/529, resets, bad bodies, timeouts;
Retry-After honoured and capped; exponential backoff with full jitter) -> parse and
validate, re-asking with the error up to ``max_parse_attempts`` times in total;
all inside an overall per-call deadline.

The rules of one call live in :mod:`judgekit.llm.calls`, storage in
:mod:`judgekit.llm.store`, statistics and the failure budget in
:mod:`judgekit.llm.ledger`, the retry policy in :mod:`judgekit.llm.retry`; batch
execution (:mod:`judgekit.llm.batch`) uses the same objects.

Every call ends as a :class:`StageResult`: ok, or failed with a kind. ``map``
never raises for one call. Run-wide problems raise at once: a missing key,
401/403, an unknown model (404), a cassette miss in replay-only mode, and a
stage whose failures exceed the failure budget.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence, Sized
from itertools import count
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from judgekit.core.errors import DryRun, JudgekitError, RunAborted
from judgekit.core.options import RunOptions
from judgekit.llm.attempts import call_record
from judgekit.llm.calls import Prepared, prepare, prepare_many, request_for, validated
from judgekit.llm.collect import fewer_collections, unscanned
from judgekit.llm.ledger import (
    BATCH_PRICE,
    CallSummary,
    FailureEntry,
    Ledger,
    Progress,
    StageStats,
    normalise_budget,
)
from judgekit.llm.pool import Limit, Pool
from judgekit.llm.providers import Provider, make_provider, parse_model_string
from judgekit.llm.retry import RetryPolicy
from judgekit.llm.secrets import scrub, secret_values
from judgekit.llm.stage import Call, Stage
from judgekit.llm.store import Store, persisted_calls
from judgekit.llm.templates import TemplateLibrary
from judgekit.llm.types import (
    CallRecord,
    Identity,
    Sampling,
    StageResult,
    Usage,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)  # a stage's output model

__all__ = ["BATCH_PRICE", "Client", "ClientSettings", "RunOptions", "StageStats",
           "normalise_budget", "persisted_calls"]


# The client's settings are the run's operational options (declared once).
ClientSettings = RunOptions


_NO_IDENTITY = cast(Identity, {})  # (read only for a cassette: not worked out without one)
WORKERS_PER_SLOT = 2  # the pool's tasks per slot of a provider's concurrency limit
PREPARE_CHUNK = 256  # calls rendered, looked up and scheduled at a time by ``map``


class Client:
    """Runs stages against providers with caching, cassettes, retries and limits."""

    def __init__(self, settings: RunOptions | None = None, *,
                 templates: TemplateLibrary | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None,
                 providers: dict[str, Provider] | None = None) -> None:
        self.settings = s = (settings or RunOptions()).options()
        self.templates = templates or TemplateLibrary(user=s.prompts)
        self.retry = RetryPolicy(attempts=s.transport_attempts, backoff_base=s.backoff_base,
                                 max_wait=s.max_wait, sleep=sleep or asyncio.sleep,
                                 rng=random.Random())
        self.store = Store(cache_dir=s.cache_dir, use_cache=s.use_cache, cassette=s.cassette,
                           cassette_mode=s.cassette_mode, retry_failed=s.retry_failed)
        self.ledger = Ledger(s.max_failures, s.failure_budget_min_calls, s.execution)
        self.providers: dict[str, Provider] = dict(providers or {})
        for key, prov in self.providers.items():
            prov.bind(key)
        self._limits: dict[tuple[int, str], Limit] = {}
        # a key asked now -> the future its sharers wait on (made by the first of them)
        self._inflight: dict[str, asyncio.Future[CallRecord] | None] = {}
        self._given = set(self.providers)  # provider objects passed in need no package
        self._required: set[str] = set()
        # secret values scrubbed from every record: read from the environment once per
        # map (scanning it on every answer cost 0.07 ms a call)
        self._secrets: list[str] = self._secret_list()

    # Storage and statistics, as attributes (kept for existing callers).
    @property
    def cache(self) -> Any:
        return self.store.cache

    @property
    def cassette(self) -> Any:
        return self.store.cassette

    @property
    def claims(self) -> Any:
        return self.store.claims

    @property
    def stats(self) -> dict[str, StageStats]:
        return self.ledger.stats

    @property
    def failure_log(self) -> list[FailureEntry]:
        return self.ledger.failure_log

    @property
    def batches_submitted(self) -> int:
        return self.ledger.batches_submitted

    @property
    def batch_fallbacks(self) -> int:
        return self.ledger.batch_fallbacks

    def summary(self) -> dict[str, Any]:
        return self.ledger.summary()

    def calls(self) -> CallSummary:
        """The run's calls, as results file records them."""
        return self.ledger.calls()

    # ---- public API -------------------------------------------------------------
    async def run(self, stage: Stage[M], variables: Mapping[str, Any], *, model: str,
                  draw: int = 0, sampling: Sampling | None = None) -> StageResult[M]:
        """Run one structured call of ``stage`` and return its explicit result.

        Raises only for run-wide problems (:class:`RunAborted`, a missing key, a
        cassette miss in mode none, a bad template or model string).
        """
        t0 = asyncio.get_running_loop().time()
        self._secrets = self._secret_list()
        prep = self.prepare(stage, Call(variables, model, draw, sampling))
        st = self.ledger.stage(stage.name)
        st.calls += 1
        record, value, source = self.store.lookup(prep, stage)
        if record is None:
            record, source = await self.fetch(prep, stage)
            value = validated(record, stage)
        return self.finish(stage, prep, record, value, source, t0)

    def prepare(self, stage: Stage, call: Call) -> Prepared:
        """Render and identify one call (no I/O)."""
        return prepare(self.templates, self.provider(call.model), stage, call)

    def preflight(self, stages: Sequence[Stage], models: Sequence[str] = ()) -> None:
        """Check, before any call is paid, every template the run will use (syntax and
        names) and every model string (provider known, base URL valid)."""
        for stage in stages:
            self.templates.check(stage.template, stage.variables or None)
        for model in models:
            self.provider(model)
            if self.cassette is None or self.settings.cassette_mode == "all":
                self.require(model)  # else only a call that misses the cassette needs it

    def require(self, model: str) -> None:
        """The model's optional package is installed, else MissingDependencyError (a usage
        error naming the extra); checked once per model."""
        if model not in self._required and model not in self._given:
            from judgekit.llm.providers import check_requirements

            check_requirements(model, self.settings.base_urls.get(parse_model_string(model)[0]))
            self._required.add(model)

    def dry_run(self, stage: Stage, calls: Sequence[Call]) -> DryRun:
        """How many of ``calls`` are not yet answered, and what they would cost."""
        from judgekit.llm.dryrun import dry_run

        return dry_run(self.prepare, self.store.lookup, self.settings.execution == "batch",
                       stage, calls)

    def finish(self, stage: Stage[M], prep: Prepared, record: CallRecord, value: Any,
               source: str, t0: float, st: StageStats | None = None) -> StageResult[M]:
        """The call's result, counted in the ledger (and checked against the budget).
        Its ``elapsed_s`` is the wall time since ``t0`` for an answer asked now, 0 for a
        replayed one."""
        ok = value is not None
        replayed = source == "cache" or source == "cassette"
        result: StageResult[M] = StageResult(
            stage=stage.name, key=prep.key, ok=ok, value=value,
            raw=cast(str, record.get("text", "")),
            attempts=int(record.get("attempts", 0)), usage=Usage.from_dict(record.get("usage")),
            model=cast(str, record.get("model", "")), error=None if ok else record.get("error"),
            source=source, mean_token_entropy=record.get("mean_token_entropy"),
            kind=None if ok else (record.get("kind") or "parse"),
            elapsed_s=0.0 if replayed else asyncio.get_running_loop().time() - t0)
        if st is None:
            st = self.ledger.stage(stage.name)
        self.ledger.account(st, prep.model, result, record)
        self.ledger.check_budget(stage.name, st)
        return result

    async def map(self, stage: Stage[M], calls: Sequence[Call], *,
                  description: str | None = None) -> list[StageResult[M]]:
        """Run many calls of one stage concurrently, in order, with a progress bar.

        One call's failure is its result; a run-wide error cancels the rest and raises.
        """
        if not calls:
            return []
        if self.settings.dry_run:
            raise self.dry_run(stage, calls)
        if self.settings.execution != "online":  # batch services, Ray, vLLM's runner
            from judgekit.llm.batch import run_batch

            return await run_batch(self, stage, calls)
        results: list[StageResult[M] | None] = [None] * len(calls)

        def keep(i: int, result: StageResult[M]) -> None:
            results[i] = result
        await self.each(stage, calls, keep, description=description)
        return [r for r in results if r is not None]

    async def each(self, stage: Stage[M], calls: Iterable[Call],
                   sink: Callable[[int, StageResult[M]], None], *,
                   total: int | None = None, description: str | None = None) -> int:
        """Run many calls of one stage, handing each result to ``sink(index, result)``
        as it is ready (recorded answers in order, fresh ones as they arrive); returns
        how many calls there were.

        ``calls`` may be any iterable, read a chunk at a time: memory holds one chunk,
        the calls in flight (two per slot of the concurrency limit) and what ``sink``
        keeps, whatever the number of calls. ``sink`` runs on the event loop's thread: keep it
        quick (append to a file or a list), or the calls wait for it. One call's
        failure is its result; a run-wide error cancels the rest and raises. (Dry runs
        and batch execution need every call at once: give them a list, through
        :meth:`map`.)
        """
        if self.settings.dry_run or self.settings.execution != "online":
            listed = list(calls)
            for i, r in enumerate(await self.map(stage, listed, description=description)):
                sink(i, r)
            return len(listed)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        self._secrets = self._secret_list()
        st = self.ledger.stage(stage.name)
        if total is None and isinstance(calls, Sized):
            total = len(calls)
        names: set[str] = set()  # providers asked: each has its own concurrency limit
        with fewer_collections(), Progress(self.settings.progress,
                                           description or stage.name, total or 0, st) as tick:
            def serve(chunk: list[Call], lo: int) -> list[tuple[int, Prepared]]:
                """Prepare a chunk; hand on the answers recorded (in order); return the
                calls to ask."""
                ask: list[tuple[int, Prepared]] = []
                with unscanned() as block:  # a replayed chunk's results are kept
                    preps = prepare_many(self.templates, self.provider, stage, chunk)
                    st.calls += len(preps)
                    for i, prep, (record, value, source) in zip(
                            count(lo), preps, self.store.lookup_many(preps, stage)):
                        if record is None:
                            ask.append((i, prep))
                            names.add(prep.provider.name)
                        else:
                            sink(i, self.finish(stage, prep, record, value, source, t0, st))
                    block.freeze = not ask
                if len(ask) < len(preps):
                    tick(len(preps) - len(ask))
                return ask

            async def one(i: int, prep: Prepared) -> None:
                start = loop.time()
                record, source = await self.fetch(prep, stage)
                sink(i, self.finish(stage, prep, record, validated(record, stage), source,
                                    start))
                tick()

            # Workers: two per slot of each provider's limit, one asking while the other's
            # answer is written (more only wait for a slot: each such wait cost more than
            # it saved at 0 ms latency; fewer leave slots idle while answers are kept).
            # (nothing here refers to the pool: a replay makes no reference cycle)
            return await Pool(serve, one, chunk=PREPARE_CHUNK, size=lambda: WORKERS_PER_SLOT
                              * self.settings.concurrency * max(1, len(names))).drain(calls)

    def run_until_complete(self, coro: Awaitable[T]) -> T:
        """``asyncio.run(coro)``, closing this client's HTTP sessions however it ends
        (no "Unclosed client session" warnings after an error or Ctrl-C)."""
        # The result is handed back outside the task: on Python 3.11 asyncio.run formats
        # the finished task's repr (a signal-module quirk), result included, which cost
        # seconds for a chunk of 2,000 queries' results.
        box: list[T] = []

        async def go() -> None:
            try:
                box.append(await coro)
            finally:
                await self.aclose_providers()
        asyncio.run(go())
        return box[0]

    def run_sync(self, stage: Stage[M], variables: Mapping[str, Any], **kw: Any
                 ) -> StageResult[M]:
        return self.run_until_complete(self.run(stage, variables, **kw))

    def map_sync(self, stage: Stage[M], calls: Sequence[Call], **kw: Any
                 ) -> list[StageResult[M]]:
        return self.run_until_complete(self.map(stage, calls, **kw))

    async def aclose_providers(self) -> None:
        for p in self.providers.values():
            await p.aclose()

    def close(self) -> None:
        """Compact the cassette and close the cache. Safe to call twice."""
        self.store.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def provider(self, model: str) -> Provider:
        """The provider object for a model string (made once, then reused)."""
        p = self.providers.get(model)
        if p is None:
            prov_name, _ = parse_model_string(model)
            p = make_provider(model, self.settings.base_urls.get(prov_name))
            self.providers[model] = p
        return p

    def _secret_list(self) -> list[str]:
        """The secrets to scrub: the environment's, and any key in a configured base
        URL's query or password."""
        from judgekit.llm.secrets import url_secrets

        extra = {v for url in self.settings.base_urls.values() for v in url_secrets(url)}
        return sorted(set(secret_values()) | extra, key=len, reverse=True)

    # ---- one online call -------------------------------------------------------------
    def _limit(self, provider: Provider) -> Limit:
        loop_key = (id(asyncio.get_running_loop()), provider.name)
        sem = self._limits.get(loop_key)
        if sem is None:
            sem = self._limits[loop_key] = Limit(self.settings.concurrency)
        return sem

    async def fetch(self, prep: Prepared, stage: Stage) -> tuple[CallRecord, str]:
        """Ask the provider once per key, even when several callers ask at once; keep the
        answer. Returns (record, source)."""
        key = prep.key
        self.require(prep.model)
        inflight = self._inflight
        if key in inflight:  # asked by another caller now: share its answer
            shared = inflight[key]
            if shared is None:  # the first to share makes the future (most calls are alone)
                shared = inflight[key] = asyncio.get_running_loop().create_future()
            return await asyncio.shield(shared), "inflight"
        inflight[key] = None
        try:
            record, source = await self._claimed(prep, stage)
        except BaseException as exc:
            fut = inflight.pop(key, None)
            if fut is not None:
                fut.set_exception(exc)
                fut.exception()  # retrieved: no "never retrieved" warning if nobody waits
            raise
        fut = inflight.pop(key, None)
        if fut is not None:
            fut.set_result(record)
        return record, source

    async def _claimed(self, prep: Prepared, stage: Stage) -> tuple[CallRecord, str]:
        """The call inside the concurrency limit and the cross-process claim: at most
        `concurrency` claims are held at once, whatever the queue; the limit is freed as
        soon as the answer is in, and the claim once the answer is kept (its batch
        written), so another process waiting on it finds the answer."""
        limit = self._limit(prep.provider)
        await limit.acquire()
        held = True
        try:
            async with self.store.claim(prep.key) as waited:
                # Another process may have answered it since our lookup (it held the
                # claim, or finished just before we took it): use its answer.
                # the request's identity only for a cassette's journal (the cache is
                # keyed by the key alone): not worked out per call without one
                ident = prep.identity if self.store.cassette is not None else _NO_IDENTITY
                rec = self.store.recheck(prep.key, ident, stage, waited)
                if rec is not None:
                    return rec, "cache"
                if self.ledger.aborted is not None:
                    raise RunAborted(str(self.ledger.aborted))
                try:
                    req = request_for(prep, stage, prep.messages, self.settings.timeout)
                    record = scrub(await call_record(
                        prep.provider, req, stage, retry=self.retry,
                        parse_attempts=self.settings.max_parse_attempts,
                        deadline=self.settings.call_deadline), self._secrets)
                    if self.store.proven():  # else freed once kept: see Store.proven
                        held = False
                        limit.release()
                    await self.store.keep(prep.key, ident, record, self._secrets)
                except (RunAborted, JudgekitError) as exc:
                    self.ledger.aborted = exc
                    raise
            return record, "provider"
        finally:
            if held:
                limit.release()
