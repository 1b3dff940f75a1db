"""FMU binaries in a plain C host (tests/host/me_host.c) under valgrind memcheck: whole ME
runs, misuse answered with fmi2Error, FMU state round trips, no memory error, no leak.
Proven on the hand-written baselines and on deliberately broken builds, then applied to the
exporter's FMUs of the single-mode reference models."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from valgrind_util import build_host, have_valgrind, run_fmu_in_host

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks.baselines.build import build_baseline  # noqa: E402

needs_valgrind = pytest.mark.skipif(not have_valgrind(), reason="valgrind is not installed")


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return build_host(tmp_path_factory.mktemp("host"))


@pytest.fixture(scope="module")
def fmu(tmp_path_factory):
    out = tmp_path_factory.mktemp("baselines_dbg")

    def make(name, *bugs):
        return build_baseline(name, out, defines=bugs, debug=True,
                              suffix="_".join(bugs) or None)
    return make


STOP = {"VanDerPol": 5.0, "BouncingBall": 3.0, "ClutchBasic": 10.0}


@needs_valgrind
@pytest.mark.parametrize("name", sorted(STOP))
def test_baseline_is_clean_under_valgrind(host, fmu, tmp_path, name):
    run = run_fmu_in_host(host, fmu(name), tmp_path, stop_time=STOP[name], step=1e-3)
    assert run.returncode == 0, run.stderr
    assert run.report.errors == ()
    x = run.final_states()
    assert len(x) == 2 and all(math.isfinite(v) for v in x)
    if name == "BouncingBall":
        assert x[1] == 0.0 and 0.0 < x[0] < 1e-300      # at rest on the floor
    if name == "ClutchBasic":
        # closed form (theory/9334-examples-toolkit-results.md §2.1.1); explicit Euler, h=1e-3
        w7 = (math.exp(-0.05) + 2 * 1.5 * math.exp(-0.03125)) / 3 * math.exp(-0.015)
        assert x[0] == pytest.approx(w7 * math.exp(-0.03), rel=1e-4)
        assert x[1] == pytest.approx(w7 * math.exp(-0.01875), rel=1e-4)


@needs_valgrind
def test_leak_in_fmu_is_reported(host, fmu, tmp_path):
    run = run_fmu_in_host(host, fmu("BouncingBall", "BUG_LEAK"), tmp_path, stop_time=0.5)
    assert run.returncode == 99
    leaks = [e for e in run.report.fmu_errors(run.binary) if e.kind == "Leak_DefinitelyLost"]
    assert leaks and "fmi2Instantiate" in leaks[0].functions


@needs_valgrind
def test_heap_overrun_in_fmu_is_reported(host, fmu, tmp_path):
    run = run_fmu_in_host(host, fmu("BouncingBall", "BUG_OVERRUN"), tmp_path, stop_time=0.2)
    assert run.returncode == 99
    bad = run.report.fmu_errors(run.binary)
    assert any(e.kind == "InvalidWrite" and "fmi2GetEventIndicators" in e.functions
               for e in bad)


def test_host_detects_accepted_nan(host, fmu, tmp_path):
    run = run_fmu_in_host(host, fmu("BouncingBall", "BUG_ACCEPT_NAN"), tmp_path,
                          stop_time=0.2, valgrind=False)
    assert run.returncode == 1 and "accepted NaN" in run.stderr


def test_host_detects_broken_fmu_state(host, fmu, tmp_path):
    run = run_fmu_in_host(host, fmu("VanDerPol", "BUG_FMUSTATE_PARTIAL"), tmp_path,
                          stop_time=1.0, valgrind=False)
    assert run.returncode == 1 and "fmi2SetFMUstate differs" in run.stderr


def test_host_runs_without_valgrind_and_matches_closed_form(host, fmu, tmp_path):
    run = run_fmu_in_host(host, fmu("BouncingBall"), tmp_path, stop_time=0.4, step=1e-4,
                          valgrind=False)
    assert run.returncode == 0, run.stderr
    h, v = run.final_states()
    # before the first impact (t = 0.4515 s): h = 1 - g t^2 / 2 up to the Euler error
    assert v == pytest.approx(-9.81 * 0.4, rel=1e-9)
    assert h == pytest.approx(1 - 9.81 * 0.16 / 2, abs=1e-3)


# the single-mode reference models, plus the multimode clutch
EXPORTED = ("Dahlquist", "VanDerPol", "BouncingBall", "Pendulum", "Stair", "ClutchBasic")


@needs_valgrind
@pytest.mark.parametrize("name", EXPORTED)
def test_exported_reference_model_is_clean_under_valgrind(host, tmp_path, name):
    try:
        from mdae_fmu.fmu.export import export  # noqa: F401
        from mdae_fmu import api
    except ImportError:
        pytest.skip("the FMU exporter (mdae_fmu.fmu.export) is not available yet")
    src = next((p for p in (ROOT / "reference_models").glob(f"{name}.*")
                if p.suffix in (".mo", ".bmo", ".xml")), None)
    if src is None:
        pytest.skip(f"reference_models/{name} is not available yet")
    out = tmp_path / f"{name}.fmu"
    api.export_fmu(api.load(src), out)
    run = run_fmu_in_host(host, out, tmp_path / "run", step=1e-3)
    assert run.returncode == 0, run.stderr
    assert run.report.fmu_errors(run.binary) == ()
    assert run.report.errors == ()
