"""Every function the package registers with spaCy is also declared as an entry point, so a
config naming it resolves in a process that never imported ``spacy_nested_mrc``."""

import ast
from importlib.metadata import entry_points
from pathlib import Path
from typing import List, Tuple

import spacy

import spacy_nested_mrc

PACKAGE = Path(spacy_nested_mrc.__file__).parent


def _registrations() -> List[Tuple[str, str, str, str]]:
    """(entry-point group, registered name, module, function) for every decorator
    ``@registry.<group>("name")``, ``@spacy.registry.<group>("name")`` and
    ``@Language.factory("name")`` in the package's source."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)):
                    continue
                if not (deco.args and isinstance(deco.args[0], ast.Constant)):
                    continue
                owner = ast.unparse(deco.func.value)
                if owner in ("registry", "spacy.registry"):
                    # thinc's registries (optimizers, schedules, ...) read thinc_* groups
                    group = getattr(spacy.util.registry, deco.func.attr).entry_point_namespace
                elif owner == "Language" and deco.func.attr == "factory":
                    group = "spacy_factories"
                else:
                    continue
                found.append((group, deco.args[0].value, module, node.name))
    return found


def test_the_source_registers_functions():
    groups = {group for group, *_ in _registrations()}
    assert {"spacy_factories", "spacy_architectures", "spacy_callbacks"} <= groups


def test_every_registered_function_is_an_entry_point():
    missing = []
    for group, name, module, function in _registrations():
        declared = [ep for ep in entry_points(group=group) if ep.name == name]
        if len(declared) != 1 or declared[0].value != f"{module}:{function}":
            missing.append(f"{group}: {name} = {module}:{function}")
    assert not missing, "not declared in setup.cfg's entry points:\n" + "\n".join(missing)
