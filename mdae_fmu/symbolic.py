"""Bridge between the expression tree (`mdae_fmu.expr`) and sympy.

Structural stages work on (variable, derivative order) *instances*: ``x`` is (x, 0),
``der(x)`` is (x, 1), ``der(der(x))`` is (x, 2) (docs/theory.md §6.1: a
shift and a derivative order map one to one). Each instance is one sympy Symbol, owned by a
`SymbolTable`, so that latent equations (differentiated equations), Jacobians and restart
systems are plain sympy algebra over these symbols. ``pre(x)`` is its own symbol (the left
limit, known at an event) and ``time`` is the symbol ``time``.

Symbol names are for humans only (``der(x)``, ``pre(x)``); code generation maps symbols to
array slots and never prints a symbol name into C.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from . import expr as E
from .lazy_modules import after_import

if TYPE_CHECKING:
    import sympy as sp

    from .functions import FunctionTable
else:   # loaded on first use (`mdae_fmu.lazy_modules`): most models never need sympy
    from .lazy_modules import sympy as sp

#: Modelica's unary functions and the names of their sympy functions
_UNARY_NAMES = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
    "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp",
    "log": "log", "sqrt": "sqrt", "abs": "Abs", "sign": "sign", "floor": "floor",
    "ceil": "ceiling", "erf": "erf", "erfc": "erfc",
}
#: Discrete operators kept as opaque functions (their value is constant between events).
OPAQUE_FUNCTIONS = frozenset(("edge", "change", "initial", "terminal", "sample", "div", "mod",
                              "rem", "integer"))


@functools.cache
def _tables() -> Any:
    """The sympy objects of the conversions, built once, when sympy is first needed:
    ``unary`` (Modelica name to sympy function), ``log10``, ``opaque`` (`OPAQUE_FUNCTIONS`'
    undefined functions), ``unary_tree`` and ``relation_tree`` (sympy classes back to the
    tree's names)."""
    unary = {name: getattr(sp, attr) for name, attr in _UNARY_NAMES.items()}
    return SimpleNamespace(
        unary=unary, log10=sp.log(10),
        opaque={name: sp.Function(name) for name in sorted(OPAQUE_FUNCTIONS)},
        unary_tree={f: name for name, f in unary.items()},
        relation_tree={sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
                       sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "<>"})


_SYMPY_PIECEWISE_AS_ITE: list = []      # sympy's own rule, kept by `_install_rules`


def _piecewise_as_ite(self, *args, **hints):
    """``Piecewise((b1, c1), ..., (bn, True))`` of Boolean values as ``ITE(c1, b1, ITE(...,
    bn))``, exactly. sympy (1.14) rewrites a condition that contains an if-expression this way
    (`ExprCondPair`: a relation such as ``(x + y)*(if off then 1 else 0.25) < 0.6`` that
    tearing or substitution builds) and, reasoning on real sets, reads a condition that is a
    lone Boolean variable (``off``) as true for every value: it kept ``x + y < 0.6`` and
    dropped the other branch, so the generated code was silently wrong. Installed as sympy's
    rewrite rule as soon as both this module and sympy are imported, in either order
    (`_install_rules`); other Piecewise shapes go to sympy's own."""
    if not args or args[-1].cond is not sp.true or \
            not all(isinstance(b, sp.logic.boolalg.Boolean) for b, _ in args):
        return _SYMPY_PIECEWISE_AS_ITE[0](self, *args, **hints)
    out = args[-1].expr
    for b, c in reversed(args[:-1]):
        out = sp.ITE(c, b, out)
    return out


def _install_rules(sympy: Any) -> None:
    """Install `_piecewise_as_ite` into sympy (once), whoever imports sympy first."""
    if not _SYMPY_PIECEWISE_AS_ITE:
        _SYMPY_PIECEWISE_AS_ITE.append(sympy.Piecewise._eval_rewrite_as_ITE)
        sympy.Piecewise._eval_rewrite_as_ITE = _piecewise_as_ite


after_import("sympy", _install_rules)


def _truth_value(x: sp.Basic) -> sp.Basic:
    """``x`` as an operand of And/Or/Not: a Boolean as it is, an opaque discrete operator
    (``initial()``, ``edge(b)``: undefined functions, not sympy Booleans) as ``x != 0``,
    the value 1 or 0 the runtime gives it (OpenModelica's MSL friction:
    ``startForward = ... or initial() and w_relfric > 0``)."""
    if isinstance(x, (bool, sp.logic.boolalg.Boolean)) or \
            not isinstance(x, sp.core.function.AppliedUndef):
        return x
    return sp.Ne(x, 0)


def opaque_function(name: str):
    """The sympy function of the discrete operator ``name`` (`OPAQUE_FUNCTIONS`), else None."""
    return _tables().opaque.get(name)


def as_sympy(v) -> sp.Basic:
    """``v`` as a sympy object without parsing anything: sympy objects as they are, Python
    booleans, integers and floats as sympy's; `TypeError` for anything else (a string must
    never reach `sympy.sympify`, which evaluates text: issue 25)."""
    if isinstance(v, sp.Basic):
        return v
    if isinstance(v, bool):
        return sp.true if v else sp.false
    if isinstance(v, numbers.Integral):          # numpy's integers too
        return sp.Integer(int(v))
    if isinstance(v, numbers.Real):
        return sp.Float(float(v))
    raise TypeError(f"not a sympy expression or a number: {type(v).__name__}")


@functools.cache
def _real_template() -> tuple[Any, Any, Any, Any]:
    """What every real sympy Symbol shares: ``Expr.__new__``, and the assumptions of
    ``Symbol(name, real=True)`` (sympy keeps one canonical knowledge base per set of
    assumptions and gives it to every such symbol), read off one symbol built by sympy."""
    proto = sp.Symbol("real_template", real=True)
    return (sp.Expr.__new__, proto._assumptions, proto._assumptions_orig,
            proto._assumptions0)


def real_symbol(name: str) -> sp.Symbol:
    """``sympy.Symbol(name, real=True)``: equal to it and of the same hash, without sympy's
    constructor (its cache lookup, the keyword assumptions sanitized and sorted at every
    call), which made the symbols of a 10^5-equation model (about 230 000) a second of the
    export. The object is built as sympy's ``Symbol.__xnew__`` builds it, with the shared
    assumptions of `_real_template`."""
    new, kb, orig, canonical = _real_template()
    s = new(sp.Symbol)
    s.name = name
    s._assumptions = kb
    s._assumptions_orig = orig
    s._assumptions0 = canonical
    return s


class _SymbolOnRead:
    """A `SymbolTable` field whose default, the real sympy Symbol ``name``, is made when the
    field is first read, so that building a table (once per model) does not import sympy (a
    descriptor-typed dataclass field: the class-level read gives the default, None, and
    ``__init__`` stores through ``__set__``; the field keeps its name in saved analyses)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.slot = ""

    def __set_name__(self, owner: type, attr: str) -> None:
        self.slot = f"_{attr}_symbol"

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return None
        s = obj.__dict__.get(self.slot)
        if s is None:
            s = obj.__dict__[self.slot] = real_symbol(self.name)
        return s

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class SymbolTable:
    """One sympy Symbol per (name, order) instance, per left limit and for ``time``.

    Names in ``constants`` (parameters, constants, and inputs held between events if the
    caller says so) become plain symbols that are not instances: they are not unknowns and
    their time derivative is 0.
    """
    constants: frozenset[str] = frozenset()
    #: the model's user functions (`mdae_fmu.functions.FunctionTable`), None if it has none
    functions: FunctionTable | None = None
    _const: dict[str, sp.Symbol] = field(default_factory=dict)
    _inst: dict[tuple[str, int], sp.Symbol] = field(default_factory=dict)
    _pre: dict[str, sp.Symbol] = field(default_factory=dict)
    _back: dict[sp.Symbol, tuple[str, int]] = field(default_factory=dict)
    time: sp.Symbol = _SymbolOnRead("time")      # type: ignore[assignment]
    #: the homotopy parameter lambda: ``homotopy(actual, simplified)`` is ``lambda * actual
    #: + (1 - lambda) * simplified``; 1 except while the initial system is continued from
    #: lambda = 0 (Modelica 3.6 §3.7.4.4; mdae_runtime.c, ``homotopy_initialization``)
    homotopy: sp.Symbol = _SymbolOnRead("$homotopy")     # type: ignore[assignment]
    # conversions already done: whole expressions (a mode's residuals recur in every mode
    # whose guards leave them unchanged) and numeric constants (one sympy Float per value,
    # so that its assumptions, e.g. is_zero, are deduced once, not once per occurrence)
    _memo: dict[int, tuple[E.Expr, sp.Expr]] = field(default_factory=dict, repr=False,
                                                     compare=False)
    _numbers: dict[tuple[type, str], sp.Expr] = field(default_factory=dict, repr=False,
                                                      compare=False)

    def sym(self, name: str, order: int = 0) -> sp.Expr:
        """The symbol of the ``order``-th derivative of ``name``."""
        key = (name, order)
        s = self._inst.get(key)
        if s is not None:       # (a constant's name never has an instance: read it first)
            return s
        if name in self.constants:
            if order:
                return sp.Integer(0)
            c = self._const.get(name)
            if c is None:
                c = self._const[name] = real_symbol(name)
            return c
        label = name if order == 0 else (f"der({name})" if order == 1
                                         else f"der({name},{order})")
        s = real_symbol(label)
        self._inst[key] = s
        self._back[s] = key
        return s

    def symbols_by_key(self) -> dict[str | tuple[str, int], sp.Expr]:
        """The symbols `sym` has made, without making any: ``sym(name)`` under ``name`` (a
        constant's or an instance's at order 0), ``sym(name, k)`` under ``(name, k)`` for
        k > 0 (the keys of `mdae_fmu.codegen.trees.tree_instance_keys`)."""
        out: dict[str | tuple[str, int], sp.Expr] = {}
        out.update(self._const)
        for (name, k), s in self._inst.items():       # (an instance first, as in `sym`)
            out[(name, k) if k else name] = s
        return out

    def pre(self, name: str) -> sp.Symbol:
        """The symbol of the left limit ``pre(name)``."""
        s = self._pre.get(name)
        if s is None:
            s = real_symbol(f"pre({name})")
            self._pre[name] = s
        return s

    def instance(self, s: sp.Symbol) -> tuple[str, int] | None:
        """(name, order) of an instance symbol, None for time, left limits and others."""
        return self._back.get(s)

    def instances(self, e: sp.Expr) -> set[tuple[str, int]]:
        """The (name, order) instances occurring in a sympy expression."""
        return {self._back[s] for s in e.free_symbols if s in self._back}

    def to_sympy(self, e: E.Expr) -> sp.Expr:
        """Convert an expression tree to sympy (If -> Piecewise, relations -> Relational).

        Linear in the size of ``e``, and memoized per table on the identity of the tree:
        converting the same tree object again (an equation that several modes share) returns
        the same sympy object. Identity, not equality: ``Const(1) == Const(1.0)`` as
        dataclasses, but they convert to an Integer and a Float."""
        hit = self._memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        r = _convert(self, e, 0)
        self._memo[id(e)] = (e, r)
        return r

    def number(self, v: int | float) -> sp.Expr:
        """The sympy number of a Python int or float, one object per value and type."""
        key = (type(v), repr(v))
        r = self._numbers.get(key)
        if r is None:
            r = self._numbers[key] = sp.Integer(v) if isinstance(v, int) else sp.Float(v)
        return r

    def time_derivative(self, f: sp.Expr) -> sp.Expr:
        """Total time derivative d f / dt = sum over instances of df/dx^(k) * x^(k+1) plus
        df/dtime (docs/theory.md §4.6: latent equations are obtained by differentiating each
        equation c_i times). Left limits and parameters are constant in time."""
        total = sp.diff(f, self.time)
        for s in f.free_symbols:
            key = self._back.get(s)
            if key is not None:
                total += sp.diff(f, s) * self.sym(key[0], key[1] + 1)
        return total


def _convert(t: SymbolTable, e: E.Expr, order: int) -> sp.Expr:
    if isinstance(e, E.Ref):
        return t.sym(e.name, order)
    if isinstance(e, E.Der):
        return _convert(t, e.arg, order + 1) if _is_instance(e.arg) else \
            _derive(t, _convert(t, e.arg, order), 1)
    if order:
        return _derive(t, _convert(t, e, 0), order)
    if isinstance(e, E.Const):
        v = e.value
        if isinstance(v, bool):
            return sp.true if v else sp.false
        return t.number(v)
    if isinstance(e, E.Time):
        return t.time
    if isinstance(e, E.BinOp):
        a, b = _convert(t, e.left, 0), _convert(t, e.right, 0)
        op = e.op.lstrip(".") if e.op.startswith(".") and len(e.op) == 2 else e.op
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        if op == "^":
            return a ** b
        if op == "and":
            return sp.And(_truth_value(a), _truth_value(b))
        if op == "or":
            return sp.Or(_truth_value(a), _truth_value(b))
        rel = {"<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge, "==": sp.Eq, "<>": sp.Ne}[op]
        return rel(a, b)
    if isinstance(e, E.UnOp):
        a = _convert(t, e.arg, 0)
        return sp.Not(_truth_value(a)) if e.op == "not" else (-a if e.op == "-" else a)
    if isinstance(e, E.If):
        return sp.Piecewise((_convert(t, e.then, 0), _convert(t, e.cond, 0)),
                            (_convert(t, e.orelse, 0), True))
    if isinstance(e, E.Call):
        f = e.func
        if f == "pre":
            arg = e.args[0]
            if isinstance(arg, E.Ref):
                return t.pre(arg.name)
            raise ValueError("pre() applies to a variable")
        args = [_convert(t, a, 0) for a in e.args]
        tables = _tables()
        if f in tables.unary:
            return tables.unary[f](args[0])
        if f == "log10":
            return sp.log(args[0]) / tables.log10
        if f == "atan2":
            return sp.atan2(args[0], args[1])
        if f == "min":
            return sp.Min(*args)
        if f == "max":
            return sp.Max(*args)
        if f == "noEvent":
            return args[0]
        if f == "smooth":
            return args[1]
        if f == "homotopy":
            return t.homotopy * args[0] + (1 - t.homotopy) * args[1]
        if f == "semiLinear":       # Modelica 3.6 §3.7.4.5, continuous: no event
            x = args[0]
            return sp.Piecewise((args[1] * x, x >= 0), (args[2] * x, True))
        if f in tables.opaque:
            return tables.opaque[f](*args)
        if t.functions is not None and f not in E.BUILTIN_FUNCTIONS:
            return t.functions.sympy_function(f)(*args)
        raise ValueError(f"no symbolic form for {f}()")
    if isinstance(e, E.Str):
        raise ValueError("a string is not a numeric expression")
    raise TypeError(f"not an expression: {e!r}")


_KNOWN_CALLS = frozenset(_UNARY_NAMES) | OPAQUE_FUNCTIONS | {
    "pre", "log10", "atan2", "min", "max", "noEvent", "smooth", "homotopy", "semiLinear"}
#: the built-in calls that have a symbolic form (`check_convertible`)
SYMBOLIC_CALLS = _KNOWN_CALLS


def check_convertible(e: E.Expr, functions=None) -> None:
    """Raise the `ValueError` / `TypeError` that `SymbolTable.to_sympy` would raise on ``e``
    (an unsupported function, ``pre`` of an expression, a string), without building any sympy
    object: one walk over the tree, so the analysis can refuse such an equation at once while
    converting to sympy only the equations it must differentiate. ``functions``: the
    table's user functions (`SymbolTable.functions`), whose calls convert too."""
    # `E.walk`'s pre-order, inlined (it runs over every equation of the model)
    BinOp, UnOp, Der, Call, If = E.BinOp, E.UnOp, E.Der, E.Call, E.If
    leaves = (E.Ref, E.Const, E.Time)
    stack = [e]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        t = type(node)
        if t is BinOp:
            assert isinstance(node, BinOp)
            push(node.right)
            push(node.left)
        elif t is UnOp or t is Der:
            assert isinstance(node, (UnOp, Der))
            push(node.arg)
        elif t is Call:
            assert isinstance(node, Call)
            if node.func not in _KNOWN_CALLS and (functions is None
                                                  or node.func in E.BUILTIN_FUNCTIONS):
                raise ValueError(f"no symbolic form for {node.func}()")
            if node.func == "pre" and not isinstance(node.args[0], E.Ref):
                raise ValueError("pre() applies to a variable")
            stack.extend(reversed(node.args))
        elif t is If:
            assert isinstance(node, If)
            push(node.orelse)
            push(node.then)
            push(node.cond)
        elif t is E.Str:
            raise ValueError("a string is not a numeric expression")
        elif t not in leaves:
            raise TypeError(f"not an expression: {node!r}")


def _is_instance(e: E.Expr) -> bool:
    return isinstance(e, E.Ref) or (isinstance(e, E.Der) and _is_instance(e.arg))


def _derive(t: SymbolTable, f: sp.Expr, times: int) -> sp.Expr:
    for _ in range(times):
        f = t.time_derivative(f)
    return f


# --- sympy back to the expression tree ------------------------------------------------------

def from_sympy(t: SymbolTable, e: sp.Basic) -> E.Expr:
    """The expression tree of a sympy expression over ``t``'s symbols: the inverse of
    `SymbolTable.to_sympy` on what it produces (instances become ``der`` nests of references,
    left limits ``pre(x)``, Piecewise an if-expression chain; a negative term or factor is
    written as a subtraction or a division, so ``x - y - 5`` reads as written). Raises
    `ValueError` for what has no tree form (the homotopy parameter, infinities, a function
    the table does not know)."""
    back_pre = {s: name for name, s in t._pre.items()}
    consts = {s: name for name, s in t._const.items()}

    tables = _tables()

    def conv(x: sp.Basic) -> E.Expr:
        if x.is_Symbol:
            if x == t.time:
                return E.TIME
            key = t.instance(x)
            if key is not None:
                node: E.Expr = E.Ref(key[0])
                for _ in range(key[1]):
                    node = E.Der(node)
                return node
            if x in consts:
                return E.Ref(consts[x])
            if x in back_pre:
                return E.Call("pre", (E.Ref(back_pre[x]),))
            raise ValueError(f"no expression form for the symbol {x}")
        if x is sp.true or x is sp.false:
            return E.Const(bool(x))
        if x.is_Integer:
            return E.Const(int(x))
        if x.is_Rational:
            return E.BinOp("/", E.Const(int(x.p)), E.Const(int(x.q)))
        if x.is_Float:
            return E.Const(float(x))
        if x.is_NumberSymbol:
            return E.Const(float(x))
        if x.is_Add:
            return _sum(x)
        if x.is_Mul:
            return _product(x)
        if x.is_Pow:
            base, ex = x.args
            if ex == -1:
                return E.BinOp("/", E.Const(1), conv(base))
            if ex == sp.S.Half:
                return E.Call("sqrt", (conv(base),))
            if ex.is_Rational and ex < 0:
                return E.BinOp("/", E.Const(1), conv(base ** -ex))
            return E.BinOp("^", conv(base), conv(ex))
        if isinstance(x, sp.Piecewise):
            out: E.Expr | None = None
            for value, cond in reversed(x.args):
                if out is None:
                    if cond is not sp.true:
                        raise ValueError("a Piecewise without a default branch")
                    out = conv(value)
                else:
                    out = E.If(conv(cond), conv(value), out)
            assert out is not None
            return out
        rel = tables.relation_tree.get(type(x))
        if rel is not None:
            return E.BinOp(rel, conv(x.lhs), conv(x.rhs))
        if isinstance(x, (sp.And, sp.Or)):
            op = "and" if isinstance(x, sp.And) else "or"
            args = [conv(a) for a in x.args]
            node = args[0]
            for a in args[1:]:
                node = E.BinOp(op, node, a)
            return node
        if isinstance(x, sp.Not):
            return E.UnOp("not", conv(x.args[0]))
        if isinstance(x, (sp.Min, sp.Max)):
            name = "min" if isinstance(x, sp.Min) else "max"
            args = [conv(a) for a in x.args]
            node = args[0]
            for a in args[1:]:
                node = E.Call(name, (node, a))
            return node
        f = type(x)
        if f in tables.unary_tree:
            return E.Call(tables.unary_tree[f], (conv(x.args[0]),))
        if f is sp.atan2:
            return E.Call("atan2", (conv(x.args[0]), conv(x.args[1])))
        if isinstance(x, sp.Function) and f in tables.opaque.values():
            return E.Call(str(f), tuple(conv(a) for a in x.args))
        raise ValueError(f"no expression form for {x}")

    def _sum(x: sp.Add) -> E.Expr:
        node: E.Expr | None = None
        terms = x.as_ordered_terms()
        first = next((k for k, term in enumerate(terms)
                      if not term.as_coeff_Mul()[0].is_negative), 0)
        terms.insert(0, terms.pop(first))       # ``v3/R - i``, not ``-i + v3/R``
        for term in terms:
            negative = term.as_coeff_Mul()[0].is_negative
            part = conv(-term if negative else term)
            if node is None:
                node = E.UnOp("-", part) if negative else part
            else:
                node = E.BinOp("-" if negative else "+", node, part)
        assert node is not None
        return node

    def _product(x: sp.Mul) -> E.Expr:
        if x.as_coeff_Mul()[0].is_negative:
            return E.UnOp("-", conv(-x))
        num, den = [], []
        for factor in x.as_ordered_factors():
            if factor.is_Pow and factor.exp.is_Rational and factor.exp < 0:
                den.append(factor.base ** -factor.exp)
            elif factor.is_Rational and not factor.is_Integer:
                if factor.p != 1:
                    num.append(sp.Integer(factor.p))
                den.append(sp.Integer(factor.q))
            else:
                num.append(factor)
        node = conv(num[0]) if num else E.Const(1)
        for factor in num[1:]:
            node = E.BinOp("*", node, conv(factor))
        for factor in den:
            node = E.BinOp("/", node, conv(factor))
        return node

    return conv(e)
