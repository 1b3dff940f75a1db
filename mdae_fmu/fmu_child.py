"""The process that runs FMUs for `mdae_fmu.fmu_runner`, apart from the user's process.

It runs as a script (``python -c BOOT fmu_child.py FD PARENT_PID``), imports nothing of
mdae_fmu (only the standard library, numpy and FMPy: it starts in the time those take to
import) and serves one request at a time until its standard input closes:

* a request is one JSON line on stdin: ``{"id", "directory"`` (an extracted FMU),
  ``"work"`` (a folder of the parent's for this run), ``"options"`` (keyword arguments of
  ``fmpy.simulate_fmu``), ``"input"`` (an ``.npy`` file in ``work``, or null)``}``;
* the replies are JSON lines on the file descriptor FD: ``{"ready"}`` once FMPy is imported,
  then per request ``{"id", "started"}``, the FMU's log messages as they come
  (``{"id", "log", "status", "category"}``, at most `MAX_LOG_MESSAGES` per run), and
  ``{"id", "done", "seconds", "error"}``, the result being ``work/result.npy`` (written whole,
  then renamed) when ``error`` is null.

Whatever the FMU does to this process (crash, ``exit()``, endless loop) the parent sees it as
a missing ``done`` and reports it; the parent kills this process on a timeout and on
SIGINT/SIGTERM. On Linux the process also dies with the thread that started it
(``PR_SET_PDEATHSIG``), so a parent killed by SIGKILL leaves no FMU running.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

#: The FMU's log messages passed on per run; the others are counted.
MAX_LOG_MESSAGES = 2000
#: Characters kept of one log message.
MAX_LOG_CHARS = 2000
#: Model descriptions kept in memory (keyed by folder): a sweep runs one FMU many times.
MAX_CACHED = 4

STATUS = ("OK", "Warning", "Discard", "Error", "Fatal", "Pending")
#: The working directory this process started in, and returns to after every run: FMPy
#: changes to the FMU's binaries folder to load its library and stays there when the loading
#: fails; that folder is removed after the run, and every later run would fail in
#: ``os.getcwd()`` ("No such file or directory").
HOME = os.getcwd()


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends; exit at once
    when that already happened (the parent is gone)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)            # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


class Replies:
    """The reply channel: one JSON object per line, flushed at once."""

    def __init__(self, fd: int):
        self.out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, **message) -> None:
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()


def run_one(request: dict, replies: Replies, descriptions: dict) -> None:
    """Simulate one request with ``fmpy.simulate_fmu`` and reply (module docstring)."""
    import numpy as np
    from fmpy import read_model_description, simulate_fmu

    rid = request["id"]
    replies.send(id=rid, started=True)
    sent = dropped = 0

    def logger(env, instance, status, category, message):
        nonlocal sent, dropped
        if sent >= MAX_LOG_MESSAGES:
            dropped += 1
            return
        sent += 1
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
        cat = category.decode("utf-8", "replace") if isinstance(category, bytes) else str(category)
        replies.send(id=rid, log=text[:MAX_LOG_CHARS], category=cat[:100],
                     status=STATUS[status] if 0 <= status < len(STATUS) else str(status))

    t0 = time.perf_counter()
    error = None
    try:
        directory = request["directory"]
        md = descriptions.get(directory)
        if md is None:
            if len(descriptions) >= MAX_CACHED:
                descriptions.clear()
            validate = bool(request["options"].get("validate", True))
            md = descriptions[directory] = read_model_description(directory,
                                                                  validate=validate)
        signals = None
        if request.get("input"):
            signals = np.load(request["input"], allow_pickle=False)
        result = simulate_fmu(directory, model_description=md, input=signals, logger=logger,
                              **request["options"])
        out = os.path.join(request["work"], "result.npy")
        partial = out + ".partial.npy"
        np.save(partial, np.asarray(result).view(np.ndarray), allow_pickle=False)
        os.replace(partial, out)
    except Exception as err:      # FMPy reports FMI and solver failures as exceptions
        error = str(err).strip() or type(err).__name__
    finally:
        go_home()
    if dropped:
        replies.send(id=rid, log=f"({dropped} more log messages not shown)", category="",
                     status="Warning")
    replies.send(id=rid, done=True, seconds=time.perf_counter() - t0, error=error)


def go_home() -> None:
    """Back to `HOME` (or to the root folder, should `HOME` be gone)."""
    try:
        os.chdir(HOME)
    except OSError:
        os.chdir(os.sep)


def main(argv: list[str]) -> None:
    """Serve requests from stdin until it closes (module docstring)."""
    fd, parent = int(argv[-2]), int(argv[-1])
    die_with_parent(parent)
    replies = Replies(fd)
    try:
        import fmpy.simulation  # noqa: F401  (imported before "ready": the cost of starting)
    except Exception as err:    # an installation without FMPy or numpy
        replies.send(fatal=f"cannot import FMPy: {type(err).__name__}: {err}")
        return
    replies.send(ready=True, pid=os.getpid())
    descriptions: dict = {}
    for line in sys.stdin:
        if line.strip():
            run_one(json.loads(line), replies, descriptions)


if __name__ == "__main__":
    main(sys.argv)
