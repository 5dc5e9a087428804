"""Choose a judge, or a jury (``judgekit choose``): several judges' recorded verdicts on
the same items, aligned by item id, compared pairwise, combined into juries, and,
with ``selective``, a confidence threshold under which the judge's verdicts agree with
people at the target with a guarantee. No model call.

Every paired difference is at a Bonferroni-adjusted level (the run's level spread over
all the comparisons made), so the decision's error rate holds across them: a judge is
"not worse within the margin" when the adjusted interval of (best - it) lies below the
margin, "worse" when it lies above 0. The choice is the cheapest judge not worse than
the best (by agreement with people) within the margin, or, with a target, the cheapest
whose agreement's lower limit reaches it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from judgekit.core.errors import ConfigError
from judgekit.report.choice_types import (
    Choice,
    Estimate,
    JudgeItems,
    JudgeRow,
    PairRow,
    rate,
)

__all__ = ["Choice", "JudgeItems", "choose", "load_judges", "write"]


# ---- reading -----------------------------------------------------------------------------
def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) and 0 <= v <= 1 else None


def _from_payload(src: str, p: Any, prices: dict[str, float]) -> list[JudgeItems]:
    if p.shape not in ("pointwise", "pairwise"):
        raise ConfigError(f"{src}: choose compares pointwise or pairwise verdicts, not "
                          f"{p.shape}")
    names = [p.judge, *(o.judge for o in p.others or [])]
    measures = [p.measures, *(o.measures for o in p.others or [])]
    rows = list(p.items.rows())
    out = []
    for name, ms in zip(names, measures):
        mine = [r for r in rows if r.get("judge", names[0]) == name] if p.others else rows
        verdict, human, conf, cluster = {}, {}, {}, {}
        spent: dict[str, list[float]] = {"cost": [], "seconds": []}
        for r in mine:
            for k in spent:
                v = _amount(r.get(k))
                if v is not None:
                    spent[k].append(v)
            if p.shape == "pointwise":
                key = str(r["id"])
                verdict[key] = str(r["verdict"])
                if r.get("human") is not None:
                    human[key] = str(r["human"])
                cluster[key] = str(r.get("question_id") or key)
            else:
                key = f"{r['pair_id']}#{r.get('order', 0)}"
                verdict[key] = str(r["winner"])
                if r.get("label") is not None:
                    human[key] = str(r["label"])
                cluster[key] = str(r["pair_id"])
            c = _num(r.get("confidence"))
            if c is not None:
                conf[key] = c
        acc = next((m for m in ms if m.key == "accuracy"), None)
        # a judge named only by its generic column is named by its file or run
        label = src if name in ("judge", "winner", "verdict") else name
        given = prices.get(label, prices.get(name))
        recorded = float(np.mean(spent["cost"])) if spent["cost"] else None
        out.append(JudgeItems(
            label, p.shape, verdict, human, conf, cluster,
            acc.decision if acc is not None else None,
            given if given is not None else recorded,
            float(np.mean(spent["seconds"])) if spent["seconds"] else None,
            "--price" if given is not None else
            f"the file's cost column (mean of {len(spent['cost'])} items)"
            if recorded is not None else None))
    return out


def _by_folder(judges: list[JudgeItems], origin: list[Path]) -> list[JudgeItems]:
    """Judges named only by a file name they share (LLMBar's JUDGE/SETTING/result.json)
    are named by the folders that tell them apart: GPT-4/Vanilla_NoRules."""
    import os

    stems = [p.stem if p.is_file() else p.name for p in origin]
    out = list(judges)
    for stem in {s for s in stems if stems.count(s) > 1}:
        idx = [i for i, (j, s) in enumerate(zip(judges, stems)) if s == stem and j.name == s]
        if len(idx) < 2:
            continue
        paths = [origin[i].resolve() for i in idx]
        common = Path(os.path.commonpath([str(p.parent) for p in paths]))
        for i, p in zip(idx, paths):
            rel = p.parent.relative_to(common).as_posix()
            if rel and rel != ".":
                out[i] = out[i]._replace(name=rel)
    return out


def label_id(key: str, shape: str) -> str:
    """An item's key here as `judgekit label` names it: a pair's n-th order (0 first)
    is PAIR for the first and PAIR#(n+1) after it; pointwise ids are the same."""
    if shape != "pairwise":
        return key
    pair, _, order = key.rpartition("#")
    return pair if order in ("", "0") else f"{pair}#{int(order) + 1}"


def _is_alpaca(path: Path) -> bool:
    from judgekit.recorded.tables import format_of

    try:
        return format_of(path, "auto") == "alpaca_eval"
    except Exception:  # noqa: BLE001 - not readable as alpaca_eval: the analysis says why
        return False


def _alpaca_judges(path: Path, prices: dict[str, float]) -> list[JudgeItems]:
    """alpaca_eval annotations (one file may hold several annotators): each annotator's
    preferences as a pairwise judge, items keyed by instruction and both outputs, with
    its ``price_per_example`` and ``time_per_example`` as cost and time. A preference of
    1 is the first output, 2 the second; anything else (1.5, 0, null) is a tie or no
    verdict and is left out. alpaca_eval files carry no people's labels: agreement with
    people needs them from another source."""
    import hashlib
    import tempfile

    import judgekit
    from judgekit.recorded.alpaca_eval import _alpaca

    rows = _alpaca(path)
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        key = hashlib.sha1("\x1f".join(str(r.get(k, "")) for k in (
            "instruction", "output_1", "output_2")).encode()).hexdigest()[:12]
        pref = r.get("preference")
        winner = {1: "first", 2: "second"}.get(pref if isinstance(pref, int) else
                                               int(pref) if isinstance(pref, float)
                                               and pref in (1.0, 2.0) else -1)
        if winner is None:
            continue
        by.setdefault(str(r.get("annotator") or path.stem), []).append(
            {"pair_id": key, "question": r.get("instruction", ""),
             "first": r.get("output_1", ""), "second": r.get("output_2", ""),
             "winner": winner,
             **({"price_per_example": r["price_per_example"]}
                if r.get("price_per_example") is not None else {}),
             **({"time_per_example": r["time_per_example"]}
                if r.get("time_per_example") is not None else {})})
    if not by:
        raise ConfigError(f"{path}: no annotation with a preference of 1 or 2")
    out: list[JudgeItems] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, lines in by.items():
            f = Path(tmp) / "annotations.jsonl"
            f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
            res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
            out += [j._replace(name=name) for j in _from_payload(name, res.payload, prices)]
    return out


def _amount(x: Any) -> float | None:
    """A cost or a duration as recorded (a number >= 0), None when absent or unreadable."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) and v >= 0 else None


def load_judges(sources: list[str | Path], prices: dict[str, float] | None = None
                ) -> list[JudgeItems]:
    """Every judge of ``sources``: `judgekit analyse` run folders, or verdict files
    (analysed in memory, one judge per judge column)."""
    import judgekit
    from judgekit.runs.folder import is_run, load_results

    prices = prices or {}
    out: list[JudgeItems] = []
    origin: list[Path] = []  # each judge's source
    for s in sources:
        path = Path(s)
        start = len(out)
        if path.is_dir() and is_run(path):
            res = load_results(path)
        elif path.is_file() and _is_alpaca(path):
            out += _alpaca_judges(path, prices)
            continue
        elif path.is_file():
            res = judgekit.run({"method": "verdicts", "data_path": str(path)}, save=False)
        else:
            raise ConfigError(f"{s}: no such analyse run or verdicts file")
        if getattr(res.payload, "shape", None) not in ("pointwise", "pairwise"):
            raise ConfigError(f"{s}: choose reads `judgekit analyse` runs of pointwise or "
                              f"pairwise verdicts (or their files), not a {res.method} run")
        out += _from_payload(path.stem if path.is_file() else path.name, res.payload, prices)
        origin += [path] * (len(out) - start)
    out = _by_folder(out, origin)
    names = [j.name for j in out]
    if len(set(names)) < len(names):  # two files of one judge name: name them by source
        seen: dict[str, int] = {}
        fixed = []
        for j in out:
            seen[j.name] = seen.get(j.name, 0) + 1
            fixed.append(j._replace(name=j.name if names.count(j.name) == 1
                                    else f"{j.name}#{seen[j.name]}"))
        out = fixed
    if len(out) < 2:
        raise ConfigError("choose compares at least 2 judges: give several runs or files, "
                          "or one file with several judge columns")
    shapes = {j.shape for j in out}
    if len(shapes) > 1:
        raise ConfigError("choose compares judges of one shape (pointwise or pairwise)")
    return out


# ---- measures ----------------------------------------------------------------------------
def _kappa(a: list[str], b: list[str], level: float, seed: int,
           resamples: int = 1000) -> Estimate:
    from judgekit.stats.agreement import cohen_kappa, item_bootstrap

    if len(a) < 2:
        return Estimate(estimate=None, ci=None, n=len(a))
    code = {c: i for i, c in enumerate(sorted(set(a) | set(b)))}
    x = np.array([code[v] for v in a])
    y = np.array([code[v] for v in b])
    value = cohen_kappa(x, y)
    iv = item_bootstrap(lambda idx: cohen_kappa(x[idx], y[idx]), len(x), seed, resamples,
                        level)
    ok = np.isfinite(value) and np.isfinite(iv.lo)
    return Estimate(estimate=float(value) if np.isfinite(value) else None,
                    ci=[float(iv.lo), float(iv.hi)] if ok else None, n=len(a))


def _judge_row(j: JudgeItems, level: float, seed: int, resamples: int) -> JudgeRow:
    keys = [k for k in j.verdict if k in j.human]
    row = JudgeRow(name=j.name, n=len(j.verdict), shape=j.shape, cost_per_item=j.cost,
                   cost_source=j.cost_source, seconds_per_item=j.seconds,
                   uninformed=j.uninformed)
    if keys:
        row.agreement = rate([float(j.verdict[k] == j.human[k]) for k in keys], level)
        row.kappa = _kappa([j.verdict[k] for k in keys], [j.human[k] for k in keys], level,
                           seed, resamples)
    if j.shape == "pointwise" and len(keys) >= 2:
        from judgekit.stats.proportions import newcombe_paired

        d = newcombe_paired([float(j.verdict[k] == "1") for k in keys],
                            [float(j.human[k] == "1") for k in keys], level)
        row.leniency = Estimate(estimate=d.diff, ci=d.ci, n=len(keys))
    if j.shape == "pairwise":
        from judgekit.stats.decide import cluster_mean

        dec = [k for k in j.verdict if j.verdict[k] != "tie"]
        if dec:
            m = cluster_mean([float(j.verdict[k] == "first") - 0.5 for k in dec],
                             [j.cluster[k] for k in dec], level, bounds=(-0.5, 0.5))
            row.position_bias = Estimate(estimate=m.estimate, ci=m.ci, n=m.n)
    return row


def _pairs(judges: list[JudgeItems], level: float, seed: int, resamples: int
           ) -> list[PairRow]:
    from judgekit.stats.decide import cluster_mean
    from judgekit.stats.proportions import newcombe_paired

    out = []
    for i, a in enumerate(judges):
        for b in judges[i + 1:]:
            lab = [k for k in a.verdict if k in b.verdict and k in a.human]
            if lab:
                ca = [float(a.verdict[k] == a.human[k]) for k in lab]
                cb = [float(b.verdict[k] == a.human[k]) for k in lab]
                d = newcombe_paired(ca, cb, level)
                out.append(PairRow(a=a.name, b=b.name, measure="agreement",
                                   difference=d.diff, ci=d.ci, n=len(lab)))
                ka = _kappa([a.verdict[k] for k in lab], [a.human[k] for k in lab], level,
                            seed, resamples)
                kb = _kappa([b.verdict[k] for k in lab], [a.human[k] for k in lab], level,
                            seed, resamples)
                out.append(_kappa_difference(a, b, lab, level, seed, ka, kb, resamples))
            shared = [k for k in a.verdict if k in b.verdict]
            if a.shape == "pointwise" and shared:
                d = newcombe_paired([float(a.verdict[k] == "1") for k in shared],
                                    [float(b.verdict[k] == "1") for k in shared], level)
                out.append(PairRow(a=a.name, b=b.name, measure="leniency",
                                   difference=d.diff, ci=d.ci, n=len(shared)))
            if a.shape == "pairwise":
                dec = [k for k in shared if "tie" not in (a.verdict[k], b.verdict[k])]
                if len(dec) >= 2:
                    m = cluster_mean([float(a.verdict[k] == "first")
                                      - float(b.verdict[k] == "first") for k in dec],
                                     [a.cluster[k] for k in dec], level)
                    out.append(PairRow(a=a.name, b=b.name, measure="position_bias",
                                       difference=m.estimate, ci=m.ci, n=m.n))
    return out


def _kappa_difference(a: JudgeItems, b: JudgeItems, lab: list[str], level: float,
                      seed: int, ka: Estimate, kb: Estimate, resamples: int) -> PairRow:
    """Kappa of a minus kappa of b on the same labelled items, paired percentile
    bootstrap over items."""
    from judgekit.stats.agreement import cohen_kappa, item_bootstrap

    code = {c: i for i, c in enumerate(sorted({a.verdict[k] for k in lab} |
                                              {b.verdict[k] for k in lab} |
                                              {a.human[k] for k in lab}))}
    x = np.array([code[a.verdict[k]] for k in lab])
    y = np.array([code[b.verdict[k]] for k in lab])
    h = np.array([code[a.human[k]] for k in lab])
    if ka.estimate is None or kb.estimate is None or len(lab) < 2:
        return PairRow(a=a.name, b=b.name, measure="kappa", difference=None, ci=None,
                       n=len(lab))
    iv = item_bootstrap(lambda idx: cohen_kappa(x[idx], h[idx]) - cohen_kappa(y[idx], h[idx]),
                        len(lab), seed, resamples, level)
    ok = np.isfinite(iv.lo) and np.isfinite(iv.hi)
    return PairRow(a=a.name, b=b.name, measure="kappa", difference=ka.estimate - kb.estimate,
                   ci=[float(iv.lo), float(iv.hi)] if ok else None, n=len(lab))


# ---- the decision ------------------------------------------------------------------------
def choose(judges: list[JudgeItems], *, level: float = 0.95, margin: float = 0.05,
           target_agreement: float | None = None, max_leniency: float | None = None,
           selective: bool = False, risk: float = 0.1, seed: int = 0,
           resamples: int = 1000, cascade: bool = False) -> Choice:
    """Compare, combine and choose (see the module docstring)."""
    from judgekit.report.jury import cascade_evaluation, juries, selective_evaluation

    rows = [_judge_row(j, level, seed, resamples) for j in judges]
    n_pairs = len(judges) * (len(judges) - 1) // 2
    per_pair = 4
    adjusted = 1 - (1 - level) / max(1, n_pairs * per_pair)
    pairs = _pairs(judges, adjusted, seed, resamples)
    jury = juries(judges, level)
    chosen, decision = _decide(rows, pairs, margin, target_agreement, max_leniency)
    out = Choice(level=level, adjusted_level=round(adjusted, 6), margin=margin, judges=rows,
                 pairs=pairs, decision=decision, chosen=chosen, jury=jury)
    if selective:
        if target_agreement is None:
            raise ConfigError("--selective needs --target-agreement (e.g. 0.8)")
        if cascade:
            try:
                out.selective = cascade_evaluation(judges, target_agreement, risk, level)
            except ValueError:
                raise ConfigError("--cascade needs judges that record a confidence column "
                                  "(their probability for their own verdict)") from None
        else:
            out.selective = selective_evaluation(judges, chosen or rows[0].name,
                                                 target_agreement, risk, level)
    elif cascade:
        raise ConfigError("--cascade goes with --selective --target-agreement T")
    return out


def _diff(pairs: list[PairRow], x: str, y: str, measure: str) -> tuple[float, list[float]] | None:
    """x - y on ``measure`` with its adjusted interval."""
    for p in pairs:
        if p.measure != measure or p.difference is None or p.ci is None:
            continue
        if (p.a, p.b) == (x, y):
            return p.difference, list(p.ci)
        if (p.a, p.b) == (y, x):
            return -p.difference, [-p.ci[1], -p.ci[0]]
    return None


def _agreement(r: JudgeRow) -> float:
    return -1.0 if r.agreement is None or r.agreement.estimate is None else \
        r.agreement.estimate


def _decide(rows: list[JudgeRow], pairs: list[PairRow], margin: float,
            target: float | None, max_leniency: float | None) -> tuple[str | None, str]:
    rated = [r for r in rows if r.agreement is not None and r.agreement.estimate is not None]
    if not rated:
        return None, ("no human labels: no judge can be chosen by its agreement with "
                      "people; label a random sample of items (judgekit label) and run again")
    best = max(rated, key=lambda r: (r.agreement.estimate, -(r.cost_per_item or 0)))  # type: ignore[union-attr]
    notes, ok = [], [best]
    for r in rated:
        if r is best:
            continue
        d = _diff(pairs, best.name, r.name, "agreement")
        if d is None:
            continue
        if d[1][1] < margin:
            ok.append(r)
            notes.append(f"{r.name} is not worse than {best.name} within margin {margin:g}")
        elif d[1][0] > 0:
            notes.append(f"{r.name} agrees less with people than {best.name}")
    if target is not None:
        ok = [r for r in rated if r.agreement.ci and r.agreement.ci[0] >= target]  # type: ignore[union-attr]
        if not ok:
            return None, (f"no judge's agreement with people is shown at least {target:g} "
                          f"(the best: {best.name}, {best.agreement.estimate:.3f}); label "  # type: ignore[union-attr]
                          "more items, or escalate to people")
    if max_leniency is not None:
        ok = [r for r in ok if r.leniency is None or (
            r.leniency.ci is not None and max(abs(r.leniency.ci[0]),
                                              abs(r.leniency.ci[1])) <= max_leniency)]
        if not ok:
            return None, f"no judge is shown within +/-{max_leniency:g} of people's pass rate"
    priced = [r for r in ok if r.cost_per_item is not None]
    if priced and len(priced) == len(ok):
        pick = min(priced, key=lambda r: float(r.cost_per_item or 0.0))
    else:
        pick = best if best in ok else max(ok, key=lambda r: _agreement(r))
    text = f"use {pick.name}"
    if pick is not best and pick.cost_per_item and best.cost_per_item:
        text += (f"; it is not worse than {best.name} within margin {margin:g} and costs "
                 f"{best.cost_per_item / pick.cost_per_item:.3g}x less")
    elif pick is best:
        text += f" (highest agreement with people, {best.agreement.estimate:.3f})"  # type: ignore[union-attr]
    bad = [r.name for r in rows if (r.uninformed or "").startswith("no better")]
    if bad:
        text += f"; {', '.join(bad)} no better than an uninformed judge"
    rest = [n for n in notes if not n.startswith(pick.name)]
    return pick.name, text + ("; " + "; ".join(rest) if rest else "")


def write(choice: Choice, out: str | Path, *, overwrite: bool = False) -> Path:
    """choice.json, report.md and report.html in ``out``."""
    from judgekit.report.document import Doc
    from judgekit.runs.folder import write_folder
    from judgekit.runs.io import prepare_out, record_outputs

    folder = Path(out)
    before = prepare_out(folder, overwrite=overwrite, kind="choice")
    d = Doc("Choosing a judge")
    d.h(1, "Choosing a judge").p(f"Decision: {choice.decision}.")

    def est(e: Estimate | None) -> str:
        if e is None or e.estimate is None:
            return "n/a"
        ci = "" if not e.ci else f" [{e.ci[0]:.3f}, {e.ci[1]:.3f}]"
        return f"{e.estimate:.3f}{ci} (n = {e.n})"

    d.h(2, "Judges").table(
        ["judge", "items", "agreement with people", "kappa", "leniency", "position bias",
         "cost per item", "uninformed"],
        [[r.name, r.n, est(r.agreement), est(r.kappa), est(r.leniency), est(r.position_bias),
          "n/a" if r.cost_per_item is None else f"${r.cost_per_item:.5g}",
          r.uninformed or "n/a"] for r in choice.judges], "judges")
    d.h(2, f"Paired differences (A - B; {choice.adjusted_level:.4g} intervals, Bonferroni "
        f"over the comparisons at {choice.level:g})").table(
        ["A", "B", "measure", "difference", "interval", "n"],
        [[p.a, p.b, p.measure, "n/a" if p.difference is None else f"{p.difference:+.3f}",
          "n/a" if not p.ci else f"[{p.ci[0]:+.3f}, {p.ci[1]:+.3f}]", p.n]
         for p in choice.pairs], "pairs")
    d.h(2, "Juries").table(
        ["jury", "agreement with people", "effective judges", "ties", "no verdict"],
        [[k, est(j.agreement), f"{j.effective_judges:.2f}", j.ties, j.no_verdict]
         for k, j in choice.jury.items()], "jury")
    queue: dict[str, str] = {}
    if choice.selective is not None:
        s = choice.selective
        cost = "" if s.cost_per_item is None else f", judges' cost ${s.cost_per_item:.5g} " \
            "per item (people not counted)"
        d.h(2, "Selective evaluation").p(
            f"{s.judge}: threshold {s.threshold}, coverage {s.coverage:.3f}, agreement on "
            f"the kept labelled items {est(s.agreement)}{cost}; {s.escalated} item(s) "
            f"escalated to people (escalated.jsonl: `judgekit label SOURCE --queue "
            f"escalated.jsonl` puts them first on the labelling page). {s.guarantee}.")
        if s.cascade:
            d.table(["stage", "threshold", "reaches", "decides", "agreement", "cost per item"],
                    [[c.judge, "none" if c.threshold is None else f"{c.threshold:.3g}",
                      f"{c.reached:.3f}", f"{c.decided:.3f}", est(c.agreement),
                      "n/a" if c.cost_per_item is None else f"${c.cost_per_item:.5g}"]
                     for c in s.cascade], "cascade")
        shape = choice.judges[0].shape if choice.judges else "pointwise"
        queue["escalated.jsonl"] = "".join(
            json.dumps({"id": label_id(k, shape), "reason": "no judge was sure enough"})
            + "\n" for k in s.escalated_ids)
    write_folder(folder, d, json_files={"choice.json": choice}, text_files=queue)
    record_outputs(folder, before, "choice")
    return folder
