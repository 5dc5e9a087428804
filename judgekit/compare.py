"""Compare two runs of one method on the same items: paired differences with paired
intervals, the items whose outcome changed, and a verdict at the configured level.

- No-Data audits: per item, did the evaluator pass the challenge-response protocol;
  the difference of success rates (B - A) with Newcombe's paired interval and the
  exact McNemar test; label accuracy against known labels (paired the same way); the
  chance-corrected agreement of the two evaluators' labels.
- Probes: per pair, did the verdict flip when the answers were swapped (order
  inconsistency); its difference (B - A) the same way; accuracy on pairs with a known
  answer and the flip rate under every shared transform as secondary rows; agreement
  of the two judges' verdicts.
- VB-Score: per query, VB at the run's alpha; the mean difference (B - A) with a
  percentile bootstrap over queries (the query is the independent unit) and a paired
  t test.

Items are matched by content (No-Data: the judged prompt and output) or by id (probe
pairs, VB-Score queries); what did not match is counted, never silently dropped, and
a comparison with fewer than two matched items is refused.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from judgekit.errors import ConfigError, StatsError

COMPARE_SCHEMA_VERSION = 1


class Side(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    judge: str | None  # the model that produced the compared outcome
    n_items: int  # items with an outcome in this run
    rate: float | None  # the compared rate (or mean score) over the matched items
    rate_ci: list[float] | None


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    n: int
    a: float | None
    b: float | None
    difference: float | None
    difference_ci: list[float] | None
    p_value: float | None


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
    secondary: list[Row]
    agreement: dict[str, Any] | None
    changed: int  # matched items whose outcome differs


class _Outcomes(BaseModel):
    """Per matched key: the primary outcome (0/1 or a score) of each run."""

    keys: list[str]
    a: list[float]
    b: list[float]


# (measure, matched outcomes, secondary rows, agreement, records in A and in B)
Paired = tuple[str, _Outcomes, list[Row], Any, tuple[int, int]]


def load(path: str | Path) -> Any:
    """A run's result from its folder or its results.json."""
    from judgekit.results import load_results

    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    if not p.exists():
        raise ConfigError(f"{path}: no results.json here; give a run folder or its "
                          "results.json")
    return load_results(p)


def _item_key(rec: dict[str, Any]) -> str:
    x = rec.get("x") or {}
    text = json.dumps([x.get("Prompt"), x.get("Output")], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _rows_by(result: Any, view: str, key: Callable[[dict[str, Any]], str]
             ) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for rec in result.detail(view):
        out.setdefault(key(rec), rec)
    return out


def _paired_rate(name: str, pairs: list[tuple[float, float]], level: float) -> Row:
    from judgekit.stats.proportions import newcombe_paired

    if len(pairs) < 1:
        return Row(name=name, n=0, a=None, b=None, difference=None, difference_ci=None,
                   p_value=None)
    x, y = zip(*pairs)
    d = newcombe_paired(list(y), list(x), level)  # B - A
    return Row(name=name, n=d.n, a=float(np.mean(x)), b=float(np.mean(y)),
               difference=d.diff, difference_ci=d.ci, p_value=d.p_value)


def _agreement(a: list[Any], b: list[Any], level: float, seed: int) -> dict[str, Any] | None:
    from judgekit.stats.agreement import agreement

    if len(a) < 2:
        return None
    ag = agreement(a, b, seed=seed, resamples=1000, level=level)
    return {"n": ag.n, "percent": ag.percent, "kappa": ag.kappa, "ac1": ag.ac,
            "cis": ag.cis, "undefined": ag.undefined}


def _nodata(ra: Any, rb: Any, level: float) -> Paired:
    ia, ib = _rows_by(ra, "items", _item_key), _rows_by(rb, "items", _item_key)
    keys = [k for k in ia if k in ib and ia[k].get("excluded") is None
            and ib[k].get("excluded") is None and ia[k].get("success") is not None
            and ib[k].get("success") is not None]
    out = _Outcomes(keys=keys, a=[float(bool(ia[k]["success"])) for k in keys],
                    b=[float(bool(ib[k]["success"])) for k in keys])
    acc = [(float(ia[k]["evaluator"]["label"] == ia[k]["label"]),
            float(ib[k]["evaluator"]["label"] == ib[k]["label"])) for k in keys
           if ia[k].get("label") is not None and ia[k].get("evaluator")
           and ib[k].get("evaluator")]
    rows = [_paired_rate("label accuracy (known labels)", acc, level)] if acc else []
    la = [ia[k]["evaluator"]["label"] for k in keys if ia[k].get("evaluator")
          and ib[k].get("evaluator")]
    lb = [ib[k]["evaluator"]["label"] for k in keys if ia[k].get("evaluator")
          and ib[k].get("evaluator")]
    return ("challenge-response success rate", out, rows,
            _agreement(la, lb, level, ra.seed or 0), (len(ia), len(ib)))


def _probe(ra: Any, rb: Any, level: float) -> Paired:
    ia = _rows_by(ra, "items", lambda r: str(r["id"]))
    ib = _rows_by(rb, "items", lambda r: str(r["id"]))
    both = [k for k in ia if k in ib]

    def flipped(rec: dict[str, Any], t: str) -> float | None:
        v = rec.get("verdicts") or {}
        return None if not v.get("run0") or not v.get(t) else float(v["run0"] != v[t])

    keys = [k for k in both if flipped(ia[k], "swap") is not None
            and flipped(ib[k], "swap") is not None]
    out = _Outcomes(keys=keys, a=[float(flipped(ia[k], "swap") or 0) for k in keys],
                    b=[float(flipped(ib[k], "swap") or 0) for k in keys])
    rows = []
    acc = [(float(ia[k]["verdicts"]["run0"] == ia[k]["correct"]),
            float(ib[k]["verdicts"]["run0"] == ib[k]["correct"])) for k in both
           if ia[k].get("correct") and (ia[k].get("verdicts") or {}).get("run0")
           and (ib[k].get("verdicts") or {}).get("run0")]
    if acc:
        rows.append(_paired_rate("accuracy (pairs with a known answer)", acc, level))
    transforms = sorted({t for k in both for t in (ia[k].get("verdicts") or {})
                         if ":" not in t and not t.startswith("run") and t != "swap"})
    for t in transforms:
        pairs = [(fa, fb) for k in both
                 if (fa := flipped(ia[k], t)) is not None and (fb := flipped(ib[k], t))
                 is not None]
        rows.append(_paired_rate(f"flip rate under {t}", pairs, level))
    judged = [k for k in both if (ia[k].get("verdicts") or {}).get("run0")
              and (ib[k].get("verdicts") or {}).get("run0")]
    va = [int(ia[k]["verdicts"]["run0"] == "a") for k in judged]
    vb = [int(ib[k]["verdicts"]["run0"] == "a") for k in judged]
    return ("order inconsistency (verdict flips when the answers are swapped)", out, rows,
            _agreement(va, vb, level, ra.seed or 0), (len(ia), len(ib)))


def _vbscore(ra: Any, rb: Any, level: float) -> Paired:
    alpha = str(float(ra.alpha))

    def key(r: dict[str, Any]) -> str:
        return f"{r['dataset']}:{r['query_id']}"

    ia, ib = _rows_by(ra, "queries", key), _rows_by(rb, "queries", key)
    keys = [k for k in ia if k in ib and (ia[k].get("vb") or {}).get(alpha) is not None
            and (ib[k].get("vb") or {}).get(alpha) is not None]
    out = _Outcomes(keys=keys, a=[float(ia[k]["vb"][alpha]) for k in keys],
                    b=[float(ib[k]["vb"][alpha]) for k in keys])
    es = [(float(ia[k]["es"]), float(ib[k]["es"])) for k in keys
          if ia[k].get("es") is not None and ib[k].get("es") is not None]
    rows = [_mean_row("expected success ES", es, level, ra.seed or 0)] if es else []
    return (f"VB-Score at alpha = {alpha} (mean over queries)", out, rows, None,
            (len(ia), len(ib)))


def _mean_row(name: str, pairs: list[tuple[float, float]], level: float, seed: int) -> Row:
    from judgekit.stats.bootstrap import percentile_interval
    from judgekit.stats.tests import paired_t_test

    x, y = (np.array(v, float) for v in zip(*pairs))
    d = y - x
    if np.all(d == d[0]):
        # no spread to resample: Hoeffding's bound for a mean of differences in [-1, 1]
        # keeps a width (the bootstrap would give [d, d] from a handful of queries)
        half = float(np.sqrt(4.0 * np.log(2.0 / (1.0 - level)) / (2.0 * d.size)))
        ci = [max(-1.0, float(d[0]) - half), min(1.0, float(d[0]) + half)]
    else:
        ci = percentile_interval(d, level, 10_000, seed).as_list()
    t = paired_t_test(y, x)
    return Row(name=name, n=len(x), a=float(x.mean()), b=float(y.mean()),
               difference=float(d.mean()), difference_ci=ci, p_value=t.p_value)


METHODS: dict[str, Callable[[Any, Any, float], Paired]] = {
    "nodata": _nodata, "probe": _probe, "vbscore": _vbscore}


def _judge(result: Any) -> str | None:
    cfg = result.config or {}
    models = cfg.get("models") or {}
    return models.get("evaluator") or models.get("judge") or models.get("system")


def compare(a: Any, b: Any, *, level: float | None = None) -> tuple[Comparison, list[dict]]:
    """Compare run ``b`` against run ``a`` (results, folders or results.json paths):
    the typed comparison and the per-item rows (key, a, b, changed)."""
    ra = a if hasattr(a, "detail") else load(a)
    rb = b if hasattr(b, "detail") else load(b)
    if ra.method != rb.method or ra.experiment != rb.experiment:
        raise ConfigError(f"compare needs two runs of one method: {ra.method} vs {rb.method}")
    if ra.method not in METHODS or (ra.method == "nodata" and ra.experiment != "llm"):
        raise ConfigError(f"compare supports {', '.join(METHODS)} (LLM audits); "
                          f"not {ra.method}/{ra.experiment}")
    lvl = float(level if level is not None else (ra.config or {}).get("level") or 0.95)
    if not 0 < lvl < 1:
        raise ConfigError(f"--level {lvl} must lie in (0, 1)")
    measure, out, rows, agree, (n_a, n_b) = METHODS[ra.method](ra, rb, lvl)
    if len(out.keys) < 2:
        raise StatsError(f"compare: only {len(out.keys)} item(s) have an outcome in both "
                         f"runs (A has {n_a}, B has {n_b}); the runs must share their items")
    binary = ra.method != "vbscore"
    pairs = list(zip(out.a, out.b))
    main = _paired_rate(measure, pairs, lvl) if binary else \
        _mean_row(measure, pairs, lvl, ra.seed or 0)
    assert main.difference is not None and main.difference_ci is not None
    alpha = 1 - lvl
    shown = main.p_value is not None and main.p_value < alpha and \
        (main.difference_ci[0] > 0 or main.difference_ci[1] < 0)
    verdict = ("no difference shown at this level" if not shown else
               f"B is {'higher' if main.difference > 0 else 'lower'} than A")
    side_ci = _side_ci(out.a, binary, lvl), _side_ci(out.b, binary, lvl)
    comp = Comparison(
        method=ra.method, measure=measure, level=lvl,
        a=Side(path=_where(ra), judge=_judge(ra), n_items=n_a, rate=main.a,
               rate_ci=side_ci[0]),
        b=Side(path=_where(rb), judge=_judge(rb), n_items=n_b, rate=main.b,
               rate_ci=side_ci[1]),
        n_paired=len(out.keys), unmatched_a=n_a - len(out.keys),
        unmatched_b=n_b - len(out.keys), difference=main.difference,
        difference_ci=main.difference_ci, p_value=main.p_value, verdict=verdict,
        secondary=rows, agreement=agree, changed=int(sum(x != y for x, y in pairs)))
    items = [{"key": k, "a": x, "b": y, "difference": y - x, "changed": x != y}
             for k, x, y in zip(out.keys, out.a, out.b)]
    return comp, items


def _where(result: Any) -> str:
    """The run's folder name (not an absolute local path)."""
    folder = getattr(result, "folder", None)
    return folder.name if folder else ""


def _side_ci(values: list[float], binary: bool, level: float) -> list[float] | None:
    from judgekit.stats.bootstrap import normal_interval
    from judgekit.stats.proportions import wilson_interval

    if binary:
        return wilson_interval(int(sum(values)), len(values), level).as_list()
    return normal_interval(np.array(values), level).as_list()


def items_csv(items: Iterable[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["key", "a", "b", "difference", "changed"],
                       lineterminator="\n")
    w.writeheader()
    for row in items:
        w.writerow(row)
    return buf.getvalue()


def write(comp: Comparison, items: list[dict[str, Any]], out: str | Path) -> Path:
    """compare.json, differences.csv and report.html into ``out`` (atomically each)."""
    from judgekit.report.compare import build
    from judgekit.report.document import to_markdown
    from judgekit.report.html import write_report_html
    from judgekit.runio import write_json, write_text

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "compare.json", comp.model_dump(mode="json"))
    write_text(folder / "differences.csv", items_csv(items))
    doc = build(comp)
    write_text(folder / "report.md", to_markdown(doc))
    write_report_html(folder, doc, {"items": items})
    return folder
