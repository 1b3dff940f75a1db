"""The discrete variables the event iteration first holds at their previous values
(`mdae_fmu.codegen.guarded.held_discrete`, docs/multimode-fmu.md "Event iteration"): those
whose equations read a relation on a value the mode decides. The MSL friction's
``startForward``/``startBackward`` read its path parameter ``sa``, which the locked and the
sliding modes compute differently; a guard that reads only states, parameters or ``pre()``
(the clutch's input, the diodes' delayed ``pre(s)``) holds nothing, so those models get no
trial in their code (their trajectories are the recorded ones:
tests/fmu/test_reference_trajectories.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.analysis import analyze
from mdae_fmu.codegen.emit import make_printers
from mdae_fmu.codegen.events import plan_events
from mdae_fmu.codegen.guarded import held_discrete, held_threshold_code, plan_guarded

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fmu"))


def _plan(model):
    a = analyze(model)
    return a.code_model or model, plan_guarded(a.code_model or model, a.guarded)


def _held(model) -> list[str]:
    return [t.name for t in held_discrete(_plan(model)[1])]


def _thresholds(model) -> list[str]:
    code, plan = _plan(model)
    ev = plan_events(code, plan.compiled, extra_exprs=plan.guards + plan.watched,
                     steady=plan.steady_states)
    return held_threshold_code(make_printers(plan.compiled, ev).main, plan, ev)


def test_friction_holds_the_booleans_that_read_its_path_parameter(tmp_path):
    """ShaftFriction (tests/fmu/test_bearing_friction.py): ``startForward`` and
    ``startBackward`` read ``sa > tau0_max``, ``sa < -tau0_max`` (``sa``: the friction torque
    when locked, the acceleration's path parameter when sliding); ``locked`` and ``mode``
    read them and ``pre(mode)``, ``w > 0`` on a state of every mode: evaluated, not held."""
    from test_bearing_friction import SHAFT_INLINE
    src = tmp_path / "ShaftFriction.mo"
    src.write_text(SHAFT_INLINE)
    assert _held(api.load(src)) == ["startForward", "startBackward"]


@pytest.mark.parametrize("name", ["ClutchBasic", "ClutchGuarded", "RLDC2Diodes", "CupAndBall",
                                  "AirBrake"])
def test_reference_models_hold_nothing(name):
    """The reference models' guards read states, inputs, parameters or ``pre()`` of the
    values their modes compute (the delayed guards of docs/decisions.md §4): no held
    variable, so the event iteration is the cascade it was."""
    assert _held(api.load(ROOT / "reference_models" / f"{name}.mo")) == []


def test_friction_takes_the_relations_on_its_path_parameter_at_their_threshold(tmp_path):
    """The relations the held Booleans read are the four on ``sa`` (``sa > tau0_max``,
    ``sa > tau0``, ``sa < -tau0_max``, ``sa < -tau0``), all strict: within the projection
    tolerance of its threshold each is false (`held_threshold_code`; at peak = 1 the locked
    torque at the re-stick equals the static limit, docs/multimode-fmu.md "Event
    iteration"). ``w > 0`` and ``w < 0``, read by ``mode`` (not held), are not among them; a
    model without held variables has no such line."""
    from test_bearing_friction import SHAFT_INLINE
    src = tmp_path / "ShaftFriction.mo"
    src.write_text(SHAFT_INLINE)
    lines = _thresholds(api.load(src))
    assert len(lines) == 4
    assert all("/* sa */" in c and c.endswith("= 0;") and "MDAE_PROJECT_TOL" in c for c in lines)
    assert not any("/* w */" in c for c in lines)
    assert _thresholds(api.load(ROOT / "reference_models" / "ClutchBasic.mo")) == []
