"""Analyse a file of recorded verdicts (no provider, no key, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.errors import DataError
from judgekit.payload import payload_from
from judgekit.verdicts import analysis
from judgekit.verdicts.config import VerdictsConfig
from judgekit.verdicts.payload import VerdictsPayload
from judgekit.verdicts.read import read


def execute(cfg: VerdictsConfig, client: Any = None) -> VerdictsPayload:
    """Every figure the file's verdicts allow (see judgekit.verdicts.analysis)."""
    path = Path(cfg.data_path)
    table = read(path, cfg.data_format, cfg.roles)
    notes: list[str] = []
    if table.shape == "pointwise":
        measures, items, unread = analysis.pointwise(table.rows, table.roles, cfg)
        graders = sorted({str(r["grader"]) for r in table.rows if r.get("grader")})
        judge = ", ".join(graders) or table.roles["judge"]
    elif table.shape == "pairwise":
        measures, items, unread, notes = analysis.pairwise(table.rows, table.roles, cfg)
        judge = table.roles["winner"]
        if "evaluators" in path.parts[:-1]:  # LLMBar: .../evaluators/JUDGE/SETTING/result.json
            judge = f"{path.parent.parent.name} ({path.parent.name})"
    else:
        measures, items, unread, notes = analysis.alpaca_eval(table.rows, cfg)
        names = sorted({str(r.get("annotator")) for r in table.rows if r.get("annotator")})
        judge = ", ".join(names) or "alpaca_eval annotator"
    judge = cfg.judge or judge
    if not items:
        raise DataError(f"{path}: none of its {len(table.rows)} verdicts could be read "
                        "(pointwise: pass/fail, 1/0, yes/no, C/I or a score; pairwise: "
                        "first, second or tie; alpaca_eval: preference 1, 2 or 1.5)")
    if unread:
        notes.append(f"{unread} of {len(table.rows)} verdicts could not be read and are "
                     "left out of every figure")
    return payload_from(VerdictsPayload, {
        "judge": judge, "shape": table.shape, "source": path.name, "roles": table.roles,
        "n_rows": len(table.rows), "unreadable": unread, "level": cfg.level,
        "measures": measures, "notes": notes, "items": items}, ("items",))


def headline(p: VerdictsPayload) -> str:
    shown = [m for m in p.measures if m.estimate is not None][:4]
    parts = [f"{m.key} {m.estimate:+.3f} {_ci(m.ci)} (n = {m.n})" if m.units.startswith(
        "difference") else f"{m.key} {m.estimate:.3f} {_ci(m.ci)} (n = {m.n})"
        for m in shown if m.estimate is not None]
    flagged = [m.key for m in p.measures if m.finding]
    return (f"{p.judge} ({p.shape}, {p.n_rows} rows): " + "; ".join(parts) +
            (f"; findings: {', '.join(flagged)}" if flagged else ""))


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
