"""Latent and consistency equations of the Σ-method, by symbolic differentiation (sympy).

Given the equation offsets c, the index-reduced system is F^c = {f^(c_f)} and the consistency
constraints are F^{<c} = {f^(k) : 0 ≤ k < c_f} (docs/theory.md §4.6, RR-9387 Def 15; RR-9334 Def 24,
`LatentEqns` of docs/theory.md §4). Derivatives are total time derivatives over the (name, order)
instance symbols of a `mdae_fmu.symbolic.SymbolTable`, so f^(k) contains x^(σ+k) exactly where the
structural analysis predicts it.

This is the expensive part at scale; the structural part (offsets, BTF) never calls it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from ..diagnostics import InputError
from ..ir import Equation
from ..symbolic import SymbolTable

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from ..lazy_modules import sympy as sp


def successive_derivatives(table: SymbolTable, f: sp.Expr, upto: int) -> list[sp.Expr]:
    """``[f, f', ..., f^(upto)]`` (total time derivatives, docs/theory.md §4.6)."""
    out = [f]
    for _ in range(upto):
        out.append(total_derivative(table, out[-1]))
    return out


def total_derivative(table: SymbolTable, f: sp.Expr) -> sp.Expr:
    """d f / dt, the one differentiation step of the latent equations (docs/theory.md §4.6,
    RR-9387 Def 15: f_i differentiated c_i times; RR-9334 Algorithm 6), in one pass over the
    expression tree: the chain rule node by node, with x^(k) ↦ x^(k+1) for instance symbols,
    d time/dt = 1, and 0 for parameters and left limits (known within a mode, docs/theory.md §5.4,
    RR-9334 Def 33). So x^(σ+1) appears in f' exactly where x^(σ) appears in f, as the structural
    analysis predicts (docs/theory.md §4.6; Griewank's lemma:
    ∂f^(c)/∂x^(σ+c) = ∂f/∂x^(σ)). Equal to `SymbolTable.time_derivative` (which
    differentiates once per symbol); nodes other than sums, products, constant powers,
    one-argument functions and Piecewise are delegated to it."""
    memo: dict[sp.Basic, sp.Expr] = {}
    time = table.time

    def d(e: sp.Expr) -> sp.Expr:
        r = memo.get(e)
        if r is not None:
            return r
        if e.is_Symbol:
            if e == time:
                r = sp.Integer(1)
            else:
                key = table.instance(e)
                r = table.sym(key[0], key[1] + 1) if key is not None else sp.Integer(0)
        elif e.is_Number or e.is_NumberSymbol:
            r = sp.Integer(0)
        elif e.is_Add:
            r = sp.Add(*[d(a) for a in e.args])
        elif e.is_Mul:
            args = e.args
            terms = []
            for i, a in enumerate(args):
                da = d(a)
                if da != 0:
                    terms.append(sp.Mul(*args[:i], da, *args[i + 1:]))
            r = sp.Add(*terms)
        elif e.is_Pow and _time_free(table, e.exp):
            db = d(e.base)
            r = sp.Integer(0) if db == 0 else e.exp * e.base ** (e.exp - 1) * db
        elif isinstance(e, sp.Piecewise):
            r = sp.Piecewise(*[(d(ex), cond) for ex, cond in e.args])
        elif isinstance(e, sp.Function) and len(e.args) == 1 and hasattr(e, "fdiff"):
            try:
                r = e.fdiff(1) * d(e.args[0])
            except sp.core.function.ArgumentIndexError:     # no derivative rule: let sympy do it
                r = table.time_derivative(e)
        else:
            r = table.time_derivative(e)
        memo[e] = r
        return r

    return d(f)


def _time_free(table: SymbolTable, e: sp.Expr) -> bool:
    return all(s != table.time and table.instance(s) is None for s in e.free_symbols)


def latent_system(table: SymbolTable, residuals: Mapping[str, sp.Expr],
                  c: Mapping[str, int], order: Iterable[str] | None = None
                  ) -> tuple[list[tuple[str, int, sp.Expr]], list[tuple[str, int, sp.Expr]]]:
    """The index-reduced system F^c and the consistency equations F^{<c} (RR-9387 Def 15,
    RR-9334 Def 24; docs/theory.md §4.6):
    returns ``(solved, consistency)`` as ``(eq_id, k, expr)`` triples, expr being the k-th
    time derivative of the residual of eq_id."""
    solved: list[tuple[str, int, sp.Expr]] = []
    consistency: list[tuple[str, int, sp.Expr]] = []
    for eq_id in (order if order is not None else residuals):
        k_top = c[eq_id]
        ders = successive_derivatives(table, residuals[eq_id], k_top)
        solved.append((eq_id, k_top, ders[k_top]))
        consistency.extend((eq_id, k, ders[k]) for k in range(k_top))
    return solved, consistency


class Derivatives:
    """The successive total time derivatives ``[f, f', f'', ...]`` of one equation's residual
    (`successive_derivatives`), each computed when first read (`get`): the latent equations
    of a mode (`latent_derivatives`) need sympy only when some reader asks for their
    expressions (the full report, the JSON, the export, the state selection), not for the
    analysis' verdict or its summary (issue 29: sympy's import alone is about a quarter of a
    second). Shared by the latent equations of one equation (its k-th derivatives), so the
    residual is converted and differentiated once, in the order `latent_system` follows."""

    __slots__ = ("eq", "table", "ders")

    def __init__(self, eq: Equation, table: SymbolTable):
        self.eq, self.table = eq, table
        self.ders: list[sp.Expr] | None = None

    def get(self, k: int) -> sp.Expr:
        """f^(k): the residual converted to sympy (an `InputError` naming the equation when
        it has no symbolic form), differentiated k times."""
        ders = self.ders
        if ders is None:
            eq = self.eq
            try:
                first = self.table.to_sympy(eq.residual)
            except (ValueError, TypeError) as err:
                raise InputError(f"equation {eq.id}: its residual has no symbolic form: {err}",
                                 eq.loc) from None
            ders = self.ders = [first]
        while len(ders) <= k:
            ders.append(total_derivative(self.table, ders[-1]))
        return ders[k]


def latent_derivatives(table: SymbolTable, equations: Iterable[Equation],
                       c: Mapping[str, int]
                       ) -> tuple[list[tuple[str, int, Derivatives]],
                                  list[tuple[str, int, Derivatives]]]:
    """`latent_system` of ``equations`` with offsets ``c`` (RR-9387 Def 15, docs/theory.md
    §4.6), each expression left to be computed when read: ``(eq_id, k, source)`` triples in
    the same order, ``source.get(k)`` being the k-th time derivative of the residual of
    eq_id (`Derivatives`)."""
    solved: list[tuple[str, int, Derivatives]] = []
    consistency: list[tuple[str, int, Derivatives]] = []
    for eq in equations:
        k_top = c[eq.id]
        source = Derivatives(eq, table)
        solved.append((eq.id, k_top, source))
        consistency.extend((eq.id, k, source) for k in range(k_top))
    return solved, consistency
