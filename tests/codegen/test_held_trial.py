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
from mdae_fmu.codegen.guarded import held_discrete, plan_guarded

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fmu"))


def _held(model) -> list[str]:
    a = analyze(model)
    plan = plan_guarded(a.code_model or model, a.guarded, a.automaton)
    return [t.name for t in held_discrete(plan)]


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
