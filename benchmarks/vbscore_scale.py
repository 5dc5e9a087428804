"""`judgekit vbscore` on a generated JSONL of 20,000 queries x 5 replicas, against a
minimal numpy reference written here, in the same process.

Both sides do the same work: read and parse every JSON line; per replica, the
interpretation distribution (given probabilities), binary gains of the top-k tagged
outputs, ES and VB_alpha (Bernoulli variance) over the alpha grid; per query, means and
95% percentile-bootstrap intervals of ES and every VB_alpha with 10,000 resamples sharing
one set of resample indices across the query's statistics (the reference redraws them per
query; judgekit shares one count matrix per replica count, drawn from the seed); the
collection ES and every VB_alpha with one query-level bootstrap. judgekit additionally
validates every line (schema, probabilities summing to 1, duplicates), merges duplicate readings and
matches tags form-insensitively, computes the Student-t/Wilson query intervals and the
paired t test, and writes its JSON output. The reference skips all of that.

The last line is one JSON object: judgekit_s, reference_s, ratio, peak_mb (judgekit's
peak RSS, the command in a child process), agree (collection ES and VB equal to 1e-9),
queries, replicas.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _smoke import pick

QUERIES = pick(20_000, 200)  # --smoke: 200 queries, 400 resamples
REPLICAS = 5
ALPHAS = [0.0, 0.25, 0.5, 0.75, 1.0]
RESAMPLES = pick(10_000, 400)
K = 3


def generate(path: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for q in range(QUERIES):
            m = rng.randint(1, 4)
            raw = [rng.random() + 0.05 for _ in range(m)]
            tot = sum(raw)
            probs = [round(r / tot, 6) for r in raw]
            probs[-1] = round(1.0 - sum(probs[:-1]), 6)
            ids = [f"q{q}-reading{j}" for j in range(m)]
            for b in range(REPLICAS):
                tags = [rng.choice(ids + ["none"]) for _ in range(rng.randint(1, 4))]
                fh.write(json.dumps({
                    "query_id": f"q{q}", "replica": b,
                    "interpretations": [{"id": i, "prob": p} for i, p in zip(ids, probs)],
                    "outputs": [{"tag": t} for t in tags]}) + "\n")


def reference(path: Path, seed: int = 0) -> dict[str, float]:
    """The minimal numpy implementation: per query, one index set for all its stats."""
    alphas = np.array(ALPHAS)
    per: dict[str, list[np.ndarray]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            ids = [i["id"] for i in r["interpretations"]]
            pi = np.array([i["prob"] for i in r["interpretations"]])
            top = {o["tag"] for o in r["outputs"][:K]}
            g = np.array([1.0 if i in top else 0.0 for i in ids])
            es = float(pi @ g)
            vb = es - alphas * np.sqrt(max(0.0, es * (1 - es)))
            per.setdefault(r["query_id"], []).append(np.concatenate([[es], vb]))
    rng = np.random.default_rng(seed)
    q_es, q_vb = [], []
    for rows in per.values():
        x = np.array(rows).T  # (1 + alphas, B)
        b = x.shape[1]
        idx = rng.integers(0, b, size=(RESAMPLES, b))
        means = x[:, idx].mean(axis=2)
        np.quantile(means, [0.025, 0.975], axis=1)
        q_es.append(x[0].mean())
        q_vb.append(x[1:].mean(axis=1))
    es_c, vb_c = np.array(q_es), np.array(q_vb)
    coll = np.vstack([es_c, vb_c.T])  # ES and each VB_alpha, queries resampled together
    for _ in range(0, RESAMPLES, 200):
        boot = rng.integers(0, len(es_c), size=(200, len(es_c)))
        np.take(coll, boot, axis=1).mean(axis=2)
    return {"es": float(es_c.mean()), "vb": float(vb_c[:, ALPHAS.index(0.5)].mean())}


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="judgekit-vbscale-"))
    data = work / "tagged.jsonl"
    generate(data)
    t0 = time.perf_counter()
    ref = reference(data)
    ref_s = time.perf_counter() - t0
    # judgekit as users run it: the installed command, in a child process (its peak RSS)
    exe = shutil.which("judgekit") or str(Path(sys.executable).parent / "judgekit")
    args = [exe, "vbscore", str(data), "--k", str(K), "--seed", "0", "--resamples",
            str(RESAMPLES), "--out", str(work / "scores.json")]
    for a in ALPHAS:
        args += ["--alpha", str(a)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    jk_s = time.perf_counter() - t0
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    c = json.loads((work / "scores.json").read_text())["collection"]
    agree = abs(c["es"] - ref["es"]) < 1e-9 and abs(c["vb"]["0.5"] - ref["vb"]) < 1e-9
    figs = {"queries": QUERIES, "replicas": REPLICAS, "judgekit_s": round(jk_s, 2),
            "reference_s": round(ref_s, 2), "ratio": round(jk_s / ref_s, 3),
            "peak_mb": round(peak, 1), "agree": agree,
            "collection_es": c["es"], "reference_es": ref["es"]}
    print(f"judgekit {jk_s:.1f} s vs numpy reference {ref_s:.1f} s (ratio {jk_s / ref_s:.2f});"
          f" collection ES {c['es']:.6f} vs {ref['es']:.6f}; peak {peak:.0f} MB")
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
