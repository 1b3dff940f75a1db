"""Grammar callbacks of annotations (issue 27). The grammar skips an annotation's contents; its
callback records where it starts, for the readers that need its text (function annotations,
`functions`); the ``experiment`` annotation of the class is read here (module `annotations`).
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .annotations import read_experiment
from .callback_common import rule_table

if TYPE_CHECKING:
    from .parse_context import ParseContext


def class_annotation(ctx: ParseContext, c: list) -> None:
    """An ``annotation(...);`` clause (class element or among the equations): its
    ``experiment`` values (`annotations.read_experiment`) are the model's
    (`ParseContext.experiment`)."""
    start = c[0]
    if type(start) is not int or not ctx.whole_file:
        return
    pairs, problems = read_experiment(ctx.text[start:c[1][2]])
    for offset, message in problems:
        ctx.error(start + offset, message)
    if pairs:
        ctx.experiment = pairs


def annotation(cb, c):
    if cb.ctx.whole_file:
        cb.ctx.annotations.append(c[0][2])
    return c[0][2]                  # where it starts: `annotation_end` reads it again


def annotation_element(cb, c):
    class_annotation(cb.ctx, c)
    return []


#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(annotation, annotation_element)


__all__ = ["RULES", "class_annotation"]
