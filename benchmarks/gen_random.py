"""Scalable flat Modelica model whose equations all differ: random expression trees, one
equation per line, the way a modeller's file looks to a parser (no two segments of the same
token sequence, unlike `gen_chain.py`, whose repeated segments the LALR driver replays).

N states ``x1..xN`` and N auxiliaries ``y1..yN``: ``der(xi) = -xi + 0.01 * (e)`` with ``e`` a
random tree (depth at most 3) over states, auxiliaries, the parameter ``p`` and literals, and
``yi = e'`` over states, ``p`` and literals only (no algebraic loop, a single mode): 2N
equations. The same seed gives the same text.

Usage: ``python benchmarks/gen_random.py N OUT.mo [--seed S]``.
"""

from __future__ import annotations

import argparse
import random


def random_model(n: int, seed: int = 1, name: str = "Rand") -> str:
    """Flat Modelica text with ``2 n`` equations (module docstring)."""
    r = random.Random(seed)

    def expr(depth: int, aux: bool) -> str:
        k = r.random()
        if depth == 0 or k < 0.3:
            return r.choice([f"x{r.randint(1, n)}", f"y{r.randint(1, n)}" if aux else "p",
                             f"{r.uniform(0.1, 9):.3g}", "p"])
        if k < 0.45:
            return f"{r.choice(('sin', 'cos', 'atan'))}({expr(depth - 1, aux)})"
        if k < 0.55:
            return f"({expr(depth - 1, aux)})"
        return f"{expr(depth - 1, aux)} {r.choice('+-*/')} {expr(depth - 1, aux)}"

    out = [f"model {name}", '  parameter Real p = 2 "gain";']
    for i in range(1, n + 1):
        out.append(f"  Real x{i}(start = {r.random():.3f}, fixed = true);")
        out.append(f'  Real y{i} "aux {i}";')
    out.append("equation")
    for i in range(1, n + 1):
        out.append(f"  der(x{i}) = -x{i} + 0.01 * ({expr(3, True)});")
        out.append(f"  y{i} = {expr(3, False)};")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def main() -> None:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("n", type=int)
    a.add_argument("out")
    a.add_argument("--seed", type=int, default=1)
    args = a.parse_args()
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(random_model(args.n, args.seed))


if __name__ == "__main__":
    main()
