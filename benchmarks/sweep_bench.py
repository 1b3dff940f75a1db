"""Sweep throughput: ``sweep ClutchBasic --param j1=0.5:2.0:200 --param j2=0.5:2.0:5``
(1000 runs) serially in one process with FMPy (the baseline), then on a Dask LocalCluster
of 1 and of 2 single-threaded worker processes (issue 18).

Every configuration runs the same FMU (``reference_models/ClutchBasic.mo`` exported once,
Model Exchange, default tolerance) with the same per-run code (`mdae_fmu.sweeps.run_case`:
FMPy's simulate_fmu on the extracted FMU in the process's child (`mdae_fmu.fmu_runner`), final
and event values recorded). Each run is
checked: w1+ = w2+ = (j1 w1- + j2 w2-)/(j1 + j2) at the engagement t = 5 to 1e-8
(conservation of angular momentum, docs/theory.md §13.1, RR-9334 (27)).
Runs per second are over the runs' part (scatter, submit, gather, streaming to CSV); the
clusters' start-up is reported apart. The three configurations run ``--repeats`` times,
interleaved (both clusters stay up), and the table gives medians, with the load average seen.

    .venv/bin/python benchmarks/sweep_bench.py [--j1 200] [--j2 5] [--repeats 3] [--json F]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def check(res) -> float:
    """Largest |w+ - (j1 w1- + j2 w2-)/(j1 + j2)| over every run; raises if a run failed."""
    if res.failed:
        raise SystemExit(f"{len(res.failed)} runs failed: {res.failed[0]['message']}")
    j1, j2 = res.column("j1"), res.column("j2")
    w = (j1 * res.column("w1@e1-") + j2 * res.column("w2@e1-")) / (j1 + j2)
    err = max(np.max(np.abs(res.column("w1@e1+") - w)), np.max(np.abs(res.column("w2@e1+") - w)))
    if not err <= 1e-8:
        raise SystemExit(f"restart identity violated: {err:.3g}")
    return float(err)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--j1", type=int, default=200)
    ap.add_argument("--j2", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3,
                    help="interleaved repetitions of the three configurations (median)")
    ap.add_argument("--json", metavar="OUT.json")
    args = ap.parse_args()
    import os
    import statistics

    import distributed

    from mdae_fmu import api
    from mdae_fmu.sweeps import sweep
    params = [f"j1=0.5:2.0:{args.j1}", f"j2=0.5:2.0:{args.j2}"]
    n = args.j1 * args.j2
    configs = ["serial FMPy, one process", "Dask LocalCluster, 1 worker",
               "Dask LocalCluster, 2 workers"]
    seconds = {c: [] for c in configs}
    errors = {c: 0.0 for c in configs}
    startup = {configs[0]: 0.0}
    clusters = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        fmu = Path(tmp) / "ClutchBasic.fmu"
        api.export_fmu(api.load(ROOT / "reference_models" / "ClutchBasic.mo"), fmu,
                       default_experiment={"stopTime": 10.0}, progress=False)
        try:
            for workers, c in ((1, configs[1]), (2, configs[2])):
                t0 = time.perf_counter()
                cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                                   processes=True, dashboard_address=":0")
                clusters[c] = (distributed.Client(cluster), cluster)
                startup[c] = time.perf_counter() - t0
            for rep in range(args.repeats):           # interleaved: same load for each
                for c in configs:
                    out = Path(tmp) / f"r{rep}-{configs.index(c)}.csv"
                    if c == configs[0]:
                        res = sweep(fmu, params, executor="serial", output=out)
                    else:
                        res = sweep(fmu, params, client=clusters[c][0], output=out)
                    assert len(res) == n
                    errors[c] = max(errors[c], check(res))
                    seconds[c].append(res.seconds)
                load.append(os.getloadavg()[0])
        finally:
            for client, cluster in clusters.values():
                client.close()
                cluster.close()
    rows = [{"config": c, "runs": n, "seconds": statistics.median(seconds[c]),
             "all_seconds": seconds[c], "startup": startup[c], "max_error": errors[c]}
            for c in configs]
    print(f"sweep ClutchBasic {' '.join('--param ' + p for p in params)}: {n} runs, median "
          f"of {args.repeats} interleaved repetitions, load average "
          f"{min(load):.1f}..{max(load):.1f} on {os.cpu_count()} cores\n")
    print("| configuration | runs/s | wall time of the runs | cluster start | "
          "max restart error |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['config']} | {r['runs'] / r['seconds']:.0f} | {r['seconds']:.1f} s | "
              f"{r['startup']:.1f} s | {r['max_error']:.1e} |")
    base = rows[0]["seconds"]
    print(f"\nspeed-up against serial: 1 worker x{base / rows[1]['seconds']:.2f}, "
          f"2 workers x{base / rows[2]['seconds']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
