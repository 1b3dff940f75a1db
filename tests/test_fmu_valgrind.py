"""Exported FMUs under valgrind memcheck in the plain C host (tests/host/me_host.c): no
invalid access, no use of uninitialized values, no definite or indirect leak, through a run
with state events, time events, projections and FMU-state handling of the host."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from valgrind_util import build_host, have_valgrind, run_fmu_in_host  # noqa: E402

from mdae_fmu import load  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent / "reference_models"


@pytest.mark.skipif(not have_valgrind(), reason="valgrind not installed")
def test_exported_fmus_are_memcheck_clean(tmp_path):
    host = build_host(tmp_path)
    for name, stop in (("BouncingBall", 0.6), ("Pendulum", 0.2), ("Stair", 1.5)):
        fmu = export(load(ROOT / f"{name}.mo"), tmp_path / f"{name}.fmu", progress=False)
        run = run_fmu_in_host(host, fmu, tmp_path / name, stop_time=stop, step=1e-3)
        assert run.returncode == 0, (name, run.stdout[-500:], run.stderr[-500:])
        assert run.report.errors == (), (name, run.report.errors[:3])
