"""A saved analysis: the `Analysis` object and its `Model` as plain JSON, so that
``mdae-fmu export --from-json`` builds the FMU without re-running any analysis
(docs/decisions.md §"Saved analyses", docs/analyze-json.md "saved_analysis").

The serialization is self-contained and exact: every dataclass of the package is written
with its fields (the classes named by module and name, and only classes of `mdae_fmu` are
read back), objects shared in the analysis are written once and referenced, sympy
expressions as `sympy.srepr` text read back by a restricted reader (`_SympyReader`: calls of
sympy classes on literals, nothing evaluated), floats exactly (``repr``), dictionaries in
their order. Caches that are not part of an object's value (the symbol table's conversion
memo) are not written. A digest of the payload detects a truncated or edited file; the
package version is part of the format, since the classes may change between versions.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import json
import math
import re
from fractions import Fraction

import sympy as sp
from sympy.core.function import FunctionClass, UndefinedFunction

from . import expr as E
from .diagnostics import InputError
from .version import __version__

FORMAT = "mdae_fmu.saved-analysis/1"
# fields that are caches of an object, not its value: rebuilt empty on reading
_CACHES = {("mdae_fmu.symbolic", "SymbolTable"): ("_memo", "_numbers")}
_USER_FN = re.compile(r"mdae_fn(\d+)_o(\d+)$")
# expression trees are written in their own JSON form (`mdae_fmu.expr.to_json`)
_EXPR_NODES = frozenset((E.Const, E.Str, E.Ref, E.Time, E.Der, E.Call, E.BinOp, E.UnOp, E.If))


class SavedAnalysisError(InputError):
    """A saved analysis that cannot be read (exit code 2)."""


def save(model, analysis) -> dict:
    """The JSON value of ``analysis`` (an `mdae_fmu.analysis.Analysis`) and its ``model``."""
    payload = _Writer().value({"model": model, "analysis": analysis})
    return {"format": FORMAT, "version": __version__, "sha256": _digest(payload),
            "payload": payload}


def load(data, where: str = "saved analysis"):
    """``(model, analysis)`` from the value `save` made. `SavedAnalysisError` naming ``where``
    for a value that is not a saved analysis, of another version, or altered."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or "payload" not in data:
        raise SavedAnalysisError(
            f"{where}: not a saved analysis (expected a \"saved_analysis\" object of format "
            f"{FORMAT}, as `mdae-fmu analyze --json` writes)")
    if data.get("version") != __version__:
        raise SavedAnalysisError(
            f"{where}: saved by mdae-fmu {data.get('version')}, this is {__version__}; run "
            f"`mdae-fmu analyze --json` again with this version")
    if data.get("sha256") != _digest(data["payload"]):
        raise SavedAnalysisError(f"{where}: the saved analysis was altered or truncated "
                                 f"(its digest does not match)")
    try:
        root = _Reader().value(data["payload"])
        return root["model"], root["analysis"]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, SyntaxError) as err:
        raise SavedAnalysisError(f"{where}: the saved analysis cannot be read: {err}") from None


def load_file(path) -> tuple:
    """``(model, analysis)`` from the output of ``mdae-fmu analyze --json`` saved in
    ``path``. `SavedAnalysisError` (exit 2) for a file that is not JSON or holds no saved
    analysis; `OSError` for a file that cannot be read."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise SavedAnalysisError(f"{path}: not JSON ({err}); expected the output of "
                                 f"`mdae-fmu analyze --json`") from None
    if not isinstance(doc, dict) or "saved_analysis" not in doc:
        raise SavedAnalysisError(f"{path}: no \"saved_analysis\" in it; expected the output of "
                                 f"`mdae-fmu analyze --json`")
    return load(doc["saved_analysis"], str(path))


def _digest(payload) -> str:
    # JSON keeps the order of an object's keys, so the text is the same after a round trip
    text = json.dumps(payload, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Writer:
    """Object graph -> JSON values; every object of the package and every sympy expression is
    written once (``{"#": n, ...}``) and referenced after (``{"@": n}``)."""

    def __init__(self):
        self.ids: dict[int, int] = {}
        self.keep: list = []            # the objects numbered (their ids stay valid)
        self.fields: dict[type, tuple] = {}

    def _number(self, o) -> int | None:
        k = self.ids.get(id(o))
        if k is None:
            self.ids[id(o)] = len(self.ids)
            self.keep.append(o)
        return k

    def value(self, o):
        if o is None or isinstance(o, (bool, int, str)):
            return o
        if isinstance(o, float):
            return o if math.isfinite(o) else {"$f": repr(o)}
        if isinstance(o, list):
            return [self.value(x) for x in o]
        if isinstance(o, tuple):
            return {"$t": [self.value(x) for x in o]}
        if isinstance(o, dict):
            return {"$d": [[self.value(k), self.value(v)] for k, v in o.items()]}
        if isinstance(o, (set, frozenset)):
            return {"$fs" if isinstance(o, frozenset) else "$s": [self.value(x) for x in o]}
        if isinstance(o, Fraction):
            return {"$q": [o.numerator, o.denominator]}
        cls = type(o)
        if cls in _EXPR_NODES:
            return {"$e": E.to_json(o)}
        if isinstance(o, (sp.Basic, FunctionClass)):
            return self._sympy(o)
        if cls.__module__.startswith("mdae_fmu.") and (dataclasses.is_dataclass(o)
                                                       or cls.__name__ == "FunctionTable"
                                                       or _slots(cls)):
            return self._object(o)
        raise TypeError(f"cannot save a {cls.__module__}.{cls.__qualname__}")

    def _object(self, o):
        k = self._number(o)
        if k is not None:
            return {"@": k}
        k = self.ids[id(o)]
        cls = type(o)
        if cls.__name__ == "FunctionTable":
            fields = {"functions": o.functions, "_derivs": o._derivs}
        elif not dataclasses.is_dataclass(o):
            return {"#": k, "$o": f"{cls.__module__}:{cls.__qualname__}",
                    "s": {n: self.value(getattr(o, n)) for n in _slots(cls)
                          if hasattr(o, n)}}
        else:
            names = self.fields.get(cls)
            if names is None:
                skip = _CACHES.get((cls.__module__, cls.__name__), ())
                names = self.fields[cls] = tuple(f.name for f in dataclasses.fields(o)
                                                 if f.name not in skip)
            fields = {n: getattr(o, n) for n in names}
        return {"#": k, "$o": f"{cls.__module__}:{cls.__qualname__}",
                "f": {n: self.value(v) for n, v in fields.items()}}

    def _sympy(self, e):
        k = self._number(e)
        if k is not None:
            return {"@": k}
        k = self.ids[id(e)]
        out = {"#": k, "$sp": sp.srepr(e)}
        tables = []
        for f in _user_function_classes(e):
            table = _table_of(f)
            if table is None:
                raise TypeError(f"cannot save the sympy function {f}")
            tables.append(table)
        if tables:
            # the model's function tables, read before the expression that calls them
            out["fn"] = [self.value(t) for t in dict.fromkeys(tables)]
        return out


def _slots(cls) -> tuple:
    """The ``__slots__`` of a plain (not data) class and its bases."""
    out: list = []
    for c in cls.__mro__:
        s = c.__dict__.get("__slots__", ())
        out.extend((s,) if isinstance(s, str) else s)
    return tuple(n for n in out if n != "__weakref__")


def _user_function_classes(e) -> list:
    if isinstance(e, FunctionClass):
        return [e] if hasattr(e, "_mdae_call") else []
    return [type(a) for a in sp.preorder_traversal(e)
            if isinstance(type(a), UndefinedFunction) and hasattr(type(a), "_mdae_call")]


def _table_of(cls):
    """The `FunctionTable` whose `sympy_function` made ``cls`` (its ``fdiff`` closure)."""
    for cell in getattr(cls.fdiff, "__closure__", None) or ():
        if type(cell.cell_contents).__name__ == "FunctionTable":
            return cell.cell_contents
    return None


class _Reader:
    """JSON values -> object graph (`_Writer`'s inverse); only classes of `mdae_fmu`."""

    def __init__(self):
        self.objects: dict[int, object] = {}
        self.tables: list = []

    def value(self, j):
        if j is None or isinstance(j, (bool, int, float, str)):
            return j
        if isinstance(j, list):
            return [self.value(x) for x in j]
        if not isinstance(j, dict):
            raise TypeError(f"unexpected {type(j).__name__}")
        if "@" in j:
            return self.objects[j["@"]]
        if "$t" in j:
            return tuple(self.value(x) for x in j["$t"])
        if "$d" in j:
            return {self.value(k): self.value(v) for k, v in j["$d"]}
        if "$fs" in j:
            return frozenset(self.value(x) for x in j["$fs"])
        if "$s" in j:
            return {self.value(x) for x in j["$s"]}
        if "$e" in j:
            return E.from_json(j["$e"])
        if "$f" in j:
            return float(j["$f"])
        if "$q" in j:
            return Fraction(*j["$q"])
        if "$sp" in j:
            tables = [self.value(t) for t in j.get("fn", ())]
            e = _SympyReader(tables).read(j["$sp"])
            self.objects[j["#"]] = e
            return e
        if "$o" in j:
            return self._object(j)
        raise ValueError(f"unexpected object with keys {sorted(j)}")

    def _object(self, j):
        module, _, name = j["$o"].partition(":")
        if not module.startswith("mdae_fmu.") or "." in name:
            raise ValueError(f"not a class of mdae_fmu: {j['$o']}")
        cls = getattr(importlib.import_module(module), name)
        if not isinstance(cls, type):
            raise ValueError(f"not a class: {j['$o']}")
        o = object.__new__(cls)
        self.objects[j["#"]] = o
        if "s" in j and not dataclasses.is_dataclass(cls):
            for n, v in j["s"].items():
                if n not in _slots(cls):
                    raise ValueError(f"{j['$o']} has no attribute {n}")
                object.__setattr__(o, n, self.value(v))
            return o
        fields = {n: self.value(v) for n, v in j["f"].items()}
        if name == "FunctionTable" and not dataclasses.is_dataclass(cls):
            o.__init__(())
            o.functions.update(fields["functions"])
            o._derivs.update(fields["_derivs"])
            return o
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"not a data class: {j['$o']}")
        for f in dataclasses.fields(cls):
            if f.name in fields:
                object.__setattr__(o, f.name, fields[f.name])
            elif f.default_factory is not dataclasses.MISSING:
                object.__setattr__(o, f.name, f.default_factory())
            elif f.default is not dataclasses.MISSING:
                object.__setattr__(o, f.name, f.default)
            else:
                raise ValueError(f"{j['$o']}: field {f.name} missing")
        return o


class _SympyReader:
    """`sympy.srepr` text -> expression, without evaluating the text: only calls of sympy's
    classes (and of the model's functions, by their generated names) on literals and
    expressions; strings only as the names of symbols and functions and as Float digits."""

    _STRING_ARGS = {"Symbol", "Dummy", "Function", "Float", "Wild"}

    def __init__(self, tables):
        self.tables = tables

    def read(self, text: str):
        return self._node(ast.parse(text, mode="eval").body)

    def _callee(self, node):
        if isinstance(node, ast.Name):
            name = node.id
            obj = getattr(sp, name, None)
            if isinstance(obj, type) and issubclass(obj, sp.Basic) or name == "Function":
                return name, obj
            raise ValueError(f"not a sympy class: {name}")
        if isinstance(node, ast.Call):
            f = self._node(node)
            if isinstance(f, UndefinedFunction):
                return "applied", f
        raise ValueError("unexpected call in a sympy expression")

    def _node(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self._node(node.operand)
            if isinstance(v, (int, float)):
                return -v
        if isinstance(node, ast.Tuple):
            return tuple(self._node(x) for x in node.elts)
        if isinstance(node, ast.List):
            return [self._node(x) for x in node.elts]
        if isinstance(node, ast.Name):
            obj = getattr(sp, node.id, None)
            if isinstance(obj, sp.Basic):        # singletons: pi, E, oo, true, ...
                return obj
            raise ValueError(f"not a sympy constant: {node.id}")
        if isinstance(node, ast.Call):
            name, f = self._callee(node.func)
            args = [self._node(a) for a in node.args]
            kwargs = {k.arg: self._node(k.value) for k in node.keywords if k.arg is not None}
            if len(kwargs) != len(node.keywords):
                raise ValueError("unexpected ** in a sympy expression")
            texts = [a for a in list(args) + list(kwargs.values()) if isinstance(a, str)]
            if texts and name not in self._STRING_ARGS:
                raise ValueError(f"{name} takes no text arguments here")
            if name == "Function":
                m = _USER_FN.match(args[0]) if args and isinstance(args[0], str) else None
                if m is not None:
                    return self._user_function(int(m.group(1)), int(m.group(2)))
            return f(*args, **kwargs)
        raise ValueError(f"unexpected {type(node).__name__} in a sympy expression")

    def _user_function(self, i: int, k: int):
        from .functions import call_name
        for table in self.tables:
            names = list(table.functions)
            if i < len(names):
                return table.sympy_function(call_name(names[i], k))
        raise ValueError(f"function mdae_fn{i}_o{k} is not in the saved function tables")
