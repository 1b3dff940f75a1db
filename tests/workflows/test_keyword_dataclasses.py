"""Dataclasses are built with keywords (issue 27 Deliver 2; CONTRIBUTING.md "Style").

A record of several fields built by position (``Analysis(name, modes, None, ...)``) reads only
with its definition open beside it, and a field inserted in the middle silently shifts every
later argument. Every dataclass of mdae_fmu with two or more ``__init__`` fields is therefore
constructed with keywords throughout the package, the tests and the benchmarks. Exempt: the
nodes of the Modelica parser's syntax tree (``mdae_fmu/importers/syntax.py``), whose positional
form follows the grammar rule, and the records marked ``@quick_init`` (``mdae_fmu/records.py``:
the expression nodes, ``SourceLoc``, ``Variable``, ``Equation``), built in the per-token and
per-equation loops of the huge-model path, where a keyword call costs about 1.5 times a
positional one (``python -m timeit``, Python 3.11: 2.5 against 1.6 µs for a ``SourceLoc``).

The check reads the source with `ast`: a call ``Name(...)`` with a positional argument, where
``Name`` is a dataclass defined in the calling module or imported into it by a ``from ...
import`` of mdae_fmu."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXEMPT_FILES = {"mdae_fmu/importers/syntax.py"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _decorators(node: ast.ClassDef) -> set[str]:
    out = set()
    for deco in node.decorator_list:
        f = deco.func if isinstance(deco, ast.Call) else deco
        out.add(getattr(f, "id", getattr(f, "attr", "")))
    return out


def _own_fields(node: ast.ClassDef) -> list[str]:
    """The ``__init__`` fields a class body declares, in order (ClassVar and
    ``field(init=False)`` left out)."""
    names = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if ast.unparse(stmt.annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = stmt.value
        if (isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field"
                and any(k.arg == "init" and isinstance(k.value, ast.Constant)
                        and k.value.value is False for k in value.keywords)):
            continue
        names.append(stmt.target.id)
    return names


@functools.cache
def package_dataclasses() -> dict[tuple[str, str], list[str] | None]:
    """(module, class) -> its ``__init__`` fields in order, base dataclasses' first; None when
    the class is exempt (module docstring), defines ``__init__`` itself or derives from a class
    this reading cannot follow."""
    bodies: dict[tuple[str, str], ast.ClassDef] = {}
    for path in sorted((ROOT / "mdae_fmu").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and "dataclass" in _decorators(node):
                bodies[(_module_name(path), node.name)] = node

    def fields(key: tuple[str, str], depth: int = 0) -> list[str] | None:
        node = bodies[key]
        own_init = any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body)
        exempt_file = key[0].replace(".", "/") + ".py" in EXEMPT_FILES
        if depth > 10 or own_init or exempt_file or "quick_init" in _decorators(node):
            return None
        inherited: list[str] = []
        for base in node.bases:
            name = getattr(base, "id", None)
            if name in (None, "object") or name == "Generic":
                continue
            if (key[0], name) not in bodies:
                return None
            got = fields((key[0], name), depth + 1)
            if got is None:
                return None
            inherited += got
        return inherited + _own_fields(node)

    return {key: fields(key) for key in bodies}


def _resolve(module: str, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    base = module.split(".")[: -node.level]
    return ".".join(base + ([node.module] if node.module else []))


def positional_constructions(text: str, module: str, classes):
    """(call node, class, fields) for every construction, in the source ``text`` of
    ``module``, of a package dataclass of two or more fields with a positional argument."""
    tree = ast.parse(text)
    local: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            for alias in node.names:
                if source and (source, alias.name) in classes:
                    local[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.ClassDef) and (module, node.name) in classes:
            local[node.name] = (module, node.name)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.args and node.func.id in local):
            continue
        key = local[node.func.id]
        fields = classes[key]
        if fields is None or len(fields) < 2:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args):
            continue
        found.append((node, key[1], fields))
    return found


def test_dataclasses_are_built_with_keywords():
    classes = package_dataclasses()
    problems = []
    for folder in ("mdae_fmu", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            got = positional_constructions(path.read_text(), _module_name(path), classes)
            for node, name, _ in got:
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}(...) "
                                "built by position")
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_positional_construction():
    """The check is not blind: a positional ``Diagnostic`` is found, the keyword form is not,
    nor a positional node of the exempt expression tree."""
    classes = package_dataclasses()
    fields = classes[("mdae_fmu.modes.runs", "Diagnostic")]
    assert fields is not None and len(fields) >= 2
    assert classes[("mdae_fmu.expr", "BinOp")] is None
    text = ("from mdae_fmu.modes.runs import Diagnostic\n"
            "from mdae_fmu.expr import BinOp\n"
            "a = Diagnostic('E-X', 'message')\n"
            f"b = Diagnostic({fields[0]}='E-X', {fields[1]}='message')\n"
            "c = BinOp('+', 1, 2)\n")
    got = positional_constructions(text, "tests.probe", classes)
    assert [(n.lineno, name) for n, name, _ in got] == [(3, "Diagnostic")]
