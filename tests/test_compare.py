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

ROOT = Path(__file__).resolve().parents[1]
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
    for tk, l, h in zip(t, lo, hi):
        w = np.sin(fine[(fine >= tk - tau) & (fine <= tk + tau)])
        # linear interpolation between samples 0.01 apart: error <= h^2/8 max|sin''|
        assert l == pytest.approx(w.min() - tol, abs=2e-5)
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
