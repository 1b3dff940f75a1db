"""The multimode stage's modes and composed restarts.

* Modes (RR-9334 Def 31, docs/theory.md §5.3, §8.1): the
  mode-change exploration enumerates the consistent guard valuations the per-mode stage
  enumerates (`enumerate_valuations`, same pruning and cut-off), so its cost follows the
  number of consistent modes, not 2^|Gamma|; transient guards are valued apart.
* Composed restarts (docs/theory.md §9, §11, RR-9334 §11.3): an instant without closed form is a
  numerical step of the mode change's restart, never silently left out of it.
"""

import itertools
import json
import time
from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu.diagnostics import ModelRejected
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.modes import analyze_multimode, automaton_to_json, describe_automaton
import multimode_examples as X
from multimode_examples import feasible_mode
from mdae_fmu.modes.explore import RestartInstant, compose_restart, restarted_variables
from mdae_fmu.modes.normalize import normalize
from mdae_fmu.structure.per_mode import consistent_valuation

REF = Path(__file__).resolve().parents[2] / "reference_models"


def parse(text, name="Test.mo"):
    return parse_modelica(text, name)


def load(name):
    path = REF / name
    return parse_modelica(path.read_text(), str(path))


def thresholds(n, separate=False):
    """der(x) = 1 - 0.01 y with y summing, over the thresholds x > 0 .. x > n-1, x where it
    holds and der(u_k) (u_k = time) where it does not: n correlated long guards, n + 1
    consistent modes. Each branch pair changes the offsets (u_k = time is differentiated only
    where der(u_k) is read), so the conditionals stay structural
    (`mdae_fmu.structure.conditionals`, `mdae_fmu.structure.demotion`; with ``else 0`` they
    would be demoted to events). ``separate``: one equation per threshold instead of one
    equation with n if-expressions."""
    decl = "".join(f"  Real u{k};\n" for k in range(n))
    defs = "".join(f"  u{k} = time;\n" for k in range(n))
    if separate:
        decl += "".join(f"  Real y{k};\n" for k in range(n))
        eqs = (f"  der(x) = 1 - 0.01*({' + '.join(f'y{k}' for k in range(n))});\n"
               + "".join(f"  y{k} = if x > {k} then x else der(u{k});\n" for k in range(n)))
    else:
        decl += "  Real y;\n"
        eqs = ("  der(x) = 1 - 0.01*y;\n  y = "
               + " + ".join(f"(if x > {k} then x else der(u{k}))" for k in range(n)) + ";\n")
    return parse(f"model Thresh{n}\n  Real x(start = -0.5, fixed = true);\n{decl}"
                 f"equation\n{eqs}{defs}end Thresh{n};\n")


# --- modes -----------------------------------------------------------------------------------

@pytest.mark.long      # 4.3 and 5.5 s of CPU
@pytest.mark.parametrize("separate", [False, True])
def test_sixteen_ordered_thresholds_are_fast(separate):
    """16 thresholds on one state: 2^16 valuations, 17 consistent ones. The whole analysis
    (mode changes and standardized restarts included) took 38 s (6 s with one equation per
    threshold) when every valuation was generated and filtered, with branches ``else 0``;
    with the ``der(u_k)`` branches that keep the conditions structural it takes about 2.5 s
    on a loaded machine (0.3 s with ``else 0``, before those conditions were demoted)."""
    import sympy  # noqa: F401  (the package imports it on first use: not in the timed part)
    m = thresholds(16, separate)
    t0 = time.process_time()
    a = analyze_multimode(m)
    spent = time.process_time() - t0
    assert spent < 6, f"{spent:.1f} s"
    assert a.accepted
    long_modes = [mi for mi in a.modes if mi.kind == "long"]
    assert len(long_modes) == 17 and all(mi.ok for mi in long_modes)
    # a mode is "x > k for k < j": its true literals form a prefix
    for mi in long_modes:
        assert list(mi.mode) == sorted(mi.mode, reverse=True)
    # each mode is left for its two neighbours (one threshold crossed), all accepted
    assert len(a.changes) == 32 and all(c.accepted for c in a.changes)
    for c in a.changes:
        assert sum(x != y for x, y in zip(c.src, c.dst)) == 1
    assert [d.code for d in a.diagnostics] == ["W-SINGLE-CHANGES"]


def test_one_equation_with_ordered_thresholds_has_one_branch_per_mode():
    """The if-expressions of one equation are split only into branches whose guards can hold
    together: n + 1 branch equations, not 2^n."""
    s = normalize(thresholds(16))
    assert len(s.guards) == 16 and [g.name for g in s.guards] == [f"x > {k}" for k in range(16)]
    branches = [e for e in s.equations if e.origin == "e2"]
    assert len(branches) == 17
    # the branch where x > k holds for k < j exactly, for j = 16 .. 0
    for j, e in zip(range(16, -1, -1), branches):
        assert e.id == "|".join(["e2"] + [("" if k < j else "!") + f"x > {k}"
                                          for k in range(16)])
    for mode in s.modes():
        assert len([e for e in s.enabled(mode) if e in branches]) == 1


def test_pruned_branches_keep_their_guards_in_order():
    """A guard met only inside a branch that cannot hold is still a guard, at the index the
    full expansion gives it (the guards do not depend on the pruning)."""
    # (x > 0 and z > 0 also select branches of w and v: inside y alone they would never
    # change the structure and be demoted to events, structure/demotion.py; the der(.) of
    # a = b = c = d = time make every branch pair change the offsets)
    m = parse("model P\n  Real x(start = 0, fixed = true);\n  Real z(start = 0, fixed = true);\n"
              "  Real y;\n  Real w;\n  Real v;\n  Real a;\n  Real b;\n  Real c;\n  Real d;\n"
              "equation\n  der(x) = 1;\n  der(z) = -1;\n"
              "  y = if x > 1 then (if x > 0 then der(a) else (if z > 0 then der(b) else 3))"
              " else 4;\n"
              "  w = if x > 0 then der(c) else 5;\n  v = if z > 0 then der(d) else 6;\n"
              "  a = time;\n  b = time;\n  c = time;\n  d = time;\nend P;\n")
    s = normalize(m)
    assert [g.name for g in s.guards] == ["x > 1", "x > 0", "z > 0"]
    ys = sorted(e.id for e in s.equations if e.origin == "e3" and "|" in e.id)
    assert len(ys) == 2 and any(i.endswith("|x > 1|x > 0") for i in ys) \
        and any(i.endswith("|!x > 1") for i in ys)
    a = analyze_multimode(m)
    assert a.accepted
    # x > 1 and not x > 0 is pruned; z > 0 is free: 3 x 2 modes
    assert len([mi for mi in a.modes if mi.kind == "long"]) == 6


def _brute_force(system):
    """Every valuation, filtered one by one by the same pruning (the former enumeration)."""
    allm = sorted(itertools.product((False, True), repeat=len(system.guards)),
                  key=lambda m: (system.is_transient(m), m))
    return [m for m in allm if feasible_mode(system, m)]


def _former_filter(system):
    """The former check: the guards' definitions as keys, no Boolean definitions."""
    allm = sorted(itertools.product((False, True), repeat=len(system.guards)),
                  key=lambda m: (system.is_transient(m), m))
    return [m for m in allm if consistent_valuation(
        {g.definition: v for g, v in zip(system.guards, m) if g.kind == "long"})]


@pytest.mark.parametrize("name", sorted(p.name for p in REF.glob("*.mo")))
def test_reference_models_modes_are_unchanged(name):
    """The lazy enumeration gives the modes of the exhaustive filter, in the same order, on
    every reference model (their automata are the ones of tests/modes/test_modes_reference.py),
    the three original encodings (guards on same-instant values, evaluated by event
    iteration) included."""
    s = normalize(load(name))
    assert s.modes() == _brute_force(s) == _former_filter(s)


def test_transient_guards_are_valued_apart():
    """Long modes first (transient guards false), then every long mode with every nonempty
    set of true transient guards; a contradictory long valuation gives no transient mode. The
    two when-clauses reinit v: their edges are not combined (issue 14; checked at run time),
    so each long mode has 2 transient modes, not 3."""
    m = parse("model T\n  Real x(start = 0, fixed = true);\n  Real v(start = 1, fixed = true);\n"
              "  Real y;\n  Real u1;\n  Real u2;\nequation\n  der(x) = v;\n  der(v) = -1;\n"
              "  y = (if x > 1 then x else der(u1)) + (if x > 2 then x else der(u2));\n"
              "  u1 = time;\n  u2 = time;\n"
              "  when x < 0 then\n    reinit(v, -0.5*pre(v));\n  end when;\n"
              "  when v < -3 then\n    reinit(v, 0);\n  end when;\nend T;\n")
    s = normalize(m)
    kinds = [g.kind for g in s.guards]
    assert kinds.count("long") == 2 and kinds.count("transient") == 2
    modes = s.modes()
    long_ = [x for x in modes if not s.is_transient(x)]
    trans = [x for x in modes if s.is_transient(x)]
    assert len(long_) == 3 and len(trans) == 3 * 2
    assert modes == long_ + trans == _brute_force(s)
    assert all(not x[i] for x in long_ for i, k in enumerate(kinds) if k == "transient")


def test_enumeration_cut_off_is_the_per_mode_one():
    """13 independent guards: more than 2^12 consistent modes, nothing explored, the per-mode
    stage's message (E-EXPLORE-BOUND), quickly and without a traceback. (If-equations: the
    if-expression ``y = if g then x else 0`` is demoted, one structure in every mode.)"""
    decl = "".join(f"  input Boolean g{k};\n  Real y{k};\n" for k in range(13))
    eqs = "".join(f"  if g{k} then\n    y{k} = x;\n  else\n    y{k} = 0;\n  end if;\n"
                  for k in range(13))
    m = parse(f"model Many\n  Real x(start = 0, fixed = true);\n{decl}equation\n"
              f"  der(x) = -x + y0;\n{eqs}end Many;\n")
    t0 = time.process_time()
    a = analyze_multimode(m)
    assert time.process_time() - t0 < 5
    assert not a.accepted and a.changes == () and a.modes == ()
    (d,) = a.diagnostics
    assert d.code == "E-EXPLORE-BOUND"
    assert d.message == ("model Many: its 13 long guards have more than 4096 consistent "
                         "valuations (explicit enumeration limit: 4096 modes); mode-change "
                         "analysis not performed (`mdae-fmu analyze` switches to the "
                         "implicit structural analysis of all modes beyond this limit; mode "
                         "changes are explored by enumeration only)")
    with pytest.raises(ModelRejected, match="E-EXPLORE-BOUND"):
        a.raise_if_rejected()
    assert "E-EXPLORE-BOUND" in describe_automaton(a)
    json.dumps(automaton_to_json(a))
    # a larger limit explores them (the limit applies to the consistent long modes)
    small = parse("model Few\n  Real x(start = 0, fixed = true);\n  input Boolean g0;\n"
                  "  input Boolean g1;\n  Real y;\n  Real u0;\n  Real u1;\nequation\n"
                  "  der(x) = y;\n"
                  "  y = (if g0 then x else der(u0)) + (if g1 then x else der(u1));\n"
                  "  u0 = time;\n  u1 = time;\nend Few;\n")
    assert analyze_multimode(small, standardize=False, max_modes=3).diagnostics[0].code \
        == "E-EXPLORE-BOUND"
    assert analyze_multimode(small, standardize=False, max_modes=4).accepted


# --- composed restarts -----------------------------------------------------------------------

def _ri(index, restart=(), numerical=False, variables=()):
    return RestartInstant(
        index=index,
        mode="m",
        facts=(),
        erased=(),
        blocks=(),
        method="S3" if numerical else "S1",
        restart=tuple(sp.Eq(sp.Symbol(lhs, real=True), rhs) for lhs, rhs in restart),
        numerical=numerical,
        variables=variables,
    )


def S(n):
    return sp.Symbol(n, real=True)


def test_compose_restart_never_skips_a_numerical_instant():
    steps = compose_restart([
        _ri(0, [("x+", 2 * S("x-"))], variables=("x",)),
        _ri(1, numerical=True, variables=("v", "x")),
        _ri(2, [("x+", S("x-") + 1)], variables=("x",)),
        _ri(3, [("v+", S("x-") * S("v-"))], variables=("v",)),
    ])
    assert [(st.instants, st.numerical, st.variables) for st in steps] == [
        ((0,), False, ("x",)), ((1,), True, ("v", "x")), ((2, 3), False, ("v", "x"))]
    assert steps[1].restart == ()
    # instants 2 and 3 composed: v+ reads the x instant 2 computed
    last = {str(e.lhs): e.rhs for e in steps[2].restart}
    assert sp.simplify(last["v+"] - (S("x-") + 1) * S("v-")) == 0
    assert last["x+"] == S("x-") + 1
    # all closed: one step, the former composition
    (one,) = compose_restart([_ri(0, [("x+", 2 * S("x-"))], variables=("x",)),
                              _ri(1, [("x+", S("x-") + 1)], variables=("x",))])
    assert not one.numerical and {str(e.lhs): e.rhs for e in one.restart} == \
        {"x+": 2 * S("x-") + 1}


@pytest.fixture(scope="module")
def cup_first_order():
    return analyze_multimode(load("CupAndBallFirstOrder.mo"))


def test_cup_and_ball_first_order_restart_says_instant_0_is_numerical(cup_first_order):
    """Instant 0 of the tightening has no closed form (S3): the composed restart is not the
    closed form of instant 1 alone, it says that instant 0 is computed numerically and on
    which variables (text and JSON)."""
    a = cup_first_order
    ch = a.change("not taut", "taut")
    assert [i.method for i in ch.instants] == ["S3", "S1"]
    assert ch.instants[0].numerical and ch.instants[0].variables == ("vx", "vy", "x", "y")
    assert not ch.instants[1].numerical
    assert ch.restart == () and not ch.closed_form
    assert [(st.instants, st.numerical, st.variables) for st in ch.steps] == [
        ((0,), True, ("vx", "vy", "x", "y")), ((1,), False, ("vx", "vy", "x", "y"))]
    assert {str(e.lhs) for e in ch.steps[1].restart} == \
        {"der(x)+", "der(y)+", "vx+", "vy+", "x+", "y+"}
    text = describe_automaton(a)
    assert ("    restart: instant 0 numerical (δ-scheme, RR-9334 §11.3) on {vx, vy, x, y}; "
            "then instant 1: der(x)+ = ") in text
    assert ("      standardized (S3, jet level): no closed form, numerical (δ-scheme, "
            "RR-9334 §11.3) on {vx, vy, x, y}") in text
    j = next(c for c in automaton_to_json(a)["mode_changes"]
             if (c["from"], c["to"]) == ("not taut", "taut"))
    assert j["restart"] == []
    assert [(s["instants"], s["numerical"], s["variables"], len(s["restart"]))
            for s in j["restart_steps"]] == [([0], True, ["vx", "vy", "x", "y"], 0),
                                            ([1], False, ["vx", "vy", "x", "y"], 6)]
    # the slackening has a closed form: composed as before
    sl = a.change("taut", "not taut")
    assert sl.closed_form and {str(e.lhs): str(e.rhs) for e in sl.restart} == \
        {"vx+": "vx-", "vy+": "vy-"}
    assert "    restart: vx+ = vx-; vy+ = vy-" in text


def test_cup_and_ball_first_order_tightening_is_not_closed_form(cup_first_order):
    """The automaton's change of the tightening has no closed form: instant 0 without one
    (S3, the delta-scheme), instant 1 its S1 restart."""
    ch = cup_first_order.change("not taut", "taut")
    assert not ch.closed_form
    assert [i.method for i in ch.instants] == ["S3", "S1"]


def test_failed_standardization_is_a_numerical_step(monkeypatch):
    """W-STANDARDIZE (the standardization raised): the instant is numerical, on the states it
    restarts, and the composed restart says so."""
    import mdae_fmu.modes.restart as R

    def boom(*args, **kw):
        raise ValueError("no standard form")
    monkeypatch.setattr(R, "restart_problem", boom)
    a = analyze_multimode(X.clutch_basic())
    ch = a.change("not g", "g")
    (ri,) = ch.instants
    assert ri.numerical and ri.method == "" and ri.variables == ("t", "w1", "w2")
    assert ri.variables == restarted_variables(ri.instant)
    assert ch.restart == () and [(s.numerical, s.variables) for s in ch.steps] == \
        [(True, ("t", "w1", "w2"))]
    text = describe_automaton(a)
    assert "standardized (failed): no closed form, numerical" in text
    assert "restart: instant 0 numerical (δ-scheme, RR-9334 §11.3) on {t, w1, w2}" in text
    assert any(d.code == "W-STANDARDIZE" for d in a.diagnostics)
