"""Several judges' verdicts combined into one per item, and how many independent judges
they amount to.

- :func:`majority_vote`: strict majority of the judges that gave a readable verdict
  (an unreadable verdict is an abstention); a tie, or no vote, gives no verdict and is
  counted, never broken silently (the semantics Inspect's juries settled on, inspect_ai
  PR #4769).
- :func:`dawid_skene`: the reliability-weighted vote of Dawid & Skene (1979, "Maximum
  likelihood estimation of observer error-rates using the EM algorithm", JRSS C 28:20),
  one confusion matrix per judge, fitted by EM from the verdicts alone, or with people's
  labels fixed where items have them (semi-supervised). Missing verdicts are skipped.
- :func:`effective_judges`: k / (1 + (k - 1) rho), rho the mean pairwise correlation of
  the judges' errors (Kish's design effect for k equally correlated votes): nine judges
  whose errors are correlated at 0.4 count as about two.

Pure numpy; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from judgekit.core.errors import StatsError

__all__ = ["Vote", "dawid_skene", "effective_judges", "majority_vote"]

MISSING = -1


class Vote(NamedTuple):
    labels: np.ndarray  # per item: the class index, or -1 (no verdict: a tie or no vote)
    ties: int  # items whose votes tied
    empty: int  # items no judge gave a readable verdict on
    posterior: np.ndarray | None = None  # (items, classes), the weighted vote's


def majority_vote(votes: np.ndarray, classes: int) -> Vote:
    """Strict majority per item of ``votes`` (items x judges, class indices, -1 for an
    abstention)."""
    v = np.asarray(votes, int)
    if v.ndim != 2:
        raise StatsError("votes are an items x judges matrix")
    counts = np.stack([(v == c).sum(axis=1) for c in range(classes)], axis=1)
    top = counts.max(axis=1)
    voted = (v != MISSING).sum(axis=1)
    out = np.where((top * 2 > voted) & (voted > 0), counts.argmax(axis=1), MISSING)
    ties = int(np.sum((voted > 0) & (out == MISSING)))
    return Vote(out, ties, int(np.sum(voted == 0)))


def dawid_skene(votes: np.ndarray, classes: int, truth: np.ndarray | None = None,
                iterations: int = 100, tol: float = 1e-8) -> Vote:
    """The Dawid-Skene weighted vote (see the module's docstring). ``truth``: people's
    labels (class index, -1 where none), held fixed in the E step. Initialised from the
    majority vote; a Laplace count of 1 keeps every confusion entry positive."""
    v = np.asarray(votes, int)
    n, k = v.shape
    post = np.full((n, classes), 1.0 / classes)
    counts = np.stack([(v == c).sum(axis=1) for c in range(classes)], axis=1).astype(float)
    has = counts.sum(axis=1) > 0
    post[has] = counts[has] / counts[has].sum(axis=1, keepdims=True)
    fixed = None
    if truth is not None:
        t = np.asarray(truth, int)
        fixed = t != MISSING
        post[fixed] = np.eye(classes)[t[fixed]]
    prev = None
    for _ in range(iterations):
        prior = (post.sum(axis=0) + 1.0) / (n + classes)
        conf = np.ones((k, classes, classes))  # judge, true class, given class
        for j in range(k):
            seen = v[:, j] != MISSING
            for c in range(classes):
                conf[j, :, c] += post[seen & (v[:, j] == c)].sum(axis=0)
        conf /= conf.sum(axis=2, keepdims=True)
        log = np.tile(np.log(prior), (n, 1))
        for j in range(k):
            seen = v[:, j] != MISSING
            log[seen] += np.log(conf[j][:, v[seen, j]]).T
        log -= log.max(axis=1, keepdims=True)
        new = np.exp(log)
        new /= new.sum(axis=1, keepdims=True)
        if fixed is not None:
            new[fixed] = post[fixed]
        post = new
        if prev is not None and np.max(np.abs(post - prev)) < tol:
            break
        prev = post
    known = has.copy()
    if fixed is not None:
        known |= fixed
    labels = np.where(known, post.argmax(axis=1), MISSING)
    return Vote(labels, 0, int(np.sum(~has)), post)


def effective_judges(errors: np.ndarray) -> float:
    """k / (1 + (k - 1) rho) for an items x judges matrix of 0/1 errors (rho: the mean
    correlation of two judges' errors over the items both judged; NaN marks a missing
    verdict); within [1, k]."""
    e = np.asarray(errors, float)
    k = e.shape[1]
    if k < 2:
        return float(k)
    rs = []
    for a in range(k):
        for b in range(a + 1, k):
            both = ~np.isnan(e[:, a]) & ~np.isnan(e[:, b])
            x, y = e[both, a], e[both, b]
            if x.size >= 3 and x.std() > 0 and y.std() > 0:
                rs.append(float(np.corrcoef(x, y)[0, 1]))
    rho = float(np.mean(rs)) if rs else 0.0
    return float(min(k, max(1.0, k / (1 + (k - 1) * rho))))


def as_matrix(columns: Sequence[Sequence[int]]) -> np.ndarray:
    """Judges' class indices (one list per judge, -1 for none) as items x judges."""
    return np.asarray(columns, int).T
