"""The shared walk of the per-mode checks (`mdae_fmu.structure.residual_scan`) answers as the
three walks it replaced: the signature row (`signature_row`), the undeclared names
(`expr.refs`) and the symbolic-form error (`symbolic.check_convertible`), on random trees and
on every residual of the reference models; and the per-mode stage reports its defects with the
same messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from mdae_fmu import api, expr as E
from mdae_fmu.diagnostics import InputError
from mdae_fmu.structure.per_mode import analyze_modes
from mdae_fmu.structure.residual_scan import residual_scan, scan_residuals
from mdae_fmu.structure.signature import signature_row
from mdae_fmu.symbolic import check_convertible

from structure_models import eq, model

ROOT = Path(__file__).resolve().parents[2]
DECLARED = frozenset({"x", "y", "p"})          # "z" and "w" are undeclared below


def _old_answers(e: E.Expr, functions: object) -> tuple:
    """The three former walks' answers for one residual."""
    try:
        check_convertible(e, functions)
        error = None
    except (ValueError, TypeError) as err:
        error = (type(err), str(err))
    return signature_row(e), E.refs(e) - DECLARED, error


_TREES = st.recursive(
    st.one_of(st.sampled_from(["x", "y", "z", "p", "w"]).map(E.Ref), st.just(E.TIME),
              st.integers(-3, 3).map(E.Const), st.just(E.Str("s"))),
    lambda ch: st.one_of(
        st.tuples(st.sampled_from(["+", "*", ">", "and"]), ch, ch).map(lambda t: E.BinOp(*t)),
        ch.map(E.Der), ch.map(lambda a: E.UnOp("-", a)),
        ch.map(lambda a: E.Call("pre", (a,))), ch.map(lambda a: E.Call("sin", (a,))),
        ch.map(lambda a: E.Call("myfun", (a,))), ch.map(lambda a: E.Call("sign", (a,))),
        st.tuples(ch, ch).map(lambda t: E.Call("atan2", t)),
        st.tuples(ch, ch, ch).map(lambda t: E.If(*t))),
    max_leaves=14)


def _if_conditions(residuals) -> tuple:
    """`Model.if_conditions` of a model whose equations have these residuals."""
    from mdae_fmu.ir import Equation, Model
    return Model.if_conditions.func(Model(name="M", equations=tuple(
        Equation(f"e{i}", r) for i, r in enumerate(residuals))))


@settings(max_examples=300, deadline=None)
@given(st.lists(_TREES, min_size=1, max_size=4), st.booleans())
def test_scan_answers_as_the_three_walks(trees, functions):
    conds: list = []
    rows, found = scan_residuals(trees, DECLARED, functions, conds)
    # the if-conditions, in the order of `Model.if_conditions`' own walk
    assert conds == list(_if_conditions(trees))
    for i, e in enumerate(trees):
        row, undeclared, error = _old_answers(e, {} if functions else None)
        assert rows[i] == row
        assert (i in found.undeclared) == bool(undeclared)
        if undeclared:
            assert found.undeclared[i] in undeclared
        assert found.unconvertible.get(i) == error


def test_first_undeclared_name_in_walk_order():
    # der(w) + z*pre(y): w comes first in the residual's walk
    e = E.BinOp("+", E.Der(E.Ref("w")), E.BinOp("*", E.Ref("z"), E.Call("pre", (E.Ref("y"),))))
    rows, found = scan_residuals([e], DECLARED)
    assert found.undeclared == {0: "w"} and rows == [{"w": 1, "z": 0}]


@pytest.mark.parametrize("path", sorted((ROOT / "reference_models").glob("*.mo")),
                         ids=lambda p: p.stem)
def test_reference_models_rows_equal(path):
    m = api.load(str(path))
    declared = frozenset(v.name for v in m.variables)
    residuals = [q.residual for q in (*m.equations, *m.initial_equations)]
    conds: list = []
    rows, found = scan_residuals(residuals, declared, bool(m.functions), conds)
    assert rows == [signature_row(r) for r in residuals]
    assert not found.undeclared and not found.unconvertible
    assert tuple(conds) == _if_conditions(residuals)
    # the model's own if-conditions, given by its scan when asked after it
    fresh = api.load(str(path))
    residual_scan(fresh)
    assert "if_conditions" in fresh.__dict__
    assert fresh.if_conditions == m.if_conditions == _if_conditions(
        [q.residual for q in m.equations])


def test_per_mode_messages_unchanged():
    typo = model("Typo", "x", [eq("a", "der(x) = -x"), eq("b", "0 = xx - x", line=4)])
    with pytest.raises(InputError, match="equation b: unknown variable xx"):
        analyze_modes(typo)
    fun = model("Fun", "x", [eq("a", "der(x) = myfun(x)", line=7)])
    with pytest.raises(InputError, match="equation a: its residual has no symbolic form: "
                       r"no symbolic form for myfun\(\)"):
        analyze_modes(fun)
    assert residual_scan(fun).unconvertible == {
        "a": (ValueError, "no symbolic form for myfun()")}
    assert analyze_modes(fun, latent=False).exit_code == 0


def test_rows_seed_the_signature_memo():
    m = model("Two", "x y", [eq("a", "der(x) = y"), eq("b", "y = -x")])
    residual_scan(m)
    memo = m.__dict__["_sigma_rows"]
    assert [memo[id(q.residual)] for q in m.equations] == [{"x": 1, "y": 0}, {"y": 0, "x": 0}]


# --- heads: the singular-block check's shortcut (`conversion.singular_blocks`) ----------------

_HEADS = st.tuples(
    st.sampled_from(["x", "y", "z"]).map(E.Ref), st.integers(0, 2),
    st.sampled_from([None, E.Const(0), E.Const(2), E.Ref("p"), E.Ref("x")]), _TREES
).map(lambda t: E.BinOp("-", _head(*t[:3]), t[3]))


def _head(ref: E.Ref, order: int, m) -> E.Expr:
    node: E.Expr = ref
    for _ in range(order):
        node = E.Der(node)
    return node if m is None else E.BinOp("*", m, node)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_HEADS, _TREES), min_size=1, max_size=4))
def test_heads_answer_as_the_generic_entry_walk(trees):
    """Where the scan marks a head whose name occurs once, `_head_entry` gives the answer of
    `_generic_entry` (the walk, the oracle) for every instance it answers, and answers the
    head itself; unmarked residuals of that form have their head's name elsewhere."""
    from mdae_fmu.structure.conversion import _generic_entry, _head_entry
    _, found = scan_residuals(trees, DECLARED)
    assert len(found.heads) == len(trees)
    for flag, e in zip(found.heads, trees):
        insts = {(n, k) for n in "xyzp" for k in range(4)}
        if flag:
            answered = [i for i in insts if _head_entry(e, i) is not None]
            assert answered
            for i in answered:
                assert _head_entry(e, i) == _generic_entry(e, i)
        elif type(e) is E.BinOp and e.op == "-":
            top = e.left.right if type(e.left) is E.BinOp and e.left.op == "*" else e.left
            while type(top) is E.Der:
                top = top.arg
            if type(top) is E.Ref:
                assert sum(1 for n in E.walk(e) if type(n) is E.Ref
                           and n.name == top.name) > 1


# --- names resolved once by the importer (`NAMES_DECLARED`, issue 29) ------------------------

def test_unchecked_scan_gives_the_same_rows_heads_and_errors():
    """``declared=None`` (the importer resolved every name) looks no name up: the rows, heads,
    if-conditions and symbolic-form errors are those of the checked walk; no undeclared name
    is reported, even for a name the checked walk reports."""
    trees = [E.BinOp("-", E.Der(E.Ref("w")), E.BinOp("*", E.Ref("z"), E.Ref("x"))),
             E.BinOp("-", E.Ref("y"), E.Call("myfun", (E.Call("pre", (E.Ref("p"),)),))),
             E.BinOp("-", E.Ref("x"), E.If(E.BinOp(">", E.Ref("y"), E.Const(0)),
                                           E.Der(E.Der(E.Ref("x"))), E.Str("s")))]
    checked_conds: list = []
    unchecked_conds: list = []
    rows, found = scan_residuals(trees, DECLARED, False, checked_conds)
    rows_u, found_u = scan_residuals(trees, None, False, unchecked_conds)
    assert found.undeclared == {0: "w"}
    assert found_u.undeclared == {}
    assert rows_u == rows and found_u.heads == found.heads
    assert found_u.unconvertible == found.unconvertible and len(found.unconvertible) == 2
    assert unchecked_conds == checked_conds


def test_rows_reach_the_sink_in_batches(monkeypatch):
    """The rows go to `SignatureRows` a batch at a time (`SignatureRows.extend`): the same
    arrays as one `append` per row, for counts below, at and across the batch size."""
    from mdae_fmu.ir import Equation
    from mdae_fmu.structure import residual_scan as scan_module
    from mdae_fmu.structure.signature import SignatureRows
    monkeypatch.setattr(scan_module, "ROW_BATCH", 3)
    trees = [E.BinOp("-", E.Der(E.Ref("x")), E.Ref("y")), E.Ref("y"), E.Const(1),
             E.BinOp("*", E.Ref("p"), E.Der(E.Der(E.Ref("y")))), E.Call("pre", (E.Ref("x"),)),
             E.BinOp("+", E.Ref("x"), E.Ref("x")), E.Ref("p")]
    for n in range(len(trees) + 1):
        eqs = [Equation(f"e{i}", r) for i, r in enumerate(trees[:n])]
        one = SignatureRows(eqs)
        for r in trees[:n]:
            one.append(signature_row(r))
        batched = SignatureRows(eqs)
        scan_residuals(trees[:n], DECLARED, sink=batched)
        assert (batched.names, batched.orders, batched.ends) == (one.names, one.orders,
                                                                 one.ends)
        assert len(batched) == n and list(batched.values()) == [signature_row(r)
                                                                for r in trees[:n]]


def test_importer_certifies_resolved_names(tmp_path):
    """The flat Modelica importer marks a model whose names it resolved itself
    (`NAMES_DECLARED`), not one whose calls it rewrote (functions); a model made from it by
    `dataclasses.replace` carries no mark, and its undeclared name is found again with the
    per-mode stage's message."""
    import dataclasses

    from mdae_fmu.importers.flat_modelica import parse_modelica
    from mdae_fmu.ir import Equation
    from mdae_fmu.structure.per_mode import check_declared
    from mdae_fmu.structure.residual_scan import NAMES_DECLARED
    plain = parse_modelica("model M\n  Real x(start = 1);\n  Real y;\nequation\n"
                           "  der(x) = -y;\n  y = 2 * x;\nend M;\n")
    assert plain.__dict__.get(NAMES_DECLARED) is True
    scan = residual_scan(plain)
    assert scan.undeclared == {} and not scan.unconvertible
    assert [plain.__dict__["_sigma_rows"][id(q.residual)] for q in plain.equations] == \
        [{"x": 1, "y": 0}, {"y": 0, "x": 0}]
    called = parse_modelica("function f\n  input Real u;\n  output Real v;\nalgorithm\n"
                            "  v := 2 * u;\nend f;\nmodel M\n  Real x(start = 1);\n"
                            "equation\n  der(x) = f(x);\nend M;\n")
    assert NAMES_DECLARED not in called.__dict__
    typo = dataclasses.replace(plain, equations=plain.equations + (
        Equation("e3", E.BinOp("-", E.Ref("xx"), E.Ref("x")), (), plain.equations[1].loc),))
    assert NAMES_DECLARED not in typo.__dict__
    with pytest.raises(InputError, match="equation e3: unknown variable xx"):
        check_declared(typo)


def test_reference_models_certified_where_plain():
    """The reference models that use no functions (most) are read certified, and the walk
    with the test of every name finds no undeclared name in any of them (the certificate is
    true where it is given)."""
    from mdae_fmu.structure.residual_scan import NAMES_DECLARED
    certified = 0
    for path in sorted((ROOT / "reference_models").glob("*.mo")):
        m = api.load(str(path))
        declared = frozenset(v.name for v in m.variables)
        _, found = scan_residuals([q.residual for q in m.equations], declared)
        assert not found.undeclared
        if m.__dict__.get(NAMES_DECLARED) is True:
            certified += 1
            assert m.functions == () or not m.functions
    assert certified >= 10
