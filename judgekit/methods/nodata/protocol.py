"""The Evaluator-Verifier protocol and the No-Data Algorithm (de Wynter), pure parts.

Challenge 1 (structure): C̄(x') = C̄(x) for every criterion and clause.
Challenge 2 (encoding): C(x') = C(x), or normalised Hamming distance < eps.
The verifier computes the criterion values of both x and x' itself; the
evaluator's own breakdown is never trusted (the authors' notebook did, which
lets a self-consistent liar pass).

phi is the paper's: on failure the label is flipped with probability phi. (The
authors' code keeps the label with probability phi, i.e. implements 1 - phi.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from judgekit.core import seeds


class Evaluator(Protocol):
    name: str

    def label(self, x: Any, rng: np.random.Generator) -> int: ...

    def generate(self, x: Any, label: int, round_: int, rng: np.random.Generator) -> Any: ...


class Verifier(Protocol):
    def total(self, x: Any) -> tuple[int, ...]: ...

    def top(self, x: Any) -> tuple[int, ...]: ...


def challenge_passes(challenge: int, total_x: Sequence[int], total_xp: Sequence[int],
                     top_x: Sequence[int], top_xp: Sequence[int], eps: float = 0.0) -> bool:
    """Whether x' answers the drawn challenge (1: structure, 2: encoding)."""
    if challenge == 1:
        return tuple(total_x) == tuple(total_xp)
    if eps > 0:
        a, b = np.asarray(top_x), np.asarray(top_xp)
        return bool(np.mean(a != b) < eps)
    return tuple(top_x) == tuple(top_xp)


@dataclass
class EVRecord:
    label: int
    success: bool
    failed_round: int | None = None
    failed_challenge: int | None = None
    challenges: list[int] = field(default_factory=list)
    x_primes: list[Any] = field(default_factory=list)
    flipped: bool = False
    final_label: int = 0


def run_ev(x: Any, evaluator: Evaluator, verifier: Verifier, rounds: int,
           rng: np.random.Generator, eps: float = 0.0) -> EVRecord:
    """r rounds of commit-then-challenge for one datapoint."""
    y = int(evaluator.label(x, rng))
    rec = EVRecord(label=y, success=True, final_label=y)
    total_x, top_x = verifier.total(x), verifier.top(x)
    for r in range(rounds):
        xp = evaluator.generate(x, y, r, rng)  # commit before the challenge is drawn
        rec.x_primes.append(xp)
        ch = int(rng.integers(1, 3))
        rec.challenges.append(ch)
        ok = xp is not None and challenge_passes(ch, total_x, verifier.total(xp), top_x,
                                                 verifier.top(xp), eps)
        if not ok:
            rec.success, rec.failed_round, rec.failed_challenge = False, r, ch
            break
    return rec


def flip(label: int, k: int, rng: np.random.Generator) -> int:
    """Binary: 1 - y. Direct k-ary variant: a uniformly drawn other label."""
    if k == 2:
        return 1 - label
    others = [v for v in range(k) if v != label]
    return int(rng.choice(others))


def run_protocol(items: Sequence[Any], evaluator: Evaluator, verifier: Verifier, *,
                 rounds: int, seed: int, eps: float = 0.0) -> list[EVRecord]:
    """EV for every item, each with its own seeded stream (order-independent)."""
    return [run_ev(x, evaluator, verifier, rounds,
                   seeds.rng("nodata.protocol", seed, i), eps)
            for i, x in enumerate(items)]


def apply_flips(records: Sequence[EVRecord], phi: float, seed: int, k: int = 2
                ) -> list[EVRecord]:
    """On failure flip the label with probability phi. The flip stream is separate
    from the protocol's, so the same EV outcomes serve every phi (common random
    numbers: success rates are identical across phi, as the paper expects)."""
    from dataclasses import replace

    rng = seeds.rng("nodata.flips", seed, int(round(phi * 1e6)))
    out = []
    for rec in records:
        u = rng.random()
        if not rec.success and u < phi:
            out.append(replace(rec, flipped=True, final_label=flip(rec.label, k, rng)))
        else:
            out.append(replace(rec, flipped=False, final_label=rec.label))
    return out


def no_data(items: Sequence[Any], evaluator: Evaluator, verifier: Verifier, *, rounds: int,
            phi: float, seed: int, eps: float = 0.0, k: int = 2) -> list[EVRecord]:
    """The No-Data Algorithm: EV per item; on failure flip with probability phi."""
    recs = run_protocol(items, evaluator, verifier, rounds=rounds, seed=seed, eps=eps)
    return apply_flips(recs, phi, seed, k)


@dataclass
class Summary:
    n: int
    success_rate: float
    flip_rate: float
    accuracy: float | None
    f1: float | None
    known_accuracy: float | None
    known_f1: float | None
    bound: float | None
    success_ci: list[float] | None = None  # Wilson 95%
    flip_ci: list[float] | None = None  # Wilson 95%
    accuracy_ci: list[float] | None = None  # item bootstrap 95%
    f1_ci: list[float] | None = None  # item bootstrap 95%


def theorem_5_2_bound(alpha: float, phi: float, rounds: int) -> float:
    """E[accuracy] <= 1 - (1 - alpha)(1 - phi + phi (1/4)^r) (Theorem 5.2)."""
    return 1.0 - (1.0 - alpha) * (1.0 - phi + phi * 0.25**rounds)


def summarise(records: Sequence[EVRecord], truth: Sequence[int] | None, *, phi: float,
              rounds: int, k: int = 2, seed: int = 0, level: float = 0.95) -> Summary:
    """Rates with intervals at ``level``: Wilson for the success and flip rates, an item
    bootstrap (seeded) for No-Data accuracy and F1."""
    from sklearn.metrics import accuracy_score, f1_score

    from judgekit.stats.proportions import (
        accuracy,
        binary_f1,
        paired_bootstrap_interval,
        rate_with_interval,
    )

    n = len(records)
    succ, succ_ci, _ = rate_with_interval([r.success for r in records], level)
    flips, flip_ci, _ = rate_with_interval([r.flipped for r in records], level)
    base = Summary(n, succ if succ is not None else 0.0, flips if flips is not None else 0.0,
                   None, None, None, None, None, success_ci=succ_ci, flip_ci=flip_ci)
    if truth is None or n == 0:
        return base
    final = [r.final_label for r in records]
    initial = [r.label for r in records]
    avg = "binary" if k == 2 else "macro"
    known = float(accuracy_score(truth, initial))
    rng = seeds.rng("nodata.flips_k", seed, int(round(phi * 1e6)))
    acc_ci = paired_bootstrap_interval(truth, final, accuracy, rng, level=level).as_list()
    f1_ci = paired_bootstrap_interval(truth, final, binary_f1, rng, level=level).as_list() \
        if k == 2 \
        else None
    from dataclasses import replace

    return replace(base, accuracy=float(accuracy_score(truth, final)),
                   f1=float(f1_score(truth, final, average=avg, zero_division=0)),
                   known_accuracy=known,
                   known_f1=float(f1_score(truth, initial, average=avg, zero_division=0)),
                   bound=theorem_5_2_bound(known, phi, rounds), accuracy_ci=acc_ci, f1_ci=f1_ci)


def one_vs_all(labels: Sequence[int], k: int) -> list[list[int]]:
    """k-1 binary relabellings {l_j} vs the rest, j = 0..k-2."""
    return [[int(y == j) for y in labels] for j in range(k - 1)]
