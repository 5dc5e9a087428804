"""Judgements recorded elsewhere, read by every surface through one registry of formats
(:data:`~judgekit.recorded.base.FORMATS`): ``judgekit analyse`` reads a format's table
(:func:`judgekit.recorded.tables.read`), the audit and the pointwise probe its judged
items (:func:`judgekit.recorded.judged.read_records`), ``label`` and ``view`` the items
an ``analyse`` run wrote.

A format is one module here that registers a
:class:`~judgekit.recorded.base.RecordedFormat`; a package of yours adds one through the
``judgekit.recorded`` entry point group. Importing this package registers the built-in
formats: csv, jsonl, json (judgekit's judged items), inspect, promptfoo, llmbar,
alpaca_eval, xlsx, parquet.
"""

from judgekit.recorded import (  # noqa: F401  (each registers its format)
    alpaca_eval,
    delimited,
    inspect_log,
    jsonl,
    judgekit_json,
    llmbar,
    parquet,
    promptfoo,
    spreadsheet,
)
from judgekit.recorded.base import FORMATS, RecordedFormat, Table, label_of

__all__ = ["FORMATS", "RecordedFormat", "Table", "label_of"]
