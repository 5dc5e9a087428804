"""Compare two runs of one method on the same items: paired differences with paired
intervals, the items whose outcome changed, and a verdict at the configured level.

Each method says what its paired outcome is (its spec's ``compare`` hook: the per-item
outcome, secondary paired rows, the agreement of the two runs' labels); this module
tests the primary difference (Newcombe's paired interval with the exact McNemar test
for 0/1 outcomes, a percentile bootstrap with a paired t test for scores) and writes
the folder. What did not match is counted, never silently dropped, and a comparison
with fewer than two matched items is refused.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from judgekit.analysis.paired import mean_row, paired_rate
from judgekit.core.errors import ConfigError, StatsError
from judgekit.core.methods import all_methods
from judgekit.core.results import RunResult
from judgekit.core.spec import CompareRow, PairAgreement

COMPARE_SCHEMA_VERSION = 1


class Side(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    judge: str | None  # the model that produced the compared outcome
    n_items: int  # items with an outcome in this run
    rate: float | None  # the compared rate (or mean score) over the matched items
    rate_ci: list[float] | None


# Deprecated name of a paired row (judgekit.core.spec.CompareRow).
Row = CompareRow


class Comparison(BaseModel):
    """compare.json: one primary paired difference, secondary rows, agreement."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = COMPARE_SCHEMA_VERSION
    method: str
    measure: str  # what the difference is a difference of
    level: float
    a: Side
    b: Side
    n_paired: int
    unmatched_a: int
    unmatched_b: int
    difference: float
    difference_ci: list[float]
    p_value: float | None
    verdict: str
    secondary: list[CompareRow]
    agreement: PairAgreement | None
    changed: int  # matched items whose outcome differs


class Difference(BaseModel):
    """One matched item of differences.csv."""

    model_config = ConfigDict(extra="forbid")
    key: str
    a: float
    b: float
    difference: float
    changed: bool


def load(path: str | Path) -> RunResult[Any]:
    """A run's result from its folder or its results file."""
    from judgekit.runs.folder import load_results, results_path

    return load_results(results_path(path))


def _judge(result: RunResult[Any]) -> str | None:
    hook = result.spec.judge if result.spec is not None else None
    return hook(result) if hook is not None else None


def compare(a: Any, b: Any, *, level: float | None = None
            ) -> tuple[Comparison, list[Difference]]:
    """Compare run ``b`` against run ``a`` (results, folders or results file paths):
    the typed comparison and the per-item rows (key, a, b, changed)."""
    ra = a if isinstance(a, RunResult) else load(a)
    rb = b if isinstance(b, RunResult) else load(b)
    if ra.method != rb.method or ra.experiment != rb.experiment:
        raise ConfigError(f"compare needs two runs of one method: {ra.method} vs {rb.method}")
    hook = ra.spec.compare if ra.spec is not None else None
    if hook is None:
        able = ", ".join(s.key for s in all_methods() if s.compare is not None)
        raise ConfigError(f"compare supports {able}; not {ra.method}/{ra.experiment}")
    config_level = (ra.config or {}).get("level")
    lvl = float(level if level is not None else
                config_level if isinstance(config_level, (int, float)) else 0.95)
    if not 0 < lvl < 1:
        raise ConfigError(f"--level {lvl} must lie in (0, 1)")
    got = hook(ra, rb, lvl)
    n_a, n_b = got.counts
    if len(got.keys) < 2:
        raise StatsError(f"compare: only {len(got.keys)} item(s) have a {got.measure} in "
                         f"both runs (A has {n_a} records, B has {n_b}); the runs must share "
                         "their items (by id) and both have that measure on them")
    pairs = list(zip(got.a, got.b))
    main = got.main if got.main is not None else paired_rate(got.measure, pairs, lvl) \
        if got.binary else mean_row(got.measure, pairs, lvl, ra.seed or 0, got.bounds)
    assert main.difference is not None and main.difference_ci is not None
    alpha = 1 - lvl
    shown = (main.p_value is None or main.p_value < alpha) and \
        (main.difference_ci[0] > 0 or main.difference_ci[1] < 0)
    verdict = ("no difference shown at this level" if not shown else
               f"B is {'higher' if main.difference > 0 else 'lower'} than A")
    side_ci = (_side_ci(got.a, got.binary, lvl, got.bounds),
               _side_ci(got.b, got.binary, lvl, got.bounds))
    comp = Comparison(
        method=ra.method, measure=got.measure, level=lvl,
        a=Side(path=_where(ra), judge=_judge(ra), n_items=n_a, rate=main.a,
               rate_ci=side_ci[0]),
        b=Side(path=_where(rb), judge=_judge(rb), n_items=n_b, rate=main.b,
               rate_ci=side_ci[1]),
        n_paired=len(got.keys), unmatched_a=n_a - len(got.keys),
        unmatched_b=n_b - len(got.keys), difference=main.difference,
        difference_ci=main.difference_ci, p_value=main.p_value, verdict=verdict,
        secondary=got.secondary, agreement=got.agreement,
        changed=int(sum(x != y for x, y in pairs)))
    items = [Difference(key=k, a=x, b=y, difference=y - x, changed=x != y)
             for k, x, y in zip(got.keys, got.a, got.b)]
    return comp, items


def _where(result: RunResult[Any]) -> str:
    """The run's folder name (not an absolute local path)."""
    folder = result.folder
    return folder.name if folder else ""


def _side_ci(values: list[float], binary: bool, level: float,
             bounds: tuple[float, float]) -> list[float] | None:
    from judgekit.stats.bootstrap import bounded_mean_interval
    from judgekit.stats.proportions import wilson_interval

    if binary:
        return wilson_interval(int(sum(values)), len(values), level).as_list()
    return bounded_mean_interval(np.array(values), bounds[0], bounds[1], level).as_list()


def items_csv(items: Iterable[Difference]) -> str:
    from judgekit.recorded.csvsafe import write_dicts

    buf = io.StringIO(newline="")
    write_dicts(buf, list(Difference.model_fields), (row.model_dump() for row in items))
    return buf.getvalue()


def write(comp: Comparison, items: list[Difference], out: str | Path, *,
          overwrite: bool = False) -> Path:
    """compare.json, differences.csv, report.md and report.html into ``out`` (a new or
    empty folder, or a previous comparison's with ``overwrite``; never a run's)."""
    from judgekit.report.compare import build
    from judgekit.runs.folder import write_folder
    from judgekit.runs.io import prepare_out, record_outputs

    folder = Path(out)
    before = prepare_out(folder, overwrite=overwrite, kind="compare")
    write_folder(folder, build(comp), details={"items": [
        i.model_dump(mode="json") for i in items]}, json_files={"compare.json": comp},
        text_files={"differences.csv": items_csv(items)})
    record_outputs(folder, before, "compare")
    return folder
