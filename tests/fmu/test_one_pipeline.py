"""The guarded schedule of the one analysis (issue 26: `Analysis.guarded`, exported by
`mdae_fmu.codegen.guarded`) against the enumerated per-mode FMU as the oracle: the same
trajectories to 1e-10 in Model Exchange and Co-Simulation (FMPy), on the features that were
the enumerated path's alone: impulse outputs, the standard restart of a block whose impulsive
unknowns enter non-affinely (the non-semilinear clutch, RR-9334 (188)), guards read at the
same instant (event iteration), reinit statements in a model with mode changes; and the
refusals with their messages."""

from __future__ import annotations

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
from test_multimode_fmu import COUPLED_IMPACT, OM_BOUNCING_BALL, SINGULAR, SINH  # noqa: E402


def _both(model, tmp_path: Path, stop: float, **simulate):
    """The guarded and the enumerated FMU of ``model`` (ME and CS in one archive), each run
    in Model Exchange and Co-Simulation: ``{(path, interface): result}``, the FMUs' Real
    outputs and states (every non-parameter Real but the hidden state stores)."""
    out = {}
    for implicit in (True, False):
        fmu = tmp_path / f"{model.name}_{'guarded' if implicit else 'enumerated'}.fmu"
        api.export_fmu(model, fmu, fmi_type="both", implicit=implicit, progress=False)
        md = read_model_description(str(fmu))
        names = [v.name for v in md.modelVariables if v.type == "Real"
                 and v.causality not in ("parameter", "calculatedParameter", "input")
                 and not v.name.startswith("mdae_state(")]
        for fmi_type in ("ModelExchange", "CoSimulation"):
            out[implicit, fmi_type] = simulate_fmu(
                str(fmu), fmi_type=fmi_type, stop_time=stop, relative_tolerance=1e-8,
                output_interval=stop / 500, output=names,
                record_events=fmi_type == "ModelExchange", **simulate)
    return out


def _agree(runs, tol: float = 1e-10, skip: frozenset = frozenset()) -> set[str]:
    """Assert that the guarded runs equal the enumerated ones to ``tol`` (relative to
    1 + |value|) on every variable both have but ``skip``, at the same output times; the
    variables of the enumerated run."""
    for fmi_type in ("ModelExchange", "CoSimulation"):
        g, e = runs[True, fmi_type], runs[False, fmi_type]
        assert g["time"].shape == e["time"].shape, fmi_type
        assert np.max(np.abs(g["time"] - e["time"])) <= tol * (1 + np.max(e["time"]))
        common = set(g.dtype.names) & set(e.dtype.names) - {"time"}
        assert common >= set(e.dtype.names) - {"time"}, fmi_type    # nothing lost
        for n in sorted(common - skip):
            err = np.max(np.abs(g[n] - e[n]) / (1 + np.abs(e[n])))
            assert err <= tol, (fmi_type, n, err)
    return set(runs[False, "ModelExchange"].dtype.names)


def test_impulse_outputs_of_the_clutch(tmp_path):
    """ClutchBasic: ``impulse(f1) = j1 (w+ - w1-) = -impulse(f2)``, the angular momentum the
    clutch transfers at engagement (theory.md §13.1), an output of both FMUs, equal."""
    runs = _both(api.load(ROOT / "ClutchBasic.mo"), tmp_path, 10.0)
    names = _agree(runs)
    assert {"impulse(f1)", "impulse(f2)"} <= names
    r = runs[True, "ModelExchange"]
    at = np.flatnonzero(np.diff(r["time"]) == 0)
    after = r[at[0] + 1]
    assert after["impulse(f1)"] == pytest.approx(1.0 * (after["w1"] - r[at[0]]["w1"]),
                                                 rel=1e-9)
    assert after["impulse(f2)"] == pytest.approx(-after["impulse(f1)"], rel=1e-12)


def test_non_semilinear_clutch_restart(tmp_path):
    """ClutchNonSemilinear (torque b1 f1^3): the local h -> 0 limit of the engaged block
    does not exist; its restart is the instant's standard restart (S2, impulse orders 1/3),
    w1+ = w2+ = w2-, as in the enumerated FMU."""
    model = api.load(ROOT / "ClutchNonSemilinear.mo")
    a = analyze(model)
    engaged = next(v for v in a.guarded.variants if "e3'" in v.block.label)
    assert [str(r) for r in engaged.restart.rows] == ["-mdae_left_2 + w1", "-mdae_left_2 + w2"]
    assert a.guarded.impulse_outputs == ()          # order 1/3: zero integral
    runs = _both(model, tmp_path, 10.0)
    _agree(runs)
    r = runs[True, "ModelExchange"]
    left, right = [r[k] for k in np.flatnonzero(np.abs(r["time"] - 5.0) < 1e-9)[[0, -1]]]
    assert right["w1"] == right["w2"] == pytest.approx(left["w2"], rel=1e-12)


def test_restart_without_closed_form_is_the_delta_scheme(tmp_path):
    """A torque that enters through sinh (no power-law impulse order): the engaged block's
    restart has no closed form (S3) and is computed by the delta-scheme of RR-9334 §11.3
    (`mdae_fmu.implicit.schedule.DeltaRestart`, run by the runtime's `mdae_delta_scheme`),
    as the enumerated FMU's instant is: the same right limits w1+ = w2+ = w2- (theory.md
    §13.5) and trajectories."""
    model = parse_modelica(SINH, "ClutchSinh.mo")
    engaged = next(v for v in analyze(model).guarded.variants if v.delta is not None)
    assert engaged.restart is None and len(engaged.delta.z) == 4
    runs = _both(model, tmp_path, 1.0)
    # the clock t (der(t) = 1) is outside the block: the guarded FMU keeps it continuous, the
    # enumerated delta-scheme of the whole change moves it by its last delta (t+ = t- + h)
    _agree(runs, skip=frozenset({"t"}))
    for fmi_type in ("ModelExchange", "CoSimulation"):
        g = runs[True, fmi_type]
        assert np.max(np.abs(g["t"] - g["time"])) < 1e-12
    r = runs[True, "ModelExchange"]
    left, right = [r[k] for k in np.flatnonzero(np.abs(r["time"] - 0.5) < 1e-9)[[0, -1]]]
    assert right["w1"] == pytest.approx(left["w2"], rel=1e-6)
    assert right["w2"] == pytest.approx(left["w2"], rel=1e-6)


def test_same_instant_guard_is_read_as_the_cascade_reads_it(tmp_path):
    """AirBrakeOriginal (the valve's guard reads the pressure its equations compute at the
    same instant): the schedule is built on the analysis' code form (the guard on the left
    limit, docs/decisions.md §4), as the enumerated FMU is; same events, same trajectories."""
    _agree(_both(api.load(ROOT / "AirBrakeOriginal.mo"), tmp_path, 1.0))


def test_inconsistent_start_values_fail_initialization_alike(tmp_path):
    """RLDC2Original's published starts (j1 = 2, j2 = 1 fixed, both diodes blocking) violate
    the initial mode's consistency equation j1 + j2 = 0 (docs/decisions.md §3): the analysis
    warns (W-INIT-INCONSISTENT), and the initial system of the guarded FMU holds the initial
    mode's consistency equations, so it fails to initialize as the enumerated FMU does."""
    from fmpy.fmi1 import FMICallException
    model = api.load(ROOT / "RLDC2Original.mo")
    a = analyze(model)
    assert a.guarded.initial == (False, False)
    assert any(m.startswith("W-INIT-INCONSISTENT") for m in a.messages)
    for implicit in (True, False):
        fmu = tmp_path / f"r{implicit}.fmu"
        api.export_fmu(model, fmu, implicit=implicit, progress=False)
        with pytest.raises(FMICallException, match="fmi2ExitInitializationMode"):
            simulate_fmu(str(fmu), stop_time=0.1)
    good = api.load(ROOT / "RLDC2.mo")
    assert not any(m.startswith("W-INIT") for m in analyze(good).messages)


def test_reinit_in_a_model_with_mode_changes(tmp_path):
    """The OpenModelica bouncing ball (a when-clause reinits v and assigns the flag of an
    if-equation): the reinit runs as written, then the mode change; the enumerated FMU's
    bounces, to 1e-10."""
    _agree(_both(parse_modelica(OM_BOUNCING_BALL, "BB.mo"), tmp_path, 2.0))


def test_reinit_that_moves_another_state_is_refused():
    """Two masses stuck together (x1 = x2): reinit(v1) would also move v2 through the
    constraint, which a literal reinit does not do; the guarded schedule is refused naming
    the when-clause, its line, the modes and the moved state."""
    from mdae_fmu.implicit.analysis import analyze_implicit
    from mdae_fmu.implicit.variants import guarded_schedule
    model = parse_modelica(COUPLED_IMPACT, "C.mo")
    with pytest.raises(ModelRejected, match=r"when-clause w1 \(C.mo:19\): in the modes stuck "
                       r"the restart of block .* also moves v2"):
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
    the same denominator of its closed form), not a singular linear block."""
    model = parse_modelica(SINGULAR.replace("j2 = -1.0", f"j2 = {j2}"), "SingularClutch.mo")
    engaged = next(v for v in analyze(model).guarded.variants if "e5'" in v.block.label)
    assert [t for t, _, _ in engaged.restart.singular] == ["j1 + j2"]
    fmu = tmp_path / "s.fmu"
    api.export_fmu(model, fmu, implicit=True, progress=False)
    log = failed_run_log(fmu, "fmi2NewDiscreteStates", stop_time=1.0, output_interval=0.01)
    assert ("t = 0.5: mode change into block e3+e4+e5'+e6: the restart system is numerically "
            "singular (j1 + j2)") in log


@pytest.mark.parametrize("name", ["AirBrake", "ClutchGuarded", "RLDC2", "RLDC2Diodes",
                                  "RLDC2Switched"])
def test_reference_models_agree(tmp_path, name):
    """The multimode reference models that the per-mode tests above do not run: the default
    export takes their guarded schedule (`guarded_by_default`), and it gives the per-mode
    FMU's trajectories to 1e-10 in ME and CS over the reference result's span, with the
    suite's host inputs (ClutchGuarded's g on [5, 7], RLDC2Switched's switch table).
    RLDC2Diodes to 2e-10: at some changes (t = 0.262) the guarded restart gives
    impulse(s1), impulse(s2) = -1.0e-10 where the per-mode FMU's impulse analysis has 0, a
    residue of the left limits at the located event."""
    from fmpy import read_csv
    from mdae_fmu.fmu.export import guarded_by_default
    model = api.load(ROOT / f"{name}.mo")
    assert guarded_by_default(analyze(model))
    ref = {"ClutchGuarded": "ClutchBasic"}.get(name, name)
    stop = float(read_csv(str(ROOT / f"{ref}.csv"))["time"][-1])
    inp = ROOT / f"{name}.input.csv"
    kw = {"input": read_csv(str(inp))} if inp.exists() else {}
    _agree(_both(model, tmp_path, stop, **kw), tol=2e-10 if name == "RLDC2Diodes" else 1e-10)


def test_constraint_on_positions_restarts_level_by_level():
    """Cup-and-Ball's rope (x^2 + y^2 = L^2 differentiated twice while taut, c = 2): the
    restart of the taut block has one lower level, the rope's position constraint in x, y
    (solved first: the positions move, then the restart rows give the velocities there, as
    the per-mode restart's two instants, docs/theory.md §9.6); the default export takes the
    guarded schedule, as for a clutch (c <= 1, no level)."""
    from mdae_fmu.fmu.export import guarded_by_default
    cup = analyze(api.load(ROOT / "CupAndBall.mo"))
    assert cup.guarded is not None and cup.guarded.max_offset == 2
    taut = next(v for v in cup.guarded.variants if v.restart and v.restart.levels)
    (level,) = taut.restart.levels
    assert [str(u) for u in level.unknowns] == ["x", "y"]
    assert [str(r) for r in level.rows] == ["L**2 - x**2 - y**2"]
    assert guarded_by_default(cup)
    clutch = analyze(api.load(ROOT / "ClutchBasic.mo"))
    assert clutch.guarded.max_offset == 1 and guarded_by_default(clutch)
    assert not any(v.restart.levels for v in clutch.guarded.variants if v.restart)


@pytest.mark.parametrize("name", ["CupAndBall", "CupAndBallOriginal"])
def test_cup_and_ball_agrees_with_the_per_mode_fmu(tmp_path, name):
    """The guarded Cup-and-Ball against the per-mode FMU (tightenings at 0.065, 0.47 and 1.17
    s over 0-2 s): in Model Exchange to 1e-10 on every variable (measured 3e-13; 4e-11 on the
    impulse outputs before the positions were restarted first). In Co-Simulation to 1e-10
    until the rope's drift control starts (0.26 s: the first tightening and its restart
    included); beyond, to 5e-5: the embedded CVODE's steps end with projections onto the
    rope whenever the drift passes its threshold, so a rounding difference grows there, and
    the per-mode FMU itself moves by 3e-6 when y's start value moves by 1e-15."""
    runs = _both(api.load(ROOT / f"{name}.mo"), tmp_path, 2.0)
    g, e = runs[True, "ModelExchange"], runs[False, "ModelExchange"]
    assert g.shape == e.shape
    for n in e.dtype.names:
        assert np.max(np.abs(g[n] - e[n]) / (1 + np.abs(e[n]))) <= 1e-10, n
    g, e = runs[True, "CoSimulation"], runs[False, "CoSimulation"]
    early = e["time"] <= 0.25
    for n in e.dtype.names:
        err = np.abs(g[n] - e[n]) / (1 + np.abs(e[n]))
        assert np.max(err[early]) <= 1e-10 and np.max(err) <= 5e-5, n


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


def test_export_default_and_per_mode_option(tmp_path):
    """``mdae-fmu export`` of a multimode model writes the guarded schedule's sources by
    default (CupAndBall's rope included) and with ``--implicit``, the per-mode ones with
    ``--per-mode``."""
    from zipfile import ZipFile
    from mdae_fmu.cli import main

    def guarded(args, name):
        out = tmp_path / f"{name}.fmu"
        assert main(["export", *args, "-o", str(out)]) == 0
        return "sources/model_guarded_0.c" in ZipFile(out).namelist()

    clutch = str(ROOT / "ClutchBasic.mo")
    assert guarded([clutch], "default")
    assert not guarded([clutch, "--per-mode"], "per_mode")
    assert guarded([clutch, "--implicit"], "implicit")
    assert guarded([str(ROOT / "CupAndBall.mo")], "cup")
