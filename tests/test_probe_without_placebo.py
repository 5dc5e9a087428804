"""A probe run with ``placebo: false`` never says "placebo": its noise floor is the
identical re-runs', and the headline, the report and the card say so."""

from __future__ import annotations

import json

import judgekit
from judgekit.analysis.card import build
from judgekit.report.document import to_markdown
from judgekit.runs.folder import report_doc


def test_no_placebo_wording_when_none_was_run(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Is {i} even?",
                                         "a": "yes", "b": "no", "correct": "a"}) + "\n"
                             for i in range(12)), encoding="utf-8")
    res = judgekit.run({"method": "probe", "data_path": str(pairs), "placebo": False,
                        "models": {"judge": "mock/auto"}}, out=tmp_path / "run")
    assert res.payload.noise_floor.source == "identical re-runs"
    assert "placebo" not in res.headline() and "re-run flip rate" in res.headline()
    md = to_markdown(report_doc(res))
    assert "placebo" not in md.lower() and "Consistency against identical re-runs" in md
    card = build([tmp_path / "run"])
    assert not any("placebo" in r.measure for r in card.rows)
