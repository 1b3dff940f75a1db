"""Reference results (CSV) of the reference models, from closed forms or high-accuracy solutions.

Independent of mdae_fmu: numpy and scipy only. Deterministic; rerun with

    python reference_models/make_references.py [OUTDIR]

Every CSV has the header ``time,var1,var2,...`` and one row per output time, with values
printed with 17 significant digits. At an event time ``t_e`` the file holds TWO rows with the
same time: first the left limit (values just before the event), then the right limit (values
after the restart). Impulsive algebraic variables (clutch torques at engagement, rope tension
at tightening) are never reported at the event instant itself: the left row holds the values of
the old mode and the right row those of the new mode after the restart.

Sources of the formulas: reference_models/README.md and the docs/theory.md sections cited below.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

HERE = Path(__file__).resolve().parent

# ----------------------------------------------------------------------------------------------
# Output helpers


def write_csv(path: Path, columns: list[str], rows: list[list[float]]) -> None:
    """Write ``rows`` under the header ``columns`` with full double precision."""
    lines = [",".join(columns)]
    for row in rows:
        lines.append(",".join("%.17g" % float(v) for v in row))
    path.write_text("\n".join(lines) + "\n")


def grid(stop: float, n: int) -> list[float]:
    """``n + 1`` equally spaced times on [0, stop], computed as ``k * stop / n`` so that
    simple fractions (5.0, 7.0, integers) are hit exactly."""
    return [k * stop / n for k in range(n + 1)]


def merge_events(times: list[float], events: list[float]) -> list[tuple[float, str]]:
    """Sorted output instants: grid times tagged ``"grid"``, each event time tagged ``"left"``
    then ``"right"``; a grid time equal to an event time is replaced by the two event rows."""
    ev = sorted(set(events))
    out = [(t, "grid") for t in times if not any(abs(t - e) <= 1e-12 * max(1.0, abs(e)) for e in ev)]
    for e in ev:
        out.append((e, "left"))
        out.append((e, "right"))
    order = {"left": 0, "grid": 1, "right": 2}
    out.sort(key=lambda p: (p[0], order[p[1]]))
    return out


def pick_segment(segments: list[tuple], tq: float, side: str) -> tuple:
    """The segment ``(t0, t1, ...)`` that holds the output instant ``tq``: at an event time the
    segment that ends there for the left row and the one that starts there for the right row."""
    if side == "left":
        for seg in segments:
            if seg[0] < tq <= seg[1]:
                return seg
    for seg in segments:
        if seg[0] <= tq < seg[1]:
            return seg
    if tq == segments[-1][1]:
        return segments[-1]
    raise AssertionError(f"no segment holds t = {tq} ({side})")


# ----------------------------------------------------------------------------------------------
# Single-mode and classic event models


def dahlquist(k: float = 1.0, stop: float = 10.0):
    """Dahlquist.mo: x(t) = exp(-k t)."""
    rows = [[t, math.exp(-k * t)] for t in grid(stop, 500)]
    return ["time", "x"], rows


def van_der_pol(mu: float = 1.0, stop: float = 20.0):
    """VanDerPol.mo: scipy DOP853, rtol 1e-12, atol 1e-14, dense output on 1001 points."""
    def f(t, z):
        return [z[1], mu * (1.0 - z[0] ** 2) * z[1] - z[0]]
    ts = grid(stop, 1000)
    sol = solve_ivp(f, (0.0, stop), [2.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14,
                    t_eval=ts)
    assert sol.success
    return ["time", "x0", "x1"], [[t, a, b] for t, a, b in zip(sol.t, sol.y[0], sol.y[1])]


def bouncing_ball_events(h0: float = 1.0, g: float = 9.81, e: float = 0.7, stop: float = 2.0):
    """Bounce times and post-bounce velocities of BouncingBall.mo (closed form).

    First impact at t_1 = sqrt(2 h0 / g) with speed V = sqrt(2 g h0); after bounce k the
    velocity is e^k V and the next flight lasts 2 e^k V / g."""
    V = math.sqrt(2.0 * g * h0)
    t = math.sqrt(2.0 * h0 / g)
    out = []
    k = 1
    while t <= stop:
        out.append((t, -(e ** (k - 1)) * V, (e ** k) * V))   # (time, v-, v+)
        t += 2.0 * (e ** k) * V / g
        k += 1
    return out


def bouncing_ball(h0: float = 1.0, g: float = 9.81, e: float = 0.7, stop: float = 2.0):
    """BouncingBall.mo: piecewise parabolas between the analytic bounce times."""
    bounces = bouncing_ball_events(h0, g, e, stop)

    def state(t: float, side: str):
        # segment start: (t0, h0, v0)
        t0, hs, vs = 0.0, h0, 0.0
        for tb, vminus, vplus in bounces:
            if t > tb or (t == tb and side == "right"):
                t0, hs, vs = tb, 0.0, vplus
            else:
                break
        dt = t - t0
        return hs + vs * dt - 0.5 * g * dt * dt, vs - g * dt

    rows = []
    for t, side in merge_events(grid(stop, 400), [b[0] for b in bounces]):
        h, v = state(t, side)
        if side in ("left", "right"):
            h = 0.0     # exactly on the floor at a bounce
        rows.append([t, h, v])
    return ["time", "h", "v"], rows


def pendulum(m: float = 1.0, L: float = 1.0, g: float = 9.81, x0: float = 0.6, stop: float = 10.0):
    """Pendulum.mo: theta'' = -(g/L) sin(theta) (theta from the downward vertical), DOP853 with
    rtol 1e-12, mapped to x = L sin, y = -L cos, vx = L cos theta', vy = L sin theta',
    lambda = m (L theta'^2 + g cos theta) / L (m x'' = -lambda x)."""
    th0 = math.asin(x0 / L)

    def f(t, z):
        return [z[1], -(g / L) * math.sin(z[0])]
    ts = grid(stop, 1000)
    sol = solve_ivp(f, (0.0, stop), [th0, 0.0], method="DOP853", rtol=1e-12, atol=1e-12,
                    t_eval=ts)
    assert sol.success
    rows = []
    for t, th, om in zip(sol.t, sol.y[0], sol.y[1]):
        s, c = math.sin(th), math.cos(th)
        rows.append([t, L * s, -L * c, L * c * om, L * s * om, m * (L * om * om + g * c) / L])
    return ["time", "x", "y", "vx", "vy", "lambda"], rows


def stair(period: float = 1.0, stop: float = 10.0):
    """Stair.mo: n(t) = floor(t / period) (increments at t = period, 2 period, ...),
    x(t) = integral of n = period n (n - 1)/2 + n (t - n period)."""
    events = [k * period for k in range(1, int(math.floor(stop / period)) + 1)]

    def state(t: float, side: str):
        n = int(math.floor(t / period + 1e-12))
        if side == "left":
            n -= 1
        return n, period * n * (n - 1) / 2.0 + n * (t - n * period)

    rows = []
    for t, side in merge_events(grid(stop, 1000), events):
        n, x = state(t, side)
        rows.append([t, n, x])
    return ["time", "n", "x"], rows


# ----------------------------------------------------------------------------------------------
# Clutches (docs/theory.md §13.1, §13.5)

CLUTCH = dict(w01=1.0, w02=1.5, j1=1.0, j2=2.0, k1=0.01, k2=0.0125, t1=5.0, t2=7.0)


def clutch_restart(w1m: float, w2m: float, j1: float, j2: float) -> float:
    """Engagement restart (27) of RR-9334 (docs/theory.md §9.6, §13.1) with b_i = 1/j_i:
    w+ = (b2 w1- + b1 w2-)/(b1 + b2) = (j1 w1- + j2 w2-)/(j1 + j2)."""
    b1, b2 = 1.0 / j1, 1.0 / j2
    return (b2 * w1m + b1 * w2m) / (b1 + b2)


def clutch_basic(stop: float = 10.0, p=CLUTCH):
    """ClutchBasic.mo (and ClutchGuarded/ClutchGuardedTime), docs/theory.md §13.1: released
    w_i = w0i exp(-k_i t / j_i); at t1 the restart (27); engaged
    w = w+ exp(-(k1 + k2)(t - t1)/(j1 + j2)) with torque f1 = -f2 = (k1/j1 - k2/j2)/(1/j1 + 1/j2) w;
    released again after t2, each shaft with its own rate, continuous speeds."""
    j1, j2, k1, k2, t1, t2 = p["j1"], p["j2"], p["k1"], p["k2"], p["t1"], p["t2"]
    a1, a2 = -k1 / j1, -k2 / j2
    w1m = p["w01"] * math.exp(a1 * t1)
    w2m = p["w02"] * math.exp(a2 * t1)
    wp = clutch_restart(w1m, w2m, j1, j2)
    rate = -(k1 + k2) / (j1 + j2)
    w_t2 = wp * math.exp(rate * (t2 - t1))
    tau_gain = (a2 - a1) / (1.0 / j1 + 1.0 / j2)   # f1 = (a2 - a1)/(b1 + b2) * w

    def state(t: float, side: str):
        if t < t1 or (t == t1 and side == "left"):
            return p["w01"] * math.exp(a1 * t), p["w02"] * math.exp(a2 * t), 0.0, 0.0
        if t < t2 or (t == t2 and side == "left"):
            w = wp * math.exp(rate * (t - t1))
            return w, w, tau_gain * w, -tau_gain * w
        return w_t2 * math.exp(a1 * (t - t2)), w_t2 * math.exp(a2 * (t - t2)), 0.0, 0.0

    rows = [[t, *state(t, side)] for t, side in merge_events(grid(stop, 1000), [t1, t2])]
    return ["time", "w1", "w2", "f1", "f2"], rows


def cubic_torque(w: float, a1: float, a2: float, b1: float, b2: float) -> float:
    """The engaged torque of the non-semilinear clutch (docs/theory.md §13.5): the unique real
    root of b1 tau^3 + b2 tau + (a1 - a2) w = 0 (e1 - e2 with w1' = w2', tau2 = -tau1),
    by Cardano's formula polished with Newton steps."""
    p_, q_ = b2 / b1, (a1 - a2) * w / b1
    d = math.sqrt(q_ * q_ / 4.0 + p_ ** 3 / 27.0)
    tau = np.cbrt(-q_ / 2.0 + d) + np.cbrt(-q_ / 2.0 - d)
    for _ in range(3):
        tau -= (tau ** 3 + p_ * tau + q_) / (3.0 * tau * tau + p_)
    return float(tau)


def clutch_nonsemilinear(stop: float = 10.0):
    """ClutchNonSemilinear.mo, docs/theory.md §13.5: released w_i = w0i exp(a_i t); at t1 the
    standardized restart (194) w1+ = w2+ = w2-; engaged w' = a2 w - b2 tau(w) with tau the real
    root of the cubic (DOP853, rtol 1e-13); continuous release at t2."""
    a1, a2, b1, b2 = -0.01, -0.00625, 1.0, 0.5
    w01, w02, t1, t2 = 1.0, 1.5, 5.0, 7.0
    w2m = w02 * math.exp(a2 * t1)
    sol = solve_ivp(lambda t, z: [a2 * z[0] - b2 * cubic_torque(z[0], a1, a2, b1, b2)],
                    (t1, t2), [w2m], method="DOP853", rtol=1e-13, atol=1e-15, dense_output=True)
    assert sol.success
    w_t2 = float(sol.sol(t2)[0])

    def state(t: float, side: str):
        if t < t1 or (t == t1 and side == "left"):
            return w01 * math.exp(a1 * t), w02 * math.exp(a2 * t), 0.0, 0.0
        if t < t2 or (t == t2 and side == "left"):
            w = float(sol.sol(t)[0])
            tau = cubic_torque(w, a1, a2, b1, b2)
            return w, w, tau, -tau
        return w_t2 * math.exp(a1 * (t - t2)), w_t2 * math.exp(a2 * (t - t2)), 0.0, 0.0

    rows = [[t, *state(t, side)] for t, side in merge_events(grid(stop, 1000), [t1, t2])]
    return ["time", "w1", "w2", "f1", "f2"], rows


# ----------------------------------------------------------------------------------------------
# Cup-and-Ball (docs/theory.md §13.2)

CB = dict(L=1.0, g=9.81)


def free_flight(p, v, g: float, dt: float):
    """Position and velocity after a free flight of duration ``dt`` (gravity along -y)."""
    return (np.array([p[0] + v[0] * dt, p[1] + v[1] * dt - 0.5 * g * dt * dt]),
            np.array([v[0], v[1] - g * dt]))


def first_exit_time(p, v, L: float, g: float, tmin: float) -> float | None:
    """First time t > tmin at which the free flight from (p, v) reaches |p(t)| = L from inside:
    the smallest real root of the quartic |p + v t - (0, g t^2/2)|^2 - L^2, polished by Newton
    steps. ``tmin`` skips the root at 0 when the flight starts on the circle (after a slack or
    an elastic impact)."""
    x0, y0 = p
    vx, vy = v
    coeffs = [g * g / 4.0, -g * vy, vx * vx + vy * vy - g * y0, 2.0 * (x0 * vx + y0 * vy),
              x0 * x0 + y0 * y0 - L * L]
    poly = np.poly1d(coeffs)
    dpoly = poly.deriv()
    cands = []
    for r in np.roots(coeffs):
        if abs(r.imag) > 1e-7:
            continue
        t = float(r.real)
        for _ in range(4):
            d = dpoly(t)
            if d == 0.0:
                break
            t -= poly(t) / d
        if t > tmin:
            cands.append(t)
    if not cands:
        return None
    t = min(cands)
    # the ball must stay inside the circle up to t (no missed grazing crossing)
    probe = np.linspace(tmin, t, 200)[1:-1]
    assert np.all(poly(probe) <= 1e-12), "free flight left the circle before the detected root"
    return t


def cup_and_ball(stop: float = 3.0, p0=(0.0, -0.9), v0=(6.0, 0.0), L=CB["L"], g=CB["g"]):
    """CupAndBall.mo / CupAndBallFirstOrder.mo, model (29), inelastic rope (docs/theory.md
    §13.2, §9.6). Free flight: closed form, tightening when |p| = L (quartic root).
    Restart at tightening (38)/(44): p+ = L p-/|p-|, v+ = v- - ((p.v-)/|p|^2) p (the radial
    velocity is removed). Straight rope: pendulum in the angle theta (x = L sin, y = -L cos),
    theta'' = -(g/L) sin theta, DOP853 rtol 1e-12 with an event on the tension
    lam = (L theta'^2 + g cos theta)/L reaching 0 (then s = -lam > 0 and the rope goes slack;
    positions and velocities are continuous). Columns: lam and s as in the model
    (free: lam = 0, s = L^2 - |p|^2; straight: lam > 0, s = -lam)."""
    segments = []   # (t_start, t_end, kind, data)
    events = []
    t = 0.0
    p, v = np.array(p0, float), np.array(v0, float)
    mode = "free"
    tmin = 0.0
    while t < stop:
        if mode == "free":
            te = first_exit_time(p, v, L, g, tmin)
            if te is None or t + te >= stop:
                segments.append((t, stop, "free", (t, p.copy(), v.copy(), None, None)))
                break
            p1, v1 = free_flight(p, v, g, te)
            segments.append((t, t + te, "free", (t, p.copy(), v.copy(), p1, v1)))
            p, v = p1, v1
            t += te
            p = L * p / np.linalg.norm(p)                 # (38): radial projection
            v = v - (p @ v) / (p @ p) * p                 # (44): radial velocity removed
            lam = (v @ v - g * p[1]) / L ** 2
            assert lam > 0.0, "rope would go slack at once: choose other initial conditions"
            events.append(t)
            mode = "taut"
        else:
            th = math.atan2(p[0], -p[1])
            om = (p[0] * v[1] - p[1] * v[0]) / L ** 2

            def tension(_t, z):
                return (L * z[1] ** 2 + g * math.cos(z[0])) / L
            tension.terminal = True
            tension.direction = -1
            sol = solve_ivp(lambda _t, z: [z[1], -(g / L) * math.sin(z[0])], (t, stop), [th, om],
                            method="DOP853", rtol=1e-12, atol=1e-12, events=tension,
                            dense_output=True)
            assert sol.success
            if sol.status != 1:
                segments.append((t, stop, "taut", sol.sol))
                break
            te = float(sol.t_events[0][0])
            segments.append((t, te, "taut", sol.sol))
            th, om = sol.y_events[0][0]
            p = np.array([L * math.sin(th), -L * math.cos(th)])
            v = np.array([L * math.cos(th) * om, L * math.sin(th) * om])
            t = te
            events.append(t)
            mode = "free"
            tmin = 1e-3     # skip the (triple) root at the slack point

    def state(tq: float, side: str):
        s0, s1, kind, data = pick_segment(segments, tq, side)
        if kind == "free":
            ts, ps, vs, p_end, v_end = data
            if side == "left" and tq == s1 and p_end is not None:
                pq, vq = p_end, v_end     # the exact pre-impact state used for the restart
            else:
                pq, vq = free_flight(ps, vs, g, tq - ts)
            return [pq[0], pq[1], vq[0], vq[1], 0.0, L * L - pq @ pq]
        th, om = data(tq)
        lam = (L * om * om + g * math.cos(th)) / L
        return [L * math.sin(th), -L * math.cos(th), L * math.cos(th) * om,
                L * math.sin(th) * om, lam, -lam]

    rows = [[tq, *state(tq, side)] for tq, side in merge_events(grid(stop, 600), events)]
    return ["time", "x", "y", "vx", "vy", "lam", "s"], rows, events


def cup_and_ball_elastic(stop: float = 2.0, p0=(0.0, 0.0), v0=(1.0, 0.0), e: float = 0.8,
                         L=CB["L"], g=CB["g"]):
    """CupAndBallElastic.mo (docs/theory.md §7, §13.2, with a radial impact law): free flight in
    closed form; at |p| = L the radial velocity is reversed with restitution e,
    v+ = v- - (1 + e) ((p.v-)/|p|^2) p, positions continuous; back to free flight."""
    events, segments = [], []
    t = 0.0
    p, v = np.array(p0, float), np.array(v0, float)
    tmin = 0.0
    while True:
        te = first_exit_time(p, v, L, g, tmin)
        if te is None or t + te >= stop:
            segments.append((t, stop, p.copy(), v.copy(), None, None))
            break
        p1, v1 = free_flight(p, v, g, te)
        segments.append((t, t + te, p.copy(), v.copy(), p1.copy(), v1.copy()))
        p, v = p1, v1
        t += te
        assert abs(p[1]) > 0.1, "impact too close to y = 0 (the vy law is singular there)"
        v = v - (1.0 + e) * (p @ v) / (p @ p) * p
        events.append(t)
        tmin = 1e-9

    def state(tq: float, side: str):
        s0, s1, ps, vs, *end = pick_segment(segments, tq, side)
        if side == "left" and tq == s1:
            pq, vq = end          # the exact pre-impact state used for the restart
        else:
            pq, vq = free_flight(ps, vs, g, tq - s0)
        return [pq[0], pq[1], vq[0], vq[1], L * L - pq @ pq]

    rows = [[tq, *state(tq, side)] for tq, side in merge_events(grid(stop, 400), events)]
    return ["time", "x", "y", "vx", "vy", "s"], rows, events


# ----------------------------------------------------------------------------------------------
# Westinghouse air brake (docs/theory.md §13.3), parameters of AirBrake.mo, constant input pb

AIRBRAKE = dict(F1=1.0, F2=0.05, rho=1.0, V=1.0, P0=1.0, S=1.0, L=1.0, K=10.0, pb=1.0)


def air_brake(stop: float = 10.0, pr0: float = 0.4, pt0: float = 0.5, q=AIRBRAKE):
    """AirBrake.mo with the input pb held at its start value 1. Valve closed (fv = 0,
    s = pt - pr > 0): x = S (pt - pr)/K and b = K x (l1, l2), m1 gives fcl = fb + fl, m2 with r
    gives fch = -fl - rho V pt'/P0, and p1, p2 become a 2x2 linear system in (pr', pt') (with
    x' = S (pt' - pr')/K), integrated by DOP853 (rtol 1e-12) until s = pt - pr reaches 0.
    There the valve opens (left-limit guard); the residual pr - pt is 0, so the restart is
    continuous (the "fake impulse" case, docs/theory.md §13.3). Valve open: pr = pt = p,
    x = b = 0, p' = P0 F1 (pb - p)/(rho S L + rho V) (closed form), fv = rho V F1 (pb - p)/
    (rho S L + rho V) >= 0 and s = -fv <= 0, so the valve stays open."""
    F1, F2, rho, V, P0, S, L, K, pb = (q[k] for k in ("F1", "F2", "rho", "V", "P0", "S", "L",
                                                       "K", "pb"))

    def closed_rhs(_t, z):
        pr, pt = z
        x = S * (pt - pr) / K
        fb, fl = F1 * (pb - pr), F2 * (pt - pr)
        a = np.array([[rho * S * (-S / K * pr + (x - L)), rho * S * S / K * pr],
                      [-rho * S * S / K * S * pt, rho * S * (S / K * S * pt + x) + rho * V]])
        return np.linalg.solve(a, [-P0 * (fb + fl), -P0 * fl])

    def opening(_t, z):
        return z[1] - z[0]
    opening.terminal = True
    opening.direction = -1
    sol = solve_ivp(closed_rhs, (0.0, stop), [pr0, pt0], method="DOP853", rtol=1e-12,
                    atol=1e-14, events=opening, dense_output=True)
    assert sol.success and sol.status == 1
    te = float(sol.t_events[0][0])
    pe = float(sol.y_events[0][0][1])          # pt at the opening (= pr up to 1e-14)
    tau = (rho * S * L + rho * V) / (P0 * F1)

    def state(t: float, side: str):
        if t < te or (t == te and side == "left"):
            pr, pt = (float(v) for v in sol.sol(t))
            if t == te:
                pr = pt = pe
            x = S * (pt - pr) / K
            return [pr, pt, x, K * x, F1 * (pb - pr), 0.0, F2 * (pt - pr), pt - pr]
        p = pb + (pe - pb) * math.exp(-(t - te) / tau)
        fv = rho * V * F1 * (pb - p) / (rho * S * L + rho * V)
        return [p, p, 0.0, 0.0, F1 * (pb - p), fv, 0.0, -fv]

    rows = [[t, *state(t, side)] for t, side in merge_events(grid(stop, 1000), [te])]
    return ["time", "pr", "pt", "x", "b", "fb", "fv", "fl", "s"], rows, [te]


# ----------------------------------------------------------------------------------------------
# RLDC2 (docs/theory.md §13.4), consistent start values of RLDC2.mo


def rldc2(stop: float = 1.0):
    """RLDC2.mo with j1 = 0.2, j2 = -0.2, v1 = -0.5, v2 = -1.0 in mode FF (both diodes
    blocking). FF: i1 = i2 = 0, j1 + j2 = 0, (L1 + L2) j1' = -(R1 + R2) j1, so
    j1 = 0.2 exp(-10 t), j2 = -j1; the node voltage V = R1 j1 + L1 j1' is identically 0
    (R1/L1 = R2/L2), u_k = V - v_k = -v_k > 0, s_k = -u_k < 0: the guards keep FF."""
    R1, R2, L1, L2 = 10.0, 15.0, 1.0, 1.5
    j10, v1, v2 = 0.2, -0.5, -1.0
    rate = -(R1 + R2) / (L1 + L2)
    rows = []
    for t in grid(stop, 500):
        j1 = j10 * math.exp(rate * t)
        j2 = -j1
        x1, x2 = R1 * j1, R2 * j2
        w1, w2 = L1 * rate * j1, L2 * rate * j2
        V = x1 + w1
        u1, u2 = V - v1, V - v2
        rows.append([t, j1, j2, v1, v2, 0.0, 0.0, u1, u2, w1, w2, x1, x2, -u1, -u2])
    return ["time", "j1", "j2", "v1", "v2", "i1", "i2", "u1", "u2", "w1", "w2", "x1", "x2",
            "s1", "s2"], rows


RLDC2_PARAMS = dict(R1=10.0, R2=15.0, L1=1.0, L2=1.5, C1=0.1, C2=0.15)
RLDC2_COLUMNS = ["time", "j1", "j2", "v1", "v2", "i1", "i2", "u1", "u2", "w1", "w2", "x1", "x2"]


def rldc2_linear_mode(g1: bool, g2: bool, q=RLDC2_PARAMS) -> tuple[np.ndarray, np.ndarray]:
    """The mode (g1, g2) of the RLDC2 circuit (g = switch/diode conducting: u = 0, else
    i = 0) as a linear ODE z' = M z on z = (j1, j2, v1, v2), with the node voltage V = a·z.
    K2/K4 give L_k j_k' = V - R_k j_k. TF: V = v1, C1 v1' = i1 = -(j1 + j2). TT: V = v1 = v2,
    (C1 + C2) v' = -(j1 + j2). FF: i1 = i2 = 0, so j1' + j2' = 0 and
    V = (L2 R1 j1 + L1 R2 j2)/(L1 + L2). The constraints of TT (v1 = v2) and FF (j1 + j2 = 0)
    are invariant under these flows."""
    R1, R2, L1, L2, C1, C2 = (q[k] for k in ("R1", "R2", "L1", "L2", "C1", "C2"))
    if g1:
        a = np.array([0.0, 0.0, 1.0, 0.0])
    elif g2:
        a = np.array([0.0, 0.0, 0.0, 1.0])
    else:
        a = np.array([L2 * R1, L1 * R2, 0.0, 0.0]) / (L1 + L2)
    m = np.zeros((4, 4))
    m[0] = (a - np.array([R1, 0.0, 0.0, 0.0])) / L1
    m[1] = (a - np.array([0.0, R2, 0.0, 0.0])) / L2
    drain = -np.array([1.0, 1.0, 0.0, 0.0])
    if g1 and g2:
        m[2] = m[3] = drain / (C1 + C2)
    elif g1:
        m[2] = drain / C1
    elif g2:
        m[3] = drain / C2
    return m, a


def rldc2_row(t: float, mode: tuple[bool, bool], z: np.ndarray, q=RLDC2_PARAMS) -> list[float]:
    """A CSV row (RLDC2_COLUMNS) of the circuit in ``mode`` at state ``z``."""
    m, a = rldc2_linear_mode(*mode, q)
    dz = m @ z
    V = float(a @ z)
    j1, j2, v1, v2 = (float(x) for x in z)
    return [t, j1, j2, v1, v2, q["C1"] * dz[2], q["C2"] * dz[3], V - v1, V - v2,
            q["L1"] * dz[0], q["L2"] * dz[1], q["R1"] * j1, q["R2"] * j2]


def rldc2_restart(old: tuple[bool, bool], new: tuple[bool, bool], z: np.ndarray,
                  q=RLDC2_PARAMS) -> np.ndarray:
    """The analysed restarts of RLDC2 (docs/theory.md §13.4): entering TT from a mode where
    v1 = v2 did not hold, charge sharing v1+ = v2+ = (C1 v1- + C2 v2-)/(C1 + C2); entering FF
    from a mode where j1 + j2 = 0 did not hold, flux sharing
    j1+ = -j2+ = (L1 j1- - L2 j2-)/(L1 + L2). Every other change is continuous."""
    z = z.copy()
    if new == (True, True) and old != (True, True):
        z[2] = z[3] = (q["C1"] * z[2] + q["C2"] * z[3]) / (q["C1"] + q["C2"])
    if new == (False, False) and old != (False, False):
        z[0] = (q["L1"] * z[0] - q["L2"] * z[1]) / (q["L1"] + q["L2"])
        z[1] = -z[0]
    return z


def _rldc2_rows(segments, stop: float, n: int) -> list[list[float]]:
    """Rows on the grid plus left/right rows at every switch; ``segments`` holds
    ``(t0, t1, mode, z0)`` with z(t) = expm(M (t - t0)) z0 on [t0, t1]."""
    from scipy.linalg import expm
    rows = []
    events = [seg[0] for seg in segments[1:]]
    for tq, side in merge_events(grid(stop, n), events):
        t0, _, mode, z0 = pick_segment(segments, tq, side)
        m, _ = rldc2_linear_mode(*mode)
        rows.append(rldc2_row(tq, mode, expm(m * (tq - t0)) @ z0))
    return rows


RLDC2_SWITCHED_SCHEDULE = ((0.0, True, False), (0.1, True, True), (0.2, False, True),
                           (0.3, False, False), (0.4, True, True), (0.5, False, False),
                           (0.6, True, False))


def rldc2_switched(stop: float = 0.8, z0=(1.0, 0.0, 0.0, 0.5),
                   schedule=RLDC2_SWITCHED_SCHEDULE):
    """RLDC2Switched.mo: the diodes of RLDC2 replaced by ideal switches whose states g1, g2 are
    Boolean inputs following ``schedule`` (time, g1, g2). Each mode is a linear ODE, solved by
    the matrix exponential; at each switch the analysed restart (charge sharing into TT, flux
    sharing into FF, docs/theory.md §13.4) maps the left limit to the right limit."""
    from scipy.linalg import expm
    z = np.array(z0, dtype=float)
    segments = []
    for k, (t0, g1, g2) in enumerate(schedule):
        mode = (g1, g2)
        if k:
            z = rldc2_restart(segments[-1][2], mode, z)
        t1 = schedule[k + 1][0] if k + 1 < len(schedule) else stop
        segments.append((t0, t1, mode, z.copy()))
        m, _ = rldc2_linear_mode(*mode)
        z = expm(m * (t1 - t0)) @ z
    return RLDC2_COLUMNS, _rldc2_rows(segments, stop, 400), [s[0] for s in schedule[1:]]


def rldc2_diodes(stop: float = 1.0, z0=(-1.0, 0.0, 0.0, 0.3), mode0=(True, False)):
    """RLDC2Diodes.mo: RLDC2 with the physical ideal-diode law 0 <= i _|_ u <= 0 (blocking
    while u < 0: s = if g then i else u, the other reading of docs/theory.md
    §14.2). Diode k conducts while s_k = i_k >= 0 and blocks while s_k = u_k < 0. From TF
    (i1 = 1 charges C1) diode 2 starts conducting when v1 reaches v2 (u2 = 0: TF -> TT, v1 = v2,
    a continuous restart), then both currents, each proportional to -(j1 + j2), vanish together
    (TT -> FF, j1 + j2 = 0, continuous), and in FF the node voltage is 0 (R1/L1 = R2/L2), so
    u_k = -v_k < 0 keeps both diodes blocking. The switching times are the roots of the
    closed-form indicators, located by brentq to 1e-15 s."""
    from scipy.linalg import expm
    from scipy.optimize import brentq

    def indicators(mode, z):
        r = rldc2_row(0.0, mode, z)
        s1 = r[5] if mode[0] else r[7]
        s2 = r[6] if mode[1] else r[8]
        return s1, s2

    z, mode, t, segments = np.array(z0, dtype=float), mode0, 0.0, []
    while True:
        m, _ = rldc2_linear_mode(*mode)
        f = lambda tau, k: indicators(mode, expm(m * tau) @ z)[k]   # noqa: E731
        crossing = None
        taus = np.linspace(0.0, stop - t, 4001)[1:]
        for k in range(2):
            # a conducting diode switches when s = i falls below 0, a blocking one when s = u
            # reaches 0
            vals = np.array([f(x, k) for x in taus])
            hit = vals < 0.0 if mode[k] else vals >= 0.0
            if hit.any():
                i = int(np.argmax(hit))
                lo = taus[i - 1] if i else 1e-12
                tau = brentq(f, lo, taus[i], args=(k,), xtol=1e-15, rtol=1e-15)
                crossing = tau if crossing is None else min(crossing, tau)
        t1 = stop if crossing is None else t + crossing
        segments.append((t, t1, mode, z.copy()))
        if crossing is None:
            break
        z = expm(m * crossing) @ z
        s = indicators(mode, z)
        scale = max(1.0, float(np.max(np.abs(z))))
        # an indicator within rounding of zero at the switch has crossed with the other one
        new = tuple(bool(s[k] > 1e-9 * scale) if mode[k] else bool(s[k] >= -1e-9 * scale)
                    for k in range(2))
        z = rldc2_restart(mode, new, z)
        mode, t = new, t1
    return RLDC2_COLUMNS, _rldc2_rows(segments, stop, 500), [s[0] for s in segments[1:]]


# ----------------------------------------------------------------------------------------------


def main(outdir: Path = HERE) -> dict:
    outdir.mkdir(parents=True, exist_ok=True)
    index = {}

    def emit(name, cols, rows, models, **info):
        write_csv(outdir / f"{name}.csv", cols, rows)
        index[name] = dict(csv=f"{name}.csv", models=models, start=rows[0][0], stop=rows[-1][0],
                           rows=len(rows), **info)

    emit("Dahlquist", *dahlquist(), ["Dahlquist"], method="closed form")
    emit("VanDerPol", *van_der_pol(), ["VanDerPol"], method="DOP853 rtol 1e-12 atol 1e-14")
    bb_cols, bb_rows = bouncing_ball()
    emit("BouncingBall", bb_cols, bb_rows, ["BouncingBall"], method="closed form",
         events=[b[0] for b in bouncing_ball_events()])
    emit("Pendulum", *pendulum(), ["Pendulum"], method="angle form, DOP853 rtol 1e-12")
    emit("Stair", *stair(), ["Stair"], method="closed form", events=[float(k) for k in range(1, 11)])
    emit("ClutchBasic", *clutch_basic(), ["ClutchBasic", "ClutchGuardedTime", "ClutchGuarded"],
         method="closed form", events=[5.0, 7.0],
         inputs={"ClutchGuarded": "g = true exactly for 5 <= t <= 7"})
    emit("ClutchNonSemilinear", *clutch_nonsemilinear(), ["ClutchNonSemilinear"],
         method="closed form + DOP853 rtol 1e-13 (engaged phase)", events=[5.0, 7.0])
    cols, rows, ev = cup_and_ball()
    emit("CupAndBall", cols, rows, ["CupAndBall", "CupAndBallFirstOrder"],
         method="closed-form free flight + pendulum in the angle, DOP853 rtol 1e-12", events=ev,
         aliases={"CupAndBall": {"vx": "der(x)", "vy": "der(y)"}})
    cols, rows, ev = cup_and_ball_elastic()
    emit("CupAndBallElastic", cols, rows, ["CupAndBallElastic"],
         method="closed-form free flight + radial reflection", events=ev)
    cols, rows, ev = air_brake()
    emit("AirBrake", cols, rows, ["AirBrake"], events=ev, inputs={"AirBrake": "pb = 1 (start)"},
         method="DOP853 rtol 1e-12 (valve closed) + closed form (valve open)")
    emit("RLDC2", *rldc2(), ["RLDC2"], method="closed form (mode FF throughout)")
    cols, rows, ev = rldc2_switched()
    emit("RLDC2Switched", cols, rows, ["RLDC2Switched"], events=ev,
         inputs={"RLDC2Switched": "g1, g2 from RLDC2_SWITCHED_SCHEDULE: (0, T, F), (0.1, T, T), "
                 "(0.2, F, T), (0.3, F, F), (0.4, T, T), (0.5, F, F), (0.6, T, F)"},
         method="matrix exponential per mode + charge/flux-sharing restarts")
    cols, rows, ev = rldc2_diodes()
    emit("RLDC2Diodes", cols, rows, ["RLDC2Diodes"], events=ev,
         method="matrix exponential per mode, switching times by brentq")
    (outdir / "references.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
