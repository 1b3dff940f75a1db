"""Simulation CPU time: our generated FMU vs the hand-written baseline vs SciPy, in one run.

For Van der Pol (0..20 s), the bouncing ball (0..2 s, before the Zeno point of the
reference model) and ClutchBasic (0..10 s, restart at 5 s, release at 7 s):

* generated: ``reference_models/<Model>.mo`` exported by ``mdae_fmu.api.export_fmu``;
* baseline:  ``benchmarks/baselines/<Model>`` (hand-written C, the "physical limit");
* scipy:     ``scipy.integrate.solve_ivp`` (BDF) on a Python right-hand side with event
  functions and the same restarts.

Both FMUs run through the same FMPy call (CVode, same relative tolerance, same output
interval, pre-extracted, model description pre-read, so only the simulation is timed).
Each figure is the median of ``--repeats`` process-CPU-time measurements, taken
interleaved after one warm-up call each. The table also
gives the largest difference between the generated and the baseline trajectories on the
baseline's output grid, so a fast but wrong FMU is visible. Targets: generated/baseline
<= 1.2 (VanDerPol, BouncingBall), <= 1.5 (ClutchBasic).

    .venv/bin/python benchmarks/sim_bench.py [--repeats 7] [--rtol 1e-6]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks.baselines.build import build_baseline  # noqa: E402


@dataclass(frozen=True)
class Case:
    name: str
    stop: float
    interval: float
    compare: tuple[str, ...]
    target: float


CASES = (
    Case("VanDerPol", 20.0, 0.01, ("x0", "x1"), 1.2),
    Case("BouncingBall", 2.0, 0.01, ("h", "v"), 1.2),
    Case("ClutchBasic", 10.0, 0.01, ("w1", "w2"), 1.5),
)


# ----------------------------------------------------------------------------- scipy

def scipy_van_der_pol(case, rtol, grid):
    from scipy.integrate import solve_ivp

    def rhs(t, x):
        return [x[1], (1.0 - x[0] ** 2) * x[1] - x[0]]
    sol = solve_ivp(rhs, (0.0, case.stop), [2.0, 0.0], method="BDF", rtol=rtol, atol=rtol,
                    t_eval=grid)
    return sol.t, {"x0": sol.y[0], "x1": sol.y[1]}


def scipy_bouncing_ball(case, rtol, grid):
    from scipy.integrate import solve_ivp
    g, e = 9.81, 0.7

    def rhs(t, x):
        return [x[1], -g]

    def floor(t, x):
        return x[0]
    floor.terminal, floor.direction = True, -1
    t0, x0, ts, ys = 0.0, [1.0, 0.0], [], []
    while t0 < case.stop:
        seg = grid[(grid >= t0) & (grid <= case.stop)]
        sol = solve_ivp(rhs, (t0, case.stop), x0, method="BDF", rtol=rtol, atol=rtol,
                        events=floor, t_eval=seg)
        ts.append(sol.t)
        ys.append(sol.y)
        if sol.status != 1:
            break
        t0 = float(sol.t_events[0][0])
        h, v = sol.y_events[0][0]
        x0 = [0.0, -e * v]
    y = np.concatenate(ys, axis=1)
    return np.concatenate(ts), {"h": y[0], "v": y[1]}


def scipy_clutch(case, rtol, grid):
    from scipy.integrate import solve_ivp
    j1, j2, k1, k2, t1, t2 = 1.0, 2.0, 0.01, 0.0125, 5.0, 7.0

    def released(t, w):
        return [-k1 / j1 * w[0], -k2 / j2 * w[1]]

    def engaged(t, w):
        a1, a2, b1, b2 = -k1 / j1 * w[0], -k2 / j2 * w[1], 1 / j1, 1 / j2
        f1 = (a2 - a1) / (b1 + b2)
        return [a1 + b1 * f1, a2 - b2 * f1]
    ts, ys, w = [], [], [1.0, 1.5]
    for lo, hi, f in ((0.0, t1, released), (t1, t2, engaged), (t2, case.stop, released)):
        if f is engaged:
            w = [(j1 * w[0] + j2 * w[1]) / (j1 + j2)] * 2
        seg = grid[(grid >= lo) & (grid <= hi)]
        sol = solve_ivp(f, (lo, hi), w, method="BDF", rtol=rtol, atol=rtol, t_eval=seg)
        ts.append(sol.t)
        ys.append(sol.y)
        w = list(sol.y[:, -1])
    y = np.concatenate(ys, axis=1)
    return np.concatenate(ts), {"w1": y[0], "w2": y[1]}


SCIPY = {"VanDerPol": scipy_van_der_pol, "BouncingBall": scipy_bouncing_ball,
         "ClutchBasic": scipy_clutch}


# ----------------------------------------------------------------------------- FMUs

class Prepared:
    """An extracted FMU with its model description read once."""

    def __init__(self, fmu: Path, tmp: Path):
        from fmpy import read_model_description
        self.dir = tmp / fmu.stem
        with zipfile.ZipFile(fmu) as z:
            z.extractall(self.dir)
        self.md = read_model_description(str(self.dir / "modelDescription.xml"))

    def simulate(self, case: Case, rtol: float, names):
        from fmpy import simulate_fmu
        out = [n for n in names if any(v.name == n for v in self.md.modelVariables)]
        return simulate_fmu(str(self.dir), model_description=self.md, fmi_type="ModelExchange",
                            solver="CVode", relative_tolerance=rtol, stop_time=case.stop,
                            output_interval=case.interval, output=out, record_events=True)


def cpu_medians(fns, repeats: int):
    """Median process CPU time of each function, after one untimed warm-up call each (loading
    the binary and CVode), interleaved (one call of each per round) so
    that background load hits all of them alike. Returns (medians, last results)."""
    results = [fn() for fn in fns]
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.process_time()
            results[i] = fn()
            times[i].append(time.process_time() - t)
    return [statistics.median(ts) for ts in times], results


def event_times(res) -> np.ndarray:
    t = res["time"]
    return t[1:][t[1:] == t[:-1]]


def max_difference(a, b, names, window: float = 1e-6) -> float:
    """Largest |a - b| over ``names`` on b's grid (right limits at events), skipping grid
    points within ``window`` of an event of either run (a located event a few ulps later
    would otherwise count the whole jump)."""
    worst = 0.0
    ev = np.concatenate([event_times(a), event_times(b)])
    for n in names:
        if n not in a.dtype.names or n not in b.dtype.names:
            return float("nan")
        ta, ia = np.unique(a["time"][::-1], return_index=True)
        va = a[n][::-1][ia]
        tb, ib = np.unique(b["time"][::-1], return_index=True)
        vb = b[n][::-1][ib]
        inner = (tb > ta[0]) & (tb < ta[-1])
        if ev.size:
            inner &= np.min(np.abs(tb[:, None] - ev[None, :]), axis=1) > window
        worst = max(worst, float(np.max(np.abs(np.interp(tb[inner], ta, va) - vb[inner]))))
    return worst


def export_generated(name: str, out: Path) -> Path:
    from mdae_fmu import api
    fmu = out / f"{name}_generated.fmu"
    api.export_fmu(api.load(ROOT / "reference_models" / f"{name}.mo"), fmu)
    return fmu


def run(repeats: int, rtol: float, cases=CASES) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="sim_bench_") as tmp:
        tmp = Path(tmp)
        for case in cases:
            row = {"model": case.name, "target": case.target}
            base = Prepared(build_baseline(case.name, tmp / "baselines"), tmp / "b")
            grid = np.arange(0.0, case.stop + case.interval / 2, case.interval)
            fns = [partial(base.simulate, case, rtol, case.compare),
                   partial(SCIPY[case.name], case, rtol, grid)]
            try:
                gen = Prepared(export_generated(case.name, tmp), tmp / "g")
                fns.append(partial(gen.simulate, case, rtol, case.compare))
            except Exception as err:     # exporter missing or model not supported yet
                row["generated"] = None
                row["note"] = f"generated FMU unavailable: {type(err).__name__}: {err}"[:120]
                if "--debug" in sys.argv:
                    traceback.print_exc()
            medians, results = cpu_medians(fns, repeats)
            row["baseline"], row["scipy"] = medians[0], medians[1]
            if len(fns) == 3:
                row["generated"] = medians[2]
                row["max_diff"] = max_difference(results[2], results[0], case.compare)
            rows.append(row)
    return rows


def markdown(rows: list[dict], repeats: int, rtol: float) -> str:
    def ms(v):
        return "n/a" if v is None else f"{1e3 * v:.1f}"

    def ratio(a, b):
        return "n/a" if a is None or b is None else f"{a / b:.2f}"
    lines = [f"FMPy CVode, rtol={rtol:g}, output interval 0.01 s; CPU time, median of "
             f"{repeats} runs",
             "",
             "| model | generated ms | baseline ms | scipy BDF ms | generated/baseline "
             "(target) | scipy/baseline | scipy/generated | max abs diff gen-base |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g, b, s = r.get("generated"), r["baseline"], r["scipy"]
        diff = r.get("max_diff")
        lines.append(
            f"| {r['model']} | {ms(g)} | {ms(b)} | {ms(s)} | {ratio(g, b)} "
            f"(<= {r['target']}) | {ratio(s, b)} | {ratio(s, g)} | "
            f"{'n/a' if diff is None else f'{diff:.2e}'} |")
    notes = [f"- {r['model']}: {r['note']}" for r in rows if r.get("note")]
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--models", nargs="*", default=[c.name for c in CASES])
    ap.add_argument("--debug", action="store_true", help="print exporter tracebacks")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    cases = [c for c in CASES if c.name in args.models]
    rows = run(args.repeats, args.rtol, cases)
    print(markdown(rows, args.repeats, args.rtol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
