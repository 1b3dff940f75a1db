"""Expression trees of block residuals, without sympy: the instances they read, their linear
solution for one unknown, and their C text.

docs/theory.md §11: a scalar block whose residual is plain arithmetic linear in its unknown is
an explicit assignment; `tree_solution` reads it off the tree and `tree_c` prints it. The
partial arithmetic here (`tree_add`, `tree_mul`...: None stands for 0) also builds the
derivatives of `mdae_fmu.codegen.treeblock`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, overload

import sympy as sp

from .. import expr as E
from .slots import Slot

if TYPE_CHECKING:
    from ..symbolic import SymbolTable
    from .cprinter import SlotPrinter, SlotValue


C_FUNCTIONS = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
                 "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                 "exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "fabs"}


ONE = E.Const(1)

#: a term of the partial arithmetic: an expression, or None for 0
Term = Optional[E.Expr]


def tree_instance(e: E.Expr) -> tuple[str, int] | None:
    """``(name, order)`` of ``x``, ``der(x)``, ``der(der(x))``; None for anything else."""
    if type(e) is E.Ref:    # (exact types first: this runs on every node of every block)
        return (e.name, 0)
    if type(e) is not E.Der:
        return None
    k = 0
    while isinstance(e, E.Der):
        e, k = e.arg, k + 1
    return (e.name, k) if isinstance(e, E.Ref) else None


def tree_symbols(e: E.Expr, table: SymbolTable) -> frozenset[sp.Symbol]:
    """The sympy symbols of the instances in ``e`` (as `SymbolTable.to_sympy` would give)."""
    out: set[sp.Symbol] = set()
    stack = [e]
    pop, push, add, sym = stack.pop, stack.append, out.add, table.sym
    while stack:
        n = pop()
        if type(n) is E.BinOp:      # the common nodes inline, the others by `E.children`
            push(n.right)
            push(n.left)
            continue
        if type(n) is E.Const:
            continue
        if type(n) is E.Ref:        # (order 0: a symbol, an instance's or a constant's)
            add(sym(n.name))
            continue
        inst = tree_instance(n)
        if inst is not None:
            s = table.sym(*inst)
            if isinstance(s, sp.Symbol):
                out.add(s)
        else:
            stack.extend(E.children(n))
    return frozenset(out)


def tree_instance_keys(e: E.Expr) -> set[str | tuple[str, int]]:
    """The instances ``e`` reads as `tree_symbols` finds them, without making their
    symbols: a name read at order 0 as itself, a derivative ``der(x, k)`` as ``(name, k)``
    (a constant's derivative included, whose symbol is 0). Distinct keys are distinct
    instances, so `SymbolTable.sym` of the keys gives `tree_symbols` (and the zeros)."""
    out: set[str | tuple[str, int]] = set()
    stack = [e]
    pop, push, add = stack.pop, stack.append, out.add
    while stack:
        n = pop()
        if type(n) is E.BinOp:
            push(n.right)
            push(n.left)
        elif type(n) is E.Ref:
            add(n.name)
        elif type(n) is not E.Const:
            inst = tree_instance(n)
            if inst is None:
                stack.extend(E.children(n))
            else:
                add(inst if inst[1] else inst[0])
    return out


class NotLinear(Exception):
    """Raised by `linear_coefficients` on a tree that is not plain arithmetic linear in the
    unknown."""


def is_one(x: Term) -> bool:
    return isinstance(x, E.Const) and not isinstance(x.value, bool) and x.value == 1


def tree_add(x: Term, y: Term) -> Term:
    return y if x is None else (x if y is None else E.BinOp("+", x, y))


@overload
def tree_neg(x: None) -> None: ...
@overload
def tree_neg(x: E.Expr) -> E.Expr: ...
@overload
def tree_neg(x: Term) -> Term: ...
def tree_neg(x: Term) -> Term:
    if x is None:
        return None
    return x.arg if isinstance(x, E.UnOp) and x.op == "-" else E.UnOp("-", x)


def tree_sub(x: Term, y: Term) -> Term:
    return tree_neg(y) if x is None else (x if y is None else E.BinOp("-", x, y))


@overload
def tree_mul(x: E.Expr, y: E.Expr) -> E.Expr: ...
@overload
def tree_mul(x: Term, y: Term) -> Term: ...
def tree_mul(x: Term, y: Term) -> Term:
    if x is None or y is None:
        return None
    return y if is_one(x) else (x if is_one(y) else E.BinOp("*", x, y))


def linear_coefficients(e: E.Expr, u: tuple[str, int]) -> tuple[Term, Term]:
    """``(a, b)`` with ``e = a*u + b`` and a, b free of ``u`` (None = 0); raises `NotLinear`
    when ``e`` is not linear in ``u`` or has a node outside plain arithmetic (then the block
    takes the sympy path)."""
    inst = tree_instance(e)
    if inst is not None:
        return (ONE, None) if inst == u else (None, e)
    if isinstance(e, E.Const):
        if isinstance(e.value, bool):
            raise NotLinear
        return None, e
    if isinstance(e, E.UnOp) and e.op in ("-", "+"):
        a, b = linear_coefficients(e.arg, u)
        if a is None:
            return None, e
        return (tree_neg(a), tree_neg(b)) if e.op == "-" else (a, b)
    if isinstance(e, E.Call) and e.func in C_FUNCTIONS and len(e.args) == 1:
        a, _ = linear_coefficients(e.args[0], u)
        if a is not None:
            raise NotLinear
        return None, e
    if not isinstance(e, E.BinOp) or e.op not in ("+", "-", "*", "/", "^"):
        raise NotLinear
    a1, b1 = linear_coefficients(e.left, u)
    a2, b2 = linear_coefficients(e.right, u)
    if a1 is None and a2 is None:
        return None, e
    if e.op == "+":
        return tree_add(a1, a2), tree_add(b1, b2)
    if e.op == "-":
        return tree_sub(a1, a2), tree_sub(b1, b2)
    if e.op == "*" and a1 is None:
        return tree_mul(e.left, a2), tree_mul(e.left, b2)
    if e.op == "*" and a2 is None:
        return tree_mul(a1, e.right), tree_mul(b1, e.right)
    if e.op == "/" and a2 is None and a1 is not None:     # (a1 is not None: above)
        return (E.BinOp("/", a1, e.right),
                None if b1 is None else E.BinOp("/", b1, e.right))
    raise NotLinear


def tree_solution(residual: E.Expr, u: tuple[str, int]) -> E.Expr | None:
    """The explicit solution ``u = -b/a`` of ``0 = a*u + b`` read off the expression tree
    (docs/theory.md §11: explicit assignment where a block is a scalar solvable
    symbolically), or None when the residual is not plain arithmetic linear in ``u``. A
    coefficient that is a non-zero constant is divided out; otherwise the division is left to
    run time (as the sympy path does)."""
    try:
        a, b = linear_coefficients(residual, u)
    except NotLinear:
        return None
    return solution_of(a, b)


def solution_of(a: Term, b: Term) -> E.Expr | None:
    """``u = -b/a``, the explicit solution of ``0 = a*u + b`` as `tree_solution` gives it from
    the coefficients `linear_coefficients` reads off the residual (None: no solution)."""
    if a is None:
        return None
    if isinstance(a, E.Const) and (isinstance(a.value, bool) or a.value == 0):
        return None
    nb = tree_neg(b) if b is not None else E.Const(0)
    if is_one(a):
        return nb
    if (isinstance(a, E.Const) and a.value == -1) or (isinstance(a, E.UnOp) and a.op == "-"
                                                      and is_one(a.arg)):
        return b if b is not None else E.Const(0)
    return E.BinOp("/", nb, a)


def _c_number(v: float | int | bool) -> str:
    if isinstance(v, int):
        return f"{v}.0" if abs(v) < 2 ** 53 else repr(float(v))
    v = float(v)
    if v != v:
        return "(0.0/0.0)"
    if v in (float("inf"), float("-inf")):
        return "(1.0/0.0)" if v > 0 else "(-1.0/0.0)"
    return repr(v) if v >= 0 else f"({v!r})"


def tree_c(e: E.Expr, printer: SlotPrinter, table: SymbolTable) -> str:
    """C text of a plain-arithmetic tree (the nodes `tree_solution` accepts); every instance
    through ``printer.slots`` (names never reach C: an instance without a slot raises
    `KeyError`); compound terms parenthesized, powers as in `SlotPrinter`."""
    if type(e) is E.BinOp and e.op != "^":      # (the most common node first)
        return f"({tree_c(e.left, printer, table)} {e.op} {tree_c(e.right, printer, table)})"
    t = type(e)
    inst = tree_instance(e) if t is E.Ref or t is E.Der else None
    if inst is not None:
        v = printer.slots[table.sym(*inst)]
        # Integer and Boolean slots read as double: Modelica's / is real division
        return printer.value(v) if type(v) is Slot and v.type == "Real" \
            else f"((double){printer.value(v)})"
    if type(e) is E.Const:
        return _c_number(e.value)
    if t is E.UnOp:
        assert isinstance(e, E.UnOp)
        a = tree_c(e.arg, printer, table)
        return f"(-{a})" if e.op == "-" else a
    if t is E.Call:
        assert isinstance(e, E.Call)
        return f"{C_FUNCTIONS[e.func]}({tree_c(e.args[0], printer, table)})"
    assert isinstance(e, E.BinOp)       # the last node kind of plain arithmetic
    a = tree_c(e.left, printer, table)
    if e.op == "^":
        ex = e.right
        if isinstance(ex, E.Const) and not isinstance(ex.value, bool) \
                and float(ex.value).is_integer() and 1 <= ex.value <= 4:
            return "(" + "*".join([a] * int(ex.value)) + ")"
        if isinstance(ex, E.Const) and ex.value == 0.5:
            return f"sqrt({a})"
        return f"pow({a}, {tree_c(ex, printer, table)})"
    return f"({a} {e.op} {tree_c(e.right, printer, table)})"



#: the token of a unary operator in a `tree_shape` key
_UNARY_TOKENS = {"-": ("u", "-"), "+": ("u", "+"), "not": ("u", "not")}

@dataclass(frozen=True, slots=True)
class Resolved:
    """An instance `tree_shape` reads whose value is not a lone Real slot: its symbol,
    its value in the slot map, and its token in a key: `SHARED` for a Real slot that
    another symbol has too, the C text of any other value."""
    symbol: sp.Basic
    value: SlotValue
    token: object


SHARED = "shared"


@dataclass
class ShapeCache:
    """What `tree_shape` reads of a printer's slot map for the instances of ``table``
    (`shape_cache`): the slot map of an instance never changes while a printer prints (only
    the temporaries of `mdae_fmu.codegen.blocks` come and go). ``known``: by instance key
    (`tree_instance_keys`), its value when a Real slot that no other symbol has (a hole of
    the block's C), else its `Resolved`."""
    table: SymbolTable
    known: dict[object, object]


def _resolved(s: sp.Basic, v: SlotValue, printer: SlotPrinter, shared: set[int]
              ) -> object:
    """The entry of `ShapeCache.known` of the symbol ``s`` of value ``v``."""
    if type(v) is Slot and v.array == "r" and not v.pre:       # (`Slot.real`)
        return v if id(v) not in shared else Resolved(symbol=s, value=v, token=SHARED)
    return Resolved(symbol=s, value=v, token=("value", printer.value(v),
                                              type(v) is Slot and v.type == "Real"))


def shape_cache(printer: SlotPrinter, table: SymbolTable) -> ShapeCache:
    """The `ShapeCache` of ``table`` kept by ``printer``, made at once for every symbol of
    the table (one pass over the table: read instance by instance, through sympy's hash of
    each symbol, the slot map cost more than the rest of the blocks' keys at 10^5)."""
    got: ShapeCache | None = printer.shape_caches.get(id(table))
    if got is not None and got.table is table:
        return got
    # the slot map by the ids of its symbols (a sympy symbol hashes in Python), and the Real
    # slot objects that several symbols have
    by_id = {id(s): v for s, v in printer.slots.items()}
    ids = [id(v) for v in by_id.values() if type(v) is Slot]
    shared = set() if len(set(ids)) == len(ids) else \
        {i for i, n in Counter(ids).items() if n > 1}
    known: dict[object, object] = {}
    for key, s in table.symbols_by_key().items():
        v = by_id.get(id(s))
        if v is None:
            v = printer.slots.get(s)        # (an equal symbol, another object)
        if v is not None:
            known[key] = v if type(v) is Slot and v.array == "r" and not v.pre \
                and id(v) not in shared else _resolved(s, v, printer, shared)
    got = printer.shape_caches[id(table)] = ShapeCache(table=table, known=known)
    return got


def tree_shape(tag: object, trees: tuple[E.Expr, ...], unknowns: tuple[sp.Basic, ...],
               table: SymbolTable, printer: SlotPrinter
               ) -> tuple[tuple[object, ...], list[SlotValue]] | None:
    """``(key, values)`` of a block on the tree (residual ``trees``, ``unknowns``; ``tag``
    heads the key): ``values`` the slot-map values of the instances the block reads, the
    unknowns first, then in reading order; ``key`` everything else that the C of the block
    depends on (docs/theory.md §11.2): the trees in pre-order, constants with their type,
    each instance as its number in ``values``, the first time followed by its token
    (`Resolved`; an aliased slot by the number of the first value that is the same
    object). Blocks of equal keys print the same C with their values in the same holes
    (`mdae_fmu.codegen.blocks.emit_block` prints one block per key and fills the others).
    None when a node is outside plain arithmetic and instances, an unknown is not an
    instance, or an instance has no value in ``printer.slots`` (`shape_cache`)."""
    known = shape_cache(printer, table).known
    slots = printer.slots
    local: dict[object, int] = {}
    values: list[SlotValue] = []
    tokens: list[object] = [tag, len(unknowns), len(trees)]
    app = tokens.append
    first: dict[int, int] | None = None
    for u in unknowns:
        inst = table.instance(u)
        if inst is None:
            return None
        k: object = inst if inst[1] else inst[0]
        v = known.get(k)
        if v is None or k in local:
            return None
        j = local[k] = len(values)
        if type(v) is Slot:
            token: object = None
        else:
            assert isinstance(v, Resolved)
            token, v = v.token, v.value
            if token is SHARED:
                if first is None:
                    first = {}
                token = first.setdefault(id(v), j)
        if v is not slots.get(u):       # (`sym` of its instance is the unknown itself)
            return None
        values.append(v)
        app(token)
    for tree in trees:
        stack: list[Any] = [tree]
        pop, push = stack.pop, stack.append
        while stack:
            n = pop()
            t = type(n)
            if t is E.BinOp:
                app(n.op)
                push(n.right)
                push(n.left)
                continue
            if t is E.Ref:
                k = n.name
            elif t is E.Const:
                c = n.value
                tc = type(c)
                # the value and its type (1, 1.0 and True print or solve differently), a
                # zero by its text (0.0 and -0.0 are equal and print differently)
                app((tc, c) if c or tc is not float else (tc, repr(c)))
                continue
            elif t is E.UnOp:
                app(_UNARY_TOKENS.get(n.op) or ("u", n.op))
                push(n.arg)
                continue
            elif t is E.Call:
                app(("c", n.func, len(n.args)))
                for a in reversed(n.args):
                    push(a)
                continue
            elif t is E.Der:
                k = tree_instance(n)
                if k is None:
                    return None
            else:
                return None
            seen = local.get(k)
            if seen is not None:
                app(seen)
                continue
            v = known.get(k)
            if v is None:
                return None
            j = local[k] = len(values)
            app(j)
            if type(v) is Slot:
                values.append(v)
                app(None)
                continue
            assert isinstance(v, Resolved)
            token = v.token
            values.append(v.value)
            if token is SHARED:
                if first is None:
                    first = {}
                token = first.setdefault(id(v.value), j)
            app(token)
    return tuple(tokens), values
