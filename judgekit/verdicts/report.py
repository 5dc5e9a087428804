"""The report of a recorded-verdicts analysis: findings first, then every measure with
its interval, n, the uninformed judge's score and the decision."""

from __future__ import annotations

from judgekit.report.document import Doc
from judgekit.results import RunResult
from judgekit.verdicts.config import VerdictsConfig
from judgekit.verdicts.payload import VerdictsPayload


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def report(cfg: VerdictsConfig, result: RunResult[VerdictsPayload]) -> Doc:
    p = result.payload
    assert p is not None
    pct = f"{p.level:.0%}"
    d = Doc(f"Recorded verdicts: {p.judge}")
    d.h(1, f"Recorded verdicts of `{p.judge}`")
    flagged = [m for m in p.measures if m.finding]
    if flagged:
        d.warn("Findings: " + "; ".join(
            f"{m.what}: {m.decision} ({_num(m.estimate)}, {pct} interval "
            f"{_ci(m.ci)}, n = {m.n})" for m in flagged) + ".")
    d.p(f"{p.n_rows} {p.shape} rows read from {p.source} (roles: " +
        ", ".join(f"{k} = {v}" for k, v in sorted(p.roles.items())) + f"); no model was "
        f"called. Every figure has its {pct} interval and n; the baseline is what the best "
        "uninformed judge scores on the same items.")
    d.table(["measure", "what", "estimate", f"{pct} interval", "n", "clusters", "baseline",
             "decision"],
            [[m.key, m.what, _num(m.estimate), _ci(m.ci), m.n, m.clusters or "-",
              _num(m.baseline), m.decision] for m in p.measures], "measures")
    for m in p.measures:
        if m.note:
            d.p(f"{m.key}: {m.note}.")
    for note in p.notes:
        d.p(note)
    return d


def _ci(ci: list[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
