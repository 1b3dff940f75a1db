"""The one annotation the importers read: ``experiment(StartTime, StopTime, Tolerance,
Interval)`` of the class (Modelica 3.6 §18.4), which becomes the FMU's DefaultExperiment
(docs/importers.md, "Annotations"; docs/fmi-mapping.md). The grammar skips annotations as
balanced token soup; this module reads the text of the class annotation again.

Values must be number literals (with an optional sign), as the flat output of OpenModelica and
Base Modelica write them; other arguments of ``experiment`` (tool-specific ones such as
``__Dymola_Algorithm``) and every other annotation are ignored.
"""

from __future__ import annotations

import math
import re

from ..ir import EXPERIMENT_KEYS
from . import values

_SKIP = r"(?:\s+|//[^\n]*|/\*[\s\S]*?\*/)*"
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_ANNOTATION = re.compile(r"annotation" + _SKIP + r"\(")
_EXPERIMENT = re.compile(_SKIP + r"experiment" + _SKIP + r"\(")
_ARG = re.compile(_SKIP + r"([A-Za-z_$][A-Za-z0-9_$]*)" + _SKIP + r"=" + _SKIP)
_NUMBER = re.compile(r"([+-]?)" + _SKIP + r"(\d+(?:\.\d*)?(?:[eE][+\-]?\d+)?)")


def _skip_end(skip: re.Pattern[str], text: str, pos: int, end: int | None = None) -> int:
    """The end of the blanks and comments that ``skip`` (a `_SKIP` pattern) reads at ``pos``
    (before ``end``): the pattern is starred, so it matches, the empty string at least."""
    m = skip.match(text, pos, len(text) if end is None else end)
    assert m is not None
    return m.end()


def _code(text: str, start: int, end: int):
    """``(offset, character)`` of ``text[start:end]`` outside strings and comments."""
    skip = re.compile(_SKIP)
    i = start
    while i < end:
        ch = text[i]
        if ch == '"':
            m = _STRING.match(text, i)
            i = m.end() if m else end
        elif text.startswith("//", i) or text.startswith("/*", i):
            i = max(_skip_end(skip, text, i), i + 1)
        else:
            yield i, ch
            i += 1


def _close(text: str, pos: int) -> int:
    """Offset of the parenthesis closing the one opened just before ``pos``, or -1."""
    depth = 1
    for i, ch in _code(text, pos, len(text)):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_args(text: str, start: int, end: int) -> list[int]:
    """Start offsets of the comma-separated arguments between ``start`` and ``end``."""
    starts = [start]
    depth = 0
    for i, ch in _code(text, start, end):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            starts.append(i + 1)
    return starts


def read_experiment(text: str) -> tuple[tuple, list[tuple[int, str]]]:
    """The ``experiment`` arguments of an annotation's text (``annotation(...)``): the pairs
    ``((key, value), ...)`` in `EXPERIMENT_KEYS` order, and the problems ``[(offset in
    text, message)]``: a value that is not a number literal, given twice, not finite,
    a stop time not after the start time, a tolerance outside (0, 1), an interval <= 0."""
    outer = _ANNOTATION.match(text)
    if outer is None:
        return (), []
    outer_end = _close(text, outer.end())
    if outer_end < 0:
        return (), []
    for a in _split_args(text, outer.end(), outer_end):
        m = _EXPERIMENT.match(text, a)
        if m is not None:
            break
    else:
        return (), []
    end = _close(text, m.end())
    if end < 0:
        return (), []
    found: dict[str, float] = {}
    where: dict[str, int] = {}
    problems: list[tuple[int, str]] = []
    arg_starts = _split_args(text, m.end(), end)
    for k, a in enumerate(arg_starts):
        a_end = arg_starts[k + 1] - 1 if k + 1 < len(arg_starts) else end
        am = _ARG.match(text, a, a_end)
        if am is None or am.group(1) not in EXPERIMENT_KEYS:
            continue
        key = am.group(1)
        nm = _NUMBER.match(text, am.end(), a_end)
        if nm is None or _skip_end(re.compile(_SKIP), text, nm.end(), a_end) != a_end:
            problems.append((am.start(1), f"experiment annotation: {key} must be a number "
                                          "literal"))
            continue
        if key in found:
            problems.append((am.start(1), f"experiment annotation: {key} is given twice"))
            continue
        try:
            v = float(values.literal(nm.group(2)))
        except values.ValueProblem as p:
            problems.append((nm.start(2), f"experiment annotation: {key}: {p}"))
            continue
        found[key] = -v if nm.group(1) == "-" else v
        where[key] = am.start(1)
    pairs, more = check_experiment(found, where)
    return pairs, problems + more


def check_experiment(found: dict, where: dict,
                     what: str = "experiment annotation") -> tuple[tuple, list]:
    """Validate experiment values ``{key: float}`` whose locations are ``where`` (any
    location objects): returns the valid pairs in `EXPERIMENT_KEYS` order and the problems
    ``[(location, message)]`` (`read_experiment`)."""
    found = dict(found)
    problems = []
    for key in list(found):
        if not math.isfinite(found[key]):
            problems.append((where[key], f"{what}: {key} = {found[key]!r} "
                                         "must be a finite number"))
            del found[key]
    for key, ok, rule in (("Tolerance", lambda v: 0.0 < v < 1.0, "must be in (0, 1)"),
                          ("Interval", lambda v: v > 0.0, "must be positive")):
        if key in found and not ok(found[key]):
            problems.append((where[key], f"{what}: {key} = {found[key]!r} "
                                         f"{rule}"))
            del found[key]
    start, stop = found.get("StartTime", 0.0), found.get("StopTime")
    if stop is not None and not stop > start:
        problems.append((where["StopTime"], f"{what}: StopTime = {stop!r} must "
                                            f"be after StartTime = {start!r}"))
    return tuple((k, found[k]) for k in EXPERIMENT_KEYS if k in found), problems


__all__ = ["read_experiment", "check_experiment"]
