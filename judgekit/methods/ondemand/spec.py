"""The on-demand method's two experiments, as the registry sees them."""

from __future__ import annotations

from pydantic import BaseModel

from judgekit.core.spec import MethodSpec, TableRow
from judgekit.methods.ondemand.config import LabelConfig, SimulationConfig
from judgekit.methods.ondemand.payload import LabelPayload, SimulationPayload
from judgekit.methods.ondemand.report import build_labelling, build_simulation, simulation_figures
from judgekit.methods.ondemand.runner import (
    execute_labelling,
    execute_simulation,
    headline_labelling,
    headline_simulation,
)


def _rows(estimates: dict[str, BaseModel]) -> list[TableRow]:
    """One row per estimator (simulation) or system (label)."""
    return [{"estimator": k, **v.model_dump(mode="json")} for k, v in estimates.items()]


SIMULATION: MethodSpec[SimulationConfig, SimulationPayload] = MethodSpec(
    name="ondemand", experiment="simulation", default=True,
    config=SimulationConfig, payload=SimulationPayload, execute=execute_simulation,
    report=build_simulation, headline=headline_simulation, figures=simulation_figures,
    title="On-demand estimators: simulation", uses_client=False,
    rows=lambda p: _rows(dict(p.estimators)))

LABEL: MethodSpec[LabelConfig, LabelPayload] = MethodSpec(
    name="ondemand", experiment="label",
    config=LabelConfig, payload=LabelPayload, execute=execute_labelling,
    report=build_labelling, headline=headline_labelling,
    title="On-demand precision from sampled labels",
    templates={"ondemand_judge.j2": "labelling judge"},
    rows=lambda p: _rows(dict(p.estimates)))
