"""What the No-Data audit tells the export, the judge card, `judgekit compare` and
`judgekit plan` (its spec's hooks)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from judgekit.analysis.paired import agreement, paired_rate, rows_by
from judgekit.core.errors import ConfigError
from judgekit.core.payload import Json, Payload
from judgekit.core.results import RunResult
from judgekit.core.spec import CardRow, Paired, PlanTable, RunItems, TableRow
from judgekit.methods.nodata.payload import AuditPayload


def rows(p: Payload) -> list[TableRow]:
    """One row per phi."""
    return [r.model_dump(mode="json") for r in getattr(p, "runs", [])]


def judge(result: RunResult[AuditPayload]) -> str | None:
    return result.payload.models.get("evaluator") if result.payload is not None else None


def card_rows(d: AuditPayload, src: str) -> list[CardRow]:
    """The audit's rows of a judge card: the verdict, and label accuracy against people."""
    v = d.verdict
    if v is None:
        return []
    out = [CardRow(key="audit_success", section="audit",
                   measure="No-Data audit: claimed breakdown confirmed by the verifier",
                   estimate=v.success_rate, ci=v.success_ci, n=v.n_items or 0,
                   decision=f"{v.decision}: {v.reason}", units="share", source=src)]
    la = v.label_accuracy
    if la is not None and la.n:
        from judgekit.stats.proportions import wilson_interval

        ci = wilson_interval(round(la.accuracy * la.n), la.n, v.level or 0.95)
        best = max(la.majority_label, la.random_at_judge_rate)
        above = la.excess_ci[0] > 0
        out.append(CardRow(key="accuracy", section="people",
                           measure="label accuracy against people (audit items)",
                           estimate=la.accuracy, ci=list(ci), n=la.n, baseline=best,
                           decision="above the best uninformed judge" if above else
                           "not above the best uninformed judge", units="share",
                           source=src))
    return out


def _item_key(rec: Json) -> str:
    x = rec.get("x") or {}
    text = json.dumps([x.get("Prompt"), x.get("Output")], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def paired(ra: RunResult[AuditPayload], rb: RunResult[AuditPayload], level: float) -> Paired:
    """Per item (matched by the judged prompt and output), did the evaluator pass the
    challenge-response protocol; label accuracy against known labels as a secondary row;
    the chance-corrected agreement of the two evaluators' labels."""
    ia, ib = rows_by(ra.detail("items"), _item_key), rows_by(rb.detail("items"), _item_key)
    keys = [k for k in ia if k in ib and ia[k].get("excluded") is None
            and ib[k].get("excluded") is None and ia[k].get("success") is not None
            and ib[k].get("success") is not None]
    acc = [(float(ia[k]["evaluator"]["label"] == ia[k]["label"]),
            float(ib[k]["evaluator"]["label"] == ib[k]["label"])) for k in keys
           if ia[k].get("label") is not None and ia[k].get("evaluator")
           and ib[k].get("evaluator")]
    secondary = [paired_rate("label accuracy (known labels)", acc, level)] if acc else []
    both = [k for k in keys if ia[k].get("evaluator") and ib[k].get("evaluator")]
    return Paired("challenge-response success rate", keys,
                  [float(bool(ia[k]["success"])) for k in keys],
                  [float(bool(ib[k]["success"])) for k in keys], secondary,
                  agreement([ia[k]["evaluator"]["label"] for k in both],
                            [ib[k]["evaluator"]["label"] for k in both], level, ra.seed or 0),
                  (len(ia), len(ib)), binary=True)


def plan(result: RunResult[AuditPayload], power: float, effects: tuple[float, ...]
         ) -> PlanTable:
    """Items an audit needs for its success rate's interval half-width (the effects are
    read as half-widths)."""
    from judgekit.stats.preference import audit_plan

    v = result.payload.verdict if result.payload is not None else None
    if v is None or v.success_rate is None:
        raise ConfigError("the audit scored no item; nothing to plan from")
    level: Any = (result.config or {}).get("level", 0.95)
    widths = tuple(sorted(set(effects), reverse=True))
    pl = audit_plan(v.success_rate, float(level), widths)
    return PlanTable(f"items an audit needs for its success rate's interval half-width "
                     f"(pilot rate {v.success_rate:.3f}, n = {v.n_items}):",
                     ["half-width", "items needed"],
                     [[repr(h), str(n)] for h, n in pl["items_needed"].items()])


def items(result: RunResult[AuditPayload]) -> RunItems:
    """The audited items a person can label: the evaluator's label of each x, with its
    prompt and output."""
    p = result.payload
    rows: list[Json] = []
    for row in p.items.rows() if p is not None and p.items is not None else ():
        ev = row.get("evaluator")
        if isinstance(ev, dict) and ev.get("label") in (0, 1):
            x = row.get("x")
            x = x if isinstance(x, dict) else {}
            rows.append({"id": str(row.get("id", row.get("index"))), "verdict": ev["label"],
                         "question": x.get("Prompt"), "answer": x.get("Output")})
    return RunItems("pointwise", rows)
