"""The package's shape holds: no import cycle, no private name crossing modules, no
module over 450 lines, no Markdown built outside judgekit/report, a declared surface."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "judgekit"
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every judgekit import in ``path``, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("judgekit")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if not base.startswith("judgekit"):
                continue
            names = [a.name for a in node.names]
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in mods]
            found.append((base, [n for n in names if f"{base}.{n}" not in mods]))
            found += [(s, []) for s in subs]
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for target, _ in _imports(name, path, mods):
            while target not in mods and "." in target:
                target = target.rpartition(".")[0]
            if target in mods and target != name:
                graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            # a package's __init__ importing its own submodules is not a cycle
            if n == m.rpartition(".")[0] or m == n.rpartition(".")[0]:
                continue
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_import_graph_has_no_cycle():
    assert _cycle(_graph()) is None


def test_cycle_finder_finds_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_private_name_crosses_modules():
    mods = _modules()
    crossing = []
    for name, path in mods.items():
        for target, names in _imports(name, path, mods):
            crossing += [f"{name} imports {target}.{n}" for n in names
                         if n.startswith("_") and not n.startswith("__")]
    assert crossing == []


def test_no_module_over_the_line_budget():
    big = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in _modules().items()}
    assert {n: k for n, k in big.items() if k > MAX_LINES} == {}


@pytest.mark.parametrize("method", ["vbscore", "nodata", "probe", "ondemand"])
def test_methods_build_no_markdown(method):
    table = re.compile(r"\|\s*-{3,}\s*\||md_table")
    hits = [f"{p.name}:{i}" for p in (PKG / method).rglob("*.py")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if table.search(line)]
    assert hits == []


EXPORTS = {
    "judgekit": {"Call", "CassetteMissError", "Client", "ClientSettings", "ConfigError",
                 "DataError", "JudgekitError", "ProviderError", "RunResult", "Stage",
                 "StageResult", "StatsError", "__version__", "audit", "compare", "judge_card",
                 "load_results", "probe_judge", "run"},
}


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_exported_names(package):
    mod = importlib.import_module(package)
    assert set(mod.__all__) == EXPORTS[package]
    for name in mod.__all__:
        assert getattr(mod, name) is not None
