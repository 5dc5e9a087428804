"""The report of a recorded-verdicts analysis: findings first, then every measure with
its interval, n, the uninformed judge's score and the decision."""

from __future__ import annotations

from judgekit.core.results import RunResult
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure, VerdictsPayload
from judgekit.report.document import Doc


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def report(cfg: VerdictsConfig, result: RunResult[VerdictsPayload]) -> Doc:
    p = result.payload
    assert p is not None
    pct = f"{p.level:.0%}"
    judges = [(p.judge, p.measures, p.notes), *((o.judge, o.measures, o.notes)
                                                for o in p.others or [])]
    names = " | ".join(j for j, _, _ in judges)
    d = Doc(f"Recorded verdicts: {names}")
    d.h(1, f"Recorded verdicts of `{names}`")
    for judge, measures, _ in judges:
        flagged = [m for m in measures if m.finding]
        if flagged:
            d.warn(f"Findings ({judge}): " + "; ".join(
                f"{m.what}: {m.decision} ({_num(m.estimate)}, {pct} interval "
                f"{_ci(m.ci)}, n = {m.n})" for m in flagged) + ".")
    d.p(f"{p.n_rows} {p.shape} rows read from {p.source} (roles: " +
        ", ".join(f"{k} = {v}" for k, v in sorted(p.roles.items())) + f"); no model was "
        f"called. Every figure has its {pct} interval and n; the baseline is what the best "
        "uninformed judge scores on the same items.")
    if len(judges) > 1:
        d.h(2, "The judges side by side")
        keys = list(dict.fromkeys(m.key for _, ms, _ in judges for m in ms))
        cells = {(j, m.key): m for j, ms, _ in judges for m in ms}
        d.table(["measure", *(j for j, _, _ in judges)],
                [[k, *(_cell(cells.get((j, k))) for j, _, _ in judges)] for k in keys],
                "side")
    for judge, measures, notes in judges:
        if len(judges) > 1:
            d.h(2, judge)
        d.table(["measure", "what", "estimate", f"{pct} interval", "n", "clusters",
                 "baseline", "decision"],
                [[m.key, m.what, _num(m.estimate), _ci(m.ci), m.n, m.clusters or "-",
                  _num(m.baseline), m.decision] for m in measures], "measures")
        for m in measures:
            if m.note:
                d.p(f"{m.key}: {m.note}.")
        for note in notes:
            d.p(note)
    return d


def _cell(m: Measure | None) -> str:
    if m is None:
        return "-"
    return f"{_num(m.estimate)} {_ci(m.ci)} (n = {m.n}): {m.decision}"


def _ci(ci: list[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
