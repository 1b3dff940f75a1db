"""Block solvers: one block of the block-triangular schedule -> C statements.

A block is a square set of residuals ``F(u) = 0`` in its unknowns ``u`` (the structural stage
gives them in solve order, docs/theory.md §2.3, §11: the index-reduced system
solved for the leading derivatives in BTF order, by explicit assignment where a block is a
scalar solvable symbolically, by Newton's method otherwise). Three kinds:

* ``explicit``: one residual, linear in its one unknown: ``a*u + b = 0`` -> ``u = -b/a``. The
  coefficient is read off the expression tree (`linear_split`), which is exact and far faster
  than ``sympy.solve`` on large models.
* ``linear``: every residual is linear in every unknown: ``A u = c`` with ``A`` the Jacobian
  and ``c = -F(0)``; solved at run time by LU with partial pivoting (``mdae_lu_solve``).
* ``newton``: anything else: damped Newton with the analytic Jacobian (sympy), bounded
  iteration count (``mdae_newton`` in the runtime).

Common subexpressions of a block are shared with ``sympy.cse`` when the block has several
expressions (the Jacobian of a Newton block repeats the residual's subterms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy as sp
from sympy.core.function import ArgumentIndexError

from .. import expr as E
from .slots import Slot, c_slot, fill

if TYPE_CHECKING:
    from ..symbolic import SymbolTable


@dataclass(frozen=True)
class BlockPlan:
    """A square block of the schedule: residuals (``0 = r``) and the unknowns they determine.
    ``label`` names the equations (e.g. ``e1+e2+k1''``) for run-time error messages.

    A block of one undifferentiated equation that is plain arithmetic and linear in its
    unknown (`tree_solution`) is kept on the expression tree: ``tree`` is its residual
    (`mdae_fmu.expr`) over the symbols of ``table``, printed to C directly, and ``residuals``
    (sympy) is built only if a consumer asks for it. Most blocks of a large model are such
    equations, and converting them to sympy dominated the code generation time.

    Likewise ``trees``: the residual trees of a small block of undifferentiated plain
    equations (a Newton or linear block, `mdae_fmu.codegen.treeblock`), solved and
    differentiated on the tree; ``residuals`` converts them only on demand."""
    label: str
    unknowns: tuple[sp.Symbol, ...]
    _residuals: tuple[sp.Expr, ...] | None = None
    tree: E.Expr | None = None
    table: SymbolTable | None = field(default=None, compare=False, repr=False)
    trees: tuple[E.Expr, ...] | None = None
    _symbols: frozenset | None = field(default=None, compare=False, repr=False)

    @property
    def residuals(self) -> tuple[sp.Expr, ...]:
        if self._residuals is not None:
            return self._residuals
        trees = (self.tree,) if self.tree is not None else self.trees
        table = self.table
        if trees is None or table is None:
            raise ValueError(f"block {self.label}: neither residuals nor trees with their table")
        residuals = tuple(table.to_sympy(t) for t in trees)
        object.__setattr__(self, "_residuals", residuals)
        return residuals

    @property
    def on_tree(self) -> bool:
        """Whether the block is plain arithmetic kept on the expression tree (``tree`` or
        ``trees``): no relation, no event operator, no sympy form unless asked for."""
        return self.tree is not None or self.trees is not None

    @property
    def symbols(self) -> frozenset:
        """The sympy symbols the residuals read (without converting a tree block)."""
        if self.on_tree and self._residuals is None:
            got = self._symbols
            if got is None:      # read per block by several stages: computed once
                trees = (self.tree,) if self.tree is not None else self.trees
                got = frozenset().union(*(tree_symbols(t, self.table) for t in trees))
                object.__setattr__(self, "_symbols", got)
            return got
        return frozenset().union(*(r.free_symbols for r in self.residuals))

    @property
    def key(self) -> tuple:
        """What the block computes, comparable between modes (tree or sympy residuals)."""
        if self.tree is not None:
            return (self.tree,)
        return self.trees if self.trees is not None else self.residuals


# --- blocks on the expression tree ----------------------------------------------------------

_TREE_C_FUNCS = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
                 "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                 "exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "fabs"}
_ONE = E.Const(1)


def tree_instance(e: E.Expr) -> tuple[str, int] | None:
    """``(name, order)`` of ``x``, ``der(x)``, ``der(der(x))``; None for anything else."""
    k = 0
    while isinstance(e, E.Der):
        e, k = e.arg, k + 1
    return (e.name, k) if isinstance(e, E.Ref) else None


def tree_symbols(e: E.Expr, table) -> frozenset:
    """The sympy symbols of the instances in ``e`` (as `SymbolTable.to_sympy` would give)."""
    out = set()
    stack = [e]
    while stack:
        n = stack.pop()
        inst = tree_instance(n)
        if inst is not None:
            s = table.sym(*inst)
            if isinstance(s, sp.Symbol):
                out.add(s)
        else:
            stack.extend(E.children(n))
    return frozenset(out)


class _NotLinear(Exception):
    pass


def _is_one(x) -> bool:
    return isinstance(x, E.Const) and not isinstance(x.value, bool) and x.value == 1


def _add(x, y):
    return y if x is None else (x if y is None else E.BinOp("+", x, y))


def _neg(x):
    if x is None:
        return None
    return x.arg if isinstance(x, E.UnOp) and x.op == "-" else E.UnOp("-", x)


def _sub(x, y):
    return _neg(y) if x is None else (x if y is None else E.BinOp("-", x, y))


def _mul(x, y):
    if x is None or y is None:
        return None
    return y if _is_one(x) else (x if _is_one(y) else E.BinOp("*", x, y))


def _linear(e: E.Expr, u: tuple[str, int]):
    """``(a, b)`` with ``e = a*u + b`` and a, b free of ``u`` (None = 0); raises `_NotLinear`
    when ``e`` is not linear in ``u`` or has a node outside plain arithmetic (then the block
    takes the sympy path)."""
    inst = tree_instance(e)
    if inst is not None:
        return (_ONE, None) if inst == u else (None, e)
    t = type(e)
    if t is E.Const:
        if isinstance(e.value, bool):
            raise _NotLinear
        return None, e
    if t is E.UnOp and e.op in ("-", "+"):
        a, b = _linear(e.arg, u)
        if a is None:
            return None, e
        return (_neg(a), _neg(b)) if e.op == "-" else (a, b)
    if t is E.Call and e.func in _TREE_C_FUNCS and len(e.args) == 1:
        a, _ = _linear(e.args[0], u)
        if a is not None:
            raise _NotLinear
        return None, e
    if t is not E.BinOp or e.op not in ("+", "-", "*", "/", "^"):
        raise _NotLinear
    a1, b1 = _linear(e.left, u)
    a2, b2 = _linear(e.right, u)
    if a1 is None and a2 is None:
        return None, e
    if e.op == "+":
        return _add(a1, a2), _add(b1, b2)
    if e.op == "-":
        return _sub(a1, a2), _sub(b1, b2)
    if e.op == "*" and a1 is None:
        return _mul(e.left, a2), _mul(e.left, b2)
    if e.op == "*" and a2 is None:
        return _mul(a1, e.right), _mul(b1, e.right)
    if e.op == "/" and a2 is None:
        return (E.BinOp("/", a1, e.right),
                None if b1 is None else E.BinOp("/", b1, e.right))
    raise _NotLinear


def tree_solution(residual: E.Expr, u: tuple[str, int]) -> E.Expr | None:
    """The explicit solution ``u = -b/a`` of ``0 = a*u + b`` read off the expression tree
    (docs/theory.md §11: explicit assignment where a block is a scalar solvable
    symbolically), or None when the residual is not plain arithmetic linear in ``u``. A
    coefficient that is a non-zero constant is divided out; otherwise the division is left to
    run time (as the sympy path does)."""
    try:
        a, b = _linear(residual, u)
    except _NotLinear:
        return None
    if a is None:
        return None
    if isinstance(a, E.Const) and (isinstance(a.value, bool) or a.value == 0):
        return None
    nb = _neg(b) if b is not None else E.Const(0)
    if _is_one(a):
        return nb
    if (isinstance(a, E.Const) and a.value == -1) or (isinstance(a, E.UnOp) and a.op == "-"
                                                      and _is_one(a.arg)):
        return b if b is not None else E.Const(0)
    return E.BinOp("/", nb, a)


def _c_number(v) -> str:
    if isinstance(v, int):
        return f"{v}.0" if abs(v) < 2 ** 53 else repr(float(v))
    v = float(v)
    if v != v:
        return "(0.0/0.0)"
    if v in (float("inf"), float("-inf")):
        return "(1.0/0.0)" if v > 0 else "(-1.0/0.0)"
    return repr(v) if v >= 0 else f"({v!r})"


def tree_c(e: E.Expr, printer, table) -> str:
    """C text of a plain-arithmetic tree (the nodes `tree_solution` accepts); every instance
    through ``printer.slots`` (names never reach C: an instance without a slot raises
    `KeyError`); compound terms parenthesized, powers as in `SlotPrinter`."""
    inst = tree_instance(e)
    if inst is not None:
        v = printer.slots[table.sym(*inst)]
        # Integer and Boolean slots read as double: Modelica's / is real division
        return printer.value(v) if type(v) is Slot and v.type == "Real" \
            else f"((double){printer.value(v)})"
    t = type(e)
    if t is E.Const:
        return _c_number(e.value)
    if t is E.UnOp:
        a = tree_c(e.arg, printer, table)
        return f"(-{a})" if e.op == "-" else a
    if t is E.Call:
        return f"{_TREE_C_FUNCS[e.func]}({tree_c(e.args[0], printer, table)})"
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


def linear_terms(expr: sp.Expr, u: sp.Symbol):
    """``expr`` as ``sum(prod(f) for f in coef) * u + sum(rest)``: returns ``(coef, rest)``
    with ``coef`` a list of factor lists and ``rest`` a list of terms, all free of ``u``; or
    None when ``expr`` is not linear in ``u`` in this syntactic sense (module docstring)."""
    if u not in expr.free_symbols:
        return None
    terms = expr.args if expr.is_Add else (expr,)
    coef: list[list[sp.Expr]] = []
    rest: list[sp.Expr] = []
    for t in terms:
        if u not in t.free_symbols:
            rest.append(t)
            continue
        if t == u:
            coef.append([])
            continue
        if not t.is_Mul:
            return None
        factors = [f for f in t.args if f != u]
        if len(factors) != len(t.args) - 1 or any(u in f.free_symbols for f in factors):
            return None
        coef.append(factors)
    return coef, rest


def partial_derivative(e: sp.Expr, u: sp.Symbol) -> sp.Expr:
    """∂e/∂u for a Newton block's Jacobian (docs/theory.md §11: a Newton solve of the
    block, with the analytic Jacobian), by the chain rule node by node: sums, products,
    powers with a u-free exponent and one-argument functions directly, anything else through
    ``sympy.diff``. Sub-trees free of ``u`` give 0 without being visited, which is where
    ``sympy.diff``'s general machinery spent most of the code generation time at 10^4
    equations (one Newton block per algebraic loop)."""
    if u not in e.free_symbols:
        return sp.Integer(0)
    if e == u:
        return sp.Integer(1)
    if e.is_Add:
        return sp.Add(*[partial_derivative(a, u) for a in e.args if u in a.free_symbols])
    if e.is_Mul:
        args = e.args
        return sp.Add(*[sp.Mul(*args[:i], partial_derivative(a, u), *args[i + 1:])
                        for i, a in enumerate(args) if u in a.free_symbols])
    if e.is_Pow and u not in e.exp.free_symbols:
        return e.exp * e.base ** (e.exp - 1) * partial_derivative(e.base, u)
    if isinstance(e, sp.Function) and len(e.args) == 1 and hasattr(e, "fdiff"):
        try:
            return e.fdiff(1) * partial_derivative(e.args[0], u)
        except ArgumentIndexError:      # no derivative rule: sympy decides
            pass
    return sp.diff(e, u)


def linear_split(expr: sp.Expr, u: sp.Symbol) -> tuple[sp.Expr, sp.Expr] | None:
    """Write ``expr`` as ``a*u + b`` with ``a``, ``b`` free of ``u``, or return None.

    Works on the expression tree: the terms of a sum that contain ``u`` must each be a product
    of ``u`` (to the first power) and ``u``-free factors. ``x*(u + 1)`` is therefore not
    recognized unless expanded first; `classify` retries with ``expand`` on small expressions.
    """
    lt = linear_terms(expr, u)
    if lt is None:
        return None
    coef, rest = lt
    return sp.Add(*[sp.Mul(*f) for f in coef]), sp.Add(*rest)


def _linear_split_any(expr: sp.Expr, u: sp.Symbol):
    if isinstance(expr, sp.Piecewise):
        return _piecewise_split(expr, u)
    split = linear_split(expr, u)
    if split is None and tree_size(expr, 400) < 400:
        split = linear_split(sp.expand(expr), u)
    return split


def _piecewise_split(expr: sp.Piecewise, u: sp.Symbol):
    """``a*u + b`` for a piecewise ``expr`` whose conditions do not read ``u`` and whose
    pieces are each linear in ``u``: ``a`` and ``b`` piecewise with the same conditions (the
    rows of a merged block, `mdae_fmu.codegen.merged`: linear in every mode)."""
    a_pieces, b_pieces = [], []
    for piece, cond in expr.args:
        if u in cond.free_symbols:
            return None
        if u not in piece.free_symbols:
            a, b = sp.Integer(0), piece
        else:
            split = _linear_split_any(piece, u)
            if split is None:
                return None
            a, b = split
        a_pieces.append((a, cond))
        b_pieces.append((b, cond))
    return sp.Piecewise(*a_pieces), sp.Piecewise(*b_pieces)


def classify(block: BlockPlan) -> str:
    """``explicit``, ``linear`` or ``newton`` (module docstring)."""
    us = block.unknowns
    if len(us) == 1:
        return "explicit" if _linear_split_any(block.residuals[0], us[0]) is not None \
            else "newton"
    uset = set(us)
    for r in block.residuals:
        fs = r.free_symbols          # (sympy computes it anew at each call)
        for u in us:
            if u not in fs:
                continue
            split = _linear_split_any(r, u)
            if split is None or uset & split[0].free_symbols:
                return "newton"
    return "linear"


# block helpers read the Reals through a local pointer, like the schedule functions
LOCALS = "    const double *r = d->r;\n    (void)r;\n"
#: the start of the names of a solver block's callbacks in `BlockCode.text` (``blk<k>_`` when
#: the block is printed on its own, the shared name of a loop's callbacks in a run)
FN = "\x01"


@dataclass(frozen=True)
class BlockCode:
    """C of block number ``index``, typed (`mdae_fmu.codegen.slots`): ``text`` holds the
    statements of an explicit block, or the callback functions of a solver block (their names
    start with `FN`), with each Real slot as a hole numbered in ``slots``. A solver block
    (``solver``: ``mdae_newton_block`` or ``mdae_linear_block``) is called with its
    ``unknowns`` and the callbacks ``FN + c`` for ``c`` in ``callbacks``. `body` and `helpers`
    are the C of the block printed on its own; `mdae_fmu.codegen.runs` prints repeated blocks
    from the same fields."""
    kind: str
    index: int
    text: str
    slots: tuple[Slot, ...] = ()
    unknowns: tuple[Slot, ...] = ()
    solver: str = ""
    callbacks: tuple[str, ...] = ()

    sparse: tuple[int, int] | None = None   # (cache number, entries) of a sparse block

    def _slot(self, j: int) -> str:
        return c_slot(self.slots[j], local=True)

    @property
    def body(self) -> str:
        """The statements executed in the schedule function."""
        if not self.solver:
            return fill(self.text, self._slot)
        u = ", ".join(c_slot(s, position=True) for s in self.unknowns)
        if self.sparse is not None:
            n, (cache, nnz), b = len(self.unknowns), self.sparse, f"blk{self.index}_"
            cbs = ", ".join(b + c for c in self.callbacks)
            return (f"    {{ static const int u[{n}] = {{{u}}};\n"
                    f"      static const MdaeSparsePattern p = {{{n}, {nnz}, {b}row, {b}col, "
                    f"{cache}}};\n      if ({self.solver}(inst, &p, u, {cbs}, {self.index})) "
                    f"return 1; }}")
        call = solver_call(self.solver, len(self.unknowns), "u",
                           [f"blk{self.index}_{c}" for c in self.callbacks], str(self.index))
        return f"    {{ static const int u[{len(self.unknowns)}] = {{{u}}};\n      {call} }}"

    @property
    def helpers(self) -> str:
        """The file-level callback functions the statements call ("" for an explicit
        block)."""
        if not self.solver:
            return ""
        return fill(self.text.replace(FN, f"blk{self.index}_"), self._slot)


def solver_call(solver: str, n: int, unknowns: str, callbacks: list[str], index: str) -> str:
    """The call of a runtime solver on a block of ``n`` unknowns: ``unknowns`` is the C of a
    pointer to their Real positions, ``index`` the block number as C (run-time messages)."""
    return f"if ({solver}(inst, {n}, {unknowns}, {', '.join(callbacks)}, {index})) return 1;"


def solver_block(kind: str, index: int, printer, unknowns, helpers: str,
                 holes: dict, sparse: tuple[int, int] | None = None) -> BlockCode:
    """The `BlockCode` of a Newton (``helpers``: ``FN`` residual and jacobian) or linear
    (``FN`` system) block, its ``unknowns`` the Real slots of ``printer``; ``sparse``: the
    (cache number, entries) of a sparse linear block (`sparse_helpers`)."""
    us = tuple(printer.slots[u] for u in unknowns)
    if any(type(s) is not Slot or not s.real for s in us):
        raise KeyError(f"an unknown of block {index} has no Real slot")
    if sparse is not None and kind == "linear":
        return BlockCode(kind, index, helpers, tuple(holes), us, "mdae_sparse_linear_block",
                         ("system",), sparse)
    if sparse is not None:
        return BlockCode(kind, index, helpers, tuple(holes), us, "mdae_sparse_newton_block",
                         ("residual", "jacobian"), sparse)
    if kind == "linear":
        return BlockCode(kind, index, helpers, tuple(holes), us, "mdae_linear_block",
                         ("system",))
    return BlockCode(kind, index, helpers, tuple(holes), us, "mdae_newton_block",
                     ("residual", "jacobian"))


def tree_size(e: sp.Expr, limit: int = 1000) -> int:
    """Number of nodes of ``e``, counting stops at ``limit`` (cheap size test)."""
    n = 0
    for _ in sp.preorder_traversal(e):
        n += 1
        if n >= limit:
            break
    return n


def _cse(exprs: list[sp.Expr], tag: str):
    """sympy.cse over the block's expressions when that pays (large ones)."""
    if sum(tree_size(e, 40) for e in exprs) < 40:
        return [], exprs
    gen = sp.numbered_symbols(f"_t{tag}_", real=True)
    return sp.cse(exprs, symbols=gen, optimizations=None)


def _temps(printer, repl, indent="    "):
    lines = []
    for sym, val in repl:
        name = str(sym)
        printer.slots[sym] = name
        lines.append(f"{indent}const double {name} = {printer.doprint(val)};")
    return lines


def _cleanup(printer, repl):
    for sym, _ in repl:
        printer.slots.pop(sym, None)


def _explicit_small(printer, target: str, coef, rest) -> str:
    """``target = -(sum rest) / (sum prod coef)`` printed directly."""
    b = " + ".join(printer.doprint(t) for t in rest) if rest else "0.0"
    if len(coef) == 1 and not coef[0]:
        return f"    {target} = -({b});"
    if len(coef) == 1 and len(coef[0]) == 1 and coef[0][0] == -1:
        return f"    {target} = {b};"
    a = " + ".join("*".join(printer.doprint(f) for f in fs) if fs else "1.0" for fs in coef)
    return f"    {target} = -({b})/({a});"


#: the smallest linear or Newton block solved sparse where the caller numbers a kept
#: factorization
SPARSE_MIN = 12


def emit_block(block: BlockPlan, index: int, printer, sparse: int | None = None) -> BlockCode:
    """C code of block number ``index`` (module docstring), its Real slots collected as holes
    (`BlockCode`); ``printer`` maps each symbol to its slot (the unknowns to Real slots).
    ``sparse``: the number of the block's kept factorization, to solve a linear or Newton
    block of at least `SPARSE_MIN` unknowns with the runtime's sparse LU
    (``mdae_sparse_linear_block``, ``mdae_sparse_newton_block``, templates/mdae_sparse.c)
    instead of a dense LU at every evaluation (iteration)."""
    with printer.collect() as holes:
        return _emit(block, index, printer, holes, sparse)


def _emit(block: BlockPlan, index: int, printer, holes: dict,
          sparse: int | None = None) -> BlockCode:
    us = block.unknowns
    if block.trees is not None:
        from .treeblock import emit_tree_block      # (treeblock builds on this module)
        code = emit_tree_block(block, index, printer, holes)
        if code is not None:
            return code
        holes.clear()
    if block.tree is not None and block.table is not None:
        inst = block.table.instance(us[0])
        sol = tree_solution(block.tree, inst) if inst is not None else None
        if sol is not None:
            try:
                return explicit_block(index, f"    {printer.symbol(us[0])} = "
                                      f"{tree_c(sol, printer, block.table)};", holes)
            except KeyError:     # an instance without a Real slot: the sympy path decides
                holes.clear()
    if len(us) == 1 and tree_size(block.residuals[0], 40) < 40:
        # small explicit block: printed term by term, no sympy arithmetic (fast at scale)
        lt = linear_terms(block.residuals[0], us[0])
        if lt is not None:
            return explicit_block(index, _explicit_small(printer, printer.symbol(us[0]), *lt),
                                  holes)
    split = _linear_split_any(block.residuals[0], us[0]) if len(us) == 1 else None
    kind = "explicit" if split is not None else classify(block)
    if split is not None:       # (the same test as kind == "explicit", narrowed for mypy)
        a, b = split
        sol = -b if a == 1 else (b if a == -1 else -b / a)
        repl, (sol,) = _cse([sol], f"{index}")
        lines = _temps(printer, repl)
        target = printer.symbol(us[0])
        lines.append(f"    {target} = {printer.doprint(sol)};")
        _cleanup(printer, repl)
        if repl:
            body = "    {\n" + "\n".join("    " + ln for ln in lines) + "\n    }"
        else:
            body = lines[0]
        return explicit_block(index, body, holes)
    n = len(us)
    if kind == "linear" and sparse is not None and n >= SPARSE_MIN:
        return _sparse_linear(block, index, printer, holes, sparse)
    if kind == "linear":
        # A u = c with A = dF/du, c = -F(u = 0)
        # the entries of A that a row's unknowns make nonzero, row by row (a merged block's
        # rows read a few of its unknowns each: n^2 zeros would cost more than the rows)
        zero = {u: 0 for u in us}
        where, entries, cs = [], [], []
        for i, r in enumerate(block.residuals):
            fs = r.free_symbols
            for j, u in enumerate(us):
                if u in fs:
                    where.append(i * n + j)
                    entries.append(_linear_split_any(r, u)[0])
            cs.append(-r.xreplace(zero))
        repl, red = _cse(entries + cs, f"{index}")
        lines = _temps(printer, repl)
        for k, e in zip(where, red):
            if e != 0:
                lines.append(f"    A[{k}] = {printer.doprint(e)};")
        for k, e in enumerate(red[len(where):]):
            lines.append(f"    c[{k}] = {printer.doprint(e)};")
        _cleanup(printer, repl)
        return solver_block("linear", index, printer, us, linear_helpers(n, lines), holes)
    # Newton: residual and Jacobian callbacks
    if sparse is not None and n >= SPARSE_MIN:
        return _sparse_newton(block, index, printer, holes, sparse)
    jac = [partial_derivative(r, u) for r in block.residuals for u in us]
    repl, red = _cse(list(block.residuals), f"{index}r")
    lines = _temps(printer, repl)
    for k, e in enumerate(red):
        lines.append(f"    F[{k}] = {printer.doprint(e)};")
    _cleanup(printer, repl)
    repl_j, red_j = _cse(jac, f"{index}j")
    jl = _temps(printer, repl_j)
    for k, e in enumerate(red_j):
        if e != 0:
            jl.append(f"    J[{k}] = {printer.doprint(e)};")
    _cleanup(printer, repl_j)
    return solver_block("newton", index, printer, us, newton_helpers(n, lines, jl), holes)


def _sparse_linear(block: BlockPlan, index: int, printer, holes: dict,
                   cache: int) -> BlockCode:
    """A linear block ``A u = c`` (``A = dF/du``, ``c = -F(u = 0)``) with its matrix given by
    the entries that are not identically zero (in some mode, for the piecewise rows of a merged
    block), solved by the runtime's sparse LU kept between evaluations."""
    us = block.unknowns
    zero = {u: 0 for u in us}
    column = {u: j for j, u in enumerate(us)}
    pattern, entries, cs = [], [], []
    for i, r in enumerate(block.residuals):
        # the unknowns a row reads, from its free symbols once (sympy computes them anew at
        # each call: per unknown, that made a merged block of n rows cost O(n^2) walks)
        for j in sorted(column[x] for x in r.free_symbols if x in column):
            a = _linear_split_any(r, us[j])[0]
            if a != 0:
                pattern.append((i, j))
                entries.append(a)
        cs.append(-r.xreplace(zero))
    repl, red = _cse(entries + cs, f"{index}")
    lines = _temps(printer, repl)
    lines += [f"    a[{k}] = {printer.doprint(e)};" for k, e in enumerate(red[:len(entries)])]
    lines += [f"    c[{k}] = {printer.doprint(e)};" for k, e in enumerate(red[len(entries):])]
    _cleanup(printer, repl)
    return solver_block("linear", index, printer, us, sparse_helpers(pattern, lines), holes,
                        (cache, len(pattern)))


def _sparse_newton(block: BlockPlan, index: int, printer, holes: dict,
                   cache: int) -> BlockCode:
    """A Newton block whose Jacobian is given by the entries that are not identically zero,
    solved by the runtime's sparse Newton (``mdae_sparse_newton_block``: the factors of an
    earlier Jacobian reused while they contract, the pivot order kept)."""
    us = block.unknowns
    pattern, jac = [], []
    for i, r in enumerate(block.residuals):
        for j, u in enumerate(us):
            e = partial_derivative(r, u)
            if e != 0:
                pattern.append((i, j))
                jac.append(e)
    repl, red = _cse(list(block.residuals), f"{index}r")
    lines = _temps(printer, repl)
    lines += [f"    F[{k}] = {printer.doprint(e)};" for k, e in enumerate(red)]
    _cleanup(printer, repl)
    repl_j, red_j = _cse(jac, f"{index}j")
    jl = _temps(printer, repl_j)
    jl += [f"    a[{k}] = {printer.doprint(e)};" for k, e in enumerate(red_j)]
    _cleanup(printer, repl_j)
    text = (_pattern_tables(pattern)
            + f"static void {FN}residual(const ModelData *d, double *F)\n{{\n" + LOCALS
            + "\n".join(lines) + "\n}\n"
            + f"static void {FN}jacobian(const ModelData *d, double *a)\n{{\n" + LOCALS
            + "\n".join(jl) + "\n}\n")
    return solver_block("newton", index, printer, us, text, holes, (cache, len(pattern)))


def _pattern_tables(pattern: list[tuple[int, int]]) -> str:
    """The entry tables ``FN row``, ``FN col`` of a sparse block: entry k of its matrix at row
    ``row[k]``, column ``col[k]``."""
    rows = ", ".join(str(i) for i, _ in pattern) or "0"
    cols = ", ".join(str(j) for _, j in pattern) or "0"
    return (f"static const int {FN}row[] = {{{rows}}};\n"
            f"static const int {FN}col[] = {{{cols}}};\n")


def sparse_helpers(pattern: list[tuple[int, int]], lines: list[str]) -> str:
    """The entry tables (`_pattern_tables`) and the callback ``FN system`` of a sparse linear
    block: ``lines`` set the values ``a`` of the entries and all of ``c``."""
    return (_pattern_tables(pattern)
            + f"static void {FN}system(const ModelData *d, double *a, double *c)\n"
            "{\n" + LOCALS + "\n".join(lines) + "\n}\n")


def explicit_block(index: int, text: str, holes: dict) -> BlockCode:
    """The `BlockCode` of an explicit block: its statements ``text`` with the slots
    ``holes``."""
    return BlockCode("explicit", index, text, tuple(holes))


def linear_helpers(n: int, lines: list[str]) -> str:
    """The callback ``FN system`` of a linear block of ``n`` unknowns: ``lines`` set the
    nonzero entries of ``A`` and all of ``c`` (A u = c)."""
    return (f"static void {FN}system(const ModelData *d, double *A, double *c)\n"
            "{\n" + LOCALS + f"    memset(A, 0, sizeof(double) * {n * n});\n"
            + "\n".join(lines) + "\n}\n")


def newton_helpers(n: int, f_lines: list[str], j_lines: list[str]) -> str:
    """The callbacks ``FN residual`` (``f_lines`` set ``F``) and ``FN jacobian`` (``j_lines``
    set the nonzero entries of ``J``) of a Newton block of ``n`` unknowns."""
    return (f"static void {FN}residual(const ModelData *d, double *F)\n{{\n"
            + LOCALS + "\n".join(f_lines) + "\n}\n"
            f"static void {FN}jacobian(const ModelData *d, double *J)\n{{\n"
            + LOCALS + f"    memset(J, 0, sizeof(double) * {n * n});\n" + "\n".join(j_lines)
            + "\n}\n")


# --- scratch sizes of the runtime's solvers (templates/mdae_runtime.c) --------------------------

def newton_work(n: int) -> int:
    """Doubles of scratch `mdae_newton_block` needs for a block of ``n`` unknowns: Jacobian
    (n²), residual, iterate, step plus the LU solve's scratch (2n), the entry guess that a
    failed solve restores, and the normal matrix (n²) of the step at a singular Jacobian
    (``singular_step``; `mdae_linear_block` needs 2n² + 4n of the same)."""
    return 2 * n * n + 5 * n


def gauss_newton_work(m: int, n: int) -> int:
    """Doubles of scratch `mdae_gauss_newton` needs for ``m`` residuals in ``n`` unknowns."""
    q = max(m, n)
    return m * n + 2 * m + 2 * n + q * q + 2 * q

