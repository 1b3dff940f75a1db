"""Multimode ME FMUs: simulation CPU time against the hand-written C baseline, event cost.

* ClutchBasic 0-10 s, FMPy CVode, same tolerance and output grid for the exported FMU and
  the hand-written baseline (benchmarks/baselines/ClutchBasic, closed-form restart); median
  CPU time (time.process_time) of ``--repeat`` runs each; ratio exported / baseline.
* Event cost: CPU time spent inside fmi2NewDiscreteStates (mode selection, restart, event
  iteration, and for index-reduced modes the drift projections at step events), divided by
  the number of mode changes of the run (ClutchBasic, Cup-and-Ball). RLDC2 stays in its
  initial mode on its consistent reference start and its diode sign convention (erratum 11)
  makes conducting starts chatter, so its mode changes are not timed (docs/multimode-fmu.md).

Usage: ``python benchmarks/multimode_bench.py [--repeat N] [--rtol 1e-8]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        f()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def event_cost(fmu: str, stop: float, rtol: float, repeat: int):
    """CPU seconds per mode change: time inside fmi2NewDiscreteStates / mode changes."""
    from fmpy import extract, read_model_description, simulate_fmu
    from fmpy.fmi2 import FMU2Model
    md = read_model_description(fmu)
    unzip = extract(fmu)
    box = {}

    costs = []
    changes = 0
    for _ in range(repeat):
        box.update(t=0.0)
        inst = FMU2Model(guid=md.guid, unzipDirectory=unzip,
                         modelIdentifier=md.modelExchange.modelIdentifier, instanceName="b")
        inst.instantiate()
        plain = inst.newDiscreteStates

        def timed(plain=plain):
            t0 = time.process_time()
            out = plain()
            box["t"] += time.process_time() - t0
            return out
        inst.newDiscreteStates = timed
        r = simulate_fmu(unzip, stop_time=stop, relative_tolerance=rtol, fmu_instance=inst,
                         output=["mdae_mode"], model_description=md)
        m = r["mdae_mode"]
        changes = int((m[1:] != m[:-1]).sum())
        costs.append(box["t"] / max(changes, 1))
        inst.freeInstance()
    return statistics.median(costs), changes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=1e-8)
    args = ap.parse_args(argv)
    from fmpy import extract, simulate_fmu
    from benchmarks.baselines.build import build_baseline
    from mdae_fmu import load
    from mdae_fmu.fmu.export import export
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ours = export(load(ROOT / "reference_models/ClutchBasic.mo"), tmp / "ours.fmu",
                      progress=False)
        base = build_baseline("ClutchBasic", tmp / "base")
        base = getattr(base, "path", base)
        u_ours, u_base = extract(str(ours)), extract(str(base))

        def run(u):
            return lambda: simulate_fmu(u, stop_time=10.0, relative_tolerance=args.rtol,
                                        output_interval=0.01, output=["w1", "w2"])
        run(u_ours)()
        run(u_base)()
        t_ours, t_base = _cpu(run(u_ours), args.repeat), _cpu(run(u_base), args.repeat)
        print(f"ClutchBasic 0-10 s, CVode rtol {args.rtol:g}, median of {args.repeat}:")
        print(f"  exported FMU   {t_ours * 1e3:8.2f} ms CPU")
        print(f"  C baseline     {t_base * 1e3:8.2f} ms CPU")
        print(f"  ratio          {t_ours / t_base:8.2f} (target <= 1.5)")
        for name, stop in (("ClutchBasic", 10.0), ("CupAndBall", 5.0)):
            fmu = export(load(ROOT / f"reference_models/{name}.mo"), tmp / f"{name}.fmu",
                         progress=False)
            cost, n = event_cost(str(fmu), stop, args.rtol, args.repeat)
            print(f"{name} 0-{stop:g} s: {n} mode changes, {cost * 1e6:8.1f} us CPU per "
                  f"mode change (time in fmi2NewDiscreteStates / changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
