"""Scalable flat Modelica models after the ScalableTestSuite (Casella, "Simulation of
large-scale models in Modelica: state of the art and future perspectives", Modelica
Conference 2015, doi:10.3384/ecp15118459; the library: github.com/casella/ScalableTestSuite),
written here as OpenModelica prints a flattened model: scalar variables named ``a.b[i]``, one
equation per line, no arrays or loops (issue 29 Deliver 6). The physics follows three of the
library's families; the equations are written out from the physics, not copied:

* ``transmission_line(n)``: an RLC line of ``n`` segments (the library's
  ``TransmissionLineEquations``) driven by a critically damped second-order filter of a unit
  step and closed on its characteristic resistance, so no wave is reflected: the far end
  follows the filtered step delayed by ``TD = length * sqrt(ind * cap)``. 2n + 1 equations.
* ``heat_conduction(n)``: a rod of ``n`` lumped volumes (the library's ``HeatConduction``),
  the left end held at ``T_left`` through half a segment's conductance, the right end
  insulated; the heat flows are unknowns of their own, as a modeller writes a conductor
  between two capacities. 2n equations; every temperature tends to ``T_left``.
* ``distribution_grid(n)``: a DC distribution network of ``n x n`` nodes (the library's
  ``DistributionSystemDC``): each node a capacitance to ground and a resistive load, resistive
  lines to its right and lower neighbours, the source behind a resistance at node (1, 1).
  3n^2 - 2n + 1 equations; the steady state solves the grid's conductance matrix.

``by_equations(family, count)`` picks the size whose equation count is nearest ``count``
(10^3 ... 10^6). ``linear_system(family, n)`` returns the same model as ``der(x) = A x + b``
over its states, built independently of the Modelica text, for oracles (tests/
test_scalable_models.py compares FMUs against scipy on it).

Usage: ``python benchmarks/gen_scalable.py FAMILY N OUT.mo`` or
``python benchmarks/gen_scalable.py FAMILY --equations 1e6 OUT.mo``.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

# the library's verification parameters of TransmissionLineCheck (SI units)
LINE = {"length": 100.0, "res": 48e-6, "cap": 101e-12, "ind": 253e-9, "w": 5e6}
ROD = {"C": 1.0, "G": 1.0, "T_left": 1.0, "T0": 0.0}
GRID = {"V0": 1.0, "R_src": 0.5, "R_line": 1.0, "R_load": 50.0, "C": 0.01}


def transmission_line(n: int, name: str = "TransmissionLine") -> str:
    """Flat Modelica text of the transmission line of ``n >= 2`` segments."""
    if n < 2:
        raise ValueError("a transmission line needs at least 2 segments")
    p = LINE
    out = [f'class {name} "RLC transmission line of {n} segments (generated)"',
           f"  parameter Real length = {p['length']!r} \"length of the line (m)\";",
           f"  parameter Real res = {p['res']!r} \"resistance per metre\";",
           f"  parameter Real cap = {p['cap']!r} \"capacitance per metre\";",
           f"  parameter Real ind = {p['ind']!r} \"inductance per metre\";",
           f"  parameter Real w = {p['w']!r} \"cut-off of the input filter (rad/s)\";",
           "  parameter Real Vstep = 1.0 \"input step\";",
           f"  parameter Real l = length / {n} \"length of a segment\";",
           "  parameter Real RL = sqrt(ind / cap) \"load: the characteristic resistance\";",
           "  Real vvol(start = 0.0, fixed = true) \"derivative of the filtered input\";"]
    for i in range(1, n + 1):
        out.append(f"  Real vol[{i}](start = 0.0, fixed = true) \"voltage of node {i}\";")
    for i in range(1, n + 1):
        fixed = "start = 0.0, fixed = true" if i < n else "start = 0.0"
        out.append(f"  Real cur[{i}]({fixed}) \"current of segment {i}\";")
    out += ["equation",
            "  vvol = der(vol[1]);",
            "  Vstep = vol[1] + 2.0 / w * der(vol[1]) + 1.0 / w ^ 2 * der(vvol);",
            f"  vol[{n}] = cur[{n}] * RL;"]
    for i in range(1, n):
        out.append(f"  cap * der(vol[{i + 1}]) = (cur[{i}] - cur[{i + 1}]) / l;")
        out.append(f"  ind * der(cur[{i}]) = (-res) * cur[{i}] - (vol[{i + 1}] - vol[{i}]) / l;")
    out.append('  annotation(experiment(StopTime = 4e-06, Tolerance = 1e-06));')
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def heat_conduction(n: int, name: str = "HeatConduction") -> str:
    """Flat Modelica text of the rod of ``n >= 1`` volumes."""
    p = ROD
    out = [f'class {name} "heat conduction in a rod of {n} volumes (generated)"',
           f"  parameter Real C = {p['C']!r} \"heat capacity of a volume\";",
           f"  parameter Real G = {p['G']!r} \"conductance between two volumes\";",
           f"  parameter Real T_left = {p['T_left']!r} \"temperature of the left end\";"]
    for i in range(1, n + 1):
        out.append(f"  Real rod.T[{i}](start = {p['T0']!r}, fixed = true);")
        out.append(f"  Real rod.Q[{i}] \"heat flow into volume {i} from the left\";")
    out.append("equation")
    out.append("  rod.Q[1] = 2.0 * G * (T_left - rod.T[1]);")
    for i in range(2, n + 1):
        out.append(f"  rod.Q[{i}] = G * (rod.T[{i - 1}] - rod.T[{i}]);")
    for i in range(1, n):
        out.append(f"  C * der(rod.T[{i}]) = rod.Q[{i}] - rod.Q[{i + 1}];")
    out.append(f"  C * der(rod.T[{n}]) = rod.Q[{n}];")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def distribution_grid(n: int, name: str = "DistributionGrid") -> str:
    """Flat Modelica text of the ``n x n`` DC grid (``n >= 1``)."""
    p = GRID
    out = [f'class {name} "DC distribution grid of {n}x{n} nodes (generated)"',
           f"  parameter Real V0 = {p['V0']!r} \"source voltage\";",
           f"  parameter Real R_src = {p['R_src']!r} \"source resistance\";",
           f"  parameter Real R_line = {p['R_line']!r} \"resistance of a line\";",
           f"  parameter Real R_load = {p['R_load']!r} \"load of a node\";",
           f"  parameter Real C = {p['C']!r} \"capacitance of a node\";",
           "  Real i_src \"current of the source\";"]
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            out.append(f"  Real grid.v[{i},{j}](start = 0.0, fixed = true);")
            if j < n:
                out.append(f"  Real grid.ih[{i},{j}] \"line current to node ({i}, {j + 1})\";")
            if i < n:
                out.append(f"  Real grid.iv[{i},{j}] \"line current to node ({i + 1}, {j})\";")
    out.append("equation")
    out.append("  i_src = (V0 - grid.v[1,1]) / R_src;")
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            if j < n:
                out.append(f"  grid.ih[{i},{j}] = (grid.v[{i},{j}] - grid.v[{i},{j + 1}]) "
                           f"/ R_line;")
            if i < n:
                out.append(f"  grid.iv[{i},{j}] = (grid.v[{i},{j}] - grid.v[{i + 1},{j}]) "
                           f"/ R_line;")
            flows = ["i_src"] if (i, j) == (1, 1) else []
            if j > 1:
                flows.append(f"grid.ih[{i},{j - 1}]")
            if i > 1:
                flows.append(f"grid.iv[{i - 1},{j}]")
            if j < n:
                flows.append(f"-grid.ih[{i},{j}]")
            if i < n:
                flows.append(f"-grid.iv[{i},{j}]")
            rhs = " + ".join(flows).replace("+ -", "- ") if flows else "0.0"
            out.append(f"  C * der(grid.v[{i},{j}]) = {rhs} - grid.v[{i},{j}] / R_load;")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


FAMILIES = {
    "transmission": (transmission_line, lambda n: 2 * n + 1, 2),
    "heat": (heat_conduction, lambda n: 2 * n, 1),
    "grid": (distribution_grid, lambda n: 3 * n * n - 2 * n + 1, 1),
}


def equation_count(family: str, n: int) -> int:
    """The number of equations of ``family`` at size ``n``."""
    return FAMILIES[family][1](n)


def by_equations(family: str, count: float) -> int:
    """The size ``n`` of ``family`` whose equation count is nearest ``count``."""
    _, eqs, smallest = FAMILIES[family]
    if family == "grid":
        guess = max(smallest, round(math.sqrt(count / 3.0)))
    else:
        guess = max(smallest, round(count / 2.0))
    best = min(range(max(smallest, guess - 2), guess + 3), key=lambda k: abs(eqs(k) - count))
    return best


def linear_system(family: str, n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The model ``family`` of size ``n`` as ``der(x) = A x + b``: the state names, A and b,
    derived from the physics directly (not from the Modelica text), for oracles."""
    if family == "heat":
        p = ROD
        a = np.zeros((n, n))
        b = np.zeros(n)
        for i in range(n):
            # flow in from the left, out to the right (none after the last volume)
            if i == 0:
                a[0, 0] -= 2.0 * p["G"]
                b[0] += 2.0 * p["G"] * p["T_left"]
            else:
                a[i, i - 1] += p["G"]
                a[i, i] -= p["G"]
            if i < n - 1:
                a[i, i] -= p["G"]
                a[i, i + 1] += p["G"]
        return [f"rod.T[{i}]" for i in range(1, n + 1)], a / p["C"], b / p["C"]
    if family == "grid":
        p = GRID
        idx = {(i, j): (i - 1) * n + (j - 1) for i in range(1, n + 1) for j in range(1, n + 1)}
        g = np.zeros((n * n, n * n))
        b = np.zeros(n * n)
        for (i, j), k in idx.items():
            g[k, k] -= 1.0 / p["R_load"]
            for nb in ((i, j + 1), (i + 1, j), (i, j - 1), (i - 1, j)):
                if nb in idx:
                    g[k, k] -= 1.0 / p["R_line"]
                    g[k, idx[nb]] += 1.0 / p["R_line"]
        g[0, 0] -= 1.0 / p["R_src"]
        b[0] = p["V0"] / p["R_src"]
        names = [f"grid.v[{i},{j}]" for (i, j) in idx]
        return names, g / p["C"], b / p["C"]
    if family == "transmission":
        p = LINE
        seg = p["length"] / n
        rl = math.sqrt(p["ind"] / p["cap"])
        # states: vol[1..n], vvol, cur[1..n-1]
        names = [f"vol[{i}]" for i in range(1, n + 1)] + ["vvol"] + \
            [f"cur[{i}]" for i in range(1, n)]
        k_v = {i: i - 1 for i in range(1, n + 1)}
        k_w = n
        k_c = {i: n + i for i in range(1, n)}
        a = np.zeros((2 * n, 2 * n))
        b = np.zeros(2 * n)
        w = p["w"]
        a[k_v[1], k_w] = 1.0                       # der(vol[1]) = vvol
        a[k_w, k_v[1]] = -w * w                    # der(vvol) = w^2 (Vstep - vol1 - 2/w vvol)
        a[k_w, k_w] = -2.0 * w
        b[k_w] = w * w * 1.0
        for i in range(1, n):
            # cap der(vol[i+1]) = (cur[i] - cur[i+1]) / seg, cur[n] = vol[n] / RL
            a[k_v[i + 1], k_c[i]] += 1.0 / (p["cap"] * seg)
            if i + 1 < n:
                a[k_v[i + 1], k_c[i + 1]] -= 1.0 / (p["cap"] * seg)
            else:
                a[k_v[n], k_v[n]] -= 1.0 / (p["cap"] * seg * rl)
            # ind der(cur[i]) = -res cur[i] - (vol[i+1] - vol[i]) / seg
            a[k_c[i], k_c[i]] -= p["res"] / p["ind"]
            a[k_c[i], k_v[i + 1]] -= 1.0 / (p["ind"] * seg)
            a[k_c[i], k_v[i]] += 1.0 / (p["ind"] * seg)
        return names, a, b
    raise ValueError(f"unknown family {family!r}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("n", nargs="?", type=int, help="size (segments, volumes, grid side)")
    ap.add_argument("out", help="output .mo file")
    ap.add_argument("--equations", type=float, help="pick the size by equation count")
    args = ap.parse_args(argv)
    if (args.n is None) == (args.equations is None):
        ap.error("give either N or --equations")
    n = args.n if args.n is not None else by_equations(args.family, args.equations)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(FAMILIES[args.family][0](n))
    print(f"{args.family} n={n}: {equation_count(args.family, n)} equations -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
