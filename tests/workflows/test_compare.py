"""``mdae-fmu compare`` (issue 18): the reference CSV reader refuses bad files with the line,
the tube tolerates shifted events but not wrong restarts, and the acceptance comparisons of
our ClutchBasic FMU against its closed-form CSV, the hand-written baseline FMU and a baseline
with a wrong restart (w+ = w2-)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from mdae_fmu.cli import main
from mdae_fmu.comparison import compare_signal, read_reference_csv, tube
from mdae_fmu.diagnostics import InputError

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "reference_models"
CLUTCH_CSV = REF / "ClutchBasic.csv"


@pytest.fixture(scope="module")
def baselines(clutch_baselines):
    """The hand-written ClutchBasic FMU and the copy whose restart is w1+ = w2+ = w2-."""
    return clutch_baselines


@pytest.fixture(scope="module")
def clutch_fmu():
    from cosim_util import build_me
    return build_me("ClutchBasic")


# ---------------------------------------------------------------------------------------------
# Reading reference CSVs
# ---------------------------------------------------------------------------------------------

def _write(tmp_path, text):
    p = tmp_path / "ref.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, where, words", [
    ("time,x\n0,1\n0.2,2\n0.1,3\n", ":4:1:", "time 0.10000000000000001 is before the previous"),
    ("time,x,y\n0,1,2\n1,2\n", ":3:4:", "missing columns: 2 value(s), the header names 3"),
    ("time,x\n0,1\n1,nan\n", ":3:3:", "nan in column x"),
    ("time,x\n0,1\n1,abc\n", ":3:3:", "'abc' is not a number (column x)"),
    ("t,x\n0,1\n1,2\n", ":1:1:", "the first column must be 'time'"),
])
def test_bad_reference_csv_is_refused_with_its_line(tmp_path, capsys, text, where, words):
    """Non-monotonic time, missing columns, NaN, non-numbers: exit 2, file:line:col and the
    offending line with a caret."""
    p = _write(tmp_path, text)
    with pytest.raises(InputError) as exc:
        read_reference_csv(p)
    assert f"{p}{where}" in str(exc.value) and words in str(exc.value)
    assert main(["compare", str(p), str(CLUTCH_CSV)]) == 2
    err = capsys.readouterr().err
    assert f"{p}{where}" in err and words in err and "^" in err and "Traceback" not in err


def test_csv_reader_keeps_event_rows():
    """The cross-check format's event rows (same time twice) survive: ClutchBasic.csv has its
    engagement at t = 5 with w1 jumping to (j1 w1- + j2 w2-)/(j1 + j2)."""
    tr = read_reference_csv(CLUTCH_CSV)
    ev = tr.events()
    assert [e.time for e in ev] == [5.0, 7.0]
    k = int(np.flatnonzero(tr.time == 5.0)[0])
    w1m, w2m = tr.values["w1"][k], tr.values["w2"][k]
    assert tr.values["w1"][k + 1] == pytest.approx((1.0 * w1m + 2.0 * w2m) / 3.0, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# The tube, on closed forms
# ---------------------------------------------------------------------------------------------

def _step(t, t_jump, before=0.0, after=1.0):
    """A signal with a jump at t_jump, sampled on t plus the two event rows."""
    t = np.sort(np.r_[t, t_jump, t_jump])
    y = np.where(t < t_jump, before, after).astype(float)
    k = int(np.searchsorted(t, t_jump))
    y[k] = before                      # left limit first, as in the cross-check format
    return t, y


def test_tube_tolerates_an_event_shift_within_the_time_tolerance():
    """A step at 0.5 against a step at 0.503: inside with tau = 0.005, outside with
    tau = 0.001, and the excursion is located between the two event times."""
    grid = np.linspace(0, 1, 101)
    tr, yr = _step(grid, 0.5)
    t, y = _step(grid, 0.503)
    ok = compare_signal("s", t, y, tr, yr, rtol=1e-3, atol=0.0, tau=0.005)
    assert ok.passed
    bad = compare_signal("s", t, y, tr, yr, rtol=1e-3, atol=0.0, tau=0.001)
    assert not bad.passed and 0.5 <= bad.at_time <= 0.503
    assert bad.max_excursion == pytest.approx(1.0 - 1e-3)


def test_tube_rejects_a_wrong_restart_value():
    """Same event time, wrong value after it (0.8 instead of 1): the window holds the left
    (0) and right (1) limits only, so 0.8 at t > 0.5 + tau is outside by 0.2 - tol."""
    grid = np.linspace(0, 1, 101)
    tr, yr = _step(grid, 0.5)
    t, y = _step(grid, 0.5, after=0.8)
    r = compare_signal("s", t, y, tr, yr, rtol=1e-3, atol=0.0, tau=0.005)
    assert not r.passed
    assert r.max_excursion == pytest.approx(0.2 - 1e-3)
    assert r.first_exit == pytest.approx(0.51)


def test_tube_bounds_are_window_extrema_of_a_closed_form():
    """For sin on a fine grid, the tube at t is [min, max] of sin over [t - tau, t + tau]
    (computed in closed form) widened by tol."""
    tr = np.linspace(0, 6, 601)
    yr = np.sin(tr)
    t = np.linspace(0.3, 5.7, 37)
    tau, tol = 0.2, 1e-3
    lo, hi = tube(t, tr, yr, tol, tau)
    fine = np.linspace(0, 6, 600001)
    for tk, low, h in zip(t, lo, hi):
        w = np.sin(fine[(fine >= tk - tau) & (fine <= tk + tau)])
        # linear interpolation between samples 0.01 apart: error <= h^2/8 max|sin''|
        assert low == pytest.approx(w.min() - tol, abs=2e-5)
        assert h == pytest.approx(w.max() + tol, abs=2e-5)


def test_fmpy_method_agrees_on_clear_cases():
    """fmpy.util.validate_signal's band (method='fmpy') also passes the shifted-within-tau
    step and fails the wrong restart."""
    grid = np.linspace(0, 1, 101)
    tr, yr = _step(grid, 0.5)
    t, y = _step(grid, 0.502)
    assert compare_signal("s", t, y, tr, yr, 1e-3, 0.0, 0.01, method="fmpy").passed
    t, y = _step(grid, 0.5, after=0.8)
    assert not compare_signal("s", t, y, tr, yr, 1e-3, 0.0, 0.01, method="fmpy").passed


# ---------------------------------------------------------------------------------------------
# Acceptance: ClutchBasic
# ---------------------------------------------------------------------------------------------

def test_clutch_fmu_passes_against_its_reference_csv(clutch_fmu, capsys):
    assert main(["compare", str(clutch_fmu), str(CLUTCH_CSV)]) == 0
    out = capsys.readouterr().out
    for v in ("w1", "w2", "f1", "f2"):
        assert f"ok    {v}: inside the tube" in out
    # both sides' events: engagement at 5 (mode 0 -> 1 on the FMU side), release at 7
    assert "test      t = 5 (g: 0 -> 1, mdae_mode: 0 -> 1" in out
    assert "reference t = 5" in out and "reference t = 7" in out
    assert "unmatched" not in out and "PASS" in out


def test_clutch_fmu_passes_against_the_handwritten_baseline(clutch_fmu, baselines, tmp_path,
                                                             capsys):
    junit = tmp_path / "c.xml"
    assert main(["compare", str(clutch_fmu), str(baselines[0]), "--variables", "w1,w2",
                 "--rtol", "1e-6", "--junit", str(junit)]) == 0
    suite = etree.parse(str(junit)).getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"


def test_wrong_restart_fails_naming_the_variable_and_the_time(baselines, tmp_path, capsys):
    """The baseline with w+ = w2- fails: exit 1; w1 leaves the tube at the engagement t = 5
    (where the correct restart gives 1.2863 and the wrong one 1.4538)."""
    report = tmp_path / "r.html"
    assert main(["compare", str(baselines[1]), str(CLUTCH_CSV), "--report", str(report)]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("  FAIL  w1:"))
    assert "leaves the tube at t = 5;" in line and "at t = 5:" in line
    assert "test 1.453849" in line            # w2- at t = 5
    assert "FAIL: 4 of 4 variable(s) leave the tube: w1, w2, f1, f2" in out
    html = report.read_text()
    assert 'class="tube"' in html and 'class="test"' in html


def test_unknown_variable_is_refused(clutch_fmu, capsys):
    assert main(["compare", str(clutch_fmu), str(CLUTCH_CSV), "--variables", "W1"]) == 2
    err = capsys.readouterr().err
    assert "no variable 'W1' (did you mean 'w1'?)" in err and "Traceback" not in err


def test_python_api_returns_plain_data(baselines):
    import mdae_fmu
    c = mdae_fmu.compare(baselines[1], CLUTCH_CSV, variables=["w1"])
    assert not c.passed and [s.name for s in c.failed] == ["w1"]
    s = c.failed[0]
    assert s.at_time == 5.0 and s.test_value == pytest.approx(1.4538499, abs=1e-6)
    assert [e.time for e in c.reference_events] == [5.0, 7.0]


def test_unknown_start_value_is_refused_before_simulating(baselines):
    import mdae_fmu
    with pytest.raises(InputError, match="no parameter 'J1' \\(did you mean 'j1'\\?\\)"):
        mdae_fmu.compare(baselines[0], CLUTCH_CSV, start_values={"J1": 2.0})
    # a known one changes the run: j1 = 2 engages at (2 w1- + 2 w2-)/4, not the CSV's value
    c = mdae_fmu.compare(baselines[0], CLUTCH_CSV, start_values={"j1": 2.0}, variables=["w1"])
    assert not c.passed and c.failed[0].first_exit <= 5.0


# ---------------------------------------------------------------------------------------------
# Step signals (issue 24 Deliver 3): a reference sampled without its event rows
# ---------------------------------------------------------------------------------------------

def _stair_sampled(path, step=0.2, stop=10.0):
    """reference_models/Stair.mo's closed form, n = floor(t), x = n (n - 1)/2 + n (t - n),
    sampled every ``step`` without event rows, as the Reference-FMUs write their Stair's
    CSV (one row per time: at t = 1 only the value after the increment)."""
    rows = ["time,n,x"]
    for k in range(int(round(stop / step)) + 1):
        t = round(k * step, 12)
        n = int(np.floor(t + 1e-9))
        rows.append(f"{t!r},{n},{n * (n - 1) / 2 + n * (t - n)!r}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def stair_fmu():
    from cosim_util import build_me
    return build_me("Stair")


def test_exact_stair_passes_against_a_sampled_step_reference(stair_fmu, tmp_path, capsys):
    """Stair's counter n is an Integer: compared as a step, the exact result passes against
    the closed form sampled every 0.2 s without event rows (linearly interpolated, the
    reference would ramp from n to n + 1 over the 0.2 s before each second, and the exact
    left limits at t = 1, 2, ... would leave the tube). FMPy's validate_result agrees."""
    from fmpy import simulate_fmu
    from fmpy.util import read_csv, validate_result
    ref = _stair_sampled(tmp_path / "stair.csv")
    assert main(["compare", str(stair_fmu), str(ref)]) == 0
    out = capsys.readouterr().out
    assert "ok    n: inside the tube (tolerance 0.01, a step signal)" in out
    assert "ok    x: inside the tube" in out and "PASS" in out
    assert validate_result(simulate_fmu(str(stair_fmu), stop_time=10.0),
                           read_csv(str(ref))) == 0.0


def test_wrong_stair_fails_against_the_step_reference(stair_fmu, tmp_path):
    """period = 1.1: after its first step at t = 1 (next starts at 1) the counter steps at
    2.1, 3.2, ...: n leaves the tube as soon as the reference has stepped and the test not
    (the first test sample after t = 2), and x follows."""
    import mdae_fmu
    ref = _stair_sampled(tmp_path / "stair.csv")
    c = mdae_fmu.compare(stair_fmu, ref, start_values={"period": 1.1})
    by = {s.name: s for s in c.signals}
    assert not by["n"].passed and by["n"].step and 2.0 < by["n"].first_exit <= 2.02
    assert by["n"].max_excursion == pytest.approx(1.0 - by["n"].tolerance)
    assert not by["x"].passed and not by["x"].step


def test_step_tube_holds_values_and_refuses_ramps():
    """A reference sampled every 0.1 s stepping from 0 to 1 between 0.5 and 0.6: the exact
    test (left limit 0 and right value 1 at 0.55) passes as a step and fails when the
    reference is interpolated; a test that ramps (0.5 at 0.55) fails as a step."""
    tr = np.round(np.arange(0, 1.0001, 0.1), 12)
    yr = (tr > 0.55).astype(float)
    t = np.array([0.3, 0.55, 0.55, 1.0])
    exact = np.array([0.0, 0.0, 1.0, 1.0])
    assert compare_signal("n", t, exact, tr, yr, 1e-3, 0.0, 0.001, step=True).passed
    linear = compare_signal("n", t, exact, tr, yr, 1e-3, 0.0, 0.001, step=False)
    assert not linear.passed and linear.at_time == 0.55
    ramp = compare_signal("n", t, np.array([0.0, 0.5, 0.5, 1.0]), tr, yr, 1e-3, 0.0, 0.001,
                          step=True)
    assert not ramp.passed and ramp.max_excursion == pytest.approx(0.5 - 1e-3)
    # with the reference's event rows (left limit at 0.55) a step at 0.57 is beyond tau
    tr2 = np.array([0.0, 0.5, 0.55, 0.55, 0.6, 1.0])
    yr2 = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    late = compare_signal("n", np.array([0.56, 0.57, 1.0]), np.array([0.0, 1.0, 1.0]), tr2,
                          yr2, 1e-3, 0.0, 0.005, step=True)
    assert not late.passed and late.at_time == 0.56


# ---------------------------------------------------------------------------------------------
# The interface simulated: --fmi-type (a Co-Simulation side that is wrong)
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def counters(tmp_path_factory):
    """The hand-written ME+CS counter FMUs (tests/step_fmus.py) and their closed form
    sampled every 0.01 s without event rows."""
    import step_fmus
    d = tmp_path_factory.mktemp("counters")
    fmus = {v: step_fmus.build_counter(d, v) for v in step_fmus.VARIANTS}
    return fmus, step_fmus.reference_csv(d / "counter.csv")


def test_frozen_co_simulation_fails_with_fmi_type(counters, capsys):
    """The FMU whose fmi2DoStep freezes its outputs passes on its Model Exchange side (the
    default) and fails with --fmi-type CoSimulation; the right FMU passes on both."""
    fmus, ref = counters
    assert main(["compare", str(fmus["frozen"]), str(ref)]) == 0
    assert "test ModelExchange" in capsys.readouterr().out
    assert main(["compare", str(fmus["frozen"]), str(ref), "--fmi-type", "CoSimulation"]) == 1
    out = capsys.readouterr().out
    assert "test CoSimulation" in out and "FAIL: 2 of 2 variable(s) leave the tube: x, n" in out
    assert "  FAIL  n: leaves the tube at t = 1.01;" in out
    assert main(["compare", str(fmus["good"]), str(ref), "--fmi-type", "CoSimulation"]) == 0
    assert "ok    n: inside the tube (tolerance 0.003, a step signal)" in capsys.readouterr().out


def test_fmi_type_the_fmu_lacks_is_refused(counters, capsys):
    """An interface that is not FMI's is a usage error; one the FMU does not declare is
    refused before anything runs (exit 2)."""
    fmus, ref = counters
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(ref), str(fmus["good"]), "--reference-fmi-type", "Nope"])
    assert exc.value.code == 2
    assert "'Nope' is not ModelExchange or CoSimulation" in capsys.readouterr().err
    me_only = _me_only(fmus["good"])
    assert main(["compare", str(me_only), str(ref), "--fmi-type", "CoSimulation"]) == 2
    assert f"{me_only}: the FMU has no CoSimulation interface" in capsys.readouterr().err


def _me_only(fmu: Path) -> Path:
    """A copy of ``fmu`` whose description declares Model Exchange only."""
    import zipfile
    out = fmu.with_name(fmu.stem + "_me.fmu")
    with zipfile.ZipFile(fmu) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "modelDescription.xml":
                text = data.decode()
                start = text.index("<CoSimulation")
                data = (text[:start] + text[text.index("/>", start) + 2:]).encode()
            dst.writestr(item, data)
    return out


# ---------------------------------------------------------------------------------------------
# FMUs that fail FMPy's validation: --no-validate
# ---------------------------------------------------------------------------------------------

def test_no_validate_runs_an_fmu_with_undefined_units(counters, capsys):
    fmus, ref = counters
    assert main(["compare", str(fmus["badunit"]), str(ref)]) == 2
    err = capsys.readouterr().err
    assert "invalid modelDescription.xml: The unit \"m\" of variable \"x\"" in err
    assert "--no-validate simulates it anyway" in err
    assert main(["compare", str(fmus["badunit"]), str(ref), "--no-validate"]) == 0
    out = capsys.readouterr()
    assert (f"warning: {fmus['badunit']}: modelDescription.xml: The unit \"m/s\" of variable "
            "\"der(x)\" (line 12) is not defined.") in out.err
    assert "PASS" in out.out and "Traceback" not in out.err


# ---------------------------------------------------------------------------------------------
# Degenerate references
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows, words", [
    ("0,1\n0,1\n", "its 2 row(s) are all at t = 0"),
    ("0,1\n0,5\n0,7\n", "its 3 row(s) are all at t = 0"),
    ("2.5,1\n2.5,1\n", "its 2 row(s) are all at t = 2.5"),
])
def test_reference_without_time_span_is_refused(tmp_path, capsys, rows, words):
    """All rows at one time: every test would pass (it did, exit 0); now exit 2, before the
    test is simulated, against a CSV or an FMU alike."""
    ref = _write(tmp_path, "time,w1\n" + rows)
    for test in (CLUTCH_CSV, REF / "ClutchBasic.mo"):
        assert main(["compare", str(test), str(ref)]) == 2
        err = capsys.readouterr().err
        assert f"{ref}: the reference has no time span: {words}; a comparison needs a " \
               "reference over at least two distinct times" in err


def test_tiny_time_span_gives_a_verdict_without_traceback(clutch_fmu, tmp_path):
    """Times 0 and 1e-300 (FMPy printed tracebacks): one verdict, no traceback on either
    stream of the command."""
    import subprocess
    import sys
    ref = _write(tmp_path, "time,w1\n0,1\n1e-300,1\n")
    mdae = str(Path(sys.executable).with_name("mdae-fmu"))
    for test in (clutch_fmu, CLUTCH_CSV):
        r = subprocess.run([mdae, "compare", str(test), str(ref)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode in (0, 1), r.stderr
        assert "Traceback" not in r.stdout + r.stderr
        assert ("PASS" in r.stdout) if r.returncode == 0 else (
            "simulation failed" in r.stderr or "FAIL" in r.stdout)


# ---------------------------------------------------------------------------------------------
# The Python API: explicit keywords, type hints
# ---------------------------------------------------------------------------------------------

def test_api_signature_is_explicit():
    import inspect

    import mdae_fmu
    sig = inspect.signature(mdae_fmu.compare)
    kinds = {p.kind for p in sig.parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds
    for name in ("fmi_type", "reference_fmi_type", "validate", "relative_tolerance",
                 "start_values", "timeout"):
        p = sig.parameters[name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.annotation != p.empty
    with pytest.raises(TypeError):
        mdae_fmu.compare(CLUTCH_CSV, CLUTCH_CSV, ["w1"])   # type: ignore[misc]
