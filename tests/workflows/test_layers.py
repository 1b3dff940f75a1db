"""The import structure of mdae_fmu (issue 27 Deliver 1; docs/architecture.md "Stages"): no
import circles, no private name imported from another module, and the stages import one way
(the lower layers never import the use layer, the code generation never imports the analysis
front door). The graph is read from the source with `ast` (every import, including those
inside functions), so the test needs no import of the package.

``KNOWN_CIRCLES`` and ``KNOWN_PRIVATE`` list what is still to be cut: the test fails on any
circle or private import not listed there, and on a listed one that is gone (remove it from
the list, so the lists only shrink)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[2] / "mdae_fmu"

# strongly connected components still to cut, each as the set of its modules
KNOWN_CIRCLES: list[frozenset[str]] = []

# (importing module, imported module, name)
KNOWN_PRIVATE: set[tuple[str, str, str]] = set()

# the layers that run FMUs and drive workflows: nothing below them imports them
USE_LAYER = {"simulation", "info", "run_options", "comparison", "regression", "sweeps",
             "dask_tasks", "report_html", "fmu_runner", "fmu_child", "api", "cli"}
LOWER_PACKAGES = ("importers.", "structure.", "implicit.", "modes.", "impulse.", "codegen.")
# upward imports still to move
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _modules(package: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


# the fields of a statement that hold statements (imports are statements: the expressions,
# most of the tree, are not walked)
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST):
    """Every statement of ``tree``, those under ``if TYPE_CHECKING:`` included: an import for
    annotations only is still an edge of the import graph that tools such as pydeps draw
    (issue 27), so it must not close a circle either."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in _BLOCKS:
            for child in getattr(node, field, ()):
                stack.append(child)


def _imports(modules: dict[str, Path]):
    """(importer, imported module, name or None) for every import of the package's own
    modules, with relative imports resolved."""
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in _statements(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1] if node.level > 1 \
                        else package
                    target = ".".join(base + ([node.module] if node.module else []))
                elif node.module and node.module.startswith("mdae_fmu"):
                    target = node.module.removeprefix("mdae_fmu").lstrip(".")
                else:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}" if target else alias.name
                    if sub in modules:
                        yield name, sub, None
                    else:
                        yield name, target, alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("mdae_fmu."):
                        yield name, alias.name.removeprefix("mdae_fmu."), None


@functools.lru_cache(maxsize=None)
def _graph(package: Path = PACKAGE):
    modules = _modules(package)
    graph, private = nx.DiGraph(), set()
    for src, dst, what in _imports(modules):
        if dst in modules and dst != src:
            graph.add_edge(src, dst)
        if what and what.startswith("_") and not what.startswith("__") and dst != src:
            private.add((src, dst, what))
    return graph, private


def test_no_new_import_circles():
    graph, _ = _graph()
    circles = {frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1}
    new = [sorted(c) for c in circles if not any(c <= k for k in KNOWN_CIRCLES)]
    assert not new, f"import circles: {new} (move the shared code down a layer)"
    gone = [sorted(k) for k in KNOWN_CIRCLES if not any(c & k for c in circles)]
    assert not gone, f"circles cut, remove them from KNOWN_CIRCLES: {gone}"


def test_no_new_private_imports_across_modules():
    _, private = _graph()
    new = sorted(private - KNOWN_PRIVATE)
    assert not new, f"private names imported from another module: {new} (make them public)"
    gone = sorted(KNOWN_PRIVATE - private)
    assert not gone, f"private imports removed, take them out of KNOWN_PRIVATE: {gone}"


def test_lower_layers_never_import_the_use_layer():
    graph, _ = _graph()
    up = {(a, b) for a, b in graph.edges if a.startswith(LOWER_PACKAGES) and b in USE_LAYER}
    assert not up - KNOWN_UPWARD, f"imports from a stage up into the use layer: {up}"
    assert not KNOWN_UPWARD - up, f"moved, take them out of KNOWN_UPWARD: {KNOWN_UPWARD - up}"


def test_the_graph_reader_sees_circles_and_private_imports(tmp_path):
    """The reader itself: a circle through a relative import inside a function and through
    an annotation-only import, and a private name imported across modules."""
    pkg = tmp_path / "mdae_fmu"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from typing import TYPE_CHECKING\n"
                                      "from .b import _hidden\n"
                                      "if TYPE_CHECKING:\n    from ..sub import c\n")
    (pkg / "sub" / "c.py").write_text("from . import a\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..sub import a\n    return a\n"
                                      "_hidden = 1\n")
    graph, private = _graph(pkg)
    assert {frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1} \
        == {frozenset({"sub.a", "sub.b", "sub.c"})}
    assert private == {("sub.a", "sub.b", "_hidden")}
