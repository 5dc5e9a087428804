"""The VB-Score case study: interpretations, system answers and open-world tagging
over Monte Carlo replicas, scored with ES / VB_alpha and bootstrap intervals."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from judgekit.core import seeds as streams
from judgekit.core.payload import DetailFile
from judgekit.core.textio import jsonl_line
from judgekit.data.qa import Query, load_dataset_queries, normalise_answer, sample_queries
from judgekit.llm import Call, Client, StageResult
from judgekit.llm.secrets import clip
from judgekit.methods.vbscore import stages
from judgekit.methods.vbscore.config import VBScoreConfig
from judgekit.methods.vbscore.distribution import Candidate, build
from judgekit.methods.vbscore.metric import binary_gains, score
from judgekit.methods.vbscore.payload import VBScorePayload
from judgekit.methods.vbscore.replicas import (
    aggregate_collection,
    aggregate_query,
    batch_query_intervals,
    bootstrap_covers,
)
from judgekit.methods.vbscore.selfcheck import TagCheck, parse_tag, reading_pairs, rotation, tag_key


def execute(cfg: VBScoreConfig, client: Client) -> VBScorePayload:
    """The case study's payload: every dataset sampled first (bad data fails before any
    call), then the calls, then the scores."""
    data: dict[str, list[Query]] = {}
    for spec in cfg.datasets:
        qs = load_dataset_queries(spec.name, spec.path, spec.hf)
        data[spec.name] = sample_queries(qs, spec.n, cfg.seed, spec.name)
    client.preflight([stages.interpretation_stage(0.0, 1), stages.system_stage(0.0, 1),
                      stages.tagger_stage(1), stages.correctness_stage(1)],
                     [cfg.models["judge"], cfg.models["system"]])
    # each dataset's calls are made a chunk of queries at a time, each chunk scored and
    # its call results dropped before the next is asked: memory stays bounded
    raw = {name: _chunks(cfg, client, name, queries) for name, queries in data.items()}
    return VBScorePayload.model_validate(score_all(cfg, data, raw))


class Chunk(NamedTuple):
    """The call results of a chunk of one dataset's queries (``queries``: their indices);
    a replica's entries become None once it is scored."""

    queries: list[int]
    pairs: list[tuple[int, Query, int]]  # (query index, query, replica)
    interp: list[Any]
    system: list[Any]
    tags: dict[int, Any]  # by pair index (StageResult): the replicas that were tagged
    correct: dict[tuple[int, str], bool | None]
    tag_checks: dict[int, tuple[list[int], Any, Any]]
    seeds: list[tuple[int, int]]  # by pair index: the interpretation and system calls' seeds


CHUNK_REPLICAS = 2000  # replicas (a query's are never split) collected and scored at once


def _chunks(cfg: VBScoreConfig, client: Client, name: str, queries: list[Query]
            ) -> Iterator[Chunk]:
    size = max(1, CHUNK_REPLICAS // cfg.replicas)
    for ci, start in enumerate(range(0, len(queries), size)):
        part = range(start, min(len(queries), start + size))
        yield client.run_until_complete(_collect(cfg, client, name, queries, part, ci))


def headline(res: VBScorePayload) -> str:
    line = "; ".join(f"{d.name}: VB {d.vb:.3f} {_ci(d.vb_ci)} ES {d.es or 0.0:.3f} "
                     f"{_ci(d.es_ci)} (n = {d.n_queries} queries)"
                     for d in res.datasets if d.vb is not None)
    check = res.self_check
    if check is not None and not check.reliable:
        return f"UNRELIABLE: {line} -- {'; '.join(check.reasons)}"
    return line


def _ci(ci: list[float | None] | None) -> str:
    return "" if not ci or ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


async def _collect(cfg: VBScoreConfig, client: Client, name: str, queries: list[Query],
                   part: range, chunk: int = 0) -> Chunk:
    """The calls of the queries ``part`` (indices into ``queries``)."""
    judge, system = cfg.models["judge"], cfg.models["system"]
    istage = stages.interpretation_stage(cfg.interpretation_temperature, cfg.max_tokens)
    sstage = stages.system_stage(cfg.system_temperature, cfg.max_tokens)
    pairs = [(qi, queries[qi], b) for qi in part for b in range(cfg.replicas)]
    keys = [(qi, b) for qi, _q, b in pairs]
    seeds = list(zip(streams.integers("vbscore.interpretation_seed", cfg.seed, keys),
                     streams.integers("vbscore.system_seed", cfg.seed, keys)))
    # a query's replicas share one variables dict per stage (rendered once per chunk)
    ivars = {qi: {"query": queries[qi].text, "context": queries[qi].context,
                  "n": cfg.interpretations} for qi in part}
    svars = {qi: {"query": queries[qi].text, "context": queries[qi].context, "k": cfg.k}
             for qi in part}
    icalls = [Call(ivars[qi], judge, draw=b, sampling={"seed": si})
              for (qi, _q, b), (si, _ss) in zip(pairs, seeds)]
    samp = {"logprobs": True} if cfg.logprobs else {}
    scalls = [Call(svars[qi], system, draw=b, sampling={"seed": ss, **samp})
              for (qi, _q, b), (_si, ss) in zip(pairs, seeds)]
    ires, sres = await asyncio.gather(client.map(istage, icalls, description=f"{name} interp"),
                                      client.map(sstage, scalls, description=f"{name} system"))
    tag_idx, tcalls = [], []
    for i, (_qi, q, b) in enumerate(pairs):
        if ires[i].ok and sres[i].ok:
            tag_idx.append(i)
            tcalls.append(Call({"query": q.text,
                                "interpretations": [it.label for it in
                                                    ires[i].output.interpretations],
                                "answers": sres[i].output.answers[: cfg.k]}, judge, draw=b))
    tres = await client.map(stages.tagger_stage(cfg.max_tokens), tcalls,
                            description=f"{name} tagging")
    tags: dict[int, StageResult[Any]] = dict(zip(tag_idx, tres))
    # the tagger check's sample is shared out over the chunks by their size
    share = max(1, round(cfg.tagger_check_calls * len(part) / len(queries)))
    checks = await _recheck_tags(cfg, client, name, pairs, tcalls, tag_idx, tags, share,
                                 chunk) if cfg.check_tagger else {}
    correctness = await _check_answers(cfg, client, queries, pairs, sres, judge)
    return Chunk(list(part), pairs, list(ires), list(sres), tags, correctness, checks, seeds)


async def _recheck_tags(cfg: VBScoreConfig, client: Client, name: str,
                        pairs: list[tuple[int, Query, int]], tcalls: list[Call],
                        tag_idx: list[int], tags: dict[int, StageResult[Any]],
                        cap: int, chunk: int = 0) -> dict[int, tuple[list[int], Any, Any]]:
    """Each successful tagging call (or a seeded random sample of ``tagger_check_calls``
    of them) asked again with its answers rotated, and as given with a placebo reference
    id in the query (judgekit.methods.vbscore.selfcheck)."""
    from judgekit.judging.placebo import placebo_tag

    todo, calls, perms = [], [], []
    eligible = [k for k, (i, call) in enumerate(zip(tag_idx, tcalls))
                if tags[i].ok and len(call.variables["answers"]) >= 2]
    if len(eligible) > cap:  # a seeded random sample of the calls
        rng = streams.rng("vbscore.tag_sample", cfg.seed, *([chunk] if chunk else []))
        eligible = sorted(rng.choice(eligible, cap, replace=False).tolist())
    for k in eligible:
        i, call = tag_idx[k], tcalls[k]
        answers = call.variables["answers"]
        qi, _q, b = pairs[i]
        perm = rotation(streams.integer("vbscore.tagger_rotation", cfg.seed, qi, b), len(answers))
        todo.append(i)
        perms.append(perm)
        calls.append(Call({**call.variables, "answers": [answers[j] for j in perm]},
                          call.model, draw=call.draw))
        calls.append(Call({**call.variables, "query": call.variables["query"] + placebo_tag(
            cfg.seed, f"{name}:{qi}:{b}")}, call.model, draw=call.draw))
    res = await client.map(stages.tagger_stage(cfg.max_tokens), calls,
                           description=f"{name} tag checks")
    return {i: (perm, res[2 * k], res[2 * k + 1]) for k, (i, perm) in
            enumerate(zip(todo, perms))}


async def _check_answers(cfg: VBScoreConfig, client: Client, queries: list[Query],
                         pairs: list[tuple[int, Query, int]], sres: list[StageResult[Any]],
                         judge: str) -> dict[tuple[int, str], bool | None]:
    """One correctness call per distinct (normalised) top answer of a query with gold."""
    wanted: dict[tuple[int, str], str] = {}
    for (qi, q, _), r in zip(pairs, sres):
        if q.gold is not None and r.ok and r.output.answers:
            top = r.output.answers[0]
            wanted.setdefault((qi, normalise_answer(top)), top)
    keys = sorted(wanted)
    calls = [Call({"query": queries[qi].text, "gold": queries[qi].gold,
                   "accepted": queries[qi].accepted, "rejected": queries[qi].rejected,
                   "answer": wanted[(qi, norm)]}, judge) for qi, norm in keys]
    res = await client.map(stages.correctness_stage(128), calls, description="correctness")
    return {k: (r.output.correct if r.ok else None) for k, r in zip(keys, res)}


def score_replica(cfg: VBScoreConfig, interp: Any, answers: list[str], tags: list[str]
                  ) -> dict[str, Any]:
    items = interp.interpretations
    cands = [Candidate(it.label, score=it.score, kb_id=it.canonical_id, violated=it.violates)
             for it in items]
    dist = build(cands, temperature=cfg.softmax_temperature)
    group = {m: lab for lab, ms in zip(dist.labels, dist.members) for m in ms}
    idx = [parse_tag(t, len(items)) for t in tags]
    linked = [group[items[i].label] if i is not None else None for i in idx]
    gains = binary_gains(dist.labels, linked, cfg.k)
    s = score(dist.probs, gains, cfg.alphas, cfg.variance)
    return {"interpretations": [it.model_dump() for it in items],
            "distribution": dist.as_dict(), "outputs": answers[: cfg.k], "tags": tags,
            "linked": linked, "gains": gains.tolist(), "es": s.es,
            "vb": {repr(a): v for a, v in s.vb.items()}, "robustness": s.robustness,
            "top_intent": dist.labels[s.top_intent], "top_coverage": s.top_coverage}


def score_all(cfg: VBScoreConfig, data: dict[str, list[Query]],
              raw: Mapping[str, Iterable[Chunk]]) -> dict[str, Any]:
    from judgekit.methods.vbscore.selfcheck import stability_from_pairs, tagger_check, verdict

    datasets: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    checks: list[TagCheck] = []
    readings: list[tuple[np.ndarray, np.ndarray] | None] = []
    # each chunk's query rows (with their replica records) go to a spill file as they
    # are made; only their figures stay in memory
    fd, spill_name = tempfile.mkstemp(prefix="judgekit-queries-", suffix=".jsonl")
    spill = Path(spill_name)
    written = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for di, (name, queries) in enumerate(data.items()):
                aggs: list[Any] = []
                qrows: list[dict[str, Any]] = []
                for ci, r in enumerate(raw[name]):  # a chunk of queries, asked when needed
                    start = len(qrows)
                    _score_chunk(cfg, di, ci, name, queries, r, failures, checks, readings,
                                 aggs, qrows)
                    for k in range(start, len(qrows)):
                        fh.write(jsonl_line(qrows[k]))
                        qrows[k] = {key: qrows[k][key] for key in  # what the dataset row
                                    ("mean_token_entropy", "response_diversity")}  # reads
                    written += len(qrows) - start
                datasets.append(_dataset_row(cfg, name, aggs, qrows, len(queries)))
    except BaseException:  # an interrupted or failed run leaves no spill behind
        spill.unlink(missing_ok=True)
        raise
    per_query = DetailFile.spilled("queries", spill, written)
    tagger = tagger_check(checks, cfg.level) if cfg.check_tagger else None
    reliable, reasons = verdict(tagger)
    for d in datasets:
        d["reliable"] = reliable
    return {"alpha": cfg.alpha, "alphas": cfg.alphas,
            "replicas": cfg.replicas, "k": cfg.k, "datasets": datasets, "queries": per_query,
            "replica_failures": failures,
            "failures_by_stage": _count(failures),
            "self_check": {"reliable": reliable, "reasons": reasons,
                           "headline": "reliable" if reliable else (
                               "unreliable: the tagger follows position, not content"),
                           "tagger": tagger,
                           "interpretations": stability_from_pairs(readings, cfg.level)}}


def _score_chunk(cfg: VBScoreConfig, di: int, ci: int, name: str, queries: list[Query],
                 r: Chunk, failures: list[dict[str, Any]], checks: list[TagCheck],
                 readings: list[tuple[np.ndarray, np.ndarray] | None], aggs: list[Any],
                 qrows: list[dict[str, Any]]) -> None:
    """Score one chunk's replicas into its queries' rows (appended to ``aggs``/``qrows``),
    dropping each replica's call results once its record is made."""
    from judgekit.methods.vbscore.uncertainty import response_diversity

    reps: dict[int, list[dict[str, Any]]] = {qi: [] for qi in r.queries}
    for i, (qi, q, b) in enumerate(r.pairs):
        fail = _failure(r, i)
        if fail:
            failures.append({"dataset": name, "query_id": q.id, "replica": b, **fail})
            _release(r, i)
            continue
        sres, tres = r.system[i], r.tags[i]
        answers = sres.value.answers[: cfg.k]
        if len(tres.value.tags) != len(answers):
            failures.append({"dataset": name, "query_id": q.id, "replica": b,
                             "stage": "tagger", "error": f"{len(tres.value.tags)} tags "
                             f"for {len(answers)} answers"})
            continue
        rec = score_replica(cfg, r.interp[i].value, answers, tres.value.tags)
        _add_check(checks, r.tag_checks.get(i), tres.value.tags,
                   len(r.interp[i].value.interpretations))
        top = normalise_answer(answers[0]) if answers else ""
        rec.update(replica=b, draw=b, seeds={"interpretations": r.seeds[i][0],
                                             "system": r.seeds[i][1]},
                   correct=r.correct.get((qi, top)),
                   token_entropy=sres.mean_token_entropy)
        reps[qi].append(rec)
        _release(r, i)  # its record is made: the call results can go (memory)
    scored = [qi for qi in r.queries if reps[qi]]
    # The percentile bootstrap only where it covers, every such query at once
    # (shared count patterns per replica count).
    boot = [qi for qi in scored if bootstrap_covers([x["es"] for x in reps[qi]])]
    cis = dict(zip(boot, batch_query_intervals(
        [np.array([[x["es"] for x in reps[qi]],
                   *[[x["vb"][repr(a)] for x in reps[qi]] for a in cfg.alphas]], float)
         for qi in boot], cfg.level, cfg.resamples,
        streams.integer("vbscore.query_interval", cfg.seed, di) if ci == 0 else
        streams.integer("vbscore.query_interval_chunk", cfg.seed, di, ci))))
    for qi in scored:
        q, rs = queries[qi], reps[qi]
        readings.append(reading_pairs([(x["top_intent"],  # compact: two bool arrays
                                        [it["label"] for it in x["interpretations"]])
                                       for x in rs]))
        corr = [x["correct"] for x in rs if x["correct"] is not None]
        agg = aggregate_query(q.id, [x["es"] for x in rs],
                              {a: [x["vb"][repr(a)] for x in rs] for a in cfg.alphas},
                              level=cfg.level, resamples=cfg.resamples,
                              correct=corr if q.gold is not None and corr else None,
                              intervals=cis.get(qi))
        aggs.append(agg)
        ents = [x["token_entropy"] for x in rs if x["token_entropy"] is not None]
        qrows.append({"dataset": name, "query_id": q.id, "query": q.text, "gold": q.gold,
                      "replicas": len(rs), "es": agg.es, "es_ci": agg.es_ci.as_list(),
                      "vb": {repr(a): v for a, v in agg.vb.items()},
                      "vb_of_mean_es": {repr(a): v for a, v in agg.vb_of_mean_es.items()},
                      "vb_ci": {repr(a): c.as_list() for a, c in agg.vb_ci.items()},
                      "vb_ci_normal": {repr(a): c.as_list()
                                       for a, c in agg.vb_ci_normal.items()},
                      "vb_ci_bootstrap": None if agg.vb_ci_bootstrap is None else {
                          repr(a): c.as_list() for a, c in agg.vb_ci_bootstrap.items()},
                      "accuracy": agg.accuracy, "replicas_agree": agg.replicas_agree,
                      "mean_token_entropy": float(np.mean(ents)) if ents else None,
                      "response_diversity": response_diversity(
                          [x["outputs"][0] for x in rs if x["outputs"]]),
                      "replica_records": rs})


def _release(r: Chunk, i: int) -> None:
    """Drop replica ``i``'s call results once scored: with 40,000 replicas they held
    about 200 MB of parsed outputs at the peak."""
    r.interp[i] = r.system[i] = None
    r.tags.pop(i, None)
    r.tag_checks.pop(i, None)


def _add_check(checks: list[TagCheck], got: tuple[list[int], Any, Any] | None,
               tags: list[str], n: int) -> None:
    if got is None:
        return
    perm, rotated, placebo = got
    checks.append(TagCheck([tag_key(t, n) for t in tags], perm,
                           [tag_key(t, n) for t in rotated.value.tags] if rotated.ok else None,
                           [tag_key(t, n) for t in placebo.value.tags] if placebo.ok else None))


def _failure(r: Chunk, i: int) -> dict[str, Any] | None:
    for stage, res in (("interpretations", r.interp[i]), ("system", r.system[i]),
                       ("tagger", r.tags.get(i))):
        if res is None:
            continue
        if not res.ok:
            return {"stage": stage, "attempts": res.attempts, "error": res.error,
                    "raw": clip(res.raw, 300)}
    return None


def _accuracy_ci(aggs: list[Any], cfg: VBScoreConfig) -> list[float | None]:
    """Cluster bootstrap over queries of the per-query accuracy (the query is the unit)."""
    from judgekit.stats import cluster_bootstrap_interval

    acc = np.array([q.accuracy for q in aggs if q.accuracy is not None], float)
    if acc.size == 0:
        return [None, None]
    ci = cluster_bootstrap_interval(acc, cfg.level, cfg.resamples,
                                    streams.integer("vbscore.accuracy", cfg.seed))
    return [ci.lo, ci.hi]


def _count(failures: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in failures:
        out[f["stage"]] = out.get(f["stage"], 0) + 1
    return dict(sorted(out.items()))


def _dataset_row(cfg: VBScoreConfig, name: str, aggs: list[Any], qrows: list[dict[str, Any]],
                 n: int) -> dict[str, Any]:
    a = cfg.alpha
    if not aggs:
        return {"name": name, "vb": None, "vb_ci": [None, None], "es": None,
                "es_ci": [None, None], "accuracy": None, "accuracy_ci": [None, None],
                "p_value": None, "n_queries": 0, "queries_excluded": n,
                "replicas": cfg.replicas}
    coll = aggregate_collection(aggs, level=cfg.level, resamples=cfg.resamples, seed=cfg.seed)
    ents = [q["mean_token_entropy"] for q in qrows if q["mean_token_entropy"] is not None]
    divs = [q["response_diversity"] for q in qrows if q["response_diversity"] is not None]
    return {"name": name, "vb": coll.vb[a], "vb_ci": coll.vb_ci[a].as_list(), "es": coll.es,
            "es_ci": coll.es_ci.as_list(), "accuracy": coll.accuracy,
            "accuracy_ci": _accuracy_ci(aggs, cfg),
            "p_value": coll.t_test[a]["p_value"], "t_test_note": coll.t_test[a]["note"],
            "n_queries": coll.n_queries, "queries_excluded": n - coll.n_queries,
            "replicas": cfg.replicas,
            "vb_by_alpha": {repr(x): v for x, v in coll.vb.items()},
            "vb_ci_by_alpha": {repr(x): c.as_list() for x, c in coll.vb_ci.items()},
            "mean_token_entropy": float(np.mean(ents)) if ents else None,
            "response_diversity": float(np.mean(divs)) if divs else None}
