"""One fresh process measured by the operating system's accounting (``wait4``): the CPU
seconds of the process and of the children it waited for (gcc under an export), its peak
resident memory, its exit code and output; shared by the benchmarks that time whole commands
(acceptance_26.py, modeller_bench.py)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path


def run(args: list[str], cwd: Path | None = None, timeout: float = 1800.0,
        env: dict[str, str] | None = None) -> dict:
    """Run ``args`` to its end or ``timeout`` seconds of wall time (then killed: ``code``
    None). Returns ``code``, ``out``, ``err`` (text), ``cpu`` (user + system seconds),
    ``wall`` seconds and ``peak_mb`` (the largest resident set of the process or of a child it
    waited for)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, cwd=cwd, env=env)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code: int | None = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                code = None
                break
            time.sleep(0.05)
        proc.returncode = 0 if code is None else code     # reaped here: Popen must not wait
        out.seek(0)
        err.seek(0)
        return {"code": code, "out": out.read().decode(errors="replace"),
                "err": err.read().decode(errors="replace"),
                "cpu": round(usage.ru_utime + usage.ru_stime, 2),
                "wall": round(time.perf_counter() - t0, 2),
                "peak_mb": round(usage.ru_maxrss / 1024)}
