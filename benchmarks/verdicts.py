"""Can a reader trust judgekit's decisions? False-positive and false-negative rates of
the audit's trust decision and the probe's bias and consistency decisions over
simulated judges and verifiers, and the coverage and width of prediction-powered
rates over sampling designs.

1. Audit, through the real runner (mock provider, scripted judges, oracle or noisy
   verifier, 200 items): the decision for the cases named in the contract.
2. Audit, simulated protocol (``judgekit.testing.simulate.audit_items`` fed to the
   runner's own ``decide``), RUNS runs of 200 items per case: always-pass at 88% and
   50% pass rates; oracle with verifier noise 0, 0.02, 0.05, 0.15; random;
   self-consistent liar; right on 70% of items and random on 30%; and what a verifier
   cannot see (issue 34): a temperature-0 verifier with 5% fixed misreads under a perfect
   judge, 5% of readings failing wholesale (10 criteria) under a perfect judge and under
   one right on 70% of items, a blind spot on 30% of items shared by judge and verifier
   (with human rubric values, or without them and one model family); and with no human
   values at all (issue 49): that blind spot under another family, a verifier copying
   the judge's errors, a judge right only on items the verifier reads easily, a worse
   second verifier (6% misreads) under a 70%-right judge, a temperature-0 verifier
   re-reading its own fixed misreads (5% of 6 criteria, 10% of 3) under a perfect judge.
   Trustworthy: the
   oracles (false negative = "do not trust"); not trustworthy: the others (false
   positive = "trust").
3. Probe (``probe_verdicts`` fed to the runner's ``analyse``), 400 pairs, RUNS runs:
   deterministic unbiased (temperature 0), stochastic unbiased, position bias of 5 and
   10 points, padding bias of 10 points.
4. PPI: DRAWS draws of 2,000 items per design: random and importance sampling, judge
   accuracy 0.6 and 0.85, 30 / 60 / 200 human labels, pass rate 0.1 and 0.3, judge
   errors on unstable or on stable items; coverage at nominal 0.90 against the
   population rate, and mean width over the human-only interval from the same labels.

The last line is one JSON object.
"""

from __future__ import annotations

import collections
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _smoke import pick

RUNS = pick(20, 1)  # --smoke: one run a case, a few draws a design
DRAWS = pick(1000, 10)


def real_runner_decisions() -> dict[str, str]:
    from judgekit.testing import judges

    out = {}
    for rate, tag in ((0.88, "skewed"), (0.5, "balanced")):
        work = Path(tempfile.mkdtemp(prefix="judgekit-verdicts-"))
        judges.write_audit_data(work, 200, seed=1, pass_rate=rate)
        res = judges.scripted_audit(work, "constant", "faithful", n=200, concurrency=32)
        out[f"always_pass_{tag}_decision"] = res["verdict"]["decision"]
        if tag == "balanced":
            for key, (j, p, noise) in {"oracle_decision": ("oracle", "faithful", 0.0),
                                       "oracle_noisy_verifier_005_decision":
                                           ("oracle", "faithful", 0.05),
                                       "random_decision": ("random", "faithful", 0.0),
                                       "liar_decision": ("liar", "realising", 0.0)}.items():
                res = judges.scripted_audit(work, j, p, n=200, verifier_noise=noise,
                                            concurrency=32)
                out[key] = res["verdict"]["decision"]
            # a perfect judge, a temperature-0 verifier with 5% fixed misreads, human
            # rubric values on the items (issue 34)
            res = judges.scripted_audit(work, "oracle", "faithful", n=200,
                                        verifier_noise=0.05, fixed=True, concurrency=32)
            out["oracle_temp0_verifier_decision"] = res["verdict"]["decision"]
    return out


AUDIT_CASES: dict[str, tuple[str, float, float, bool, dict[str, object]]] = {
    "always_pass_88": ("always_pass", 0.88, 0.0, False, {}),
    "always_pass_50": ("always_pass", 0.5, 0.0, False, {}),
    "oracle_noise_0": ("oracle", 0.5, 0.0, True, {}),
    "oracle_noise_002": ("oracle", 0.5, 0.02, True, {}),
    "oracle_noise_005": ("oracle", 0.5, 0.05, True, {}),
    "oracle_noise_015": ("oracle", 0.5, 0.15, True, {}),
    "random": ("random", 0.5, 0.0, False, {}),
    "selfconsistent_liar": ("liar", 0.5, 0.0, False, {}),
    "right_70_random_30": ("mostly_right", 0.5, 0.0, False, {}),
    # issue 34's adversaries: what the verifier cannot see
    "oracle_temp0_fixed_005": ("oracle", 0.5, 0.0, True, {"fixed": 0.05, "criteria": 6}),
    "oracle_temp0_fixed_005_no_people": ("oracle", 0.5, 0.0, True,
                                         {"fixed": 0.05, "criteria": 6, "labelled": False}),
    "oracle_wholesale_005": ("oracle", 0.5, 0.0, True,
                             {"wholesale": 0.05, "criteria": 10, "labelled": False}),
    "shared_blind_spot_30": ("blind_spot", 0.5, 0.0, False, {"blind_spot": 0.3}),
    "shared_blind_spot_30_same_family": ("blind_spot", 0.5, 0.0, False,
                                         {"blind_spot": 0.3, "labelled": False,
                                          "same_family": True}),
    "wholesale_005_right_70": ("mostly_right", 0.5, 0.0, False,
                               {"wholesale": 0.05, "criteria": 10}),
    "wholesale_005_right_70_no_people": ("mostly_right", 0.5, 0.0, False,
                                         {"wholesale": 0.05, "criteria": 10,
                                          "labelled": False}),
    # issue 49: no human values, the verifier's self-agreement is all there is
    "no_people_shared_blind_spot": ("blind_spot", 0.5, 0.0, False,
                                    {"blind_spot": 0.3, "labelled": False}),
    "no_people_shared_blind_spot_15": ("blind_spot", 0.5, 0.0, False,
                                       {"blind_spot": 0.15, "labelled": False}),
    "no_people_copied_errors": ("copied", 0.5, 0.0, False, {"labelled": False}),
    "no_people_easy_items_only": ("easy_only", 0.5, 0.0, False,
                                  {"hard": 0.3, "labelled": False}),
    "worse_second_verifier": ("mostly_right", 0.5, 0.0, False,
                              {"reread_noise": 0.06, "labelled": False,
                               "second_verifier": True}),
    "temp0_perfect_judge_005": ("oracle", 0.5, 0.0, True,
                                {"fixed": 0.05, "criteria": 6, "reread": "same",
                                 "labelled": False}),
    "temp0_perfect_judge_010": ("oracle", 0.5, 0.0, True,
                                {"fixed": 0.10, "criteria": 3, "reread": "same",
                                 "labelled": False}),
    "copied_errors_people": ("copied", 0.5, 0.0, False, {}),
    "easy_items_only_people": ("easy_only", 0.5, 0.0, False, {"hard": 0.3}),
}


def audit_table() -> tuple[list[list[str]], dict[str, float]]:
    from judgekit.methods.nodata.decision import DecisionSettings, decide
    from judgekit.testing.simulate import audit_items

    rows, figs = [], {}
    fp = fn = n_bad = n_good = plans = planned = 0
    for name, (judge, rate, noise, good, extra) in AUDIT_CASES.items():
        c: collections.Counter[str] = collections.Counter()
        rules: collections.Counter[str] = collections.Counter()
        kw = dict(extra)
        same_family = bool(kw.pop("same_family", False))
        second = bool(kw.pop("second_verifier", False))
        for s in range(RUNS):
            d = decide(audit_items(judge, n=200, pass_rate=rate, noise=noise, seed=s,
                                   **kw),  # type: ignore[arg-type]
                       DecisionSettings(seed=s, resamples=500, same_family=same_family,
                                        second_verifier=second)
                       ).model_dump(mode="json")
            plans += 1
            planned += d["decision"] == "trust" or isinstance(d.get("items_to_score"), int)
            c[d["decision"]] += 1
            rules[d["rule"]] += 1
        trust, no, inc = (c[k] / RUNS for k in ("trust", "do not trust", "inconclusive"))
        if good:
            fn += c["do not trust"]
            n_good += RUNS
        else:
            fp += c["trust"]
            n_bad += RUNS
        figs[f"audit_{name}_trust"] = trust
        figs[f"audit_{name}_distrust"] = no
        rows.append([name, "trustworthy" if good else "not", f"{trust:.2f}", f"{no:.2f}",
                     f"{inc:.2f}", rules.most_common(1)[0][0]])
        print(f"audit {name:<22} trust {trust:.2f} do-not {no:.2f} inconclusive {inc:.2f}",
              file=sys.stderr)
    figs["audit_trust_false_positive_rate"] = fp / n_bad
    figs["audit_trust_false_negative_rate"] = fn / n_good
    figs["shared_blind_spot_trusted"] = max(figs["audit_shared_blind_spot_30_trust"],
                                            figs["audit_shared_blind_spot_30_same_family_trust"])
    figs["wholesale_failure_70_trusted"] = max(
        figs["audit_wholesale_005_right_70_trust"],
        figs["audit_wholesale_005_right_70_no_people_trust"])
    for key in ("no_people_shared_blind_spot", "no_people_copied_errors",
                "no_people_easy_items_only", "worse_second_verifier"):
        figs[f"{key}_trusted"] = figs[f"audit_{key}_trust"]
    figs["no_people_shared_blind_spot_trusted"] = max(
        figs["audit_no_people_shared_blind_spot_trust"],
        figs["audit_no_people_shared_blind_spot_15_trust"])
    figs["temp0_verifier_perfect_judge_distrusted"] = max(
        figs["audit_temp0_perfect_judge_005_distrust"],
        figs["audit_temp0_perfect_judge_010_distrust"])
    figs["items_to_score_given"] = planned == plans
    return rows, figs


PROBE_CASES = {
    "deterministic_unbiased": ("deterministic", 0.0),
    "stochastic_unbiased": ("stochastic", 0.0),
    "position_bias_5": ("position", 0.05),
    "position_bias_10": ("position", 0.10),
    "padding_bias_10": ("padding", 0.10),
}


def probe_table() -> tuple[list[list[str]], dict[str, float]]:
    from judgekit.methods.probe.analysis import analyse
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.testing.simulate import probe_verdicts

    cfg = ProbeConfig.model_validate({"method": "probe", "data_path": "pairs.jsonl",
                                      "models": {"judge": "mock/simulated"}})
    rows, figs = [], {}
    for name, (kind, bias) in PROBE_CASES.items():
        flagged = pos = pad = inconsistent = 0
        for s in range(RUNS):
            pairs, v = probe_verdicts(kind, n=400, seed=s, bias=bias)
            r = analyse(cfg, pairs, v)
            inc = any(t["verdict"].startswith("inconsistent") for t in r["transforms"])
            biased = any(b["verdict"] == "biased" for b in r["biases"])
            flagged += inc or biased
            inconsistent += inc
            pos += r["position_bias"]["verdict"] == "biased"
            pad += r["padding_bias"]["verdict"] == "biased"
        figs[f"{name}_flagged"] = flagged / RUNS
        figs[f"{name}_position_flagged"] = pos / RUNS
        figs[f"{name}_padding_flagged"] = pad / RUNS
        rows.append([name, f"{flagged / RUNS:.2f}", f"{pos / RUNS:.2f}", f"{pad / RUNS:.2f}",
                     f"{inconsistent / RUNS:.2f}"])
        print(f"probe {name:<24} any flag {flagged / RUNS:.2f} position {pos / RUNS:.2f} "
              f"padding {pad / RUNS:.2f}", file=sys.stderr)
    figs["deterministic_unbiased_flagged"] = figs["deterministic_unbiased_flagged"]
    figs["position_bias_10_detected"] = figs["position_bias_10_position_flagged"]
    figs["position_bias_5_detected"] = figs["position_bias_5_position_flagged"]
    figs["padding_bias_10_detected"] = figs["padding_bias_10_padding_flagged"]
    figs["probe_bias_false_positive_rate"] = max(
        figs["deterministic_unbiased_position_flagged"],
        figs["stochastic_unbiased_position_flagged"],
        figs["deterministic_unbiased_padding_flagged"],
        figs["stochastic_unbiased_padding_flagged"])
    figs["probe_position_false_negative_rate_5"] = 1 - figs["position_bias_5_detected"]
    return rows, figs


def ppi_design(sampling: str, acc: float, n_lab: int, rate: float, where: str,
               draws: int, seed: int) -> tuple[float, float]:
    from judgekit.stats.agreement import importance_inclusion, ppi_mean, ppi_weighted

    rng = np.random.default_rng(seed)
    n_items, hits, ratios = 2000, 0, []
    for _ in range(draws):
        y = (rng.random(n_items) < rate).astype(float)
        unstable = rng.random(n_items) < 0.3
        err = 1 - acc
        e_u = min(0.5, err / 0.3) if where == "unstable" else 0.0
        e_s = (err - 0.3 * e_u) / 0.7
        wrong = np.where(unstable, rng.random(n_items) < e_u, rng.random(n_items) < e_s)
        f = np.where(wrong, 1 - y, y)
        if sampling == "random":
            lab = rng.choice(n_items, n_lab, replace=False)
            c = ppi_mean(f, f[lab], y[lab], level=0.90)
        else:
            pi = importance_inclusion(unstable.astype(float), n_lab)
            lab = np.flatnonzero(rng.random(n_items) < pi)
            c = ppi_weighted(f, lab, y[lab], pi, level=0.90)
        hits += c.ci[0] <= rate <= c.ci[1]
        ratios.append((c.ci[1] - c.ci[0]) / (c.human_only_ci[1] - c.human_only_ci[0]))
    return hits / draws, float(np.mean(ratios))


def ppi_table() -> tuple[list[list[str]], dict[str, float]]:
    rows, cov = [], {"random": [], "importance": []}  # type: ignore[var-annotated]
    worst_ratio = 0.0
    designs = itertools.product(("random", "importance"), (0.6, 0.85), (30, 60, 200),
                                (0.1, 0.3), ("unstable", "stable"))
    for k, (sampling, acc, n_lab, rate, where) in enumerate(designs):
        c, r = ppi_design(sampling, acc, n_lab, rate, where, DRAWS, seed=k)
        cov[sampling].append(c)
        worst_ratio = max(worst_ratio, r)
        rows.append([sampling, acc, n_lab, rate, where, f"{c:.3f}", f"{r:.2f}"])
    figs = {"random_ppi_coverage_min": min(cov["random"]),
            "importance_ppi_coverage_min": min(cov["importance"]),
            "random_ppi_coverage_mean": float(np.mean(cov["random"])),
            "importance_ppi_coverage_mean": float(np.mean(cov["importance"])),
            "ppi_width_ratio_max": worst_ratio, "ppi_designs": len(rows)}
    return rows, figs


def _md(head: list[str], rows: list[list]) -> str:  # type: ignore[type-arg]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    t0 = time.perf_counter()
    figs: dict[str, object] = dict(real_runner_decisions())
    a_rows, a = audit_table()
    p_rows, p = probe_table()
    q_rows, q = ppi_table()
    figs.update(a)
    figs.update(p)
    figs.update(q)
    figs["runs_per_case"] = RUNS
    figs["ppi_draws_per_design"] = DRAWS
    figs["wall_s"] = round(time.perf_counter() - t0, 1)
    print(_md(["audit case", "should be", "trust", "do not trust", "inconclusive",
               "commonest rule"], a_rows))
    print()
    print(_md(["probe judge", "any transform flagged", "position biased",
               "padding biased", "inconsistent"], p_rows))
    print()
    print(_md(["sampling", "judge accuracy", "labels", "pass rate", "judge errs on",
               "coverage (nominal 0.90)", "width / human-only"], q_rows))
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
