"""Running tasks on Dask distributed for ``regress`` and ``sweep`` (docs/regression.md).

One place for what both commands need: a client (an embedded ``LocalCluster`` or an existing
scheduler) and the results as tasks finish, a failed task (a worker that died under it too
often, Dask's ``KilledWorker``) coming back as its exception instead of stopping the caller.
Dask is the optional extra ``mdae_fmu[distributed]``; without it a clear message, never an
ImportError. `mdae_fmu.batch` decides whether a batch goes to Dask at all.

**The embedded cluster has thread workers** (``processes=False``), in this process. Every FMU
already runs in a child process of the thread that runs it (`mdae_fmu.fmu_runner`), so two
worker threads simulate in parallel; and a cluster of worker *processes* started from a plain
script re-runs the script in each worker (multiprocessing's spawn), which without
``if __name__ == "__main__":`` starts clusters within clusters ("Nanny failed to start").
Threads need no such guard, start in a fraction of a second and need no copy of the inputs.

**No third-party noise.** While a client is open the ``distributed``, ``tornado`` and
``asyncio`` loggers print only critical messages and Python warnings from Dask are dropped:
a worker lost or a connection closed at shutdown is Dask's business, and a task that fails
comes back to the caller as a result with its message.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

from .diagnostics import InputError, MdaeError

MISSING = ("{what} runs on Dask distributed, which is not installed: "
           "pip install 'mdae_fmu[distributed]'")
#: Loggers quietened while a client is open.
NOISY = ("distributed", "tornado", "asyncio", "bokeh")


def available():
    """The ``distributed`` module, or None when the extra is not installed."""
    try:
        import distributed
        return distributed
    except ImportError:
        return None


def require(what: str) -> None:
    """Raise the missing-extra message (exit 2) when Dask is not installed."""
    if available() is None:
        raise MdaeError(MISSING.format(what=what))


def local_workers(n_workers: int | None) -> int:
    """Workers of an embedded cluster: ``n_workers``, else one per core."""
    return n_workers or os.cpu_count() or 1


@contextmanager
def quiet_dask() -> Iterator[None]:
    """Dask's loggers at CRITICAL and its warnings dropped for the ``with`` block (module
    docstring), the levels restored after."""
    loggers = [logging.getLogger(name) for name in NOISY]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"(distributed|dask|tornado)(\..*)?")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


@contextmanager
def client_for(client: Any, scheduler: str | None, n_workers: int | None,
               what: str) -> Iterator[tuple[Any, bool]]:
    """``(client, local)``: ``client`` itself, or a client of ``scheduler`` (tcp://HOST:PORT),
    or of a new embedded LocalCluster of ``n_workers`` thread workers (default: one per core;
    ``local`` is True only then: its tasks can read this process's files). Dask's noise is
    quietened meanwhile (`quiet_dask`); what this function opened it closes."""
    with quiet_dask():
        if client is not None:
            yield client, False
            return
        distributed = available()
        if distributed is None:
            raise MdaeError(MISSING.format(what=what))
        cluster = None
        if scheduler:
            try:
                own = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as err:
                raise InputError(f"--scheduler {scheduler}: cannot connect: {err}") from None
        else:
            cluster = distributed.LocalCluster(n_workers=local_workers(n_workers),
                                               threads_per_worker=1, processes=False,
                                               dashboard_address=None,
                                               silence_logs=logging.CRITICAL)
            own = distributed.Client(cluster)
        try:
            yield own, cluster is not None
        finally:
            own.close()
            if cluster is not None:
                cluster.close()


def as_finished(futures: dict) -> Iterator[tuple[Any, Any, BaseException | None]]:
    """Yield ``(key, result, error)`` for each future of ``futures`` (future -> key) as it
    finishes (``error`` is None or the task's exception). Each future is released once
    yielded."""
    from distributed import as_completed
    pending = dict(futures)
    for fut in as_completed(list(pending)):
        key = pending.pop(fut)
        try:
            result, error = fut.result(), None
        except Exception as err:
            result, error = None, err
        yield key, result, error
        fut.release()


def add_cluster_options(parser) -> None:
    """``--scheduler``, ``--workers`` and where the work runs (``--serial``, ``--dask``) on a
    subcommand's parser."""
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="run on this Dask scheduler (everything goes to it)")
    parser.add_argument("--workers", type=int, default=None,
                        help="workers of the embedded Dask cluster (default: one per core)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--serial", dest="executor", action="store_const", const="serial",
                       help="everything in this process, one after the other (no Dask)")
    where.add_argument("--dask", dest="executor", action="store_const", const="dask",
                       help="everything on Dask, even below the threshold where it pays")
    parser.set_defaults(executor="auto")


def executor_of(executor: str, client: Any, scheduler: str | None) -> str:
    """The executor of a batch: a given client or scheduler means Dask (the user's
    cluster); otherwise ``executor`` as asked ("auto", "serial", "dask")."""
    from .batch import EXECUTORS
    if executor not in EXECUTORS:
        raise InputError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "serial" and (client is not None or scheduler):
        raise InputError("--serial runs in this process: give no --scheduler (or client)")
    if client is not None or scheduler:
        return "dask"
    return executor


def installed() -> bool:
    """Whether the ``distributed`` extra is installed, found without importing it (the
    import alone costs about a second of CPU, more than a small batch run here)."""
    return importlib.util.find_spec("distributed") is not None


def dask_usable(executor: str, n_workers: int | None, what: str) -> bool:
    """Whether a batch may go to Dask: installed (asked for explicitly without it: the
    missing-extra error) and, for the embedded cluster chosen automatically, with at least
    two workers (one worker thread is this process again, at a cost). Only an explicit
    "dask" imports Dask here; "auto" imports it when the batch switches to it."""
    if executor == "serial":
        return False
    if executor == "dask":
        if available() is None:
            raise MdaeError(MISSING.format(what=what))
        return True
    return installed() and local_workers(n_workers) >= 2


__all__ = ["available", "require", "client_for", "as_finished", "add_cluster_options",
           "executor_of", "dask_usable", "installed", "local_workers", "quiet_dask", "MISSING"]
