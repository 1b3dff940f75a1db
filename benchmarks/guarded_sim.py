"""Simulation checks of the guarded (implicit) FMUs of `gen_multimode` families (issue 17):
random switching of the Boolean inputs driven by the host (FMPy) and the conserved quantity
across every event. (The comparison with the enumerated FMU went with it, issue 26: the
recorded runs of tests/data/reference_trajectories are that oracle now.)

    .venv/bin/python benchmarks/guarded_sim.py clutch_chain 8 [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_multimode import FAMILIES  # noqa: E402


def switching_table(inputs: list[str], stop: float, n_switch: int, seed: int):
    """A piecewise-constant Boolean input table: ``n_switch`` instants, each flipping one or
    two random inputs (two at once exercises simultaneous changes)."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0.2, stop - 0.2, n_switch))
    val = np.zeros(len(inputs), dtype=bool)
    rows = [(0.0, *val)]
    for t in times:
        rows.append((float(t), *val))
        for k in rng.choice(len(inputs), size=int(rng.integers(1, 3)), replace=False):
            val[k] = not val[k]
        rows.append((float(t), *val))
    rows.append((stop, *val))
    return np.array(rows, dtype=[("time", float)] + [(g, np.bool_) for g in inputs])


def conserved(fam: str, n: int, r) -> np.ndarray | None:
    """The quantity no event may move: angular momentum sum J_i w_i (clutch chain), the
    capacitor charge C v (fault chain: opening a branch makes its flux jump, never the
    charge), the total capacitor charge sum C_k v_k (diode bank: the inductor current is a
    state, so the impulses of the branch currents sum to zero)."""
    if fam == "clutch_chain":
        return sum((1.0 + 0.5 * i) * r[f"w{i}"] for i in range(n + 1))
    if fam == "fault_chain":
        return 1.0 * r["v"]
    if fam == "diode_bank":
        return sum(0.1 * (k + 1) * r[f"v{k}"] for k in range(n))
    return None


def event_jumps(r, q) -> float:
    """Largest relative change of q between the rows of one event time."""
    t = r["time"]
    worst = 0.0
    for k in range(1, len(t)):
        if t[k] == t[k - 1]:
            worst = max(worst, abs(q[k] - q[k - 1]) / max(abs(q[k - 1]), 1e-300))
    return worst


def family_model(fam: str, n: int):
    """The family's model; the diode bank with charged capacitors (its diodes switch
    physically, `gen_multimode.diode_bank`)."""
    return FAMILIES[fam](n, charged=True) if fam == "diode_bank" else FAMILIES[fam](n)


def run(fam: str, n: int, table, stop: float, out_dir: Path):
    from fmpy import simulate_fmu
    from mdae_fmu.fmu.export import export
    model = family_model(fam, n)
    path = out_dir / f"{fam}{n}_g.fmu"
    w, c = time.perf_counter(), time.process_time()
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    export(model, path, progress=False)
    ch2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w, c = time.perf_counter() - w, time.process_time() - c
    gcc = ch2.ru_utime + ch2.ru_stime - ch.ru_utime - ch.ru_stime
    outputs = [v.name for v in model.variables if v.variability == "continuous"
               and v.type == "Real"]
    s = time.perf_counter()
    r = simulate_fmu(str(path), stop_time=stop, relative_tolerance=1e-10, output_interval=0.01,
                     input=table, output=outputs, record_events=True)
    s = time.perf_counter() - s
    return r, dict(export_wall=w, export_cpu=c + gcc, gcc_cpu=gcc,
                   gcc_peak_mb=ch2.ru_maxrss / 1024.0, sim_wall=s)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("family")
    p.add_argument("n", type=int)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--switches", type=int, default=20)
    p.add_argument("--stop", type=float, default=10.0)
    p.add_argument("--dir", default="/tmp")
    a = p.parse_args(argv)
    model = family_model(a.family, a.n)
    inputs = [v.name for v in model.variables if v.causality == "input" and v.type == "Boolean"]
    table = switching_table(inputs, a.stop, a.switches, a.seed) if inputs else None
    r, fig = run(a.family, a.n, table, a.stop, Path(a.dir))
    q = conserved(a.family, a.n, r)
    if q is not None:
        fig["conservation"] = event_jumps(r, q)
    fig["events"] = int(np.sum(np.diff(r["time"]) == 0))
    fig["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(dict(family=a.family, n=a.n, **fig)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
