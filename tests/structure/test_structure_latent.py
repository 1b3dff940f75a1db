"""Latent equations: the one-pass total derivative equals the per-symbol chain rule of
`SymbolTable.time_derivative` (docs/theory.md §4.6)."""

import cmath
import random

import sympy as sp
from hypothesis import given, settings, strategies as st

from mdae_fmu import expr as E
from mdae_fmu.structure.latent import latent_system, successive_derivatives, total_derivative
from mdae_fmu.symbolic import SymbolTable

TABLE = SymbolTable(constants=frozenset({"p"}))

leaves = st.one_of(
    st.sampled_from(["x", "y", "p"]).map(E.Ref),
    st.sampled_from(["x", "y"]).map(lambda n: E.Der(E.Ref(n))),
    st.just(E.TIME),
    st.integers(1, 3).map(E.Const),
    st.just(E.Call("pre", (E.Ref("x"),))),
)


def _tree(children):
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "/"]), children, children)
        .map(lambda t: E.BinOp(*t)),
        st.tuples(children, st.integers(2, 3)).map(lambda t: E.BinOp("^", t[0], E.Const(t[1]))),
        # the exponent a leaf: a tower of constants in the exponent (3^(3^3^...)) has more
        # digits than sympy converts (flaky ValueError, not a derivative error)
        st.tuples(children, leaves).map(lambda t: E.BinOp("^", t[0], t[1])),
        st.tuples(st.sampled_from(["sin", "exp", "atan", "sqrt"]), children)
        .map(lambda t: E.Call(t[0], (t[1],))),
        st.tuples(children, children).map(
            lambda t: E.If(E.BinOp(">", E.Ref("p"), E.Const(0)), t[0], t[1])),
    )


@settings(max_examples=80, deadline=None)
@given(st.recursive(leaves, _tree, max_leaves=8))
def test_total_derivative_equals_chain_rule(e):
    f = TABLE.to_sympy(e)
    a = total_derivative(TABLE, f)
    b = TABLE.time_derivative(f)
    syms = sorted(a.free_symbols | b.free_symbols, key=str)
    rng = random.Random(hash(str(f)) & 0xFFFF)
    for _ in range(3):     # numerically equal at random points (simplify cannot prove all)
        point = {s: rng.uniform(0.5, 1.5) for s in syms}
        va, vb = complex(a.evalf(subs=point)), complex(b.evalf(subs=point))
        if not (cmath.isfinite(va) and cmath.isfinite(vb)):
            continue
        assert abs(va - vb) <= 1e-8 * (1 + abs(vb))


def test_pendulum_latent_system():
    x, y, lam = TABLE.sym("x"), TABLE.sym("y"), TABLE.sym("lam")
    f3 = x**2 + y**2 - sp.Symbol("L") ** 2
    ders = successive_derivatives(TABLE, f3, 2)
    xd, yd, xdd, ydd = TABLE.sym("x", 1), TABLE.sym("y", 1), TABLE.sym("x", 2), TABLE.sym("y", 2)
    assert sp.expand(ders[1] - (2 * x * xd + 2 * y * yd)) == 0
    assert sp.expand(ders[2] - (2 * xd**2 + 2 * x * xdd + 2 * yd**2 + 2 * y * ydd)) == 0
    solved, cons = latent_system(TABLE, {"f1": xdd - lam * x, "f3": f3}, {"f1": 0, "f3": 2})
    assert [(i, k) for i, k, _ in solved] == [("f1", 0), ("f3", 2)]
    assert [(i, k) for i, k, _ in cons] == [("f3", 0), ("f3", 1)]


# --- conversion to sympy: memo and number cache (performance, same results) -----------------

def _fresh_convert(e):
    """The conversion without any memo: a new table each time."""
    return SymbolTable(constants=frozenset({"p"})).to_sympy(e)


@settings(max_examples=100, deadline=None)
@given(st.recursive(leaves, _tree, max_leaves=10))
def test_memoized_conversion_equals_fresh_conversion(e):
    t = SymbolTable(constants=frozenset({"p"}))
    first = t.to_sympy(e)
    assert t.to_sympy(e) is first                         # memo hit on the same tree
    assert first == _fresh_convert(e)
    copy = E.from_json(E.to_json(e))              # equal tree, another object
    assert t.to_sympy(copy) == first


def test_memo_is_by_identity_not_dataclass_equality():
    # Const(1) == Const(1.0) == Const(True) as dataclasses, but they convert differently
    t = SymbolTable()
    one_i, one_f = E.BinOp("*", E.Const(1), E.Ref("x")), E.BinOp("*", E.Const(1.0), E.Ref("x"))
    assert one_i == one_f
    assert t.to_sympy(one_i) == sp.Symbol("x", real=True)
    assert t.to_sympy(one_f) == sp.Float(1.0) * sp.Symbol("x", real=True)
    assert t.to_sympy(E.Const(2)) is sp.Integer(2)
    assert isinstance(t.to_sympy(E.Const(2.0)), sp.Float)
    assert t.to_sympy(E.Const(True)) is sp.true
    assert t.number(2.5) is t.number(2.5) and t.number(-0.0) == sp.Float(-0.0)


def test_table_symbols_are_sympys_real_symbols():
    # `real_symbol` builds the table's symbols without sympy's constructor: they must be
    # sympy's Symbol(name, real=True) in every respect the pipeline reads (equality, hash,
    # assumptions, printing, pickling), for instances, constants, left limits and time
    import pickle

    from mdae_fmu.symbolic import real_symbol
    t = SymbolTable(constants=frozenset({"p"}))
    made = {"x": t.sym("x"), "der(x)": t.sym("x", 1), "der(x,2)": t.sym("x", 2),
            "p": t.sym("p"), "pre(x)": t.pre("x"), "time": t.time, "w": real_symbol("w")}
    for name, s in made.items():
        ref = sp.Symbol(name, real=True)
        assert type(s) is sp.Symbol and s == ref and hash(s) == hash(ref)
        assert s.assumptions0 == ref.assumptions0 and sp.srepr(s) == sp.srepr(ref)
        assert s.is_real and s.is_finite and s.is_commutative and s.is_positive is None
        assert (s ** 2).is_nonnegative and str(s) == name
        assert pickle.loads(pickle.dumps(s)) == ref
        assert s != sp.Symbol(name) and s != sp.Symbol(name, positive=True)
    assert t.sym("x") is made["x"] and t.sym("p", 1) == 0
    assert t.instance(made["der(x)"]) == ("x", 1) and t.instance(made["p"]) is None
    x = made["x"]
    assert sp.diff(sp.sin(x) * x, x) == sp.cos(x) * x + sp.sin(x)
    assert sp.sqrt(x ** 2) == sp.Abs(x)         # real: not sqrt(x**2)


# --- latent equations made when read (issue 29) ---------------------------------------------

def test_latent_equations_are_made_when_read_and_equal_latent_system(monkeypatch):
    """With ``deferred_latent`` (``analyze`` without the full report) the per-mode stage
    leaves the latent and consistency equations of a differentiated equation unconverted
    (`LatentEquation.derived`; the stateSelect-guided choice, which reads them, off); read,
    each is `latent_system`'s (the residual converted and differentiated eagerly, the
    oracle), and the eager stage's; a saved analysis holds them as before (`parts`)."""
    from mdae_fmu.structure import per_mode
    from structure_models import pendulum
    monkeypatch.setattr(per_mode, "MAX_STATE_SELECTION", 0)
    model = pendulum()
    eager = per_mode.analyze_modes(model).modes[0]
    report = per_mode.analyze_modes(model, deferred_latent=True)
    mode, table = report.modes[0], report.symbols
    lazy = [e for e in mode.solved + mode.consistency if mode.c[e.eq_id] > 0]
    assert len(lazy) == 3 and not any(e.converted for e in lazy)
    assert all(e.converted for e in eager.solved + eager.consistency if eager.c[e.eq_id])
    assert (eager.solved, eager.consistency) == (mode.solved, mode.consistency)
    assert [(e.eq_id, e.k) for e in mode.consistency] == [("f3", 0), ("f3", 1)]
    by_id = {eq.id: eq for eq in model.equations}
    diff = [i for i, c in mode.c.items() if c > 0]
    solved, cons = latent_system(table, {i: table.to_sympy(by_id[i].residual) for i in diff},
                                 mode.c, diff)
    oracle = {(i, k): x for i, k, x in solved + cons}
    assert {(e.eq_id, e.k) for e in lazy} == set(oracle)
    for e in lazy:
        assert sp.expand(e.expr - oracle[(e.eq_id, e.k)]) == 0
        assert e.parts == (e.eq_id, e.k, e.expr, None, None)
