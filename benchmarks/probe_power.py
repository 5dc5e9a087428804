"""Does the probe find a bias that is there, and only then? Scripted pairwise judges run
through the real runner (mock provider), plus a simulation of the corrected pass rate.

Pairs (200) hold a good and a bad answer, marked in their text so a scripted judge can
see which is which; the good one is first in half of them. Judges, each call drawing
its own randomness from (prompt, draw): ``biased`` is sure of the right answer half the
time and otherwise picks the first slot with probability 0.7; ``noisy`` picks the good
answer with probability 0.91 whatever its slot or length (identical re-runs then
disagree about 16% of the time).

PPI: 200 simulated draws of 2,000 items whose true pass rate is 0.62; a judge that errs
on 15% of items (more on failing ones) labels all of them; 150 random items get a human
label. The 90% prediction-powered interval of the pass rate is compared with the truth
(coverage) and with the human-only interval from the same 150 labels (width ratio).
The last line is one JSON object.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
from pathlib import Path

import numpy as np
from _smoke import pick

N_PAIRS = pick(200, 24)  # --smoke: two dozen pairs, a few simulation draws


def _u(*parts: object) -> float:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 2**32


def judge(kind: str):  # noqa: ANN201
    def answer(req):  # noqa: ANN001, ANN202
        user = req.messages[-1]["content"]
        labels = re.findall(r"^Answer (\w+):", user, re.MULTILINE)
        first_good = user.index("[good]") < user.index("[bad]")
        good, bad = (labels[0], labels[1]) if first_good else (labels[1], labels[0])
        u = _u(user, req.draw, kind)
        if kind == "biased":
            sure = _u(user, req.draw, "sure") < 0.5
            pick = good if sure else (labels[0] if u < 0.7 else labels[1])
        else:
            pick = good if u < 0.91 else bad
        return {"reason": "scripted", "winner": pick}
    return answer


def probe(work: Path, kind: str) -> dict:
    import judgekit
    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.providers.mock import FunctionProvider

    model = f"mock/probe_{kind}"
    with Client(ClientSettings(use_cache=False, progress=False, concurrency=32),
                providers={model: FunctionProvider(judge(kind))}) as client:
        res = judgekit.run({"method": "probe", "seed": 0, "repeats": 2,
                            "data_path": str(work / "pairs.jsonl"), "models": {"judge": model}},
                           client=client)
    return res.model_dump(mode="json")


def ppi_simulation(draws: int = 200, n_items: int = 2000, n_labels: int = 150,
                   truth: float = 0.62) -> tuple[float, float]:
    from judgekit.stats.agreement import ppi_mean

    rng = np.random.default_rng(2026)
    hits, ratios = 0, []
    for _ in range(draws):
        y = (rng.random(n_items) < truth).astype(float)
        err = np.where(y == 1, rng.random(n_items) < 0.08, rng.random(n_items) < 0.27)
        f = np.where(err, 1 - y, y)
        lab = rng.choice(n_items, n_labels, replace=False)
        c = ppi_mean(f, f[lab], y[lab], level=0.90)
        hits += c.ci[0] <= truth <= c.ci[1]
        ratios.append((c.ci[1] - c.ci[0]) / (c.human_only_ci[1] - c.human_only_ci[0]))
    return hits / draws, float(np.mean(ratios))


def main() -> None:
    t0 = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="judgekit-probe-"))
    with open(work / "pairs.jsonl", "w") as fh:
        for i in range(N_PAIRS):
            good, bad = f"Answer text {i} [good]", f"Other text {i} [bad]"
            first = i % 2 == 0
            fh.write(json.dumps({"id": f"p{i}", "question": f"Question {i}?",
                                 "a": good if first else bad, "b": bad if first else good,
                                 "correct": "a" if first else "b"}) + "\n")
    biased, noisy = probe(work, "biased"), probe(work, "noisy")
    pad = noisy["padding_bias"]
    cov, ratio = ppi_simulation(pick(200, 5))
    figs = {
        "biased_position_bias": biased["position_bias"]["bias"],
        "biased_position_ci": biased["position_bias"]["ci"],
        "unbiased_position_bias": noisy["position_bias"]["bias"],
        "unbiased_position_ci": noisy["position_bias"]["ci"],
        "unbiased_noise_floor": noisy["noise_floor"]["rate"],
        "padding_bias_excess": pad["bias"], "padding_ci": pad["ci"],
        "swap_excess_biased": next(t for t in biased["transforms"]
                                   if t["name"] == "swap")["excess"],
        "verdicts_noisy": {t["name"]: t["verdict"] for t in noisy["transforms"]},
        "verdicts_biased": {t["name"]: t["verdict"] for t in biased["transforms"]},
        "ppi_coverage": cov, "ppi_width_ratio": ratio, "pairs": N_PAIRS,
        "wall_s": round(time.perf_counter() - t0, 1)}
    print(f"biased judge position bias {figs['biased_position_bias']:+.3f} "
          f"{figs['biased_position_ci']}; unbiased {figs['unbiased_position_bias']:+.3f} "
          f"{figs['unbiased_position_ci']}; PPI coverage {cov:.3f}, width ratio {ratio:.2f}")
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
