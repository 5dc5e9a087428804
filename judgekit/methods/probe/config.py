"""Config of the judge reliability probe (pairwise preference judges)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judgekit.core.label_error import LabelErrorSetting
from judgekit.core.settings import RunSettings
from judgekit.recorded.judged import JudgedInput

BUILTIN = ("swap", "rename", "pad", "inject")  # pairwise
POINTWISE = ("reorder", "paraphrase", "pad", "inject")
RECORDED = ("pad", "inject")  # a recorded grader's template has no rubric to reorder


class TemplateTransform(BaseModel):
    """A user transform: a Jinja template applied to one answer (``answer`` is its text)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    template: str
    apply_to: Literal["a", "b", "alternate"] = "alternate"


class ProbeConfig(RunSettings, JudgedInput):
    method: Literal["probe"] = "probe"
    # pairwise: which of two answers is better; pointwise: a rubric verdict on one item
    judge_mode: Literal["pairwise", "pointwise"] = "pairwise"
    rubric: str = "west_frisian_ip.yaml"  # pointwise: what the judge is told
    # pointwise: "recorded" re-asks the grader of an Inspect log (model_graded_qa,
    # model_graded_fact) with the very prompt it was sent, the answer in it transformed,
    # its grade read by its own grade pattern; models.judge defaults to the log's grader
    grader: Literal["judgekit", "recorded"] = "judgekit"
    rubric_paraphrase: str | None = None  # pointwise: the same criteria, reworded
    # pairs: a JSONL of {"id", "question", "a", "b", "correct"?: "a"|"b", "human"?: "a"|"b"}
    data_path: str | None = None
    # or pairs built from datasets with objective answers (correct vs an incorrect one)
    pairs_from: list[str] = Field(default_factory=list)  # datasets registered for "probe"
    dataset_paths: dict[str, str] = Field(default_factory=dict)
    n_pairs: int = Field(20, ge=2)
    transforms: list[str] | None = None  # default: every built-in of the mode
    template_transforms: list[TemplateTransform] = Field(default_factory=list)
    repeats: int = Field(2, ge=2, le=20)  # verdicts per item in the original order
    temperature: float = Field(0.7, ge=0)  # > 0 so identical re-runs can differ
    max_tokens: int = Field(128, ge=16)
    padding: str = ("To be thorough, here is the same answer stated once more in other "
                    "words, with no new information: {answer}")
    target_reliability: float = Field(0.8, gt=0, lt=1)
    human_sample: int | None = Field(None, ge=2)  # human labels used by the corrected rate
    human_labels: str | None = None  # JSONL of {"id", "human"} for some of the pairs
    target_halfwidth: float = Field(0.05, gt=0, lt=0.5)  # labels needed for +- this
    # the annotators' flip rate: a number, or "repeats" to estimate it from items with
    # two or more human labels (each label one annotator's); None: labels error-free
    label_error: LabelErrorSetting | None = None
    # an irrelevant reference id appended to the question, measured like a transform:
    # the noise floor of the consistency test (valid for temperature-0 judges)
    placebo: bool = True
    # random: a simple random sample; importance: Poisson sampling favouring items the
    # judge is unsure of (its verdict changed across identical runs), Horvitz-Thompson
    human_sampling: Literal["random", "importance"] = "random"
    # inject: the language of the planted instructions (en, fy); default: the rubric's
    # language for pointwise probes, else English. injections: your own phrasings
    # ({verdict} becomes 1/0 pointwise, "this answer" pairwise), cycled over items.
    injection_language: str | None = None
    injections: list[str] | None = None
    # self-preference: the judge's model family, matched against pairs' model_a/model_b
    # (default: the leading letters of the judge's model name, e.g. "gpt", "claude")
    judge_family: str | None = None
    # the quality reference of self-preference and length preference where a pair has no
    # known correct answer: JSONL of {"id", "reference": "a"|"b"} (e.g. a second judge's
    # picks); human labels are used after it
    reference_labels: str | None = None
    # sequential: ask in batches and stop once every decision is settled (a confidence
    # sequence excludes 0, or lies inside +-sequential_margin); n_pairs is the most asked
    sequential: bool = False
    sequential_batch: int = Field(20, ge=2)
    sequential_margin: float = Field(0.05, gt=0, lt=1)
    # when the probe stops: "finding" (default) at the first decision shown (a bias or
    # an inconsistency: the judge is flagged), else once all are settled; "all" waits
    # for every decision to be settled (ruling out needs many pairs); or one question's
    sequential_on: Literal["finding", "all", "direction", "consistency"] = "finding"
    plan_power: float = Field(0.8, gt=0, lt=1)
    level: float = Field(0.95, gt=0, lt=1)
    resamples: int = Field(2000, ge=200)

    @model_validator(mode="after")
    def _check(self) -> ProbeConfig:
        recorded = self.grader == "recorded"
        if recorded and (self.judge_mode != "pointwise" or self.data_format != "inspect"):
            raise ValueError("grader: recorded re-asks the grader an Inspect log recorded: "
                             "use it with judge_mode: pointwise and data_format: inspect")
        if "judge" not in self.models and not recorded:
            raise ValueError("models.judge is required")
        known: tuple[str, ...] = RECORDED if recorded else (
            BUILTIN if self.judge_mode == "pairwise" else POINTWISE)
        if self.transforms is None:
            self.transforms = [t for t in known
                               if t != "paraphrase" or self.rubric_paraphrase]
        bad = [t for t in self.transforms if t not in known]
        if bad:
            raise ValueError(f"unknown {self.judge_mode} transform {bad[0]!r}; built-ins are "
                             f"{', '.join(known)} (add your own as template_transforms)")
        if self.injection_language is not None:
            from judgekit.methods.probe.bias import INJECTIONS, injection_language

            if injection_language(self.injection_language) not in INJECTIONS or (
                    injection_language(self.injection_language) == "en"
                    and "en" not in self.injection_language.lower()
                    and "english" not in self.injection_language.lower()):
                raise ValueError(f"injection_language {self.injection_language!r}: built-in "
                                 "phrasings are en and fy; give your own as injections")
        if "paraphrase" in self.transforms and not self.rubric_paraphrase:
            raise ValueError("the paraphrase transform needs rubric_paraphrase (the same "
                             "criteria ids, reworded)")
        from judgekit.data.registry import all_datasets

        usable = [d.name for d in all_datasets("questions") if d.rejected]
        bad = [d for d in self.pairs_from if d not in usable]
        if bad:
            raise ValueError(f"pairs_from: dataset {bad[0]!r} has no incorrect answers to pair "
                             f"with its gold one; use {', '.join(usable)}")
        if self.judge_mode == "pairwise" and not self.data_path and not self.pairs_from:
            raise ValueError("give data_path (a pairs JSONL) or pairs_from")
        if self.judge_mode == "pointwise" and not self.data_path:
            raise ValueError("pointwise probes need data_path (judged items JSON)")
        return self
