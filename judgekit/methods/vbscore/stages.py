"""The LLM stages of the VB-Score case study (templates in prompts/)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from judgekit.llm import Stage


class Interpretation(BaseModel):
    label: str = Field(min_length=1, max_length=300)
    score: float = Field(ge=0, le=10)
    satisfies: list[str] = Field(default_factory=list)
    violates: list[str] = Field(default_factory=list)
    canonical_id: str | None = None


class Interpretations(BaseModel):
    interpretations: list[Interpretation] = Field(min_length=1, max_length=10)


class Answers(BaseModel):
    answers: list[str] = Field(min_length=1, max_length=20)


class Tags(BaseModel):
    tags: list[str] = Field(min_length=1, max_length=20)


class Correctness(BaseModel):
    correct: bool
    reason: str = ""


def interpretation_stage(temperature: float, max_tokens: int) -> Stage:
    return Stage("interpretations", "interpretations.j2", Interpretations,
                 sampling={"temperature": temperature, "max_tokens": max_tokens},
                 variables=("query", "context", "n"))


def system_stage(temperature: float, max_tokens: int) -> Stage:
    return Stage("system", "system.j2", Answers,
                 sampling={"temperature": temperature, "max_tokens": max_tokens},
                 variables=("query", "context", "k"))


def tagger_stage(max_tokens: int) -> Stage:
    return Stage("tagger", "tagger.j2", Tags, sampling={"temperature": 0.0,
                                                         "max_tokens": max_tokens},
                 variables=("query", "interpretations", "answers"))


def correctness_stage(max_tokens: int) -> Stage:
    return Stage("correctness", "correctness.j2", Correctness,
                 sampling={"temperature": 0.0, "max_tokens": max_tokens},
                 variables=("query", "gold", "accepted", "rejected", "answer"))
