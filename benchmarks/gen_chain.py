"""Scalable flat Modelica model for the importer benchmark: a chain of N masses and springs.

Mass i (position ``chain.x[i]``, velocity ``chain.v[i]``) is tied to its neighbours by linear
springs and dampers, and an end stop acts on the last mass through an if-equation (a contact
mode) with a when-clause counting impacts. Each mass contributes 6 equations (two kinematic,
one momentum balance, two spring forces, one damper force), so N masses give 6N + 3 equations.

Usage: ``python benchmarks/gen_chain.py N OUT.mo``.
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write(chain_model(int(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
