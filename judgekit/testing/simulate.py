"""Simulated judges and verifiers for measuring judgekit's own decisions: the audit's
evidence per item and the probe's verdicts, drawn from a seed, fed to the same
decision code the runners use (``judgekit.methods.nodata.decision.decide`` and
``judgekit.methods.probe.runner.analyse``). Used by ``benchmarks/verdicts.py`` and the tests.

Audit: items with three criteria (label = all criteria hold), the true values drawn
so that a share ``pass_rate`` of items pass; the verifier reads each criterion
wrongly with probability ``noise``, afresh for every reading (x, its re-read, each
paraphrase); paraphrases keep x's true values (a faithful generator), except the
liar's, which carry its claims.

Probe: pairs with a known better answer; ``sure`` items are judged right, the rest
are a coin the judge flips afresh on every call (stochastic) or a fixed function of
the prompt text (deterministic, as at temperature 0: identical re-runs agree, any
change to the prompt re-draws the coin).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judgekit.core import seeds
from judgekit.methods.nodata.readings import ItemEvidence

AUDIT_JUDGES = ("oracle", "always_pass", "random", "liar", "mostly_right", "blind_spot",
                "copied", "easy_only")
CRITERIA = ("c1", "c2", "c3")


def audit_items(judge: str, *, n: int = 200, pass_rate: float = 0.5, noise: float = 0.0,
                rounds: int = 3, seed: int = 0, labelled: bool = True, criteria: int = 3,
                fixed: float = 0.0, reread: str = "reworded", wholesale: float = 0.0,
                blind_spot: float = 0.0, hard: float = 0.0, hard_noise: float = 0.25,
                reread_noise: float = 0.0) -> list[ItemEvidence]:
    """One simulated audit: per item the evidence the runner would collect.

    The verifier misreads each criterion with probability ``noise`` afresh on every
    reading; with probability ``fixed`` as a fixed function of the text and the
    instruction (a temperature-0 verifier: a re-read under the same words repeats it,
    ``reread="same"``; under reworded ones it is drawn again); on a share ``wholesale``
    of readings it loses the whole breakdown (every criterion a coin). ``blind_spot``:
    on that share of items the judge and the verifier both misread the first criterion
    the same way, on x and on every paraphrase (people do not).

    Adversaries of the verifier's self-agreement (issue 49): judge ``copied`` is right on
    70% of items and random on the rest, and the verifier reads its claims there (it
    copies the judge's errors, on x and on every paraphrase); ``hard``: that share of
    items is hard to read (every reading misreads each criterion with probability
    ``hard_noise``), and judge ``easy_only`` is right only on the easy ones;
    ``reread_noise``: the re-read is a second verifier that misreads each criterion
    with that probability (on top of ``noise``)."""
    rng = seeds.rng("testing.judges", seed)
    names = CRITERIA if criteria == len(CRITERIA) else tuple(f"c{i + 1}" for i in range(criteria))
    k = len(names)
    p = pass_rate ** (1 / k)
    truth = (rng.random((n, k)) < p).astype(int)

    is_hard = (rng.random(n) < hard) if hard else np.zeros(n, bool)

    def read(values: np.ndarray, item: int, text: int, words: int) -> np.ndarray:
        if wholesale and rng.random() < wholesale:
            return (rng.random(values.shape) < 0.5).astype(int)
        out = np.where(rng.random(values.shape) < noise, 1 - values, values)
        if is_hard[item]:
            out = np.where(rng.random(values.shape) < hard_noise, 1 - out, out)
        if fixed:
            g = seeds.rng("testing.fixed", seed, item, text, words)
            out = np.where(g.random(values.shape) < fixed, 1 - out, out)
        return out

    out = []
    for item, t in enumerate(truth):
        seen = t.copy()  # what the verifier (and a judge sharing its blind spot) sees
        if blind_spot and rng.random() < blind_spot:
            seen[0] = 1 - seen[0]
        if judge == "oracle":
            claim = t.copy()
        elif judge == "blind_spot":  # right except where it shares the verifier's blind spot
            claim = seen.copy()
        elif judge == "always_pass":
            claim = np.ones(k, int)
        elif judge == "random":
            claim = (rng.random(k) < 0.5).astype(int)
        elif judge == "liar":  # a self-consistent wrong breakdown: one criterion flipped
            claim = t.copy()
            j = int(rng.integers(k))
            claim[j] = 1 - claim[j]
        elif judge == "mostly_right":  # right on 70% of items, random on 30%
            claim = t.copy() if rng.random() < 0.7 else (rng.random(k) < 0.5).astype(int)
        elif judge == "copied":  # as mostly_right, and the verifier copies its errors
            claim = t.copy() if rng.random() < 0.7 else (rng.random(k) < 0.5).astype(int)
            seen = claim.copy()
        elif judge == "easy_only":  # right where the verifier reads easily, else random
            claim = (rng.random(k) < 0.5).astype(int) if is_hard[item] else t.copy()
        else:
            raise ValueError(f"unknown simulated judge {judge!r}; use {AUDIT_JUDGES}")
        vx = read(seen, item, 0, 0)
        again = read(seen, item, 0, 0 if reread == "same" else 1)
        if reread_noise:
            again = np.where(rng.random(k) < reread_noise, 1 - again, again)
        label, vlabel = int(claim.all()), int(vx.all())
        ok = bool(label == vlabel and (claim == vx).all())  # challenge 0
        reached = 0
        if ok:
            # the liar realises its claims; a faithful paraphrase keeps x's values, which
            # a blind spot misreads again
            source = claim if judge == "liar" else seen
            for r in range(rounds):
                reached += 1
                if not (read(source, item, r + 1, 0) == vx).all():  # challenge 1 = 2
                    ok = False
                    break
        out.append(ItemEvidence(
            success=ok, judge_label=label, verifier_label=vlabel,
            claimed=dict(zip(names, claim.tolist())), verifier_top=dict(zip(names,
                                                                           vx.tolist())),
            verifier_total=tuple(vx.tolist()), reread_total=tuple(again.tolist()),
            reread_top=dict(zip(names, again.tolist())),
            human_label=int(t.all()) if labelled else None,
            human_criteria=dict(zip(names, t.tolist())) if labelled else {},
            rounds_reached=reached, distinct_x_primes=reached))
    return out


def probe_verdicts(kind: str, *, n: int = 400, seed: int = 0, bias: float = 0.0,
                   sure: float = 0.6, repeats: int = 2
                   ) -> tuple[list[Any], list[dict[str, str | None]]]:
    """(pairs, verdicts) as the pairwise probe collects them, for transforms swap,
    rename, pad and the placebo. ``kind``: ``deterministic`` (unbiased, verdict a fixed
    function of the prompt), ``stochastic`` (unbiased, fresh coin every call),
    ``position`` (picks the first slot with probability 2 * bias, else as stochastic:
    P(first) - 0.5 = bias), ``padding`` (picks the padded answer with probability
    2 * bias under pad)."""
    from judgekit.methods.probe.pairs import Pair

    rng = seeds.rng("testing.pairs", seed)
    pairs, verdicts = [], []
    for i in range(n):
        correct = "a" if rng.random() < 0.5 else "b"
        pairs.append(Pair(f"p{i}", f"Q{i}?", f"a{i}", f"b{i}", correct))
        is_sure = rng.random() < sure
        side = "a" if i % 2 == 0 else "b"
        text_coin = {v: rng.random() < 0.5 for v in ("run", "swap", "rename", "pad",
                                                     "placebo")}
        v: dict[str, str | None] = {}

        def verdict(name: str, first: str, padded: str | None = None,
                    is_sure: bool = is_sure, correct: str = correct,
                    text_coin: dict[str, bool] = text_coin) -> str:
            if kind == "position" and rng.random() < 2 * bias:
                return first
            if kind == "padding" and padded and rng.random() < 2 * bias:
                return padded
            if is_sure:
                return correct
            if kind == "deterministic":
                coin = text_coin["run" if name.startswith("run") else name]
            else:
                coin = rng.random() < 0.5
            return "a" if coin else "b"

        for d in range(repeats):
            v[f"run{d}"] = verdict(f"run{d}", "a")
            v[f"run{d}:first"] = "first" if v[f"run{d}"] == "a" else "second"
        v["swap"] = verdict("swap", "b")
        v["swap:first"] = "first" if v["swap"] == "b" else "second"
        v["rename"] = verdict("rename", "a")
        v["rename:first"] = "first" if v["rename"] == "a" else "second"
        v["pad"] = verdict("pad", "a", side)
        v["pad:side"] = side
        v["placebo"] = verdict("placebo", "a")
        verdicts.append(v)
    return pairs, verdicts
