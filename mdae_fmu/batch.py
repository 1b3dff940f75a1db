"""A batch of independent tasks (the runs of a sweep, the entries of a regression suite), run
where it pays: one after the other in this process while the work is small, on Dask when it
is large enough to repay a cluster (docs/regression.md, "Where the work runs").

**The rule.** A cluster costs a start (importing ``distributed``, starting the scheduler and
the workers, each worker's FMU child process) and can at best divide the remaining work by
the number of workers. So the batch starts in this process and, after each task from the
third on, projects the serial time left: the median time of the tasks done (the first one
left out: it pays the start of the FMU child, and of the export for a suite) times the
number of tasks left. When that exceeds `DASK_MIN_SECONDS` (measured: docs/regression.md)
the tasks left go to Dask; otherwise the batch ends here. ``executor="serial"`` never uses
Dask, ``"dask"`` sends everything to it (an existing cluster, or a small batch on purpose).

**The progress bar** counts tasks (runs, entries), not Dask's chunks, with the failed ones
and an estimate of the time left; on a terminal it redraws one line, otherwise (when asked
for) it prints a line every few seconds.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TextIO, TypeVar

#: Projected serial seconds of the remaining tasks above which they go to Dask. Measured on
#: the 2-core machine (docs/regression.md): a cluster of 2 thread workers costs about 3-4 s
#: to start and to start its FMU children, and 2 workers save at most half of the work left,
#: so a cluster pays from about 2 x 4 s of work on; 10 s leaves a margin for a loaded machine.
DASK_MIN_SECONDS = 10.0
#: Tasks run here before the projection is trusted (the first one pays start-up costs), and
#: the last tasks whose median time is projected.
PROBE_TASKS = 2
WINDOW = 50
EXECUTORS = ("auto", "serial", "dask")
#: Seconds a run of a sweep, or a simulation of a suite entry, may take by default: a run
#: that never ends (a bouncing ball that never settles) is stopped and reported, the others
#: kept.
DEFAULT_RUN_TIMEOUT = 600.0

K = TypeVar("K")
R = TypeVar("R")


class ProgressBar:
    """``sweep  37/200 runs, 2 failed, 12.3 s, about 41 s left`` on ``stream``: redrawn in
    place on a terminal (at most 10 times a second), one line every `LINE_SECONDS` when the
    stream is not a terminal, nothing when disabled."""

    LINE_SECONDS = 5.0

    def __init__(self, what: str, total: int, unit: str = "runs", enabled: bool = False,
                 stream: TextIO | None = None):
        self.what = what
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.done = self.failed = 0
        self.t0 = time.monotonic()
        self.shown = -1.0

    def text(self) -> str:
        elapsed = time.monotonic() - self.t0
        parts = [f"{self.what}  {self.done}/{self.total} {self.unit}"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        parts.append(f"{elapsed:.1f} s")
        if 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            parts.append(f"about {left:.0f} s left")
        return ", ".join(parts)

    def advance(self, failed: bool = False) -> None:
        """One task done (``failed``: it failed)."""
        self.done += 1
        self.failed += bool(failed)
        if not self.enabled:
            return
        now = time.monotonic()
        wait = 0.1 if self.tty else self.LINE_SECONDS
        if self.done < self.total and now - self.shown < wait:
            return
        self.shown = now
        if self.tty:
            self.stream.write("\r\x1b[K" + self.text())
        else:
            self.stream.write(self.text() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self.shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


@dataclass(frozen=True)
class Executed:
    """Where a batch ran: ``here`` tasks in this process, then ``on_dask`` on Dask;
    ``projected``: the serial seconds left that the decision saw (None: not projected)."""
    here: int
    on_dask: int
    projected: float | None = None

    @property
    def executor(self) -> str:
        """``serial``, ``dask``, or ``serial+dask`` (some here, then the rest on Dask)."""
        if not self.on_dask:
            return "serial"
        return "dask" if not self.here else "serial+dask"

    def describe(self, unit: str = "runs") -> str:
        """One line saying where the tasks ran and why."""
        if not self.on_dask:
            if self.projected is None:
                return f"{self.here} {unit} in this process"
            return (f"{self.here} {unit} in this process (about {self.projected:.1f} s of "
                    f"work: Dask pays above {DASK_MIN_SECONDS:g} s)")
        if not self.here:
            return f"{self.on_dask} {unit} on Dask"
        return (f"{self.here} {unit} in this process, then {self.on_dask} on Dask (about "
                f"{self.projected or 0:.0f} s of work left, above {DASK_MIN_SECONDS:g} s)")


def run_batch(tasks: Sequence[K], here: Callable[[K], R],
              on_dask: Callable[[Sequence[K]], Iterable[tuple[K, R]]] | None,
              done: Callable[[K, R], None], *, executor: str = "auto",
              threshold: float = DASK_MIN_SECONDS) -> Executed:
    """Run every task of ``tasks`` once, passing each result to ``done(task, result)`` as it
    comes: with ``here(task)`` in this process, or with ``on_dask(tasks left)``, which
    yields ``(task, result)`` as they finish (module docstring: the rule). ``on_dask`` is
    None when Dask cannot be used (then every task runs here)."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "dask" and on_dask is not None:
        for task, result in on_dask(tasks):
            done(task, result)
        return Executed(here=0, on_dask=len(tasks))
    seconds: list[float] = []
    projected = None
    for k, task in enumerate(tasks):
        if executor == "auto" and on_dask is not None and k >= PROBE_TASKS:
            projected = statistics.median(seconds[1:][-WINDOW:]) * (len(tasks) - k)
            if projected > threshold:
                rest = tasks[k:]
                for other, result in on_dask(rest):
                    done(other, result)
                return Executed(here=k, on_dask=len(rest), projected=projected)
        t0 = time.perf_counter()
        result = here(task)
        seconds.append(time.perf_counter() - t0)
        done(task, result)
    if executor == "auto" and on_dask is not None and len(seconds) > 1:
        projected = statistics.median(seconds[1:][-WINDOW:]) * len(seconds)
    return Executed(here=len(tasks), on_dask=0, projected=projected)


__all__ = ["run_batch", "Executed", "ProgressBar", "DASK_MIN_SECONDS", "DEFAULT_RUN_TIMEOUT",
           "PROBE_TASKS", "EXECUTORS"]
