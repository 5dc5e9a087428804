"""What the probe tells the export, the judge card, `judgekit compare` and `judgekit
plan` (its spec's hooks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgekit.analysis.paired import agreement, paired_rate, rows_by
from judgekit.core.payload import Json
from judgekit.core.results import RunResult
from judgekit.core.spec import CardRow, CompareRow, Paired, PlanTable, RunItems, TableRow
from judgekit.methods.probe.payload import ProbePayload


def rows(p: ProbePayload) -> list[TableRow]:
    """One row per transform and per bias (the flipped item ids stay in items.jsonl)."""
    out: list[TableRow] = []
    for kind, records in (("transform", p.transforms), ("bias", p.biases)):
        for r in records:
            d = r.model_dump(mode="json")
            d.pop("flipped", None)
            out.append({"kind": kind, **d})
    return out


def judge(result: RunResult[ProbePayload]) -> str | None:
    return result.payload.judge if result.payload is not None else None


def card_rows(d: ProbePayload, src: str) -> list[CardRow]:
    """The probe's rows of a judge card: biases, consistency, agreement with people."""
    out = [CardRow(key={"swap": "position_bias", "rename": "label_bias"}.get(
                       b.name or "", f"bias[{b.name}]"),
                   section="bias", measure=f"{b.name}: {b.what}", estimate=b.bias, ci=b.ci,
                   n=b.n, decision=b.verdict or "-", units="difference of shares",
                   source=src, baseline=0.0) for b in d.biases]
    floor = "the placebo's" if d.noise_floor.source == "placebo" else "identical re-runs'"
    out += [CardRow(key=f"consistency[{t.name}]", section="consistency",
                    measure=f"{t.name}: flips above {floor}", estimate=t.excess,
                    ci=t.excess_ci, n=t.n, decision=t.verdict, units="difference of shares",
                    source=src, baseline=0.0) for t in d.transforms]
    for key, x, what in (("self_preference", d.self_preference, "prefers its own model family"),
                         ("length_preference", d.length_bias,
                          "prefers the longer answer (natural pairs)")):
        if x is not None:
            out.append(CardRow(key=key, section="bias", measure=what, estimate=x.preference,
                               ci=x.ci, n=x.n, decision=x.verdict,
                               units="difference of error rates", source=src, baseline=0.0))
    nf = d.noise_floor
    if nf.n:
        out.append(CardRow(key="noise_floor", section="consistency",
                           measure=f"noise floor ({nf.source})", estimate=nf.rate, ci=nf.ci,
                           n=nf.n, decision="-", units="share of verdicts that flip",
                           source=src))
    if d.order_consistency is not None and d.order_consistency.n:
        oc = d.order_consistency
        out.append(CardRow(key="order_consistency", section="consistency",
                           measure="same winner in both orders", estimate=oc.rate, ci=oc.ci,
                           n=oc.n, decision="-", units="share", source=src))
    if d.accuracy is not None:
        a = d.accuracy.both_orders
        out.append(CardRow(key="accuracy", section="people",
                           measure="accuracy on pairs with a known answer (both orders "
                           "agree)", estimate=a.rate, ci=a.ci, n=a.n, decision="-",
                           units="share", source=src))
    return out + _people(d, src)


def _people(d: ProbePayload, src: str) -> list[CardRow]:
    h = d.human
    if h is None:
        return []
    ag = h.agreement
    kci = (ag.cis or {}).get("kappa")
    beyond = kci is not None and kci[0] > 0
    out = [CardRow(key="kappa", section="people",
                   measure="agreement with people (Cohen's kappa)", estimate=ag.kappa,
                   ci=kci, n=ag.n, baseline=0.0,
                   decision=("agrees beyond chance" if beyond else
                             "no agreement beyond chance shown") +
                   f" (majority-label baseline {ag.majority_baseline or 0.0:.3f}, percent "
                   f"agreement {ag.percent or 0.0:.3f})", units="kappa", source=src)]
    c = h.a_win_rate
    if c is not None:
        what = "pass rate" if d.mode == "pointwise" else "answer A's win rate"
        key = "corrected_pass_rate" if d.mode == "pointwise" else "corrected_win_rate"
        out.append(CardRow(key=key, section="people",
                           measure=f"corrected {what} (prediction-powered)",
                           estimate=c.estimate, ci=c.ci, n=c.n_items,
                           decision=f"{c.n_labelled} human labels", units="share",
                           source=src))
    return out


def _flipped(rec: Json, t: str) -> float | None:
    v = rec.get("verdicts") or {}
    return None if not v.get("run0") or not v.get(t) else float(v["run0"] != v[t])


def _mode(r: RunResult[ProbePayload]) -> str | None:
    return r.payload.mode if r.payload is not None else None


def _pointwise_paired(ra: RunResult[ProbePayload], ia: dict[str, Json], ib: dict[str, Json],
                      both: list[str], level: float, what: str = "pass rate") -> Paired:
    """Two pointwise probes of the same items: the judges' pass rates as given (run0),
    paired per item; flip rates under every shared transform as secondary rows."""
    keys = [k for k in both if (ia[k].get("verdicts") or {}).get("run0")
            and (ib[k].get("verdicts") or {}).get("run0")]
    va = [float(ia[k]["verdicts"]["run0"] == "a") for k in keys]
    vb = [float(ib[k]["verdicts"]["run0"] == "a") for k in keys]
    out = []
    transforms = sorted({t for k in both for t in (ia[k].get("verdicts") or {})
                         if ":" not in t and not t.startswith("run")})
    for t in transforms:
        pairs = [(fa, fb) for k in both
                 if (fa := _flipped(ia[k], t)) is not None and (fb := _flipped(ib[k], t))
                 is not None]
        if pairs:
            out.append(paired_rate(f"flip rate under {t}", pairs, level))
    main = _corrected_difference(ia, ib, keys, level, what)
    if main is not None:  # the judges' own difference stays as a secondary row
        out.insert(0, paired_rate(f"{what} (verdicts as given)", list(zip(va, vb)), level))
    return Paired(main.name if main else f"{what} (verdicts as given)", keys, va, vb, out,
                  agreement([int(x) for x in va], [int(x) for x in vb], level, ra.seed or 0),
                  (len(ia), len(ib)), binary=True, main=main)


def _corrected_difference(ia: dict[str, Json], ib: dict[str, Json], keys: list[str],
                          level: float, what: str = "pass rate") -> CompareRow | None:
    """B - A pass rate corrected by the human labels both runs carry (PPI++ on the
    per-item difference: the judges' B - A on every shared item, the people's where
    both items are labelled); None without two such items, or when both runs judged
    the same answers (then the judges' own pass rates are what differs)."""
    from judgekit.stats.ppi import ppi_difference

    lab = [k for k in keys if ia[k].get("human") and ib[k].get("human")]
    if len(lab) < 2 or all(ia[k].get("a") == ib[k].get("a") for k in keys):
        return None  # the same answers: two judges compared, not two systems

    def d(rec_a: Json, rec_b: Json, of: str) -> float:
        pa = rec_a["verdicts"]["run0"] if of == "judge" else rec_a["human"]
        pb = rec_b["verdicts"]["run0"] if of == "judge" else rec_b["human"]
        return float(pb == "a") - float(pa == "a")

    c = ppi_difference([d(ia[k], ib[k], "judge") for k in keys],
                       [d(ia[k], ib[k], "judge") for k in lab],
                       [d(ia[k], ib[k], "human") for k in lab], level=level)
    a_rate = sum(ia[k]["verdicts"]["run0"] == "a" for k in keys) / len(keys)
    return CompareRow(name=f"{what} corrected by {c.n_labelled} human labels "
                      "(prediction-powered)", n=c.n_items, a=a_rate,
                      b=a_rate + float(np.mean([d(ia[k], ib[k], "judge") for k in keys])),
                      difference=c.estimate, difference_ci=c.ci, p_value=None)


def paired(ra: RunResult[ProbePayload], rb: RunResult[ProbePayload], level: float
           ) -> Paired:
    """Per pair, did the verdict flip when the answers were swapped (order
    inconsistency); accuracy on pairs with a known answer and the flip rate under every
    shared transform as secondary rows; agreement of the two judges' verdicts."""
    ia = rows_by(ra.detail("items"), lambda r: str(r["id"]))
    ib = rows_by(rb.detail("items"), lambda r: str(r["id"]))
    both = [k for k in ia if k in ib]
    if _mode(ra) == "pointwise" or _mode(rb) == "pointwise":
        return _pointwise_paired(ra, ia, ib, both, level)
    keys = [k for k in both if _flipped(ia[k], "swap") is not None
            and _flipped(ib[k], "swap") is not None]
    if not keys:  # no swap in one of the runs: compare what both have, A's win rate
        return _pointwise_paired(ra, ia, ib, both, level, "rate at which answer A wins")
    out = []
    acc = [(float(ia[k]["verdicts"]["run0"] == ia[k]["correct"]),
            float(ib[k]["verdicts"]["run0"] == ib[k]["correct"])) for k in both
           if ia[k].get("correct") and (ia[k].get("verdicts") or {}).get("run0")
           and (ib[k].get("verdicts") or {}).get("run0")]
    if acc:
        out.append(paired_rate("accuracy (pairs with a known answer)", acc, level))
    transforms = sorted({t for k in both for t in (ia[k].get("verdicts") or {})
                         if ":" not in t and not t.startswith("run") and t != "swap"})
    for t in transforms:
        pairs = [(fa, fb) for k in both
                 if (fa := _flipped(ia[k], t)) is not None and (fb := _flipped(ib[k], t))
                 is not None]
        out.append(paired_rate(f"flip rate under {t}", pairs, level))
    judged = [k for k in both if (ia[k].get("verdicts") or {}).get("run0")
              and (ib[k].get("verdicts") or {}).get("run0")]
    va = [int(ia[k]["verdicts"]["run0"] == "a") for k in judged]
    vb = [int(ib[k]["verdicts"]["run0"] == "a") for k in judged]
    return Paired("order inconsistency (verdict flips when the answers are swapped)", keys,
                  [float(_flipped(ia[k], "swap") or 0) for k in keys],
                  [float(_flipped(ib[k], "swap") or 0) for k in keys], out,
                  agreement(va, vb, level, ra.seed or 0), (len(ia), len(ib)), binary=True)


def plan(result: RunResult[ProbePayload], power: float, effects: tuple[float, ...]
         ) -> PlanTable:
    """Pairs each decision needs for ``power`` at the run's level (Connor 1987)."""
    from judgekit.methods.probe.bias import plan as probe_plan

    data: dict[str, Any] = result.model_dump(mode="json")
    pl = probe_plan(data, power, effects)
    head = ["transform", "question", "discordant", "pairs now",
            *[f"effect {e}" for e in effects]]
    table = [[x["name"], x["question"], f"{x['discordant']:.3f}", str(x["n_now"]),
              *[str(x["pairs_needed"][repr(e)] or "n/a") for e in effects]]
             for x in pl["rows"]]
    labels = _label_plan(result)
    return PlanTable(f"pairs needed for {power:.0%} power at level {pl['level']} "
                     "(Connor 1987, from {run}):", head, table,
                     () if labels is None else (labels,))


def _label_plan(result: RunResult[ProbePayload]) -> PlanTable | None:
    """The corrected rate's label plan: labels for +- target_halfwidth, recomputed from
    the interval's own variance terms."""
    p = result.payload
    c = p.human.a_win_rate if p is not None and p.human is not None else None
    if c is None:
        return None
    what = "pass rate" if p is not None and p.mode == "pointwise" else "A's win rate"
    need = c.labels_for_target
    return PlanTable(f"human labels for a corrected interval of +/- {c.target_halfwidth:g} "
                     "(same design; from {run}):",
                     ["figure", "estimate", "interval", "labels now", "labels needed"],
                     [[f"corrected {what}", f"{c.estimate:.3f}",
                       f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]", str(c.n_labelled),
                       "already" if need is None else str(need)]])


def items(result: RunResult[ProbePayload]) -> RunItems:
    """The probe's items a person can label: a pairwise probe's first run (``verdicts.run0``:
    a or b; ``flipped_under`` swap marks the judge's order inconsistency), a pointwise
    probe's ``verdict``."""
    p = result.payload
    rows: list[Json] = []
    pairwise = False
    for row in p.items.rows() if p is not None else ():
        verdicts = row.get("verdicts")
        if isinstance(verdicts, dict) and verdicts.get("run0") in ("a", "b"):
            pairwise = True
            flipped = row.get("flipped_under") or []
            rows.append({"pair_id": str(row.get("id")), "question": row.get("question"),
                         "first": row.get("a"), "second": row.get("b"),
                         "winner": "first" if verdicts["run0"] == "a" else "second",
                         "unstable": int(isinstance(flipped, list) and "swap" in flipped)})
        elif row.get("verdict") in (0, 1):
            rows.append(dict(row))
    return RunItems("pairwise" if pairwise else "pointwise", rows)
