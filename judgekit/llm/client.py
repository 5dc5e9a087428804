"""The one client every stage goes through.

cassette -> cache -> per-provider concurrency limit -> provider call
-> transport retries (429/5xx/timeouts, Retry-After) -> parse and validate,
re-asking with the error up to ``max_parse_attempts`` times in total.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
)

from judgekit.errors import CassetteMissError, ProviderError
from judgekit.llm.cache import ResponseCache
from judgekit.llm.cassette import Cassette
from judgekit.llm.identity import identity_key, request_identity
from judgekit.llm.pricing import cost_usd
from judgekit.llm.providers import Provider, make_provider, parse_model_string
from judgekit.llm.secrets import scrub
from judgekit.llm.stage import Call, Stage
from judgekit.llm.structured import ParseFailure, parse_output
from judgekit.llm.templates import TemplateLibrary
from judgekit.llm.types import Completion, ProviderRequest, StageResult, Usage

log = logging.getLogger("judgekit.llm")

REASK = ("Your previous answer could not be used: {error}\n"
         "Answer again with only a JSON object that matches the required schema.")


@dataclass
class ClientSettings:
    """Operational settings. None of these enter the request identity."""

    cache_dir: str | Path | None = None
    use_cache: bool = True
    cassette: str | Path | None = None
    cassette_mode: str = "new"
    concurrency: int = 8
    timeout: float = 120.0
    transport_attempts: int = 6
    max_parse_attempts: int = 5
    backoff_base: float = 1.0
    max_wait: float = 60.0
    base_urls: dict[str, str] = field(default_factory=dict)
    progress: bool = True


@dataclass
class StageStats:
    calls: int = 0
    provider_calls: int = 0
    cached: int = 0
    failed: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    failures: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


class Client:
    """Runs stages against providers with caching, cassettes, retries and limits."""

    def __init__(self, settings: ClientSettings | None = None, *,
                 templates: TemplateLibrary | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        self.settings = settings or ClientSettings()
        self.templates = templates or TemplateLibrary()
        self._sleep = sleep or asyncio.sleep
        self.cache = ResponseCache(self.settings.cache_dir) if self.settings.use_cache else None
        self.cassette = (Cassette(self.settings.cassette, self.settings.cassette_mode)
                         if self.settings.cassette else None)
        if self.settings.cassette_mode == "none" and self.cassette is None:
            raise CassetteMissError("cassette mode none needs a cassette path")
        self._providers: dict[str, Provider] = {}
        self._limits: dict[tuple[int, str], asyncio.Semaphore] = {}
        self.stats: dict[str, StageStats] = {}

    # ---- public API -------------------------------------------------------------
    async def run(self, stage: Stage, variables: dict[str, Any], *, model: str, draw: int = 0,
                  sampling: dict[str, Any] | None = None) -> StageResult[Any]:
        """Run one structured call of ``stage`` and return its explicit result."""
        provider = self._provider(model)
        messages = self.templates.render(stage.template, variables)
        samp = {**stage.sampling, **(sampling or {})}
        identity = request_identity(
            provider=provider.name, model=provider.resolve_model(),
            base_url=provider.identity_base_url, messages=messages, sampling=samp,
            schema=stage.schema, template=stage.template,
            template_hash=self.templates.content_hash(stage.template), draw=draw,
        )
        key = identity_key(identity, stage.schema_json)
        st = self.stats.setdefault(stage.name, StageStats())
        st.calls += 1
        record, source = self._lookup(key, identity)
        if record is None:
            req = ProviderRequest(model=provider.resolve_model(), messages=messages,
                                  sampling=samp, schema=stage.schema, schema_name=stage.name,
                                  base_url=provider.base_url, timeout=self.settings.timeout,
                                  draw=draw)
            async with self._limit(provider):
                record = await self._structured(provider, req, stage)
            record = scrub(record)
            self._store(key, identity, record)
            source = "provider"
            st.provider_calls += 1
            st.attempts += record["attempts"]
        else:
            st.cached += 1
        result = self._result(stage, key, record, source)
        self._account(st, model, result)
        return result

    async def map(self, stage: Stage, calls: Sequence[Call], *,
                  description: str | None = None) -> list[StageResult[Any]]:
        """Run many calls of one stage concurrently, in order, with a progress bar."""
        if not calls:
            return []
        with _progress(self.settings.progress, description or stage.name, len(calls)) as tick:
            async def one(c: Call) -> StageResult[Any]:
                res = await self.run(stage, c.variables, model=c.model, draw=c.draw,
                                     sampling=c.sampling)
                tick()
                return res

            return list(await asyncio.gather(*(one(c) for c in calls)))

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
        """Write the cassette and the cache statistics. Safe to call twice."""
        if self.cassette is not None:
            self.cassette.save()
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summary(self) -> dict[str, Any]:
        stages = {name: s.as_dict() for name, s in self.stats.items()}
        total = sum(s.calls for s in self.stats.values())
        costs = [s.cost_usd for s in self.stats.values()]
        return {
            "total": total,
            "provider_calls": sum(s.provider_calls for s in self.stats.values()),
            "cached": sum(s.cached for s in self.stats.values()),
            "failed": sum(s.failed for s in self.stats.values()),
            "prompt_tokens": sum(s.prompt_tokens for s in self.stats.values()),
            "completion_tokens": sum(s.completion_tokens for s in self.stats.values()),
            "cost_usd": None if any(c is None for c in costs) else sum(c or 0 for c in costs),
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

    def _lookup(self, key: str, identity: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        cas, mode = self.cassette, self.settings.cassette_mode
        if cas is not None and mode != "all":
            rec = cas.get(key)
            if rec is not None:
                return rec, "cassette"
            if mode == "none":
                raise cas.miss_error(key, identity)
        if self.cache is not None and mode != "all":
            rec = self.cache.get(key)
            if rec is not None:
                if cas is not None:
                    cas.put(key, identity, rec)
                return rec, "cache"
        return None, "provider"

    def _store(self, key: str, identity: dict[str, Any], record: dict[str, Any]) -> None:
        if self.cache is not None:
            self.cache.set(key, record)
        if self.cassette is not None:
            self.cassette.put(key, identity, record)

    async def _structured(self, provider: Provider, req: ProviderRequest,
                          stage: Stage) -> dict[str, Any]:
        usage = Usage()
        state: dict[str, Any] = {"raw": "", "model": provider.resolve_model(), "attempts": 0,
                                 "error": None, "entropy": None}
        messages = list(req.messages)
        retrying = AsyncRetrying(stop=stop_after_attempt(self.settings.max_parse_attempts),
                                 retry=retry_if_exception_type(ParseFailure), sleep=self._sleep)
        parsed = None
        try:
            async for attempt in retrying:
                with attempt:
                    state["attempts"] += 1
                    comp = await self._transport(provider, _with_messages(req, messages))
                    usage.add(comp.usage)
                    state.update(raw=comp.text, model=comp.model or state["model"],
                                 entropy=comp.mean_token_entropy)
                    try:
                        parsed = parse_output(comp.text, stage.output)
                    except ParseFailure as exc:
                        state["error"] = str(exc)
                        messages = [*messages, {"role": "assistant", "content": comp.text},
                                    {"role": "user", "content": REASK.format(error=exc)}]
                        raise
        except RetryError:
            pass
        return {
            "ok": parsed is not None,
            "text": state["raw"],
            "parsed": parsed.model_dump(mode="json") if parsed is not None else None,
            "attempts": state["attempts"],
            "usage": usage.as_dict(),
            "model": state["model"],
            "error": None if parsed is not None else state["error"],
            "mean_token_entropy": state["entropy"],
        }

    async def _transport(self, provider: Provider, req: ProviderRequest) -> Completion:
        s = self.settings

        def wait(rs: Any) -> float:
            exc = rs.outcome.exception()
            if isinstance(exc, ProviderError) and exc.retry_after is not None:
                return float(min(exc.retry_after, s.max_wait))
            return float(min(s.backoff_base * 2 ** (rs.attempt_number - 1), s.max_wait))

        retrying = AsyncRetrying(stop=stop_after_attempt(s.transport_attempts), wait=wait,
                                 retry=retry_if_exception(provider.should_retry),
                                 sleep=self._sleep, reraise=True)
        async for attempt in retrying:
            with attempt:
                return await provider.generate(req)
        raise AssertionError("unreachable")  # pragma: no cover

    def _result(self, stage: Stage, key: str, rec: dict[str, Any],
                source: str) -> StageResult[Any]:
        value = stage.output.model_validate(rec["parsed"]) if rec.get("ok") else None
        u = rec.get("usage") or {}
        return StageResult(stage=stage.name, key=key, ok=bool(rec.get("ok")), value=value,
                           raw=rec.get("text", ""), attempts=int(rec.get("attempts", 0)),
                           usage=Usage(int(u.get("prompt_tokens", 0)),
                                       int(u.get("completion_tokens", 0))),
                           model=rec.get("model", ""), error=rec.get("error"), source=source,
                           mean_token_entropy=rec.get("mean_token_entropy"))

    def _account(self, st: StageStats, model: str, res: StageResult[Any]) -> None:
        if not res.ok:
            st.failed += 1
            st.failures.append({"key": res.key[:12], "attempts": res.attempts,
                                "error": res.error, "raw": res.raw[:300]})
        # Tokens count every result (a replay reports what the recorded calls used);
        # cost counts only what this run paid a provider for.
        st.prompt_tokens += res.usage.prompt_tokens
        st.completion_tokens += res.usage.completion_tokens
        if res.source != "provider":
            return
        c = cost_usd(model, res.usage.prompt_tokens, res.usage.completion_tokens)
        st.cost_usd = None if c is None or st.cost_usd is None else st.cost_usd + c


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
