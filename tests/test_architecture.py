"""The architecture docs/architecture.md draws, checked against the code: layers, no cycles, one decision.

The layer table of docs/architecture.md is read from the document itself, so the drawing and the code
cannot drift apart: every import of every module (type-only and function-level imports included) must
point to a lower layer or stay inside its own folder, and the import graph has no cycle.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

import pytest_bvtest

PACKAGE = Path(pytest_bvtest.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def module_names() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its folder's name)."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names[name] = path
    return names


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports anywhere: at the top, under TYPE_CHECKING, in a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("pytest_bvtest"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("pytest_bvtest"))
    return found


def documented_layers() -> list[tuple[int, list[str]]]:
    """``(layer, module patterns)`` from the layer table of docs/architecture.md."""
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", ARCHITECTURE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert rows, "docs/architecture.md has no layer table"
    return [(int(layer), re.findall(r"`([^`]+)`", modules)) for layer, modules in rows]


def layer_of(module: str, layers: list[tuple[int, list[str]]]) -> int:
    """The layer of a dotted module name: the longest documented pattern it falls under."""
    relative = module.removeprefix("pytest_bvtest").lstrip(".") or "pytest_bvtest"
    matches = [
        (len(pattern), layer)
        for layer, patterns in layers
        for pattern in patterns
        if relative == pattern or relative.startswith(pattern + ".")
    ]
    assert matches, f"{module} is in no layer of docs/architecture.md"
    return max(matches)[1]


def folder_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in _PACKAGES else module


_PACKAGES = {name for name, path in module_names().items() if path.name == "__init__.py"}


def test_every_module_sits_in_a_documented_layer_and_imports_only_below_it_or_in_its_own_folder() -> None:
    modules = module_names()
    layers = documented_layers()
    wrong = []
    for module, path in sorted(modules.items()):
        own = layer_of(module, layers)
        for imported in sorted(imports_of(path, modules)):
            same_folder = folder_of(imported) == folder_of(module) and module != "pytest_bvtest"
            if not same_folder and layer_of(imported, layers) >= own and imported != "pytest_bvtest":
                wrong.append(f"{module} (layer {own}) imports {imported} (layer {layer_of(imported, layers)})")
    assert not wrong, "\n".join(wrong)


def test_the_import_graph_has_no_cycle_not_even_for_type_hints() -> None:
    modules = module_names()
    graph = {module: imports_of(path, modules) - {module} for module, path in modules.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == 1:
                cycles.append(" -> ".join([*trail[trail.index(imported) :], imported]))
            elif imported in graph and not state.get(imported):
                visit(imported, [*trail, imported])
        state[module] = 2

    for module in sorted(graph):
        if not state.get(module):
            visit(module, [module])
    assert not cycles, "\n".join(cycles)


def test_the_layer_table_names_only_modules_that_exist() -> None:
    relative = {name.removeprefix("pytest_bvtest").lstrip(".") or "pytest_bvtest" for name in module_names()}
    for _, patterns in documented_layers():
        for pattern in patterns:
            assert any(name == pattern or name.startswith(pattern + ".") for name in relative), pattern


def test_each_gate_is_decided_exactly_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's five gates (family-wise limits, the default, so they are calibrated together): one decision
    each, after every limit is known; nothing decides a gate again."""
    from pytest_bvtest.judging import pipeline

    decided: Counter[str] = Counter()
    decide = pipeline.decide

    def counting(inputs, limit, *arguments):
        decided[inputs.id] += 1
        return decide(inputs, limit, *arguments)

    monkeypatch.setattr(pipeline, "decide", counting)
    example = PACKAGE.parent / "example_project" / "bvtest.yaml"
    evaluation = pipeline.evaluate_spec(pipeline.spec_under_test(example), use_cache=False)
    assert len(evaluation.gates) == 5 and any(gate.limits.family for gate in evaluation.gates)
    assert decided == Counter({gate.id: 1 for gate in evaluation.gates})
