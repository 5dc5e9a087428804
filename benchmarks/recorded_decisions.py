"""Do the findings `judgekit analyse` draws from recorded verdicts hold at the edges?
Simulated verdict files with known truth, FILES files per design, each run through the
same functions `judgekit analyse` runs (judgekit.methods.verdicts.pointwise.pointwise
and .pairwise.pairwise, with the run's config); every draw seeded.

Figures (the last line is one JSON object; the false-alarm designs of position and
leniency run 2.5 x FILES files, their bounds being a point above nominal):

- uninformed_false_finding_max: a judge of accuracy >= 0.9 that is at least as good as
  the best uninformed judge reported "no better than an uninformed judge", worst design
  (95/5 labels at n = 100 with the judge at the majority label's accuracy, 80/20 with
  questions of 3 answers, 50/50 at n = 40).
- random_judge_agreement_claimed_max: a judge independent of people (its verdicts drawn
  at its own rate) whose kappa, AC1 or alpha row reads "agrees beyond chance", worst
  design (skews 50/50, 80/20, 95/5; n 40 and 200; clustered).
- position_false_alarm_max: no position bias overall, questions of 4 pairs each with a
  position propensity of their own (mean 0), 0% or 40% ties, both orders or one.
- position_power_10pt: a 10-point first-slot bias (P(first) = P(first | quality) + 0.1)
  on 100 both-order pairs.
- leniency_false_alarm_max / leniency_power_15pt: 300 items, 50 labelled at random; a
  judge with errors both ways and its pass rate equal to people's / a judge passing 15
  points more than people (every human pass and 15 points of human fails).
- agreement_power_uneven_questions / random_judge_agreement_claimed_uneven_questions:
  12 questions of 1 to 20 answers each (question effects on people's labels): the share
  of files where a judge right on 70% of items is said to agree beyond chance, and
  where a random judge at people's rate is.
- length_confounded_false_flag_max: a judge with no length preference on two datasets
  of differing quality where the longer answer is better in 80% / 30% of pairs; the
  rate at which length preference is a finding, with and without the dataset column.

Usage: python benchmarks/recorded_decisions.py [FILES] [--smoke]   (default 400; --smoke 20)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

SMOKE = "--smoke" in sys.argv
_ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
FILES = int(_ARGS[0]) if _ARGS else (20 if SMOKE else 400)
# false-alarm rates are checked against bounds a point above nominal (0.06 at 0.05): at
# 400 files their standard error is 0.011, so the null designs run 2.5x as many files
ALARM_FILES = int(2.5 * FILES)


def _cfg(**kw: object) -> object:
    from judgekit.methods.verdicts.config import VerdictsConfig

    return VerdictsConfig(data_path="sim.csv", resamples=200, seed=int(kw.pop("seed", 0)),
                          **kw)


def _measures(rows: list[dict], roles: dict[str, str], seed: int, pairwise: bool = False
              ) -> dict[str, object]:
    from judgekit.methods.verdicts import pairwise as pw
    from judgekit.methods.verdicts import pointwise as pt

    cfg = _cfg(seed=seed)
    got = pw.pairwise(rows, roles, cfg)[0] if pairwise else \
        pt.pointwise(rows, roles, cfg, lambda r: None).measures
    return {m.key: m for m in got}


def _pointwise_rows(h: np.ndarray, v: np.ndarray, q: np.ndarray | None,
                    labelled: np.ndarray | None = None) -> list[dict]:
    rows = []
    for i in range(h.size):
        lab = labelled is None or labelled[i]
        rows.append({"id": f"i{i}", "question_id": f"q{q[i]}" if q is not None else f"q{i}",
                     "judge": int(v[i]), "human": int(h[i]) if lab else ""})
    return rows


ROLES = {"id": "id", "question_id": "question_id", "judge": "judge", "human": "human"}


def uninformed_designs() -> dict[str, float]:
    """Share of files where a good judge is reported no better than uninformed."""
    out = {}
    designs = {
        "95/5, n=100, flips 5%": (0.95, 100, 0.05, 1),
        "80/20, n=90, 3 per question, flips 10%": (0.80, 90, 0.10, 3),
        "50/50, n=40, flips 10%": (0.50, 40, 0.10, 1),
        "90/10, n=100, flips 8%": (0.90, 100, 0.08, 1),
    }
    for name, (p, n, flip, per_q) in designs.items():
        bad = 0
        for f in range(FILES):
            rng = np.random.default_rng([46, 1, f, int(p * 100), n])
            q = np.arange(n) // per_q
            qe = rng.normal(0, 1.0, size=n // per_q + 1)[q] if per_q > 1 else 0
            h = (rng.random(n) < 1 / (1 + np.exp(-(np.log(p / (1 - p)) + qe)))).astype(int)
            v = np.where(rng.random(n) < flip, 1 - h, h)
            m = _measures(_pointwise_rows(h, v, q), ROLES, f)
            bad += m["accuracy"].decision.startswith("no better")
        out[name] = bad / FILES
    return out


def _uneven(rng: np.random.Generator, n_q: int) -> np.ndarray:
    """Question ids of questions with 1 to 20 answers each (uneven sizes)."""
    return np.repeat(np.arange(n_q), rng.integers(1, 21, n_q))


def uneven_agreement() -> tuple[float, float]:
    """Questions of 1-20 answers (12 questions): (the share of files where a judge right
    on 70% of items, errors independent of the question, is said to agree beyond
    chance; the share where a random judge is)."""
    found = claimed = 0
    for f in range(FILES):
        rng = np.random.default_rng([46, 6, f])
        q = _uneven(rng, 12)
        qe = rng.normal(0, 1.0, 12)[q]
        h = (rng.random(q.size) < 1 / (1 + np.exp(-qe))).astype(int)
        good = np.where(rng.random(q.size) < 0.7, h, 1 - h)
        rand = (rng.random(q.size) < h.mean()).astype(int)
        for v, which in ((good, "good"), (rand, "random")):
            m = _measures(_pointwise_rows(h, v, q), ROLES, f)
            said = m["kappa"].decision == "agrees beyond chance"
            if which == "good":
                found += said
            else:
                claimed += said
    return found / FILES, claimed / FILES


def random_judge_designs() -> dict[str, float]:
    out = {}
    for p, n, per_q in ((0.5, 40, 1), (0.8, 200, 1), (0.95, 100, 1), (0.95, 40, 1),
                        (0.8, 120, 4)):
        claimed = 0
        for f in range(FILES):
            rng = np.random.default_rng([46, 2, f, int(p * 100), n, per_q])
            q = np.arange(n) // per_q
            h = (rng.random(n) < p).astype(int)
            v = (rng.random(n) < p).astype(int)  # a random judge at the same rate
            m = _measures(_pointwise_rows(h, v, q), ROLES, f)
            claimed += any(m[k].decision == "agrees beyond chance" for k in ("kappa", "ac1",
                                                                            "alpha")
                           if k in m)
        out[f"p={p}, n={n}, {per_q} per question"] = claimed / FILES
    return out


PAIR_ROLES = {"pair_id": "pair_id", "question": "question", "first": "first",
              "second": "second", "winner": "winner", "label": "label", "dataset": "dataset"}


def _pair_rows(rng: np.random.Generator, n_q: int, per_q: int, both: bool, bias: float,
               spread: float, ties: float, quality: float) -> list[dict]:
    rows = []
    for qi in range(n_q):
        u = rng.normal(0, spread)  # this question's position propensity (mean 0)
        for k in range(per_q):
            pid = f"q{qi}p{k}"
            good, bad = f"good answer {pid}", f"bad answer {pid}"
            orders = [(good, bad), (bad, good)] if both else \
                [(good, bad) if rng.random() < 0.5 else (bad, good)]
            for first, second in orders:
                if rng.random() < ties:
                    w = "tie"
                else:
                    base = quality if first == good else 1 - quality
                    pf = float(np.clip(base + bias + u, 0.01, 0.99))
                    w = "first" if rng.random() < pf else "second"
                rows.append({"pair_id": pid, "question": f"Q{qi}", "first": first,
                             "second": second, "winner": w,
                             "label": "first" if first == good else "second"})
    return rows


def position_designs() -> tuple[dict[str, float], float]:
    alarms = {}
    for name, (n_q, per_q, both, ties, spread) in {
            "25 questions x 4 pairs, both orders, no ties": (25, 4, True, 0.0, 0.15),
            "25 questions x 4 pairs, both orders, 40% ties": (25, 4, True, 0.4, 0.15),
            "30 questions x 4 pairs, one order, 40% ties": (30, 4, False, 0.4, 0.15),
            "100 pairs, both orders, 40% ties": (100, 1, True, 0.4, 0.0)}.items():
        hits = 0
        for f in range(ALARM_FILES):
            rng = np.random.default_rng([46, 3, f, n_q, per_q, int(both), int(ties * 10)])
            rows = _pair_rows(rng, n_q, per_q, both, 0.0, spread, ties, 0.7)
            hits += _measures(rows, PAIR_ROLES, f, pairwise=True)["position_bias"].finding
        alarms[name] = hits / ALARM_FILES
    power = 0
    for f in range(FILES):
        rng = np.random.default_rng([46, 4, f])
        rows = _pair_rows(rng, 100, 1, True, 0.10, 0.0, 0.0, 0.7)
        power += _measures(rows, PAIR_ROLES, f, pairwise=True)["position_bias"].finding
    return alarms, power / FILES


def leniency_designs() -> tuple[dict[str, float], float]:
    alarms, n, n_lab = {}, 300, 50
    for theta, a in ((0.3, 0.2), (0.55, 0.15), (0.8, 0.1)):
        b = theta * a / (1 - theta)  # errors both ways, the judge's rate = people's
        hits = 0
        for f in range(ALARM_FILES):
            rng = np.random.default_rng([46, 5, f, int(theta * 100)])
            h = (rng.random(n) < theta).astype(int)
            v = np.where(h == 1, rng.random(n) >= a, rng.random(n) < b).astype(int)
            lab = np.zeros(n, bool)
            lab[rng.choice(n, n_lab, replace=False)] = True
            m = _measures(_pointwise_rows(h, v, None, lab), ROLES, f)
            hits += m["leniency"].finding
        alarms[f"people pass {theta}, errors both ways"] = hits / ALARM_FILES
    power = 0
    for f in range(FILES):
        rng = np.random.default_rng([46, 6, f])
        theta = 0.55
        h = (rng.random(n) < theta).astype(int)
        v = np.where(h == 1, 1, rng.random(n) < 0.15 / (1 - theta)).astype(int)
        lab = np.zeros(n, bool)
        lab[rng.choice(n, n_lab, replace=False)] = True
        m = _measures(_pointwise_rows(h, v, None, lab), ROLES, f)
        power += m["leniency"].finding and m["leniency"].estimate > 0
    return alarms, power / FILES


def length_designs() -> dict[str, float]:
    """Two datasets: in A the longer answer is better in 80% of pairs and the judge is
    right 90% of the time; in B 30% and 60%. The judge's errors ignore length."""
    out = {}
    for with_column in (True, False):
        flags = 0
        for f in range(FILES):
            rng = np.random.default_rng([46, 7, f])
            rows = []
            for ds, p_long_better, acc, n in (("A", 0.8, 0.9, 100), ("B", 0.3, 0.6, 100)):
                for i in range(n):
                    long_better = rng.random() < p_long_better
                    good = "x" * 60 if long_better else "x" * 20
                    bad = "y" * 20 if long_better else "y" * 60
                    pid = f"{ds}{i}"
                    for first, second in ((good, bad), (bad, good)):
                        right = rng.random() < acc
                        pick_first = (first == good) == right
                        rows.append({"pair_id": pid, "question": pid, "first": first,
                                     "second": second,
                                     "winner": "first" if pick_first else "second",
                                     "label": "first" if first == good else "second",
                                     **({"dataset": ds} if with_column else {})})
            roles = dict(PAIR_ROLES) if with_column else \
                {k: v for k, v in PAIR_ROLES.items() if k != "dataset"}
            flags += _measures(rows, roles, f, pairwise=True)["length_preference"].finding
        out["with the dataset column" if with_column else "without it"] = flags / FILES
    return out


def main() -> None:
    t0 = time.perf_counter()
    un = uninformed_designs()
    print("good judge reported no better than uninformed:", json.dumps(un))
    rj = random_judge_designs()
    print("random judge claimed to agree beyond chance:", json.dumps(rj))
    pos, pos_power = position_designs()
    print("position false alarms:", json.dumps(pos), "power at 10 points:", pos_power)
    len_, len_power = leniency_designs()
    print("leniency false alarms:", json.dumps(len_), "power at 15 points:", len_power)
    conf = length_designs()
    print("length preference flagged, confounded by dataset:", json.dumps(conf))
    power_uneven, random_uneven = uneven_agreement()
    print("questions of 1-20 answers: agreement found for an 80% judge", power_uneven,
          "claimed for a random judge", random_uneven)
    print(json.dumps({
        "files_per_design": FILES,
        "files_per_null_design": ALARM_FILES,
        "uninformed_false_finding_max": max(un.values()),
        "random_judge_agreement_claimed_max": max(rj.values()),
        "position_false_alarm_max": max(pos.values()),
        "position_power_10pt": pos_power,
        "leniency_false_alarm_max": max(len_.values()),
        "leniency_power_15pt": len_power,
        "length_confounded_false_flag_max": max(conf.values()),
        "agreement_power_uneven_questions": power_uneven,
        "random_judge_agreement_claimed_uneven_questions": random_uneven,
        "seconds": round(time.perf_counter() - t0, 1),
    }))


if __name__ == "__main__":
    main()
