"""An independent high-accuracy solution of the Cup-and-Ball reference models, computed without
mdae_fmu: their oracle in place of the recorded trajectories (issue 24, "reference models within
1e-10").

The physics of reference_models/CupAndBall.mo, CupAndBallFirstOrder.mo and
CupAndBallOriginal.mo (docs/theory.md §13.2), written here by hand: a ball of unit mass on a
rope of length L tied to the origin, gravity g along -y.

* Slack rope (free flight): lam = 0, s = L^2 - x^2 - y^2. The flight is a parabola, evaluated in
  closed form; the rope tightens at the first root t > t0 of s (a quartic in t - t0), located by
  brentq on s itself to the last bit of t.
* The rope tightens (s reaches 0 from above): the impact is fully inelastic. The position is on
  the circle; the radial velocity is removed, v+ = v- - (p.v-/L^2) p, so the impulse of the
  tension (x'' = -lam x integrated over the instant) is impulse(lam) = p.v-/L^2, and
  impulse(s) = -impulse(lam) (s = -lam while the rope is straight).
* Taut rope: the reduced coordinate, the angle theta from the downward vertical (x = L sin
  theta, y = -L cos theta), obeys theta'' = -(g/L) sin theta, so the constraint holds exactly;
  the tension is lam = theta'^2 + (g/L) cos theta (the radial projection of e1, e2) and
  s = -lam. Integrated by scipy's DOP853 at rtol `RTOL`, atol `ATOL`, restarted at every output
  time (no dense-output interpolation). The rope goes slack where lam reaches 0 from above
  (taut = pre(s) <= 0, s = -lam): located by brentq on lam, each evaluation an integration from
  a point just before the root.
* The slack instant carries no jump: the velocity is tangential, the flight starts from it.

Every model holds the impulses until the next change (the FMU's ``impulse(.)`` outputs: the
impulse of the last event, 0 in the free mode). Output: the model's recorded columns at the
recording's grid (``stop / 100``) and, at each event, a left-limit and a right-limit row, 17
significant digits, in tests/data/reference_trajectories/<model>.exact.csv.

The same run with the generated FMU's event semantics, the events located where its
indicators cross zero (an absolute hysteresis of 1e-10 on s and lam, templates/model.c.j2),
is written to <model>.exact-h1e-10.csv: it is not the physics, but the FMU run at a tight
tolerance must reproduce it, which separates the FMU's integration error from the effect of
its hysteresis (docs/multimode-fmu.md, "The Cup-and-Ball references"). ``--check``
computes the solution again with Radau at the same tolerances and prints the largest
difference (an estimate of the oracle's own error), the residual of the event functions at the
located events and the drift of the energy of the taut segments.

    .venv/bin/python benchmarks/cup_and_ball_exact.py [--check] [--out DIR]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "reference_trajectories"

# Parameters and start values, read by hand from the .mo files (identical in the three):
L = 1.0     # CupAndBall.mo:12, CupAndBallFirstOrder.mo:7, CupAndBallOriginal.mo:7 (L = 1.0)
G = 9.81    # CupAndBall.mo:13, CupAndBallFirstOrder.mo:8, CupAndBallOriginal.mo:8 (g = 9.81)
X0 = 0.0    # CupAndBall.mo:14, CupAndBallFirstOrder.mo:9, CupAndBallOriginal.mo:9
Y0 = -0.9   # CupAndBall.mo:15, CupAndBallFirstOrder.mo:10, CupAndBallOriginal.mo:10
VX0 = 6.0   # CupAndBall.mo:31 (der(x) = 6.0), CupAndBallFirstOrder.mo:11, CupAndBallOriginal.mo:26
VY0 = 0.0   # CupAndBall.mo:32 (der(y) = 0.0), CupAndBallFirstOrder.mo:12, CupAndBallOriginal.mo:27
# taut starts false (CupAndBall.mo:18 fixed = true); s(start = 0.19) = L^2 - 0.81 agrees with it.

#: the models, their horizon (manifest.json "stop", the span of reference_models/CupAndBall.csv
#: and of CupAndBallOriginal's references.json entry) and their recorded columns
MODELS: dict[str, tuple[float, tuple[str, ...]]] = {
    "CupAndBall": (3.0, ("x", "y", "lam", "s", "impulse(lam)", "impulse(s)")),
    "CupAndBallFirstOrder": (3.0, ("x", "y", "vx", "vy", "lam", "s", "impulse(lam)",
                                   "impulse(s)")),
    "CupAndBallOriginal": (1.0, ("x", "y", "lam", "s", "impulse(lam)", "impulse(s)")),
}
#: output points over the horizon (the recordings' GRID)
GRID = 100
#: integrator tolerances of the taut segments
RTOL = 1e-13
ATOL = 1e-15
#: the root bracket around an event the integrator's event search found (s)
BRACKET = 1e-6
#: the generated FMU's event hysteresis (mdae_fmu/codegen/emit.py TOLERANCES["hysteresis"]):
#: the level of the second solution (``<model>.exact-h1e-10.csv``)
FMU_HYSTERESIS = 1e-10


@dataclass(frozen=True)
class State:
    """Positions, velocities and the algebraic outputs at one instant."""

    x: float
    y: float
    vx: float
    vy: float
    lam: float
    s: float
    impulse: float      # impulse(lam) of the current taut segment, 0 in free flight

    def row(self, t: float, columns: tuple[str, ...]) -> list[float]:
        """``t`` and ``columns`` (the model's names) of this state."""
        value = {"x": self.x, "y": self.y, "vx": self.vx, "vy": self.vy, "lam": self.lam,
                 "s": self.s, "impulse(lam)": self.impulse, "impulse(s)": -self.impulse}
        return [t, *(value[c] for c in columns)]


def free(t0: float, p: tuple[float, float], v: tuple[float, float], t: float) -> State:
    """The free flight from position ``p`` and velocity ``v`` at ``t0``, at time ``t``."""
    tau = t - t0
    x = p[0] + v[0] * tau
    y = p[1] + v[1] * tau - 0.5 * G * tau * tau
    return State(x=x, y=y, vx=v[0], vy=v[1] - G * tau, lam=0.0,
                 s=L * L - (x * x + y * y), impulse=0.0)


def rope_tightens(t0: float, p: tuple[float, float], v: tuple[float, float],
                  level: float = 0.0) -> float:
    """The first time after ``t0`` where the flight's s = L^2 - |p(t)|^2 reaches ``level`` from
    above: the roots of the quartic in t - t0 as candidates, each refined by brentq on s."""
    a = -0.5 * G
    # |p + v tau + (0, a) tau^2|^2 - L^2, highest power first
    quartic = [a * a, 2 * a * v[1], v[0] ** 2 + v[1] ** 2 + 2 * a * p[1],
               2 * (p[0] * v[0] + p[1] * v[1]), p[0] ** 2 + p[1] ** 2 - L * L + level]
    roots = sorted(r.real for r in np.roots(quartic) if abs(r.imag) < 1e-6 and r.real > 1e-3)
    s = lambda tau: free(0.0, p, v, tau).s - level  # noqa: E731
    for r in roots:
        lo, hi = r * (1 - BRACKET), r * (1 + BRACKET)
        if s(lo) > 0 >= s(hi):
            return t0 + brentq(s, lo, hi, xtol=1e-16, rtol=8.9e-16, maxiter=200)
    raise ValueError(f"the rope does not tighten after t = {t0}")


def pendulum(_t: float, u: np.ndarray) -> list[float]:
    """theta'' = -(g/L) sin theta: the taut rope in its reduced coordinate."""
    return [u[1], -G / L * math.sin(u[0])]


def tension(u) -> float:
    """lam = theta'^2 + (g/L) cos theta, the tension per unit mass and length."""
    return u[1] * u[1] + G / L * math.cos(u[0])


def integrate(t0: float, u0, t1: float, method: str) -> np.ndarray:
    """The pendulum's (theta, theta') at ``t1`` from ``u0`` at ``t0`` (no interpolation)."""
    if t1 == t0:
        return np.array(u0, dtype=float)
    sol = solve_ivp(pendulum, (t0, t1), u0, method=method, rtol=RTOL, atol=ATOL)
    assert sol.success, sol.message
    return sol.y[:, -1]


def taut(u, impulse: float) -> State:
    """The state of the straight rope at angle ``u[0]``, angular velocity ``u[1]``."""
    th, w = float(u[0]), float(u[1])
    lam = tension(u)
    return State(x=L * math.sin(th), y=-L * math.cos(th), vx=L * math.cos(th) * w,
                 vy=L * math.sin(th) * w, lam=lam, s=-lam, impulse=impulse)


def rope_slackens(t0: float, u0, stop: float, method: str,
                  level: float = 0.0) -> tuple[float, np.ndarray] | None:
    """The first time after ``t0`` where lam reaches ``level`` from above, and (theta, theta')
    there; None if the rope stays taut until ``stop``. The integrator's event search brackets
    it, brentq on lam (integrated from a point 1 ms before the bracket) refines it."""
    ev = lambda _t, u: tension(u) - level  # noqa: E731
    ev.terminal, ev.direction = True, -1
    sol = solve_ivp(pendulum, (t0, stop), u0, method=method, rtol=RTOL, atol=ATOL,
                    events=ev)
    if not sol.t_events[0].size:
        return None
    guess = float(sol.t_events[0][0])
    start = max(t0, guess - 1e-3)
    ua = integrate(t0, u0, start, method)
    lam = lambda t: tension(integrate(start, ua, t, method)) - level  # noqa: E731
    lo, hi = max(start, guess - BRACKET), guess + BRACKET
    while lam(lo) <= 0:
        lo = start + 0.5 * (lo - start)
    t = brentq(lam, lo, hi, xtol=1e-16, rtol=8.9e-16, maxiter=200)
    return t, integrate(start, ua, t, method)


@dataclass(frozen=True)
class Solution:
    """The rows of one run: (time, left state, right state) per output time and event."""

    rows: tuple[tuple[float, State, State], ...]
    events: tuple[float, ...]
    residuals: tuple[float, ...]    # |s| or |lam| at each located event
    energy_drift: float             # largest relative drift of the taut segments' energy


def solve(stop: float, method: str = "DOP853", hysteresis: float = 0.0) -> Solution:
    """The Cup-and-Ball run from the .mo start values to ``stop``: output rows at ``k stop /
    GRID`` and a left and a right row at each event.

    With ``hysteresis`` h > 0, the events are located where the generated FMU's event
    indicators locate them (templates/model.c.j2, MDAE_HYSTERESIS): the rope tightens at
    s = -h, where the position is projected radially on the circle before the radial velocity
    is removed, and slackens at lam = -h: the model of the FMU's event semantics, not of the
    physics, which separates the effect of the hysteresis from the integration error."""
    grid = [k * stop / GRID for k in range(GRID + 1)]
    rows: list[tuple[float, State, State]] = []
    events: list[float] = []
    residuals: list[float] = []
    drift = 0.0
    t0, p, v = 0.0, (X0, Y0), (VX0, VY0)
    for _ in range(100):                        # changes in [0, stop]: a handful
        # free flight from (t0, p, v)
        try:
            t1 = rope_tightens(t0, p, v, -hysteresis)
        except ValueError:
            t1 = math.inf
        rows += [(t, free(t0, p, v, t), free(t0, p, v, t)) for t in grid
                 if t0 <= t < min(t1, stop + 1e-12) and not (rows and t == rows[-1][0])]
        if t1 > stop:
            break
        left = free(t0, p, v, t1)
        residuals.append(abs(left.s + hysteresis))
        r2 = left.x * left.x + left.y * left.y
        dot = (left.x * left.vx + left.y * left.vy) / r2
        vx, vy = left.vx - dot * left.x, left.vy - dot * left.y
        impulse = dot * math.sqrt(r2) / L     # p.v-/L^2 on the circle
        # theta' = |v_t| / L: the tangential speed carried over to the circle
        u0 = np.array([math.atan2(left.x, -left.y),
                       (left.x * vy - left.y * vx) / (math.sqrt(r2) * L)])
        right = taut(u0, impulse)
        rows.append((t1, left, right))
        events.append(t1)
        # taut rope from (t1, u0)
        found = rope_slackens(t1, u0, stop, method, -hysteresis)
        t2 = found[0] if found else math.inf
        t, u = t1, u0
        energy0 = 0.5 * L * L * u0[1] ** 2 - G * L * math.cos(u0[0])
        for tk in (g for g in grid if t1 < g < min(t2, stop + 1e-12)):
            u = integrate(t, u, tk, method)
            t = tk
            rows.append((tk, taut(u, impulse), taut(u, impulse)))
            energy = 0.5 * L * L * u[1] ** 2 - G * L * math.cos(u[0])
            drift = max(drift, abs(energy - energy0) / abs(energy0))
        if found is None:
            break
        t2, u2 = found
        at = taut(u2, impulse)
        residuals.append(abs(at.lam + hysteresis))
        rows.append((t2, at, State(x=at.x, y=at.y, vx=at.vx, vy=at.vy, lam=0.0,
                                   s=L * L - (at.x ** 2 + at.y ** 2), impulse=0.0)))
        events.append(t2)
        t0, p, v = t2, (at.x, at.y), (at.vx, at.vy)
    else:
        raise RuntimeError("more than 100 changes")
    return Solution(rows=tuple(rows), events=tuple(events), residuals=tuple(residuals),
                    energy_drift=drift)


def table(solution: Solution, columns: tuple[str, ...]) -> list[list[float]]:
    """The CSV rows of ``solution``: one per output time, two (left, right) per event."""
    out = []
    events = set(solution.events)
    for t, left, right in solution.rows:
        out.append(left.row(t, columns))
        if t in events:
            out.append(right.row(t, columns))
    return out


def write(path: Path, columns: tuple[str, ...], rows: list[list[float]]) -> None:
    """``rows`` under a ``time,<columns>`` header, 17 significant digits."""
    lines = [",".join(["time", *columns])]
    lines += [",".join(f"{x:.17g}" for x in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true",
                    help="solve again with Radau and print the largest difference")
    args = ap.parse_args(argv)
    for (key, (stop, columns)), h in itertools.product(MODELS.items(), (0.0, FMU_HYSTERESIS)):
        sol = solve(stop, hysteresis=h)
        rows = table(sol, columns)
        name = f"{key}.exact-h{h:g}.csv" if h else f"{key}.exact.csv"
        write(args.out / name, columns, rows)
        print(f"{name}: {len(rows)} rows, events at "
              + ", ".join(f"{t:.15g}" for t in sol.events)
              + f"; event residuals <= {max(sol.residuals):.2g}, taut energy drift "
                f"{sol.energy_drift:.2g}")
        if args.check:
            other = table(solve(stop, method="Radau", hysteresis=h), columns)
            a, b = np.array(rows), np.array(other)
            assert a.shape == b.shape, (a.shape, b.shape)
            err = np.abs(a - b) / (1 + np.abs(b))
            j = np.unravel_index(np.argmax(err), err.shape)
            print(f"  DOP853 against Radau: largest difference {err[j]:.2g} (relative to "
                  f"1 + |value|), {(['time', *columns])[j[1]]} at t = {a[j[0], 0]:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
