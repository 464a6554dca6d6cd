"""The package's modules import each other without a circle: every import, at the top of a
module or inside a function (lazy) or under TYPE_CHECKING, read from the source."""

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).parents[1] / "spacy_nested_mrc"


def module_names() -> Dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that ``name`` imports."""
    found = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found.update(c for c in candidates if c in modules and c != name)
    return found


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_package():
    modules = module_names()
    assert "spacy_nested_mrc.annotate.runner" in modules and len(modules) > 40
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert graph["spacy_nested_mrc.encoder.quantization"] >= {"spacy_nested_mrc.encoder.hf"}
    assert circles(graph) == []


def folder_of(name: str) -> str:
    """The package's folder (sub-package) a module lives in; a top-level module is its own."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_import_circle_between_the_package_folders():
    """Each folder is a layer: runtime (precision, threads, memory, processes) below the
    encoder, the encoder below the models, and so on; no two folders import each other, even
    through a third."""
    modules = module_names()
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        targets = {folder_of(t) for t in imports_of(name, path, modules)}
        graph.setdefault(folder_of(name), set()).update(targets - {folder_of(name)})
    for target in {t for targets in graph.values() for t in targets}:
        graph.setdefault(target, set())
    assert graph["encoder"] >= {"runtime"} and graph["models"] >= {"encoder"}
    assert circles(graph) == []
