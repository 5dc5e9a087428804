"""LLM stages of the No-Data audit: evaluator, generator (paraphraser), verifier."""

from __future__ import annotations

from pydantic import BaseModel, Field

from judgekit.llm import Stage


class CriterionScore(BaseModel):
    id: str
    value: int = Field(ge=0, le=1)
    reason: str = ""


class EvaluatorAll(BaseModel):
    criteria: list[CriterionScore] = Field(min_length=1)
    label: int = Field(ge=0, le=1)


class EvaluatorOne(BaseModel):
    value: int = Field(ge=0, le=1)
    reason: str = ""


class Paraphrase(BaseModel):
    Prompt: str
    Output: str


class VerifierScores(BaseModel):
    criteria: list[CriterionScore] = Field(min_length=1)


EVALUATOR_VARIABLES = ("prompt", "output", "rubric", "criteria", "aggregator_text")


def evaluator_all(max_tokens: int) -> Stage:
    return Stage("evaluator", "nodata_evaluator.j2", EvaluatorAll,
                 sampling={"temperature": 0.0, "max_tokens": max_tokens},
                 variables=EVALUATOR_VARIABLES)


def evaluator_one(max_tokens: int) -> Stage:
    return Stage("evaluator", "nodata_evaluator_one.j2", EvaluatorOne,
                 sampling={"temperature": 0.0, "max_tokens": max_tokens},
                 variables=("prompt", "output", "criterion"))


def generator(max_tokens: int) -> Stage:
    # Temperature > 0 so that rounds (draw = round) give different paraphrases.
    return Stage("generator", "nodata_generator.j2", Paraphrase,
                 sampling={"temperature": 0.7, "max_tokens": max_tokens},
                 variables=(*EVALUATOR_VARIABLES, "label"))


def verifier_one(max_tokens: int, reworded: bool = False) -> Stage:
    return Stage("verifier", "nodata_verifier_one_reread.j2" if reworded else
                 "nodata_verifier_one.j2", EvaluatorOne,
                 sampling={"temperature": 0.0, "max_tokens": max_tokens},
                 variables=("prompt", "output", "item"))


def verifier(max_tokens: int, reworded: bool = False) -> Stage:
    """The verifier's reading of a text; ``reworded``: the same task under another
    wording of the instruction (the audit's re-read, so that a temperature-0
    verifier's fixed misreads show as disagreement instead of repeating)."""
    return Stage("verifier", "nodata_verifier_reread.j2" if reworded else
                 "nodata_verifier.j2", VerifierScores,
                 sampling={"temperature": 0.0, "max_tokens": max_tokens},
                 variables=("prompt", "output", "rubric", "items"))
