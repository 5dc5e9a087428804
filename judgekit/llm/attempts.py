"""The attempts of one online call: transport retries and parse re-asks, under the
call's overall deadline; every per-call failure ends as a record, never an exception.

The first request is sent straight away: a retry loop (tenacity) is built only after
an attempt fails, because nearly every call succeeds at once and building two retry
objects per call cost more CPU than the rest of the call's bookkeeping.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable

from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
)

from judgekit.core.errors import JudgekitError, ProviderError, RunAborted
from judgekit.llm.calls import CallState, ParseFailure, Terminal, read_answer
from judgekit.llm.providers import Provider
from judgekit.llm.retry import RetryPolicy
from judgekit.llm.secrets import scrub_text
from judgekit.llm.stage import Stage
from judgekit.llm.types import CallRecord, Completion, ProviderRequest

__all__ = ["Deadline", "call_record", "resume_record", "with_messages"]


def call_record(provider: Provider, req: ProviderRequest, stage: Stage, *,
                retry: RetryPolicy, parse_attempts: int, deadline: float
                ) -> Awaitable[CallRecord]:
    """One call under the overall deadline; every per-call failure becomes a record. A
    run-wide provider error (bad key, no credit) raises :class:`RunAborted`. (To await:
    the coroutine of :func:`resume_record` itself, without one of its own.)"""
    return resume_record(provider, req, stage,
                         CallState(model=provider.resolve_model(), messages=list(req.messages)),
                         retry=retry, parse_attempts=parse_attempts, deadline=deadline)


async def resume_record(provider: Provider, req: ProviderRequest, stage: Stage,
                        state: CallState, *, retry: RetryPolicy, parse_attempts: int,
                        deadline: float) -> CallRecord:
    """:func:`call_record` for a call that has already seen ``state`` (answers given
    elsewhere, e.g. by a batch runner): ``req`` carries ``state.messages``, and at most
    ``parse_attempts`` more answers are asked for."""
    try:
        with Deadline(deadline):
            await _structured(provider, req, stage, state, retry, parse_attempts)
    except asyncio.TimeoutError:
        state.fail("timeout", f"no answer within the call deadline of {deadline:g}s")
    except Terminal as exc:
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


class _Watch:
    """Every call deadline of one event loop, checked by one timer every ``step``
    seconds while any is set: a timer of its own per call (``asyncio.timeout``) cost
    a tenth of a call's own work at 0 ms latency, most of it the loop's timer heap. A
    call may overrun its deadline by one step (a twentieth of it, at most a second)."""

    __slots__ = ("due", "step", "armed")  # not the loop: the registry is weak in it

    def __init__(self) -> None:
        self.due: dict[Deadline, float] = {}
        self.step = 1.0
        self.armed = False

    def add(self, loop: asyncio.AbstractEventLoop, entry: Deadline, seconds: float) -> None:
        self.due[entry] = loop.time() + seconds
        self.step = min(self.step, max(seconds / 20, 0.001))
        if not self.armed:
            self.armed = True
            loop.call_later(self.step, self._tick)

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for entry in [e for e, when in self.due.items() if when <= now]:
            del self.due[entry]
            entry.expire()
        if self.due:
            loop.call_later(self.step, self._tick)
        else:
            self.armed, self.step = False, 1.0


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch] = \
    weakref.WeakKeyDictionary()
# the last loop's watch, found without a lookup in the registry (a weak reference each)
_LAST: list = [lambda: None, None]  # [weak reference to the loop, its watch]


class Deadline:
    """``with Deadline(seconds)`` in a coroutine (or ``async with``): the block's task is
    cancelled once ``seconds`` have passed, and the cancellation comes out as
    :class:`asyncio.TimeoutError` (as ``asyncio.timeout`` does; a cancellation from
    outside stays one). Entering and leaving never wait, so no coroutine is needed."""

    __slots__ = ("seconds", "task", "fired", "watch")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False

    def expire(self) -> None:
        self.fired = True
        self.task.cancel()

    def __enter__(self) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        last_loop, watch = _LAST
        if last_loop() is not loop:  # another loop than the last call's (rare)
            got = _WATCHES.get(loop)
            if got is None:
                got = _WATCHES[loop] = _Watch()
            watch = got
            _LAST[:] = [weakref.ref(loop), watch]
        self.watch = watch
        watch.add(loop, self, self.seconds)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        self.watch.due.pop(self, None)
        if self.fired and kind is asyncio.CancelledError:
            uncancel = getattr(self.task, "uncancel", None)  # Python 3.11+
            if uncancel is None or uncancel() == 0:  # else cancelled from outside too
                raise asyncio.TimeoutError from exc

    async def __aenter__(self) -> None:  # ``async with`` too, as ``asyncio.timeout``
        self.__enter__()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: object) -> None:
        self.__exit__(kind, exc, tb)


async def _structured(provider: Provider, req: ProviderRequest, stage: Stage,
                      state: CallState, retry: RetryPolicy, parse_attempts: int) -> None:
    """Ask, and re-ask with the parse error while attempts remain."""
    state.attempts += 1  # the first request sent here (nearly every call needs no other)
    failed: Exception | None = None
    try:
        comp = await provider.generate(req)
    except Exception as exc:  # retried after the handler (no chained tracebacks)
        failed = exc
    if failed is not None:
        comp = await _retried(provider, req, state, retry, failed)
    try:
        read_answer(comp, stage, state)
        return
    except ParseFailure:
        if parse_attempts <= 1:
            state.fail("parse", state.error or "no valid answer")
            return
    retrying = AsyncRetrying(stop=stop_after_attempt(parse_attempts - 1),
                             retry=retry_if_exception_type(ParseFailure), sleep=retry.sleep)
    try:
        async for attempt in retrying:
            with attempt:
                comp = await _transport(provider, with_messages(req, state.messages), state,
                                        retry)
                read_answer(comp, stage, state)
    except RetryError:
        state.fail("parse", state.error or "no valid answer")


async def _transport(provider: Provider, req: ProviderRequest, state: CallState,
                     retry: RetryPolicy) -> Completion:
    """Send ``req``, retrying transient errors; every request sent counts as an attempt."""
    state.attempts += 1
    try:
        return await provider.generate(req)
    except Exception as exc:
        failed = exc
    return await _retried(provider, req, state, retry, failed)


async def _retried(provider: Provider, req: ProviderRequest, state: CallState,
                   retry: RetryPolicy, exc: Exception) -> Completion:
    """:func:`_transport` after its first request failed with ``exc``."""
    if retry.attempts <= 1 or not provider.should_retry(exc):
        raise exc
    await retry.sleep(retry.wait(1, exc))
    retrying = AsyncRetrying(
        stop=stop_after_attempt(retry.attempts - 1),
        # attempt k of this loop is the call's attempt k + 1
        wait=lambda rs: retry.wait(rs.attempt_number + 1,
                                   rs.outcome.exception() if rs.outcome else None),
        retry=retry_if_exception(provider.should_retry), sleep=retry.sleep, reraise=True)
    async for attempt in retrying:
        with attempt:
            state.attempts += 1
            return await provider.generate(req)
    raise AssertionError("unreachable")  # pragma: no cover


def with_messages(req: ProviderRequest, messages: list[dict[str, str]]) -> ProviderRequest:
    if messages is req.messages:
        return req
    return ProviderRequest(model=req.model, messages=messages, sampling=req.sampling,
                           schema=req.schema, schema_name=req.schema_name,
                           base_url=req.base_url, timeout=req.timeout, draw=req.draw)
