"""A judge's model family (self-preference: does it favour answers of its own kind)."""

from __future__ import annotations

import re

__all__ = ["family_of", "same_family"]


def family_of(model: str) -> str:
    """A model string's family: the leading letters of its name after the provider
    ('openai/gpt-4o' -> 'gpt', 'anthropic/claude-3-5-sonnet' -> 'claude',
    'local/gemma-3-270m' -> 'gemma')."""
    name = model.split("/")[-1].lower()
    m = re.match(r"[a-z]+", name)
    return m.group(0) if m else name


def same_family(judge: str, *others: str) -> bool:
    """Every one of ``others`` (the verifiers) is of the judge's model family."""
    return all(family_of(o) == family_of(judge) for o in others)
