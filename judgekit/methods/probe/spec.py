"""The probe as the registry sees it."""

from __future__ import annotations

from judgekit.core.spec import MethodSpec
from judgekit.methods.probe import hooks
from judgekit.methods.probe.config import ProbeConfig
from judgekit.methods.probe.payload import ProbePayload
from judgekit.methods.probe.report import draw, report
from judgekit.methods.probe.runner import execute, headline
from judgekit.methods.probe.views import probe_item

SPEC: MethodSpec[ProbeConfig, ProbePayload] = MethodSpec(
    name="probe", config=ProbeConfig, payload=ProbePayload, execute=execute, report=report,
    headline=headline, figures=draw, title="Probe", views={"items": probe_item},
    templates={"probe_pairwise.j2": "pairwise judge"}, rows=hooks.rows, judge=hooks.judge,
    items=hooks.items,
    card_rows=hooks.card_rows, compare=hooks.paired, plan=hooks.plan)
