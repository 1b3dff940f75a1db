"""``export --backend python`` (mdae_fmu.fmu.python_backend, docs/python-backend.md): the
pythonfmu Co-Simulation FMU runs the C FMU's plan with numpy/scipy. Its results in FMPy and
in libcosim against the reference CSVs (reference_models/: closed forms or high-accuracy
solutions computed independently of mdae_fmu), the clutch's restart
w+ = (j1 w1 + j2 w2)/(j1 + j2) at t = 5 (docs/theory.md §13.1), FMPy's
validation, the refusal of what the runtime does not run, and a run without mdae_fmu
importable."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from cosim_util import (REFERENCE, input_table, reference_entry, reference_stop,  # noqa: E402
                        relative_errors)

sys.path.insert(0, str(REFERENCE.parent / "tests" / "fmu"))
# a clutch whose torque enters through sinh (its engaged block's restart has no closed
# form: the delta-scheme), and one whose inertias cancel (a singular restart)
from test_multimode_fmu import SINGULAR, SINH  # noqa: E402

# the reference models whose plan the Python runtime runs (the others are refused, below)
SUPPORTED = ("Dahlquist", "VanDerPol", "BouncingBall", "Pendulum", "ClutchBasic",
             "ClutchGuarded", "ClutchGuardedTime", "ClutchNonSemilinear", "CupAndBall",
             "CupAndBallElastic", "CupAndBallFirstOrder", "AirBrake", "RLDC2", "RLDC2Switched",
             "RLDC2Diodes", "Stair")
# integrator tolerance given to the FMU, and the bound on the relative error (metric of
# tests/cosim_util.relative_errors) away from the events
RTOL = 1e-11
BOUND = 1e-5
# CSV columns that name a derivative (CupAndBall.mo: vx = der(x), vy = der(y)); models
# that declare vx, vy themselves (CupAndBallElastic) are read by name
COLUMNS = {"vx": "der(x)", "vy": "der(y)"}


#: The end of a host script that ran a python-backend FMU: pythonfmu 0.7's wrapper library
#: writes to freed memory when the process exits (docs/python-backend.md, "Known problem"),
#: which aborts 1 to 3 exits in 100 under load; the scripts flush and leave by os._exit.
EXIT_BEFORE_THE_WRAPPER_FINI = "sys.stdout.flush()\nimport os\nos._exit(0)\n"


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    """name -> python-backend FMU (built on first use)."""
    from mdae_fmu import api
    out = tmp_path_factory.mktemp("pyfmu")
    cache: dict = {}

    def get(name):
        if name not in cache:
            model = api.load(REFERENCE / f"{name}.mo")
            cache[name] = api.export_fmu(
                model, out / f"{name}.fmu", fmi_type="cs", backend="python", progress=False,
                default_experiment={"stopTime": reference_stop(name), "tolerance": RTOL})
        return cache[name]
    return get


def reference(name):
    entry = reference_entry(name)
    with open(REFERENCE / entry["csv"]) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[float(x) for x in r] for r in rows[1:]]), entry


def run(fmu, name, header, data):
    """FMPy's CS master on the CSV's time grid (its median spacing)."""
    dt = float(np.median(np.diff(data[:, 0])))
    names = {v.name for v in read_model_description(str(fmu)).modelVariables}
    return simulate_fmu(str(fmu), stop_time=reference_stop(name), output_interval=dt,
                        relative_tolerance=RTOL, input=input_table(name),
                        output=[c if c in names else COLUMNS[c] for c in header[1:]])


@pytest.mark.parametrize("name", SUPPORTED)
def test_fmpy_matches_reference(fmus, name):
    """At every communication point that is a CSV row more than 1e-3 away from an event, each
    variable of the CSV within BOUND of the reference (relative to max(|ref|, floor))."""
    header, data, entry = reference(name)
    res = run(fmus(name), name, header, data)
    ref_rows = {round(t, 9): k for k, t in enumerate(data[:, 0])}
    events = np.array(entry.get("events", []) or [np.inf])
    idx = [(j, ref_rows[round(t, 9)]) for j, t in enumerate(res["time"])
           if round(t, 9) in ref_rows and np.min(np.abs(events - t)) > 1e-3]
    assert len(idx) > 0.8 * len(res)
    got_i, ref_i = (np.array(x) for x in zip(*idx))
    worst = {}
    for c, col in enumerate(header[1:], 1):
        got = res[col if col in res.dtype.names else COLUMNS[col]]
        err = relative_errors(got[got_i], data[ref_i, c], data[:, c])
        worst[col] = float(err.max())
    assert max(worst.values()) <= BOUND, worst


def test_validates(fmus):
    """fmpy.validation.validate_fmu reports nothing; a Co-Simulation FMU of pythonfmu with the
    C FMU's variable names, the plan as data (JSON) and no mdae_fmu module inside."""
    fmu = fmus("ClutchBasic")
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.coSimulation is not None and md.modelExchange is None
    names = {v.name for v in md.modelVariables}
    assert {"w1", "w2", "f1", "der(w1)", "mdae_mode", "impulse(f1)"} <= names
    with zipfile.ZipFile(fmu) as z:
        files = z.namelist()
        plan = json.loads(z.read("resources/mdae_plan.json"))
    assert plan["identifier"] == "ClutchBasic"
    assert not any("mdae_fmu/" in f for f in files)
    assert "binaries/linux64/ClutchBasic.so" in files


def test_clutch_restart(fmus):
    """At the engagement t = 5 the shafts take the common speed (j1 w1- + j2 w2-)/(j1 + j2),
    computed here from the FMU's own left limits; the impulse output is the momentum
    transferred, j1 (w+ - w1-); w1 = w2 while engaged; mode 1 on (5, 7), 0 elsewhere."""
    res = simulate_fmu(str(fmus("ClutchBasic")), stop_time=10.0, output_interval=0.01,
                       relative_tolerance=RTOL,
                       output=["w1", "w2", "mdae_mode", "impulse(f1)"])
    t = res["time"]
    before = np.searchsorted(t, 5.0 - 1e-9) - 1       # last point before the engagement
    k = np.searchsorted(t, 5.0 + 1e-9)                # first point after it
    j1, j2, k1, k2 = 1.0, 2.0, 0.01, 0.0125
    # left limits at 5 from the values at t[before] (free decay, closed form)
    dt = 5.0 - t[before]
    w1m = res["w1"][before] * np.exp(-k1 / j1 * dt)
    w2m = res["w2"][before] * np.exp(-k2 / j2 * dt)
    wp = (j1 * w1m + j2 * w2m) / (j1 + j2)
    # engaged: common decay rate (k1 + k2)/(j1 + j2)
    expect = wp * np.exp(-(k1 + k2) / (j1 + j2) * (t[k] - 5.0))
    assert abs(res["w1"][k] - expect) <= 1e-7 and abs(res["w2"][k] - expect) <= 1e-7
    assert abs(res["impulse(f1)"][k] - j1 * (wp - w1m)) <= 1e-7
    engaged = (t > 5.0 + 1e-9) & (t < 7.0 - 1e-9)
    assert np.all(res["mdae_mode"][engaged] == 1)
    assert np.all(res["mdae_mode"][(t < 5.0 - 1e-9) | (t > 7.0 + 1e-9)] == 0)
    assert np.max(np.abs(res["w1"][engaged] - res["w2"][engaged])) <= 1e-10


def test_libcosim(fmus):
    """libcosim (through libcosimpy) loads the pythonfmu FMU in-process and runs it; the
    values at its communication points match the reference CSV."""
    pytest.importorskip("libcosimpy")
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave
    fmu = fmus("ClutchBasic")
    header, data, _ = reference("ClutchBasic")
    var = {v.name: v.valueReference for v in read_model_description(str(fmu)).modelVariables}
    ns = 1_000_000_000
    ex = CosimExecution.from_step_size(int(0.01 * ns))
    k = ex.add_local_slave(CosimLocalSlave(fmu_path=str(fmu), instance_name="m"))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    for t in (2.0, 6.0, 10.0):
        assert ex.simulate_until(int(round(t * ns)))
        row = data[np.argmin(np.abs(data[:, 0] - t))]
        got = obs.last_real_values(k, [var["w1"], var["w2"]])
        assert np.allclose(got, row[1:3], rtol=1e-5, atol=0), (t, got, row)


@pytest.mark.parametrize("name,what", [
    ("ClutchSinh", "without closed-form restart"),
    ("CsTerminate", "terminate in a when-clause")])
def test_unsupported_is_refused(tmp_path, capsys, name, what):
    """A plan the Python runtime does not run: exit 1, the feature named, no FMU written."""
    from mdae_fmu.cli import main
    out = tmp_path / "m.fmu"
    src = REFERENCE.parent / "tests" / "data" / f"{name}.mo"
    if name == "ClutchSinh":
        src = tmp_path / "ClutchSinh.mo"
        src.write_text(SINH)
    code = main(["export", str(src), "--backend", "python",
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "python backend does not support" in err and what in err
    assert "Traceback" not in err
    assert not out.exists()


def test_failed_assertion_stops_the_run(tmp_path):
    """An assertion is checked after every event iteration, its relations watched by event
    indicators (as in the C FMU): x = 1 - t fails x >= 0.5 at t = 0.5, where the run stops
    (fmi2DoStep does not complete), x there within the assertion tolerance of 0.5."""
    from mdae_fmu import api
    src = tmp_path / "AssertFall.mo"
    src.write_text("class AssertFall\n  Real x(start = 1.0, fixed = true);\nequation\n"
                   "  der(x) = -1.0;\n  assert(x >= 0.5, \"x fell below 0.5\");\n"
                   "end AssertFall;\n")
    fmu = api.export_fmu(api.load(src), tmp_path / "a.fmu", fmi_type="cs", backend="python",
                         progress=False)
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.01, output=["x"])
    assert abs(res["time"][-1] - 0.5) < 1e-6
    assert abs(res["x"][-1] - 0.5) < 1e-7


def test_model_exchange_is_refused(tmp_path, capsys):
    from mdae_fmu.cli import main
    code = main(["export", str(REFERENCE / "BouncingBall.mo"), "--backend", "python",
                 "--fmi-type", "me", "-o", str(tmp_path / "m.fmu")])
    assert code == 1
    assert "Co-Simulation FMUs only" in capsys.readouterr().err


def test_runs_without_mdae_fmu(fmus, tmp_path):
    """The FMU needs numpy, scipy and the host's Python, not mdae_fmu: FMPy runs it in a
    process where importing mdae_fmu fails."""
    fmu = fmus("BouncingBall")
    script = ("import sys; sys.modules['mdae_fmu'] = None\n"
              "from fmpy import simulate_fmu\n"
              f"r = simulate_fmu({str(fmu)!r}, stop_time=0.5, output=['h'])\n"
              "print(float(r['h'][-1]))\n" + EXIT_BEFORE_THE_WRAPPER_FINI)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # h(0.5): one bounce at t1 = sqrt(2/g), then rising at e*g*t1 (BouncingBall.mo: e = 0.7)
    g, e = 9.81, 0.7
    t1 = np.sqrt(2 / g)
    s = 0.5 - t1
    assert abs(float(proc.stdout.split()[-1]) - (e * g * t1 * s - g * s * s / 2)) < 1e-6


def test_instances_leave_the_slave_module_whole(fmus, tmp_path):
    """pythonfmu's wrapper releases the slave module's dictionary once per instance without
    owning it (mdae_fmu.fmu.pyfmu_slave._offset_wrapper_release); the slave offsets it, so
    after three instances in one host process the dictionary's count still covers every
    object that refers to it (short of that, the host aborts at exit)."""
    fmu = fmus("BouncingBall")
    script = ("import gc, sys\n"
              "from fmpy import extract, read_model_description\n"
              "from fmpy.fmi2 import FMU2Slave\n"
              f"d = extract({str(fmu)!r})\n"
              "md = read_model_description(d)\n"
              "for k in range(3):\n"
              "    f = FMU2Slave(guid=md.guid, unzipDirectory=d, instanceName='i',\n"
              "                  modelIdentifier=md.coSimulation.modelIdentifier)\n"
              "    f.instantiate()\n"
              "    f.freeInstance()\n"
              "    dct = sys.modules['mdae_pyfmu_slave'].__dict__\n"
              "    print(sys.getrefcount(dct) - 1 - len(gc.get_referrers(dct)))\n"
              "    del dct\n" + EXIT_BEFORE_THE_WRAPPER_FINI)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    margins = [int(x) for x in proc.stdout.split()]
    assert len(margins) == 3 and min(margins) >= 0, margins


def test_plan_trees_are_data():
    """The runtime walks an allow-list of operators: an unknown operator or function in a
    plan is an error, never executed."""
    from mdae_fmu.fmu.pyfmu_runtime import compile_tree
    with pytest.raises(ValueError):
        compile_tree(["__import__", ["c", "os"]], object())
    with pytest.raises(KeyError):
        compile_tree(["f", "eval", ["c", 1.0]], object())


def test_when_restart_impulse(fmus):
    """CupAndBallElastic: at every impact the standardized restart reflects the radial
    velocity (p.v+ = -e p.v-, the tangential part kept) and the impulse output of the tension
    is the integral of lam over the instant, -(vx+ - vx-)/x (from der(vx) = -lam x), computed
    here from the run-time's own left and right limits (the plan of the FMU, run in-process)."""
    from mdae_fmu.fmu.pyfmu_runtime import Simulator
    with zipfile.ZipFile(fmus("CupAndBallElastic")) as z:
        plan = json.loads(z.read("resources/mdae_plan.json"))
    slot = {v["name"]: v["vr"] for v in plan["variables"] if v["type"] == "Real"}
    sim = Simulator(plan)
    sim.set_tolerance(1e-10)
    impacts = []
    run_instants = sim._event_iteration

    def record():
        before = {n: sim.r[slot[n]] for n in ("x", "y", "vx", "vy")}
        run_instants()
        after = {n: sim.r[slot[n]] for n in ("vx", "vy", "impulse(lam)")}
        if after["vx"] != before["vx"]:
            impacts.append((before, after))
    sim._event_iteration = record
    sim.initialize(0.0)
    for k in range(200):
        sim.do_step(k * 0.01, 0.01, 2.0)
    assert len(impacts) >= 2
    e = 0.8
    for b, a in impacts:
        px, py = b["x"], b["y"]
        radial_before = (px * b["vx"] + py * b["vy"])
        radial_after = (px * a["vx"] + py * a["vy"])
        assert abs(radial_after + e * radial_before) <= 1e-9
        assert abs((py * a["vx"] - px * a["vy"]) - (py * b["vx"] - px * b["vy"])) <= 1e-9
        assert abs(a["impulse(lam)"] + (a["vx"] - b["vx"]) / px) <= 1e-9 * max(
            1.0, abs(a["impulse(lam)"]))


def test_drift_control(fmus):
    """CupAndBall at rtol 1e-6: while the rope is taut the position constraint
    x^2 + y^2 = L^2 is one of the mode's consistency equations, which the index reduction
    only differentiates; at every communication point the run-time projects onto them when
    they drift beyond 100 x rtol (as the C CS FMU does). With it the constraint holds to 1e-6
    at every communication point; without it (same run, projection disabled) it drifts past
    1e-5, so the check can fail."""
    from mdae_fmu.fmu.pyfmu_runtime import Simulator
    with zipfile.ZipFile(fmus("CupAndBall")) as z:
        plan = json.loads(z.read("resources/mdae_plan.json"))
    slot = {v["name"]: v["vr"] for v in plan["variables"] if v["type"] == "Real"}

    def worst(control: bool) -> float:
        sim = Simulator(plan)
        sim.set_tolerance(1e-6)
        if not control:
            sim._control_drift = lambda: None
        sim.initialize(0.0)
        out = 0.0
        for k in range(300):
            sim.do_step(k * 0.01, 0.01, 3.0)
            if sim.guarded.active_rows():           # a mode with consistency equations
                x, y = sim.r[slot["x"]], sim.r[slot["y"]]
                out = max(out, abs(x * x + y * y - 1.0))
        return out
    assert worst(True) <= 1e-6
    assert worst(False) > 1e-5


def test_without_pythonfmu(tmp_path, capsys, monkeypatch):
    """Without the 'python' extra the export says what to install (exit 1, no traceback)."""
    from mdae_fmu.cli import main
    monkeypatch.setitem(sys.modules, "pythonfmu", None)
    code = main(["export", str(REFERENCE / "BouncingBall.mo"), "--backend", "python",
                 "-o", str(tmp_path / "m.fmu")])
    err = capsys.readouterr().err
    assert code == 1 and "mdae_fmu[python]" in err and "Traceback" not in err
    assert not (tmp_path / "m.fmu").exists()


# --- the guarded schedule (issue 26) ------------------------------------------------------

def _recordings():
    sys.path.insert(0, str(REFERENCE.parent / "benchmarks"))
    import record_reference_trajectories as rec
    return rec, json.loads((rec.OUT / "manifest.json").read_text())["models"]


def _event_times(rec, entry) -> np.ndarray:
    """The event times of a recording: the times its Model Exchange run repeats."""
    _, rows = rec.read_csv(rec.OUT / entry["me"]["csv"])
    t = np.array(rows)[:, 0]
    return t[1:][np.diff(t) == 0]


#: the multimode reference models whose recorded C trajectories (the per-mode FMU's, which
#: the C guarded FMU reproduces to 1e-10: tests/fmu/test_reference_trajectories.py) are the
#: oracle; CupAndBallFirstOrder's recording is the per-mode delta-scheme, see below
RECORDED = ("ClutchBasic", "ClutchGuarded", "ClutchGuardedTime", "ClutchNonSemilinear",
            "CupAndBall", "AirBrake", "RLDC2", "RLDC2Switched", "RLDC2Diodes")
GUARDED_TOL = 1e-8


@pytest.mark.parametrize("name", RECORDED)
def test_guarded_schedule_matches_the_recorded_c_trajectories(fmus, name):
    """The python FMU runs the guarded schedule (its plan has one): in FMPy's Co-Simulation
    at rtol 1e-12 (the recording's CVODE tolerance; LSODA here) every recorded column within
    1e-8 of the C FMU's recording, relative to 1 + |value|, at every communication point
    but those that coincide with an event (the python run-time takes a time event 1e-10 s
    after it, in the next step, where the C FMU stops on it)."""
    rec, models = _recordings()
    entry = models[name]
    fmu = fmus(name)
    with zipfile.ZipFile(fmu) as z:
        plan = json.loads(z.read("resources/mdae_plan.json"))
    assert plan["guarded"]["blocks"] and plan["modes"] == []
    names = entry["columns"]
    res = rec.simulate(fmu, name, entry["stop"], names, "CoSimulation", rtol=entry["rtol"])
    _, rows = rec.read_csv(rec.OUT / entry["cs"]["csv"])
    ref = np.array(rows)
    got = np.array([[float(r[n]) for n in names] for r in res])
    assert got.shape == ref[:, 1:].shape and np.allclose(res["time"], ref[:, 0], rtol=1e-14)
    events = _event_times(rec, entry)
    keep = [not np.any(np.abs(events - t) <= 1e-9 * (1 + t)) for t in ref[:, 0]]
    assert sum(keep) >= len(keep) - 6
    err = np.abs(got - ref[:, 1:]) / (1 + np.abs(ref[:, 1:]))
    worst = np.unravel_index(np.argmax(err[keep]), err[keep].shape)
    assert err[keep].max() <= GUARDED_TOL, (ref[keep][worst[0], 0], names[worst[1]])


def test_restart_levels_match_the_c_guarded_fmu(fmus, tmp_path):
    """CupAndBallFirstOrder, whose per-mode instant needs the delta-scheme, has closed-form
    local restarts on the guarded schedule, a lower level (the rope's positions) solved
    first: the python FMU now runs it, and matches the C guarded FMU (CVODE) in FMPy's
    Co-Simulation at rtol 1e-12 within 1e-8 at every communication point (measured 1e-9)."""
    from mdae_fmu import api
    rec, models = _recordings()
    entry = models["CupAndBallFirstOrder"]
    c_fmu = api.export_fmu(api.load(REFERENCE / "CupAndBallFirstOrder.mo"),
                           tmp_path / "c.fmu", fmi_type="cs", progress=False,
                           default_experiment={"stopTime": entry["stop"], "tolerance": 1e-12})
    py_fmu = fmus("CupAndBallFirstOrder")
    with zipfile.ZipFile(py_fmu) as z:
        plan = json.loads(z.read("resources/mdae_plan.json"))
    assert any(b["restart"] and b["restart"]["levels"] for b in plan["guarded"]["blocks"])
    names = entry["columns"]
    runs = [rec.simulate(f, "CupAndBallFirstOrder", entry["stop"], names, "CoSimulation",
                         rtol=1e-12) for f in (c_fmu, py_fmu)]
    a, b = ([[float(r[n]) for n in names] for r in run] for run in runs)
    err = np.abs(np.array(b) - np.array(a)) / (1 + np.abs(np.array(a)))
    assert err.max() <= GUARDED_TOL


def _clutches(n: int) -> str:
    """n independent ideal clutches (RR-9334 Figure 2), each engaged by its Boolean input:
    2^n modes."""
    lines = ["class Clutches"]
    for k in range(n):
        lines += [f"  input Boolean e_{k}(start = false);",
                  f"  Real w1_{k}(start = {1.0 + 0.1 * k}, fixed = true);",
                  f"  Real w2_{k}(start = {2.0 - 0.05 * k}, fixed = true);",
                  f"  Real f1_{k};", f"  Real f2_{k};"]
    lines.append("equation")
    for k in range(n):
        lines += [f"  der(w1_{k}) = -0.1 * w1_{k} + f1_{k};",
                  f"  2.0 * der(w2_{k}) = -0.3 * w2_{k} + f2_{k};",
                  f"  0.0 = if e_{k} then w1_{k} - w2_{k} else f1_{k};",
                  f"  f1_{k} + f2_{k} = 0.0;"]
    return "\n".join(lines + ["end Clutches;", ""])


def test_beyond_the_enumeration_against_the_closed_form(tmp_path):
    """13 clutches driven by Boolean inputs: 2^13 = 8192 modes, beyond the enumeration's
    2^12 (the analysis has no per-mode report), exported by the python backend from the
    guarded schedule. Clutch k engages at T_k = (4 + 2k)/32 (a communication point): the
    closed form, shaft speeds w1 = w1(0) e^(-0.1 t), w2 = w2(0) e^(-0.15 t) before, the
    momentum-conserving restart w+ = (w1- + 2 w2-)/3, then w+ e^(-0.4/3 (t - T_k)); the
    impulse output j1 (w+ - w1-) over the last mode change (until the next clutch engages).
    Everything within 1e-8 (measured 2.4e-11) at rtol 1e-12; the mode is the guard bits."""
    from fmpy import simulate_fmu

    from mdae_fmu import api
    from mdae_fmu.analysis import analyze
    from mdae_fmu.importers.flat_modelica import parse_modelica
    n = 13
    model = parse_modelica(_clutches(n), "Clutches.mo")
    analysis = analyze(model, full=False)
    assert analysis.modes is None and analysis.guarded.n_modes == 1 << n
    fmu = api.export_fmu(model, tmp_path / "c.fmu", fmi_type="cs", backend="python",
                         analysis=analysis, progress=False)
    T = [(4 + 2 * k) / 32 for k in range(n)]
    rows = [(0.0,) + (False,) * n]
    for t in T:
        rows += [(t,) + tuple(x < t for x in T), (t,) + tuple(x <= t for x in T)]
    inputs = np.array(rows, dtype=[("time", float)] + [(f"e_{k}", bool) for k in range(n)])
    out = [f"{v}_{k}" for v in ("w1", "w2") for k in range(n)] + [
        f"impulse(f1_{k})" for k in range(n)] + ["mdae_mode"]
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=1 / 32,
                       relative_tolerance=1e-12, input=inputs, output=out)
    t = res["time"]
    for k in range(n):
        w10, w20 = 1.0 + 0.1 * k, 2.0 - 0.05 * k
        w1m, w2m = w10 * np.exp(-0.1 * T[k]), w20 * np.exp(-0.15 * T[k])
        wp = (w1m + 2.0 * w2m) / 3.0
        on = t > T[k]
        joint = wp * np.exp(-0.4 / 3 * (t - T[k]))
        last = on & (t <= (T[k + 1] if k + 1 < n else 2.0))
        for name, exact in ((f"w1_{k}", np.where(on, joint, w10 * np.exp(-0.1 * t))),
                            (f"w2_{k}", np.where(on, joint, w20 * np.exp(-0.15 * t))),
                            (f"impulse(f1_{k})", np.where(last, wp - w1m, 0.0))):
            assert np.max(np.abs(res[name] - exact)) <= 1e-8, name
    engaged = [sum(1 << k for k in range(n) if x > T[k]) for x in t]
    assert list(res["mdae_mode"]) == engaged


@pytest.mark.long
def test_merged_block_with_selected_unknowns_matches_the_c_fmu(tmp_path, monkeypatch):
    """The charged diode bank (2 diodes) with its coupled component forced into ONE merged
    block (`mdae_fmu.implicit.merged`: the guard bits select its equations and unknowns,
    through proxies copied before and after the solve, and which of its variables are
    states): the python FMU (LSODA, rtol 1e-11) takes the same switches as the C FMU of the
    default schedule (CVODE, rtol 1e-10) and the same trajectories within 1e-8 relative to
    max(1, |value|) (measured 3.3e-9 with 3 diodes)."""
    from fmpy import simulate_fmu

    from mdae_fmu import api
    from mdae_fmu.implicit import variants
    sys.path.insert(0, str(REFERENCE.parent / "benchmarks"))
    from gen_multimode import diode_bank
    model = diode_bank(2, charged=True)
    outs = [v.name for v in model.variables if v.variability == "continuous"
            and v.type == "Real"]
    c_fmu = api.export_fmu(model, tmp_path / "c.fmu", fmi_type="cs", progress=False)
    monkeypatch.setattr(variants, "MAX_VARIANTS", 0)
    py_fmu = api.export_fmu(model, tmp_path / "p.fmu", fmi_type="cs", backend="python",
                            progress=False)
    with zipfile.ZipFile(py_fmu) as z:
        plan = json.loads(z.read("resources/mdae_plan.json"))["guarded"]
    assert any(b["merged"] and b["sel"] for b in plan["blocks"]) and plan["flags"]
    runs = [simulate_fmu(str(f), stop_time=3.0, relative_tolerance=rtol,
                         output_interval=0.015, output=outs)
            for f, rtol in ((c_fmu, 1e-10), (py_fmu, 1e-11))]
    c, p = runs
    assert np.array_equal(c["time"], p["time"])
    for x in outs:
        assert np.max(np.abs(p[x] - c[x]) / np.maximum(1.0, np.abs(c[x]))) <= GUARDED_TOL, x


@pytest.mark.parametrize("j2", ["-1.0", "-0.9999999999999999"])
def test_singular_restart_is_a_runtime_error(j2):
    """Inertias that cancel, exactly or up to rounding (j1 + j2 = 1.1e-16, where the closed
    form is finite, about 1e16, and meaningless): the restart's singular factor is checked
    against the magnitude of its terms, and the run stops at the engagement with the error
    naming the time, the mode change as guard valuations, the block and the factor, as the
    C guarded FMU's does."""
    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.pyfmu_runtime import SimulationError, Simulator
    from mdae_fmu.fmu.python_backend import python_plan
    from mdae_fmu.importers.flat_modelica import parse_modelica
    model = parse_modelica(SINGULAR.replace("j2 = -1.0", f"j2 = {j2}"), "SingularClutch.mo")
    sim = Simulator(python_plan(model, analyze(model, full=False)))
    sim.initialize(0.0)
    with pytest.raises(SimulationError) as err:
        for k in range(100):
            sim.do_step(k * 0.01, 0.01, 1.0)
    text = str(err.value)
    assert text.startswith("t = 0.5") and abs(sim.time - 0.5) < 1e-9
    assert "mode change [not g] -> [g]: the restart of block" in text
    assert "the restart system is numerically singular (j1 + j2)" in text


def test_mode_changes_that_do_not_settle_are_an_error():
    """A guard that flips at every instant (ClutchGuarded's engagement replaced by an
    alternating closure): after the C FMU's bound on mode changes at one instant (2 for two
    modes) the event iteration stops with the error naming the last change and the guard
    that keeps changing, as the C guarded FMU's ``not_settling`` does."""
    import itertools

    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.pyfmu_runtime import SimulationError, Simulator
    from mdae_fmu.fmu.python_backend import python_plan
    from mdae_fmu import api
    model = api.load(REFERENCE / "ClutchGuarded.mo")
    plan = python_plan(model, analyze(model, full=False))
    assert plan["guard_names"] == ["g"] and plan["guarded"]["max_changes"] == 2
    sim = Simulator(plan)
    sim.initialize(0.0)
    flips = itertools.cycle([True, False])
    sim.guards[0] = lambda: next(flips)
    with pytest.raises(SimulationError) as err:
        sim._event_iteration()
    assert str(err.value) == ("t = 0.0: the event iteration does not settle: 3 mode changes "
                              "at this instant, the last [not g] -> [g]; guards that keep "
                              "changing: g")


def test_single_mode_plan_read_from_the_schedule():
    """A model of one mode is planned from the analysis' wrapped one-mode schedule
    (`GuardedSchedule.single`, docs/theory.md §10.14), as `mdae_fmu.fmu.export.plan_code`
    reads it, not from the per-mode report: with the report removed from the analysis the
    plan is the same one-mode block schedule (no guards, no guarded schedule)."""
    from dataclasses import replace

    from mdae_fmu import api
    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.python_backend import python_plan
    model = api.load(REFERENCE / "Pendulum.mo")
    analysis = analyze(model, full=False)
    assert analysis.guarded is not None and analysis.guarded.single is not None
    plan = python_plan(model, analysis)
    assert [m["label"] for m in plan["modes"]] == [""] and "guarded" not in plan
    bare = replace(analysis, modes=None, code_modes=None)
    assert json.dumps(python_plan(model, bare), sort_keys=True) == json.dumps(plan, sort_keys=True)
