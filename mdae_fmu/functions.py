"""User functions of a model: their IR, a Python evaluator, forward-mode differentiation and the
sympy functions through which the analysis sees them.

A Modelica function with an algorithm body (Modelica 3.6 §12) is kept as a `Function`: formal
inputs (with defaults), outputs, protected variables and a list of statements. Equations call
it with `expr.Call`: ``Call("f", args)`` is the first output of ``f``, ``Call(call_name("f", k),
args)`` its output ``k`` (``f#2`` for the second; a ``(a, b) = f(x)`` equation becomes one
equation per output). Built-in math functions declared with ``external "C"`` are not kept: the
importer maps them to the built-ins (`mdae_fmu.importers.functions`).

How the later stages see a call (docs/importers.md, "Functions"):

* structure: a call is an ordinary sub-expression; its incidence is that of its arguments;
* symbolic algebra (`FunctionTable.sympy_function`): one sympy function per (function, output),
  whose partial derivative with respect to argument i is a call of the *derivative function*
  with the unit tangent e_i (the derivative is linear in the tangents). The derivative function
  is the one of the ``derivative`` annotation when present (its inputs: the inputs of f, then
  the tangents of the Real inputs not listed as ``zeroDerivative``/``noDerivative``; its
  outputs: the tangents of the Real outputs, Modelica 3.6 §12.7.1), otherwise the forward-mode
  derivative of the body (`forward_derivative`), itself a `Function` (so it is evaluated,
  differentiated again and compiled to C like any other). This is what index reduction needs
  (docs/theory.md §4.6: latent equations are total time derivatives of the equations);
* numbers: `evaluate` interprets the body in Python (the sympy functions carry it as
  ``_imp_``, so ``lambdify`` and ``evalf`` use it), within the work budget of one call
  (`mdae_fmu.work_budget`);
* C: `mdae_fmu.codegen.functions` prints each function as a C function.
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Union

from . import expr as E
from .diagnostics import SourceLoc
from .work_budget import DEFAULT_BUDGET, Work, function_budget

#: Iterations one loop may run (Python evaluator and generated C) before it is an error: a
#: for-loop over a longer range does not start. Every call also has a work budget
#: (`mdae_fmu.work_budget`), which stops nested loops and while-loops.
MAX_LOOP_ITERATIONS = DEFAULT_BUDGET

#: The budget of the call from the model that is being evaluated, shared by the calls it
#: makes (`run`): None outside an evaluation.
_WORK: contextvars.ContextVar[Work | None] = contextvars.ContextVar("mdae_function_work",
                                                                   default=None)


class FunctionError(Exception):
    """A run-time error inside a user function: a failed assert, a loop that does not end,
    an output never assigned, a math domain error."""


# --- IR ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Param:
    """A formal input, output or protected variable; ``default`` is the input's default or
    the binding of an output/protected variable (an expression over the inputs)."""
    name: str
    type: str = "Real"
    default: E.Expr | None = None
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Assign:
    """``target := value``."""
    target: str
    value: E.Expr
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class TupleAssign:
    """``(a, b) := f(x)``; a target may be None (``(a, , c)``)."""
    targets: tuple
    call: E.Call
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class IfStmt:
    """``if c1 then ... elseif c2 then ... else ... end if``."""
    branches: tuple        # ((cond, body), ...)
    orelse: tuple
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ForStmt:
    """``for var in start:step:stop loop body end for`` (step 1 for ``start:stop``)."""
    var: str
    start: E.Expr
    step: E.Expr
    stop: E.Expr
    body: tuple
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class WhileStmt:
    cond: E.Expr
    body: tuple
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Return:
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Break:
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class AssertStmt:
    """``assert(cond, message[, level])`` inside a function; ``message`` is the literal, or
    the expression of one built with ``String(...)`` (`mdae_fmu.codegen.messages`)."""
    cond: E.Expr
    message: str | E.Expr
    level: str = "error"
    loc: SourceLoc | None = field(default=None, compare=False)


Statement = Union[Assign, TupleAssign, IfStmt, ForStmt, WhileStmt, Return, Break, AssertStmt]


@dataclass(frozen=True, slots=True)
class DerivativeAnnotation:
    """``annotation(derivative(zeroDerivative=u, noDerivative=v) = f_der)``: ``without`` holds
    the inputs that get no tangent."""
    function: str
    without: tuple = ()


@dataclass(frozen=True)
class Function:
    name: str
    inputs: tuple = ()          # Params
    outputs: tuple = ()
    locals: tuple = ()
    body: tuple = ()            # Statements
    derivative: DerivativeAnnotation | None = None
    smooth_order: int | None = None
    inline: bool = False
    loc: SourceLoc | None = field(default=None, compare=False)

    def real_inputs(self) -> list[str]:
        return [p.name for p in self.inputs if p.type == "Real"]

    def real_outputs(self) -> list[int]:
        return [k for k, p in enumerate(self.outputs) if p.type == "Real"]


def call_name(function: str, output: int) -> str:
    """The name a `Call` uses for output ``output`` (from 0) of ``function``."""
    return function if output == 0 else f"{function}#{output + 1}"


def split_call_name(name: str) -> tuple[str, int]:
    """Inverse of `call_name`."""
    head, sep, tail = name.rpartition("#")
    if sep and tail.isdigit() and head:
        return head, int(tail) - 1
    return name, 0


# --- walking statements --------------------------------------------------------------------------

def statement_exprs(body) -> list:
    """Every expression of a statement list, nested bodies included."""
    out = []
    stack = list(body)
    while stack:
        s = stack.pop()
        if isinstance(s, Assign):
            out.append(s.value)
        elif isinstance(s, TupleAssign):
            out.append(s.call)
        elif isinstance(s, IfStmt):
            for c, b in s.branches:
                out.append(c)
                stack.extend(b)
            stack.extend(s.orelse)
        elif isinstance(s, ForStmt):
            out.extend((s.start, s.step, s.stop))
            stack.extend(s.body)
        elif isinstance(s, WhileStmt):
            out.append(s.cond)
            stack.extend(s.body)
        elif isinstance(s, AssertStmt):
            out.append(s.cond)
    return out


def called_functions(fn: Function, known) -> set[str]:
    """Names of the user functions (in ``known``) that ``fn`` calls, defaults included."""
    exprs = statement_exprs(fn.body) + [p.default for p in fn.inputs + fn.outputs + fn.locals
                                        if p.default is not None]
    out = set()
    for e in exprs:
        for n in E.walk(e):
            if isinstance(n, E.Call):
                base = split_call_name(n.func)[0]
                if base in known:
                    out.add(base)
    return out


def find_cycle(functions) -> list[str] | None:
    """A call cycle ``[f, g, ..., f]`` among ``functions`` (a recursive function), or None."""
    known = {f.name: f for f in functions}
    graph = {f.name: sorted(called_functions(f, known)) for f in functions}
    color: dict[str, int] = {}
    for root in graph:
        if color.get(root):
            continue
        path = [root]
        stack = [iter(graph[root])]
        color[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                stack.pop()
                continue
            c = color.get(nxt, 0)
            if c == 1:
                return path[path.index(nxt):] + [nxt]
            if c == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append(iter(graph[nxt]))
    return None


# --- Python evaluation -------------------------------------------------------------------------

class _Return(Exception):
    pass


class _Break(Exception):
    pass


def _num(x):
    return float(x) if not isinstance(x, bool) else x


def _sign(x):
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


_PY: dict[str, Callable[..., Any]] = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh,
    "tanh": math.tanh, "exp": math.exp, "log": math.log, "log10": math.log10,
    "sqrt": math.sqrt, "abs": abs, "sign": _sign, "min": min, "max": max,
    "floor": math.floor, "ceil": math.ceil, "integer": math.floor, "erf": math.erf,
    "erfc": math.erfc,
    "div": lambda a, b: float(math.trunc(a / b)),
    "mod": lambda a, b: a - math.floor(a / b) * b,
    "rem": lambda a, b: a - math.trunc(a / b) * b,
    "noEvent": lambda a: a, "smooth": lambda n, a: a, "homotopy": lambda a, b: a,
}
_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "^": lambda a, b: a ** b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "<>": lambda a, b: a != b,
}


def eval_expr(e: E.Expr, env: dict, table: "FunctionTable"):
    """Value of ``e`` with the names of ``env``; calls of user functions through ``table``."""
    t = type(e)
    if t is E.Const:
        assert isinstance(e, E.Const)
        return e.value
    if t is E.Ref:
        assert isinstance(e, E.Ref)
        try:
            return env[e.name]
        except KeyError:
            raise FunctionError(f"'{e.name}' is used before it has a value") from None
    if t is E.BinOp:
        assert isinstance(e, E.BinOp)
        op = e.op.lstrip(".") if len(e.op) == 2 and e.op[0] == "." else e.op
        if op == "and":
            return bool(eval_expr(e.left, env, table)) and bool(eval_expr(e.right, env, table))
        if op == "or":
            return bool(eval_expr(e.left, env, table)) or bool(eval_expr(e.right, env, table))
        a, b = eval_expr(e.left, env, table), eval_expr(e.right, env, table)
        try:
            return _BIN[op](a, b)
        except ZeroDivisionError:
            raise FunctionError("division by zero") from None
    if t is E.UnOp:
        assert isinstance(e, E.UnOp)
        a = eval_expr(e.arg, env, table)
        return (not a) if e.op == "not" else (-a if e.op == "-" else a)
    if t is E.If:
        assert isinstance(e, E.If)
        return eval_expr(e.then if eval_expr(e.cond, env, table) else e.orelse, env, table)
    if t is E.Call:
        assert isinstance(e, E.Call)
        args = [eval_expr(a, env, table) for a in e.args]
        f = _PY.get(e.func)
        if f is not None:
            try:
                return f(*args)
            except (ValueError, ZeroDivisionError, OverflowError) as err:
                raise FunctionError(f"{e.func}(): {err}") from None
        base, k = split_call_name(e.func)
        return table.evaluate(base, args)[k]
    if t is E.Time:
        return env["time"]
    raise FunctionError(f"cannot evaluate {type(e).__name__} inside a function")


def run(fn: Function, args, table: "FunctionTable") -> tuple:
    """Execute ``fn`` on ``args`` (one value per input) and return its outputs. A call from
    the model gets the work budget `work_budget.function_budget`, which the calls it makes
    share; running out raises `work_budget.BudgetExceeded` (exit 2)."""
    if len(args) != len(fn.inputs):
        raise FunctionError(f"{fn.name} expects {len(fn.inputs)} arguments, got {len(args)}")
    work = _WORK.get()
    if work is None:
        token = _WORK.set(Work(function_budget(), fn.name))
        try:
            return run(fn, args, table)
        finally:
            _WORK.reset(token)
    env: dict = {}
    for p, a in zip(fn.inputs, args):
        env[p.name] = a
    for p in fn.outputs + fn.locals:
        if p.default is not None:
            env[p.name] = eval_expr(p.default, env, table)
    try:
        _exec(fn.body, env, table, fn, work)
    except _Return:
        pass
    out = []
    for p in fn.outputs:
        if p.name not in env:
            raise FunctionError(f"output '{p.name}' of {fn.name} is not assigned")
        out.append(env[p.name])
    return tuple(out)


def _exec(body, env, table, fn, work: Work):
    """Run statements, one unit of ``work`` each, and one per loop iteration."""
    for s in body:
        work.left -= 1
        if work.left < 0:
            raise work.exceeded(fn.name, s.loc)
        t = type(s)
        if t is Assign:
            env[s.target] = eval_expr(s.value, env, table)
        elif t is TupleAssign:
            base = split_call_name(s.call.func)[0]
            values = table.evaluate(base, [eval_expr(a, env, table) for a in s.call.args])
            for name, v in zip(s.targets, values):
                if name is not None:
                    env[name] = v
        elif t is IfStmt:
            for cond, b in s.branches:
                if eval_expr(cond, env, table):
                    _exec(b, env, table, fn, work)
                    break
            else:
                _exec(s.orelse, env, table, fn, work)
        elif t is ForStmt:
            a, h, z = (eval_expr(x, env, table) for x in (s.start, s.step, s.stop))
            if h == 0:
                raise FunctionError(f"for-loop of {fn.name} with step 0")
            if (z - a) / h > work.limit:          # more iterations than the whole budget
                raise work.exceeded(fn.name, s.loc, (z - a) / h + 1)
            i = a
            try:
                while (i <= z) if h > 0 else (i >= z):
                    work.left -= 1
                    if work.left < 0:
                        raise work.exceeded(fn.name, s.loc)
                    env[s.var] = i
                    _exec(s.body, env, table, fn, work)
                    i += h
            except _Break:
                pass
        elif t is WhileStmt:
            try:
                while eval_expr(s.cond, env, table):
                    work.left -= 1
                    if work.left < 0:
                        raise work.exceeded(fn.name, s.loc)
                    _exec(s.body, env, table, fn, work)
            except _Break:
                pass
        elif t is Return:
            raise _Return()
        elif t is Break:
            raise _Break()
        elif t is AssertStmt:
            if s.level == "error" and not eval_expr(s.cond, env, table):
                raise FunctionError(f"assertion failed in {fn.name}: "
                                    f"{_message(fn, s.message, env, table)}")


def _message(fn: Function, message, env, table) -> str:
    """The text of an assert message: the literal, or its parts with every ``String(...)``
    formatted as the generated C formats it (`mdae_fmu.codegen.messages.format_value`)."""
    if isinstance(message, str):
        return message
    from .assert_messages import format_value, message_parts, value_kind
    types = {p.name: p.type for p in fn.inputs + fn.outputs + fn.locals}
    out = []
    for part in message_parts(message) or ():
        if type(part) is E.Str:
            out.append(part.value)
        else:
            x, n, left, digits = (eval_expr(a, env, table) for a in part.args)
            out.append(format_value(value_kind(part.args[0], types), x, n, left, digits))
    return "".join(out)


# --- forward-mode differentiation ---------------------------------------------------------------

def _is_zero(e):
    return type(e) is E.Const and not isinstance(e.value, bool) and e.value == 0


def _add(a, b):
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    return E.BinOp("+", a, b)


def _sub(a, b):
    if _is_zero(b):
        return a
    if _is_zero(a):
        return E.UnOp("-", b)
    return E.BinOp("-", a, b)


def _mul(a, b):
    if _is_zero(a) or _is_zero(b):
        return E.ZERO
    if a == E.Const(1):
        return b
    if b == E.Const(1):
        return a
    return E.BinOp("*", a, b)


def _div(a, b):
    return E.ZERO if _is_zero(a) else E.BinOp("/", a, b)


_ONE = E.Const(1)


def _c(name, *args):
    return E.Call(name, tuple(args))


def tangent(e: E.Expr, tan: dict, table: "FunctionTable") -> E.Expr:
    """Directional derivative of ``e`` where variable v has the tangent ``Ref(tan[v])`` (names
    not in ``tan`` are constant): forward-mode differentiation of one expression."""
    t = type(e)
    if t in (E.Const, E.Str, E.Time):
        return E.ZERO
    if t is E.Ref:
        assert isinstance(e, E.Ref)
        n = tan.get(e.name)
        return E.ZERO if n is None else E.Ref(n)
    if t is E.UnOp:
        assert isinstance(e, E.UnOp)
        if e.op == "not":
            return E.ZERO
        d = tangent(e.arg, tan, table)
        return d if e.op == "+" or _is_zero(d) else E.UnOp("-", d)
    if t is E.If:
        assert isinstance(e, E.If)
        a, b = tangent(e.then, tan, table), tangent(e.orelse, tan, table)
        return E.ZERO if _is_zero(a) and _is_zero(b) else E.If(e.cond, a, b)
    if t is E.BinOp:
        assert isinstance(e, E.BinOp)
        op = e.op.lstrip(".") if len(e.op) == 2 and e.op[0] == "." else e.op
        if op not in ("+", "-", "*", "/", "^"):
            return E.ZERO
        u, v = e.left, e.right
        du, dv = tangent(u, tan, table), tangent(v, tan, table)
        if op == "+":
            return _add(du, dv)
        if op == "-":
            return _sub(du, dv)
        if op == "*":
            return _add(_mul(du, v), _mul(u, dv))
        if op == "/":
            return _div(_sub(du, _mul(e, dv)), v)
        # u^v
        if _is_zero(dv):
            return _mul(_mul(v, E.BinOp("^", u, E.BinOp("-", v, _ONE))), du)
        return _mul(e, _add(_mul(dv, _c("log", u)), _div(_mul(v, du), u)))
    if t is E.Call:
        assert isinstance(e, E.Call)
        return _call_tangent(e, tan, table)
    raise TypeError(f"not an expression: {e!r}")


def _call_tangent(e: E.Call, tan, table):
    f, a = e.func, e.args
    if f in ("floor", "ceil", "integer", "div", "sign", "pre", "edge", "change", "initial",
             "terminal", "sample"):
        return E.ZERO
    if f in ("noEvent",):
        d = tangent(a[0], tan, table)
        return d if _is_zero(d) else _c("noEvent", d)
    if f == "smooth":
        return tangent(a[1], tan, table)
    if f == "homotopy":
        return tangent(a[0], tan, table)
    if f in ("min", "max"):
        rel = "<" if f == "min" else ">"
        return E.If(E.BinOp(rel, a[0], a[1]), tangent(a[0], tan, table),
                    tangent(a[1], tan, table))
    if f in ("mod", "rem"):
        q = _c("floor" if f == "mod" else "div", E.BinOp("/", a[0], a[1])) if f == "mod" \
            else _c("div", a[0], a[1])
        return _sub(tangent(a[0], tan, table), _mul(q, tangent(a[1], tan, table)))
    if f == "atan2":
        y, x = a
        dy, dx = tangent(y, tan, table), tangent(x, tan, table)
        den = E.BinOp("+", E.BinOp("*", x, x), E.BinOp("*", y, y))
        return _div(_sub(_mul(x, dy), _mul(y, dx)), den)
    if f in _DERIVATIVES:
        d = tangent(a[0], tan, table)
        return _mul(_DERIVATIVES[f](a[0]), d)
    if f in E.BUILTIN_FUNCTIONS:
        raise FunctionError(f"cannot differentiate {f}()")
    # a user function: its derivative function, with the tangents of its Real arguments
    base, k = split_call_name(f)
    fn = table.get(base)
    dfn, with_tangent = table.derivative(base)
    dargs = [tangent(x, tan, table) for p, x in zip(fn.inputs, a) if p.name in with_tangent]
    if all(_is_zero(d) for d in dargs):
        return E.ZERO
    reals = fn.real_outputs()
    if k not in reals:
        return E.ZERO
    return E.Call(call_name(dfn.name, reals.index(k)), tuple(a) + tuple(dargs))


_DERIVATIVES = {
    "sin": lambda u: _c("cos", u),
    "cos": lambda u: E.UnOp("-", _c("sin", u)),
    "tan": lambda u: E.BinOp("/", _ONE, E.BinOp("^", _c("cos", u), E.Const(2))),
    "asin": lambda u: E.BinOp("/", _ONE, _c("sqrt", E.BinOp("-", _ONE, E.BinOp("*", u, u)))),
    "acos": lambda u: E.BinOp("/", E.Const(-1),
                              _c("sqrt", E.BinOp("-", _ONE, E.BinOp("*", u, u)))),
    "atan": lambda u: E.BinOp("/", _ONE, E.BinOp("+", _ONE, E.BinOp("*", u, u))),
    "sinh": lambda u: _c("cosh", u),
    "cosh": lambda u: _c("sinh", u),
    "tanh": lambda u: E.BinOp("-", _ONE, E.BinOp("^", _c("tanh", u), E.Const(2))),
    "exp": lambda u: _c("exp", u),
    "log": lambda u: E.BinOp("/", _ONE, u),
    "log10": lambda u: E.BinOp("/", _ONE, E.BinOp("*", u, E.Const(math.log(10)))),
    "sqrt": lambda u: E.BinOp("/", E.Const(0.5), _c("sqrt", u)),
    "abs": lambda u: _c("sign", u),
    "erf": lambda u: E.BinOp("*", E.Const(2 / math.sqrt(math.pi)),
                             _c("exp", E.UnOp("-", E.BinOp("*", u, u)))),
    "erfc": lambda u: E.BinOp("*", E.Const(-2 / math.sqrt(math.pi)),
                              _c("exp", E.UnOp("-", E.BinOp("*", u, u)))),
}


def _fresh(base: str, taken: set) -> str:
    name = f"der({base})"
    while name in taken:
        name = "'" + name
    taken.add(name)
    return name


def forward_derivative(fn: Function, table: "FunctionTable") -> Function:
    """The forward-mode derivative of ``fn`` as a new `Function`: inputs of ``fn`` then one
    tangent per Real input, outputs the tangents of the Real outputs. Every assignment
    ``v := e`` is preceded by ``der(v) := tangent(e)``; control flow is kept, so loops and
    branches are differentiated along the path the values take (the derivative of the program,
    not of a closed form). This is the derivative that the latent equations need when an
    equation with a call is differentiated (docs/theory.md §4.6, §4.8: the differential
    array of an equation is its successive total time derivatives)."""
    taken = {p.name for p in fn.inputs + fn.outputs + fn.locals}
    tan: dict[str, str] = {}
    for p in fn.inputs + fn.outputs + fn.locals:
        if p.type == "Real":
            tan[p.name] = _fresh(p.name, taken)
    t_inputs = tuple(
        Param(name=tan[p.name], type="Real", default=None, loc=p.loc)
        for p in fn.inputs
        if p.type == "Real"
    )
    t_outputs = tuple(
        Param(name=tan[p.name], type="Real", default=None, loc=p.loc)
        for p in fn.outputs
        if p.type == "Real"
    )
    locals_ = []
    # primal outputs become locals; tangents of outputs, locals too
    for p in fn.outputs + fn.locals:
        locals_.append(p)
        if p.type == "Real" and p not in fn.outputs:
            locals_.append(Param(name=tan[p.name], type="Real", default=None, loc=p.loc))
    # defaults of outputs/locals: their tangents are set at the start of the body
    prologue = []
    for p in fn.outputs + fn.locals:
        if p.type == "Real":
            d = tangent(p.default, tan, table) if p.default is not None else E.ZERO
            prologue.append(Assign(target=tan[p.name], value=d, loc=p.loc))
    body = tuple(prologue) + _tangent_body(fn.body, tan, table)
    return Function(name=f"der({fn.name})", inputs=fn.inputs + t_inputs, outputs=t_outputs,
                    locals=tuple(locals_), body=body, loc=fn.loc)


def _tangent_body(body, tan, table) -> tuple:
    out: list[Statement] = []
    for s in body:
        t = type(s)
        if t is Assign:
            if s.target in tan:
                out.append(
                    Assign(target=tan[s.target], value=tangent(s.value, tan, table), loc=s.loc)
                )
            out.append(s)
        elif t is TupleAssign:
            base = split_call_name(s.call.func)[0]
            fn = table.get(base)
            dfn, with_tangent = table.derivative(base)
            dargs = tuple(tangent(x, tan, table) for p, x in zip(fn.inputs, s.call.args)
                          if p.name in with_tangent)
            reals = fn.real_outputs()
            targets = tuple(tan.get(s.targets[k]) if k < len(s.targets) and s.targets[k]
                            else None for k in reals)
            out.append(
                TupleAssign(targets=targets, call=E.Call(dfn.name, s.call.args + dargs), loc=s.loc)
            )
            out.append(s)
        elif t is IfStmt:
            out.append(
                IfStmt(
                    branches=tuple((c, _tangent_body(b, tan, table)) for c, b in s.branches),
                    orelse=_tangent_body(s.orelse, tan, table),
                    loc=s.loc,
                )
            )
        elif t is ForStmt:
            out.append(replace(s, body=_tangent_body(s.body, tan, table)))
        elif t is WhileStmt:
            out.append(replace(s, body=_tangent_body(s.body, tan, table)))
        else:
            out.append(s)
    return tuple(out)


# --- the table of a model's functions, and their sympy form ---------------------------------------

class FunctionTable:
    """The user functions of one model plus the derivative functions made on demand
    (`derivative`), their sympy classes and their C names. One table per tuple of functions
    (`function_table`), shared by every stage that converts the model's expressions."""

    def __init__(self, functions):
        self.functions: dict[str, Function] = {}
        for f in functions:
            self.functions[f.name] = f
        self._derivs: dict[str, tuple[Function, frozenset]] = {}
        self._classes: dict[str, object] = {}

    def __bool__(self):
        return bool(self.functions)

    @classmethod
    def restore(cls, functions: dict, derivatives: dict) -> FunctionTable:
        """The table holding ``functions`` (the user functions and the derivative functions
        made from them, by name) and ``derivatives`` (`derivatives` of the table that was
        saved): the inverse of reading those two, for `mdae_fmu.saved`."""
        table = cls(())
        table.functions.update(functions)
        table._derivs.update(derivatives)
        return table

    @property
    def derivatives(self) -> dict[str, tuple[Function, frozenset]]:
        """The derivative function of each function `derivative` was asked for, with the
        inputs that have a tangent in it."""
        return self._derivs

    def get(self, name: str) -> Function:
        return self.functions[name]

    def index(self, name: str) -> int:
        return list(self.functions).index(name)

    def all(self) -> list[Function]:
        return list(self.functions.values())

    def evaluate(self, name: str, args) -> tuple:
        return run(self.functions[name], list(args), self)

    def derivative(self, name: str) -> tuple[Function, frozenset]:
        """The derivative function of ``name`` and the inputs that have a tangent in it
        (module docstring): the ``derivative`` annotation's, else the forward-mode one."""
        hit = self._derivs.get(name)
        if hit is not None:
            return hit
        fn = self.functions[name]
        if fn.derivative is not None and fn.derivative.function in self.functions:
            dfn = self.functions[fn.derivative.function]
            with_t = frozenset(n for n in fn.real_inputs() if n not in fn.derivative.without)
        else:
            dname = f"der({name})"
            while dname in self.functions:
                dname = "'" + dname
            self._derivs[name] = (Function(name=dname), frozenset())   # guards re-entry
            dfn = replace(forward_derivative(fn, self), name=dname)
            self.functions[dname] = dfn
            with_t = frozenset(fn.real_inputs())
        self._derivs[name] = (dfn, with_t)
        return dfn, with_t

    def partial(self, cname: str, i: int, args):
        """sympy partial derivative of call ``cname(args)`` with respect to argument ``i``: the
        derivative function on the unit tangent e_i (module docstring), which sympy's chain rule
        uses in `SymbolTable.time_derivative` (docs/theory.md §4.6)."""
        import sympy as sp
        base, k = split_call_name(cname)
        fn = self.functions[base]
        p = fn.inputs[i]
        dfn, with_t = self.derivative(base)
        reals = fn.real_outputs()
        if p.name not in with_t or k not in reals:
            return sp.Integer(0)
        tangents = [sp.Integer(1) if q.name == p.name else sp.Integer(0)
                    for q in fn.inputs if q.name in with_t]
        return self.sympy_function(call_name(dfn.name, reals.index(k)))(*args, *tangents)

    def sympy_name(self, cname: str) -> str:
        """A Python identifier naming call ``cname`` (sympy class name, lambdify, C handler)."""
        base, k = split_call_name(cname)
        return f"mdae_fn{self.index(base)}_o{k}"

    def sympy_function(self, cname: str):
        """The sympy function of call ``cname`` (module docstring)."""
        cls = self._classes.get(cname)
        if cls is not None:
            return cls
        from sympy.core.function import UndefinedFunction
        base, k = split_call_name(cname)
        table = self

        def fdiff(self, argindex=1):
            return table.partial(cname, argindex - 1, self.args)

        def imp(*args):
            return table.evaluate(base, [float(a) for a in args])[k]

        def sympystr(self, printer):     # reports show the model's name, not the C one
            return f"{cname}({', '.join(printer.doprint(a) for a in self.args)})"

        cls = UndefinedFunction(self.sympy_name(cname), _imp_=staticmethod(imp), fdiff=fdiff,
                                _sympystr=sympystr, _mdae_call=cname)
        self._classes[cname] = cls
        return cls


_TABLES: dict[int, tuple] = {}


def function_table(functions: tuple) -> FunctionTable:
    """The `FunctionTable` of a model's ``functions`` tuple, one per tuple object."""
    hit = _TABLES.get(id(functions))
    if hit is not None and hit[0] is functions:
        return hit[1]
    t = FunctionTable(functions)
    if len(_TABLES) > 64:
        _TABLES.clear()
    _TABLES[id(functions)] = (functions, t)
    return t


# --- JSON form (`ir.Model.to_json`) --------------------------------------------------------------

def _loc_json(loc):
    return None if loc is None else [loc.file, loc.line, loc.col]


def _loc(j):
    return None if j is None else SourceLoc(j[0], j[1], j[2])


def _opt(e):
    return None if e is None else E.to_json(e)


def _param_json(p: Param) -> list:
    return [p.name, p.type, _opt(p.default), _loc_json(p.loc)]


def _param(j) -> Param:
    return Param(
        name=j[0], type=j[1], default=None if j[2] is None else E.from_json(j[2]), loc=_loc(j[3])
    )


def _stmt_json(s) -> list:
    loc = _loc_json(s.loc)
    t = type(s)
    if t is Assign:
        return ["assign", s.target, E.to_json(s.value), loc]
    if t is TupleAssign:
        return ["tuple", list(s.targets), E.to_json(s.call), loc]
    if t is IfStmt:
        return ["if", [[E.to_json(c), [_stmt_json(x) for x in b]] for c, b in s.branches],
                [_stmt_json(x) for x in s.orelse], loc]
    if t is ForStmt:
        return ["for", s.var, E.to_json(s.start), E.to_json(s.step), E.to_json(s.stop),
                [_stmt_json(x) for x in s.body], loc]
    if t is WhileStmt:
        return ["while", E.to_json(s.cond), [_stmt_json(x) for x in s.body], loc]
    if t is AssertStmt:
        message = s.message if isinstance(s.message, str) else {"expr": E.to_json(s.message)}
        return ["assert", E.to_json(s.cond), message, s.level, loc]
    return ["return" if t is Return else "break", loc]


def _stmt(j):
    kind, loc = j[0], _loc(j[-1])
    if kind == "assign":
        return Assign(target=j[1], value=E.from_json(j[2]), loc=loc)
    if kind == "tuple":
        return TupleAssign(targets=tuple(j[1]), call=E.from_json(j[2]), loc=loc)
    if kind == "if":
        return IfStmt(branches=tuple((E.from_json(c), tuple(_stmt(x) for x in b)) for c, b in j[1]),
                      orelse=tuple(_stmt(x) for x in j[2]), loc=loc)
    if kind == "for":
        return ForStmt(
            var=j[1],
            start=E.from_json(j[2]),
            step=E.from_json(j[3]),
            stop=E.from_json(j[4]),
            body=tuple(_stmt(x) for x in j[5]),
            loc=loc,
        )
    if kind == "while":
        return WhileStmt(cond=E.from_json(j[1]), body=tuple(_stmt(x) for x in j[2]), loc=loc)
    if kind == "assert":
        message = j[2] if isinstance(j[2], str) else E.from_json(j[2]["expr"])
        return AssertStmt(cond=E.from_json(j[1]), message=message, level=j[3], loc=loc)
    return Return(loc) if kind == "return" else Break(loc)


def function_to_json(f: Function) -> dict:
    return {"name": f.name, "inputs": [_param_json(p) for p in f.inputs],
            "outputs": [_param_json(p) for p in f.outputs],
            "locals": [_param_json(p) for p in f.locals],
            "body": [_stmt_json(s) for s in f.body],
            "derivative": None if f.derivative is None else
            [f.derivative.function, list(f.derivative.without)],
            "smooth_order": f.smooth_order, "inline": f.inline, "loc": _loc_json(f.loc)}


def function_from_json(j: dict) -> Function:
    d = j["derivative"]
    return Function(
        name=j["name"],
        inputs=tuple(_param(p) for p in j["inputs"]),
        outputs=tuple(_param(p) for p in j["outputs"]),
        locals=tuple(_param(p) for p in j["locals"]),
        body=tuple(_stmt(s) for s in j["body"]),
        derivative=None if d is None else DerivativeAnnotation(function=d[0], without=tuple(d[1])),
        smooth_order=j["smooth_order"],
        inline=j["inline"],
        loc=_loc(j["loc"]),
    )
