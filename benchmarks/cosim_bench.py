"""Co-Simulation benchmark: our CS FMU (embedded CVODE, docs/cosimulation.md) against FMPy's
own CVode driving the Model Exchange interface of the same FMU, same tolerance.

Models: the stiff Van der Pol oscillator (mu = 1000, benchmarks/VanDerPolStiff.mo) and the
ideal clutch (reference_models/ClutchBasic.mo, when the multimode export accepts it), 10 s.
Runs, each timed as the median of ``--repeat`` runs (instantiation and initialization
included, FMU extraction excluded):

* CS, one fmi2DoStep of 10 s (FMPy's FMU2Slave, direct calls);
* CS, 1000 fmi2DoStep of 0.01 s, outputs read after every step (direct calls);
* CS through ``fmpy.simulate_fmu(fmi_type="CoSimulation")`` with 1000 steps (FMPy's
  recorder included);
* ME through ``fmpy.simulate_fmu(fmi_type="ModelExchange", solver="CVode")``, output interval
  10 s and 0.01 s.

Usage: python benchmarks/cosim_bench.py [--rtol 1e-6] [--repeat 3]
Prints a table (seconds and ME/CS ratios) and the final values (to show both runs agree).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = (("VanDerPolStiff", ROOT / "benchmarks" / "VanDerPolStiff.mo"),
          ("ClutchBasic", ROOT / "reference_models" / "ClutchBasic.mo"))
STOP = 10.0


def build(path: Path, out: Path) -> Path | str:
    """The FMU (both interfaces), or the reason why it cannot be built."""
    from mdae_fmu import load
    from mdae_fmu.diagnostics import MdaeError
    try:
        return __import__("mdae_fmu.fmu.export", fromlist=["export"]).export(
            load(path), out, fmi_type="both", progress=False)
    except MdaeError as err:
        return str(err).splitlines()[0]


def cs_direct(unzip: str, md, rtol: float, step: float, names: list[str]):
    """Instantiate, initialize, and step to STOP with fmi2DoStep(step); outputs read after
    every step. Returns (seconds, final values)."""
    from fmpy.fmi2 import FMU2Slave
    vrs = [v.valueReference for v in md.modelVariables if v.name in names]
    t0 = time.perf_counter()
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
    fmu.instantiate()
    fmu.setupExperiment(tolerance=rtol, startTime=0.0, stopTime=STOP)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    n = int(round(STOP / step))
    t = 0.0
    for k in range(n):
        fmu.doStep(t, step)
        t = (k + 1) * step
        values = fmu.getReal(vrs)
    fmu.terminate()
    elapsed = time.perf_counter() - t0
    fmu.freeInstance()
    return elapsed, values


def fmpy_run(unzip: str, fmi_type: str, rtol: float, interval: float, names: list[str]):
    from fmpy import simulate_fmu
    t0 = time.perf_counter()
    r = simulate_fmu(unzip, fmi_type=fmi_type, stop_time=STOP, relative_tolerance=rtol,
                     output_interval=interval, output=names)
    elapsed = time.perf_counter() - t0
    return elapsed, [float(r[n][-1]) for n in names]


def median(f, repeat):
    runs = [f() for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), runs[-1][1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from fmpy import extract, read_model_description
    tmp = Path(tempfile.mkdtemp(prefix="cosim_bench_"))
    print(f"rtol {args.rtol}, {STOP} s, median of {args.repeat} runs (seconds)")
    header = (f"{'model':16s} {'CS 1x10s':>10s} {'ME 1x10s':>10s} {'ratio':>7s} "
              f"{'CS 1000x':>10s} {'CS fmpy':>10s} {'ME 1000x':>10s} {'ratio':>7s}")
    print(header)
    for name, path in MODELS:
        fmu = build(path, tmp / f"{name}.fmu")
        if isinstance(fmu, str):
            print(f"{name:16s} not exportable yet: {fmu}")
            continue
        md = read_model_description(str(fmu))
        names = [v.name for v in md.modelVariables if v.type == "Real"
                 and v.causality in ("local", "output") and not v.name.startswith("der(")]
        unzip = extract(str(fmu))
        cs1, v_cs1 = median(partial(cs_direct, unzip, md, args.rtol, STOP, names), args.repeat)
        me1, v_me1 = median(partial(fmpy_run, unzip, "ModelExchange", args.rtol, STOP, names),
                            args.repeat)
        cs2, v_cs2 = median(partial(cs_direct, unzip, md, args.rtol, 0.01, names), args.repeat)
        csf, _ = median(partial(fmpy_run, unzip, "CoSimulation", args.rtol, 0.01, names),
                        args.repeat)
        me2, v_me2 = median(partial(fmpy_run, unzip, "ModelExchange", args.rtol, 0.01, names),
                            args.repeat)
        print(f"{name:16s} {cs1:10.4f} {me1:10.4f} {me1 / cs1:7.1f} "
              f"{cs2:10.4f} {csf:10.4f} {me2:10.4f} {me2 / cs2:7.1f}")
        print(f"{'':16s} final values: CS {[round(v, 8) for v in v_cs2]}  "
              f"ME {[round(v, 8) for v in v_me2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
