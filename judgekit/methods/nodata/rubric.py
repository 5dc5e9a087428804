"""Deprecated location: rubrics live in :mod:`judgekit.judging.rubric` (shared by the
audit and the pointwise probe)."""

from judgekit.judging.rubric import Clause, Criterion, Rubric, RuleRubric, aggregate, load_rubric

__all__ = ["Clause", "Criterion", "Rubric", "RuleRubric", "aggregate", "load_rubric"]
