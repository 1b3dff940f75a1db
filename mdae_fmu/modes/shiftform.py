"""Symbolic nonstandard (shift) form of equation instances, for restart systems.

docs/theory.md §5.5 (RR-9334 (74)) and §8.4; ``to_shift_form``: every derivative
``x'k`` of an equation shifted s times becomes the k-th Euler difference
``sum_j (-1)^(k-j) C(k,j) x^o(s+j) / d^k`` over the shift instances ``x@n`` (the symbol of
``x^on``), with ``d`` the infinitesimal step kept as a positive symbol. ``pre(x)`` is the left
limit, read at the instant as ``x@s`` ((42): ``x = x^-``). A reinit equation ``x^o = v`` becomes
``x@(s+1) - v``. Strategy 54.1: inside a cascade of events the shift form is the one used.
"""

from __future__ import annotations

from math import comb

import sympy as sp

from ..functions import function_table
from ..symbolic import SymbolTable
from .normalize import MultimodeSystem, memo_table


class ShiftForm:
    """Builds and caches the shift-form sympy expressions of equation instances."""

    def __init__(self, system: MultimodeSystem):
        self.system = system
        funcs = system.model.functions if system.model is not None else ()
        self.table = SymbolTable(constants=frozenset(system.constants),
                                 functions=function_table(funcs) if funcs else None)
        # the infinitesimal step, printed δ: no Modelica name is δ, so reports never
        # confuse it with a parameter d (issue 28)
        self.d = sp.Symbol("δ", positive=True)
        self._syms: dict[tuple[str, int], sp.Symbol] = {}
        self._back: dict[sp.Symbol, tuple[str, int]] = {}
        self._cache: dict[tuple[str, int], sp.Expr] = {}
        self._text: dict[tuple[str, int], str] = {}

    def X(self, name: str, j: int) -> sp.Symbol:
        """The symbol ``name@j`` of the instance ``name^oj``."""
        key = (name, j)
        s = self._syms.get(key)
        if s is None:
            s = sp.Symbol(f"{name}@{j}", real=True)
            self._syms[key] = s
            self._back[s] = key
        return s

    def instance(self, s: sp.Symbol) -> tuple[str, int] | None:
        return self._back.get(s)

    def equation(self, key: tuple[str, int]) -> sp.Expr:
        """Shift-form residual of the equation instance ``(eq_id, shift)``."""
        e = self._cache.get(key)
        if e is None:
            e = self._cache[key] = self._build(*key)
        return e

    def formula(self, key: tuple[str, int]) -> str:
        """``str`` of `equation` (cached: reports print the same instances many times)."""
        f = self._text.get(key)
        if f is None:
            f = self._text[key] = str(self.equation(key))
        return f

    def _build(self, eq_id: str, s: int) -> sp.Expr:
        eq = self.system.equation(eq_id)
        f = self.table.to_sympy(eq.residual)
        if eq.reinit:
            f = self.X(eq.reinit, s + 1) - f
        sub = {}
        for sym in f.free_symbols:
            inst = self.table.instance(sym)
            if inst is not None:
                n, k = inst
                sub[sym] = sum((-1) ** (k - j) * comb(k, j) * self.X(n, s + j)
                               for j in range(k + 1)) / self.d ** k
            elif sym.name.startswith("pre(") and sym.name.endswith(")"):
                sub[sym] = self.pre_instance(sym.name[4:-1], s)
        return f.xreplace(sub)

    def pre_instance(self, name: str, s: int) -> sp.Expr:
        """``pre(name)`` in the equation instance of shift ``s`` (docs/theory.md §5.5): the
        shift instance ``name@s`` of a continuous unknown. A discrete variable (a constant
        of the instant for the restart: the friction's ``mode``) keeps its left limit
        ``pre(name)`` at shift 0; at a later shift the previous instance is the value the
        instant's discrete equations computed, the symbol ``name`` itself (``name@1`` read
        no value of the FMU: an unknown symbol of the restart formula)."""
        if name not in self.table.constants:
            return self.X(name, s)
        return self.table.pre(name) if s == 0 else self.table.sym(name, 0)


def parameter_values(system: MultimodeSystem) -> dict[str, float]:
    """Numeric values of parameters/constants/inputs given by a constant binding or start."""
    if system.model is None:
        return {}
    # once per system: every restart problem of its mode changes asks (a copy each time)
    memo = memo_table(system, "_parameter_values")
    if "values" not in memo:
        memo["values"] = constant_values(system.model, system.constants)
    return dict(memo["values"])


def constant_values(model, names) -> dict[str, float]:
    """Numeric values of the variables ``names`` (parameters, constants, inputs) of ``model``
    given by a constant binding or start."""
    from .. import expr as E
    out: dict[str, float] = {}
    for v in model.variables:
        if v.name not in names:
            continue
        for src in (v.binding, v.start):
            if isinstance(src, E.Const) and not isinstance(src.value, bool):
                out[v.name] = float(src.value)
                break
    return out
