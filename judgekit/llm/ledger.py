"""What a client's calls cost and how they ended: per-stage statistics, the failure
log, the failure budget, cost (batch calls at the batch price) and the batch counters.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from judgekit.core.calls import CallSummary, StageCalls
from judgekit.core.errors import RunAborted
from judgekit.core.jsontypes import JSONObject
from judgekit.core.options import normalise_budget
from judgekit.llm.pricing import cost_usd
from judgekit.llm.secrets import clip
from judgekit.llm.types import CallRecord, Message, StageResult

BATCH_PRICE = 0.5  # the providers' batch services bill half the online price

__all__ = ["BATCH_PRICE", "CallSummary", "Ledger", "Progress", "StageCalls", "StageStats",
           "normalise_budget"]


class StageFailure(TypedDict):
    """A failed call as a stage's statistics list it (key shortened, raw clipped)."""

    key: str
    kind: str
    attempts: int
    error: str | None
    raw: str


class FailureEntry(TypedDict):
    """A failed call in the run's failure log (a line of failures.jsonl)."""

    stage: str
    key: str
    kind: str
    model: str | None
    attempts: int
    error: str | None
    source: str
    transcript: list[Message] | None


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
    failures: list[StageFailure] = field(default_factory=list)

    def as_dict(self) -> JSONObject:
        return {k: v for k, v in self.__dict__.items()}


class Ledger:
    """Statistics of every stage a client ran, and its failure log."""

    def __init__(self, max_failures: int | float | None = 0.25, min_calls: int = 50,
                 execution: str = "online") -> None:
        self.max_failures = normalise_budget(max_failures)
        self.min_calls = min_calls
        self.execution = execution
        self.stats: dict[str, StageStats] = {}
        self.failure_log: list[FailureEntry] = []
        self.batches_submitted = 0
        self.batch_requests_submitted = 0
        self.batch_fallbacks = 0
        self.batch_notices: set[str] = set()  # models told once that they run online
        self.aborted: BaseException | None = None  # a run-wide error: no new calls start

    def stage(self, name: str) -> StageStats:
        st = self.stats.get(name)
        if st is None:
            st = self.stats[name] = StageStats()
        return st

    def log_failure(self, entry: FailureEntry) -> None:
        self.failure_log.append(entry)

    def account(self, st: StageStats, model: str, res: StageResult[Any],
                rec: CallRecord) -> None:
        """Count one finished call: source, tokens, cost, failure."""
        if res.source in ("provider", "batch"):
            st.provider_calls += 1
            st.attempts += int(rec.get("attempts", 0))
        else:
            st.cached += 1
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
        u = res.usage
        st.prompt_tokens += u.prompt_tokens
        st.completion_tokens += u.completion_tokens
        if res.source not in ("provider", "batch"):
            return
        c = cost_usd(model, u.prompt_tokens, u.completion_tokens, u.cache_write_tokens,
                     u.cache_read_tokens)
        if c is not None and res.source == "batch" and self.execution == "batch":
            c *= BATCH_PRICE
        st.cost_usd = None if c is None or st.cost_usd is None else st.cost_usd + c

    def check_budget(self, stage: str, st: StageStats) -> None:
        """Raise :class:`RunAborted` once a stage's failures exceed the budget."""
        budget = self.max_failures
        if budget is None or st.failed == 0:
            return
        if isinstance(budget, int):
            over = st.failed > budget
            what = f"{st.failed} failed calls (budget {budget})"
        else:
            over = st.done >= self.min_calls and st.failed > budget * st.done
            what = (f"{st.failed} of {st.done} calls failed ({st.failed / st.done:.0%}, "
                    f"budget {budget:.0%})")
        if over:
            self.aborted = RunAborted(f"stage {stage} spent its failure budget")
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(st.failed_by_kind.items()))
            last = st.failures[-1]["error"] if st.failures else ""
            raise RunAborted(
                f"stage {stage}: {what}: {kinds}; stopping so a broken prompt or endpoint "
                f"does not pay for every item (last error: {clip(str(last), 200)}); "
                "fix it and rerun (answers so far are kept), or raise max_failures")

    def calls(self) -> CallSummary:
        """Every stage's calls in the shape results file records."""
        fields = StageCalls.model_fields
        stages = {name: StageCalls(**{k: getattr(s, k) for k in fields})
                  for name, s in self.stats.items()}
        d = self.summary()
        return CallSummary(total=d["total"], provider_calls=d["provider_calls"],
                           cached=d["cached"], failed=d["failed"],
                           attempts=sum(x.attempts for x in stages.values()),
                           prompt_tokens=d["prompt_tokens"],
                           completion_tokens=d["completion_tokens"], cost_usd=d["cost_usd"],
                           failed_by_kind=d["failed_by_kind"], per_stage=stages)

    def summary(self) -> JSONObject:
        stats = self.stats.values()
        costs = [s.cost_usd for s in stats]
        by_kind: dict[str, int] = {}
        for s in stats:
            for k, n in s.failed_by_kind.items():
                by_kind[k] = by_kind.get(k, 0) + n
        return {
            "total": sum(s.calls for s in stats),
            "provider_calls": sum(s.provider_calls for s in stats),
            "cached": sum(s.cached for s in stats),
            "failed": sum(s.failed for s in stats),
            "failed_by_kind": dict(sorted(by_kind.items())),
            "prompt_tokens": sum(s.prompt_tokens for s in stats),
            "completion_tokens": sum(s.completion_tokens for s in stats),
            "cost_usd": None if any(c is None for c in costs) else sum(c or 0 for c in costs),
            "execution": self.execution,
            "batches_submitted": self.batches_submitted,
            "batch_fallbacks": self.batch_fallbacks,
            "stages": {name: s.as_dict() for name, s in self.stats.items()},
        }


class Progress:
    """Progress of one stage: on a terminal a rich bar with the count, elapsed time, tokens
    and cost; elsewhere (CI, pipes) a plain line every ``interval`` seconds and one at the
    end, so a long run is never silent and a short one adds nothing."""

    def __init__(self, enabled: bool, description: str, total: int,
                 stats: StageStats | None = None, interval: float = 10.0) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.description, self.total, self.stats = description, total, stats
        self.interval = interval
        self.done = 0
        self.lines = 0

    def status(self) -> str:
        st = self.stats
        if st is None:
            return ""
        tokens = st.prompt_tokens + st.completion_tokens
        cost = "" if not st.cost_usd else f", ${st.cost_usd:.4f}"
        cached = f", {st.cached} cached" if st.cached else ""
        failed = f", {st.failed} failed" if st.failed else ""
        return f"{tokens:,} tokens{cost}{cached}{failed}"

    def __enter__(self) -> Callable[..., None]:
        """A ``tick(n=1)`` that counts ``n`` more calls done."""
        import time

        self.t0 = self.last = time.monotonic()
        if not self.enabled:
            return lambda n=1: None
        if not self.tty:
            def line(n: int = 1) -> None:
                self.done += n
                now = time.monotonic()
                if now - self.last >= self.interval:
                    self.last = now
                    self._print(now)
            return line
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("{task.fields[status]}"),
                       transient=True)
        self.bar.start()
        task = self.bar.add_task(self.description, total=self.total, status="")

        def tick(n: int = 1) -> None:
            self.bar.update(task, advance=n, status=self.status())
        return tick

    def _print(self, now: float) -> None:
        self.lines += 1
        status = self.status()
        print(f"judgekit: {self.description} {self.done}/{self.total} calls, "
              f"{now - self.t0:.0f} s" + (f", {status}" if status else ""),
              file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        import time

        if not self.enabled:
            return
        if self.tty:
            self.bar.stop()
        elif self.lines:
            self._print(time.monotonic())
