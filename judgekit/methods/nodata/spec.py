"""The No-Data experiments as the registry sees them."""

from __future__ import annotations

from judgekit.core.spec import MethodSpec
from judgekit.methods.nodata import hooks
from judgekit.methods.nodata.audit import execute as execute_audit
from judgekit.methods.nodata.audit import headline as headline_audit
from judgekit.methods.nodata.config import AuditConfig, SyntheticConfig
from judgekit.methods.nodata.payload import AuditPayload, SyntheticPayload
from judgekit.methods.nodata.report import (
    audit_draw,
    audit_report,
    synthetic_draw,
    synthetic_report,
)
from judgekit.methods.nodata.synthetic import execute as execute_synthetic
from judgekit.methods.nodata.synthetic import headline as headline_synthetic
from judgekit.methods.nodata.views import audit_item, synthetic_item

SYNTHETIC: MethodSpec[SyntheticConfig, SyntheticPayload] = MethodSpec(
    name="nodata", experiment="synthetic", default=True, config=SyntheticConfig,
    payload=SyntheticPayload, execute=execute_synthetic, report=synthetic_report,
    headline=headline_synthetic, figures=synthetic_draw,
    title="No-Data Algorithm: synthetic study", uses_client=False,
    views={"items": synthetic_item}, rows=hooks.rows)

AUDIT: MethodSpec[AuditConfig, AuditPayload] = MethodSpec(
    name="nodata", experiment="llm", config=AuditConfig, payload=AuditPayload,
    execute=execute_audit, report=audit_report, headline=headline_audit,
    figures=audit_draw, title="No-Data audit", views={"items": audit_item},
    templates={"nodata_evaluator.j2": "evaluator (all criteria)",
               "nodata_evaluator_one.j2": "evaluator (one criterion)",
               "nodata_generator.j2": "generator (paraphraser)",
               "nodata_verifier.j2": "verifier (all criteria)",
               "nodata_verifier_one.j2": "verifier (one criterion)"},
    rows=hooks.rows, judge=hooks.judge, items=hooks.items, card_rows=hooks.card_rows,
    compare=hooks.paired,
    plan=hooks.plan)
