"""Issue 8: no import cycle among lostmid's modules (module-level imports, as Python runs
them when a module is first imported; imports inside functions are deliberate and lazy)."""

from __future__ import annotations

import ast
from pathlib import Path

import lostmid

ROOT = Path(lostmid.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_imports(path: Path, modules: set[str]) -> set[str]:
    """The lostmid modules imported at module level (``if TYPE_CHECKING`` blocks skipped)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if isinstance(node, ast.If | ast.Try) else [node]:
            if isinstance(sub, ast.Import):
                found |= {a.name for a in sub.names if a.name in modules}
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                if sub.module in modules:
                    found.add(sub.module)
                found |= {f"{sub.module}.{a.name}" for a in sub.names} & modules
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    return {name: top_level_imports(path, modules) - {name} for name, path in paths.items()}


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


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_lostmid() -> None:
    graph = import_graph()
    assert "lostmid.reproduce.run" in graph and graph["lostmid.reproduce.run"]  # it parsed
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])
