"""Locate the data shipped with judgekit: prompts/, rubrics/, experiments/.

In a wheel they live in ``judgekit/_data``; in a source checkout they are at the
project root. Both are searched so editable and regular installs behave alike.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent.parent


def resource_dir(name: str) -> Path:
    """Return the directory holding shipped resources ``name`` (e.g. "prompts")."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"judgekit resource folder {name!r} not found; reinstall judgekit")


def resolve_resource(path: str | Path, kind: str) -> Path:
    """Resolve ``path`` as given, else relative to the shipped ``kind`` folder."""
    p = Path(path)
    if p.exists():
        return p
    shipped = resource_dir(kind) / p.name
    if shipped.exists():
        return shipped
    return p
