"""Run time of Co-Simulation FMUs against the size of the model (issue 26 Deliver 4: the CS
integrator's linear solver follows the structure, docs/cosimulation.md "Linear solver").

Two families written independently: the drive line of a modeller (`gen_modeller.drive_line N`,
clutches engaged by Boolean inputs, 2N + 2 states) and the RLC ladder with ideal switches
(`gen_modeller.rlc_cells N`, switches closed by Boolean inputs, 2N states). Each run: 10 s
simulated by FMPy's Co-Simulation master (a communication point every 0.05 s, relative
tolerance 1e-8) with 30 random host switchings of the inputs (`gen_modeller.random_switchings`,
seed 0), in a fresh process; the figure is the CPU of `simulate_fmu` (process time, imports
excluded), median of ``--repeat`` runs, and the exponent the slope of log CPU in log n between
the smallest and the largest n.

The FMUs are exported once into ``--dir`` (kept and reused) by the installed mdae_fmu;
``--baseline DIR`` names a directory of FMUs of the same names exported by another revision
(this script with ``--export-only`` run under it), whose runs alternate with these.

    .venv/bin/python benchmarks/cosim_band_bench.py --family drive_line --n 50 100 200 \\
        --dir /tmp/cs_new [--baseline /tmp/cs_main] [--repeat 3] [--export-only]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STOP = 10.0
SWITCHINGS = 30


def model_text(family: str, n: int) -> tuple[str, list[str], bool, list[str]]:
    """The model, its Boolean inputs, their start value and the states compared."""
    sys.path.insert(0, str(HERE))
    from gen_modeller import drive_line, rlc_cells
    if family == "drive_line":
        return (drive_line(n, "input"), [f"engage[{k}]" for k in range(1, n + 1)], False,
                [f"shaft{k}.w" for k in range(1, n + 2)])
    return (rlc_cells(n, "switch"), [f"close[{k}]" for k in range(1, n + 1)], True,
            [f"{x}{k}.{v}" for k in range(1, n + 1) for x, v in (("L", "i"), ("C", "v"))])


def export_one(family: str, n: int, out: Path) -> None:
    """The CS FMU of ``family`` at ``n`` (in this process)."""
    from mdae_fmu import api
    text = model_text(family, n)[0]
    src = out.with_suffix(".mo")
    src.write_text(text)
    api.export_fmu(api.load(src), out, fmi_type="cs", progress=False)


def simulate_one(fmu: Path, family: str, n: int) -> dict:
    """One CS run in this (fresh) process: CPU seconds and the final values."""
    from fmpy import simulate_fmu
    sys.path.insert(0, str(HERE))
    from gen_modeller import random_switchings
    _, inputs, start, states = model_text(family, n)
    table = random_switchings(inputs, SWITCHINGS, STOP, seed=0, start=start)
    c = time.process_time()
    r = simulate_fmu(str(fmu), stop_time=STOP, fmi_type="CoSimulation", input=table,
                     output_interval=STOP / 200, relative_tolerance=1e-8, output=states)
    cpu = time.process_time() - c
    last = r[-1]
    return dict(cpu=cpu, final={nm: float(last[nm]) for nm in r.dtype.names[1:]})


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", choices=["drive_line", "rlc"], default="drive_line")
    p.add_argument("--n", type=int, nargs="+", default=[50, 100, 200])
    p.add_argument("--dir", required=True)
    p.add_argument("--baseline", help="directory of the baseline revision's FMUs")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--export-only", action="store_true")
    p.add_argument("--_simulate", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._simulate:
        fmu, fam, n = a._simulate
        print(json.dumps(simulate_one(Path(fmu), fam, int(n))))
        return 0
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    dirs = {"this": d} | ({"baseline": Path(a.baseline)} if a.baseline else {})
    for n in a.n:
        fmu = d / f"{a.family}_{n}.fmu"
        if not fmu.exists():
            subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                            "import cosim_band_bench as b; "
                            "b.export_one(sys.argv[2], int(sys.argv[3]), b.Path(sys.argv[4]))",
                            str(HERE), a.family, str(n), str(fmu)], check=True)
    if a.export_only:
        return 0
    cpu: dict[str, list[float]] = {k: [] for k in dirs}
    for n in a.n:
        runs: dict[str, list[dict]] = {k: [] for k in dirs}
        for _ in range(a.repeat):
            for k, where in dirs.items():       # alternating: the same load for both
                runs[k].append(_child(["--_simulate", str(where / f"{a.family}_{n}.fmu"),
                                       a.family, str(n), "--dir", a.dir]))
        row = {"family": a.family, "n": n}
        for k in dirs:
            cpu[k].append(statistics.median(r["cpu"] for r in runs[k]))
            row[f"{k}_cpu_s"] = round(cpu[k][-1], 3)
        if "baseline" in dirs:      # the two revisions' final values
            f0, f1 = runs["this"][0]["final"], runs["baseline"][0]["final"]
            row["max_rel_diff"] = max(abs(f0[x] - f1[x]) / max(1.0, abs(f1[x])) for x in f0)
        print(json.dumps(row), flush=True)
    if len(a.n) >= 2:
        for k in dirs:
            e = math.log(cpu[k][-1] / cpu[k][0]) / math.log(a.n[-1] / a.n[0])
            print(f"{k}: exponent from n = {a.n[0]} to {a.n[-1]}: {e:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
