"""One judge card: a judge's probes, audits, agreement with people and corrected pass
rate side by side, read from the runs that measured it (``judgekit card RUN...``).

Every row carries its estimate, interval, n, the decision taken on it and the run it
came from; rows a run did not measure are left out rather than shown as zero. Runs of
different judges are refused: a card is about one judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from judgekit.errors import ConfigError


class CardRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    section: str  # bias, consistency, self-check, people, audit
    measure: str
    estimate: float | None
    ci: list[float] | None
    n: int
    verdict: str
    units: str  # what the number is: a difference of shares, a share, a kappa
    source: str  # the run folder's name


class JudgeCard(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = 1
    judge: str
    runs: list[str]
    rows: list[CardRow]


def _judge_of(data: dict[str, Any]) -> str | None:
    if data["method"] == "probe":
        return data.get("judge")
    if data["method"] == "nodata":
        return (data.get("models") or {}).get("evaluator")
    return None


def _probe_rows(d: dict[str, Any], src: str) -> list[CardRow]:
    rows = []
    for b in d.get("biases") or []:
        rows.append(CardRow(section="bias", measure=f"{b['name']}: {b['what']}",
                            estimate=b["bias"], ci=b["ci"], n=b["n"], verdict=b["verdict"],
                            units="difference of shares", source=src))
    for t in d.get("transforms") or []:
        rows.append(CardRow(section="consistency",
                            measure=f"{t['name']}: flips above the placebo's",
                            estimate=t["excess"], ci=t["excess_ci"], n=t["n"],
                            verdict=t["verdict"], units="difference of shares", source=src))
    for key, what in (("self_preference", "prefers its own model family"),
                      ("length_bias", "prefers the longer answer (natural pairs)")):
        x = d.get(key)
        if x:
            rows.append(CardRow(section="bias", measure=what, estimate=x["preference"],
                                ci=x["ci"], n=x["n"], verdict=x["verdict"],
                                units="difference of error rates", source=src))
    nf = d.get("noise_floor") or {}
    if nf.get("n"):
        rows.append(CardRow(section="consistency", measure=f"noise floor ({nf['source']})",
                            estimate=nf["rate"], ci=nf["ci"], n=nf["n"], verdict="-",
                            units="share of verdicts that flip", source=src))
    acc = d.get("accuracy")
    if acc:
        a = acc["both_orders"]
        rows.append(CardRow(section="people", measure="accuracy on pairs with a known answer "
                            "(both orders agree)", estimate=a["rate"], ci=a["ci"], n=a["n"],
                            verdict="-", units="share", source=src))
    h = d.get("human") or {}
    ag = h.get("agreement")
    if ag:
        rows.append(CardRow(section="people", measure="agreement with people (Cohen's kappa)",
                            estimate=ag["kappa"], ci=(ag.get("cis") or {}).get("kappa"),
                            n=ag["n"], verdict=f"majority-label baseline "
                            f"{ag['majority_baseline']:.3f} (percent agreement "
                            f"{ag['percent']:.3f})", units="kappa", source=src))
    c = h.get("a_win_rate")
    if c:
        what = "pass rate" if d.get("mode") == "pointwise" else "answer A's win rate"
        rows.append(CardRow(section="people", measure=f"corrected {what} (prediction-powered)",
                            estimate=c["estimate"], ci=c["ci"], n=c["n_items"],
                            verdict=f"{c['n_labelled']} human labels", units="share",
                            source=src))
    return rows


def _audit_rows(d: dict[str, Any], src: str) -> list[CardRow]:
    v = d.get("verdict")
    if not v:
        return []
    rows = [CardRow(section="audit", measure="No-Data audit: claimed breakdown confirmed by "
                    "the verifier", estimate=v.get("success_rate"), ci=v.get("success_ci"),
                    n=v.get("n_items") or 0, verdict=f"{v['decision']}: {v['reason']}",
                    units="share", source=src)]
    la = v.get("label_accuracy")
    if la and la.get("n") and la.get("accuracy") is not None:
        from judgekit.stats.proportions import wilson_interval

        ci = wilson_interval(round(la["accuracy"] * la["n"]), la["n"], v.get("level", 0.95))
        rows.append(CardRow(section="people", measure="label accuracy against people (audit "
                            "items)", estimate=la["accuracy"], ci=list(ci), n=la["n"],
                            verdict=f"best uninformed judge {la.get('majority_label', 0):.3f}",
                            units="share", source=src))
    return rows


def judge_card(runs: list[str | Path], out: str | Path | None = None) -> JudgeCard:
    """The card of one judge from its probe and audit runs (folders or results.json),
    written to ``out`` when given (card.json, report.md, report.html, card.png)."""
    card = build(runs)
    if out is not None:
        write(card, out)
    return card


def build(paths: list[str | Path]) -> JudgeCard:
    """A card from result folders (or results.json files) of one judge."""
    from judgekit.compare import load

    judges: dict[str, str] = {}
    rows: list[CardRow] = []
    names = []
    for p in paths:
        data = load(p).model_dump(mode="json")
        judge = _judge_of(data)
        src = Path(p).name if Path(p).is_dir() else Path(p).parent.name
        if judge is None:
            raise ConfigError(f"{p}: a judge card reads probe and No-Data audit runs, not "
                              f"{data['method']}")
        judges[src] = judge
        names.append(src)
        rows += _probe_rows(data, src) if data["method"] == "probe" else _audit_rows(data, src)
    if len(set(judges.values())) > 1:
        raise ConfigError("a judge card is about one judge; these runs judged with " +
                          ", ".join(f"{j} ({s})" for s, j in judges.items()))
    order = {"bias": 0, "consistency": 1, "people": 2, "audit": 3}
    rows.sort(key=lambda r: order.get(r.section, 9))
    return JudgeCard(judge=next(iter(judges.values())), runs=names, rows=rows)


def write(card: JudgeCard, out: str | Path) -> Path:
    """card.json, report.md, report.html and the figure card.png in ``out``."""
    from judgekit.report.card import doc, figure
    from judgekit.report.document import to_markdown
    from judgekit.report.html import write_report_html

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "card.json").write_text(json.dumps(card.model_dump(mode="json"), indent=1),
                                      encoding="utf-8")
    d = doc(card)
    (folder / "report.md").write_text(to_markdown(d), encoding="utf-8")
    figure(card, folder)
    write_report_html(folder, d, {})
    return folder
