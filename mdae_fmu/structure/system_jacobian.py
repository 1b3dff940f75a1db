"""Pryce's System Jacobian of one block of a mode, sampled at random points or symbolic.

After the Σ-method, the index-reduced system F^c is solved for the leading derivatives block by
block (its block-triangular form). The Jacobian of a block's equations f_i^(c_i) with respect
to the block's leading derivatives x_j^(d_j) is, by Griewank's lemma, the block of Pryce's
System Jacobian (docs/theory.md §4.6–§4.7; Pryce 2001)::

    J_ij = ∂f_i / ∂x_j^(d_j − c_i)   when d_j − c_i = σ_ij (a tight entry), 0 otherwise

so it is read off the undifferentiated equations: no latent equation is built. The Σ-method
succeeds where J is nonsingular; a block whose J is singular for every value of the variables,
the parameters and time (a symbolic cancellation: structurally regular, numerically singular)
is what `mdae_fmu.structure.conversion` repairs or rejects.

`sample` evaluates J at a point by forward-mode differentiation over the expression tree
(values and gradients with respect to the block's columns, one pass per equation: no sympy, so
every block of a large model can be checked). Parameters, discrete variables, inputs, left
limits and time get random values as well: a singularity that holds only for some parameter
values (a zero capacitance) is not one that holds for all. `symbolic` gives the same matrix in
sympy, for the confirmation of a suspected singularity.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np

from .. import expr as E
from ..symbolic import SymbolTable

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from ..lazy_modules import sympy as sp

#: A block is singular at a point when its smallest singular value is below this fraction of
#: its largest one (the entries of a cancelling combination agree to rounding).
SINGULAR_RATIO = 1e-9


@dataclass(frozen=True)
class BlockSystem:
    """One block of a mode's index-reduced system: ``residuals[i]`` is equation
    ``equations[i]`` (undifferentiated, as the mode has it) with offset ``offsets[i]``;
    ``columns[j]`` = (name, d_j) is the block's j-th leading derivative."""
    equations: tuple[str, ...]
    residuals: tuple[E.Expr, ...]
    offsets: tuple[int, ...]
    columns: tuple[tuple[str, int], ...]

    def seeds(self, i: int) -> dict[tuple[str, int], int]:
        """The instances of row i that carry the block's columns: x_j^(d_j − c_i) ↦ j."""
        c = self.offsets[i]
        return {(name, d - c): j for j, (name, d) in enumerate(self.columns) if d >= c}


class NotEvaluable(Exception):
    """The block contains what the sampler does not evaluate (a user function, ``der`` of an
    expression): its singularity is not checked."""


class Point:
    """Random values for every instance, parameter, left limit and time, drawn on first use
    from a seeded generator (the analysis is deterministic): Reals from [0.5, 1.5] (their
    square roots and logarithms exist), Integers from 1..4, Booleans at random. A point where
    J happens to be singular only makes a suspect, which the symbolic test clears."""

    def __init__(self, seed: int, types: Mapping[str, str]):
        self._rng = random.Random(seed)
        self._types = types
        self._values: dict[tuple[str, int], float | int | bool] = {}

    def value(self, name: str, order: int) -> float | int | bool:
        key = (name, order)
        v = self._values.get(key)
        if v is None:
            kind = self._types.get(name, "Real") if order == 0 else "Real"
            if kind == "Boolean":
                v = self._rng.random() < 0.5
            elif kind == "Integer":
                v = self._rng.randint(1, 4)
            else:
                v = self._rng.uniform(0.5, 1.5)
            self._values[key] = v
        return v


def sample(block: BlockSystem, point: Point) -> np.ndarray:
    """J of ``block`` at ``point`` (module docstring). Raises `NotEvaluable`; an entry that
    is not finite (a division by zero at the point) raises it too."""
    out = np.zeros((len(block.residuals), len(block.columns)))
    for i, res in enumerate(block.residuals):
        try:
            _, grad = _evaluate(res, point, block.seeds(i))
        except RecursionError:
            raise NotEvaluable("an expression nested too deeply") from None
        if grad:
            for j, g in grad.items():
                out[i, j] = g
    if not np.all(np.isfinite(out)):
        raise NotEvaluable("the Jacobian is not finite at the sampled point")
    return out


def singular_at(J: np.ndarray) -> bool:
    """Whether J is numerically singular (`SINGULAR_RATIO`)."""
    if J.size == 0:
        return False
    if J.shape == (1, 1):
        return bool(J[0, 0] == 0.0)
    s = np.linalg.svd(J, compute_uv=False)
    return bool(s[0] == 0.0 or s[-1] <= SINGULAR_RATIO * s[0])


def symbolic(block: BlockSystem, table: SymbolTable) -> sp.Matrix:
    """J of ``block`` in sympy over ``table``'s symbols (module docstring)."""
    rows = []
    for i, res in enumerate(block.residuals):
        f = table.to_sympy(res)
        row = [sp.Integer(0)] * len(block.columns)
        for (name, k), j in block.seeds(i).items():
            row[j] = sp.diff(f, table.sym(name, k))
        rows.append(row)
    return sp.Matrix(rows)


# --- forward-mode evaluation over the expression tree ---------------------------------------
# A value is (v, g): v a float (or a bool for a condition), g the gradient with respect to the
# block's columns as a sparse {column: derivative}, None for zero. Blocks are small and each
# equation reads few of their columns, so sparse Python arithmetic beats small arrays.

Dual = tuple[Any, Optional[dict[int, float]]]


def _instance(e: E.Expr) -> tuple[str, int] | None:
    k = 0
    while isinstance(e, E.Der):
        e, k = e.arg, k + 1
    return (e.name, k) if isinstance(e, E.Ref) else None


def _add(a: dict[int, float] | None, b: dict[int, float] | None) -> dict[int, float] | None:
    if not a:
        return b
    if not b:
        return a
    out = dict(a)
    for j, x in b.items():
        out[j] = out.get(j, 0.0) + x
    return out


def _scale(g: dict[int, float] | None, s: float) -> dict[int, float] | None:
    return None if not g else {j: x * s for j, x in g.items()}


def _evaluate(e: E.Expr, point: Point, seeds: Mapping[tuple[str, int], int]) -> Dual:
    """(value, gradient with respect to the seeded instances) of ``e`` at ``point``. Values
    outside a function's domain become NaN (an if-expression may select the other branch);
    `sample` refuses what is not finite in the end."""
    if isinstance(e, E.Ref):
        return _leaf((e.name, 0), point, seeds)
    if isinstance(e, E.BinOp):
        return _binary(e.op, _evaluate(e.left, point, seeds), _evaluate(e.right, point, seeds))
    if isinstance(e, E.Const):
        return (e.value, None)
    if isinstance(e, E.Der):
        inst = _instance(e)
        if inst is None:
            raise NotEvaluable("der() of an expression")
        return _leaf(inst, point, seeds)
    if isinstance(e, E.UnOp):
        v, g = _evaluate(e.arg, point, seeds)
        if e.op == "not":
            return (not v, None)
        return (-v, _scale(g, -1.0)) if e.op == "-" else (v, g)
    if isinstance(e, E.If):
        cond = _evaluate(e.cond, point, seeds)[0]
        return _evaluate(e.then if cond else e.orelse, point, seeds)
    if isinstance(e, E.Time):
        return (point.value("$time", 0), None)
    if isinstance(e, E.Call):
        if e.func == "pre":
            arg = e.args[0]
            return (point.value("$pre." + (arg.name if isinstance(arg, E.Ref) else "?"), 0),
                    None)
        return _call(e.func, [_evaluate(a, point, seeds) for a in e.args])
    raise NotEvaluable(type(e).__name__)


def _leaf(inst: tuple[str, int], point: Point, seeds: Mapping[tuple[str, int], int]) -> Dual:
    v = point.value(*inst)
    j = seeds.get(inst)
    return (v, None) if j is None else (float(v), {j: 1.0})


def _nan() -> Dual:
    return (math.nan, None)


def _binary(op: str, a: Dual, b: Dual) -> Dual:
    if len(op) == 2 and op[0] == ".":
        op = op[1]
    (va, ga), (vb, gb) = a, b
    if op == "+":
        return (va + vb, _add(ga, gb))
    if op == "-":
        return (va - vb, _add(ga, _scale(gb, -1.0)))
    if op == "*":
        return (va * vb, _add(_scale(ga, vb), _scale(gb, va)))
    if op == "/":
        if vb == 0:
            return _nan()
        return (va / vb, _add(_scale(ga, 1.0 / vb), _scale(gb, -va / (vb * vb))))
    if op == "^":
        try:
            v = float(va) ** float(vb)
        except (OverflowError, ZeroDivisionError):
            return _nan()
        if isinstance(v, complex):
            return _nan()
        g = None
        if ga is not None:
            g = _scale(ga, vb * float(va) ** (vb - 1) if va != 0 or vb >= 1 else math.nan)
        if gb is not None:
            g = _add(g, _scale(gb, v * math.log(va) if va > 0 else math.nan))
        return (v, g)
    if op == "and":
        return (bool(va) and bool(vb), None)
    if op == "or":
        return (bool(va) or bool(vb), None)
    rel = {"<": va < vb, "<=": va <= vb, ">": va > vb, ">=": va >= vb, "==": va == vb,
           "<>": va != vb}
    if op in rel:
        return (rel[op], None)
    raise NotEvaluable(f"operator {op}")


_PI_FACTOR = 2.0 / math.sqrt(math.pi)


def _unary(name: str, v: float) -> tuple[float, float]:
    """(f(v), f'(v)) of a one-argument built-in."""
    if name == "sin":
        return math.sin(v), math.cos(v)
    if name == "cos":
        return math.cos(v), -math.sin(v)
    if name == "tan":
        t = math.tan(v)
        return t, 1.0 + t * t
    if name == "asin":
        return math.asin(v), 1.0 / math.sqrt(1.0 - v * v)
    if name == "acos":
        return math.acos(v), -1.0 / math.sqrt(1.0 - v * v)
    if name == "atan":
        return math.atan(v), 1.0 / (1.0 + v * v)
    if name == "sinh":
        return math.sinh(v), math.cosh(v)
    if name == "cosh":
        return math.cosh(v), math.sinh(v)
    if name == "tanh":
        t = math.tanh(v)
        return t, 1.0 - t * t
    if name == "exp":
        x = math.exp(v)
        return x, x
    if name == "log":
        return math.log(v), 1.0 / v
    if name == "log10":
        return math.log10(v), 1.0 / (v * math.log(10.0))
    if name == "sqrt":
        r = math.sqrt(v)
        return r, 0.5 / r
    if name == "abs":
        return abs(v), (1.0 if v > 0 else -1.0 if v < 0 else 0.0)
    if name == "sign":
        return (1.0 if v > 0 else -1.0 if v < 0 else 0.0), 0.0
    if name in ("floor", "integer"):
        return float(math.floor(v)), 0.0
    if name == "ceil":
        return float(math.ceil(v)), 0.0
    if name == "erf":
        return math.erf(v), _PI_FACTOR * math.exp(-v * v)
    if name == "erfc":
        return math.erfc(v), -_PI_FACTOR * math.exp(-v * v)
    raise NotEvaluable(f"{name}()")


def _call(name: str, args: Sequence[Dual]) -> Dual:
    if name in ("noEvent",):
        return args[0]
    if name == "smooth":
        return args[1]
    if name == "homotopy":          # the actual expression (lambda = 1 outside initialization)
        return args[0]
    if name in ("edge", "change", "initial", "terminal", "sample"):
        return (False, None)        # false in every long mode
    if name in ("min", "max"):
        (va, ga), (vb, gb) = args
        first = (va <= vb) if name == "min" else (va >= vb)
        return args[0] if first else args[1]
    if name == "semiLinear":
        (vx, gx), (va, ga), (vb, gb) = args
        slope, gs = (va, ga) if vx >= 0 else (vb, gb)
        return (slope * vx, _add(_scale(gx, slope), _scale(gs, vx)))
    if name == "atan2":
        (vy, gy), (vx, gx) = args
        r2 = vx * vx + vy * vy
        if r2 == 0:
            return _nan()
        return (math.atan2(vy, vx), _add(_scale(gy, vx / r2), _scale(gx, -vy / r2)))
    if name in ("div", "mod", "rem"):
        (va, ga), (vb, gb) = args
        if vb == 0:
            return _nan()
        q = math.trunc(va / vb) if name != "mod" else math.floor(va / vb)
        if name == "div":
            return (float(q), None)
        return (va - q * vb, _add(ga, _scale(gb, -float(q))))
    if len(args) == 1 and name in E.MATH_FUNCTIONS:
        v, g = args[0]
        try:
            f, df = _unary(name, float(v))
        except (ValueError, ZeroDivisionError, OverflowError):
            return _nan()
        return (f, _scale(g, df))
    raise NotEvaluable(f"{name}()")


__all__ = ["BlockSystem", "Point", "NotEvaluable", "sample", "singular_at", "symbolic",
           "SINGULAR_RATIO"]
