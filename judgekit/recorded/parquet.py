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

BATCH = 8_192  # rows decoded at a time


def _batches(path: Path, data: Any) -> Iterator[tuple[JSONObject, Any]]:
    """(partition values, record batch) of a dataset, file by file."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if not isinstance(data.format, ds.ParquetFileFormat):
        for batch in data.to_batches(batch_size=BATCH, batch_readahead=0,
                                     fragment_readahead=0):
            yield {}, batch
        return
    for fragment in data.get_fragments():
        keys = ds.get_partition_keys(fragment.partition_expression) or {}
        with pq.ParquetFile(fragment.path, pre_buffer=False, buffer_size=1 << 16) as fh:
            for batch in fh.iter_batches(batch_size=BATCH):
                yield {k: v for k, v in keys.items() if k not in batch.schema.names}, batch


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
    """The rows one at a time. Parquet files are read a few pages at a time
    (``ParquetFile.iter_batches`` without pre-buffering: a row group of 10^6 rows is
    never decoded whole), file by file for a partitioned folder, its ``key=value``
    parts added as columns; Arrow files through the dataset scanner."""
    data = _dataset(path)
    names = list(data.schema.names)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{path}: column {dup[0]!r} appears twice; rename one")
    try:
        for keys, batch in track(_batches(path, data), f"reading {path.name}",
                                 unit="batches"):
            cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            got = batch.schema.names
            missing = [n for n in names if n not in got and n not in keys]
            for vals in zip(*cols):
                row = {k: _cell(v) for k, v in zip(got, vals)}
                row.update({k: _cell(v) for k, v in keys.items()})
                row.update({k: "" for k in missing})  # a file without a dataset column
                yield {n: row[n] for n in names}
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
