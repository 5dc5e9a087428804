"""Dataset loaders: TruthfulQA, Winograd (WSC), ARC-Challenge, West Frisian judged items.
Importing the package registers them (judgekit.data.registry)."""

from judgekit.data.judged import JudgedItem, load_judged
from judgekit.data.qa import Query, load_dataset_queries, sample_queries

__all__ = ["JudgedItem", "Query", "load_dataset_queries", "load_judged", "sample_queries"]
