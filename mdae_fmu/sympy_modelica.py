"""Sympy expressions printed in Modelica syntax, for the reports a user reads (issue 28).

The analysis computes restarts and latent equations as sympy expressions whose symbols are the
model's names (``w1``, ``der(x)``), the left and right limits at an event (``w1-``, ``w1+``)
and the infinitesimal step. `print_sympy` writes them as a modeller writes Modelica (Modelica
3.6 §3, §B.2.7): ``^`` for powers, ``sqrt(x)``, ``abs(x)``, if-expressions for ``Piecewise``,
``==``/``<>``/``and``/``or``/``not`` for relations and logic, ``true``/``false``; a left limit
``x-`` is ``pre(x)`` and a right limit ``x+`` is ``x`` (the value after the event), names that
are not plain identifiers are quoted (`mdae_fmu.modelica_printer.print_name`).
"""

from __future__ import annotations

import re

import sympy as sp
from sympy.printing.precedence import precedence
from sympy.printing.str import StrPrinter

from .modelica_printer import print_name

_OPERATOR = re.compile(r"(der|pre)\((.+?)(,\d+)?\)")


def _name(text: str) -> str:
    """A model name as Modelica: ``der(x)``, ``pre(x)`` kept, other names quoted when they
    must be."""
    m = _OPERATOR.fullmatch(text)
    if m is not None:
        return f"{m.group(1)}({print_name(m.group(2))}{m.group(3) or ''})"
    return print_name(text)


class ModelicaSympyPrinter(StrPrinter):
    """`StrPrinter` with Modelica's operators, functions and limits (module docstring)."""

    _relations = {"==": "==", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        name = expr.name
        if name.endswith("-") and len(name) > 1:
            return f"pre({_name(name[:-1])})"
        if name.endswith("+") and len(name) > 1:
            return _name(name[:-1])
        return _name(name)

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, exp = expr.as_base_exp()
        if exp == sp.S.Half:
            return f"sqrt({self._print(base)})"
        if exp == -sp.S.Half:
            return f"1/sqrt({self._print(base)})"
        if exp == -1:
            return "1/" + self.parenthesize(base, precedence(expr), strict=True)
        prec = precedence(expr)
        return (f"{self.parenthesize(base, prec, strict=True)}"
                f"^{self.parenthesize(exp, prec, strict=True)}")

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        parts = []
        for i, (value, cond) in enumerate(expr.args):
            if cond == sp.true and i == len(expr.args) - 1 and i > 0:
                parts.append(f"else {self._print(value)}")
            else:
                parts.append(f"{'if' if i == 0 else 'elseif'} {self._print(cond)} then "
                             f"{self._print(value)}")
        if not parts[-1].startswith("else "):
            parts.append("else 0")      # (sympy's nan outside every condition: never reached)
        return "(" + " ".join(parts) + ")"

    def _print_Relational(self, expr) -> str:
        op = self._relations.get(expr.rel_op, expr.rel_op)
        prec = precedence(expr)
        return (f"{self.parenthesize(expr.lhs, prec, strict=True)} {op} "
                f"{self.parenthesize(expr.rhs, prec, strict=True)}")

    def _print_And(self, expr) -> str:
        return " and ".join(self.parenthesize(a, precedence(expr), strict=True)
                            for a in expr.args)

    def _print_Or(self, expr) -> str:
        return " or ".join(self.parenthesize(a, precedence(expr), strict=True)
                           for a in expr.args)

    def _print_Not(self, expr) -> str:
        return "not " + self.parenthesize(expr.args[0], precedence(expr), strict=True)

    def _print_BooleanTrue(self, expr) -> str:
        return "true"

    def _print_BooleanFalse(self, expr) -> str:
        return "false"

    def _print_Abs(self, expr) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _print_sign(self, expr) -> str:
        return f"sign({self._print(expr.args[0])})"

    def _print_Exp1(self, expr) -> str:
        return "exp(1)"

    def _print_Pi(self, expr) -> str:
        return "Modelica.Constants.pi"

    def _print_Infinity(self, expr) -> str:
        return "Modelica.Constants.inf"

    def _print_NegativeInfinity(self, expr) -> str:
        return "-Modelica.Constants.inf"


_PRINTER = ModelicaSympyPrinter()


def print_sympy(expr) -> str:
    """``expr`` (a sympy expression) in Modelica syntax (module docstring)."""
    return _PRINTER.doprint(expr)


__all__ = ["ModelicaSympyPrinter", "print_sympy"]
