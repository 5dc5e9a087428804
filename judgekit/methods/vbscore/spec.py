"""The VB-Score case study as the registry sees it."""

from __future__ import annotations

from typing import Any

from judgekit.core.results import RunResult
from judgekit.core.spec import MethodSpec, TableRow
from judgekit.methods.vbscore.compare import paired
from judgekit.methods.vbscore.config import VBScoreConfig
from judgekit.methods.vbscore.payload import VBScorePayload
from judgekit.methods.vbscore.report import draw, report
from judgekit.methods.vbscore.runner import execute, headline
from judgekit.methods.vbscore.views import vb_query


def _rows(p: VBScorePayload) -> list[TableRow]:
    """One row per dataset."""
    return [d.model_dump(mode="json") for d in p.datasets]


def _judge(result: RunResult[Any]) -> str | None:
    models = (result.config or {}).get("models")
    return models.get("system") if isinstance(models, dict) else None  # type: ignore[return-value]


SPEC: MethodSpec[VBScoreConfig, VBScorePayload] = MethodSpec(
    name="vbscore", config=VBScoreConfig, payload=VBScorePayload, execute=execute,
    report=report, headline=headline, figures=draw, title="VB-Score case study",
    views={"queries": vb_query},
    templates={"interpretations.j2": "interpretation generator",
               "system.j2": "system under test", "tagger.j2": "open-world entity tagger",
               "correctness.j2": "correctness judge"},
    rows=_rows, judge=_judge, compare=paired)
