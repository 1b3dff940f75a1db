"""The model and expression tree: JSON round trip, residual form, derivative orders, sympy
bridge."""

import json

import sympy as sp

from mdae_fmu import expr as E
from mdae_fmu.diagnostics import InputError, SourceLoc
from mdae_fmu.ir import (Assertion, Equation, GuardLiteral, Model, Reinit, Variable, WhenBranch,
                         WhenClause)
from mdae_fmu.symbolic import SymbolTable

X, Y, G = E.Ref("x"), E.Ref("y"), E.Ref("g")


def _clutch_like() -> Model:
    loc = SourceLoc("m.mo", 3, 5)
    return Model(
        name="M",
        variables=(
            Variable("x", start=E.Const(1.0), fixed=True, loc=loc),
            Variable("y"),
            Variable("g", type="Boolean", variability="discrete", causality="input"),
            Variable("k", variability="parameter", causality="parameter", binding=E.Const(2.5)),
        ),
        equations=(
            Equation("e1", E.residual(E.Der(X), E.BinOp("*", E.UnOp("-", E.Ref("k")), X)), (), loc),
            Equation(
                "e2", E.residual(Y, E.If(G, X, E.Const(0))), (GuardLiteral(cond=G, positive=False),)
            ),
        ),
        whens=(
            WhenClause(
                id="w1",
                branches=(
                    WhenBranch(
                        condition=E.BinOp("<=", X, E.Const(0)),
                        actions=(Reinit(var="x", value=E.Call("pre", (Y,))),),
                    ),
                ),
            ),
        ),
        assertions=(Assertion(cond=E.BinOp(">", X, E.Const(-1)), message=E.Str("x too small")),),
    )


def test_json_round_trip_is_identity_and_keeps_locations():
    m = _clutch_like()
    text = json.dumps(m.to_json())
    back = Model.from_json(json.loads(text))
    assert back == m
    assert back.variables[0].loc == SourceLoc("m.mo", 3, 5)
    assert back.equations[0].loc.short() == "m.mo:3"


def test_locations_do_not_take_part_in_equality():
    a = Equation("e1", X, (), SourceLoc("a.mo", 1, 1))
    b = Equation("e1", X, (), SourceLoc("b.xml", 9, 2))
    assert a == b and hash(a) == hash(b)
    assert Equation("e1", X) != Equation("e1", Y)


def test_residual_form_is_a_fixed_point_of_print_and_reparse():
    r = E.residual(X, Y)
    assert r == E.BinOp("-", X, Y)
    lhs, rhs = E.split_residual(r)
    assert E.residual(lhs, rhs) == r
    assert E.residual(E.ZERO, X) == X and E.residual(X, E.Const(0.0)) == X
    lhs, rhs = E.split_residual(X)
    assert E.residual(lhs, rhs) == X


def test_guards_are_classified_long_and_transient():
    kinds = {(str(g.cond), g.kind) for g in _clutch_like().guards()}
    assert (str(G), "long") in kinds
    assert any(k == "transient" for _, k in kinds)
    assert len(kinds) == 2          # g appears twice (guard literal and if-expression): once


def test_derivative_orders_ignore_left_limits_and_nest():
    e = E.BinOp("+", E.Der(E.Der(X)), E.BinOp("*", E.Call("pre", (Y,)), E.Der(Y)))
    assert E.derivative_orders(e) == {"x": 2, "y": 1}
    assert E.derivative_orders(E.Der(E.BinOp("*", X, E.Der(Y)))) == {"x": 1, "y": 2}


def test_walk_handles_deep_trees_without_recursion():
    e = X
    for _ in range(50_000):
        e = E.BinOp("+", e, E.Const(1))
    assert sum(1 for _ in E.walk(e)) == 100_001
    assert E.refs(e) == {"x"}


def test_if_conditions_are_the_walks_if_conditions_in_pre_order():
    # nested if-expressions under every node type: conditions of conditions, in E.walk's order
    inner = E.If(E.BinOp(">", Y, E.Const(1)), X, Y)
    cond = E.If(G, E.BinOp("<", X, E.Const(0)), E.UnOp("not", G))
    r = E.BinOp("-", E.Der(E.If(cond, inner, E.Call("sin", (E.If(G, Y, X),)))),
                E.UnOp("-", E.Call("max", (X, E.If(E.BinOp(">=", X, Y), X, Y)))))
    m = Model(name="M", variables=(Variable(name="x"), Variable(name="y"),
                                  Variable(name="g", type="Boolean", variability="discrete")),
              equations=(Equation(id="e1", residual=r),
                         Equation(id="e2", residual=E.residual(Y, X))))
    walked = tuple(tuple(n.cond for n in E.walk(eq.residual) if type(n) is E.If)
                   for eq in m.equations)
    assert m.if_conditions == walked
    assert [len(c) for c in m.if_conditions] == [5, 0]
    assert m.if_conditions[0][:2] == (cond, G)


def test_total_time_derivative_of_pendulum_constraint():
    t = SymbolTable(constants=frozenset({"L"}))
    c = t.to_sympy(E.BinOp("-", E.BinOp("+", E.BinOp("^", X, E.Const(2)),
                                        E.BinOp("^", Y, E.Const(2))), E.Ref("L")))
    d2 = sp.expand(t.time_derivative(t.time_derivative(c)))
    x, y = t.sym("x"), t.sym("y")
    expected = 2 * (t.sym("x", 1) ** 2 + x * t.sym("x", 2) + t.sym("y", 1) ** 2 + y * t.sym("y", 2))
    assert sp.simplify(d2 - expected) == 0
    assert t.instances(d2) == {("x", 0), ("x", 1), ("x", 2), ("y", 0), ("y", 1), ("y", 2)}


def test_der_of_an_expression_is_its_total_derivative():
    t = SymbolTable()
    got = t.to_sympy(E.Der(E.BinOp("*", X, Y)))
    assert sp.expand(got - (t.sym("x", 1) * t.sym("y") + t.sym("x") * t.sym("y", 1))) == 0


def test_input_error_renders_location_and_caret():
    err = InputError("unexpected token ')'", SourceLoc("m.mo", 4, 9), "  x = (1 + );\n")
    lines = str(err).splitlines()
    assert lines[0] == "m.mo:4:9: unexpected token ')'"
    assert lines[2].index("^") - 2 == 8


def test_table_symbols_share_assumptions_and_answer_as_plain_real_symbols():
    """The table's symbols share one set of sympy assumption tables (symbolic.real_symbol,
    about 550 bytes less a symbol) and still answer every fact, compare and hash exactly as
    sympy's own ``Symbol(name, real=True)`` (the oracle: a plain sympy symbol, its facts asked
    after those of the shared ones, so that no answer leaks from one to the other)."""
    import sympy as sp
    t = SymbolTable(constants=frozenset({"k"}))
    syms = [t.sym("x"), t.sym("x", 1), t.pre("x"), t.sym("k"), t.time, t.sym("y", 2)]
    assert all(s._assumptions is syms[0]._assumptions for s in syms)
    facts = ("real", "positive", "nonnegative", "zero", "integer", "finite", "imaginary",
             "extended_positive", "commutative")
    for s in syms:
        p = sp.Symbol(s.name, real=True)
        assert s == p and hash(s) == hash(p)
        assert [getattr(s, f"is_{f}") for f in facts] == \
            [getattr(sp.Dummy(real=True), f"is_{f}") for f in facts]
    x = syms[0]
    assert (x ** 2).is_nonnegative and sp.sqrt(x ** 2) == sp.Abs(x)
    assert sp.conjugate(x) == x and syms[1].is_positive is None
