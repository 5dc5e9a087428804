"""Do the intervals and decisions of ``judgekit analyse`` hold across designs, hard ones
included? Simulation, every draw seeded.

1. Paired corrected comparison (``ppi_difference``): two systems answer the same N
   questions, a judge with sensitivity/specificity (se, sp) grades both, humans label n
   questions; coverage at nominal 0.90 of the true difference of pass rates, width over
   the human-only interval. Designs: N 200-1000, n 20-100, rates 0.02-0.9, strong and
   weak judges, correlated or independent outcomes of the two systems.
2. Length (or self-) preference from both orders (``feature_preference`` with the pair
   as the cluster): coverage of the true preference d with a position bias of 0, 0.3 or
   0.6 and per-pair difficulty correlated across the two orders; the rate at which a
   judge with no preference but a position bias is flagged (false positive) and a
   judge with d = 0.10 or 0.20 is (power); the same judge measured on one order only,
   the feature side always shown first, shows the leak the both-order measure removes
   (its position bias read as a preference).
3. Agreement clustered by question (``agreement(..., groups=...)``): answers of one
   question share its difficulty; coverage of the population kappa at nominal 0.90
   with question-resampling against row-resampling.

Prints tables; the last line is one JSON object of figures.
"""

from __future__ import annotations

import itertools
import json
import time

import numpy as np
from _smoke import pick

DRAWS = pick(600, 6)  # --smoke: six draws a design


def paired_design(n_items: int, n_lab: int, pa: float, pb: float, se: float, sp: float,
                  corr: float, seed: int) -> tuple[float, float, float]:
    from judgekit.stats.ppi import ppi_difference

    rng = np.random.default_rng(seed)
    truth, hits, hits_h, widths = pa - pb, 0, 0, []
    for _ in range(DRAWS):
        u = rng.random(n_items)
        ya = (u < pa).astype(float)
        yb = np.where(rng.random(n_items) < corr, u < pb, rng.random(n_items) < pb
                      ).astype(float)

        def judge(y: np.ndarray) -> np.ndarray:
            r = rng.random(y.size)
            return np.where(y == 1, r < se, r > sp).astype(float)
        fa, fb = judge(ya), judge(yb)
        lab = rng.choice(n_items, n_lab, replace=False)
        c = ppi_difference(fa - fb, (fa - fb)[lab], (ya - yb)[lab], level=0.90)
        hits += c.ci[0] <= truth <= c.ci[1]
        hits_h += c.human_only_ci[0] <= truth <= c.human_only_ci[1]
        widths.append((c.ci[1] - c.ci[0]) / max(1e-9, c.human_only_ci[1] - c.human_only_ci[0]))
    return hits / DRAWS, hits_h / DRAWS, float(np.mean(widths))


def paired_table() -> tuple[list[list[object]], dict[str, float]]:
    rows, cov = [], []
    designs = [(400, 50, .6, .5, .9, .9, .5), (400, 30, .3, .3, .95, .95, .5),
               (400, 30, .05, .02, .95, .95, .5), (1000, 100, .7, .65, .8, .8, .5),
               (200, 20, .5, .5, .99, .99, .5), (400, 50, .9, .8, .95, .7, .5),
               (400, 50, .6, .5, .9, .9, 0.0), (400, 50, .6, .5, .9, .9, 1.0),
               (400, 20, .2, .1, .7, .7, .5), (1000, 40, .5, .45, .95, .95, .8)]
    for k, d in enumerate(designs):
        c, ch, w = paired_design(*d, seed=100 + k)
        cov.append(c)
        rows.append([*d, f"{c:.3f}", f"{ch:.3f}", f"{w:.2f}"])
    return rows, {"paired_coverage_min": min(cov), "paired_coverage_mean": float(np.mean(cov)),
                  "paired_designs": len(designs)}


def preference_design(d: float, pos: float, n: int, seed: int, one_order_leak: bool = False
                      ) -> tuple[float, float, float]:
    """(coverage of d, share flagged at 0.95, share flagged as given with the feature
    first when worse) for a judge that picks the feature side with probability d,
    else the first-shown answer with probability pos, else the better answer unless
    it errs (per-pair difficulty e ~ U(0, 0.6), shared by both orders)."""
    from judgekit.stats.preference import feature_preference

    rng = np.random.default_rng(seed)
    cover = flagged = leaked = 0
    for _ in range(DRAWS):
        feat, ref, chosen, groups = [], [], [], []
        g_feat, g_ref, g_chosen = [], [], []
        def pick(f: str, b: str, e: float, first: str) -> str:
            if rng.random() < d:
                return f
            if rng.random() < pos:
                return first
            return b if rng.random() > e else ("a" if b == "b" else "b")

        for i in range(n):
            f = "a" if rng.random() < 0.5 else "b"
            b = "a" if rng.random() < 0.5 else "b"
            e = rng.uniform(0, 0.6)
            for first in ("a", "b"):  # both orders
                feat.append(f)
                ref.append(b)
                chosen.append(pick(f, b, e, first))
                groups.append(i)
            # one order, the feature side always shown first (as a file whose longer
            # answer is always "a"): the position bias falls on the worse-feature errors
            c1 = pick(f, b, e, f)
            g_feat.append(f)
            g_ref.append(b)
            g_chosen.append(c1)
        p = feature_preference(feat, ref, chosen, 0.90, groups=groups)
        cover += p.ci is not None and p.ci[0] <= d <= p.ci[1]
        flagged += p.ci is not None and p.p_value < 0.05 and (p.ci[0] > 0 or p.ci[1] < 0)
        if one_order_leak:
            q = feature_preference(g_feat, g_ref, g_chosen, 0.95)
            leaked += q.ci is not None and q.p_value < 0.05 and (q.ci[0] > 0 or q.ci[1] < 0)
    return cover / DRAWS, flagged / DRAWS, leaked / DRAWS


def preference_table() -> tuple[list[list[object]], dict[str, float]]:
    rows, figs, cov = [], {}, []
    for k, (d, pos, n) in enumerate(itertools.product((0.0, 0.1, 0.2), (0.0, 0.3, 0.6),
                                                      (60, 200))):
        c, f, leak = preference_design(d, pos, n, seed=200 + k, one_order_leak=(d == 0))
        cov.append(c)
        rows.append([d, pos, n, f"{c:.3f}", f"{f:.3f}", f"{leak:.3f}" if d == 0 else "-"])
        if d == 0:
            figs[f"preference_false_positive_pos{pos}_n{n}"] = f
            figs[f"one_order_false_positive_pos{pos}_n{n}"] = leak
        else:
            figs[f"preference_power_d{d}_pos{pos}_n{n}"] = f
    figs["preference_coverage_min"] = min(cov)
    figs["preference_coverage_mean"] = float(np.mean(cov))
    return rows, figs


def agreement_design(n_q: int, per_q: int, seed: int) -> tuple[float, float]:
    from sklearn.metrics import cohen_kappa_score

    from judgekit.stats.agreement import agreement

    rng = np.random.default_rng(seed)

    def draw(nq: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
        diff = rng.uniform(0, 0.45, nq)  # the judge's error rate on a question
        h, j, g = [], [], []
        for q in range(nq):
            y = rng.random(per_q) < 0.6
            wrong = rng.random(per_q) < diff[q]
            h += list(y.astype(int))
            j += list(np.where(wrong, ~y, y).astype(int))
            g += [q] * per_q
        return np.array(j), np.array(h), g
    big_j, big_h, _ = draw(20000)
    truth = cohen_kappa_score(big_j, big_h)
    hit_c = hit_r = 0
    for _ in range(DRAWS // 3):
        j, h, g = draw(n_q)
        seed_i = int(rng.integers(1 << 30))
        c = agreement(j, h, seed=seed_i, resamples=400, level=0.90, groups=g)
        r = agreement(j, h, seed=seed_i, resamples=400, level=0.90)
        hit_c += c.cis["kappa"][0] <= truth <= c.cis["kappa"][1]
        hit_r += r.cis["kappa"][0] <= truth <= r.cis["kappa"][1]
    return hit_c / (DRAWS // 3), hit_r / (DRAWS // 3)


def agreement_table() -> tuple[list[list[object]], dict[str, float]]:
    rows, figs = [], {}
    for k, (n_q, per_q) in enumerate(((30, 4), (60, 3), (100, 2))):
        c, r = agreement_design(n_q, per_q, seed=300 + k)
        rows.append([n_q, per_q, f"{c:.3f}", f"{r:.3f}"])
        figs[f"kappa_coverage_clustered_q{n_q}x{per_q}"] = c
        figs[f"kappa_coverage_rows_q{n_q}x{per_q}"] = r
    return rows, figs


def _md(head: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    t0 = time.perf_counter()
    p_rows, p = paired_table()
    f_rows, f = preference_table()
    a_rows, a = agreement_table()
    print(_md(["N", "labels", "pass A", "pass B", "sens", "spec", "outcome corr",
               "coverage (0.90)", "human-only coverage", "width / human-only"], p_rows))
    print()
    print(_md(["preference d", "position bias", "pairs", "coverage (0.90)",
               "flagged at 0.95", "one order, feature always first: flagged"], f_rows))
    print()
    print(_md(["questions", "answers each", "kappa coverage, questions resampled (0.90)",
               "rows resampled"], a_rows))
    figs: dict[str, object] = {**p, **f, **a, "draws": DRAWS,
                               "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
