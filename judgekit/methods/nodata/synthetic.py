"""Experiment 1: the synthetic bitstring study (Tables 2 and 6), liars' escape rates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from judgekit.core import seeds as streams
from judgekit.core.progress import track
from judgekit.methods.nodata.baselines import ensemble
from judgekit.methods.nodata.bitstrings import (
    LieF,
    LieGenerator,
    LieSigma,
    TreeEvaluator,
    features,
    ip_rubric,
    load_split,
    oop_rubric,
)
from judgekit.methods.nodata.config import NoDataConfig, SyntheticConfig
from judgekit.methods.nodata.payload import SyntheticPayload
from judgekit.methods.nodata.protocol import apply_flips, run_protocol, summarise

# Table 2 (DT) was produced at phi = 0.5 (the authors' notebook), where their
# keep-probability and the paper's flip-probability coincide; Table 6 (liars, IP
# successes) does not depend on phi. Lie 3 ran with p = 0.25 (their function's
# default; the notebook's "p = 0.1" label is wrong).
PAPER_PHI = 0.5
PAPER = {
    ("IP", "dt_decimal"): {"known_accuracy": 0.622, "accuracy": 0.622, "success_rate": 1.0,
                           "flip_rate": 0.0},
    ("OOP", "dt_decimal"): {"known_accuracy": 0.542, "accuracy": 0.528, "success_rate": 0.048,
                            "flip_rate": 0.464},
    ("IP", "lie_sigma"): {"success_rate": 0.170},
    ("IP", "lie_f"): {"success_rate": 0.006},
    ("IP", "lie_generator"): {"success_rate": 0.436},
}




def build_evaluators(cfg: NoDataConfig, train: list[tuple[str, int]]) -> dict[str, Any]:
    dec = TreeEvaluator(train, "decimal", 123)
    bits = TreeEvaluator(train, "bits", 123)
    noise = cfg.liar_label_noise
    return {"dt_decimal": dec, "dt_bits": bits, "lie_sigma": LieSigma(dec, noise),
            "lie_f": LieF(dec, noise), "lie_generator": LieGenerator(dec, noise,
                                                                     cfg.generator_lie_p)}


def execute(cfg: SyntheticConfig, client: Any = None) -> SyntheticPayload:
    """The synthetic study (no LLM call: ``client`` is unused)."""
    data_dir = Path(cfg.data_dir) if cfg.data_dir else None
    train, train_src = load_split(data_dir, "IP", "train", cfg.seed)
    evaluators = build_evaluators(cfg, train)
    runs, items, sources, baselines = [], [], {"IP train": train_src}, {}
    cells = [(pi, phen, ei, name) for pi, phen in enumerate(("IP", "OOP"))
             for ei, name in enumerate(cfg.evaluators)]
    tests: dict[str, tuple[list[str], list[int], Any]] = {}
    for pi, phen, ei, name in track(cells, "synthetic study", len(cells),
                                    "(phenomenon, evaluator) cells"):
        if phen not in tests:
            test, src = load_split(data_dir, phen, "test", cfg.seed)
            sources[f"{phen} test"] = src
            tests[phen] = ([s for s, _ in test], [y for _, y in test],
                           ip_rubric() if phen == "IP" else oop_rubric())
            baselines[phen] = _ensemble(train, tests[phen][0], tests[phen][1])
        xs, ys, verifier = tests[phen]
        seed = streams.integer("nodata.evaluator_run", cfg.seed, pi, ei)
        recs = run_protocol(xs, evaluators[name], verifier, rounds=cfg.rounds, seed=seed,
                            eps=cfg.eps)
        sweep = _sweep(cfg, xs, evaluators[name], verifier, pi, ei)
        for phi in cfg.phi:
            final = apply_flips(recs, phi, seed)
            s = summarise(final, ys, phi=phi, rounds=cfg.rounds, seed=seed)
            runs.append({"phenomenon": phen, "evaluator": name, "phi": phi,
                         "rounds": cfg.rounds, "n_items": s.n,
                         "success_rate": s.success_rate, "success_ci": s.success_ci,
                         "flip_rate": s.flip_rate, "flip_ci": s.flip_ci,
                         "accuracy": s.accuracy, "accuracy_ci": s.accuracy_ci,
                         "f1": s.f1, "f1_ci": s.f1_ci,
                         "known_accuracy": s.known_accuracy, "known_f1": s.known_f1,
                         # bitstring evaluators claim no breakdown: the paper's protocol
                         "claim_agreement": None,
                         "bound": s.bound, "seed_sweep": sweep,
                         "paper": PAPER.get((phen, name)) if phi == PAPER_PHI else None})
            items += [{"phenomenon": phen, "evaluator": name, "phi": phi, "x": x,
                       "true": y, "label": r.label, "success": r.success,
                       "failed_round": r.failed_round,
                       "failed_challenge": r.failed_challenge, "flipped": r.flipped,
                       "final_label": r.final_label, "x_primes": r.x_primes}
                      for x, y, r in zip(xs, ys, final)]
    escape = escape_rates(cfg, evaluators, data_dir)
    doc = {"data": sources, "phi_meaning": "flip with probability phi on failure (paper); "
            "the authors' code keeps the label with probability phi",
            "runs": runs, "escape": escape, "baselines": baselines, "items": items}
    return SyntheticPayload.model_validate(doc)


def headline(res: SyntheticPayload) -> str:
    ip = next((r for r in res.runs if r.phenomenon == "IP" and r.evaluator == "dt_decimal"),
              None)
    return f"IP dt_decimal success {ip.success_rate:.1%}" if ip else ""


def _sweep(cfg: NoDataConfig, xs: list[str], evaluator: Any, verifier: Any, pi: int,
           ei: int) -> dict[str, Any] | None:
    """Success rate over ``cfg.seeds`` protocol seeds: single-seed comparisons with a
    published number are seed luck (e.g. OOP 2.8 vs 4.8, expected 4.9)."""
    if cfg.seeds <= 1:
        return None
    rates = [float(np.mean([r.success for r in run_protocol(
        xs, evaluator, verifier, rounds=cfg.rounds,
        seed=streams.integer("nodata.evaluator_run", cfg.seed + k, pi, ei),
        eps=cfg.eps)])) for k in range(cfg.seeds)]
    return {"seeds": cfg.seeds, "mean": float(np.mean(rates)), "min": min(rates),
            "max": max(rates)}


def _ensemble(train: list[tuple[str, int]], xs: list[str], ys: list[int]) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression

    dec, bits = TreeEvaluator(train, "decimal", 123), TreeEvaluator(train, "bits", 123)
    lr = LogisticRegression(max_iter=1000).fit(features([s for s, _ in train], "bits"),
                                               [y for _, y in train])
    labels = {"dt_decimal": dec.predict(xs), "dt_bits": bits.predict(xs),
              "logreg_bits": [int(v) for v in lr.predict(features(xs, "bits"))]}
    return ensemble(labels, ys)


def escape_rates(cfg: NoDataConfig, evaluators: dict[str, Any], data_dir: Path | None
                 ) -> list[dict[str, Any]]:
    """How often each evaluator passes r rounds on IP data, next to (1/4)^r."""
    test, _ = load_split(data_dir, "IP", "test", cfg.seed)
    xs = [s for s, _ in test][: cfg.escape_items]
    out = []
    for ei, name in enumerate(cfg.evaluators):
        for r in cfg.escape_rounds:
            recs = run_protocol(xs, evaluators[name], ip_rubric(), rounds=r,
                                seed=streams.integer("nodata.escape", cfg.seed, ei))
            out.append({"evaluator": name, "rounds": r,
                        "pass_rate": float(np.mean([x.success for x in recs])),
                        "lemma_5_1": 0.25**r})
    return out
