"""`mdae_fmu.structure.variables.expr_type` types an arithmetic node's right operand, or an
if-expression's else branch, only when the other one does not decide the result; the result
is the Modelica typing rule applied to every operand (an oracle written here, typing each
subtree in full), on random trees of every node kind and operand type."""

from hypothesis import given, settings
from hypothesis import strategies as st

from mdae_fmu import expr as E
from mdae_fmu.structure.variables import expr_type

TYPES = {"r": "Real", "i": "Integer", "b": "Boolean"}


def _oracle(e: E.Expr) -> str:
    """Each child typed in full, then the rule (Integer → Real promotion in arithmetic)."""
    if isinstance(e, E.Ref):
        return TYPES.get(e.name, "Real")
    if isinstance(e, E.Const):
        v = e.value
        return "Boolean" if isinstance(v, bool) else ("Integer" if isinstance(v, int) else "Real")
    if isinstance(e, E.BinOp):
        a, b = _oracle(e.left), _oracle(e.right)
        if e.op in E.REL_OPS or e.op in E.BOOL_OPS:
            return "Boolean"
        if e.op in ("/", "^"):
            return "Real"
        return "Integer" if a == b == "Integer" else "Real"
    if isinstance(e, E.UnOp):
        a = _oracle(e.arg)
        return "Boolean" if e.op == "not" else a
    if isinstance(e, E.If):
        _oracle(e.cond)
        a, b = _oracle(e.then), _oracle(e.orelse)
        if a == b:
            return a
        return "Real" if "Real" in (a, b) else "Integer"
    assert isinstance(e, E.Call)
    ts = [_oracle(a) for a in e.args]
    if e.func == "pre":
        return ts[0]
    if e.func == "integer":
        return "Integer"
    return "Integer" if set(ts) == {"Integer"} else "Real"      # abs, min


leaves = st.one_of(st.sampled_from([E.Ref(n) for n in ("r", "i", "b", "x")]),
                   st.sampled_from([E.Const(1), E.Const(2.5), E.Const(True)]))


def _tree(children):
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "/", "^", "<", "and"]), children, children)
        .map(lambda t: E.BinOp(*t)),
        st.tuples(st.sampled_from(["-", "not"]), children).map(lambda t: E.UnOp(*t)),
        st.tuples(children, children, children).map(lambda t: E.If(*t)),
        st.tuples(st.sampled_from(["abs", "integer", "pre"]), children)
        .map(lambda t: E.Call(t[0], (t[1],))),
        st.tuples(children, children).map(lambda t: E.Call("min", t)),
    )


@settings(max_examples=400, deadline=None)
@given(st.recursive(leaves, _tree, max_leaves=12))
def test_expr_type_is_the_typing_rule(e):
    assert expr_type(e, TYPES) == _oracle(e)


def test_boolean_left_operand_promotes():
    """``b + i`` (Boolean left, Integer right) is Real, as the rule says for operands not both
    Integer: the shortcut is taken on any left operand that is not Integer."""
    assert expr_type(E.BinOp("+", E.Ref("b"), E.Ref("i")), TYPES) == "Real"
    assert expr_type(E.BinOp("+", E.Ref("i"), E.Ref("i")), TYPES) == "Integer"


def test_discrete_flags_without_discrete_variables():
    """`discrete_equation_flags` of a model without discrete variables (its own loop, the
    first test of `defines_discrete` only) is `defines_discrete` of each equation, on every
    committed model file and on equations whose both sides are Integer or Boolean."""
    from pathlib import Path

    from mdae_fmu.diagnostics import MdaeError
    from mdae_fmu.importers.flat_modelica import parse_modelica
    from mdae_fmu.structure.variables import (classify_variables, defines_discrete,
                                              discrete_equation_flags)
    root = Path(__file__).resolve().parents[2]
    texts = [p.read_text() for p in sorted((root / "reference_models").glob("*.mo"))
             + sorted((root / "tests" / "data").rglob("*.mo"))]
    texts.append("model OnlyReal\n  parameter Integer n = 2;\n  Real x(start = 1);\n"
                 "  Real y;\nequation\n  der(x) = -x;\n  n * 2 = n + n;\n  y + (n > 1) = x;\n"
                 "  0 = if n > 1 then y - x else 2;\nend OnlyReal;\n")
    seen = [0, 0]
    for text in texts:
        try:
            model = parse_modelica(text)
        except MdaeError:
            continue
        cls = classify_variables(model)
        want = tuple(defines_discrete(eq, cls) for eq in model.equations)
        assert discrete_equation_flags(model) == want
        seen[bool(cls.discrete)] += 1
        if model.name == "OnlyReal":
            assert want == (False, True, False, False)
    assert seen[0] >= 10 and seen[1] >= 10


def test_declared_types_are_the_dict_of_every_name():
    """`classify_variables(model).types` (`DeclaredTypes`, which stores only the names not
    Real) answers as the dict of every variable's declared type and every user function
    output's type (the oracle, built here from the model) does: items in order, look-ups
    with and without a default, membership, ``values`` and a name that is no variable; on
    every committed model file."""
    from pathlib import Path

    from mdae_fmu.diagnostics import MdaeError
    from mdae_fmu.functions import call_name
    from mdae_fmu.importers.flat_modelica import parse_modelica
    from mdae_fmu.structure.variables import classify_variables
    root = Path(__file__).resolve().parents[2]
    texts = [p.read_text() for p in sorted((root / "reference_models").glob("*.mo"))
             + sorted((root / "tests" / "data").rglob("*.mo"))]
    # an algorithm section with a branch is a user function: its outputs are "()f#k"
    texts.append("model Alg\n  parameter Integer n = 2;\n  Real x;\n  Real y(start = 1);\n"
                 "algorithm\n  x := y + n;\n  if y > 0.5 then\n    x := x + 1;\n  end if;\n"
                 "equation\n  der(y) = -x;\nend Alg;\n")
    kinds: set[str] = set()
    functions = 0
    for text in texts:
        try:
            model = parse_modelica(text)
        except MdaeError:
            continue
        want = {v.name: v.type for v in model.variables}
        for f in model.functions:
            for k, p in enumerate(f.outputs):
                want["()" + call_name(f.name, k)] = p.type
        functions += bool(model.functions)
        types = classify_variables(model).types
        assert list(types.items()) == list(want.items())
        assert len(types) == len(want) and dict(types) == want
        for name, t in want.items():
            assert types[name] == t and name in types
            assert types.get(name) == t and types.get(name, "Real") == t
            kinds.add(t)
        for t in ("Real", "Integer", "Boolean", "String"):
            assert (t in types.values()) == (t in want.values())
        assert "no such name" not in types and types.get("no such name") is None
        assert types.get("no such name", "Real") == "Real"
        try:
            types["no such name"]
        except KeyError:
            pass
        else:
            raise AssertionError("a name that is no variable has no type")
    assert {"Real", "Integer", "Boolean"} <= kinds and functions >= 1
