"""Runs of the constructive semantics (docs/theory.md §6, §7, §13):
normalization, Tick, SolveConflict, ExecRun, DiffArray, on the worked examples of the papers."""

import itertools
from pathlib import Path

import pytest

from mdae_fmu.diagnostics import InputError, ModelRejected
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.ir import Model
import multimode_examples as X
from multimode_examples import boolean, eq, real
from mdae_fmu.modes.continuations import continuations
from mdae_fmu.modes.normalize import normalize
from mdae_fmu.modes.runs import (continuation_mode, exec_long, exec_transient,
                                 exist_quantif, sigma_from_report, sigma_of_mode, steady_config,
                                 steady_run, tick)
from mdae_fmu.structure.per_mode import analyze_modes

F, T = (False,), (True,)


def run_sequence(model, seq, erasure="restricted"):
    """Run the guard sequence from the steady configuration of its first mode."""
    s = normalize(model)
    cfg = steady_config(s, seq[0], sigma_of_mode(s, seq[0]))
    out = []
    for m in seq:
        if s.is_transient(m):
            r = exec_transient(s, cfg, m, sigma_of_mode(s, continuation_mode(s, m)), erasure)
        else:
            r = exec_long(s, cfg, m, sigma_of_mode(s, m), erasure)
        out.append(r)
        if not r.ok:
            break
        cfg = r.next
    return s, out


def blocks(r):
    return [set(b.equations) for b in r.blocks]


# --- normalization ---------------------------------------------------------------------------

@pytest.mark.parametrize("original, delayed, var", [
    (X.cup_and_ball(delayed=False), X.cup_and_ball(), "s"),
    (X.air_brake(delayed=False), X.air_brake(), "s"),
    (X.rldc2(delayed=False), X.rldc2(), "s1")])
def test_same_instant_guard_cycle_is_the_cascade_of_delayed_guards(original, delayed, var):
    """A guard reading a value that the equations it selects compute (the former E-FIXPOINT)
    is evaluated by event iteration, each instant of the cascade reading the previous
    instant's value (Def 33): the same guards, equations and modes as the pre() encoding,
    and a note saying so."""
    a, b = normalize(original), normalize(delayed)
    assert [(g.name, g.kind) for g in a.guards] == [(g.name, g.kind) for g in b.guards]
    assert [(e.id, e.guard, e.orders) for e in a.equations] == \
        [(e.id, e.guard, e.orders) for e in b.equations]
    assert a.modes() == b.modes()
    assert any(f"reads {var}" in n and "event iteration" in n and f"pre({var})" in n
               and "(RR-9334 Def 33, docs/theory.md §5.4;" in n for n in a.notes)


def test_event_iteration_that_cannot_settle_is_rejected_with_modes_and_guards():
    """g = s >= 0 with s = -1 when g and s = 1 when not g: each mode selects the other, the
    event iteration never settles; found at compile time, modes, guard, values and equations
    named."""
    m = Model(name="Chatter", variables=(real("x", 0.0, True), real("s"), boolean("g")), equations=(
        eq("e1", "der(x) = s"),
        eq("e2", "g = (s >= 0)"),
        eq("e3", "s + 1 = 0", "g"),
        eq("e4", "s - 1 = 0", "not g")))
    with pytest.raises(ModelRejected) as err:
        normalize(m)
    msg = str(err.value)
    assert "E-FIXPOINT" in msg and "cannot settle" in msg
    assert "in mode [g] guard g becomes false (s = -1 (equation e3)" in msg
    assert "in mode [not g] guard g becomes true (s = 1 (equation e4)" in msg
    assert err.value.details["guards"] == ["g"]



def test_settling_check_reads_no_mode_s_equation_list(monkeypatch):
    """The check of the event iteration (`settling.check_settling`) finds the
    equations that fix a guard's same-instant read once, not by listing each mode's enabled
    equations (the RLC ladder of 8 ideal diodes, 256 long modes: no call of
    `MultimodeSystem.enabled`); Chatter's verdict with the equation each mode takes is
    checked above."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_modeller import rlc_cells

    from mdae_fmu.modes.normalize import MultimodeSystem
    listed = []
    enabled = MultimodeSystem.enabled
    monkeypatch.setattr(MultimodeSystem, "enabled",
                        lambda self, mode: listed.append(mode) or enabled(self, mode))
    s = normalize(parse_modelica(rlc_cells(8, "diode")))
    assert len(s.long_modes()) == 256 and listed == []

def test_guards_are_typed_and_branches_split():
    s = normalize(X.clutch_basic())
    assert [(g.name, g.kind, g.init) for g in s.guards] == [("g", "long", False)]
    ids = {e.id: e.guard for e in s.equations}
    assert ids["e3|g"] == ((0, True),) and ids["e3|!g"] == ((0, False),)
    assert "eg" not in ids          # the Boolean definition is the guard, not an equation
    el = normalize(X.cup_and_ball_elastic())
    assert [g.kind for g in el.guards] == ["transient"]   # `if not c` next to `when c`
    assert any(e.reinit == "vy" for e in el.equations)


# --- Tick ------------------------------------------------------------------------------------

def test_tick_shifts_known_instances_and_context():
    """T-TICK-1/2: x^o2 evaluated gives x^o known; a fact e^o gives e in the next context."""
    nxt = tick({("x", 0), ("x", 1)}, [("e", 2), ("k", 0)], {("x", 2), ("z", 0)}, {("f", 1)})
    assert nxt.known == frozenset({("x", 0), ("x", 1)})
    assert nxt.context == frozenset({("e", 1), ("f", 0)})


# --- long modes ------------------------------------------------------------------------------

def test_clutch_run_table():
    """T-RUN-1 (theory §4.1): guard sequence f, f, t, t, t, f, f."""
    s, rs = run_sequence(X.clutch_paper(), [F, F, T, T, T, F, F])
    assert all(r.ok for r in rs)
    released = [{("e5", 0)}, {("e1", 0)}, {("e6", 0)}, {("e2", 0)}]
    engaged = [{("e1", 0), ("e2", 0), ("e3", 1), ("e4", 0)}]
    exp = [  # facts, erased, blocks, next context
        (set(), set(), released, set()),
        (set(), set(), released, set()),
        (set(), {("e3", 0)}, engaged, {("e3", 0)}),
        ({("e3", 0)}, set(), engaged, {("e3", 0)}),
        ({("e3", 0)}, set(), engaged, {("e3", 0)}),
        (set(), set(), released, set()),
        (set(), set(), released, set())]
    for r, (facts, erased, bl, ctx) in zip(rs, exp):
        assert set(r.facts) == facts and set(r.erased) == erased
        assert sorted(map(sorted, blocks(r))) == sorted(map(sorted, bl))
        assert set(r.next.context) == ctx
        assert r.next.known == frozenset({("w1", 0), ("w2", 0)})


def test_cup_and_ball_two_instant_reconciliation():
    """T-RUN-2 (theory §4.2): erase {k1, k1^o}, then {k1}, then steady; no erasure back."""
    s, rs = run_sequence(X.cup_and_ball(), [F, T, T, T, F])
    assert [set(r.erased) for r in rs] == [set(), {("k1", 0), ("k1", 1)}, {("k1", 0)}, set(),
                                           set()]
    assert [set(r.facts) for r in rs] == [set(), set(), {("k1", 1)}, {("k1", 0), ("k1", 1)},
                                          set()]
    assert blocks(rs[1]) == [{("e1", 0), ("e2", 0), ("k1", 2)}, {("k2", 0)}]


def test_air_brake_valve_opening_erases_v1():
    """T-WB-3: f -> t erases {v1} with facts {l1, l2}; t -> f erases nothing."""
    s, rs = run_sequence(X.air_brake(), [F, T, T, F])
    assert set(rs[1].facts) == {("l1", 0), ("l2", 0)} and set(rs[1].erased) == {("v1", 0)}
    assert set(rs[2].facts) == {("l1", 0), ("l2", 0), ("v1", 0)} and not rs[2].erased
    assert set(rs[3].facts) == {("l1", 0), ("l2", 0)} and not rs[3].erased


RLDC2_RESTRICTED = {  # docs/decisions.md §2 (restricted erasure): erased sets per instant
    ("TF", "TT"): [{("K3", 0)}], ("FT", "TT"): [{("K3", 0)}],
    ("TF", "FF"): [{("K1", 0)}], ("FT", "FF"): [{("K1", 0)}],
    ("TT", "FF"): [{("K1", 0), ("K1", 1)}, {("K1", 0)}],
    ("FF", "TT"): [{("K3", 0), ("K3", 1)}, {("K3", 0)}],
    ("TT", "TF"): [set()], ("TT", "FT"): [set()], ("FF", "TF"): [set()],
    ("FF", "FT"): [set()], ("TF", "FT"): [set()], ("FT", "TF"): [set()]}
CANONICAL_REJECTS = {("TF", "TT"), ("FT", "TT"), ("TF", "FF"), ("FT", "FF"), ("TT", "FF"),
                     ("FF", "TT")}


def _m(code):
    return tuple(c == "T" for c in code)


@pytest.mark.parametrize("pair", sorted(RLDC2_RESTRICTED))
def test_rldc2_mode_changes(pair):
    """T-RL-4: restricted erasure accepts all 12 changes with the sets of §2.4.3; the canonical
    rule rejects exactly six of them as underdetermined."""
    src, dst = map(_m, pair)
    s, rs = run_sequence(X.rldc2(), [src] + [dst] * 4)
    assert all(r.ok for r in rs)
    erased = [set(r.erased) for r in rs[1:]]
    exp = RLDC2_RESTRICTED[pair]
    assert erased[:len(exp)] == exp and all(not e for e in erased[len(exp):])
    s, rs = run_sequence(X.rldc2(), [src, dst, dst, dst], erasure="canonical")
    assert all(r.ok for r in rs) == (pair not in CANONICAL_REJECTS)
    if pair in CANONICAL_REJECTS:
        assert rs[-1].diagnostic.code == "E-RESTART-MISSING"


def test_missing_restart_is_rejected_with_names():
    """T-RUN-4 (theory §4.6)."""
    s, rs = run_sequence(X.missing_restart(), [F, T])
    d = rs[-1].diagnostic
    assert not rs[-1].ok and d.code == "E-RESTART-MISSING"
    assert d.variables == ("z",) and "b1" in d.message and "no equation determines the restart "\
        "of {z} (1 equation missing" in d.message


EXAMPLES = [X.clutch_paper, X.clutch_basic, X.cup_and_ball, X.air_brake, X.rldc2,
            X.clutch_cubic]


@pytest.mark.parametrize("make", EXAMPLES)
def test_steady_long_mode_is_the_sigma_method(make):
    """T-RUN-3 / Lemma 42: in a steady long mode H = G_Sig, no erasure, Phi = Gbar_Sig."""
    s = normalize(make())
    for m in s.long_modes():
        sig = sigma_of_mode(s, m)
        cfg = steady_config(s, m, sig)
        r = exec_long(s, cfg, m, sig)
        assert r.ok and not r.erased and r.next == cfg
        assert set(r.solved) == {(e, c) for e, c in sig.c.items()}
        assert set(r.facts) == {(e, k) for e, c in sig.c.items() for k in range(c)}


REFERENCE = sorted((Path(__file__).resolve().parents[2] / "reference_models").glob("*.mo"))


def _seed_models():
    """The examples of the papers and every reference model that imports."""
    out = [(make.__name__, make()) for make in EXAMPLES]
    for path in REFERENCE:
        try:
            out.append((path.stem, parse_modelica(path.read_text(), path.name)))
        except (InputError, ModelRejected):
            continue
    return out


def test_steady_run_and_reused_offsets_equal_the_algorithms():
    """The mode-change stage takes the Σ offsets of a mode from the per-mode stage when their
    signature matrices are provably the same (`sigma_from_report`) and builds the run from the
    steady configuration from those offsets (`steady_run`, theory §2.15 "Classification"):
    on every long mode of the seed models, the same offsets as Algorithm 6 and the same
    instant as Algorithm 10 (`exec_long`) from that configuration."""
    reused = recomputed = 0
    for name, model in _seed_models():
        try:
            s = normalize(model)
            report = analyze_modes(model, latent=False)
        except ModelRejected:
            continue
        for m in s.long_modes():
            sig = sigma_of_mode(s, m)
            given = sigma_from_report(s, m, report)
            if given is None:
                recomputed += 1
            else:
                reused += 1
                assert (given.ok, given.c, given.d) == (sig.ok, sig.c, sig.d), (name, m)
            if not sig.ok:
                continue
            cfg = steady_config(s, m, sig)
            assert steady_run(s, m, sig) == exec_long(s, cfg, m, sig), (name, m)
    assert reused >= 10 and recomputed >= 5


PENDULUM_ALL_FIXED = """class Pendulum
  parameter Real L = 1.0;
  Real x(start = 0.6, fixed = true);
  Real y(start = -0.7, fixed = true);
  Real vx(start = 0.0, fixed = true);
  Real vy(start = 0.0, fixed = true);
  Real lambda;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -lambda * x;
  der(vy) = -lambda * y - 9.81;
  x ^ 2 + y ^ 2 = L ^ 2;
end Pendulum;
"""


def test_initialization_graph_keeps_the_over_determined_part():
    """`initialization_check` takes its DM on the consistency instances and the start equations
    they read when every fixed variable is a state: the over-determined part is the one of the
    whole index-reduced system with the start equations (the former graph, rebuilt here), on
    every long mode of the seed models and on a pendulum whose four start values
    over-determine the rod constraint and its derivative."""
    from mdae_fmu.modes.explore import _initialization_graph
    from mdae_fmu.modes.runs import instance_vars
    from mdae_fmu.structure.keyed import dm
    # (lambda fixed too: an algebraic variable, the whole system is kept)
    models = _seed_models() + [("pendulum", parse_modelica(PENDULUM_ALL_FIXED)), (
        "pendulum, lambda fixed", parse_modelica(PENDULUM_ALL_FIXED.replace(
            "Real lambda;", "Real lambda(start = 9.81, fixed = true);")))]
    over_seen = 0
    for name, model in models:
        try:
            s = normalize(model)
        except ModelRejected:
            continue
        unknown = set(s.unknowns)
        fixed = sorted(v.name for v in model.variables
                       if v.fixed and v.start is not None and v.name in unknown)
        for m in s.long_modes():
            sig = sigma_of_mode(s, m)
            if not sig.ok:
                continue
            whole = {(e.id, k): instance_vars(s, (e.id, k))
                     for e in s.enabled(m) for k in range(sig.c[e.id] + 1)}
            whole.update({("start(" + n + ")", 0): frozenset({(n, 0)}) for n in fixed})
            expected = dm(whole, whole, set().union(*whole.values())).over_eqs
            occ = _initialization_graph(s, m, sig, fixed)
            assert dm(occ, occ, set().union(*occ.values())).over_eqs == expected, (name, m)
            over_seen += bool(expected)
    assert over_seen >= 2


@pytest.mark.parametrize("make, extra", [(X.cup_and_ball, 0), (X.clutch_paper, 0),
                                         (X.rldc2, 1)])
def test_reconciliation_is_finite(make, extra):
    """T-RUN-6: after a change into mu1 the erasure instants are at most max c_f(mu1); with the
    restricted rule a double switch may also postpone the leading equation once (RLDC2
    FF -> TT erases {K3, K3'} then {K3}, docs/decisions.md §2), hence one more instant."""
    s = normalize(make())
    for a, b in itertools.permutations(s.long_modes(), 2):
        _, rs = run_sequence(make(), [a] + [b] * 6)
        assert all(r.ok for r in rs)
        n_er = sum(1 for r in rs[1:] if r.erased)
        assert n_er <= max(sigma_of_mode(s, b).index, 1) + extra
        assert not rs[-1].erased


def test_determinism_under_permutation():
    """T-RUN-5 / T-GEN-1: permuting the variables, and the equations outside the erasure
    candidates, gives the same runs; the restricted rule breaks ties by the textual order of the
    candidates (docs/decisions.md §2), which is kept here."""
    m = X.rldc2()
    eqs = list(m.equations)
    cand = [e for e in eqs if e.id in ("K1", "K3", "Z1", "Z2")]
    rest = [e for e in eqs if e not in cand]
    it = iter(cand)
    perm = [next(it) if e in cand else None for e in eqs]
    rest_rev = iter(reversed(rest))
    perm = [e if e is not None else next(rest_rev) for e in perm]
    m2 = Model(name=m.name, variables=tuple(reversed(m.variables)), equations=tuple(perm))
    s2 = normalize(m2)
    assert [g.name for g in s2.guards] == ["g2", "g1"]

    def swap(code):
        return _m(code)[::-1]
    for a, b in [("TF", "TT"), ("TT", "FF"), ("FF", "TT")]:
        r1 = run_sequence(m, [_m(a), _m(b), _m(b)])[1]
        r2 = run_sequence(m2, [swap(a), swap(b), swap(b)])[1]
        assert [(r.erased, r.facts, r.solved, r.next) for r in r1] == \
            [(r.erased, r.facts, r.solved, r.next) for r in r2]
        again = run_sequence(m, [_m(a), _m(b), _m(b)])[1]
        assert [r.blocks for r in again] == [r.blocks for r in r1]


# --- ExistQuantifEqn: Lemma 22 ---------------------------------------------------------------

def test_lemma22_literal_versus_two_graph_reading():
    """T-EQ-1 (theory §4.10): x - y = 0 with X = {x}, Y = {y}."""
    occ = {"f": [("x", 0), ("y", 0)]}
    two = exist_quantif(["f"], occ, {("x", 0)}, set(), {("y", 0)})
    lit = exist_quantif(["f"], occ, {("x", 0)}, set(), {("y", 0)}, literal=True)
    assert two.b_O and two.b_U and two.F_sig == ("f",) and two.Fbar_sig == ()
    assert lit.b_O and not lit.b_U
    occ2 = {"f1": [("x", 0), ("y1", 0)], "f2": [("x", 0), ("y2", 0)]}
    r = exist_quantif(["f1", "f2"], occ2, {("x", 0)}, set(), {("y1", 0), ("y2", 0)})
    assert r.b_O and not r.b_U and "over-determined" in r.reason


def test_lemma22_condition3_future_variable():
    """T-EQ-2: x - w = 0, w - y = 0 with W = {w}: x would depend on a future-only value."""
    occ = {"a": [("x", 0), ("w", 0)], "b": [("w", 0), ("y", 0)]}
    r = exist_quantif(["a", "b"], occ, {("x", 0)}, {("w", 0)}, {("y", 0)})
    assert r.b_O and not r.b_U and "future" in r.reason


# --- transient modes -------------------------------------------------------------------------

def test_elastic_cup_and_ball_with_impact_law():
    """T-DA-2 / T-CB-7 (theory §4.5 b): at the impact k1 is erased and the rest is square."""
    s, rs = run_sequence(X.cup_and_ball_elastic(), [F, T, F, F])
    assert all(r.ok for r in rs)
    assert rs[1].kind == "transient" and set(rs[1].erased) == {("k1", 0)}
    assert {k[0] for k in rs[1].solved} == {"e1a", "e1b", "e2a", "e2b", "k2", "w1.reinit(vy)"}
    assert rs[2].next.last_transient == frozenset() and not rs[2].erased


def test_elastic_cup_and_ball_without_impact_law_is_underdetermined():
    """T-DA-1 / T-CB-6 (theory §4.5 a): one equation is missing at the transient instant;
    the equations involved are e1b, e2b (the dynamics of the velocities) and k2."""
    s, rs = run_sequence(X.cup_and_ball_elastic(impact_law=False), [F, T])
    d = rs[-1].diagnostic
    assert d.code == "E-TRANSIENT-UNDER" and "impact" in d.message
    assert {"lam", "s"} <= set(d.variables)
    assert set(d.equations) == {("e1b", 0), ("e2b", 0), ("k2", 0)}
    assert "1 equation missing" in d.message and "for one of {vx, vy}" in d.message


def test_lacking_restart_counts_and_names_the_missing_values():
    """beta_U = {a: x + y + z, b: z}: one equation is missing, and either x or y given
    completes the system; z given does not (b alone would then have no unknown)."""
    from mdae_fmu.modes.runs import lacking_restart
    occ = {"a": {("x", 0), ("y", 0), ("z", 0)}, "b": {("z", 0)}}
    under = {("x", 0), ("y", 0), ("z", 0)}
    assert lacking_restart(occ, under, occ, under) == (1, ((("x", 0),), (("y", 0),)))
    assert lacking_restart(occ, under, occ, [("z", 0)]) == (1, ())
    occ2 = {"a": {("x", 0), ("y", 0), ("z", 0)}}
    assert lacking_restart(occ2, under, occ2, under) == (2, ((("x", 0), ("y", 0)),))


def test_reset_example_47():
    """T-CONT-2 (theory §4.11): the reset sets x^o = 0; X(mu_zc) = {x}; the chain is finite
    thanks to the rising-edge rule."""
    s, rs = run_sequence(X.reset_example(), [F, T, F])
    assert all(r.ok for r in rs) and [k[0] for k in rs[1].solved] == ["e1.reinit(x)"]
    chain = continuations(s, T)
    assert chain.finite and chain.steps[0][1] == ("x",)


def test_events_retriggering_each_other_are_an_infinite_cascade():
    """T-CONT-3: event A reads y and resets x; event B reads x and resets y."""
    from mdae_fmu.ir import Reinit, WhenBranch, WhenClause
    m = Model(
        name="PingPong",
        variables=(X.real("x", 0, True), X.real("y", 0, True)),
        equations=(X.eq("a", "der(x) = 1"), X.eq("b", "der(y) = 1")),
        whens=(
            WhenClause(
                id="A",
                branches=(
                    WhenBranch(
                        condition=X.ex("y >= 1"), actions=(Reinit(var="x", value=X.ex("2.0")),)
                    ),
                ),
            ),
            WhenClause(
                id="B",
                branches=(
                    WhenBranch(
                        condition=X.ex("x >= 1"), actions=(Reinit(var="y", value=X.ex("2.0")),)
                    ),
                ),
            ),
        ),
    )
    s = normalize(m)
    mode = tuple(g.name == "edge(y >= 1)" for g in s.guards)
    assert not continuations(s, mode).finite


def test_previous_mode_without_the_state_needs_no_erasure():
    """T-GEN-4 variant 1 (RR-9334 §11.1.2, c-_f < c_f): w1 is algebraic before the
    change, so it is unknown at the first engaged instant: nothing is erased and the restart
    is determined although the engaged consistency e3 alone would leave a free common speed."""
    m = Model(name="ClutchVariant", variables=(X.real("w1"), X.real("w2", 1.0, True), X.real("t1"),
                                X.real("t2"), X.boolean_input("g")), equations=(
        X.eq("e1", "der(w1) = -w1 + t1", "g"),
        X.eq("a1", "w1 = 2*w2", "not g"),
        X.eq("e2", "der(w2) = -w2 + t2"),
        X.eq("e3", "w1 - w2 = 0", "g"),
        X.eq("e4", "t1 + t2 = 0", "g"),
        X.eq("e5", "t1 = 0", "not g"),
        X.eq("e6", "t2 = 0", "not g")))
    s, rs = run_sequence(m, [F, T, T])
    assert all(r.ok for r in rs)
    assert not rs[1].erased and ("w1", 0) in rs[1].unknowns
    assert {k for b in rs[1].blocks for k in b.equations} >= {("e3", 0), ("e3", 1)}


BALL_TEXT = """model Ball
  parameter Real e = 0.8;
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(h) = v;
  der(v) = -9.81;
  when h < 0 then
    reinit(v, -e*pre(v));
  end when;
PAIR
end Ball;
"""
PAIR_TEXT = """  der(u1) = i1;
  2*der(u2) = i2;
  i1 + i2 = sin(time);
  if sw then
    u1 = u2;
  else
    i2 = -u2;
  end if;
"""


def _ball_instant(with_pair: bool, sw: bool):
    """The bounce's instant from the steady configuration of its long mode (``sw`` the pair's
    switch), on the ball alone or the ball beside the pair."""
    text = BALL_TEXT.replace("PAIR\n", PAIR_TEXT if with_pair else "")
    if with_pair:
        text = text.replace("equation\n", "  Real u1(start = 0, fixed = true);\n"
                            "  Real u2(start = 0, fixed = true);\n  Real i1, i2;\n"
                            "  input Boolean sw(start = false);\nequation\n")
    s = normalize(parse_modelica(text))
    mode = tuple((g.kind != "long") or sw for g in s.guards)
    src = continuation_mode(s, mode)
    sig = sigma_of_mode(s, src)
    return s, exec_transient(s, steady_config(s, src, sig), mode, sig)


@pytest.mark.parametrize("sw", [False, True])
def test_parts_apart_from_the_event_are_decided_on_their_own(sw):
    """docs/theory.md §7.5: beside the bounce, two capacitors the switch puts in parallel
    (under-determined at shift 0 when ``sw``, decided by DiffArray's phase 2) share no
    instance with the ball: the bounce's instant is the ball alone's (the dynamics of v gives
    way to the reinit, the same solved equations and blocks), and the whole instant is
    square. Before, phase 1 over the whole array failed and the reinit never yielded
    (E-TRANSIENT-FUTURE)."""
    from mdae_fmu.modes.runs import array_components, diff_array
    _, alone = _ball_instant(False, sw)
    s, both = _ball_instant(True, sw)
    assert alone.ok and both.ok, both.diagnostic
    ball_ids = {k[0] for k in alone.solved} | {k[0] for k in alone.erased}
    assert {k for k in both.erased if k[0] in ball_ids} == set(alone.erased)
    assert ("e2", 0) in alone.erased                 # der(v) = -9.81 gave way
    assert {k for k in both.solved if k[0] in ball_ids} == set(alone.solved)
    assert [b for b in both.blocks if set(b.equations) <= set(alone.solved)] == \
        list(alone.blocks)
    mode = tuple((g.kind != "long") or sw for g in s.guards)
    src = continuation_mode(s, mode)
    sig = sigma_of_mode(s, src)
    res, occ, _ = diff_array(s, steady_config(s, src, sig), mode, sig)
    parts = array_components(set(occ), occ)
    assert len(parts) == 2 and {k[0] for k in parts[0]} <= ball_ids | {"e1"}
    assert not {k[0] for k in parts[1]} & ball_ids
