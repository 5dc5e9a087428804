"""One judge card: a judge's probes, audits, agreement with people and corrected pass
rate side by side, read from the runs that measured it (``judgekit card RUN...``).

Every row carries its estimate, interval, n, the decision taken on it and the run it
came from; rows a run did not measure are left out rather than shown as zero. Runs of
different judges are refused: a card is about one judge."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from judgekit.analysis.decisions import (
    DEFAULT_MARGIN,
    DEFAULT_TARGET,
    PILOT_LABELS,
    USES,
    UseDecision,
    decide,
)
from judgekit.core.errors import ConfigError
from judgekit.core.methods import all_methods
from judgekit.core.results import RunResult
from judgekit.core.spec import CardRow

__all__ = ["PILOT_LABELS", "CardRow", "JudgeCard", "JudgeDecisions", "build", "judge_card",
           "write"]


class JudgeCard(BaseModel):
    """card.json (schema 2: rows carry a stable ``key`` and a ``decision``; the
    findings are listed)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = 3
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
    # the decisions per use (rate, rank, items) of the card's judge (the first judge's
    # on a card of several), and of every judge by name; the use the headline reports,
    # and the margins they were decided against
    decisions: dict[str, UseDecision] = {}
    by_judge: dict[str, JudgeDecisions] = {}
    use: Literal["rate", "rank", "items"] = "rate"
    margin: float = DEFAULT_MARGIN
    target_agreement: float = DEFAULT_TARGET


class JudgeDecisions(BaseModel):
    """One judge's decisions: one per use, and the headline line ``card`` prints."""

    model_config = ConfigDict(extra="forbid")
    decisions: dict[str, UseDecision]
    headline: str  # <judge>: <decision> (<use>): <reason>
    items: int


def _items(rows: list[CardRow]) -> int:
    """Items the judge gave verdicts on (what labels_needed never exceeds): pointwise
    its pass rate's n; pairwise the pairs (a pair judged in both orders is one item)."""
    n = {r.key: r.n for r in rows}
    if "pass_rate" in n:
        return n["pass_rate"]
    if "win_rate_bias" in n or "position_bias" in n:
        both = n.get("order_consistency", 0)
        return max(n.get("position_bias", 0) - both, n.get("accuracy", 0),
                   n.get("win_rate_bias", 0), both)
    return max([r.n for r in rows] + [0])


def judge_decisions(rows: list[CardRow], judge: str | None, name: str, use: str,
                    margin: float, target: float) -> JudgeDecisions:
    """Every use's decision for one judge, and its headline line."""
    mine = [r for r in rows if r.judge == judge]
    items = _items(mine)
    got = decide(mine, items, margin, target)
    d = got[use]
    return JudgeDecisions(decisions=got, items=items,
                          headline=f"{name}: {d.decision} ({use}): {d.reason}")


def judge_card(runs: list[str | Path], out: str | Path | None = None, *, use: str = "rate",
               margin: float = DEFAULT_MARGIN, target: float = DEFAULT_TARGET) -> JudgeCard:
    """The card of one judge from its probe and audit runs (folders or results file),
    written to ``out`` when given (card.json, report.md, report.html, card.png)."""
    card = build(runs, use=use, margin=margin, target=target)
    if out is not None:
        write(card, out)
    return card


def build(paths: list[str | Path], *, use: str = "rate", margin: float = DEFAULT_MARGIN,
          target: float = DEFAULT_TARGET, relabel: bool = True,
          loaded: list[RunResult] | None = None) -> JudgeCard:
    """A card from result folders (or results file files) of one judge: its rows, and
    its decision for each use (rate, rank, items) against ``margin`` and ``target``
    agreement, ``use`` giving the headline. ``relabel``: count the labels given in a
    run's folder since it ran (the analysis again; False reads the run as it was);
    ``loaded``: the runs' results already read (one per path), not read again."""
    if use not in USES:
        raise ConfigError(f"--use {use!r}: use one of {', '.join(USES)}")
    if not 0 < margin < 1:
        raise ConfigError(f"--margin {margin}: give a margin in (0, 1), e.g. 0.05")
    if not 0 < target <= 1:
        raise ConfigError(f"--target-agreement {target}: give a share in (0, 1], e.g. 0.9")
    from judgekit.analysis.comparison import load

    judges: dict[str, str] = {}
    rows: list[CardRow] = []
    names = []
    kinds: set[str] = set()
    per_run: list[tuple[str, list[CardRow]]] = []
    for i, p in enumerate(paths):
        result = loaded[i] if loaded is not None else load(p)
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
        payload = result.payload
        if relabel and spec.relabelled is not None and Path(p).is_dir():
            payload = spec.relabelled(result, Path(p)) or payload  # labels given since
        got = spec.card_rows(payload, src)
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
    name = next(iter(judges.values()))
    by = {j: judge_decisions(rows, j, j, use, margin, target) for j in side} if side else \
        {name: judge_decisions(rows, None, name, use, margin, target)}
    first = next(iter(by.values()))
    head = first.decisions[use]
    each = {j: d.headline.split(": ", 1)[1] for j, d in by.items()} if len(side) > 1 else None
    return JudgeCard(judge=name, runs=names, rows=rows,
                     findings=findings, judges=side or None, decision=head.decision,
                     verdict=f"{head.decision} ({use}): {head.reason}",
                     reasons=[] if head.decision == "trust" else [head.reason],
                     labels_needed=head.labels_needed, items=first.items, verdicts=each,
                     decisions=first.decisions, by_judge=by, use=use,  # type: ignore[arg-type]
                     margin=margin, target_agreement=target)


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
