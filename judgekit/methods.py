"""The method registry: every method (and sub-experiment) is one
:class:`~judgekit.spec.MethodSpec` exported by its package, listed here by where it
lives. Adding a method is its package plus one line in ``BUILTIN``; a third-party
package registers its specs under the ``judgekit.methods`` entry point group (the value
names a MethodSpec, or a list of them), or calls :func:`register` at import.

Everything that lists methods (config dispatch, ``judgekit schema``, ``prompts list``,
the results loader, compare, export, the judge card) reads this registry. Imports are
lazy: naming a method loads nothing; a spec is imported when it is first looked up.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, NamedTuple

from judgekit.errors import ConfigError
from judgekit.jsontypes import JSONObject
from judgekit.results import SCHEMA_VERSION
from judgekit.spec import MethodSpec

__all__ = ["ENTRY_POINT_GROUP", "all_methods", "experiments", "find", "names", "register",
           "stages"]

ENTRY_POINT_GROUP = "judgekit.methods"


class _Entry(NamedTuple):
    name: str
    experiment: str | None
    where: str  # module:attribute of the MethodSpec


# The default experiment of a method comes first among its entries.
BUILTIN = (
    _Entry("vbscore", None, "judgekit.vbscore.spec:SPEC"),
    _Entry("nodata", "synthetic", "judgekit.nodata.spec:SYNTHETIC"),
    _Entry("nodata", "llm", "judgekit.nodata.spec:AUDIT"),
    _Entry("probe", None, "judgekit.probe.spec:SPEC"),
    _Entry("ondemand", "simulation", "judgekit.ondemand.spec:SIMULATION"),
    _Entry("ondemand", "label", "judgekit.ondemand.spec:LABEL"),
    _Entry("verdicts", None, "judgekit.verdicts.spec:SPEC"),
)

_LOADED: dict[tuple[str, str | None], MethodSpec[Any, Any]] = {}
_INDEX: dict[tuple[str, str | None], str] = {(e.name, e.experiment): e.where for e in BUILTIN}
_PLUGINS_READ = False


def register(spec: MethodSpec[Any, Any]) -> MethodSpec[Any, Any]:
    """Register ``spec`` (a method of your own package); returns it."""
    if not isinstance(spec, MethodSpec):
        raise ConfigError(f"register() takes a judgekit.MethodSpec, not {type(spec).__name__}")
    _LOADED[(spec.name, spec.experiment)] = spec
    _INDEX.setdefault((spec.name, spec.experiment), "")
    return spec


def _plugins() -> None:
    """Read the entry points once: each names a MethodSpec or a list of them."""
    global _PLUGINS_READ
    if _PLUGINS_READ:
        return
    _PLUGINS_READ = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            got = ep.load()
        except Exception as exc:  # a broken plugin names itself, it does not hide others
            raise ConfigError(f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) "
                              f"cannot be loaded: {exc}") from exc
        for spec in got if isinstance(got, (list, tuple)) else [got]:
            register(spec)


def _load(key: tuple[str, str | None]) -> MethodSpec[Any, Any]:
    spec = _LOADED.get(key)
    if spec is None:
        module, _, attr = _INDEX[key].partition(":")
        spec = getattr(importlib.import_module(module), attr)
        if not isinstance(spec, MethodSpec) or (spec.name, spec.experiment) != key:
            raise ConfigError(f"{_INDEX[key]} is not the MethodSpec of {key}")
        _LOADED[key] = spec
    return spec


def _keys() -> list[tuple[str, str | None]]:
    _plugins()
    return list(_INDEX)


def all_methods() -> list[MethodSpec[Any, Any]]:
    """Every registered spec (imports them all)."""
    return [_load(k) for k in _keys()]


def names() -> list[str]:
    return sorted({name for name, _ in _keys()})


def experiments() -> list[str]:
    """Every registration as METHOD or METHOD/EXPERIMENT (what `judgekit schema` takes)."""
    return sorted(f"{n}/{e}" if e else n for n, e in _keys())


def find(name: str, experiment: str | None = None) -> MethodSpec[Any, Any]:
    """The spec of a method and sub-experiment (the method's default when the experiment
    is not given)."""
    keys = _keys()
    if (name, experiment) in _INDEX:
        return _load((name, experiment))
    mine = [k for k in keys if k[0] == name]
    if experiment is None and mine:
        specs = [_load(k) for k in mine]
        return next((s for s in specs if s.default), specs[0])
    if mine:
        known = ", ".join(sorted(str(e) for _, e in mine))
        raise ConfigError(f"method {name}: experiment {experiment!r} is not one of {known}")
    raise ConfigError(f"method {name!r} is not one of {', '.join(names())}")


def stages() -> dict[str, str]:
    """Packaged template -> the method stage that renders it."""
    out: dict[str, str] = {}
    for m in all_methods():
        for template, what in m.templates.items():
            out.setdefault(template, f"{m.name}: {what}")
    return out


def json_schema(name: str, experiment: str | None = None) -> JSONObject:
    """The JSON schema of a method's results.json: the shared fields and the payload's,
    side by side at the top level (as the file holds them)."""
    spec = find(name, experiment)
    base = spec.result_model().model_json_schema()
    body = spec.payload.model_json_schema()
    props = {k: v for k, v in base["properties"].items() if k != "payload"}
    props.update(body["properties"])
    return {"title": f"{spec.key} results.json (schema {SCHEMA_VERSION})", "type": "object",
            "properties": props, "additionalProperties": False,
            "required": sorted(set(base.get("required", [])) | set(body.get("required", []))),
            "$defs": {**base.get("$defs", {}), **body.get("$defs", {})}}
