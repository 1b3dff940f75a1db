"""Test models of the structure tests, built directly as ir.Model objects (the Modelica parser
is not needed). Equations are written as Python-syntax strings and converted to expression
trees by `multimode_examples.ex` (parsed with `ast`, never executed): ``der(x)``, ``pre(x)``,
``time``, ``a if g else b`` for if-expressions."""

from __future__ import annotations

from mdae_fmu import expr as E
from mdae_fmu.diagnostics import SourceLoc
from mdae_fmu.ir import Equation, GuardLiteral, Model, Variable

from multimode_examples import ex  # the one Python-syntax converter of the tests


def eq(eid: str, text: str, guard: tuple = (), line: int | None = None,
       file: str = "Test.mo") -> Equation:
    """``eq("e1", "der(w1) = -w1 + t1", guard=(("g", True),), line=12)``."""
    lhs, rhs = text.split("=", 1) if "==" not in text.replace(">=", "").replace("<=", "") \
        else (text, "0")
    lhs, rhs = lhs.strip(), rhs.strip()
    res = E.residual(ex(lhs), ex(rhs))
    g = tuple(GuardLiteral(cond=ex(c), positive=p) for c, p in guard)
    return Equation(eid, res, g, SourceLoc(file, line, 5) if line else None)


def model(name: str, reals: str, equations, booleans: str = "", params: str = "",
          inputs: str = "") -> Model:
    vs = [Variable(n) for n in reals.split()]
    vs += [Variable(n, type="Boolean", variability="discrete") for n in booleans.split()]
    vs += [Variable(n, variability="parameter", causality="parameter") for n in params.split()]
    vs += [Variable(n, causality="input") for n in inputs.split()]
    return Model(name=name, variables=tuple(vs), equations=tuple(equations))


G = (("g", True),)
NG = (("g", False),)


def clutch() -> Model:
    """The ideal clutch of docs/theory.md §13.1 (RR-9334 Figure 2 data), g = time in [5, 7]."""
    f = "ClutchBasic.mo"
    return model("ClutchBasic", "w1 w2 t1 t2", [
        eq("e1", "j1*der(w1) = -k1*w1 + t1", line=10, file=f),
        eq("e2", "j2*der(w2) = -k2*w2 + t2", line=11, file=f),
        eq("e3", "w1 - w2 = 0", G, line=13, file=f),
        eq("e4", "t1 + t2 = 0", G, line=14, file=f),
        eq("e5", "t1 = 0", NG, line=16, file=f),
        eq("e6", "t2 = 0", NG, line=17, file=f),
        eq("eg", "g = (time >= t_on and time <= t_off)", line=8, file=f),
    ], booleans="g", params="j1 j2 k1 k2 t_on t_off")


def clutch_bad() -> Model:
    """A broken clutch: in mode g, e3 and e5 both fix w1 and nothing mentions f2."""
    f = "ClutchBad.mo"
    return model("ClutchBad", "w1 w2 f1 f2", [
        eq("e1", "der(w1) = f1", line=11, file=f),
        eq("e2", "der(w2) = -w2", line=12, file=f),
        eq("e3", "w1 = 0", G, line=14, file=f),
        eq("e5", "w1 = time", line=16, file=f),
        eq("e6", "f2 = 0", NG, line=18, file=f),
    ], booleans="g")


def pendulum() -> Model:
    return model("Pendulum", "x y lam", [
        eq("f1", "der(der(x)) = lam*x"),
        eq("f2", "der(der(y)) = lam*y - gr"),
        eq("f3", "x^2 + y^2 = L^2".replace("^", "**")),
    ], params="gr L")


def rldc2() -> Model:
    """The RLDC2 circuit of docs/theory.md §13.4 (left-limit guards)."""
    f = "RLDC2.mo"
    eqs = [
        eq("K1", "0 = i1 + i2 + j1 + j2", line=10, file=f),
        eq("K2", "x1 + w1 = u1 + v1", line=11, file=f),
        eq("K3", "u1 + v1 = u2 + v2", line=12, file=f),
        eq("K4", "u2 + v2 = x2 + w2", line=13, file=f),
        eq("L1", "w1 = L1*der(j1)", line=14, file=f),
        eq("L2", "w2 = L2*der(j2)", line=15, file=f),
        eq("C1", "i1 = C1*der(v1)", line=16, file=f),
        eq("C2", "i2 = C2*der(v2)", line=17, file=f),
        eq("R1", "x1 = R1*j1", line=18, file=f),
        eq("R2", "x2 = R2*j2", line=19, file=f),
        eq("S1", "s1 = (i1 if g1 else -u1)", line=20, file=f),
        eq("S2", "s2 = (i2 if g2 else -u2)", line=21, file=f),
        eq("Z1", "0 = (u1 if g1 else i1)", line=22, file=f),
        eq("Z2", "0 = (u2 if g2 else i2)", line=23, file=f),
        eq("G1", "g1 = (pre(s1) >= 0)", line=24, file=f),
        eq("G2", "g2 = (pre(s2) >= 0)", line=25, file=f),
    ]
    return model("RLDC2", "i1 i2 j1 j2 x1 x2 w1 w2 u1 u2 v1 v2 s1 s2", eqs,
                 booleans="g1 g2", params="R1 R2 L1 L2 C1 C2")
