"""Are the card's decisions right on judges of every quality, with few labels and many?

Simulated verdict files with known truth go through the functions `judgekit analyse`
and `judgekit card` run (judgekit.methods.verdicts.pointwise / .pairwise, then
judgekit.analysis.decisions.decide at the default margin 0.05 and target agreement 0.9);
every draw is seeded from a named stream.

Pointwise design: 2 systems answer the same questions (N items, the two answers of a
question one cluster); people pass each system at its own rate (0.3-0.8); the judge has
a sensitivity and a specificity drawn across the whole range of quality (0.55-1.0 each,
a third of judges near-perfect), so its true leniency on a system with people's rate p
is (1 - spec)(1 - p) - (1 - sens) p and its accuracy p sens + (1 - p) spec. Labels are
nested random subsets of the items (50, 100, 200, ... up to N): each file's decisions
at every size.

Pairwise design: pairs of two models' answers (both orders shown for half the files),
people's label the better answer; the judge picks the better one with its own
accuracy, plus a preference for the first-shown answer and for one model (its win-rate
bias). Truth: the judge's win-rate bias (overall and per model) and its accuracy.

Figures (the last line is one JSON object; pairwise figures carry the prefix
``pairwise_``):

- wrong_trust_rate: over (file, label set) pairs whose truth lies outside the margin
  (rate: some leniency beyond +/-0.05; rank: systems' leniencies apart by more than
  0.05; items: accuracy below 0.9; for rate and rank also a judge whose accuracy is no
  better than the best uninformed judge's, which the card never trusts), the share
  decided "trust"; the worst use (each use's in wrong_trust_by_use).
- wrong_distrust_rate: the same for "do not trust" where the truth lies inside.
- trust_power_at_4x: judges inside half the margin (rate) and informed; n* the first
  label set whose leniency intervals (overall and every system's: the widest) are no
  wider than the margin's band (2 x 0.05); the share decided "trust" at the first label
  set of at least 4 n*.
- flip_to_worse_with_more_labels: over consecutive nested label sets of a file (n to
  the next), the share whose decision gets worse (trust to use corrected or do not
  trust, use corrected to do not trust) while the truth is inside the margin (more
  evidence for a good judge must not count against it).
- zero_width_trust: trust decisions resting on an interval of zero width (0).
- pairwise_nothing_measured: labelled pairwise files decided "nothing measured
  against people" (0).
- previous_rule_*: the card's rule before this design on the same files and label sets
  (rate only): any significant leniency row vetoes, else trust when the overall
  leniency interval lies inside the margin; its wrong trust, wrong distrust and
  flips to worse with more labels.

Usage: python benchmarks/decisions.py [FILES] [--smoke]   (default 160; --smoke 12)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

SMOKE = "--smoke" in sys.argv
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
FILES = int(ARGS[0]) if ARGS else (12 if SMOKE else 160)
MARGIN, TARGET = 0.05, 0.9
STREAM = 67  # the named stream of this benchmark's draws
ORDER = {"trust": 2, "use corrected": 1, "do not trust": 0}


def _cfg(seed: int) -> object:
    from judgekit.methods.verdicts.config import VerdictsConfig

    return VerdictsConfig(data_path="sim.csv", resamples=200, seed=seed)


def _decide(measures: list, items: int) -> dict:
    from judgekit.analysis.decisions import decide
    from judgekit.methods.verdicts.spec import card_rows

    rows = card_rows(measures, "sim")
    got = decide(rows, items, MARGIN, TARGET)
    # the widest interval of the rate's family (overall and per system or model): the
    # one that must fit inside the margin for the rate to be trusted
    fam = [r.ci[1] - r.ci[0] for r in rows if r.ci and r.key.split("[")[0] in
           ("leniency", "win_rate_bias")]
    return {**got, "widest": max(fam) if fam else None, "previous": _previous(rows)}


def _previous(rows: list) -> str:
    """The card's rule before (the comparison on the same files): "do not trust" on any
    finding (a leniency row whose interval excludes 0), else "trust" when the overall
    leniency (pairwise: win-rate bias) interval lies inside the margin, else "use
    corrected"."""
    lenient = [r for r in rows if r.ci and r.key.split("[")[0] in ("leniency",
                                                                   "win_rate_bias")]
    if any(r.ci[0] > 0 or r.ci[1] < 0 for r in lenient):
        return "do not trust"
    main = next((r for r in lenient if "[" not in r.key), None)
    if main is None:
        return "do not trust"
    return "trust" if max(abs(main.ci[0]), abs(main.ci[1])) <= MARGIN else "use corrected"


def _judge(rng: np.random.Generator) -> tuple[float, float]:
    """Sensitivity and specificity across every quality: a third near-perfect."""
    if rng.random() < 1 / 3:
        return float(rng.uniform(0.93, 1.0)), float(rng.uniform(0.93, 1.0))
    return float(rng.uniform(0.55, 1.0)), float(rng.uniform(0.55, 1.0))


def pointwise_file(f: int, n_q: int) -> tuple[dict, list[tuple[int, dict]]]:
    """(the truth, [(labels, decisions)...]) of one pointwise file."""
    from judgekit.methods.verdicts.pointwise import pointwise

    rng = np.random.default_rng([STREAM, 1, f])
    sens, spec = _judge(rng)
    rates = rng.uniform(0.3, 0.8, size=2)
    rows, truth_len = [], []
    h_all, v_all = [], []
    for p in rates:
        h = (rng.random(n_q) < p).astype(int)
        v = np.where(h == 1, rng.random(n_q) < sens, rng.random(n_q) > spec).astype(int)
        h_all.append(h)
        v_all.append(v)
        truth_len.append((1 - spec) * (1 - p) - (1 - sens) * p)
    overall = float(np.mean(truth_len))
    acc = float(np.mean([p * sens + (1 - p) * spec for p in rates]))
    # the best uninformed judge on these items: the majority label, or random verdicts
    # at the judge's own pass rate; a judge no better than it is not to be trusted for
    # any use (the card's rule), so its truth lies outside
    p_bar = float(np.mean(rates))
    r_j = p_bar * sens + (1 - p_bar) * (1 - spec)
    above = acc > max(p_bar, 1 - p_bar, r_j * p_bar + (1 - r_j) * (1 - p_bar))
    truth = {"rate": above and all(abs(x) <= MARGIN for x in [*truth_len, overall]),
             "rank": above and abs(truth_len[0] - truth_len[1]) <= MARGIN,
             "items": acc >= TARGET, "half": all(abs(x) <= MARGIN / 2
                                                 for x in [*truth_len, overall]),
             "informed": sens + spec > 1.02}
    order = rng.permutation(2 * n_q)
    out = []
    sizes = [n for n in (50, 100, 200, 400, 800, 1600, 3200) if n <= 2 * n_q]
    for n in sizes:
        lab = np.zeros(2 * n_q, bool)
        lab[order[:n]] = True
        rows = [{"id": f"s{s}q{i}", "question_id": f"q{i}", "system": f"S{s}",
                 "judge": int(v_all[s][i]),
                 "human": int(h_all[s][i]) if lab[s * n_q + i] else ""}
                for s in range(2) for i in range(n_q)]
        roles = {"id": "id", "question_id": "question_id", "system": "system",
                 "judge": "judge", "human": "human"}
        got = pointwise(rows, roles, _cfg(f), lambda r: None).measures  # type: ignore[arg-type]
        out.append((n, _decide(got, 2 * n_q)))
    return truth, out


def pairwise_file(f: int, n_pairs: int) -> tuple[dict, list[tuple[int, dict]]]:
    """(the truth, [(labels, decisions)...]) of one pairwise file."""
    from judgekit.methods.verdicts.pairwise import pairwise

    rng = np.random.default_rng([STREAM, 2, f])
    acc = float(rng.uniform(0.6, 1.0)) if rng.random() > 1 / 3 else float(rng.uniform(0.93, 1))
    favour = float(rng.choice([0.0, 0.0, rng.uniform(-0.15, 0.15)]))  # towards model X
    both = bool(f % 2)
    rows, truth_bias = [], []
    wins = []
    for i in range(n_pairs):
        x_better = rng.random() < 0.5
        x_first = rng.random() < 0.5
        orders = [x_first, not x_first] if both else [x_first]
        for k, xf in enumerate(orders):
            p_right = acc
            # the judge's lean towards model X moves its choice whatever the quality
            p_x = p_right if x_better else 1 - p_right
            p_x = float(np.clip(p_x + favour, 0.0, 1.0))
            picks_x = rng.random() < p_x
            first_is_x = xf
            winner = "first" if picks_x == first_is_x else "second"
            label = "first" if x_better == first_is_x else "second"
            if k == 0:
                wins.append((picks_x, x_better))
            rows.append({"pair_id": f"p{i}", "question": f"q{i}",
                         "first": f"X{i}" if xf else f"Y{i}", "second": f"Y{i}" if xf else f"X{i}",
                         "winner": winner, "label": label,
                         "model_first": "X" if xf else "Y", "model_second": "Y" if xf else "X"})
    # the true win-rate bias of the first answer as given and of each model
    p_x_right = acc + favour
    bias_x = 0.5 * (min(1, p_x_right) - 1) + 0.5 * min(1, max(0, 1 - acc + favour))
    truth_bias = [bias_x, -bias_x]
    truth = {"rate": all(abs(b) <= MARGIN for b in truth_bias), "rank": True,
             "items": acc >= TARGET, "half": all(abs(b) <= MARGIN / 2 for b in truth_bias),
             "informed": acc > 0.52}
    truth["rank"] = truth["rate"]  # two models: their ranking moves with the bias
    order = rng.permutation(n_pairs)
    out = []
    for n in [n for n in (40, 80, 160, 320, 640) if n <= n_pairs]:
        keep = set(order[:n].tolist())
        lab_rows = [{**r, "label": r["label"] if int(r["pair_id"][1:]) in keep else ""}
                    for r in rows]
        roles = {"pair_id": "pair_id", "question": "question", "first": "first",
                 "second": "second", "winner": "winner", "label": "label",
                 "model_first": "model_first", "model_second": "model_second"}
        got = pairwise(lab_rows, roles, _cfg(f))[0]  # type: ignore[arg-type]
        out.append((n, _decide(got, n_pairs)))
    return truth, out


def figures(files: list[tuple[dict, list[tuple[int, dict]]]]) -> dict:
    flips_before: list[bool] = []
    wrong_trust: dict[str, list[bool]] = {u: [] for u in ("rate", "rank", "items")}
    wrong_distrust: dict[str, list[bool]] = {u: [] for u in ("rate", "rank", "items")}
    flips, power, zero, nothing = [], [], 0, 0
    before: dict[str, list[bool]] = {"trust": [], "distrust": []}
    for truth, runs in files:
        seq_before = [ORDER[d["previous"]] for _, d in runs]
        if truth["rate"]:
            flips_before.extend(b < a for a, b in zip(seq_before, seq_before[1:]))
        for _n, d in runs:
            if truth["rate"]:
                before["distrust"].append(d["previous"] == "do not trust")
            else:
                before["trust"].append(d["previous"] == "trust")
            for use in wrong_trust:
                got = d[use].decision
                if truth[use]:
                    wrong_distrust[use].append(got == "do not trust")
                else:
                    wrong_trust[use].append(got == "trust")
                ci = d[use].interval
                if got == "trust" and (ci is None or ci[1] <= ci[0]):
                    zero += 1
            if d["items"].reason.startswith("nothing measured"):
                nothing += 1
        for use in ("rate", "items"):
            if truth[use]:
                seq = [ORDER[d[use].decision] for _, d in runs]
                flips += [b < a for a, b in zip(seq, seq[1:])]
        if truth["half"] and truth["informed"]:
            first = next((n for n, d in runs if d["widest"] is not None
                          and d["widest"] <= 2 * MARGIN), None)
            later = [d for n, d in runs if first is not None and n >= 4 * first]
            if later:
                power.append(later[0]["rate"].decision == "trust")
    rate = {u: float(np.mean(v)) if v else 0.0 for u, v in wrong_trust.items()}
    drate = {u: float(np.mean(v)) if v else 0.0 for u, v in wrong_distrust.items()}
    return {"wrong_trust_rate": max(rate.values()), "wrong_trust_by_use": rate,
            "wrong_distrust_rate": max(drate.values()), "wrong_distrust_by_use": drate,
            "trust_power_at_4x": float(np.mean(power)) if power else None,
            "power_files": len(power),
            "flip_to_worse_with_more_labels": float(np.mean(flips)) if flips else 0.0,
            "zero_width_trust": zero, "nothing_measured": nothing,
            "previous_rule_wrong_trust_rate": float(np.mean(before["trust"]))
            if before["trust"] else 0.0,
            "previous_rule_wrong_distrust_rate": float(np.mean(before["distrust"]))
            if before["distrust"] else 0.0,
            "previous_rule_flip_to_worse": float(np.mean(flips_before)) if flips_before
            else 0.0,
            "decisions": sum(len(r) for _, r in files),
            "outside_cases": {u: len(v) for u, v in wrong_trust.items()}}


def main() -> None:
    t0 = time.perf_counter()
    n_q = 400 if SMOKE else 1600
    point = [pointwise_file(f, n_q) for f in range(FILES)]
    fig = figures(point)
    pair = figures([pairwise_file(f, 160 if SMOKE else 640) for f in range(FILES)])
    out = {**{k: v for k, v in fig.items() if k != "nothing_measured"},
           **{f"pairwise_{k}": v for k, v in pair.items()},
           "pairwise_nothing_measured": pair["nothing_measured"],
           "files": FILES, "smoke": SMOKE, "margin": MARGIN, "target_agreement": TARGET,
           "seconds": round(time.perf_counter() - t0, 1)}
    for k, v in out.items():
        if not isinstance(v, dict):
            print(f"{k}: {v}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
