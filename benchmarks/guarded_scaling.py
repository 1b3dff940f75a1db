"""Run time of guarded FMUs against the size of the model (issue 26 Deliver 4): 10 s simulated
with 30 random host switchings of the clutches (`gen_modeller.random_switchings`), the CPU time
of each simulation measured in a fresh process (FMPy, Model Exchange), with CVode (relative
tolerance 1e-8) and with FMPy's fixed-step Euler (10^4 steps: the same steps at every size, a
figure independent of the integrator's step control), and the exponent of the run time in n
(the slope of log CPU against log n between the smallest and the largest n). Every run also
reports the largest relative jump of the angular momentum sum J_k w_k across the events.
``--solvers CS`` runs the Co-Simulation FMU (its own CVode, FMPy's master stepping every
0.05 s; no event rows, so no momentum figure).

Two families: the drive line written the way a modeller writes it (`gen_modeller.drive_line N
--engage input`: inertias drawn at random, a damper on every shaft) and the project's clutch
chain (`gen_multimode.clutch_chain`). The FMUs are exported once into ``--dir`` (kept and
reused); ``--baseline TREE`` also exports them with the source tree TREE (e.g. ``git archive
main``, with ``mdae_fmu/templates`` a link to its ``templates``) into ``--dir``/baseline and
runs both in the same run, alternating.

    .venv/bin/python benchmarks/guarded_scaling.py --family drive_line --n 50 100 200 \\
        --dir /tmp/scaling [--baseline /tmp/main-tree] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STOP = 10.0
SWITCHINGS = 30


def model_text_and_inertias(family: str, n: int):
    """The model (text for the drive line, `Model` for the clutch chain), its clutch inputs
    and the inertias J_k of its shafts in the order of its speed variables."""
    sys.path.insert(0, str(HERE))
    if family in ("drive_line", "drive_line_time", "drive_line_time30"):
        from gen_modeller import drive_line
        timed = family != "drive_line"       # clutches engaged by time windows
        # drive_line_time30: 15 windows in the 10 s, 30 switchings at every n
        text = drive_line(n, "time" if timed else "input",
                          windows=15 if family == "drive_line_time30" else None)
        J = [float(re.search(rf'shaft{k}\.J\(unit = "kg.m2"\) = ([0-9.e-]+)', text).group(1))
             for k in range(1, n + 2)]
        return (text, [] if timed else [f"engage[{k}]" for k in range(1, n + 1)], J,
                [f"shaft{k}.w" for k in range(1, n + 2)])
    from gen_multimode import clutch_chain
    return (clutch_chain(n), [f"g{i}" for i in range(n)], [1.0 + 0.5 * i for i in range(n + 1)],
            [f"w{i}" for i in range(n + 1)])


def export_one(family: str, n: int, out: Path, tree: str | None) -> float:
    """Export in this (fresh) process, from the source tree ``tree`` when given; returns the
    wall time."""
    if tree:     # the tree's package, not the installed (editable) one
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        sys.path.insert(0, tree)
    import mdae_fmu
    from mdae_fmu.fmu.export import export
    model, *_ = model_text_and_inertias(family, n)
    t = time.perf_counter()
    if isinstance(model, str):
        src = out.with_suffix(".mo")
        src.write_text(model)
        model = mdae_fmu.load(src)
    export(model, out, implicit=True, progress=False)
    return time.perf_counter() - t


def simulate_one(fmu: Path, family: str, n: int, solver: str, seed: int) -> dict:
    """One simulation in this (fresh) process: CPU seconds, events, momentum jump."""
    from fmpy import simulate_fmu
    sys.path.insert(0, str(HERE))
    from gen_modeller import random_switchings
    _, inputs, J, speeds = model_text_and_inertias(family, n)
    table = random_switchings(inputs, SWITCHINGS, STOP, seed=seed) if inputs else None
    if solver == "CS":      # the FMU's own CVode, FMPy's master every STOP / 200
        kw: dict = dict(fmi_type="CoSimulation", output_interval=STOP / 200,
                        relative_tolerance=1e-8)
    elif solver == "CVode":
        kw = dict(relative_tolerance=1e-8, output_interval=STOP / 200)
    else:
        kw = dict(step_size=STOP / 1e4, output_interval=STOP / 200)
    c = time.process_time()
    r = simulate_fmu(str(fmu), stop_time=STOP, solver=solver, input=table, output=speeds,
                     record_events=True, **kw)
    cpu = time.process_time() - c
    L = sum(Jk * r[w] for Jk, w in zip(J, speeds))
    t = r["time"]
    jumps = [abs(L[k] - L[k - 1]) / abs(L[k - 1]) for k in range(1, len(t)) if t[k] == t[k - 1]]
    return dict(cpu=cpu, events=len(jumps), momentum_jump=max(jumps, default=0.0))


def _child(args: list[str]) -> str:
    return subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]


def exponent(ns: list[int], cpu: list[float]) -> float:
    """Slope of log CPU against log n between the smallest and the largest n."""
    return math.log(cpu[-1] / cpu[0]) / math.log(ns[-1] / ns[0])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", choices=["drive_line", "drive_line_time", "drive_line_time30",
                                        "clutch_chain"],
                   default="drive_line")
    p.add_argument("--n", type=int, nargs="+", default=[50, 100, 200])
    p.add_argument("--dir")
    p.add_argument("--baseline", help="source tree of the baseline exporter")
    p.add_argument("--solvers", nargs="+", default=["CVode", "Euler"],
                   help="CVode, Euler (FMPy on the ME FMU), CS (the CS FMU's own CVode)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--_export", nargs=4, help=argparse.SUPPRESS)
    p.add_argument("--_simulate", nargs=5, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._export:
        fam, n, out, tree = a._export
        print(json.dumps(export_one(fam, int(n), Path(out), tree if tree != "-" else None)))
        return 0
    if a._simulate:
        fmu, fam, n, solver, seed = a._simulate
        print(json.dumps(simulate_one(Path(fmu), fam, int(n), solver, int(seed))))
        return 0
    if not a.dir:
        p.error("--dir is required")
    variants = {"new": (Path(a.dir), "-")}
    if a.baseline:
        variants["baseline"] = (Path(a.dir) / "baseline", os.path.abspath(a.baseline))
    for d, _ in variants.values():
        d.mkdir(parents=True, exist_ok=True)
    fmus: dict = {}
    for tag, (d, tree) in variants.items():
        for n in a.n:
            fmu = d / f"{a.family}{n}.fmu"
            if not fmu.exists():
                wall = json.loads(_child(["--_export", a.family, str(n), str(fmu), tree]))
                print(json.dumps(dict(export=tag, family=a.family, n=n, wall=wall)), flush=True)
            fmus[tag, n] = fmu
    cpu: dict = {}
    for solver in a.solvers:
        for n in a.n:
            runs: dict = {tag: [] for tag in variants}
            for _ in range(a.repeat):
                for tag in variants:        # alternating, so that load affects both alike
                    runs[tag].append(json.loads(_child(
                        ["--_simulate", str(fmus[tag, n]), a.family, str(n), solver,
                         str(a.seed)])))
            for tag, rs in runs.items():
                med = statistics.median(r["cpu"] for r in rs)
                cpu.setdefault((tag, solver), []).append(med)
                print(json.dumps(dict(variant=tag, family=a.family, n=n, solver=solver,
                                      cpu=round(med, 3), events=rs[0]["events"],
                                      momentum_jump=max(r["momentum_jump"] for r in rs))),
                      flush=True)
    for (tag, solver), c in cpu.items():
        print(json.dumps(dict(variant=tag, family=a.family, solver=solver, n=a.n,
                              exponent=round(exponent(a.n, c), 2))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
