"""Score tagged outputs with VB-Score from Python (no LLM calls).

    python examples/vbscore_records.py
"""

import json
from pathlib import Path

import judgekit.methods.vbscore

records = [json.loads(line) for line in
           (Path(__file__).parent / "tagged.jsonl").read_text().splitlines()]
result = judgekit.methods.vbscore.score(records, alphas=[0.5, 1.0], k=3, seed=0, resamples=2000)
c = result.collection  # typed: VB dictionaries are keyed by alpha, a number
print(f"{c.n_queries} queries: ES {c.es:.3f} {c.es_ci}, VB_0.5 {c.vb[0.5]:.3f} {c.vb_ci[0.5]}")
for q in result.queries:
    print(f"  {q.query_id:<10} ES {q.es:.3f}  VB_1 {q.vb[1.0]:+.3f}"
          f"  replicas agree: {q.replicas_agree}")
