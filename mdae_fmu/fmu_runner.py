"""Run an FMU: the one place where the tool simulates an FMU (simulate, compare, regress, sweep
and the Python API all come here), in a child process, with FMPy's vocabulary.

`run_fmu` takes ``fmpy.simulate_fmu``'s keywords (``start_values``, ``output_variables`` for
FMPy's ``output``, ``relative_tolerance``, ``start_time``, ``stop_time``, ``output_interval``,
``fmi_type`` "ModelExchange" | "CoSimulation", ``input``, ``timeout``...) and returns a
`RunResult`: plain data (the result array, the event times seen, the FMU's log).

**Why a child process.** Simulating loads the FMU's binary, and a binary may crash (a
segfault would take the user's process with it: exit -11, no message), call ``exit(0)`` (a
silent exit 0, which CI reads as PASS) or loop in native code (where SIGINT and SIGTERM are
not handled). The binary therefore runs in a child process (`mdae_fmu.fmu_child`, which
imports only FMPy and numpy); this process only waits, so it can always give a verdict: a
crash, an exit or a run beyond ``timeout`` becomes `SimulationFailed` (exit code 1) naming the
FMU, with the FMU's last log messages. SIGINT/SIGTERM (turned into exceptions by the command
line) kill the child and remove the temporary folders on their way out.

**Cost.** The child is started once per thread and serves the runs that follow (a sweep's
runs, compare's two sides); one that crashed, timed out or was interrupted is replaced by a
new one at the next run. Starting it costs what importing numpy and FMPy costs (about 0.3 s on
an idle core); a run then adds a request and a reply on a pipe and the result through a
``.npy`` file (docs/regression.md, "Running FMUs").

The FMU is read through `mdae_fmu.fmu_archive.open_fmu` (extraction with limits, temporary
folder always removed). The child is a safety net against accidents of native code, not a
sandbox: a binary is code, and runs with the user's rights.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from .diagnostics import InputError, SimulationFailed
from .fmu_archive import DEFAULT_LIMITS, ArchiveLimits, OpenedFmu, open_fmu, temporary_folder

if TYPE_CHECKING:
    import numpy as np

FMI_TYPES = ("ModelExchange", "CoSimulation")
#: Seconds a new child may take to import FMPy and take its first request (a loaded machine).
STARTUP_GRACE = 120.0
#: The FMU's log lines kept per run (the last ones), and the child's printed lines quoted.
LOG_KEPT = 200
LOG_QUOTED = 5
#: Bytes of the child's own stdout/stderr kept (what an FMU prints there).
OUTPUT_KEPT = 4096
#: Variable types FMPy records.
RECORDABLE = ("Real", "Integer", "Boolean", "Enumeration")

_BOOT = ("import sys, runpy; del sys.path[0]; "
         "runpy.run_path(sys.argv[1], run_name='__main__')")


@dataclass(frozen=True)
class RunResult:
    """One simulation, as plain data. ``result``: a structured array with a ``time`` field
    and one field per recorded variable (at an event two rows with the same time, left limit
    first); ``events``: the times of those events (Model Exchange; Co-Simulation shows none);
    ``log``: the FMU's log messages (the last `LOG_KEPT`); ``seconds``: the simulation's wall
    time in the child; ``wall_seconds``: the whole call, child process included."""
    fmu: str
    model_name: str
    fmi_type: str
    result: np.ndarray
    events: tuple[float, ...]
    log: tuple[str, ...]
    seconds: float
    wall_seconds: float


MODEL_SUFFIXES = (".mo", ".bmo", ".xml")


def fmu_of(model_or_fmu: str | os.PathLike[str], work_dir: Path, *,
           stop_time: float | None = None, model: str | None = None,
           progress: bool | None = None, fmi_type: str | None = None) -> Path:
    """The FMU to run for ``model_or_fmu``: an ``.fmu`` itself, or a model file (``.mo``,
    ``.bmo``, ``.xml``) exported into ``work_dir`` (`mdae_fmu.api`), its DefaultExperiment's
    stopTime ``stop_time`` when given, with the interface the run asks for (``fmi_type``
    "CoSimulation": a Co-Simulation FMU; otherwise Model Exchange). ``model``: the class of a
    file that defines several; ``progress=False``: no stage messages. Raises `InputError` for
    a missing file or an unknown kind, `SimulationFailed` when export is not installed."""
    src = Path(model_or_fmu)
    if not src.exists():
        raise InputError(f"{src}: no such file")
    if src.suffix.lower() == ".fmu":
        if model is not None:
            raise InputError(f"{src}: --model chooses a class of a model file, not of an FMU")
        return src
    if src.suffix.lower() not in MODEL_SUFFIXES:
        raise InputError(f"{src}: expected a model (.mo, .bmo, .xml) or an .fmu")
    from . import api
    loaded = api.load(src, model)
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in (loaded.name or src.stem))
    fmu = work_dir / f"{stem or 'model'}.fmu"
    try:
        api.export_fmu(loaded, fmu, default_experiment={"stopTime": stop_time},
                       progress=progress, fmi_type="cs" if fmi_type == "CoSimulation" else "me")
    except ModuleNotFoundError as err:
        if (err.name or "").startswith("mdae_fmu"):
            raise SimulationFailed(str(src), f"FMU export is not available in this "
                                   f"installation ({err.name})") from None
        raise
    return fmu


def check_run_options(*, relative_tolerance: float | None = None,
                      start_time: float | None = None, stop_time: float | None = None,
                      output_interval: float | None = None, timeout: float | None = None,
                      fmi_type: str | None = None) -> None:
    """The options of a run that need no FMU, checked before any work (an export can take
    long): positive tolerance, interval, timeout; finite times, stop after start; a known
    ``fmi_type``."""
    _number("--relative-tolerance", relative_tolerance)
    _number("--output-interval", output_interval)
    _number("--timeout", timeout)
    start = _number("--start-time", start_time, positive=False)
    stop = _number("--stop-time", stop_time, positive=False)
    if start is not None and stop is not None and not stop > start:
        raise InputError(f"--stop-time ({stop:g}) must be after --start-time ({start:g})")
    if fmi_type is not None and fmi_type not in FMI_TYPES:
        raise InputError(f"--fmi-type must be ModelExchange or CoSimulation, got "
                         f"'{fmi_type}'")


# ---------------------------------------------------------------------------------------------
# The model description: defaults and checks before a run
# ---------------------------------------------------------------------------------------------

def default_output_variables(md) -> list[str]:
    """Every variable of causality output or local that FMPy can record, continuous and
    discrete alike (states, outputs, derivatives, modes, counters, Booleans), in the model's
    order; all non-parameter variables when there is none."""
    chosen = [v.name for v in md.modelVariables
              if v.causality in ("output", "local") and v.type in RECORDABLE]
    if not chosen:
        chosen = [v.name for v in md.modelVariables
                  if v.causality not in ("parameter", "calculatedParameter", "independent")
                  and v.type in RECORDABLE]
    return chosen


def outputs_and_states(md) -> list[str]:
    """Outputs and continuous states in the model's order (all recordable non-parameter
    variables when there is none): the variables compare and sweep look at by default."""
    states = {d.variable.derivative.name for d in md.derivatives if d.variable.derivative}
    chosen = [v.name for v in md.modelVariables
              if v.causality == "output" or v.name in states]
    if not chosen:
        chosen = [v.name for v in md.modelVariables
                  if v.causality not in ("parameter", "calculatedParameter", "independent")
                  and v.type in RECORDABLE and not v.name.startswith("der(")]
    return chosen


def preferred_fmi_type(md, label: str, fmi_type: str | None = None) -> str:
    """``fmi_type`` checked against what the FMU declares; by default Model Exchange when the
    FMU has it (events are recorded there), else Co-Simulation. (FMPy prefers Co-Simulation.)"""
    if fmi_type is not None:
        if fmi_type not in FMI_TYPES:
            raise InputError(f"--fmi-type must be ModelExchange or CoSimulation, got "
                             f"'{fmi_type}'")
        declared = md.modelExchange if fmi_type == "ModelExchange" else md.coSimulation
        if declared is None:
            raise InputError(f"{label}: the FMU has no {fmi_type} interface")
        return fmi_type
    if md.modelExchange is not None:
        return "ModelExchange"
    if md.coSimulation is not None:
        return "CoSimulation"
    raise InputError(f"{label}: the FMU declares neither ModelExchange nor CoSimulation")


def settable_names(md) -> dict[str, str]:
    """Variables a run may set before initialization: parameters, inputs, and variables with
    an exact or approximate start value (name -> type)."""
    out = {}
    for v in md.modelVariables:
        if v.variability == "constant" or v.type not in ("Real", "Integer", "Boolean",
                                                          "Enumeration", "String"):
            continue
        if v.causality in ("parameter", "input") or (
                v.start is not None and v.initial in ("exact", "approx")):
            out[v.name] = v.type
    return out


def closest_name(name: str, candidates) -> str | None:
    """The candidate a misspelt ``name`` most likely means: one equal up to case, else the
    closest by difflib's ratio (at least 0.5); None when nothing is close."""
    import difflib
    folded = [c for c in sorted(candidates) if c.lower() == name.lower()]
    if folded:
        return folded[0]
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.5)
    return close[0] if close else None


def check_parameters(fmu_label: str, md, names: Sequence[str]) -> None:
    """Refuse, before any run, a name the FMU does not have or cannot set."""
    settable = settable_names(md)
    all_names = {v.name for v in md.modelVariables}
    for n in names:
        if n in settable:
            continue
        if n in all_names:
            raise InputError(f"{fmu_label}: '{n}' cannot be set before a run (not a parameter, "
                             "input or variable with a start value)")
        close = closest_name(n, settable)
        hint = f" (did you mean '{close}'?)" if close else ""
        listed = ", ".join(sorted(settable)[:20])
        raise InputError(f"{fmu_label}: no parameter '{n}'{hint}; parameters: {listed}")


def check_output_variables(fmu_label: str, md, names: Sequence[str]) -> None:
    """Refuse a variable to record that the FMU does not have (with the closest name) or
    that FMPy cannot record (a String)."""
    types = {v.name: v.type for v in md.modelVariables}
    for n in names:
        if n not in types:
            close = closest_name(n, types)
            hint = f" (did you mean '{close}'?)" if close else ""
            raise InputError(f"{fmu_label}: no variable '{n}' to record{hint}")
        if types[n] not in RECORDABLE:
            raise InputError(f"{fmu_label}: '{n}' is a {types[n]}, which cannot be recorded")


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def typed_value(fmu_label: str, name: str, kind: str, value: Any) -> float | int | bool | str:
    """``value`` (a number, a Boolean, or text from the command line) as the FMI type
    ``kind`` of variable ``name``; `InputError` when it is not one. Integers and Booleans
    given as floats are rounded (a sweep's grid gives floats)."""
    def bad() -> InputError:
        return InputError(f"{fmu_label}: start value of '{name}' ({kind}): cannot use "
                          f"{value!r}")
    if kind == "String":
        return str(value)
    if isinstance(value, str):
        text = value.strip()
        if kind == "Boolean":
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise bad()
        try:
            number = float(text)
        except ValueError:
            raise bad() from None
    else:
        try:
            number = float(value)       # bool, int, float and numpy's scalars
        except (TypeError, ValueError):
            raise bad() from None
    if not math.isfinite(number):
        raise bad()
    if kind == "Boolean":
        return bool(round(number))
    if kind in ("Integer", "Enumeration"):
        if abs(number) >= 2 ** 31:
            raise bad()
        return int(round(number))
    return number


def typed_start_values(fmu_label: str, md, values: Mapping[str, Any]) -> dict:
    """``values`` checked (`check_parameters`) and converted to each variable's FMI type."""
    check_parameters(fmu_label, md, list(values))
    types = settable_names(md)
    return {k: typed_value(fmu_label, k, types[k], v) for k, v in values.items()}


def _number(option: str, value: float | None, positive: bool = True) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{option} must be a number, got {value!r}") from None
    if not math.isfinite(v) or (positive and v <= 0):
        raise InputError(f"{option} must be a {'positive' if positive else 'finite'} number, "
                         f"got {value}")
    return v


def event_times(time_column: np.ndarray) -> tuple[float, ...]:
    """The times that appear on more than one row of a result (the recorded events)."""
    import numpy as np
    t = np.asarray(time_column, dtype=float)
    if len(t) < 2:
        return ()
    repeated = np.flatnonzero(t[1:] == t[:-1])
    return tuple(float(x) for x in np.unique(t[repeated]))


def event_spans(time_column: Any) -> list[tuple[float, int, int]]:
    """The events of a result as ``(time, first row, last row)``: each time that appears on
    more than one row, its first row the left limit and its last row the value after the
    event (FMPy's convention)."""
    t = time_column
    out = []
    k = 0
    while k < len(t) - 1:
        if t[k + 1] == t[k]:
            j = k + 1
            while j + 1 < len(t) and t[j + 1] == t[k]:
                j += 1
            out.append((float(t[k]), k, j))
            k = j + 1
        else:
            k += 1
    return out


# ---------------------------------------------------------------------------------------------
# The child process
# ---------------------------------------------------------------------------------------------

def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _Child:
    """One child process (`mdae_fmu.fmu_child`) with the threads that read its replies and
    keep the tail of what it prints."""

    def __init__(self) -> None:
        from importlib.util import find_spec
        child = Path(__file__).with_name("fmu_child.py")
        env = dict(os.environ)
        spec = find_spec("fmpy")            # where this process finds FMPy (not imported)
        if spec is not None and spec.origin:
            site = str(Path(spec.origin).resolve().parents[1])
            env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH"))
                                                if p)
        read_fd, write_fd = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(child), str(write_fd), str(os.getpid())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(write_fd,), start_new_session=True, env=env)
        finally:
            os.close(write_fd)
        self.replies: queue.Queue = queue.Queue()
        self.output: deque[bytes] = deque()
        self.ready = False
        self._control = os.fdopen(read_fd, "rb")
        threading.Thread(target=self._read_replies, daemon=True).start()
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._keep_tail, args=(stream,), daemon=True).start()

    def _read_replies(self) -> None:
        for line in self._control:
            try:
                message = json.loads(line)
            except ValueError:           # not ours: something the FMU wrote on that pipe
                continue
            if isinstance(message, dict):
                self.replies.put(message)
        self.replies.put(None)           # end of file: the child has gone

    def _keep_tail(self, stream) -> None:
        while True:
            chunk = stream.read1(OUTPUT_KEPT) if hasattr(stream, "read1") else stream.read(
                OUTPUT_KEPT)
            if not chunk:
                return
            self.output.append(chunk)
            while sum(len(c) for c in self.output) > OUTPUT_KEPT and len(self.output) > 1:
                self.output.popleft()

    def printed(self) -> list[str]:
        """The last lines the child (the FMU) printed on stdout or stderr."""
        text = b"".join(list(self.output)).decode("utf-8", "replace")
        return [ln.rstrip() for ln in text.splitlines() if ln.strip()][-LOG_QUOTED:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, request: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def kill(self) -> None:
        """SIGKILL the child and whatever it started (its own process group), and reap it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


_local = threading.local()
_children: list[_Child] = []
_children_lock = threading.Lock()


def _child() -> _Child:
    """This thread's child process, started when there is none or the last one has gone."""
    child = getattr(_local, "child", None)
    if child is None or not child.alive():
        if child is not None:
            _forget(child)
        child = _Child()
        _local.child = child
        with _children_lock:
            gone = [c for c in _children if not c.alive()]    # e.g. their thread ended
            _children[:] = [c for c in _children if c not in gone] + [child]
        for c in gone:
            c.kill()                                          # reaps it, closes its pipes
    return child


def _forget(child: _Child) -> None:
    child.kill()
    if getattr(_local, "child", None) is child:
        _local.child = None
    with _children_lock:
        if child in _children:
            _children.remove(child)


@atexit.register
def close_children() -> None:
    """End every child process this process started (at exit, or to free them). An idle
    child holds nothing that needs a clean exit (the folders are this process's): it is
    killed, which costs no wait."""
    with _children_lock:
        children = list(_children)
        _children.clear()
    for child in children:
        child.kill()
    _local.child = None


def warm_up() -> None:
    """Start this thread's child process now (its start-up, importing FMPy, then overlaps
    with what the caller does next, such as exporting a model)."""
    _child()


def _verdict_of_exit(returncode: int) -> str:
    if returncode < 0:
        return (f"the FMU crashed the simulation process ({_signal_name(-returncode)}, "
                f"signal {-returncode})")
    return (f"the FMU ended the simulation process with exit status {returncode} (an FMU "
            "must return an error status, never exit)")


def _wait(child: _Child, rid: int, timeout: float | None, label: str,
          log: deque[str]) -> dict:
    """The ``done`` reply of request ``rid``, keeping its log lines in ``log``; raises
    `SimulationFailed` when the child exits before it or ``timeout`` passes first."""
    started_at: float | None = None
    startup_deadline = time.monotonic() + STARTUP_GRACE + (timeout or 0.0)
    while True:
        now = time.monotonic()
        if started_at is None:
            limit = startup_deadline
        else:
            limit = started_at + timeout if timeout is not None else math.inf
        if now >= limit:
            child.kill()
            if started_at is None:
                raise SimulationFailed(label, f"the simulation process did not start within "
                                       f"{STARTUP_GRACE + (timeout or 0):g} s", log)
            raise SimulationFailed(label, f"no result within the timeout of {timeout:g} s: "
                                   "the simulation was stopped (a run that hangs, or needs a "
                                   "longer --timeout)", list(log) + child.printed())
        try:
            message = child.replies.get(timeout=min(0.5, max(limit - now, 0.001)))
        except queue.Empty:
            continue
        if message is None:             # the reply channel closed: the child has gone
            try:
                child.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:   # or the FMU closed it and runs on
                raise SimulationFailed(label, "the FMU closed the simulation process's reply "
                                       "channel; the process was stopped", log) from None
            raise SimulationFailed(label, _verdict_of_exit(child.proc.returncode),
                                   list(log) + child.printed())
        if "fatal" in message:
            raise SimulationFailed(label, str(message["fatal"]))
        if message.get("ready"):
            child.ready = True
            continue
        if message.get("id") != rid:
            continue
        if message.get("started"):
            started_at = time.monotonic()
        elif "log" in message:
            log.append(f"[{message.get('status', '')}] {message.get('log', '')}".rstrip())
        elif message.get("done"):
            return message


def _run(fmu: OpenedFmu, label: str, options: dict, signals: np.ndarray | None,
         timeout: float | None) -> tuple[np.ndarray, tuple[str, ...], float]:
    """One request to this thread's child: (result array, log lines, simulation seconds)."""
    import numpy as np
    rid = getattr(_local, "next_id", 0) + 1
    _local.next_id = rid
    log: deque[str] = deque(maxlen=LOG_KEPT)
    with temporary_folder("mdae_run_") as work:
        request = {"id": rid, "directory": str(fmu.directory), "work": str(work),
                   "options": options, "input": None}
        if signals is not None:
            request["input"] = str(work / "input.npy")
            np.save(work / "input.npy", signals, allow_pickle=False)
        child = _child()
        child.output.clear()
        try:
            try:
                child.send(request)
            except (BrokenPipeError, OSError):      # it died while idle: once more, anew
                _forget(child)
                child = _child()
                child.send(request)
            done = _wait(child, rid, timeout, label, log)
        except BaseException:
            # a failure, a timeout, SIGINT/SIGTERM (the command line's exceptions): the child
            # may be running the FMU still; it goes, and the next run starts another
            _forget(child)
            raise
        if done.get("error") is not None:
            raise SimulationFailed(label, str(done["error"]), log)
        result = np.load(work / "result.npy", allow_pickle=False)
    return result, tuple(log), float(done.get("seconds", math.nan))


def _as_input(signals: Any, label: str) -> np.ndarray | None:
    """FMPy's input table as a plain structured array (``time`` first)."""
    if signals is None:
        return None
    import numpy as np
    arr = np.asarray(signals)
    if arr.dtype.names is None or arr.dtype.names[0] != "time" or arr.dtype.hasobject:
        raise InputError(f"{label}: input must be a structured array with a 'time' field "
                         "first and numeric fields (FMPy's input table)")
    return arr


def run_fmu(fmu: str | os.PathLike[str] | OpenedFmu, *,
            start_values: Mapping[str, Any] | None = None,
            output_variables: Sequence[str] | None = None,
            relative_tolerance: float | None = None,
            start_time: float | None = None,
            stop_time: float | None = None,
            output_interval: float | None = None,
            fmi_type: str | None = None,
            timeout: float | None = None,
            input: Any = None,
            record_events: bool = True,
            solver: str = "CVode",
            step_size: float | None = None,
            debug_logging: bool = False,
            validate: bool = True,
            label: str | None = None,
            limits: ArchiveLimits = DEFAULT_LIMITS) -> RunResult:
    """Simulate ``fmu`` (an .fmu path, or an FMU already opened by
    `mdae_fmu.fmu_archive.open_fmu`) in the child process and return a `RunResult`.

    The keywords are ``fmpy.simulate_fmu``'s, with its defaults (None: the FMU's
    DefaultExperiment, else FMPy's choice), except: ``output_variables`` (FMPy's ``output``)
    defaults to `default_output_variables`; ``fmi_type`` to Model Exchange when the FMU has it
    (`preferred_fmi_type`); ``timeout`` (seconds, None: none) stops the run and raises
    `SimulationFailed`, where FMPy would return the part simulated so far. Start values are
    checked against the FMU and converted to each variable's type first. ``validate=False``
    (FMPy's ``validate``): an FMU whose model description fails FMPy's validation runs anyway
    (`mdae_fmu.fmu_archive.describe`; the problems are the opened FMU's ``problems``).

    Raises `InputError` (exit 2) for an unreadable FMU or a bad option, `SimulationFailed`
    (exit 1) when the simulation fails, crashes, exits or exceeds ``timeout``."""
    if not isinstance(fmu, OpenedFmu):
        with open_fmu(fmu, limits, label, validate=validate) as opened:
            return run_fmu(opened, start_values=start_values,
                           output_variables=output_variables,
                           relative_tolerance=relative_tolerance, start_time=start_time,
                           stop_time=stop_time, output_interval=output_interval,
                           fmi_type=fmi_type, timeout=timeout, input=input,
                           record_events=record_events, solver=solver, step_size=step_size,
                           debug_logging=debug_logging, validate=validate, label=label)
    t0 = time.perf_counter()
    label = label or str(fmu.path)
    md = fmu.model_description
    kind = preferred_fmi_type(md, label, fmi_type)
    start = _number("--start-time", start_time, positive=False)
    stop = _number("--stop-time", stop_time, positive=False)
    first = start if start is not None else float(getattr(md.defaultExperiment, "startTime",
                                                          None) or 0.0)
    if stop is not None and not stop > first:
        raise InputError(f"--stop-time ({stop:g}) must be after the start time ({first:g})")
    outputs = list(output_variables) if output_variables is not None \
        else default_output_variables(md)
    check_output_variables(label, md, outputs)
    if solver not in ("CVode", "Euler"):
        raise InputError(f"solver must be CVode or Euler, got '{solver}'")
    options = {
        "fmi_type": kind, "start_time": start, "stop_time": stop,
        "relative_tolerance": _number("--relative-tolerance", relative_tolerance),
        "output_interval": _number("--output-interval", output_interval),
        "step_size": _number("step_size", step_size),
        "start_values": typed_start_values(label, md, start_values or {}),
        "output": outputs, "record_events": bool(record_events), "solver": solver,
        "debug_logging": bool(debug_logging), "validate": bool(validate),
    }
    timeout = _number("--timeout", timeout)
    result, log, seconds = _run(fmu, label, options, _as_input(input, label), timeout)
    return RunResult(fmu=label, model_name=md.modelName, fmi_type=kind, result=result,
                     events=event_times(result["time"]), log=log, seconds=seconds,
                     wall_seconds=time.perf_counter() - t0)


def run_many(fmu: OpenedFmu, runs: Sequence[Mapping[str, Any]],
             label: str | None = None) -> Iterator[RunResult | SimulationFailed]:
    """`run_fmu` for each keyword set of ``runs`` on one opened FMU, in order, yielding the
    `RunResult` or, for a run that fails, its `SimulationFailed` (the other runs go on; an
    `InputError` of a bad option still raises)."""
    for kwargs in runs:
        try:
            yield run_fmu(fmu, label=label, **kwargs)
        except SimulationFailed as err:
            yield err


__all__ = ["run_fmu", "run_many", "RunResult", "SimulationFailed", "warm_up", "fmu_of",
           "check_run_options", "MODEL_SUFFIXES",
           "close_children", "default_output_variables", "outputs_and_states",
           "preferred_fmi_type", "settable_names", "closest_name", "check_parameters",
           "check_output_variables", "typed_start_values", "typed_value", "event_times",
           "event_spans",
           "FMI_TYPES", "open_fmu", "OpenedFmu"]
