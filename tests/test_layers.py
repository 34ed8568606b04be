"""The library's imports point one way along the data flow, and none of them form a cycle.

Every import of every module of ``lie_stats/`` is read from its source (deferred imports
inside functions included; imports under ``if TYPE_CHECKING:`` are annotations only and are
left out). Each module belongs to a layer of the data flow; a module may import its own
layer and the layers below it, never one above. Inside a layer, the imports must not form a
cycle either.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lie_stats

ROOT = Path(lie_stats.__file__).parent

#: The data flow, bottom to top (first matching prefix wins; a prefix ending in "." is a
#: package's modules, the package's own ``__init__`` included).
LAYERS: list[tuple[str, ...]] = [
    ("lie_stats._version", "lie_stats.errors", "lie_stats._text", "lie_stats._stop"),
    ("lie_stats.schema", "lie_stats.columns"),
    ("lie_stats._io", "lie_stats.forms"),
    ("lie_stats.stats", "lie_stats.stats."),
    # the extraction side (lie_stats/extraction/) and the cube format it shares with the inference side
    ("lie_stats.extraction.architectures", "lie_stats.extraction.architectures.", "lie_stats.extraction.probe",
     "lie_stats.cube", "lie_stats.cube_attrs", "lie_stats.extraction.checkpoint_files", "lie_stats.extraction.hub"),
    ("lie_stats.extraction.checkpoint", "lie_stats.extraction.sources", "lie_stats.extraction.memory",
     "lie_stats.extraction.operators"),
    ("lie_stats.extraction.metrics",),
    ("lie_stats.extraction.activations", "lie_stats.extraction.delta"),
    ("lie_stats.extraction.executors", "lie_stats.extraction.store"),
    ("lie_stats.extraction", "lie_stats.extraction.pipeline", "lie_stats.extraction.api", "lie_stats.datasets"),
    ("lie_stats.spec.simulate", "lie_stats.spec.simulate."),
    ("lie_stats.spec", "lie_stats.spec."),
    ("lie_stats.collect", "lie_stats.gates", "lie_stats.diagnosis", "lie_stats.diagnosis."),
    ("lie_stats.report", "lie_stats.report."),
    ("lie_stats.engine",),
    ("lie_stats.export",),
    ("lie_stats.pytest_plugin",),
    ("lie_stats.cli",),
    ("lie_stats", "lie_stats.__main__"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer_of(name: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
                return rank
    raise AssertionError(f"{name} is in no layer of tests/test_layers.py: add it where it belongs")


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports_of(name: str) -> dict[str, int]:
    """The lie_stats modules ``name`` imports, with the line of the first import of each."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target in MODULES and target != name:
            found.setdefault(target, line)

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                add(sub if sub in MODULES else target, node.lineno)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_do_not_go_up_the_data_flow(name):
    mine = layer_of(name)
    up = [f"{target} (line {line}, layer {layer_of(target)})" for target, line in GRAPH[name].items()
          if layer_of(target) > mine]
    assert not up, f"{name} (layer {mine}) imports higher layers: {', '.join(up)}"


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_deferred_imports_included():
    assert _cycles(GRAPH) == []


def test_the_checks_can_fail():
    # a cycle and an upward import, planted in a copy of the graph, are found
    graph = {k: dict(v) for k, v in GRAPH.items()}
    graph["lie_stats.schema"]["lie_stats.cube"] = 1
    graph["lie_stats.cube"]["lie_stats.schema"] = 1
    assert any({"lie_stats.cube", "lie_stats.schema"} <= set(c) for c in _cycles(graph))
    assert layer_of("lie_stats.cube") > layer_of("lie_stats.schema")
    # and a deferred import inside a function is read
    assert "lie_stats.cube" in GRAPH["lie_stats.datasets"]


def test_designs_sit_in_their_kinds_folders_above_their_building_blocks():
    # a family's design imports the building blocks below it, never the other way round
    assert "lie_stats.spec.simulate" in GRAPH["lie_stats.spec.kinds.trend.design"]
    assert layer_of("lie_stats.spec.simulate.layers") < layer_of("lie_stats.spec.kinds.trend.design")
    assert not any(t.startswith("lie_stats.spec.kinds") for m in MODULES if m.startswith("lie_stats.spec.simulate")
                   for t in GRAPH[m])
