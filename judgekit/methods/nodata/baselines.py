"""Ensemble baselines (Table 9): average and majority vote of several judges, with
pairwise Cohen's kappa and percent agreement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np


def ensemble(labels: Mapping[str, Sequence[int]], truth: Sequence[int] | None = None,
             scores: Mapping[str, Sequence[float]] | None = None) -> dict[str, Any]:
    """Aggregate judges' binary labels by majority vote and by average score.

    ``scores`` (probabilities of label 1) are averaged when given; otherwise the
    labels themselves are averaged (ties at 0.5 go to 1).
    """
    from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

    names = sorted(labels)
    mat = np.array([labels[n] for n in names], dtype=int)
    avg_src = np.array([scores[n] for n in names]) if scores else mat.astype(float)
    average = (avg_src.mean(axis=0) >= 0.5).astype(int)
    majority = (mat.sum(axis=0) * 2 > len(names)).astype(int)
    pairs = []
    for a, b in combinations(range(len(names)), 2):
        kappa = cohen_kappa_score(mat[a], mat[b])
        pairs.append({"judges": [names[a], names[b]],
                      "kappa": None if np.isnan(kappa) else float(kappa),
                      "percent_agreement": float(np.mean(mat[a] == mat[b]))})
    out: dict[str, Any] = {"judges": names, "pairs": pairs,
                           "mean_kappa": _mean([p["kappa"] for p in pairs]),
                           "mean_percent_agreement": _mean([p["percent_agreement"]
                                                           for p in pairs])}
    if truth is not None:
        for key, pred in (("average", average), ("majority", majority)):
            out[key] = {"accuracy": float(accuracy_score(truth, pred)),
                        "f1": float(f1_score(truth, pred, zero_division=0))}
    return out


def _mean(values: list[Any]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None
