"""One judge card: a judge's probes, audits, agreement with people and corrected pass
rate side by side, read from the runs that measured it (``judgekit card RUN...``).

Every row carries its estimate, interval, n, the decision taken on it and the run it
came from; rows a run did not measure are left out rather than shown as zero. Runs of
different judges are refused: a card is about one judge."""

from __future__ import annotations

from pathlib import Path

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
        rows += spec.card_rows(result.payload, src)
    if len(set(judges.values())) > 1:
        raise ConfigError("a judge card is about one judge; these runs judged with " +
                          ", ".join(f"{j} ({s})" for s, j in judges.items()))
    order = {"bias": 0, "consistency": 1, "people": 2, "audit": 3}
    rows.sort(key=lambda r: order.get(r.section, 9))
    findings = [("" if r.judge is None else f"{r.judge}: ") +
                f"{r.measure}: {r.decision} ({_num(r.estimate)}, interval {_ci(r.ci)}, "
                f"n = {r.n}" + ("" if r.baseline is None or r.units.startswith("difference")
                                else f"; best uninformed judge {r.baseline:.3f}")
                + f"; {r.source})" for r in rows if r.finding]
    side = list(dict.fromkeys(r.judge for r in rows if r.judge is not None))
    return JudgeCard(judge=next(iter(judges.values())), runs=names, rows=rows,
                     findings=findings, judges=side or None)


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
