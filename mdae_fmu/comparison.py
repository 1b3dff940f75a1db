"""``mdae-fmu compare``: a simulation result against a reference, signal by signal, in a tube.

TEST and REFERENCE are each a model file (exported, then simulated), an FMI 2.0 FMU (ours or
any tool's; simulated with FMPy, Model Exchange preferred) or a CSV in the FMI cross-check
format (``time,var1,...``; two rows with the same time at an event: left limit, then the
value after the restart). Each compared variable must stay inside a *tube* around the
reference (docs/regression.md):

* vertical width ``tol = atol + rtol * max|y_ref|`` (one number per signal: a relative
  tolerance that does not blow up where the signal crosses zero);
* horizontal width ``time_tolerance``: a test sample at time t may lie anywhere between the
  smallest and the largest reference value over ``[t - tau, t + tau]`` (the reference's own
  samples in that window and its linear interpolation at the window's ends), widened by tol.
  At an event the window holds both the left limit and the value after the restart, so an
  event located a little earlier or later on one side is no failure, while a wrong restart
  (a value that is neither the left nor the right limit) is.
* **step signals** (a variable declared discrete, Integer, Boolean or Enumeration by an FMU
  side, or a reference signal that changes only at events, i.e. across two rows with one
  time) are not interpolated: between two samples the reference holds a value, and where it
  changes between two samples of different times (a result sampled without its event rows,
  such as a Co-Simulation result or the Reference-FMUs' CSVs) the step lies somewhere in
  between, so both values are possible there. A test sample must be within tol of one of the
  values the reference takes in its window (`step_tube`): a ramp between two levels fails.

``method="fmpy"`` delegates the tube to ``fmpy.util.validate_signal`` (the FMI cross-check's
criterion: reference resampled on 1000 points, a band ``dx`` samples wide and ``dy`` times the
signal's range high); docs/cli.md says where the two differ.

Exit codes of the command: 0 every variable stays in its tube, 1 some variable leaves it (or
a model/FMU fails to simulate), 2 an input cannot be read (unreadable CSV, unknown variable).
"""

from __future__ import annotations

import math
import sys
import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from . import run_options
from .diagnostics import EXIT_OK, EXIT_REJECTED, InputError, MdaeError, SourceLoc
from .fmu_archive import OpenedFmu, open_fmu, temporary_folder
from .fmu_runner import (FMI_TYPES, MODEL_SUFFIXES, check_parameters, closest_name,
                         event_spans, fmu_of, outputs_and_states, preferred_fmi_type, run_fmu)

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-6
#: default horizontal tube half-width, as a fraction of the compared time span
DEFAULT_TIME_TOLERANCE_FRACTION = 1e-3
MAX_LISTED = 10          # events listed per side in the text report


# ---------------------------------------------------------------------------------------------
# Results as plain data
# ---------------------------------------------------------------------------------------------

@dataclass
class Trajectory:
    """One side of a comparison: sample times (non-decreasing, a repeated time is an event:
    left limit first), values per variable, and which variables are discrete (modes)."""
    label: str
    time: np.ndarray
    values: dict[str, np.ndarray]
    discrete: frozenset[str] = frozenset()

    def changes_only_at_events(self, name: str) -> bool:
        """Whether ``name`` is constant between events: every change of its value is across
        rows with one time (a step signal with its left-limit rows)."""
        y = self.values[name]
        if len(y) < 2:
            return True
        same_time = self.time[1:] == self.time[:-1]
        return bool(np.all((y[1:] == y[:-1]) | same_time))

    def events(self) -> list["Event"]:
        """Every time that appears on more than one row, with the variables whose value
        differs between its first (left limit) and last row (after the event)."""
        out = []
        for time, i, j in event_spans(self.time):
            changes = []
            for name in sorted(self.values, key=lambda n: (n not in self.discrete, n)):
                a, b = float(self.values[name][i]), float(self.values[name][j])
                if a != b and not (math.isnan(a) and math.isnan(b)):
                    changes.append((name, a, b))
            out.append(Event(time=time, changes=tuple(changes),
                             mode_change=tuple(c[0] for c in changes if c[0] in self.discrete)))
        return out


@dataclass(frozen=True)
class Event:
    """An event of one side: its time, the variables that change across it (name, left,
    right), and among them the discrete ones (the mode change)."""
    time: float
    changes: tuple
    mode_change: tuple

    def describe(self, limit: int = 6) -> str:
        parts = [f"{n}: {_fmt(a)} -> {_fmt(b)}" for n, a, b in self.changes[:limit]]
        if len(self.changes) > limit:
            parts.append(f"{len(self.changes) - limit} more")
        return f"t = {self.time:.10g}" + (f" ({', '.join(parts)})" if parts else "")


@dataclass
class SignalResult:
    """The verdict on one variable, with the data a plot needs: the test samples, the tube at
    each test sample (lower, upper), the reference samples."""
    name: str
    passed: bool
    tolerance: float
    max_excursion: float          # largest distance outside the tube (0 when inside)
    at_time: float                # where it happens (nan when inside)
    test_value: float
    tube: tuple[float, float]
    first_exit: float             # first time the test leaves the tube (nan when inside)
    outside: int                  # number of test samples outside the tube
    t: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    lower: np.ndarray = field(repr=False)
    upper: np.ndarray = field(repr=False)
    t_ref: np.ndarray = field(repr=False)
    y_ref: np.ndarray = field(repr=False)
    note: str = ""
    step: bool = False            # compared as a step signal (`step_tube`)
    unit: str = ""                # the unit an FMU side declares ("" when none does)

    def describe(self) -> str:
        if self.passed:
            kind = ", a step signal" if self.step else ""
            return f"{self.name}: inside the tube (tolerance {self.tolerance:.3g}{kind})"
        if self.note:
            return f"{self.name}: {self.note}"
        lo, hi = self.tube
        return (f"{self.name}: leaves the tube at t = {self.first_exit:.10g}; largest "
                f"excursion {self.max_excursion:.4g} ({self.max_excursion / self.tolerance:.3g}"
                f" x tolerance {self.tolerance:.3g}) at t = {self.at_time:.10g}: test "
                f"{_fmt(self.test_value)}, tube [{_fmt(lo)}, {_fmt(hi)}]; "
                f"{self.outside} sample(s) outside")


@dataclass
class Comparison:
    """The result of `compare`: one `SignalResult` per variable and the events of each side."""
    test: str
    reference: str
    signals: list[SignalResult]
    test_events: list[Event]
    reference_events: list[Event]
    rtol: float
    atol: float
    time_tolerance: float
    method: str = "tube"
    skipped: list[str] = field(default_factory=list)
    #: the interface each simulated side ran ("" for a CSV side)
    test_fmi_type: str = ""
    reference_fmi_type: str = ""
    #: problems of FMU descriptions read with ``validate=False`` (printed as warnings)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.signals)

    @property
    def failed(self) -> list[SignalResult]:
        return [s for s in self.signals if not s.passed]

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed else EXIT_REJECTED

    def paired_events(self) -> list[tuple[Event | None, Event | None]]:
        """The events of both sides in time order, each test event paired with the reference
        event at most the time tolerance away (in order: a merge of the two sorted lists), as
        ``(test event, reference event)``; an event without a partner has None on the other
        side."""
        tests = sorted(self.test_events, key=lambda e: e.time)
        refs = sorted(self.reference_events, key=lambda e: e.time)
        out: list[tuple[Event | None, Event | None]] = []
        i = j = 0
        while i < len(tests) or j < len(refs):
            if i < len(tests) and j < len(refs) \
                    and abs(tests[i].time - refs[j].time) <= self.time_tolerance:
                out.append((tests[i], refs[j]))
                i, j = i + 1, j + 1
            elif j >= len(refs) or (i < len(tests) and tests[i].time < refs[j].time):
                out.append((tests[i], None))
                i += 1
            else:
                out.append((None, refs[j]))
                j += 1
        return out

    def unmatched_events(self) -> list[tuple[str, float]]:
        """Events of one side with no event of the other side within the time tolerance."""
        pairs = self.paired_events()
        return ([("test", t.time) for t, r in pairs if r is None and t is not None]
                + [("reference", r.time) for t, r in pairs if t is None and r is not None])

    def render_text(self) -> str:
        sides = ", ".join(f"{label} {kind}" for label, kind in
                          (("test", self.test_fmi_type), ("reference", self.reference_fmi_type))
                          if kind)
        lines = [f"compare {self.test} against {self.reference} "
                 f"(rtol {self.rtol:g}, atol {self.atol:g}, time tolerance "
                 f"{self.time_tolerance:g}, method {self.method}"
                 + (f"; {sides}" if sides else "") + ")"]
        for s in self.signals:
            lines.append(("  ok    " if s.passed else "  FAIL  ") + s.describe())
        lines.append(f"events: test {len(self.test_events)}, reference "
                     f"{len(self.reference_events)}")
        for label, evs in (("test", self.test_events), ("reference", self.reference_events)):
            for e in evs[:MAX_LISTED]:
                lines.append(f"  {label:9s} {e.describe()}")
            if len(evs) > MAX_LISTED:
                lines.append(f"  {label:9s} ... {len(evs) - MAX_LISTED} more")
        um = self.unmatched_events()
        for a, b in um[:MAX_LISTED]:
            lines.append(f"  unmatched {a} event at t = {b:.10g} (no event on the other side "
                         f"within {self.time_tolerance:g})")
        if len(um) > MAX_LISTED:
            lines.append(f"  ... {len(um) - MAX_LISTED} more unmatched events")
        if self.skipped:
            lines.append("not compared (reference columns the test does not have): "
                         + ", ".join(self.skipped))
        n = len(self.failed)
        lines.append("PASS: every variable inside its tube" if not n else
                     f"FAIL: {n} of {len(self.signals)} variable(s) leave the tube: "
                     + ", ".join(s.name for s in self.failed))
        return "\n".join(lines)


def _fmt(v: float) -> str:
    return f"{v:.10g}"


# ---------------------------------------------------------------------------------------------
# Reading a reference CSV (FMI cross-check format), strictly
# ---------------------------------------------------------------------------------------------

def _split_fields(line: str) -> list[tuple[str, int]]:
    """Comma-separated fields of a data line with their 1-based start columns."""
    out, col = [], 1
    for text in line.split(","):
        out.append((text, col))
        col += len(text) + 1
    return out


def read_reference_csv(path: str | Path) -> Trajectory:
    """Read a result CSV: header ``time,name,...`` (names may be double-quoted), one number
    per field, time never decreasing. Anything else is an `InputError` naming the line and
    column: a row with missing or extra columns, a field that is not a number, a NaN or an
    infinity, a time before the previous row's."""
    import csv as _csv
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file") from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError("empty file, expected a header 'time,var1,...'",
                         SourceLoc(str(path), 1, 1))
    header = [h.strip() for h in next(_csv.reader([lines[0]]))]
    if header[0] != "time":
        raise InputError(f"the first column must be 'time' (FMI cross-check format), "
                         f"found '{header[0]}'", SourceLoc(str(path), 1, 1), lines[0])
    seen = set()
    for k, h in enumerate(header):
        if not h or h in seen:
            raise InputError(f"column {k + 1}: {'empty' if not h else 'repeated'} name "
                             f"'{h}'", SourceLoc(str(path), 1, 1), lines[0])
        seen.add(h)
    rows = []
    prev_t = -math.inf
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = _split_fields(line)
        if len(fields) != len(header):
            what = "missing columns" if len(fields) < len(header) else "extra columns"
            raise InputError(f"{what}: {len(fields)} value(s), the header names "
                             f"{len(header)} column(s)",
                             SourceLoc(str(path), lineno, len(line) + 1), line)
        row = []
        for (raw, col), name in zip(fields, header):
            try:
                v = float(raw)
            except ValueError:
                raise InputError(f"'{raw.strip()}' is not a number (column {name})",
                                 SourceLoc(str(path), lineno, col), line) from None
            if not math.isfinite(v):
                raise InputError(f"{raw.strip()} in column {name}: a reference needs finite "
                                 "values", SourceLoc(str(path), lineno, col), line)
            row.append(v)
        if row[0] < prev_t:
            raise InputError(f"time {row[0]:.17g} is before the previous row's "
                             f"{prev_t:.17g}: time must not decrease",
                             SourceLoc(str(path), lineno, 1), line)
        prev_t = row[0]
        rows.append(row)
    if len(rows) < 2:
        raise InputError(f"{path}: a reference needs at least two rows, found {len(rows)}")
    data = np.array(rows, dtype=float)
    return Trajectory(label=str(path), time=data[:, 0].copy(),
                      values={h: data[:, k].copy() for k, h in enumerate(header) if k > 0})


# ---------------------------------------------------------------------------------------------
# Simulating a model or an FMU
# ---------------------------------------------------------------------------------------------

@dataclass
class Source:
    """A resolved side: a CSV trajectory, or an FMU (built from a model when needed), opened
    (`mdae_fmu.fmu_archive.open_fmu`) with its model description."""
    path: Path
    kind: str                     # "csv", "fmu", "model"
    trajectory: Trajectory | None = None
    fmu: Path | None = None
    md: Any = None                # fmpy's ModelDescription (fmpy has no type information)
    opened: OpenedFmu | None = None
    fmi_type: str | None = None   # the interface to simulate (None: Model Exchange preferred)
    validate: bool = True

    def names(self) -> list[str]:
        if self.trajectory is not None:
            return list(self.trajectory.values)
        return [v.name for v in self.md.modelVariables]

    def default_variables(self) -> list[str]:
        if self.trajectory is not None:
            return list(self.trajectory.values)
        return [n for n in outputs_and_states(self.md) if not n.startswith("impulse(")]

    def discrete(self) -> list[str]:
        if self.md is None:
            return []
        return [v.name for v in self.md.modelVariables
                if v.variability == "discrete" and v.causality != "parameter"
                and v.type in ("Integer", "Boolean", "Enumeration")]

    def steps(self) -> set[str]:
        """The variables the model description declares piecewise constant: of type Integer,
        Boolean or Enumeration, or a Real of variability other than continuous."""
        if self.md is None:
            return set()
        return {v.name for v in self.md.modelVariables
                if v.type != "Real" or v.variability != "continuous"}

    def units(self) -> dict[str, str]:
        """Each variable's unit, its own or its declared type's (variables without one left
        out)."""
        if self.md is None:
            return {}
        out = {}
        for v in self.md.modelVariables:
            unit = v.unit or getattr(v.declaredType, "unit", None)
            if unit:
                out[v.name] = str(unit)
        return out

    def problems(self) -> list[str]:
        """The validation problems of an FMU side read with ``validate=False``, as warnings
        naming the side."""
        if self.opened is None:
            return []
        return [f"{self.path}: modelDescription.xml: {p}" for p in self.opened.problems]


def resolve(path: str | Path, work_dir: Path, stop_time: float | None = None,
            quiet: bool = False, stack: ExitStack | None = None,
            fmi_type: str | None = None, validate: bool = True) -> Source:
    """Read a CSV, or open an FMU (a model exported into ``work_dir`` first, with the
    interface ``fmi_type`` asks for; ``quiet``: without the exporter's progress messages).
    The FMU stays extracted until ``stack`` closes (without a stack: only long enough to read
    its model description). ``fmi_type`` is checked against what the FMU declares;
    ``validate=False`` reads a description that fails FMPy's validation (its problems are
    `Source.problems`)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return Source(path=path, kind="csv", trajectory=read_reference_csv(path))
    if suffix not in MODEL_SUFFIXES + (".fmu",):
        raise InputError(f"{path}: expected a model (.mo, .bmo, .xml), an .fmu or a .csv "
                         "result")
    kind = "fmu" if suffix == ".fmu" else "model"
    if kind == "model":
        sub = work_dir / f"side{len(list(work_dir.iterdir()))}"
        sub.mkdir()
        fmu = fmu_of(path, sub, stop_time=stop_time, progress=False if quiet else None,
                     fmi_type=fmi_type)
    else:
        fmu = path
    with ExitStack() as own:
        opened = (stack or own).enter_context(open_fmu(fmu, label=str(path),
                                                       validate=validate))
        kind_run = preferred_fmi_type(opened.model_description, str(path), fmi_type)
        return Source(path=path, kind=kind, fmu=fmu, md=opened.model_description,
                      opened=opened if stack is not None else None, fmi_type=kind_run,
                      validate=validate)


def simulate_source(src: Source, variables: list[str], stop_time: float | None,
                    start_values: Mapping[str, Any] | None = None, input=None,
                    relative_tolerance: float | None = None,
                    timeout: float | None = None) -> Trajectory:
    """Simulate an FMU side (`mdae_fmu.fmu_runner.run_fmu`: a child process; the side's
    interface, Model Exchange by default, whose events are recorded: left and right rows at
    each event; a Co-Simulation result has rows at communication points only), recording
    ``variables`` and its discrete variables."""
    if src.trajectory is not None:
        return src.trajectory
    discrete = [n for n in src.discrete() if n not in variables]
    if isinstance(input, Trajectory):
        input = _input_table(src, input)
    target = src.opened if src.opened is not None else src.fmu
    if target is None:
        raise ValueError(f"{src.path}: a {src.kind} side has no FMU to simulate")
    result = run_fmu(target,
                     output_variables=list(variables) + discrete, stop_time=stop_time,
                     start_values=start_values or {}, input=input,
                     relative_tolerance=relative_tolerance, timeout=timeout,
                     fmi_type=src.fmi_type, validate=src.validate,
                     label=str(src.path)).result
    values = {n: np.asarray(result[n], dtype=float) for n in (result.dtype.names or ())[1:]}
    return Trajectory(
        label=str(src.path),
        time=np.asarray(result["time"], dtype=float),
        values=values,
        discrete=frozenset(src.discrete()),
    )


def _input_table(src: Source, signals: Trajectory):
    """FMPy's input table from an input CSV: one column per input of the FMU, typed as the
    FMU declares it (Boolean and Integer inputs are rounded)."""
    types = {v.name: v.type for v in src.md.modelVariables if v.causality == "input"}
    unknown = [n for n in signals.values if n not in types]
    if unknown:
        raise InputError(f"{signals.label}: '{unknown[0]}' is not an input of {src.path} "
                         f"(inputs: {', '.join(types) or 'none'})")
    dtype = [("time", float)] + [(n, {"Boolean": bool, "Integer": int}.get(types[n], float))
                                 for n in signals.values]
    rows = []
    for k, t in enumerate(signals.time):
        row = [float(t)]
        for n in signals.values:
            v = float(signals.values[n][k])
            row.append(bool(round(v)) if types[n] == "Boolean" else
                       int(round(v)) if types[n] == "Integer" else v)
        rows.append(tuple(row))
    return np.array(rows, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# The tube
# ---------------------------------------------------------------------------------------------

def _interp_at(tr: np.ndarray, yr: np.ndarray, a: float) -> float:
    """Linear interpolation of the reference at ``a`` (inside its span); at an event time the
    value after the event (the window's own samples already hold the left limit)."""
    i = int(np.searchsorted(tr, a, side="right"))
    if i <= 0:
        return float(yr[0])
    if i >= len(tr):
        return float(yr[-1])
    t0, t1 = tr[i - 1], tr[i]
    if t1 == t0:
        return float(yr[i])
    w = (a - t0) / (t1 - t0)
    return float(yr[i - 1] + w * (yr[i] - yr[i - 1]))


def tube(t: np.ndarray, tr: np.ndarray, yr: np.ndarray, tol: float,
         tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper tube bounds at the test times ``t`` (docs/regression.md, the tube):
    min and max of the reference over [t - tau, t + tau] (its samples in the window and its
    interpolation at both ends), widened by ``tol``."""
    lo = np.empty(len(t))
    hi = np.empty(len(t))
    t_first, t_last = tr[0], tr[-1]
    for k, tk in enumerate(t):
        a = max(tk - tau, t_first)
        b = min(tk + tau, t_last)
        if a > b:                       # outside the reference's span: no constraint
            lo[k], hi[k] = -np.inf, np.inf
            continue
        i0 = int(np.searchsorted(tr, a, side="left"))
        i1 = int(np.searchsorted(tr, b, side="right"))
        ends = (_interp_at(tr, yr, a), _interp_at(tr, yr, b))
        if i1 > i0:
            seg = yr[i0:i1]
            lo[k] = min(float(seg.min()), *ends)
            hi[k] = max(float(seg.max()), *ends)
        else:
            lo[k], hi[k] = min(ends), max(ends)
    return lo - tol, hi + tol


def step_tube(t: np.ndarray, y: np.ndarray, tr: np.ndarray, yr: np.ndarray, tol: float,
              tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper tube bounds at the test samples ``(t, y)`` for a step signal
    (docs/regression.md, step signals): the reference value nearest to ``y`` among the values
    it takes over ``[t - tau, t + tau]``, widened by ``tol``.

    A step signal holds its value between samples, so no value is interpolated. The values
    over the window are those of its samples inside it and, at each end of the window that
    falls strictly between two samples, both of those samples' values: where the value
    changes between two samples of different times, the reference does not say when (a
    result recorded with its events has the change across two rows with one time, and then
    both samples around a window end have the same value)."""
    n = len(tr)
    lo = np.empty(len(t))
    hi = np.empty(len(t))
    for k, tk in enumerate(t):
        a = max(tk - tau, tr[0])
        b = min(tk + tau, tr[-1])
        if a > b:                       # outside the reference's span: no constraint
            lo[k], hi[k] = -np.inf, np.inf
            continue
        i0 = int(np.searchsorted(tr, a, side="left"))      # first sample at or after a
        i1 = int(np.searchsorted(tr, b, side="right"))     # first sample after b
        first = i0 - 1 if i0 > 0 and tr[i0] > a else i0
        last = i1 if i1 < n and tr[i1 - 1] < b else i1 - 1
        levels = yr[first:last + 1]
        if math.isnan(y[k]):
            v = float(levels[0])
        else:
            v = float(levels[int(np.argmin(np.abs(levels - y[k])))])
        lo[k], hi[k] = v - tol, v + tol
    return lo, hi


def _fmpy_tube(t, y, tr, yr, rtol, tau, step=False):
    """The band of ``fmpy.util.validate_signal`` evaluated at the test times. A step signal
    with integral values is passed as integers: FMPy then resamples the reference with a
    zero-order hold instead of linearly."""
    from fmpy.util import validate_signal
    num = 1000
    span = float(tr[-1] - tr[0]) or 1.0
    dx = max(1, int(round(2 * tau / span * (num - 1))) + 1)
    if step and np.all(np.isfinite(y)) and np.all(y == np.round(y)) \
            and np.all(yr == np.round(yr)):
        y, yr = y.astype(np.int64), yr.astype(np.int64)
    t_band, y_min, y_max, _ = validate_signal(t=t, y=y, t_ref=tr.copy(), y_ref=yr,
                                              num=num, dx=dx, dy=rtol)
    lo = np.interp(t, t_band, y_min)
    hi = np.interp(t, t_band, y_max)
    outside_span = (t <= t_band[0]) | (t >= t_band[-1])
    lo[outside_span], hi[outside_span] = -np.inf, np.inf
    return lo, hi


def compare_signal(name: str, t: np.ndarray, y: np.ndarray, tr: np.ndarray, yr: np.ndarray,
                   rtol: float, atol: float, tau: float, method: str = "tube",
                   step: bool = False, unit: str = "") -> SignalResult:
    """The verdict on one variable: every test sample inside the tube (`tube`, or
    `step_tube` for a ``step`` signal), and the test covering the reference's time span (up
    to tau). ``unit`` is carried to the reports."""
    scale = float(np.max(np.abs(yr))) if len(yr) else 0.0
    tol = atol + rtol * scale
    if method == "fmpy":
        lo, hi = _fmpy_tube(t, y, tr, yr, rtol, tau, step)
        tol = max(tol, 1e-300)
    elif step:
        lo, hi = step_tube(t, y, tr, yr, tol, tau)
    else:
        lo, hi = tube(t, tr, yr, tol, tau)
    below = np.where(y < lo, lo - y, 0.0)
    above = np.where(y > hi, y - hi, 0.0)
    exc = np.maximum(below, above)
    exc[np.isnan(y)] = np.inf
    outside = exc > 0
    common = dict(name=name, tolerance=tol, t=t, y=y, lower=lo, upper=hi, t_ref=tr, y_ref=yr,
                  step=step, unit=unit)
    if len(t) and t[-1] < tr[-1] - tau:
        return SignalResult(passed=False, max_excursion=math.inf, at_time=float(t[-1]),
                            test_value=float(y[-1]), tube=(math.nan, math.nan),
                            first_exit=float(t[-1]), outside=int(outside.sum()),
                            note=f"the test stops at t = {t[-1]:.10g}, before the reference's "
                            f"end t = {tr[-1]:.10g}", **common)
    if not outside.any():
        return SignalResult(passed=True, max_excursion=0.0, at_time=math.nan,
                            test_value=math.nan, tube=(math.nan, math.nan),
                            first_exit=math.nan, outside=0, **common)
    k = int(np.argmax(exc))
    first = int(np.argmax(outside))
    return SignalResult(passed=False, max_excursion=float(exc[k]), at_time=float(t[k]),
                        test_value=float(y[k]), tube=(float(lo[k]), float(hi[k])),
                        first_exit=float(t[first]), outside=int(outside.sum()), **common)


# ---------------------------------------------------------------------------------------------
# The whole comparison
# ---------------------------------------------------------------------------------------------

def _number(name: str, v: object, allow_zero: bool = True) -> float | None:
    """``v`` as a float, or `InputError` when it is not a finite non-negative (positive)
    number; None stays None."""
    if v is None:
        return None
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(v, bool) or not (math.isfinite(x) and (x >= 0 if allow_zero else x > 0)):
        raise InputError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} "
                         f"number, got {v!r}")
    return x


def check_reference_span(traj: Trajectory, label: str) -> None:
    """Refuse a degenerate reference: one whose rows do not span any time (all at one
    time, e.g. every row at t = 0), which every test would pass."""
    t = traj.time
    if len(t) == 0 or not t[-1] > t[0]:
        at = f"t = {t[0]:.10g}" if len(t) else "no time"
        raise InputError(f"{label}: the reference has no time span: its {len(t)} row(s) are "
                         f"all at {at}; a comparison needs a reference over at least two "
                         "distinct times")


def compare(test: str | Path, reference: str | Path, *,
            variables: Sequence[str] | None = None,
            rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
            time_tolerance: float | None = None, method: str = "tube",
            stop_time: float | None = None,
            start_values: Mapping[str, Any] | None = None,
            input: Any = None,
            relative_tolerance: float | None = None,
            fmi_type: str | None = None,
            reference_fmi_type: str | None = None,
            validate: bool = True,
            timeout: float | None = None,
            quiet: bool = False,
            solver_tolerance: float | None = None) -> Comparison:
    """Compare TEST against REFERENCE (each a model file, an FMU or a CSV) and return a
    `Comparison` (plain data; ``.passed``, ``.signals``, ``.render_text()``). Raises
    `InputError` (exit 2) for unreadable inputs, a degenerate reference (no time span) or
    unknown variables and `mdae_fmu.SimulationFailed` (exit 1) when a side fails to simulate
    (an FMU runs in a child process, `mdae_fmu.fmu_runner`).

    The tube: ``rtol``, ``atol`` (its height: ``atol + rtol * max|reference|``),
    ``time_tolerance`` (its half-width in time, default 1e-3 of the reference's span),
    ``method`` ("tube", or "fmpy" for ``fmpy.util.validate_signal``'s band); ``variables``:
    the names to compare (default: the reference CSV's columns, or the reference FMU's
    outputs and states, that the test has).

    The simulated sides, with ``fmpy.simulate_fmu``'s keywords: ``stop_time`` (default: the
    reference CSV's end, or the reference FMU's DefaultExperiment), ``start_values`` (both
    sides), ``input`` (FMPy's input table or an input CSV, both sides),
    ``relative_tolerance``, ``timeout`` (seconds per side), ``validate`` (False: FMUs whose
    model description fails FMPy's validation run anyway, the problems in
    ``Comparison.warnings``). ``fmi_type``: the test's interface, "ModelExchange" or
    "CoSimulation" (default Model Exchange when the FMU has it; a model file is exported
    with that interface); ``reference_fmi_type``: the reference's. ``quiet``: no export
    progress messages. ``solver_tolerance``: the former name of ``relative_tolerance``
    (deprecated)."""
    if solver_tolerance is not None:
        warnings.warn("compare(solver_tolerance=...) is deprecated, use relative_tolerance",
                      DeprecationWarning, stacklevel=2)
        if relative_tolerance is not None:
            raise InputError("give relative_tolerance only (solver_tolerance is its former, "
                             "deprecated name)")
        relative_tolerance = solver_tolerance
    rtol = _number("--rtol", rtol) or 0.0
    atol = _number("--atol", atol) or 0.0
    time_tolerance = _number("--time-tolerance", time_tolerance)
    stop_time = _number("--stop-time", stop_time, allow_zero=False)
    relative_tolerance = _number("--relative-tolerance", relative_tolerance, allow_zero=False)
    timeout = _number("--timeout", timeout, allow_zero=False)
    if method not in ("tube", "fmpy"):
        raise InputError(f"unknown comparison method {method!r} (tube or fmpy)")
    for option, kind in (("--fmi-type", fmi_type), ("--reference-fmi-type", reference_fmi_type)):
        if kind is not None and kind not in FMI_TYPES:
            raise InputError(f"{option} must be ModelExchange or CoSimulation, got {kind!r}")
    if variables is not None and (isinstance(variables, str) or not all(
            isinstance(v, str) for v in variables)):
        raise InputError(f"variables must be a list of names, got {variables!r}")
    if isinstance(input, (str, Path)):
        input = read_reference_csv(input)
    with temporary_folder("mdae_compare_") as tmp, ExitStack() as stack:
        ref = resolve(reference, tmp, stop_time, quiet, stack, reference_fmi_type, validate)
        if ref.trajectory is not None:
            check_reference_span(ref.trajectory, str(reference))
            if stop_time is None:
                stop_time = float(ref.trajectory.time[-1])
        tst = resolve(test, tmp, stop_time, quiet, stack, fmi_type, validate)
        if stop_time is None and tst.trajectory is not None:
            stop_time = float(tst.trajectory.time[-1])
        names = _choose_variables(tst, ref, list(variables) if variables else None)
        if start_values:
            for side in (ref, tst):
                if side.md is not None:
                    check_parameters(str(side.path), side.md, list(start_values))
        ref_traj = simulate_source(ref, names, stop_time, start_values, input,
                                   relative_tolerance, timeout)
        check_reference_span(ref_traj, str(reference))
        if stop_time is None:
            stop_time = float(ref_traj.time[-1])
        tst_traj = simulate_source(tst, names, stop_time, start_values, input,
                                   relative_tolerance, timeout)
    span = float(ref_traj.time[-1] - ref_traj.time[0])
    tau = (DEFAULT_TIME_TOLERANCE_FRACTION * span if time_tolerance is None
           else float(time_tolerance))
    steps = ref.steps() | tst.steps()
    units = {**tst.units(), **ref.units()}
    signals = [compare_signal(n, tst_traj.time, tst_traj.values[n], ref_traj.time,
                              ref_traj.values[n], rtol, atol, tau, method,
                              step=n in steps or ref_traj.changes_only_at_events(n),
                              unit=units.get(n, "")) for n in names]
    skipped = [] if variables else [n for n in ref.default_variables() if n not in names]
    return Comparison(
        test=str(test),
        reference=str(reference),
        signals=signals,
        test_events=tst_traj.events(),
        reference_events=ref_traj.events(),
        rtol=rtol,
        atol=atol,
        time_tolerance=tau,
        method=method,
        skipped=skipped,
        test_fmi_type=tst.fmi_type or "",
        reference_fmi_type=ref.fmi_type or "",
        warnings=ref.problems() + tst.problems(),
    )


def _choose_variables(tst: Source, ref: Source, variables: list[str] | None) -> list[str]:
    have_t, have_r = set(tst.names()), set(ref.names())
    if variables:
        for side, have in ((tst, have_t), (ref, have_r)):
            missing = [v for v in variables if v not in have]
            if missing:
                hints = []
                for m in missing:
                    close = closest_name(m, have)
                    hints.append(f"'{m}'" + (f" (did you mean '{close}'?)" if close else ""))
                raise InputError(f"{side.path}: no variable {', '.join(hints)}")
        return list(variables)
    names = [n for n in ref.default_variables() if n in have_t and n != "time"]
    if not names:
        raise InputError(f"{tst.path} and {ref.path} have no variable in common to compare "
                         f"(reference: {', '.join(ref.default_variables()) or 'none'})")
    return names


def compare_command(args) -> int:
    """The ``mdae-fmu compare`` command: text report on stdout, optional HTML and JUnit
    files; exit 0 pass, 1 fail, 2 unreadable input."""
    variables = None
    if args.variables:
        variables = [v.strip() for part in args.variables for v in part.split(",") if v.strip()]
    try:
        result = compare(args.test, args.reference, variables=variables, rtol=args.rtol,
                         atol=args.atol, time_tolerance=args.time_tolerance,
                         stop_time=args.stop_time, method=args.method,
                         relative_tolerance=args.relative_tolerance, timeout=args.timeout,
                         start_values=run_options.start_values(args.start_values) or None,
                         fmi_type=args.fmi_type, reference_fmi_type=args.reference_fmi_type,
                         validate=args.validate)
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    run_options.print_warnings(result.warnings)
    print(result.render_text())
    from .report_html import comparison_page, junit_xml, write_text
    if args.report:
        write_text(args.report, comparison_page(result))
        print(f"wrote {args.report}")
    if args.junit:
        name = Path(args.test).stem
        write_text(args.junit, junit_xml("mdae-fmu compare",
                                         [{"name": name, "comparison": result}]))
        print(f"wrote {args.junit}")
    return result.exit_code


def add_parser(sub) -> None:
    """Register ``compare`` on the CLI's subparsers."""
    c = sub.add_parser("compare", help="compare a model/FMU/CSV result against a reference "
                       "in a tube (exit 0 pass, 1 fail)")
    c.add_argument("test", help="model file, .fmu or result .csv under test")
    c.add_argument("reference", help="reference model, .fmu or .csv (FMI cross-check format)")
    c.add_argument("--variables", action="append", metavar="NAMES",
                   help="comma-separated variables to compare (default: the reference's "
                   "columns / outputs and states)")
    c.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                   help=f"tube height relative to max|reference| (default {DEFAULT_RTOL:g})")
    c.add_argument("--atol", type=float, default=DEFAULT_ATOL,
                   help=f"absolute tube height added to it (default {DEFAULT_ATOL:g})")
    c.add_argument("--time-tolerance", type=float, default=None,
                   help="tube half-width in time, tolerating shifted events (default 1e-3 of "
                   "the time span)")
    c.add_argument("--stop-time", type=float, default=None)
    run_options.add_relative_tolerance(c, old="--solver-tolerance")
    run_options.add_start_values(c)
    run_options.add_timeout(c)
    c.add_argument("--fmi-type", type=run_options.fmi_type, default=None,
                   metavar="ModelExchange|CoSimulation",
                   help="the test FMU's interface to simulate (default: ModelExchange when the "
                   "FMU has it; a model file is exported with this interface)")
    c.add_argument("--reference-fmi-type", type=run_options.fmi_type, default=None,
                   metavar="ModelExchange|CoSimulation",
                   help="the reference FMU's interface (default: ModelExchange when it has it)")
    run_options.add_validate(c)
    c.add_argument("--method", choices=("tube", "fmpy"), default="tube",
                   help="tube: ours (default); fmpy: fmpy.util.validate_signal's band")
    c.add_argument("--report", metavar="OUT.html", help="write an HTML report with plots")
    c.add_argument("--junit", metavar="OUT.xml", help="write JUnit XML")


__all__ = ["compare", "Comparison", "SignalResult", "Trajectory", "Event",
           "read_reference_csv", "tube", "step_tube", "check_reference_span",
           "compare_command", "add_parser"]
