"""Running tasks on Dask distributed for ``regress`` and ``sweep`` (docs/regression.md).

One place for what both commands need: a client (an embedded ``LocalCluster`` of
single-threaded worker processes, or an existing scheduler), Dask's own progress bar, and the
results as tasks finish, a failed task (a worker that died under it too often, Dask's
``KilledWorker``) coming back as its exception instead of stopping the caller. Dask is the
optional extra ``mdae_fmu[distributed]``; without it a clear message, never an ImportError.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from .diagnostics import InputError, MdaeError

MISSING = ("{what} runs on Dask distributed, which is not installed: "
           "pip install 'mdae_fmu[distributed]'")


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


@contextmanager
def client_for(client, scheduler: str | None, n_workers: int | None, what: str):
    """``client`` itself, or a client of ``scheduler`` (tcp://HOST:PORT), or of a new
    LocalCluster of ``n_workers`` single-threaded worker processes (default: as many as
    cores); what this function opened it closes."""
    if client is not None:
        yield client
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
        cluster = distributed.LocalCluster(n_workers=n_workers or os.cpu_count() or 1,
                                           threads_per_worker=1, processes=True,
                                           dashboard_address=":0")
        own = distributed.Client(cluster)
    try:
        yield own
    finally:
        own.close()
        if cluster is not None:
            cluster.close()


def as_finished(futures: dict, progress: bool = False):
    """Yield ``(key, result, error)`` for each future of ``futures`` (future -> key) as it
    finishes (``error`` is None or the task's exception), with Dask's text progress bar on
    stdout when ``progress``. Each future is released once yielded."""
    from distributed import as_completed
    bar = None
    if progress and futures:
        from distributed import progress as dask_progress

        def show():
            try:
                dask_progress(list(futures), notebook=False)
            except Exception:   # the bar is cosmetic: never let it break the run
                pass
        bar = threading.Thread(target=show, daemon=True)
        bar.start()
    pending = dict(futures)
    for fut in as_completed(list(pending)):
        key = pending.pop(fut)
        try:
            result, error = fut.result(), None
        except Exception as err:
            result, error = None, err
        yield key, result, error
        fut.release()
    if bar is not None:
        bar.join(timeout=5)


def add_cluster_options(parser) -> None:
    """``--scheduler`` and ``--workers`` on a subcommand's parser."""
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="use this Dask scheduler (default: a LocalCluster)")
    parser.add_argument("--workers", type=int, default=None,
                        help="LocalCluster workers (default: as many as cores)")


__all__ = ["available", "require", "client_for", "as_finished", "add_cluster_options",
           "MISSING"]
