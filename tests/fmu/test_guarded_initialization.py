"""Initialization of the guarded FMU (mdae_fmu.codegen.guarded `_initial_consistency`,
`guarded_initialization`): the consistency equations of the mode the FMU starts in, which the
host chooses with inputs and start values, are rows of the initial system with the fixed
start values (docs/multimode-fmu.md, "The guarded schedule"). Oracles: the closed form of
the engaged clutch (docs/theory.md §13.1), the fixed start values themselves, and the
InitialUnknowns dependencies measured by perturbation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("dd")
from fmpy import extract, read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi2 import FMU2Model  # noqa: E402

from mdae_fmu import load  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# ClutchGuarded with the speed of shaft 2 free (no fixed = true): engaged at t = 0, the
# initial system must move w2 onto w1 (the mode's consistency equation w1 = w2), not w1
CLUTCH_FREE_W2 = (ROOT / "reference_models" / "ClutchGuarded.mo").read_text().replace(
    "Real w2(start = w02, fixed = true)", "Real w2(start = w02)").replace(
    "ClutchGuarded", "ClutchFreeW2")
J1, J2, K1, K2, W01, W02 = 1.0, 2.0, 0.01, 0.0125, 1.0, 1.5


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """The guarded FMUs of ClutchGuarded and of its variant with w2 free."""
    d = tmp_path_factory.mktemp("ginit")
    src = d / "ClutchFreeW2.mo"
    src.write_text(CLUTCH_FREE_W2)
    assert "fixed = true" in CLUTCH_FREE_W2 and "Real w2(start = w02)" in CLUTCH_FREE_W2
    return {name: export(load(path), d / f"{name}.fmu", progress=False, implicit=True)
            for name, path in (("ClutchGuarded", ROOT / "reference_models/ClutchGuarded.mo"),
                               ("ClutchFreeW2", src))}


def _initialize(path, booleans=(), reals=()):
    """(w1, w2, der(w1), der(w2)) after fmi2ExitInitializationMode; None if it fails."""
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu = FMU2Model(guid=md.guid, unzipDirectory=extract(str(path)),
                    modelIdentifier=md.modelExchange.modelIdentifier, instanceName="init")
    fmu.instantiate(loggingOn=True)
    try:
        fmu.setupExperiment(startTime=0.0)
        for name, value in booleans:
            fmu.setBoolean([vr[name]], [value])
        for name, value in reals:
            fmu.setReal([vr[name]], [value])
        fmu.enterInitializationMode()
        try:
            fmu.exitInitializationMode()
        except Exception:
            return None
        return tuple(fmu.getReal([vr[n] for n in ("w1", "w2", "der(w1)", "der(w2)")]))
    finally:
        fmu.freeInstance()


def test_engaged_at_start_moves_the_free_state_not_the_fixed_one(guarded):
    """g = true before initialization: w1 keeps its fixed start 1.0 exactly, the free w2 is
    moved onto it, and both decay at the engaged rate (k1 + k2)/(j1 + j2)."""
    w1, w2, d1, d2 = _initialize(guarded["ClutchFreeW2"], booleans=[("g", True)])
    assert w1 == W01 and abs(w2 - W01) < 1e-12
    rate = -(K1 + K2) / (J1 + J2)
    assert abs(d1 - rate * W01) < 1e-12 and abs(d2 - rate * W01) < 1e-12


def test_released_at_start_keeps_every_start_value(guarded):
    """g = false: no consistency equation, the free w2 keeps its start value."""
    w1, w2, d1, d2 = _initialize(guarded["ClutchFreeW2"])
    assert (w1, w2) == (W01, W02)
    assert abs(d1 + K1 * W01 / J1) < 1e-15 and abs(d2 + K2 * W02 / J2) < 1e-15


def test_engaged_at_start_follows_the_closed_form(guarded):
    """Engaged throughout from t = 0 with w2 free: w1 = w2 = w01 exp(-(k1+k2) t/(j1+j2))."""
    r = simulate_fmu(str(guarded["ClutchFreeW2"]), stop_time=2.0, output_interval=0.5,
                     start_values={"g": True}, relative_tolerance=1e-10,
                     fmi_type="ModelExchange", output=["w1", "w2"])
    for t, w1, w2 in zip(r["time"], r["w1"], r["w2"]):
        exact = W01 * math.exp(-(K1 + K2) * t / (J1 + J2))
        assert abs(w1 - exact) < 1e-8 and abs(w2 - exact) < 1e-8, t


def test_fixed_starts_that_contradict_the_initial_mode_are_an_error(guarded):
    """ClutchGuarded engaged at t = 0 with w1 = 1 and w2 = 1.5 both fixed: over-determined
    (MLS: fixed starts are initial equations), the initialization fails instead of starting
    off the constraint w1 = w2; with equal fixed starts it succeeds and keeps them."""
    assert _initialize(guarded["ClutchGuarded"], booleans=[("g", True)]) is None
    w1, w2, d1, d2 = _initialize(guarded["ClutchGuarded"], booleans=[("g", True)],
                                 reals=[("w02", W01)])
    assert (w1, w2) == (W01, W01)
    assert abs(d1 - d2) < 1e-15 and abs(d1 + (K1 + K2) * W01 / (J1 + J2)) < 1e-12


def test_initial_unknowns_list_the_input_that_selects_the_mode(guarded):
    """The derivatives depend on the engage input g (the mode decides their block):
    InitialUnknowns and Derivatives list it."""
    md = read_model_description(str(guarded["ClutchGuarded"]))
    for group in (md.initialUnknowns, md.derivatives):
        for u in group:
            if u.variable.name in ("der(w1)", "der(w2)"):
                assert "g" in [d.name for d in u.dependencies], u.variable.name
