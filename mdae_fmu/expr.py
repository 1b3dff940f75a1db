"""Expressions of the mDAE model: a small immutable tree, cheap to build and to walk.

The importers produce these nodes; the structural stages read derivative orders from them
(`derivative_orders`), and the symbolic stages convert them to sympy when they need algebra
(`mdae_fmu.symbolic`). Nodes are frozen dataclasses, so equal trees compare and hash equal,
which is what the round-trip and "XML form == Modelica form" tests rely on; `records.quick_init`
makes their construction about twice as fast.

Names are the scalarized variable names of the flat model, e.g. ``mod1.x[1]``; a Base Modelica
quoted identifier ``'a.b[1]'`` is stored without its quotes, as ``a.b[1]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Union

from .records import quick_init

# Binary operators, as spelled in Modelica source.
ARITH_OPS = ("+", "-", "*", "/", "^", ".+", ".-", ".*", "./", ".^")
REL_OPS = ("<", "<=", ">", ">=", "==", "<>")
BOOL_OPS = ("and", "or")
BINARY_OPS = ARITH_OPS + REL_OPS + BOOL_OPS
UNARY_OPS = ("-", "+", "not")

# Built-in functions accepted in expressions (name -> allowed argument counts).
MATH_FUNCTIONS = {
    "sin": (1,), "cos": (1,), "tan": (1,), "asin": (1,), "acos": (1,), "atan": (1,),
    "atan2": (2,), "sinh": (1,), "cosh": (1,), "tanh": (1,), "exp": (1,), "log": (1,),
    "log10": (1,), "sqrt": (1,), "abs": (1,), "sign": (1,), "min": (2,), "max": (2,),
    "floor": (1,), "ceil": (1,), "div": (2,), "mod": (2,), "rem": (2,), "integer": (1,),
    "noEvent": (1,), "smooth": (2,), "homotopy": (2,), "semiLinear": (3,),
    "erf": (1,), "erfc": (1,),      # Modelica.Math.Special.erf/erfc (C99 <math.h>)
}
# Event and clock-free discrete operators (name -> allowed argument counts).
EVENT_FUNCTIONS = {
    "pre": (1,), "edge": (1,), "change": (1,), "initial": (0,), "terminal": (0,),
    "sample": (2,),
}
BUILTIN_FUNCTIONS = {**MATH_FUNCTIONS, **EVENT_FUNCTIONS}


@quick_init
@dataclass(frozen=True, slots=True)
class Const:
    """A literal: float, int or bool."""
    value: float | int | bool


@quick_init
@dataclass(frozen=True, slots=True)
class Str:
    """A string literal (assert and terminate messages only)."""
    value: str


@quick_init
@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a declared variable, parameter or constant, by scalarized name."""
    name: str


@quick_init
@dataclass(frozen=True, slots=True)
class Time:
    """The built-in independent variable ``time``."""


@quick_init
@dataclass(frozen=True, slots=True)
class Der:
    """``der(arg)``; ``der(der(x))`` nests."""
    arg: "Expr"


@quick_init
@dataclass(frozen=True, slots=True)
class Call:
    """A built-in function or operator applied to arguments (``sin``, ``pre``, ``edge``...)."""
    func: str
    args: tuple["Expr", ...]


@quick_init
@dataclass(frozen=True, slots=True)
class BinOp:
    op: str
    left: "Expr"
    right: "Expr"


@quick_init
@dataclass(frozen=True, slots=True)
class UnOp:
    op: str
    arg: "Expr"


@quick_init
@dataclass(frozen=True, slots=True)
class If:
    """``if cond then a else b`` (``elseif`` nests in ``orelse``)."""
    cond: "Expr"
    then: "Expr"
    orelse: "Expr"


Expr = Union[Const, Str, Ref, Time, Der, Call, BinOp, UnOp, If]
ZERO = Const(0)
TIME = Time()


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``e``."""
    t = type(e)           # the node classes are final (slots dataclasses): type dispatch
    if t is BinOp:
        assert isinstance(e, BinOp)
        return (e.left, e.right)
    if t is UnOp or t is Der:
        assert isinstance(e, (UnOp, Der))
        return (e.arg,)
    if t is Call:
        assert isinstance(e, Call)
        return e.args
    if t is If:
        assert isinstance(e, If)
        return (e.cond, e.then, e.orelse)
    return ()


def walk(e: Expr) -> Iterator[Expr]:
    """All nodes of ``e``, pre-order, without recursion (deep sums do not overflow the stack).
    The children are pushed inline by node type: this runs over every node of every equation
    several times per analysis."""
    stack = [e]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        yield node
        t = type(node)
        if t is BinOp:
            assert isinstance(node, BinOp)
            push(node.right)
            push(node.left)
        elif t is UnOp or t is Der:
            assert isinstance(node, (UnOp, Der))
            push(node.arg)
        elif t is Call:
            assert isinstance(node, Call)
            stack.extend(reversed(node.args))
        elif t is If:
            assert isinstance(node, If)
            push(node.orelse)
            push(node.then)
            push(node.cond)


def refs(e: Expr) -> set[str]:
    """Names referenced anywhere in ``e`` (inside ``pre``/``der`` too). One loop with the
    children pushed inline (as `walk`, without a generator: it runs over every equation)."""
    out: set[str] = set()
    add = out.add
    stack = [e]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        t = type(node)
        if t is Ref:
            assert isinstance(node, Ref)
            add(node.name)
        elif t is BinOp:
            assert isinstance(node, BinOp)
            push(node.right)
            push(node.left)
        elif t is UnOp or t is Der:
            assert isinstance(node, (UnOp, Der))
            push(node.arg)
        elif t is Call:
            assert isinstance(node, Call)
            stack.extend(node.args)
        elif t is If:
            assert isinstance(node, If)
            push(node.orelse)
            push(node.then)
            push(node.cond)
    return out


def current_refs(e: Expr) -> set[str]:
    """Names read at the current instant: every reference not under ``pre(...)``."""
    out: set[str] = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Ref):
            out.add(n.name)
        elif isinstance(n, Call) and n.func == "pre":
            continue
        else:
            stack.extend(children(n))
    return out


def strip_not(c: Expr) -> tuple[Expr, bool]:
    """A condition as ``(atom, positive)``: ``not not g`` is ``(g, True)``, ``not g``
    ``(g, False)``."""
    pos = True
    while isinstance(c, UnOp) and c.op == "not":
        c, pos = c.arg, not pos
    return c, pos


def unedge(c: Expr) -> Expr:
    """``c`` for ``edge(c)``; any other expression unchanged."""
    if isinstance(c, Call) and c.func == "edge" and len(c.args) == 1:
        return c.args[0]
    return c


def derivative_orders(e: Expr) -> dict[str, int]:
    """Highest derivative order of each variable in ``e``, i.e. the row of Pryce's signature
    matrix for this equation (docs/theory.md §4.1). Occurrences inside ``pre(...)`` are left limits,
    known at the current instant, and are not counted.
    """
    orders: dict[str, int] = {}
    stack: list[tuple[Expr, int]] = [(e, 0)]
    while stack:
        node, k = stack.pop()
        if isinstance(node, Ref):
            if orders.get(node.name, -1) < k:
                orders[node.name] = k
        elif isinstance(node, Der):
            stack.append((node.arg, k + 1))
        elif isinstance(node, Call) and node.func == "pre":
            continue
        else:
            stack.extend((c, k) for c in children(node))
    return orders


def residual(lhs: Expr, rhs: Expr) -> Expr:
    """Residual form of ``lhs = rhs``: ``lhs - rhs``, or one side alone when the other is 0.

    Printing a residual ``a - b`` back as ``a = b`` and re-parsing gives the same residual,
    which makes parse -> print -> parse a fixed point.
    """
    if is_numeric_zero(lhs):
        return rhs
    if is_numeric_zero(rhs):
        return lhs
    return BinOp("-", lhs, rhs)


def is_numeric_zero(e: Expr) -> bool:
    """``e`` is the number 0 (not ``false``, which compares equal to 0 in Python: ``b =
    false`` must keep its right side, OpenModelica's flattening of the MSL Integrator's
    ``local_reset = false``)."""
    return type(e) is Const and e.value == 0 and type(e.value) is not bool


def split_residual(r: Expr) -> tuple[Expr, Expr]:
    """Inverse of `residual` for printing: ``a - b`` -> (a, b), anything else -> (0, r)."""
    if isinstance(r, BinOp) and r.op == "-":
        return r.left, r.right
    return ZERO, r


def substitute(e: Expr, mapping: dict[Expr, Expr]) -> Expr:
    """Replace every sub-tree found as a key of ``mapping`` (bottom-up, structural equality)."""
    if e in mapping:
        return mapping[e]
    if isinstance(e, BinOp):
        return BinOp(e.op, substitute(e.left, mapping), substitute(e.right, mapping))
    if isinstance(e, UnOp):
        return UnOp(e.op, substitute(e.arg, mapping))
    if isinstance(e, Der):
        return Der(substitute(e.arg, mapping))
    if isinstance(e, Call):
        return Call(e.func, tuple(substitute(a, mapping) for a in e.args))
    if isinstance(e, If):
        return If(substitute(e.cond, mapping), substitute(e.then, mapping),
                  substitute(e.orelse, mapping))
    return e


# --- JSON form: nested lists, the node kind first -------------------------------------------

def to_json(e: Expr) -> list[Any]:
    """JSON-serializable form: ``["ref", name]``, ``["const", v]``, ``["bin", op, l, r]``..."""
    if isinstance(e, Const):
        return ["const", e.value]
    if isinstance(e, Str):
        return ["str", e.value]
    if isinstance(e, Ref):
        return ["ref", e.name]
    if isinstance(e, Time):
        return ["time"]
    if isinstance(e, Der):
        return ["der", to_json(e.arg)]
    if isinstance(e, Call):
        return ["call", e.func, [to_json(a) for a in e.args]]
    if isinstance(e, BinOp):
        return ["bin", e.op, to_json(e.left), to_json(e.right)]
    if isinstance(e, UnOp):
        return ["un", e.op, to_json(e.arg)]
    if isinstance(e, If):
        return ["if", to_json(e.cond), to_json(e.then), to_json(e.orelse)]
    raise TypeError(f"not an expression: {e!r}")


def from_json(j: Any) -> Expr:
    """Inverse of `to_json`."""
    kind = j[0]
    if kind == "const":
        return Const(j[1])
    if kind == "str":
        return Str(j[1])
    if kind == "ref":
        return Ref(j[1])
    if kind == "time":
        return TIME
    if kind == "der":
        return Der(from_json(j[1]))
    if kind == "call":
        return Call(j[1], tuple(from_json(a) for a in j[2]))
    if kind == "bin":
        return BinOp(j[1], from_json(j[2]), from_json(j[3]))
    if kind == "un":
        return UnOp(j[1], from_json(j[2]))
    if kind == "if":
        return If(from_json(j[1]), from_json(j[2]), from_json(j[3]))
    raise ValueError(f"unknown expression kind {kind!r}")
