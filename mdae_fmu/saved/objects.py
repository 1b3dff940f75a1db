"""The object graph of a saved analysis as JSON values, and back (docs/decisions.md §11).

Which classes a file may hold is `CLASSES`, a table built here in code: a class is named in the
file by its key there, and nothing else is ever looked up. Reading is directed by the types
of the fields (the classes' annotations, made precise by `FIELD_TYPES` where they say only
``tuple``): every value is checked against its field's type as it is read, so a value of the
wrong kind, a missing or unknown field, an unknown class, an object that refers to itself,
a number or a string beyond `mdae_fmu.saved.limits` is refused at its place, named as a path
of fields and indices (``payload.analysis.modes.modes[1].c["e3"]``). Objects are then built
with their constructors, from values already checked.

Encoding of a value (the writer picks it from the value, the reader checks it against the
field's type):

* null, booleans, strings, integers, finite floats as themselves; ``{"$f": "inf"}`` (also
  ``-inf``, ``nan``) for the other floats;
* ``{"$t": [...]}`` tuple, ``{"$fs": [...]}`` frozenset, ``{"$s": [...]}`` set (its elements
  sorted, `set_order`: a set's iteration order follows the hash seed of the process, and a
  saved analysis must be the same bytes in every process), a JSON list for a list,
  ``{"$d": [[key, value], ...]}`` a dictionary in its order, ``{"$q": [p, q]}`` a Fraction;
* ``{"$e": tree}`` an expression tree (`mdae_fmu.expr.to_json`);
* ``{"#": n, "fn": [tables], "$sp": tree}`` a sympy expression (`sympy_json`);
* ``{"#": n, "$o": class, "f": {field: value}}`` an object of a `CLASSES` class, numbered
  in the order objects are first met; ``{"@": n}`` refers to object ``n`` written before.
  The classes of `INLINE` (function statements, whose bodies nest) have no number and are
  never referred to: sharing them would make a small file a tree of exponential size.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from fractions import Fraction
from types import NoneType, UnionType

import sympy as sp

from .. import expr as E
from .. import functions as F
from .. import ir
from ..analysis import Analysis
from ..diagnostics import SourceLoc
from ..impulse.analysis import OrderInfo
from ..implicit.schedule import (BlockRows, DeltaRestart, FormulaTable, GuardedSchedule,
                                 GuardedVariant, Selection)
from ..modes import explore, runs
from ..modes.normalize import Guard, MEquation, MultimodeSystem
from ..structure import conversion, keyed, per_mode
from ..structure.structural_parameters import FixedParameter
from ..symbolic import SymbolTable
from ..unit_check import UnitWarning
from . import sympy_json
from .limits import (MAX_DEPTH, MAX_EXPR_DEPTH, MAX_FIELD_INTEGER_BITS, MAX_ITEMS,
                     MAX_OBJECTS, MAX_STRING, Refused, json_kind, shown,
                     too_big_int)


def _key(cls: type) -> str:
    return f"{cls.__module__.removeprefix('mdae_fmu.')}.{cls.__qualname__}"


#: The classes a saved analysis holds, by the name the file gives them (module within the
#: package, then class): one entry per class. A new class in the analysis is added here, and
#: its fields travel with it; a field annotated only ``tuple``/``frozenset``/``dict`` gets its
#: element types in `FIELD_TYPES`.
CLASSES: dict[str, type] = {_key(c): c for c in (
    Analysis, per_mode.ModesReport, per_mode.ModeAnalysis, per_mode.Block, per_mode.Instance,
    per_mode.LatentEquation, SymbolTable, keyed.KBlock, SourceLoc, OrderInfo,
    conversion.Conversion,
    ir.Model, ir.Variable, ir.Equation, ir.GuardLiteral, ir.WhenClause, ir.WhenBranch,
    ir.Reinit, ir.Assign, ir.Terminate, ir.Assertion, ir.StringParameter,
    F.FunctionTable, F.Function, F.Param, F.DerivativeAnnotation, F.Assign, F.TupleAssign,
    F.IfStmt, F.ForStmt, F.WhileStmt, F.Return, F.Break, F.AssertStmt,
    explore.Automaton, explore.ModeChange, explore.ModeInfo, explore.RestartBlock,
    explore.RestartInstant, explore.RestartStep,
    Guard, MEquation, MultimodeSystem,
    runs.Config, runs.Diagnostic, runs.Instant,
    GuardedSchedule, GuardedVariant, BlockRows, Selection, FormulaTable, UnitWarning,
    FixedParameter, DeltaRestart)}
#: Classes written in place, never numbered nor shared (module docstring).
INLINE = frozenset((F.Assign, F.TupleAssign, F.IfStmt, F.ForStmt, F.WhileStmt, F.Return,
                    F.Break, F.AssertStmt))
_NAMES = {c: k for k, c in CLASSES.items()}

_Instant = tuple[str, int]                              # (variable or equation id, order)
_Statements = tuple[F.Statement, ...]
#: The annotation of a field holding plain JSON data (a report): any nesting of dictionaries,
#: lists, strings, numbers, booleans and null.
JSON_DATA = object()
#: Field types where the class's annotation is a bare container (`CLASSES`).
FIELD_TYPES: dict[tuple[type, str], object] = {
    (ir.Model, "functions"): tuple[F.Function, ...],
    (ir.Model, "enumerations"): tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...],
    (ir.Model, "strings"): tuple[ir.StringParameter, ...],
    (F.Function, "inputs"): tuple[F.Param, ...],
    (F.Function, "outputs"): tuple[F.Param, ...],
    (F.Function, "locals"): tuple[F.Param, ...],
    (F.Function, "body"): _Statements,
    (F.TupleAssign, "targets"): tuple[str | None, ...],
    (F.IfStmt, "branches"): tuple[tuple[E.Expr, _Statements], ...],
    (F.IfStmt, "orelse"): _Statements,
    (F.ForStmt, "body"): _Statements,
    (F.WhileStmt, "body"): _Statements,
    (F.DerivativeAnnotation, "without"): tuple[str, ...],
    (explore.Automaton, "guards"): tuple[tuple[str, str], ...],
    (explore.Automaton, "modes"): tuple[explore.ModeInfo, ...],
    (explore.Automaton, "changes"): tuple[explore.ModeChange, ...],
    (explore.Automaton, "configs"): tuple[runs.Config, ...],
    (explore.Automaton, "edges"): tuple[tuple[int, tuple[bool, ...], int, runs.Instant], ...],
    (explore.Automaton, "diagnostics"): tuple[runs.Diagnostic, ...],
    (explore.ModeChange, "instants"): tuple[explore.RestartInstant, ...],
    (explore.ModeChange, "restart"): tuple[sp.Equality, ...],
    (explore.ModeChange, "steps"): tuple[explore.RestartStep, ...],
    (explore.ModeInfo, "states"): tuple[str, ...],
    (explore.ModeInfo, "latent"): tuple[str, ...],
    (explore.ModeInfo, "blocks"): tuple[tuple[str, ...], ...],
    (explore.RestartBlock, "equations"): tuple[str, ...],
    (explore.RestartBlock, "unknowns"): tuple[str, ...],
    (explore.RestartBlock, "formulas"): tuple[str, ...],
    (explore.RestartInstant, "facts"): tuple[str, ...],
    (explore.RestartInstant, "erased"): tuple[str, ...],
    (explore.RestartInstant, "blocks"): tuple[explore.RestartBlock, ...],
    (explore.RestartInstant, "impulsive"): tuple[tuple[str, str], ...],
    (explore.RestartInstant, "restart"): tuple[sp.Equality, ...],
    (explore.RestartInstant, "notes"): tuple[str, ...],
    (explore.RestartInstant, "variables"): tuple[str, ...],
    (explore.RestartInstant, "orders"): tuple[tuple[str, OrderInfo | None], ...],
    (explore.RestartInstant, "jumps"): tuple[tuple[str, str, OrderInfo | None], ...],
    (explore.RestartInstant, "integrals"): tuple[tuple[str, sp.Expr, sp.Expr], ...],
    (explore.RestartStep, "instants"): tuple[int, ...],
    (explore.RestartStep, "variables"): tuple[str, ...],
    (explore.RestartStep, "restart"): tuple[sp.Equality, ...],
    (Guard, "reads"): frozenset[str],
    (MultimodeSystem, "constants"): frozenset[str],
    (runs.Config, "known"): frozenset[_Instant],
    (runs.Config, "context"): frozenset[_Instant],
    (runs.Config, "last_transient"): frozenset[int],
    (runs.Diagnostic, "variables"): tuple[str, ...],
    (runs.Diagnostic, "equations"): tuple[_Instant, ...],
    (runs.Instant, "known"): frozenset[_Instant],
    (runs.Instant, "facts"): frozenset[_Instant],
    (runs.Instant, "erased"): frozenset[_Instant],
    (runs.Instant, "solved"): tuple[_Instant, ...],
    (runs.Instant, "unknowns"): frozenset[_Instant],
    (runs.Instant, "blocks"): tuple[keyed.KBlock, ...],
    (keyed.KBlock, "equations"): tuple[_Instant, ...],
    (keyed.KBlock, "unknowns"): tuple[_Instant, ...],
    (Analysis, "implicit_json"): JSON_DATA,
    (Analysis, "units"): tuple[UnitWarning, ...],
    (Analysis, "fixed_parameters"): tuple[FixedParameter, ...],
    (BlockRows, "unknowns"): tuple[sp.Symbol, ...],
    (BlockRows, "rows"): tuple[sp.Expr, ...],
    (BlockRows, "singular"): tuple[tuple[str, sp.Expr, sp.Expr], ...],
    (BlockRows, "levels"): tuple[BlockRows, ...],
    (DeltaRestart, "z"): tuple[sp.Symbol, ...],
    (DeltaRestart, "equations"): tuple[sp.Expr, ...],
    (DeltaRestart, "jacobian"): tuple[tuple[int, int, sp.Expr], ...],
    (DeltaRestart, "targets"): tuple[tuple[sp.Symbol, sp.Expr], ...],
    (Selection, "top"): tuple[tuple[sp.Symbol, sp.Symbol, sp.Symbol], ...],
    (Selection, "restart"): tuple[tuple[sp.Symbol, sp.Symbol, sp.Symbol], ...],
    (Selection, "cons_when"): tuple[sp.Symbol | None, ...],
    (GuardedVariant, "origin"): tuple[tuple[str, ...], ...],
    (GuardedVariant, "cons"): tuple[sp.Expr, ...],
}
#: Integer fields that may exceed 64 bits (counts of modes: 4^50 and beyond).
BIG_INTEGERS = frozenset(((GuardedSchedule, "n_modes"),))
#: Fields that cache what the object computes (not part of its value): not written, rebuilt
#: empty by the constructor.
CACHES = frozenset(((SymbolTable, "_memo"), (SymbolTable, "_numbers")))


@dataclasses.dataclass(frozen=True)
class Custom:
    """How a class that is not a dataclass is saved: its fields (name -> type), the values of
    an object's fields, and the object from checked values."""
    fields: dict[str, object]
    values: typing.Callable[[typing.Any], tuple]
    build: typing.Callable[..., object]


CUSTOM: dict[type, Custom] = {
    per_mode.Block: Custom(
        fields={"equations": tuple[tuple[str, int], ...],
                "unknowns": tuple[per_mode.Instance, ...]},
        values=lambda o: (o.equations, o.unknowns),
        build=lambda equations, unknowns: per_mode.Block(equations=equations,
                                                         unknowns=unknowns)),
    per_mode.LatentEquation: Custom(
        fields={"eq_id": str, "k": int, "expr": sp.Expr | None, "residual": E.Expr | None,
                "table": SymbolTable | None},
        values=lambda o: o.parts,
        build=lambda eq_id, k, expr, residual, table: per_mode.LatentEquation(
            eq_id, k, expr, residual=residual, table=table)),
    SourceLoc: Custom(
        fields={"file": str, "line": int, "col": int},
        values=lambda o: (o.file, o.line, o.col),
        build=lambda file, line, col: SourceLoc(file, line, col)),
    F.FunctionTable: Custom(
        fields={"functions": dict[str, F.Function],
                "derivatives": dict[str, tuple[F.Function, frozenset[str]]]},
        values=lambda o: (o.functions, o.derivatives),
        build=lambda functions, derivatives: F.FunctionTable.restore(functions, derivatives)),
}

_EXPR_NODES = frozenset(typing.get_args(E.Expr))
_EXPR_NAMES = {"const", "str", "ref", "time", "der", "call", "bin", "un", "if"}


# --- types -----------------------------------------------------------------------------------

class Type:
    """A field's type, as the reader checks it: ``kind`` and its parameters."""

    __slots__ = ("kind", "args", "text")

    def __init__(self, kind: str, args: tuple = (), text: str = ""):
        self.kind, self.args, self.text = kind, args, text or kind


ANY = Type("any", text="a value")
_SIMPLE = {str: Type("str", text="a string"), int: Type("int", text="an integer"),
           float: Type("float", text="a number"), bool: Type("bool", text="a boolean"),
           NoneType: Type("none", text="null"), Fraction: Type("fraction", text="a fraction")}
_EXPR = Type("expr", text="an expression tree")
_JSON = Type("any", text="JSON data")
_BIG_INT = Type("int", ("big",), "an integer")


def type_of(hint) -> Type:
    """The `Type` of the annotation ``hint``."""
    if hint in _SIMPLE:
        return _SIMPLE[hint]
    if hint in (typing.Any, object):
        return ANY
    if hint is JSON_DATA:
        return _JSON
    if hint in _EXPR_NODES:
        return Type("expr", (hint,), f"an expression tree ({hint.__name__})")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, UnionType):
        # the node classes of an expression tree (`mdae_fmu.expr.Expr`) are one member
        members = tuple(type_of(a) for a in args if a not in _EXPR_NODES)
        if any(a in _EXPR_NODES for a in args):
            members += (_EXPR,)
        if len(members) == 1:
            return members[0]
        return Type("union", members, " or ".join(m.text for m in members))
    if origin is typing.Literal:
        return Type("literal", args, " or ".join(repr(a) for a in args))
    if hint in (tuple, frozenset, set, list):
        return Type(hint.__name__, (ANY,), f"a {hint.__name__}")
    if hint is dict:
        return Type("dict", (ANY, ANY), "a dictionary")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return Type("tuple", (type_of(args[0]),), "a tuple")
        return Type("tupleof", tuple(type_of(a) for a in args), f"a tuple of {len(args)}")
    if origin in (frozenset, set, list):
        return Type(origin.__name__, (type_of(args[0]),), f"a {origin.__name__}")
    if origin is dict:
        return Type("dict", (type_of(args[0]), type_of(args[1])), "a dictionary")
    if isinstance(hint, type) and issubclass(hint, sp.Basic):
        return Type("sympy", (hint,), f"a sympy {hint.__name__}")
    if hint in _NAMES:
        return Type("object", (hint,), _a(hint.__name__))
    raise TypeError(f"mdae_fmu.saved cannot read a value of type {hint!r}")


_FIELDS: dict[type, dict[str, Type]] = {}


def fields_of(cls: type) -> dict[str, Type]:
    """The saved fields of the `CLASSES` class ``cls`` and their types, in order."""
    hit = _FIELDS.get(cls)
    if hit is not None:
        return hit
    custom = CUSTOM.get(cls)
    if custom is not None:
        out = {n: type_of(h) for n, h in custom.fields.items()}
    else:
        import sys
        # (names that modules import for type checking only: `mdae_fmu.lazy_modules`)
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]),
                                      {"FunctionTable": F.FunctionTable, "sp": sp, "E": E,
                                       "GuardedSchedule": GuardedSchedule,
                                       "Automaton": explore.Automaton})
        out = {}
        for f in dataclasses.fields(cls):
            if (cls, f.name) in CACHES:
                continue
            out[f.name] = _BIG_INT if (cls, f.name) in BIG_INTEGERS else \
                type_of(FIELD_TYPES.get((cls, f.name), hints[f.name]))
    _FIELDS[cls] = out
    return out


def imprecise_fields() -> list[str]:
    """``Class.field`` of every saved field whose type says nothing of what it holds (a bare
    container, `Any`): its values are read as any saved value. `FIELD_TYPES` should name them."""
    out: list[str] = []

    def vague(t: Type) -> bool:
        return t is ANY or any(vague(a) for a in t.args if isinstance(a, Type))

    for cls in CLASSES.values():
        out.extend(f"{cls.__name__}.{n}" for n, t in fields_of(cls).items() if vague(t))
    return out


# --- writing ---------------------------------------------------------------------------------

def set_order(s: set | frozenset) -> list:
    """The elements of ``s`` in an order that does not depend on the process: sorted, or, for
    elements that do not compare with each other (``("x", 0)`` beside ``("x", "y")``, numbers
    beside names), sorted by type name and ``repr``. Iterating a set of strings follows
    ``PYTHONHASHSEED``; a saved analysis written that way differed between two runs."""
    try:
        return sorted(s)
    except TypeError:
        return sorted(s, key=lambda x: (type(x).__qualname__, repr(x)))


class Writer:
    """Object graph -> JSON values (module docstring)."""

    def __init__(self):
        self.ids: dict[int, int] = {}
        self.keep: list = []            # the objects numbered (their ids stay valid)

    def _number(self, o) -> int | None:
        """``o``'s number if it has one already, else None after giving it the next one."""
        k = self.ids.get(id(o))
        if k is None:
            self.ids[id(o)] = len(self.keep)
            self.keep.append(o)
        return k

    def value(self, o):
        if type(o) is SourceLoc:            # (an int of its own class, a record's fields)
            return self._object(o)
        if o is None or isinstance(o, (bool, int, str)):
            return o
        if isinstance(o, float):
            return o if math.isfinite(o) else {"$f": repr(o)}
        if isinstance(o, list):
            return [self.value(x) for x in o]
        if isinstance(o, (tuple, per_mode.SolvedEquations)):   # (the latter: a lazy tuple)
            return {"$t": [self.value(x) for x in o]}
        if isinstance(o, dict):
            return {"$d": [[self.value(k), self.value(v)] for k, v in o.items()]}
        if isinstance(o, (set, frozenset)):
            return {"$fs" if isinstance(o, frozenset) else "$s":
                    [self.value(x) for x in set_order(o)]}
        if isinstance(o, Fraction):
            return {"$q": [o.numerator, o.denominator]}
        cls = type(o)
        if cls in _EXPR_NODES:
            return {"$e": E.to_json(o)}
        if isinstance(o, sp.Basic):
            return self._sympy(o)
        if cls in _NAMES:
            return self._object(o)
        raise TypeError(f"cannot save a {cls.__module__}.{cls.__qualname__} (not a class of "
                        "mdae_fmu.saved.objects.CLASSES)")

    def _object(self, o):
        cls = type(o)
        out: dict = {}
        if cls not in INLINE:
            k = self._number(o)
            if k is not None:
                return {"@": k}
            out["#"] = self.ids[id(o)]
        out["$o"] = _NAMES[cls]
        custom = CUSTOM.get(cls)
        names = fields_of(cls)
        values = custom.values(o) if custom else tuple(getattr(o, n) for n in names)
        out["f"] = {n: self.value(v) for n, v in zip(names, values)}
        return out

    def _sympy(self, e):
        k = self._number(e)
        if k is not None:
            return {"@": k}
        out: dict = {"#": self.ids[id(e)]}
        tables: dict[int, int] = {}
        written: list = []

        def table_index(table) -> int:
            if id(table) not in tables:
                tables[id(table)] = len(written)
                written.append(table)
            return tables[id(table)]

        tree = sympy_json.write(e, table_index)
        if written:
            out["fn"] = [self.value(t) for t in written]
        out["$sp"] = tree
        return out


# --- reading ---------------------------------------------------------------------------------

class FormatError(ValueError):
    """A value that is not what its place in the file holds; ``path`` names the place."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path


_MARKERS = {"$t": "tuple", "$fs": "frozenset", "$s": "set", "$d": "dict", "$q": "fraction",
            "$f": "float", "$e": "expr", "$sp": "sympy", "$o": "object", "@": "ref"}
_BUILDING = object()


class Reader:
    """JSON values -> object graph, each value checked against its type (module docstring)."""

    def __init__(self):
        self.objects: list = []         # by number; _BUILDING while its fields are read

    def value(self, j, t: Type, path: str, depth: int = 0):
        if depth > MAX_DEPTH:
            raise FormatError(path, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(j, Refused):
            raise FormatError(path, j.reason)
        kind = t.kind
        if kind == "union":
            return self.value(j, self._member(j, t, path), path, depth)
        if kind == "any":
            return self._any(j, path, depth)
        if j is None:
            if kind == "none":
                return None
        elif type(j) is bool:
            if kind == "bool":
                return j
        elif type(j) is int:
            if kind == "int":
                if j.bit_length() > MAX_FIELD_INTEGER_BITS and not t.args:
                    raise FormatError(path, f"integer of {j.bit_length()} bits exceeds the "
                                            f"limit of {MAX_FIELD_INTEGER_BITS} bits")
                return j
            if kind == "float":
                return j
        elif type(j) is float:
            if kind == "float":
                return j
        elif type(j) is str:
            if kind == "str" or kind == "literal" and j in t.args:
                if len(j) > MAX_STRING:
                    raise FormatError(path, f"string of {len(j)} characters exceeds the limit "
                                            f"{MAX_STRING}")
                return j
            if kind == "literal":
                raise FormatError(path, f"expected {t.text}, found {_kind(j)}")
        elif type(j) is list:
            if kind == "list":
                return [self.value(x, t.args[0], f"{path}[{i}]", depth + 1)
                        for i, x in enumerate(self._items(j, path))]
        elif type(j) is dict:
            return self._marked(j, t, path, depth)
        raise FormatError(path, f"expected {t.text}, found {_kind(j)}")

    def _member(self, j, t: Type, path: str) -> Type:
        """The member of the union ``t`` that the JSON value ``j`` can be."""
        shape = _shape(j)
        fits = [m for m in t.args if _fits(shape, m)]
        if not fits:
            raise FormatError(path, f"expected {t.text}, found {_kind(j)}")
        if len(fits) > 1 and shape in ("object", "ref"):
            cls = self._class_of(j, path)
            fits = [m for m in fits if m.kind in ("any", "anyobject", "anyref")
                    or m.kind == "object" and m.args[0] is cls
                    or m.kind == "sympy" and cls is not None and issubclass(cls, m.args[0])]
            if not fits:
                what = _a(cls.__name__) if cls is not None else f"the class {shown(j['$o'])}"
                raise FormatError(path, f"expected {t.text}, found "
                                        f"{'a reference to ' if shape == 'ref' else ''}{what}")
        return fits[0]

    def _class_of(self, j: dict, path: str):
        if "@" in j:
            return type(self._ref(j, path))
        name = j.get("$o")
        return CLASSES.get(name) if type(name) is str else None

    def _items(self, v, path: str) -> list:
        if type(v) is not list:
            raise FormatError(path, f"expected a list, found {_kind(v)}")
        if len(v) > MAX_ITEMS:
            raise FormatError(path, f"{len(v)} items exceed the limit {MAX_ITEMS}")
        return v

    def _marked(self, j: dict, t: Type, path: str, depth: int):
        marker = next((k for k in j if k in _MARKERS), None)
        shape = _MARKERS.get(marker) if marker else None
        kind = t.kind
        if shape is None:
            raise FormatError(path, f"expected {t.text}, found an object with keys "
                                    f"{_keys(j)}")
        if shape == "ref":
            _exact(j, ("@",), path)
            o = self._ref(j, path)
            if not _instance(o, t):
                raise FormatError(path, f"expected {t.text}, found a reference to "
                                        f"{_kind(o)}")
            return o
        if shape == "object":
            return self._object(j, t, path, depth)
        if shape == "sympy":
            e = self._sympy(j, path, depth)
            if not _instance(e, t):
                raise FormatError(path, f"expected {t.text}, found a sympy "
                                        f"{type(e).__name__}")
            return e
        if shape == "float":
            _exact(j, ("$f",), path)
            if kind != "float" or j["$f"] not in ("inf", "-inf", "nan"):
                raise FormatError(path, f"expected {t.text}, found {{\"$f\": "
                                        f"{shown(j['$f'])}}}")
            return float(j["$f"])
        if shape == "expr":
            _exact(j, ("$e",), path)
            if kind != "expr":
                raise FormatError(path, f"expected {t.text}, found an expression tree")
            e = read_expr(j["$e"], path, 0)
            if t.args and type(e) is not t.args[0]:
                raise FormatError(path, f"expected {t.text}, found a {type(e).__name__}")
            return e
        if shape == "fraction":
            _exact(j, ("$q",), path)
            if kind != "fraction":
                raise FormatError(path, f"expected {t.text}, found a fraction")
            return _fraction(j["$q"], path)
        # containers
        _exact(j, (marker,), path)
        items = self._items(j[marker], path + "")
        if shape == "tuple":
            if kind == "tuple":
                return tuple(self.value(x, t.args[0], f"{path}[{i}]", depth + 1)
                             for i, x in enumerate(items))
            if kind == "tupleof":
                if len(items) != len(t.args):
                    raise FormatError(path, f"expected {t.text}, found a tuple of "
                                            f"{len(items)}")
                return tuple(self.value(x, a, f"{path}[{i}]", depth + 1)
                             for i, (x, a) in enumerate(zip(items, t.args)))
        elif shape in ("frozenset", "set") and kind == shape:
            out = [_hashable(self.value(x, t.args[0], f"{path}[{i}]", depth + 1),
                             f"{path}[{i}]") for i, x in enumerate(items)]
            s = frozenset(out) if shape == "frozenset" else set(out)
            if len(s) != len(out):
                raise FormatError(path, f"a {shape} with repeated elements")
            return s
        elif shape == "dict" and kind == "dict":
            d: dict = {}
            for i, pair in enumerate(items):
                if type(pair) is not list or len(pair) != 2:
                    raise FormatError(f"{path}[{i}]", f"expected a [key, value] pair, found "
                                                      f"{_kind(pair)}")
                k = _hashable(self.value(pair[0], t.args[0], f"{path}[{i}].key", depth + 1),
                              f"{path}[{i}].key")
                where = f"{path}[{shown(k)}]"
                if k in d:
                    raise FormatError(where, "repeated key")
                d[k] = self.value(pair[1], t.args[1], where, depth + 1)
            return d
        raise FormatError(path, f"expected {t.text}, found a {shape}")

    def _ref(self, j: dict, path: str):
        n = j["@"]
        if type(n) is not int or not 0 <= n < len(self.objects):
            raise FormatError(path, f"reference {shown(n)} to an object not written before "
                                    "it (objects are numbered in the order they are written)")
        o = self.objects[n]
        if o is _BUILDING:
            raise FormatError(path, f"reference to object #{n}, which contains this "
                                    "reference (a cycle)")
        return o

    def _new_number(self, j: dict, path: str) -> int:
        n = j.get("#")
        if n != len(self.objects) or type(n) is not int:
            raise FormatError(path, f"object number {shown(n)}, expected "
                                    f"{len(self.objects)} (objects are numbered in order)")
        if n >= MAX_OBJECTS:
            raise FormatError(path, f"more than {MAX_OBJECTS} objects")
        self.objects.append(_BUILDING)
        return n

    def _object(self, j: dict, t: Type, path: str, depth: int):
        name = j["$o"]
        cls = CLASSES.get(name) if type(name) is str else None
        if cls is None:
            near = difflib.get_close_matches(str(name), CLASSES, 1)
            raise FormatError(path, f"unknown class {shown(name)}" + (
                f" (did you mean {near[0]}?)" if near else " (not a class of a saved "
                                                           "analysis)"))
        if not _class_fits(cls, t):
            raise FormatError(path, f"expected {t.text}, found {_a(cls.__name__)}")
        if cls in INLINE:
            _exact(j, ("$o", "f"), path)
            n = None
        else:
            _exact(j, ("#", "$o", "f"), path)
            n = self._new_number(j, path)
        f = j["f"]
        if type(f) is not dict:
            raise FormatError(path + ".f", f"expected the fields of {cls.__name__}, found "
                                           f"{_kind(f)}")
        types = fields_of(cls)
        for k in f:
            if k not in types:
                near = difflib.get_close_matches(k, types, 1)
                raise FormatError(f"{path}.{k}", f"{cls.__name__} has no field {shown(k)}"
                                  + (f" (did you mean {near[0]}?)" if near else ""))
        missing = [k for k in types if k not in f]
        if missing:
            raise FormatError(path, f"{cls.__name__}: field {missing[0]} missing")
        values = {k: self.value(v, types[k], f"{path}.{k}", depth + 1) for k, v in f.items()}
        custom = CUSTOM.get(cls)
        try:
            o = custom.build(**values) if custom else cls(**values)
        except (TypeError, ValueError) as err:
            raise FormatError(path, f"{cls.__name__}: {err}") from None
        if n is not None:
            self.objects[n] = o
        return o

    def _sympy(self, j: dict, path: str, depth: int):
        _exact(j, ("#", "$sp", "fn") if "fn" in j else ("#", "$sp"), path)
        n = self._new_number(j, path)
        tables = [self.value(x, _TABLE, f"{path}.fn[{i}]", depth + 1)
                  for i, x in enumerate(self._items(j.get("fn", []), path + ".fn"))]
        try:
            e = sympy_json.SympyReader(tables).read(j["$sp"])
        except sympy_json.SympyFormatError as err:
            raise FormatError(path + err.path, str(err)) from None
        self.objects[n] = e
        return e

    def _any(self, j, path: str, depth: int):
        """A value of a field whose type says nothing (`imprecise_fields`)."""
        if j is None or type(j) in (bool, str, int, float):
            return self.value(j, _SIMPLE[type(j) if j is not None else NoneType], path, depth)
        if type(j) is list:
            return [self._any(x, f"{path}[{i}]", depth + 1)
                    for i, x in enumerate(self._items(j, path))]
        if type(j) is dict:
            shape = _shape(j)
            t = {"tuple": Type("tuple", (ANY,)), "frozenset": Type("frozenset", (ANY,)),
                 "set": Type("set", (ANY,)), "dict": Type("dict", (ANY, ANY)),
                 "fraction": _SIMPLE[Fraction], "float": _SIMPLE[float], "expr": _EXPR,
                 "sympy": Type("sympy", (sp.Basic,)), "object": ANY_OBJECT,
                 "ref": ANY_REF}.get(shape)
            if t is not None:
                return self._marked(j, t, path, depth)
        raise FormatError(path, f"expected a saved value, found {_kind(j)}")


ANY_OBJECT = Type("anyobject", text="an object")
ANY_REF = Type("anyref", text="a reference")
_TABLE = Type("object", (F.FunctionTable,), "a FunctionTable")


def _shape(j) -> str:
    if j is None:
        return "none"
    if type(j) in (bool, int, float, str):
        return {bool: "bool", int: "int", float: "float", str: "str"}[type(j)]
    if type(j) is list:
        return "list"
    if type(j) is dict:
        return next((_MARKERS[k] for k in j if k in _MARKERS), "unknown")
    return "unknown"


def _fits(shape: str, t: Type) -> bool:
    kind = t.kind
    if kind in ("any", "anyobject", "anyref"):
        return True
    if shape == "ref":
        return kind in ("object", "sympy")
    return {"none": ("none",), "bool": ("bool",), "int": ("int", "float"),
            "float": ("float",), "str": ("str", "literal"), "list": ("list",),
            "tuple": ("tuple", "tupleof"), "frozenset": ("frozenset",), "set": ("set",),
            "dict": ("dict",), "fraction": ("fraction",), "expr": ("expr",),
            "sympy": ("sympy",), "object": ("object",)}.get(shape, ()).__contains__(kind)


def _class_fits(cls: type, t: Type) -> bool:
    return t.kind in ("any", "anyobject") or t.kind == "object" and cls is t.args[0]


def _instance(o, t: Type) -> bool:
    if t.kind in ("any", "anyobject", "anyref"):
        return True
    if t.kind == "object":
        return type(o) is t.args[0]
    if t.kind == "sympy":
        return isinstance(o, t.args[0])
    return False


def _exact(j: dict, keys: tuple, path: str) -> None:
    if len(j) != len(keys) or any(k not in j for k in keys):
        extra = [k for k in j if k not in keys]
        what = f"unknown key {shown(extra[0])}" if extra else \
            f"key {next(k for k in keys if k not in j)!r} missing"
        raise FormatError(path, f"{what} (expected the keys {', '.join(keys)})")


def _hashable(v, path: str):
    try:
        hash(v)
    except TypeError:
        raise FormatError(path, f"{_kind(v)} cannot be a set element or a key") from None
    return v


def _fraction(v, path: str) -> Fraction:
    if type(v) is not list or len(v) != 2 or any(type(x) is not int for x in v):
        raise FormatError(path, f"a fraction is [numerator, denominator], found {_kind(v)}")
    p, q = v
    for x in v:
        why = too_big_int(x)
        if why:
            raise FormatError(path, why)
    if q <= 0:
        raise FormatError(path, f"fraction {p}/{q}: the denominator must be positive")
    r = Fraction(p, q)
    if r.denominator != q:
        raise FormatError(path, f"fraction {p}/{q} is not in lowest terms")
    return r


def read_expr(j, path: str, depth: int) -> E.Expr:
    """An expression tree (`mdae_fmu.expr.to_json`'s form), checked node by node: its kind,
    operators among the language's, names as strings, numbers finite."""
    if depth > MAX_EXPR_DEPTH:
        raise FormatError(path, f"expression nested deeper than {MAX_EXPR_DEPTH} levels")
    if type(j) is not list or not j or type(j[0]) is not str or j[0] not in _EXPR_NAMES:
        raise FormatError(path, f"expected an expression node ([kind, ...] with a kind among "
                                f"{', '.join(sorted(_EXPR_NAMES))}), found {_kind(j)}")
    kind, n = j[0], len(j)
    size = {"const": 2, "str": 2, "ref": 2, "time": 1, "der": 2, "call": 3, "bin": 4,
            "un": 3, "if": 4}[kind]
    if n != size:
        raise FormatError(path, f"a {kind} node has {size} entries, found {n}")
    if kind == "const":
        v = j[1]
        if isinstance(v, Refused):
            raise FormatError(path + "[1]", v.reason)
        if type(v) not in (bool, int, float):
            raise FormatError(path + "[1]", f"expected a number or a boolean, found {_kind(v)}")
        return E.Const(value=v)
    if kind in ("str", "ref"):
        v = j[1]
        if type(v) is not str or len(v) > MAX_STRING or (kind == "ref" and not v):
            raise FormatError(path + "[1]", f"expected a {'name' if kind == 'ref' else 'string'}"
                                            f", found {_kind(v)}")
        return E.Str(value=v) if kind == "str" else E.Ref(name=v)
    if kind == "time":
        return E.TIME
    if kind == "der":
        return E.Der(arg=read_expr(j[1], path + "[1]", depth + 1))
    if kind == "call":
        if type(j[1]) is not str or not j[1]:
            raise FormatError(path + "[1]", f"expected a function name, found {_kind(j[1])}")
        if type(j[2]) is not list or len(j[2]) > MAX_ITEMS:
            raise FormatError(path + "[2]", f"expected the arguments (a list), found "
                                            f"{_kind(j[2])}")
        return E.Call(func=j[1], args=tuple(read_expr(a, f"{path}[2][{i}]", depth + 1)
                                            for i, a in enumerate(j[2])))
    if kind == "bin":
        if j[1] not in E.BINARY_OPS:
            raise FormatError(path + "[1]", f"unknown binary operator {shown(j[1])}")
        return E.BinOp(op=j[1], left=read_expr(j[2], path + "[2]", depth + 1),
                       right=read_expr(j[3], path + "[3]", depth + 1))
    if kind == "un":
        if j[1] not in E.UNARY_OPS:
            raise FormatError(path + "[1]", f"unknown unary operator {shown(j[1])}")
        return E.UnOp(op=j[1], arg=read_expr(j[2], path + "[2]", depth + 1))
    return E.If(cond=read_expr(j[1], path + "[1]", depth + 1),
                then=read_expr(j[2], path + "[2]", depth + 1),
                orelse=read_expr(j[3], path + "[3]", depth + 1))


def _a(name: str) -> str:
    return f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}"


def _keys(j: dict) -> str:
    return ", ".join(shown(k) for k in list(j)[:5]) or "none"


def _kind(v) -> str:
    kind = json_kind(v)
    if kind is not None:
        return kind
    if isinstance(v, dict):
        shape = _shape(v)
        return "an object with keys " + _keys(v) if shape == "unknown" else f"a {shape}"
    if isinstance(v, sp.Basic):
        return f"a sympy {type(v).__name__}"
    return _a(type(v).__name__)
