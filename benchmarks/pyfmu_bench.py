"""The python-backend FMU (``export --backend python``, docs/python-backend.md) against the C
Co-Simulation FMU (embedded CVODE) of the same model, same run, same tolerance.

For each model: both FMUs built from one analysis, then, alternating C and Python run by run,
``--repeat`` runs each of instantiate + initialize + N fmi2DoStep of ``--step`` s (outputs
read after every step, FMPy's FMU2Slave, direct calls; FMU extraction excluded). Reported:
the medians of the per-step time (run time / N), wall and CPU (user + sys of this process: the
pythonfmu FMU runs in the host's interpreter), their ratio Python / C, and the largest
difference of the final values (both runs must agree to the integrators' tolerance).

Usage: python benchmarks/pyfmu_bench.py [--rtol 1e-6] [--step 0.01] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("ClutchBasic", "BouncingBall", "VanDerPol", "RLDC2")
STOP = {"ClutchBasic": 10.0, "BouncingBall": 2.0, "VanDerPol": 20.0, "RLDC2": 1.0}


def cpu() -> float:
    return time.process_time()


def run(unzip: str, md, rtol: float, step: float, stop: float, names: list[str]):
    """(wall s, cpu s, final values) of one run (module docstring)."""
    from fmpy.fmi2 import FMU2Slave
    vrs = [v.valueReference for v in md.modelVariables if v.name in names]
    w0, c0 = time.perf_counter(), cpu()
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
    fmu.instantiate()
    fmu.setupExperiment(tolerance=rtol, startTime=0.0, stopTime=stop)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    n = int(round(stop / step))
    values = []
    for k in range(n):
        fmu.doStep(k * step, step)
        values = fmu.getReal(vrs)
    fmu.terminate()
    w, c = time.perf_counter() - w0, cpu() - c0
    fmu.freeInstance()
    return w, c, values


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--step", type=float, default=0.01)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    args = ap.parse_args(argv)
    from fmpy import extract, read_model_description
    from mdae_fmu import load
    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.export import export
    tmp = Path(tempfile.mkdtemp(prefix="pyfmu_bench_"))
    print(f"rtol {args.rtol}, steps of {args.step} s, median of {args.repeat} runs; "
          "per-step times in microseconds")
    print(f"{'model':14s} {'steps':>6s} {'C wall':>9s} {'C cpu':>9s} {'py wall':>9s} "
          f"{'py cpu':>9s} {'py/C cpu':>9s} {'max |diff|':>11s}")
    for name in args.models:
        model = load(ROOT / "reference_models" / f"{name}.mo")
        a = analyze(model)
        de = {"stopTime": STOP[name], "tolerance": args.rtol}
        c_fmu = export(model, tmp / f"{name}_c.fmu", "cs", default_experiment=de,
                       analysis=a, progress=False)
        py_fmu = export(model, tmp / f"{name}_py.fmu", "cs", default_experiment=de,
                        analysis=a, progress=False, backend="python")
        md_c, md_py = (read_model_description(str(f)) for f in (c_fmu, py_fmu))
        names = [v.name for v in md_py.modelVariables if v.type == "Real"
                 and v.causality == "local" and v.variability == "continuous"
                 and not v.name.startswith("der(")]
        unz_c, unz_py = extract(str(c_fmu)), extract(str(py_fmu))
        n = int(round(STOP[name] / args.step))
        rc, rp = [], []
        for _ in range(args.repeat):
            rc.append(run(unz_c, md_c, args.rtol, args.step, STOP[name], names))
            rp.append(run(unz_py, md_py, args.rtol, args.step, STOP[name], names))
        us = 1e6 / n
        cw, cc = (statistics.median(r[i] for r in rc) * us for i in (0, 1))
        pw, pc = (statistics.median(r[i] for r in rp) * us for i in (0, 1))
        diff = max(abs(x - y) for x, y in zip(rc[-1][2], rp[-1][2]))
        print(f"{name:14s} {n:6d} {cw:9.1f} {cc:9.1f} {pw:9.1f} {pc:9.1f} "
              f"{pc / max(cc, 1e-9):9.0f} {diff:11.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
