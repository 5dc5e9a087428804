"""The probe's payload (closed all the way down)."""

from __future__ import annotations

from judgekit.core.payload import (
    AgreementFigures,
    DetailFile,
    Figures,
    Payload,
    Rate,
    Record,
    absent,
)


class ProbeTransform(Figures):
    """One transform's flips against the noise floor (consistency)."""

    name: str
    n: int
    flip_rate: float
    noise_floor: float
    excess: float
    excess_ci: list[float]
    p_value: float
    p_adjusted: float
    verdict: str
    question: str | None = absent()
    discordant: float | None = absent()
    flipped: list[str] | None = absent()
    interval: str | None = absent()  # "confidence sequence" in sequential mode


class Bias(Record):
    """A signed bias (direction) with its paired interval and decision."""

    name: str | None = None
    question: str | None = None
    what: str | None = None
    bias: float | None = None
    scale: float | None = None
    ci: list[float] | None = None
    n: int = 0
    discordant: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    verdict: str | None = None
    interval: str | None = None
    flipped: list[str] | None = None
    note: str | None = None


class Accuracy(Record):
    single_order: Rate
    both_orders: Rate


class Corrected(Record):
    """A prediction-powered rate (judgekit.stats.ppi.Corrected) and its label plan."""

    estimate: float
    ci: list[float]
    human_only: float | None = None
    human_only_ci: list[float] | None = None
    n_labelled: int
    n_items: int
    lam: float | None = None
    level: float | None = None
    sampling: str | None = None
    residual_var: float | None = None  # the interval's variance terms (random sampling)
    label_var: float | None = None
    label_error: float | None = None  # annotators' flip rate corrected for (None: not)
    label_error_ci: list[float] | None = None
    kind: str | None = None  # "rate" (or "difference")
    labels_for_target: int | None = None
    target_halfwidth: float | None = None


class Ceiling(Record):
    """Human-human agreement, the ceiling a judge is held to."""

    percent: float
    ac1: float
    percent_ci_first_pair: list[float]
    n: int
    annotator_pairs: int


class Human(Record):
    agreement: AgreementFigures
    human_ceiling: Ceiling | None = None
    a_win_rate: Corrected | None = None


class NoiseFloor(Rate):
    """The flip rate of a change that cannot matter (the placebo, or identical re-runs)."""

    source: str | None = None


class Reliability(Record):
    n: int
    single_run_reliability: float | None = None
    unstable_share: float | None = None
    k_for_target: int | None = None
    target: float | None = None


# P(error) given the feature side is worse / better: a rate and its n
ErrorRate = Rate


class Regression(Record):
    """Logistic slope of "A picked" on the log length ratio (alpaca_eval's spirit)."""

    slope: float | None = None
    ci: list[float] | None = None
    p_value: float | None = None
    n: int = 0
    note: str | None = None
    x: str | None = None
    controls: str | None = None


class Preference(Record):
    """A preference (self or length) controlled for quality by a reference."""

    what: str
    preference: float | None = None
    ci: list[float] | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    n: int = 0
    reference: str | None = None
    # what an imperfect reference (a second judge, people) does to the measure
    reference_caveat: str | None = None
    error_when_worse: ErrorRate | None = None
    error_when_better: ErrorRate | None = None
    verdict: str
    orders: str | None = None  # both orders (position controlled) or as given
    strata: int | None = None  # datasets compared within (Mantel-Haenszel), when > 1
    family: str | None = None
    pairs_with_one_own: int | None = None
    regression: Regression | None = None


class PlanRow(Record):
    name: str
    question: str
    source: str | None = None
    discordant: float | None = None
    n_now: int
    pairs_needed: dict[str, int | None]


class Plan(Record):
    """Pairs each decision needs (Connor's McNemar sample size), from this run."""

    power: float
    level: float
    effects: list[float]
    rows: list[PlanRow]
    method: str | None = None


class SequentialDecision(Record):
    name: str
    question: str
    decision: str
    n: int
    p_value: float | None = None
    ci: list[float] | None = None
    level_each: float | None = None
    stops_the_probe: bool | None = None


class Sequential(Record):
    """The sequential mode: looks, decisions by confidence sequence, pairs saved."""

    batch: int
    looks: int
    margin: float
    stopped: str
    units_asked: int
    units_max: int
    share_saved: float
    decisions: list[SequentialDecision]
    order: str | None = None  # "random": units asked in a seeded random order


class ProbePayload(Payload):
    """``probe``: consistency against the placebo, biases, agreement with people."""

    judge: str
    n_pairs: int
    transforms: list[ProbeTransform]
    mode: str = "pairwise"
    position_bias: Bias | None
    biases: list[Bias] = []
    items: DetailFile
    level: float
    repeats: int
    accuracy: Accuracy | None = None
    human: Human | None = None
    noise_floor: NoiseFloor
    order_consistency: Rate | None = None
    padding_bias: Bias | None = None
    # the change in P(first slot) when labels A/B become 1/2: a preference for a label
    # name, which would otherwise read as position bias
    label_bias: Bias | None = absent()
    reliability: Reliability | None = None
    rerun_flips: Rate | None = None
    pass_rate: Rate | None = None
    self_preference: Preference | None = None
    length_bias: Preference | None = None
    plan: Plan | None = None
    sequential: Sequential | None = None
