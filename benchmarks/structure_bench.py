"""Benchmark of the structural analysis: Σ-method + BTF at 10^4, 10^5, 10^6 equations.

For each family of `gen_structure` and each size it times, separately:
* ``graph``   IR → sparse signature matrix (derivative orders of every equation);
* ``sigma``   Σ-method: maximum matching, highest-value transversal, Pryce's offsets;
* ``btf``     tight graph and block-triangular form of the index-reduced system;
* ``latent``  sympy latent/consistency equations (only up to ``--latent-max`` equations:
              this symbolic step is separate from, and far more expensive than, the
              structural part, which never calls sympy).
Model construction and imports are excluded. Side by side, rumoca's structural analysis
(``Session().load(file, model=...)`` then ``.structure()``) on the same model as flat
Modelica, run with the interpreter of a separate venv (``--rumoca-python``), with both its
load (parse + flatten) and structure times; note that rumoca's ``structure()`` does matching
and BLT of the model as written, without index reduction.

The growth exponent is the least-squares slope of log(time) against log(equations).

    python benchmarks/structure_bench.py --sizes 1e4 1e5 1e6 \\
        --rumoca-python /tmp/rumoca-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gen_structure import FAMILIES, bodies_for, build_model, modelica_text  # noqa: E402

from mdae_fmu.structure.graph import block_triangular_graph  # noqa: E402
from mdae_fmu.structure.latent import latent_system  # noqa: E402
from mdae_fmu.structure.per_mode import (classify_variables, signature_graph,  # noqa: E402
                                         symbol_table)
from mdae_fmu.structure.sigma import sigma_method, tight_edges  # noqa: E402

_RUMOCA_SCRIPT = r"""
import json, sys, time
import rumoca
path, name = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
m = rumoca.Session().load(path, model=name)
t1 = time.perf_counter()
st = m.structure()
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "structure": t2 - t1, "equations": st.n_equations,
                  "unknowns": st.n_unknowns, "matched": bool(st.is_matched),
                  "blocks": st.n_blocks}))
"""


def run_ours(family: str, n_eq: int, latent_max: int) -> dict:
    model = build_model(family, bodies_for(family, n_eq))
    cont = classify_variables(model).continuous
    t0 = time.perf_counter()
    g, unknowns, _ = signature_graph(model.equations, cont)
    t1 = time.perf_counter()
    res = sigma_method(g)
    t2 = time.perf_counter()
    blocks = block_triangular_graph(g, res.matching, tight_edges(g, res.c, res.d))
    t3 = time.perf_counter()
    out = {"family": family, "equations": g.n_eqs, "edges": g.n_edges, "status": res.status,
           "index": int(res.c.max()), "sweeps": res.sweeps, "blocks": len(blocks),
           "largest_block": max(len(b[0]) for b in blocks),
           "graph": t1 - t0, "sigma": t2 - t1, "btf": t3 - t2, "latent": None}
    if g.n_eqs <= latent_max:
        table = symbol_table(model)
        t4 = time.perf_counter()
        residuals = {eq.id: table.to_sympy(eq.residual) for eq in model.equations}
        c = {eq.id: int(v) for eq, v in zip(model.equations, res.c)}
        latent_system(table, residuals, c)
        out["latent"] = time.perf_counter() - t4
    return out


def run_rumoca(python: str, family: str, n_eq: int, timeout: float) -> dict | None:
    n = bodies_for(family, n_eq)
    name = f"{family.capitalize()}{n}"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.mo")
        with open(path, "w") as f:
            f.write(modelica_text(family, n))
        try:
            p = subprocess.run([python, "-c", _RUMOCA_SCRIPT, path, name], capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def slope(xs: list[float], ys: list[float]) -> float | None:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if y and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    num = sum((p[0] - mx) * (p[1] - my) for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return num / den


def fmt_exponent(v: float | None) -> str:
    """A growth exponent with two decimals, or "-" when there were too few points."""
    return "-" if v is None else f"{v:.2f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e4, 1e5, 1e6])
    ap.add_argument("--families", nargs="+", default=["masses", "pendulums", "rodchain"],
                    choices=sorted(FAMILIES))
    ap.add_argument("--latent-max", type=float, default=1e4,
                    help="build sympy latent equations only up to this many equations")
    ap.add_argument("--rumoca-python", help="python of a venv with rumoca installed")
    ap.add_argument("--rumoca-timeout", type=float, default=900)
    ap.add_argument("--json", help="also write the raw results here")
    a = ap.parse_args(argv)
    results = []
    hdr = (f"{'family':10} {'eqs':>8} {'idx':>3} {'blocks':>7} {'maxblk':>7} "
           f"{'graph s':>8} {'sigma s':>8} {'btf s':>7} {'Σ+BTF s':>8} {'latent s':>9} "
           f"{'rumoca load':>11} {'rumoca str':>10} {'ratio':>7}")
    print(hdr)
    print("-" * len(hdr))
    for fam in a.families:
        for size in a.sizes:
            r = run_ours(fam, int(size), int(a.latent_max))
            if a.rumoca_python:
                r["rumoca"] = run_rumoca(a.rumoca_python, fam, int(size), a.rumoca_timeout)
            results.append(r)
            core = r["sigma"] + r["btf"]
            ru = r.get("rumoca") or {}
            rl = f"{ru['load']:.2f}" if "load" in ru else (ru.get("error", "-")[:11])
            rs = f"{ru['structure']:.3f}" if "structure" in ru else "-"
            ratio = f"{ru['structure'] / core:.2f}" if "structure" in ru and core > 0 else "-"
            lat = f"{r['latent']:.2f}" if r["latent"] is not None else "-"
            print(f"{fam:10} {r['equations']:>8} {r['index']:>3} {r['blocks']:>7} "
                  f"{r['largest_block']:>7} {r['graph']:>8.3f} {r['sigma']:>8.3f} "
                  f"{r['btf']:>7.3f} {core:>8.3f} {lat:>9} {rl:>11} {rs:>10} {ratio:>7}",
                  flush=True)
    print()
    print("growth exponents (slope of log time vs log equations):")
    for fam in a.families:
        rs = [r for r in results if r["family"] == fam]
        n = [r["equations"] for r in rs]
        core = slope(n, [r["sigma"] + r["btf"] for r in rs])
        full = slope(n, [r["graph"] + r["sigma"] + r["btf"] for r in rs])
        ru = slope(n, [(r.get("rumoca") or {}).get("structure") for r in rs])
        print(f"  {fam:10} Σ+BTF {fmt_exponent(core)}   graph+Σ+BTF {fmt_exponent(full)}   "
              f"rumoca structure {fmt_exponent(ru)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
