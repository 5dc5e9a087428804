"""``--smoke`` for every contract benchmark: the same code path on a tiny input, in
seconds, printing every key its full run prints (the figures mean nothing then). CI
runs each benchmark this way, so none can silently break. Not a benchmark itself."""

from __future__ import annotations

import sys
from typing import TypeVar

T = TypeVar("T")

SMOKE = "--smoke" in sys.argv[1:]


def pick(full: T, small: T) -> T:
    """``full`` for a real run, ``small`` under ``--smoke``."""
    return small if SMOKE else full


def argv() -> list[str]:
    """The command line without ``--smoke`` (for a benchmark's own parser)."""
    return [a for a in sys.argv[1:] if a != "--smoke"]
