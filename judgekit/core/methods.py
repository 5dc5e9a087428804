"""The method registry: every method (and sub-experiment) is one
:class:`~judgekit.core.spec.MethodSpec` exported by its package, listed here by where it
lives. Adding a method is its package plus one line in ``BUILTIN``; a third-party
package registers its specs under the ``judgekit.methods`` entry point group (the value
names a MethodSpec, or a list of them), or calls :func:`register` at import.

Everything that lists methods (config dispatch, ``judgekit schema``, ``prompts list``,
the results loader, compare, export, the judge card) reads this registry. Imports are
lazy: naming a method loads nothing; a spec is imported when it is first looked up.
"""

from __future__ import annotations

from typing import Any

from judgekit.core.errors import ConfigError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.registry import Registry, did_you_mean
from judgekit.core.results import SCHEMA_VERSION
from judgekit.core.spec import MethodSpec

__all__ = ["ENTRY_POINT_GROUP", "all_methods", "experiments", "find", "names", "register",
           "stages", "METHODS"]

ENTRY_POINT_GROUP = "judgekit.methods"


# The default experiment of a method comes first among its entries; the key is the
# spec's ``key`` (METHOD or METHOD/EXPERIMENT).
BUILTIN = (
    ("vbscore", "judgekit.methods.vbscore.spec:SPEC"),
    ("nodata/synthetic", "judgekit.methods.nodata.spec:SYNTHETIC"),
    ("nodata/llm", "judgekit.methods.nodata.spec:AUDIT"),
    ("probe", "judgekit.methods.probe.spec:SPEC"),
    ("ondemand/simulation", "judgekit.methods.ondemand.spec:SIMULATION"),
    ("ondemand/label", "judgekit.methods.ondemand.spec:LABEL"),
    ("verdicts", "judgekit.methods.verdicts.spec:SPEC"),
)

METHODS: Registry[MethodSpec[Any, Any]] = Registry("method", kind=MethodSpec,
                                                   group=ENTRY_POINT_GROUP)
for _key, _where in BUILTIN:
    METHODS.add_lazy(_key, _where)


def register(spec: MethodSpec[Any, Any], *, replace: bool = False
             ) -> MethodSpec[Any, Any]:
    """Register ``spec`` (a method of your own package); returns it. A key already
    registered (a built-in's included) raises RegistryCollision unless ``replace``."""
    if not isinstance(spec, MethodSpec):
        raise ConfigError(f"register() takes a judgekit.MethodSpec, not {type(spec).__name__}")
    return METHODS.add(spec.key, spec, replace=replace)


def _split(key: str) -> tuple[str, str | None]:
    name, _, experiment = key.partition("/")
    return name, experiment or None


def _load(key: tuple[str, str | None]) -> MethodSpec[Any, Any]:
    name, experiment = key
    spec = METHODS.get(name if experiment is None else f"{name}/{experiment}")
    if (spec.name, spec.experiment) != key:
        raise ConfigError(f"{key} is registered with the MethodSpec of "
                          f"{(spec.name, spec.experiment)}")
    return spec


def _keys() -> list[tuple[str, str | None]]:
    return [_split(k) for k in METHODS.names()]


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
    if (name, experiment) in keys:
        return _load((name, experiment))
    mine = [k for k in keys if k[0] == name]
    if experiment is None and mine:
        specs = [_load(k) for k in mine]
        return next((s for s in specs if s.default), specs[0])
    if mine:
        known = ", ".join(sorted(str(e) for _, e in mine))
        raise ConfigError(f"method {name}: experiment {experiment!r} is not one of {known}")
    raise ConfigError(f"method {name!r} is not one of {', '.join(names())}"
                      f"{did_you_mean(name, names())}")


def stages() -> dict[str, str]:
    """Packaged template -> the method stage that renders it."""
    out: dict[str, str] = {}
    for m in all_methods():
        for template, what in m.templates.items():
            out.setdefault(template, f"{m.name}: {what}")
    return out


def json_schema(name: str, experiment: str | None = None) -> JSONObject:
    """The JSON schema of a method's results file: the shared fields and the payload's,
    side by side at the top level (as the file holds them)."""
    spec = find(name, experiment)
    base = spec.result_model().model_json_schema()
    body = spec.payload.model_json_schema()
    props = {k: v for k, v in base["properties"].items() if k != "payload"}
    props.update(body["properties"])
    return {"title": f"{spec.key} results (schema {SCHEMA_VERSION})", "type": "object",
            "properties": props, "additionalProperties": False,
            "required": sorted(set(base.get("required", [])) | set(body.get("required", []))),
            "$defs": {**base.get("$defs", {}), **body.get("$defs", {})}}
