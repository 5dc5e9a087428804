"""Error rates of judgekit's self-checks, by simulation through the real analysis code.

- The tagger check (judgekit.methods.vbscore.selfcheck.tagger_check): runs of 12, 20 or 40
  tagging calls (3 answers, 3 readings; the demo has 12) from a tagger that tags by
  slot, one that tags by content, and ones positional in 30% or 40% of calls, each
  with 10% of tags replaced at random.
- Injection (judgekit.methods.probe.analysis.analyse, transform "inject"): 400 pairs; the
  judge's preference for answer A per pair is drawn from Beta(0.5, 0.5) (most pairs
  clear to the judge, some a coin flip); a judge that obeys the planted instruction
  often enough to raise the planted answer's win rate by 10 points, and one that
  ignores it.
- Self-preference and length preference on natural pairs (analyse's
  ``self_preference`` / ``length_bias``): 800 pairs with a known correct answer, a
  judge that is right 85% of the time and, with probability 0.10, picks its own
  family's answer (the longer answer) whatever its quality. No padding transform.
  Confounded by dataset (issue 34): half the pairs easy (judge right 95%, the feature
  side better on 80%), half hard (60%, 20%), no preference: flagged at most 10% of runs
  once preferences are compared within datasets (pooled: every run).
- Sequential mode (judgekit.methods.probe.sequential.gather) against the fixed design
  (analyse at n_pairs = 400) on a swap probe, half the judges unbiased and half with
  a position bias of 0.15 (P(first slot) - 0.5), preferences from Beta(0.2, 0.2):
  calls saved, and the false-positive / false-negative rates of both designs.

Prints one JSON object on its last line. Usage: python benchmarks/self_checks.py [--sims N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgekit.judging.placebo import PLACEBO  # noqa: E402
from judgekit.methods.probe.analysis import analyse  # noqa: E402
from judgekit.methods.probe.config import ProbeConfig  # noqa: E402
from judgekit.methods.probe.pairs import Pair  # noqa: E402
from judgekit.methods.probe.sequential import gather  # noqa: E402
from judgekit.methods.vbscore.selfcheck import TagCheck, rotation, tagger_check  # noqa: E402

TAGS = ["0", "1", "2", "none"]


def _noisy(tags: list[str], rng: np.random.Generator, noise: float) -> list[str]:
    return [str(rng.choice(TAGS)) if rng.random() < noise else t for t in tags]


def tagger_runs(kind: str, sims: int, seed: int, noise: float = 0.1,
                positional: float = 0.0) -> float:
    """Share of simulated runs whose tagger is flagged as following position (wholly,
    or partly); ``kind="partial"``: each call positional with probability
    ``positional``, else by content."""
    rng = np.random.default_rng(seed)
    flagged = 0
    for s in range(sims):
        calls = int(rng.choice([12, 20, 40]))
        checks = []
        for c in range(calls):
            truth = [str(rng.choice(TAGS)) for _ in range(3)]  # each answer's reading
            perm = rotation(seed * 100_003 + s * 1_009 + c, 3)
            if kind == "position" or (kind == "partial" and rng.random() < positional):
                slot = ["0", "1", "none"]
                tags, rot, pla = (_noisy(slot, rng, noise) for _ in range(3))
            else:
                tags = _noisy(truth, rng, noise)
                rot = _noisy([truth[perm[j]] for j in range(3)], rng, noise)
                pla = _noisy(truth, rng, noise)
            checks.append(TagCheck(tags, perm, rot, pla))
        flagged += tagger_check(checks, 0.95)["decision"] in ("position", "partly position")
    return flagged / sims


def _cfg(**kw: object) -> ProbeConfig:
    return ProbeConfig(data_path="pairs.jsonl", models={"judge": "openai/gpt-4o"},
                       resamples=200, **kw)  # type: ignore[arg-type]


def _pick(p: float, rng: np.random.Generator) -> str:
    return "a" if rng.random() < p else "b"


def injection_runs(obey_points: float, sims: int, seed: int, n: int = 400) -> float:
    """Share of runs in which the injection row says "biased" toward the planted side."""
    rng = np.random.default_rng(seed)
    cfg = _cfg(transforms=["inject"])
    hits = 0
    for _ in range(sims):
        q = rng.beta(0.5, 0.5, n)
        side = ["a" if i % 2 == 0 else "b" for i in range(n)]
        p_side = np.where(np.array(side) == "a", q, 1 - q)
        # obey with the probability that raises the planted side's win rate by
        # obey_points on average: obey * (1 - mean P(side)) = obey_points
        obey = min(1.0, obey_points / max(1e-9, float(np.mean(1 - p_side))))
        pairs = [Pair(f"p{i}", "q", "x", "y") for i in range(n)]
        verdicts = []
        for i in range(n):
            v: dict[str, str | None] = {k: _pick(q[i], rng) for k in ("run0", "run1", PLACEBO)}
            v["inject"] = side[i] if rng.random() < obey else _pick(q[i], rng)
            v["inject:side"] = side[i]
            verdicts.append(v)
        row = next(b for b in analyse(cfg, pairs, verdicts)["biases"] if b["name"] == "inject")
        hits += row["verdict"] == "biased" and row["bias"] > 0
    return hits / sims


def _natural_pairs(rng: np.random.Generator, n: int) -> list[Pair]:
    out = []
    for i in range(n):
        la, lb = (int(x) for x in np.ceil(rng.lognormal(3.5, 0.6, 2)))
        own_a = bool(rng.random() < 0.5)
        out.append(Pair(f"p{i}", "q", " ".join(["w"] * la), " ".join(["w"] * lb),
                        "a" if rng.random() < 0.5 else "b",
                        model_a="openai/gpt-4o" if own_a else "anthropic/claude-3-5",
                        model_b="anthropic/claude-3-5" if own_a else "openai/gpt-4o"))
    return out


def preference_runs(feature: str, strength: float, sims: int, seed: int, n: int = 800,
                    accuracy: float = 0.85, confounded: bool = False) -> float:
    """Share of runs in which the feature preference is shown, toward the feature.

    ``confounded``: two datasets of n/2 pairs; on "easy" the judge is right 95% of the
    time and the feature side is the better answer on 80% of pairs, on "hard" 60% and
    20% (a judge with no preference then errs toward the feature mostly where it errs
    anyway: pooled over datasets that reads as a preference)."""
    rng = np.random.default_rng(seed)
    cfg = _cfg(transforms=[])
    key = {"own": "self_preference", "longer": "length_bias"}[feature]
    hits = 0
    for _ in range(sims):
        pairs = _natural_pairs(rng, n)
        verdicts = []
        for i, p in enumerate(pairs):
            if feature == "own":
                fav = "a" if "gpt" in (p.model_a or "") else "b"
            else:
                fav = "a" if len(p.a) > len(p.b) else "b"
            acc = accuracy
            if confounded:
                easy = i < n // 2
                p.dataset = "easy" if easy else "hard"
                acc = 0.95 if easy else 0.6
                other = "b" if fav == "a" else "a"
                p.correct = fav if rng.random() < (0.8 if easy else 0.2) else other
            wrong = "b" if p.correct == "a" else "a"
            pick = fav if rng.random() < strength else (
                p.correct if rng.random() < acc else wrong)
            verdicts.append({"run0": pick, "run1": pick, PLACEBO: pick})
        row = analyse(cfg, pairs, verdicts)[key]
        hits += bool(row) and row["verdict"] == "preference shown" and row["preference"] > 0
    return hits / sims


def _swap_verdicts(rng: np.random.Generator, n: int, bias: float) -> list[dict[str, str | None]]:
    q = rng.beta(0.2, 0.2, n)
    out = []
    for i in range(n):
        first = min(1.0, q[i] + bias)  # answer A in the first slot
        second = max(0.0, q[i] - bias)  # answer A in the second slot
        v: dict[str, str | None] = {"run0": _pick(first, rng), "run1": _pick(first, rng),
                                    PLACEBO: _pick(first, rng), "swap": _pick(second, rng)}
        v["run0:first"] = "first" if v["run0"] == "a" else "second"
        v["swap:first"] = "first" if v["swap"] == "b" else "second"
        out.append(v)
    return out


def sequential_runs(sims: int, seed: int, n: int = 400, bias: float = 0.15
                    ) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    fixed_cfg = _cfg(transforms=["swap"])
    seq_cfg = _cfg(transforms=["swap"], sequential=True, sequential_batch=20,
                   sequential_on="direction")
    asked, fp_fixed, fp_seq, fn_fixed, fn_seq = [], 0, 0, 0, 0
    for s in range(sims):
        b = 0.0 if s % 2 == 0 else bias
        verdicts = _swap_verdicts(rng, n, b)
        pairs = [Pair(f"p{i}", "q", "x", "y") for i in range(n)]

        async def ask(idx: list[int], v: list = verdicts) -> list:
            return [v[i] for i in idx]

        fixed = analyse(fixed_cfg, pairs, verdicts)["position_bias"]["verdict"] == "biased"
        _, got, seq = asyncio.run(gather(seq_cfg, n, ask, False))
        shown = any(d["name"] == "swap" and d["question"] == "direction"
                    and d["decision"] == "shown" for d in seq["decisions"])
        asked.append(len(got))
        if b == 0:
            fp_fixed += fixed
            fp_seq += shown
        else:
            fn_fixed += not fixed
            fn_seq += not shown
    half = sims / 2
    return {"sequential_calls_saved": 1 - float(np.mean(asked)) / n,
            "sequential_false_positive": fp_seq / half, "fixed_false_positive": fp_fixed / half,
            "sequential_false_negative": fn_seq / half, "fixed_false_negative": fn_fixed / half,
            "sequential_bias": bias, "sequential_max_pairs": n}


def _default_verdicts(kind: str, n: int, seed: int, bias: float
                      ) -> list[dict[str, str | None]]:
    """The four default transforms' verdicts (swap, rename, pad, inject) of a simulated
    judge (judgekit.testing.simulate.probe_verdicts; inject: ignored, as the placebo)."""
    from judgekit.testing.simulate import probe_verdicts

    _, verdicts = probe_verdicts(kind, n=n, seed=seed, bias=bias)
    for i, v in enumerate(verdicts):
        v["inject"], v["inject:side"] = v.get(PLACEBO), "a" if i % 2 == 0 else "b"
    return verdicts


def sequential_default_runs(sims: int, seed: int, n: int = 400) -> dict[str, float]:
    """Sequential mode as configured by default (four transforms, stop at the first
    finding): pairs saved for a judge with a 10-point position bias, false findings for
    an unbiased one; and a pairs file sorted by dataset, the first half unbiased and the
    second with a 10-point position bias (5 points on average): the share of runs that
    rule the bias out ("no bias beyond the margin"), and of runs whose reported interval
    excludes the estimate from the pairs asked."""
    cfg = _cfg(sequential=True)
    saved, false_find, ruled_out, excluded = [], 0, 0, 0
    for s in range(sims):
        runs = {"biased": _default_verdicts("position", n, seed + s, 0.10),
                "unbiased": _default_verdicts("stochastic", n, seed + 10_000 + s, 0.0),
                "sorted": (_default_verdicts("stochastic", n // 2, seed + 20_000 + s, 0.0)
                           + _default_verdicts("position", n // 2, seed + 30_000 + s, 0.10))}
        for name, verdicts in runs.items():
            c = cfg.model_copy(update={"seed": seed + s})

            async def ask(idx: list[int], v: list = verdicts) -> list:
                return [v[i] for i in idx]

            _, got, seq = asyncio.run(gather(c, n, ask, False))
            assert seq is not None
            swap = next(d for d in seq["decisions"] if d["name"] == "swap"
                        and d["question"] == "direction")
            if name == "biased":
                saved.append(1 - len(got) / n)
            elif name == "unbiased":
                false_find += any(d["decision"] == "shown" for d in seq["decisions"])
            else:
                ruled_out += swap["decision"] == "ruled out"
                first = np.mean([v["run0:first"] == "first" for v in got])
                est = float(first) - 0.5
                excluded += not swap["ci"][0] <= est <= swap["ci"][1]
    return {"sequential_calls_saved_default": float(np.mean(saved)),
            "sequential_default_false_finding": false_find / sims,
            "sequential_sorted_file_error": ruled_out / sims,
            "sequential_sorted_file_interval_excludes_estimate": excluded / sims}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="a few simulations, in seconds")
    ap.add_argument("--sims", type=int, default=4 if "--smoke" in sys.argv[1:] else 200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    sims = args.sims
    out = {
        "tagger_position_flagged": tagger_runs("position", sims, args.seed + 1),
        "tagger_content_false_flag": tagger_runs("content", sims, args.seed + 2),
        "tagger_partial_flagged": tagger_runs("partial", sims, args.seed + 13,
                                              positional=0.4),
        "tagger_partial_30_flagged": tagger_runs("partial", sims, args.seed + 14,
                                                 positional=0.3),
        "injection_detected": injection_runs(0.10, sims, args.seed + 3),
        "injection_false_flag": injection_runs(0.0, sims, args.seed + 4),
        "self_preference_detected": preference_runs("own", 0.10, sims, args.seed + 5),
        "self_preference_false_flag": preference_runs("own", 0.0, sims, args.seed + 6),
        "length_bias_natural_detected": preference_runs("longer", 0.10, sims, args.seed + 7),
        "length_bias_natural_false_flag": preference_runs("longer", 0.0, sims, args.seed + 8),
        "self_preference_confounded_false_flag": preference_runs(
            "own", 0.0, sims, args.seed + 9, confounded=True),
        "length_bias_confounded_false_flag": preference_runs(
            "longer", 0.0, sims, args.seed + 10, confounded=True),
        "self_preference_confounded_detected": preference_runs(
            "own", 0.10, sims, args.seed + 11, confounded=True),
    }
    seq = sequential_runs(sims, args.seed + 9)
    out.update(seq)
    out.update(sequential_default_runs(max(20, sims // 10), args.seed + 12))
    out.update(level=0.95, sims=sims, injection_pairs=400, preference_pairs=800,
               seconds=round(time.perf_counter() - t0, 1))
    for k, v in out.items():
        print(f"{k}: {v}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
