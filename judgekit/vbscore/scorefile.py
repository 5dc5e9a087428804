"""`judgekit vbscore FILE`: score a JSONL file of already-tagged replicas."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError, model_validator

from judgekit.errors import DataError, JudgekitError, describe_validation
from judgekit.vbscore.distribution import Candidate, build
from judgekit.vbscore.metric import binary_gains, dcg_gains, score
from judgekit.vbscore.replicas import aggregate_collection, aggregate_query, query_seed


class _Interp(BaseModel):
    id: str
    prob: float | None = None
    score: float | None = None
    kb_id: str | None = None

    @model_validator(mode="after")
    def _one(self) -> _Interp:
        if self.prob is None and self.score is None:
            raise ValueError("each interpretation needs 'prob' or 'score'")
        return self


class _Output(BaseModel):
    tag: str | None = None


class ReplicaLine(BaseModel):
    query_id: str
    replica: int
    interpretations: list[_Interp]
    outputs: list[_Output]
    gold: str | None = None


def read_replicas(path: Path) -> OrderedDict[str, list[ReplicaLine]]:
    if not path.exists():
        raise DataError(f"{path}: file not found")
    groups: OrderedDict[str, list[ReplicaLine]] = OrderedDict()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = ReplicaLine.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} line {n}: not JSON ({exc.msg})") from exc
        except ValidationError as exc:
            raise DataError(f"{path} line {n}: {describe_validation(exc)}") from exc
        groups.setdefault(rec.query_id, []).append(rec)
    if not groups:
        raise DataError(f"{path}: no replica lines")
    return groups


def score_file(path: Path, *, alphas: list[float], k: int | None, seed: int, gain: str = "binary",
               variance: str = "bernoulli", resamples: int = 10_000,
               clip: bool = False) -> dict[str, Any]:
    if any(a < 0 for a in alphas):
        raise JudgekitError(f"--alpha values must be >= 0, got {alphas}")
    gain_fn = {"binary": binary_gains, "dcg": dcg_gains}.get(gain)
    if gain_fn is None:
        raise JudgekitError(f"--gain {gain!r} is not binary or dcg")
    aggs = []
    for qi, (qid, reps) in enumerate(read_replicas(path).items()):
        es, vbs, correct = [], {a: [] for a in alphas}, []  # type: ignore[var-annotated]
        for rep in sorted(reps, key=lambda r: r.replica):
            cands = [Candidate(i.id, score=i.score, prob=i.prob, kb_id=i.kb_id)
                     for i in rep.interpretations]
            try:
                dist = build(cands)
            except JudgekitError as exc:
                raise DataError(f"{path}: query {qid} replica {rep.replica}: {exc}") from exc
            label_of = {m: lab for lab, ms in zip(dist.labels, dist.members) for m in ms}
            tags = [label_of.get(o.tag, o.tag) if o.tag else None for o in rep.outputs]
            g = gain_fn(dist.labels, tags, k)
            s = score(dist.probs, g, alphas, variance, clip)  # type: ignore[arg-type]
            es.append(s.es)
            for a in alphas:
                vbs[a].append(s.vb[a])
            if rep.gold is not None:
                correct.append(bool(tags) and tags[0] == label_of.get(rep.gold, rep.gold))
        aggs.append(aggregate_query(qid, es, vbs, resamples=resamples,
                                    rng=query_seed(seed, qi), correct=correct or None))
    coll = aggregate_collection(aggs, resamples=resamples, seed=seed)
    fmt = _alpha_key
    return {
        "settings": {"alphas": alphas, "k": k, "seed": seed, "gain": gain, "variance": variance,
                     "resamples": resamples, "interval": "95% percentile bootstrap",
                     "vb_clipped_to_unit_interval": clip},
        "queries": [{
            "query_id": q.query_id, "replicas": q.replicas, "es": q.es,
            "vb": {fmt(a): v for a, v in q.vb.items()},
            "vb_of_mean_es": {fmt(a): v for a, v in q.vb_of_mean_es.items()},
            "vb_ci": {fmt(a): ci.as_list() for a, ci in q.vb_ci.items()},
            "vb_ci_normal": {fmt(a): ci.as_list() for a, ci in q.vb_ci_normal.items()},
            "es_ci": q.es_ci.as_list(), "accuracy": q.accuracy,
        } for q in aggs],
        "collection": {
            "n_queries": coll.n_queries, "es": coll.es, "es_ci": coll.es_ci.as_list(),
            "vb": {fmt(a): v for a, v in coll.vb.items()},
            "vb_ci": {fmt(a): ci.as_list() for a, ci in coll.vb_ci.items()},
            "paired_t_vb_vs_es": {fmt(a): t for a, t in coll.t_test.items()},
            "accuracy": coll.accuracy,
        },
    }


def _alpha_key(a: float) -> str:
    return repr(float(a))


def print_table(result: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    alphas = list(result["collection"]["vb"])
    t = Table(title="VB-Score")
    t.add_column("query")
    t.add_column("B")
    t.add_column("ES")
    for a in alphas:
        t.add_column(f"VB_{a}")
    for q in result["queries"]:
        t.add_row(q["query_id"], str(q["replicas"]), f"{q['es']:.3f}",
                  *[f"{q['vb'][a]:.3f}" for a in alphas])
    c = result["collection"]
    t.add_row("[b]collection[/b]", "", f"{c['es']:.3f}", *[f"{c['vb'][a]:.3f}" for a in alphas])
    console.print(t)
