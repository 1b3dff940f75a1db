"""Grammar callbacks of array expressions (issue 13, issue 27): array constructors and
concatenation, ranges, ``end``, subscripts, component paths through arrays and records, array
comprehensions and their iterators. They are kept as the nodes of module `arrays` and
scalarized by `lowering`; each marks the text as needing it (``ctx.extended``).
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

import re

from .. import expr as E
from . import arrays as A
from .callback_common import rule_table
from .expression_callbacks import BINOPS
from .syntax import NAME_PART_RE, normalize_name, unescape


def array_expr(cb, c):
    cb.ctx.extended = True
    if c[0][0] == "LBRACE":
        return A.ArrayCons(tuple(c[1:]), c[0][2])
    rows, row = [], []
    for x in c[1:]:
        if type(x) is tuple:             # the SEMI token between rows
            rows.append(tuple(row))
            row = []
        else:
            row.append(x)
    rows.append(tuple(row))
    return A.MatrixCons(tuple(rows), c[0][2])


def range_expr(cb, c):
    cb.ctx.extended = True
    if len(c) == 3:
        return A.Range(c[0], None, c[2], c[1][2])
    return A.Range(c[0], c[2], c[4], c[1][2])


def end_expr(cb, c):
    cb.ctx.extended = True
    return A.END


def end_offset(cb, c):
    cb.ctx.extended = True
    return E.BinOp(BINOPS[c[0][1]], A.END, c[1])


def range_to_end(cb, c):
    # [a, COLON, END] or [a, COLON, step, COLON]: ``a:end``, ``a:step:end``
    cb.ctx.extended = True
    step = c[2] if len(c) > 3 else None
    return A.Range(c[0], step, A.END, c[1][2])


def range_from_end(cb, c):
    # [COLON, b] or [COLON, step, COLON, b]: ``end:b``, ``end:step:b``
    cb.ctx.extended = True
    if len(c) == 2:
        return A.Range(A.END, None, c[1], c[0][2])
    return A.Range(A.END, c[1], c[3], c[0][2])


def array_subscripts(cb, c):
    return tuple(A.COLON if type(x) is tuple else x for x in c[1:])


def subscripted(cb, c):
    cb.ctx.extended = True
    tok = c[0]
    return A.Subscripted(normalize_name(tok[1]), c[1], tok[2])


def paren_subscripted(cb, c):
    # [LPAR, expression, subscripts]
    cb.ctx.extended = True
    return A.Indexed(c[1], c[2], c[0][2])


def path_ref(cb, c):
    # [NAME, subscripts, DOT_NAME, subscripts?, DOT_NAME, ...]: `a[i].b[1].c[j]`
    cb.ctx.extended = True
    steps = []
    for x in c[2:]:
        if type(x) is tuple and x and type(x[0]) is str:     # a DOT_NAME token
            for m in NAME_PART_RE.finditer(x[1], 1):
                plain, quoted, subs, _ = m.groups()
                part = plain if plain is not None else unescape(quoted)
                lits = () if not subs else tuple(
                    E.Const(int(n)) for n in re.sub(r"[ \t\[\]]", "", subs).split(","))
                steps.append([part, lits])
        else:                                                  # its subscripts
            steps[-1][1] = steps[-1][1] + x
    tok = c[0]
    return A.Path(normalize_name(tok[1]), c[1], tuple((f, s) for f, s in steps), tok[2])


def array_comprehension(cb, c):
    cb.ctx.extended = True
    return A.Comprehension(None, c[1], c[3], c[0][2])


def call_comprehension(cb, c):
    cb.ctx.extended = True
    name = normalize_name(c[0][1])
    # array(e for i in r) is {e for i in r} (Modelica 3.6 §10.4.1)
    return A.Comprehension(None if name == "array" else name, c[2], c[4], c[0][2])


def for_index(cb, c):
    return (normalize_name(c[0][1]), c[2], c[0][2])


def for_indices(cb, c):
    return tuple(c)


#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(array_expr, range_expr, end_expr, end_offset, range_to_end, range_from_end,
                   array_subscripts, subscripted, paren_subscripted, path_ref, array_comprehension,
                   call_comprehension, for_index, for_indices)


__all__ = ["RULES"]
