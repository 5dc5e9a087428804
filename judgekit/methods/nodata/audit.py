"""Experiment 2: auditing an LLM judge with the No-Data Algorithm on judged items
(West Frisian, or any judged dataset with a rubric).

Per item: the evaluator labels x against its rubric (with reasons); each round it
commits a paraphrase x' (generation keyed by round); the verifier scores the
total rubric of x (once per item, reused across rounds and phi) and of x' with
its own rubric; a seeded challenge compares them. Flips per phi reuse the outcomes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from judgekit.core import seeds
from judgekit.data.judged import JudgedItem, attach_labels, check_judged, load_judged
from judgekit.judging import stages as st
from judgekit.judging.family import same_family
from judgekit.judging.rubric import Rubric, load_rubric
from judgekit.llm import Call, Client
from judgekit.methods.nodata.baselines import ensemble
from judgekit.methods.nodata.config import AuditConfig, NoDataConfig
from judgekit.methods.nodata.decision import DecisionSettings, decide
from judgekit.methods.nodata.payload import AuditPayload, RestsOn, Verdict
from judgekit.methods.nodata.protocol import EVRecord, apply_flips, challenge_passes, summarise
from judgekit.methods.nodata.readings import ItemEvidence, claim_agreement
from judgekit.stats.proportions import rate_with_interval

REFUSAL = re.compile(r"\b(I can(?:no|')t|I'm sorry|I am sorry|as an AI|I am unable|"
                     r"I'm unable)\b", re.IGNORECASE)


def _aggregator_text(r: Rubric) -> str:
    return ("1 if every criterion is 1, else 0" if r.aggregator == "all"
            else "1 if most criteria are 1, else 0")


def _vars(item: JudgedItem, rubric: Rubric) -> dict[str, Any]:
    return {"prompt": item.Prompt, "output": item.Output, "rubric": rubric,
            "criteria": rubric.criteria, "aggregator_text": _aggregator_text(rubric)}


class ProblemCounts:
    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}

    def add(self, stage: str, kind: str) -> None:
        s = self.counts.setdefault(stage, {})
        s[kind] = s.get(kind, 0) + 1


async def _evaluate(cfg: NoDataConfig, client: Client, items: list[JudgedItem], rubric: Rubric,
                    model: str, problems: ProblemCounts, stage_name: str = "evaluator"
                    ) -> list[dict[str, Any] | None]:
    ids = rubric.ids()
    if cfg.criterion_mode == "per_criterion":
        calls = [Call({"prompt": it.Prompt, "output": it.Output, "criterion": c}, model)
                 for it in items for c in rubric.criteria]
        res = await client.map(st.evaluator_one(cfg.max_tokens), calls, description=stage_name)
        out: list[dict[str, Any] | None] = []
        for i in range(len(items)):
            chunk = res[i * len(ids):(i + 1) * len(ids)]
            if not all(r.ok for r in chunk):
                problems.add(stage_name, next(str(r.kind) for r in chunk if not r.ok))
                out.append(None)
                continue
            crit = [{"id": c, "value": r.output.value, "reason": r.output.reason}
                    for c, r in zip(ids, chunk)]
            out.append({"label": rubric.aggregate([c["value"] for c in crit]), "criteria": crit})
        return out
    res = await client.map(st.evaluator_all(cfg.max_tokens),
                           [Call(_vars(it, rubric), model) for it in items],
                           description=stage_name)
    out = []
    for r in res:
        if not r.ok:
            problems.add(stage_name, str(r.kind))
            out.append(None)
            continue
        got = {c.id: c for c in r.output.criteria}
        if set(got) != set(ids):
            problems.add(stage_name, "wrong_criteria")
            out.append(None)
            continue
        out.append({"label": r.output.label, "criteria": [
            {"id": c, "value": got[c].value, "reason": got[c].reason} for c in ids]})
    return out


def _items_of(rubric: Rubric) -> list[dict[str, str]]:
    out = []
    for c in rubric.criteria:
        out += [{"id": cl.id, "description": cl.description} for cl in c.clauses]
        out.append({"id": c.id, "description": c.description})
    return out


async def _verify(cfg: NoDataConfig, client: Client, texts: list[tuple[str, str]],
                  rubric: Rubric, model: str, problems: ProblemCounts, draw: int = 0,
                  stage_name: str = "verifier"
                  ) -> list[tuple[tuple[int, ...], tuple[int, ...]] | None]:
    total_ids, top_ids = rubric.total_ids(), rubric.ids()
    if cfg.criterion_mode == "per_criterion":
        return await _verify_each(cfg, client, texts, rubric, model, problems, draw,
                                  stage_name)
    calls = [Call({"prompt": p, "output": o, "rubric": rubric, "items": _items_of(rubric)},
                  model, draw=draw) for p, o in texts]
    res = await client.map(st.verifier(cfg.max_tokens, _reworded(cfg, draw)), calls,
                           description=stage_name)
    out: list[tuple[tuple[int, ...], tuple[int, ...]] | None] = []
    for r in res:
        if not r.ok:
            problems.add(stage_name, str(r.kind))
            out.append(None)
            continue
        got = {c.id: c.value for c in r.output.criteria}
        if not set(total_ids) <= set(got):
            problems.add(stage_name, "wrong_criteria")
            out.append(None)
            continue
        out.append((tuple(got[c] for c in total_ids), tuple(got[c] for c in top_ids)))
    return out


def _reworded(cfg: NoDataConfig, draw: int) -> bool:
    return draw == 1 and cfg.reread_instruction == "reworded"  # the re-read


async def _verify_each(cfg: NoDataConfig, client: Client, texts: list[tuple[str, str]],
                       rubric: Rubric, model: str, problems: ProblemCounts, draw: int = 0,
                       stage_name: str = "verifier"
                       ) -> list[tuple[tuple[int, ...], tuple[int, ...]] | None]:
    """One verifier call per item of the total rubric (easier for small models)."""
    items = _items_of(rubric)
    calls = [Call({"prompt": p, "output": o, "item": it}, model, draw=draw) for p, o in texts
             for it in items]
    res = await client.map(st.verifier_one(cfg.max_tokens, _reworded(cfg, draw)), calls,
                           description=stage_name)
    out: list[tuple[tuple[int, ...], tuple[int, ...]] | None] = []
    top = set(rubric.ids())
    for i in range(len(texts)):
        chunk = res[i * len(items):(i + 1) * len(items)]
        if not all(r.ok for r in chunk):
            problems.add(stage_name, next(str(r.kind) for r in chunk if not r.ok))
            out.append(None)
            continue
        vals = {it["id"]: r.output.value for it, r in zip(items, chunk)}
        out.append((tuple(vals[it["id"]] for it in items),
                    tuple(vals[c] for c in rubric.ids() if c in top)))
    return out


def _round_passes(cfg: NoDataConfig, ch: int, vx: tuple[tuple[int, ...], tuple[int, ...]],
                  vxp: tuple[tuple[int, ...], tuple[int, ...]], ev: dict[str, Any],
                  ev_rubric: Rubric, ver_rubric: Rubric) -> bool:
    """One challenge under the configured check: ``pair`` compares the verifier's
    scores of x and x'; ``paper`` compares the judge's claims with the verifier's
    scores of x' (the authors' check); ``both`` does ``pair`` after the claims of x
    were checked at challenge 0, i.e. C(x') = C(x) = claimed."""
    if cfg.check in ("pair", "both"):
        return challenge_passes(ch, vx[0], vxp[0], vx[1], vxp[1], cfg.eps)
    c = claim_agreement(ev, vxp, ev_rubric, ver_rubric)
    if ch == 1:
        return bool(c["all"])
    vals = list(c["criteria"].values())
    if cfg.eps > 0 and vals:
        return float(np.mean([not v for v in vals])) < cfg.eps
    return all(vals)


async def _audit(cfg: NoDataConfig, client: Client, items: list[JudgedItem],
                 ev_rubric: Rubric, ver_rubric: Rubric) -> dict[str, Any]:
    problems = ProblemCounts()
    evaluator = cfg.models["evaluator"]
    gen_model = cfg.models.get("generator", evaluator)
    verifier = cfg.models["verifier"]
    client.preflight([st.evaluator_all(1), st.evaluator_one(1), st.generator(1), st.verifier(1),
                      st.verifier_one(1), st.verifier(1, True), st.verifier_one(1, True)],
                     [m for m in cfg.models.values() if m])
    evals = await _evaluate(cfg, client, items, ev_rubric, evaluator, problems)
    vx = await _verify(cfg, client, [(it.Prompt, it.Output) for it in items], ver_rubric,
                       verifier, problems)
    # the verifier re-reads every x (another draw, or a second verifier): its own
    # consistency is the reference the judge is held to
    rereads: list[Any] = [None] * len(items)
    if cfg.verifier_rereads:
        second = cfg.models.get("second_verifier", verifier)
        rereads = await _verify(cfg, client, [(it.Prompt, it.Output) for it in items],
                                ver_rubric, second, problems, draw=1,
                                stage_name="verifier re-read")
    challenges = [seeds.rng("nodata.challenge", cfg.seed, i)
                  .integers(1, 3, size=cfg.rounds).tolist() for i in range(len(items))]
    records: dict[int, EVRecord] = {}
    active = [i for i in range(len(items)) if evals[i] is not None and vx[i] is not None]
    excluded = {i: "evaluator failed" if evals[i] is None else "verifier failed on x"
                for i in range(len(items)) if i not in active}
    for i in active:
        records[i] = EVRecord(label=int(evals[i]["label"]), success=True,  # type: ignore[index]
                              final_label=int(evals[i]["label"]))  # type: ignore[index]
    claims = {i: claim_agreement(evals[i], vx[i], ev_rubric, ver_rubric)  # type: ignore[arg-type]
              for i in active}
    if cfg.check == "both":
        # Challenge 0: the verifier's view of x must agree with the judge's claims.
        for i in list(active):
            if not claims[i]["all"]:
                records[i].success, records[i].failed_round = False, 0
                records[i].failed_challenge = 0
        active = [i for i in active if records[i].success]
    state = _Rounds(items, ev_rubric, ver_rubric, evals, vx, records, excluded, challenges,
                    problems)
    for rnd in range(cfg.rounds):
        active = await _challenge(cfg, client, state, active, rnd, gen_model, verifier)
    ens = {}
    for m in cfg.ensemble:
        if m == evaluator:
            ens[m] = evals
        else:
            ens[m] = await _evaluate(cfg, client, items, ev_rubric, m, problems, "ensemble")
    return {"evals": evals, "vx": vx, "rereads": rereads, "records": records,
            "excluded": excluded,
            "claims": {i: c for i, c in claims.items() if i in records},
            "problems": problems.counts, "ensemble": ens}


@dataclass
class _Rounds:
    """What the challenge rounds read and update."""

    items: list[JudgedItem]
    ev_rubric: Rubric
    ver_rubric: Rubric
    evals: list[Any]
    vx: list[Any]
    records: dict[int, EVRecord]
    excluded: dict[int, str]
    challenges: list[list[int]]
    problems: ProblemCounts


async def _challenge(cfg: NoDataConfig, client: Client, s: _Rounds, active: list[int],
                     rnd: int, gen_model: str, verifier: str) -> list[int]:
    """One round: paraphrase every active item's x under its claimed label and criteria,
    have the verifier read x', apply the round's challenge; the items still passing."""
    calls = [Call({**_vars(s.items[i], s.ev_rubric), "label": s.records[i].label,
                   "criteria": s.evals[i]["criteria"]}, gen_model, draw=rnd) for i in active]
    res = await client.map(st.generator(cfg.generator_max_tokens), calls,
                           description=f"generator round {rnd + 1}")
    to_verify, still = [], []
    for i, r in zip(active, res):
        # A failed generator step (the call, an unreadable or cut-off answer, an empty or
        # refused paraphrase) is the audit's own failure, never the judge's: the item is
        # excluded and counted as excluded.
        kind = (str(r.kind) if not r.ok else "empty" if not r.output.Output.strip()
                else "refusal" if REFUSAL.search(r.output.Output)
                and not REFUSAL.search(s.items[i].Output) else None)
        if kind is not None:
            s.problems.add("generator", kind)
            s.excluded[i] = f"generator {kind} in round {rnd + 1}"
            s.records.pop(i)
            continue
        s.records[i].challenges.append(s.challenges[i][rnd])
        s.records[i].x_primes.append({"Prompt": r.output.Prompt, "Output": r.output.Output})
        to_verify.append((i, (r.output.Prompt, r.output.Output)))
    vxp = await _verify(cfg, client, [t for _, t in to_verify], s.ver_rubric, verifier,
                        s.problems)
    for (i, _), v in zip(to_verify, vxp):
        if v is None:
            s.excluded[i] = f"verifier failed on x' in round {rnd + 1}"
            s.records.pop(i)
            continue
        ch = s.challenges[i][rnd]
        if _round_passes(cfg, ch, s.vx[i], v, s.evals[i], s.ev_rubric, s.ver_rubric):
            still.append(i)
        else:
            rec = s.records[i]
            rec.success, rec.failed_round, rec.failed_challenge = False, rnd, ch
    return still


def execute(cfg: AuditConfig, client: Client) -> AuditPayload:
    """Audit the evaluator on the judged items."""
    items = load_judged(str(cfg.data_path), cfg.start, cfg.sample_size, cfg.indices, cfg)
    ev_rubric, ver_rubric = load_rubric(cfg.rubric), load_rubric(cfg.verifier_rubric)
    positions = list(cfg.indices or range(cfg.start, cfg.start + len(items)))
    if cfg.human_labels:
        attach_labels(items, positions, cfg.human_labels)
    data_checks = check_judged(items, ver_rubric.ids(), ver_rubric.aggregate, positions,
                               str(cfg.data_path), strict=cfg.strict,
                               known=ver_rubric.data_fields)
    raw = client.run_until_complete(_audit(cfg, client, items, ev_rubric, ver_rubric))
    recs = raw["records"]
    kept = sorted(recs)
    truth = [items[i].Label for i in kept]
    has_truth = all(t is not None for t in truth) and bool(kept)
    n_fail = sum(v for s in raw["problems"].values() for k, v in s.items()
                 if k in ("parse", "wrong_criteria"))
    claims = [raw["claims"][i] for i in kept if i in raw["claims"]]
    agree, agree_ci, n_claims = rate_with_interval([c["all"] for c in claims], cfg.level)
    by_crit = {c: rate_with_interval([x["criteria"][c] for x in claims if c in x["criteria"]],
                                     cfg.level)
               for c in ev_rubric.ids()}
    runs = []
    for phi in cfg.phi:
        final = apply_flips([recs[i] for i in kept], phi, cfg.seed)
        s = summarise(final, truth if has_truth else None, phi=phi, rounds=cfg.rounds,
                      seed=cfg.seed, level=cfg.level)
        runs.append({"rubric": cfg.rubric_label, "evaluator": cfg.models["evaluator"],
                     "phi": phi, "rounds": cfg.rounds, "check": cfg.check,
                     "success_rate": s.success_rate, "success_ci": s.success_ci,
                     "flip_rate": s.flip_rate, "flip_ci": s.flip_ci,
                     "accuracy": s.accuracy, "accuracy_ci": s.accuracy_ci,
                     "f1": s.f1, "f1_ci": s.f1_ci,
                     "known_accuracy": s.known_accuracy, "known_f1": s.known_f1,
                     "claim_agreement": agree, "claim_agreement_ci": agree_ci,
                     "bound": s.bound, "n_items": s.n, "parse_failures": n_fail})
    results = {
        "data": cfg.data_path,
        "start": cfg.start, "sample_size": len(items), "indices": cfg.indices,
        "rubric": ev_rubric.name,
        "verifier_rubric": ver_rubric.name, "models": cfg.models, "runs": runs,
        "known": _known(items, raw["evals"], ev_rubric, cfg.level),
        "problems_by_stage": raw["problems"],
        "excluded_items": {str(k): v for k, v in sorted(raw["excluded"].items())},
        "verifier_note": "the challenges are only as strong as the verifier: a verifier that "
                         "scores every criterion 0 lets any paraphrase pass",
        "items": [_item_record(i, pos, items[i], raw) for i, pos in enumerate(
            cfg.indices or range(cfg.start, cfg.start + len(items)))],
        "baseline": _baseline(items, raw["ensemble"]),
        "data_checks": data_checks,
        "claim_agreement": {"rate": agree, "ci": agree_ci, "n": n_claims,
                            "by_criterion": {c: {"rate": r, "ci": ci, "n": n}
                                             for c, (r, ci, n) in by_crit.items()}},
    }
    results["verdict"] = verdict(cfg, runs[0], raw, items, ev_rubric, ver_rubric)
    return AuditPayload.model_validate(results)


def headline(res: AuditPayload) -> str:
    r0 = res.runs[0]
    v = res.verdict
    decision = v.decision if v is not None else "none"
    why = f" ({v.rule}: {v.reason.split(';')[0]})" if v is not None and v.rule else ""
    return (f"{r0.rubric}: success {r0.success_rate:.1%} over {r0.n_items} items (the "
            f"judge's claims confirmed by the verifier's readings, not by people); "
            f"verdict: {decision}{why}")


def evidence(raw: dict[str, Any], items: list[JudgedItem], ev_rubric: Rubric,
             ver_rubric: Rubric) -> list[ItemEvidence]:
    """Per kept item, what the decision needs (see :mod:`judgekit.methods.nodata.decision`)."""
    out = []
    shared = [c for c in ev_rubric.ids() if c in ver_rubric.ids()]
    for i in sorted(raw["records"]):
        ev, vx, rr = raw["evals"][i], raw["vx"][i], raw["rereads"][i]
        top = dict(zip(ver_rubric.ids(), vx[1]))
        claimed = {c["id"]: int(c["value"]) for c in ev["criteria"] if c["id"] in shared}
        human = {k: int(v) for k, v in items[i].criterion_values().items()
                 if k in top and v is not None}
        xps = [json.dumps(x, sort_keys=True) for x in raw["records"][i].x_primes
               if x is not None]
        out.append(ItemEvidence(
            success=bool(raw["records"][i].success), judge_label=int(ev["label"]),
            verifier_label=int(ver_rubric.aggregate(list(vx[1]))), claimed=claimed,
            verifier_top=top, verifier_total=tuple(vx[0]),
            reread_total=None if rr is None else tuple(rr[0]),
            reread_top=None if rr is None else dict(zip(ver_rubric.ids(), rr[1])),
            human_label=None if items[i].Label is None else int(items[i].Label),
            human_criteria=human, rounds_reached=len(xps), distinct_x_primes=len(set(xps))))
    return out


def verdict(cfg: NoDataConfig, run: dict[str, Any], raw: dict[str, Any],
            items: list[JudgedItem], ev_rubric: Rubric, ver_rubric: Rubric) -> Verdict:
    """The decision (judgekit.methods.nodata.decision), its rule and what it rests on."""
    m = cfg.models
    d = decide(evidence(raw, items, ev_rubric, ver_rubric), DecisionSettings(
        rounds=cfg.rounds, check=cfg.check, level=cfg.level,
        trust_threshold=cfg.trust_threshold, distrust_threshold=cfg.distrust_threshold,
        min_reference=cfg.min_reference, resamples=cfg.resamples, seed=cfg.seed,
        self_check=m["verifier"] == m["evaluator"],
        second_verifier=m.get("second_verifier") not in (None, m["verifier"]),
        same_family=same_family(
            m["evaluator"], m["verifier"], m.get("second_verifier") or m["verifier"])))
    d.items_excluded = len(items) - d.n_items
    d.measures = ("success = the judge's whole claimed breakdown (every criterion and the "
                  "label) confirmed by the verifier on x and on every paraphrase; not label "
                  "accuracy")
    d.rests_on = RestsOn(verifier=cfg.models["verifier"], verifier_rubric=cfg.verifier_rubric,
                         judge_rubric=cfg.rubric, rounds=cfg.rounds, check=cfg.check,
                         thresholds=[cfg.distrust_threshold, cfg.trust_threshold],
                         thresholds_of="the perfect-judge reference")
    return d


def _item_record(i: int, position: int, item: JudgedItem, raw: dict[str, Any]
                 ) -> dict[str, Any]:
    rec = raw["records"].get(i)
    ev = raw["evals"][i]
    return {"index": position, "label": item.Label, "evaluator": ev,
            "x": {"Prompt": item.Prompt, "Output": item.Output},
            "claims_agree": raw["claims"].get(i),
            "verifier_x": list(raw["vx"][i][0]) if raw["vx"][i] else None,
            "excluded": raw["excluded"].get(i),
            "success": None if rec is None else rec.success,
            "failed_round": None if rec is None else rec.failed_round,
            "failed_challenge": None if rec is None else rec.failed_challenge,
            "challenges": None if rec is None else rec.challenges,
            "x_primes": None if rec is None else rec.x_primes}


def _known(items: list[JudgedItem], evals: list[Any], rubric: Rubric, level: float = 0.95
           ) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, f1_score

    pairs = [(it, e) for it, e in zip(items, evals) if e is not None and it.Label is not None]
    if not pairs:
        return {}
    y = [it.Label for it, _ in pairs]
    p = [e["label"] for _, e in pairs]
    per = {}
    for c in rubric.ids():
        got = [(it.criterion_values()[c], next(x["value"] for x in e["criteria"] if x["id"] == c))
               for it, e in pairs if c in it.criterion_values()]
        if got:
            per[c] = float(np.mean([a == b for a, b in got]))
    from judgekit.stats.agreement import agreement

    # chance-corrected agreement with the human labels, honest under skewed labels
    ag = agreement(p, [int(v or 0) for v in y], seed=0, resamples=1000, level=level) \
        if len(pairs) >= 2 else None
    return {"n": len(pairs), "accuracy": float(accuracy_score(y, p)),
            "f1": float(f1_score(y, p, zero_division=0)), "per_criterion_accuracy": per,
            "agreement": None if ag is None else ag._asdict()}


def _baseline(items: list[JudgedItem], ens: dict[str, list[Any]]) -> dict[str, Any] | None:
    if len(ens) < 2:
        return None
    ok = [i for i in range(len(items)) if all(v[i] is not None for v in ens.values())]
    if not ok:
        return None
    labels = {m: [v[i]["label"] for i in ok] for m, v in ens.items()}
    truth = [items[i].Label for i in ok]
    known = [int(t) for t in truth if t is not None]
    return {"n_items": len(ok), **ensemble(labels, known if len(known) == len(ok) else None)}
