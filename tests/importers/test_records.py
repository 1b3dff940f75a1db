"""`records.quick_init`: the faster __init__ keeps the dataclass's signature and semantics."""

import dataclasses
import inspect
import pickle

import pytest

from mdae_fmu import expr as E
from mdae_fmu.diagnostics import SourceLoc
from mdae_fmu.ir import Equation, Variable
from mdae_fmu.records import quick_init


@dataclasses.dataclass(frozen=True, slots=True)
class _Plain:
    a: int
    b: str = "x"
    c: object = dataclasses.field(default=None, compare=False)


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Quick:
    a: int
    b: str = "x"
    c: object = dataclasses.field(default=None, compare=False)


def test_same_signature_defaults_and_fields():
    assert list(inspect.signature(_Quick).parameters) == ["a", "b", "c"]
    for args, kw in [((1,), {}), ((1, "y"), {}), ((1,), {"c": 3}), ((), {"a": 2, "b": "z"})]:
        q, p = _Quick(*args, **kw), _Plain(*args, **kw)
        assert (q.a, q.b, q.c) == (p.a, p.b, p.c)
    with pytest.raises(TypeError):
        _Quick()
    with pytest.raises(TypeError):
        _Quick(1, nope=2)


def test_frozen_equality_hash_replace_pickle():
    q = _Quick(1, c=5)
    assert q == _Quick(1, c=6) and hash(q) == hash(_Quick(1))    # c: compare=False
    assert q != _Quick(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.a = 3
    assert dataclasses.replace(q, b="w") == _Quick(1, "w")
    assert pickle.loads(pickle.dumps(q)) == q


def test_model_classes_use_it():
    e = E.BinOp("-", E.Ref("x"), E.Const(1))
    assert e == E.BinOp(op="-", left=E.Ref("x"), right=E.Const(1))
    assert E.BinOp.__init__.__qualname__ == "BinOp.__init__"
    loc = SourceLoc("m.mo", 3, 4)
    assert str(loc) == "m.mo:3:4"
    eq = Equation("e1", e, loc=loc)
    assert eq.guard == () and eq.loc is loc and eq == Equation("e1", e)
    v = Variable("x", start=E.Const(1))
    assert (v.type, v.variability, v.causality, v.fixed) == ("Real", "continuous", "local", None)


def test_unsupported_fields_refused():
    @dataclasses.dataclass(frozen=True, slots=True)
    class WithFactory:
        a: list = dataclasses.field(default_factory=list)
    with pytest.raises(TypeError):
        quick_init(WithFactory)
