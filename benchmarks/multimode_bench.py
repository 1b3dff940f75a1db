"""Multimode ME FMUs: simulation CPU time against the hand-written C baseline, event cost.

* ClutchBasic 0-10 s, FMPy CVode, same tolerance and output grid for the exported FMU and
  the hand-written baseline (benchmarks/baselines/ClutchBasic, closed-form restart); median
  CPU time (time.process_time) of ``--repeat`` runs each; ratio exported / baseline.
* Event cost: CPU time spent inside fmi2NewDiscreteStates (mode selection, restart, event
  iteration, and for index-reduced modes the drift projections at step events), divided by
  the number of mode changes of the run (ClutchBasic, Cup-and-Ball, and RLDC2 through its
  variants: RLDC2Switched driven through all four modes every 5 ms for 1 s, i.e. 200 mode
  changes with charge and flux sharing, and RLDC2Diodes with its two located switches; RLDC2.mo
  itself stays in its initial mode on its consistent start, reference_models/README.md).

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


def rldc2_switching_input(period: float = 0.005, stop: float = 1.0):
    """FMPy input table for RLDC2Switched: the cycle TF, TT, FT, FF, TT, FF, TF, ... (every kind
    of restart: charge sharing, flux sharing, continuous) with one switch per ``period``."""
    import numpy as np
    cycle = [(True, False), (True, True), (False, True), (False, False), (True, True),
             (False, False)]
    rows, n = [(0.0, *cycle[0])], int(round(stop / period))
    for k in range(1, n):
        t = k * period
        rows.append((t, *cycle[(k - 1) % len(cycle)]))
        rows.append((t, *cycle[k % len(cycle)]))
    rows.append((stop + period, *cycle[(n - 1) % len(cycle)]))
    return np.array(rows, dtype=[("time", float), ("g1", np.bool_), ("g2", np.bool_)])


def event_cost(fmu: str, stop: float, rtol: float, repeat: int, input=None):
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
                         output=["mdae_mode"], model_description=md, input=input)
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
        for name, stop, signal in (("ClutchBasic", 10.0, None), ("CupAndBall", 5.0, None),
                                   ("RLDC2Switched", 1.0, rldc2_switching_input()),
                                   ("RLDC2Diodes", 1.0, None)):
            fmu = export(load(ROOT / f"reference_models/{name}.mo"), tmp / f"{name}.fmu",
                         progress=False)
            cost, n = event_cost(str(fmu), stop, args.rtol, args.repeat, signal)
            print(f"{name} 0-{stop:g} s: {n} mode changes, {cost * 1e6:8.1f} us CPU per "
                  f"mode change (time in fmi2NewDiscreteStates / changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
