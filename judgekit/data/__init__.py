"""Dataset loaders: TruthfulQA, Winograd (WSC), ARC-Challenge, West Frisian judged items."""

from judgekit.data.qa import Query, load_dataset_queries, sample_queries

__all__ = ["Query", "load_dataset_queries", "sample_queries"]
