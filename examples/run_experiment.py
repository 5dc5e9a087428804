"""Run an experiment config from Python and read its typed results.

Replays the committed demo cassette (no key, no network).

    python examples/run_experiment.py
"""

import tempfile

import judgekit

result = judgekit.run("demo", cassette_mode="none", out=tempfile.mkdtemp())
for d in result.datasets:
    print(f"{d.name}: VB {d.vb:.3f} {d.vb_ci}, ES {d.es:.3f} over {d.n_queries} queries")
for q in result.detail("queries"):
    print(f"  {q['query_id']}: ES {q['es']:.3f}, replicas agree: {q['replicas_agree']}")
