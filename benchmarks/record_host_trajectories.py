"""Record the enumerated (per-mode) FMU of every accepted seed and reference model in the
emulating hosts of tests/host (issue 26, acceptance 1: "plus the emulating hosts in tests/host").

For each model of `models` (the reference models of the host matrix,
tests/fmu/test_host_matrix.py, then every other model FMPy's recordings accept,
tests/data/reference_trajectories/manifest.json), in this process:

* export it with the per-mode schedules (``export(implicit=False)``, Model Exchange and
  Co-Simulation in one archive, the DefaultExperiment of the shared FMU of the FMU tests:
  tolerance 1e-12, stopTime the horizon of FMPy's recording);
* run its Model Exchange interface in tests/host/emul_host.c, compiled from the checkout this
  script lives in, in the runs of `RUNS` (the host matrix's: fmusim-style with FMPy's settings
  at rtol 1e-8 and with fmusim's at rtol 1e-11, rows every reference grid interval, else
  1/100 of the horizon, and at every event; checker-style explicit Euler at the matrix's
  largest step), the model's input signal applied (tests/cosim_util.INPUT_SIGNALS);
* write ``<model>.<run>.csv`` (time to 17 digits, the Real variables of `outputs` to 15: every
  row of the fmusim runs; every `stride`-th row and the last of the checker run) under
  tests/data/host_trajectories/ and the model's entry of ``manifest.json`` (the run's
  arguments, its number of rows, the stride).

The per-mode FMU left the product path (``export(implicit=False)`` raises `InputError`):
recording means running this script with the package of a commit that still has it, e.g.

    git worktree add --detach /tmp/old c4c7a0893c12daa5f15707ebaf3d1ec436bc5b7e
    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/record_host_trajectories.py [--only NAME]

(the host and the helpers of tests/ come from this checkout, the package from PYTHONPATH).
tests/fmu/test_host_trajectories.py runs the default FMU in the same runs and compares.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
OUT = TESTS / "data" / "host_trajectories"
HOST_SOURCE = TESTS / "host" / "emul_host.c"
sys.path.insert(0, str(TESTS))

#: the runs of tests/fmu/test_host_matrix.py: name -> (host mode, rtol or Euler step, fmusim
#: options: "h" FMPy's settings, "t" fmusim's). The checker runs at the matrix's largest step
#: only (its halvings test the order, not the FMU).
RUNS: dict[str, tuple[str, str]] = {
    "fmusim-fmpy": ("fmusim", "h"),
    "fmusim": ("fmusim", "t"),
    "checker": ("checker", ""),
}
#: the rtol of the fmusim-style runs (test_host_matrix.CVODE_RTOL and its tight run)
RUN_RTOL = {"fmusim-fmpy": 1e-8, "fmusim": 1e-11}
#: the Euler step of the checker run (test_host_matrix.EULER_STEP, default 1e-3)
EULER_STEP = {"VanDerPol": 2e-3}
#: the checker run's rows kept in its CSV: at most about this many (every stride-th and last)
CHECKER_ROWS = 400


def reference_manifest() -> dict:
    """The models of tests/data/reference_trajectories/manifest.json (FMPy's recordings)."""
    return json.loads((TESTS / "data" / "reference_trajectories" / "manifest.json")
                      .read_text())["models"]


def models() -> tuple[str, ...]:
    """The host matrix's reference models, then every other model FMPy's recordings accepted
    (the seed models under tests/data, the generated ones)."""
    from cosim_util import REFERENCE_MODELS
    others = sorted(k for k, e in reference_manifest().items()
                    if e["verdict"] == "accepted" and k not in REFERENCE_MODELS)
    return (*REFERENCE_MODELS, *others)


def stop_time(name: str) -> float:
    """The horizon of FMPy's recording (a reference model's: its reference result's)."""
    return float(reference_manifest()[name]["stop"])


def grid_interval(name: str) -> float:
    """The fmusim runs' output interval: the median step of the reference CSV's time column
    (test_host_matrix.grid_interval); a model without a reference result: 1/100 of its
    horizon (FMPy's recording's grid)."""
    import numpy as np

    from cosim_util import REFERENCE, REFERENCE_MODELS, reference_entry
    if name not in REFERENCE_MODELS:
        return stop_time(name) / 100
    data = np.genfromtxt(REFERENCE / reference_entry(name)["csv"], delimiter=",",
                         names=True, deletechars="")
    d = np.diff(data["time"])
    return float(np.median(d[d > 0]))


def build_host(out_dir: Path) -> Path:
    """emul_host compiled as test_host_matrix.host does (-O2, CVODE linked statically)."""
    from mdae_fmu.fmu.cosim import find_static_library
    from valgrind_util import fmi_headers_dir
    out = out_dir / "emul_host"
    cmd = ["gcc", "-std=c99", "-O2", "-g", "-Wall", "-Wextra", "-Werror",
           f"-I{fmi_headers_dir()}", str(HOST_SOURCE), "-o", str(out), "-ldl",
           str(find_static_library("libsundials_cvode.a")), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return out


def host_args(name: str, run: str) -> dict:
    """The arguments of run ``run`` of model ``name`` but the FMU's own (the manifest's
    record of the run)."""
    mode, opts = RUNS[run]
    if mode == "checker":
        return {"mode": mode, "stop": stop_time(name), "param": EULER_STEP.get(name, 1e-3)}
    return {"mode": mode, "stop": stop_time(name), "param": RUN_RTOL[run],
            "interval": grid_interval(name), "opts": opts}


def outputs(md) -> list[str]:
    """The columns: every non-parameter, non-input Real variable but derivatives and the FMU's
    own slots (``mdae_state(x)``: which states the FMU has, and their names, depend on the code
    path; the per-mode FMU's ``mdae_state(u1)`` of RLDC2 is ``v1`` of the default one)."""
    return [v.name for v in md.modelVariables
            if v.type == "Real" and v.causality in ("local", "output")
            and v.variability != "constant" and not v.name.startswith(("der(", "mdae_"))]


def run_host(host: Path, fmu: Path, name: str, run: str, work: Path,
             names: list[str] | None = None):
    """Run ``fmu`` (model ``name``) in ``host`` with `host_args`, as
    test_host_matrix.run_host does, writing the variables ``names`` (default: `outputs`)
    rather than the states: (names, rows of time and values)."""
    import numpy as np
    from fmpy import read_model_description

    from cosim_util import INPUT_SIGNALS
    from valgrind_util import extract_fmu
    info = extract_fmu(fmu, work)
    md = read_model_description(str(fmu))
    names = outputs(md) if names is None else names
    by_name = {v.name: v.valueReference for v in md.modelVariables}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise KeyError(f"{name}: the FMU has no variable {', '.join(missing)}")
    vrs = ",".join(str(by_name[n]) for n in names) or "-"
    a = host_args(name, run)
    common = [str(info.binary), info.guid, str(info.nx), str(info.nz), repr(a["stop"]),
              repr(a["param"])]
    if a["mode"] == "checker":
        args = [str(host), "checker", *common, vrs]
    else:
        opts = ("c" if md.modelExchange.needsCompletedIntegratorStep else "") + a["opts"]
        args = [str(host), "fmusim", *common, repr(a["interval"]), opts, vrs]
    for var, signal in INPUT_SIGNALS.get(name, {}).items():
        typ, vr = info.inputs[var]
        args += [f"{typ}:{vr}:{float(t)!r}:{float(v)!r}" for t, v in signal]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {run}: {proc.stderr[-3000:]}")
    rows = np.array([[float(v) for v in line.split(",")] for line in proc.stdout.splitlines()])
    return names, rows


def host_error(message: str) -> str:
    """The host's refusal in a `run_host` error, without the run's name: its last line."""
    return message.strip().splitlines()[-1]


def stride(run: str, n: int) -> int:
    """Every how many rows run ``run``'s CSV keeps (1: all; the checker run: `CHECKER_ROWS`)."""
    return max(1, n // CHECKER_ROWS) if RUNS[run][0] == "checker" else 1


def kept(n: int, step: int) -> list[int]:
    """The row indices a CSV of ``n`` rows at stride ``step`` keeps: every step-th, and the
    last."""
    idx = list(range(0, n, step))
    return idx if idx[-1] == n - 1 else [*idx, n - 1]


def export_per_mode(name: str, fmu: Path) -> None:
    from cosim_util import TOLERANCE
    from mdae_fmu.fmu.export import export
    from record_reference_trajectories import load_model
    export(load_model(name), fmu, fmi_type="both", implicit=False, progress=False,
           default_experiment={"tolerance": TOLERANCE, "stopTime": stop_time(name)})


def record_one(name: str, host: Path, out: Path, work: Path) -> dict:
    """Export ``name`` per-mode, run it in every run of `RUNS`, write the CSVs; the model's
    manifest entry (a run the host refuses: its last line of stderr)."""
    fmu = work / f"{name}.fmu"
    export_per_mode(name, fmu)
    entry: dict = {}
    for run in RUNS:
        try:
            names, rows = run_host(host, fmu, name, run, work / run)
        except RuntimeError as e:
            entry[run] = {"error": host_error(str(e)), **host_args(name, run)}
            continue
        step = stride(run, len(rows))
        lines = [",".join(["time", *names])]
        lines += [",".join([f"{rows[k, 0]:.17g}", *(f"{x:.15g}" for x in rows[k, 1:])])
                  for k in kept(len(rows), step)]
        csv = out / f"{name}.{run}.csv"
        csv.write_text("\n".join(lines) + "\n")
        entry[run] = {"csv": csv.name, "rows": len(rows), "stride": step,
                      **host_args(name, run)}
    return entry


def commit() -> str:
    """HEAD of the package's checkout (PYTHONPATH), with ``+dirty`` when it differs."""
    import mdae_fmu
    src = Path(mdae_fmu.__file__).resolve().parent.parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                            "mdae_fmu", "templates"], cwd=src, capture_output=True,
                           text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="model names (default: every model)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    entries = manifest.get("models", {})
    head = commit()
    with tempfile.TemporaryDirectory(prefix="mdae_hosttraj_") as tmp:
        host = build_host(Path(tmp))
        for name in args.only or models():
            work = Path(tmp) / name
            work.mkdir()
            entries[name] = record_one(name, host, args.out, work) | {"commit": head}
            manifest = {"recorded_by": "benchmarks/record_host_trajectories.py",
                        "host": "tests/host/emul_host.c",
                        "export": {"implicit": False, "fmi_type": "both"},
                        "models": {k: entries[k] for k in sorted(entries)}}
            manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
            print(name, {r: e.get("rows", e.get("error")) for r, e in entries[name].items()
                         if r in RUNS},
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
