"""The multimode examples of the papers (docs/theory.md §13) as IR models (tests and benchmarks; not
part of the package).

Each builder returns an `mdae_fmu.ir.Model` written the way a flat Modelica model would be
imported: if-expressions and if-equation guards are long guards, when-clauses transient ones.
Equations are given in a small Python-syntax notation, parsed with `ast` into the expression
tree (nothing is executed): ``der(x)``, ``pre(x)``, ``a if c else b``, ``**`` for powers,
``lhs = rhs`` for an equation.

Sources: docs/theory.md §13.1 (clutch, ClutchBasic), §13.2 (Cup-and-Ball), §13.3 (Westinghouse
air brake), §13.4 (RLDC2), §13.5 (non-semilinear clutch); §6.6 (missing restart), §7.4
(RR-9334 Example 47).
"""

from __future__ import annotations

import ast
import itertools
import re

from mdae_fmu import expr as E
from mdae_fmu.ir import Equation, GuardLiteral, Model, Reinit, Variable, WhenBranch, WhenClause
from mdae_fmu.modes.normalize import Mode, MultimodeSystem
from mdae_fmu.structure.per_mode import consistent_valuation

_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "<>"}


def ex(text: str) -> E.Expr:
    """Parse a Python-syntax expression into the expression tree (never evaluated)."""
    return _conv(ast.parse(text.strip(), mode="eval").body)


def _conv(n) -> E.Expr:
    if isinstance(n, ast.Constant):
        return E.Const(n.value)  # type: ignore[arg-type]  # the examples' literals are numbers
    if isinstance(n, ast.Name):
        if n.id in ("true", "false"):
            return E.Const(n.id == "true")
        return E.TIME if n.id == "time" else E.Ref(n.id)
    if isinstance(n, ast.Attribute):
        return E.Ref(_dotted(n))
    if isinstance(n, ast.BinOp):
        return E.BinOp(_BIN[type(n.op)], _conv(n.left), _conv(n.right))
    if isinstance(n, ast.UnaryOp):
        if isinstance(n.op, ast.Not):
            return E.UnOp("not", _conv(n.operand))
        return E.UnOp("-" if isinstance(n.op, ast.USub) else "+", _conv(n.operand))
    if isinstance(n, ast.BoolOp):
        op = "and" if isinstance(n.op, ast.And) else "or"
        out = _conv(n.values[0])
        for v in n.values[1:]:
            out = E.BinOp(op, out, _conv(v))
        return out
    if isinstance(n, ast.Compare):
        if len(n.ops) != 1:
            raise ValueError("chained comparison")
        return E.BinOp(_CMP[type(n.ops[0])], _conv(n.left), _conv(n.comparators[0]))
    if isinstance(n, ast.IfExp):
        return E.If(_conv(n.test), _conv(n.body), _conv(n.orelse))
    if isinstance(n, ast.Call):
        f = n.func.id if isinstance(n.func, ast.Name) else _dotted(n.func)
        args = tuple(_conv(a) for a in n.args)
        if f == "der":
            return E.Der(args[0])
        return E.Call(f, args)
    raise ValueError(f"unsupported syntax: {ast.dump(n)}")


def _dotted(n) -> str:
    if isinstance(n, ast.Name):
        return n.id
    return _dotted(n.value) + "." + n.attr


_EQ_SPLIT = re.compile(r"(?<![<>=!])=(?!=)")


def eq(eq_id: str, text: str, *guard: str) -> Equation:
    """``eq("e1", "der(w1) = -w1 + t1", "g")``: an equation with optional guard literals
    (``"g"`` or ``"not g"``)."""
    parts = _EQ_SPLIT.split(text)
    if len(parts) == 2:
        res = E.residual(ex(parts[0]), ex(parts[1]))
    else:
        res = ex(text)
    lits = []
    for g in guard:
        g = g.strip()
        if g.startswith("not "):
            lits.append(GuardLiteral(cond=ex(g[4:]), positive=False))
        else:
            lits.append(GuardLiteral(cond=ex(g), positive=True))
    return Equation(eq_id, res, tuple(lits))


def real(name: str, start=None, fixed=None) -> Variable:
    return Variable(name, start=None if start is None else E.Const(float(start)), fixed=fixed)


def param(name: str, value) -> Variable:
    return Variable(name, variability="parameter", causality="parameter",
                    binding=E.Const(float(value)))


def boolean(name: str, start=False, discrete=True) -> Variable:
    return Variable(name, type="Boolean", variability="discrete" if discrete else "parameter",
                    causality="local" if discrete else "parameter", start=E.Const(bool(start)))


def boolean_input(name: str, start=False) -> Variable:
    return Variable(name, type="Boolean", variability="discrete", causality="input",
                    start=E.Const(bool(start)))


# --- clutch ------------------------------------------------------------------------------------

def clutch_paper(j1=1.0, j2=2.0, k1=0.01, k2=0.0125) -> Model:
    """The ideal clutch (docs/theory.md §13.1, RR-9334 model (3)) with g an input, e4 guarded."""
    return Model(
        name="ClutchPaper",
        variables=(
            real("w1", 1.0, True),
            real("w2", 1.5, True),
            real("t1"),
            real("t2"),
            boolean_input("g"),
            param("j1", j1),
            param("j2", j2),
            param("k1", k1),
            param("k2", k2),
        ),
        equations=(
            eq("e1", "der(w1) = (-k1*w1 + t1)/j1"),
            eq("e2", "der(w2) = (-k2*w2 + t2)/j2"),
            eq("e3", "w1 - w2 = 0", "g"),
            eq("e4", "t1 + t2 = 0", "g"),
            eq("e5", "t1 = 0", "not g"),
            eq("e6", "t2 = 0", "not g"),
        ),
    )


def clutch_basic() -> Model:
    """ClutchBasic (docs/theory.md §13.1, RR-9334 Figure 2): e4 unguarded, ``0 = if g then w1 - w2
    else f1``, g defined from the state t."""
    return Model(name="ClutchBasic", variables=(
        real("t", 0.0, True), real("w1", 1.0, True), real("w2", 1.5, True), real("f1"),
        real("f2"), boolean("g", False),
        param("j1", 1), param("j2", 2), param("k1", 0.01), param("k2", 0.0125),
        param("t1", 5), param("t2", 7)), equations=(
        eq("e0", "der(t) = 1"),
        eq("eg", "g = (t >= t1) and (t <= t2)"),
        eq("e1", "j1*der(w1) = -k1*w1 + f1"),
        eq("e2", "j2*der(w2) = -k2*w2 + f2"),
        eq("e3", "0 = (w1 - w2 if g else f1)"),
        eq("e4", "f1 + f2 = 0")))


def clutch_cubic() -> Model:
    """The non-semilinear clutch (docs/theory.md §13.5, RR-9334 (188)): torque cubic on shaft 1."""
    return Model(
        name="ClutchCubic",
        variables=(
            real("w1", 1.0, True),
            real("w2", 5.0, True),
            real("t1"),
            real("t2"),
            boolean_input("g"),
            param("a1", -1),
            param("a2", -1),
            param("b1", 1),
            param("b2", 1),
        ),
        equations=(
            eq("e1", "der(w1) = a1*w1 + b1*t1**3"),
            eq("e2", "der(w2) = a2*w2 + b2*t2"),
            eq("e3", "w1 - w2 = 0", "g"),
            eq("e4", "t1 + t2 = 0", "g"),
            eq("e5", "t1 = 0", "not g"),
            eq("e6", "t2 = 0", "not g"),
        ),
    )


# --- Cup-and-Ball -------------------------------------------------------------------------------

def _cup_vars(L=1.0, grav=9.81):
    return (real("x", 0.0, True), real("y", -1.0, True), real("lam"), real("s"),
            param("L", L), param("grav", grav))


def cup_and_ball(delayed=True) -> Model:
    """Cup-and-Ball, inelastic, both modes long (docs/theory.md §13.2, RR-9334 model (29)); with
    ``delayed=False`` the original encoding (5) whose guard reads s at the same instant."""
    cond = "pre(s) <= 0" if delayed else "s <= 0"
    return Model(
        name="CupAndBall" if delayed else "CupAndBallOriginal",
        variables=_cup_vars() + (boolean("g"),),
        equations=(
            eq("e1", "der(der(x)) + lam*x = 0"),
            eq("e2", "der(der(y)) + lam*y + grav = 0"),
            eq("k0", f"g = ({cond})"),
            eq("k1", "L**2 - (x**2 + y**2) = 0", "g"),
            eq("k2", "lam + s = 0", "g"),
            eq("k3", "lam = 0", "not g"),
            eq("k4", "L**2 - (x**2 + y**2) - s = 0", "not g"),
        ),
    )


def cup_and_ball_elastic(impact_law=True, alpha=0.2) -> Model:
    """Cup-and-Ball with an elastic impact (docs/theory.md §13.2, RR-9334 Figure 10), first-order
    form: the rope-straight mode is transient (``when``), with the impact law (46)
    ``reinit(vy, -(1-alpha)*pre(vy))`` or without it."""
    whens: tuple[WhenClause, ...] = ()
    if impact_law:
        whens = (WhenClause(id="w1", branches=(WhenBranch(condition=ex("pre(s) <= 0"), actions=(
            Reinit(var="vy", value=ex(f"-(1 - {alpha})*pre(vy)")),)),)),)
    else:
        whens = (
            WhenClause(id="w1", branches=(WhenBranch(condition=ex("pre(s) <= 0"), actions=()),)),
        )
    return Model(name="CupAndBallElastic" if impact_law else "CupAndBallElasticNoLaw",
                 variables=_cup_vars() + (real("vx", 1.0, True), real("vy", 0.0, True)), equations=(
        eq("e1a", "der(x) = vx"),
        eq("e1b", "der(vx) + lam*x = 0"),
        eq("e2a", "der(y) = vy"),
        eq("e2b", "der(vy) + lam*y + grav = 0"),
        eq("k1", "L**2 - (x**2 + y**2) = 0", "pre(s) <= 0"),
        eq("k2", "lam + s = 0", "pre(s) <= 0"),
        eq("k3", "lam = 0", "not pre(s) <= 0"),
        eq("k4", "L**2 - (x**2 + y**2) - s = 0", "not pre(s) <= 0")), whens=whens)


# --- Westinghouse air brake ----------------------------------------------------------------------

def air_brake(delayed=True) -> Model:
    """The Westinghouse air brake (docs/theory.md §13.3, RR-9334 Figures 8/11); ``phi`` is taken as
    ``tanh`` (the paper leaves it symbolic). ``delayed=False`` is the original valve
    encoding (6)."""
    cond = "pre(s) <= 0" if delayed else "s <= 0"
    names = ["pbn", "pr", "pt", "fb", "fv", "fcl", "fl", "fch", "ft", "b", "x", "s"]
    vs = tuple(real(n) for n in names) + (
        Variable("pb", causality="input", start=E.Const(1.0)),
        param("F1", 1), param("F2", 0.1), param("rho", 1), param("V", 2), param("P0", 1),
        param("S", 0.5), param("L", 1), param("K", 3), boolean("g"))
    return Model(name="AirBrake" if delayed else "AirBrakeOriginal", variables=vs, equations=(
        eq("m1", "0 = fb - fv - fcl + fl"),
        eq("m2", "0 = fv - fch - fl - ft"),
        eq("f1", "0 = fb - F1*tanh(pb - pr)"),
        eq("f2", "0 = F1*tanh(pbn - pr)"),
        eq("f3", "0 = fl - F2*tanh(pt - pr)"),
        eq("r", "0 = ft - (rho*V/P0)*der(pt)"),
        eq("p1", "0 = rho*S*(der(x)*pr + (x - L)*der(pr)) + P0*fcl"),
        eq("p2", "0 = rho*S*(der(x)*S*pt + x*der(pt)) - P0*fch"),
        eq("l1", "0 = S*(pt - pr) - b"),
        eq("l2", "0 = K*x - b"),
        eq("v0", f"g = ({cond})"),
        eq("v1", "0 = pr - pt", "g"),
        eq("v2", "0 = fv + s", "g"),
        eq("v3", "0 = fv", "not g"),
        eq("v4", "0 = pr - pt - s", "not g")))


# --- RLDC2 ---------------------------------------------------------------------------------------

def rldc2(delayed=True, j1=2.0, j2=1.0, v1=0.5, v2=1.0) -> Model:
    """RLDC2 (docs/theory.md §13.4, RR-9334 (195) / Figure 31): two RLC branches with ideal diodes.
    ``delayed=False`` is the Modelica form ``g = (s >= 0)`` (a logico-numerical fixpoint)."""
    c1 = "pre(s1) >= 0" if delayed else "s1 >= 0"
    c2 = "pre(s2) >= 0" if delayed else "s2 >= 0"
    names = ["i1", "i2", "u1", "u2", "w1", "w2", "x1", "x2", "s1", "s2"]
    vs = (real("j1", j1, True), real("j2", j2, True), real("v1", v1, True), real("v2", v2, True)) \
        + tuple(real(n) for n in names) + (
        boolean("g1"), boolean("g2"), param("R1", 10), param("R2", 15), param("L1", 1),
        param("L2", 1.5), param("C1", 0.1), param("C2", 0.15))
    return Model(name="RLDC2" if delayed else "RLDC2_CC", variables=vs, equations=(
        eq("K1", "0 = i1 + i2 + j1 + j2"),
        eq("K2", "x1 + w1 = u1 + v1"),
        eq("K3", "u1 + v1 = u2 + v2"),
        eq("K4", "u2 + v2 = x2 + w2"),
        eq("L1", "w1 = L1*der(j1)"),
        eq("L2", "w2 = L2*der(j2)"),
        eq("C1", "i1 = C1*der(v1)"),
        eq("C2", "i2 = C2*der(v2)"),
        eq("R1", "x1 = R1*j1"),
        eq("R2", "x2 = R2*j2"),
        eq("S1", "s1 = (i1 if g1 else -u1)"),
        eq("S2", "s2 = (i2 if g2 else -u2)"),
        eq("Z1", "0 = (u1 if g1 else i1)"),
        eq("Z2", "0 = (u2 if g2 else i2)"),
        eq("G1", f"g1 = ({c1})"),
        eq("G2", f"g2 = ({c2})")))


# --- small structural examples ---------------------------------------------------------------

def missing_restart() -> Model:
    """Theory note §4.6: mode A ``x' = 1``; mode B adds ``z' = x``; z has no restart value."""
    return Model(name="MissingRestart", variables=(real("x", 0.0, True), real("z", 0.0, True),
                                     boolean_input("g")), equations=(
        eq("a1", "der(x) = 1"),
        eq("b1", "der(z) = x", "g")))


def reset_example() -> Model:
    """RR-9334 Example 47 (docs/theory.md §7.4): ``x' = f(x, u)`` reset to 0 when x >= 1, the Euler
    equation disabled at the reset instant (``else``)."""
    return Model(
        name="Reset",
        variables=(real("x", 0.0, True), Variable("u", causality="input", start=E.Const(1.0))),
        equations=(eq("e2", "der(x) = u - 0.1*x", "not pre(x) >= 1"),),
        whens=(
            WhenClause(
                id="e1",
                branches=(
                    WhenBranch(
                        condition=ex("pre(x) >= 1"), actions=(Reinit(var="x", value=ex("0.0")),)
                    ),
                ),
            ),
        ),
    )


def feasible_mode(system: MultimodeSystem, mode: Mode) -> bool:
    """Mode pruning (theory §2.15 [D] (ii)) of one valuation: False when its long guards
    contradict each other (``time < 1`` and ``time >= 2`` both true; a Boolean guard against
    its definition), or when it combines two transient guards whose edges are never combined
    (`MultimodeSystem.non_simultaneous`). `MultimodeSystem.modes` enumerates only the
    valuations this accepts (the tests compare the two)."""
    on = [i for i, v in enumerate(mode) if v]
    if system.non_simultaneous() & set(itertools.combinations(on, 2)):
        return False
    val = {g.cond: v for g, v in zip(system.guards, mode) if g.kind == "long"}
    return consistent_valuation(val, system.guard_definitions())


#: ClutchMissing (Modelica source): shaft 2 is a state of the engaged mode that the released mode
#: does not determine, so the change into the engaged mode lacks a restart (E-RESTART-MISSING)
CLUTCH_MISSING = """class ClutchMissing "shaft 2 has no dynamics while released: its \
restart is missing"
  parameter Real k = 0.01;
  parameter Real c = 1.0;
  Real t(start = 0.0, fixed = true);
  Boolean engaged(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2;
  Real f1;
  Real f2;
equation
  der(t) = 1.0;
  engaged = t >= 5.0;
  der(w1) = (-k) * w1 + f1;
  if engaged then
    der(w2) = (-k) * w2 + f2;
    f1 + f2 = 0.0;
    f1 = c * (w2 - w1);
  else
    w2 = 0.0;
    f1 = 0.0;
    f2 = 0.0;
  end if;
end ClutchMissing;
"""
