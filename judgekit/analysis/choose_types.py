"""The records of ``judgekit choose``: the judges as read, the rows of choice.json."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from judgekit.core.spec import Shape

__all__ = ["Choice", "Estimate", "JudgeItems", "JudgeRow", "JuryRow", "PairRow", "Selective",
           "rate"]


class JudgeItems(NamedTuple):
    name: str
    shape: Shape
    verdict: dict[str, str]  # item key -> its readable verdict ("1"/"0", "first"/...)
    human: dict[str, str]  # item key -> people's label
    confidence: dict[str, float]  # item key -> the judge's confidence (0.5 to 1)
    cluster: dict[str, str]  # item key -> its question (or pair)
    uninformed: str | None  # the analysis's accuracy decision
    cost: float | None  # per item, where known
    seconds: float | None = None  # per item, where the file records it
    cost_source: str | None = None  # where the cost came from


class Estimate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    estimate: float | None
    ci: list[float] | None
    n: int


class JudgeRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    n: int
    shape: Shape
    agreement: Estimate | None = None  # accuracy against people's labels
    kappa: Estimate | None = None
    leniency: Estimate | None = None  # pass rate minus people's, paired (pointwise)
    position_bias: Estimate | None = None  # pairwise
    cost_per_item: float | None = None
    cost_source: str | None = None  # --price, or the file's own column
    seconds_per_item: float | None = None
    uninformed: str | None = None


class PairRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: str
    b: str
    measure: str  # agreement | kappa | leniency | position_bias
    difference: float | None  # a - b
    ci: list[float] | None  # at the adjusted level
    n: int


class JuryRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agreement: Estimate | None
    effective_judges: float
    ties: int = 0
    no_verdict: int = 0


class CascadeStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    judge: str
    threshold: float | None  # this judge decides items with confidence >= it
    reached: float  # share of the items that reach this stage
    decided: float  # share of the items this stage decides
    agreement: Estimate | None  # on the labelled items it decides
    cost_per_item: float | None = None


class SelectiveJudge(BaseModel):
    """One judge calibrated on its own (``--selective``): its threshold, the share of
    items it keeps, its agreement with people on the kept labelled items, and the items
    whose confidence could not be used (missing, NaN, outside [0, 1], text), which are
    escalated, never dropped. In a cascade, the stage's threshold and the share it
    decides."""

    model_config = ConfigDict(extra="forbid")
    threshold: float | None
    coverage: float
    agreement: Estimate | None
    calibration_items: int
    escalated: int
    unusable_confidence: int = 0


class Selective(BaseModel):
    model_config = ConfigDict(extra="forbid")
    judge: str
    confidence: str  # where the confidence came from
    threshold: float | None
    coverage: float
    agreement: Estimate | None
    target: float
    risk: float
    calibration_items: int
    guarantee: str
    # a cheapest-first cascade of judges ending with people (``--cascade``): the stages,
    # and what the whole costs per item (people not counted)
    cascade: list[CascadeStage] | None = None
    cost_per_item: float | None = None
    escalated: int = 0  # items left for people (DIR/escalated.jsonl)
    escalated_ids: list[str] = []
    # every judge calibrated, by name (one entry for one judge); in a cascade, the stages
    judges: dict[str, SelectiveJudge] = {}
    unusable_confidence: int = 0  # items escalated because their confidence was unusable
    # do the items decided look like the labelled ones? (their confidences compared)
    shift: str | None = None


class Choice(BaseModel):
    """choice.json."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = 1
    level: float
    adjusted_level: float
    margin: float
    judges: list[JudgeRow]
    pairs: list[PairRow]
    decision: str
    chosen: str | None
    jury: dict[str, JuryRow]
    selective: Selective | None = None



def rate(flags: list[float], level: float, groups: list[str] | None = None) -> Estimate:
    """A share with its Wilson interval; clustered by ``groups`` (the question, or the
    pair whose two orders are two items) where items share one, as analyse's are."""
    from judgekit.stats.proportions import wilson_interval

    if not flags:
        return Estimate(estimate=None, ci=None, n=0)
    k, n = int(sum(flags)), len(flags)
    if groups is not None and len(set(groups)) < n:
        from judgekit.stats.preference import clustered_rate_counts

        code = {g: i for i, g in enumerate(dict.fromkeys(groups))}
        idx = np.array([code[g] for g in groups])
        c = clustered_rate_counts(np.bincount(idx, weights=np.asarray(flags, float)),
                                  np.bincount(idx), level)
        return Estimate(estimate=c.rate, ci=list(c.ci), n=n)
    iv = wilson_interval(k, n, level)
    return Estimate(estimate=k / n, ci=[iv.lo, iv.hi], n=n)
