"""Parquet and Arrow tables (``.parquet``, ``.arrow``/``.feather``, or a folder of
Parquet files partitioned as Spark, Databricks or pandas write them: ``key=value``
sub-folders become columns), read through pyarrow in record batches (the ``parquet``
extra: ``pip install 'judgekit[parquet]'``). Missing values read as empty cells, as in
a CSV file; nested values as compact JSON text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.progress import track
from judgekit.recorded.base import FORMATS, RecordedFormat, Table
from judgekit.recorded.judged import JudgedInput, judged_from_table
from judgekit.recorded.tables import detect_rows

__all__ = ["is_parquet_folder", "iter_rows", "rows"]

BATCH = 65_536


def is_parquet_folder(path: Path) -> bool:
    """A folder holding Parquet files (a partitioned dataset)."""
    return path.is_dir() and any(path.rglob("*.parquet"))


def _dataset(path: Path) -> Any:
    try:
        import pyarrow.dataset as ds
    except ImportError:
        raise DataError(f"{path}: reading Parquet or Arrow needs pyarrow: pip install "
                        "'judgekit[parquet]'") from None
    fmt = "ipc" if path.suffix.lower() in (".arrow", ".feather") else "parquet"
    try:
        return ds.dataset(str(path), format=fmt, partitioning="hive")
    except Exception as exc:  # pyarrow raises several kinds for a file it cannot read
        raise DataError(f"{path}: not a readable {fmt} table ({str(exc).splitlines()[0]})") \
            from None


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
    return str(v)


def rows(path: Path) -> list[JSONObject]:
    """Every row, batch by batch (the columns' duplicate names refused)."""
    return list(iter_rows(path))


def iter_rows(path: Path) -> Iterator[JSONObject]:
    """The rows one at a time, read a record batch at a time (one batch held)."""
    data = _dataset(path)
    names = list(data.schema.names)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{path}: column {dup[0]!r} appears twice; rename one")
    try:
        batches = data.to_batches(batch_size=BATCH)
        for batch in track(batches, f"reading {path.name}", unit="batches"):
            cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            keys = batch.schema.names
            yield from ({k: _cell(v) for k, v in zip(keys, vals)} for vals in zip(*cols))
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"{path}: cannot read its rows ({str(exc).splitlines()[0]})") \
            from None
    finally:  # the decoded batches' memory back to the system, not kept for reuse
        import pyarrow as pa

        pa.default_memory_pool().release_unused()


def _table(path: Path, roles: dict[str, str]) -> Table:
    return detect_rows(path, rows(path), roles)


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    return judged_from_table(path, _table(path, {}), spec.pass_threshold)


FORMAT = FORMATS.add("parquet", RecordedFormat(
    "parquet", suffixes=(".parquet", ".pq", ".arrow", ".feather"), table=_table,
    judged=_judged, stream=iter_rows,
    description="Parquet or Arrow table, or a folder of partitioned Parquet files (the "
                "parquet extra)"))
