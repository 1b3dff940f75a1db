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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy as sp
from sympy.core.function import ArgumentIndexError

from .. import expr as E
from ..records import quick_init
from .block_code import (FN, LOCALS, BlockCode, explicit_block, linear_helpers, newton_helpers,
                         pattern_tables, solver_block, sparse_helpers)
from .treeblock import emit_tree_block
from .trees import tree_c, tree_shape, tree_solution, tree_symbols

if TYPE_CHECKING:
    from ..symbolic import SymbolTable
    from .cprinter import SlotPrinter, SlotValue
    from .slots import Slot


@quick_init
@dataclass(frozen=True, slots=True)
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
    _symbols: frozenset[sp.Symbol] | None = field(default=None, compare=False, repr=False)
    #: ``(instance, u)``: the explicit solution `tree_solution` gave the planner for the
    #: unknown ``instance`` of ``tree``, kept for the emitter (not computed twice)
    solution: tuple[tuple[str, int], E.Expr] | None = field(default=None, compare=False,
                                                             repr=False)

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
    def symbols(self) -> frozenset[sp.Symbol]:
        """The sympy symbols the residuals read (without converting a tree block)."""
        if self.on_tree and self._residuals is None:
            got = self._symbols
            if got is None:      # read per block by several stages: computed once
                trees = (self.tree,) if self.tree is not None else self.trees
                table = self.table
                assert trees is not None and table is not None    # on_tree: built with both
                got = frozenset().union(*(tree_symbols(t, table) for t in trees))
                object.__setattr__(self, "_symbols", got)
            return got
        return frozenset().union(*(r.free_symbols for r in self.residuals))

    @property
    def key(self) -> tuple[object, ...]:
        """What the block computes, comparable between modes (tree or sympy residuals)."""
        if self.tree is not None:
            return (self.tree,)
        return self.trees if self.trees is not None else self.residuals


# --- blocks on the expression tree ----------------------------------------------------------

def linear_terms(expr: sp.Expr, u: sp.Symbol
                 ) -> tuple[list[list[sp.Expr]], list[sp.Expr]] | None:
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


def linear_split_any(expr: sp.Expr, u: sp.Symbol) -> tuple[sp.Expr, sp.Expr] | None:
    """`linear_split` of ``expr`` (a piecewise one branch by branch, a small one expanded
    when it fails as written), or None."""
    if isinstance(expr, sp.Piecewise):
        return _piecewise_split(expr, u)
    split = linear_split(expr, u)
    if split is None and tree_size(expr, 400) < 400:
        split = linear_split(sp.expand(expr), u)
    return split


def _piecewise_split(expr: sp.Piecewise, u: sp.Symbol) -> tuple[sp.Expr, sp.Expr] | None:
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
            split = linear_split_any(piece, u)
            if split is None:
                return None
            a, b = split
        a_pieces.append((a, cond))
        b_pieces.append((b, cond))
    return sp.Piecewise(*a_pieces), sp.Piecewise(*b_pieces)


def _coefficient(r: sp.Expr, u: sp.Symbol) -> sp.Expr:
    """``a`` of ``r = a*u + b`` in a block `classify` found linear (every split exists)."""
    split = linear_split_any(r, u)
    if split is None:
        raise ValueError(f"{r} is not linear in {u}")
    return split[0]


def classify(block: BlockPlan) -> str:
    """``explicit``, ``linear`` or ``newton`` (module docstring)."""
    us = block.unknowns
    if len(us) == 1:
        return "explicit" if linear_split_any(block.residuals[0], us[0]) is not None \
            else "newton"
    uset = set(us)
    for r in block.residuals:
        fs = r.free_symbols          # (sympy computes it anew at each call)
        for u in us:
            if u not in fs:
                continue
            split = linear_split_any(r, u)
            if split is None or uset & split[0].free_symbols:
                return "newton"
    return "linear"


def tree_size(e: sp.Expr, limit: int = 1000) -> int:
    """Number of nodes of ``e``, counting stops at ``limit`` (cheap size test)."""
    n = 0
    for _ in sp.preorder_traversal(e):
        n += 1
        if n >= limit:
            break
    return n


def _cse(exprs: list[sp.Expr], tag: str
         ) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """sympy.cse over the block's expressions when that pays (large ones)."""
    if sum(tree_size(e, 40) for e in exprs) < 40:
        return [], exprs
    gen = sp.numbered_symbols(f"_t{tag}_", real=True)
    repl, reduced = sp.cse(exprs, symbols=gen, optimizations=None)
    return repl, reduced


def _temps(printer: SlotPrinter, repl: Iterable[tuple[sp.Symbol, sp.Expr]],
           indent: str = "    ") -> list[str]:
    lines = []
    for sym, val in repl:
        name = str(sym)
        printer.slots[sym] = name
        lines.append(f"{indent}const double {name} = {printer.doprint(val)};")
    return lines


def _cleanup(printer: SlotPrinter, repl: Iterable[tuple[sp.Symbol, sp.Expr]]) -> None:
    for sym, _ in repl:
        printer.slots.pop(sym, None)


def _explicit_small(printer: SlotPrinter, target: str, coef: Sequence[Sequence[sp.Expr]],
                    rest: Sequence[sp.Expr]) -> str:
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


def emit_block(block: BlockPlan, index: int, printer: SlotPrinter,
               sparse: int | None = None) -> BlockCode:
    """C code of block number ``index`` (module docstring), its Real slots collected as holes
    (`BlockCode`); ``printer`` maps each symbol to its slot (the unknowns to Real slots).
    ``sparse``: the number of the block's kept factorization, to solve a linear or Newton
    block of at least `SPARSE_MIN` unknowns with the runtime's sparse LU
    (``mdae_sparse_linear_block``, ``mdae_sparse_newton_block``, templates/mdae_sparse.c)
    instead of a dense LU at every evaluation (iteration)."""
    if block.table is not None:      # a block on the tree: printed once per shape
        shaped = _shaped(block, printer)
        if shaped is not None:
            known = printer.printed.get(shaped[0])
            if type(known) is _Printed:
                return known.fill(index, shaped[1])
            if known is _NOT_ON_TREE:
                return _emit_held(block, index, printer, sparse, on_tree=False)
            if known is None:
                return _emit_held(block, index, printer, sparse, shaped=shaped)
    return _emit_held(block, index, printer, sparse)


def _emit_held(block: BlockPlan, index: int, printer: SlotPrinter, sparse: int | None,
               on_tree: bool = True,
               shaped: tuple[tuple[object, ...], list[SlotValue]] | None = None) -> BlockCode:
    """`emit_block` with the Real slots of ``printer`` printed as the block's holes;
    ``on_tree`` False: the tree paths are known to give None; ``shaped``: the block's
    `tree_shape`, whose key is not yet known: what it prints is kept for that key."""
    # (`SlotPrinter.collect` inlined: a context manager entered per block is overhead at
    # 10^5 blocks)
    outer = printer.holes
    holes: dict[Slot, int] = {}
    printer.holes = holes
    try:
        if on_tree and block.on_tree:
            code = _on_tree(block, index, printer, holes)
            if shaped is not None:
                printer.printed[shaped[0]] = _printed(code, shaped[1])
            if code is not None:
                return code
            holes.clear()
        return _emit(block, index, printer, holes, sparse)
    finally:
        printer.holes = outer


def _emit(block: BlockPlan, index: int, printer: SlotPrinter, holes: dict[Slot, int],
          sparse: int | None = None) -> BlockCode:
    """The block on the sympy path (its tree paths gave None)."""
    us = block.unknowns
    if len(us) == 1 and tree_size(block.residuals[0], 40) < 40:
        # small explicit block: printed term by term, no sympy arithmetic (fast at scale)
        lt = linear_terms(block.residuals[0], us[0])
        if lt is not None:
            return explicit_block(index, _explicit_small(printer, printer.symbol(us[0]), *lt),
                                  holes)
    split = linear_split_any(block.residuals[0], us[0]) if len(us) == 1 else None
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
                    entries.append(_coefficient(r, u))
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


def _on_tree(block: BlockPlan, index: int, printer: SlotPrinter, holes: dict[Slot, int]
             ) -> BlockCode | None:
    """The C of a block kept on the tree (`BlockPlan.on_tree`): a small Newton or linear
    block (`emit_tree_block`), or an explicit assignment read off the residual tree
    (`tree_solution`); None when the sympy path decides (``holes`` then hold garbage)."""
    us = block.unknowns
    if block.trees is not None:
        code = emit_tree_block(block, index, printer, holes)
        if code is not None:
            return code
        holes.clear()
    if block.tree is not None and block.table is not None:
        inst = block.table.instance(us[0])
        tsol: E.Expr | None = None
        if block.solution is not None and block.solution[0] == inst:
            tsol = block.solution[1]
        elif inst is not None:
            tsol = tree_solution(block.tree, inst)
        if tsol is not None:
            try:
                return explicit_block(index, f"    {printer.symbol(us[0])} = "
                                      f"{tree_c(tsol, printer, block.table)};", holes)
            except KeyError:     # an instance without a Real slot: the sympy path decides
                holes.clear()
    return None


@dataclass(frozen=True)
class _Printed:
    """The C of the first block of a `tree_shape` key (its index aside), and where the
    values of another block of that key go: hole j is value ``holes[j]``, the solver's
    unknowns are the first ``len(code.unknowns)`` values."""
    code: BlockCode
    holes: tuple[int, ...]

    def fill(self, index: int, values: list[SlotValue]) -> BlockCode:
        """The `BlockCode` of block number ``index`` of this key with its ``values``."""
        c = self.code
        # (the frozen dataclass's __init__ sets each field through object.__setattr__: the
        # fields are copied instead, 10^5 blocks at a time)
        out = object.__new__(BlockCode)
        fields = out.__dict__
        fields.update(c.__dict__)
        fields["index"] = index
        fields["slots"] = tuple([values[j] for j in self.holes])
        if c.unknowns:
            fields["unknowns"] = tuple(values[:len(c.unknowns)])
        return out


#: a key whose block the sympy path prints (`_on_tree` gave None), and a key whose values
#: do not identify the holes (two values are equal slots but not one object): printed anew
_NOT_ON_TREE = "sympy"
_PRINT_EACH = "each"


def _printed(code: BlockCode | None, values: list[SlotValue]) -> _Printed | str:
    """What `emit_block` keeps of the first block of a key: the template `_Printed`, or
    `_NOT_ON_TREE`, or `_PRINT_EACH` when a hole is not one of ``values`` by identity."""
    if code is None:
        return _NOT_ON_TREE
    holes = []
    for s in code.slots:
        where = [j for j, v in enumerate(values) if v == s]
        if not where or any(values[j] is not s for j in where):
            return _PRINT_EACH
        holes.append(where[0])
    if any(u is not v for u, v in zip(code.unknowns, values)):
        return _PRINT_EACH
    return _Printed(code=code, holes=tuple(holes))


def _shaped(block: BlockPlan, printer: SlotPrinter
            ) -> tuple[tuple[object, ...], list[SlotValue]] | None:
    """The `tree_shape` of a block on the tree (one residual tree, or several; the key
    says which), or None: the blocks of a large model are mostly copies of a few
    equations, whose C differs only in the slots that fill its holes (docs/theory.md
    §11.2), so `emit_block` prints one block per key of a printer (``printer.printed``)."""
    table = block.table
    assert table is not None
    if block.tree is not None:
        # an explicit assignment of one residual: its key costs as much as printing it
        # (heat 10^5: 1.25x the printing, docs/performance.md "stop 42"), printed anew
        return None
    if block.trees is not None:
        return tree_shape("trees", block.trees, block.unknowns, table, printer)
    return None


def _sparse_linear(block: BlockPlan, index: int, printer: SlotPrinter, holes: dict[Slot, int],
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
            a = _coefficient(r, us[j])
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


def _sparse_newton(block: BlockPlan, index: int, printer: SlotPrinter, holes: dict[Slot, int],
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
    text = (pattern_tables(pattern)
            + f"static void {FN}residual(const ModelData *d, double *F)\n{{\n" + LOCALS
            + "\n".join(lines) + "\n}\n"
            + f"static void {FN}jacobian(const ModelData *d, double *a)\n{{\n" + LOCALS
            + "\n".join(jl) + "\n}\n")
    return solver_block("newton", index, printer, us, text, holes, (cache, len(pattern)))


# --- scratch sizes of the runtime's solvers (templates/mdae_runtime.c) --------------------------

def newton_work(n: int) -> int:
    """Doubles of scratch `mdae_newton_block` needs for a block of ``n`` unknowns: Jacobian
    (n²), residual, iterate, step plus the LU solve's scratch (2n), the entry guess that a
    failed solve restores, and the normal matrix (n²) of the step at a singular Jacobian
    (``singular_step``; `mdae_linear_block` needs 2n² + 4n of the same)."""
    return 2 * n * n + 5 * n


def gauss_newton_work(m: int, n: int) -> int:
    """Doubles of scratch `mdae_gauss_newton` needs for ``m`` residuals in ``n`` unknowns:
    the Jacobian, residuals, iterate, step, normal matrix and its solve, and for a rank
    deficient Jacobian the orthonormal basis of its independent rows (min(m, n) x n) and the
    row selection (m)."""
    q = max(m, n)
    return m * n + 3 * m + 2 * n + q * q + 2 * q + min(m, n) * n

