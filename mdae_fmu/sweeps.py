"""``mdae-fmu sweep``: one FMU, many parameter sets, run on Dask distributed.

The FMU is built once (a model file is exported first), its bytes are scattered to every
worker, and each task extracts it (`mdae_fmu.fmu_archive.open_fmu`: limits, temporary folder
removed) and runs its parameter sets one after the other in the child process of
`mdae_fmu.fmu_runner` (a run that crashes, exits or exceeds ``timeout`` is a failed row; the
next run gets a new child). Every run records, per requested output,
its final value and its left/right values at the first ``event_values`` events (columns
``NAME@e1-``, ``NAME@e1+``, event time ``t@e1``), its event count and wall time; a run that
fails keeps its row with status ``failed`` and the message. Rows stream to the output file as
runs finish: a CSV output is appended row by row; a parquet output is journaled row by row to
``OUT.partial.csv`` and written (atomically) when the sweep ends. ``resume=True`` keeps the
rows already written and runs only the missing ones (docs/regression.md, sweeps).
"""

from __future__ import annotations

import csv as _csv
import hashlib
import itertools
import math
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from . import dask_tasks, run_options
from .batch import DEFAULT_RUN_TIMEOUT, Executed, ProgressBar, run_batch
from .diagnostics import EXIT_OK, EXIT_REJECTED, InputError, MdaeError, SimulationFailed
from .fmu_archive import OpenedFmu, open_fmu, temporary_folder
from .fmu_runner import (check_output_variables, check_parameters, check_run_options, fmu_of,
                         outputs_and_states, preferred_fmi_type, run_fmu, warm_up)

FIXED_COLUMNS = ("run", "status", "message", "events", "wall_time")
MAX_CHUNK = 20


# ---------------------------------------------------------------------------------------------
# Parameter specifications
# ---------------------------------------------------------------------------------------------

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


@dataclass(frozen=True)
class ParamSpec:
    """One ``--param``: a grid or list axis (``values``), or a random distribution
    (``dist`` = uniform(a, b) or normal(mu, sigma), sampled ``--samples`` times)."""
    name: str
    values: tuple[float, ...] | None = None
    dist: tuple[str, float, float] | None = None


def parse_param(text: str) -> ParamSpec:
    """``NAME=START:STOP:COUNT`` (COUNT points, both ends included), ``NAME=V1,V2,...``,
    ``NAME=V``, ``NAME=uniform(A,B)`` or ``NAME=normal(MU,SIGMA)``."""
    name, eq, spec = text.partition("=")
    name, spec = name.strip(), spec.strip().replace(" ", "")
    usage = (f"--param {text}: expected NAME=START:STOP:COUNT, NAME=V1,V2,..., "
             "NAME=uniform(A,B) or NAME=normal(MU,SIGMA)")
    if not eq or not name or not spec:
        raise InputError(usage)
    m = re.fullmatch(rf"(uniform|normal)\(({_NUM}),({_NUM})\)", spec)
    if m:
        a, b = float(m.group(2)), float(m.group(3))
        if m.group(1) == "uniform" and not a < b:
            raise InputError(f"--param {text}: uniform(A,B) needs A < B")
        if m.group(1) == "normal" and not b > 0:
            raise InputError(f"--param {text}: normal(MU,SIGMA) needs SIGMA > 0")
        return ParamSpec(name=name, dist=(m.group(1), a, b))
    m = re.fullmatch(rf"({_NUM}):({_NUM}):(\d+)", spec)
    if m:
        n = int(m.group(3))
        if n < 1:
            raise InputError(f"--param {text}: COUNT must be at least 1")
        a, b = float(m.group(1)), float(m.group(2))
        return ParamSpec(name=name, values=tuple(float(v) for v in np.linspace(a, b, n)))
    if re.fullmatch(rf"{_NUM}(?:,{_NUM})*", spec):
        return ParamSpec(name=name, values=tuple(float(v) for v in spec.split(",")))
    raise InputError(usage)


def make_cases(specs: list[ParamSpec], samples: int | None = None,
               seed: int = 0) -> list[dict[str, float]]:
    """The parameter sets, in a fixed order: the Cartesian product of the grid/list axes (the
    first ``--param`` outermost), each crossed with ``samples`` draws of the random ones
    (numpy's default generator seeded with ``seed``: the same command gives the same sets)."""
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"--param {sorted(dup)[0]} is given more than once")
    axes = [(s.name, s.values) for s in specs if s.values is not None]
    rand = [(s.name, s.dist) for s in specs if s.dist is not None]
    if rand and not samples:
        raise InputError(f"--param {rand[0][0]} is random: give the number of draws with "
                         "--samples N")
    if samples is not None and samples < 1:
        raise InputError("--samples must be at least 1")
    grid = [dict(zip([name for name, _ in axes], combo))
            for combo in itertools.product(*[values for _, values in axes])]
    if not rand or samples is None:     # (samples is given when rand is not empty: see above)
        return grid
    rng = np.random.default_rng(seed)
    draws: dict[str, np.ndarray] = {}
    n_total = len(grid) * samples
    for name, (kind, a, b) in rand:
        draws[name] = (rng.uniform(a, b, n_total) if kind == "uniform"
                       else rng.normal(a, b, n_total))
    cases: list[dict[str, float]] = []
    for g, base in enumerate(grid):
        for k in range(samples):
            case = dict(base)
            for name, _ in rand:
                case[name] = float(draws[name][g * samples + k])
            cases.append(case)
    return cases


# ---------------------------------------------------------------------------------------------
# One run (on a worker, or in this process)
# ---------------------------------------------------------------------------------------------

def event_rows(t: np.ndarray) -> list[tuple[int, int]]:
    """(first row, last row) of every event: a time that appears on more than one row."""
    out, i = [], 0
    while i < len(t) - 1:
        if t[i + 1] == t[i]:
            j = i + 1
            while j + 1 < len(t) and t[j + 1] == t[i]:
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def columns_for(params: list[str], outputs: list[str], n_events: int) -> list[str]:
    """The output table's columns, in order."""
    cols = ["run", *params, "status", "message", "events", "wall_time", *outputs]
    for k in range(1, n_events + 1):
        cols.append(f"t@e{k}")
        for o in outputs:
            cols += [f"{o}@e{k}-", f"{o}@e{k}+"]
    return cols


@dataclass(frozen=True)
class RunSettings:
    """What every run of a sweep shares (FMPy's keywords, `mdae_fmu.fmu_runner.run_fmu`):
    the recorded ``outputs``, the event values kept per row (``n_events``), and the run's
    options; ``start_values`` are fixed values set in every run before the swept ones."""
    outputs: tuple[str, ...]
    n_events: int = 2
    fmi_type: str | None = None
    stop_time: float | None = None
    output_interval: float | None = None
    relative_tolerance: float | None = None
    timeout: float | None = None
    start_values: tuple[tuple[str, Any], ...] = ()
    validate: bool = True


def run_case(fmu: OpenedFmu, run: int, params: dict, settings: RunSettings) -> dict:
    """Simulate one parameter set (`mdae_fmu.fmu_runner.run_fmu`) and return its row (never
    raises for a failed run: the row has status ``failed`` and the message, a run stopped
    by the timeout included). The output grid defaults to the whole run, since the row keeps
    only final and event values (events are recorded whatever the grid)."""
    md = fmu.model_description
    row = {"run": run, **params, "status": "ok", "message": "", "events": 0}
    outputs = list(settings.outputs)
    t0 = time.perf_counter()
    try:
        output_interval = settings.output_interval
        if output_interval is None:
            de = md.defaultExperiment
            stop = settings.stop_time if settings.stop_time is not None else (
                float(de.stopTime) if de is not None and de.stopTime is not None else 1.0)
            start_t = float(de.startTime) if de is not None and de.startTime else 0.0
            output_interval = stop - start_t
        res = run_fmu(fmu, fmi_type=settings.fmi_type, stop_time=settings.stop_time,
                      start_values={**dict(settings.start_values), **params},
                      output_variables=outputs, output_interval=output_interval,
                      relative_tolerance=settings.relative_tolerance,
                      timeout=settings.timeout, validate=settings.validate).result
    except MdaeError as err:   # a failed run (or a value the FMU cannot take) is a row
        row["wall_time"] = time.perf_counter() - t0
        row["status"] = "failed"
        reason, log = ((err.reason, err.log) if isinstance(err, SimulationFailed)
                       else (str(err), ()))
        detail = "; ".join(log[-3:])
        row["message"] = reason + (f" ({detail})" if detail else "")
        return row
    row["wall_time"] = time.perf_counter() - t0
    t = np.asarray(res["time"], dtype=float)
    evs = event_rows(t)
    row["events"] = len(evs)
    for o in outputs:
        row[o] = float(res[o][-1])
    for k, (i, j) in enumerate(evs[:settings.n_events], start=1):
        row[f"t@e{k}"] = float(t[i])
        for o in outputs:
            row[f"{o}@e{k}-"] = float(res[o][i])
            row[f"{o}@e{k}+"] = float(res[o][j])
    return row


def run_chunk(fmu_bytes: bytes, digest: str, chunk: list[tuple[int, dict]],
              settings: RunSettings) -> list:
    """`run_case` for several parameter sets in one task (amortizes Dask's per-task cost and
    the FMU's extraction)."""
    with open_fmu(fmu_bytes, label=f"FMU {digest[:12]}", validate=settings.validate) as fmu:
        return [run_case(fmu, run, params, settings) for run, params in chunk]


def chunk_size(n_todo: int, n_workers: int) -> int:
    """Runs per Dask task: about 8 tasks per worker, 1 to MAX_CHUNK runs each, so that the
    load stays balanced and a lost worker costs little."""
    return max(1, min(MAX_CHUNK, n_todo // max(1, 8 * n_workers)))


# ---------------------------------------------------------------------------------------------
# Output files, streamed
# ---------------------------------------------------------------------------------------------

def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _parse(col: str, text: str):
    if col in ("status", "message"):
        return text
    if col in ("run", "events"):
        return int(text)
    return float(text) if text != "" else math.nan


class CsvStream:
    """Rows appended to a CSV file as they come, flushed each time. On open with ``resume``,
    the rows already there are read back (a torn last line, left by a killed writer, is cut
    off) and checked against this sweep's columns."""

    def __init__(self, path: Path, columns: list[str], resume: bool):
        self.path = path
        self.columns = columns
        self.done: dict[int, dict] = {}
        if resume and path.exists() and path.stat().st_size > 0:
            self._read_back()
            self.fh = open(path, "a", newline="")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = open(path, "w", newline="")
            _csv.writer(self.fh).writerow(columns)
            self.fh.flush()
        self.writer = _csv.writer(self.fh)

    def _read_back(self) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):          # torn last row: drop it
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)
            data = data[:cut]
        lines = data.decode("utf-8").splitlines()
        reader = _csv.reader(lines)
        header = next(reader, None)
        if header != self.columns:
            raise InputError(f"{self.path}: --resume: the file's columns "
                             f"({', '.join(header or [])}) are not this sweep's "
                             f"({', '.join(self.columns)}); write to another file")
        for lineno, rec in enumerate(reader, start=2):
            if len(rec) != len(header):
                raise InputError(f"{self.path}:{lineno}:1: --resume: {len(rec)} values, the "
                                 f"header names {len(header)} columns")
            row = {c: _parse(c, v) for c, v in zip(header, rec)}
            self.done[row["run"]] = row

    def write(self, row: dict) -> None:
        self.writer.writerow([_cell(row.get(c)) for c in self.columns])
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def _parquet_module():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet as pq
        return pq
    except ImportError:
        return None


def write_parquet(path: Path, columns: list[str], rows: list[dict]) -> None:
    """The whole table as parquet, written to a temporary file and renamed."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    arrays = {}
    for c in columns:
        vals = [r.get(c) for r in rows]
        if c in ("status", "message"):
            arrays[c] = pa.array([v or "" for v in vals], pa.string())
        elif c in ("run", "events"):
            arrays[c] = pa.array([int(v or 0) for v in vals], pa.int64())
        else:
            arrays[c] = pa.array([math.nan if v is None else float(v) for v in vals],
                                 pa.float64())
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.table(arrays), str(tmp))
    os.replace(tmp, path)


def read_parquet_rows(path: Path, columns: list[str]) -> dict[int, dict]:
    import pyarrow.parquet as pq
    table = pq.read_table(str(path))
    if table.column_names != columns:
        raise InputError(f"{path}: --resume: the file's columns are not this sweep's; write "
                         "to another file")
    return {r["run"]: r for r in table.to_pylist()}


# ---------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------

@dataclass
class SweepResult:
    """The sweep's table as plain data: ``columns`` and one dict per run, ordered by run."""
    columns: list[str]
    rows: list[dict]
    computed: int = 0          # runs computed by this call (the others were resumed)
    seconds: float = 0.0       # wall time of the runs' part of the call
    executed: Executed = field(default_factory=lambda: Executed(here=0, on_dask=0))
    warnings: list[str] = field(default_factory=list)   # validation problems (validate=False)

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> np.ndarray:
        kind = object if name in ("status", "message") else float
        return np.array([r.get(name, math.nan) if kind is float else r.get(name, "")
                         for r in self.rows], dtype=kind)

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.rows if r.get("status") != "ok"]

    def to_numpy(self) -> np.ndarray:
        """A structured array: one field per column (run, events int; status, message str;
        the others float, NaN where a run has no value)."""
        def kind(c):
            if c in ("run", "events"):
                return (c, np.int64)
            if c in ("status", "message"):
                return (c, object)
            return (c, np.float64)
        out = np.empty(len(self.rows), dtype=[kind(c) for c in self.columns])
        for c in self.columns:
            out[c] = [r.get(c, "" if c in ("status", "message") else
                            0 if c in ("run", "events") else math.nan) for r in self.rows]
        return out

    def to_pandas(self):
        """A pandas DataFrame (needs pandas, not a dependency of mdae_fmu)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("SweepResult.to_pandas needs pandas (pip install pandas); "
                              "SweepResult.to_numpy gives a structured array") from None
        return pd.DataFrame(self.rows, columns=self.columns)


def prepare_fmu(model_or_fmu: str | Path, work_dir: Path, stop_time: float | None,
                fmi_type: str | None = None, validate: bool = True):
    """(fmu path, model description, validation problems) of a model file (exported with
    the interface ``fmi_type`` asks for) or an FMU."""
    fmu = fmu_of(model_or_fmu, work_dir, stop_time=stop_time, fmi_type=fmi_type)
    with open_fmu(fmu, label=str(model_or_fmu), validate=validate) as opened:
        return fmu, opened.model_description, opened.problems


def sweep(model_or_fmu: str | Path, params: Sequence[str | ParamSpec] | Mapping[str, Any], *,
          output_variables: Sequence[str] | None = None,
          samples: int | None = None, seed: int = 0,
          start_values: Mapping[str, Any] | None = None,
          stop_time: float | None = None,
          output_interval: float | None = None,
          relative_tolerance: float | None = None,
          fmi_type: str | None = None,
          timeout: float | None = DEFAULT_RUN_TIMEOUT,
          validate: bool = True,
          event_values: int = 2,
          output: str | Path | None = None, resume: bool = False,
          executor: str = "auto",
          scheduler: str | None = None, n_workers: int | None = None, client: Any = None,
          progress: bool = False,
          outputs: Sequence[str] | None = None,
          serial: bool | None = None) -> SweepResult:
    """Run one simulation per parameter set and return a `SweepResult`.

    ``params``: ``--param`` texts (``"j1=0.5:2.0:10"``), `ParamSpec`s, or a dict
    ``{name: spec text or list of values}``; ``samples`` draws of the random ones, seeded
    with ``seed``. The runs (`mdae_fmu.fmu_runner.run_fmu`, each in a child process) take
    ``fmpy.simulate_fmu``'s keywords: ``output_variables`` (default: the FMU's outputs and
    states), ``start_values`` (fixed values set in every run, before the swept ones),
    ``stop_time``, ``output_interval`` (default: one interval, since a row keeps the final
    and event values), ``relative_tolerance``, ``fmi_type`` ("ModelExchange" or
    "CoSimulation"; a model file is exported with it), ``timeout`` (seconds per run,
    default `DEFAULT_RUN_TIMEOUT`; None: none), ``validate``. ``event_values``: the events
    whose left and right values each row keeps. ``output``: a .csv or .parquet file the rows
    stream to; ``resume``: keep its rows and run only the missing runs.

    Where the runs go (`mdae_fmu.batch`): ``executor="auto"`` runs them in this process
    while the work is small and sends the rest to Dask when it pays; ``"serial"`` never uses
    Dask, ``"dask"`` always (an embedded cluster of ``n_workers`` thread workers, or
    ``scheduler``'s, or ``client``'s: with one of those two, always Dask). ``progress``: a
    bar on stderr that counts runs. No ``if __name__ == "__main__":`` is needed around the
    call. ``outputs`` and ``serial=True`` are the former names of ``output_variables`` and
    ``executor="serial"`` (deprecated). Raises `InputError` (exit 2) before any run for bad
    specifications, options and parameter names the FMU does not have."""
    if outputs is not None:
        warnings.warn("sweep(outputs=...) is deprecated, use output_variables",
                      DeprecationWarning, stacklevel=2)
        if output_variables is not None:
            raise InputError("give output_variables only (outputs is its former name)")
        output_variables = outputs
    if serial is not None:
        warnings.warn("sweep(serial=True) is deprecated, use executor='serial'",
                      DeprecationWarning, stacklevel=2)
        executor = "serial" if serial else executor
    specs = _specs(params)
    cases = make_cases(specs, samples, seed)
    check_run_options(stop_time=stop_time, output_interval=output_interval, timeout=timeout,
                      relative_tolerance=relative_tolerance, fmi_type=fmi_type)
    if isinstance(event_values, bool) or not isinstance(event_values, int) or event_values < 0:
        raise InputError(f"--event-values must be a whole number at least 0, got "
                         f"{event_values!r}")
    executor = dask_tasks.executor_of(executor, client, scheduler)
    out_path = Path(output) if output else None
    if out_path is not None and out_path.suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"{out_path}: the output must be a .csv or .parquet file")
    if out_path is not None and out_path.suffix.lower() == ".parquet" \
            and _parquet_module() is None:
        raise InputError(f"{out_path}: parquet output needs pyarrow (pip install "
                         "'mdae_fmu[distributed]'); or write CSV: --output "
                         f"{out_path.with_suffix('.csv')}")
    use_dask = dask_tasks.dask_usable(executor, n_workers, "mdae-fmu sweep")
    warm_up()                           # the child imports FMPy while the FMU is prepared
    with temporary_folder("mdae_sweep_") as tmp:
        fmu, md, problems = prepare_fmu(model_or_fmu, tmp, stop_time, fmi_type, validate)
        fmu_bytes = Path(fmu).read_bytes()
    check_parameters(str(model_or_fmu), md, [s.name for s in specs])
    if start_values:
        check_parameters(str(model_or_fmu), md, list(start_values))
    if output_variables is None:
        output_variables = [n for n in outputs_and_states(md) if not n.startswith("impulse(")]
    else:
        output_variables = list(output_variables)
        check_output_variables(str(model_or_fmu), md, output_variables)
    settings = RunSettings(outputs=tuple(output_variables), n_events=event_values,
                           fmi_type=preferred_fmi_type(md, str(model_or_fmu), fmi_type),
                           stop_time=stop_time, output_interval=output_interval,
                           relative_tolerance=relative_tolerance, timeout=timeout,
                           start_values=tuple((start_values or {}).items()), validate=validate)
    digest = hashlib.sha256(fmu_bytes).hexdigest()
    columns = columns_for([s.name for s in specs], list(output_variables), event_values)
    sink, done = _open_sink(out_path, columns, resume)
    for run, case in enumerate(cases):
        if run in done:
            row = done[run]
            for k, v in case.items():
                if not (isinstance(row.get(k), float) and math.isclose(row[k], v,
                                                                       rel_tol=1e-12)):
                    raise InputError(f"{out_path}: --resume: run {run} has {k} = {row.get(k)}, "
                                     f"this sweep has {v}: the file comes from another sweep")
    todo = [run for run in range(len(cases)) if run not in done]
    rows = dict(done)
    bar = ProgressBar("sweep", len(todo), "runs", enabled=progress)
    t0 = time.perf_counter()

    def keep(run: int, row: dict) -> None:
        rows[run] = row
        sink.write(row)
        bar.advance(failed=row["status"] != "ok")

    def on_dask(runs: Sequence[int]) -> Iterator[tuple[int, dict]]:
        return _run_distributed(fmu_bytes, digest, cases, list(runs), settings, scheduler,
                                n_workers, client)
    try:
        with open_fmu(fmu_bytes, label=str(model_or_fmu), validate=validate) as opened:
            executed = run_batch(todo, lambda run: run_case(opened, run, cases[run], settings),
                                 on_dask if use_dask else None, keep, executor=executor)
    finally:
        sink.close()
        bar.close()
    seconds = time.perf_counter() - t0
    ordered = [rows[r] for r in sorted(rows)]
    if out_path is not None and out_path.suffix.lower() == ".parquet":
        write_parquet(out_path, columns, ordered)
        sink.path.unlink(missing_ok=True)       # the journal (`_open_sink`)
    return SweepResult(columns=columns, rows=ordered, computed=len(todo), seconds=seconds,
                       executed=executed, warnings=[f"{model_or_fmu}: modelDescription.xml: {p}"
                                                    for p in problems])


def _specs(params) -> list[ParamSpec]:
    if isinstance(params, dict):
        specs = []
        for k, v in params.items():
            if isinstance(v, str):
                specs.append(parse_param(f"{k}={v}"))
            else:
                specs.append(ParamSpec(name=k, values=tuple(float(x) for x in np.atleast_1d(v))))
        return specs
    return [p if isinstance(p, ParamSpec) else parse_param(p) for p in params]


class _NullSink:
    def write(self, row):
        pass

    def close(self):
        pass


def _open_sink(out_path: Path | None, columns: list[str], resume: bool):
    """The stream the rows go to and the rows already done (``resume``)."""
    if out_path is None:
        return _NullSink(), {}
    if out_path.suffix.lower() == ".csv":
        s = CsvStream(out_path, columns, resume)
        return s, s.done
    journal = out_path.with_name(out_path.name + ".partial.csv")
    done = {}
    if resume and out_path.exists():
        done.update(read_parquet_rows(out_path, columns))
    if resume and journal.exists():
        s = CsvStream(journal, columns, True)
        done.update(s.done)
        for run, row in done.items():       # keep parquet rows in the journal too
            if run not in s.done:
                s.write(row)
    else:
        s = CsvStream(journal, columns, False)
        for row in done.values():
            s.write(row)
    return s, done


def _run_distributed(fmu_bytes: bytes, digest: str, cases: list[dict], todo: list[int],
                     settings: RunSettings, scheduler: str | None, n_workers: int | None,
                     client: Any) -> Iterator[tuple[int, dict]]:
    """The runs ``todo`` on Dask, in chunks of runs; yields ``(run, row)`` as each chunk
    finishes. A chunk whose task failed (its worker died too often: KilledWorker) gives
    failed rows with that message."""
    with dask_tasks.client_for(client, scheduler, n_workers, "mdae-fmu sweep") as (client, _):
        shipped = client.scatter(fmu_bytes, broadcast=True, hash=False)
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        size = chunk_size(len(todo), n_workers)
        futures = {}
        for k in range(0, len(todo), size):
            chunk = [(run, cases[run]) for run in todo[k:k + size]]
            f = client.submit(run_chunk, shipped, digest, chunk, settings,
                              key=f"mdae-runs-{digest[:12]}-{chunk[0][0]}", pure=False)
            futures[f] = chunk
        for chunk, got, err in dask_tasks.as_finished(futures):
            if err is not None:          # e.g. KilledWorker: the runs are kept as failed
                got = [{"run": run, **params, "status": "failed",
                        "message": f"{type(err).__name__}: {err}", "events": 0,
                        "wall_time": math.nan} for run, params in chunk]
            for row in got:
                yield row["run"], row


def sweep_command(args) -> int:
    """The ``mdae-fmu sweep`` command."""
    try:
        res = sweep(args.model, args.param or [],
                    output_variables=run_options.names(args.output_variables),
                    samples=args.samples, seed=args.seed,
                    start_values=run_options.start_values(args.start_values) or None,
                    stop_time=args.stop_time, output_interval=args.output_interval,
                    relative_tolerance=args.relative_tolerance, fmi_type=args.fmi_type,
                    timeout=args.timeout, validate=args.validate,
                    event_values=args.event_values, output=args.output, resume=args.resume,
                    executor=args.executor, scheduler=args.scheduler, n_workers=args.workers,
                    progress=sys.stderr.isatty() or args.progress)
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    run_options.print_warnings(res.warnings)
    n_failed = len(res.failed)
    rate = res.computed / res.seconds if res.seconds > 0 else float("nan")
    print(f"{len(res)} runs ({res.computed} computed now, {len(res) - res.computed} resumed), "
          f"{n_failed} failed; {res.seconds:.2f} s, {rate:.1f} runs/s")
    if res.computed:
        print(f"  {res.executed.describe('runs')}")
    for r in res.failed[:10]:
        print(f"  run {r['run']}: {r['message']}")
    if args.output:
        print(f"wrote {args.output}")
    return EXIT_OK if not n_failed else EXIT_REJECTED


def add_parser(sub) -> None:
    """Register ``sweep`` on the CLI's subparsers."""
    s = sub.add_parser("sweep", help="run one FMU over many parameter sets (on Dask when "
                       "it pays)")
    s.add_argument("model", help="a model file or an .fmu (built once, shipped to workers)")
    s.add_argument("--param", action="append", metavar="NAME=SPEC",
                   help="START:STOP:COUNT grid, V1,V2,... list, uniform(A,B) or "
                   "normal(MU,SIGMA) (random, --samples draws); repeat for more parameters")
    s.add_argument("--samples", type=int, default=None, help="draws of the random parameters")
    s.add_argument("--seed", type=int, default=0, help="seed of the random draws (default 0)")
    run_options.add_output_variables(s, old="--output-var")
    run_options.add_start_values(s)
    s.add_argument("--event-values", type=int, default=2, metavar="K",
                   help="record each variable's left/right values at the first K events "
                   "(default 2)")
    s.add_argument("--stop-time", type=float, default=None)
    s.add_argument("--output-interval", type=float, default=None,
                   help="FMPy's output grid (default: the whole run; event rows are always "
                   "recorded)")
    run_options.add_relative_tolerance(s)
    run_options.add_fmi_type(s)
    run_options.add_timeout(s, default=DEFAULT_RUN_TIMEOUT)
    run_options.add_validate(s)
    s.add_argument("-o", "--output", metavar="OUT.parquet|OUT.csv",
                   help="stream the rows to this file")
    s.add_argument("--resume", action="store_true",
                   help="keep the runs already in --output and compute only the missing ones")
    dask_tasks.add_cluster_options(s)
    s.add_argument("--progress", action="store_true",
                   help="show the progress bar even when stderr is not a terminal")


__all__ = ["sweep", "SweepResult", "ParamSpec", "RunSettings", "parse_param", "make_cases",
           "run_case", "run_chunk", "sweep_command", "add_parser", "DEFAULT_RUN_TIMEOUT"]
