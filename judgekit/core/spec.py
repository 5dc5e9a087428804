"""One typed object per method: :class:`MethodSpec` ``[C, P]`` carries everything the
core knows about a method (its config model ``C``, its payload model ``P``, how to
execute, report and headline it) and the optional hooks that the export, the judge
card, the HTML item view, ``judgekit compare`` and ``judgekit plan`` call. Nothing
outside the registry (:mod:`judgekit.core.methods`) and the method's own package names a
method; a third-party package registers its own through the ``judgekit.core.methods`` entry
point group.

The hook types below are shared by every method and name none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

from judgekit.core.payload import Json, Payload
from judgekit.core.results import RunResult
from judgekit.core.settings import RunSettings

__all__ = ["CardRow", "CompareRow", "ItemView", "LabelIndex", "MethodSpec", "PairAgreement",
           "Paired", "PlanTable", "Row", "RunItems", "Shape", "TableRow",
           "TableShape"]

C = TypeVar("C", bound=RunSettings)
P = TypeVar("P", bound=Payload)

# One row of a flat table (export, pandas): column -> JSON value.
TableRow = dict[str, JsonValue]
Row = TableRow

# A per-item HTML view: record -> (filter kind, summary HTML, body HTML), all escaped.
ItemView = Callable[[Json], tuple[str, str, str]]


FLAGGED = ("biased", "inconsistent", "preference shown", "do not trust",
           "no better than an uninformed judge", "not above the best uninformed judge",
           "no agreement beyond chance", "lenient",
           "severe")


class CardRow(BaseModel):
    """One row of a judge card: a measure with its stable key, estimate, interval, n,
    the best uninformed judge's score where one applies, and the decision taken on it
    (``finding``: the decision is a claim against the judge)."""

    model_config = ConfigDict(extra="forbid")
    key: str  # stable: position_bias, order_consistency, accuracy, kappa, ac1, ...
    section: str  # bias, consistency, self-check, people, audit
    measure: str
    estimate: float | None
    ci: list[float] | None
    n: int
    decision: str
    units: str  # what the number is: a difference of shares, a share, a kappa
    source: str  # the run folder's name
    baseline: float | None = None
    finding: bool = False
    judge: str | None = None  # set on a card of several judges side by side
    labelled: int | None = None  # human labels behind a corrected figure
    labels_for_target: int | None = None  # more labels for the run's target width
    # the interval that holds with its family's other rows together (Bonferroni)
    family_ci: list[float] | None = None

    @model_validator(mode="after")
    def _flag(self) -> CardRow:
        if self.decision.startswith(FLAGGED):
            self.finding = True
        return self


class CompareRow(BaseModel):
    """One paired difference of two runs (B - A)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    n: int
    a: float | None
    b: float | None
    difference: float | None
    difference_ci: list[float] | None
    p_value: float | None


class PairAgreement(BaseModel):
    """Agreement of two runs' labels on the items both labelled."""

    model_config = ConfigDict(extra="forbid")
    n: int
    percent: float | None
    kappa: float | None
    ac1: float | None
    cis: dict[str, list[float] | None]
    undefined: dict[str, str] | None = None
    note: str | None = None


class Paired(NamedTuple):
    """What a method's ``compare`` hook returns for two runs on the same items."""

    measure: str  # what the primary difference is a difference of
    keys: list[str]  # matched items with an outcome in both runs
    a: list[float]  # their primary outcome in run A (0/1 or a score)
    b: list[float]
    secondary: list[CompareRow]
    agreement: PairAgreement | None  # agreement of the two runs' labels
    counts: tuple[int, int]  # records in A and in B
    binary: bool  # 0/1 outcomes (paired proportions) or scores (paired means)
    bounds: tuple[float, float] = (0.0, 1.0)  # the range a score can take
    main: CompareRow | None = None  # a primary row the hook computed itself (e.g. PPI)


Shape = Literal["pointwise", "pairwise"]  # an item's: one verdict, or one preference
TableShape = Literal["pointwise", "pairwise", "alpaca_eval"]  # a recorded table's


class LabelIndex(NamedTuple):
    """What a method's ``label_index`` hook returns: the detail file whose rows are its
    items as they are, their shape and count, and (a file of several judges' rows,
    each with a ``judge`` field) the judge whose rows are the items people label."""

    file: str
    shape: Shape
    rows: int
    judge: str | None = None


class RunItems(NamedTuple):
    """What a method's ``items`` hook returns: the run's labelable items (``id`` or
    ``pair_id``, the judge's ``verdict`` or ``winner``, and the texts a person reads:
    question, answer or first/second, explanation) and their shape."""

    shape: Shape
    rows: list[Json]


class PlanTable(NamedTuple):
    """What a method's ``plan`` hook returns: a title and a table."""

    title: str
    header: list[str]
    rows: list[list[str]]
    more: tuple[PlanTable, ...] = ()  # further tables (e.g. the label plan)


@dataclass(frozen=True)
class MethodSpec(Generic[C, P]):
    """A method (or one of its sub-experiments) as the core sees it.

    Attributes:
        name: the ``method:`` of a config; ``experiment`` names a sub-experiment.
        config: the config model (a :class:`~judgekit.core.settings.RunSettings`).
        payload: the payload model, closed all the way down.
        execute: ``execute(cfg, client) -> P`` (``client`` is None when ``uses_client``
            is False).
        report: ``report(cfg, result) -> Doc`` (the typed ``RunResult[P]``: payload and
            calls); ``headline(payload) -> str``.
        figures: ``figures(cfg, result, folder)`` draws the run's figures.
        default: the experiment a config that names none runs.
        views: per detail file, the HTML view of one record.
        templates: packaged template -> the stage that renders it.
        rows: headline rows for export, pandas and tables.
        judge: the model under examination in a run (judge card, compare).
        card_rows: the run's rows of a judge card.
        compare: paired outcomes of two runs on the same items.
        plan: how many items a decision needs, from a pilot run.
        items: the run's labelable items (what ``judgekit label`` and the viewer's
            labelling page read); a method without it cannot be labelled.
        label_index: the detail file, shape and count of the items when ``items``
            returns that file's records as they are: the run then writes a labelling
            index beside them (:mod:`judgekit.labelling.snapshot`), read instead of
            every item.
        relabelled: the run's payload again, with the labels given since it ran (the
            run folder's labels file, from ``judgekit label`` or the viewer); None when
            there are none. A judge card reads it, so those labels count.
    """

    name: str
    config: type[C]
    payload: type[P]
    execute: Callable[[C, Any], P]
    report: Callable[[C, RunResult[P]], Any]  # a judgekit.report.document.Doc
    headline: Callable[[P], str]
    experiment: str | None = None
    title: str = ""
    uses_client: bool = True
    default: bool = False
    figures: Callable[[C, RunResult[P], Path], None] | None = None
    views: Mapping[str, ItemView] = field(default_factory=dict)
    templates: Mapping[str, str] = field(default_factory=dict)
    rows: Callable[[P], list[TableRow]] | None = None
    judge: Callable[[RunResult[P]], str | None] | None = None
    card_rows: Callable[[P, str], list[CardRow]] | None = None
    compare: Callable[[RunResult[P], RunResult[P], float], Paired] | None = None
    plan: Callable[[RunResult[P], float, tuple[float, ...]], PlanTable] | None = None
    items: Callable[[RunResult[P]], RunItems] | None = None
    label_index: Callable[[RunResult[P]], LabelIndex | None] | None = None
    relabelled: Callable[[RunResult[P], Path], P | None] | None = None

    @property
    def key(self) -> str:
        return self.name if self.experiment is None else f"{self.name}/{self.experiment}"

    def result_model(self) -> type[RunResult[P]]:
        """``RunResult[P]``: what results file of this method validates against."""
        return RunResult[self.payload]  # type: ignore[name-defined]
