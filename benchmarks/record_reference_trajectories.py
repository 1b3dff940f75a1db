"""Record today's enumerated (per-mode) FMU of every seed and reference model as reference
trajectories, the oracle of the one pipeline (issue 26, Deliver 1 and acceptance 1).

For each model of `MODELS` (reference_models/*.mo and the seed models under tests/data, the
inline models of the tests that compared against the per-mode FMU under tests/data/one_pipeline)
and of `GENERATED` (benchmarks/gen_multimode.py), in a fresh child process:

* analyse it and export it with the per-mode schedules (``export(implicit=False)``, Model
  Exchange and Co-Simulation in one archive, DefaultExperiment tolerance `RTOL`);
* simulate it with FMPy over its horizon: Model Exchange (CVode, relative tolerance `RTOL`,
  outputs every ``stop / GRID`` and at every event: FMPy's event rows, the left and the right
  limit at one time, kept as FMPy gives them) and Co-Simulation (the FMU's own CVode,
  communication step ``stop / GRID``), the model's input signal applied
  (tests/cosim_util.INPUT_SIGNALS);
* write ``<model>.me.csv`` and ``<model>.cs.csv`` (every non-parameter Real and Integer
  variable but derivatives and the FMU's own ``mdae_*`` slots, 15 significant digits) under
  tests/data/reference_trajectories/, and the model's entry of ``manifest.json``: the verdict
  (accepted, or rejected with the message), the options, the columns, a
  simulation that failed with FMPy's message.

The manifest records the commit the trajectories come from. tests/fmu/
test_reference_trajectories.py exports each model on the default path and compares.

The per-mode FMU left the product path after the recordings (issue 26 Deliver 7:
``export(implicit=False)`` raises `InputError`): recording again means running this script
with the package of a commit that still has it, e.g. ``git archive <commit> | tar -x -C
DIR`` and ``PYTHONPATH=DIR python DIR/benchmarks/record_reference_trajectories.py --out
tests/data/reference_trajectories --only KEY ...`` (how the inline and generated models were
recorded, at 9a6484d).

    .venv/bin/python benchmarks/record_reference_trajectories.py [--only NAME ...]
        [--out tests/data/reference_trajectories] [--timeout 900] [--jobs 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
OUT = TESTS / "data" / "reference_trajectories"
sys.path.insert(0, str(TESTS))

#: solver tolerance of both runs (tight, so that the comparison at 1e-10 reads the computed
#: solutions and not the integrator's error)
RTOL = 1e-12
#: output points over the horizon (ME: plus the event rows; CS: the communication grid)
GRID = 100
#: characters of a rejection's message kept in the manifest
MESSAGE = 4000
#: horizon of a model without a reference result or an experiment annotation
DEFAULT_STOP = 1.0


def seed_paths() -> list[Path]:
    """The seed and reference models, in a fixed order: reference_models/*.mo, then the
    Modelica and Base Modelica files under tests/data (but this directory)."""
    data = sorted(p for p in (TESTS / "data").rglob("*")
                  if p.suffix in (".mo", ".bmo") and OUT not in p.parents)
    return sorted((ROOT / "reference_models").glob("*.mo")) + data


def model_key(path: Path) -> str:
    """The name of a model's files and manifest entry: its path below reference_models/ or
    tests/data/, '/' written '.' (``conditionals.Chatter``)."""
    base = ROOT / "reference_models" if path.is_relative_to(ROOT / "reference_models") \
        else TESTS / "data"
    return ".".join(path.relative_to(base).with_suffix("").parts)


MODELS = {model_key(p): p for p in seed_paths()}

#: models built by a generator of benchmarks/gen_multimode.py rather than read from a file
#: (the per-mode oracle of tests/codegen/test_guarded_fmu.py): key -> (generator, its size,
#: its keyword arguments, stop time); their input signals are in tests/cosim_util.INPUT_SIGNALS
GENERATED: dict[str, tuple[str, int, dict, float]] = {
    "generated.ClutchChain2": ("clutch_chain", 2, {}, 6.0),
    "generated.FaultChain1": ("fault_chain", 1, {}, 6.0),
    "generated.DiodeBank2": ("diode_bank", 2, {}, 3.0),
    "generated.ChargedDiodeBank3": ("diode_bank", 3, {"charged": True}, 3.0),
}


def load_model(key: str):
    """The model of ``key``: its file (`MODELS`), or the generator call of `GENERATED`."""
    from mdae_fmu import api
    if key in MODELS:
        return api.load(MODELS[key])
    import gen_multimode
    name, n, kwargs, _ = GENERATED[key]
    return getattr(gen_multimode, name)(n, **kwargs)


def source_of(key: str) -> str:
    """The manifest's ``source`` of ``key``: a path, or the generator call."""
    if key in MODELS:
        return str(MODELS[key].relative_to(ROOT))
    name, n, kwargs, _ = GENERATED[key]
    args = ", ".join([str(n), *(f"{k}={v!r}" for k, v in kwargs.items())])
    return f"benchmarks/gen_multimode.py:{name}({args})"


def horizon(key: str, model) -> float:
    """Stop time: a generated model's (`GENERATED`), the reference result's horizon
    (references.json), else the model's experiment annotation, else `DEFAULT_STOP`."""
    from cosim_util import REFERENCE, reference_stop
    if key in GENERATED:
        return GENERATED[key][3]
    if (REFERENCE / f"{key}.mo").exists():
        try:
            return reference_stop(key)
        except KeyError:
            pass
    stop = dict(model.experiment).get("StopTime")
    return float(stop) if stop is not None else DEFAULT_STOP


def recorded_names(fmu: Path) -> list[str]:
    """The columns: every non-parameter, non-input Real and Integer variable but derivatives
    and the FMU's own slots (``mdae_mode``, ``mdae_state(x)``: their numbering and presence
    depend on the code path)."""
    from fmpy import read_model_description
    md = read_model_description(str(fmu))
    return [v.name for v in md.modelVariables
            if v.type in ("Real", "Integer") and v.causality in ("local", "output")
            and v.variability != "constant" and not v.name.startswith(("der(", "mdae_"))]


def simulate(fmu: Path, key: str, stop: float, names: list[str], fmi_type: str,
             rtol: float = RTOL):
    """FMPy's run of ``fmu`` (``fmi_type``: ModelExchange with event rows, or CoSimulation)
    with the options of the recording; the structured array."""
    from fmpy import simulate_fmu

    from cosim_util import input_table
    return simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=stop, relative_tolerance=rtol,
                        output_interval=stop / GRID, output=names, input=input_table(key),
                        record_events=fmi_type == "ModelExchange")


def write_csv(path: Path, result, names: list[str]) -> None:
    """``result``'s time and ``names`` columns, 15 significant digits."""
    lines = [",".join(["time", *names])]
    for row in result:
        lines.append(",".join(f"{float(row[n]):.15g}" for n in ["time", *names]))
    path.write_text("\n".join(lines) + "\n")


def read_csv(path: Path) -> tuple[list[str], list[list[float]]]:
    """Header and rows of a CSV `write_csv` wrote."""
    head, *rows = path.read_text().splitlines()
    return head.split(","), [[float(x) for x in r.split(",")] for r in rows]


def portable(message: str) -> str:
    """``message`` with the checkout's path left out (paths relative to the repository)."""
    return message.replace(f"{ROOT}/", "")


def record_one(key: str, out: Path) -> dict:
    """Analyse, export (per-mode) and simulate model ``key``; its manifest entry."""
    from mdae_fmu import api
    from mdae_fmu.diagnostics import MdaeError, ModelRejected
    entry: dict = {"source": source_of(key)}
    try:
        model = load_model(key)
    except MdaeError as e:
        return entry | {"verdict": "unreadable", "message": portable(str(e).splitlines()[0])}
    stop = horizon(key, model)
    entry |= {"stop": stop, "grid": GRID, "rtol": RTOL, "input": key in _signals()}
    with tempfile.TemporaryDirectory(prefix="mdae_reftraj_") as tmp:
        fmu = Path(tmp) / f"{model.name}.fmu"
        try:
            api.export_fmu(model, fmu, fmi_type="both", implicit=False, progress=False,
                           default_experiment={"stopTime": stop, "tolerance": RTOL})
        except ModelRejected as e:
            return entry | {"verdict": "rejected", "message": portable(str(e))[:MESSAGE]}
        entry["verdict"] = "accepted"
        names = recorded_names(fmu)
        entry["columns"] = names
        for tag, fmi_type in (("me", "ModelExchange"), ("cs", "CoSimulation")):
            try:
                result = simulate(fmu, key, stop, names, fmi_type)
            except Exception as e:   # FMPy raises a bare Exception on an fmi2Error
                entry[tag] = {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
                continue
            csv = out / f"{key}.{tag}.csv"
            write_csv(csv, result, names)
            entry[tag] = {"csv": csv.name, "rows": len(result)}
    return entry


def _signals() -> dict:
    from cosim_util import INPUT_SIGNALS
    return INPUT_SIGNALS


def commit() -> str:
    """HEAD of the checkout, with ``+dirty`` when tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                            "mdae_fmu", "templates"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="model keys (default: every model)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per model")
    ap.add_argument("--jobs", type=int, default=1, help="models recorded at once")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        print(json.dumps(record_one(args.child, args.out)))
        return 0
    keys = args.only or [*MODELS, *GENERATED]
    unknown = sorted(set(keys) - set(MODELS) - set(GENERATED))
    if unknown:
        ap.error(f"unknown models: {', '.join(unknown)}")
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    models = manifest.get("models", {})
    head = commit()

    def save() -> None:
        manifest = {"recorded_by": "benchmarks/record_reference_trajectories.py",
                    "export": {"implicit": False, "fmi_type": "both"},
                    "fmpy": __import__("fmpy").__version__,
                    "models": {k: models[k] for k in sorted(models)}}
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")

    def one(key: str) -> tuple[str, dict]:
        for tag in ("me", "cs"):     # not <key>.exact*.csv (benchmarks/cup_and_ball_exact.py)
            (args.out / f"{key}.{tag}.csv").unlink(missing_ok=True)
        try:
            run = subprocess.run([sys.executable, __file__, "--child", key, "--out",
                                  str(args.out)], capture_output=True, text=True,
                                 timeout=args.timeout)
            entry = json.loads(run.stdout.strip().splitlines()[-1]) if run.returncode == 0 \
                else {"verdict": "crashed", "message": run.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            entry = {"verdict": "timeout", "message": f"over {args.timeout:g} s"}
        return key, entry | {"source": source_of(key), "commit": head}

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for key, entry in pool.map(one, keys):
            models[key] = entry
            save()
            what = entry["message"].splitlines()[0] if entry.get("message") \
                else {t: entry.get(t) for t in ("me", "cs")}
            print(f"{key}: {entry['verdict']} {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
