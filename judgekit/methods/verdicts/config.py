"""Config of a recorded-verdicts analysis (`judgekit analyse FILE`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judgekit.core.label_error import LabelErrorSetting
from judgekit.core.settings import RunSettings

Shape = Literal["auto", "csv", "jsonl", "alpaca_eval", "llmbar", "inspect", "promptfoo",
                "xlsx", "json"]


class VerdictsConfig(RunSettings):
    """Where the verdicts are and how to read them. ``roles`` maps a role (``judge``,
    ``human``, ``system``, ``question_id``, ``id``; pairwise: ``pair_id``, ``question``,
    ``first``, ``second``, ``winner``, ``label``) to the file's column; roles left out
    are detected from the column names where that is unambiguous."""

    method: Literal["verdicts"] = "verdicts"
    data_path: str
    data_format: Shape = "auto"
    judge: str | None = None  # the judge's name (default: its column, or the file's)
    judge_family: str | None = None  # its model family, for self-preference (default: judge)
    baseline: str | None = None  # pairwise with models: win rates against this model
    roles: dict[str, str] = Field(default_factory=dict)
    level: float = Field(0.95, gt=0, lt=1)
    pass_threshold: float = Field(0.5, ge=0)  # numeric verdicts at or above pass
    resamples: int = Field(2000, ge=200)
    min_length_ratio: float = Field(1.1, ge=1.0)  # "longer" means this much longer
    target_halfwidth: float = Field(0.05, gt=0, lt=0.5)  # the label plan's target
    # the annotators' flip rate: corrected rates are corrected for it (None: the human
    # labels are taken as error-free, and the figures say so)
    label_error: LabelErrorSetting | None = None
    # graded verdicts: the scale LO-HI (detected from the scores when not given; a score
    # off it is unreadable, counted, never averaged)
    scale: str | None = None
    # human labels from a labels file (`judgekit label` / `judgekit view`, or JSONL of
    # {"id", "label", "annotator"}); they replace the file's own human column. Labels
    # drawn by `judgekit label` are weighted by their draw probabilities.
    labels_file: str | None = None
