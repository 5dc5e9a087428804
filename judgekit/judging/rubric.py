"""Rubrics: ordered criteria, compound criteria with clauses (the total rubric C̄),
and an aggregator sigma. Text rubrics load from YAML; executable rules from Python."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judgekit.core.errors import ConfigError, describe_validation
from judgekit.core.textio import read_text, safe_yaml


class Clause(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    description: str


class Criterion(BaseModel):
    """A criterion c: x -> {0,1}; a compound one lists its clauses and operator."""

    model_config = ConfigDict(extra="forbid")
    id: str
    description: str
    clauses: list[Clause] = Field(default_factory=list)
    operator: Literal["xor", "and", "or"] | None = None

    @model_validator(mode="after")
    def _compound(self) -> Criterion:
        if self.clauses and self.operator is None:
            raise ValueError(f"criterion {self.id} has clauses but no operator (xor, and, or)")
        if self.operator and len(self.clauses) < 2:
            raise ValueError(f"criterion {self.id}: operator {self.operator} needs >= 2 clauses")
        return self


class Rubric(BaseModel):
    """A text rubric (what an LLM judge and an LLM verifier read)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    language: str | None = None
    description: str = ""
    criteria: list[Criterion]
    aggregator: Literal["all", "majority"] = "all"
    # rubric fields the data carries that are not criteria (the West Frisian file's c2
    # combines c2a and c2b): not reported as unknown by the data check
    data_fields: list[str] = []

    @model_validator(mode="after")
    def _unique(self) -> Rubric:
        if not self.criteria:
            raise ValueError("a rubric needs at least one criterion")
        ids = self.total_ids()
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate criterion or clause ids: {', '.join(dup)}")
        return self

    def ids(self) -> list[str]:
        return [c.id for c in self.criteria]

    def total_ids(self) -> list[str]:
        """Ids of C̄: every clause of a compound criterion, then the criterion itself."""
        out: list[str] = []
        for c in self.criteria:
            out += [cl.id for cl in c.clauses] + [c.id]
        return out

    def aggregate(self, values: Sequence[int]) -> int:
        return aggregate(self.aggregator, values)

    def combine(self, criterion: Criterion, clause_values: Sequence[int]) -> int:
        op = criterion.operator
        if op == "xor":
            return int(sum(clause_values) % 2 == 1)
        if op == "and":
            return int(all(clause_values))
        return int(any(clause_values))


def aggregate(kind: str | Callable[[Sequence[int]], int], values: Sequence[int]) -> int:
    if callable(kind):
        return int(kind(values))
    if kind == "all":
        return int(all(values))
    if kind == "majority":
        return int(sum(values) * 2 > len(values))
    raise ConfigError(f"unknown aggregator {kind!r}: use all, majority or a function")


def load_rubric(path: str | Path) -> Rubric:
    from judgekit.core.resources import resolve_resource

    p = resolve_resource(path, "rubrics")
    if not p.exists():
        raise ConfigError(f"rubric file {path} not found (nor in the shipped rubrics/)")
    try:
        doc = safe_yaml(read_text(p))
        return Rubric.model_validate(doc)
    except yaml.YAMLError as exc:
        raise ConfigError(f"rubric {p}: invalid YAML: {str(exc).splitlines()[0]}") from exc
    except ValidationError as exc:
        raise ConfigError(f"rubric {p}: {describe_validation(exc)}") from exc


class RuleRubric:
    """An executable rubric: Python predicates for criteria and clauses."""

    def __init__(self, name: str, criteria: dict[str, Callable[[Any], bool]],
                 clauses: dict[str, tuple[str, list[tuple[str, Callable[[Any], bool]]]]]
                 | None = None,
                 aggregator: str | Callable[[Sequence[int]], int] = "majority") -> None:
        self.name = name
        self.criteria = criteria
        self.clauses = clauses or {}
        self.aggregator = aggregator

    def ids(self) -> list[str]:
        return list(self.criteria)

    def top(self, x: Any) -> tuple[int, ...]:
        """C(x): the top-level criterion bitstring."""
        return tuple(int(f(x)) for f in self.criteria.values())

    def total(self, x: Any) -> tuple[int, ...]:
        """C̄(x): clauses of compound criteria, then each criterion."""
        out: list[int] = []
        for cid, f in self.criteria.items():
            if cid in self.clauses:
                out += [int(g(x)) for _, g in self.clauses[cid][1]]
            out.append(int(f(x)))
        return tuple(out)

    def label(self, x: Any) -> int:
        return aggregate(self.aggregator, self.top(x))
