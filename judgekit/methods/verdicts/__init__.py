"""Recorded verdicts: judges people already run, analysed from their files with no model
call (pointwise and pairwise tables, alpaca_eval annotations)."""

from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure, VerdictsPayload

__all__ = ["Measure", "VerdictsConfig", "VerdictsPayload"]
