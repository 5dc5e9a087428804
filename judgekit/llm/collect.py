"""Garbage collection while a run holds many results: the objects alive when it starts
are frozen out of the collector's scans and young collections come less often, then
both are restored when the last such section ends (sections nest and may overlap, as
two stages' maps do under ``asyncio.gather``).

With hundreds of thousands of live records, the default thresholds spent a fifth of a
128,000-call rerun re-scanning them; a replay of 10,000 cached calls in a process that
had imported litellm ran at a fifth of the speed of one of 2,000.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["GC_THRESHOLD0", "fewer_collections"]

GC_THRESHOLD0 = 50_000  # allocations between young-generation collections


class _Sections:
    """How many sections are open, and the thresholds to restore after the last."""

    lock = threading.Lock()
    depth = 0
    before: tuple[int, int, int] = (700, 10, 10)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    with _Sections.lock:
        if _Sections.depth == 0:
            _Sections.before = before = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(before[0], GC_THRESHOLD0), max(before[1], 20),
                             max(before[2], 100))
        _Sections.depth += 1
    try:
        yield
    finally:
        with _Sections.lock:
            _Sections.depth -= 1
            if _Sections.depth == 0:
                gc.set_threshold(*_Sections.before)
                gc.unfreeze()
