"""``mdae-fmu simulate``: export a model if needed, simulate the FMU with FMPy, write CSV/PNG.

ARCHITECTURE.md, command line: ``mdae-fmu simulate MODEL_OR_FMU [--stop-time T] [--csv OUT]
[--plot OUT.png]``. Exit codes follow the CLI: 0 ok, 1 the model is rejected (by the
analysis, or the FMU fails at run time), 2 the input cannot be read. Errors are printed as
one message, never as a traceback.
"""

from __future__ import annotations

import csv as _csv
import math
import sys
import tempfile
import zipfile
from pathlib import Path

from .diagnostics import EXIT_OK, EXIT_REJECTED, InputError, MdaeError
from .output import atomic_output, check_writable, writing

MAX_PLOTTED = 12


class SimulationFailed(MdaeError):
    """The FMU was built but could not be simulated (exit code 1)."""
    exit_code = EXIT_REJECTED


def _export_model(path: Path, out_dir: Path, stop_time: float | None = None,
                  progress: bool | None = None, model_name: str | None = None) -> Path:
    """Read and export a model file into ``out_dir`` (the exporter is imported lazily); the
    FMU's DefaultExperiment is the model's experiment annotation, its stopTime ``stop_time``
    when given; ``progress=False``: no stage messages; ``model_name``: the class of a file
    that defines several (`api.load`)."""
    from . import api
    model = api.load(path, model_name)
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in (model.name or path.stem))
    fmu = out_dir / f"{stem or 'model'}.fmu"
    try:
        api.export_fmu(model, fmu, default_experiment={"stopTime": stop_time},
                       progress=progress)
    except ModuleNotFoundError as err:
        if (err.name or "").startswith("mdae_fmu"):
            raise SimulationFailed(
                f"{path}: FMU export is not available in this installation ({err.name})") from None
        raise
    return fmu


def _check_fmu(path: Path):
    """Read the model description of an .fmu; unreadable archives are input errors."""
    from fmpy import read_model_description
    if not zipfile.is_zipfile(path):
        raise InputError(f"{path}: not an FMU (not a zip archive)")
    try:
        return read_model_description(str(path))
    except Exception as err:   # FMPy raises plain exceptions for malformed FMUs
        raise InputError(f"{path}: invalid modelDescription.xml: {err}") from None


def _recorded_variables(md) -> list[str]:
    """Outputs and continuous states (in model order); all non-parameter variables if none."""
    states = {d.variable.derivative.name for d in md.derivatives if d.variable.derivative}
    chosen = [v.name for v in md.modelVariables
              if v.causality == "output" or v.name in states]
    if not chosen:
        chosen = [v.name for v in md.modelVariables
                  if v.causality not in ("parameter", "calculatedParameter", "independent")
                  and v.type in ("Real", "Integer", "Boolean", "Enumeration")
                  and not v.name.startswith("der(")]
    return chosen


#: Most output rows `run_simulation` asks for (the DefaultExperiment's stepSize is doubled
#: until the horizon has at most this many intervals).
MAX_OUTPUT_INTERVALS = 100_000


def _output_interval(md, stop_time: float | None) -> float | None:
    """The output interval: the FMU's DefaultExperiment stepSize (FMPy uses it only for
    Co-Simulation, and its own choice for Model Exchange), None without one. FMPy takes
    start time, stop time and tolerance from the DefaultExperiment itself.

    A ``stop_time`` shorter than the DefaultExperiment's keeps its number of output intervals
    (a shorter interval, never a longer one): FMPy's CVode takes at most 500 steps per output
    interval, and an interval chosen for a long horizon spans the whole of a short one
    (AmplifierWithOpAmpDetailed exported for 1 s, stepSize 2 ms, simulated for 3 ms stopped
    with mxstep at 0.45 ms)."""
    de = md.defaultExperiment
    if de is None or de.stepSize is None:
        return None
    step = float(de.stepSize)
    start = float(de.startTime) if de.startTime is not None else 0.0
    de_stop = float(de.stopTime) if de.stopTime is not None else start + 1.0
    stop = stop_time if stop_time is not None else de_stop
    if not (step > 0 and stop > start):
        return None
    if start < stop < de_stop:
        step *= (stop - start) / (de_stop - start)
    while (stop - start) / step > MAX_OUTPUT_INTERVALS:
        step *= 2
    return step


def write_csv(result, path: str | Path, inputs=()) -> None:
    """CSV with header ``time,<variables...>`` (names quoted only when needed), written
    atomically (`mdae_fmu.output.atomic_output`); ``inputs``: files it must not replace."""
    def write():
        with open(partial, "w", newline="") as fh:
            w = _csv.writer(fh)
            names = list(result.dtype.names)
            w.writerow(names)
            for row in result:
                w.writerow([repr(float(v)) for v in row])

    with atomic_output(path, inputs) as partial:
        writing(partial, path, write)


def write_plot(result, path: str | Path, title: str, inputs=()) -> None:
    """One subplot per variable (at most MAX_PLOTTED), PNG via the Agg backend, written
    atomically (`mdae_fmu.output.atomic_output`)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib (pip install mdae_fmu[plot])") from None
    names = list(result.dtype.names[1:])[:MAX_PLOTTED]
    n = max(len(names), 1)
    fig, axes = plt.subplots(n, 1, sharex=True, figsize=(8, 1.8 * n + 1), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        ax.plot(result["time"], result[name], linewidth=1)
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("time")
    fig.suptitle(title)
    fig.tight_layout()
    try:
        with atomic_output(path, inputs) as partial:
            writing(partial, path, lambda: fig.savefig(partial, dpi=100, format="png"))
    finally:
        plt.close(fig)


def _summary(name: str, result) -> str:
    t = result["time"]
    events = int(sum(1 for a, b in zip(t[:-1], t[1:]) if a == b))
    lines = [f"{name}: simulated {t[0]:g} .. {t[-1]:g} s, {len(t)} rows, {events} event(s)"]
    for n in result.dtype.names[1:]:
        v = float(result[n][-1])
        lines.append(f"  {n} = {v:.6g}" if math.isfinite(v) else f"  {n} = {v}")
    return "\n".join(lines)


class _FmuLog:
    """The FMU's logger callback: keeps its warnings and errors for the failure message.

    Passing our own logger also keeps FMPy's logger proxy (one global pointer in FMPy's C
    helper) pointing at a callback that is alive during this simulation; with FMPy's default
    callbacks it may point at a callback object another FMU instance created and that the
    garbage collector has freed since."""

    def __init__(self):
        self.messages: list[str] = []

    def __call__(self, env, instance, status, category, message):
        if status >= 1:                     # fmi2Warning and worse
            text = (message.decode("utf-8", "replace") if isinstance(message, bytes)
                    else str(message))
            self.messages.append(text)


def run_simulation(model_or_fmu: str | Path, stop_time: float | None = None,
                   csv: str | Path | None = None, plot: str | Path | None = None,
                   model: str | None = None):
    """Export (for a model file) and simulate; returns the FMPy result array. Raises
    `MdaeError` subclasses on user errors. ``model``: the class of a model file that defines
    several (`api.load`); not for an .fmu."""
    src = Path(model_or_fmu)
    if not src.exists():
        raise InputError(f"{src}: no such file")
    if stop_time is not None and not (math.isfinite(stop_time) and stop_time > 0):
        raise InputError(f"--stop-time must be a positive number, got {stop_time}")
    for out in (csv, plot):         # before the export and the simulation (mdae_fmu.output)
        if out:
            check_writable(out, [src])
    from fmpy import simulate_fmu
    with tempfile.TemporaryDirectory(prefix="mdae_sim_") as tmp:
        if src.suffix.lower() == ".fmu":
            if model is not None:
                raise InputError(f"{src}: --model chooses a class of a model file, not of "
                                 "an FMU")
            fmu = src
        else:
            fmu = _export_model(src, Path(tmp), stop_time, model_name=model)
        md = _check_fmu(fmu)
        if md.modelExchange is None and md.coSimulation is None:
            raise InputError(f"{fmu}: the FMU declares neither ModelExchange nor CoSimulation")
        fmi_type = "ModelExchange" if md.modelExchange is not None else "CoSimulation"
        log = _FmuLog()
        try:
            result = simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=stop_time,
                                  output_interval=_output_interval(md, stop_time),
                                  output=_recorded_variables(md), record_events=True,
                                  logger=log)
        except Exception as err:   # FMPy reports FMI and solver failures as exceptions
            detail = "".join(f"\n  {m}" for m in log.messages[-5:])
            raise SimulationFailed(f"{src}: simulation failed: {err}{detail}") from None
    if csv:
        write_csv(result, csv, [src])
    if plot:
        write_plot(result, plot, md.modelName, [src])
    return md.modelName, result


def simulate_command(model_or_fmu: str | Path, stop_time: float | None = None,
                     csv: str | Path | None = None, plot: str | Path | None = None,
                     model: str | None = None) -> int:
    """The ``mdae-fmu simulate`` command: prints a summary (or one error message on stderr)
    and returns the exit code 0, 1 or 2."""
    try:
        name, result = run_simulation(model_or_fmu, stop_time, csv, plot, model)
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    print(_summary(name, result))
    if csv:
        print(f"wrote {csv}")
    if plot:
        print(f"wrote {plot}")
    return EXIT_OK


__all__ = ["simulate_command", "run_simulation", "write_csv", "write_plot", "SimulationFailed"]
