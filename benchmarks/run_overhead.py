"""What running an FMU in a child process costs (issue 25): per run, `mdae_fmu.fmu_runner.run_fmu`
(the FMU in the thread's child process, started once and reused) against FMPy's
``simulate_fmu`` called in this process on the same extracted FMU with the same settings (the
old way), and the one-time cost of starting the child (a fresh child process per measurement:
its first run minus a warm run).

Two model families written independently: ``reference_models/ClutchBasic.mo`` (a modeller's
text, exported here: 2 modes, 2 events in 10 s) and the hand-written baseline
``BouncingBall`` FMU (benchmarks/baselines, C written by hand; 2 s, a few bounces). Each run is
checked against the in-process result (same array, value for value). The two ways alternate
(in-process, child, in-process...) ``--repeats`` times; medians, with the load average.

    .venv/bin/python benchmarks/run_overhead.py [--repeats 21] [--cold 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def fmus(work: Path) -> dict[str, tuple[Path, dict]]:
    """name -> (fmu, settings) of the two families."""
    from benchmarks.baselines.build import build_baseline
    from mdae_fmu import api
    clutch = work / "ClutchBasic.fmu"
    api.export_fmu(api.load(ROOT / "reference_models" / "ClutchBasic.mo"), clutch,
                   progress=False)
    return {
        "ClutchBasic (exported)": (clutch, dict(stop_time=10.0, output_interval=0.02,
                                                output=["w1", "w2", "g", "mdae_mode"])),
        "BouncingBall (hand-written)": (build_baseline("BouncingBall", work),
                                        dict(stop_time=2.0, output_interval=0.004,
                                             output=["h", "v"])),
    }


def in_process(directory: Path, settings: dict):
    from fmpy import simulate_fmu
    return simulate_fmu(str(directory), fmi_type="ModelExchange", **settings)


def in_child(opened, settings: dict):
    from mdae_fmu.fmu_runner import run_fmu
    kw = dict(settings)
    return run_fmu(opened, fmi_type="ModelExchange", output_variables=kw.pop("output"), **kw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--cold", type=int, default=5, help="fresh child processes timed")
    args = ap.parse_args()
    from mdae_fmu.fmu_archive import open_fmu
    from mdae_fmu.fmu_runner import close_children
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print(f"{'FMU':28} {'in-process':>11} {'child':>9} {'overhead':>9} {'child start':>12}")
    with tempfile.TemporaryDirectory(prefix="run_overhead_") as tmp:
        for name, (fmu, settings) in fmus(Path(tmp)).items():
            with open_fmu(fmu) as opened:
                reference = in_process(opened.directory, settings)
                cold = []
                for _ in range(args.cold):
                    close_children()
                    t0 = time.perf_counter()
                    in_child(opened, settings)
                    first = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    in_child(opened, settings)
                    cold.append(first - (time.perf_counter() - t0))
                a, b = [], []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    res = in_process(opened.directory, settings)
                    a.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    run = in_child(opened, settings)
                    b.append(time.perf_counter() - t0)
                    for col in reference.dtype.names:
                        if not np.array_equal(run.result[col], res[col]):
                            raise SystemExit(f"{name}: {col} differs between the two ways")
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"{name:28} {ma * 1e3:9.1f}ms {mb * 1e3:7.1f}ms {(mb - ma) * 1e3:7.1f}ms "
                  f"{statistics.median(cold):11.2f}s")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
