"""Recorded verdicts as the registry sees them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from judgekit.analysis.paired import agreement, paired_rate
from judgekit.core.errors import ConfigError, DataError
from judgekit.core.results import RunResult
from judgekit.core.spec import (
    CardRow,
    LabelIndex,
    MethodSpec,
    Paired,
    PlanTable,
    RunItems,
    TableRow,
)
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure, VerdictsPayload
from judgekit.methods.verdicts.report import report
from judgekit.methods.verdicts.runner import execute, headline


def _rows(p: VerdictsPayload) -> list[TableRow]:
    return [m.model_dump(mode="json") for m in p.measures]


def _judge(result: RunResult[VerdictsPayload]) -> str | None:
    p = result.payload
    return None if p is None else " | ".join([p.judge, *(o.judge for o in p.others or [])])


SECTIONS = {"position_bias": "bias", "length_preference": "bias", "leniency": "bias",
            "order_consistency": "consistency", "pass_rate": "verdicts"}


def card_rows(measures: list[Measure], src: str, judge: str | None = None) -> list[CardRow]:
    """One judge's measures as card rows (``judge`` names it on a card of several)."""
    return [CardRow(key=m.key, section=SECTIONS.get(m.key.split("[")[0], "people"), measure=m.what,
                    estimate=m.estimate, ci=m.ci, n=m.n, decision=m.decision, units=m.units,
                    source=src, finding=m.finding, baseline=m.baseline, judge=judge,
                    labelled=m.labelled, labels_for_target=m.labels_for_target,
                    family_ci=m.family_ci)
            for m in measures]


def _card_rows(p: VerdictsPayload, src: str) -> list[CardRow]:
    """The card's rows; with several judges, every judge's rows, each naming its judge
    (one card per judge, side by side)."""
    judges = [(p.judge, p.measures), *((o.judge, o.measures) for o in p.others or [])]
    several = len(judges) > 1
    return [r for judge, measures in judges
            for r in card_rows(measures, src, judge if several else None)]


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


def _key(x: dict, by: str) -> str:
    if by == "id":
        return str(x.get("id") if "id" in x else f"{x.get('pair_id')}|{x.get('first')}")
    return str(x.get("question_id"))


def _paired(ra: RunResult[VerdictsPayload], rb: RunResult[VerdictsPayload], level: float
            ) -> Paired:
    """Two analyses on the same items (two judges of one file, or one judge run twice):
    the judge's pass rate (pairwise: the first-shown answer chosen), paired by item id;
    or one judge on two systems, paired by question (the mean verdict of each question's
    rows). Accuracy against people where both runs' items carry labels, and the two
    runs' agreement."""
    pa, pb = ra.payload, rb.payload
    if pa is None or pb is None or pa.shape != pb.shape or pa.shape == "alpaca_eval":
        raise ConfigError("compare reads two pointwise or two pairwise analyses")
    a_rows, b_rows = list(pa.items.rows()), list(pb.items.rows())
    ids_a, ids_b = {_key(x, "id") for x in a_rows}, {_key(x, "id") for x in b_rows}
    by = "id" if len(ids_a & ids_b) >= 2 else "question_id"
    value = "verdict" if pa.shape == "pointwise" else "winner"

    def outcome(x: dict) -> float:
        return float(x[value] == 1) if value == "verdict" else float(x[value] == "first")

    def table(rows: list[dict]) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for x in rows:
            if by == "question_id" and x.get("question_id") is None:
                continue
            out.setdefault(_key(x, by), []).append(x)
        return out

    ta, tb = table(a_rows), table(b_rows)
    keys = [k for k in ta if k in tb]
    if by == "question_id" and len(keys) < 2:
        raise ConfigError("the two analyses share fewer than 2 item ids or question ids: "
                          "compare needs the same items (or the same questions)")
    a = [float(np.mean([outcome(x) for x in ta[k]])) for k in keys]
    b = [float(np.mean([outcome(x) for x in tb[k]])) for k in keys]
    binary = all(v in (0.0, 1.0) for v in a + b)
    human = "human" if pa.shape == "pointwise" else "label"
    right = [(float(all(outcome(x) == float(x[human] in (1, "first")) for x in ta[k])),
              float(all(outcome(x) == float(x[human] in (1, "first")) for x in tb[k])))
             for k in keys if by == "id" and ta[k][0].get(human) is not None
             and tb[k][0].get(human) is not None]
    secondary = [paired_rate("accuracy against people's labels", right, level)] if right else []
    both = [k for k in keys if len(ta[k]) == len(tb[k]) == 1]
    measure = ("pass rate" if pa.shape == "pointwise" else "share choosing the first-shown "
               "answer") + (" (paired by item)" if by == "id" else " (paired by question)")
    return Paired(measure, keys, a, b, secondary,
                  agreement([outcome(ta[k][0]) for k in both],
                            [outcome(tb[k][0]) for k in both], level, ra.seed or 0)
                  if by == "id" else None, (len(a_rows), len(b_rows)), binary=binary)


def _items(result: RunResult[VerdictsPayload]) -> RunItems:
    """The analysed items as they are (pointwise: id, verdict; pairwise: pair_id, first,
    second, winner), with their texts. A file of several judges: the first judge's rows
    (people label the items, not each judge's copy of them)."""
    p = result.payload
    if p is not None and p.shape == "graded":
        raise DataError("labelling graded verdicts (scores on a scale) is not supported "
                        "yet; label pass/fail or pairwise verdicts, or add people's scores "
                        "to the file's human columns and analyse it again")
    if p is None or p.shape not in ("pointwise", "pairwise"):
        return RunItems("pointwise", [])
    first = _first_judge(p)
    return RunItems(p.shape, [r for r in p.items.rows()
                              if first is None or r.get("judge") == first])


def _first_judge(p: VerdictsPayload) -> str | None:
    """The ``judge`` field of the first judge's item rows (None: one judge, no field)."""
    if not p.others:
        return None
    head = next(iter(p.items.rows()), None)
    return None if head is None else head.get("judge")


def _label_index(result: RunResult[VerdictsPayload]) -> LabelIndex | None:
    """The items file, shape and count of the rows :func:`_items` reads as they are (and
    the first judge's name, whose rows they are, in a file of several)."""
    p = result.payload
    if p is None or p.shape not in ("pointwise", "pairwise"):
        return None
    return LabelIndex(p.items.file, p.shape, p.items.count, _first_judge(p))


def _relabelled(result: RunResult[VerdictsPayload], folder: Path) -> VerdictsPayload | None:
    """The analysis again with the labels given in the run folder since (``judgekit
    label RUN`` or the viewer's labelling page write ``labels.jsonl`` there), joined to
    the file's own labels; None when none were given, or the run already read that
    file. A data file that is gone is a one-line error naming it."""
    from judgekit.analysis.source import LABELS_FILE
    from judgekit.recorded.labels import read as read_labels

    labels = folder / LABELS_FILE
    if not labels.is_file() or not read_labels(labels).by_item:
        return None
    raw = dict(result.config or {})
    if raw.get("labels_file") and Path(str(raw["labels_file"])).resolve() == labels.resolve():
        return None
    data = Path(str(raw.get("data_path", "")))
    if not data.exists():
        raise ConfigError(f"{folder}: {labels.name} holds labels given since the analysis, "
                          f"but its data file {data} is gone; restore it, or analyse again "
                          f"with --labels {labels}")
    cfg = VerdictsConfig.model_validate({**raw, "labels_file": str(labels)})
    return execute(cfg)


SPEC: MethodSpec[VerdictsConfig, VerdictsPayload] = MethodSpec(
    name="verdicts", config=VerdictsConfig, payload=VerdictsPayload, execute=execute,
    report=report, headline=headline, title="Recorded verdicts", uses_client=False,
    rows=_rows, judge=_judge, card_rows=_card_rows, plan=_plan, items=_items,
    label_index=_label_index, compare=_paired, relabelled=_relabelled)
