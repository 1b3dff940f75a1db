"""Per-mode analysis, specialization, guard enumeration and the analyze report (docs/theory.md
§4, §5.3, §13.1, §13.4, and hand-checked cases)."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from mdae_fmu import expr as E
import sympy as sp

from mdae_fmu import api
from mdae_fmu.diagnostics import InputError
from mdae_fmu.report import block_text, render_json, render_text
from mdae_fmu.structure.per_mode import (Instance, analyze_modes, consistent_valuation,
                                         enumerate_valuations, specialize)

from structure_models import G, clutch, clutch_bad, eq, ex, model, pendulum, rldc2

ROOT = Path(__file__).resolve().parents[2]


def by_name(report):
    return {m.name: m for m in report.modes}


def inst(*pairs):
    return tuple(Instance(name=n, order=k) for n, k in pairs)


# --- clutch ---------------------------------------------------------------------------------

def test_clutch_modes():
    r = analyze_modes(clutch())
    assert r.exit_code == 0 and r.messages == ()
    assert r.long_guards == ("g",) and r.discrete_equations == ("eg",)
    assert r.unknowns == ("w1", "w2", "t1", "t2")
    modes = by_name(r)
    assert list(modes) == ["{g}", "{not g}"]
    eng, rel = modes["{g}"], modes["{not g}"]
    assert eng.valuation == (("g", True),) and rel.valuation == (("g", False),)
    assert eng.c == {"e1": 0, "e2": 0, "e3": 1, "e4": 0}
    assert eng.d == {"w1": 1, "w2": 1, "t1": 0, "t2": 0}
    assert (eng.index, eng.structural_index, eng.dof) == (1, 2, 1)
    assert eng.states == inst(("w1", 0), ("w2", 0))
    assert eng.leading == inst(("w1", 1), ("w2", 1), ("t1", 0), ("t2", 0))
    assert [b.equations for b in eng.blocks] == [(("e1", 0), ("e2", 0), ("e3", 1), ("e4", 0))]
    assert block_text(eng.blocks[0]) == "{e1, e2, e3', e4} -> {der(w1), der(w2), t1, t2}"
    sym = r.symbols
    e3p = [e for e in eng.solved if e.eq_id == "e3"][0]
    assert e3p.k == 1 and sp.simplify(e3p.expr - (sym.sym("w1", 1) - sym.sym("w2", 1))) == 0
    assert [(e.eq_id, e.k) for e in eng.consistency] == [("e3", 0)]
    assert rel.c == {"e1": 0, "e2": 0, "e5": 0, "e6": 0} and rel.index == 0
    assert rel.structural_index == 1 and rel.dof == 2 and rel.consistency == ()
    assert all(len(b.equations) == 1 for b in rel.blocks) and len(rel.blocks) == 4
    order = [b.equations[0][0] for b in rel.blocks]
    assert order.index("e5") < order.index("e1") and order.index("e6") < order.index("e2")


def test_latent_equations_match_structure():
    """Each solved equation f^(c_f) contains x only up to order d_x, reaches d_x exactly on
    the tight entries (Griewank: ∂f^(c)/∂x^(d) = ∂f/∂x^(σ)), and f^(k+1) = d/dt f^(k)."""
    for m_ in (clutch(), pendulum(), rldc2()):
        r = analyze_modes(m_)
        sym = r.symbols
        for mode in r.modes:
            for le in mode.solved:
                orders = {}
                for n, k in sym.instances(le.expr):
                    orders[n] = max(orders.get(n, -1), k)
                for n, k in orders.items():
                    assert k <= mode.d[n], (mode.name, le.label, n)
            chains = {}
            for le in mode.consistency + mode.solved:
                chains.setdefault(le.eq_id, {})[le.k] = le.expr
            for ks in chains.values():
                for k in range(1, max(ks) + 1):
                    assert sp.simplify(ks[k] - sym.time_derivative(ks[k - 1])) == 0


# --- pendulum -------------------------------------------------------------------------------

def test_pendulum_index_conventions():
    r = analyze_modes(pendulum())
    (m,) = r.modes
    assert m.name == "{}" and m.valuation == ()
    assert m.c == {"f1": 0, "f2": 0, "f3": 2} and m.d == {"x": 2, "y": 2, "lam": 0}
    assert m.index == 2 and m.structural_index == 3 and m.dof == 2
    assert m.states == inst(("x", 0), ("x", 1), ("y", 0), ("y", 1))
    assert m.leading == inst(("x", 2), ("y", 2), ("lam", 0))
    assert [(e.eq_id, e.k) for e in m.consistency] == [("f3", 0), ("f3", 1)]
    assert len(m.blocks) == 1 and set(m.blocks[0].equations) == {("f1", 0), ("f2", 0), ("f3", 2)}
    x, y = r.symbols.sym("x"), r.symbols.sym("y")
    f3pp = [e for e in m.solved if e.eq_id == "f3"][0].expr
    xd, yd = r.symbols.sym("x", 1), r.symbols.sym("y", 1)
    xdd, ydd = r.symbols.sym("x", 2), r.symbols.sym("y", 2)
    assert sp.expand(f3pp - (2 * xd**2 + 2 * x * xdd + 2 * yd**2 + 2 * y * ydd)) == 0


def test_ode_has_no_pryce_increment():
    m = model("Osc", "x v", [eq("a", "der(x) = v"), eq("b", "der(v) = -x")])
    (mode,) = analyze_modes(m).modes
    assert mode.index == 0 and mode.structural_index == 0


# --- RLDC2 ----------------------------------------------------------------------------------

def test_rldc2_per_mode():
    r = analyze_modes(rldc2())
    assert r.exit_code == 0
    assert r.discrete_equations == ("G1", "G2")
    modes = by_name(r)
    assert list(modes) == ["{g1, g2}", "{g1, not g2}", "{not g1, g2}", "{not g1, not g2}"]
    assert [m.index for m in r.modes] == [1, 0, 0, 1]
    tt, tf, ft, ff = r.modes

    def pos(dct):
        return {k for k, v in dct.items() if v > 0}

    assert pos(tt.c) == {"K3", "Z1", "Z2"} and pos(ff.c) == {"K1", "Z1", "Z2"}
    assert pos(tf.c) == pos(ft.c) == set()
    assert pos(tt.d) == {"j1", "j2", "v1", "v2", "u1", "u2"}
    assert pos(ff.d) == {"j1", "j2", "v1", "v2", "i1", "i2"}
    assert pos(tf.d) == pos(ft.d) == {"j1", "j2", "v1", "v2"}
    assert [m.dof for m in r.modes] == [3, 4, 4, 3]

    def big(m):
        return {(frozenset(b.equations), frozenset(b.unknowns)) for b in m.blocks
                if len(b.equations) > 1}
    assert big(tt) == {(frozenset({("C1", 0), ("C2", 0), ("K1", 0), ("K3", 1)}),
                        frozenset(inst(("v1", 1), ("v2", 1), ("i1", 0), ("i2", 0))))}
    assert big(ff) == {(frozenset({("K1", 1), ("K2", 0), ("K3", 0), ("K4", 0), ("L1", 0),
                                   ("L2", 0)}),
                        frozenset(inst(("j1", 1), ("j2", 1), ("u1", 0), ("u2", 0), ("w1", 0),
                                       ("w2", 0))))}
    assert big(tf) == big(ft) == set()
    # scalar blocks of TT include Z1' -> der(u1)
    assert any(b.equations == (("Z1", 1),) and b.unknowns == inst(("u1", 1)) for b in tt.blocks)


# --- rejections -----------------------------------------------------------------------------

def test_structurally_singular_mode_message():
    r = analyze_modes(clutch_bad())
    assert r.exit_code == 1
    bad = by_name(r)["{g}"]
    assert not bad.ok and bad.status == "singular" and bad.index == -1
    assert bad.diagnostic == ("mode {g}: equations e3 (ClutchBad.mo:14), e5 (ClutchBad.mo:16) "
                              "over-determine {w1}; no equation determines {f2}")
    assert bad.over_equations == ("e3", "e5") and bad.over_variables == ("w1",)
    assert bad.under_variables == ("f2",) and bad.absent == ("f2",)
    assert r.messages == (bad.diagnostic,)
    assert by_name(r)["{not g}"].ok


def test_non_square_modes():
    # more equations than unknowns in mode g
    m = model("Over", "x y", [
        eq("a", "der(x) = -x"), eq("b", "y = x"), eq("c", "y = 2*x", G),
    ], booleans="g")
    modes = by_name(analyze_modes(m))
    over = modes["{g}"]
    assert not over.ok and over.status == "overdetermined"
    assert "3 equations for 2 unknowns: more equations than unknowns" in over.diagnostic
    assert over.diagnostic.startswith("mode {g}: equations a, b, c over-determine {x, y}")
    assert modes["{not g}"].ok
    # fewer equations than unknowns: the non-square Σ-method still gives offsets (docs/theory.md
    # §4.4)
    m = model("Under", "x y lam gr", [
        eq("f1", "der(der(x)) = lam*x"), eq("f2", "der(der(y)) = lam*y - gr"),
        eq("f3", "x**2 + y**2 = L**2")], params="L")
    (u,) = analyze_modes(m).modes
    assert not u.ok and u.status == "underdetermined"
    assert u.c == {"f1": 0, "f2": 0, "f3": 2} and u.d == {"x": 2, "y": 2, "lam": 0, "gr": 0}
    assert "3 equations for 4 unknowns (fewer equations than unknowns)" in u.diagnostic
    assert "no equation determines" in u.diagnostic
    assert set(u.under_variables) >= {"gr"}


def test_unknown_name_is_input_error():
    m = model("Typo", "x", [eq("a", "der(x) = -xx", line=3)])
    with pytest.raises(InputError, match="unknown variable xx"):
        analyze_modes(m)


# --- guards and valuations ------------------------------------------------------------------

def test_complementary_relations_are_not_enumerated():
    m = model("Sat", "x y", [
        eq("a", "der(x) = 1 - y"),
        eq("b", "y = x", (("x > 0", True),)),
        eq("c", "y = 0", (("x <= 0", True),)),
    ])
    r = analyze_modes(m)
    assert [m_.name for m_ in r.modes] == ["{x > 0, not x <= 0}", "{not x > 0, x <= 0}"]
    assert r.exit_code == 0 and r.n_valuations == 4


def test_contradiction_detection():
    gt0, le0, gt1, lt_ab, ge_ba = ex("x > 0"), ex("x <= 0"), ex("x > 1"), ex("a < b"), ex("b <= a")
    assert not consistent_valuation({gt0: True, le0: True})
    assert consistent_valuation({gt0: True, le0: False})
    assert not consistent_valuation({gt1: True, gt0: False})
    assert consistent_valuation({gt1: False, gt0: True})
    assert not consistent_valuation({lt_ab: True, ge_ba: True})     # a < b vs a >= b
    assert consistent_valuation({lt_ab: True, ge_ba: False})
    assert consistent_valuation({lt_ab: True, ex("b >= a"): True})
    assert not consistent_valuation({ex("x == 1"): True, gt1: True})
    vals, fixed = enumerate_valuations([gt1, gt0])
    assert [tuple(v.values()) for v in vals] == [(True, True), (False, True), (False, False)]
    # a composite guard must agree with its parts
    g1, g2, both = ex("g1"), ex("g2"), ex("g1 and g2")
    assert not consistent_valuation({g1: True, g2: True, both: False})
    assert len(enumerate_valuations([g1, g2, both])[0]) == 4


def test_negated_if_condition_and_constant_guard():
    # the branch -der(y) makes y a state when g holds: the offsets change, g stays
    # structural (structure/demotion.py)
    m = model("Neg", "x y", [
        eq("a", "der(x) = y"),
        eq("b", "y = (1 if not g else -der(y))"),
        eq("c", "x = 0", (("true", False),)),         # never enabled
    ], booleans="g")
    r = analyze_modes(m)
    assert r.long_guards == ("g", "true") and r.fixed_guards == (("true", True),)
    assert [x.name for x in r.modes] == ["{g}", "{not g}"]
    eqs_g = specialize(m, {ex("g"): True})
    assert [e.id for e in eqs_g] == ["a", "b"]
    assert eqs_g[1].residual == ex("y - -der(y)")


def test_specialize_accepts_text_valuations():
    m = clutch()
    eqs = specialize(m, (("g", True),))
    assert [e.id for e in eqs] == ["e1", "e2", "e3", "e4"] and all(e.guard == () for e in eqs)
    assert eqs[2].loc.line == 13
    assert [e.id for e in specialize(m, (("g", False),), include_discrete=True)] == \
        ["e1", "e2", "e5", "e6", "eg"]
    with pytest.raises(KeyError):
        specialize(m, {})
    with pytest.raises(KeyError):
        specialize(m, (("h", True),))


def switched(name: str, conds: list[str], on: str = "x", first: str = "der(x) = y",
             defs: tuple = (), booleans: str | None = None):
    """``first``, ``y = z0 + z1 + ...`` and, for each condition, the if-equation
    ``if cond then z_k = on else z_k = 0``: guards of which equations exist, structural
    whatever the offsets of their modes (structure/demotion.py demotes only conditions of
    if-expressions)."""
    eqs = list(defs) + [eq("a", first),
                        eq("b", "y = " + " + ".join(f"z{k}" for k in range(len(conds))))]
    for k, c in enumerate(conds):
        eqs += [eq(f"s{k}", f"z{k} = {on}", ((c, True),)), eq(f"t{k}", f"z{k} = 0", ((c, False),))]
    reals = "x y " + " ".join(f"z{k}" for k in range(len(conds)))
    if booleans is None:
        booleans = " ".join(sorted({n for c in conds for n in E.refs(ex(c))} - {"x"}))
    return model(name, reals, eqs, booleans=booleans)


def test_too_many_guards():
    m = switched("Many", [f"g{k}" for k in range(13)])
    r = analyze_modes(m)          # 2^13 consistent valuations: refused, enumeration cut off
    assert r.exit_code == 1 and r.modes == ()
    assert "its 13 long guards have more than 4096 consistent valuations" in r.messages[0]
    assert "explicit enumeration limit: 4096 modes" in r.messages[0]
    small = switched("Few", [f"g{k}" for k in range(5)])
    assert analyze_modes(small, max_guards=4).exit_code == 1
    assert analyze_modes(small, max_modes=31, latent=False).exit_code == 1
    r = analyze_modes(small, max_modes=32, latent=False)
    assert r.exit_code == 0 and len(r.modes) == 32


def thresholds(n, var="x"):
    """der(x) = 1 − 0.1 y, y = Σ_k z_k, z_k = 1 if x > k else 0 (if-equations): n correlated
    long guards, n + 1 consistent valuations (the audit's Thresh.mo, with if-equations: as
    if-expressions the conditions define no mode, structure/demotion.py)."""
    return switched("Thresh", [f"{var} > {k}.0" for k in range(n)], on="1",
                    first="der(x) = 1 - 0.1*y")


def test_correlated_thresholds_count_consistent_valuations():
    r = analyze_modes(thresholds(13), latent=False)
    assert r.exit_code == 0 and len(r.modes) == 14 and r.n_valuations == 2 ** 13
    # a mode is "x > k for k < m": true literals form a prefix
    for m_ in r.modes:
        vals = [v for _, v in m_.valuation]
        assert vals == sorted(vals, reverse=True)
    # 40 ordered thresholds: 2^40 valuations, 41 consistent ones, enumerated quickly
    import time
    t0 = time.perf_counter()
    r = analyze_modes(thresholds(40), latent=False)
    assert r.exit_code == 0 and len(r.modes) == 41
    assert time.perf_counter() - t0 < 20


def test_enumeration_cut_off_is_lazy():
    import time
    from mdae_fmu.structure.per_mode import TooManyModes
    atoms = [ex(f"g{k}") for k in range(200)]          # 2^200 valuations
    t0 = time.perf_counter()
    with pytest.raises(TooManyModes, match="more than 4096 consistent valuations"):
        enumerate_valuations(atoms, limit=4096)
    assert time.perf_counter() - t0 < 5
    vals, _ = enumerate_valuations(atoms[:12], limit=4096)
    assert len(vals) == 4096
    # the node budget bounds the search even when consistent valuations are rare
    from mdae_fmu.structure import valuations as PM
    saved, PM._NODES_PER_MODE = PM._NODES_PER_MODE, 1
    try:
        with pytest.raises(TooManyModes, match="stopped after 4136 partial valuations"):
            enumerate_valuations(atoms[:20], limit=4096)
    finally:
        PM._NODES_PER_MODE = saved


def test_boolean_guards_defined_by_discrete_equations_are_pruned():
    # the audit's TwoClock.mo: g1 = time >= 5, g2 = time >= 7; {not g1, g2} is impossible
    # (the guards of if-equations, structure/demotion.py: as if-expressions they define no mode)
    clocks = (eq("d1", "g1 = (time >= 5.0)"), eq("d2", "g2 = (time >= 7.0)"))
    m = switched("TwoClock", ["g1", "g2"], defs=clocks)
    r = analyze_modes(m, latent=False)
    assert r.discrete_equations == ("d1", "d2")
    assert [x.name for x in r.modes] == ["{g1, g2}", "{g1, not g2}", "{not g1, not g2}"]
    # composite definitions, chained: g3 = g1 and not g2 (time in [5, 7)), guards g1, g3
    m = switched("Window", ["g3", "g2"], defs=clocks + (eq("d3", "g3 = (g1 and not g2)"),),
                 booleans="g1 g2 g3")
    names = [x.name for x in analyze_modes(m, latent=False).modes]
    assert names == ["{g3, not g2}", "{not g3, g2}", "{not g3, not g2}"]
    # a guarded or doubly defined Boolean is not used: no pruning (the check stays sound)
    m = switched("Twice", ["g1", "g2"], defs=(
        eq("d1", "g1 = (time >= 5.0)"), eq("d1b", "g1 = (time >= 6.0)"),
        eq("d2", "g2 = (time >= 7.0)")))
    assert len(analyze_modes(m, latent=False).modes) == 4
    # the clutch's g = (time >= t_on and time <= t_off) is one guard: both modes stay
    assert [x.name for x in analyze_modes(clutch(), latent=False).modes] == ["{g}", "{not g}"]
    # RLDC2: g1 = pre(s1) >= 0 and g2 = pre(s2) >= 0 are independent: 4 modes
    assert len(analyze_modes(rldc2(), latent=False).modes) == 4


def test_consistency_with_definitions():
    from mdae_fmu.structure.per_mode import guard_definitions
    g1, g2, t5, t7 = ex("g1"), ex("g2"), ex("time >= 5.0"), ex("time >= 7.0")
    defs = {g1: t5, g2: t7}
    assert not consistent_valuation({g1: False, g2: True}, defs)
    assert consistent_valuation({g1: False, g2: True})            # without definitions
    assert consistent_valuation({g1: True, g2: False}, defs)
    assert not consistent_valuation({g1: True, t5: False}, defs)  # g1 and its definition
    assert not consistent_valuation({g1: True, ex("time < 5.0"): True}, defs)
    m = model("D", "x", [eq("d1", "g1 = (time >= 5.0)"), eq("d2", "g2 = (not g1)"),
                         eq("d3", "h = (x > 1)"), eq("a", "der(x) = 1")],
              booleans="g1 g2 h")
    d = guard_definitions(m)
    assert d[g1] == t5 and d[g2] == E.UnOp("not", t5) and d[ex("h")] == ex("x > 1")
    assert not consistent_valuation({g1: True, g2: True}, d)


def _old_consistent_valuation(val):
    """The check before the incremental rewrite (oracle)."""
    from mdae_fmu.structure.valuations import NEGATED, eval_condition, feasible, relation_of
    groups = {}
    for c, v in val.items():
        rel = relation_of(c)
        if rel is not None:
            key, op, num = rel
            groups.setdefault(key, []).append((op if v else NEGATED[op], num))
        if isinstance(c, E.BinOp) and c.op in ("and", "or"):
            inner = eval_condition(E.BinOp(c.op, c.left, c.right),
                                   {k: b for k, b in val.items() if k != c})
            if inner is not None and inner != v:
                return False
    return all(feasible(cs) for cs in groups.values())


_POOL = [ex(t) for t in ("x > 0", "x > 1", "x <= 0", "x == 1", "x < 2", "a < b", "b <= a",
                         "g1", "g2", "g1 and g2", "g1 or x > 0", "(g1 and g2) or g3", "g3",
                         "time >= 5", "time < 5")]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(_POOL))), st.booleans()), max_size=8))
def test_incremental_consistency_equals_full_check(pairs):
    val = {}
    for k, v in pairs:
        val[_POOL[k]] = v
    assert consistent_valuation(val) == _old_consistent_valuation(val)
    # enumeration = brute force over all valuations filtered by the full check
    import itertools
    atoms = list(dict.fromkeys(_POOL[k] for k, _ in pairs))
    got = enumerate_valuations(atoms)[0]
    want = [dict(zip(atoms, vs)) for vs in itertools.product((True, False), repeat=len(atoms))
            if _old_consistent_valuation(dict(zip(atoms, vs)))]
    assert got == want


def test_inputs_and_discrete_are_known():
    m = model("In", "x", [eq("a", "der(x) = u - n")], inputs="u")
    from mdae_fmu.ir import Variable
    m = type(m)(m.name, m.variables + (Variable("n", type="Integer", variability="discrete"),),
                m.equations)
    r = analyze_modes(m)
    assert r.unknowns == ("x",) and r.inputs == ("u",) and r.discrete == ("n",)
    (mode,) = r.modes
    assert mode.ok and mode.d == {"x": 1}


# --- report ---------------------------------------------------------------------------------

def test_render_text_and_json():
    m = clutch()
    r = analyze_modes(m)
    # the API wraps this report (the enumerated analysis, implicit=False)
    assert api.analyze(m, implicit=False).modes.modes[0].c == r.modes[0].c
    text = render_text(m, r)
    assert "model ClutchBasic" in text
    assert "index (max c, seed papers' convention): 1; Pryce's structural index nu_S: 2" in text
    assert "e3': der(w1) - der(w2) = 0" in text
    assert "{e1, e2, e3', e4} -> {der(w1), der(w2), t1, t2}" in text
    assert "verdict: accepted (2 modes)" in text
    j = render_json(m, r)
    json.dumps(j)
    assert j["format"] == "mdae_fmu.analysis/1" and j["exit_code"] == 0
    eng = j["modes"][0]
    assert eng["name"] == "{g}" and eng["index"] == 1 and eng["structural_index"] == 2
    assert "differentiation_index" not in eng
    assert eng["blocks"][0]["text"] == "{e1, e2, e3', e4} -> {der(w1), der(w2), t1, t2}"
    assert eng["solved"][2] == {"equation": "e3", "k": 1, "label": "e3'",
                                "residual": "der(w1) - der(w2)"}
    bad = clutch_bad()
    rb = analyze_modes(bad)
    jb = render_json(bad, rb)
    assert jb["exit_code"] == 1 and not jb["accepted"]
    assert jb["modes"][0]["index"] is None
    assert jb["modes"][0]["over"] == {"equations": ["e3", "e5"], "variables": ["w1"]}
    assert "verdict: rejected" in render_text(bad, rb)


def test_text_report_table_and_equation_legend():
    """Issue 3 Deliver 5: a summary table of the modes (index, nu_S, states, latent
    equations, blocks), and every equation id mapped to its source line and text."""
    m = clutch()
    lines = render_text(m, analyze_modes(m)).splitlines()
    legend = {line.split()[0]: line for line in lines if line.startswith("    e")}
    assert legend["e3"].split() == ["e3", "ClutchBasic.mo:13", "if", "g:", "w1", "=", "w2"]
    assert legend["eg"].endswith("[defines a discrete variable]")
    assert "ClutchBasic.mo:8" in legend["eg"]
    head = lines.index("modes (2):")
    cols = lines[head + 1].split()
    assert cols == ["mode", "status", "index", "nu_S", "DOF", "eqs", "states", "latent",
                    "blocks", "largest"]
    rows = {line.split()[0]: line.split() for line in lines[head + 3:head + 5]}
    assert rows["{g}"] == ["{g}", "ok", "1", "2", "1", "4", "w1,", "w2", "e3'", "1", "4"]
    assert rows["{not"] == ["{not", "g}", "ok", "0", "1", "2", "4", "w1,", "w2", "(none)",
                            "4", "1"]
    assert any("nu_d" in line and "not computed" in line for line in lines[head:head + 9])
    # a rejected mode in the table, and equations without a source location
    bad = clutch_bad()
    text = render_text(bad, analyze_modes(bad))
    assert "REJECTED singular" in text and "    e3  ClutchBad.mo:14  if g: 0 = w1" in text
    pend = pendulum()
    text = render_text(pend, analyze_modes(pend))
    assert "    f3  x ^ 2 + y ^ 2 = L ^ 2" in text          # no location: no column
    assert "f3'': 2*der(x)^2 + 2*der(x,2)*x + 2*der(y)^2 + 2*der(y,2)*y = 0" in text


def test_text_report_numbers_long_mode_names():
    m = thresholds(13)
    lines = render_text(m, analyze_modes(m, latent=False)).splitlines()
    head = lines.index("modes (14):")
    assert lines[head + 3].split()[:2] == ["#1", "ok"] and max(map(len, lines[head:head + 17])) < 80
    assert f"  #14 = {{{', '.join(f'not x > {k}.0' for k in range(13))}}}" in lines
    assert any(line.startswith("mode #2 {x > 0.0, ") for line in lines)
    # short names stay in the table
    assert "mode #" not in render_text(clutch(), analyze_modes(clutch(), latent=False))


def test_analysis_report_appends_the_mode_changes_to_the_per_mode_report():
    from mdae_fmu import analysis
    from mdae_fmu.report import report_lines
    m = pendulum()
    a = analysis.analyze(m)
    text = analysis.render_text(m, a)
    assert text.startswith("\n".join(report_lines(m, a.modes)) + "\n")
    assert "mode changes (0)" in text and text.count("verdict:") == 1
    assert text.endswith("verdict: accepted")
    js = analysis.render_json(m, a)
    assert js["mode_changes"] is not None and "mode_changes" not in render_json(m, a.modes)


# --- reference models (parser and models land in parallel) ----------------------------------

def _valid_tree(m):
    from mdae_fmu import expr as E
    try:
        for e in m.equations:
            E.to_json(e.residual)
        return True
    except TypeError:
        return False


EXPECTED_INDICES = {   # model -> per-mode indices (paper convention), sorted
    "ClutchBasic": [0, 1], "ClutchGuardedTime": [0, 1], "ClutchNonSemilinear": [0, 1],
    "Pendulum": [2], "CupAndBallFirstOrder": [0, 2], "RLDC2": [0, 0, 1, 1],
    "VanDerPol": [0], "Dahlquist": [0], "Stair": [0],
}


def test_reference_models_analyze():
    files = sorted((ROOT / "reference_models").glob("*.mo"))
    assert files
    checked = 0
    for f in files:
        try:
            m = api.load(f)
        except InputError:            # a construct the parser does not read yet
            continue
        if not _valid_tree(m):        # parser defect, not an analysis question
            continue
        r = analyze_modes(m)
        render_text(m, r)
        json.dumps(render_json(m, r))
        if f.stem in EXPECTED_INDICES:
            assert sorted(x.index for x in r.modes) == EXPECTED_INDICES[f.stem], f.stem
            assert r.exit_code == 0
            checked += 1
    assert checked > 0


def test_discrete_definitions_by_type():
    from mdae_fmu.ir import Variable
    from mdae_fmu.structure.per_mode import classify_variables, defines_discrete
    m = model("Types", "x y", [
        eq("a", "der(x) = n"),                    # Real equation reading an Integer
        eq("b", "n = integer(x)"),                # Integer equation: defines n
        eq("c", "contact = (x**2 + y**2 >= 1)"),  # Boolean equation on states
        eq("d", "y = (1 if contact else 0)"),
        eq("e", "nxt = pre(nxt) + 1.0"),           # discrete Real, no continuous unknown
    ], booleans="contact")
    m = type(m)(m.name, m.variables + (Variable("n", type="Integer", variability="discrete"),
                                       Variable("nxt", variability="discrete")), m.equations)
    cls = classify_variables(m)
    assert [defines_discrete(e, cls) for e in m.equations] == [False, True, True, False, True]
    r = analyze_modes(m)
    assert r.discrete_equations == ("b", "c", "e") and r.exit_code == 0


def test_event_guards_are_false_in_long_modes():
    m = model("Ev", "x lam", [
        eq("a", "der(x) = -lam"),
        eq("k1", "lam = 1", (("edge(c)", True),)),
        eq("k2", "lam = 0", (("edge(c)", False),)),
        eq("cdef", "c = (x >= 1)"),
    ], booleans="c")
    r = analyze_modes(m)
    assert r.fixed_guards == (("edge(c)", False),)
    (mode,) = r.modes
    assert mode.name == "{}" and mode.equations == ("a", "k2")
    assert "fixed      edge(c) = false (event guard, false in long modes)" in render_text(m, r)


def test_non_square_with_unused_unknown():
    # 2 equations, 3 unknowns, z in no equation: offsets for x, y; z reported undetermined
    m = model("Iso", "x y z", [eq("a", "der(x) = y"), eq("b", "y = x")])
    (mode,) = analyze_modes(m).modes
    assert mode.status == "underdetermined" and not mode.ok
    assert mode.d == {"x": 1, "y": 0} and "z" in mode.under_variables
    assert mode.absent == ("z",)


@settings(max_examples=100, deadline=None)
@given(st.recursive(
    st.one_of(st.sampled_from(["x", "y", "z", "p"]).map(E.Ref), st.just(E.TIME),
              st.integers(-3, 3).map(E.Const)),
    lambda ch: st.one_of(
        st.tuples(st.sampled_from(["+", "*", ">", "and"]), ch, ch).map(lambda t: E.BinOp(*t)),
        ch.map(E.Der), ch.map(lambda a: E.UnOp("-", a)),
        ch.map(lambda a: E.Call("pre", (a,))), ch.map(lambda a: E.Call("sin", (a,))),
        st.tuples(ch, ch, ch).map(lambda t: E.If(*t))),
    max_leaves=12))
def test_fast_signature_row_equals_derivative_orders(e):
    from mdae_fmu.structure.signature import signature_row
    assert signature_row(e) == E.derivative_orders(e)


def test_numerically_singular_is_not_a_compile_time_error():
    # x + y = 0, 2x + 2y = 1 is structurally regular, numerically singular
    m = model("NumSing", "x y", [eq("f1", "x + y = 0"), eq("f2", "2*x + 2*y = 1")])
    r = analyze_modes(m)
    assert r.exit_code == 0 and r.modes[0].blocks[0].equations == (("f1", 0), ("f2", 0))


def test_unsupported_function_is_input_error():
    m = model("Fun", "x", [eq("a", "der(x) = myfun(x)", line=7)])
    with pytest.raises(InputError, match="equation a: its residual has no symbolic form"):
        analyze_modes(m)
    assert analyze_modes(m, latent=False).exit_code == 0


# --- linear-time helpers (export hot spots at 10^4 equations) -------------------------------

class _CountingTuple(tuple):
    iterations = 0

    def __iter__(self):
        type(self).iterations += 1
        return super().__iter__()


def test_defines_discrete_does_not_scan_the_variables_per_call():
    from mdae_fmu.structure.variables import VariableClasses, defines_discrete
    n = 300
    cont = _CountingTuple(f"x{k}" for k in range(n))
    disc = _CountingTuple(f"n{k}" for k in range(n))
    types = {**{f"x{k}": "Real" for k in range(n)}, **{f"n{k}": "Integer" for k in range(n)}}
    cls = VariableClasses(continuous=cont, discrete=disc, inputs=(), constants=(), types=types)
    eqs = [eq(f"a{k}", f"n{k} = 2*n{(k + 1) % n}") for k in range(n)] + \
        [eq(f"b{k}", f"n{k} = x{k}") for k in range(n)] + \
        [eq(f"c{k}", f"der(x{k}) = n{k}") for k in range(n)]
    _CountingTuple.iterations = 0
    got = [defines_discrete(e, cls) for e in eqs]
    assert got == [True] * n + [False] * n + [False] * n
    assert _CountingTuple.iterations <= 2       # one frozenset per class, not one per call


def test_specialize_shares_untouched_equations_between_modes():
    m = clutch()
    on, off = specialize(m, (("g", True),)), specialize(m, (("g", False),))
    e1_on, e1_off = on[0], off[0]
    assert e1_on.id == e1_off.id == "e1" and e1_on.residual is e1_off.residual \
        is m.equations[0].residual
    # an if-expression is still resolved, into a new tree
    m2 = model("Sel", "x y", [eq("a", "der(x) = y"), eq("b", "y = (x if g else 2*x)")],
               booleans="g")
    b_on = specialize(m2, (("g", True),))[1]
    assert b_on.residual == ex("y - x") and b_on.residual is not m2.equations[1].residual
    # precomputed classes / discrete ids give the same equations
    from mdae_fmu.structure.per_mode import classify_variables
    assert specialize(m, (("g", True),), classes=classify_variables(m),
                      discrete_ids=frozenset({"eg"})) == on
    # and the symbolic forms of shared equations are converted once per table
    r = analyze_modes(m)
    e1 = [s for mode in r.modes for s in mode.solved if s.eq_id == "e1"]
    assert len(e1) == 2 and e1[0].expr is e1[1].expr
