"""The layering of docs/design.md ("Layers and import rules"), checked on the source files.

* No import cycle between the project's modules (every import counts, also those inside functions).
* Each package imports only the packages the design allows below it.
* The reactor runtime is a standalone library: every module of `reactor_backend` imports, and a small
  program runs under every executor, with `scenarios`, `harness`, `ray_backend` and `backends`
  unimportable; the tests in `tests/reactor` import nothing of the benchmark.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("reactor_backend", "scenarios", "ray_backend", "backends", "harness")
#: package -> project packages it may import (docs/design.md, "Layers and import rules")
ALLOWED: dict[str, set[str]] = {
    "reactor_backend": set(),
    "scenarios": set(),
    "ray_backend": {"scenarios"},
    "backends": {"scenarios", "reactor_backend", "ray_backend"},
    "harness": {"scenarios", "reactor_backend", "ray_backend", "backends"},
}
#: the report reads result files only
REPORT_ALLOWED = {"harness.results", "harness.resume", "harness.archive",  # file formats: the columns, the reused-job marker, the compact run
                  "harness.labels"}  # the rows' backend label (and the preset it came from)
NOT_RUNTIME = ("scenarios", "harness", "ray_backend", "backends")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    """Every Python and Cython source module of the project's packages."""
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*")):
            if path.suffix in (".py", ".pyx") and "__pycache__" not in path.parts:
                mods[_module_name(path)] = path
    return mods


def _pyx_as_python(text: str) -> str:
    """The Python-level import lines of a .pyx file (cimports and C declarations are not imports)."""
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if (s.startswith("import ") or (s.startswith("from ") and " cimport " not in s)) and s.endswith(
                tuple("abcdefghijklmnopqrstuvwxyz_0123456789)")):
            lines.append(s)
    return "\n".join(lines)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that ``name`` imports (the longest known module each import names); a ``.pyx``
    file's imports include those of the ``.pxi`` files it includes (one compiled module)."""
    text = path.read_text()
    if path.suffix == ".pyx":
        text += "".join("\n" + (path.parent / inc).read_text()
                        for inc in re.findall(r'^include "([^"]+)"', text, re.M))
    tree = ast.parse(_pyx_as_python(text) if path.suffix == ".pyx" else text)
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = source_modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of modules, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if state.get(child) == 1:
                    return path[path.index(child):] + [child]
                if not state.get(child):
                    state[child] = 1
                    path.append(child)
                    stack.append((child, iter(sorted(graph.get(child, ())))))
                    break
            else:
                state[node] = 2
                path.pop()
                stack.pop()
    return None


def test_graph_sees_imports():
    """The walker finds known edges (so an empty graph cannot pass the tests below)."""
    graph = import_graph()
    assert "reactor_backend.processes" in graph["reactor_backend.runtime"]
    assert "reactor_backend._sync" in graph["reactor_backend.processes"]
    assert "reactor_backend.errors" in graph["reactor_backend._core"]
    assert "reactor_backend.modes" in graph["reactor_backend._core"]  # in a function of an included .pxi
    assert "backends.base" in graph["backends.reactor"]
    assert "backends" in graph["harness.child"]  # an import inside a function counts


def test_find_cycle_reports_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None


def test_packages_import_only_lower_layers():
    bad = []
    for mod, deps in import_graph().items():
        pkg = mod.split(".")[0]
        for dep in deps:
            dep_pkg = dep.split(".")[0]
            if dep_pkg == pkg:
                if mod.startswith("harness.report") and not dep.startswith("harness.report") \
                        and dep not in REPORT_ALLOWED:
                    bad.append(f"{mod} -> {dep}")
                continue
            if mod.startswith("harness.report") or dep_pkg not in ALLOWED[pkg]:
                bad.append(f"{mod} -> {dep}")
    assert not bad, "imports against docs/design.md's layers: " + ", ".join(sorted(bad))


def test_runtime_tests_import_only_the_runtime():
    bad = []
    for path in sorted((REPO / "tests" / "reactor").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            bad += [f"{path.name}: {n}" for n in names if n.split(".")[0] in NOT_RUNTIME + ("tests",)]
    assert not bad, bad


#: names of backends' mechanisms (how a backend moves values, places roles, splits a gather): a scenario
#: describes its work (docs/design.md, "Backend contract") and names none of them
BACKEND_MECHANISMS = re.compile(r"\blend|\blent\b|\blender\b|output_source|output_array|copy_arrays|"
                                r"split_gather|SplitGather|\bplacement|\bPort\b|process_of_worker|"
                                r"shared_slots|RoleReactor|ServerReactor")


def mechanism_names(text: str) -> list[str]:
    """The backend mechanism names (`BACKEND_MECHANISMS`) that ``text`` contains."""
    return sorted({m.group(0) for m in BACKEND_MECHANISMS.finditer(text)})


def test_scenarios_name_no_backend_mechanism():
    """Scenarios declare facts about their work (`scenarios.base.WorkFacts`); which mechanism a backend builds
    on them (lending a port's buffer, placing roles, splitting a gather) is the backend's, named in backends/."""
    bad = []
    for path in sorted((REPO / "scenarios").rglob("*")):
        if path.suffix in (".py", ".pyx", ".pxi") and "__pycache__" not in path.parts:
            bad += [f"{path.relative_to(REPO)}: {name}" for name in mechanism_names(path.read_text())]
    assert not bad, "scenarios/ names a backend's mechanism: " + ", ".join(bad)


def test_mechanism_names_are_found():
    """The check above can fail: each kind of name is found in a line a scenario must not hold."""
    assert mechanism_names("self.role.output_source = self.out.lend") == ["lend", "output_source"]
    assert mechanism_names("a backend that lends its buffer; Port.lend; the placement") == [
        "Port", "lend", "placement"]
    assert mechanism_names("a blended split of the gather, drawn with replacement") == []


BLOCKER = """
import importlib.abc, pkgutil, sys
BLOCKED = %r

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the reactor runtime must not need it")
        return None

sys.meta_path.insert(0, Block())
import reactor_backend
for info in pkgutil.walk_packages(reactor_backend.__path__, "reactor_backend."):
    __import__(info.name)
for name in BLOCKED:
    assert name not in sys.modules, name
"""


def _blocked_python(code: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", BLOCKER % (NOT_RUNTIME,) + code, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_runtime_modules_import_without_the_benchmark():
    out = _blocked_python("print('imported', len(sys.modules))", timeout=120)
    assert out.returncode == 0, out.stderr
    assert "imported" in out.stdout


def test_blocker_blocks():
    """The same blocker makes an import of a blocked package fail (so the checks above can fail)."""
    out = _blocked_python("import scenarios", timeout=120)
    assert out.returncode != 0 and "blocked" in out.stderr


#: a small program of the runtime's main parts (a bank, a broadcast, a multiport gather, a logical action with
#: a delay, numpy arrays and tuples crossing processes), run under every executor with the benchmark blocked
TINY_PROGRAM = """
import os
import numpy as np
from reactor_backend import Input, LogicalAction, Output, Reactor, reaction, run, startup, usec

class Member(Reactor):
    inp = Input()
    out = Output()

    @reaction(inp, effects=[out])
    def work(self):
        self.out.set((self.inp.value * (self.bank_index + 1), os.getpid()))

class Hub(Reactor):
    back = Input(width=4)
    out = Output()
    go = LogicalAction()

    def __init__(self):
        super().__init__()
        self.round, self.log, self.pids = 0, [], set()

    @reaction(startup, go, effects=[out])
    def send(self):
        self.out.set(np.arange(3) + self.round)

    @reaction(back, effects=[go])
    def gather(self):
        self.log.append([p.value[0].tolist() for p in self.back])
        self.pids.update(p.value[1] for p in self.back)
        self.round += 1
        if self.round < 3:
            self.go.schedule(usec(10))

class Main(Reactor):
    def __init__(self):
        super().__init__()
        self.hub = Hub()
        self.members = self.bank(Member, 4)
        self.connect(self.hub.out, self.members.inp, broadcast=True)
        self.connect(self.members.out, self.hub.back)

for name, workers in (("inline", 1), ("threads", 2), ("processes", 2), ("processes", 3)):
    m = Main()
    run(m, executor=name, workers=workers)
    print("ran", name, workers, len(m.hub.pids), m.hub.log)
"""


def test_a_program_runs_under_every_executor_without_the_benchmark():
    """The runtime needs none of the benchmark's packages at run time either: a small program runs under every
    executor with them unimportable (what it imports lazily, in worker processes too) and gives one answer.
    With the static checks above (every import statement of reactor_backend, every import of tests/reactor)
    this replaces rerunning the runtime's suite with the packages blocked."""
    out = _blocked_python(TINY_PROGRAM, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    expected = [[[(i + r) * (k + 1) for i in range(3)] for k in range(4)] for r in range(3)]
    ran = [line.split(" ", 4)[1:] for line in out.stdout.splitlines() if line.startswith("ran ")]
    assert [(name, workers) for name, workers, _, _ in ran] == [
        ("inline", "1"), ("threads", "2"), ("processes", "2"), ("processes", "3")]
    for name, workers, pids, log in ran:
        assert log == repr(expected), (name, workers)
        assert int(pids) == (int(workers) if name == "processes" else 1), (name, workers)  # members ran there


def test_every_backend_module_declares_itself_and_has_a_preset():
    """Adding a backend: one module in backends/ declaring NAME, SCHEMA and BACKEND, and a preset in
    conf/backend/ (docs/design.md, "Backend contract"); this names whichever is missing or wrong."""
    import re

    from backends import backend_module, backend_names, declaration_problems
    from backends.base import Backend

    names = backend_names()
    assert names == sorted(p.stem for p in (REPO / "backends").glob("*.py")
                           if p.stem not in ("__init__", "base") and not p.stem.startswith("_"))
    assert {"serial", "vector", "reactor", "ray", "ale_vector", "capacity"} <= set(names)
    for name in names:
        module = backend_module(name)
        assert declaration_problems(module, name) == [], name
        assert isinstance(module.BACKEND, type) and issubclass(module.BACKEND, Backend), name
    presets = {re.search(r"- (\w+)_schema", p.read_text()).group(1) for p in (REPO / "conf" / "backend").glob("*.yaml")}
    assert presets == set(names), f"a backend without a preset or a preset without a backend: {presets ^ set(names)}"


def test_a_wrong_declaration_is_named():
    """The registry's check can fail: a module with a mismatched NAME and no BACKEND is refused by name."""
    import types
    from dataclasses import dataclass

    from backends import declaration_problems
    from backends.base import BackendConfig

    @dataclass
    class Schema(BackendConfig):
        name: str = "other"

    module = types.SimpleNamespace(NAME="other", SCHEMA=Schema)
    problems = declaration_problems(module, "toy")
    assert any("NAME must be 'toy'" in p for p in problems)
    assert any("SCHEMA's name must default to 'toy'" in p for p in problems)
    assert any("BACKEND must be" in p for p in problems)
