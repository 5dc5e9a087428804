"""The placebo: a change that cannot matter, measured exactly like a real one."""

from __future__ import annotations

import hashlib

__all__ = ["PLACEBO", "placebo_tag"]

PLACEBO = "placebo"


def placebo_tag(seed: int, item_id: str) -> str:
    """An irrelevant reference id appended to the question: a change that cannot matter,
    measured exactly like the transforms, so that a deterministic (temperature 0)
    judge's noise floor is not 0 by construction."""
    return f" [ref {hashlib.sha256(f'{seed}|{item_id}'.encode()).hexdigest()[:6]}]"
