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
from .depth import MAX_DEPTH
from .syntax import Argument, Decl, Description, Modification, normalize_name, unescape

if TYPE_CHECKING:
    from .flat_modelica import ParseContext

_BUILTIN_TYPES = frozenset(("Real", "Integer", "Boolean"))


def modifier_list(ctx: ParseContext, args: Any, long_clause: bool) -> list:
    """[(name, value, where, nested), ...] of a class modification's arguments; a nested
    modification keeps its own arguments as the value (records: ``r(x(start = 1))``)."""
    words = ctx.words
    out = []
    for a in args or ():
        m = a.mod
        name = normalize_name(a.name[1])
        value = None if m is None else m.binding
        if long_clause and value is not None:
            value = depth_limited(ctx, value, a.name[2])
        nested = m is not None and m.args is not None
        if nested and m.args and "." not in name:
            ctx.extended = True   # maybe a record field: `lowering` decides
            value = T.Nested(modifier_list(ctx, m.args, long_clause), value)
        out.append((words.setdefault(name, name), value, a.name[2], nested))
    return out


def elements(cb, c):
    # declarations in a row, one flat ("decls", [Decl, ...]) section
    if len(c) == 1:
        return ("decls", c[0])
    c[0][1].extend(c[1])
    return c[0]


def description(cb, c):
    out = []
    for t in c:
        if t[0] == "STRING":
            out.append(unescape(t[1][1:-1]))
        elif t[1] != "+":
            cb.ctx.error(cb.ctx.tok_loc(t), "descriptions can only be joined with '+'")
    text = "".join(out)             # often repeated: shared through `words`
    return Description(text=cb.ctx.words.setdefault(text, text))


def argument(cb, c):
    # [EACH?, FINAL?, NAME, modification?, description?]
    name_tok = None
    mod = None
    for x in c:
        if type(x) is tuple and x[0] == "NAME":
            name_tok = x
        elif type(x) is Modification:
            mod = x
    return Argument(name=name_tok, mod=mod)


def class_modification(cb, c):
    return c[1] if len(c) > 1 else []


def modification(cb, c):
    # [class_modification] | [class_modification, EQ, expr] | [EQ or ASSIGN, expr]
    args = c[0] if type(c[0]) is list else None
    binding = c[-1] if len(c) > 1 else None
    return Modification(args=args, binding=binding)


def component_decl(cb, c):
    mod = None
    desc = None
    for x in c[1:]:
        if type(x) is Modification:
            mod = x
        elif type(x) is Description:
            desc = x.text
    return (c[0], mod, desc)


def component_clause(cb, c):
    # [prefix..., type NAME, decls, SEMI]; small strings repeated in every declaration
    # (type, prefix and modifier names) and the declared names, which the references
    # use, are shared through `words`
    words = cb.ctx.words
    prefixes = []
    i = 0
    while c[i][0] != "NAME":
        prefixes.append((words.setdefault(c[i][1], c[i][1]), c[i][2]))
        i += 1
    type_tok = c[i]
    type_name = normalize_name(type_tok[1])
    type_name = words.setdefault(type_name, type_name)
    if type_name not in _BUILTIN_TYPES:       # String, alias, enumeration, record
        cb.ctx.extended = True
    decls = []
    long_clause = c[-1][2] + 1 - type_tok[2] > 2 * MAX_DEPTH
    prefixes = tuple(prefixes)
    type_dims = c[i + 1] if type(c[i + 1]) is tuple and c[i + 1] and \
        c[i + 1][0] != "NAME" and type(c[i + 1][0]) is not str else ()
    if type_name[-1] == "]":        # `Real[3] x`: the literal subscripts are in the token
        k = type_name.rfind("[")
        type_dims = tuple(E.Const(int(n)) for n in type_name[k + 1:-1].split(",")) + \
            type_dims
        type_name = type_name[:k]
        cb.ctx.extended = True
    for name_tok, mod, desc in c[-2]:
        dims = type_dims
        if type(name_tok) is A.Subscripted:     # `Real x[3]`
            dims = name_tok.subs + type_dims
            name_tok = ("NAME", name_tok.name, name_tok.where)
        where = name_tok[2]
        modifiers = ()
        binding = None
        if mod is not None:
            binding = mod.binding
            if long_clause and binding is not None:
                binding = depth_limited(cb.ctx, binding, where)
            if mod.args:
                modifiers = modifier_list(cb.ctx, mod.args, long_clause)
        name = normalize_name(name_tok[1])      # one copy, shared with its references
        if type_name == "String":
            cb.ctx.string_names.add(name)
            if binding is not None and cb.ctx.string_calls:
                string_values(cb.ctx, [binding])
        decls.append(Decl(name=words.setdefault(name, name), loc=where, type_name=type_name,
                          type_loc=type_tok[2], prefixes=prefixes, modifiers=modifiers,
                          binding=binding, description=desc, dims=dims))
    return decls


def array_type_clause(cb, c):
    # `Real[3] x;`: the type's dimensions come before the declaration's own
    cb.ctx.extended = True
    return component_clause(cb, c)


#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(elements, description, argument, class_modification, modification,
                   component_decl, component_clause, array_type_clause, decls=left_list,
                   arguments=left_list)


__all__ = ["RULES", "modifier_list"]
