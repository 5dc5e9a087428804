"""Writing run outputs: results.json (deterministic) and report.md, secrets scrubbed."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from judgekit.llm.secrets import scrub


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    return obj


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(scrub(_clean(data)), indent=2, sort_keys=True,
                              ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(scrub(text), encoding="utf-8")
    os.replace(tmp, path)


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    def fmt(v: Any) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def write_failures(out: Path, client: Any) -> dict[str, int]:
    """Write the run's failure log (one JSON line per failed call, with its transcript)
    as failures.jsonl, and return the failed-call counts by kind."""
    log = getattr(client, "failure_log", [])
    path = out / "failures.jsonl"
    if log:
        write_text(path, "".join(json.dumps(scrub(_clean(r)), sort_keys=True,
                                            ensure_ascii=False) + "\n" for r in log))
    elif path.exists():
        path.unlink()
    counts: dict[str, int] = {}
    for r in log:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return counts
