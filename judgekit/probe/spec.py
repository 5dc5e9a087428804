"""The probe as the registry sees it."""

from __future__ import annotations

from judgekit.probe import hooks
from judgekit.probe.config import ProbeConfig
from judgekit.probe.payload import ProbePayload
from judgekit.probe.report import draw, report
from judgekit.probe.runner import execute, headline
from judgekit.probe.views import probe_item
from judgekit.spec import MethodSpec

SPEC: MethodSpec[ProbeConfig, ProbePayload] = MethodSpec(
    name="probe", config=ProbeConfig, payload=ProbePayload, execute=execute, report=report,
    headline=headline, figures=draw, title="Probe", views={"items": probe_item},
    templates={"probe_pairwise.j2": "pairwise judge"}, rows=hooks.rows, judge=hooks.judge,
    card_rows=hooks.card_rows, compare=hooks.paired, plan=hooks.plan)
