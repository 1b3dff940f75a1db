"""stateSelect hints in the choice of independent states (structure/state_select.py).

Oracles: the pendulum's consistency equations (x = vx', y = vy' aliases, x² + y² = L² and its
derivative) allow exactly the pairs {coordinate, its velocity} and mixed pairs; the hints must
pick the pair the user prefers, and an impossible `always` must be reported. The FMU of the
pendulum with a hint simulates the same trajectory as without (the hint changes no equation).
"""

from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.cli import main
from mdae_fmu.structure.per_mode import Instance
from mdae_fmu.structure.state_select import select_states

PENDULUM = (Path(__file__).resolve().parents[2] / "reference_models" / "Pendulum.mo")

X, DX, Y, DY, VX, VY = (
    Instance(name="x", order=0),
    Instance(name="x", order=1),
    Instance(name="y", order=0),
    Instance(name="y", order=1),
    Instance(name="vx", order=0),
    Instance(name="vy", order=0),
)
STATES = (X, DX, Y, DY, VX, VY)
CONSTRAINTS = [frozenset({DX, VX}), frozenset({DY, VY}), frozenset({X, Y}),
               frozenset({X, DX, Y, DY})]


@pytest.mark.parametrize("hints, selected", [
    ({}, (X, VX)),
    ({"y": "prefer"}, (Y, DY)),
    ({"y": "prefer", "vy": "prefer"}, (Y, VY)),
    ({"x": "avoid"}, (Y, VX)),
    ({"x": "never", "vx": "never"}, (Y, VY)),
    ({"vy": "always"}, (VY, X)),
])
def test_hints_order_the_candidates(hints, selected):
    sel = select_states(STATES, CONSTRAINTS, hints)
    assert sel.selected == selected
    assert set(sel.computed) == set(STATES) - set(selected)
    assert sel.notes == ()


def test_always_that_the_structure_forbids_is_reported():
    sel = select_states(STATES, CONSTRAINTS, {"x": "always", "y": "always"})
    assert sel.selected[0] == X and Y in sel.computed
    assert len(sel.notes) == 1 and sel.notes[0].startswith("y: stateSelect = always cannot")


def test_without_constraints_every_state_is_independent():
    sel = select_states((X, VX), [], {"x": "never"})
    assert sel.selected == (X, VX) and sel.computed == ()
    assert "x: stateSelect = never cannot be honoured" in sel.notes[0]


def _pendulum(tmp_path, modifier):
    text = PENDULUM.read_text()
    if modifier:
        text = text.replace('Real y(start = -0.8)', f'Real y(start = -0.8, {modifier})')
        assert modifier in text
    p = tmp_path / "Pendulum.mo"
    p.write_text(text)
    return p


def test_report_shows_the_preferred_coordinate(tmp_path, capsys):
    p = _pendulum(tmp_path, "stateSelect = StateSelect.prefer")
    assert main(["analyze", "--verbose", str(p)]) == 0
    out = capsys.readouterr().out
    assert "selected states (2, stateSelect): y, der(y); computed from the consistency " \
           "equations: x, der(x), vx, vy" in out
    assert main(["analyze", "--verbose", str(PENDULUM)]) == 0
    assert "selected states (2, stateSelect): x, vx;" in capsys.readouterr().out


@pytest.mark.long      # builds an FMU: out of -m quick
def test_preferred_coordinate_simulates_the_same_trajectory(tmp_path):
    fmpy = pytest.importorskip("fmpy")
    runs = []
    for k, modifier in enumerate(("", "stateSelect = StateSelect.prefer")):
        d = tmp_path / str(k)
        d.mkdir()
        fmu = d / "p.fmu"
        api.export_fmu(api.load(_pendulum(d, modifier)), fmu, progress=False)
        runs.append(fmpy.simulate_fmu(str(fmu), stop_time=2.0, output_interval=0.01,
                                      relative_tolerance=1e-8, output=["x", "y"]))
    a, b = runs
    assert len(a) == len(b)
    assert abs(a["x"] - b["x"]).max() < 1e-6 and abs(a["y"] - b["y"]).max() < 1e-6
    assert abs(a["x"] ** 2 + a["y"] ** 2 - 1.0).max() < 1e-5       # on the circle, L = 1


def test_old_openmodelica_spelling_of_the_attribute_is_read(tmp_path):
    """omc's old front end (instantiateModel of the MSL 3.1 examples) prints the attribute
    capitalized, `StateSelect = StateSelect.prefer`, and declares the enumeration beside it
    (`parameter enumeration(never, avoid, default, prefer, always) s`), which resolves the
    literal to its position: both must read as `stateSelect = StateSelect.prefer`."""
    src = tmp_path / "OldOmc.mo"
    src.write_text("class OldOmc\n"
                   "  parameter enumeration(never, avoid, default, prefer, always) s = "
                   "StateSelect.default;\n"
                   "  Real x(start = 1.0, fixed = true, StateSelect = StateSelect.prefer);\n"
                   "  Real y(StateSelect = StateSelect.never);\n"
                   "equation\n  der(x) = -x;\n  y = 2.0 * x;\nend OldOmc;\n")
    model = api.load(src)
    assert model.var("x").state_select == "prefer"
    assert model.var("y").state_select == "never"
