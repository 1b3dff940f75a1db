"""Run-time of the python-backend FMU: the JSON plan of `mdae_fmu.fmu.python_backend`,
simulated with numpy and scipy (docs/python-backend.md).

Shipped inside the FMU as ``resources/mdae_pyfmu_runtime.py``; it imports numpy and scipy
only (never mdae_fmu), so the FMU runs wherever the host's Python has those two packages.

The plan is data: expressions are trees of ``[op, ...]`` lists, turned once into nested
closures by `compile_tree` (an allow-list of operators and functions; nothing from the model
is executed as code). The execution scheme is the C FMU's (docs/theory.md §11,
docs/multimode-fmu.md):

* ``compute``: the discrete equations (guard definitions, on the frozen relations), then the
  current mode's blocks in BTF order: ``lin`` blocks ``u = -b/a``, ``newton`` blocks by Newton
  with the analytic Jacobian.
* between events the relations are frozen; each one has an event indicator with hysteresis,
  ``z = s + delta`` while it holds and ``s - delta`` while not (docs/fmi-mapping.md, "Events"),
  watched at the end of every integrator step and located by Brent's method on the
  integrator's dense output.
* at an event: the relations are re-evaluated, the discrete equations give the guard bits;
  when they changed (a multimode model), one instant of the mode change on the guarded block
  schedule (`GuardedRun.mode_step`, the C FMU's ``mdae_mode_step``): left limits in the old
  mode, then the local restarts of the block variants the change concerns, with the impulse
  outputs; single-mode models fire their when-branches (condition true now, false at the
  previous instant) and apply their restarts. This repeats until nothing changes.
* the integrator is scipy's LSODA (``scipy.integrate.LSODA``), kept across communication
  steps and restarted at each event.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.integrate import LSODA
from scipy.optimize import brentq

HYSTERESIS = 1e-10          # event-indicator hysteresis, the C FMU's (docs/fmi-mapping.md)
NEWTON_TOL = 1e-12
NEWTON_MAX = 50
MAX_INSTANTS = 100          # event iteration bound
# drift control at the communication points: project when the largest consistency residual
# exceeds 100 x the relative tolerance, within [1e-9, 1e-7] (the C FMU's MDAE_DRIFT_*)
DRIFT_PER_TOLERANCE, DRIFT_MIN, DRIFT_MAX = 100.0, 1e-9, 1e-7


class SimulationError(RuntimeError):
    """A run-time failure (singular restart, no convergence), with the time and the cause."""


_FUNCS: dict[str, Any] = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh,
    "tanh": math.tanh, "exp": math.exp, "log": math.log, "Abs": abs,
    "sign": lambda x: (x > 0) - (x < 0), "Min": min, "Max": max,
    "floor": math.floor, "ceiling": math.ceil,
}
_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _pow(a, b):
    try:
        return a ** b if not (a < 0 and b != int(b)) else math.nan
    except (OverflowError, ZeroDivisionError):
        return math.inf


def _prod(fs):
    def f():
        out = 1.0
        for g in fs:
            out *= g()
        return out
    return f


def _sum(fs):
    def f():
        out = 0.0
        for g in fs:
            out += g()
        return out
    return f


def format_value(kind: str, v, min_length, left, digits) -> str:
    """``String(v, minimumLength, leftJustified, significantDigits)`` as the C run time
    prints it (`mdae_fmu.codegen.messages.format_value`, of which this is a copy: the FMU
    does not import mdae_fmu)."""
    w = int(min(min_length, 100)) if min_length >= 0 else 0
    if kind == "Boolean":
        text = "true" if v else "false"
    elif kind == "Integer":
        text = "%.0f" % round(float(v))
    else:
        p = int(min(digits, 32)) if digits >= 1 else 1
        text = "%.*g" % (p, float(v))
    return text.ljust(w) if left else text.rjust(w)


def compile_message(parts, env: "Simulator"):
    """A closure building an assertion message from its literal parts and its values
    (``["f", kind, value, minimumLength, leftJustified, significantDigits]``, as
    `mdae_fmu.fmu.python_backend` writes them) on ``env``'s current values. A plain string
    (a plan written before messages had values) is its own message."""
    if isinstance(parts, str):
        parts = [parts]
    pieces: list = []           # a literal part, or (kind, [value closures])
    for p in parts:
        pieces.append(p if isinstance(p, str) else
                      (p[1], [compile_tree(x, env) for x in p[2:]]))

    def message() -> str:
        return "".join(p if isinstance(p, str) else format_value(p[0], *(f() for f in p[1]))
                       for p in pieces)
    return message


def compile_tree(node, env: "Simulator"):
    """A zero-argument closure computing ``node`` on ``env``'s value arrays (module
    docstring); unknown operators raise ValueError."""
    op = node[0]
    if op == "c":
        value = node[1]
        return lambda: value
    if op == "v":
        arr, k = getattr(env, node[1]), node[2]
        return lambda: arr[k]
    if op == "t":
        return lambda: env.time
    if op == "new":
        new, k = env.new, node[1]
        return lambda: new[k]
    if op == "rel":
        rel, k = env.rel, node[1]
        return lambda: rel[k]
    if op == "initial":
        return lambda: env.initializing
    if op == "ge":
        a, b, tol = compile_tree(node[1], env), compile_tree(node[2], env), env.assert_tol

        def ge():
            x, y = a(), b()
            return x - y >= -tol * max(1.0, abs(x), abs(y))
        return ge
    if op == "band":
        s, b, k = compile_tree(node[1], env), env.b, node[2]
        strict = len(node) > 3 and node[3]

        def band():
            v = s()
            if env.initializing:     # pre(s) is s's start: the relation taken exactly
                return v > 0 if strict else v >= 0
            return True if v > 0.5 * HYSTERESIS else False if v < -0.5 * HYSTERESIS else b[k]
        return band
    args = [compile_tree(a, env) for a in node[1:]] if op not in ("f", "cmp", "if") else []
    if op == "+":
        if len(args) == 2:
            a, b = args
            return lambda: a() + b()
        return _sum(args)
    if op == "*":
        if len(args) == 2:
            a, b = args
            return lambda: a() * b()
        return _prod(args)
    if op == "^":
        a, b = args
        if node[2][0] == "c" and node[2][1] == -1:
            return lambda: 1.0 / a()
        if node[2][0] == "c" and node[2][1] == 2:
            return lambda: a() * a()
        return lambda: _pow(a(), b())
    if op == "and":
        return lambda: all(g() for g in args)
    if op == "or":
        return lambda: any(g() for g in args)
    if op == "not":
        a = args[0]
        return lambda: not a()
    if op == "cmp":
        c, a, b = _CMP[node[1]], compile_tree(node[2], env), compile_tree(node[3], env)
        return lambda: c(a(), b())
    if op == "f":
        fn = _FUNCS[node[1]]
        fargs = [compile_tree(a, env) for a in node[2:]]
        if len(fargs) == 1:
            a = fargs[0]
            return lambda: fn(a())
        return lambda: fn(*(g() for g in fargs))
    if op == "if":
        pieces = [(compile_tree(c, env), compile_tree(e, env)) for c, e in node[1:]]

        def piecewise():
            for c, e in pieces:
                if c():
                    return e()
            return math.nan
        return piecewise
    raise ValueError(f"unknown operator {op!r} in the plan")


def solve_dense(a: list, b: list, n: int):
    """``x`` with ``A x = b`` (``a``: A row by row, n*n), Gaussian elimination with partial
    pivoting in plain Python (a block has a few unknowns: numpy's call overhead would
    dominate), numpy above 8 unknowns; None when A is singular."""
    if n > 8:
        try:
            return [float(v) for v in np.linalg.solve(np.reshape(a, (n, n)), b)]
        except np.linalg.LinAlgError:
            return None
    m = [a[i * n:(i + 1) * n] + [b[i]] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(m[i][c]))
        if m[p][c] == 0.0 or not math.isfinite(m[p][c]):
            return None
        m[c], m[p] = m[p], m[c]
        pivot = m[c]
        for i in range(c + 1, n):
            f = m[i][c] / pivot[c]
            if f != 0.0:
                row = m[i]
                for k in range(c, n + 1):
                    row[k] -= f * pivot[k]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        row = m[i]
        x[i] = (row[n] - sum(row[k] * x[k] for k in range(i + 1, n))) / row[i]
    return x


class Simulator:
    """One instance of the model: value arrays ``r``, ``i``, ``b``, their left limits ``pr``,
    ``pi``, ``pb``, the frozen relations ``rel``, the current mode; `initialize` then `do_step`
    (module docstring)."""

    def __init__(self, plan: dict):
        self.plan = plan
        nr, ni, nb = plan["n"]
        self.r, self.i, self.b = [0.0] * nr, [0] * ni, [False] * nb
        self.pr, self.pi, self.pb = [0.0] * nr, [0] * ni, [False] * nb
        self.rel = [False] * len(plan["relations"])
        self.new: list = [0.0] * 64
        self.time = 0.0
        self.initializing = True
        self.mode = 0
        self.host_set: set = set()
        self.rtol = (plan.get("default_experiment") or {}).get("tolerance") or 1e-6
        self.events = 0
        for v in plan["variables"]:
            if v["start"] is not None:
                getattr(self, {"Real": "r", "Integer": "i", "Boolean": "b"}[v["type"]])[
                    v["vr"]] = v["start"]
        for k, g in plan["guesses"]:
            self.r[k] = g
        c = lambda n: compile_tree(n, self)   # noqa: E731
        self.calculated = [(self._target(t), c(e)) for t, e in plan["calculated"]]
        self.start_bindings = [(k, c(e)) for k, e in plan["start_bindings"]]
        self.discrete = [(self._target(t), c(e)) for t, e in plan["discrete"]]
        # the discrete equations no restart reads, re-evaluated after one (`_settle`)
        self.settled = [(self._target(t), c(e)) for t, e in plan.get("settled", ())]
        # the discrete equations evaluated at their previous values by the mode step's trial
        # (`GuardedRun.held_trial`)
        held = set(plan.get("held", ()))
        self.held_discrete = [
            (set_, (lambda t=t: getattr(self, "p" + t[1])[t[2]]) if k in held else f)
            for k, ((set_, f), (t, _)) in enumerate(zip(self.discrete, plan["discrete"]))]
        self.held_targets = [(t[1], t[2]) for k, (t, _) in enumerate(plan["discrete"])
                             if k in held]
        self.relations = [(c(r["s"]), r["strict"],
                           None if r.get("rate") is None else c(r["rate"]))
                          for r in plan["relations"]]
        # the relations the held equations read, taken at their threshold within the
        # projection tolerance (`GuardedRun.held_thresholds`, the C FMU's held_thresholds)
        self.held_relations = list(plan.get("held_relations", ()))
        self.assert_tol = plan.get("assert_tol", 1e-8)
        self.warnings: list = []      # assertion warnings, for the host's log
        self.assertions = [(compile_tree(c, self), compile_message(msg, self), level)
                           for c, msg, level in plan.get("assertions", ())]
        self.modes = [self._mode(m) for m in plan["modes"]]
        self.init_system = self.system(plan.get("init"))
        self.guards = [c(g) for g in plan["guards"]]
        # a multimode model: its guarded block schedule (`GuardedRun`)
        self.guarded = GuardedRun(self, plan["guarded"]) if plan.get("guarded") else None
        self.branches = [(c(b["condition"]), [(k, c(x)) for k, x in b["restart"]],
                          b.get("label", str(n)),
                          [(k, c(num), c(den)) for k, num, den in b.get("impulses", ())],
                          [(self._target(t), c(x)) for t, x in b.get("reinit", ())])
                         for n, b in enumerate(plan["branches"])]
        # when-equations: (branch, setter, value) in the plan's solve order
        self.when_equations = [
            (bi, self._target(plan["branches"][bi]["assign"][str(ai)][0]),
             c(plan["branches"][bi]["assign"][str(ai)][1]))
            for bi, ai in plan.get("assignment_order", ())]
        self.clauses = plan.get("clauses") or [[k] for k in range(len(self.branches))]
        self.branch_pre = [False] * len(self.branches)
        st = plan["states"]
        self.vec = [s["slot"] if s["store"] is None else s["store"] for s in st]
        self.ders = [s["der"] for s in st]
        self.nominal = np.array([s["nominal"] for s in st])
        self.set_tolerance(self.rtol)
        self.solver: Any = None     # scipy LSODA, kept between steps, None to restart
        self.dirty = False          # the host set a value since the last step

    def set_tolerance(self, tol: float):
        """Relative tolerance of the integrator; absolute tolerance ``tol * nominal``."""
        self.rtol = tol
        self.atol = tol * self.nominal

    # --- plan -> closures --------------------------------------------------------------
    def _target(self, t):
        if t[0] == "t":
            raise ValueError("time is not assignable")
        arr, k = getattr(self, t[1]), t[2]
        if t[1] == "b":
            return lambda v: arr.__setitem__(k, bool(v))
        if t[1] == "i":
            return lambda v: arr.__setitem__(k, int(v))
        return lambda v: arr.__setitem__(k, float(v))

    def _mode(self, m):
        return ([self.block(b) for b in m["blocks"]], m["zero"], m["stores"],
                self.system(m.get("project")))

    def block(self, blk):
        """The closures of a block of the plan (``lin`` or ``newton``), for `solve`."""
        if blk["kind"] == "lin":
            return ("lin", blk["label"], blk["u"], compile_tree(blk["a"], self),
                    compile_tree(blk["b"], self))
        n = len(blk["u"])
        return ("newton", blk["label"], blk["u"], [compile_tree(f, self) for f in blk["F"]],
                [(i * n + j, compile_tree(e, self)) for i, j, e in blk["J"]],
                blk.get("linear", False))

    def solve(self, blk):
        """Solve one block (`block`) for its unknowns from the current values."""
        if blk[0] == "lin":
            a = blk[3]()
            self.r[blk[2]] = -blk[4]() / a if a != 0 else math.nan
        else:
            self._newton(blk)

    def system(self, sysm):
        """(residuals, Jacobian entries, unknown slots) of a projection or initial system."""
        sysm = sysm or {"F": [], "J": [], "slots": []}
        n = len(sysm["slots"])
        return ([compile_tree(f, self) for f in sysm["F"]],
                [(i * n + j, compile_tree(e, self)) for i, j, e in sysm["J"]], sysm["slots"])

    # --- equations ---------------------------------------------------------------------
    def compute(self):
        """Discrete equations, then the current mode's schedule (of a multimode model: the
        guarded one, `GuardedRun.compute`)."""
        if self.guarded is not None:
            self.guarded.compute()
            return
        for set_, f in self.discrete:
            set_(f())
        blocks, zero, stores, _ = self.modes[self.mode]
        r = self.r
        if not self.initializing:
            for slot, store in stores:
                r[slot] = r[store]
        else:
            for slot, store in stores:
                r[store] = r[slot]
        for k in zero:
            r[k] = 0.0
        for blk in blocks:
            self.solve(blk)

    def _newton(self, blk):
        """Newton on a block with its analytic Jacobian; a linear block (every residual
        linear in the unknowns, `mdae_fmu.codegen.blocks.classify`) takes one step, which is
        exact."""
        _, label, us, F, J, linear = blk
        r, n = self.r, len(us)
        for _ in range(NEWTON_MAX):
            f = [-g() for g in F]
            if not all(math.isfinite(v) for v in f):
                break
            jac = [0.0] * (n * n)
            for k, g in J:
                jac[k] = g()
            dx = solve_dense(jac, f, n)
            if dx is None:
                raise SimulationError(f"t = {self.time!r}: block {label}: singular Jacobian")
            done = True
            for k, u in enumerate(us):
                x = r[u] + dx[k]
                r[u] = x
                if not abs(dx[k]) <= NEWTON_TOL * (1.0 + abs(x)):
                    done = False
            if done or linear:
                return
        raise SimulationError(f"t = {self.time!r}: block {label}: Newton does not converge")

    def solve_system(self, system, what: str, before=None):
        """Minimal-norm Gauss-Newton on ``system`` (`system`) from the current values;
        ``before()`` runs before each evaluation of its rows."""
        F, J, slots = system
        if not F or not slots:
            return
        r, n = self.r, len(slots)
        for _ in range(NEWTON_MAX):
            if before is not None:
                before()
            f = np.array([g() for g in F])
            scale = 1.0 + max(abs(r[k]) for k in slots)
            if np.all(np.abs(f) <= 1e-12 * scale):
                return
            jac = np.zeros(len(F) * n)
            for k, g in J:
                jac[k] = g()
            dx = np.linalg.lstsq(jac.reshape(len(F), n), -f, rcond=None)[0]
            for k, slot in enumerate(slots):
                r[slot] += float(dx[k])
        raise SimulationError(f"t = {self.time!r}: the projection onto {what} does not "
                              "converge")

    def relation_value(self, k):
        """Relation ``k`` at the current values: exact, except a relation of when-conditions
        with a rate within the hysteresis band of its surface: the side the solution goes
        to (its right limit; the C FMU's ``right_limit``, docs/fmi-mapping.md, "Events")."""
        f, strict, rate = self.relations[k]
        s = f()
        if rate is not None and not self.initializing:
            ds = rate()
            teps = 1e-12 * max(1.0, abs(self.time))
            if ds != 0 and abs(s) <= 2.0 * HYSTERESIS + abs(ds) * teps:
                return ds > 0
        return s > 0 if strict else s >= 0

    def indicators(self):
        """The event indicators: ``s + delta`` while relation ``k`` holds, ``s - delta``
        while not; a relation with a rate whose frozen value is the side the solution goes
        to stays away from zero while the solution crosses the band from the other side (the
        C FMU's ``directed_indicator``)."""
        out = []
        for k, (f, _, rate) in enumerate(self.relations):
            v = f()
            if rate is not None:
                ds = rate()
                if self.rel[k] and ds > 0:
                    v = max(v, 0.0)
                elif not self.rel[k] and ds < 0:
                    v = min(v, 0.0)
            out.append(v + HYSTERESIS if self.rel[k] else v - HYSTERESIS)
        return out

    # --- life cycle --------------------------------------------------------------------
    def initialize(self, start_time: float):
        """Initialization Mode: calculated parameters, parameter-bound starts the host did
        not set, the relations and discrete equations at the start values, the mode they
        select, then the schedule."""
        self.time = start_time
        self.initializing = True
        for set_, f in self.calculated:
            set_(f())
        for k, f in self.start_bindings:
            if ("r", k) not in self.host_set:
                self.r[k] = float(f())
        self._save_pre()            # pre(v) during initialization: the start value of v
        for k in range(len(self.rel)):
            self.rel[k] = self.relation_value(k)
        before = None
        if self.plan.get("init_mode_dependent") and self.guarded is not None:
            # the rows of each block variant are selected by its activity flag, which the
            # guards define: the mode of the current values before each evaluation
            before = self.guarded.select_mode
        self.solve_system(self.init_system, "the initial system", before)
        self.compute()
        # when-clauses on initial() fire at initialization, no other
        on_initial = [b.get("initial", False) for b in self.plan["branches"]]
        self.branch_pre = [not init for init in on_initial]
        if any(on_initial) and self._when_instant():
            self.compute()
        self.branch_pre = [bool(b[0]()) for b in self.branches]
        self.initializing = False
        self._save_pre()
        self.compute()
        self._event_iteration()
        self.solver = None
        self.dirty = False

    def check_assertions(self):
        """Each assertion's condition (relations up to ``assert_tol``): a failed ``error``
        one stops the simulation, a ``warning`` one is logged."""
        for cond, message, level in self.assertions:
            if not cond():
                msg = message()
                if level == "warning":
                    self.warnings.append(f"t = {self.time!r}: assertion: {msg}")
                else:
                    raise SimulationError(f"t = {self.time!r}: assertion failed: {msg}")

    def _save_pre(self):
        self.pr[:] = self.r
        self.pi[:] = self.i
        self.pb[:] = self.b

    def _event_iteration(self):
        """Instants at one time until nothing changes (module docstring)."""
        for _ in range(MAX_INSTANTS):
            changed = self._update_relations()
            restarted = False
            if self.guarded is not None:
                restarted = self.guarded.mode_step()
                changed = restarted or changed
            else:
                for set_, f in self.discrete:
                    set_(f())
            if self.branches and self._when_instant():
                changed = True
            self.compute()
            if restarted:
                self._settle()
            self._save_pre()
            if not changed:
                self.check_assertions()
                return
        raise SimulationError(f"t = {self.time!r}: the event iteration does not settle")

    def _settle(self) -> None:
        """After a mode change's restart and the instant's solve (the C FMU's
        ``mdae_settle_discrete``): every relation from the restarted values and, when one
        changed, the discrete equations that nothing the restart solved reads
        (``plan["settled"]``, `codegen.guarded.settled_assignments`), so that the next
        instant reads pre() of this instant's own solution (Modelica 3.6 §8.6); the discrete
        values the restart was computed with are kept (docs/multimode-fmu.md)."""
        if self._update_relations():
            for set_, f in self.settled:
                set_(f())

    def _update_relations(self) -> bool:
        """Every frozen relation from the current values, those the held equations read
        taken at their threshold within the projection tolerance
        (`GuardedRun.held_thresholds`); whether one changed."""
        before = list(self.rel)
        for k in range(len(self.rel)):
            self.rel[k] = self.relation_value(k)
        if self.guarded is not None and self.held_targets and not self.initializing:
            self.guarded.held_thresholds()
        return self.rel != before

    def _when_instant(self) -> bool:
        """The when-branches at this instant: a branch fires when its condition is true and
        was false at the previous instant, an ``elsewhen`` only if no earlier branch of its
        clause fires; the equations of the firing branches in their solve order, then their
        reinits (all values before any assignment), then the analysed restarts, once per
        transient mode entered, with their impulses (`mdae_fmu.codegen.events`)."""
        now = [bool(b[0]()) for b in self.branches]
        fire = [False] * len(self.branches)
        for clause in self.clauses:
            for k in clause:
                if now[k] and not self.branch_pre[k]:
                    fire[k] = True
                    break
        self.branch_pre = now
        if not any(fire):
            return False
        for k, set_, value in self.when_equations:
            if fire[k]:
                set_(value())
        literal = [(set_, f()) for k, b in enumerate(self.branches) if fire[k]
                   for set_, f in b[4]]
        for set_, v in literal:
            set_(v)
        restarts: dict = {}
        for k, (_, restart, label, impulses, _) in enumerate(self.branches):
            if fire[k] and restart:
                restarts.setdefault(label, (restart, impulses))
        for restart, impulses in restarts.values():
            values = [f() for _, f in restart]
            self.new[:len(values)] = values
            imps = []
            for slot, num, den in impulses:
                d = den()
                imps.append((slot, num() / d if d != 0 else 0.0))
            for (slot, _), v in zip(restart, values):
                self.r[slot] = v
            for slot, v in imps:
                self.r[slot] = v        # the impulse over this instant
        return True

    # --- integration -------------------------------------------------------------------
    def _set_y(self, t, y):
        self.time = t
        r = self.r
        for k, slot in enumerate(self.vec):
            r[slot] = float(y[k])

    def _rhs(self, t, y):
        self._set_y(t, y)
        self.compute()
        r = self.r
        return np.array([r[k] for k in self.ders])

    def _y(self):
        return np.array([self.r[k] for k in self.vec])

    def _z_at(self, t, y):
        self._set_y(t, y)
        self.compute()
        return self.indicators()

    def do_step(self, t: float, h: float, t_stop: float):
        """Advance from ``t`` to ``t + h``: integrate, locate and handle events on the way,
        leave the values at ``t + h``."""
        t_end = t + h
        if self.dirty:
            # inputs (or tunable values) set at the communication point: an instant there,
            # then the integrator restarts from the new values
            self.dirty = False
            self.time = t
            self.compute()
            self._save_pre()
            self._event_iteration()
            self.solver = None
        if not self.vec:
            self.time = t_end
            self.compute()
            self._event_iteration()
            return
        while True:
            if self.solver is None:
                self._z = self._z_at(self.time, self._y())
                self.solver = LSODA(self._rhs, self.time, self._y(), max(t_stop, t_end),
                                    rtol=self.rtol, atol=self.atol)
            s = self.solver
            if s.status == "finished" and s.t < t_end:
                self.solver = None       # past the bound it was created with
                continue
            if s.t >= t_end:
                # the integrator is ahead of the communication point: interpolate
                self._set_y(t_end, s.dense_output()(t_end) if s.t > t_end else s.y)
                self.compute()
                self._control_drift()
                return
            t0 = s.t
            msg = s.step()
            if s.status == "failed":
                raise SimulationError(f"t = {s.t!r}: the integrator fails: {msg}")
            sol = s.dense_output()
            z1 = self._z_at(s.t, s.y)
            hit = self._first_crossing(sol, t0, s.t, self._z, z1)
            if hit is None:
                self._z = z1
                continue
            te = hit
            if te > t_end:
                # the crossing lies beyond the communication point: stop there, restart the
                # integrator from it at the next step
                self._set_y(t_end, sol(t_end))
                self.compute()
                self.solver = None
                return
            self._set_y(te, sol(te))
            self.compute()
            self.events += 1
            self._save_pre()            # the left limits at the event
            self._event_iteration()
            self.solver = None

    def _control_drift(self):
        """At a communication point: when the current mode's consistency equations drift
        beyond the tolerance (module constants), project onto them and restart the
        integrator there (as the C Co-Simulation FMU does, docs/cosimulation.md)."""
        tol = min(DRIFT_MAX, max(DRIFT_MIN, DRIFT_PER_TOLERANCE * self.rtol))
        if self.guarded is not None:
            if self.guarded.drift() <= tol:
                return
            self.guarded.project()
        else:
            blocks, zero, stores, system = self.modes[self.mode]
            if not system[0] or max(abs(f()) for f in system[0]) <= tol:
                return
            self.solve_system(system, "the consistency equations")
            for slot, store in stores:
                self.r[store] = self.r[slot]
        self.compute()
        self.solver = None

    def _first_crossing(self, sol, t0, t1, z0, z1):
        """The earliest root in (t0, t1] of an indicator that changes sign, else None."""
        best = None
        for k in range(len(z0)):
            if (z0[k] > 0) == (z1[k] > 0) and z1[k] != 0:
                continue

            def zk(t, k=k):
                return self._z_at(t, sol(t))[k]
            a, b = t0, (t1 if best is None else best)
            if (zk(a) > 0) == (zk(b) > 0) and zk(b) != 0:
                continue
            root = brentq(zk, a, b, xtol=1e-14, rtol=4 * np.finfo(float).eps)
            # step just past the root, so that the indicator has changed sign there
            if (zk(root) > 0) == (z0[k] > 0) and zk(root) != 0:
                root = min(b, root + 1e-14 * max(1.0, abs(root)))
            best = root if best is None else min(best, root)
        return best


class GuardedRun:
    """The guarded block schedule of a multimode model (docs/theory.md §10.2, §11;
    docs/decisions.md §9), run as the C FMU's ``model_modes.c`` runs it
    (templates/model_guarded.c.j2): the guard bits select, through the BDD of the plan,
    which block variants, conditional states and selection flags are active; the schedule
    solves the active variants in order; a mode change computes the left limits in the old
    mode, then restarts, in schedule order, the active variants that are new in the mode,
    merged, or read a variable that an earlier restart moved."""

    def __init__(self, sim: Simulator, g: dict):
        self.sim = sim
        self.var, self.lo, self.hi = g["bdd"]
        self.bits_slot, self.active_slot = g["bits_slot"], g["active_slot"]
        self.mode_slot = sim.plan["mode_slot"]
        self.ng = len(sim.guards)
        self.blocks = []
        self.rows = []                  # consistency rows: (variant, when, F, [(slot, dF)])
        c = lambda n: compile_tree(n, sim)   # noqa: E731
        for k, b in enumerate(g["blocks"]):
            rs = b["restart"]
            restart = None if rs is None else (
                sim.block(rs["block"]),
                [(lv["label"], sim.system(lv)) for lv in rs["levels"]],
                [(text, c(den), c(scale)) for text, den, scale in rs["singular"]],
                rs["sel"])
            self.blocks.append((b["formula"], b["merged"], b["reads"], b["writes"],
                                sim.block(b["block"]), b["sel"], restart))
            for when, f, jac in b["cons"]:
                self.rows.append((k, None if when is None else c(when), c(f),
                                  [(slot, c(d)) for slot, d in jac]))
        self.cond_states = g["cond_states"]
        self.flags = g["flags"]
        self.left = g["left"]
        self.impulse = g["impulse"]
        self.var_slots = g["var_slots"]
        self.max_changes = g["max_changes"]
        self.changes = 0                # mode changes at the current instant

    def holds(self, u: int, bits) -> bool:
        """Whether BDD node ``u`` (-1 true, -2 false) holds for the guard ``bits``."""
        var, lo, hi = self.var, self.lo, self.hi
        while u >= 0:
            u = hi[u] if bits[var[u]] else lo[u]
        return u == -1

    def guard_bits(self) -> list:
        return [1 if f() else 0 for f in self.sim.guards]

    def bits(self) -> list:
        """The guard bits of the current mode."""
        return self.sim.i[self.bits_slot:self.bits_slot + self.ng]

    def set_mode(self, g) -> None:
        """Guard bits, then the activity flags of the block variants, the conditional states
        and the selection flags (one Integer slot each, after the bits)."""
        i, a, nb = self.sim.i, self.active_slot, len(self.blocks)
        i[self.bits_slot:self.bits_slot + self.ng] = g
        for k, b in enumerate(self.blocks):
            i[a + k] = int(self.holds(b[0], g))
        for k, cs in enumerate(self.cond_states):
            i[a + nb + k] = int(self.holds(cs[0], g))
        for k, u in enumerate(self.flags):
            i[a + nb + len(self.cond_states) + k] = int(self.holds(u, g))

    def mode_number(self, g) -> int:
        """The FMU's mode variable: the guard bits as a number (bit k = guard k), or, beyond
        30 guards, the count of mode changes."""
        if self.ng > 30:
            return self.sim.i[self.mode_slot] + 1
        return sum(1 << k for k, v in enumerate(g) if v)

    def select_mode(self) -> None:
        """The mode of the current values (during initialization): the discrete equations,
        the guard bits and the flags they give."""
        sim = self.sim
        for set_, f in sim.discrete:
            set_(f())
        g = self.guard_bits()
        self.set_mode(g)
        sim.mode = self.mode_number(g)
        sim.i[self.mode_slot] = sim.mode

    def compute(self) -> None:
        """``mdae_compute``: during initialization the mode of the current values (left
        limits = current values), else the discrete equations only; then the schedule."""
        sim = self.sim
        if sim.initializing:
            sim.pr[:] = sim.r
            self.select_mode()
        else:
            for set_, f in sim.discrete:
                set_(f())
        self.run_schedule()

    def sync_states(self, to_variable: bool) -> None:
        """The states of some modes only: where one is a state of the mode, its variable
        and its state vector entry agree (``to_variable``: the entry into the variable, else
        the variable into the entry); elsewhere the entry is frozen (derivative 0) while a
        block computes the variable."""
        r, i = self.sim.r, self.sim.i
        base = self.active_slot + len(self.blocks)
        for k, (_, slot, store, der) in enumerate(self.cond_states):
            if not i[base + k]:
                r[der] = 0.0
            elif store >= 0:
                if to_variable:
                    r[slot] = r[store]
                else:
                    r[store] = r[slot]

    def run_schedule(self) -> None:
        """The active block variants in schedule order; a merged block's mode-selected
        unknowns copied into their proxies before the solve and back after it."""
        sim = self.sim
        self.sync_states(not sim.initializing)
        i, a = sim.i, self.active_slot
        for k, (_, _, _, _, blk, sel, _) in enumerate(self.blocks):
            if not i[a + k]:
                continue
            self.copies(sel, True)
            sim.solve(blk)
            self.copies(sel, False)

    def copies(self, sel, gather: bool) -> None:
        """A merged block's mode-selected unknowns ``[flag, proxy, target]``: where the flag
        is set, the target into its proxy (``gather``: the solver's guess, before the solve)
        or the proxy into the target (after it)."""
        r, i = self.sim.r, self.sim.i
        for flag, proxy, target in sel:
            if i[flag]:
                if gather:
                    r[proxy] = r[target]
                else:
                    r[target] = r[proxy]

    # --- consistency: drift and projection ----------------------------------------------
    def active_rows(self) -> list:
        i, a = self.sim.i, self.active_slot
        return [row for row in self.rows
                if i[a + row[0]] and (row[1] is None or row[1]())]

    def drift(self) -> float:
        """The largest residual of the current mode's consistency equations (the rows of
        its active variants)."""
        return max((abs(row[2]()) for row in self.active_rows()), default=0.0)

    def project(self) -> None:
        """Minimal-norm Gauss-Newton (analytic Jacobian) of the states the active rows read
        onto them, then the conditional states' entries from their variables."""
        sim, r = self.sim, self.sim.r
        rows = self.active_rows()
        if rows:
            cols = sorted({slot for row in rows for slot, _ in row[3]})
            col = {slot: j for j, slot in enumerate(cols)}
            for _ in range(NEWTON_MAX):
                f = np.array([row[2]() for row in rows])
                scale = 1.0 + max((abs(r[k]) for k in cols), default=0.0)
                if np.all(np.abs(f) <= 1e-12 * scale):
                    break
                jac = np.zeros((len(rows), len(cols)))
                for m, row in enumerate(rows):
                    for slot, d in row[3]:
                        jac[m, col[slot]] = d()
                dx = np.linalg.lstsq(jac, -f, rcond=None)[0]
                for j, slot in enumerate(cols):
                    r[slot] += float(dx[j])
            else:
                raise SimulationError(f"t = {sim.time!r}: the projection onto the consistency "
                                      "equations does not converge")
        self.sync_states(False)

    # --- mode change ---------------------------------------------------------------------
    def _valuation(self, g) -> str:
        names = self.sim.plan.get("guard_names", ())
        return ",".join(n if v else f"not {n}" for n, v in zip(names, g))

    def mode_step(self) -> bool:
        """``mdae_mode_step``: first the trial of the held discrete variables (`held_trial`),
        then, when the guard bits changed, one nonstandard instant (module docstring of
        `GuardedRun`); whether the mode changed."""
        sim = self.sim
        if sim.held_targets:
            self.tight_left_limits()
            self.held_thresholds()
        for set_, f in sim.discrete:
            set_(f())
        g, old = self.guard_bits(), list(self.bits())
        if sim.held_targets and self.held_trial(old, g):
            return True
        if g == old:
            self.changes = 0
            return False
        self.changes += 1
        if self.changes > self.max_changes:
            names = self.sim.plan.get("guard_names", ())
            diff = ", ".join(n for n, x, y in zip(names, old, g) if x != y)
            raise SimulationError(
                f"t = {sim.time!r}: the event iteration does not settle: {self.changes} mode "
                f"changes at this instant, the last [{self._valuation(old)}] -> "
                f"[{self._valuation(g)}]; guards that keep changing: {diff}")
        self.change_mode(old, g, left=False)
        return True

    def tight_left_limits(self) -> None:
        """The C FMU's ``tight_left_limits``: the instant's values projected onto the current
        mode's consistency equations to the projection tolerance when they hold within the
        drift tolerance (a larger drift is the instant's discrete values read by the old
        mode's equations: nothing is moved)."""
        sim = self.sim
        drift = self.drift()
        if 1e-12 < drift <= min(DRIFT_MAX, max(DRIFT_MIN, DRIFT_PER_TOLERANCE * sim.rtol)):
            self.project()
            self.run_schedule()

    def held_thresholds(self) -> None:
        """The C FMU's ``held_thresholds``: a relation that a held equation reads, within the
        projection tolerance of its threshold, takes its value on the threshold (false if
        strict, else true; docs/multimode-fmu.md, "Event iteration")."""
        sim = self.sim
        for k in sim.held_relations:
            f, strict, _ = sim.relations[k]
            if abs(f()) <= 1e-12:
                sim.rel[k] = not strict

    def held_trial(self, old, g) -> bool:
        """The C FMU's ``held_trial`` (docs/multimode-fmu.md, "Event iteration"): with the
        held discrete variables (`codegen.guarded.held_discrete`) at their previous values,
        the guards select h; when h is neither the current mode nor g, the change to h is
        made from the previous instant's solution, and kept if the relations of h's solution
        give the held variables back and select h again; else every value is put back."""
        sim = self.sim
        for set_, f in sim.held_discrete:
            set_(f())
        h = self.guard_bits()
        for set_, f in sim.discrete:
            set_(f())
        if h == old or h == g or self.changes >= self.max_changes:
            return False
        keep = (list(sim.r), list(sim.i), list(sim.b), list(sim.rel), sim.mode, self.changes)
        for set_, f in sim.held_discrete:
            set_(f())
        self.changes += 1
        ok = True
        try:
            self.change_mode(old, h, left=True)
            self.run_schedule()
        except (SimulationError, ArithmeticError):
            ok = False
        if ok:
            sim._update_relations()
            for set_, f in sim.discrete:
                set_(f())
            ok = self.guard_bits() == h and all(
                getattr(sim, a)[k] == getattr(sim, "p" + a)[k] for a, k in sim.held_targets)
        if not ok:
            sim.r[:], sim.i[:], sim.b[:], sim.rel[:] = keep[:4]
            sim.mode, self.changes = keep[4], keep[5]
        return ok

    def change_mode(self, old, g, left: bool) -> None:
        """The mode change from the guard bits ``old`` to ``g``: the left limits in the old
        mode (unless ``left``: the current values, the previous instant's solution), then the
        blocks of the new mode that are new, merged, or read a moved variable, restarted."""
        sim = self.sim
        r, i, a = sim.r, sim.i, self.active_slot
        if not left and sim.held_targets:
            # the C FMU's rule with held variables: when the old mode, read with this
            # instant's discrete values, drifts beyond the drift threshold, the left limits
            # are the previous instant's values as they are
            keep = list(r)
            self.run_schedule()
            drift = self.drift()
            if drift > min(DRIFT_MAX, max(DRIFT_MIN, DRIFT_PER_TOLERANCE * sim.rtol)):
                r[:] = keep
            elif drift > 1e-12:
                self.project()
                self.run_schedule()
        elif not left:
            self.run_schedule()                         # left limits in the old mode
            if self.drift() > 1e-12:                    # ... on its consistency equations
                self.project()
                self.run_schedule()
        for slot, lslot in self.left:
            r[lslot] = r[slot]
        for slot in self.impulse:
            r[slot] = 0.0
        self.set_mode(g)
        touched = [False] * len(self.var_slots)
        for k, (formula, merged, reads, writes, _, _, restart) in enumerate(self.blocks):
            if not i[a + k]:
                continue
            if not (merged or not self.holds(formula, old) or any(touched[v] for v in reads)):
                continue
            if restart is not None:
                self._restart(k, restart, old, g)
            for v in writes:
                state, left_slot, zeta = self.var_slots[v]
                if (state >= 0 and r[state] != r[left_slot]) or (zeta >= 0 and r[zeta] != 0.0):
                    touched[v] = True
        self.sync_states(False)         # restarted states into their state vector entries
        if self.drift() > 1e-12:
            self.project()
        sim.mode = self.mode_number(g)
        i[self.mode_slot] = sim.mode

    def _restart(self, k: int, restart, old, g) -> None:
        """The restart of block variant ``k``: its lower levels (positions) by minimal-norm
        Gauss-Newton, the singular factors of its system checked, then its block over X+ and
        ζ with the selection copies around it; every value it moves finite."""
        sim, r = self.sim, self.sim.r
        blk, levels, singular, sel = restart
        where = (f"t = {sim.time!r}: mode change [{self._valuation(old)}] -> "
                 f"[{self._valuation(g)}]: the restart of block {k} (equations "
                 f"{self.blocks[k][4][1]})")
        try:
            for label, system in levels:
                sim.solve_system(system, label)
            for text, den, scale in singular:
                if not abs(den()) > 1e-13 * scale():
                    raise SimulationError(f"the restart system is numerically singular "
                                          f"({text})")
            self.copies(sel, True)
            sim.solve(blk)
            self.copies(sel, False)
        except (SimulationError, ArithmeticError) as err:
            raise SimulationError(f"{where} failed: {err}") from None
        us = blk[2] if isinstance(blk[2], list) else [blk[2]]
        if not all(math.isfinite(r[u]) for u in us):
            raise SimulationError(f"{where} failed: no finite restart")
