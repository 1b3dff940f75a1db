"""Transient guards selecting equations (issue 26 Deliver 2): the elastic Cup-and-Ball
(reference_models/CupAndBallElastic.mo: ``if edge(contact) then`` selects the rope equations
for the instant of the impact) is a model of one long mode, exported on its per-mode schedule
(the mode's blocks, the slack rope), its impact the analysed restart of the change into the
transient mode (docs/theory.md §7, `mdae_fmu.codegen.restarts.with_transient_restarts`). The
guarded schedule of the one analysis runs no such instant: it refuses an equation selected by
a transient guard (stop 42 removed its transient restarts, which no product route built,
docs/decisions.md §19).

Oracle: an independent closed form of the physics: free fall between impacts, each impact at
|p| = L found as a root of the quartic |p(t)|^2 = L^2, the radial velocity reversed with
restitution e and the tangential velocity kept (so the kinetic energy drops by
(1 - e^2) v_r^2 / 2 per unit mass)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
pytest.importorskip("fmpy")

from mdae_fmu import api  # noqa: E402
from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.cli import main  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.implicit.analysis import analyze_implicit  # noqa: E402
from mdae_fmu.implicit.variants import guarded_schedule  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "fmu"))
from record_reference_trajectories import OUT, simulate  # noqa: E402
from test_reference_trajectories import segments  # noqa: E402

ELASTIC = ROOT / "reference_models" / "CupAndBallElastic.mo"
NO_LAW = ROOT / "reference_models" / "CupAndBallElasticNoLaw.mo"
L, G, E_RESTITUTION = 1.0, 9.81, 0.8


def impacts(stop: float, state=(0.0, 0.0, 1.0, 0.0)) -> list[tuple[float, tuple, tuple]]:
    """``[(t, left limits, right limits)]`` of the elastic Cup-and-Ball's impacts up to
    ``stop`` in closed form (module docstring); states ``(x, y, vx, vy)``."""
    out = []
    t = 0.0
    x, y, vx, vy = state
    while True:
        # |p(t + s)|^2 - L^2 in s, free fall: a quartic; its first root after the start
        coeffs = [G * G / 4, -G * vy, vx * vx + vy * vy - G * y, 2 * (x * vx + y * vy),
                  x * x + y * y - L * L]
        roots = [r.real for r in np.roots(coeffs) if abs(r.imag) < 1e-9 and r.real > 1e-9]
        s = min(roots)
        for _ in range(5):             # Newton on the root, to rounding
            s -= np.polyval(coeffs, s) / np.polyval(np.polyder(coeffs), s)
        if t + s > stop:
            return out
        t += s
        x, y, vx, vy = x + vx * s, y + vy * s - G * s * s / 2, vx, vy - G * s
        vr = (x * vx + y * vy) / L                 # radial velocity, outwards
        left = (x, y, vx, vy)
        vx, vy = vx - (1 + E_RESTITUTION) * vr * x / L, vy - (1 + E_RESTITUTION) * vr * y / L
        out.append((t, left, (x, y, vx, vy)))


def closed_form(times: np.ndarray) -> np.ndarray:
    """``(x, y, vx, vy)`` at ``times`` (right limits at an impact), from `impacts`."""
    events = impacts(float(times[-1]))
    starts = [(0.0, (0.0, 0.0, 1.0, 0.0))] + [(t, right) for t, _, right in events]
    out = []
    for t in times:
        t0, (x, y, vx, vy) = [s for s in starts if s[0] <= t + 1e-12][-1]
        s = t - t0
        out.append((x + vx * s, y + vy * s - G * s * s / 2, vx, vy - G * s))
    return np.array(out)


@pytest.fixture(scope="module")
def elastic_fmu(tmp_path_factory) -> tuple[Path, dict]:
    """The FMU of CupAndBallElastic (`mdae-fmu export`'s, both FMI types) and its
    recording's entry (stop time, tolerance)."""
    entry = json.loads((OUT / "manifest.json").read_text())["models"]["CupAndBallElastic"]
    fmu = tmp_path_factory.mktemp("elastic") / "CupAndBallElastic.fmu"
    model = api.load(ELASTIC)
    api.export_fmu(model, fmu, fmi_type="both", progress=False,
                   default_experiment={"stopTime": entry["stop"], "tolerance": entry["rtol"]})
    return fmu, entry


def test_the_closed_form_conserves_what_the_impact_law_says():
    """The oracle itself: impacts at |p| = L, the radial velocity reversed with e, the
    tangential velocity and the position kept, the energy lost (1 - e^2) v_r^2 / 2; the first
    impact of the ball thrown horizontally at 1 m/s from the centre is at |p| = 1."""
    events = impacts(2.0)
    assert len(events) == 4
    assert 0.4 < events[0][0] < 0.5
    for _, (x, y, vx, vy), (x2, y2, vx2, vy2) in events:
        assert math.hypot(x, y) == pytest.approx(L, abs=1e-12)
        assert (x2, y2) == (x, y)
        vr, vr2 = (x * vx + y * vy) / L, (x * vx2 + y * vy2) / L
        assert vr > 0 and vr2 == pytest.approx(-E_RESTITUTION * vr, abs=1e-12)
        assert (x * vy2 - y * vx2) == pytest.approx(x * vy - y * vx, abs=1e-12)
        lost = (vx * vx + vy * vy - vx2 * vx2 - vy2 * vy2) / 2
        assert lost == pytest.approx((1 - E_RESTITUTION ** 2) * vr * vr / 2, abs=1e-12)


def test_the_guarded_schedule_refuses_the_transient_guard():
    """The analysis of CupAndBallElastic is that of its one long mode (the per-mode schedule
    wrapped, `GuardedSchedule.single`); the guarded schedule of its implicit analysis, which
    no product route builds for it, refuses the equation the transient guard selects,
    naming it, its line and the schedule that runs it."""
    model = api.load(ELASTIC)
    a = analyze(model)
    assert a.accepted and a.guarded is not None and a.guarded.single is not None
    with pytest.raises(ModelRejected, match=r"model CupAndBallElastic: equation e\w+ "
                       r"\(CupAndBallElastic.mo:\d+\) is selected by a transient guard "
                       r"\(edge, change, initial\), whose instant the guarded schedule does "
                       r"not run; a model of one long mode runs it on its per-mode schedule, "
                       r"what `mdae-fmu export` builds for it"):
        guarded_schedule(model, analyze_implicit(model))


@pytest.mark.parametrize("fmi_type", ["ModelExchange", "CoSimulation"])
def test_fmu_follows_the_closed_form(elastic_fmu, fmi_type):
    """The FMU against the closed form (module docstring): every output point to
    1e-8, and in Model Exchange every impact (an event row pair) at the closed form's time
    with its left and right limits, so the full radial reflection (vx jumps too, although
    the law reinits vy only) and not the literal reinit."""
    fmu, entry = elastic_fmu
    names = ["x", "y", "vx", "vy"]
    result = simulate(fmu, "CupAndBallElastic", entry["stop"], names, fmi_type,
                      rtol=entry["rtol"])
    t = np.asarray(result["time"], dtype=float)
    got = np.array([[float(r[n]) for n in names] for r in result])
    last = np.r_[t[1:] != t[:-1], True]            # the right limit at an event
    assert np.max(np.abs(got[last] - closed_form(t[last]))) < 1e-8
    if fmi_type != "ModelExchange":
        return
    events = impacts(entry["stop"])
    at = [(te, left, right) for te, left, right in segments(t, got)
          if np.any(left != right)]                 # the event rows' first and last
    assert len(at) == len(events)
    for (te, left, right), (t_ref, left_ref, right_ref) in zip(at, events):
        assert te == pytest.approx(t_ref, abs=1e-9)
        assert np.max(np.abs(left - left_ref)) < 1e-8
        assert np.max(np.abs(right - right_ref)) < 1e-8
        assert abs(right[2] - left[2]) > 1e-3        # vx jumps


def test_transient_mode_without_an_impact_law_is_refused(tmp_path, capsys):
    """CupAndBallElasticNoLaw: the transient mode of the impact has no restart law; the
    export refuses it (exit 1) with the analysis' diagnosis, and the guarded schedule of its
    implicit analysis refuses it naming the equation."""
    code = main(["export", str(NO_LAW), "--implicit", "-o", str(tmp_path / "n.fmu")])
    assert code == 1
    err = capsys.readouterr().err
    assert "E-TRANSIENT-UNDER: when switching not edge(contact) -> edge(contact): transient " \
           "mode [edge(contact)] is underdetermined" in err
    assert not (tmp_path / "n.fmu").exists()
    model = api.load(NO_LAW)
    with pytest.raises(ModelRejected, match=r"equation e\w+ \(CupAndBallElasticNoLaw.mo:\d+\) "
                       r"is selected by a transient guard .* whose instant the guarded "
                       r"schedule does not run"):
        guarded_schedule(model, analyze_implicit(model))


def test_a_schedule_that_cannot_be_built_rejects_the_model(tmp_path, capsys, monkeypatch):
    """No model of the seeds, the reference models or the corpus has a guarded schedule that
    cannot be built (docs/multimode-fmu.md, "Models without a guarded schedule"), so the
    failure is injected: ClutchGuarded's engaged block (equations e3, e4) refused as a block
    whose restart has no limit. The model is then rejected (exit 1 from ``analyze`` and from
    ``export``, no FMU written, no fallback to the per-mode FMU), the message naming the
    reason and the modes concerned as a formula over the guards."""
    from mdae_fmu.implicit import variants
    real = variants._variant

    def refusing(cb, *args, **kwargs):
        if "e3" in cb.equations:
            raise ModelRejected("equation e3: its restart has no limit as the instant's "
                                "length goes to 0 (not affine in the impulsive unknowns)")
        return real(cb, *args, **kwargs)

    monkeypatch.setattr(variants, "_variant", refusing)
    source = ROOT / "reference_models" / "ClutchGuarded.mo"
    expected = ("E-NO-SCHEDULE: the guarded block schedule cannot be built: model "
                "ClutchGuarded: in the modes g: equation e3: its restart has no limit as the "
                "instant's length goes to 0 (not affine in the impulsive unknowns)")
    a = analyze(api.load(source))
    assert not a.accepted and a.guarded is None
    assert expected in a.messages
    fmu = tmp_path / "c.fmu"
    assert main(["export", str(source), "-o", str(fmu)]) == 1
    err = capsys.readouterr().err
    assert expected in err and "rejected by the analysis" in err
    assert not fmu.exists()
    assert main(["analyze", str(source)]) == 1
    assert expected in capsys.readouterr().out
