"""The one client every stage goes through.

cassette -> cache -> in-flight dedupe -> per-provider concurrency limit -> provider
call -> transport retries (408/409/425/429/5xx/529, resets, bad bodies, timeouts;
Retry-After honoured and capped; exponential backoff with full jitter) -> parse and
validate, re-asking with the error up to ``max_parse_attempts`` times in total;
all inside an overall per-call deadline.

Every call ends as a :class:`StageResult`: ok, or failed with a kind. ``map``
never raises for one call. Run-wide problems raise at once: a missing key,
401/403, an unknown model (404), a cassette miss in replay-only mode, and a
stage whose failures exceed the failure budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
)

from judgekit.errors import (
    CassetteMissError,
    ConfigError,
    DryRun,
    JudgekitError,
    ProviderError,
    RunAborted,
)
from judgekit.llm.cache import ResponseCache
from judgekit.llm.cassette import Cassette
from judgekit.llm.claims import Claims
from judgekit.llm.identity import identity_key, request_identity
from judgekit.llm.pricing import cost_usd
from judgekit.llm.providers import Provider, make_provider, parse_model_string
from judgekit.llm.secrets import clip, scrub, scrub_text
from judgekit.llm.stage import Call, Stage
from judgekit.llm.structured import ParseFailure, looks_like_refusal, parse_output
from judgekit.llm.templates import TemplateLibrary
from judgekit.llm.types import (
    ANSWER_FAILURES,
    FAILURE_KINDS,
    Completion,
    ProviderRequest,
    StageResult,
    Usage,
)

log = logging.getLogger("judgekit.llm")
T = TypeVar("T")

REASK = ("Your previous answer could not be used: {error}\n"
         "Answer again with only a JSON object that matches the required schema.")
EMPTY_REASK = ("Your previous answer was empty.\n"
               "Answer with only a JSON object that matches the required schema.")

BATCH_PRICE = 0.5

# Calls whose answers this process has stored (cache or cassette journal); the CLI
# reports it when a run is interrupted.
_persisted = [0]


def persisted_calls() -> int:
    return _persisted[0]


class _Terminal(Exception):
    """An answer that re-asking cannot fix (a refusal, a truncated answer)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class ClientSettings:
    """Operational settings. None of these enter the request identity.

    ``max_failures`` is the failure budget per stage: a whole number is a count, a
    fraction in (0, 1) a share of the stage's calls, checked once the stage has
    made ``failure_budget_min_calls`` calls; None disables it.
    """

    cache_dir: str | Path | None = None
    use_cache: bool = True
    cassette: str | Path | None = None
    cassette_mode: str = "new"
    concurrency: int = 8
    timeout: float = 120.0
    call_deadline: float = 600.0
    transport_attempts: int = 6
    max_parse_attempts: int = 5
    backoff_base: float = 1.0
    max_wait: float = 60.0
    max_failures: int | float | None = 0.25
    failure_budget_min_calls: int = 50
    base_urls: dict[str, str] = field(default_factory=dict)
    progress: bool = True
    execution: str = "online"  # online | batch (the providers' batch services)
    batch_fallback: str = "online"  # errored/expired batch requests: online | fail
    batch_poll_interval: float = 10.0
    batch_max_poll_interval: float = 300.0
    batch_max_requests: int | None = None  # below the provider's limit, e.g. for tests
    batch_stuck_deadline: float = 3600.0  # longest wait in cancelling / finalizing
    dry_run: bool = False  # price a stage's uncached calls, then stop before any is sent


@dataclass
class StageStats:
    calls: int = 0
    provider_calls: int = 0
    cached: int = 0
    failed: int = 0
    done: int = 0  # calls that have a result (calls counts those started)
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


class Client:
    """Runs stages against providers with caching, cassettes, retries and limits."""

    def __init__(self, settings: ClientSettings | None = None, *,
                 templates: TemplateLibrary | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None,
                 providers: dict[str, Provider] | None = None) -> None:
        self.settings = settings or ClientSettings()
        self.templates = templates or TemplateLibrary()
        self._sleep = sleep or asyncio.sleep
        self._jitter = random.Random()  # timing only: never changes an answer
        self.settings.max_failures = normalise_budget(self.settings.max_failures)
        self.cache = ResponseCache(self.settings.cache_dir) if self.settings.use_cache else None
        self.cassette = (Cassette(self.settings.cassette, self.settings.cassette_mode)
                         if self.settings.cassette else None)
        if self.settings.cassette_mode == "none" and self.cassette is None:
            raise CassetteMissError("cassette mode none needs a cassette path")
        self._providers: dict[str, Provider] = dict(providers or {})
        self._limits: dict[tuple[int, str], asyncio.Semaphore] = {}
        self._inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.stats: dict[str, StageStats] = {}
        self.failure_log: list[dict[str, Any]] = []
        self._aborted: BaseException | None = None  # a run-wide error: no new calls start
        if self.settings.execution not in ("online", "batch"):
            raise ConfigError(f"execution {self.settings.execution!r} is not online or batch")
        if self.settings.batch_fallback not in ("online", "fail"):
            raise ConfigError(f"batch_fallback {self.settings.batch_fallback!r} is not online "
                              "or fail")
        self.batches_submitted = 0
        self.batch_requests_submitted = 0
        self.batch_fallbacks = 0
        self.batch_notices: set[str] = set()  # models told once that they run online
        self.claims = _claims_for(self.cache, self.cassette)

    # ---- public API -------------------------------------------------------------
    async def run(self, stage: Stage, variables: dict[str, Any], *, model: str, draw: int = 0,
                  sampling: dict[str, Any] | None = None) -> StageResult[Any]:
        """Run one structured call of ``stage`` and return its explicit result.

        Raises only for run-wide problems (:class:`RunAborted`, a missing key, a
        cassette miss in mode none, a bad template or model string).
        """
        t0 = asyncio.get_running_loop().time()
        prep = self._prepare(stage, Call(variables, model, draw, sampling))
        st = self.stats.setdefault(stage.name, StageStats())
        st.calls += 1
        record, value, source = self._lookup(prep.key, prep.identity, stage)
        if record is None:
            record, source = await self._fetch(prep.key, prep.identity, prep.provider, stage,
                                               prep.messages, prep.sampling, draw)
            value = _validated(record, stage)
        return self._finish(stage, st, prep, record, value, source, t0)

    def preflight(self, stages: Sequence[Stage], models: Sequence[str] = ()) -> None:
        """Check, before any call is paid, every template the run will use (syntax and
        names) and every model string (provider known, base URL valid)."""
        for stage in stages:
            self.templates.check(stage.template, stage.variables or None)
        for model in models:
            self._provider(model)

    def _dry_run(self, stage: Stage, calls: Sequence[Call]) -> DryRun:
        """How many of ``calls`` are not yet answered, and what they would cost: prompt
        tokens estimated at 4 characters a token, completions at their max_tokens."""
        misses: dict[str, _Prepared] = {}
        for call in calls:
            p = self._prepare(stage, call)
            if p.key not in misses and self._lookup(p.key, p.identity, stage)[0] is None:
                misses[p.key] = p
        by_model: dict[str, list[int]] = {}
        for p in misses.values():
            prompt = sum(len(m["content"]) for m in p.messages) // 4
            completion = int(p.sampling.get("max_tokens") or 1024)
            tot = by_model.setdefault(p.model, [0, 0, 0])
            tot[0] += 1
            tot[1] += prompt
            tot[2] += completion
        parts = []
        batch = self.settings.execution == "batch"
        for model, (n, pt, ct) in sorted(by_model.items()):
            usd = cost_usd(model, pt, ct)
            price = "unknown price" if usd is None else \
                f"about ${usd * (BATCH_PRICE if batch else 1.0):.2f}"
            parts.append(f"{n} call(s) to {model}: ~{pt} prompt tokens, <= {ct} completion "
                         f"tokens, {price}{' at the batch price' if batch else ''}")
        answered = len(calls) - len(misses)
        what = "; ".join(parts) or "nothing: every call is already answered"
        return DryRun(f"dry run, stage {stage.name}: {what} ({answered} of {len(calls)} "
                      "already answered in the cache or cassette). Nothing was sent; later "
                      "stages depend on this one's answers and are not priced.")

    def _prepare(self, stage: Stage, call: Call) -> _Prepared:
        """Render and identify one call (no I/O)."""
        provider = self._provider(call.model)
        messages = self.templates.render(stage.template, call.variables)
        samp = {**stage.sampling, **(call.sampling or {})}
        identity = request_identity(
            provider=provider.name, model=provider.resolve_model(),
            base_url=provider.identity_base_url, messages=messages, sampling=samp,
            schema=stage.schema, template=stage.template,
            template_hash=self.templates.content_hash(stage.template), draw=call.draw,
        )
        return _Prepared(call.model, provider, messages, samp, identity,
                         identity_key(identity, stage.schema_json), call.draw)

    def _finish(self, stage: Stage, st: StageStats, prep: _Prepared, record: dict[str, Any],
                value: Any, source: str, t0: float) -> StageResult[Any]:
        if source in ("provider", "batch"):
            st.provider_calls += 1
            st.attempts += record["attempts"]
        else:
            st.cached += 1
        result = self._result(stage, prep.key, record, value, source)
        result.elapsed_s = asyncio.get_running_loop().time() - t0
        self._account(st, prep.model, result, record)
        self._check_budget(stage.name, st)
        return result

    async def map(self, stage: Stage, calls: Sequence[Call], *,
                  description: str | None = None) -> list[StageResult[Any]]:
        """Run many calls of one stage concurrently, in order, with a progress bar.

        One call's failure is its result; a run-wide error cancels the rest and raises.
        """
        if not calls:
            return []
        if self.settings.dry_run:
            raise self._dry_run(stage, calls)
        if self.settings.execution == "batch":
            from judgekit.llm.batch import run_batch

            return await run_batch(self, stage, calls)
        with _progress(self.settings.progress, description or stage.name, len(calls)) as tick:
            async def one(c: Call) -> StageResult[Any]:
                res = await self.run(stage, c.variables, model=c.model, draw=c.draw,
                                     sampling=c.sampling)
                tick()
                return res

            tasks = [asyncio.ensure_future(one(c)) for c in calls]
            try:
                done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            except BaseException:  # cancelled from outside (Ctrl-C): stop every call
                await _cancel(tasks)
                raise
            if pending:
                await _cancel(list(pending))
            errors = [t.exception() for t in tasks if t.done() and not t.cancelled()
                      and t.exception() is not None]
            if errors:
                raise errors[0]  # type: ignore[misc]
            return [t.result() for t in tasks]

    def run_until_complete(self, coro: Awaitable[T]) -> T:
        """``asyncio.run(coro)``, closing this client's HTTP sessions however it ends
        (no "Unclosed client session" warnings after an error or Ctrl-C)."""
        async def go() -> T:
            try:
                return await coro
            finally:
                await self.aclose_providers()
        return asyncio.run(go())

    def run_sync(self, stage: Stage, variables: dict[str, Any], **kw: Any) -> StageResult[Any]:
        async def go() -> StageResult[Any]:
            try:
                return await self.run(stage, variables, **kw)
            finally:
                await self.aclose_providers()
        return asyncio.run(go())

    def map_sync(self, stage: Stage, calls: Sequence[Call], **kw: Any) -> list[StageResult[Any]]:
        async def go() -> list[StageResult[Any]]:
            try:
                return await self.map(stage, calls, **kw)
            finally:
                await self.aclose_providers()
        return asyncio.run(go())

    async def aclose_providers(self) -> None:
        for p in self._providers.values():
            await p.aclose()

    def close(self) -> None:
        """Compact the cassette and close the cache. Safe to call twice."""
        if self.cassette is not None:
            self.cassette.save()
        if self.cache is not None:
            self.cache.close()
            self.cache = None
        if self.claims is not None:
            self.claims.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summary(self) -> dict[str, Any]:
        stages = {name: s.as_dict() for name, s in self.stats.items()}
        total = sum(s.calls for s in self.stats.values())
        costs = [s.cost_usd for s in self.stats.values()]
        by_kind: dict[str, int] = {}
        for s in self.stats.values():
            for k, n in s.failed_by_kind.items():
                by_kind[k] = by_kind.get(k, 0) + n
        return {
            "total": total,
            "provider_calls": sum(s.provider_calls for s in self.stats.values()),
            "cached": sum(s.cached for s in self.stats.values()),
            "failed": sum(s.failed for s in self.stats.values()),
            "failed_by_kind": dict(sorted(by_kind.items())),
            "prompt_tokens": sum(s.prompt_tokens for s in self.stats.values()),
            "completion_tokens": sum(s.completion_tokens for s in self.stats.values()),
            "cost_usd": None if any(c is None for c in costs) else sum(c or 0 for c in costs),
            "execution": self.settings.execution,
            "batches_submitted": self.batches_submitted,
            "batch_fallbacks": self.batch_fallbacks,
            "stages": stages,
        }

    # ---- internals ----------------------------------------------------------------
    def _provider(self, model: str) -> Provider:
        p = self._providers.get(model)
        if p is None:
            prov_name, _ = parse_model_string(model)
            p = make_provider(model, self.settings.base_urls.get(prov_name))
            self._providers[model] = p
        return p

    def _limit(self, provider: Provider) -> asyncio.Semaphore:
        loop_key = (id(asyncio.get_running_loop()), provider.name)
        sem = self._limits.get(loop_key)
        if sem is None:
            sem = self._limits[loop_key] = asyncio.Semaphore(self.settings.concurrency)
        return sem

    def _lookup(self, key: str, identity: dict[str, Any], stage: Stage
                ) -> tuple[dict[str, Any] | None, Any, str]:
        """A recorded answer that still fits the stage's output model, or a miss."""
        cas, mode = self.cassette, self.settings.cassette_mode
        if cas is not None and mode != "all":
            rec = cas.get(key)
            if rec is not None:
                why, value = _check_record(rec, stage)
                if why is None and (rec["ok"] or mode == "none"):
                    return rec, value, "cassette"
                if mode == "none":
                    raise cas.miss_error(key, identity, why=why)
                if why:
                    log.warning("judgekit: cassette entry %s is re-recorded: %s", key[:12], why)
                cas.forget(key)
            elif mode == "none":
                raise cas.miss_error(key, identity)
        if self.cache is not None and mode != "all":
            rec = self.cache.get(key)
            if rec is not None:
                why, value = _check_record(rec, stage)
                why = why or (None if rec.get("ok") else "a failed call")
                if why is None:
                    if cas is not None:
                        cas.put(key, identity, rec)
                    return rec, value, "cache"
                log.warning("judgekit: cached answer %s is not used (%s); calling the "
                            "provider again", key[:12], why)
        return None, None, "provider"

    async def _fetch(self, key: str, identity: dict[str, Any], provider: Provider,
                     stage: Stage, messages: list[dict[str, str]], samp: dict[str, Any],
                     draw: int) -> tuple[dict[str, Any], str]:
        """Call the provider once per key, even when several callers ask at once."""
        shared = self._inflight.get(key)
        if shared is not None:
            return await asyncio.shield(shared), "inflight"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            async with self._claim(key) as waited:
                if self.claims is not None:
                    # Another process may have answered it since our lookup (it held the
                    # claim, or finished just before we took it): use its answer.
                    rec = self._recheck(key, identity, stage, waited)
                    if rec is not None:
                        fut.set_result(rec)
                        return rec, "cache"
                req = ProviderRequest(model=provider.resolve_model(), messages=messages,
                                      sampling=samp, schema=stage.schema,
                                      schema_name=stage.name, base_url=provider.base_url,
                                      timeout=self.settings.timeout, draw=draw)
                async with self._limit(provider):
                    if self._aborted is not None:
                        raise RunAborted(str(self._aborted))
                    try:
                        record = await self._call(provider, req, stage)
                        record = scrub(record)
                        self._store(key, identity, record)
                    except (RunAborted, JudgekitError) as exc:
                        self._aborted = exc
                        raise
            fut.set_result(record)
            return record, "provider"
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: no "never retrieved" warning when nobody shares it
            raise
        finally:
            self._inflight.pop(key, None)

    def _claim(self, key: str) -> Any:
        if self.claims is None:
            return contextlib.nullcontext(False)
        return self.claims.hold(key)

    def _recheck(self, key: str, identity: dict[str, Any], stage: Stage, waited: bool
                 ) -> dict[str, Any] | None:
        """Another process's stored answer, if it fits: the cache is checked always (one
        read), the cassette journal only after waiting on that process's claim."""
        rec = self.cache.peek(key) if self.cache is not None else None
        if rec is None and waited and self.cassette is not None:
            rec = self.cassette.refresh(key)
        if rec is None or _check_record(rec, stage)[0] is not None or not rec.get("ok"):
            return None
        if self.cassette is not None and key not in self.cassette.entries:
            self.cassette.put(key, identity, rec)
        return rec

    async def _call(self, provider: Provider, req: ProviderRequest,
                    stage: Stage) -> dict[str, Any]:
        """One call under the overall deadline; every per-call failure becomes a record."""
        state = _CallState(model=provider.resolve_model(), messages=list(req.messages))
        try:
            await asyncio.wait_for(self._structured(provider, req, stage, state),
                                   self.settings.call_deadline)
        except asyncio.TimeoutError:
            state.fail("timeout", f"no answer within the call deadline of "
                                  f"{self.settings.call_deadline:g}s")
        except _Terminal as exc:
            state.fail(exc.kind, str(exc))
        except ProviderError as exc:
            if exc.fatal:
                raise RunAborted(scrub_text(str(exc))) from None
            state.fail(exc.kind, str(exc))
        except JudgekitError:
            raise
        except Exception as exc:  # a provider's unexpected error is this call's failure
            state.fail("transport", f"{type(exc).__name__}: {exc}")
        return state.record()

    async def _structured(self, provider: Provider, req: ProviderRequest, stage: Stage,
                          state: _CallState) -> None:
        retrying = AsyncRetrying(stop=stop_after_attempt(self.settings.max_parse_attempts),
                                 retry=retry_if_exception_type(ParseFailure), sleep=self._sleep)
        try:
            async for attempt in retrying:
                with attempt:
                    comp = await self._transport(provider, _with_messages(req, state.messages),
                                                 state)
                    state.answer(comp)
                    if comp.refusal is not None or comp.finish_reason == "refusal":
                        raise _Terminal("refusal", f"the model refused: "
                                                   f"{clip(comp.refusal or comp.text, 300)}")
                    try:
                        state.parsed = parse_output(comp.text, stage.output)
                    except ParseFailure as exc:
                        if comp.finish_reason == "length":
                            raise _Terminal("truncated", "the answer was cut off at the token "
                                            f"limit and does not parse: {exc}") from None
                        if looks_like_refusal(comp.text):
                            # A plain-text refusal: asking again pays for the same answer.
                            raise _Terminal("refusal", "the model refused in plain text: "
                                            f"{clip(comp.text, 300)}") from None
                        state.error = str(exc)
                        state.messages = _reask(state.messages, comp.text, str(exc))
                        raise
        except RetryError:
            state.fail("parse", state.error or "no valid answer")

    async def _transport(self, provider: Provider, req: ProviderRequest,
                         state: _CallState) -> Completion:
        """Send ``req``, retrying transient errors; every request sent counts as an attempt."""
        s = self.settings

        def wait(rs: Any) -> float:
            exc = rs.outcome.exception()
            if isinstance(exc, ProviderError) and exc.retry_after is not None:
                return float(min(exc.retry_after, s.max_wait))
            # Exponential backoff with full jitter: callers that failed together
            # do not come back together.
            cap = min(s.backoff_base * 2 ** (rs.attempt_number - 1), s.max_wait)
            return self._jitter.uniform(0.0, cap)

        retrying = AsyncRetrying(stop=stop_after_attempt(s.transport_attempts), wait=wait,
                                 retry=retry_if_exception(provider.should_retry),
                                 sleep=self._sleep, reraise=True)
        async for attempt in retrying:
            with attempt:
                state.attempts += 1
                return await provider.generate(req)
        raise AssertionError("unreachable")  # pragma: no cover

    def _store(self, key: str, identity: dict[str, Any], record: dict[str, Any]) -> None:
        """Answers go to the cache; the model's own failures (parse, refusal, truncated)
        only to the cassette so a replay reproduces them; transport failures nowhere."""
        stored = False
        if record["ok"] and self.cache is not None:
            was = self.cache.available
            self.cache.set(key, record)
            stored = self.cache.available
            if was and not stored and self.cassette is None:
                raise RunAborted(
                    f"the response cache at {self.cache.directory} can no longer be written "
                    "(see the warning above); stopping so no more calls are paid for without "
                    "being kept. Answers stored before are kept; fix the disk and rerun.")
        if self.cassette is not None and (record["ok"] or record.get("kind") in ANSWER_FAILURES):
            self.cassette.put(key, identity, record)
            stored = True
        _persisted[0] += stored

    def _result(self, stage: Stage, key: str, rec: dict[str, Any], value: Any,
                source: str) -> StageResult[Any]:
        ok = value is not None
        return StageResult(stage=stage.name, key=key, ok=ok, value=value,
                           raw=rec.get("text", ""), attempts=int(rec.get("attempts", 0)),
                           usage=Usage.from_dict(rec.get("usage")),
                           model=rec.get("model", ""), error=None if ok else rec.get("error"),
                           source=source, mean_token_entropy=rec.get("mean_token_entropy"),
                           kind=None if ok else (rec.get("kind") or "parse"))

    def _account(self, st: StageStats, model: str, res: StageResult[Any],
                 rec: dict[str, Any]) -> None:
        st.done += 1
        if not res.ok:
            kind = res.kind or "parse"
            st.failed += 1
            st.failed_by_kind[kind] = st.failed_by_kind.get(kind, 0) + 1
            st.failures.append({"key": res.key[:12], "kind": kind, "attempts": res.attempts,
                                "error": res.error, "raw": clip(res.raw, 300)})
            self.failure_log.append({"stage": res.stage, "key": res.key, "kind": kind,
                                     "model": model, "attempts": res.attempts,
                                     "error": res.error, "source": res.source,
                                     "transcript": rec.get("transcript")})
        # Tokens count every result (a replay reports what the recorded calls used);
        # cost counts only what this run paid a provider for.
        st.prompt_tokens += res.usage.prompt_tokens
        st.completion_tokens += res.usage.completion_tokens
        if res.source not in ("provider", "batch"):
            return
        u = res.usage
        c = cost_usd(model, u.prompt_tokens, u.completion_tokens, u.cache_write_tokens,
                     u.cache_read_tokens)
        if c is not None and res.source == "batch":
            c *= BATCH_PRICE  # the providers' batch services bill half the online price
        st.cost_usd = None if c is None or st.cost_usd is None else st.cost_usd + c

    def _check_budget(self, stage: str, st: StageStats) -> None:
        budget = self.settings.max_failures
        if budget is None or st.failed == 0:
            return
        if isinstance(budget, int):
            over = st.failed > budget
            what = f"{st.failed} failed calls (budget {budget})"
        else:
            over = st.done >= self.settings.failure_budget_min_calls and \
                st.failed > budget * st.done
            what = (f"{st.failed} of {st.done} calls failed ({st.failed / st.done:.0%}, "
                    f"budget {budget:.0%})")
        if over:
            self._aborted = RunAborted(f"stage {stage} spent its failure budget")
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(st.failed_by_kind.items()))
            last = st.failures[-1]["error"] if st.failures else ""
            raise RunAborted(
                f"stage {stage}: {what}: {kinds}; stopping so a broken prompt or endpoint "
                f"does not pay for every item (last error: {clip(str(last), 200)}); "
                "fix it and rerun (answers so far are kept), or raise max_failures")


@dataclass
class _Prepared:
    model: str
    provider: Provider
    messages: list[dict[str, str]]
    sampling: dict[str, Any]
    identity: dict[str, Any]
    key: str
    draw: int


@dataclass
class _CallState:
    """What one call has seen so far: kept when it fails, for the failure log."""

    model: str
    messages: list[dict[str, str]]
    attempts: int = 0
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    entropy: float | None = None
    parsed: Any = None
    error: str | None = None
    kind: str | None = None

    def answer(self, comp: Completion) -> None:
        self.usage.add(comp.usage)
        self.raw, self.entropy = comp.text, comp.mean_token_entropy
        self.model = comp.model or self.model

    def fail(self, kind: str, error: str) -> None:
        assert kind in FAILURE_KINDS
        self.parsed, self.kind, self.error = None, kind, scrub_text(error)

    def record(self) -> dict[str, Any]:
        ok = self.parsed is not None and self.kind is None
        rec = {
            "ok": ok,
            "text": self.raw,
            "parsed": self.parsed.model_dump(mode="json") if ok else None,
            "attempts": self.attempts,
            "usage": self.usage.as_dict(),
            "model": self.model,
            "error": None if ok else (self.error or "no valid answer"),
            "mean_token_entropy": self.entropy,
        }
        if not ok:
            rec["kind"] = self.kind or "parse"
            rec["transcript"] = self.messages
        return rec


def _claims_for(cache: ResponseCache | None, cassette: Cassette | None) -> Claims | None:
    """Claims live beside the storage runs share: the cache, else the cassette."""
    if cache is not None and cache.available:
        return Claims(cache.directory / "inflight")
    if cassette is not None and cassette.mode != "none":
        return Claims(cassette.path.with_name(f".{cassette.path.name}.inflight"))
    return None


def normalise_budget(budget: Any) -> int | float | None:
    """A failure budget as a count (int >= 0), a fraction in (0, 1), or None."""
    if budget is None:
        return None
    if isinstance(budget, (int, float)) and not isinstance(budget, bool) \
            and math.isfinite(budget) and budget >= 0:
        if 0 < budget < 1:
            return float(budget)
        if budget == int(budget):
            return int(budget)
    raise ConfigError(f"max_failures {budget!r} must be a whole number of calls, a fraction "
                      "between 0 and 1 (e.g. 0.25), or null for no budget")


def _check_record(rec: dict[str, Any], stage: Stage) -> tuple[str | None, Any]:
    """(why a recorded answer cannot be served for ``stage`` now, or None; its value,
    validated once against the stage's current output model)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("ok"), bool):
        return "the record is malformed", None
    if not rec["ok"]:
        return None, None
    try:
        return None, stage.output.model_validate(rec.get("parsed"))
    except ValidationError as exc:
        from judgekit.errors import describe_validation

        return (f"its parsed value no longer fits {stage.output.__name__}: "
                f"{describe_validation(exc)}"), None


def _validated(rec: dict[str, Any], stage: Stage) -> Any:
    if not rec.get("ok"):
        return None
    return stage.output.model_validate(rec["parsed"])


def _reask(messages: list[dict[str, str]], text: str, error: str) -> list[dict[str, str]]:
    """Messages for a re-ask. An empty answer is never sent back as an empty assistant
    turn (Anthropic rejects it); the request is repeated with the note appended."""
    if text.strip():
        return [*messages, {"role": "assistant", "content": text},
                {"role": "user", "content": REASK.format(error=error)}]
    last = messages[-1]
    if last["role"] == "user":
        note = EMPTY_REASK if EMPTY_REASK not in last["content"] else ""
        return [*messages[:-1], {"role": "user",
                                 "content": last["content"] + ("\n\n" + note if note else "")}]
    return [*messages, {"role": "user", "content": EMPTY_REASK}]


async def _cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _with_messages(req: ProviderRequest, messages: list[dict[str, str]]) -> ProviderRequest:
    if messages is req.messages:
        return req
    return ProviderRequest(model=req.model, messages=messages, sampling=req.sampling,
                           schema=req.schema, schema_name=req.schema_name,
                           base_url=req.base_url, timeout=req.timeout, draw=req.draw)


class _progress:
    """A rich progress bar on a terminal; a no-op elsewhere (CI, pipes, benchmarks)."""

    def __init__(self, enabled: bool, description: str, total: int) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.description, self.total = description, total

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        from rich.progress import Progress

        self.bar = Progress(transient=True)
        self.bar.start()
        task = self.bar.add_task(self.description, total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.stop()
