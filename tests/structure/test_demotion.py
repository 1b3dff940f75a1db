"""Issue 13: demotion of conditions that are structural by incidence only but leave every
mode's structure unchanged (mdae_fmu.structure.demotion).

Oracles: closed forms (the MSL semiconductor's linearized exponential on a decaying state,
the half-wave integral of sin), scipy solve_ivp (a slew-rate limiter under noEvent), and,
for the models that must keep their modes, the Σ-method offsets of each mode."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from fmpy import simulate_fmu
from scipy.integrate import solve_ivp
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from mdae_fmu.analysis import analyze, render_text
from mdae_fmu.diagnostics import ModelRejected
from mdae_fmu.fmu.export import export
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure.conditionals import (_if_atoms, _row, _select, classify_conditionals,
                                             structural_atoms_of)
from mdae_fmu.structure.per_mode import analyze_modes, classify_variables
from mdae_fmu.structure.printing import expr_text


def _model(text: str, name: str):
    return parse_modelica(text, name)


def _demoted(m) -> list[str]:
    return [expr_text(a) for a in classify_conditionals(m).demoted]


def _incidence_structural(m) -> list[str]:
    """Atoms structural by incidence in some equation (before the demotion)."""
    unknowns = frozenset(classify_variables(m).continuous)
    out: list[str] = []
    for eq in m.equations:
        out += [expr_text(a) for a in structural_atoms_of(eq.residual, unknowns)[0]]
    return out


def _blocks_solvable_in_every_branch(m) -> None:
    """Every diagonal block of the single mode's BTF is structurally nonsingular in every
    branch of its equations' if-expressions: the leading pattern of the branch (entries
    sigma(e, x) = d_x - c_e) restricted to the block has a perfect matching, so a 1x1 block
    reads its unknown in every branch (module docstring of mdae_fmu.structure.demotion: a
    perfect matching of a sub-pattern of a block-triangular pattern lies in the diagonal
    blocks)."""
    (mode,) = analyze_modes(m, latent=False).modes
    unknowns = frozenset(classify_variables(m).continuous)
    residual = {eq.id: eq.residual for eq in m.equations}
    for block in mode.blocks:
        atoms = list(dict.fromkeys(a for e, _ in block.equations
                                   for a in _if_atoms(residual[e])))
        for bits in itertools.product((False, True), repeat=len(atoms)):
            val = dict(zip(atoms, bits))
            pattern = np.zeros((len(block.equations), len(block.unknowns)), dtype=np.int8)
            for i, (e, k) in enumerate(block.equations):
                orders = dict(_row(_select(residual[e], val), unknowns))
                for j, u in enumerate(block.unknowns):
                    pattern[i, j] = orders.get(u.name) == u.order - k
            match = maximum_bipartite_matching(csr_matrix(pattern), perm_type="column")
            assert (match >= 0).all(), (block, bits)


# --- the MSL semiconductor pattern: ExMin = exp(EMin) read by one branch only ---------------

JUNCTION = """model Junction
  parameter Real EMin = -2;
  parameter Real EMax = 40;
  Real ExMin;
  Real ExMax;
  Real i;
  Real x(start = 1, fixed = true);
equation
  ExMin = exp(EMin);
  ExMax = exp(EMax);
  i = smooth(1, if x < EMin then ExMin * (1 + (x - EMin))
    else if x > EMax then ExMax * (1 + (x - EMax)) else exp(x));
  der(x) = -i;
end Junction;
"""


def _junction_exact(t: np.ndarray) -> np.ndarray:
    """x' = -exp(x) from x(0) = 1: x = -ln(e^-1 + t) until x = EMin = -2 at
    t1 = e^2 - e^-1; then x' = -e^-2 (x + 3): x = -3 + exp(-e^-2 (t - t1))."""
    t1 = np.exp(2.0) - np.exp(-1.0)
    early = -np.log(np.exp(-1.0) + np.minimum(t, t1))
    late = -3.0 + np.exp(-np.exp(-2.0) * (t - t1))
    return np.where(t <= t1, early, late)


def test_linearized_exponential_is_demoted_and_matches_the_closed_form(tmp_path):
    """Both conditions are structural by incidence (a branch reads ExMin or ExMax, the others
    not) but every one of the 3 consistent modes has the same offsets and the junction
    equation is never differentiated: demoted, one mode, an event indicator each; x follows
    the closed form through the switch at t1 = e^2 - e^-1."""
    m = _model(JUNCTION, "Junction.mo")
    assert sorted(_incidence_structural(m)) == ["x < EMin", "x > EMax"]
    assert sorted(_demoted(m)) == ["x < EMin", "x > EMax"]
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    assert "    event      x < EMin" in render_text(m, a)
    _blocks_solvable_in_every_branch(m)
    path = export(m, tmp_path / "junction.fmu", progress=False)
    r = simulate_fmu(str(path), stop_time=12.0, output_interval=0.05,
                     relative_tolerance=1e-10, output=["x", "i"])
    assert np.max(np.abs(r["x"] - _junction_exact(r["time"]))) < 1e-6
    t1 = np.exp(2.0) - np.exp(-1.0)
    late = r["time"] > t1 + 0.1
    assert np.allclose(r["i"][late], np.exp(-2.0) * (r["x"][late] + 3.0), rtol=1e-8)


SINW = """class SinW
  Real w;
  Real y;
  Real x(start = 0, fixed = true);
equation
  w = sin(time);
  y = if w > 0 then w else 0;
  der(x) = y;
end SinW;
"""


def test_half_wave_is_one_mode_and_integrates_to_two_per_period(tmp_path):
    """y = if w > 0 then w else 0: a branch reads no w (structural by incidence), yet both
    modes solve y, w, der(x) explicitly with c = 0: demoted; x(t) = integral of max(sin, 0)."""
    m = _model(SINW, "SinW.mo")
    assert _demoted(m) == ["w > 0"]
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    _blocks_solvable_in_every_branch(m)
    path = export(m, tmp_path / "sinw.fmu", analysis=a, progress=False)
    r = simulate_fmu(str(path), stop_time=4 * np.pi, output_interval=np.pi / 8,
                     relative_tolerance=1e-10, output=["x"])
    k = np.floor(r["time"] / (2 * np.pi) + 1e-12)
    tau = r["time"] - 2 * np.pi * k
    exact = 2 * k + np.where(tau <= np.pi, 1 - np.cos(tau), 2.0)
    assert np.max(np.abs(r["x"] - exact)) < 1e-6


# --- under noEvent: the slew-rate limiter of MSL's OpAmpDetailed -----------------------------

SLEW = """model Slew
  parameter Real sr = 0.5;
  parameter Real tau = 0.2;
  Real x(start = 0, fixed = true);
  Real vs(start = 0, fixed = true);
equation
  der(x) = (sin(3 * time) - x) / tau;
  der(vs) = if noEvent(der(x) > sr) then sr else if noEvent(der(x) < -sr) then -sr else der(x);
end Slew;
"""


def test_slew_rate_limiter_under_no_event_is_demoted_and_matches_scipy(tmp_path):
    """A branch without der(x) makes both noEvent conditions structural by incidence (they
    were refused); the offsets are those of every mode (x and vs states, c = 0): demoted to
    the no-event class, one mode, no event indicator; vs matches scipy."""
    m = _model(SLEW, "Slew.mo")
    c = classify_conditionals(m)
    assert sorted(expr_text(a) for a in c.no_event) == sorted(_demoted(m))
    assert len(c.demoted) == 2 and not c.structural
    a = analyze(m)
    assert a.accepted and len(a.modes.modes) == 1
    path = export(m, tmp_path / "slew.fmu", analysis=a, progress=False)
    r = simulate_fmu(str(path), stop_time=4.0, output_interval=0.02,
                     relative_tolerance=1e-10, output=["x", "vs"])

    def rhs(t, y):
        dx = (np.sin(3 * t) - y[0]) / 0.2
        return [dx, float(np.clip(dx, -0.5, 0.5))]

    ref = solve_ivp(rhs, (0, 4.0), [0.0, 0.0], t_eval=r["time"], method="LSODA",
                    rtol=1e-11, atol=1e-12)
    assert np.max(np.abs(r["vs"] - ref.y[1])) < 1e-5
    assert np.max(np.abs(r["x"] - ref.y[0])) < 1e-6


# --- conditions that must stay structural ----------------------------------------------------

CLAMP = """model Clamp
  Real w;
  Real y;
  Real x(start = 0, fixed = true);
equation
  w = sin(time);
  der(x) = y;
  0 = if w > 0 then y - w else x - cos(time);
end Clamp;
"""

INDEX2 = """model Switch2
  Real x(start = 1, fixed = true);
  Real z(start = 1, fixed = true);
  Real lam;
  Boolean g;
equation
  g = time > 1;
  der(x) = -x + lam;
  der(z) = -z;
  0 = if g then x - sin(time) else x - z;
end Switch2;
"""


def _offsets(m) -> set:
    return {(tuple(sorted(md.c.items())), tuple(sorted(md.d.items())))
            for md in analyze_modes(m, latent=False).modes}


@pytest.mark.parametrize("text, name, atom, modes, offsets", [
    # toggling changes the offsets: x = cos(time) constrains the state x (c = 1)
    (CLAMP, "Clamp.mo", "w > 0", 2, 2),
    # same offsets in both modes, but the constraint holding the atom is differentiated
    # (index 2, c = 1): the switch moves x, a restart the union cannot give
    (INDEX2, "Switch2.mo", "g", 2, 1),
])
def test_condition_changing_offsets_or_differentiated_stays_structural(text, name, atom,
                                                                       modes, offsets):
    m = _model(text, name)
    c = classify_conditionals(m)
    assert [expr_text(a) for a in c.structural] == [atom] and c.demoted == ()
    report = analyze_modes(m, latent=False)
    assert len(report.modes) == modes
    assert len(_offsets(m)) == offsets
    constraint = m.equations[-1].id
    # the equation holding the atom is differentiated in some mode
    assert max(md.c[constraint] for md in report.modes) == 1


def test_atoms_are_demoted_together_only_when_their_union_holds():
    """Two junctions: each toggle keeps the offsets; checked group by group the pair is
    demoted together, the union of all four modes is the single mode analysed."""
    second = "\n  i2 = smooth(1, if y < EMin then ExMin else exp(y));\n  der(y) = 1 - i2;"
    text = JUNCTION.replace("Real i;", "Real i;\n  Real i2;\n  Real y(start = 0, fixed = true);") \
        .replace("der(x) = -i;", "der(x) = -i;" + second)
    m = _model(text, "Junction2.mo")
    assert sorted(_demoted(m)) == ["x < EMin", "x > EMax", "y < EMin"]
    assert len(analyze_modes(m, latent=False).modes) == 1
    _blocks_solvable_in_every_branch(m)


def test_blocks_of_a_union_can_be_coupled_and_stay_solvable_in_each_branch():
    """0 = if w > 0 then x2 - w else x1 + 2 x2 reads x1 in one branch only: the union's BTF
    solves it with x1 + x2 = cos(time) as one block of two unknowns, which has a perfect
    matching in both branches (x2 from the if-equation and x1 from the other, or the 2x2
    system): the Newton block is solvable whichever branch holds."""
    text = """model Coupled
  Real w;
  Real x1;
  Real x2;
  Real s(start = 0, fixed = true);
equation
  w = sin(time);
  x1 + x2 = cos(time);
  0 = if w > 0 then x2 - w else x1 + 2 * x2;
  der(s) = x1 + x2;
end Coupled;
"""
    m = _model(text, "Coupled.mo")
    assert _demoted(m) == ["w > 0"]
    (mode,) = analyze_modes(m, latent=False).modes
    assert any(len(b.unknowns) == 2 for b in mode.blocks)
    _blocks_solvable_in_every_branch(m)


def test_greedy_keeps_the_demotable_atoms_beside_one_that_must_stay():
    """The junction's two conditions beside Clamp's w > 0 (which changes the offsets): the
    candidates together fail, one by one the junction's are demoted and w > 0 stays: 2 modes
    (the junction's 3 consistent valuations no longer multiply them)."""
    clamp = "\n  Real w;\n  Real y;\n  Real z(start = 0, fixed = true);"
    text = JUNCTION.replace("Real i;", "Real i;" + clamp).replace(
        "der(x) = -i;", "der(x) = -i;\n  w = sin(time);\n  der(z) = y;\n"
                        "  0 = if w > 0 then y - w else z - cos(time);")
    m = _model(text, "JunctionClamp.mo")
    assert sorted(_demoted(m)) == ["x < EMin", "x > EMax"]
    assert [expr_text(a) for a in classify_conditionals(m).structural] == ["w > 0"]
    assert len(analyze_modes(m, latent=False).modes) == 2


@pytest.mark.long
def test_a_union_that_fails_stops_at_its_first_differing_group(monkeypatch):
    """The RLC ladder of 12 ideal diodes (benchmarks/gen_modeller.py, 2^12 consistent modes):
    no diode's condition is demoted (the branch that reads ``s`` alone differentiates it),
    which the first mode of the first group shows: the offsets of the other modes are not
    computed (one Σ-method of a mode, where all 4096 were; `demotion._LazyOffsets`). The
    verdict is the one of all modes computed: each atom stays structural."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_modeller import rlc_cells

    from mdae_fmu.structure import demotion
    computed = []
    offsets = demotion._Modes.offsets
    monkeypatch.setattr(demotion._Modes, "offsets",
                        lambda self, v: computed.append(v) or offsets(self, v))
    # (the enumeration of the part's modes, which the formulas replace beyond 2^8)
    monkeypatch.setattr(demotion, "ENUMERATE_UP_TO", demotion.MAX_ENUMERATED_MODES)
    m = parse_modelica(rlc_cells(12, "diode"))
    classes = classify_conditionals(m)
    assert classes.demoted == () and len(classes.structural) == 12
    assert 1 <= len(computed) <= 12
    # (the same verdict with every mode's offsets computed first: 4096 Σ-methods)
    monkeypatch.setattr(demotion, "_LazyOffsets", lambda s, vals: [s.offsets(v) for v in vals])
    assert demotion.demotable_atoms(m, classes, classes.structural) == ()
    assert len(computed) > 4096


def _no_event_cells(n: int) -> str:
    """n independent cells x' = -y - 1/2, y = if noEvent(x > 0) then x else 0, x(0) = k + 1."""
    lines = [f"model NoEventCells{n}"]
    lines += [f"  Real x{k}(start = {k + 1}, fixed = true);\n  Real y{k};" for k in range(n)]
    lines.append("equation")
    lines += [f"  der(x{k}) = -y{k} - 0.5;\n  y{k} = if noEvent(x{k} > 0) then x{k} else 0;"
              for k in range(n)]
    return "\n".join(lines + [f"end NoEventCells{n};", ""])


def _no_event_cell_exact(x0: float, t: np.ndarray) -> np.ndarray:
    """x' = -x - 1/2 while x > 0: x = (x0 + 1/2) e^-t - 1/2, zero at t* = ln(2 x0 + 1);
    then x' = -1/2: x = -(t - t*)/2."""
    ts = np.log(2 * x0 + 1)
    return np.where(t <= ts, (x0 + 0.5) * np.exp(-t) - 0.5, -0.5 * (t - ts))


def test_no_event_cells_are_demoted_whatever_their_number():
    """n independent cells ``y = if noEvent(x > 0) then x else 0`` (2^n modes, which the
    enumeration of the whole model stopped at 2^12: 13 cells were refused): each cell is a
    connected component of the model's graph, checked with its own 2 modes
    (docs/theory.md §4.10), so every condition is demoted at n = 13 and 40: one mode whose
    offsets are each cell's closed form (der(x) = -y - 1/2 and y = x or 0: d_x = 1,
    d_y = 0, c = 0 on both equations)."""
    for n in (13, 40):
        m = parse_modelica(_no_event_cells(n), f"NoEventCells{n}.mo")
        assert len(_demoted(m)) == n
        (mode,) = analyze_modes(m, latent=False).modes
        assert mode.d == {**{f"x{k}": 1 for k in range(n)}, **{f"y{k}": 0 for k in range(n)}}
        assert set(mode.c.values()) == {0} and len(mode.c) == 2 * n


@pytest.mark.long
def test_thirteen_no_event_cells_simulate_to_their_closed_form(tmp_path):
    """The 13 cells of `test_no_event_cells_are_demoted_whatever_their_number` exported and
    simulated: each x crosses 0 at t* = ln(2 x0 + 1) (no event, the right-hand side is
    continuous there) and follows its closed form."""
    m = parse_modelica(_no_event_cells(13), "NoEventCells13.mo")
    path = export(m, tmp_path / "cells.fmu", progress=False)
    r = simulate_fmu(str(path), stop_time=4.0, output_interval=0.05,
                     relative_tolerance=1e-10, output=[f"x{k}" for k in range(13)])
    for k in range(13):
        assert np.max(np.abs(r[f"x{k}"] - _no_event_cell_exact(k + 1.0, r["time"]))) < 1e-6


def _whole_model_oracle(monkeypatch) -> None:
    """`demotion.connected_parts` replaced by one part holding the whole model: the demotion
    as it was before the decomposition, one Σ-method per mode of all the structural atoms."""
    from mdae_fmu.structure import demotion
    monkeypatch.setattr(demotion, "connected_parts",
                        lambda model, positions, continuous, atoms, definitions:
                        [(list(positions), list(continuous), list(atoms))])


def _verdict(text: str, name: str) -> tuple:
    """(demoted atoms, structural atoms) of the model, or the refusal's text."""
    try:
        c = classify_conditionals(parse_modelica(text, name))
    except ModelRejected as exc:
        return ("rejected", str(exc))
    return ([expr_text(a) for a in c.demoted], sorted(expr_text(a) for a in c.structural))


_CELLS = {
    # the MSL semiconductor pattern: demotable
    "junction": ["E{k} = exp(-1);", "w{k} = sin(time + {k});",
                 "y{k} = if x{k} < -1 then E{k} * (x{k} + 2) else exp(x{k});",
                 "der(x{k}) = -y{k} + 0.1 * w{k}"],
    # half wave: demotable
    "wave": ["E{k} = 2;", "w{k} = sin(time + {k});", "y{k} = if w{k} > 0 then w{k} else 0;",
             "der(x{k}) = y{k} - x{k}"],
    # the clamp: a toggle changes the offsets, stays structural
    "clamp": ["E{k} = 1;", "w{k} = sin(time + {k});", "der(x{k}) = y{k}",
              "0 = if w{k} > 0 then y{k} - w{k} else x{k} - cos(time);"],
    # under noEvent: demotable (refused if it stays structural)
    "noevent": ["E{k} = 1;", "w{k} = 0;", "y{k} = if noEvent(x{k} > 0) then x{k} else 0;",
                "der(x{k}) = -y{k} - 0.5"],
    # thresholds on time shared between cells (consistency couples the atoms): demotable
    "timed": ["E{k} = 1;", "w{k} = cos(time);", "y{k} = if time > {k} then w{k} else 0;",
              "der(x{k}) = y{k} - x{k}"],
    # a mode with w defined twice and y not at all: singular
    "singular": ["E{k} = 1;", "w{k} = sin(time);",
                 "0 = if w{k} > 0 then y{k} - w{k} else w{k} - 2;", "der(x{k}) = y{k}"],
}


def _random_cells(rng: np.random.Generator, n: int) -> str:
    """n cells of the kinds of `_CELLS`, each der(x) equation coupled to another cell's y
    with probability 1/3 (which joins their components)."""
    lines = ["model Cells"]
    body = []
    for k in range(n):
        kind = rng.choice(sorted(_CELLS))
        lines += [f"  Real x{k}(start = {k + 1}, fixed = true);",
                  f"  Real y{k};\n  Real w{k};\n  Real E{k};"]
        eqs = [e.format(k=k) for e in _CELLS[kind]]
        eqs = [e if e.endswith(";") else e + (f" + 0.1 * y{int(rng.integers(n))};"
                                               if rng.random() < 1 / 3 else ";") for e in eqs]
        body += ["  " + e for e in eqs]
    return "\n".join(lines + ["equation"] + body + ["end Cells;", ""])


@pytest.mark.parametrize("seed", range(12))
def test_random_cells_demote_as_the_whole_model_enumeration(monkeypatch, seed):
    """Random models of 2 to 5 cells (`_CELLS`: demotable, structural, singular, coupled by a
    term or by shared time thresholds): the demotion part by part gives the demoted and
    structural atoms (or the refusal) of the enumeration of the whole model."""
    rng = np.random.default_rng(seed)
    texts = [_random_cells(rng, int(rng.integers(2, 6))) for _ in range(4)]
    got = [_verdict(t, "Cells.mo") for t in texts]
    _whole_model_oracle(monkeypatch)
    assert got == [_verdict(t, "Cells.mo") for t in texts]


@pytest.mark.parametrize("text", [
    JUNCTION, SINW, SLEW, CLAMP, INDEX2, _no_event_cells(6),
    JUNCTION.replace("der(x) = -i;", "der(x) = -i + 0.1 * w;\n  w = sin(time);\n  der(z) = y;\n"
                     "  0 = if w > 0 then y - w else z - cos(time);")
    .replace("Real i;", "Real i;\n  Real w;\n  Real y;\n  Real z(start = 0, fixed = true);"),
], ids=["junction", "sinw", "slew", "clamp", "index2", "cells6", "junction_clamp"])
def test_the_demotion_models_demote_as_the_whole_model_enumeration(monkeypatch, text):
    """The models of this module: the same verdict part by part and for the whole model."""
    got = _verdict(text, "M.mo")
    _whole_model_oracle(monkeypatch)
    assert got == _verdict(text, "M.mo")


@pytest.mark.long
@pytest.mark.parametrize("element", ["diode", "switch"])
def test_rlc_cells_demote_as_the_whole_model_enumeration(monkeypatch, element):
    """benchmarks/gen_modeller.py's RLC cells (8 cells, 2^8 modes): the same verdict."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_modeller import rlc_cells
    got = _verdict(rlc_cells(8, element), "Rlc.mo")
    _whole_model_oracle(monkeypatch)
    assert got == _verdict(rlc_cells(8, element), "Rlc.mo")


def test_parts_are_the_components_with_atoms_and_one_rest():
    """`demotion.connected_parts` of 3 cells: a noEvent cell alone, two cells whose
    conditions are thresholds on time (their consistency depends on each other: time > 1
    false and time > 2 true is no mode) together, and the equations without atoms (a state
    of its own) in one part."""
    from mdae_fmu.structure import demotion
    from mdae_fmu.structure.valuations import guard_definitions, long_guard_atoms_under
    text = """model Parts
  Real x0(start = 1, fixed = true);
  Real y0;
  Real x1(start = 1, fixed = true);
  Real y1;
  Real x2(start = 1, fixed = true);
  Real y2;
  Real z(start = 0, fixed = true);
equation
  der(x0) = -y0 - 0.5;
  y0 = if noEvent(x0 > 0) then x0 else 0;
  der(x1) = -y1;
  y1 = if time > 1 then x1 else 0;
  der(x2) = -y2;
  y2 = if time > 2 then x2 else 0;
  der(z) = 1;
end Parts;
"""
    m = parse_modelica(text, "Parts.mo")
    cls = classify_variables(m)
    classes = classify_conditionals(m)
    atoms = long_guard_atoms_under(m, m.equations, _incidence(m))
    parts = demotion.connected_parts(m, range(len(m.equations)), cls.continuous, atoms,
                                     guard_definitions(m, cls))
    got = sorted((sorted(u), sorted(expr_text(a) for a in at)) for _, u, at in parts)
    assert got == [(["x0", "y0"], ["noEvent(x0 > 0)"]),
                   (["x1", "x2", "y1", "y2"], ["time > 1", "time > 2"]),
                   (["z"], [])]
    assert sorted(_demoted(m)) == ["noEvent(x0 > 0)", "time > 1", "time > 2"]
    assert not classes.structural


def _incidence(m):
    """The classification by incidence, before the demotion."""
    from mdae_fmu.structure.conditionals import _classify, _Deferred
    cls = classify_variables(m)
    return _classify(m, tuple(m.equations), frozenset(cls.continuous), _Deferred())


# --- parts checked on formulas (implicit.demotion.SymbolicPart, docs/theory.md §4.11) --------

# more cells for the formulas: composite conditions (decided by their parts, Kleene's
# three values when one part is demoted), nested if-expressions, a condition beside a
# demotable one that changes the offsets in one equation
_MORE_CELLS = {
    **_CELLS,
    "composite": ["E{k} = 1;", "w{k} = sin(time + {k});",
                  "y{k} = if w{k} > 0 and time > {k} then w{k} else 0;",
                  "der(x{k}) = y{k} - x{k}"],
    "either": ["E{k} = 1;", "w{k} = sin(time + {k});",
               "y{k} = if w{k} > 0 or x{k} < -1 then w{k} else E{k} * x{k};",
               "der(x{k}) = y{k} - x{k}"],
    "nested": ["E{k} = 1;", "w{k} = sin(time + {k});",
               "y{k} = if w{k} > 0 then (if w{k} > 0.5 then E{k} else w{k}) else 0;",
               "der(x{k}) = y{k} - x{k}"],
    "mixed": ["E{k} = 1;", "w{k} = sin(time + {k});",
              "0 = if time > {k} then y{k} - w{k} else y{k} - x{k} * (if w{k} < 0 then 1 "
              "else E{k});", "der(x{k}) = y{k} - x{k}"],
    # a composite condition whose parts are conditions too: where its parts decide it, the
    # union of the composite alone selects the branch
    "shared": ["E{k} = if w{k} > 0 and time > {k} then 2 * x{k} else 1;",
               "w{k} = sin(time + {k});", "y{k} = if w{k} > 0 then w{k} else 0;",
               "der(x{k}) = y{k} - x{k} + E{k}"],
    # a composite condition whose parts are conditions too and decide it: each mode and the
    # union of the composite select the same branch (``der(w)``: w's equation differentiated
    # only where it holds, which the composite's parts fix)
    "parts": ["E{k} = if w{k} > 0 and time > {k} then der(w{k}) else 1;",
              "w{k} = sin(time + {k});", "y{k} = if w{k} > 0 then w{k} else 0;",
              "der(x{k}) = (if time > {k} then y{k} else 0) - x{k} + E{k}"],
    # the condition reads der(w) and neither branch does: every mode has d_w = 0, the union
    # (which reads the condition) d_w = 1: (b) fails alone, the condition stays structural
    "rate": ["E{k} = 1;", "w{k} = sin(time + {k});",
             "y{k} = if der(w{k}) > 0 then w{k} else 0;", "der(x{k}) = y{k} - x{k}"],
}


def _model_verdict(make) -> tuple:
    """(demoted atoms, structural atoms) of a fresh model ``make()``, or the refusal's text
    (`_verdict`; the classification is kept on the model object, hence a new one)."""
    try:
        c = classify_conditionals(make())
    except ModelRejected as exc:
        return ("rejected", str(exc))
    return ([expr_text(a) for a in c.demoted], sorted(expr_text(a) for a in c.structural))


def _on_formulas(monkeypatch, make) -> tuple[tuple, tuple, int]:
    """(verdict with every part that has candidates enumerated, verdict with every such part
    checked on formulas, the number of parts checked on formulas) of the model ``make()``."""
    from mdae_fmu.implicit import demotion as symbolic
    from mdae_fmu.structure import demotion
    built = []

    class Counted(symbolic.SymbolicPart):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(symbolic, "SymbolicPart", Counted)   # (read when first needed)
    monkeypatch.setattr(demotion, "ENUMERATE_UP_TO", 2 ** 14)
    enumerated = _model_verdict(make)
    assert not built
    monkeypatch.setattr(demotion, "ENUMERATE_UP_TO", 0)
    return enumerated, _model_verdict(make), len(built)


@pytest.mark.parametrize("seed", range(12))
def test_parts_on_formulas_demote_as_their_enumeration(monkeypatch, seed):
    """Random models of 2 to 6 cells (`_MORE_CELLS`, coupled as in `_random_cells`): the
    check on formulas of each part gives the demoted and structural atoms (or the refusal) of
    the enumeration of the part's modes, and it ran."""
    rng = np.random.default_rng(seed)
    for _ in range(4):
        lines = ["model Cells"]
        body = []
        n = int(rng.integers(2, 7))
        for k in range(n):
            kind = rng.choice(sorted(_MORE_CELLS))
            lines += [f"  Real x{k}(start = {k + 1}, fixed = true);",
                      f"  Real y{k};\n  Real w{k};\n  Real E{k};"]
            eqs = [e.format(k=k) for e in _MORE_CELLS[kind]]
            body += ["  " + (e if e.endswith(";") else e + (
                f" + 0.1 * y{int(rng.integers(n))};" if rng.random() < 1 / 3 else ";"))
                for e in eqs]
        text = "\n".join(lines + ["equation"] + body + ["end Cells;", ""])
        enumerated, on_formulas, parts = _on_formulas(
            monkeypatch, lambda text=text: parse_modelica(text, "Cells.mo"))
        assert on_formulas == enumerated, text
        assert parts >= 1


def _benchmarks(name: str):
    """A generator module of benchmarks/."""
    import importlib
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    return importlib.import_module(name)


_JUNCTION_CLAMP = JUNCTION.replace(
    "der(x) = -i;", "der(x) = -i + 0.1 * w;\n  w = sin(time);\n  der(z) = y;\n"
    "  0 = if w > 0 then y - w else z - cos(time);").replace(
    "Real i;", "Real i;\n  Real w;\n  Real y;\n  Real z(start = 0, fixed = true);")


def _family(family: str) -> list:
    """Factories of the models of a family (`test_families_on_formulas_...`)."""
    from pathlib import Path
    texts = {"junction": JUNCTION, "sinw": SINW, "slew": SLEW, "clamp": CLAMP,
             "index2": INDEX2, "junction_clamp": _JUNCTION_CLAMP}
    if family in texts:
        return [lambda: parse_modelica(texts[family], "M.mo")]
    gm, gmm = _benchmarks("gen_modeller"), _benchmarks("gen_multimode")
    if family.startswith("rlc_"):
        return [lambda n=n: parse_modelica(gm.rlc_cells(n, family[4:])) for n in (2, 5)]
    if family == "drive_line_singular":
        return [lambda: parse_modelica(gm.drive_line_singular(4, 2))]
    if family == "reference":
        root = Path(__file__).resolve().parents[2] / "reference_models"
        return [lambda p=p: parse_modelica(p.read_text(), p.name)
                for p in sorted(root.glob("*.mo"))]
    return [lambda n=n: getattr(gmm, family)(n) for n in (2, 5)]


@pytest.mark.parametrize("family", [
    "junction", "sinw", "slew", "clamp", "index2", "junction_clamp", "rlc_diode", "clutch_chain",
    "diode_bank", "fault_chain", "drive_line_singular", "reference"])
def test_families_on_formulas_demote_as_their_enumeration(monkeypatch, family):
    """The models of this module, benchmarks/gen_modeller.py's and gen_multimode.py's
    families with if-expressions, and the reference models: the same verdict on formulas as
    enumerated."""
    ran = 0      # (the parts checked on formulas)
    for make in _family(family):
        enumerated, on_formulas, parts = _on_formulas(monkeypatch, make)
        assert on_formulas == enumerated
        ran += parts
    # (a family without candidates has nothing to check: the reference models have some)
    print("RAN", family, ran)
    assert ran >= 1 or family in ("rlc_switch",)


def _coupled_cells(n: int, bad: int = -1, no_event: bool = True) -> str:
    """n cells ``y = if noEvent(x > 0) then x else 0``, ``x' = -y - 1/2 + y_prev/10``, each
    reading the previous cell's y: one connected part of n atoms, 2^n modes. Cell ``bad``
    has ``0 = if c then y - x else x - cos(time)`` instead: where c is false the state x is
    constrained (c = 1 on that equation), so c changes the offsets."""
    lines = [f"model CoupledCells{n}"]
    lines += [f"  Real x{k}(start = {k + 1}, fixed = true);\n  Real y{k};" for k in range(n)]
    lines.append("equation")
    for k in range(n):
        c = f"noEvent(x{k} > 0)" if no_event else f"x{k} > 0"
        lines.append(f"  der(x{k}) = -y{k} - 0.5" + (f" + 0.1 * y{k - 1};" if k else ";"))
        lines.append(f"  0 = if {c} then y{k} - x{k} else x{k} - cos(time);" if k == bad
                     else f"  y{k} = if {c} then x{k} else 0;")
    return "\n".join(lines + [f"end CoupledCells{n};", ""])


def _one_part_atoms(m) -> list:
    """The atoms of the one part of ``m`` with atoms (`demotion.connected_parts`)."""
    from mdae_fmu.structure import demotion
    from mdae_fmu.structure.valuations import guard_definitions, long_guard_atoms_under
    cls = classify_variables(m)
    atoms = long_guard_atoms_under(m, m.equations, _incidence(m))
    parts = [at for _, _, at in demotion.connected_parts(
        m, range(len(m.equations)), cls.continuous, atoms, guard_definitions(m, cls)) if at]
    assert len(parts) == 1
    return parts[0]


@pytest.mark.parametrize("n", [13, 16])
def test_one_part_beyond_the_enumeration_is_demoted_on_formulas(n):
    """n coupled noEvent cells are one part of 2^n consistent modes, beyond the enumeration
    (2^12: until stop 44 their conditions stayed structural and the model was refused, the
    conditions being under noEvent). Checked on formulas, every condition is demoted: one
    mode whose offsets are each cell's (d_x = 1, d_y = 0, c = 0 on both equations: y is
    solved from its own equation in either branch and x' from the other)."""
    from mdae_fmu.structure.valuations import (MAX_ENUMERATED_MODES, TooManyModes,
                                               enumerate_valuations)
    m = parse_modelica(_coupled_cells(n), f"CoupledCells{n}.mo")
    with pytest.raises(TooManyModes):
        enumerate_valuations(_one_part_atoms(m), limit=MAX_ENUMERATED_MODES)
    assert sorted(_demoted(m)) == sorted(f"noEvent(x{k} > 0)" for k in range(n))
    (mode,) = analyze_modes(m, latent=False).modes
    assert mode.d == {**{f"x{k}": 1 for k in range(n)}, **{f"y{k}": 0 for k in range(n)}}
    assert set(mode.c.values()) == {0} and len(mode.c) == 2 * n
    _blocks_solvable_in_every_branch(m)


def test_one_part_beyond_the_enumeration_keeps_the_condition_that_changes_offsets():
    """The 13 coupled cells with cell 5's condition constraining its state where it is false
    (`_coupled_cells`): all together the conditions fail, one by one the 12 others are
    demoted and x5 > 0 stays structural (2 modes). Under noEvent the model is then refused
    with the diagnostic of a structural noEvent condition, naming that condition."""
    m = parse_modelica(_coupled_cells(13, bad=5, no_event=False), "CoupledCells13.mo")
    c = classify_conditionals(m)
    assert sorted(expr_text(a) for a in c.demoted) == sorted(f"x{k} > 0" for k in range(13)
                                                             if k != 5)
    assert [expr_text(a) for a in c.structural] == ["x5 > 0"]
    modes = analyze_modes(m, latent=False).modes
    assert len(modes) == 2
    assert sorted(md.c["e12"] for md in modes) == [0, 1]      # (the bad cell's equation)
    with pytest.raises(ModelRejected, match=r"equation e12: the condition noEvent\(x5 > 0\) "
                       r"is under noEvent but is structural \(its branches differ in "
                       r"incidence or differentiation orders\)"):
        classify_conditionals(parse_modelica(_coupled_cells(13, bad=5), "CoupledCells13.mo"))


@pytest.mark.long
def test_coupled_cells_on_formulas_demote_as_their_enumeration(monkeypatch):
    """10 coupled cells (one part of 1 024 modes), with and without the cell that changes
    the offsets: the part on formulas against its enumeration (the greedy fallback's
    verdict too)."""
    for bad in (-1, 5):
        text = _coupled_cells(10, bad=bad, no_event=False)
        enumerated, on_formulas, parts = _on_formulas(
            monkeypatch, lambda text=text: parse_modelica(text, "CoupledCells10.mo"))
        assert on_formulas == enumerated and parts == 1
        assert len(enumerated[1]) == (bad >= 0)
