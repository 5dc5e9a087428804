"""The payload of a recorded-verdicts analysis (closed all the way down)."""

from __future__ import annotations

from typing import Literal

from judgekit.core.payload import DetailFile, Payload, Record, absent


class Measure(Record):
    """One figure the data allows: its estimate, interval at the run's level, n, what an
    uninformed judge would score on the same items, and the decision taken on it."""

    key: str  # stable: position_bias, order_consistency, accuracy, kappa, ac1, ...
    what: str
    estimate: float | None = None
    ci: list[float] | None = None
    n: int = 0
    clusters: int | None = None
    baseline: float | None = None  # the best uninformed judge on the same items
    decision: str = "-"
    units: str = "share"
    finding: bool = False  # the decision is a claim against the judge
    note: str | None = None
    # corrected figures: the human labels used, and about how many give +/- the
    # run's target_halfwidth under the same design (None: already that narrow)
    labelled: int | None = None
    labels_for_target: int | None = None
    # rows of a family (leniency overall and per system): the interval at the level
    # that holds for every row together (Bonferroni), which a claim resting on any
    # one row of the family uses
    family_ci: list[float] | None = None


class JudgeVerdicts(Record):
    """Another judge of the same file (several judge columns): its own measures, read
    exactly as the first judge's, for the card side by side."""

    judge: str
    column: str
    unreadable: int
    measures: list[Measure]
    notes: list[str]


class VerdictsPayload(Payload):
    """``verdicts``: what a recorded judge's verdicts show, with no model call."""

    judge: str
    shape: Literal["pointwise", "pairwise", "alpaca_eval", "graded"]
    source: str  # the file's name
    roles: dict[str, str]  # role -> column (or field) read
    n_rows: int
    unreadable: int  # rows whose verdict could not be read (left out, counted)
    level: float
    measures: list[Measure]
    notes: list[str]
    items: DetailFile
    # several judge columns: the first judge's figures are above, the others' here
    others: list[JudgeVerdicts] | None = absent()
