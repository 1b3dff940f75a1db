"""Side by side: rumoca and mdae_fmu on every reference model that has a reference result.

For each model of ``reference_models/references.json`` this runs

* rumoca's own simulator (``Session().load(file, model=name).simulate(stop)``) in the
  interpreter of a separate virtual environment (``--rumoca-python``; rumoca is not a
  dependency of mdae_fmu), and
* our Model Exchange FMU (FMPy CVode, rtol 1e-8, output every 1e-3 s),

and compares both with the reference CSV (closed form or high-accuracy solution) at the CSV's
time points, away from the event times (a window of ``--event-window`` seconds on each side,
where a grid point may fall on either side of a located event). The criterion is the largest
error relative to the column's magnitude (``max |sim - ref| / max(1, max |ref|)``); a run that
stops or raises reports the error message instead.

    python -m venv /tmp/rumoca-venv && /tmp/rumoca-venv/bin/pip install rumoca numpy
    python benchmarks/rumoca_compare.py --rumoca-python /tmp/rumoca-venv/bin/python
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "reference_models"

_RUMOCA_SCRIPT = r"""
import json, sys
import numpy as np
import rumoca
path, name, stop = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    result = rumoca.Session().load(path, model=name).simulate(stop)
    d = result.to_dict()
    print(json.dumps({"time": list(map(float, d["time"])),
                      "data": {k: list(map(float, np.asarray(v, dtype=float)))
                               for k, v in d["data"].items()}}))
except Exception as e:  # report any failure of the other tool as data
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
"""


def read_reference(csv_name: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    with open(REF / csv_name, newline="") as fh:
        rows = list(csv.reader(fh))
    data = np.array([[float(v) for v in r] for r in rows[1:]])
    return data[:, 0], {h: data[:, i] for i, h in enumerate(rows[0]) if i > 0}


def run_rumoca(python: str, model: str, stop: float, timeout: float) -> dict:
    try:
        p = subprocess.run([python, "-c", _RUMOCA_SCRIPT, str(REF / f"{model}.mo"), model,
                            str(stop)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    out = json.loads(lines[-1])
    if "error" in out:
        return out
    return {"time": np.array(out["time"]),
            "data": {k: np.array(v) for k, v in out["data"].items()}}


def run_ours(model: str, stop: float, columns: list[str]) -> dict:
    from fmpy import simulate_fmu

    import mdae_fmu
    with tempfile.TemporaryDirectory() as tmp:
        fmu = Path(tmp) / f"{model}.fmu"
        try:
            mdae_fmu.export_fmu(mdae_fmu.load(REF / f"{model}.mo"), fmu)
            res = simulate_fmu(str(fmu), stop_time=stop, relative_tolerance=1e-8,
                               output_interval=1e-3, output=columns)
        except Exception as e:  # noqa: BLE001 — reported, not raised
            return {"error": f"{type(e).__name__}: {e}"}
    return {"time": np.asarray(res["time"], dtype=float),
            "data": {n: np.asarray(res[n], dtype=float) for n in res.dtype.names
                     if n != "time"}}


def deviation(sim: dict, t_ref: np.ndarray, ref: dict[str, np.ndarray], events: list[float],
              window: float, aliases: dict[str, str]) -> tuple[float, str] | None:
    """Largest scaled error over the reference columns the simulation also has."""
    if "error" in sim:
        return None
    t = sim["time"]
    keep = np.ones_like(t_ref, dtype=bool)
    for te in events:
        keep &= np.abs(t_ref - te) > window
    keep &= (t_ref >= t[0]) & (t_ref <= t[-1])
    worst, where = 0.0, ""
    for col, r in ref.items():
        name = aliases.get(col, col)
        if name not in sim["data"]:
            continue
        # last value at each time (right limits at events), then linear interpolation
        tt, idx = np.unique(t[::-1], return_index=True)
        v = sim["data"][name][::-1][idx]
        s = np.interp(t_ref[keep], tt, v)
        err = float(np.max(np.abs(s - r[keep])) / max(1.0, float(np.max(np.abs(r)))))
        if err > worst:
            worst, where = err, col
    return worst, where


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rumoca-python", required=True,
                    help="python of a virtual environment with rumoca and numpy installed")
    ap.add_argument("--models", nargs="*", help="subset of reference models")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--event-window", type=float, default=0.02)
    a = ap.parse_args(argv)
    index = json.loads((REF / "references.json").read_text())
    print("| model | rumoca 0.10.2 | mdae_fmu FMU |")
    print("|---|---|---|")
    for entry in index.values():
        t_ref, ref = read_reference(entry["csv"])
        for model in entry["models"]:
            if a.models and model not in a.models:
                continue
            if entry.get("inputs", {}).get(model):
                continue  # input-driven variants need a host that drives the input
            aliases = entry.get("aliases", {}).get(model, {})
            cells = []
            for sim in (run_rumoca(a.rumoca_python, model, entry["stop"], a.timeout),
                        run_ours(model, entry["stop"],
                                 [aliases.get(c, c) for c in ref])):
                dev = deviation(sim, t_ref, ref, entry.get("events", []), a.event_window,
                                aliases)
                if dev is None:
                    cells.append("fails: `" + sim["error"].splitlines()[0][:110] + "`")
                else:
                    cells.append(f"max error {dev[0]:.1e} ({dev[1]})")
            print(f"| {model} | {cells[0]} | {cells[1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
