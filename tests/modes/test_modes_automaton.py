"""The mode-change automaton (docs/theory.md §8, §13; the T-EXP-* cases), its
text/JSON reports and its DOT form."""

import json
import math

import pytest
import sympy as sp

from mdae_fmu.automaton_dot import automaton_to_dot, write_dot
from mdae_fmu.modes import analyze_multimode, automaton_to_json, describe_automaton
import multimode_examples as X


@pytest.fixture(scope="module")
def clutch():
    return analyze_multimode(X.clutch_paper())


@pytest.fixture(scope="module")
def rldc2():
    return analyze_multimode(X.rldc2(j1=0.2, j2=-0.2), standardize=False)


def test_clutch_automaton_shape(clutch):
    """T-EXP-1: two configurations, four edges; the engagement erases e3 and is impulsive."""
    a = clutch
    assert a.accepted and not a.diagnostics
    assert len(a.configs) == 2 and len(a.edges) == 4
    loops = [e for e in a.edges if e[0] == e[2]]
    assert len(loops) == 2 and all(not e[3].erased for e in loops)
    eng = a.change("not g", "g")
    assert eng.n_instants == 1 and eng.instants[0].erased == ("e3",) and eng.impulsive
    assert {v for v, _ in eng.instants[0].impulsive} == {"t1", "t2"}
    rel = a.change("g", "not g")
    assert rel.n_instants == 1 and rel.instants[0].erased == () and not rel.impulsive
    assert a.mode("g").index == 1 and a.mode("not g").index == 0
    assert a.mode("g").latent == ("e3'",)


def _restart_map(change):
    return {str(e.lhs): e.rhs for e in change.restart}


def test_both_clutch_sources_give_the_same_automaton(clutch):
    """T-CL-6: e4 guarded in both modes (paper (3)) or unguarded (Figure 2): same modes,
    indexes, number of instants and restart map."""
    basic = analyze_multimode(X.clutch_basic())
    assert basic.accepted
    for a, b in [("not g", "g"), ("g", "not g")]:
        c1, c2 = clutch.change(a, b), basic.change(a, b)
        assert c1.n_instants == c2.n_instants and c1.impulsive == c2.impulsive
        assert [len(i.erased) for i in c1.instants] == [len(i.erased) for i in c2.instants]
        m1, m2 = _restart_map(c1), _restart_map(c2)
        for w in ("w1+", "w2+"):
            assert sp.simplify(m1[w] - m2[w]) == 0
    assert [m.index for m in clutch.modes] == [m.index for m in basic.modes]


def test_clutch_restart_number(clutch):
    """T-CL-5 / ClutchBasic: w+ = 1.286309709 from w1- = e^-0.05, w2- = 1.5 e^-0.03125."""
    m = _restart_map(clutch.change("not g", "g"))
    vals = {sp.Symbol("w1-", real=True): math.exp(-0.05),
            sp.Symbol("w2-", real=True): 1.5 * math.exp(-0.03125),
            sp.Symbol("j1", real=True): 1.0, sp.Symbol("j2", real=True): 2.0}
    w = float(m["w1+"].xreplace(vals))
    assert w == pytest.approx(1.286309709, abs=1e-9)
    assert float(m["w2+"].xreplace(vals)) == pytest.approx(w, abs=1e-15)
    # angular momentum j1 w1 + j2 w2 is conserved across the engagement
    assert 3 * w == pytest.approx(math.exp(-0.05) + 3.0 * math.exp(-0.03125), rel=1e-12)


def test_cup_and_ball_automaton():
    """T-EXP-2: free steady, rope steady and the intermediate reconciliation configuration;
    the composed restart is the radial projection then the removal of the radial velocity."""
    a = analyze_multimode(X.cup_and_ball())
    assert a.accepted
    ch = a.change("not g", "g")
    assert ch.n_instants == 2 and [i.erased for i in ch.instants] == [("k1", "k1'"), ("k1",)]
    # free steady, rope steady, and the configuration between the two erasure instants (the
    # configuration after the second instant is already the steady one)
    assert sorted(sorted(c.context) for c in a.configs) == [[], [("k1", 0), ("k1", 1)],
                                                           [("k1", 1)]]
    assert a.change("g", "not g").instants[0].erased == ()
    assert a.mode("g").index == 2 and a.mode("g").latent == ("k1'", "k1''")


def test_rldc2_all_twelve_changes_accepted(rldc2):
    """T-RL-4 (default rule) and T-RL-1 (per-mode index)."""
    a = rldc2
    assert a.accepted and len(a.changes) == 12 and all(c.accepted for c in a.changes)
    idx = {m.label: m.index for m in a.modes}
    assert idx == {"g1,g2": 1, "g1,not g2": 0, "not g1,g2": 0, "not g1,not g2": 1}


def test_rldc2_canonical_rule_rejects_six():
    a = analyze_multimode(X.rldc2(j1=0.2, j2=-0.2), erasure="canonical", standardize=False)
    assert not a.accepted
    rejected = {(c.src_label, c.dst_label) for c in a.changes if not c.accepted}
    assert len(rejected) == 6
    assert ("g1,not g2", "g1,g2") in rejected and ("g1,g2", "not g1,not g2") in rejected
    assert all(d.code == "E-RESTART-MISSING" for d in a.diagnostics)


def test_rldc2_published_start_values_diagnostic():
    """T-RL-3: the published starts j1 = 2, j2 = 1 over-determine the initial mode FF."""
    a = analyze_multimode(X.rldc2(), standardize=False)
    codes = [d.code for d in a.diagnostics]
    assert codes == ["W-INIT-INCONSISTENT"] and a.accepted
    assert set(a.diagnostics[0].variables) == {"j1", "j2"} and "K1" in a.diagnostics[0].message
    ok = analyze_multimode(X.rldc2(j1=0.2, j2=-0.2), standardize=False)
    assert not ok.diagnostics


def test_rejections_are_collected():
    """T-EXP-3: every failing (configuration, mode) pair is reported."""
    a = analyze_multimode(X.missing_restart())
    assert not a.accepted
    assert [d.code for d in a.diagnostics] == ["E-RESTART-MISSING"]
    assert "not g -> g" in a.diagnostics[0].message
    b = analyze_multimode(X.cup_and_ball_elastic(impact_law=False))
    assert not b.accepted and b.diagnostics[0].code == "E-TRANSIENT-UNDER"


def test_reports(clutch, tmp_path):
    text = describe_automaton(clutch)
    assert "not g -> g: 1 instant(s) until steady, impulsive" in text
    assert "erased {e3}" in text and "t1 (order 1)" in text
    assert "w1+ = (j1*w1- + j2*w2-)/(j1 + j2)" in text
    j = automaton_to_json(clutch)
    json.dumps(j)
    ch = [c for c in j["mode_changes"] if c["to"] == "g"][0]
    assert ch["instants"][0]["erased"] == ["e3"]
    assert ch["instants"][0]["impulsive"] == [{"variable": "t1", "order": "1"},
                                               {"variable": "t2", "order": "1"}]
    dot = automaton_to_dot(clutch)
    assert dot.startswith('digraph "ClutchPaper"') and "color=red" in dot
    assert dot.count("->") == 4
    write_dot(clutch, tmp_path / "a.dot")
    assert (tmp_path / "a.dot").read_text() == dot


def test_dot_escapes_names():
    from mdae_fmu.ir import Model
    m = X.clutch_paper()
    a = analyze_multimode(
        Model(name='Evil"name\\', variables=m.variables, equations=m.equations), standardize=False
    )
    dot = automaton_to_dot(a)
    assert dot.splitlines()[0] == 'digraph "Evil\\"name\\\\" {'


def test_bouncing_ball_style_reinit():
    """A reinit overrides the dynamics of its variable at the transient instant."""
    from mdae_fmu.ir import Model, Reinit, WhenBranch, WhenClause
    m = Model(name="Ball", variables=(X.real("h", 1, True), X.real("v", 0, True), X.param("e", 0.7),
                       X.param("grav", 9.81)),
              equations=(X.eq("a", "der(h) = v"), X.eq("b", "der(v) = -grav")),
              whens=(WhenClause(id="w", branches=(WhenBranch(condition=X.ex("h <= 0"), actions=(
                  Reinit(var="v", value=X.ex("-e*pre(v)")),)),)),))
    a = analyze_multimode(m)
    assert a.accepted
    ch = a.changes[0]
    assert ch.instants[0].erased == ("b",)
    assert {str(e.lhs): str(e.rhs) for e in ch.restart} == {"h+": "h-", "v+": "-e*v-"}


def test_contradictory_guard_valuations_are_not_explored():
    """Mode pruning: `time < 1` and `time >= 2` cannot both hold; that valuation would be
    structurally singular (two equations for u) and must not cause a rejection."""
    from mdae_fmu.ir import Model
    m = Model(name="Phases", variables=(X.real("x", 0, True), X.real("u")), equations=(
        X.eq("a", "der(x) = u"),
        X.eq("b", "u = 1", "time < 1"),
        X.eq("c", "u = 2", "time >= 2"),
        X.eq("d", "u = 0", "not time < 1", "not time >= 2")))
    a = analyze_multimode(m, standardize=False)
    assert a.accepted and len(a.modes) == 3
    assert {m.label for m in a.modes} == {"time < 1,not time >= 2", "not time < 1,time >= 2",
                                          "not time < 1,not time >= 2"}


def _coupled_guards_model():
    """Seven guards: five independent inputs, and `x >= 1` / `x < 1`, which share their
    zero-crossing function x - 1. z is a state when x >= 1 and 0 otherwise: crossing x = 1
    upwards leaves z without a restart. Crossing switches both guards at once; switching one
    of them alone gives a contradictory valuation, never explored."""
    from mdae_fmu.ir import Model
    vs = [X.real("x", 0.0, True), X.real("z")] + [X.real(f"y{i}", 1.0, True) for i in range(5)]
    vs += [X.boolean_input(f"g{i}") for i in range(5)]
    eqs = [X.eq("ex", "der(x) = 1"),
           X.eq("za", "der(z) = -z", "x >= 1"),
           X.eq("zb", "z = 0", "x < 1")]
    for i in range(5):
        eqs += [X.eq(f"a{i}", f"der(y{i}) = -y{i}", f"g{i}"),
                X.eq(f"b{i}", f"der(y{i}) = -2*y{i}", f"not g{i}")]
    return Model(name="CoupledGuards", variables=tuple(vs), equations=tuple(eqs))


def test_guards_with_the_same_zero_crossing_switch_together():
    """docs/decisions.md §7: above 6 guards only single changes are explored, plus the subsets
    of coupled guards (same zero-crossing function or discrete variable); the warning says
    what was left out."""
    from mdae_fmu.modes.explore import coupled_guard_classes
    from mdae_fmu.modes.normalize import normalize
    s = normalize(_coupled_guards_model())
    names = [g.name for g in s.guards]
    classes = [[names[i] for i in c] for c in coupled_guard_classes(s)]
    assert sorted(map(sorted, classes)) == sorted([[f"g{i}"] for i in range(5)]
                                                  + [sorted(["x >= 1", "x < 1"])])
    a = analyze_multimode(s, standardize=False)
    assert not a.accepted
    missing = [d for d in a.diagnostics if d.code == "E-RESTART-MISSING"]
    assert missing and all(d.variables == ("z",) for d in missing)
    assert all("x >= 1" in d.message and "not x < 1" in d.message for d in missing)
    [w] = [d for d in a.diagnostics if d.code == "W-SINGLE-CHANGES"]
    assert "{x >= 1, x < 1}" in w.message or "{x < 1, x >= 1}" in w.message
    # 32 x 2 feasible modes; from each, 5 single input flips and the x crossing are explored
    assert "Not analysed: " + str(64 * (64 - 1 - 6)) + " mode change(s)" in w.message
    assert "during a reconciliation cascade" in w.message
    # the exhaustive exploration finds the same rejection
    full = analyze_multimode(s, standardize=False, simultaneous=True)
    assert {d.message for d in full.diagnostics if d.code == "E-RESTART-MISSING"} >= \
        {d.message for d in missing}
