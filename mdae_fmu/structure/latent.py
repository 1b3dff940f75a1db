"""Latent and consistency equations of the Σ-method, by symbolic differentiation (sympy).

Given the equation offsets c, the index-reduced system is F^c = {f^(c_f)} and the consistency
constraints are F^{<c} = {f^(k) : 0 ≤ k < c_f} (theory note 003 §4.3 Def 15; 9334 §1.3 Def 24,
`LatentEqns` of §2.5). Derivatives are total time derivatives over the (name, order) instance
symbols of a `mdae_fmu.symbolic.SymbolTable`, so f^(k) contains x^(σ+k) exactly where the
structural analysis predicts it.

This is the expensive part at scale; the structural part (offsets, BTF) never calls it.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import sympy as sp

from ..symbolic import SymbolTable


def successive_derivatives(table: SymbolTable, f: sp.Expr, upto: int) -> list[sp.Expr]:
    """``[f, f', ..., f^(upto)]`` (total time derivatives, theory 003 §4.3)."""
    out = [f]
    for _ in range(upto):
        out.append(sp.expand(table.time_derivative(out[-1])) if _is_polynomial_like(out[-1])
                   else table.time_derivative(out[-1]))
    return out


def _is_polynomial_like(f: sp.Expr) -> bool:
    """Expanding keeps sums of products readable (``der(w1) - der(w2)``); skip it for
    expressions with functions, where expansion only grows the tree."""
    return not f.atoms(sp.Function) and not f.has(sp.Piecewise)


def latent_system(table: SymbolTable, residuals: Mapping[str, sp.Expr],
                  c: Mapping[str, int], order: Iterable[str] | None = None
                  ) -> tuple[list[tuple[str, int, sp.Expr]], list[tuple[str, int, sp.Expr]]]:
    """The index-reduced system F^c and the consistency equations F^{<c} (Def 15 / Def 24):
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
