"""The numerical core against its pinned values (tests/numeric_cases.py): one test per
case, so a failure names the function family and the first value that moved."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from .numeric_cases import CASES, GOLDEN, compute

PINNED = json.loads(GOLDEN.read_text(encoding="utf-8"))


def _diff(got: Any, want: Any, path: str = "") -> str | None:
    """The first place where ``got`` differs from ``want`` (numbers to 1e-9 relative)."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return f"{path}: keys {sorted(got) if isinstance(got, dict) else got!r}"
        for k in want:
            d = _diff(got[k], want[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{path}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            d = _diff(g, w, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return None if got == want and type(got) is type(want) else f"{path}: {got!r} != {want!r}"
    if isinstance(want, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return f"{path}: {got!r} != {want!r}"
        if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return f"{path}: {got!r} != {want!r}"
    return None if got == want else f"{path}: {got!r} != {want!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_pinned_values(name):
    assert name in PINNED, f"{name} has no pinned values: python -m tests.numeric_cases --write"
    got = compute([name])[name]
    problem = _diff(got, PINNED[name], name)
    assert problem is None, problem


def test_every_case_is_pinned_and_every_pin_has_a_case():
    assert set(PINNED) == set(CASES)


def test_the_comparison_catches_a_moved_value():
    assert _diff({"a": [1.0, 2.0]}, {"a": [1.0, 2.0]}) is None
    assert _diff({"a": [1.0, 2.0 + 1e-6]}, {"a": [1.0, 2.0]}) == \
        "x.a[1]: 2.000001 != 2.0".replace("x", "", 1)
    assert _diff([True], [1]) is not None and _diff(["nan"], ["inf"]) is not None
    assert _diff({"a": 1}, {"b": 1}) is not None and _diff([1, 2], [1]) is not None
