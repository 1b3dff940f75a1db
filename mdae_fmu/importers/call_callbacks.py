"""Grammar callbacks of calls (issue 27): built-in functions and operators (their arguments
checked and constant calls evaluated), ``der``, the statements called like functions (reinit,
assert, terminate, print), ``String(...)``, array functions, record constructors and calls of
the functions the file defines (checked when the model is built, `functions`).
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterator

from .. import expr as E
from . import arrays as A
from . import values
from .callback_common import rule_table
from .expression_callbacks import constant_value, fold
from .parse_traces import is_name
from .syntax import Named, Stmt, normalize_name

if TYPE_CHECKING:
    from .parse_context import ParseContext


#: Formal parameter names of built-in operators that flat output calls with named arguments
#: (Modelica 3.6 §3.7.4.4 homotopy, §3.7.5 sample, §3.7.4.3 semiLinear).
BUILTIN_PARAMETERS = {"homotopy": ("actual", "simplified"), "sample": ("start", "interval"),
                      "semiLinear": ("x", "k_pos", "k_neg")}
_STATEMENTS = ("reinit", "assert", "terminate", "print")
#: The options of String(x, ...) in the order of the specification (Modelica 3.6 §3.7).
_STRING_OPTIONS = ("significantDigits", "minimumLength", "leftJustified")


def boolean_form(e: Any) -> bool:
    """``e`` is a Boolean by its form: a Boolean literal, a relation, and/or/not."""
    t = type(e)
    return (t is E.Const and type(e.value) is bool) or \
        (t is E.BinOp and e.op in E.REL_OPS + E.BOOL_OPS) or (t is E.UnOp and e.op == "not")


def message_strings(ctx: ParseContext, messages: Any) -> None:
    """The String(...) calls inside ``messages`` (expressions of an assert or terminate
    message) are where String is supported: claim them (`call`)."""
    for n in _string_calls(messages):
        ctx.string_calls.pop(id(n), None)
        where = ctx.string_formats.pop(id(n), None)
        if where is not None:
            ctx.error(where, "String(r, format = ...) is not supported in a message (use "
                             "significantDigits, minimumLength and leftJustified)")


def string_values(ctx: ParseContext, exprs: Any) -> None:
    """The String(...) calls inside ``exprs`` (the binding of a String variable, an equation
    between Strings) give the value of a String variable, which the model ignores (docs/
    importers.md, "String variables"): claim them, the ``format`` option included."""
    for n in _string_calls(exprs):
        ctx.string_calls.pop(id(n), None)
        ctx.string_formats.pop(id(n), None)


def _string_calls(exprs: Any) -> Iterator[E.Call]:
    for m in exprs:
        for n in E.walk(m):
            if type(n) is E.Call and n.func == "String":
                yield n


def refuse_string_calls(ctx: ParseContext) -> None:
    """Refuse every String(...) call no assert or terminate message claimed."""
    for _node, where in ctx.string_calls.values():
        ctx.error(where, "String(...) is only supported in the message of assert or terminate "
                         "and in the value of a String variable (which the model ignores)")
    ctx.string_calls.clear()
    ctx.string_formats.clear()


def by_position(name: str, args: list) -> list:
    """``args`` of a built-in with the formal names of `BUILTIN_PARAMETERS` (OpenModelica
    prints ``homotopy(actual = a, simplified = s)``) in their positional order; a name that
    is not a formal parameter, or given twice, stays named (and is refused)."""
    formal = BUILTIN_PARAMETERS.get(name)
    if not formal or all(type(a) is not Named for a in args):
        return args
    out = [a for a in args if type(a) is not Named]
    named = {}
    for a in args:
        if type(a) is Named:
            key = a.name[1]
            if key not in formal or key in named or formal.index(key) < len(out):
                return args
            named[key] = a.value
    for key in formal[len(out):]:
        if key not in named:
            break
        out.append(named.pop(key))
    return args if named else out


def named_arg(cb, c):
    return Named(name=c[0], value=c[2])


def call_args(cb, c):
    return c


def call_args_form(c: list) -> str | None:
    """`call_args` as an expression over its children's sources (`parse_traces`)."""
    return "[" + ", ".join(c) + "]"


def initial_call(cb, c):
    return E.Call("initial", ())


def call(cb, c):
    tok = c[0]
    args = c[2] if len(c) > 2 else []
    name = normalize_name(tok[1])
    if name.startswith("Modelica.Math.") and name[14:] in E.MATH_FUNCTIONS:
        name = name[14:]
    elif name in ("Modelica.Math.Special.erf", "Modelica.Math.Special.erfc"):
        name = name[22:]
    ctx = cb.ctx
    if name == "der":
        if len(args) != 1 or type(args[0]) is Named:
            ctx.error(ctx.tok_loc(tok), f"der expects 1 argument, got {len(args)}")
            return E.ZERO
        arg = args[0]
        if type(arg) is E.Ref:
            ctx.der_names.add(arg.name)
        else:
            ctx.der_names.update(E.refs(arg))
        return E.Der(arg)
    if name == "String":
        return _string_call(cb, tok, args)
    if name == "array" and \
            not any(type(a) is Named for a in args):
        ctx.extended = True         # array(a, b, ...) is {a, b, ...} (§10.4.1)
        return A.ArrayCons(tuple(args), tok[2])
    if name in _STATEMENTS:
        named = {}
        pos = []
        for a in args:
            if type(a) is Named:
                named[normalize_name(a.name[1])] = a
            else:
                pos.append(a)
        if ctx.string_calls:
            message_strings(ctx, pos[1 if name == "assert" else 0:] +
                            [a.value for k, a in named.items() if k != "condition"])
        s = Stmt(func=name, args=pos, named=named, loc=ctx.tok_loc(tok))
        ctx.stmts[id(s)] = s
        return s
    if name in ctx.record_names:         # a record constructor R(...)
        ctx.extended = True
        return A.ArrayCall(name, tuple(args), tok[2])
    counts = E.BUILTIN_FUNCTIONS.get(name)
    if name in A.ARRAY_FUNCTIONS and (counts is None or len(args) not in counts):
        return _array_call(cb, tok, name, args)
    if len(args) == 1 and type(args[0]) is E.Ref and counts is not None and 1 in counts:
        return E.Call(name, (args[0],))     # `sin(x)`: nothing to place, check or evaluate
    if counts is None:
        if not ctx.whole_file:      # an XML equation list defines no functions
            ctx.error(ctx.tok_loc(tok), f"unknown function '{name}' (only the Modelica "
                                        "built-in functions and operators are supported)")
            return E.ZERO
        # a function defined in the file (checked when the model is built)
        for a in args:
            if type(a) is Named:
                ctx.error(ctx.tok_loc(a.name), f"named arguments are not supported in "
                                               f"'{name}(...)'")
                return E.ZERO
        ctx.calls.append((name, tok[2], len(args)))
        return E.Call(name, tuple(args))
    args = by_position(name, args)
    if not _arguments_fit(cb, tok, name, args, counts):
        return E.ZERO
    node = E.Call(name, tuple(args))
    vals = [constant_value(ctx, a) for a in args]
    if args and None not in vals:
        return fold(ctx, node, tok[2], lambda: values.call(name, tuple(vals)))
    return node


def _string_call(cb, tok, args):
    """``String(x, ...)`` (Modelica 3.6 §3.7, String conversion) as the canonical call
    ``String(x, minimumLength, leftJustified, significantDigits)``, the options that are
    not given at their defaults (0, true, 6). Named options are read by name; positional
    ones in the order their Boolean ``leftJustified`` shows: OpenModelica 1.x prints
    ``String(x, 0, true, 6)`` (significantDigits last), the specification and later
    OpenModelica ``String(x, 6, 0, true)``. An order that cannot be told (``String(x, n)``:
    minimumLength for an Integer, significantDigits for a Real) is refused, as is
    ``format``. The call is recorded in ``ctx.string_calls`` until the message of an
    assert or terminate claims it (`message_strings`)."""
    ctx = cb.ctx
    where = ctx.tok_loc(tok)
    pos = [a for a in args if type(a) is not Named]
    if not args or type(args[0]) is Named:
        ctx.error(where, "String expects the value to convert as its first argument")
        return E.ZERO
    opts = pos[1:]
    order: tuple = ()
    if len(opts) == 2 and boolean_form(opts[1]):
        order = ("minimumLength", "leftJustified")
    elif len(opts) == 2 and type(opts[1]) is E.Const and not boolean_form(opts[0]):
        order = ("significantDigits", "minimumLength")
    elif len(opts) == 3 and boolean_form(opts[1]) and not boolean_form(opts[2]):
        order = ("minimumLength", "leftJustified", "significantDigits")
    elif len(opts) == 3 and boolean_form(opts[2]) and not boolean_form(opts[1]):
        order = _STRING_OPTIONS
    elif opts:
        ctx.error(where, "cannot tell which options of String these positional arguments "
                         "are: name them (String(x, significantDigits = 6, minimumLength "
                         "= 0, leftJustified = true))")
        return E.ZERO
    given = dict(zip(order, opts))
    for a in args[1 + len(opts):]:
        if type(a) is not Named:
            ctx.error(where, "positional arguments of String must come before the named "
                             "ones")
            return E.ZERO
        key = a.name[1]
        if key == "format" and "format" not in given:
            given["format"] = a.name
            continue
        if key not in _STRING_OPTIONS or key in given:
            ctx.error(ctx.tok_loc(a.name), f"'String' has no parameter '{key}' here (its "
                      f"options: {', '.join(_STRING_OPTIONS)}; each given once)")
            return E.ZERO
        given[key] = a.value
    node = E.Call("String", (args[0], given.get("minimumLength", E.ZERO),
                             given.get("leftJustified", E.Const(True)),
                             given.get("significantDigits", E.Const(6))))
    ctx.string_calls[id(node)] = (node, where)
    if "format" in given:
        ctx.string_formats[id(node)] = ctx.tok_loc(given["format"])
    return node


def _arguments_fit(cb, tok, name, args, counts) -> bool:
    """Positional arguments, as many as ``counts`` allows (99: any number from the
    first); otherwise the error is recorded and False returned."""
    ctx = cb.ctx
    named = [a for a in args if type(a) is Named]
    formal = BUILTIN_PARAMETERS.get(name)
    if named and formal:      # the argument that `by_position` could not place
        n_pos, seen = sum(type(a) is not Named for a in args), set()
        for a in named:
            key = a.name[1]
            if key not in formal or key in seen or formal.index(key) < n_pos:
                named = [a]
                break
            seen.add(key)
    for a in named[:1]:
        ctx.error(ctx.tok_loc(a.name), (
            f"'{name}' has no parameter '{a.name[1]}' here (its parameters, in order: "
            f"{', '.join(formal)}; each given once, positional ones first)")
            if formal else f"named arguments are not supported in '{name}(...)'")
        return False
    if len(args) not in counts:
        want = " or ".join(str(n) for n in counts) if counts[-1] < 99 else \
            f"at least {counts[0]}"
        ctx.error(ctx.tok_loc(tok), f"'{name}' expects {want} argument"
                                    f"{'' if counts == (1,) else 's'}, got {len(args)}")
        return False
    return True


def _array_call(cb, tok, name, args):
    """A call of an array function or cast (`arrays.ARRAY_FUNCTIONS`), evaluated by
    `lowering`; ``delay`` is refused here."""
    ctx = cb.ctx
    counts = A.ARRAY_FUNCTIONS[name]
    if counts is None:
        ctx.error(ctx.tok_loc(tok), A.REFUSED_FUNCTIONS[name])
        return E.ZERO
    if not _arguments_fit(cb, tok, name, args, counts):
        return E.ZERO
    ctx.extended = True
    return A.ArrayCall(name, tuple(args), tok[2])


def call_subscripted(cb, c):
    # [NAME, LPAR, call_args?, subscripts]
    cb.ctx.extended = True
    return A.Indexed(call(cb, c[:-1]), c[-1], c[0][2])


def der_of_ref(cb, arg: E.Ref) -> E.Der:
    """`call` of ``der(x)`` for a name's reference ``x``."""
    cb.ctx.der_names.add(arg.name)
    return E.Der(arg)


#: the children's sources of a call of one argument, written out by `call_args_form`
_ONE_ARGUMENT = re.compile(r"\[(x[0-9]+)\]")


def call_form(c: list) -> str | None:
    """`call` as an expression over its children's sources (`parse_traces`): `der_of_ref`
    for ``der`` of a name's reference (the arguments' list a value of the trace, or written
    out with one item), else the call of `call`."""
    if len(c) != 3 or not is_name(c[0]) or not is_name(c[1]):
        return None
    name, lpar, args = c
    one = _ONE_ARGUMENT.fullmatch(args)
    if one is not None:                 # the list written out: its one item
        arg = one.group(1)
        return (f"(N_der_of_ref(cb, {arg}) if {name}[1] == 'der' and type({arg}) is N_Ref "
                f"else f_call(cb, [{name}, {lpar}, [{arg}]]))")
    if not is_name(args):
        return None
    return (f"(N_der_of_ref(cb, {args}[0]) if {name}[1] == 'der' and len({args}) == 1 and "
            f"type({args}[0]) is N_Ref else f_call(cb, [{name}, {lpar}, {args}]))")


#: Forms of the callbacks that only rearrange their children, or build their usual value with
#: a function of their own (`parse_traces.compile_trace`), and the names those forms use.
INLINE_RULES = {"call_args": call_args_form, "call": call_form}
INLINE_NAMES = {"N_der_of_ref": der_of_ref, "N_Ref": E.Ref}

#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(named_arg, call_args, initial_call, call, call_subscripted)


__all__ = ["BUILTIN_PARAMETERS", "INLINE_NAMES", "INLINE_RULES", "RULES", "boolean_form",
           "by_position", "der_of_ref", "message_strings", "refuse_string_calls",
           "string_values"]
