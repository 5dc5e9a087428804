"""Results as tables: headline rows and per-item rows, flattened with stable column
names, for pandas and for `judgekit export RUN --format csv|jsonl|parquet`.

Columns: nested fields are joined with "." (``evaluator.label``, ``verdicts.swap``);
lists (intervals, criteria, replica records) are kept as JSON text in one column, so a
row is one item whatever its nesting. Headline rows are each method's own (its spec's
``rows`` hook): one per dataset, per phi, per transform or bias, per estimator.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from judgekit.core.errors import ConfigError, MissingDependencyError
from judgekit.core.frames import columns, flatten, frame
from judgekit.core.jsontypes import JSONObject


def detail_rows(result: Any) -> list[JSONObject]:
    """The run's main per-record view (queries for VB-Score, items otherwise)."""
    names = result.detail_names()
    if not names:
        raise ConfigError(f"this {result.method} run has no per-item records to export")
    return [flatten(r) for r in result.detail(names[0])]


def write(rows: Iterable[JSONObject], out: str | Path, fmt: str) -> Path:
    rows = list(rows)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    if fmt == "csv":
        from judgekit.recorded.csvsafe import write_dicts

        buf = io.StringIO(newline="")
        write_dicts(buf, columns(rows), rows)
        tmp.write_text(buf.getvalue(), encoding="utf-8", newline="")
    elif fmt == "jsonl":
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                       encoding="utf-8")
    elif fmt == "parquet":
        df = frame(rows)
        try:
            df.to_parquet(tmp, index=False)
        except ImportError as exc:
            raise MissingDependencyError("parquet needs pyarrow: pip install "
                                         "'judgekit[parquet]'") from exc
    else:
        raise ConfigError(f"--format {fmt!r}: use csv, jsonl or parquet")
    tmp.replace(path)
    return path
