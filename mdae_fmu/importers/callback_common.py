"""What the grammar callbacks of every construct share (issue 27): the base of a construct's
callbacks (`CallbackPart`: its only state is the `flat_modelica.ParseContext` of the parse under
way), and the few operations on that context that several constructs use: where the equation or
statement of a token starts, the depth bound of an expression, the names of a scope, and the
left-recursive lists of the grammar.

The callbacks are split by construct into `expression_callbacks`, `call_callbacks`,
`array_callbacks`, `equation_callbacks`, `statement_callbacks`, `declaration_callbacks`,
`class_callbacks`, `annotation_callbacks` and `function_callbacks`; `flat_modelica` gathers them
into the one object, with an attribute per grammar rule, that the parsers call.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Any, Callable

from .. import expr as E
from .depth import MAX_DEPTH, limited

if TYPE_CHECKING:
    from .flat_modelica import ParseContext

_SKIP_RE = re.compile(r"(?:\s+|//[^\n]*|/\*[\s\S]*?\*/)*")


class CallbackPart:
    """The grammar callbacks of one construct: each public attribute is the callback of the
    grammar rule of its name (lark and `fast_parser` call it with the rule's children). ``ctx``
    is the parse context, set by the assembly for each parse (None between parses)."""

    ctx: ParseContext

    def rules(self) -> dict[str, Callable[[list], Any]]:
        """The rule callbacks of this part, by rule name."""
        return {name: getattr(self, name) for name in dir(self)
                if not name.startswith("_") and name not in ("ctx", "rules")}


def equation_start(ctx: ParseContext, tok: tuple) -> int:
    """Offset of the start of the equation (or statement) containing ``tok``: the first token
    after the last ``;``, ``then``, ``else`` or ``equation`` before it. Equations are reduced in
    source order, so the terminators before that one are dropped."""
    ends = ctx.term_ends
    pos = tok[2]
    i = bisect.bisect_right(ends, pos) - 1
    if i < 0:
        return pos
    skipped = _SKIP_RE.match(ctx.text, ends[i])
    assert skipped is not None          # a starred pattern: matches the empty string
    start = skipped.end()
    if i:
        del ends[:i]
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


def left_list(c: list) -> list:
    """A left-recursive list rule (``xs: x | xs x``), built in place: [x] or [xs, x]."""
    if len(c) == 1:
        return [c[0]]
    c[0].append(c[-1])
    return c[0]


__all__ = ["CallbackPart", "depth_limited", "equation_start", "left_list", "scoped"]
