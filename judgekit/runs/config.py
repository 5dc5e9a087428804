"""Experiment configs: YAML validated by Pydantic, dotted-key overrides, dispatch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from judgekit.core.errors import ConfigError, DataError, describe_validation
from judgekit.core.jsontypes import JSONObject
from judgekit.core.settings import RunSettings
from judgekit.core.textio import decode, safe_yaml


def set_dotted(doc: JSONObject, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    cur = doc
    for p in parts[:-1]:
        nxt = cur.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"--set {dotted}: {p} is not a mapping")
        cur = nxt
    cur[parts[-1]] = value


def parse_assignment(text: str, flag: str) -> tuple[str, Any]:
    if "=" not in text:
        raise ConfigError(f"{flag} {text!r} must look like KEY=VALUE")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def find_config(path: str | Path) -> Path:
    """The config file: as given, or a packaged experiment by name (``demo``)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.parent == Path(".") and p.suffix in ("", ".yaml"):
        from judgekit.core.resources import resource_dir

        shipped = resource_dir("experiments") / f"{p.stem}.yaml"
        if shipped.exists():
            return shipped
    what = "is a folder, not a file" if p.is_dir() else "not found"
    raise ConfigError(f"config file {p} {what} (packaged experiments: "
                      f"{', '.join(packaged_experiments())})")


def packaged_experiments() -> list[str]:
    from judgekit.core.resources import resource_dir

    return sorted(f.stem for f in resource_dir("experiments").glob("*.yaml")
                  if f.stem != "demo_queries")


def load_raw(path: str | Path) -> JSONObject:
    p = find_config(path)
    try:
        doc = safe_yaml(decode(p.read_bytes(), f"config {p}"))
    except OSError as exc:
        raise ConfigError(f"config {p} cannot be read: {exc}") from exc
    except DataError as exc:
        raise ConfigError(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"config {p}: invalid YAML{where}: {problem}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"config {p}: the top level must be a mapping")
    doc.setdefault("name", p.stem)
    return resolve_paths(doc, p.resolve().parent)


# Config values that are file paths: relative ones resolve against the config file's
# folder, so a config runs the same from any working directory (and from the wheel).
_PATH_KEYS = ("data_path", "data_dir", "cassette", "prompts", "labels_file")
_RUBRIC_KEYS = ("rubric", "verifier_rubric", "rubric_paraphrase")


def resolve_paths(doc: JSONObject, base: Path) -> JSONObject:
    def fix(v: Any) -> Any:
        if isinstance(v, str) and v and not Path(v).is_absolute() and "://" not in v:
            return str(base / v)
        return v

    for k in _PATH_KEYS:
        if k in doc:
            doc[k] = fix(doc[k])
    for k in _RUBRIC_KEYS:  # a bare name may also mean a packaged rubric
        if isinstance(doc.get(k), str) and (base / doc[k]).exists():
            doc[k] = str(base / doc[k])
    for ds in doc.get("datasets") or []:
        if isinstance(ds, dict) and "path" in ds:
            ds["path"] = fix(ds["path"])
    for key in ("system_outputs", "dataset_paths"):
        if isinstance(doc.get(key), dict):
            doc[key] = {k: fix(v) for k, v in doc[key].items()}
    return doc


def validate(model: type[BaseModel], doc: JSONObject, source: str) -> Any:
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(f"config {source}: {describe_validation(exc)}") from exc


def resolve(path: str | Path, sets: list[str], models: list[str], overrides: JSONObject
            ) -> RunSettings:
    """Load, override and validate a config (its method's config model)."""
    return _finish(load_raw(path), str(path), sets, models, overrides)


def resolve_dict(doc: JSONObject, sets: list[str], models: list[str],
                 overrides: JSONObject) -> RunSettings:
    """As :func:`resolve` for a config given as a dict (paths relative to the cwd)."""
    import copy

    d = copy.deepcopy(doc)
    d.setdefault("name", "experiment")
    return _finish(d, "<dict>", sets, models, overrides)


def _finish(doc: JSONObject, path: str, sets: list[str], models: list[str],
            overrides: JSONObject) -> RunSettings:
    for s in sets:
        k, v = parse_assignment(s, "--set")
        set_dotted(doc, k, v)
    for m in models:
        if "=" not in m:
            known = ", ".join(sorted(doc.get("models") or {})) or "none"
            raise ConfigError(f"--model {m!r} must name a role: ROLE=provider/model, e.g. "
                              f"--model judge={m} (roles in this config: {known})")
        role, model = parse_assignment(m, "--model")
        doc.setdefault("models", {})
        if role not in doc["models"]:
            known = ", ".join(sorted(doc["models"])) or "none"
            raise ConfigError(f"--model {role}=...: unknown role {role!r} (roles: {known})")
        doc["models"][role] = str(model)
    doc.update({k: v for k, v in overrides.items() if v is not None})
    from judgekit import methods

    method = doc.get("method")
    if method not in methods.names():
        raise ConfigError(f"config {path}: field method: {method!r} is not one of "
                          f"{', '.join(methods.names())}")
    experiment = doc.get("experiment")
    try:
        spec = methods.find(str(method), experiment if isinstance(experiment, str) else None)
    except ConfigError as exc:
        raise ConfigError(f"config {path}: field experiment: {exc}") from None
    if experiment is not None and not isinstance(experiment, str):
        raise ConfigError(f"config {path}: field experiment: {experiment!r} is not a name")
    cfg = validate(spec.config, doc, str(path))
    known_providers(cfg.models, str(path))
    if not replayable(cfg):
        check_models(cfg.models, str(path), getattr(cfg, "base_urls", None))
    return cfg


def replayable(cfg: RunSettings) -> bool:
    """A run whose calls may all come from its cassette (the file exists and the mode
    replays): its providers' extras are checked only if a call misses the cassette (a
    packaged experiment replays on a core install)."""
    return bool(cfg.cassette and cfg.cassette_mode != "all" and Path(cfg.cassette).exists())


def known_providers(models: dict[str, str], source: str) -> None:
    """Every model names a registered provider (a did-you-mean for a near name)."""
    from judgekit.llm.providers import parse_model_string

    for role, model in models.items():
        try:
            parse_model_string(model)
        except ConfigError as exc:
            raise ConfigError(f"config {source}: field models.{role}: {exc}") from None


def check_models(models: dict[str, str], source: str, base_urls: dict[str, str] | None = None
                 ) -> None:
    """Every model's provider prerequisites (optional package and version), before any
    call: a missing extra is a usage error naming what to install."""
    from judgekit.core.errors import MissingDependencyError
    from judgekit.llm.providers import check_requirements, parse_model_string

    for role, model in models.items():
        try:
            check_requirements(model, (base_urls or {}).get(parse_model_string(model)[0]))
        except MissingDependencyError as exc:
            raise MissingDependencyError(f"config {source}: models.{role}: {exc}") from None


def out_dir(cfg: RunSettings) -> Path:
    return Path(cfg.out.format(name=cfg.name))
