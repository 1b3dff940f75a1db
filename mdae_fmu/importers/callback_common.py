"""What the grammar callbacks of every construct share (issue 27): the table of a construct's
callbacks (`rule_table`), and the few operations on the parse context
(`parse_context.ParseContext`) that several constructs use: where the equation or statement of a
token starts, the depth bound of an expression, the names of a scope, and the left-recursive
lists of the grammar.

The callbacks are split by construct into `expression_callbacks`, `call_callbacks`,
`array_callbacks`, `equation_callbacks`, `statement_callbacks`, `declaration_callbacks`,
`class_callbacks`, `annotation_callbacks` and `function_callbacks`. Each callback is a function
``rule(cb, c)`` of the callbacks object ``cb`` and the rule's children ``c``; ``cb.ctx``, the
parse context of the parse under way, is the one state they share. Each module lists its
callbacks in ``RULES``, and `flat_modelica` makes them the methods of the one object, with an
attribute per grammar rule, that the parsers call (a plain method call per rule: the callbacks
run once per reduction, issue 29).
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Any, Callable

from .. import expr as E
from .depth import MAX_DEPTH, limited

if TYPE_CHECKING:
    from .parse_context import ParseContext

_SKIP_RE = re.compile(r"(?:\s+|//[^\n]*|/\*[\s\S]*?\*/)*")


def rule_table(*callbacks: Callable[..., Any], **aliases: Callable[..., Any]) -> dict:
    """``{rule name: callback}`` of a construct's callbacks, each named after its rule, plus
    the ``aliases`` (another rule read by the same callback)."""
    table = {f.__name__: f for f in callbacks}
    table.update(aliases)
    return table


def equation_start(ctx: ParseContext, tok: tuple) -> int:
    """Offset of the start of the equation (or statement) containing ``tok``: the first token
    after the last ``;``, ``then``, ``else`` or ``equation`` before it. Equations are reduced in
    source order, so the terminators before that one are dropped (64 or more at a time)."""
    return start_before(ctx, tok[2])


def start_before(ctx: ParseContext, pos: int) -> int:
    """`equation_start` of the token at offset ``pos``."""
    ends = ctx.term_ends
    i = bisect.bisect_right(ends, pos) - 1
    if i < 0:
        return pos
    end = ends[i]
    if i >= 64:                         # (dropped in blocks: a shorter list to move)
        del ends[:i]
    between = ctx.text[end:pos]
    if "/" not in between:              # no comment (the usual case): only white space
        return pos - len(between.lstrip())
    skipped = _SKIP_RE.match(ctx.text, end)
    assert skipped is not None          # a starred pattern: matches the empty string
    start = skipped.end()
    return pos if start > pos else start


def depth_limited(ctx: ParseContext, e: Any, where: Any) -> Any:
    """``e`` within `depth.MAX_DEPTH` (long sums rebalanced), or an error at ``where``."""
    out = limited(e)
    if out is None:
        ctx.error(where, f"expression nested too deeply (more than {MAX_DEPTH} levels)")
        return E.ZERO
    return out


def scoped(ctx: ParseContext, start: int, end: int, names: Any) -> dict:
    """Names first used between offsets ``start`` and ``end`` that belong to that scope (a
    loop's variables, a function's variables) are not the model's: forget their first use, and
    their cached references so that a later use in the model is recorded. Returns those first
    uses, ``{name: offset}``."""
    inner = {n: ctx.first_use[n] for n in names if type(ctx.first_use.get(n)) is int
             and start <= ctx.first_use[n] < end}
    for n in inner:
        del ctx.first_use[n]
    if inner:
        for raw in [k for k, r in ctx.refs.items() if type(r) is E.Ref and r.name in inner]:
            del ctx.refs[raw]
    return inner


def left_list(cb: Any, c: list) -> list:
    """The callback of a left-recursive list rule (``xs: x | xs x``), built in place: [x] or
    [xs, x]."""
    if len(c) == 1:
        return [c[0]]
    c[0].append(c[-1])
    return c[0]


__all__ = ["depth_limited", "equation_start", "left_list", "rule_table", "scoped",
           "start_before"]
