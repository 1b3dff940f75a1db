"""The test processes run OpenBLAS on one thread (tests/conftest.py): the setting only works
if it is in the environment before numpy loads its OpenBLAS, which a plugin or an import moved
above it in conftest.py would break silently (the suite's oracles then spend 10 to 100 times
their CPU: docs/testing.md "Stop 37"). Checked on the libraries this process has loaded and in
a subprocess, which must inherit the setting."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

# the thread-count getters of OpenBLAS builds: plain, and the 64-bit-integer builds of the
# numpy and scipy wheels (scipy-openblas: symbols prefixed, suffixed 64_)
GETTERS = ("openblas_get_num_threads", "openblas_get_num_threads64_",
           "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads")


def loaded_openblas_threads() -> dict[str, int]:
    """Each OpenBLAS library mapped into this process (/proc/self/maps) -> its thread count."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("no /proc/self/maps (not Linux)")
    libs = sorted({line.split()[-1] for line in maps.read_text().splitlines()
                   if "openblas" in line.lower() and line.split()[-1].startswith("/")})
    out = {}
    for lib in libs:
        handle = ctypes.CDLL(lib)
        for name in GETTERS:
            getter = getattr(handle, name, None)
            if getter is not None:
                getter.restype = ctypes.c_int
                out[Path(lib).name] = getter()
                break
    return out


def test_this_process_runs_openblas_on_one_thread():
    np.dot(np.ones((2, 2)), np.ones((2, 2)))            # numpy's and scipy's OpenBLAS loaded
    scipy.linalg.expm(np.eye(2))
    threads = loaded_openblas_threads()
    if not threads:
        pytest.skip("numpy and scipy use no OpenBLAS here")
    assert os.environ.get("OPENBLAS_NUM_THREADS") == "1"
    assert set(threads.values()) == {1}, threads


def test_subprocesses_inherit_the_setting():
    code = ("import numpy, scipy.linalg, sys\n"
            f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from test_blas_threads import loaded_openblas_threads\n"
            "scipy.linalg.expm(numpy.eye(2))\n"
            "print(sorted(set(loaded_openblas_threads().values())))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=True)
    assert r.stdout.strip() in ("[1]", "[]"), r.stdout + r.stderr
