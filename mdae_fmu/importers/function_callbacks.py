"""Grammar callbacks of function definitions (issue 27): a definition's name, contents,
annotations and external clause are kept as a `functions.FunctionDef` in ``ctx.functions``
(resolved when the model is built, `functions.FunctionResolver`). Errors and calls inside a
definition are set aside with it: they count only if the function is called.
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from .callback_common import rule_table, scoped
from .functions import FunctionDef, annotation_text
from .syntax import normalize_name
from .types import record_from_constructor


def function_definition(cb, c):
    # [PURE|IMPURE?, FUNCTION, NAME, description?, contents..., NAME(end), SEMI]
    ctx = cb.ctx
    i = 0
    while c[i][0] != "FUNCTION":
        i += 1
    fun_tok, name_tok, end_tok = c[i], c[i + 1], c[-2]
    start, end = fun_tok[2], c[-1][2]
    contents = []
    for x in c[i + 2:-2]:
        if type(x) is list:
            contents.extend(x)
        elif type(x) is tuple:
            contents.append(x)
    anns = [annotation_text(ctx.text, p) for p in ctx.annotations if start <= p < end]
    ctx.annotations = [p for p in ctx.annotations if not start <= p < end]
    # names used inside the function are its own, not the model's
    uses = scoped(ctx, start, end, list(ctx.first_use))
    # errors inside the definition count only if the function is called (a flat file
    # declares library functions it never calls, e.g. with array arguments)
    first, last = ctx.line_col(start), ctx.line_col(end)
    inside = [e for e in ctx.errors if first <= (e[0], e[1]) <= last]
    for e in inside:
        ctx.withdraw(e)
    calls = [c for c in ctx.calls if start <= c[1] < end]
    if calls:
        ctx.calls = [c for c in ctx.calls if not start <= c[1] < end]
    if all(type(x) is tuple and x and x[0] == "decls" for x in contents):
        # OpenModelica's "Automatically generated record constructor for R" declares the
        # record R (issue 13 item 2, `types.record_from_constructor`)
        rec = record_from_constructor(normalize_name(name_tok[1]), name_tok[2],
                                      [d for x in contents for d in x[1]])
        if rec is not None:
            for e in inside:
                ctx.errors.append(e)
            ctx.extended = True
            ctx.record_names.add(rec.name)
            return [rec]
    for x in contents:          # array variables (the i13a importer reads their dims)
        if type(x) is tuple and x and x[0] == "decls":
            for d in x[1]:
                if getattr(d, "dims", ()):
                    e = ctx.error(d.loc, f"array subscript of '{d.name}[...]' in a "
                                         "function: array variables in functions are "
                                         "not supported")
                    ctx.withdraw(e)
                    inside.append(e)
    ctx.functions.append(
        FunctionDef(
            name=normalize_name(name_tok[1]),
            loc=ctx.tok_loc(name_tok),
            end_name=normalize_name(end_tok[1]),
            end_loc=ctx.tok_loc(end_tok),
            contents=contents,
            annotations=anns,
            errors=inside,
            calls=calls,
            uses=uses,
            partial=any(x[0] == "PARTIAL" for x in c[:i]),
        )
    )
    return []


def external_section(cb, c):
    lang = None
    call = None
    for x in c[1:]:
        if type(x) is tuple and x and x[0] == "STRING":
            lang = x[1][1:-1]
        elif type(x) is tuple and x and x[0] == "extcall":
            call = x
    return ("external", lang, call, cb.ctx.tok_loc(c[0]))


def external_call(cb, c):
    toks = [x for x in c if type(x) is tuple and x[0] == "NAME"]
    args = next((x for x in c if type(x) is list), [])
    if len(toks) == 2:
        return ("extcall", normalize_name(toks[0][1]), normalize_name(toks[1][1]), args)
    return ("extcall", None, normalize_name(toks[0][1]), args)


#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(function_definition, external_section, external_call)


__all__ = ["RULES"]
