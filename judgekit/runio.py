"""Writing run outputs: deterministic JSON, JSONL and text, secrets scrubbed, each file
replaced atomically."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from judgekit.errors import ConfigError
from judgekit.jsontypes import JSONObject
from judgekit.llm.secrets import scrub


def clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    return obj


def write_json(path: Path, data: JSONObject) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(scrub(clean(data)), indent=2, sort_keys=True,
                              ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(scrub(text), encoding="utf-8", newline="")
    os.replace(tmp, path)


def write_failures(out: Path, log: list[JSONObject]) -> dict[str, int]:
    """Write the run's failure log (one JSON line per failed call, with its transcript)
    as failures.jsonl, and return the failed-call counts by kind."""
    path = out / "failures.jsonl"
    if log:
        write_text(path, "".join(json.dumps(scrub(clean(r)), sort_keys=True,
                                            ensure_ascii=False) + "\n" for r in log))
    elif path.exists():
        path.unlink()
    counts: dict[str, int] = {}
    for r in log:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return counts


# The output folder's lock (judgekit.runguard): one run per folder at a time.
LOCK_NAME = ".judgekit.lock"

# What a run writes: cleared by --overwrite; anything else in the folder is left alone.
RUN_OUTPUTS = ("results.json", "report.md", "report.html", "failures.jsonl", "*.png",
               "queries.jsonl", "items.jsonl", "replica_failures.jsonl")


def prepare_out(out: Path, *, overwrite: bool, inputs: tuple[Path, ...] = ()) -> None:
    """A run writes into a fresh folder; a non-empty one needs ``overwrite``, which
    removes the previous run's outputs (so no stale figure survives). Never the input."""
    out = Path(out)
    for p in inputs:
        if p.exists() and out.resolve() in (p.resolve(), *p.resolve().parents):
            raise ConfigError(f"--out {out} contains the run's input {p}; choose another folder")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder")
    if out.is_dir() and any(p.name != LOCK_NAME for p in out.iterdir()):
        if not overwrite:
            raise ConfigError(f"output folder {out} is not empty; choose a new --out or pass "
                              "--overwrite to replace the previous run's outputs")
        for pattern in RUN_OUTPUTS:
            for f in out.glob(pattern):
                if f.is_file():
                    f.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _np_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def jsonl_line(row: JSONObject) -> str:
    """One JSON line, NaN/inf as null. The fast path dumps directly; only a row holding
    a non-finite float takes the slower cleaning walk. write_text scrubs the result."""
    try:
        return json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False,
                          default=_np_default) + "\n"
    except ValueError:
        return json.dumps(clean(row), sort_keys=True, ensure_ascii=False) + "\n"
