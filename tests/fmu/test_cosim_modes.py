"""Co-Simulation of multimode models and the Python-side build pieces (mdae_fmu.fmu.cosim).

The clutch tests run as soon as the exporter generates multimode code; until then they are
skipped with the exporter's own reason. Oracle: reference_models/ClutchBasic.csv (closed form:
engagement at t = 5 with w1+ = w2+ = (j1 w1- + j2 w2-)/(j1 + j2), release at t = 7)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

fmpy = pytest.importorskip("fmpy")
from fmpy import simulate_fmu  # noqa: E402

from cosim_util import REFERENCE, build, close_slave, open_slave  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.fmu import cosim  # noqa: E402
from mdae_fmu.fmu.build import BuildError  # noqa: E402


requires_sundials = pytest.mark.requires_sundials


def clutch_reference():
    with open(REFERENCE / "ClutchBasic.csv") as f:
        rows = list(csv.reader(f))
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return {name: data[:, k] for k, name in enumerate(rows[0])}


def check_against_reference(res, ref, after=None):
    for row in res:
        t = row["time"]
        if any(abs(t - te) < 1e-9 for te in (5.0, 7.0)):
            continue            # right limits are checked through the later points
        for var in ("w1", "w2"):
            exact = np.interp(t, ref["time"], ref[var])
            assert abs(row[var] - exact) <= 1e-6, (t, var, row[var], exact)


@requires_sundials
def test_clutch_engages_at_exactly_five_with_coarse_steps():
    """ClutchBasic (g from the clock state t): steps of 0.3; the engagement at t = 5 is a
    time event (the clock's crossing time, docs/fmi-mapping.md "Events") inside the step
    [4.8, 5.1], where CVODE stops and the restart (weighted mean of the speeds) happens; the
    speeds match the closed form at every communication point."""
    fmu = build("ClutchBasic")
    slave = open_slave(fmu, stop_time=10.0, tolerance=1e-10, logging=True)
    t, rows = 0.0, []
    while t < 9.9:
        assert slave.call("doStep", t, 0.3) == 0
        t += 0.3
        rows.append((t, *slave.get(["w1", "w2"])))
    close_slave(slave)
    events = [float(m[2].split(":")[0].split("=")[1]) for m in slave.messages
              if "time event" in m[2]]
    assert any(abs(te - 5.0) <= 1e-12 for te in events), events
    res = np.array(rows, dtype=[("time", float), ("w1", float), ("w2", float)])
    check_against_reference(res, clutch_reference())


@requires_sundials
def test_boolean_input_switches_the_clutch():
    """ClutchGuarded: the engage signal g is a Boolean input, true on [5, 7]; FMPy puts a
    communication point on each switch, the mode change and its restart cascade happen at
    the start of the next step."""
    fmu = build("ClutchGuarded")
    sig = np.array([(0.0, False), (5.0, False), (5.0, True), (7.0, True), (7.0, False)],
                   dtype=[("time", float), ("g", bool)])
    res = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=10.0, output_interval=0.3,
                       input=sig, relative_tolerance=1e-10, output=["w1", "w2"])
    check_against_reference(res, clutch_reference())


# ---------------------------------------------------------------------------------------------
# build pieces
# ---------------------------------------------------------------------------------------------

def test_fmi_type_is_checked():
    assert cosim.check_fmi_type("both") == "both"
    with pytest.raises(ModelRejected, match="me, cs, both"):
        cosim.check_fmi_type("cosim")


def test_interface_defines_in_config():
    src = {"config.h": "#ifndef X\n#define X\n#define MDAE_NX 2\n#endif\n"}
    out = cosim.configure_sources(src, "cs", 1e-8)
    text = out["config.h"]
    assert "#define MDAE_MODEL_EXCHANGE 0" in text and "#define MDAE_CO_SIMULATION 1" in text
    assert "#define MDAE_DEFAULT_TOLERANCE 1e-08" in text
    assert text.rstrip().endswith("#endif") and text.index("MDAE_CO_SIMULATION") < \
        text.rindex("#endif")
    assert src["config.h"].count("MDAE_CO") == 0           # input not modified
    assert "MDAE_CS_DEFAULT" not in cosim.configure_sources(src, "me")["config.h"]
    with pytest.raises(ModelRejected):
        cosim.interface_defines("cs", 2.0)


def test_missing_sundials_is_a_clear_build_error(monkeypatch):
    monkeypatch.setattr(cosim, "find_static_library", lambda name: None)
    with pytest.raises(BuildError, match="install-system-deps.sh"):
        cosim.sundials_link_args()


@requires_sundials
def test_reset_reruns_identically():
    """fmi2Reset then the same experiment again: the same final values (fresh integrator)."""
    fmu = build("BouncingBall")
    slave = open_slave(fmu, stop_time=2.0, tolerance=1e-8)
    finals = []
    for _ in range(2):
        t = 0.0
        for _ in range(10):
            assert slave.call("doStep", t, 0.2) == 0
            t += 0.2
        finals.append(slave.get(["h", "v"]))
        slave.fmu.reset()
        slave.fmu.setupExperiment(tolerance=1e-8, startTime=0.0, stopTime=2.0)
        slave.fmu.enterInitializationMode()
        slave.fmu.exitInitializationMode()
    close_slave(slave)
    assert finals[0] == finals[1]


@requires_sundials
def test_model_without_states():
    """CsNoState (no continuous state, time events every 0.5 s): y = 2 n + sin(t) at every
    communication point, with the right limit at event times."""
    res = simulate_fmu(str(build("CsNoState")), fmi_type="CoSimulation", stop_time=2.0,
                       output_interval=0.3, output=["n", "y"])
    assert len(res) == 8
    for row in res:
        t = row["time"]
        n = int(np.floor(t / 0.5 + 1e-9))
        assert row["n"] == n, t
        assert abs(row["y"] - (2 * n + np.sin(t))) <= 1e-12, t


def _run_without_sundials(tmp_path, require: bool):
    """Run one Co-Simulation test in a fresh pytest whose C compiler finds no SUNDIALS
    (a CC wrapper that answers -print-file-name as gcc does for a missing file)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    cc = tmp_path / "cc"
    cc.write_text('#!/bin/sh\ncase "$1" in -print-file-name=*) echo "${1#*=}"; exit 0;; esac\n'
                  'exec gcc "$@"\n')
    cc.chmod(0o755)
    env = dict(os.environ, CC=str(cc))
    env.pop("MDAE_REQUIRE_SUNDIALS", None)
    if require:
        env["MDAE_REQUIRE_SUNDIALS"] = "1"
    root = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/fmu/test_cosim_modes.py::test_model_without_states"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_cosim_tests_skip_loudly_without_sundials(tmp_path):
    """README 'System requirement': without SUNDIALS a requires_sundials test is skipped with
    the reason and a banner; with MDAE_REQUIRE_SUNDIALS=1 (CI) it fails (an error at setup)
    instead."""
    r = _run_without_sundials(tmp_path, require=False)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "1 skipped" in r.stdout and "NO SUNDIALS, Co-Simulation test skipped" in r.stdout
    assert "1 Co-Simulation tests SKIPPED: SUNDIALS CVODE is missing" in r.stdout
    r = _run_without_sundials(tmp_path, require=True)
    assert r.returncode == 1 and "1 error" in r.stdout, r.stdout[-2000:]
    assert "MDAE_REQUIRE_SUNDIALS=1 but SUNDIALS CVODE static library" in r.stdout
