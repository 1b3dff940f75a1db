"""Grammar callbacks of expressions (issue 27): literals, references, operators, parentheses,
if-expressions and tuples. Constant sub-expressions are evaluated as they are built (module
`values`); calls are `call_callbacks`', array expressions `array_callbacks`'.
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .. import expr as E
from . import values
from .callback_common import rule_table
from .functions import Tuple
from .parse_traces import is_name
from .syntax import ENUM_PREFIXES, normalize_name, unescape

if TYPE_CHECKING:
    from .parse_context import ParseContext


#: The binary operators by their token text (one string object per operator).
BINOPS = {op: op for op in E.BINARY_OPS}
_TRUE, _FALSE = E.Const(True), E.Const(False)
_UNOPS = {"-": "-", "+": "+", ".-": "-", ".+": "+"}


def constant_value(ctx: ParseContext, e: Any) -> Any:
    """The value of a literal or of a constant sub-expression already evaluated
    (`values.fold`), None for anything else (booleans included)."""
    t = type(e)
    if t is E.Const:
        v = e.value
    elif t is E.BinOp or t is E.UnOp or t is E.Call:
        hit = ctx.folded.get(id(e))
        if hit is None or hit[0] is not e:
            return None
        v = hit[1]
    else:
        return None
    return None if type(v) is bool else v


def fold(ctx: ParseContext, node: Any, where: int, compute: Callable[[], Any]) -> Any:
    """Evaluate a constant sub-expression (module `values`): remember its value, or record
    the error at ``where`` (an offset) when it has no finite double value."""
    try:
        v = compute()
    except values.ValueProblem as p:
        ctx.error(where, f"{p} (in a constant expression)")
        return node
    if v is not None:
        ctx.folded[id(node)] = (node, v)
    return node


def edges_as_pre(cond: E.Expr) -> E.Expr:
    """The condition of an if-expression with ``edge(b)`` written ``b and not pre(b)`` and
    ``change(b)`` written ``b <> pre(b)`` (Modelica 3.6 §3.7.5), for a variable ``b``: the
    value of such an if-expression is a plain Boolean function of ``b`` and ``pre(b)``
    (OpenModelica's BouncingBallExamples: ``v_new = if edge(impact) then -e*pre(v) else 0``
    in a when-clause, which the code generator could not build)."""
    found = [n for n in E.walk(cond) if type(n) is E.Call and n.func in ("edge", "change")
             and len(n.args) == 1 and type(n.args[0]) is E.Ref]
    if not found:
        return cond
    mapping: dict[E.Expr, E.Expr] = {
        n: E.BinOp("and", n.args[0], E.UnOp("not", E.Call("pre", n.args)))
        if n.func == "edge" else E.BinOp("<>", n.args[0], E.Call("pre", n.args))
        for n in found}
    return E.substitute(cond, mapping)


def number(cb, c):
    text = c[0][1]
    k = cb.ctx.consts.get(text)
    if k is None:
        try:
            k = E.Const(values.literal(text))
        except values.ValueProblem as p:
            cb.ctx.error(c[0][2], str(p))
            return E.ZERO
        cb.ctx.consts[text] = k
    return k


def string(cb, c):
    return E.Str(unescape(c[0][1][1:-1]))


def true(cb, c):
    return _TRUE                    # (immutable: one node for every `true`)


def false(cb, c):
    return _FALSE


def ref(cb, c):
    tok = c[0]
    r = cb.ctx.refs.get(tok[1])
    if r is not None:
        return r
    return _new_ref(cb, tok)


def _new_ref(cb, tok):
    ctx = cb.ctx
    raw = tok[1]
    name = raw
    if "'" in raw or " " in raw or "\t" in raw:     # (`normalize_name`'s own test)
        name = normalize_name(raw)
    name = ctx.words.get(name, name)        # the declaration's copy (`component_clause`)
    r = E.Ref(name)
    if name.startswith(ENUM_PREFIXES):
        ctx.enum_uses[name] = ctx.enum_uses.get(name, 0) + 1
    else:
        ctx.refs[raw] = r
    first_use = ctx.first_use
    if ctx.whole_file:          # located only if the name turns out to be undefined
        first_use.setdefault(name, tok[2])
    elif name not in first_use:
        loc = ctx.tok_loc(tok)
        first_use[name] = (loc.line, loc.col, ctx.note, ctx.shown_source(loc))
    return r


def binop(cb, c):
    left, op_tok, right = c
    node = E.BinOp(BINOPS[op_tok[1]], left, right)
    tr = type(right)
    if tr is E.Ref or tr is E.Der:          # the usual case: nothing to evaluate
        return node
    ctx = cb.ctx
    b = constant_value(ctx, right)
    if b is None:
        return node
    tl = type(left)
    a = None if tl is E.Ref or tl is E.Der else constant_value(ctx, left)
    if a is not None:
        return fold(ctx, node, op_tok[2], lambda: values.binary(node.op, a, b))
    if b == 0 and node.op in ("/", "./"):
        ctx.error(op_tok[2], "division by zero (the divisor is the constant 0)")
    return node


def unop(cb, c):
    op = _UNOPS[c[0][1]]
    arg = c[1]
    if op == "-" and type(arg) is E.Const and type(arg.value) is not bool:
        return E.Const(-arg.value)
    node = E.UnOp(op, arg)
    v = constant_value(cb.ctx, arg)
    if v is not None:
        cb.ctx.folded[id(node)] = (node, -v if op == "-" else v)
    return node


def binop_signed(cb, c):
    """``a - -b``, ``a + -b`` (a sign right after a binary sign: outside Modelica 3.6
    §B.2.7, printed by OpenModelica, e.g. ``Celsius - -273.15``) read as ``a - (-b)``."""
    left, op_tok, sign_tok, right = c
    return binop(cb, [left, op_tok, unop(cb, [sign_tok, right])])


def pow_signed(cb, c):
    """``a ^ -b`` (``^`` then a unary sign, which Modelica 3.6 §B.2.7 does not allow but
    OpenModelica prints, e.g. ``n ^ -2.0``) read as ``a ^ (-b)``."""
    left, op_tok, sign_tok, right = c
    return binop(cb, [left, op_tok, unop(cb, [sign_tok, right])])


def not_expr(cb, c):
    return E.UnOp("not", c[0])


def and_expr(cb, c):
    return E.BinOp("and", c[0], c[1])


def or_expr(cb, c):
    return E.BinOp("or", c[0], c[1])


def paren(cb, c):
    return c[1]


def if_expr(cb, c):
    # [IF, cond, then, (ELSEIF, cond, then)*, ELSE, else]
    items = c[1:-2]
    result = c[-1]
    for j in range(len(items) - 2, -1, -3):
        result = E.If(edges_as_pre(items[j]), items[j + 1], result)
    return result


def empty_slot(cb, c):
    return None                     # an output a tuple does not assign


def tuple_expr(cb, c):
    entry = cb.ctx.error(cb.ctx.tok_loc(c[0]), "tuple expressions '(a, b, ...)' are "
                                               "only allowed left of '=' or ':='")
    return Tuple(items=c[1:], error=entry)


#: Rules whose value for one token is the entry of the token's text in a dict of the parse
#: context when there is one (`number`: ``ctx.consts``, `ref`: ``ctx.refs``), which a parse
#: trace may read without calling the rule (`parse_traces.compile_trace`).
CACHED_RULES = {"number": "consts", "ref": "refs"}


def paren_form(c: list) -> str | None:
    """`paren` as an expression over its children's sources (`parse_traces`)."""
    return c[1]


def binop_form(c: list) -> str | None:
    """`binop` as an expression over its children's sources (`parse_traces`): its node, built
    in place, when the right operand is a name's reference or a derivative (nothing to
    evaluate or check: `binop`'s first return) or an operation or call without a constant
    value (`constant_value` None: `binop`'s second), else the call of `binop`."""
    if len(c) != 3 or not all(is_name(x) for x in c):
        return None
    left, op, right = c
    return (f"(N_BinOp(N_BINOPS[{op}[1]], {left}, {right}) if type({right}) is N_Ref "
            f"or type({right}) is N_Der or type({right}) in N_FOLDABLE and id({right}) not in "
            f"cb.ctx.folded else f_binop(cb, [{left}, {op}, {right}]))")


#: Forms of the callbacks that only rearrange their children, or build their usual value
#: without a call (`parse_traces.compile_trace`), and the names those forms use.
INLINE_RULES = {"paren": paren_form, "binop": binop_form}
INLINE_NAMES = {"N_BinOp": E.BinOp, "N_BINOPS": BINOPS, "N_Ref": E.Ref, "N_Der": E.Der,
                "N_FOLDABLE": frozenset((E.BinOp, E.UnOp, E.Call))}

#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(number, string, true, false, ref, binop, unop, binop_signed, pow_signed,
                   not_expr, and_expr, or_expr, paren, if_expr, empty_slot, tuple_expr)


__all__ = ["BINOPS", "CACHED_RULES", "INLINE_NAMES", "INLINE_RULES", "RULES", "constant_value",
           "edges_as_pre", "fold"]
