"""Section A of the VB-Score spec: from scored candidates to a distribution pi.

Order of operations (documented choice): merge duplicates first, then truncate,
so that mass split across duplicates is not cut off; renormalise after each.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from judgekit.core.errors import StatsError


@dataclass
class Candidate:
    """One interpretation: a label, an optional KB id, score or probability."""

    label: str
    score: float | None = None
    prob: float | None = None
    kb_id: str | None = None
    violated: list[str] = field(default_factory=list)


@dataclass
class Distribution:
    labels: list[str]
    probs: np.ndarray
    members: list[list[str]]
    rule: str = "none"

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.labels, self.probs.tolist()))


def check_distribution(p: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.size == 0:
        raise StatsError("empty interpretation set: there is nothing to score")
    if np.isnan(p).any():
        raise StatsError("interpretation probabilities contain NaN")
    if (p < 0).any():
        raise StatsError(f"negative probability in {p.tolist()}")
    if abs(p.sum() - 1.0) > tol:
        raise StatsError(f"probabilities sum to {p.sum():.6f}, not 1; renormalise or give scores")
    return p


def softmax(scores: Sequence[float] | np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """pi_i ∝ exp(s_i / T) (A.1)."""
    s = np.asarray(scores, dtype=float)
    if s.size == 0:
        raise StatsError("empty interpretation set: there is nothing to score")
    if np.isnan(s).any():
        raise StatsError(f"NaN in interpretation scores {s.tolist()}")
    if temperature <= 0:
        raise StatsError(f"temperature {temperature} must be > 0")
    z = s / temperature
    z = np.exp(z - z.max())
    return z / z.sum()


def violation_penalty(violated: Sequence[Sequence[str]],
                      weights: dict[str, float] | None = None) -> np.ndarray:
    """Delta(E) = sum_j w_j 1[E violates c_j] (A.2); unlisted constraints weigh 1."""
    weights = weights or {}
    if any(w < 0 for w in weights.values()):
        raise StatsError(f"constraint weights must be >= 0, got {weights}")
    return np.array([sum(weights.get(c, 1.0) for c in v) for v in violated], dtype=float)


def combined(scores: Sequence[float] | None, violated: Sequence[Sequence[str]] | None,
             temperature: float = 1.0, weights: dict[str, float] | None = None) -> np.ndarray:
    """pi_i ∝ exp(s_i / T - Delta(E_i)): judgekit's combination of A.1 and A.2."""
    if scores is None and violated is None:
        raise StatsError("need scores, constraint violations, or both")
    n = len(scores) if scores is not None else len(violated or [])
    logits = np.zeros(n) if scores is None else np.asarray(scores, float) / temperature
    if violated is not None:
        logits = logits - violation_penalty(violated, weights)
    return softmax(logits, 1.0)


def truncate(p: np.ndarray, *, tau: float | None = None, top_k: int | None = None,
             rho: float | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Keep indices by threshold tau, top-K, or cumulative mass rho; renormalise.

    Returns (kept indices in descending-probability order, renormalised probs, rule).
    The most probable interpretation is always kept, so the result is never empty.
    """
    p = check_distribution(p)
    if sum(x is not None for x in (tau, top_k, rho)) > 1:
        raise StatsError("choose one truncation rule: tau, top_k or rho")
    order = np.argsort(-p, kind="stable")
    if tau is not None:
        keep, rule = order[p[order] >= tau], f"tau={tau}"
    elif top_k is not None:
        if top_k < 1:
            raise StatsError(f"top_k {top_k} must be >= 1")
        keep, rule = order[:top_k], f"top_k={top_k}"
    elif rho is not None:
        if not 0 < rho <= 1:
            raise StatsError(f"rho {rho} must lie in (0, 1]")
        cum = np.cumsum(p[order])
        keep, rule = order[: int(np.searchsorted(cum, rho - 1e-12) + 1)], f"rho={rho}"
    else:
        keep, rule = order, "none"
    if keep.size == 0:
        keep = order[:1]
    q = p[keep]
    return keep, q / q.sum(), rule


_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


def normalise_surface(text: str, aliases: dict[str, str] | None = None) -> str:
    """Casefold, Unicode NFC, punctuation removed, then an alias table."""
    t = _surface(text)
    return _normalised_aliases(aliases).get(t, t) if aliases else t


@lru_cache(maxsize=65536)
def _surface(text: str) -> str:
    """:func:`normalise_surface` without aliases (a replica's labels repeat its query's
    other replicas', so each is worked out once)."""
    t = unicodedata.normalize("NFC", text).casefold()
    t = _PUNCT.sub(" ", t).strip()
    return " ".join(t.split())


def _normalised_aliases(aliases: dict[str, str]) -> dict[str, str]:
    return {_surface(k): _surface(v) for k, v in aliases.items()}


def _merge(labels: list[str], p: np.ndarray, groups: list[int]) -> Distribution:
    order: dict[int, int] = {}
    out_labels: list[str] = []
    members: list[list[str]] = []
    mass: list[float] = []
    for lab, pi, g in zip(labels, p, groups):
        if g not in order:
            order[g] = len(out_labels)
            out_labels.append(lab)
            members.append([])
            mass.append(0.0)
        i = order[g]
        members[i].append(lab)
        mass[i] += float(pi)
        if pi > 0 and out_labels[i] != lab and mass[i] - pi < pi:
            out_labels[i] = lab  # the most probable member names the group
    m = np.array(mass)
    return Distribution(out_labels, m / m.sum(), members)


def dedup(candidates: Sequence[Candidate], p: np.ndarray, *,
          aliases: dict[str, str] | None = None,
          embed: Callable[[list[str]], np.ndarray] | None = None,
          threshold: float = 0.95) -> Distribution:
    """Merge duplicates by KB id, else normalised surface form, else embedding cosine."""
    p = check_distribution(p)
    labels = [c.label for c in candidates]
    table = _normalised_aliases(aliases) if aliases else {}  # once, not once a label
    keys: list[str] = []
    for c in candidates:
        t = "" if c.kb_id else _surface(c.label)
        keys.append(f"id:{c.kb_id}" if c.kb_id else f"sf:{table.get(t, t)}")
    uniq = {k: i for i, k in reversed(list(enumerate(keys)))}
    groups = [uniq[k] for k in keys]
    if embed is not None:
        groups = _semantic_groups(labels, groups, embed, threshold)
    return _merge(labels, p, groups)


def _semantic_groups(labels: list[str], groups: list[int],
                     embed: Callable[[list[str]], np.ndarray], threshold: float) -> list[int]:
    vecs = np.asarray(embed(labels), dtype=float)
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    sims = vecs @ vecs.T
    parent = list(groups)

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(labels)):
        for j in range(i):
            if sims[i, j] >= threshold:
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    return [find(i) for i in range(len(labels))]


def build(candidates: Sequence[Candidate], *, temperature: float = 1.0,
          weights: dict[str, float] | None = None,
          truncation: Literal["none", "tau", "top_k", "rho"] = "none",
          value: float | None = None, aliases: dict[str, str] | None = None,
          embed: Callable[[list[str]], np.ndarray] | None = None) -> Distribution:
    """Candidates -> pi (given probs, or softmax/relaxation), dedup, then truncate."""
    if not candidates:
        raise StatsError("empty interpretation set: there is nothing to score")
    if all(c.prob is not None for c in candidates):
        raw = np.array([c.prob for c in candidates], dtype=float)
        if np.isnan(raw).any() or (raw < 0).any():
            raise StatsError(f"invalid interpretation probabilities {raw.tolist()}")
        p = raw / raw.sum() if raw.sum() > 0 else raw
        check_distribution(p)
    else:
        scores = [c.score if c.score is not None else 0.0 for c in candidates]
        has_viol = any(c.violated for c in candidates)
        p = combined(scores, [c.violated for c in candidates] if has_viol else None,
                     temperature, weights)
    d = dedup(candidates, p, aliases=aliases, embed=embed)
    if truncation == "none":
        return d
    if value is None:
        raise StatsError(f"truncation {truncation} needs a value")
    kw = {truncation: int(value) if truncation == "top_k" else value}
    keep, q, rule = truncate(d.probs, **kw)  # type: ignore[arg-type]
    return Distribution([d.labels[i] for i in keep], q, [d.members[i] for i in keep], rule)
