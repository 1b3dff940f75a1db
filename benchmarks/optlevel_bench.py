"""gcc -O1 against -O2 for the generated schedule: build time and simulation time.

The model is `gen_chain.loop_chain_model` (6n + 5 equations). For each size and level the FMU
is exported with the schedule files at that level (``fmu.export.LARGE_SCHEDULE_BLOCKS`` set to
0 for -O1 everywhere, to infinity for -O2), then simulated with FMPy (CVode, rtol 1e-6, 0-1 s).
Reported: gcc CPU time (children of this process during the export), FMPy simulation CPU time.
The rule in `mdae_fmu.fmu.export` (schedules of more than LARGE_SCHEDULE_BLOCKS blocks at -O1)
is stated with these figures in docs/fmi-mapping.md.

Usage: ``python benchmarks/optlevel_bench.py [--sizes 1000 10000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gen_chain import loop_chain_model  # noqa: E402


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
    p.add_argument("--stop-time", type=float, default=1.0)
    a = p.parse_args(argv)
    from fmpy import simulate_fmu

    import mdae_fmu.fmu.export as X
    from mdae_fmu.analysis import analyze
    from mdae_fmu.importers.flat_modelica import parse_modelica
    with tempfile.TemporaryDirectory() as tmp:
        for eqs in a.sizes:
            n = max(1, round((eqs - 5) / 6))
            model = parse_modelica(loop_chain_model(n))
            analysis = analyze(model)
            for level, limit in (("-O1", 0), ("-O2", 10 ** 12)):
                X.LARGE_SCHEDULE_BLOCKS = limit
                c0 = _children_cpu()
                path = X.export(model, Path(tmp) / f"L{n}{level}.fmu", analysis=analysis,
                                progress=False)
                gcc = _children_cpu() - c0
                t0 = time.process_time()
                simulate_fmu(str(path), stop_time=a.stop_time, relative_tolerance=1e-6,
                             output_interval=a.stop_time / 100)
                sim = time.process_time() - t0
                print(f"{6 * n + 5:>8} eq  {level}  gcc cpu {gcc:7.2f} s  simulation cpu "
                      f"{sim:7.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
