"""Mutation testing of the numerical core: does the suite notice a wrong formula?

Usage: python benchmarks/mutation.py [FILES...] [--tests PATHS] [--workers N]
                                     [--timeout S] [--limit N] [--list]

Each mutant changes one thing in one file: an arithmetic operator (+ -, * /, ** *,
// /), a comparison (< <=, > >=, == !=, is / is not, in / not in), a boolean
operator (and or), a unary minus or ``not`` dropped, a number (n -> n + 1, 0.5 ->
1.5), True / False swapped, break / continue swapped. Strings and type annotations
are left alone.

How it runs (the project's own AST mutator: mutmut 3 and cosmic-ray copy or rewrite
the tree and re-run the whole suite per mutant, too slow on two cores):
1. The tests are run once under coverage with a per-test context, giving for every
   line the tests that reach it (lines no test reaches are reported as
   ``no_coverage``, and their mutants are not run).
2. One warm process imports judgekit, the reference libraries and the test modules.
   For each mutant it forks; the child executes the mutated module source into the
   live module, rebinds every reference other modules hold to the old functions and
   classes, and runs (pytest -x) only the tests that reach the mutated line. A
   failing test or a timeout kills the mutant.

The last line is one JSON object: killed, run, survived, no_coverage, timeouts,
score (killed / run), lines, uncovered_lines, per_file, and the surviving mutants
(file:line, what changed) are listed above it.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/coverage.py would shadow the coverage package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
CORE = ["judgekit/stats/agreement.py", "judgekit/stats/bootstrap.py",
        "judgekit/stats/ppi.py", "judgekit/stats/proportions.py", "judgekit/stats/tests.py",
        "judgekit/methods/vbscore/metric.py", "judgekit/methods/vbscore/distribution.py",
        "judgekit/methods/ondemand/estimators.py", "judgekit/methods/nodata/protocol.py",
        "judgekit/methods/probe/analysis.py"]

SWAP_BIN: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div,
                              ast.Div: ast.Mult, ast.FloorDiv: ast.Div, ast.Pow: ast.Mult,
                              ast.Mod: ast.FloorDiv}
SWAP_CMP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                              ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
                              ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
                              ast.NotIn: ast.In}
SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
          ast.Pow: "**", ast.Mod: "%", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
          ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not",
          ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or"}


@dataclass
class Mutant:
    file: str
    index: int  # the index-th mutation site of the file, in walk order
    line: int
    what: str
    cov_line: int = 0  # the line whose tests run it (a default value: its function's body)


def _annotation_ids(tree: ast.AST) -> set[int]:
    """ids of nodes inside annotations (never mutated)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anns.append(node.returns)
            a = node.args
            anns += [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                            *([a.vararg] if a.vararg else []),
                                            *([a.kwarg] if a.kwarg else [])]]
        elif isinstance(node, ast.AnnAssign):
            anns.append(node.annotation)
        for ann in anns:
            if ann is not None:
                out |= {id(n) for n in ast.walk(ann)}
    return out


def _default_lines(tree: ast.AST) -> dict[int, int]:
    """id of every node inside a default argument value -> the first executed line of
    its function's body (defaults run at import; the tests that call the function are
    the ones that see a changed default)."""
    out: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) else body[0]
            for d in [*node.args.defaults, *[k for k in node.args.kw_defaults if k]]:
                out.update({id(n): first.lineno for n in ast.walk(d)})
    return out


def _sites(tree: ast.AST) -> list[tuple[ast.AST, str, int]]:
    """(node, kind, line) of every mutation site, in a stable walk order; a node with
    several mutations (a comparison with two operators) appears once per mutation."""
    skip = _annotation_ids(tree)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef,
                                    ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr)
                  and isinstance(n.body[0].value, ast.Constant)}
    out: list[tuple[ast.AST, str, int]] = []
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in docstrings:
            continue
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in SWAP_BIN:
            out.append((node, "binop", line))
        elif isinstance(node, ast.Compare):
            out += [(node, f"cmp{i}", line) for i, op in enumerate(node.ops)
                    if type(op) in SWAP_CMP]
        elif isinstance(node, ast.BoolOp):
            out.append((node, "boolop", line))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            out.append((node, "unary", line))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            out.append((node, "const", line))
        elif isinstance(node, (ast.Break, ast.Continue)):
            out.append((node, "jump", line))
    return out


def _apply(node: ast.AST, kind: str) -> tuple[ast.AST, str]:
    """Mutate ``node`` in place (or return its replacement) and say what changed."""
    if kind == "binop":
        old = type(node.op)  # type: ignore[attr-defined]
        node.op = SWAP_BIN[old]()  # type: ignore[attr-defined]
        return node, f"{SYMBOL[old]} -> {SYMBOL[SWAP_BIN[old]]}"
    if kind.startswith("cmp"):
        i = int(kind[3:])
        old = type(node.ops[i])  # type: ignore[attr-defined]
        node.ops[i] = SWAP_CMP[old]()  # type: ignore[attr-defined]
        return node, f"{SYMBOL[old]} -> {SYMBOL[SWAP_CMP[old]]}"
    if kind == "boolop":
        old = type(node.op)  # type: ignore[attr-defined]
        node.op = ast.Or() if old is ast.And else ast.And()  # type: ignore[attr-defined]
        return node, f"{SYMBOL[old]} -> {'or' if old is ast.And else 'and'}"
    if kind == "unary":
        sym = "-" if isinstance(node.op, ast.USub) else "not "  # type: ignore[attr-defined]
        return node.operand, f"drop {sym.strip()}"  # type: ignore[attr-defined]
    if kind == "const":
        v = node.value  # type: ignore[attr-defined]
        new = (not v) if isinstance(v, bool) else v + 1
        return ast.Constant(new), f"{v!r} -> {new!r}"
    if kind == "jump":
        new = ast.Continue() if isinstance(node, ast.Break) else ast.Break()
        return new, f"{type(node).__name__.lower()} -> {type(new).__name__.lower()}"
    raise ValueError(kind)


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, new: ast.AST) -> None:
        self.target, self.new = target, new

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.new
        return super().generic_visit(node)


def mutants_of(file: str) -> list[Mutant]:
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
    defaults = _default_lines(tree)
    out = []
    for i, (node, kind, line) in enumerate(_sites(tree)):
        _, what = _apply(copy.deepcopy(node), kind)
        out.append(Mutant(file, i, line, what, defaults.get(id(node), line)))
    return out


def mutated_source(m: Mutant) -> ast.Module:
    tree = ast.parse((ROOT / m.file).read_text(encoding="utf-8"))
    node, kind, _ = _sites(tree)[m.index]
    new, _ = _apply(node, kind)
    if new is not node:
        tree = _Replace(node, new).visit(tree)
    return ast.fix_missing_locations(tree)


def module_name(file: str) -> str:
    return file[:-3].replace("/", ".")


# ---- coverage: which tests reach which line --------------------------------------------
def coverage_map(files: list[str], tests: list[str], workdir: Path
                 ) -> dict[str, dict[int, set[str]]]:
    data = workdir / ".coverage"
    rc = workdir / "coveragerc"
    rc.write_text("[run]\ndynamic_context = test_function\n"
                  f"source = {ROOT / 'judgekit'}\n", encoding="utf-8")
    env = {**os.environ, "COVERAGE_FILE": str(data), "COVERAGE_RCFILE": str(rc)}
    subprocess.run([sys.executable, "-m", "coverage", "run", "-m", "pytest", "-q", "-x",
                    "-p", "no:cacheprovider", *tests], cwd=ROOT, env=env, check=False,
                   stdout=subprocess.DEVNULL)
    import coverage

    cov = coverage.Coverage(data_file=str(data))
    cov.load()
    db = cov.get_data()
    out: dict[str, dict[int, set[str]]] = {}
    for f in files:
        path = str(ROOT / f)
        ctx = db.contexts_by_lineno(path) if path in db.measured_files() else {}
        out[f] = {int(line): {c for c in cs if c} for line, cs in ctx.items()}
    return out


# ---- running mutants ----------------------------------------------------------------------
def _rebind(module: object, old: dict[str, object]) -> None:
    """Point every other module's reference to an old function or class of ``module`` at
    the new one (``from judgekit.stats.proportions import wilson_interval``)."""
    new = vars(module)
    swaps = {id(v): new[k] for k, v in old.items() if k in new and new[k] is not v
             and callable(v)}
    for mod in list(sys.modules.values()):
        if mod is None or mod is module:
            continue
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for k, v in list(d.items()):
            if id(v) in swaps:
                d[k] = swaps[id(v)]


def _child(m: Mutant, test_args: list[str]) -> int:
    import pytest

    mod = importlib.import_module(module_name(m.file))
    old = dict(vars(mod))
    code = compile(mutated_source(m), str(ROOT / m.file), "exec")
    try:
        exec(code, vars(mod))  # noqa: S102 - the mutant under test
    except Exception:  # noqa: BLE001 - a mutant that breaks the import is killed
        return 1
    _rebind(mod, old)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    return int(pytest.main(["-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly",
                            *test_args]))


def _selection(tests: set[str]) -> list[str]:
    """pytest node ids of the test functions named by coverage contexts
    (``tests.test_x.test_name`` or ``tests.test_x.Class.test_name``)."""
    ids = set()
    for t in tests:
        parts = t.split(".")
        mod_end = next((i for i, p in enumerate(parts) if p.startswith("test_")), None)
        if mod_end is None or mod_end == len(parts) - 1:
            continue
        ids.add("/".join(parts[: mod_end + 1]) + ".py::" + "::".join(parts[mod_end + 1:]))
    return sorted(ids)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help=f"default: {' '.join(CORE)}")
    ap.add_argument("--tests", nargs="*", default=["tests"],
                    help="test paths measured for coverage (default: tests)")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    ap.add_argument("--limit", type=int, default=None, help="run at most N mutants per file")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--smoke", action="store_true",
                    help="one core file, its pinned tests and three mutants, in seconds")
    args = ap.parse_args()
    if args.smoke:
        args.files = args.files or ["judgekit/stats/proportions.py"]
        args.tests = ["tests/test_numerics_pinned.py"]
        args.limit = args.limit or 3
    files = [str((ROOT / f).resolve().relative_to(ROOT)) for f in args.files] or \
        [f for f in CORE if (ROOT / f).exists()]
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    muts = {f: mutants_of(f) for f in files}
    if args.list:
        for f, ms in muts.items():
            for m in ms:
                print(f"{f}:{m.line}  {m.what}")
        print(json.dumps({"mutants": sum(len(v) for v in muts.values())}))
        return 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        cmap = coverage_map(files, args.tests, Path(tmp))
    print(f"coverage measured in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    # warm the parent: every import the children need is paid once
    import pytest  # noqa: F401

    for f in files:
        importlib.import_module(module_name(f))
    # and the test modules, so that no child pays their imports (pytest finds them in
    # sys.modules under the same names it would give them)
    for path in sorted({p for a in args.tests for p in ([Path(a)] if a.endswith(".py")
                                                         else Path(a).glob("test_*.py"))}):
        try:
            importlib.import_module(".".join(Path(path).with_suffix("").parts))
        except Exception as exc:  # noqa: BLE001 - pytest will report it in the child
            print(f"could not pre-import {path}: {exc}", file=sys.stderr)
    per_file: dict[str, dict[str, int]] = {}
    survivors: list[str] = []
    totals = {"killed": 0, "run": 0, "survived": 0, "no_coverage": 0, "timeouts": 0}
    lines_total = lines_uncovered = 0
    for f in files:
        ms = muts[f][: args.limit] if args.limit else muts[f]
        lines = {m.line for m in muts[f]}
        covered = {m.line for m in muts[f] if cmap[f].get(m.cov_line)}
        lines_total += len(lines)
        lines_uncovered += len(lines - covered)
        stats = {"killed": 0, "run": 0, "survived": 0, "no_coverage": 0, "timeouts": 0,
                 "lines": len(lines), "uncovered_lines": len(lines - covered)}
        pending = []
        for m in ms:
            tests = cmap[f].get(m.cov_line)
            if not tests:
                stats["no_coverage"] += 1
                survivors.append(f"NO TEST  {f}:{m.line}  {m.what}")
                continue
            pending.append((m, _selection(tests)))
        running: dict[int, tuple[Mutant, float]] = {}
        results: list[tuple[Mutant, str]] = []
        # simple worker pool over forks
        queue = list(pending)
        while queue or running:
            while queue and len(running) < args.workers:
                m, sel = queue.pop(0)
                pid = os.fork()
                if pid == 0:
                    try:
                        code = _child(m, sel)
                    except BaseException:  # noqa: BLE001
                        code = 1
                    os._exit(code)
                running[pid] = (m, time.monotonic() + args.timeout)
            for pid, (m, deadline) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    code = os.waitstatus_to_exitcode(status)
                    results.append((m, "survived" if code == 0 else "killed"))
                    del running[pid]
                elif time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    results.append((m, "timeout"))
                    del running[pid]
            select.select([], [], [], 0.01)
        for m, outcome in sorted(results, key=lambda r: r[0].index):
            stats["run"] += 1
            if outcome == "survived":
                stats["survived"] += 1
                survivors.append(f"SURVIVED {f}:{m.line}  {m.what}")
            else:
                stats["killed"] += 1
                stats["timeouts"] += outcome == "timeout"
        for k in totals:
            totals[k] += stats[k]
        per_file[f] = stats
        print(f"{f}: killed {stats['killed']}/{stats['run']}, no test reaches "
              f"{stats['no_coverage']} mutants ({stats['uncovered_lines']} of "
              f"{stats['lines']} lines)", file=sys.stderr, flush=True)
    for s in survivors:
        print(s)
    print(json.dumps({**totals, "score": round(totals["killed"] / totals["run"], 4)
                      if totals["run"] else None,
                      "lines": lines_total, "uncovered_lines": lines_uncovered,
                      "uncovered_line_share": round(lines_uncovered / lines_total, 4)
                      if lines_total else None,
                      "seconds": round(time.monotonic() - t0, 1), "per_file": per_file}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
