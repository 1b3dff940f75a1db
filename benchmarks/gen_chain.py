"""Scalable flat Modelica model for the importer benchmark: a chain of N masses and springs.

Mass i (position ``chain.x[i]``, velocity ``chain.v[i]``) is tied to its neighbours by linear
springs and dampers, and an end stop acts on the last mass through an if-equation (a contact
mode) with a when-clause counting impacts. Each mass contributes 6 equations (two kinematic,
one momentum balance, two spring forces, one damper force), so N masses give 6N + 3 equations.

``loop_chain_model(n)`` is the single-mode variant used by the pipeline benchmark
(`benchmarks/pipeline_bench.py`): no contact, but per mass a nonlinear algebraic loop of two
equations (``u + 0.5 w = x``, ``w - 0.3 sin(u) = v``, solved together by Newton's method) and,
at the end of the chain, a Cartesian pendulum whose rod constraint needs two differentiations
(index 2 in RR-9334's sense, docs/theory.md §4.7). 6n + 5 equations.

Usage: ``python benchmarks/gen_chain.py [--loops] N OUT.mo``.
"""

from __future__ import annotations

import sys


def chain_model(n: int, name: str = "Chain") -> str:
    """Flat Modelica text of the chain with ``n`` masses (6n + 3 equations)."""
    out = [f'class {name} "chain of {n} masses and springs (generated)"',
           "  parameter Real k = 100.0 \"spring stiffness\";",
           "  parameter Real d = 0.5 \"damping\";",
           "  parameter Real m = 1.0;",
           "  parameter Real wall = 1.5;"]
    for i in range(1, n + 1):
        out.append(f"  Real chain.x[{i}](start = {0.1 * i!r}, fixed = true);")
        out.append(f"  Real chain.v[{i}](start = 0.0, fixed = true);")
        out.append(f"  Real chain.a[{i}];")
        out.append(f"  Real chain.fl[{i}] \"left spring force\";")
        out.append(f"  Real chain.fr[{i}] \"right spring force\";")
        out.append(f"  Real chain.fd[{i}] \"damper force\";")
    out.append("  Real fstop;")
    out.append("  Boolean contact;")
    out.append("  Integer impacts(start = 0, fixed = true);")
    out.append("equation")
    for i in range(1, n + 1):
        left = f"chain.x[{i - 1}]" if i > 1 else "0.0"
        right = f"chain.x[{i + 1}]" if i < n else "wall"
        out.append(f"  der(chain.x[{i}]) = chain.v[{i}];")
        out.append(f"  der(chain.v[{i}]) = chain.a[{i}];")
        stop = " + fstop" if i == n else ""
        out.append(f"  m * chain.a[{i}] = chain.fr[{i}] - chain.fl[{i}] - chain.fd[{i}]{stop};")
        out.append(f"  chain.fl[{i}] = k * (chain.x[{i}] - {left} - 0.1);")
        out.append(f"  chain.fr[{i}] = k * ({right} - chain.x[{i}] - 0.1);")
        out.append(f"  chain.fd[{i}] = d * chain.v[{i}];")
    out.append(f"  contact = chain.x[{n}] > wall;")
    out.append("  if contact then")
    out.append(f"    fstop = -1000.0 * (chain.x[{n}] - wall);")
    out.append("  else")
    out.append("    fstop = 0.0;")
    out.append("  end if;")
    out.append("  when contact then")
    out.append("    impacts = pre(impacts) + 1;")
    out.append("  end when;")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def loop_chain_model(n: int, name: str = "LoopChain") -> str:
    """Flat Modelica text of the single-mode chain with ``n`` masses, an algebraic loop per
    mass and an index-2 pendulum at the end (6n + 5 equations, module docstring)."""
    out = [f'class {name} "chain of {n} masses with algebraic loops and a pendulum (generated)"',
           "  parameter Real k = 100.0 \"spring stiffness\";",
           "  parameter Real d = 0.5 \"damping\";",
           "  parameter Real c = 0.2 \"loop coupling\";",
           "  parameter Real m = 1.0;",
           "  parameter Real wall = 0.1 * " + f"{n + 1};",
           "  parameter Real L = 1.0 \"pendulum length\";",
           "  parameter Real g = 9.81;"]
    for i in range(1, n + 1):
        out.append(f"  Real chain.x[{i}](start = {0.1 * i!r}, fixed = true);")
        out.append(f"  Real chain.v[{i}](start = 0.0, fixed = true);")
        out.append(f"  Real chain.fl[{i}] \"left spring force\";")
        out.append(f"  Real chain.fd[{i}] \"damper force\";")
        out.append(f"  Real chain.u[{i}](start = {0.1 * i!r}) \"loop variable\";")
        out.append(f"  Real chain.w[{i}](start = 0.0) \"loop variable\";")
    out += ["  Real px(start = 0.6, fixed = true);", "  Real py(start = -0.8);",
            "  Real pvx(start = 0.0, fixed = true);", "  Real pvy(start = 0.0);",
            "  Real lambda;"]
    out.append("equation")
    for i in range(1, n + 1):
        left = f"chain.x[{i - 1}]" if i > 1 else "0.0"
        right = f"chain.fl[{i + 1}]" if i < n else f"k * (wall - chain.x[{n}] - 0.1)"
        out.append(f"  der(chain.x[{i}]) = chain.v[{i}];")
        out.append(f"  m * der(chain.v[{i}]) = {right} - chain.fl[{i}] - chain.fd[{i}]"
                   f" - c * chain.w[{i}];")
        out.append(f"  chain.fl[{i}] = k * (chain.x[{i}] - {left} - 0.1);")
        out.append(f"  chain.fd[{i}] = d * chain.v[{i}];")
        out.append(f"  chain.u[{i}] + 0.5 * chain.w[{i}] = chain.x[{i}];")
        out.append(f"  chain.w[{i}] - 0.3 * sin(chain.u[{i}]) = chain.v[{i}];")
    out += ["  der(px) = pvx;", "  der(py) = pvy;",
            f"  m * der(pvx) = (-lambda) * px + c * chain.x[{n}];",
            "  m * der(pvy) = (-lambda) * py - m * g;",
            "  px ^ 2 + py ^ 2 = L ^ 2;"]
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    loops = "--loops" in argv
    argv = [a for a in argv if a != "--loops"]
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write((loop_chain_model if loops else chain_model)(int(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
