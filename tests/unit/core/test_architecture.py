"""Architecture rules of the tcocalc package, checked statically on its source (``ast``; nothing is imported).

Layers, lowest first; a module may import only from its own layer or a lower one:

    0 base          tcocalc.errors, units, _names, _data, _version, modes, scenario, display, workbook
    1 catalog       tcocalc.catalog.*     (every read of a data file)
    2 roofline      tcocalc.roofline.*
    2 logs          tcocalc.logs.*        (the pilot-run log readers, an input adapter over catalog.run_metrics)
    3 economics     tcocalc.economics.*
    4 rl            tcocalc.rl.*
    5 studies       tcocalc.sweeps, tcocalc.studies.*   (sizing, rl_validation, whatif, calibrate, ...)
    6 presentation  tcocalc.figures, reports, cli.*, __main__, app.*

``tcocalc/__init__.py`` is a lazy facade (``_EXPORTS`` resolved with importlib) and is not checked as an
importer; imported from inside the package it counts as the top layer, since it can hand out any name.
Imports under ``if TYPE_CHECKING:`` do not run and do not count for cycles or layers; they do count for the
private-name rule (a private name is private to its module whatever the import is for).
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import ROOT

PKG = ROOT / "tcocalc"
TOP = "tcocalc"

MAX_FUNCTION_LINES = 100
#: Places whose every module stays at or under this many lines (architecture-4.md §4.4 items 1-2: ``cli.py`` had
#: grown to 954 lines and became the ``cli/`` package, one module per subcommand; ``rl/flow.py`` had grown to 866
#: and became stage 1, ``rl/rates.py``, and one file per step model in ``rl/steps/``, as vidur keeps one replica
#: scheduler a file).
MAX_MODULE_LINES = 500
MODULE_SIZE_CHECKED = ("cli", "rl/steps", "rl/rates.py")
SUBPACKAGES = ("catalog", "roofline", "economics", "rl", "rl/sim", "rl/steps", "studies", "logs", "logs/formats",
               "cli")

# second component of the dotted module name -> layer
LAYERS: dict[str, int] = {
    "errors": 0,
    "units": 0,
    "_names": 0,
    "_data": 0,
    "modes": 0,
    "scenario": 0,
    "_version": 0,
    "display": 0,
    "workbook": 0,
    "catalog": 1,
    "roofline": 2,
    "logs": 2,
    "economics": 3,
    "rl": 4,
    "studies": 5,
    "sweeps": 5,
    "figures": 6,
    "reports": 6,
    "cli": 6,
    "__main__": 6,
    "app": 6,
}
FACADE_LAYER = max(LAYERS.values())


def fail_if(lines: list[str], header: str) -> None:
    """Fail with ``header`` and one finding a line (no assertion rewriting noise)."""
    if lines:
        pytest.fail(f"{header}\n" + "\n".join(lines), pytrace=False)


# ---------------------------------------------------------------- source model


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "tcocalc.catalog.models"; a package __init__ is "tcocalc.catalog"
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        """The package that relative imports in this module are relative to."""
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]

    def where(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(ROOT)}:{node.lineno}"


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    where: str


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" not in path.parts:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found[_module_name(path)] = Module(_module_name(path), path, tree)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_nodes(tree: ast.AST):
    """Every node at any depth (function bodies included), except the body of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def from_base(module: Module, node: ast.ImportFrom) -> str | None:
    """The absolute dotted module of a ``from X import ...`` (relative levels resolved)."""
    if node.level == 0:
        return node.module
    parts = module.package.split(".")
    if node.level - 1 >= len(parts):
        return None
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _is_ours(dotted: str | None) -> bool:
    return dotted is not None and (dotted == TOP or dotted.startswith(TOP + "."))


def imported_modules(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The tcocalc modules one import statement loads (names that resolve to no module are left out)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules()]
    base = from_base(module, node)
    found = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}"  # `from .pkg import name` loads pkg/name.py when there is one
        if submodule in modules():
            found.append(submodule)
        elif base in modules():
            found.append(base)
    return found


def edges() -> list[Edge]:
    """Every runtime import between two different tcocalc modules, at any depth."""
    found = []
    for module in modules().values():
        for node in runtime_nodes(module.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in imported_modules(module, node):
                    if target != module.name:
                        found.append(Edge(module.name, target, module.where(node)))
    return found


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for edge in edges():
        graph[edge.importer].add(edge.imported)
    return graph


# ---------------------------------------------------------------- cycles


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def shortest_cycle_through(start: str, graph: dict[str, set[str]], within: set[str]) -> list[str]:
    """A shortest path start -> ... -> start inside ``within`` (breadth first)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph.get(node, ()) & within):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return []


def _rotated(cycle: list[str]) -> tuple[str, ...]:
    """A cycle a -> b -> c -> a written from its smallest node, so rotations of one cycle compare equal."""
    ring = cycle[:-1]
    start = ring.index(min(ring))
    return (*ring[start:], *ring[:start], ring[start])


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles as chains a -> b -> a: in each strongly connected component, a shortest one through each member."""
    cycles: dict[tuple[str, ...], None] = {}
    for component in strongly_connected(graph):
        if len(component) > 1 or component[0] in graph.get(component[0], ()):
            for member in component:
                cycles[_rotated(shortest_cycle_through(member, graph, set(component)))] = None
    return [list(cycle) for cycle in cycles]


def test_cycle_finder_on_a_hand_made_graph():
    assert find_cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b", "a"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"a"}}) == [["a", "a"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert len(find_cycles({"a": {"b"}, "b": {"a"}, "x": {"y"}, "y": {"x"}})) == 2
    # two cycles sharing a node form one component; both are reported
    assert find_cycles({"a": {"b", "c"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"], ["a", "c", "a"]]


def test_no_import_cycle():
    graph = import_graph()
    where = {(e.importer, e.imported): e.where for e in edges()}
    lines = []
    for cycle in find_cycles(graph):
        hops = ", ".join(where[(a, b)] for a, b in pairwise(cycle))
        lines.append(f"  {' -> '.join(cycle)}   ({hops})")
    fail_if(lines, "import cycles (function-local imports included; file:line of each hop):")


# ---------------------------------------------------------------- layers


def layer_of(module: str) -> int | None:
    if module == TOP:
        return FACADE_LAYER
    return LAYERS.get(module.split(".")[1])


def test_layers_import_downward_only():
    upward = []
    for edge in edges():
        low, high = layer_of(edge.importer), layer_of(edge.imported)
        if edge.importer != TOP and low is not None and high is not None and high > low:
            upward.append(f"  {edge.importer} ({low}) -> {edge.imported} ({high}) at {edge.where}")
    unknown = [f"  {m}: needs a layer (add its top-level name to LAYERS)" for m in modules() if layer_of(m) is None]
    fail_if(sorted(unknown) + sorted(upward), "layer violations (a module may import only its own layer or lower):")


# ---------------------------------------------------------------- private names


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def module_aliases(module: Module) -> dict[str, str]:
    """Local name -> tcocalc module, for names bound to a module by an import anywhere in the file."""
    aliases = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules():
                    # `import tcocalc.x as y` is used as `y._z`; `import tcocalc.x` as `tcocalc.x._z`
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = from_base(module, node)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules():
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    return aliases


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def private_imports(module: Module) -> list[str]:
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and _is_ours(base := from_base(module, node)) and base != module.name:
            for alias in node.names:
                # a private *module* (`from . import _data`) is fine; a private name defined in one is not
                if is_private(alias.name) and f"{base}.{alias.name}" not in modules():
                    found.append(f"  {module.where(node)}: from {base} import {alias.name}")
    return found


def private_attributes(module: Module) -> list[str]:
    aliases = module_aliases(module)
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = _dotted(node.value)
            target = aliases.get(owner) if owner else None
            if target and target != module.name:
                found.append(f"  {module.where(node)}: {owner}.{node.attr}  ({owner} is {target})")
    return found


def test_no_private_name_imported_across_modules():
    found = []
    for module in modules().values():
        found += private_imports(module) + private_attributes(module)
    fail_if(sorted(found), "private names used from another tcocalc module (make them public or move them):")


# ---------------------------------------------------------------- function length


def functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method, nested ones included."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from functions(child, f"{name}.")
        else:
            yield from functions(child, prefix)


def test_no_function_longer_than_100_lines():
    too_long = []
    for module in modules().values():
        for name, node in functions(module.tree):
            length = node.end_lineno - node.lineno + 1  # from the `def` line, decorators excluded
            if length > MAX_FUNCTION_LINES:
                too_long.append((length, f"{module.path.relative_to(ROOT)}:{node.lineno}:{name}"))
    lines = [f"  {where}: {length} lines" for length, where in sorted(too_long, key=lambda t: (-t[0], t[1]))]
    fail_if(lines, f"functions longer than {MAX_FUNCTION_LINES} lines (longest first):")


# ---------------------------------------------------------------- module length


def long_modules(folder: Path, limit: int) -> list[str]:
    """``path: N lines`` for every ``*.py`` under ``folder`` (at any depth; or ``folder`` itself, a module) longer
    than ``limit`` lines."""
    found = []
    for path in [folder] if folder.is_file() else sorted(folder.rglob("*.py")):
        if "__pycache__" not in path.parts:
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > limit:
                found.append(f"  {path.relative_to(folder.parent if folder.is_dir() else folder.parents[1])}: "
                             f"{n} lines")
    return found


def test_module_length_finder_on_hand_made_files(tmp_path):
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "short.py").write_text("x = 1\n" * 3, encoding="utf-8")
    (folder / "long.py").write_text("x = 1\n" * 4, encoding="utf-8")
    assert long_modules(folder, 3) == ["  pkg/long.py: 4 lines"]
    assert long_modules(folder, 4) == []
    assert long_modules(folder / "long.py", 3) == ["  pkg/long.py: 4 lines"]


@pytest.mark.parametrize("folder", MODULE_SIZE_CHECKED)
def test_no_module_longer_than_500_lines(folder):
    """Every module of the checked folders holds at most MAX_MODULE_LINES lines (blank lines and comments
    included): a subcommand that outgrows it gets its own module."""
    assert (PKG / folder).exists(), f"tcocalc/{folder} is gone: update MODULE_SIZE_CHECKED"
    fail_if(long_modules(PKG / folder, MAX_MODULE_LINES),
            f"modules of tcocalc/{folder}/ longer than {MAX_MODULE_LINES} lines (split them):")


# ---------------------------------------------------------------- subpackage __init__ files


def _init_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(ROOT)
    problems = [] if ast.get_docstring(tree) else [f"  {where}: no module docstring"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and not (
            isinstance(node, ast.ImportFrom) and node.module == "__future__"
        ):
            problems.append(f"  {where}:{node.lineno}: import statement ({ast.unparse(node)})")
    return problems


def test_subpackage_inits_import_nothing():
    problems = [
        f"  tcocalc/{name}/__init__.py: missing" for name in SUBPACKAGES if not (PKG / name / "__init__.py").is_file()
    ]
    for path in sorted(PKG.rglob("__init__.py")):
        if path != PKG / "__init__.py" and "__pycache__" not in path.parts:
            problems += _init_problems(path)
    fail_if(problems, "subpackage __init__.py files must hold a docstring and no imports:")


# ---------------------------------------------------------------- values, not argument lists

MAX_PRIVATE_PARAMETERS = 8
"""No private function in ``roofline/`` or ``rl/`` takes more than this many parameters: settings travel as frozen
values (EngineConfig, Lengths, TrainingJob, ServingSetup, the Cluster with its calibrations), not as argument
lists; ``*args`` and ``**kwargs`` count as one each, so a dict or tuple of arguments narrows nothing."""


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def test_no_private_function_in_the_model_takes_more_than_8_parameters():
    wide = []
    for module in modules().values():
        if module.name.split(".")[1:2] not in (["roofline"], ["rl"]):
            continue
        for name, node in functions(module.tree):
            leaf = name.rsplit(".", 1)[-1]
            if is_private(leaf) and (n := _parameters(node)) > MAX_PRIVATE_PARAMETERS:
                wide.append(f"  {module.path.relative_to(ROOT)}:{node.lineno}:{name}: {n} parameters")
    fail_if(sorted(wide), f"private functions with more than {MAX_PRIVATE_PARAMETERS} parameters (pass a value):")


def _assigned_private_attributes(tree: ast.AST) -> list[ast.Attribute]:
    """``x._name = ...`` (also augmented and annotated assignments, and ``setattr(x, "_name", ...)``) anywhere."""
    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        found += [t for t in targets if isinstance(t, ast.Attribute) and is_private(t.attr)]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and is_private(node.args[1].value)):
            found.append(ast.Attribute(value=node.args[0], attr=node.args[1].value, lineno=node.lineno))
    return found


def test_no_private_name_is_assigned_from_outside_its_module():
    """A module's private names are its own: nothing assigns ``module._name`` from another file (the fit script
    used to install a trial calibration that way; it now passes a CalibrationSet). An object's own private
    attributes (``self._x``, ``object.__setattr__(self, "_x", ...)`` in a frozen value) are not module names."""
    found = []
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    sources = [(m.path, m.tree, module_aliases(m)) for m in modules().values()]
    for path in scripts:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update({(a.asname or a.name): a.name for a in node.names if _is_ours(a.name)})
            elif isinstance(node, ast.ImportFrom) and _is_ours(node.module):
                names.update({(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names})
        sources.append((path, tree, names))
    for path, tree, aliases in sources:
        for target in _assigned_private_attributes(tree):
            owner = _dotted(target.value)
            if owner in aliases or (owner or "").split(".")[0] == TOP:
                found.append(f"  {path.relative_to(ROOT)}:{target.lineno}: {owner}.{target.attr} = ...")
    fail_if(found, "private module names assigned from outside their module:")


# ---------------------------------------------------------------- the orchestration mode, interpreted once

_MODE_NAMES = {"colocated", "sync", "one_step_off", "async", "inflight", "periodic"}
MODE_HOMES = {"tcocalc.modes"}
"""Where a mode's name may be compared: its traits table. (The step-model table ``rl/steps/registry.py:STEP_MODELS``
is keyed by the name, a dict, not a comparison.)"""
DATA_READERS = {"tcocalc.catalog.rl_cases"}
"""Data-file readers check a file's ``mode`` column against the values the file may hold (a check of the data,
not an interpretation of a mode)."""


def _reads_a_mode(node: ast.expr) -> bool:
    """An expression that reads an orchestration mode: ``scn.orchestration.mode``, ``p.mode``, ``mode``,
    ``row["mode"]``, or names a collection of modes (``SYNC_MODES``)."""
    if isinstance(node, ast.Name):
        return node.id == "mode" or node.id == "SYNC_MODES"
    if isinstance(node, ast.Attribute):
        return node.attr == "mode" or node.attr == "SYNC_MODES"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "mode"
    return False


def _lists_modes(node: ast.expr) -> bool:
    """A tuple, list or set of two or more mode names (``("async", "inflight")``)."""
    return (isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) > 1
            and all(isinstance(e, ast.Constant) and e.value in _MODE_NAMES for e in node.elts))


def mode_comparisons(tree: ast.AST) -> list[ast.Compare]:
    """Comparisons (``==``, ``!=``, ``in``, ``not in``) of a mode with anything, or of anything with a list of
    modes; ``is None`` checks are not comparisons of a mode."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and not all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            sides = (node.left, *node.comparators)
            if any(_reads_a_mode(x) or _lists_modes(x) for x in sides):
                found.append(node)
    return found


def test_mode_finder_on_hand_made_code():
    found = mode_comparisons(ast.parse(
        'a = scn.orchestration.mode == "colocated"\nb = p.mode in ("async", "inflight")\nc = x in SYNC_MODES\n'
        'd = row["mode"] != "async"\ne = t.streaming and n == 3\nf = kind == "trainer"\ng = mode is None\n'
        'h = c["transport"] == "colocated"\ni = m in ("colocated", "sync")'))
    assert [n.lineno for n in found] == [1, 2, 3, 4, 9]


def test_the_mode_is_interpreted_in_one_place():
    """``mode ==`` and ``mode in`` appear only in tcocalc/modes.py (the traits table); every other stage reads
    ``MODES[mode]`` / ``scn.orchestration.traits``."""
    found = []
    for module in modules().values():
        if module.name in MODE_HOMES | DATA_READERS:
            continue
        found += [f"  {module.where(n)}: {ast.unparse(n)}" for n in mode_comparisons(module.tree)]
    fail_if(found, "the orchestration mode compared outside tcocalc/modes.py (read its traits instead):")


# ---------------------------------------------------------------- one typed result, one stage tail (issue 38)


def calls_to(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls of ``name`` (``name(...)`` or ``x.name(...)``) in ``tree``."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and ((isinstance(n.func, ast.Name) and n.func.id == name)
                 or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


def test_call_finder_on_hand_made_code():
    tree = ast.parse("a = f(1)\nb = m.f(2)\ndef f(x): return g(x)\nc = h.f\n")
    assert [n.lineno for n in calls_to(tree, "f")] == [1, 2]


def test_one_stage_tail():
    """Stages become metrics in one place (``rl/pipeline.py``: ``finish`` and ``reprice``): ``contract_metrics`` is
    called only there, and ``cluster_usd_per_hour`` nowhere else in ``rl/`` or ``sweeps.py``."""
    found = []
    for module in modules().values():
        if module.name == "tcocalc.rl.pipeline":
            continue
        found += [f"  {module.where(n)}: contract_metrics" for n in calls_to(module.tree, "contract_metrics")]
        if module.name.startswith("tcocalc.rl.") or module.name == "tcocalc.sweeps":
            found += [f"  {module.where(n)}: cluster_usd_per_hour"
                      for n in calls_to(module.tree, "cluster_usd_per_hour")]
    fail_if(found, "the stage tail outside tcocalc/rl/pipeline.py (call pipeline.finish or pipeline.reprice):")


def test_consumers_read_fields_not_details():
    """Inside tcocalc/ a report's results are read as fields (``report.diagnosis.warnings``,
    ``report.simulation.timeline``); ``details[`` and ``details.get(`` appear only in rl/results.py, where the
    compatibility property assembles the earlier mapping."""
    found = []
    for module in modules().values():
        if module.name == "tcocalc.rl.results":
            continue
        for i, line in enumerate(module.path.read_text(encoding="utf-8").splitlines(), start=1):
            if "details[" in line or "details.get(" in line:
                found.append(f"  {module.path.relative_to(ROOT)}:{i}: {line.strip()}")
    fail_if(found, "report.details read by key inside tcocalc/ (read the typed fields of tcocalc.rl.results):")


# ---------------------------------------------------------------- resolved once (issue 38 move 6)

#: Where a derived fact of the scenario may be derived: the framework settings and the pool prices are computed
#: once, by ``rl/cluster.py:resolve`` (``cluster.settings``, ``cluster.prices``); ``economics/tco.py`` defines
#: ``pool_pricing`` and prices a scenario given alone with it (``cost_lines`` without ``prices``). The app is a
#: user of the public API (``tc.pool_pricing``, a price field's default before anything is evaluated), not checked.
RESOLVED_ONCE = {"settings": {"tcocalc.rl.cluster"}, "pool_pricing": {"tcocalc.rl.cluster", "tcocalc.economics.tco"},
                 "pool_prices": {"tcocalc.rl.cluster", "tcocalc.economics.tco"}}


def test_settings_and_prices_are_derived_in_one_place():
    """``settings(`` and ``pool_pricing(`` are called only in rl/cluster.py (the latter also where it is defined,
    economics/tco.py); every stage and study reads ``cluster.settings``, ``cluster.prices`` or
    ``report.diagnosis.pricing``."""
    found = []
    for module in modules().values():
        if module.name.startswith("tcocalc.app"):
            continue
        for name, homes in RESOLVED_ONCE.items():
            if module.name not in homes:
                found += [f"  {module.where(n)}: {name}" for n in calls_to(module.tree, name)]
    fail_if(found, "a derived fact re-derived outside tcocalc/rl/cluster.py (read cluster.settings / cluster.prices):")


def _hardware_names(module: Module) -> set[str]:
    """The local names under which ``module`` imports the catalog's ``hardware`` look-up."""
    names = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and from_base(module, node) in ("tcocalc.catalog.accelerators",
                                                                           "tcocalc.catalog", TOP):
            names |= {a.asname or a.name for a in node.names if a.name in ("hardware", "hardware_entries")}
    return names


def name_lookups(module: Module) -> list[tuple[str, ast.Call]]:
    """(enclosing top-level function, call) of every call of the catalog's ``hardware`` in ``module`` (``tc.hardware``
    and imported aliases such as ``catalog_hardware`` included); ``""`` outside any function."""
    names = _hardware_names(module)
    found = []
    for top in module.tree.body:
        owner = top.name if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef) else ""
        for n in ast.walk(top):
            if isinstance(n, ast.Call) and ((isinstance(n.func, ast.Name) and n.func.id in names)
                                            or (isinstance(n.func, ast.Attribute) and n.func.attr == "hardware")):
                found.append((owner, n))
    return found


def _only_called_by(module: Module, function: str, caller: str) -> bool:
    """``function`` is private and every call of it in ``module`` is inside top-level function ``caller``."""
    if not function.startswith("_"):
        return False
    for top in module.tree.body:
        if calls_to(top, function) and not (isinstance(top, ast.FunctionDef) and top.name == caller):
            return False
    return True


def _made(tmp_path, name: str, src: str) -> Module:
    """A hand-made module ``name`` of source ``src`` (the finders' own tests)."""
    return Module(name, tmp_path / "made.py", ast.parse(src))


def test_name_lookup_finder_on_hand_made_code(tmp_path):
    src = ("from ..catalog.accelerators import hardware as hw\nimport tcocalc as tc\n"
           "def resolve(s):\n    return _acc(s), hw(s)\n"
           "def _acc(s):\n    return hw(s.name)\n"
           "def later(s):\n    return tc.hardware(s), _acc(s)\n")
    module = _made(tmp_path, "tcocalc.rl.made", src)
    assert [(owner, n.lineno) for owner, n in name_lookups(module)] == [("resolve", 4), ("_acc", 6), ("later", 8)]
    assert not _only_called_by(module, "_acc", "resolve") and not _only_called_by(module, "later", "resolve")
    fixed = _made(tmp_path, "tcocalc.rl.made", src.replace("tc.hardware(s), _acc(s)", "s"))
    assert _only_called_by(fixed, "_acc", "resolve")


def test_names_are_looked_up_once_in_rl():
    """Inside ``rl/`` the catalog's ``hardware(`` is called only by ``rl/cluster.py:resolve`` (directly or through a
    private helper only it calls): every stage reads the resolved ``cluster.trainer`` / ``cluster.generator``."""
    found = []
    for module in modules().values():
        if not module.name.startswith("tcocalc.rl."):
            continue
        for owner, call in name_lookups(module):
            ok = module.name == "tcocalc.rl.cluster" and (owner == "resolve"
                                                          or _only_called_by(module, owner, "resolve"))
            if not ok:
                found.append(f"  {module.where(call)}: {ast.unparse(call)} in {owner or 'module level'}")
    fail_if(found, "an accelerator looked up by name in rl/ outside resolve (read cluster.trainer / generator):")


#: Functions that take what ``resolve`` resolved (issue 38 move 6, "resolve once"), by module: the pools' prices on
#: the looked-up chips, the outside prices and the trust figure's regime on the cluster's accelerators, the roofline
#: input check on a resolved model and accelerator, and ``rl/solve.py:_assess`` (the evaluate path) that uses them.
TAKES_RESOLVED = {
    "tcocalc.economics.tco": ("pool_prices",),
    "tcocalc.economics.semianalysis": ("rental_usd_per_gpu_hour", "rental_cluster_usd_per_hour",
                                       "tinker_mix_usd_per_mtok"),
    "tcocalc.rl.report": ("outside_prices_on", "combine_phases_at"),
    "tcocalc.catalog.regimes": ("regime_on",),
    "tcocalc.roofline.forward": ("check_inputs",),
    "tcocalc.rl.solve": ("_assess",),
}
#: Look-ups by name: the catalog's, and the public functions that make one before calling the resolved form.
BY_NAME = ("hardware", "hardware_entries", "model", "catalog_model", "resolve_inputs", "pool_pricing",
           "default_cost_inputs", "ownership_usd_per_gpu_hour", "amortisation_text", "price_row",
           "semianalysis_usd_per_gpu_hour", "semianalysis_cluster_usd_per_hour", "semianalysis_tinker_usd_per_mtok",
           "outside_prices", "combine_phases", "tinker_usd_per_mtok", "semianalysis_metrics", "regime_of", "trust_of")

#: Functions of that reach that look up a data table's own names, not the scenario's, once (cached).
INDEXES_A_TABLE = {"_rental_by_chip"}  # economics/semianalysis.py: the rental table by catalog name


def _reach(module: Module, entry: str) -> list[ast.FunctionDef]:
    """``entry`` and every top-level function of ``module`` it calls, directly or through others."""
    defs = {n.name: n for n in module.tree.body if isinstance(n, ast.FunctionDef)}
    todo, seen = [entry], {}
    while todo:
        name = todo.pop()
        if name in defs and name not in seen:
            seen[name] = defs[name]
            todo += [c.func.id for c in ast.walk(defs[name])
                     if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    return list(seen.values())


def name_lookups_in_reach(module: Module, entry: str) -> list[str]:
    """``function: call`` of each look-up by name (:data:`BY_NAME`) that ``entry`` makes, itself or through the
    functions of its module that it calls."""
    return [f"{fn.name}: {ast.unparse(c)}" for fn in _reach(module, entry) if fn.name not in INDEXES_A_TABLE
            for name in BY_NAME for c in calls_to(fn, name)]


def test_reach_finder_on_hand_made_code(tmp_path):
    src = ("def priced(s, chips):\n    return _price(s, chips)\n"
           "def _price(s, chips):\n    return _canon(chips, s)\n"
           "def _canon(chips, s):\n    return chips[s]\n"
           "def by_name(s):\n    return priced(s, hardware(s))\n")
    module = _made(tmp_path, "tcocalc.economics.made", src)
    assert name_lookups_in_reach(module, "priced") == []
    assert name_lookups_in_reach(module, "by_name") == ["by_name: hardware(s)"]
    again = _made(tmp_path, "tcocalc.economics.made", src.replace("return chips[s]", "return hardware(s).name"))
    assert name_lookups_in_reach(again, "priced") == ["_canon: hardware(s)"]


def test_resolved_things_are_not_looked_up_again():
    """What ``resolve`` looked up is not looked up by name again on the evaluate path: the functions of
    :data:`TAKES_RESOLVED`, and every function of their module they call, make no look-up of :data:`BY_NAME`
    (the name-taking public forms look up, then call these)."""
    mods = modules()
    found = [f"  {mods[name].path.relative_to(PKG.parent)}: {hit}" for name, entries in TAKES_RESOLVED.items()
             for entry in entries for hit in name_lookups_in_reach(mods[name], entry)]
    missing = [f"  {name}.{entry}" for name, entries in TAKES_RESOLVED.items() for entry in entries
               if not _reach(mods[name], entry)]
    fail_if(missing, "a function named in TAKES_RESOLVED is gone (update the table):")
    fail_if(found, "a look-up by name where the resolved object is at hand (take it from the Cluster):")


# ---------------------------------------------------------------- helpers with their users (issue 38, the walk)

#: Functions defined in one module only: the trainer's layout search (the pinned layout, the rates of every count,
#: of a layout set) is roofline/training.py's, beside the training model it scores; rl/capacity.py asks it for
#: ``job_rates`` and ``layout_rates``. A second definition elsewhere would split the search between two files again.
DEFINED_ONLY_IN = {name: "tcocalc.roofline.training"
                   for name in ("pinned_layout", "job_rates", "layout_rates", "_count_rates", "_families",
                                "_any_layout_rate", "_score_counts", "clear_rate_caches")}

#: Calls made by one function of a module only: an instance's serving estimates and decode floor, the two ends of
#: its step line, are made by ``_generator_capacity`` and handed to ``_fit`` (which no longer serves twice); the
#: assessment names the trust figure's regime, prices the paid pools and carries a measured MFU to the chip once
#: (``_assess``), and hands the values on: rl/diagnosis.py derives none of them again.
CALLED_ONLY_BY = {("tcocalc.rl.capacity", "serve"): "_generator_capacity",
                  ("tcocalc.rl.capacity", "best_instance"): "_generator_capacity",
                  ("tcocalc.rl.capacity", "decode_floor_seconds"): "_generator_capacity",
                  ("tcocalc.rl.solve", "regime_on"): "_assess",
                  ("tcocalc.rl.solve", "pricing"): "_assess",
                  ("tcocalc.rl.solve", "carried_mfu_ratio"): "_assess"}
#: Calls made in these modules only (inside ``tcocalc/``): the layout candidates of a training job are the training
#: model's own; the carried MFU ratio is computed by the trainer's capacity and by the assessment, nowhere else.
CALLED_ONLY_IN = {"candidate_degrees": {"tcocalc.roofline.training"},
                  "carried_mfu_ratio": {"tcocalc.rl.capacity", "tcocalc.rl.solve"}}


def callers(tree: ast.AST, name: str) -> list[str]:
    """The functions of ``tree`` (qualified, as :func:`functions` names them; the innermost one holding the call)
    that call ``name``, once per call in the order of the source; ``<module>`` for a call outside every function."""
    inner = {}
    for qual, node in functions(tree):
        for call in calls_to(node, name):
            inner[id(call)] = qual  # nested functions come later in the walk, so the innermost one wins
    made = sorted(calls_to(tree, name), key=lambda call: (call.lineno, call.col_offset))
    return [inner.get(id(call), "<module>") for call in made]


def test_caller_finder_on_hand_made_code():
    tree = ast.parse("def a():\n    serve(1)\n    def b():\n        return x.serve(2)\n"
                     "class C:\n    def m(self):\n        serve(3)\nserve(4)\n")
    assert callers(tree, "serve") == ["a", "a.b", "C.m", "<module>"]
    assert callers(tree, "fit") == []


def test_each_computation_has_one_home():
    """The homes of :data:`DEFINED_ONLY_IN`, :data:`CALLED_ONLY_BY` and :data:`CALLED_ONLY_IN` hold: each name is
    defined in its module alone (and is defined there), each call is made by its one function (and is made), and
    each call is made only in its modules."""
    mods = modules()
    found = []
    for name, home in DEFINED_ONLY_IN.items():
        where = sorted(m.name for m in mods.values() for qual, _ in functions(m.tree) if qual == name)
        if where != [home]:
            found.append(f"  {name} defined in {where or 'no module'}, expected {home} alone")
    for (module, name), caller in CALLED_ONLY_BY.items():
        made = callers(mods[module].tree, name)
        if not made or set(made) != {caller}:
            found.append(f"  {module}: {name}( called by {made or 'nothing'}, expected {caller} alone")
    for name, homes in CALLED_ONLY_IN.items():
        found += [f"  {m.where(call)}: {name}" for m in mods.values() if m.name not in homes
                  for call in calls_to(m.tree, name)]
    fail_if(found, "a computation of the evaluate path made away from its home (see the tables above):")
