"""Scalarization of the structured part of flat Modelica (issue 13): type aliases, enumerations,
records, String variables, arrays and for-equations are lowered to the scalar intermediate form
that `flat_modelica.build_model` already reads (docs/importers.md, "Types, records and
arrays").

`lower(sections, ctx)` runs only for texts that use one of these constructs
(`ParseContext.extended`, or a name that is not declared as such, e.g. the whole array ``x`` of
OpenModelica's scalarized ``x[1]``, ``x[2]``). It works in two passes:

1. declarations: every declaration is resolved through its type (alias chain, enumeration,
   record) and its dimensions, evaluated as parameter expressions, into scalar declarations
   named like OpenModelica's flat output (``x[2,1]``, ``r.f``, ``r[2].f``);
2. expressions: bindings, modifiers and equations are evaluated to array values (`arrays.Arr`)
   or record values (`Rec`) and split element by element into scalar equations, each keeping
   the location of its source equation. For-equations are unrolled (their ranges must be
   parameter expressions); if-equations whose condition is a constant after the unrolling
   (``if i == 1 then``) keep only the branch taken.

Errors (`LowerError`) are reported at the construct's ``file:line:col``: an index out of range,
a record field that does not exist, a for-range that is not a parameter expression, arrays of
different sizes.

The constructs are lowered by their own modules over one shared `lower_context.LowerContext`
(its docstring draws the layers): `lower_types`, `lower_declarations`, `lower_constants`,
`lower_names`, `lower_subscripts`, `lower_records`, `lower_array_calls`, `lower_expressions`,
`lower_equations`, with `array_functions` and `algorithm_lowering`; this module runs the two
passes.
"""

from __future__ import annotations

from .. import expr as E
from . import types as T
from .algorithm_lowering import lower_statements
from .array_functions import tuple_values
from .lower_array_calls import iterate
from .lower_constants import const
from .lower_context import LowerContext, LowerParts
from .lower_declarations import (declaration_shape, emit_declaration, fixed_discrete, is_param,
                                 plan_declaration)
from .lower_equations import equate, items, stmt
from .lower_expressions import scalar, value, value_of
from .lower_types import define, literal_arrays, scalarized_shapes
from .lowered import LowerError, Rec
from .syntax import Decl

#: the entry points the parts of the lowering call up to (`lower_context` docstring)
PARTS = LowerParts(value=value, value_of=value_of, scalar=scalar, const=const, equate=equate,
                   stmt=stmt, shape=declaration_shape, iterate=iterate,
                   lower_statements=lower_statements, tuple_values=tuple_values)


def new_context(ctx) -> LowerContext:
    """A lowering of the file of the parse context ``ctx``, with nothing declared yet."""
    return LowerContext(ctx=ctx, parts=PARTS)


def run(lw: LowerContext, sections: list) -> list:
    """The two passes of the module docstring over the sections of one file."""
    for sec in sections:
        if sec[0] == "decls":
            for d in sec[1]:
                if isinstance(d, T.TYPE_DEFS):
                    define(lw, d)
    for name, e in lw.ctx.inline_types.items():
        lw.types[name] = e
        lw.enums.append(e)
    literal_arrays([sec[1] for sec in sections if sec[0] == "decls"])
    decls = [d for sec in sections if sec[0] == "decls" for d in sec[1] if type(d) is Decl]
    for d in decls:
        if not d.dims and d.binding is not None and (is_param(d.prefixes, d.explicit)
                                                     or fixed_discrete(lw, d)):
            lw.params[d.name] = d.binding
    planned = []
    for d in decls:
        try:
            planned.append((d, plan_declaration(lw, d, d.name, d.type_name, d.dims,
                                                d.modifiers, d.binding, d.prefixes)))
        except LowerError as err:
            lw.report(err, d.loc)
    scalarized_shapes(lw)
    out_decls = {}
    for d, plan in planned:
        out: list = []
        try:
            emit_declaration(lw, plan, d, out)
        except LowerError as err:
            lw.report(err, d.loc)
        out_decls[id(d)] = out
    result: list[tuple] = []
    for sec in sections:
        tag = sec[0]
        if tag == "decls":
            result.append(("decls", [x for d in sec[1] if type(d) is Decl
                                     for x in out_decls.get(id(d), ())]))
        elif tag in ("equations", "initial"):
            out = []
            items(lw, sec[1], {}, out)
            result.append((tag, out))
        elif tag in ("algorithm", "initial_algorithm"):
            result.append((tag, lower_statements(lw, sec[1], {}), sec[2]))
        else:
            result.append(sec)
    lw.ctx.enum_vars = lw.enum_vars
    for name in lw.resolved - lw.unresolved:
        lw.ctx.first_use.pop(name, None)
    return result


def lower_expression(e, ctx):
    """A standalone expression (no declarations) as a scalar; errors go to ``ctx``."""
    try:
        return scalar(new_context(ctx), e, {}, None)
    except LowerError as err:
        ctx.error(ctx.loc(1, 1) if err.where is None else ctx.where_loc(err.where),
                  err.message)
        return E.ZERO


def lower(sections: list, ctx) -> list:
    """Scalar sections of ``sections`` (module docstring)."""
    return run(new_context(ctx), sections)


__all__ = ["lower", "lower_expression", "new_context", "run", "PARTS", "LowerError", "Rec"]
