"""Graded judges: do the intervals of judgekit.methods.verdicts.graded cover at their level?

Each design draws items from a population of questions (answers of one question share
a latent quality: clustered), rates each on a k-point scale by r raters and a judge
(noisy, biased, sometimes skewed, with many ties), and runs the graded measures on a
sample of n items. The truth is each statistic's value on a population sample of
POPULATION items of the same design; coverage is the share of samples whose interval
(nominal 0.95) holds it. Designs: ties, 3-, 5- and 10-point scales, 2-5 raters,
clustered items, n from 30 to 5,000 (--smoke: a few small draws), skewed scores, and a
judge that gives a distribution over grades (ECE, Brier).

Point values are checked against scipy and scikit-learn on the first sample of every
design (``point_values_equal_peers``). Last line: one JSON object with
``point_values_equal_peers``, ``correlation_coverage_min``,
``weighted_kappa_coverage_min``, ``alpha_coverage_min``, ``corrected_mean_coverage_min``,
``system_kendall_coverage_min``, ``ece_coverage_min``, ``designs`` and the coverage of
every statistic in every design (``coverage``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from _smoke import SMOKE, argv, pick

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judgekit.methods.verdicts.config import VerdictsConfig  # noqa: E402
from judgekit.methods.verdicts.graded import graded  # noqa: E402
from judgekit.stats.graded import (  # noqa: E402
    kendall,
    krippendorff_alpha,
    pearson,
    spearman,
    weighted_kappa,
)

REPS = int(argv()[0]) if argv() else pick(200, 2)  # python benchmarks/graded.py [REPS]
RESAMPLES = pick(1000, 200)
POPULATION = pick(200_000, 5_000)
CORRELATIONS = ("spearman", "kendall_tau_b", "pearson")
ALPHAS = ("krippendorff_alpha_interval", "krippendorff_alpha_ordinal")


class Design(NamedTuple):
    name: str
    points: int  # a 1..points scale
    raters: int
    per_question: int  # answers of one question (one cluster)
    n: int
    skew: float  # shifts the latent quality (most scores high)
    judge_noise: float
    judge_bias: float
    systems: int
    distribution: bool = False


DESIGNS = [
    Design("ties_5pt_3raters", 5, 3, 3, pick(300, 60), 0.0, 0.6, 0.3, 4),
    Design("3pt_2raters", 3, 2, 1, pick(200, 60), 0.0, 0.5, 0.0, 3),
    Design("10pt_5raters_clustered", 10, 5, 5, pick(500, 60), 0.0, 0.5, -0.2, 5),
    Design("skewed_5pt_4raters", 5, 4, 2, pick(400, 60), 1.2, 0.5, 0.2, 4),
    Design("small_5pt_3raters", 5, 3, 3, 30, 0.0, 0.5, 0.0, 3),
    Design("large_5pt_3raters", 5, 3, 2, pick(5000, 60), 0.0, 0.7, 0.1, 6),
    Design("distribution_5pt_3raters", 5, 3, 1, pick(300, 60), 0.0, 0.6, 0.0, 3, True),
]


def draw(d: Design, n: int, rng: np.random.Generator) -> list[dict]:
    """n rows of design d: id, question, system, the judge's score (or p_<grade>) and
    the raters' scores."""
    q = np.arange(n) // d.per_question
    quality = rng.normal(0, 1, q.max() + 1)[q] * 0.7 + rng.normal(0, 0.7, n) + d.skew
    system = rng.integers(0, d.systems, n)
    latent = quality + 0.25 * system / max(1, d.systems - 1)
    cuts = np.linspace(-1.6, 1.6, d.points - 1)

    def grade(x: np.ndarray) -> np.ndarray:
        return np.searchsorted(cuts, x) + 1

    raters = [grade(latent + rng.normal(0, 0.5, n)) for _ in range(d.raters)]
    judged = latent + d.judge_bias + rng.normal(0, d.judge_noise, n)
    rows = []
    grades = np.arange(1, d.points + 1)
    for i in range(n):
        row = {"id": f"i{i}", "question_id": f"q{q[i]}", "system": f"s{system[i]}",
               **{f"human_{k + 1}": int(r[i]) for k, r in enumerate(raters)}}
        if d.distribution:
            mid = np.searchsorted(cuts, judged[i]) + 1
            w = np.exp(-((grades - mid) ** 2) / 0.8)
            p = np.round(w / w.sum(), 6)
            p[-1] = 1 - p[:-1].sum()
            row.update({f"p_{g}": float(v) for g, v in zip(grades, p)})
        else:
            row["judge_score"] = int(grade(np.array([judged[i]]))[0])
        rows.append(row)
    return rows


def measures(rows: list[dict], d: Design, seed: int) -> dict[str, dict]:
    roles = {"id": "id", "question_id": "question_id", "system": "system",
             "judge": "p_1" if d.distribution else "judge_score",
             "human": ",".join(f"human_{k + 1}" for k in range(d.raters))}
    cfg = VerdictsConfig(data_path="bench.csv", seed=seed, resamples=RESAMPLES,
                         level=0.95, scale=f"1-{d.points}")
    got, _ = graded(rows, roles, cfg, lambda _r: None)
    return {m.key: {"estimate": m.estimate, "ci": m.ci} for m in got}


def truth(d: Design) -> dict[str, float]:
    """Each statistic on a population sample (the intervals' target)."""
    rows = draw(d, POPULATION, np.random.default_rng(10_000 + len(d.name)))
    x, y, sysn = _columns(rows, d)
    gx, gy = np.floor(x + 0.5), np.floor(y + 0.5)
    out = {"spearman": spearman(x, y), "kendall_tau_b": kendall(x, y),
           "pearson": pearson(x, y), "weighted_kappa": weighted_kappa(gx, gy),
           "krippendorff_alpha_interval": krippendorff_alpha(np.vstack([gx, gy]),
                                                             "interval"),
           "krippendorff_alpha_ordinal": krippendorff_alpha(np.vstack([gx, gy]), "ordinal"),
           "corrected_mean_score": float(y.mean())}
    names = sorted(set(sysn))
    jm = [x[np.array(sysn) == s].mean() for s in names]
    hm = [y[np.array(sysn) == s].mean() for s in names]
    out["system_kendall"] = kendall(np.array(jm), np.array(hm))
    if d.distribution:
        out.update(_calibration(rows, d, y))
    return out


def _columns(rows: list[dict], d: Design) -> tuple[np.ndarray, np.ndarray, list[str]]:
    if d.distribution:
        x = np.array([sum(g * r[f"p_{g}"] for g in range(1, d.points + 1)) for r in rows])
    else:
        x = np.array([r["judge_score"] for r in rows], float)
    y = np.array([np.mean([r[f"human_{k + 1}"] for k in range(d.raters)]) for r in rows])
    return x, y, [r["system"] for r in rows]


def _calibration(rows: list[dict], d: Design, y: np.ndarray) -> dict[str, float]:
    grades = np.arange(1, d.points + 1)
    p = np.array([[r[f"p_{g}"] for g in grades] for r in rows])
    yg = np.floor(y + 0.5)
    onehot = (grades[None, :] == yg[:, None]).astype(float)
    conf = p.max(1)
    right = (grades[p.argmax(1)] == yg).astype(float)
    b = np.minimum((conf * 10).astype(int), 9)
    ece = sum((b == k).mean() * abs(right[b == k].mean() - conf[b == k].mean())
              for k in range(10) if (b == k).any())
    return {"ece": float(ece), "brier": float(np.mean(np.sum((p - onehot) ** 2, axis=1)))}


def peers_agree(rows: list[dict], d: Design, got: dict[str, dict]) -> bool:
    """The sample's point values equal scipy's and scikit-learn's."""
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score

    x, y, _ = _columns(rows, d)
    want = {"spearman": stats.spearmanr(x, y).statistic,
            "kendall_tau_b": stats.kendalltau(x, y).statistic,
            "pearson": stats.pearsonr(x, y).statistic,
            "weighted_kappa": cohen_kappa_score(np.floor(x + 0.5).astype(int),
                                                np.floor(y + 0.5).astype(int),
                                                weights="quadratic")}
    return all(abs(got[k]["estimate"] - v) <= 1e-9 for k, v in want.items())


def main() -> None:
    t0 = time.perf_counter()
    coverage: dict[str, dict[str, float]] = {}
    equal = True
    for d in DESIGNS:
        target = truth(d)
        hits = {k: 0 for k in target}
        counted = {k: 0 for k in target}
        for rep in range(REPS):
            rows = draw(d, d.n, np.random.default_rng(rep * 7919 + len(d.name)))
            got = measures(rows, d, rep)
            if rep == 0:
                equal = equal and peers_agree(rows, d, got)
            for k, v in target.items():
                ci = (got.get(k) or {}).get("ci")
                if ci is not None:
                    counted[k] += 1
                    hits[k] += ci[0] <= v <= ci[1]
        coverage[d.name] = {k: round(hits[k] / counted[k], 3) if counted[k] else None
                            for k in target}
        print(d.name, coverage[d.name], file=sys.stderr, flush=True)

    def worst(keys: tuple[str, ...]) -> float | None:
        vals = [c[k] for c in coverage.values() for k in keys if c.get(k) is not None]
        return min(vals) if vals else None

    print(json.dumps({
        "point_values_equal_peers": equal,
        "correlation_coverage_min": worst(CORRELATIONS),
        "weighted_kappa_coverage_min": worst(("weighted_kappa",)),
        "alpha_coverage_min": worst(ALPHAS),
        "corrected_mean_coverage_min": worst(("corrected_mean_score",)),
        "system_kendall_coverage_min": worst(("system_kendall",)),
        "ece_coverage_min": worst(("ece",)),
        "designs": [d.name for d in DESIGNS], "reps": REPS, "resamples": RESAMPLES,
        "smoke": SMOKE, "coverage": coverage,
        "wall_s": round(time.perf_counter() - t0, 1)}, sort_keys=True))


if __name__ == "__main__":
    main()
