"""`mdae_fmu.modes.explore.standardize_changes`: the restarts of chosen mode changes of an
automaton explored without standardization equal, field for field, those of the automaton
explored with it (`analyze_multimode(standardize=True)`), on the families of
benchmarks/gen_multimode.py, every change of each (the clutch chain's restarts are impulsive,
the diode bank's turn some diode currents into states, the fault chain has a change without
closed form); and the verdict, modes and cascades do not depend on the standardization."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("dd")

from mdae_fmu.modes import analyze_multimode  # noqa: E402
from mdae_fmu.modes.explore import standardize_changes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_multimode import FAMILIES  # noqa: E402


@pytest.mark.parametrize("family,n,simultaneous", [
    ("clutch_chain", 2, None), ("diode_bank", 2, None), ("fault_chain", 2, None),
    ("diode_bank", 3, False)])      # restricted, as in test_enumerated_oracle.py
def test_changes_standardized_on_demand_equal_the_standardized_exploration(family, n,
                                                                          simultaneous):
    model = FAMILIES[family](n)
    full = analyze_multimode(model, simultaneous=simultaneous)
    bare = analyze_multimode(model, simultaneous=simultaneous, standardize=False)
    assert (bare.accepted, bare.modes, bare.configs, bare.diagnostics) == \
        (full.accepted, full.modes, full.configs, full.diagnostics)
    assert [(c.src, c.dst, c.accepted, c.n_instants) for c in bare.changes] == \
        [(c.src, c.dst, c.accepted, c.n_instants) for c in full.changes]
    assert any(c.restart for c in full.changes) and not any(c.restart for c in bare.changes)
    # every change, then a few out of order (no state carried from one change to the next)
    assert standardize_changes(bare, bare.changes) == full.changes
    picked = list(range(len(bare.changes)))[::-3]
    assert standardize_changes(bare, [bare.changes[k] for k in picked]) == \
        tuple(full.changes[k] for k in picked)


def test_an_automaton_without_its_system_is_refused():
    from dataclasses import replace
    bare = analyze_multimode(FAMILIES["clutch_chain"](1), standardize=False)
    with pytest.raises(ValueError, match="built without its system"):
        standardize_changes(replace(bare, system=None), bare.changes)
