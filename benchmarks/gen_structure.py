"""Scalable single-mode models for the structural-analysis benchmark.

Each family is produced both as an `mdae_fmu.ir.Model` (built directly, no parser) and as flat
Modelica text (for rumoca and other tools). First-order form throughout (``der(x) = vx``), so
that every tool reads the same equations.

Families (n = number of bodies; equations in brackets):
* ``masses``    spring–damper chain, an ODE (index 0)                           [2n]
* ``pendulums`` n Cartesian pendulums, neighbours coupled by springs; every
                rod constraint x² + y² = L² needs two differentiations (index 2,
                Pryce's ν_S = 3)                                                 [5n]
* ``rodchain``  a chain of n point masses joined by rigid rods (a hanging chain):
                index 2 / ν_S = 3 and one large algebraic loop over all tensions [5n]
* ``pendulums_g`` the ``pendulums`` with the gravity of each pendulum an unknown g_k
                (a pendulum with unknown gravity, scaled): fewer equations than unknowns, so the
                non-square Σ-method (RR-9387 Algorithm 2′, docs/theory.md §4.4) gives the offsets:
                c = (1, 1, 0, 0, 2) per body, d = (2, 2, 1, 1, 0, 0) for
                (x, y, vx, vy, λ, g)                                               [5n]

Usage: ``python benchmarks/gen_structure.py pendulums 1000 -o Pendulums1000.mo``.
"""

from __future__ import annotations

import argparse
from typing import Callable

from mdae_fmu import expr as E
from mdae_fmu.ir import Equation, Model, Variable

R, D, C = E.Ref, E.Der, E.Const


def _b(op, a, b):
    return E.BinOp(op, a, b)


def _add(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = _b("+", out, x)
    return out


def _mul(a, b):
    return _b("*", a, b)


def _sub(a, b):
    return _b("-", a, b)


# --- families as (unknown names, parameter names, [(id, lhs, rhs)]) -------------------------

def _masses(n: int):
    eqs = []
    unknowns = []
    for k in range(1, n + 1):
        x, v = f"x{k}", f"v{k}"
        unknowns += [x, v]
        left = _sub(R(x), R(f"x{k-1}")) if k > 1 else R(x)
        force = _mul(C(-1), _mul(R("kk"), left))
        if k < n:
            force = _add(force, _mul(R("kk"), _sub(R(f"x{k+1}"), R(x))))
        force = _sub(force, _mul(R("dd"), R(v)))
        eqs.append((f"p{k}", D(R(x)), R(v)))
        eqs.append((f"m{k}", _mul(R("mm"), D(R(v))), force))
    return unknowns, ["kk", "dd", "mm"], eqs


def _pendulums(n: int):
    eqs = []
    unknowns = []
    for k in range(1, n + 1):
        x, y, vx, vy, lam = f"x{k}", f"y{k}", f"vx{k}", f"vy{k}", f"lam{k}"
        unknowns += [x, y, vx, vy, lam]
        fx = _mul(R(lam), R(x))
        if k < n:
            fx = _add(fx, _mul(R("kc"), _sub(R(f"x{k+1}"), R(x))))
        if k > 1:
            fx = _add(fx, _mul(R("kc"), _sub(R(f"x{k-1}"), R(x))))
        eqs.append((f"px{k}", D(R(x)), R(vx)))
        eqs.append((f"py{k}", D(R(y)), R(vy)))
        eqs.append((f"ax{k}", D(R(vx)), fx))
        eqs.append((f"ay{k}", D(R(vy)), _sub(_mul(R(lam), R(y)), R("g"))))
        eqs.append((f"c{k}", _add(_b("^", R(x), C(2)), _b("^", R(y), C(2))),
                    _b("^", R("L"), C(2))))
    return unknowns, ["g", "L", "kc"], eqs


def _pendulums_g(n: int):
    unknowns, params, eqs = _pendulums(n)
    out = []
    for i, lhs, rhs in eqs:
        if i.startswith("ay"):
            k = i[2:]
            rhs = _sub(_mul(R(f"lam{k}"), R(f"y{k}")), R(f"g{k}"))
        out.append((i, lhs, rhs))
    return unknowns + [f"g{k}" for k in range(1, n + 1)], ["L", "kc"], out


def _rodchain(n: int):
    eqs = []
    unknowns = []
    for k in range(1, n + 1):
        unknowns += [f"x{k}", f"y{k}", f"vx{k}", f"vy{k}", f"lam{k}"]
    for k in range(1, n + 1):
        x, y, vx, vy, lam = f"x{k}", f"y{k}", f"vx{k}", f"vy{k}", f"lam{k}"
        dx = _sub(R(x), R(f"x{k-1}")) if k > 1 else R(x)
        dy = _sub(R(y), R(f"y{k-1}")) if k > 1 else R(y)
        fx = _mul(C(-1), _mul(R(lam), dx))
        fy = _mul(C(-1), _mul(R(lam), dy))
        if k < n:
            fx = _add(fx, _mul(R(f"lam{k+1}"), _sub(R(f"x{k+1}"), R(x))))
            fy = _add(fy, _mul(R(f"lam{k+1}"), _sub(R(f"y{k+1}"), R(y))))
        eqs.append((f"px{k}", D(R(x)), R(vx)))
        eqs.append((f"py{k}", D(R(y)), R(vy)))
        eqs.append((f"ax{k}", D(R(vx)), fx))
        eqs.append((f"ay{k}", D(R(vy)), _sub(fy, R("g"))))
        eqs.append((f"c{k}", _add(_b("^", dx, C(2)), _b("^", dy, C(2))), _b("^", R("L"), C(2))))
    return unknowns, ["g", "L"], eqs


FAMILIES: dict[str, tuple[Callable, int]] = {   # name -> (builder, equations per body)
    "masses": (_masses, 2),
    "pendulums": (_pendulums, 5),
    "rodchain": (_rodchain, 5),
    "pendulums_g": (_pendulums_g, 5),
}
PARAM_VALUES = {"kk": 1.0, "dd": 0.1, "mm": 1.0, "g": 9.81, "L": 1.0, "kc": 0.5}


def bodies_for(family: str, n_equations: int) -> int:
    """Number of bodies giving about ``n_equations`` equations."""
    return max(1, n_equations // FAMILIES[family][1])


def build_model(family: str, n: int) -> Model:
    """The family with n bodies as an ir.Model (built with the cyclic GC paused: millions of
    small frozen nodes, no cycles)."""
    from mdae_fmu.structure.graph import no_gc
    with no_gc():
        return _build_model(family, n)


def _build_model(family: str, n: int) -> Model:
    unknowns, params, eqs = FAMILIES[family][0](n)
    vs = tuple(Variable(p, variability="parameter", causality="parameter",
                        binding=C(PARAM_VALUES[p])) for p in params)
    vs += tuple(Variable(u) for u in unknowns)
    return Model(name=f"{family.capitalize()}{n}", variables=vs,
                 equations=tuple(Equation(i, E.residual(lhs, rhs)) for i, lhs, rhs in eqs))


def _mo(e: E.Expr) -> str:
    from mdae_fmu.structure.printing import expr_text
    return expr_text(e)


def modelica_text(family: str, n: int) -> str:
    """The same model as flat Modelica source."""
    unknowns, params, eqs = FAMILIES[family][0](n)
    name = f"{family.capitalize()}{n}"
    lines = [f"model {name}"]
    lines += [f"  parameter Real {p} = {PARAM_VALUES[p]};" for p in params]
    lines += [f"  Real {u};" for u in unknowns]
    lines.append("equation")
    lines += [f"  {_mo(lhs)} = {_mo(rhs)};" for _, lhs, rhs in eqs]
    lines.append(f"end {name};")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("family", choices=sorted(FAMILIES))
    p.add_argument("bodies", type=int)
    p.add_argument("-o", "--output", help="write flat Modelica here (default: stdout)")
    a = p.parse_args(argv)
    text = modelica_text(a.family, a.bodies)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
