"""The judge card's page: one table per section, and a figure of every difference with
its interval against zero (the card itself is built in judgekit.analysis.card)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.report.document import Doc

SECTIONS = {"bias": "Biases (direction)", "consistency": "Consistency against the placebo",
            "people": "Agreement with people and known answers",
            "audit": "Audit without labels (No-Data)"}


def _ci(ci: Any) -> str:
    return "n/a" if not ci or ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:+.3f}" if v < 0 else f"{v:.3f}"


def doc(card: Any) -> Doc:
    d = Doc(f"Judge card: {card.judge}")
    d.h(1, f"Judge card: `{card.judge}`")
    d.p(f"From {len(card.runs)} run(s): {', '.join(card.runs)}. " + (
        f"{len(card.findings)} finding(s): " + "; ".join(card.findings) + "."
        if card.findings else "No bias, inconsistency, distrust or agreement no better "
        "than an uninformed judge was shown.") +
        " Each row: estimate, interval at its run's level, n, and the decision taken on it.")
    d.h(2, f"Verdict: {card.decision}").p(
        card.verdict + "." + (f" Labels needed: {card.labels_needed} of {card.items} items."
                              if card.labels_needed else ""))
    if card.verdicts:
        d.table(["judge", "verdict"], [[j, v] for j, v in card.verdicts.items()], "verdicts")
    judges = card.judges or []
    if judges:
        d.h(2, "The judges side by side")
        d.p("One column per judge of the same items: each cell is the estimate, its "
            "interval, n and the decision; a finding is marked with \u2717.")
        keys = list(dict.fromkeys(r.key for r in card.rows))
        cell = {(r.key, r.judge): r for r in card.rows}
        d.table(["key", *judges],
                [[k, *(_cell(cell.get((k, j))) for j in judges)] for k in keys], "side")
    for key, title in SECTIONS.items():
        rows = [r for r in card.rows if r.section == key]
        if not rows:
            continue
        d.h(2, title)
        d.table((["judge"] if judges else []) +
                ["key", "measure", "estimate", "interval", "n", "units", "decision", "run"],
                [([r.judge] if judges else []) +
                 [r.key, r.measure, _num(r.estimate), _ci(r.ci), r.n, r.units, r.decision,
                  r.source]
                 for r in rows], key)
    return d


def _cell(r: Any) -> str:
    if r is None:
        return "-"
    return (f"{_num(r.estimate)} {_ci(r.ci)} (n = {r.n}): {r.decision}" +
            (" \u2717" if r.finding else ""))


def figure(card: Any, out: Path) -> None:
    """card.png: every difference (biases, consistency) with its interval against 0."""
    from judgekit.report.figures import pyplot, save

    rows = [r for r in card.rows if r.section in ("bias", "consistency") and r.ci
            and r.estimate is not None and r.units.startswith("difference")]
    if not rows:
        return
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    ax.axvline(0.0, color="0.5", lw=1)
    for i, r in enumerate(rows):
        bad = r.finding
        ax.errorbar(r.estimate, i, xerr=[[r.estimate - r.ci[0]], [r.ci[1] - r.estimate]],
                    fmt="o", color="C3" if bad else "C0", capsize=3)
    ax.set_yticks(range(len(rows)), [("" if r.judge is None else f"{r.judge[:20]}: ") +
                                     f"{r.measure[:48]} (n={r.n})" for r in rows],
                  fontsize=7)
    ax.set_xlim(-1.02, 1.02)
    ax.set_xlabel("difference (interval at the run's level); red: shown")
    ax.set_title(f"{card.judge}: biases and consistency")
    save(fig, out / "card.png")
