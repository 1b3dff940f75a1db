"""Issue 26's acceptance on drive lines written by a modeller (`gen_modeller.drive_line`:
n + 1 shafts with random inertias and a damper each, n ideal clutches), in two variants:
clutches engaged by Boolean inputs (``input``) and by computed conditions (``time``:
``engaged = time >= t_on and time < t_off``). For every n:

* ``mdae-fmu export --implicit`` in a fresh process (`modeller_bench.run_export`): CPU
  seconds (user + system of the process and of its gcc) and wall seconds, median of
  ``--repeat`` runs;
* 10 s simulated in a fresh process (`guarded_scaling.simulate_one`, FMPy Model Exchange):
  the input variant with 30 random host switchings of its clutches, the time variant with
  the switchings its clutches' windows make; CPU seconds of the simulation with CVode (rtol
  1e-8) and FMPy's fixed-step Euler (10^4 steps), the number of events and the largest
  relative jump of the angular momentum sum J_k w_k across them;
* 10 s of the Co-Simulation FMU (its own CVode, FMPy's master every 0.05 s), same inputs;
* the exponent of the run time in n from n = 50 to the largest size given (issue 26: at most
  1.2 from 50 to 200).

A third variant, ``time30``, is the time-window one where only 15 clutches, spread along the
line, have their window inside the 10 s: 30 switchings at every n, as the host makes in
``input``, where ``time`` makes 2 per clutch.

With ``--against DIR`` (a source tree of another revision) every export is paired with one
of DIR's on the same file, alternately, and its median CPU is reported beside; ``--this DIR``
measures the source tree DIR instead of the installed package; ``--no-sim`` times the exports
only.

    .venv/bin/python benchmarks/drive_line_bench.py [--sizes 8,16,50,100,200]
        [--variants input,time,time30] [--repeat 1] [--json out.json] [--this DIR] [--against DIR]
        [--no-sim]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guarded_scaling import model_text_and_inertias  # noqa: E402
from modeller_bench import CLI, run_export  # noqa: E402

FAMILY = {"input": "drive_line", "time": "drive_line_time", "time30": "drive_line_time30"}
SOLVERS = ("CVode", "Euler", "CS")


def simulate(fmu: Path, variant: str, n: int, solver: str) -> dict:
    """One simulation in a fresh process (`guarded_scaling.py --_simulate`)."""
    run = subprocess.run([sys.executable, str(HERE / "guarded_scaling.py"), "--_simulate",
                          str(fmu), FAMILY[variant], str(n), solver, "0"],
                         capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"{solver} run failed: "
                           + (run.stderr.strip().splitlines() or ["?"])[-1][:200])
    return json.loads(run.stdout.strip().splitlines()[-1])


def bench(variants, sizes, repeat: int, timeout: float, this: str | None = None,
          against: str | None = None, sim: bool = True) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="drive_line_bench_") as tmp:
        for variant in variants:
            for n in sizes:
                path = Path(tmp) / f"DriveLine{n}{variant.capitalize()}.mo"
                path.write_text(model_text_and_inertias(FAMILY[variant], n)[0])
                fmu = path.with_suffix(".fmu")
                runs, other = [], []
                for _ in range(repeat):
                    runs.append(run_export(path, fmu, timeout, this))
                    if against is not None:
                        other.append(run_export(path, path.with_name(f"{path.stem}_against.fmu"),
                                                timeout, against))
                row: dict = {"variant": variant, "n": n,
                             "export_cpu_s": statistics.median(r["cpu_s"] for r in runs),
                             "export_wall_s": statistics.median(r["wall_s"] for r in runs),
                             "status": runs[-1]["status"]}
                if other:
                    row["against_export_cpu_s"] = statistics.median(r["cpu_s"] for r in other)
                    row["against_status"] = other[-1]["status"]
                if row["status"] == "ok" and sim:
                    cs = path.with_name(f"{path.stem}_cs.fmu")     # not timed
                    subprocess.run([sys.executable, "-c", CLI, "export", "--implicit",
                                    "--fmi-type", "cs", str(path), "-o", str(cs)], check=True,
                                   capture_output=True, cwd=path.parent,
                                   env={**os.environ, "PYTHONPATH": this} if this else None)
                    for solver in SOLVERS:
                        try:
                            sims = [simulate(cs if solver == "CS" else fmu, variant, n, solver)
                                    for _ in range(repeat)]
                        except RuntimeError as e:
                            row[f"run_{solver}_s"] = str(e)
                            continue
                        row[f"run_{solver}_s"] = round(statistics.median(
                            s["cpu"] for s in sims), 3)
                        if solver != "CS":      # the CS results have no event rows
                            row["events"] = sims[0]["events"]
                        row["momentum_jump"] = max(row.get("momentum_jump", 0.0),
                                                   *(s["momentum_jump"] for s in sims))
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| variant | n | export CPU s | export wall s | run CVode s | run Euler s | run CS s |"
           " events | max rel. jump of Σ J w |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['variant']} | {r['n']} | {r['export_cpu_s']} | {r['export_wall_s']} |"
                   f" {r.get('run_CVode_s', r['status'])} | {r.get('run_Euler_s', '')} | "
                   f"{r.get('run_CS_s', '')} | {r.get('events', '')} | "
                   f"{r.get('momentum_jump', 0.0):.1e} |")
    for variant in dict.fromkeys(r["variant"] for r in rows):
        ok = [r for r in rows if r["variant"] == variant
              and all(isinstance(r.get(f"run_{s}_s"), float) for s in SOLVERS)]
        # issue 26's exponent: from n = 50 (the first size from 50 on) to the largest
        ok = [r for r in ok if r["n"] >= 50] if sum(r["n"] >= 50 for r in ok) >= 2 else ok
        if len(ok) >= 2:
            a, b = ok[0], ok[-1]
            growth = {s: b[f"run_{s}_s"] / a[f"run_{s}_s"] for s in SOLVERS}
            exps = ", ".join(f"{s} {math.log(g) / math.log(b['n'] / a['n']):.2f}"
                             for s, g in growth.items())
            out.append(f"\n{variant}: run-time exponent from n = {a['n']} to {b['n']}: {exps}")
    return "\n".join(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="8,16,50,100,200")
    p.add_argument("--variants", default="input,time")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per export")
    p.add_argument("--json")
    p.add_argument("--this", metavar="DIR", help="source tree measured (default: installed)")
    p.add_argument("--against", metavar="DIR", help="source tree of the previous revision")
    p.add_argument("--no-sim", action="store_true", help="time the exports only")
    a = p.parse_args(argv)
    # absolute: the exports run in the model's (temporary) directory
    this, against = (str(Path(d).resolve()) if d else None for d in (a.this, a.against))
    rows = bench(a.variants.split(","), [int(x) for x in a.sizes.split(",")], a.repeat,
                 a.timeout, this, against, not a.no_sim)
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
