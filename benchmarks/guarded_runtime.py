"""Per-step runtime of the guarded FMU (export --implicit) against the enumerated one
(issue 17 acceptance: within 1.2x on ClutchBasic and RLDC2), paired in one run.

Both FMUs of a model are exported and extracted once, then simulated alternately (FMPy,
Model Exchange) ``--repeat`` times each; the figure is the median CPU time (user + sys of
this process, where the FMU runs) of one simulation, and its ratio guarded / enumerated.
Two solvers: CVODE (rtol 1e-10; the step counts of both FMUs are equal when their
trajectories are, which the script checks through the output rows) and FMPy's fixed-step
Euler with 10^4 steps (exactly the same steps, so the ratio is the per-step ratio; FMPy's
Python loop is part of every step, as for any host).

    .venv/bin/python benchmarks/guarded_runtime.py [--repeat 15] [models ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"ClutchBasic": ("ClutchBasic.mo", 10.0), "RLDC2": ("RLDC2.xml", 1.0),
          "RLDC2Diodes": ("RLDC2Diodes.mo", 1.0)}


def run(name: str, repeat: int, work: Path) -> dict:
    from fmpy import extract, simulate_fmu

    import mdae_fmu
    from mdae_fmu.fmu.export import export
    file, stop = MODELS[name]
    model = mdae_fmu.load(ROOT / "reference_models" / file)
    dirs = {}
    for tag, implicit in (("guarded", True), ("enumerated", False)):
        path = export(model, work / f"{name}_{tag}.fmu", implicit=implicit, progress=False)
        dirs[tag] = extract(str(path), str(work / f"{name}_{tag}"))
    out: dict = {"model": name}
    for solver, kw in (("CVode", dict(relative_tolerance=1e-10, output_interval=stop / 100)),
                       ("Euler", dict(step_size=stop / 1e4, output_interval=stop / 1e4))):
        times: dict = {"guarded": [], "enumerated": []}
        rows = {}
        for _ in range(repeat):
            for tag in ("guarded", "enumerated"):
                c = time.process_time()
                r = simulate_fmu(dirs[tag], stop_time=stop, solver=solver, **kw)
                times[tag].append(time.process_time() - c)
                rows[tag] = r
        g, e = rows["guarded"], rows["enumerated"]
        names = [x for x in g.dtype.names if x in e.dtype.names and x != "time"
                 and g[x].dtype.kind == "f"]
        diff = max((float(np.max(np.abs(g[x] - e[x]))) for x in names), default=0.0)
        med = {t: statistics.median(v) for t, v in times.items()}
        out[solver] = dict(guarded_ms=1e3 * med["guarded"], enumerated_ms=1e3 * med["enumerated"],
                           ratio=med["guarded"] / med["enumerated"], max_abs_diff=diff,
                           rows=[len(g), len(e)])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*", default=["ClutchBasic", "RLDC2", "RLDC2Diodes"])
    p.add_argument("--repeat", type=int, default=15)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        for name in a.models:
            print(json.dumps(run(name, a.repeat, Path(d))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
