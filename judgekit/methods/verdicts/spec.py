"""Recorded verdicts as the registry sees them."""

from __future__ import annotations

from judgekit.core.errors import ConfigError
from judgekit.core.results import RunResult
from judgekit.core.spec import CardRow, MethodSpec, PlanTable, RunItems, TableRow
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import VerdictsPayload
from judgekit.methods.verdicts.report import report
from judgekit.methods.verdicts.runner import execute, headline


def _rows(p: VerdictsPayload) -> list[TableRow]:
    return [m.model_dump(mode="json") for m in p.measures]


def _judge(result: RunResult[VerdictsPayload]) -> str | None:
    p = result.payload
    return None if p is None else " | ".join([p.judge, *(o.judge for o in p.others or [])])


SECTIONS = {"position_bias": "bias", "length_preference": "bias",
            "order_consistency": "consistency"}


def _card_rows(p: VerdictsPayload, src: str) -> list[CardRow]:
    """The card's rows; with several judges, every judge's rows, each naming its judge
    (one card per judge, side by side)."""
    judges = [(p.judge, p.measures), *((o.judge, o.measures) for o in p.others or [])]
    several = len(judges) > 1
    return [CardRow(key=m.key, section=SECTIONS.get(m.key, "people"), measure=m.what,
                    estimate=m.estimate, ci=m.ci, n=m.n, decision=m.decision, units=m.units,
                    source=src, finding=m.finding, baseline=m.baseline,
                    judge=judge if several else None)
            for judge, measures in judges for m in measures if m.key != "pass_rate"]


def _plan(result: RunResult[VerdictsPayload], power: float, effects: tuple[float, ...]
          ) -> PlanTable:
    """The label plan of every corrected figure (each judge's, side by side)."""
    p = result.payload
    assert p is not None
    half = float((result.config or {}).get("target_halfwidth") or 0.05)  # type: ignore[arg-type]
    rows = [[judge, m.key, "n/a" if m.estimate is None else f"{m.estimate:.3f}",
             "n/a" if not m.ci else f"[{m.ci[0]:.3f}, {m.ci[1]:.3f}]", str(m.labelled),
             "already" if m.labels_for_target is None else str(m.labels_for_target)]
            for judge, ms in [(p.judge, p.measures),
                              *((o.judge, o.measures) for o in p.others or [])]
            for m in ms if m.labelled is not None]
    if not rows:
        raise ConfigError("this run has no figure corrected by human labels (give the "
                          "file a human column with labels on some rows)")
    return PlanTable(f"human labels for a corrected interval of +/- {half:g} (same "
                     "design; from {run}):", ["judge", "figure", "estimate", "interval",
                                              "labels now", "labels needed"], rows)


def _items(result: RunResult[VerdictsPayload]) -> RunItems:
    """The analysed items as they are (pointwise: id, verdict; pairwise: pair_id, first,
    second, winner), with their texts."""
    p = result.payload
    if p is None or p.shape not in ("pointwise", "pairwise"):
        return RunItems("pointwise", [])
    return RunItems(p.shape, list(p.items.rows()))


SPEC: MethodSpec[VerdictsConfig, VerdictsPayload] = MethodSpec(
    name="verdicts", config=VerdictsConfig, payload=VerdictsPayload, execute=execute,
    report=report, headline=headline, title="Recorded verdicts", uses_client=False,
    rows=_rows, judge=_judge, card_rows=_card_rows, plan=_plan, items=_items)
