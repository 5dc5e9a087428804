"""One judge card: a judge's probes, audits, agreement with people and corrected pass
rate side by side, read from the runs that measured it (``judgekit card RUN...``).

Every row carries its estimate, interval, n, the decision taken on it and the run it
came from; rows a run did not measure are left out rather than shown as zero. Runs of
different judges are refused: a card is about one judge."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from judgekit.core.errors import ConfigError
from judgekit.core.methods import all_methods
from judgekit.core.spec import CardRow

__all__ = ["CardRow", "JudgeCard", "build", "judge_card", "write"]


class JudgeCard(BaseModel):
    """card.json (schema 2: rows carry a stable ``key`` and a ``decision``; the
    findings are listed)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = 2
    judge: str
    runs: list[str]
    rows: list[CardRow]
    findings: list[str]
    # several judges side by side (one file with several judge columns): their names,
    # in order; each row names its judge
    judges: list[str] | None = None
    # the verdict at the end of the card: trust | use corrected | do not trust
    decision: Literal["trust", "use corrected", "do not trust"] = "do not trust"
    verdict: str = ""  # the decision in one sentence, with its reasons
    reasons: list[str] = []
    labels_needed: int = 0  # more human labels the verdict asks for (at most the items)
    items: int = 0  # items the judge gave verdicts on (labels_needed never exceeds it)
    # several judges: each one's verdict (the top-level one is the first judge's)
    verdicts: dict[str, str] | None = None


# A judge is trusted when its pass rate is shown within this margin of people's
# (the leniency interval inside +/- TRUST_MARGIN) and nothing else counts against it.
TRUST_MARGIN = 0.05
# Labels asked for when nothing was measured against people: a pilot to plan from.
PILOT_LABELS = 60


def verdict(rows: list[CardRow], judge: str | None = None) -> tuple[str, str, list[str],
                                                                     int, int]:
    """The card's decision for one judge (``judge``: its rows on a card of several):
    "do not trust" with the findings as reasons; "trust" when its pass rate is within
    +/- TRUST_MARGIN of people's (the leniency interval); otherwise "use corrected",
    with the labels that narrow the corrected rate to the run's target (never more than
    the items left to label)."""
    mine = [r for r in rows if r.judge == judge]
    items = max([r.n for r in mine if r.key in ("pass_rate", "position_bias")] +
                [r.n for r in mine] + [0])
    reasons = [f"{r.measure}: {r.decision}" for r in mine if r.finding]
    corrected = next((r for r in mine if r.key == "corrected_pass_rate"), None)
    need = None if corrected is None else corrected.labels_for_target
    lenient = next((r for r in mine if r.key == "leniency"), None)
    done = (corrected.labelled or 0) if corrected else 0
    # need counts labels in all; none measured against people: a pilot to plan from
    more = max(0, min(need, items) - done) if need is not None else \
        0 if corrected is not None else min(PILOT_LABELS, items)
    if reasons:
        return ("do not trust", "do not trust: " + "; ".join(reasons), reasons, more, items)
    if lenient is None or lenient.ci is None or corrected is None:
        pilot = min(PILOT_LABELS, items)
        return ("do not trust", "do not trust: nothing measured against people; label "
                f"{pilot} random items to check it", ["no human labels"], pilot, items)
    m = max(abs(lenient.ci[0]), abs(lenient.ci[1]))
    if m <= TRUST_MARGIN:
        return ("trust", f"trust: its rate is within +/-{m:.3f} of people's "
                f"({corrected.labelled} human labels)", [], 0, items)
    w = ((corrected.ci[1] - corrected.ci[0]) / 2) if corrected.ci else float("nan")
    text = (f"use the corrected rate ({_num(corrected.estimate)}, interval {_ci(corrected.ci)}, "
            f"+/-{w:.3f}); its pass rate may differ from people's by up to {m:.3f}")
    text += (f"; {more} more labels narrow it to the run's target" if need
             else "; it is already at the run's target width")
    return ("use corrected", text, [f"leniency interval {_ci(lenient.ci)} is wider than "
                                    f"+/-{TRUST_MARGIN}"], more or 0, items)


def judge_card(runs: list[str | Path], out: str | Path | None = None) -> JudgeCard:
    """The card of one judge from its probe and audit runs (folders or results file),
    written to ``out`` when given (card.json, report.md, report.html, card.png)."""
    card = build(runs)
    if out is not None:
        write(card, out)
    return card


def build(paths: list[str | Path]) -> JudgeCard:
    """A card from result folders (or results file files) of one judge."""
    from judgekit.report.comparison import load

    judges: dict[str, str] = {}
    rows: list[CardRow] = []
    names = []
    kinds: set[str] = set()
    per_run: list[tuple[str, list[CardRow]]] = []
    for p in paths:
        result = load(p)
        spec = result.spec
        judge = spec.judge(result) if spec is not None and spec.judge is not None else None
        src = Path(p).name if Path(p).is_dir() else Path(p).parent.name
        if judge is None or spec.card_rows is None or result.payload is None:
            able = ", ".join(s.key for s in all_methods() if s.card_rows is not None)
            raise ConfigError(f"{p}: a judge card reads runs of {able}, not "
                              f"{result.method}" + (f"/{result.experiment}"
                                                    if result.experiment else ""))
        judges[src] = judge
        names.append(src)
        got = spec.card_rows(result.payload, src)
        kinds.add(result.method)
        per_run.append((judge, got))
        rows += got
    if len(set(judges.values())) > 1:
        if kinds != {"verdicts"}:
            raise ConfigError("a judge card is about one judge; these runs judged with " +
                              ", ".join(f"{j} ({s})" for s, j in judges.items()) +
                              " (judges side by side: give `judgekit analyse` runs)")
        # analyses of several judges: one card, the judges side by side
        for judge, got in per_run:
            for r in got:
                r.judge = r.judge or judge
    order = {"bias": 0, "consistency": 1, "people": 2, "audit": 3}
    rows.sort(key=lambda r: order.get(r.section, 9))
    findings = [("" if r.judge is None else f"{r.judge}: ") +
                f"{r.measure}: {r.decision} ({_num(r.estimate)}, interval {_ci(r.ci)}, "
                f"n = {r.n}" + ("" if r.baseline is None or r.units.startswith("difference")
                                else f"; best uninformed judge {r.baseline:.3f}")
                + f"; {r.source})" for r in rows if r.finding]
    side = list(dict.fromkeys(r.judge for r in rows if r.judge is not None))
    decision, text, reasons, need, items = verdict(rows, side[0] if side else None)
    each = {j: verdict(rows, j)[1] for j in side} if len(side) > 1 else None
    return JudgeCard(judge=next(iter(judges.values())), runs=names, rows=rows,
                     findings=findings, judges=side or None, decision=decision,  # type: ignore[arg-type]
                     verdict=text, reasons=reasons, labels_needed=need, items=items,
                     verdicts=each)


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _ci(ci: list[float] | None) -> str:
    return "n/a" if not ci or ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def write(card: JudgeCard, out: str | Path, *, overwrite: bool = False) -> Path:
    """card.json, report.md, report.html and the figure card.png in ``out`` (a new or
    empty folder, or a previous card's with ``overwrite``; never a run's folder)."""
    from judgekit.report.card import doc, figure
    from judgekit.runs.folder import write_folder
    from judgekit.runs.io import prepare_out, record_outputs

    folder = Path(out)
    before = prepare_out(folder, overwrite=overwrite, kind="card")
    figure(card, folder)
    write_folder(folder, doc(card), json_files={"card.json": card})
    record_outputs(folder, before, "card")
    return folder
