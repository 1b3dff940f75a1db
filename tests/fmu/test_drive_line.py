"""Angular momentum across the events of a small drive line written by a modeller
(benchmarks/gen_modeller.py, issue 26 acceptance): 5 shafts with random inertias (fixed seed)
and a damper each, 4 ideal clutches, in the guarded FMU. Engaging a clutch at unequal
speeds is an impulsive restart (RR-9334's ideal clutch): the speeds jump, the total
angular momentum sum J_k w_k does not (the damper, drive and load torques are bounded, the
clutch impulses cancel in the sum). Two ways to engage: Boolean inputs switched by the host
at random instants, and computed conditions (time windows) the FMU switches itself."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_modeller  # noqa: E402

N = 4
SEED = 3
STOP = 10.0


def _run(tmp_path: Path, engage: str, table=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times, speeds (one column per shaft) and inertias of a 10 s run of the guarded FMU."""
    text = gen_modeller.drive_line(N, engage, seed=SEED)
    src = tmp_path / "DriveLine.mo"
    src.write_text(text)
    fmu = tmp_path / "DriveLine.fmu"
    api.export_fmu(api.load(src), fmu, implicit=True, progress=False)
    J = np.array([float(re.search(rf"parameter Real shaft{k}\.J\([^)]*\) = ([-0-9.e]+)",
                                  text).group(1)) for k in range(1, N + 2)])
    speeds = [f"shaft{k}.w" for k in range(1, N + 2)]
    r = simulate_fmu(str(fmu), stop_time=STOP, relative_tolerance=1e-10,
                     output_interval=0.05, input=table, output=speeds, record_events=True)
    return r["time"], np.column_stack([r[w] for w in speeds]), J


def _check_momentum(t, w, J, min_events: int, min_jumps: int) -> None:
    """Sum J_k w_k equal to 1e-10 relative on both sides of every event (rows at equal
    times), while the speeds jump at ``min_jumps`` of them at least."""
    events = np.flatnonzero(np.diff(t) == 0)
    assert len(events) >= min_events, len(events)
    jumps = [np.max(np.abs(w[k + 1] - w[k])) for k in events]
    assert sum(j > 1e-3 for j in jumps) >= min_jumps, jumps
    L = w @ J
    rel = [abs(L[k + 1] - L[k]) / np.abs(J * w[k]).sum() for k in events]
    assert max(rel) < 1e-10, max(rel)


def test_host_switched_clutches_conserve_angular_momentum(tmp_path):
    names = [f"engage[{k}]" for k in range(1, N + 1)]
    table = gen_modeller.random_switchings(names, 30, STOP, seed=SEED)
    t, w, J = _run(tmp_path, "input", table)
    _check_momentum(t, w, J, min_events=25, min_jumps=5)
    # the engaged shafts turn together: after the last switching, where clutch k is held
    # engaged, shafts k and k + 1 have one speed
    last = table[-1]
    for k in range(1, N + 1):
        if last[f"engage[{k}]"]:
            assert abs(w[-1, k - 1] - w[-1, k]) < 1e-8


def test_time_window_clutches_conserve_angular_momentum(tmp_path):
    text = gen_modeller.drive_line(N, "time", seed=SEED)
    windows = [(float(re.search(rf"clutch{k}\.t_on\([^)]*\) = ([-0-9.e]+)", text).group(1)),
                float(re.search(rf"clutch{k}\.t_off\([^)]*\) = ([-0-9.e]+)", text).group(1)))
               for k in range(1, N + 1)]
    t, w, J = _run(tmp_path, "time")
    _check_momentum(t, w, J, min_events=len({x for win in windows for x in win}), min_jumps=1)
    # every window edge is an event of the FMU, at its time
    ev = t[np.flatnonzero(np.diff(t) == 0)]
    for edge in {x for win in windows for x in win}:
        assert np.min(np.abs(ev - edge)) < 1e-9, (edge, ev)


@pytest.mark.requires_sundials
def test_co_simulation_beyond_30_clutches(tmp_path):
    """The CS FMU of a drive line of 31 clutches (more guards than a mode number's 30 bits:
    `mdae_mode` then counts the mode changes) initializes and follows the closed form: with
    the clutches open, shaft k decays as w_k(0) exp(-d_k t / J_k); clutch 5 engaged by the
    host at t_e couples shafts 5 and 6 at the inertia-weighted mean speed, which then decays
    with (d_5 + d_6) / (J_5 + J_6). Before the fix, the evaluations of CS's initial event
    iteration each counted as a mode change and it never settled."""
    n = 31
    text = gen_modeller.drive_line(n, "input", seed=SEED)
    src = tmp_path / "DriveLine31.mo"
    src.write_text(text)
    fmu = tmp_path / "DriveLine31.fmu"
    api.export_fmu(api.load(src), fmu, fmi_type="cs", implicit=True, progress=False)

    def par(pattern: str) -> float:
        return float(re.search(pattern + r"\([^)]*\) = ([-0-9.e]+)", text).group(1))

    J = {k: par(rf"parameter Real shaft{k}\.J") for k in (2, 3, 5, 6)}
    d = {k: par(rf"parameter Real damper{k}\.d") for k in (2, 3, 5, 6)}
    w0 = {k: float(re.search(rf"Real shaft{k}\.w\([^)]*start = ([-0-9.e]+)", text).group(1))
          for k in (2, 3, 5, 6)}
    names = [f"engage[{k}]" for k in range(1, n + 1)]
    rows = [(0.0,) + (False,) * n, (0.52,) + (False,) * n,
            (0.52,) + tuple(k == 5 for k in range(1, n + 1)),
            (1.0,) + tuple(k == 5 for k in range(1, n + 1))]
    table = np.array(rows, dtype=[("time", np.float64)] + [(nm, np.bool_) for nm in names])
    r = simulate_fmu(str(fmu), stop_time=1.0, fmi_type="CoSimulation", output_interval=0.01,
                     relative_tolerance=1e-10, input=table,
                     output=[f"shaft{k}.w" for k in (2, 3, 5, 6)])
    t = r["time"]
    for k in (2, 3):                # open clutches all along
        assert np.allclose(r[f"shaft{k}.w"], w0[k] * np.exp(-d[k] * t / J[k]), rtol=1e-7)
    apart = np.abs(r["shaft5.w"] - r["shaft6.w"]) > 1e-9
    e = int(np.argmin(apart))       # the first communication point with one speed
    assert not apart[e:].any()
    # FMPy's master sets the input at the start of a step (the value before a step in the
    # table at that time), so the clutch engages at the communication point before e, whose
    # row holds the values before that step
    te = t[e - 1]
    assert 0.52 <= te <= 0.54, te
    before = {k: w0[k] * np.exp(-d[k] * t[:e] / J[k]) for k in (5, 6)}
    assert np.allclose(r["shaft5.w"][:e], before[5], rtol=1e-7)
    mean = sum(J[k] * w0[k] * np.exp(-d[k] * te / J[k]) for k in (5, 6)) / (J[5] + J[6])
    after = mean * np.exp(-(d[5] + d[6]) / (J[5] + J[6]) * (t[e:] - te))
    assert np.allclose(r["shaft5.w"][e:], after, rtol=1e-7)
