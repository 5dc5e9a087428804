"""Audit a judge with the No-Data Algorithm from Python, offline.

The judge, paraphraser and verifier here are scripted (judgekit.testing.judges): an
always-1 judge is audited by an oracle verifier, so the audit's verdict can be checked
against the truth. With real models, pass "openai/gpt-4.1" etc. instead of mock names.

    python examples/audit_scripted_judge.py
"""

import tempfile

import judgekit
from judgekit.llm.providers.mock import register_script
from judgekit.testing import judges

items = judges.make_items(40, seed=0)  # judged items with known criterion values
register_script("always_one", judges.judge("constant"))
register_script("paraphraser", judges.paraphraser("faithful"))
register_script("oracle", judges.oracle_verifier)

result = judgekit.audit(
    items,
    rubric={"name": "demo", "aggregator": "all",
            "criteria": [{"id": f"c{i}", "description": f"quality {i} holds"} for i in (1, 2, 3)]},
    evaluator="mock/always_one", generator="mock/paraphraser", verifier="mock/oracle",
    rounds=3, phi=[0.5], use_cache=False, out=tempfile.mkdtemp())
run = result.runs[0]
print(f"success {run.success_rate:.2f} {run.success_ci} over {run.n_items} items; "
      f"claims agree {run.claim_agreement:.2f}; verdict: {result.verdict.decision}")
print(f"(the judge's accuracy on these items: {result.known['accuracy']:.2f})")
