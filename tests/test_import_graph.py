"""The import graph: no cycle among lostmid's modules or packages, counting imports
made inside functions (lazy imports are still dependencies), and layers that point one
way: each package imports only the packages below it."""

from __future__ import annotations

import ast
from pathlib import Path

import lostmid

ROOT = Path(lostmid.__file__).parent

# The layers, bottom first. A package may import its own modules and any package in a
# lower layer; packages in one layer do not import each other. The bottom layer is the
# shared machinery (errors, checks, statistics, run provenance, the stage store and
# backends, plotting helpers) that knows no capability.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "typing", "lazy", "recordable"),
    ("checks", "stats", "files", "attention_choice"),
    ("schemas",),
    ("runinfo", "records"),
    ("runs", "report"),
    ("theory",),
    ("models",),
    ("influence",),
    ("compare",),
    ("ablate",),
    ("train",),
    ("behaviour",),
    ("pretrained",),
    ("remedies",),
    ("reproduce",),
    ("capabilities", "listing"),
    ("sweep",),
    ("cli",),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str], *, inside_functions: bool = True) -> set[str]:
    """The lostmid modules ``path`` imports (``if TYPE_CHECKING`` blocks skipped; with
    ``inside_functions`` also the imports made inside function bodies)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if not inside_functions and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in modules:
                found.add(node.module)
            found.update({f"{node.module}.{a.name}" for a in node.names} & modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(*, inside_functions: bool = True) -> dict[str, set[str]]:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    return {
        name: imports(path, modules, inside_functions=inside_functions) - {name}
        for name, path in paths.items()
    }


def package_of(module: str) -> str:
    """``lostmid.compare.metrics`` -> ``compare``; ``lostmid.cli`` -> ``cli``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lostmid"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, by depth-first search, or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a package to one in the same or a higher layer."""
    rank = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
    bad = []
    for module, targets in sorted(graph.items()):
        src = package_of(module)
        for target in sorted(targets):
            dst = package_of(target)
            if src == dst or src == "lostmid" or dst == "lostmid":
                continue
            if rank[dst] >= rank[src]:
                bad.append(f"{module} -> {target}")
    return bad


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_lazy_imports_are_counted(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import x\n\ndef f():\n    from y import z\n")
    assert imports(source, {"x", "y.z"}) == {"x", "y.z"}
    assert imports(source, {"x", "y.z"}, inside_functions=False) == {"x"}


def test_the_layer_check_flags_an_upward_import() -> None:
    graph = {"lostmid.theory.exact": {"lostmid.models.load"}, "lostmid.models.load": set()}
    assert layer_violations(graph) == ["lostmid.theory.exact -> lostmid.models.load"]


def test_every_package_has_a_layer() -> None:
    packages = {package_of(m) for m in import_graph()} - {"lostmid"}
    assert packages <= {pkg for layer in LAYERS for pkg in layer}, packages


def test_no_import_cycle_in_lostmid() -> None:
    graph = import_graph()
    assert "lostmid.reproduce.run" in graph and graph["lostmid.reproduce.run"]  # it parsed
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_layers_point_one_way() -> None:
    assert layer_violations(import_graph()) == []


def defined_names(path: Path) -> set[str]:
    """Names a module defines itself at top level (functions, classes, assignments), or
    takes from outside lostmid (``lostmid.typing`` is the home of jaxtyping's names)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("lostmid"):
                names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def imports_through_other_modules(roots: list[Path]) -> list[str]:
    """Every ``from lostmid.X import name`` (in the package, its tests and benchmarks)
    whose module X is not a package and does not define ``name`` itself: an import
    through a module that only passes the name on (a shim)."""
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    packages = {m for m, p in paths.items() if p.name == "__init__.py"}
    defined = {m: defined_names(p) for m, p in paths.items()}
    bad = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                    continue
                if node.module not in paths or node.module in packages:
                    continue
                for alias in node.names:
                    name = alias.name
                    if name not in defined[node.module] and f"{node.module}.{name}" not in paths:
                        bad.append(f"{path.name}: from {node.module} import {name}")
    return bad


def test_the_shim_check_flags_an_import_through_a_module(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text("from lostmid.theory.run import parse_mask\n")  # defined in theory.masks
    assert imports_through_other_modules([tmp_path]) == [
        "user.py: from lostmid.theory.run import parse_mask"
    ]


def test_every_name_is_imported_from_its_home() -> None:
    """No module only passes names on (package ``__init__`` files are the public surface
    and may): src, tests and benchmarks import each name from where it is defined."""
    repo = ROOT.parent.parent
    roots = [ROOT] + [p for p in (repo / "tests", repo / "benchmarks") if p.is_dir()]
    assert imports_through_other_modules(roots) == []
