"""The numerical restart scheme of RR-9334 §11.3 (Algorithm 14) in Python, with its
convergence check: the tests' oracle of the δ-scheme the generated C runs (`mdae_delta_scheme`
in templates/mdae_runtime.c, on the restart system `mdae_fmu.impulse.numeric.delta_form`
writes), moved here from `mdae_fmu.impulse.numeric` when no product path called it any more
(issue 26 Deliver 7, docs/decisions.md §18).

docs/theory.md §9.7: replace the infinitesimal d of the restart system ``H(Z, X, d) = 0`` by
a small standard ``delta``, solve, discard the impulsive variables, and let ``delta -> 0``
(Theorem 91: the non-impulsive part converges to the standardized restart). Pitfalls of the
brute-force scheme (RR-9334 §11.4) handled here: the solver's success flag and residual are
checked at every delta (no silent stagnation), the iteration stops only after two
consecutive small differences, and delta is floored."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from scipy.optimize import least_squares

from mdae_fmu.impulse.analysis import ImpulseResult
from mdae_fmu.impulse.numeric import delta_form
from mdae_fmu.impulse.problem import RestartProblem, left


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
    """``H(Z, X, delta)`` as a numeric function of the solver variables of `delta_form`."""

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
        self.form = delta_form(problem, impulse, level)
        self.level = self.form.level
        self.unknowns = list(problem.unknowns)
        self.scale = {s: float(mu) for s, mu in zip(self.unknowns, self.form.power) if mu}
        u = self.form.z
        exprs = [e.xreplace(lsub).xreplace(psub) for e in self.form.equations]
        self.F = sp.lambdify((u, d), exprs, "numpy")
        self.J = sp.lambdify((u, d), sp.Matrix(exprs).jacobian(sp.Matrix(u)), "numpy")
        keys = sorted(self.form.targets, key=str)
        self._tkeys = keys
        self.T = sp.lambdify((u, d), [self.form.targets[k].xreplace(lsub).xreplace(psub)
                                      for k in keys], "numpy")
        self.left_values = left_values

    def initial_guess(self) -> np.ndarray:
        """The left limits for every state instance, zero for the algebraic unknowns (RR-9334 §11.4:
        u0): all solver variables 0."""
        return np.zeros(len(self.unknowns))

    def solve(self, delta: float, guess: np.ndarray, tol: float):
        """Solve at ``delta`` from ``guess``: damped Newton with the analytic Jacobian and rows
        equilibrated by their largest entry (the generated C solver, `mdae_delta_scheme`, does
        the same); least squares when the system is not square or Newton fails. Returns the
        solution, the equilibrated residual and the success flag."""
        f = lambda x: np.asarray(self.F(x, delta), dtype=float).ravel()   # noqa: E731
        jac = lambda x: np.atleast_2d(np.asarray(self.J(x, delta), dtype=float))  # noqa: E731
        n = len(guess)
        if n and len(f(guess)) == n:
            x, res, ok = _newton(f, jac, np.array(guess, dtype=float))
            if ok:
                return x, res, True
        res = least_squares(f, guess, jac=jac, xtol=max(tol, 1e-15), ftol=max(tol, 1e-15),
                            gtol=max(tol, 1e-15), method="lm" if len(guess) <= len(f(guess))
                            else "trf", max_nfev=2000)
        return res.x, float(np.max(np.abs(res.fun))) if res.fun.size else 0.0, res.success

    def targets(self, x: np.ndarray, delta: float) -> dict:
        """The restart values of the state jets computed by the instant (`DeltaForm.targets`)."""
        vals = np.atleast_1d(np.asarray(self.T(x, delta), dtype=float).ravel())
        return {k: float(v) for k, v in zip(self._tkeys, vals)}


def _newton(f, jac, x, maxit: int = 60):
    """Damped Newton (step halving) with row equilibration; converged when the step, relative
    to each component, is below 1e-10, or when the steps stop shrinking at the rounding floor
    with step and equilibrated residual below 1e-6 (the C runtime's ``delta_newton``)."""
    last, stalls, fn = np.inf, 0, np.inf
    for _ in range(maxit):
        F, J = f(x), jac(x)
        s = np.max(np.abs(J), axis=1)
        if not np.all(np.isfinite(F)) or not np.all(s > 0) or not np.all(np.isfinite(s)):
            return x, np.inf, False
        F, J = F / s, J / s[:, None]
        fn = float(np.max(np.abs(F)))
        if fn == 0.0:
            return x, 0.0, True
        try:
            dx = np.linalg.solve(J, F)
        except np.linalg.LinAlgError:
            return x, fn, False
        x0 = x
        for h in range(21):
            lam = 2.0 ** -h
            x = x0 - lam * dx
            fnew = float(np.max(np.abs(f(x) / s)))
            if fnew < fn or h == 20 or (fnew <= 1e-13 and h >= 2):
                break
        if not np.all(np.isfinite(x)):
            return x, np.inf, False
        step = float(np.max(np.abs(lam * dx) / (1.0 + np.abs(x))))
        if step <= 1e-10:
            return x, fnew, True
        stalls = stalls + 1 if step >= 0.5 * last else 0
        if stalls >= 3 and step <= 1e-6 and fnew <= 1e-6:
            return x, fnew, True
        last = step
    return x, fn, False


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
    """Algorithm 14 (RR-9334 §11.4; docs/theory.md §13.5) with the project's safeguards
    (docs/decisions.md §8)."""
    ds = DeltaSystem(problem, impulse, left_values, params)
    u = ds.initial_guess()
    h = h0
    prev = None
    small = 0
    hist: list = []
    for it in range(1, max_iter + 1):
        u, res, ok = ds.solve(h, u, min(h, 1e-10))
        if not ok and res > 1e-6:
            return DeltaResult(
                values={},
                iterations=it,
                converged=False,
                delta=h,
                history=tuple(hist),
                message=f"restart solve failed at delta={h:.3g} (residual {res:.2e})",
            )
        x = ds.targets(u, h)
        vec = np.array([x[k] for k in sorted(x, key=str)])
        hist.append((h, vec))
        if prev is not None and np.max(np.abs(vec - prev)) <= eps:
            small += 1
            if small >= 2:
                return DeltaResult(
                    values=x, iterations=it, converged=True, delta=h, history=tuple(hist)
                )
        else:
            small = 0
        prev = vec
        h *= theta
        if h < h_min:
            break
    return DeltaResult(
        values=dict(zip(sorted(x, key=str), prev)) if prev is not None else {},
        iterations=it,
        converged=False,
        delta=h,
        history=tuple(hist),
        message="no convergence before the smallest delta",
    )
