"""What several methods share and none owns: rubrics, the stages that judge against a
rubric (evaluator, paraphraser, verifier), and the placebo change (an irrelevant
reference id whose flip rate is the noise floor)."""

from judgekit.judging.placebo import PLACEBO, placebo_tag
from judgekit.judging.rubric import Rubric, RuleRubric, load_rubric

__all__ = ["PLACEBO", "Rubric", "RuleRubric", "load_rubric", "placebo_tag"]
