"""``mdae-fmu simulate`` and ``mdae_fmu.simulate``: export a model if needed, run the FMU
(`mdae_fmu.fmu_runner`: a child process, FMPy's options), write CSV/PNG.

``mdae-fmu simulate MODEL_OR_FMU [--model NAME] [--start-values NAME VALUE ...]
[--output-variables NAME ...] [--relative-tolerance TOL] [--start-time T0] [--stop-time T1]
[--output-interval DT] [--timeout SECONDS] [--fmi-type ModelExchange|CoSimulation]
[--output-file OUT.csv] [--plot OUT.png]``. Exit codes follow the CLI: 0 ok, 1 the model is
rejected (by the analysis) or the FMU fails to simulate (an error, a crash, an ``exit()``, a
timeout), 2 the input cannot be read or an option is wrong. Errors are printed as one message,
never as a traceback.
"""

from __future__ import annotations

import csv as _csv
import math
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import run_options
from .diagnostics import EXIT_OK, InputError, MdaeError, SimulationFailed
from .fmu_archive import open_fmu, temporary_folder
from .fmu_runner import (RunResult, check_run_options, event_spans, fmu_of, run_fmu,
                         warm_up)
from .output import atomic_output, check_writable, writing

MAX_PLOTTED = 12
MAX_EVENT_LINES = 200     # event lines drawn per subplot
#: Variables whose final value the summary lists.
MAX_SUMMARY = 30
#: Most output rows the default output interval gives (the DefaultExperiment's stepSize is
#: doubled until the horizon has at most this many intervals).
MAX_OUTPUT_INTERVALS = 100_000


def default_output_interval(md, start_time: float | None,
                            stop_time: float | None) -> float | None:
    """The output interval when none is given: the FMU's DefaultExperiment stepSize (the
    model's ``Interval``; FMPy uses it only for Co-Simulation, and its own choice for Model
    Exchange), None without one (FMPy's choice then).

    A horizon shorter than the DefaultExperiment's keeps its number of output intervals (a
    shorter interval, never a longer one): FMPy's CVode takes at most 500 steps per output
    interval, and an interval chosen for a long horizon spans the whole of a short one
    (AmplifierWithOpAmpDetailed exported for 1 s, stepSize 2 ms, simulated for 3 ms stopped
    with mxstep at 0.45 ms)."""
    de = md.defaultExperiment
    if de is None or de.stepSize is None:
        return None
    step = float(de.stepSize)
    de_start = float(de.startTime) if de.startTime is not None else 0.0
    de_stop = float(de.stopTime) if de.stopTime is not None else de_start + 1.0
    start = start_time if start_time is not None else de_start
    stop = stop_time if stop_time is not None else de_stop
    if not (step > 0 and stop > start):
        return None
    if de_stop > de_start and stop - start < de_stop - de_start:
        step *= (stop - start) / (de_stop - de_start)
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
    """`plot_figure` as a PNG, written atomically (`mdae_fmu.output.atomic_output`)."""
    import matplotlib.pyplot as plt
    fig = plot_figure(result, title)
    try:
        with atomic_output(path, inputs) as partial:
            writing(partial, path, lambda: fig.savefig(partial, dpi=100, format="png"))
    finally:
        plt.close(fig)


def plot_figure(result, title: str):
    """A matplotlib figure (Agg backend) with one subplot per variable (at most
    MAX_PLOTTED). Every event is a dotted vertical line in every subplot; an impulse output
    ``impulse(v)`` (docs/multimode-fmu.md: the integral of ``v`` over the last mode change,
    held until the next one) is drawn as what it is, a stem at each event of the impulse
    that event carries, not as the plateau of its held value."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib (pip install mdae_fmu[plot])") from None
    import numpy as np
    t = np.asarray(result["time"], dtype=float)
    events = [(te, last) for te, _, last in event_spans(t)]
    names = list(result.dtype.names[1:])[:MAX_PLOTTED]
    n = max(len(names), 1)
    fig, axes = plt.subplots(n, 1, sharex=True, figsize=(8, 1.8 * n + 1), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        y = np.asarray(result[name], dtype=float)
        if name.startswith("impulse(") and events:
            at = np.array([te for te, _ in events])
            size = np.array([y[j] for _, j in events])
            hit = size != 0
            ax.axhline(0.0, color="0.4", linewidth=0.8)
            ax.vlines(at[hit], 0.0, size[hit], color="C1", linewidth=2, label="impulse")
            ax.plot(at[hit], size[hit], "o", color="C1")
            ax.set_xlim(t[0], t[-1])
        else:
            ax.plot(t, y, linewidth=1)
        for te, _ in events[:MAX_EVENT_LINES]:
            ax.axvline(te, color="0.55", linestyle=":", linewidth=0.9)
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    if events:
        from matplotlib.lines import Line2D
        axes[0, 0].legend([Line2D([], [], color="0.55", linestyle=":")],
                          [f"event ({len(events)})"], loc="best", fontsize="small")
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def summary(run: RunResult) -> str:
    """The verdict ``simulate`` prints: span, rows, events, and the final values."""
    t = run.result["time"]
    lines = [f"{run.model_name}: simulated {t[0]:g} .. {t[-1]:g} s, {len(t)} rows, "
             f"{len(run.events)} event(s)"]
    names = list(run.result.dtype.names or ())[1:]
    for n in names[:MAX_SUMMARY]:
        v = float(run.result[n][-1])
        lines.append(f"  {n} = {v:.6g}" if math.isfinite(v) else f"  {n} = {v}")
    if len(names) > MAX_SUMMARY:
        lines.append(f"  ... {len(names) - MAX_SUMMARY} more variable(s) (--output-file "
                     "has them all)")
    return "\n".join(lines)


def simulate(model_or_fmu: str | Path, *,
             start_values: Mapping[str, Any] | None = None,
             output_variables: Sequence[str] | None = None,
             relative_tolerance: float | None = None,
             start_time: float | None = None,
             stop_time: float | None = None,
             output_interval: float | None = None,
             fmi_type: str | None = None,
             timeout: float | None = None,
             input: Any = None,
             validate: bool = True,
             model: str | None = None,
             output_file: str | Path | None = None,
             plot: str | Path | None = None,
             progress: bool | None = None) -> RunResult:
    """Simulate a model file (exported first) or an FMU and return the
    `mdae_fmu.fmu_runner.RunResult` (``.result``: structured array, ``.events``, ``.log``).

    Keywords as ``fmpy.simulate_fmu`` (`mdae_fmu.fmu_runner.run_fmu`): ``start_values``
    (name -> value), ``output_variables`` (default: every output and local variable,
    discrete ones included), ``relative_tolerance``, ``start_time``, ``stop_time``,
    ``output_interval`` (default: the FMU's DefaultExperiment stepSize, else FMPy's choice),
    ``fmi_type`` ("ModelExchange" or "CoSimulation"; default ModelExchange when the FMU has
    it), ``timeout`` (seconds), ``input`` (FMPy's input table), ``validate`` (False: an FMU
    whose model description fails FMPy's validation runs anyway, the problems printed on
    stderr as warnings). ``model``: the class of a model
    file that defines several. ``output_file`` / ``plot``: also write the CSV / PNG. The FMU
    runs in a child process: no ``if __name__ == "__main__":`` is needed around the call.

    Raises `mdae_fmu.InputError` (unreadable input, bad option), `mdae_fmu.ModelRejected`
    (the analysis rejects the model) or `mdae_fmu.SimulationFailed` (the FMU fails, crashes,
    exits or exceeds ``timeout``)."""
    src = Path(model_or_fmu)
    if not src.exists():
        raise InputError(f"{src}: no such file")
    check_run_options(relative_tolerance=relative_tolerance, start_time=start_time,
                      stop_time=stop_time, output_interval=output_interval, timeout=timeout,
                      fmi_type=fmi_type)
    for out in (output_file, plot):     # before the export and the simulation
        if out:
            check_writable(out, [src])
    warm_up()                           # the child imports FMPy while the model is exported
    with temporary_folder("mdae_sim_") as tmp:
        fmu = fmu_of(src, tmp, stop_time=stop_time, model=model, progress=progress,
                     fmi_type=fmi_type)
        with open_fmu(fmu, label=str(src), validate=validate) as opened:
            run_options.print_problems(str(src), opened.problems)
            if output_interval is None:
                output_interval = default_output_interval(opened.model_description,
                                                          start_time, stop_time)
            run = run_fmu(opened, start_values=start_values, output_variables=output_variables,
                          relative_tolerance=relative_tolerance, start_time=start_time,
                          stop_time=stop_time, output_interval=output_interval,
                          fmi_type=fmi_type, timeout=timeout, input=input,
                          validate=validate, label=str(src))
    if output_file:
        write_csv(run.result, output_file, [src])
    if plot:
        write_plot(run.result, plot, run.model_name, [src])
    return run


def simulate_command(args) -> int:
    """The ``mdae-fmu simulate`` command: prints a summary (or one error message on stderr)
    and returns the exit code 0, 1 or 2."""
    try:
        run = simulate(args.model, model=args.class_name, output_file=args.output_file,
                       plot=args.plot, **run_options.run_keywords(args))
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    print(summary(run))
    for out in (args.output_file, args.plot):
        if out:
            print(f"wrote {out}")
    return EXIT_OK


def add_parser(sub) -> None:
    """Register ``simulate`` on the CLI's subparsers."""
    s = sub.add_parser("simulate", help="export if needed, then simulate (FMPy, in a child "
                       "process)")
    s.add_argument("model", help="a model file or an .fmu")
    s.add_argument("--model", dest="class_name", metavar="NAME", default=None,
                   help="the model (class) to read from a file that defines several, e.g. "
                   "P.M or M (required for such a file)")
    run_options.add_start_values(s)
    run_options.add_output_variables(s)
    run_options.add_relative_tolerance(s)
    s.add_argument("--start-time", type=float, default=None,
                   help="default: the FMU's DefaultExperiment, else 0")
    s.add_argument("--stop-time", type=float, default=None,
                   help="default: the FMU's DefaultExperiment (the model's experiment "
                   "annotation), else start + 1")
    s.add_argument("--output-interval", type=float, default=None, metavar="DT",
                   help="default: the FMU's DefaultExperiment stepSize, else FMPy's choice")
    run_options.add_timeout(s)
    run_options.add_fmi_type(s)
    run_options.add_validate(s)
    s.add_argument("--output-file", metavar="OUT.csv", help="write the result as CSV")
    s.add_argument("--csv", dest="output_file", action=run_options.DeprecatedAlias,
                   new="--output-file", metavar="OUT", help="deprecated spelling of "
                   "--output-file")
    s.add_argument("--plot", metavar="OUT.png", help="plot the result")


__all__ = ["simulate", "simulate_command", "add_parser", "summary", "write_csv", "write_plot",
           "plot_figure",
           "default_output_interval", "SimulationFailed"]
