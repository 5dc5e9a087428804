"""The card's decisions: one per use of a judge, each decided by margins on the interval
printed beside it.

People use a judge for one of three things, and a judge can be fit for one and not
another, so each gets its own decision:

- ``rate``: estimating pass rates (pairwise: win rates) and comparing systems' rates.
  Rests on leniency, the judge's rate minus people's on the same items, overall and per
  system (pairwise: the win-rate bias, overall and per model).
- ``rank``: ordering systems. Rests on the spread of per-system leniency (the largest
  difference between two systems' leniencies: how far the judge can move one system
  against another).
- ``items``: acting on single verdicts (filtering, gating, escalation). Rests on the
  judge's accuracy against people, with a guarantee: its interval's lower end.

Each decision is an equivalence test against a named margin (Wellek 2010; Schuirmann's
two one-sided tests), never a p-value alone:

- **trust** when the interval lies inside the margin (for ``items``: at or above the
  target agreement). Trust needs every row of a family inside (an intersection-union
  test: no multiplicity adjustment is due), and the judge shown *above* what an
  uninformed judge scores on the same items: a random judge whose rate happens to
  match people's is never trusted.
- **do not trust** when an interval lies wholly outside the margin, or when the judge
  is shown no better than an uninformed judge. A claim resting on any one row of a
  family (leniency overall and per system) uses the family's intervals, which hold
  together (Bonferroni), so a file with several systems and no leniency makes a false
  claim at most 1 - level of the time.
- **use corrected** otherwise: the interval straddles a margin. ``labels_needed`` is
  how many more human labels (at most the items left) bring the interval clear of the
  margin if the estimate stays where it is.

More labels move a decision only when the estimate moves across a margin: intervals
shrink around the estimate, and nothing counts a finding by its p-value. Position and
length preferences enter by their size: one shown wholly beyond the margin is a reason
not to trust a pairwise judge's rates. No decision rests on an interval of zero width
(leniency and the win-rate bias carry the exact bound of an unseen disagreement).

Runs with no people's labels but a No-Data audit take the audit's decision for every
use; with neither, the decision is "do not trust" and a pilot of random labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from judgekit.core.spec import CardRow

__all__ = ["DEFAULT_MARGIN", "DEFAULT_TARGET", "PILOT_LABELS", "USES", "UseDecision",
           "decide"]

Use = Literal["rate", "rank", "items"]
USES: tuple[Use, ...] = ("rate", "rank", "items")
DEFAULT_MARGIN = 0.05
DEFAULT_TARGET = 0.9
# Labels asked for when nothing was measured against people: a pilot to plan from.
PILOT_LABELS = 60
Decision = Literal["trust", "use corrected", "do not trust"]
TRUST: Decision = "trust"
CORRECTED: Decision = "use corrected"
DISTRUST: Decision = "do not trust"


class UseDecision(BaseModel):
    """One use's decision, the margin it was decided against, the interval it rests on
    (the measure ``measure``), its n and the labels that would settle it."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["trust", "use corrected", "do not trust"]
    margin: float  # for items: the target agreement
    interval: list[float] | None
    n: int
    labels_needed: int
    measure: str | None  # the key of the row (or rows) it rests on
    reason: str


def _ci(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _more(n: int, ci: Sequence[float], distance: float, left: int) -> int:
    """Labels beyond ``n`` that shrink the interval's half-width below ``distance`` (the
    estimate's distance to the margin), at the same design (width ~ 1/sqrt(n)); at
    most the ``left`` items not labelled yet."""
    half = (ci[1] - ci[0]) / 2
    if half <= 0 or n <= 0 or left <= 0:
        return 0
    if distance <= 0:
        return max(0, left)
    need = math.ceil(n * (half / distance) ** 2) - n
    return max(1, min(need, left))


def _uninformed(rows: list[CardRow]) -> tuple[str, CardRow | None]:
    """Whether the judge's accuracy is shown above what an uninformed judge scores on
    the same items: ``above``, ``no better`` or ``not shown`` (and the row)."""
    acc = next((r for r in rows if r.key == "accuracy" and r.section == "people"), None)
    if acc is None:
        return "not measured", None
    d = acc.decision
    if d.startswith("above"):
        return "above", acc
    if d.startswith("no better"):  # shown no better ("not above" is only not shown)
        return "no better", acc
    return "not shown", acc


def _family(rows: list[CardRow], base: str) -> list[CardRow]:
    """The rows of one family with an interval: ``base`` and ``base[...]``."""
    return [r for r in rows if (r.key == base or r.key.startswith(base + "["))
            and r.ci is not None and r.ci[0] is not None]


def _ci_of(r: CardRow) -> list[float]:
    """The row's interval at the run's level (``_family`` keeps rows that have one)."""
    assert r.ci is not None
    return r.ci


def _claim_ci(r: CardRow) -> list[float]:
    """The interval a claim against the judge rests on: the family's, when the row is
    one of several that hold together, else the row's own."""
    return r.family_ci or _ci_of(r)


def _rate(fam: list[CardRow], margin: float, items: int, informed: str) -> UseDecision:
    """Leniency (or win-rate bias) overall and per system inside +/- margin."""
    main = fam[0]
    outside = [r for r in fam if _claim_ci(r)[0] > margin or _claim_ci(r)[1] < -margin]
    inside = all(-margin <= _ci_of(r)[0] and _ci_of(r)[1] <= margin
                 and _ci_of(r)[1] > _ci_of(r)[0] for r in fam)
    what = "leniency" if main.key.startswith("leniency") else "win-rate bias"
    n = main.labelled or main.n
    if outside:
        worst = max(outside, key=lambda r: abs(r.estimate or 0.0))
        return UseDecision(decision=DISTRUST, margin=margin, interval=_claim_ci(worst),
                           n=worst.n, labels_needed=0, measure=worst.key,
                           reason=f"{worst.key} {_ci(_claim_ci(worst))} lies "
                           f"beyond +/-{margin:g}" + (" (interval holding over the "
                                                      f"{len(fam)} rows together)"
                                                      if len(fam) > 1 else ""))
    if inside and informed == "above":
        return UseDecision(decision=TRUST, margin=margin, interval=main.ci, n=n,
                           labels_needed=0, measure=main.key,
                           reason=f"{what} {_ci(main.ci)} lies inside +/-{margin:g}" +
                           (f", and every one of {len(fam) - 1} per-system rows too"
                            if len(fam) > 1 else "") + f" ({n} human labels)")
    # undecided: the row furthest from being settled sets the labels
    left = items - main.n  # items nobody labelled yet, whichever system they belong to
    need = max(_more(r.n, _ci_of(r), abs(margin - abs(r.estimate or 0.0)), left)
               for r in fam)
    if inside:
        why = ("its accuracy is not shown above an uninformed judge's, so a matching "
               "rate may be chance")
    else:
        wide = [r for r in fam if not (-margin <= _ci_of(r)[0] and _ci_of(r)[1] <= margin)]
        worst = max(wide, key=lambda r: max(abs(_ci_of(r)[0]), abs(_ci_of(r)[1])))
        why = f"{worst.key} {_ci(worst.ci)} straddles +/-{margin:g}"
    return UseDecision(decision=CORRECTED, margin=margin, interval=main.ci, n=n,
                       labels_needed=need, measure=main.key,
                       reason=f"{why}; use the corrected rate" +
                       (f"; about {need} more labels settle it" if need else ""))


def _rank(fam: list[CardRow], margin: float, items: int, informed: str,
          rate: UseDecision) -> UseDecision:
    """The spread of per-system leniency: the largest difference between two systems'
    leniencies (a bound over the family's simultaneous intervals)."""
    per = [r for r in fam if "[" in r.key]
    if len(per) < 2:
        # one comparison (two answers of a pair, or one system): ranking moves with the
        # overall bias alone, so the rate's decision is the ranking's
        return rate.model_copy(update={"reason": rate.reason + " (no systems to rank "
                                       "apart: the overall interval decides)"})
    cis = [_claim_ci(r) for r in per]
    hi = max(c[1] for c in cis) - min(c[0] for c in cis)
    lo = max(0.0, max(c[0] for c in cis) - min(c[1] for c in cis))
    est = max(r.estimate or 0.0 for r in per) - min(r.estimate or 0.0 for r in per)
    n = fam[0].n  # the labelled items (a pair of two models counts once)
    interval = [lo, hi]
    if lo > margin:
        return UseDecision(decision=DISTRUST, margin=margin, interval=interval, n=n,
                           labels_needed=0, measure="leniency spread",
                           reason=f"systems' leniencies differ by at least {lo:.3f} "
                           f"(spread {est:.3f}, interval [{lo:.3f}, {hi:.3f}]), beyond "
                           f"{margin:g}")
    if hi <= margin and informed == "above":
        return UseDecision(decision=TRUST, margin=margin, interval=interval, n=n,
                           labels_needed=0, measure="leniency spread",
                           reason=f"systems' leniencies differ by at most {hi:.3f} "
                           f"(interval [{lo:.3f}, {hi:.3f}]), inside {margin:g}")
    half = (hi - lo) / 2
    # per-system intervals shrink with each system's labels: scale from the narrowest
    least = min(r.n for r in per)
    need = 0 if half <= 0 else min(_more(least, [0.0, 2 * half], abs(margin - est),
                                         items - n) * len(per), max(0, items - n))
    return UseDecision(decision=CORRECTED, margin=margin, interval=interval, n=n,
                       labels_needed=need, measure="leniency spread",
                       reason=f"the spread of systems' leniencies [{lo:.3f}, {hi:.3f}] "
                       f"straddles {margin:g}; rank by the corrected differences" +
                       (f"; about {need} more labels settle it" if need else ""))


def _items(acc: CardRow, target: float, items: int, informed: str) -> UseDecision:
    """Accuracy against people at or above the target, with a guarantee."""
    ci = acc.ci or [0.0, 1.0]
    est = acc.estimate or 0.0
    if informed == "no better" or ci[1] < target:
        why = ("its accuracy is shown no better than an uninformed judge's "
               f"({acc.baseline:.3f})" if informed == "no better" and acc.baseline is not None
               else f"accuracy {est:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] lies below the target "
               f"{target:g}")
        return UseDecision(decision=DISTRUST, margin=target, interval=ci, n=acc.n,
                           labels_needed=0, measure=acc.key, reason=why + "; escalate its "
                           "items to people, or calibrate a threshold (judgekit choose "
                           "--selective)")
    if ci[0] >= target and informed == "above":
        return UseDecision(decision=TRUST, margin=target, interval=ci, n=acc.n,
                           labels_needed=0, measure=acc.key,
                           reason=f"accuracy {est:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] is at "
                           f"least {target:g} ({acc.n} labelled)")
    need = _more(acc.n, ci, abs(est - target), items - acc.n)
    return UseDecision(decision=CORRECTED, margin=target, interval=ci, n=acc.n,
                       labels_needed=need, measure=acc.key,
                       reason=f"accuracy {est:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] is not shown "
                       f"at least {target:g}; check its items with people" +
                       (f"; about {need} more labels settle it" if need else ""))


def _preferences(rows: list[CardRow], margin: float) -> CardRow | None:
    """A position or length preference shown wholly beyond the margin (by its size)."""
    for r in rows:
        base = r.key.split("[")[0]
        if base in ("position_bias", "length_preference") and r.ci and r.ci[0] is not None \
                and (r.ci[0] > margin or r.ci[1] < -margin):
            return r
    return None


def _nothing(items: int, audit: CardRow | None, margin: float) -> UseDecision:
    if audit is not None:
        d = audit.decision.split(":")[0].strip()
        decision: Decision = TRUST if d == TRUST else DISTRUST if d == DISTRUST else CORRECTED
        pilot = 0 if decision == TRUST else min(PILOT_LABELS, items)
        return UseDecision(decision=decision, margin=margin, interval=audit.ci,  # type: ignore[arg-type]
                           n=audit.n, labels_needed=pilot, measure=audit.key,
                           reason=f"no human labels; the No-Data audit says {audit.decision}")
    pilot = min(PILOT_LABELS, items)
    return UseDecision(decision=DISTRUST, margin=margin, interval=None, n=0,
                       labels_needed=pilot, measure=None,
                       reason=f"nothing measured against people; label {pilot} random "
                       "items to check it")


def decide(rows: list[CardRow], items: int, margin: float = DEFAULT_MARGIN,
           target: float = DEFAULT_TARGET) -> dict[str, UseDecision]:
    """The decisions of one judge's rows (``rate``, ``rank``, ``items``); ``items``
    caps the labels any of them asks for."""
    informed, acc = _uninformed(rows)
    fam = _family(rows, "leniency") or _family(rows, "win_rate_bias")
    audit = next((r for r in rows if r.key == "audit_success"), None)
    out: dict[str, UseDecision] = {}
    if fam:
        rate = _rate(fam, margin, items, informed)
        out["rate"], out["rank"] = rate, _rank(fam, margin, items, informed, rate)
    else:
        out["rate"] = out["rank"] = _nothing(items, audit, margin)
    # what counts against rates and rankings whatever leniency says: a position or
    # length preference shown beyond the margin, and a judge shown no better than
    # uninformed
    pref = _preferences(rows, margin)
    against = (f"{pref.key} {_ci(pref.ci)} lies beyond +/-{margin:g}" if pref is not None
               else "its accuracy is shown no better than an uninformed judge's"
               if informed == "no better" else None)
    for use in ("rate", "rank"):
        if against is not None and (out[use].decision != DISTRUST or
                                    out[use].measure is None):  # (nothing else measured)
            out[use] = out[use].model_copy(update={"decision": DISTRUST, "labels_needed": 0,
                                                   "reason": against})
    if acc is not None and acc.ci is not None:
        out["items"] = _items(acc, target, items, informed)
    else:
        out["items"] = _nothing(items, audit, target)
    return out
