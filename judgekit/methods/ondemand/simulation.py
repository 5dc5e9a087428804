"""Synthetic populations with known truth for the on-demand estimators."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from judgekit.core import seeds
from judgekit.core.progress import track
from judgekit.methods.ondemand.estimators import (
    adaptive_sample_size,
    joint_precision,
    percentile,
    pool_relative_recall,
    ratio_estimate,
    stratified_boot_means,
    weights_for,
)


@dataclass
class Population:
    f: np.ndarray            # truth over the universe
    members: np.ndarray      # (m, N) bool: system outputs
    dists: list[np.ndarray]  # p_i, uniform over each system's outputs
    p0: np.ndarray           # uniform over the correct instances
    precision: np.ndarray
    recall: np.ndarray
    unique_system: int


def make_population(rng: np.random.Generator, n_systems: int = 8, shared: int = 1500,
                    unique: int = 150) -> Population:
    """Systems share a pool of instances with controlled precision; each also has a
    private block, and system 0's private block is large and all correct (the
    system pooled evaluation is biased against)."""
    N = shared + n_systems * unique
    f = np.zeros(N, bool)
    f[:shared] = rng.random(shared) < 0.5
    members = np.zeros((n_systems, N), bool)
    for i in range(n_systems):
        a, b = rng.uniform(0.3, 0.7), rng.uniform(0.05, 0.35)
        members[i, :shared] = np.where(f[:shared], rng.random(shared) < a,
                                       rng.random(shared) < b)
        block = slice(shared + i * unique, shared + (i + 1) * unique)
        f[block] = rng.random(unique) < (1.0 if i == 0 else 0.5)
        members[i, block] = rng.random(unique) < (1.0 if i == 0 else 0.2)
    dists = [m / m.sum() for m in members.astype(float)]
    p0 = f / f.sum()
    prec = np.array([f[m].mean() for m in members])
    rec = members.astype(float) @ p0
    return Population(f.astype(float), members, dists, p0, prec, rec, 0)


def pooled(pop: Population) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out pooling with exhaustive labels: system i's outputs outside the
    other systems' pool count as wrong; recall against the full pool's correct set."""
    m = len(pop.dists)
    prec, rec = np.zeros(m), np.zeros(m)
    correct_pool = pop.members.any(axis=0) & (pop.f > 0)
    for i in range(m):
        others = np.delete(pop.members, i, axis=0).any(axis=0)
        mine = pop.members[i]
        prec[i] = (mine & others & (pop.f > 0)).sum() / mine.sum()
        known = correct_pool & others
        rec[i] = (mine & known).sum() / max(1, known.sum())
    return prec, rec


def one_repeat(pop: Population, rng: np.random.Generator, n: int, n0: int, resamples: int,
               level: float) -> dict[str, np.ndarray]:
    m, N = pop.members.shape
    samples = [rng.choice(N, n, p=p) for p in pop.dists]
    s0 = rng.choice(N, n0, p=pop.p0)
    g = pop.members.astype(float)
    f = pop.f
    # simple
    sp = np.array([f[s].mean() for s in samples])
    sp_boot = np.vstack([stratified_boot_means(f[s][None, :], resamples, rng)[0]
                         for s in samples])
    sr_vals = g[:, s0]
    sr = sr_vals.mean(axis=1)
    sr_boot = stratified_boot_means(sr_vals, resamples, rng)
    # joint precision
    w = weights_for(pop.dists, [n] * m)
    P = np.vstack(pop.dists)
    Q = w @ P
    jp = joint_precision(pop.dists, samples, f, w)
    jp_boot = np.zeros((m, resamples))
    for j, s in enumerate(samples):
        # A system disjoint from sample j has p_i = q_i = 0 there: its term is 0, not 0/0.
        ratio = np.nan_to_num(ratio_estimate(P[:, s] * f[s][None, :], Q[:, s]))
        jp_boot += w[:, [j]] * stratified_boot_means(ratio, resamples, rng)
    # joint recall = theta * nu
    pool = pop.members.any(axis=0).astype(float)
    theta_vals = pool[s0][None, :]
    theta = float(theta_vals.mean())
    theta_boot = stratified_boot_means(theta_vals, resamples, rng)[0]
    nu = pool_relative_recall(pop.dists, samples, f, pop.p0, g)
    qmix = np.full(m, 1.0 / m) @ P
    num_boot, den_boot = np.zeros((m, resamples)), np.zeros(resamples)
    for s in samples:
        wt = (1.0 / m) * f[s] * pop.p0[s] / qmix[s]
        both = stratified_boot_means(np.vstack([g[:, s] * wt, wt]), resamples, rng)
        num_boot += both[:m]
        den_boot += both[m]
    jr_boot = theta_boot * num_boot / np.where(den_boot > 0, den_boot, np.nan)
    return {"simple_p": sp, "simple_p_ci": percentile(sp_boot, level, n),
            "simple_r": sr, "simple_r_ci": percentile(sr_boot, level, n0),
            "joint_p": jp, "joint_p_ci": percentile(jp_boot, level, n),
            "joint_r": theta * nu, "joint_r_ci": percentile(jr_boot, level, n)}


def simulate(seed: int, repeats: int, n: int, n0: int, n_systems: int, resamples: int = 300,
             level: float = 0.9) -> dict[str, Any]:
    pop = make_population(seeds.rng("ondemand.population", seed), n_systems)
    rng = seeds.rng("ondemand.simple", seed)
    reps = [one_repeat(pop, rng, n, n0, resamples, level)
            for _ in track(range(repeats), "simulation", repeats, "repeats")]
    pp, pr = pooled(pop)
    out: dict[str, Any] = {"truth": {"precision": pop.precision, "recall": pop.recall},
                           "unique_system": pop.unique_system}
    est: dict[str, Any] = {"pooled": _summary(pp[None, :], pr[None, :], None, None, pop)}
    for name in ("simple", "joint"):
        P = np.vstack([r[f"{name}_p"] for r in reps])
        R = np.vstack([r[f"{name}_r"] for r in reps])
        pci = np.stack([r[f"{name}_p_ci"] for r in reps])
        rci = np.stack([r[f"{name}_r_ci"] for r in reps])
        est[name] = _summary(P, R, pci, rci, pop)
    out["estimators"] = est
    out["repeats"] = repeats
    return out


def _summary(P: np.ndarray, R: np.ndarray, pci: np.ndarray | None, rci: np.ndarray | None,
             pop: Population) -> dict[str, Any]:
    pb = (P - pop.precision).mean(axis=0)
    rb = (R - pop.recall).mean(axis=0)
    res: dict[str, Any] = {
        "precision_bias": float(pb.mean()), "recall_bias": float(rb.mean()),
        "max_abs_precision_bias": float(np.abs(pb).max()),
        "max_abs_recall_bias": float(np.abs(rb).max()),
        "per_system_precision_bias": pb, "per_system_recall_bias": rb,
        "unique_system_precision_bias": float(pb[pop.unique_system]),
        "unique_system_recall_bias": float(rb[pop.unique_system]),
        "precision_ci_width": 0.0, "recall_ci_width": 0.0,
    }
    if pci is not None and rci is not None:
        res["precision_ci_width"] = float(np.nanmedian(pci[..., 1] - pci[..., 0]))
        res["recall_ci_width"] = float(np.nanmedian(rci[..., 1] - rci[..., 0]))
        res["precision_coverage"] = float(np.mean((pci[..., 0] <= pop.precision) &
                                                  (pop.precision <= pci[..., 1])))
        res["recall_coverage"] = float(np.nanmean((rci[..., 0] <= pop.recall) &
                                                  (pop.recall <= rci[..., 1])))
    return res


def adaptive_curve(seed: int, n_systems: int, budget: int, orders: int,
                   rtol: float = 0.0) -> dict[str, Any]:
    """Samples the adaptive scheme asks per new system, averaged over arrival orders."""
    pop = make_population(seeds.rng("ondemand.population", seed), n_systems)
    rng = seeds.rng("ondemand.joint", seed)
    N = pop.f.size
    asked = np.zeros((orders, n_systems))
    new_labels = np.zeros((orders, n_systems))
    for o in track(range(orders), "adaptive curve", orders, "arrival orders"):
        order = rng.permutation(n_systems)
        dists: list[np.ndarray] = []
        sizes: list[int] = []
        samples: list[np.ndarray] = []
        labelled: set[int] = set()
        for k, i in enumerate(order):
            dists.append(pop.dists[i])
            n = adaptive_sample_size(dists, [*sizes, budget], samples, pop.f, budget=budget,
                                     rtol=rtol)
            s = rng.choice(N, n, p=pop.dists[i])
            fresh = set(s.tolist()) - labelled
            labelled |= fresh
            sizes.append(n)
            samples.append(s)
            asked[o, k], new_labels[o, k] = n, len(fresh)
    return {"samples_per_system": asked.mean(axis=0), "new_labels_per_system":
            new_labels.mean(axis=0), "fixed_total": budget * n_systems,
            "adaptive_total": float(asked.mean(axis=0).sum())}
