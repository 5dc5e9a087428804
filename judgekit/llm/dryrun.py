"""A dry run: what a stage's calls would cost, before any is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from judgekit.core.errors import DryRun
from judgekit.llm.calls import Prepared
from judgekit.llm.ledger import BATCH_PRICE
from judgekit.llm.pricing import cost_usd
from judgekit.llm.stage import Call, Stage
from judgekit.llm.types import int_param


def dry_run(prepare: Callable[[Stage, Call], Prepared],
            lookup: Callable[[Prepared, Stage], tuple[Any, ...]], batch: bool,
            stage: Stage, calls: Sequence[Call]) -> DryRun:
    """How many of ``calls`` are not yet answered, and what they would cost: prompt
    tokens estimated at 4 characters a token, completions at their max_tokens."""
    misses: dict[str, Prepared] = {}
    for call in calls:
        p = prepare(stage, call)
        if p.key not in misses and lookup(p, stage)[0] is None:
            misses[p.key] = p
    by_model: dict[str, list[int]] = {}
    for p in misses.values():
        prompt = sum(len(m["content"]) for m in p.messages) // 4
        completion = int_param(p.sampling, "max_tokens", 1024) or 1024
        tot = by_model.setdefault(p.model, [0, 0, 0])
        tot[0] += 1
        tot[1] += prompt
        tot[2] += completion
    parts = []
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

