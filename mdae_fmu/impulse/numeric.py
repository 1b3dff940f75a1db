"""The numerical restart scheme of RR-9334 §11.3 (Algorithm 14), with its convergence check.

Examples note 9334-examples-toolkit-results §4: replace the infinitesimal d of the restart system
``H(Z, X, d) = 0`` by a small standard ``delta``, solve, discard the impulsive variables, and let
``delta -> 0`` (Theorem 91: the non-impulsive part converges to the standardized restart).
As recommended there, every impulsive variable w of finite order mu is solved for through its
rescaled value ``nu = w * delta^mu`` (well conditioned). Pitfalls of §4.2 handled here: the
solver's success flag and residual are checked at every delta (no silent stagnation), the
iteration stops only after two consecutive small differences, and delta is floored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import numpy as np
import sympy as sp
from scipy.optimize import least_squares

from .analysis import ImpulseResult
from .problem import RestartProblem, left, right


@dataclass(frozen=True)
class DeltaResult:
    """Outcome of the delta-scheme: restart values of the state jets, iterations, convergence."""
    values: dict
    iterations: int
    converged: bool
    delta: float
    history: tuple = field(default=(), repr=False)
    message: str = ""


class DeltaSystem:
    """``H(Z, X, delta)`` as a numeric function of the (rescaled) unknowns."""

    def __init__(self, problem: RestartProblem, impulse: ImpulseResult | None,
                 left_values: dict, params: dict | None = None, level: str | None = None):
        self.p = problem
        d = problem.d
        params = dict(problem.params, **(params or {}))
        psub = {sp.Symbol(k, real=True): v for k, v in params.items()}
        lsub = {}
        for j in problem.jets:
            for k in range(j.m):
                lsub[left(j.name, k)] = left_values[(j.name, k)]
        ks = problem.jet_substitution()
        self.unknowns = list(problem.unknowns)
        self.scale = {}
        if impulse is not None:
            for w in impulse.impulsive:
                o = impulse.orders.get(w)
                if o is not None and o.lo is not None and o.lo == o.hi and o.lo > 0:
                    self.scale[w] = float(o.lo)
        self.level = level or ("jet" if impulse is None or impulse.jet_level else "shift")
        u = sp.symbols(f"u0:{len(self.unknowns)}", real=True)
        self.usyms = u
        exprs = []
        for _, e in problem.equations:
            e = e.xreplace(ks).xreplace(lsub).xreplace(psub)
            sub = {}
            for s, us in zip(self.unknowns, u):
                sub[s] = us * d ** (-sp.Rational(self.scale[s]).limit_denominator(12)) \
                    if s in self.scale else us
            exprs.append(e.xreplace(sub))
        self.F = sp.lambdify((u, d), exprs, "numpy")
        self.J = sp.lambdify((u, d), sp.Matrix(exprs).jacobian(sp.Matrix(u)), "numpy")
        self.left_values = left_values

    def initial_guess(self) -> np.ndarray:
        """Left limits for the state instances, zero for the algebraic ones (§4.2: u0)."""
        g = np.zeros(len(self.unknowns))
        for i, s in enumerate(self.unknowns):
            name, _, _ = s.name.rpartition("@")
            g[i] = self.left_values.get((name, 0), 0.0)
        return g

    def solve(self, delta: float, guess: np.ndarray, tol: float):
        f = lambda x: np.asarray(self.F(x, delta), dtype=float).ravel()   # noqa: E731
        jac = lambda x: np.asarray(self.J(x, delta), dtype=float)         # noqa: E731
        res = least_squares(f, guess, jac=jac, xtol=max(tol, 1e-15), ftol=max(tol, 1e-15),
                            gtol=max(tol, 1e-15), method="lm" if len(guess) <= len(f(guess))
                            else "trf", max_nfev=2000)
        return res.x, float(np.max(np.abs(res.fun))) if res.fun.size else 0.0, res.success

    def targets(self, x: np.ndarray, delta: float) -> dict:
        """The restart values of the state jets computed by the instant."""
        val = {s: x[i] for i, s in enumerate(self.unknowns)}
        out = {}
        for j in self.p.jets:
            if j.top is None:
                continue
            top = val[j.top]
            if self.level == "shift" or j.m == 1:
                out[right(j.name, 0)] = top
            else:
                m = j.m
                known = [sum(comb(i, k) * delta ** k * self.left_values[(j.name, k)]
                             for k in range(i + 1)) for i in range(m)]
                seq = known[1:] + [top]
                diff = sum((-1) ** (m - 1 - i) * comb(m - 1, i) * seq[i] for i in range(m))
                out[right(j.name, m - 1)] = diff / delta ** (m - 1)
        return out


def solve_at(problem: RestartProblem, impulse: ImpulseResult | None, left_values: dict,
             delta: float, params: dict | None = None) -> dict:
    """Solve ``H(Z, X, delta) = 0`` (scheme (186)); the state restart values. The solve is
    continued from delta = 1e-2 down to ``delta`` by factors of 10 (warm starts), since the
    left limits are a poor guess for the impulsive unknowns at tiny delta."""
    ds = DeltaSystem(problem, impulse, left_values, params)
    x = ds.initial_guess()
    h = max(delta, 1e-2)
    while h > delta * 1.0000001:
        x, _, _ = ds.solve(h, x, 1e-12)
        h = max(h / 10, delta)
    x, res, ok = ds.solve(delta, x, 1e-14)
    if not ok and res > 1e-8:
        raise RuntimeError(f"restart system not solved at delta={delta} (residual {res:.2e})")
    return ds.targets(x, delta)


def delta_scheme(problem: RestartProblem, impulse: ImpulseResult | None, left_values: dict,
                 eps: float = 1e-8, h0: float = 1e-2, theta: float = 0.5,
                 params: dict | None = None, max_iter: int = 120,
                 h_min: float = 1e-15) -> DeltaResult:
    """Algorithm 14 (RR-9334 §11.4; examples note §4.2) with the safeguards of §4.2 [D]."""
    ds = DeltaSystem(problem, impulse, left_values, params)
    u = ds.initial_guess()
    h = h0
    prev = None
    small = 0
    hist = []
    for it in range(1, max_iter + 1):
        u, res, ok = ds.solve(h, u, min(h, 1e-10))
        if not ok and res > 1e-6:
            return DeltaResult({}, it, False, h, tuple(hist),
                               f"restart solve failed at delta={h:.3g} (residual {res:.2e})")
        x = ds.targets(u, h)
        vec = np.array([x[k] for k in sorted(x, key=str)])
        hist.append((h, vec))
        if prev is not None and np.max(np.abs(vec - prev)) <= eps:
            small += 1
            if small >= 2:
                return DeltaResult(x, it, True, h, tuple(hist))
        else:
            small = 0
        prev = vec
        h *= theta
        if h < h_min:
            break
    return DeltaResult(dict(zip(sorted(x, key=str), prev)) if prev is not None else {}, it,
                       False, h, tuple(hist), "no convergence before the smallest delta")
