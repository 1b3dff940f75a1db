"""Grammar callbacks of declarations (issue 27): component clauses (``parameter Real x(start =
1) = 2 "text";``), their modifications, bindings and descriptions. A clause gives one `Decl` per
declared name; the small strings every declaration repeats (type, prefix and modifier names) and
the declared names, which the references use, are shared through ``ctx.words``.
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import expr as E
from . import arrays as A
from . import types as T
from .call_callbacks import string_values
from .callback_common import rule_table, depth_limited, left_list
from .declaration_lines import compile_declaration
from .depth import MAX_DEPTH
from .parse_traces import is_name
from .syntax import Decl, Description, normalize_name, unescape

if TYPE_CHECKING:
    from .parse_context import ParseContext

_BUILTIN_TYPES = frozenset(("Real", "Integer", "Boolean"))


def modifier_list(ctx: ParseContext, args: Any, long_clause: bool) -> list:
    """[(name, value, where, nested), ...] of a class modification's arguments, each already in
    that form (`argument`); a nested modification keeps its own arguments as the value
    (records: ``r(x(start = 1))``). In a clause long enough to nest too deeply
    (``long_clause``) every value is bounded (`callback_common.depth_limited`), nested ones
    included."""
    if not long_clause:
        return args if args is not None else []
    out = []
    for name, value, where, nested in args or ():
        if type(value) is T.Nested:
            binding = value.binding
            if binding is not None:
                binding = depth_limited(ctx, binding, where)
            value = T.Nested(modifier_list(ctx, value.modifiers, True), binding)
        elif value is not None:
            value = depth_limited(ctx, value, where)
        out.append((name, value, where, nested))
    return out


def elements(cb, c):
    # declarations in a row, one flat ("decls", [Decl, ...]) section
    if len(c) == 1:
        return ("decls", c[0])
    c[0][1].extend(c[1])
    return c[0]


def description(cb, c):
    if len(c) == 1:                 # one string: the usual description
        text = unescape(c[0][1][1:-1])
    else:
        out = []
        for t in c:
            if t[0] == "STRING":
                out.append(unescape(t[1][1:-1]))
            elif t[1] != "+":
                cb.ctx.error(cb.ctx.tok_loc(t), "descriptions can only be joined with '+'")
        text = "".join(out)
    return Description(text=cb.ctx.words.setdefault(text, text))     # often repeated: shared


def argument(cb, c):
    # [EACH?, FINAL?, NAME, modification?, description?] -> (name, value, where, nested), the
    # form of `modifier_list` (no record per argument: one per modifier of most declarations)
    k = 0
    while c[k][0] != "NAME":        # EACH, FINAL
        k += 1
    name_tok = c[k]
    mod = c[k + 1] if k + 1 < len(c) and type(c[k + 1]) is tuple else None
    name = normalize_name(name_tok[1])
    name = cb.ctx.words.setdefault(name, name)
    if mod is None:
        return (name, None, name_tok[2], False)
    args, value = mod
    if args is None:
        return (name, value, name_tok[2], False)
    if args and "." not in name:
        cb.ctx.extended = True   # maybe a record field: `lowering` decides
        value = T.Nested(args, value)
    return (name, value, name_tok[2], True)


def class_modification(cb, c):
    return c[1] if len(c) > 1 else []


def modification(cb, c):
    # [class_modification] | [class_modification, EQ, expr] | [EQ or ASSIGN, expr] -> the pair
    # (arguments or None, binding or None), which only `argument` and `component_decl` read (a
    # tuple: no record for the two or three modifications of most declarations)
    if len(c) == 1:
        return (c[0], None)
    first = c[0]
    return (first if type(first) is list else None, c[-1])


def component_decl(cb, c):
    # [decl_name, modification?, description?, annotation?] -> (decl_name, modification or
    # None, description text or None)
    mod = None
    desc = None
    for x in c[1:]:
        if type(x) is tuple:
            mod = x
        elif type(x) is Description:
            desc = x.text
    return (c[0], mod, desc)


def component_clause(cb, c):
    # [prefix..., type NAME, decls, SEMI]; small strings repeated in every declaration
    # (type, prefix and modifier names) and the declared names, which the references
    # use, are shared through `words`
    ctx = cb.ctx
    words = ctx.words
    i = 0
    if c[0][0] == "NAME":           # no prefix: most declarations of a flat model
        prefixes: tuple = ()
    else:
        found = []
        while c[i][0] != "NAME":
            found.append((words.setdefault(c[i][1], c[i][1]), c[i][2]))
            i += 1
        prefixes = tuple(found)
    type_tok = c[i]
    type_name = normalize_name(type_tok[1])
    type_name = words.setdefault(type_name, type_name)
    if type_name not in _BUILTIN_TYPES:       # String, alias, enumeration, record
        ctx.extended = True
    long_clause = c[-1][2] + 1 - type_tok[2] > 2 * MAX_DEPTH
    after = c[i + 1]
    type_dims = after if type(after) is tuple and after and after[0] != "NAME" and \
        type(after[0]) is not str else ()
    if type_name[-1] == "]":        # `Real[3] x`: the literal subscripts are in the token
        k = type_name.rfind("[")
        type_dims = tuple(E.Const(int(n)) for n in type_name[k + 1:-1].split(",")) + \
            type_dims
        type_name = type_name[:k]
        ctx.extended = True
    type_loc = type_tok[2]
    decls = []
    for name_tok, mod, desc in c[-2]:
        dims = type_dims
        if type(name_tok) is A.Subscripted:     # `Real x[3]`
            dims = name_tok.subs + type_dims
            name_tok = ("NAME", name_tok.name, name_tok.where)
        where = name_tok[2]
        modifiers: Any = ()
        binding = None
        if mod is not None:
            args, binding = mod
            if long_clause and binding is not None:
                binding = depth_limited(ctx, binding, where)
            if args:                # (`argument` built them in their final form)
                modifiers = modifier_list(ctx, args, True) if long_clause else args
        name = normalize_name(name_tok[1])      # one copy, shared with its references
        if type_name == "String":
            ctx.string_names.add(name)
            if binding is not None and ctx.string_calls:
                string_values(ctx, [binding])
        decls.append(Decl(name=words.setdefault(name, name), loc=where, type_name=type_name,
                          type_loc=type_loc, prefixes=prefixes, modifiers=modifiers,
                          binding=binding, description=desc, dims=dims))
    return decls


def array_type_clause(cb, c):
    # `Real[3] x;`: the type's dimensions come before the declaration's own
    cb.ctx.extended = True
    return component_clause(cb, c)


def class_modification_form(c: list) -> str | None:
    """`class_modification` as an expression over its children's sources (`parse_traces`)."""
    return c[1] if len(c) > 1 else "[]"


def modification_form(c: list) -> str | None:
    """`modification` as an expression over its children's sources (`parse_traces`): a token
    first child (``=``, ``:=``) is no argument list, a list written out is one."""
    if len(c) == 1:
        return f"({c[0]}, None)"
    first = c[0]
    if first.startswith("["):
        return f"({first}, {c[-1]})"
    if first.startswith("t"):
        return f"(None, {c[-1]})"
    if is_name(first):
        return f"({first} if type({first}) is list else None, {c[-1]})"
    return None


#: Forms of the callbacks that only rearrange their children, which a parse trace may
#: evaluate instead of calling them (`parse_traces.compile_trace`).
INLINE_RULES = {"class_modification": class_modification_form,
                "modification": modification_form}

#: Rules whose lines of a known shape have their own compiler (`declaration_lines`), which
#: `fast_parser` uses instead of the line's parse trace when it accepts the record.
LINE_RULES = {"element": compile_declaration}

#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(elements, description, argument, class_modification, modification,
                   component_decl, component_clause, array_type_clause, decls=left_list,
                   arguments=left_list)


__all__ = ["INLINE_RULES", "LINE_RULES", "RULES", "modifier_list"]
