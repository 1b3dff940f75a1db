"""The syntax tree of a flat Modelica / Base Modelica text: the vocabulary shared by the parser
(`flat_modelica`'s grammar callbacks, `fast_parser`) and the lowering (`lowering`, `functions`,
`algorithms`, `xml_eqlist`).

Expressions are `mdae_fmu.expr` nodes (the callbacks build them while parsing); the nodes here
are what a declaration, a statement-like call and the parts of a modification become. Every
node is a frozen dataclass with slots, built with keywords.

Locations ("where") are `SourceLoc`s or, for a whole Modelica file, offsets into its text:
`parse_context.ParseContext.where_loc` turns an offset into a `SourceLoc` when it is needed (an
int takes less memory than a `SourceLoc`, and most are never needed).

Equation items are tuples tagged by their first element::

    ("eq", lhs, rhs, where)        ("stmt", Stmt)
    ("if", [(cond, loc, items), ...], else_items | None, loc)
    ("when", [(cond, loc, items), ...], loc)

and class contents are sections, in source order::

    ("decls", [Decl, ...])  ("equations", items)  ("initial", items)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import expr as E
from ..diagnostics import SourceLoc
from ..records import quick_init

#: Prefixes of the built-in enumeration literals (`StateSelect.prefer`, `AssertionLevel.error`)
#: that references may name without a declaration.
ENUM_PREFIXES = ("StateSelect.", "AssertionLevel.")

_Q_ESCAPES = {"'": "'", '"': '"', "?": "?", "\\": "\\", "a": "\a", "b": "\b", "f": "\f",
              "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPE_RE = re.compile(r"\\(.)")
#: One part of a component reference: an IDENT or a Q-IDENT, its subscripts, the dot after it.
NAME_PART_RE = re.compile(
    r"(?:([A-Za-z_$][A-Za-z0-9_$]*)|'([^'\\\r\n]*(?:\\.[^'\\\r\n]*)*)')(\[[^\]]*\])?(\.|$)")


def unescape(body: str) -> str:
    """Decode the S-ESCAPE sequences of a string or quoted identifier (Modelica 3.6 §2.3.1)."""
    if "\\" not in body:
        return body
    return _ESCAPE_RE.sub(lambda m: _Q_ESCAPES[m.group(1)], body)


def normalize_name(raw: str) -> str:
    """The variable name of a component reference token: quotes removed (escapes decoded), parts
    joined by dots, blanks removed from subscripts: ``'a.b'[ 1]`` -> ``a.b[1]``."""
    if "'" not in raw and " " not in raw and "\t" not in raw:
        return raw
    parts = []
    pos = 0
    while pos < len(raw):
        m = NAME_PART_RE.match(raw, pos)
        if m is None:          # cannot happen for a NAME token; keep the text as it is
            return raw
        plain, quoted, subs, _ = m.groups()
        part = plain if plain is not None else unescape(quoted)
        if subs:
            part += re.sub(r"[ \t]", "", subs)
        parts.append(part)
        pos = m.end()
    return ".".join(parts)


def fold_strings(e: E.Expr) -> E.Expr:
    """``"a" + "b"`` -> ``"ab"`` (the messages of assert and terminate)."""
    if type(e) is E.BinOp and e.op == "+":
        left, right = fold_strings(e.left), fold_strings(e.right)
        if type(left) is E.Str and type(right) is E.Str:
            return E.Str(left.value + right.value)
        return E.BinOp("+", left, right)
    return e


@dataclass(frozen=True, slots=True)
class Stmt:
    """A ``reinit``/``assert``/``terminate``/``print`` call, valid only as a statement-like
    equation (or a statement of an algorithm section)."""
    func: str
    args: list
    named: dict                           # formal name -> Named
    loc: SourceLoc


@quick_init
@dataclass(frozen=True, slots=True)
class Decl:
    """One declared component before validation (`flat_modelica.build_model` turns it into a
    `Variable`)."""
    name: str
    loc: SourceLoc | int                  # a "where" (module docstring)
    type_name: str
    type_loc: SourceLoc | int
    prefixes: tuple                       # ((keyword, where), ...)
    modifiers: list | tuple               # [(name, value or None, where, nested), ...]
    binding: object = None
    description: str | None = None
    explicit: dict | None = None          # XML: variability/causality given explicitly
    dims: tuple = ()                      # array dimensions (expressions), scalarized later


@quick_init
@dataclass(frozen=True, slots=True)
class Named:
    """A named argument ``name = value`` of a call."""
    name: tuple             # the NAME token (type, text, offset)
    value: object


@quick_init
@dataclass(frozen=True, slots=True)
class Description:
    """A description string (its pieces joined)."""
    text: str


__all__ = ["ENUM_PREFIXES", "NAME_PART_RE", "Decl", "Description",
           "Named", "Stmt", "fold_strings", "normalize_name", "unescape"]
