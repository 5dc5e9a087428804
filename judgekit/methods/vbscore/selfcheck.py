"""VB-Score's LLM steps checked like judges.

The tagger: every tagging call is asked again with the same answers in a rotated order
(a derangement: every answer moves), and once more as given with an irrelevant
reference id in the query (the placebo: its noise floor). A tagger that reads the
answers gives each answer the same tag wherever it stands; a tagger that hands out tags
by position gives each position the same tag whatever answer stands there. On the
answer slots where the two readings disagree (the tag of the answer now in slot j
differs from the tag slot j had), each call counts content matches C and position
matches P; a call follows position when P > C, content when C > P. The decision is an
exact sign test over calls (the call is the unit: slots of one call are not
independent) at the run's level; when the tagger is shown to follow position, or the
share of calls that follow position has its Wilson interval above 10% ("partly
position": a content tagger with 10% noisy tags stays near 1%), the VB headline is
marked unreliable.

The interpretation generator: how often two replicas of a query agree on the top
reading and on the whole set of readings (normalised labels), with intervals that
treat the query as the cluster."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np

from judgekit.core import seeds
from judgekit.stats.preference import clustered_rate, sign_test

_TAG = re.compile(r"^\s*E?\s*(\d+)", re.IGNORECASE)
# a share of positional calls whose interval lies above this marks the headline: a
# tagger positional in 30-50% of calls was called "undecided" by the sign test alone
POSITION_TOLERANCE = 0.10


def parse_tag(tag: str, n: int) -> int | None:
    """'E2', 'e2', '2', 'E2: ...' -> index 1; 'none' or out of range -> None."""
    m = _TAG.match(str(tag))
    if not m:
        return None
    i = int(m.group(1)) - 1
    return i if 0 <= i < n else None


def tag_key(tag: str, n: int) -> str:
    """A tag as its interpretation index ('E2: x' -> '1'), or 'none'."""
    i = parse_tag(tag, n)
    return "none" if i is None else str(i)


def rotation(seed: int, k: int) -> list[int]:
    """perm[j] = the original position of the answer shown in slot j: a rotation by
    1..k-1 places, chosen from ``seed`` (every answer moves)."""
    if k < 2:
        return list(range(k))
    r = 1 + int(seeds.rng("vbscore.rotation", seed).integers(k - 1))
    return [(j + r) % k for j in range(k)]


class TagCheck(NamedTuple):
    """One tagging call and its two re-asks (tags already as keys)."""

    tags: list[str]
    perm: list[int]
    shuffled: list[str] | None  # tags of the rotated call, by slot
    placebo: list[str] | None  # tags of the placebo call, by slot


class RateFigure(TypedDict):
    """A clustered rate as results file shows it."""

    rate: float
    ci: list[float]
    n: int
    clusters: int


class Stability(TypedDict):
    """How often two replicas of a query read it alike (results file's
    ``self_check.interpretations``)."""

    top_reading_agreement: RateFigure | None
    same_readings: RateFigure | None
    queries: int


def _rate(groups: list[list[bool]], level: float) -> RateFigure | None:
    if not any(groups):
        return None
    r = clustered_rate(groups, level)
    return {"rate": r.rate, "ci": r.ci, "n": r.n, "clusters": r.clusters}


def tagger_check(checks: Sequence[TagCheck], level: float = 0.95) -> dict[str, Any]:
    """Does the tagger follow content or position (module docstring)."""
    content, position, placebo = [], [], []
    n_pos = n_con = 0
    usable = 0
    for c in checks:
        if c.placebo is not None and len(c.placebo) == len(c.tags):
            placebo.append([p == t for p, t in zip(c.placebo, c.tags)])
        if c.shuffled is None or len(c.shuffled) != len(c.tags) or len(c.tags) < 2:
            continue
        usable += 1
        inf = [j for j in range(len(c.tags)) if c.tags[c.perm[j]] != c.tags[j]]
        if not inf:
            continue
        cm = [c.shuffled[j] == c.tags[c.perm[j]] for j in inf]
        pm = [c.shuffled[j] == c.tags[j] for j in inf]
        content.append(cm)
        position.append(pm)
        n_pos += sum(pm) > sum(cm)
        n_con += sum(cm) > sum(pm)
    s = sign_test(n_pos, n_con, level)
    alpha = 1 - level
    if n_pos + n_con == 0:
        decision = "untestable"
        reason = ("no call gave different tags to answers that swapped places (every "
                  "answer got the same tag, or the re-asks failed)")
    elif s.p_value < alpha and n_pos > n_con:
        decision = "position"
        reason = (f"tags follow the answers' positions, not their content: in {n_pos} of "
                  f"{n_pos + n_con} decisive calls the rotated answers kept the tags of the "
                  f"slots they moved into (sign test p = {s.p_value:.2g})")
    elif s.ci is not None and s.ci[0] > POSITION_TOLERANCE:
        decision = "partly position"
        reason = (f"tags follow the answers' positions in {n_pos} of {n_pos + n_con} "
                  f"decisive calls ({s.share:.0%}, {level:.0%} interval [{s.ci[0]:.0%}, "
                  f"{s.ci[1]:.0%}], above {POSITION_TOLERANCE:.0%}): about that share of the "
                  "scores are read from slots, not answers")
    elif s.p_value < alpha and n_con > n_pos:
        decision = "content"
        reason = f"tags follow the answers: {n_con} of {n_pos + n_con} decisive calls"
    else:
        decision = "undecided"
        reason = (f"neither shown: {n_con} calls followed content, {n_pos} position "
                  f"(sign test p = {s.p_value:.2g})")
    return {"decision": decision, "reason": reason, "calls": len(checks),
            "rotated_calls_read": usable, "decisive_calls": n_pos + n_con,
            "position_calls": n_pos, "content_calls": n_con,
            "position_share": {"rate": s.share, "ci": s.ci, "n": n_pos + n_con,
                               "p_value": s.p_value},
            "content_agreement": _rate(content, level),
            "position_agreement": _rate(position, level),
            "placebo_agreement": _rate(placebo, level)}


_WORDS = re.compile(r"[a-z0-9]+")


def _norm(label: str) -> str:
    return " ".join(_WORDS.findall(label.lower()))


def interpretation_stability(per_query: Sequence[Sequence[tuple[str, Sequence[str]]]],
                             level: float = 0.95) -> Stability:
    """``per_query[q]`` lists each replica's (top reading, all readings). Agreement over
    the pairs of replicas of each query, the query as the cluster."""
    return stability_from_pairs([reading_pairs(reps) for reps in per_query], level)


def reading_pairs(reps: Sequence[tuple[str, Sequence[str]]]
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """One query's replica pairs: do they share the top reading, and the same readings
    (two compact boolean arrays; None with fewer than two replicas)."""
    # each replica's readings normalised once, not once per pair it is in
    normed = [(_norm(top), frozenset(_norm(x) for x in readings)) for top, readings in reps]
    pairs = list(itertools.combinations(normed, 2))
    if not pairs:
        return None
    return (np.array([a[0] == b[0] for a, b in pairs], bool),
            np.array([a[1] == b[1] for a, b in pairs], bool))


def stability_from_pairs(per_query: Sequence[tuple[np.ndarray, np.ndarray] | None],
                         level: float = 0.95) -> Stability:
    got = [p for p in per_query if p is not None]
    return {"top_reading_agreement": _rate([p[0].tolist() for p in got], level),
            "same_readings": _rate([p[1].tolist() for p in got], level),
            "queries": len(got)}


def verdict(tagger: dict[str, Any] | None) -> tuple[bool, list[str]]:
    """(reliable, reasons) of the VB headline: unreliable when the tagger follows
    position in most calls, or in a share of them shown above POSITION_TOLERANCE."""
    if tagger and tagger["decision"] in ("position", "partly position"):
        return False, [f"tagger: {tagger['reason']}"]
    return True, []
