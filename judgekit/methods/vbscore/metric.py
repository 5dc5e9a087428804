"""Sections B and C of the VB-Score spec: gains, ES, VB_alpha and diagnostics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from judgekit.core.errors import StatsError
from judgekit.methods.vbscore.distribution import check_distribution

NONE_TAGS = frozenset({None, "", "none", "None", "NONE"})
ALPHA_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


def binary_gains(intents: Sequence[str], tags: Sequence[str | None],
                 k: int | None = None) -> np.ndarray:
    """g_i = max_j 1{phi(d_j) = E_i} over the top k outputs; "none" matches nothing."""
    top = [t for t in list(tags)[:k] if t not in NONE_TAGS]
    present = set(top)
    return np.array([1.0 if e in present else 0.0 for e in intents])


def dcg_gains(intents: Sequence[str], tags: Sequence[str | None],
              k: int | None = None) -> np.ndarray:
    """g_i = DCG_i / IDCG_i with IDCG over the m_i outputs tagged E_i (0 if m_i = 0)."""
    top = list(tags)[:k]
    g = np.zeros(len(intents))
    for i, e in enumerate(intents):
        ranks = [j for j, t in enumerate(top, start=1) if t == e and t not in NONE_TAGS]
        if ranks:
            dcg = sum(1.0 / np.log2(j + 1) for j in ranks)
            idcg = sum(1.0 / np.log2(j + 1) for j in range(1, len(ranks) + 1))
            g[i] = dcg / idcg
    return g


def expected_success(pi: np.ndarray, gains: np.ndarray) -> float:
    """ES = sum_i pi_i g_i (C)."""
    return _expected_success(check_distribution(pi), gains)


def _expected_success(pi: np.ndarray, gains: np.ndarray) -> float:
    """:func:`expected_success` of a ``pi`` already checked."""
    g = np.asarray(gains, float)
    if g.shape != pi.shape:
        raise StatsError(f"gains shape {g.shape} does not match pi shape {pi.shape}")
    if (g < 0).any() or (g > 1).any():
        raise StatsError("gains must lie in [0, 1]")
    # pi sums to 1 only up to rounding, so pi @ g can be 1 - 1e-16 at full coverage,
    # and sqrt(ES(1-ES)) turns that into a 1e-8 dent in VB. Summing the smaller of the
    # two complementary masses makes both ends exact: all gains 1 -> 1, all 0 -> 0.
    hit = float(pi @ g)
    es = hit if hit <= 0.5 else 1.0 - float(pi @ (1.0 - g))
    return float(np.clip(es, 0.0, 1.0))


def variance(pi: np.ndarray, gains: np.ndarray,
             kind: Literal["bernoulli", "spread"] = "bernoulli") -> float:
    """Bernoulli ES(1-ES) (the paper's), or the spread Var_pi(g) = sum pi g^2 - ES^2."""
    es = expected_success(pi, gains)
    if kind == "bernoulli":
        return es * (1.0 - es)
    if kind == "spread":
        return max(0.0, float(np.asarray(pi) @ np.asarray(gains, float) ** 2) - es**2)
    raise StatsError(f"variance kind {kind!r} is not 'bernoulli' or 'spread'")


def vb_from(es: float, var: float, alpha: float, clip: bool = False) -> float:
    """VB_alpha = ES - alpha sqrt(Var). Raw by default: it can be negative (errata)."""
    if alpha < 0:
        raise StatsError(f"alpha {alpha} must be >= 0")
    v = es - alpha * np.sqrt(max(var, 0.0))
    return float(min(max(v, 0.0), 1.0)) if clip else float(v)


def vb_of_es(es: float, alpha: float) -> float:
    """VB with the Bernoulli variance, as a function of ES alone."""
    return vb_from(es, es * (1 - es), alpha)


@dataclass
class Score:
    es: float
    vb: dict[float, float]
    robustness: float
    top_intent: int
    top_coverage: float


def score(pi: np.ndarray, gains: np.ndarray, alphas: Sequence[float] = ALPHA_GRID,
          kind: Literal["bernoulli", "spread"] = "bernoulli", clip: bool = False) -> Score:
    """ES, VB over the alpha grid, sqrt(Var) and the top intent with its coverage."""
    pi = check_distribution(pi)
    g = np.asarray(gains, float)
    es = _expected_success(pi, g)
    if kind == "bernoulli":  # the checks above are not repeated per statistic
        var = es * (1.0 - es)
    else:
        var = variance(pi, g, kind)
    top = int(np.argmax(pi))
    return Score(es, {float(a): vb_from(es, var, a, clip) for a in alphas},
                 float(np.sqrt(var)), top, float(g[top]))
