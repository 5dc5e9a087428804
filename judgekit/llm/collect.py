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
from dataclasses import dataclass

__all__ = ["GC_THRESHOLD0", "Unscanned", "fewer_collections", "paused", "unscanned"]

GC_THRESHOLD0 = 50_000  # allocations between young-generation collections


class _Sections:
    """How many sections are open, and the thresholds to restore after the last."""

    lock = threading.Lock()
    depth = 0
    before: tuple[int, int, int] = (700, 10, 10)
    # whether the sections may freeze: not when the program had frozen objects itself
    # (a pre-fork server does, to keep pages shared): unfreezing would undo that
    freezing = True


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    with _Sections.lock:
        if _Sections.depth == 0:
            _Sections.before = before = gc.get_threshold()
            _Sections.freezing = gc.get_freeze_count() == 0
            if _Sections.freezing:
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
                if _Sections.freezing:
                    gc.unfreeze()


@dataclass
class Unscanned:
    """An :func:`unscanned` block: ``freeze`` is whether what it made is frozen at its
    end (False once it has started anything that may still make garbage, e.g. a task)."""

    freeze: bool = True


@contextlib.contextmanager
def unscanned() -> Iterator[Unscanned]:
    """A synchronous block (no ``await`` inside) whose new objects outlive it, such as
    a chunk of calls answered from the cache: no collection runs inside it, and what it
    made is frozen at its end instead of being scanned as young objects (a fifth of a
    128,000-call replay went to scanning results that were all alive). The frozen
    objects go back to the collector with everything else when the outermost
    :func:`fewer_collections` section ends; outside a section this does nothing.

    That path makes no reference cycles (a test checks that a replay leaves nothing
    for the collector), so freezing holds no garbage back; whatever else a block made in
    cycles would wait for the section's end."""
    block = Unscanned()
    with _Sections.lock:
        active = _Sections.depth > 0 and _Sections.freezing
    was = gc.isenabled()
    if not active or not was:
        block.freeze = False
        yield block
        return
    gc.disable()
    try:
        yield block
        if block.freeze:  # only a block that finished: an error's traceback is not kept
            gc.freeze()
    finally:
        gc.enable()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """A synchronous block that makes many objects it keeps, such as a cassette read
    into memory: no collection runs inside it (with the collector on, reading a 300 MB
    cassette took five times as long, every young collection re-scanning the entries
    read so far). The collector is as it was afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
