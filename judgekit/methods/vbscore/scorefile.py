"""`judgekit vbscore FILE`: score a JSONL file of already-tagged replicas."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from judgekit.core.errors import ConfigError, DataError, JudgekitError, describe_validation
from judgekit.core.textio import json_loads
from judgekit.methods.vbscore.distribution import Candidate, build, normalise_surface
from judgekit.methods.vbscore.metric import ALPHA_GRID, binary_gains, dcg_gains
from judgekit.methods.vbscore.metric import score as score_replica
from judgekit.methods.vbscore.replicas import (
    aggregate_collection,
    aggregate_query,
    batch_query_intervals,
    bootstrap_covers,
)


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


def read_replicas(path: Path, *, normalize: bool = False) -> Iterator[ReplicaLine]:
    """Replica lines, streamed and each checked: probabilities sum to 1 (or
    ``normalize``), one kind of weight per line, no duplicate (query_id, replica)."""
    if not path.exists():
        raise DataError(f"{path}: file not found")

    def lines() -> Iterator[tuple[int, Any]]:
        with open(path, "rb") as fh:
            for n, raw_line in enumerate(fh, start=1):
                try:
                    line = raw_line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(f"{path} line {n}, column {exc.start + 1}: byte "
                                    f"0x{raw_line[exc.start]:02x} is not valid UTF-8; save "
                                    "the file as UTF-8") from None
                if line.strip():
                    try:
                        yield n, json_loads(line)
                    except json.JSONDecodeError as exc:
                        raise DataError(f"{path} line {n}: not JSON ({exc.msg})") from exc

    return iter_replicas(lines(), str(path), normalize=normalize)


def iter_replicas(records: Iterable[tuple[int, Any]], source: str, *,
                  normalize: bool = False) -> Iterator[ReplicaLine]:
    seen: dict[tuple[str, int], int] = {}
    where = f"{source} line" if source != "records" else "record"
    any_line = False
    for n, raw in records:
        try:
            rec = ReplicaLine.model_validate(raw)
        except ValidationError as exc:
            raise DataError(f"{where} {n}: {describe_validation(exc)}") from exc
        _check_line(f"{where} {n}", rec, normalize)
        first = seen.setdefault((rec.query_id, rec.replica), n)
        if first != n:
            raise DataError(f"{where} {n}: query {rec.query_id!r} replica "
                            f"{rec.replica} already appears at {first}; each "
                            "(query_id, replica) must appear once")
        any_line = True
        yield rec
    if not any_line:
        raise DataError(f"{source}: no replica lines")


def _check_line(where: str, rec: ReplicaLine, normalize: bool) -> None:
    kinds = {("prob" if i.prob is not None else "score") for i in rec.interpretations}
    if any(i.prob is not None and i.score is not None for i in rec.interpretations) \
            or len(kinds) > 1:
        raise DataError(f"{where}: query {rec.query_id!r} mixes 'prob' and 'score' "
                        "across its interpretations; give every interpretation the same one")
    if kinds == {"prob"}:
        total = sum(float(i.prob or 0.0) for i in rec.interpretations)
        if abs(total - 1.0) > 1e-6 and not normalize:
            raise DataError(f"{where}: query {rec.query_id!r} interpretation "
                            f"probabilities sum to {total:.6g}, not 1; fix them or pass "
                            "--normalize to rescale")


def _check_options(alphas: list[float], k: int | None, gain: str, variance: str,
                   resamples: int) -> None:
    if not alphas:
        raise ConfigError("give at least one --alpha")
    bad = [a for a in alphas if not (a >= 0 and math.isfinite(a))]
    if bad:
        raise ConfigError(f"--alpha {bad[0]} must be a finite number >= 0")
    if k is not None and k < 1:
        raise ConfigError(f"--k {k} must be >= 1 (the number of top outputs scored)")
    if gain not in ("binary", "dcg"):
        raise ConfigError(f"--gain {gain!r} is not binary or dcg")
    if variance not in ("bernoulli", "spread"):
        raise ConfigError(f"--variance {variance!r} is not bernoulli or spread")
    if resamples < 100:
        raise ConfigError(f"--resamples {resamples} must be >= 100 for a bootstrap interval")


def score_file(path: Path, *, alphas: list[float], k: int | None, seed: int, gain: str = "binary",
               variance: str = "bernoulli", resamples: int = 10_000,
               clip: bool = False, normalize: bool = False) -> dict[str, Any]:
    """Score a JSONL file of tagged replicas (the `judgekit vbscore` command)."""
    _check_options(alphas, k, gain, variance, resamples)
    return _score(read_replicas(path, normalize=normalize), alphas=alphas, k=k, seed=seed,
                  gain=gain, variance=variance, resamples=resamples, clip=clip,
                  normalize=normalize)


class QueryScores(BaseModel):
    """One query's scores; VB dictionaries are keyed by alpha (a number)."""

    model_config = ConfigDict(extra="forbid")
    query_id: str
    replicas: int
    es: float
    es_ci: list[float]
    vb: dict[float, float]
    vb_of_mean_es: dict[float, float]
    vb_ci: dict[float, list[float]]
    vb_ci_normal: dict[float, list[float]]
    vb_ci_bootstrap: dict[float, list[float]] | None = None
    accuracy: float | None
    replicas_agree: bool


class CollectionScores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n_queries: int
    es: float
    es_ci: list[float]
    vb: dict[float, float]
    vb_ci: dict[float, list[float]]
    paired_t_vb_vs_es: dict[float, dict[str, Any]]
    accuracy: float | None


class VBScores(BaseModel):
    """What :func:`score` returns (``model_dump(mode="json")`` is the `judgekit vbscore`
    file, whose JSON keys are strings)."""

    model_config = ConfigDict(extra="forbid")
    settings: dict[str, Any]
    queries: list[QueryScores]
    collection: CollectionScores


def score(records: Iterable[dict[str, Any]], *, alphas: Sequence[float] = ALPHA_GRID,
          k: int | None = None, seed: int = 0, gain: str = "binary",
          variance: str = "bernoulli", resamples: int = 10_000, clip: bool = False,
          normalize: bool = False) -> VBScores:
    """ES and VB_alpha per query and for the collection, with intervals, from tagged
    replica records (dicts in the `judgekit vbscore` JSONL format).

    Example::

        s = judgekit.methods.vbscore.score([{"query_id": "q1", "replica": 0,
                                     "interpretations": [{"id": "Paris", "prob": 0.7},
                                                         {"id": "Paris, Texas", "prob": 0.3}],
                                     "outputs": [{"tag": "Paris"}]}], alphas=[0.5])
        s.collection.vb[0.5]
    """
    alphas = list(alphas)
    _check_options(alphas, k, gain, variance, resamples)
    lines = iter_replicas(enumerate(records, start=1), "records", normalize=normalize)
    return VBScores.model_validate(_score(lines, alphas=alphas, k=k, seed=seed, gain=gain,
                                          variance=variance, resamples=resamples, clip=clip,
                                          normalize=normalize))


def _score(lines: Iterable[ReplicaLine], *, alphas: list[float], k: int | None,
           seed: int, gain: str, variance: str, resamples: int, clip: bool, normalize: bool
           ) -> dict[str, Any]:
    """Stream the lines: each replica is scored as it is read and only its numbers are
    kept (ES, VB per alpha, correctness, spread), so memory is O(replicas), not O(text)."""
    gain_fn = binary_gains if gain == "binary" else dcg_gains
    acc: OrderedDict[str, list[tuple[int, float, list[float], bool | None, float]]] = \
        OrderedDict()
    for rep in lines:
        cands = [Candidate(i.id, score=i.score, prob=i.prob, kb_id=i.kb_id)
                 for i in rep.interpretations]
        try:
            dist = build(cands)
        except JudgekitError as exc:
            raise DataError(f"query {rep.query_id} replica {rep.replica}: {exc}") from exc
        # Tags and gold are matched to interpretation ids the same way ids are merged
        # with each other: casefolded, NFC, punctuation removed.
        label_of = {normalise_surface(m): lab for lab, ms in zip(dist.labels, dist.members)
                    for m in ms}
        tags = [label_of.get(normalise_surface(o.tag), o.tag) if o.tag else None
                for o in rep.outputs]
        g = gain_fn(dist.labels, tags, k)
        s = score_replica(dist.probs, g, alphas, variance, clip)  # type: ignore[arg-type]
        correct = None
        if rep.gold is not None:
            gold = label_of.get(normalise_surface(rep.gold), rep.gold)
            correct = bool(tags) and tags[0] == gold
        acc.setdefault(rep.query_id, []).append(
            (rep.replica, s.es, [s.vb[a] for a in alphas], correct, s.robustness ** 2))
    per_query = []
    for qid, rows in acc.items():
        rows.sort(key=lambda r: r[0])
        es = [r[1] for r in rows]
        vbs = {a: [r[2][j] for r in rows] for j, a in enumerate(alphas)}
        correct_list = [bool(r[3]) for r in rows if r[3] is not None]
        per_query.append((qid, es, vbs, correct_list, [r[4] for r in rows]))
    stats = [np.array([es, *[vbs[a] for a in alphas]], float)
             for _, es, vbs, _, _ in per_query]
    boot = [i for i, (_, es, _, _, _) in enumerate(per_query) if bootstrap_covers(es)]
    got = dict(zip(boot, batch_query_intervals([stats[i] for i in boot], 0.95, resamples,
                                               seed)))
    intervals = [got.get(i) for i in range(len(per_query))]
    aggs = [aggregate_query(qid, es, vbs, resamples=resamples, correct=correct or None,
                            variance_of_mean=None if variance == "bernoulli"
                            else float(np.mean(spreads)), clip=clip, intervals=cis)
            for (qid, es, vbs, correct, spreads), cis in zip(per_query, intervals)]
    coll = aggregate_collection(aggs, resamples=resamples, seed=seed)
    fmt = _alpha_key
    return {
        "settings": {"alphas": alphas, "k": k, "seed": seed, "gain": gain, "variance": variance,
                     "resamples": resamples, "normalize": normalize,
                     "interval": "95%: query level Wilson (0/1 replica scores) or Student "
                                 "t, percentile bootstrap (vb_ci_bootstrap) only with >= 20 "
                                 "graded replicas; collection level Student t with the "
                                 "range's ends as pseudo-observations",
                     "vb_clipped_to_unit_interval": clip},
        "queries": [{
            "query_id": q.query_id, "replicas": q.replicas, "es": q.es,
            "vb": {fmt(a): v for a, v in q.vb.items()},
            "vb_of_mean_es": {fmt(a): v for a, v in q.vb_of_mean_es.items()},
            "vb_ci": {fmt(a): ci.as_list() for a, ci in q.vb_ci.items()},
            "vb_ci_normal": {fmt(a): ci.as_list() for a, ci in q.vb_ci_normal.items()},
            "vb_ci_bootstrap": None if q.vb_ci_bootstrap is None else
            {fmt(a): ci.as_list() for a, ci in q.vb_ci_bootstrap.items()},
            "es_ci": q.es_ci.as_list(), "accuracy": q.accuracy,
            # every replica gave the same score: the interval has zero width because B
            # replicas cannot show spread, not because the score is certain
            "replicas_agree": q.replicas_agree,
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
        t.add_row(q["query_id"], str(q["replicas"]) + (" (all agree)" if q["replicas_agree"]
                                                       else ""),
                  f"{q['es']:.3f}", *[f"{q['vb'][a]:.3f}" for a in alphas])
    c = result["collection"]
    t.add_row("collection", f"n={c['n_queries']}", f"{c['es']:.3f} {_ci(c['es_ci'])}",
              *[f"{c['vb'][a]:.3f} {_ci(c['vb_ci'][a])}" for a in alphas])
    console.print(t)


def _ci(ci: list[float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"
