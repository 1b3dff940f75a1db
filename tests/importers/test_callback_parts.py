"""The grammar callbacks assembled from the tables of their per-construct modules
(`importers.callback_common`, ``flat_modelica._Callbacks``; issue 27): one callback per rule,
each a construct module's own function with no call in between, every rule the grammar and the
hand-written parser call present, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mdae_fmu import expr as E
from mdae_fmu.importers import fast_parser, flat_modelica as F
from mdae_fmu.importers.callback_common import left_list
from mdae_fmu.importers.depth import MAX_DEPTH

C, R = E.Const, E.Ref

GRAMMAR = Path(F.__file__).with_name("modelica.lark").read_text(encoding="utf-8")


def _callbacks() -> dict:
    cb = F._Callbacks()
    return {n: getattr(cb, n) for n in dir(cb) if not n.startswith("_") and n not in NOT_RULES}


#: the attributes of the callbacks object that are not callbacks: the parse context and the
#: rule tables of the parse traces (`parse_traces.compile_trace`, `declaration_lines`)
NOT_RULES = ("ctx", "cached_rules", "inline_rules", "inline_names", "line_rules")


def test_each_callback_is_a_construct_modules_own_function():
    """A method of the callbacks object whose function is the one in its module's table, so
    the assembly adds no call level (the callbacks run once per rule reduction, issue 29); the
    tables do not overlap."""
    tables = [m.RULES for m in F.CALLBACK_MODULES]
    assert sum(len(t) for t in tables) == len(_callbacks())
    for name, f in _callbacks().items():
        owners = [t for t in tables if name in t]
        assert len(owners) == 1, name
        assert f.__func__ is owners[0][name], name
        module = f.__func__.__module__
        assert module.endswith("_callbacks") or f.__func__ is left_list, (name, module)


def test_every_alias_and_called_rule_has_a_callback():
    """Every ``-> alias`` of the grammar (lark builds a tree for a rule without a callback) and
    every callback the hand-written parser calls by name."""
    names = set(_callbacks())
    aliases = set(re.findall(r"->\s*([a-z_]+)", GRAMMAR))
    called = set(re.findall(r"\bcb\.([a-z_]+)\(", Path(fast_parser.__file__).read_text()))
    assert aliases and called
    assert aliases - names == set()
    assert called - names == set()
    # the rules of lark's compiled grammar whose callback is not a tree builder
    parser = F._parser()
    rules = {r.alias or r.origin.name for r in parser.lark.rules}
    assert names - {"if_item"} <= {str(r) for r in rules}


def test_statements_read_their_branches_as_the_equations_do():
    """if- and when-statements are read by the if- and when-equations' callbacks themselves."""
    cb = _callbacks()
    assert cb["if_stmt"].__func__ is cb["if_item"].__func__
    assert cb["when_stmt"].__func__ is cb["when_eq"].__func__
    assert cb["stmt_elseif"].__func__ is cb["elseif_branch"].__func__
    assert cb["stmt_else"].__func__ is cb["else_branch"].__func__


def test_one_parse_through_the_parts():
    """The parts together read a model that uses every construct group (a function, an
    algorithm, arrays, a record, an enumeration, if/when/for-equations, String in assert)."""
    text = """
function f "twice"
  input Real u;
  output Real y;
algorithm
  y := 2 * u;
end f;
record R
  Real a;
end R;
type E = enumeration(one, two);
class M
  parameter Real p[2] = {1, 2} "values";
  parameter E e = E.two;
  R r(a = 1.0);
  Real x(start = 1, fixed = true);
  Real y;
  Integer n(start = 0, fixed = true);
equation
  der(x) = if x > p[1] then -x else -f(x) + sum(p);
  y = r.a + (if e == E.two then 1 else 0);
  when x < 0.5 then
    n = pre(n) + 1;
  end when;
  assert(x > -10, "x is " + String(x));
  annotation(experiment(StopTime = 2));
end M;
"""
    m = F.parse_modelica(text, "m.mo")
    assert {v.name for v in m.variables} >= {"x", "y", "n", "r.a", "p[1]", "p[2]"}
    assert len(m.equations) == 3        # der(x), y, and the binding r.a = 1.0
    assert len(m.whens) == 1 and len(m.assertions) == 1
    assert m.experiment == (("StopTime", 2.0),)
    assert not m.functions             # f, a straight line, inlined at its call


@pytest.mark.parametrize("parser", ["fast", "lalr"])
def test_modifiers_of_a_long_clause_are_those_of_a_short_one(parser, monkeypatch):
    """A modifier argument is built in its final form by `argument`; a clause long enough to
    nest too deeply (more than 2 * MAX_DEPTH characters: here a long description) bounds every
    value again (`modifier_list`), nested record modifications included, and reads the same
    modifiers: ``each``/``final`` arguments, a nested record modification, a binding."""
    monkeypatch.setattr(F, "PARSER", parser)
    head = """record R
  Real a;
  Real b;
end R;
class M
  parameter Real p = 2;
"""
    decls = ('  Real x(each start = 1.5, final fixed = true, nominal = p) = 0.5 "{d}";\n'
             '  R r(a(start = 3) = 4, b = p) "{d}";\n')
    tail = "end M;\n"

    def read(description):
        m = F.parse_modelica(head + decls.format(d=description) + tail, "m.mo")
        return ({v.name: (v.start, v.fixed, v.nominal) for v in m.variables},
                [e.residual for e in m.equations])

    short, long = read("x"), read("x" * (2 * MAX_DEPTH + 50))
    variables, residuals = long
    assert variables["x"] == (C(1.5), True, R("p"))
    assert variables["r.a"] == (C(3), None, None)
    assert residuals == [E.BinOp("-", R("x"), C(0.5)), E.BinOp("-", R("r.a"), C(4)),
                         E.BinOp("-", R("r.b"), R("p"))]
    assert short == long
