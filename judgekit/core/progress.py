"""Progress of long loops that make no LLM call (simulations, bootstraps, reading large
files): on a terminal a transient line with the count and elapsed time, elsewhere (CI,
pipes) a plain line every ``interval`` seconds and one at the end. Nothing is shown for
a loop that ends within ``quiet`` seconds, so short runs stay silent.

The LLM stages have their own bar with tokens and cost (judgekit.llm.ledger.Progress).
``JUDGEKIT_PROGRESS=0`` silences both.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def enabled() -> bool:
    return os.environ.get("JUDGEKIT_PROGRESS", "1") not in ("0", "false", "no")


def track(items: Iterable[T], what: str, total: int | None = None, unit: str = "",
          interval: float = 10.0, quiet: float = 2.0) -> Iterator[T]:
    """Yield ``items``, reporting how many were done and since when."""
    if not enabled():
        yield from items
        return
    tty = sys.stderr.isatty()
    t0 = last = time.monotonic()
    shown = False
    done = 0
    of = f"/{total}" if total is not None else ""
    unit = f" {unit}" if unit else ""
    try:
        for x in items:
            yield x
            done += 1
            now = time.monotonic()
            if now - t0 < quiet:
                continue
            if tty and now - last >= 0.25:
                sys.stderr.write(f"\r\x1b[Kjudgekit: {what} {done}{of}{unit}, "
                                 f"{now - t0:.0f} s")
                sys.stderr.flush()
                last, shown = now, True
            elif not tty and (now - last >= interval or not shown):
                print(f"judgekit: {what} {done}{of}{unit}, {now - t0:.0f} s",
                      file=sys.stderr, flush=True)
                last, shown = now, True
    finally:
        if shown and tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
    if shown:  # only a loop that ran to its end says it is done
        print(f"judgekit: {what} {done}{of}{unit} done in {time.monotonic() - t0:.0f} s",
              file=sys.stderr, flush=True)
