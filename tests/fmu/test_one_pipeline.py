"""The guarded schedule of the one analysis (issue 26: `Analysis.guarded`, exported by
`mdae_fmu.codegen.guarded`, the one product path) on the features that were the enumerated
path's alone: impulse outputs, the standard restart of a block whose impulsive unknowns enter
non-affinely (the non-semilinear clutch, RR-9334 (188)), restarts without closed form, reinit
statements in a model with mode changes; and the refusals with their messages.

Oracles: closed forms of the restarts, and the per-mode FMU's recorded runs
(tests/data/reference_trajectories/, benchmarks/record_reference_trajectories.py): every
reference and seed model, the inline models of this file (tests/data/one_pipeline/) and the
generated ones, compared to 1e-10 by tests/fmu/test_reference_trajectories.py; Cup-and-Ball
here with the tolerances of its Co-Simulation drift control."""

from __future__ import annotations

import dataclasses

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import read_model_description, simulate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent / "reference_models"
sys.path.insert(0, str(HERE))
from fmu_files import failed_run_log  # noqa: E402
from test_multimode_fmu import COUPLED_IMPACT, SINGULAR  # noqa: E402

DATA = HERE / "data" / "one_pipeline"


def _runs(model, tmp_path: Path, stop: float, **simulate):
    """The default FMU of ``model`` (ME and CS in one archive) run in Model Exchange (with
    the event rows) and Co-Simulation: ``{interface: result}``, its Real outputs and states
    (every non-parameter Real but the hidden state stores)."""
    fmu = tmp_path / f"{model.name}.fmu"
    api.export_fmu(model, fmu, fmi_type="both", progress=False)
    md = read_model_description(str(fmu))
    names = [v.name for v in md.modelVariables if v.type == "Real"
             and v.causality not in ("parameter", "calculatedParameter", "input")
             and not v.name.startswith("mdae_state(")]
    return {fmi_type: simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=stop,
                                   relative_tolerance=1e-8, output_interval=stop / 500,
                                   output=names, record_events=fmi_type == "ModelExchange",
                                   **simulate)
            for fmi_type in ("ModelExchange", "CoSimulation")}


def test_impulse_outputs_of_the_clutch(tmp_path):
    """ClutchBasic: ``impulse(f1) = j1 (w+ - w1-) = -impulse(f2)``, the angular momentum the
    clutch transfers at engagement (theory.md §13.1), an output of the FMU in ME and CS (the
    recorded per-mode runs hold the same outputs: test_reference_trajectories.py)."""
    runs = _runs(api.load(ROOT / "ClutchBasic.mo"), tmp_path, 10.0)
    for r in runs.values():
        assert {"impulse(f1)", "impulse(f2)"} <= set(r.dtype.names)
    r = runs["ModelExchange"]
    at = np.flatnonzero(np.diff(r["time"]) == 0)
    after = r[at[0] + 1]
    assert after["impulse(f1)"] == pytest.approx(1.0 * (after["w1"] - r[at[0]]["w1"]),
                                                 rel=1e-9)
    assert after["impulse(f2)"] == pytest.approx(-after["impulse(f1)"], rel=1e-12)


def test_non_semilinear_clutch_restart(tmp_path):
    """ClutchNonSemilinear (torque b1 f1^3): the local h -> 0 limit of the engaged block
    does not exist; its restart is the instant's standard restart (S2, impulse orders 1/3),
    w1+ = w2+ = w2- (theory.md §13.5), in ME and CS."""
    model = api.load(ROOT / "ClutchNonSemilinear.mo")
    a = analyze(model)
    engaged = next(v for v in a.guarded.variants if "e3'" in v.block.label)
    assert [str(r) for r in engaged.restart.rows] == ["-mdae_left_2 + w1", "-mdae_left_2 + w2"]
    assert a.guarded.impulse_outputs == ()          # order 1/3: zero integral
    runs = _runs(model, tmp_path, 10.0)
    r = runs["ModelExchange"]
    left, right = [r[k] for k in np.flatnonzero(np.abs(r["time"] - 5.0) < 1e-9)[[0, -1]]]
    assert right["w1"] == right["w2"] == pytest.approx(left["w2"], rel=1e-12)
    c = runs["CoSimulation"]
    engaged = (c["time"] > 5.0 + 1e-9) & (c["time"] < 7.0 - 1e-9)
    assert engaged.any() and np.max(np.abs(c["w1"][engaged] - c["w2"][engaged])) < 1e-8


def test_restart_without_closed_form_is_the_delta_scheme(tmp_path):
    """A torque that enters through sinh (no power-law impulse order): the engaged block's
    restart has no closed form (S3) and is computed by the delta-scheme of RR-9334 §11.3
    (`mdae_fmu.implicit.schedule.DeltaRestart`, run by the runtime's `mdae_delta_scheme`):
    the right limits w1+ = w2+ = w2- (theory.md §13.5), the clock t (der(t) = 1, outside the
    block) continuous. The per-mode FMU's run is recorded (one_pipeline.ClutchSinh)."""
    model = api.load(DATA / "ClutchSinh.mo")
    engaged = next(v for v in analyze(model).guarded.variants if v.delta is not None)
    assert engaged.restart is None and len(engaged.delta.z) == 4
    runs = _runs(model, tmp_path, 1.0)
    for fmi_type in ("ModelExchange", "CoSimulation"):
        g = runs[fmi_type]
        assert np.max(np.abs(g["t"] - g["time"])) < 1e-12
    r = runs["ModelExchange"]
    left, right = [r[k] for k in np.flatnonzero(np.abs(r["time"] - 0.5) < 1e-9)[[0, -1]]]
    assert right["w1"] == pytest.approx(left["w2"], rel=1e-6)
    assert right["w2"] == pytest.approx(left["w2"], rel=1e-6)


def test_inconsistent_start_values_fail_initialization(tmp_path):
    """RLDC2Original's published starts (j1 = 2, j2 = 1 fixed, both diodes blocking) violate
    the initial mode's consistency equation j1 + j2 = 0 (docs/decisions.md §3): the analysis
    warns (W-INIT-INCONSISTENT), and the initial system of the FMU holds the initial mode's
    consistency equations, so it fails to initialize (as the per-mode FMU did: its recorded
    run, test_reference_trajectories.py)."""
    from fmpy.fmi1 import FMICallException
    model = api.load(ROOT / "RLDC2Original.mo")
    a = analyze(model)
    assert a.guarded.initial == (False, False)
    assert any(m.startswith("W-INIT-INCONSISTENT") for m in a.messages)
    fmu = tmp_path / "r.fmu"
    api.export_fmu(model, fmu, progress=False)
    with pytest.raises(FMICallException, match="fmi2ExitInitializationMode"):
        simulate_fmu(str(fmu), stop_time=0.1)
    good = api.load(ROOT / "RLDC2.mo")
    assert not any(m.startswith("W-INIT") for m in analyze(good).messages)


def test_reinit_that_moves_another_state_is_refused():
    """Two masses stuck together (x1 = x2): reinit(v1) would also move v2 through the
    constraint, which a literal reinit does not do; the guarded schedule is refused naming
    the when-clause, its line, the modes and the moved state."""
    from mdae_fmu.implicit.analysis import analyze_implicit
    from mdae_fmu.implicit.variants import guarded_schedule
    model = parse_modelica(COUPLED_IMPACT, "C.mo")
    with pytest.raises(ModelRejected, match=r"when-clause w1 \(C.mo:19\): in the modes stuck "
                       r"the restart of block .* also moves v2 \(v2\+ = -v1-\), which"):
        guarded_schedule(model, analyze_implicit(model))


def test_transient_guard_on_an_equation_of_a_switching_model_is_refused():
    """``if edge(c)`` selecting an equation of a model with mode changes: the message of the
    enumerated exporter (docs/multimode-fmu.md, "When-clauses")."""
    from mdae_fmu.implicit.analysis import analyze_implicit
    from mdae_fmu.implicit.variants import guarded_schedule
    text = """model T
  Real w1(start = 1, fixed = true);
  Real w2(start = 2, fixed = true);
  Real f;
  Real y;
  input Boolean g;
equation
  der(w1) = f;
  der(w2) = -f;
  0 = if g then w1 - w2 else f;
  if edge(g) then
    y = w1;
  else
    y = 0;
  end if;
end T;
"""
    model = parse_modelica(text, "T.mo")
    with pytest.raises(ModelRejected, match=r"a transient guard \(edge\(c\), initial\(\)\) "
                       r"selects the equations e4 \(T.mo:12\), e5 \(T.mo:14\)"):
        guarded_schedule(model, analyze_implicit(model))


@pytest.mark.parametrize("j2", ["-1.0", "-0.9999999999999999"])
def test_numerically_singular_restart_is_named(tmp_path, j2):
    """Two shafts whose inertias cancel (exactly, or up to rounding: j1 + j2 = 1.1e-16):
    the engaged block's restart system is linear with determinant j1 + j2; its factor is
    checked against the magnitude of its terms before the solve, and the FMU returns
    fmi2Error naming the block, the time and the vanishing factor (the enumerated FMU names
    the same denominator of its closed form), not a singular linear block, then the mode
    change as the per-mode FMU names it (guard valuations before and after)."""
    model = parse_modelica(SINGULAR.replace("j2 = -1.0", f"j2 = {j2}"), "SingularClutch.mo")
    engaged = next(v for v in analyze(model).guarded.variants if "e5'" in v.block.label)
    assert [t for t, _, _ in engaged.restart.singular] == ["j1 + j2"]
    fmu = tmp_path / "s.fmu"
    api.export_fmu(model, fmu, implicit=True, progress=False)
    log = failed_run_log(fmu, "fmi2NewDiscreteStates", stop_time=1.0, output_interval=0.01)
    at = log.index("t = 0.5: restart of the block of equations e3+e4+e5'+e6: the restart "
                   "system is numerically singular (j1 + j2)")
    assert log[at + 1].startswith("t = 0.5: mode change [not g] -> [g]: the restart of block ")
    assert log[at + 1].endswith(" (equations e3+e4+e5'+e6) failed")


def test_constraint_on_positions_restarts_level_by_level():
    """Cup-and-Ball's rope (x^2 + y^2 = L^2 differentiated twice while taut, c = 2): the
    restart of the taut block has one lower level, the rope's position constraint in x, y
    (solved first: the positions move, then the restart rows give the velocities there, as
    the per-mode restart's two instants, docs/theory.md §9.6); the analysis builds the
    guarded schedule, which the export takes, as for a clutch (c <= 1, no level)."""
    cup = analyze(api.load(ROOT / "CupAndBall.mo"))
    assert cup.guarded is not None and cup.guarded.max_offset == 2
    taut = next(v for v in cup.guarded.variants if v.restart and v.restart.levels)
    (level,) = taut.restart.levels
    assert [str(u) for u in level.unknowns] == ["x", "y"]
    assert [str(r) for r in level.rows] == ["L**2 - x**2 - y**2"]
    clutch = analyze(api.load(ROOT / "ClutchBasic.mo"))
    assert clutch.guarded.max_offset == 1
    assert not any(v.restart.levels for v in clutch.guarded.variants if v.restart)


@pytest.mark.parametrize("name", ["CupAndBall", "CupAndBallOriginal"])
def test_cup_and_ball_reproduces_the_recorded_per_mode_fmu(tmp_path, name):
    """Cup-and-Ball (tightenings at 0.065, 0.47 and 1.17 s over 0-2 s) against the per-mode
    FMU's recorded runs (FMPy, rtol 1e-12): in Model Exchange to 1e-10 on every variable,
    event rows included. In Co-Simulation to 1e-10 until the rope's drift control starts
    (0.26 s: the first tightening and its restart included); beyond, to 5e-5: the embedded
    CVODE's steps end with projections onto the rope whenever the drift passes its
    threshold, so a rounding difference grows there, and the per-mode FMU itself moved by
    3e-6 when y's start value moved by 1e-15 (test_reference_trajectories.py holds the strict
    comparison as an expected failure)."""
    from test_reference_trajectories import MODELS, OUT, mismatches
    from record_reference_trajectories import read_csv, simulate
    entry = MODELS[name]
    fmu = tmp_path / f"{name}.fmu"
    api.export_fmu(api.load(ROOT / f"{name}.mo"), fmu, fmi_type="both", progress=False,
                   default_experiment={"stopTime": entry["stop"], "tolerance": entry["rtol"]})
    names = entry["columns"]
    runs = {}
    for tag, fmi_type in (("me", "ModelExchange"), ("cs", "CoSimulation")):
        result = simulate(fmu, name, entry["stop"], names, fmi_type, rtol=entry["rtol"])
        ref = np.array(read_csv(OUT / entry[tag]["csv"])[1])
        got = np.array([[float(r[n]) for n in names] for r in result]).reshape(-1, len(names))
        runs[tag] = (result["time"], got, ref)
    t, got, ref = runs["me"]
    assert mismatches(t, got, ref[:, 0], ref[:, 1:], names) == []
    t, got, ref = runs["cs"]
    assert np.max(np.abs(t - ref[:, 0])) <= 1e-12     # the grid (15 digits in the CSV)
    err = np.abs(got - ref[:, 1:]) / (1 + np.abs(ref[:, 1:]))
    early = t <= 0.25
    assert np.max(err[early]) <= 1e-10 and np.max(err) <= 5e-5


def test_first_order_cup_and_ball_restart_is_the_closed_form(tmp_path):
    """CupAndBallFirstOrder (velocities as states): at every tightening the guarded FMU's
    right limits are the standardized restart's closed form (docs/theory.md §13.2), the
    position projected radially onto the rope, x+ = L x-/|p-|, and the velocity's radial
    part removed, v+ = v- - p (p.v-)/|p|^2, to 1e-12. The per-mode FMU computes this instant
    by the delta-scheme (S3), which stops at a relative change of 1e-8: the two FMUs agree to
    1e-7 (measured 6.5e-8 in ME), the guarded one being the exact one."""
    model = api.load(ROOT / "CupAndBallFirstOrder.mo")
    fmu = tmp_path / "fo.fmu"
    api.export_fmu(model, fmu, progress=False)
    r = simulate_fmu(str(fmu), stop_time=2.0, relative_tolerance=1e-8, output_interval=0.004,
                     output=["x", "y", "vx", "vy", "s"], record_events=True)
    events = np.flatnonzero(np.diff(r["time"]) == 0)
    tight = [k for k in events if abs(np.hypot(r["x"][k], r["y"][k]) - 1.0) < 1e-6
             and r["x"][k] * r["vx"][k] + r["y"][k] * r["vy"][k] > 1e-3]
    assert len(tight) >= 2
    for k in tight:
        b, a = r[k], r[k + 1]
        p = np.hypot(b["x"], b["y"])
        radial = (b["x"] * b["vx"] + b["y"] * b["vy"]) / p ** 2
        assert a["x"] == pytest.approx(b["x"] / p, abs=1e-12)
        assert a["y"] == pytest.approx(b["y"] / p, abs=1e-12)
        assert a["vx"] == pytest.approx(b["vx"] - b["x"] * radial, abs=1e-12)
        assert a["vy"] == pytest.approx(b["vy"] - b["y"] * radial, abs=1e-12)


def test_export_takes_the_guarded_schedule_and_refuses_per_mode(tmp_path, capsys):
    """``mdae-fmu export`` of a multimode model writes the guarded schedule's sources, with or
    without ``--implicit`` (CupAndBall's rope included); the removed ``--per-mode`` exits 2
    naming the guarded default, writes nothing, and ``implicit=False`` raises the same
    `InputError` (issue 26)."""
    from zipfile import ZipFile
    from mdae_fmu.cli import main
    from mdae_fmu.diagnostics import InputError

    def guarded(args, name):
        out = tmp_path / f"{name}.fmu"
        assert main(["export", *args, "-o", str(out)]) == 0
        return "sources/model_guarded_0.c" in ZipFile(out).namelist()

    clutch = str(ROOT / "ClutchBasic.mo")
    assert guarded([clutch], "default")
    assert guarded([clutch, "--implicit"], "implicit")
    assert guarded([str(ROOT / "CupAndBall.mo")], "cup")
    capsys.readouterr()
    assert main(["export", clutch, "--per-mode", "-o", str(tmp_path / "p.fmu")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("export: the per-mode FMU (--per-mode, implicit=False) was removed")
    assert "exported on its guarded block schedule, the default" in err
    assert "Traceback" not in err and not (tmp_path / "p.fmu").exists()
    with pytest.raises(InputError, match=r"was removed \(issue 26\).*the default"):
        api.export_fmu(api.load(clutch), tmp_path / "q.fmu", implicit=False, progress=False)
    assert not (tmp_path / "q.fmu").exists()


def test_no_per_mode_fallback_without_a_guarded_schedule(tmp_path):
    """A multimode analysis without a guarded schedule (the analysis rejects such a model,
    E-NO-SCHEDULE: only a saved or altered analysis, or the enumerated one, can be one) is
    refused by the export with the reason, never exported on per-mode schedules; a
    single-mode model has its mode's schedule wrapped (`Analysis.guarded.single`), and
    ``implicit=True`` refuses an analysis of one mode without a schedule (made by hand)
    with the reason, before any code is generated."""
    clutch = analyze(api.load(ROOT / "ClutchBasic.mo"))
    bare = dataclasses.replace(clutch, guarded=None, guarded_refusal="no schedule, by hand")
    with pytest.raises(ModelRejected, match=r"model ClutchBasic: no guarded schedule: "
                       r"no schedule, by hand"):
        api.export_fmu(api.load(ROOT / "ClutchBasic.mo"), tmp_path / "c.fmu",
                       analysis=bare, progress=False)
    assert not (tmp_path / "c.fmu").exists()
    # the enumerated analysis (the debugging view) builds no schedule: the message says so
    # and names the default analysis as the way to an FMU
    listed = analyze(api.load(ROOT / "ClutchBasic.mo"), implicit=False)
    assert listed.accepted and listed.guarded is None
    with pytest.raises(ModelRejected, match=r"model ClutchBasic: no guarded schedule: the "
                       r"analysis enumerated the modes \(implicit=False, `mdae-fmu analyze "
                       r"--list-modes`: the debugging view, which builds none\); export with "
                       r"the default analysis \(`mdae-fmu export MODEL`"):
        api.export_fmu(api.load(ROOT / "ClutchBasic.mo"), tmp_path / "c.fmu",
                       analysis=listed, progress=False)
    assert not (tmp_path / "c.fmu").exists()
    ball = analyze(api.load(ROOT / "BouncingBall.mo"))
    assert ball.guarded is not None and ball.guarded.single is ball.modes
    old = dataclasses.replace(ball, guarded=None)
    with pytest.raises(ModelRejected, match=r"model BouncingBall: no guarded schedule: "
                       r"the analysis built no guarded schedule"):
        api.export_fmu(api.load(ROOT / "BouncingBall.mo"), tmp_path / "b.fmu",
                       analysis=old, implicit=True, progress=False)
    assert not (tmp_path / "b.fmu").exists()
    # without --implicit it is given its mode's schedule: the FMU of the default analysis
    for name, a in (("b.fmu", old), ("ball.fmu", ball)):
        api.export_fmu(api.load(ROOT / "BouncingBall.mo"), tmp_path / name, analysis=a,
                       progress=False)
    assert (tmp_path / "b.fmu").read_bytes() == (tmp_path / "ball.fmu").read_bytes()


def test_a_per_mode_report_is_no_second_path_to_a_schedule():
    """A per-mode report handed to the analysis (``modes=``, `export`'s ``report=``) is read
    by the enumerated analysis only: for a multimode model the default analysis is still the
    one analysis (no mode enumerated, its own schedule), the same as without the report; with
    ``implicit=False`` the report is the enumerated analysis' and no schedule is built
    (docs/decisions.md §18)."""
    from mdae_fmu import analysis as A
    from mdae_fmu.structure.per_mode import analyze_modes
    model = api.load(ROOT / "ClutchBasic.mo")
    report = analyze_modes(model)
    assert len(report.modes) == 2
    one = A.analyze(model, modes=report)
    assert one.modes is None and one.automaton is None and one.guarded is not None
    assert one.guarded == A.analyze(model).guarded
    listed = A.analyze(model, modes=report, implicit=False)
    assert listed.modes is report and listed.guarded is None and listed.accepted
