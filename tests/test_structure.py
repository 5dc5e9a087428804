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
    assert (PKG / "methods" / method / "spec.py").is_file()
    hits = [f"{p.name}:{i}" for p in (PKG / "methods" / method).rglob("*.py")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if table.search(line)]
    assert hits == []


TOP_LEVEL = {"Call", "CassetteMissError", "Client", "ClientSettings", "ConfigError",
             "DataError", "JudgekitError", "MethodSpec", "ProviderError", "RunOptions",
             "RunResult", "Stage", "StageResult", "StatsError", "__version__", "audit",
             "compare", "judge_card", "load_results", "probe_judge", "run"}
PACKAGES = sorted(".".join(p.relative_to(PKG.parent).parent.parts)
                  for p in PKG.rglob("__init__.py"))
METHODS = ("vbscore", "nodata", "probe", "ondemand", "verdicts")


def test_top_level_surface():
    import judgekit

    assert set(judgekit.__all__) == TOP_LEVEL
    from judgekit import MethodSpec, RunOptions  # noqa: F401


@pytest.mark.parametrize("package", PACKAGES)
def test_exported_names(package):
    """Each public package's ``__all__`` is exactly what it defines (httpx's rule): no
    public name left out, none listed that is not there."""
    import inspect

    mod = importlib.import_module(package)
    assert hasattr(mod, "__all__"), f"{package} declares no __all__"
    # (a submodule imported by now shadows a lazily exported function of the same name,
    # judgekit.analysis.comparison: its name is still declared)
    defined = {n for n in dir(mod) if not n.startswith("_")
               and (n in mod.__all__ or not inspect.ismodule(getattr(mod, n, None)))}
    assert set(mod.__all__) - {"__version__"} == defined
    for name in mod.__all__:
        assert getattr(mod, name) is not None


def _string_edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Imports the registries make by string ("judgekit.x.y:NAME", "judgekit.x.y")."""
    found = re.compile(r"[\"'](judgekit(?:\.\w+)+)(?::\w+)?[\"']")
    out: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        # an entry point group's name ("judgekit.methods") names no module to import
        text = "\n".join(ln for ln in path.read_text(encoding="utf-8").splitlines()
                         if "ENTRY_POINT_GROUP =" not in ln and "group=" not in ln)
        for target in found.findall(text):
            # a module named exactly (a logger's "judgekit.batch" is not an import)
            if target in mods and target != name:
                out[name].add(target)
    return out


def test_no_cycle_with_the_registries_string_imports():
    graph = _graph()
    for name, targets in _string_edges(_modules()).items():
        graph[name] |= targets
    assert _cycle(graph) is None


def _method_of(module: str) -> str | None:
    """The method package a module belongs to (judgekit.methods.METHOD...)."""
    parts = module.split(".")
    return parts[2] if parts[1:2] == ["methods"] and len(parts) > 2 and \
        parts[2] in METHODS else None


def test_data_names_no_method_and_methods_import_no_other():
    graph = _graph()
    strings = _string_edges(_modules())
    assert _method_of("judgekit.methods.probe.pairs") == "probe"
    assert _method_of("judgekit.core.methods") is None
    bad = [f"{m} -> {t}" for m in graph for t in graph[m] | strings[m]
           if m.startswith("judgekit.data") and _method_of(t)]
    for method in METHODS:
        bad += [f"{m} -> {t}" for m in graph if _method_of(m) == method
                for t in graph[m] | strings[m]
                if _method_of(t) and _method_of(t) != method]
    assert bad == []


def test_only_the_registry_and_method_packages_name_a_method():
    """No line outside judgekit/core/methods.py and the method packages compares a value with
    a method name, and no config branches on its experiment."""
    names = "|".join(METHODS)
    compare = re.compile(rf"(==|!=|\bin\b)\s*\(?\s*[\"']({names})[\"']|[\"']({names})[\"']\s*"
                         rf"(==|!=|\bin\b)|[\"']({names})[\"']\s*:\s*_?\w+[,}}]")
    hits = []
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG)
        if (rel.parts[0] == "methods" and rel.parts[1] in METHODS) or \
                rel.as_posix() == "core/methods.py":
            continue
        hits += [f"{rel}:{i}" for i, line in enumerate(p.read_text(encoding="utf-8")
                                                       .splitlines(), 1)
                 if compare.search(line)]
    branches = [f"{p.relative_to(PKG)}" for p in PKG.rglob("config.py")
                if "self.experiment" in p.read_text(encoding="utf-8")]
    assert hits == [] and branches == []


def test_every_method_is_a_typed_spec():
    """Every registered method is a MethodSpec whose execute returns its payload model."""
    import typing

    from judgekit import MethodSpec
    from judgekit.core.methods import all_methods

    specs = all_methods()
    assert {s.key for s in specs} >= {"vbscore", "probe", "nodata/llm", "nodata/synthetic",
                                      "ondemand/simulation", "ondemand/label"}
    for spec in specs:
        assert isinstance(spec, MethodSpec)
        assert typing.get_type_hints(spec.execute)["return"] is spec.payload, spec.key
        assert spec.payload.model_config.get("extra") == "forbid"


FLOORS_NEVER = (("judgekit.core", None), ("judgekit.runs", "judgekit.labelling"),
                ("judgekit.methods", "judgekit.labelling"),
                ("judgekit.data", "judgekit.labelling"),
                ("judgekit.recorded", "judgekit.report"),
                ("judgekit.labelling", "judgekit.methods"))


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def floor_violations(mods: dict[str, Path]) -> list[str]:
    """Imports (at module level or inside functions, AST) that run against the floors:
    core imports nothing else of judgekit; runs, methods and data never import
    labelling; recorded never imports report; labelling never imports methods."""
    bad = []
    for name, path in mods.items():
        for target, names in _imports(name, path, mods):
            full = [target, *(f"{target}.{n}" for n in names)] if target == "judgekit" \
                else [target]
            for lower, never in FLOORS_NEVER:
                if not _inside(name, lower):
                    continue
                for t in full:
                    if t == "judgekit" and names:
                        continue
                    wrong = (not _inside(t, "judgekit.core")) if never is None \
                        else _inside(t, never)
                    if wrong:
                        bad.append(f"{name} imports {t}")
    return sorted(set(bad))


def test_the_floors_follow_the_pipeline():
    assert floor_violations(_modules()) == []


def test_the_floor_check_finds_an_import_inside_a_function(tmp_path):
    pkg = tmp_path / "judgekit"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from judgekit.llm import client\n")
    (pkg / "recorded").mkdir()
    (pkg / "recorded" / "__init__.py").write_text("")
    (pkg / "recorded" / "b.py").write_text("from ..report import csvsafe\n")
    mods = {"judgekit.core.a": pkg / "core" / "a.py",
            "judgekit.recorded.b": pkg / "recorded" / "b.py"}
    assert floor_violations(mods) == ["judgekit.core.a imports judgekit.llm",
                                      "judgekit.recorded.b imports judgekit.report"]


def string_key_reads(source: str) -> int:
    """``x["k"]`` loads and ``.get("k")`` calls with a string constant (AST)."""
    n = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            n += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get" and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            n += 1
    return n


def test_records_are_read_through_their_models():
    """The item record and the files labelling, the viewer and choose read are typed: the
    string-key reads left in those modules stay within the typed anchors' density."""
    assert string_key_reads('x["a"]; y.get("b"); z[k]; x["c"] = 1; w.get(k)') == 2
    paths = [p for p in PKG.rglob("*.py")
             if p.relative_to(PKG).parts[0] in ("labelling", "view")
             or any(w in p.stem for w in ("choice", "choose", "jury"))]
    assert len(paths) >= 10
    total = sum(string_key_reads(p.read_text(encoding="utf-8")) for p in paths)
    assert total <= 40, total
