"""Records as flat rows with stable column names, and as pandas DataFrames: nested
fields joined with "." (``evaluator.label``), lists kept as JSON text in one column, so
a row is one record whatever its nesting (what ``RunResult.to_pandas`` and
``judgekit export`` show)."""

from __future__ import annotations

import json
from typing import Any

from judgekit.core.errors import MissingDependencyError
from judgekit.core.jsontypes import JSONObject

__all__ = ["columns", "flatten", "frame", "headline_rows"]


def flatten(row: JSONObject, prefix: str = "") -> JSONObject:
    out: JSONObject = {}
    for k, v in row.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif isinstance(v, (list, tuple)):
            out[name] = json.dumps(v, ensure_ascii=False)
        else:
            out[name] = v
    return out


def columns(rows: list[JSONObject]) -> list[str]:
    """Every column in first-seen order (rows may differ in their keys)."""
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    return list(seen)


def headline_rows(result: Any) -> list[JSONObject]:
    """The run's headline rows (its method's ``rows`` hook), flattened."""
    base = {"method": result.method, "experiment": result.experiment}
    hook = result.spec.rows if result.spec is not None else None
    rows = hook(result.payload) if hook is not None and result.payload is not None else []
    return [flatten({**base, **r}) for r in rows]


def frame(rows: list[JSONObject]) -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingDependencyError("pandas is not installed: pip install "
                                     "'judgekit[pandas]'") from exc
    flat = [flatten(r) for r in rows]
    return pd.DataFrame(flat, columns=columns(flat))
