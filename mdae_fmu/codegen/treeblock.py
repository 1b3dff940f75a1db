"""Blocks solved on the expression tree: Newton and linear blocks without sympy.

docs/theory.md §11: the blocks of F^c in BTF order are solved by
"explicit assignments where a block is a scalar solvable symbolically, otherwise a Newton
solve of the block". Neither needs symbolic algebra beyond the partial derivatives of the
block's residuals in its unknowns, which the chain rule gives node by node on the project's
own tree (`mdae_fmu.expr`). A block whose equations are all undifferentiated (the
Σ-method's c_i = 0) and plain arithmetic (`plain`: numbers, instances, ``+ - * / ^``,
one-argument elementary functions) is therefore kept on the tree from the analysis to the C
text:

* `tree_derivative` differentiates a residual in one unknown (``None`` stands for 0, so
  structural zeros of the Jacobian are never printed);
* `tree_jacobian` classifies the block: ``linear`` when no partial derivative reads an
  unknown (each residual is then affine in the unknowns: ``F(u) = A u - c`` with ``A`` the
  Jacobian and ``c = -F(0)``), else ``newton``;
* `emit_tree_block` prints the residual and Jacobian callbacks (Newton) or the system
  callback (linear) directly from the tree (`blocks.tree_c`), with the same runtime calls as
  the sympy path (``mdae_newton_block`` / ``mdae_linear_block``).

Everything else (If/relations, user functions, ``abs`` of an unknown, derivative equations)
stays on the sympy path of `mdae_fmu.codegen.blocks.emit_block`. Converting and
differentiating the two-equation loops of a 10^5-equation chain with sympy was most of the
code generation time (issue 16).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from . import block_code as BC
from . import trees as T
from .. import expr as E

if TYPE_CHECKING:
    import sympy as sp

    from ..symbolic import SymbolTable
    from .cprinter import SlotPrinter
    from .slots import Slot


class TreeBlockPlan(Protocol):
    """What a block of the schedule (`mdae_fmu.codegen.blocks.BlockPlan`) shows this module:
    its unknowns, and its residual trees with their symbol table when kept on the tree."""

    @property
    def unknowns(self) -> tuple[sp.Symbol, ...]: ...

    @property
    def trees(self) -> tuple[E.Expr, ...] | None: ...

    @property
    def table(self) -> SymbolTable | None: ...


#: an instance ``(name, order)`` of the expression tree (`trees.tree_instance`)
Instance = tuple[str, int]

_ARITH = frozenset(("+", "-", "*", "/", "^"))
#: the largest block kept on the tree: its Jacobian is printed entry by entry without
#: common-subexpression elimination, which pays only for small blocks
MAX_TREE_BLOCK = 8


class _Unsupported(Exception):
    """A node without a rule here: the block takes the sympy path."""


def plain(e: E.Expr) -> bool:
    """Whether ``e`` is plain arithmetic that `blocks.tree_c` prints: numbers (not Booleans),
    instances ``x``, ``der(x)``..., unary ``-``/``+``, ``+ - * / ^`` and the one-argument
    elementary functions."""
    stack = [e]
    while stack:
        n = stack.pop()
        if T.tree_instance(n) is not None:
            continue
        if isinstance(n, E.Const):
            if isinstance(n.value, bool):
                return False
        elif isinstance(n, E.UnOp):
            if n.op not in ("-", "+"):
                return False
            stack.append(n.arg)
        elif isinstance(n, E.BinOp):
            if n.op not in _ARITH:
                return False
            stack.append(n.left)
            stack.append(n.right)
        elif isinstance(n, E.Call):
            if n.func not in T.C_FUNCTIONS or len(n.args) != 1:
                return False
            stack.append(n.args[0])
        else:
            return False
    return True


def _const(v: float) -> E.Const:
    return E.Const(int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v))


def _div(x: T.Term, y: E.Expr) -> T.Term:
    if x is None:
        return None
    return x if T.is_one(y) else E.BinOp("/", x, y)


def _sq(x: E.Expr) -> E.Expr:
    return E.BinOp("*", x, x)


def _call(f: str, x: E.Expr) -> E.Expr:
    return E.Call(f, (x,))


def _outer(func: str, a: E.Expr) -> E.Expr:
    """d func(a) / da for the elementary functions of `plain` (``abs``: `_Unsupported`)."""
    one = T.ONE
    if func == "sin":
        return _call("cos", a)
    if func == "cos":
        return E.UnOp("-", _call("sin", a))
    if func == "tan":
        return E.BinOp("/", one, _sq(_call("cos", a)))
    if func == "exp":
        return _call("exp", a)
    if func == "log":
        return E.BinOp("/", one, a)
    if func == "sqrt":
        return E.BinOp("/", one, E.BinOp("*", E.Const(2), _call("sqrt", a)))
    if func == "sinh":
        return _call("cosh", a)
    if func == "cosh":
        return _call("sinh", a)
    if func == "tanh":
        return E.BinOp("-", one, _sq(_call("tanh", a)))
    if func == "asin":
        return E.BinOp("/", one, _call("sqrt", E.BinOp("-", one, _sq(a))))
    if func == "acos":
        return E.UnOp("-", E.BinOp("/", one, _call("sqrt", E.BinOp("-", one, _sq(a)))))
    if func == "atan":
        return E.BinOp("/", one, E.BinOp("+", one, _sq(a)))
    raise _Unsupported(func)       # abs: not differentiable at 0, sympy decides (sign)


def tree_derivative(e: E.Expr, u: tuple[str, int]) -> E.Expr | None:
    """∂e/∂u on the expression tree of a `plain` ``e`` by the chain rule, None for 0
    (module docstring). Sub-trees free of ``u`` give None without building anything; a
    constant factor 1 is dropped. Raises `_Unsupported` for ``abs`` of an expression in ``u``
    and for a power whose exponent reads ``u`` and whose base is not a positive constant."""
    inst = T.tree_instance(e)
    if inst is not None:
        return T.ONE if inst == u else None
    if isinstance(e, E.Const):
        return None
    if isinstance(e, E.UnOp):
        d = tree_derivative(e.arg, u)
        return T.tree_neg(d) if e.op == "-" else d
    if isinstance(e, E.Call):
        d = tree_derivative(e.args[0], u)
        return None if d is None else T.tree_mul(_outer(e.func, e.args[0]), d)
    if not isinstance(e, E.BinOp):
        raise _Unsupported(type(e).__name__)
    a, b = e.left, e.right
    da, db = tree_derivative(a, u), tree_derivative(b, u)
    if da is None and db is None:
        return None
    op = e.op
    if op == "+":
        return T.tree_add(da, db)
    if op == "-":
        return T.tree_sub(da, db)
    if op == "*":
        return T.tree_add(T.tree_mul(da, b), T.tree_mul(a, db))
    if op == "/":
        # (a/b)' = a'/b - a b'/b^2
        return T.tree_sub(_div(da, b), None if db is None else
                      E.BinOp("/", T.tree_mul(a, db), _sq(b)))
    # a ^ b
    if db is None:
        if isinstance(b, E.Const):
            n = b.value
            if n == 1:
                return da
            base = a if n == 2 else E.BinOp("^", a, _const(n - 1))
            return T.tree_mul(T.tree_mul(_const(n), base), da)
        return T.tree_mul(T.tree_mul(b, E.BinOp("^", a, E.BinOp("-", b, T.ONE))), da)
    if da is None and isinstance(a, E.Const) and a.value > 0:
        return T.tree_mul(T.tree_mul(e, _call("log", a)), db)
    raise _Unsupported("^")


def tree_jacobian(residuals: Iterable[E.Expr], unknowns: Sequence[Instance]
                  ) -> tuple[str, list[T.Term]] | None:
    """``(kind, J)`` of a block of `plain` residuals in ``unknowns`` (``(name, order)``
    instances): ``J[i * n + j] = ∂r_i/∂u_j`` (None for 0), ``kind`` ``linear`` when no
    entry reads an unknown, else ``newton``; None when a node has no rule here."""
    uset = set(unknowns)
    jac: list[T.Term] = []
    try:
        for r in residuals:
            for u in unknowns:
                jac.append(tree_derivative(r, u))
    except _Unsupported:
        return None
    linear = all(d is None or not _reads(d, uset) for d in jac)
    return ("linear" if linear else "newton"), jac


def _reads(e: E.Expr, instances: set[Instance]) -> bool:
    stack = [e]
    while stack:
        n = stack.pop()
        inst = T.tree_instance(n)
        if inst is not None:
            if inst in instances:
                return True
        else:
            stack.extend(E.children(n))
    return False


def substitute_instances(e: E.Expr, mapping: dict[Instance, E.Expr]) -> E.Expr:
    """``e`` with every instance ``(name, order)`` of ``mapping`` replaced by its tree (an
    instance node is replaced whole, never inside: ``x`` inside ``der(x)`` is another
    instance)."""
    inst = T.tree_instance(e)
    if inst is not None:
        return mapping.get(inst, e)
    if isinstance(e, E.UnOp):
        return E.UnOp(e.op, substitute_instances(e.arg, mapping))
    if isinstance(e, E.BinOp):
        return E.BinOp(e.op, substitute_instances(e.left, mapping),
                       substitute_instances(e.right, mapping))
    if isinstance(e, E.Call):
        return E.Call(e.func, tuple(substitute_instances(a, mapping) for a in e.args))
    return e


def at_zero(e: E.Expr, instances: set[Instance]) -> E.Expr:
    """``e`` with every instance of ``instances`` replaced by 0 (the constant term
    ``F(0)`` of an affine residual)."""
    zero: E.Expr = E.Const(0)
    return substitute_instances(e, dict.fromkeys(instances, zero))


def tree_block_ok(trees: Sequence[E.Expr | None]) -> bool:
    """Whether a block of these residual trees (None: a differentiated equation) is kept
    on the tree (module docstring; at most `MAX_TREE_BLOCK` equations)."""
    return (0 < len(trees) <= MAX_TREE_BLOCK
            and all(t is not None and plain(t) for t in trees))


def tree_block_parts(block: TreeBlockPlan
                     ) -> tuple[SymbolTable, tuple[E.Expr, ...], list[Instance]] | None:
    """The symbol table, residual trees and unknown instances ``(name, order)`` of a block
    kept on the tree (``block.trees``); None for another block or when an unknown is not an
    instance."""
    table, res = block.table, block.trees
    if table is None or res is None:
        return None
    instances = [table.instance(s) for s in block.unknowns]
    unknowns = [u for u in instances if u is not None]
    return (table, res, unknowns) if len(unknowns) == len(instances) else None


def emit_tree_block(block: TreeBlockPlan, index: int, printer: SlotPrinter,
                    holes: dict[Slot, int]) -> BC.BlockCode | None:
    """`blocks.BlockCode` of a block with residual trees (``block.trees``), or None when a
    node has no derivative rule or an instance has no Real slot (then the sympy path of
    `blocks.emit_block` decides). Same C interface as the sympy path: ``blk<k>_residual`` /
    ``blk<k>_jacobian`` for ``mdae_newton_block``, ``blk<k>_system`` for
    ``mdae_linear_block``; a linear block of one equation is an explicit assignment.
    ``holes``: the block's Real slots, filled by the printing (`blocks.emit_block`)."""
    parts = tree_block_parts(block)
    if parts is None:
        return None
    table, res, unknowns = parts
    kj = tree_jacobian(res, unknowns)
    if kj is None:
        return None
    kind, jac = kj
    n = len(unknowns)

    def c(e: E.Expr) -> str:
        return T.tree_c(e, printer, table)

    try:
        if kind == "linear" and n == 1:
            sol = T.tree_solution(res[0], unknowns[0])
            if sol is not None:
                return BC.explicit_block(index, f"    {printer.symbol(block.unknowns[0])} = "
                                        f"{c(sol)};", holes)
        if kind == "linear":
            zero = set(unknowns)
            lines = [f"    A[{k}] = {c(d)};" for k, d in enumerate(jac) if d is not None]
            lines += [f"    c[{k}] = -({c(at_zero(r, zero))});" for k, r in enumerate(res)]
            return BC.solver_block("linear", index, printer, block.unknowns,
                                  BC.linear_helpers(n, lines), holes)
        f_lines = [f"    F[{k}] = {c(r)};" for k, r in enumerate(res)]
        j_lines = [f"    J[{k}] = {c(d)};" for k, d in enumerate(jac) if d is not None]
        return BC.solver_block("newton", index, printer, block.unknowns,
                              BC.newton_helpers(n, f_lines, j_lines), holes)
    except KeyError:
        return None
