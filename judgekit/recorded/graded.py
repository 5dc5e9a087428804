"""Graded verdicts as read: a judge's score on a scale (a number, Prometheus's
``[RESULT] n``, MT-Bench's ``Rating: [[n]]``) or its probability for each grade
(``p_<grade>`` columns: its expected score is the score), and each rater's score. The
scale is detected and stated, or given (``--scale LO-HI``); a value off it, NaN or text
is unreadable, counted with its reason, never averaged."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from judgekit.core.errors import ConfigError
from judgekit.core.jsontypes import JSONObject

__all__ = ["GRADE", "RESULT", "Graded", "Scale", "grade_columns", "is_graded",
           "parse_scale", "read", "score_of"]

GRADE = re.compile(r"^p_(-?\d+(?:\.\d+)?)$", re.I)  # a grade's probability column
RESULT = re.compile(r"\[RESULT\]\s*(-?\d+(?:\.\d+)?)|Rating:\s*\[\[\s*(-?\d+(?:\.\d+)?)\s*\]\]",
                    re.I)


class Scale(NamedTuple):
    lo: float
    hi: float
    integer: bool
    how: str  # "detected" or "--scale"

    def text(self) -> str:
        return (f"{self.lo:g}-{self.hi:g}{' (integers)' if self.integer else ''}, "
                f"{self.how}")

    def holds(self, v: float | None) -> bool:
        return v is not None and self.lo <= v <= self.hi


class Graded(NamedTuple):
    """The readable items: the judge's score, each rater's score, cluster and system."""

    score: np.ndarray  # the judge's score (its expected score for a distribution)
    probs: np.ndarray | None  # items x grades, for a distribution
    grades: np.ndarray | None
    humans: list[list[float | None]]  # each item's raters, in column order
    cluster: np.ndarray
    system: list[str | None]
    scale: Scale
    unreadable: int
    reasons: list[str]


def parse_scale(text: str | None) -> tuple[float, float] | None:
    """``--scale LO-HI`` (e.g. 1-5, 0-3, 1-10) as (lo, hi)."""
    if text is None or text == "":
        return None
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*", str(text))
    if not m or float(m.group(1)) >= float(m.group(2)):
        raise ConfigError(f"--scale {text!r}: give LO-HI with LO below HI, e.g. 1-5")
    return float(m.group(1)), float(m.group(2))


def score_of(raw: Any) -> float | None:
    """A score as written: a number, or a text holding Prometheus's ``[RESULT] n`` or
    MT-Bench's ``Rating: [[n]]`` (None: no number, NaN, or not finite)."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        v = float(raw)
    else:
        text = str(raw).strip()
        m = RESULT.search(text)
        try:
            v = float(m.group(1) or m.group(2)) if m else float(text)
        except ValueError:
            return None
    return v if math.isfinite(v) else None


def grade_columns(columns: Iterable[str]) -> list[tuple[str, float]]:
    """(column, grade) of ``p_<grade>`` columns, by grade."""
    out = [(c, float(m.group(1))) for c in columns if (m := GRADE.match(c.strip()))]
    return sorted(out, key=lambda x: x[1])


def is_graded(rows: list[JSONObject], roles: dict[str, str], scale: str | None) -> bool:
    """Whether a pointwise table holds graded verdicts: ``--scale`` given, ``p_<grade>``
    columns, or whole-number scores above 1 with at least three distinct values among
    the judge's and the raters' (a 0/1 or pass/fail column stays pass/fail)."""
    if scale is not None or (rows and len(grade_columns(rows[0])) >= 2):
        return True
    cols = [c for c in (roles.get("judge", "").split(",")[:1]
                        + roles.get("human", "").split(",")) if c]
    seen: set[float] = set()
    for r in rows[:2000]:
        for c in cols:
            v = r.get(c)
            if isinstance(v, str) and not RESULT.search(v):
                try:
                    v = float(v)
                except ValueError:
                    continue
            s = score_of(v)
            if s is not None:
                seen.add(s)
    return len(seen) >= 3 and max(seen) > 1 and all(float(v).is_integer() for v in seen)


def read(rows: Iterable[JSONObject], roles: dict[str, str], scale_text: str | None,
         where: object, write: Callable[[JSONObject], None]) -> Graded:
    """The readable items; a value off the scale, NaN or text is unreadable, counted
    with its reason (a judge's: the row is left out; a rater's: that rating)."""
    rows = list(rows)
    judge = roles.get("judge", "").split(",")[0]
    humans = [c for c in roles.get("human", "").split(",") if c]
    dist = grade_columns(rows[0]) if rows else []
    given = parse_scale(scale_text)
    if given is not None:
        scale = Scale(given[0], given[1], float(given[0]).is_integer()
                      and float(given[1]).is_integer(), "--scale")
    else:
        vals = [v for r in rows for c in ([judge] if not dist else []) + humans
                if (v := score_of(r.get(c))) is not None]
        vals += [g for _, g in dist]
        if not vals:
            raise ConfigError(f"{where}: no readable score in "
                              f"{', '.join([judge, *humans])}; give --scale LO-HI")
        scale = Scale(min(vals), max(vals), all(float(v).is_integer() for v in vals),
                      "detected")
    q_col, s_col, id_col = roles.get("question_id"), roles.get("system"), roles.get("id")
    score, probs, hum, cluster, system, reasons = [], [], [], [], [], []
    bad = 0
    keys: dict[str, int] = {}
    for i, r in enumerate(rows):
        item = str(r.get(id_col, i)) if id_col else str(i)
        if dist:
            got = [score_of(r.get(c)) for c, _ in dist]
            p = [v for v in got if v is not None and v >= 0]
            if len(p) < len(dist) or abs(sum(p) - 1) > 0.01:
                bad += 1
                reasons.append(f"row {i + 1}: p_ columns are not probabilities summing to 1")
                continue
            s: float | None = float(sum(v * grade for v, (_, grade) in zip(p, dist)))
            probs.append(p)
        else:
            s = score_of(r.get(judge))
            if s is None or not scale.holds(s):
                bad += 1
                reasons.append(f"row {i + 1}: {judge} {r.get(judge)!r} is "
                               + ("off the scale " + scale.text() if s is not None
                                  else "not a number"))
                continue
        people: list[float | None] = []
        for c in humans:
            raw = r.get(c)
            if raw in (None, ""):
                people.append(None)
                continue
            v = score_of(raw)
            if not scale.holds(v):
                bad += 1
                reasons.append(f"row {i + 1}: {c} {raw!r} is "
                               + ("off the scale" if v is not None else "not a number"))
                v = None
            people.append(v)
        q = str(r.get(q_col)) if q_col and r.get(q_col) not in (None, "") else item
        cluster.append(keys.setdefault(q, len(keys)))
        system.append(str(r.get(s_col)) if s_col and r.get(s_col) not in (None, "") else None)
        score.append(float(s))  # type: ignore[arg-type]
        hum.append(people)
        write({"id": item, "question_id": q, "system": system[-1], "score": s,
               "humans": people, **({"probabilities": dict(zip(
                   (f"{g:g}" for _, g in dist), probs[-1]))} if dist else {})})
    return Graded(np.array(score, float), np.array(probs, float) if dist else None,
                  np.array([g for _, g in dist], float) if dist else None, hum,
                  np.array(cluster, np.int64), system, scale, bad, reasons)
