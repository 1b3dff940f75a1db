"""Benchmark of the implicit multimode analysis (issue 17): the three families of
`gen_multimode` at n = 10, 20, 50 (up to 2^50 and 4^50 valuations), and the ill-posed fault
chain with 2^40 valuations. Each run is a fresh subprocess so that its peak memory (the child's
ru_maxrss) is its own; wall and CPU time (`time.process_time`) of `analyze_implicit` only
(model generation excluded).

    .venv/bin/python benchmarks/implicit_bench.py [--sizes 10,20,50] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {here!r})
from gen_multimode import FAMILIES, fault_chain_ill_posed
from mdae_fmu.implicit.analysis import analyze_implicit
fam, n = {fam!r}, {n}
model = fault_chain_ill_posed(n, 3, n - 2) if fam == "fault_chain_ill_posed" else FAMILIES[fam](n)
w, c = time.perf_counter(), time.process_time()
a = analyze_implicit(model)
w, c = time.perf_counter() - w, time.process_time() - c
print(json.dumps(dict(family=fam, n=n, guards=len(a.space.atoms), modes=a.n_modes,
                      equations=len(a.graph.rows), wall=w, cpu=c, accepted=a.ok,
                      sweeps=a.sweeps, blocks=len(a.blocks),
                      coarse=sum(b.coarse for b in a.blocks),
                      largest=max((len(b.equations) for b in a.blocks), default=0),
                      singular=a.space.text(a.singular),
                      peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)))
"""


def run(fam: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(here=str(HERE), fam=fam, n=n)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10,20,50")
    p.add_argument("--json", metavar="OUT")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    print(f"{'family':24} {'n':>3} {'guards':>6} {'modes':>22} {'wall s':>8} {'cpu s':>8} "
          f"{'peak MB':>8} {'blocks':>7} {'coarse':>6} {'largest':>7}  verdict")
    cases = [(f, n) for f in ("clutch_chain", "diode_bank", "fault_chain") for n in sizes]
    cases.append(("fault_chain_ill_posed", 20))
    for fam, n in cases:
        r = run(fam, n)
        rows.append(r)
        verdict = "accepted" if r["accepted"] else f"rejected: singular when {r['singular']}"
        print(f"{fam:24} {n:>3} {r['guards']:>6} {r['modes']:>22} {r['wall']:>8.2f} "
              f"{r['cpu']:>8.2f} {r['peak_mb']:>8.0f} {r['blocks']:>7} {r['coarse']:>6} "
              f"{r['largest']:>7}  {verdict}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
