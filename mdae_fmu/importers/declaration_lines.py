"""Declaration lines of a known shape built straight from the match of the shape (issue 29).

A parse trace (`parse_traces`) replays the callbacks of a line's first parse on every later
line of its shape: for a declaration such as ``Real chain.x[7](start = 0.7, fixed = true);``
that is `argument` per modifier, `component_decl`, `component_clause` and, for a
description, `description`, each a Python call that rebuilds, on every line, what only
depends on the shape: the type and modifier names, the prefixes, the layout of the `Decl`.
`compile_declaration` reads the record of such a first parse (the calls and their children)
and, when every declaration rule in it has one of the plain forms below, compiles a function
of the shape's match that builds the same `Decl` records directly: the names and texts that
cannot vary between the lines of the shape normalized once, the modifiers' tuples and the
`Decl` written out, and only the value rules of the record (`number`, `ref`, operators...)
still called, as the trace calls them.

What cannot vary between the lines of a shape: the shape's lines differ only in their runs of
ASCII digits (`fast_parser.Lexer.learn`), so a token whose text holds no digit has the same
text on every line, and whether a text holds a quote, a blank or a backslash (what
`normalize_name` and `unescape` act on) is the same on every line.

Plain forms (anything else keeps the trace): a `component_clause` (not `array_type_clause`)
of prefix keywords, a type ``Real``, ``Integer`` or ``Boolean`` (a type that sets
``ctx.extended`` or declares a String keeps the callbacks), and declarations, each a name
token (no subscripts after it, no annotation) with an optional modification and an optional
description of one string; a modification of arguments ``name = value`` or ``name`` (no
``each``/``final``, no nested modification, a name without digits) and an optional binding;
the line no longer than the clauses that `callback_common.depth_limited` bounds (checked per
line when a shape's line can be that long: such a line runs the trace).

The values equal the callbacks' (tests/importers/test_declaration_lines.py compares both on
varied declarations); the strings shared through ``ctx.words`` stay shared where it matters,
the declared name (its references reuse it): a text fixed by the shape is one object for the
whole shape instead (interned), and a description that varies from line to line is not looked
up there (each is a string of its own either way, but for repeats).
"""

from __future__ import annotations

import re
import sys
from dataclasses import fields
from types import FunctionType
from typing import Any

from .depth import MAX_DEPTH
from .parse_traces import LineTrace, Recorder, children
from .syntax import Decl, normalize_name, unescape

#: the types whose declaration `component_clause` reads without side effects
_PLAIN_TYPES = frozenset(("Real", "Integer", "Boolean"))
_PREFIXES = frozenset(("FINAL", "PARAMETER", "CONSTANT", "DISCRETE", "INPUT", "OUTPUT",
                       "FLOW", "STREAM", "INNER", "OUTER", "REPLACEABLE", "REDECLARE"))
#: value rules whose value is one object whatever their token (the Boolean literals)
_CONSTANT_RULES = frozenset(("true", "false"))
_DIGIT = re.compile("[0-9]")
_TOKEN = re.compile(r"\bt([0-9]+)\b")
_SLOT = re.compile(r"\bx([0-9]+)\b")
#: the fields of `Decl`, all set by a compiled line (`_clause`)
_DECL_FIELDS = tuple(f.name for f in fields(Decl))
_GROUP = re.compile(r"\bG\[([0-9]+)\]")
_GROUP_NAME = re.compile(r"\bG([0-9]+)\b")


class _Refused(Exception):
    """The record holds a form this module does not compile: the trace stays."""


def _fixed(text: str) -> bool:
    """``text``, a token's on the first line of a shape, is the same on every line of the
    shape: it holds no ASCII digit (module docstring)."""
    return _DIGIT.search(text) is None


def compile_declaration(record: Recorder, value: Any, kinds: tuple, texts: list,
                        trace: LineTrace, longest: int) -> LineTrace | None:
    """The function of a line's match (a `parse_traces.LineTrace`) that builds the value of
    rule ``element`` recorded in ``record`` (whose rule returned ``value``) for a line of the
    shape of terminal kinds ``kinds``, the first line's token texts being ``texts``; None when
    the record has a form that is not compiled (module docstring). ``trace`` is the shape's
    trace, run instead on a line longer than the clauses bounded by `depth.MAX_DEPTH`, which
    a line of ``longest`` characters at most may be.

    As in `parse_traces.compile_trace`, the source given to ``exec`` holds no input text:
    integers, kinds (identifiers, checked), callback names (identifiers, checked by the
    recorder) and generated names; the texts it uses are constants of its namespace."""
    try:
        return _compile(record, value, kinds, texts, trace, longest)
    except _Refused:
        return None


def _token(source: str, kinds: tuple, kind: str | None = None) -> int:
    """The index of the token that ``source`` names (``t<k>``), of kind ``kind`` if given."""
    if not re.fullmatch("t[0-9]+", source):
        raise _Refused
    k = int(source[1:])
    if kind is not None and kinds[k] != kind:
        raise _Refused
    return k


def _compile(record: Recorder, value: Any, kinds: tuple, texts: list, trace: LineTrace,
             longest: int) -> LineTrace:
    if record.failed or not record.ops or not all(k.isidentifier() for k in kinds):
        raise _Refused
    last = len(record.ops) - 1
    if record.ops[last][0] != "component_clause" or \
            record.slots.get(id(value)) != f"x{last}":
        raise _Refused
    owner = type(record.callbacks)
    cached: dict[str, str] = getattr(owner, "cached_rules", {})
    namespace: dict[str, Any] = {"Decl": Decl, "new": object.__new__, "trace": trace,
                                 "normalize_name": normalize_name, "unescape": unescape}
    # a `Decl` built through its slot descriptors, as `records.quick_init`'s ``__init__``
    # does, without the call and its keywords (one per declaration of the file)
    namespace.update({f"set_{f}": getattr(Decl, f).__set__ for f in _DECL_FIELDS})
    body: list[str] = []
    tables: set[str] = set()
    forms: dict[str, tuple] = {}            # the declaration rules' values, as forms

    def constant(text: str) -> str:
        name = f"K{len(namespace)}"
        namespace[name] = sys.intern(text)
        return name

    def real(source: str) -> str:
        # a value slot of a value rule (a form is no value: refused)
        if source in forms or not re.fullmatch("x[0-9]+", source):
            raise _Refused
        return source

    def whole(match: re.Match) -> str:
        k = int(match.group(1))
        return f"({kinds[k]!r}, G[{k}], S({k + 1}))"

    for k, (name, source) in enumerate(record.ops):
        slot = f"x{k}"
        parts = children(source)
        if name == "modification":
            if len(parts) == 2 and parts[0][:1] == "t":
                forms[slot] = ("mod", None, real(parts[1]))
            elif len(parts) in (1, 3) and forms.get(parts[0], ("",))[0] == "cm":
                if len(parts) == 3:
                    _token(parts[1], kinds)
                forms[slot] = ("mod", forms[parts[0]][1],
                               real(parts[2]) if len(parts) == 3 else None)
            else:
                raise _Refused
        elif name == "class_modification":
            # [LPAR] or [LPAR, [arguments...]] (the closing parenthesis is no child)
            _token(parts[0], kinds, "LPAR")
            if len(parts) == 1:
                args: list = []
            elif len(parts) == 2 and parts[1].startswith("["):
                args = [forms.get(p, ("",)) for p in children(parts[1])]
                if any(a[0] != "arg" for a in args):
                    raise _Refused
            else:
                raise _Refused
            forms[slot] = ("cm", args)
        elif name == "argument":
            n = _token(parts[0], kinds, "NAME")
            if not _fixed(texts[n]) or len(parts) > 2:
                raise _Refused
            binding = None
            if len(parts) == 2:
                mod = forms.get(parts[1], ("",))
                if mod[0] != "mod" or mod[1] is not None:
                    raise _Refused                  # a nested modification
                binding = mod[2]
            forms[slot] = ("arg", constant(normalize_name(texts[n])), n, binding)
        elif name == "description":
            if len(parts) != 1:
                raise _Refused                      # strings joined with '+'
            n = _token(parts[0], kinds, "STRING")
            text = texts[n]
            if _fixed(text):
                forms[slot] = ("desc", constant(unescape(text[1:-1])))
            elif "\\" in text:
                forms[slot] = ("desc", f"unescape(G[{n}][1:-1])")
            else:
                forms[slot] = ("desc", f"G[{n}][1:-1]")
        elif name == "component_decl":
            n = _token(parts[0], kinds, "NAME")
            modification: tuple | None = None
            description: tuple | None = None
            for p in parts[1:]:
                form = forms.get(p, ("",))
                if form[0] == "mod" and modification is None and description is None:
                    modification = form
                elif form[0] == "desc" and description is None:
                    description = form
                else:
                    raise _Refused
            forms[slot] = ("decl", n, modification, description)
        elif name == "component_clause":
            if k != last:
                raise _Refused
            body += _clause(parts, kinds, texts, forms, constant, longest)
        elif name in _CONSTANT_RULES and len(parts) == 1:
            n = _token(parts[0], kinds)
            function = getattr(owner, name)
            namespace[slot] = function(record.callbacks, [(kinds[n], texts[n], 0)])
        else:
            # a value rule: called as the trace calls it, its tokens built where passed
            if any(f"x{s}" in forms for s in _SLOT.findall(source)):
                raise _Refused
            function = getattr(owner, name, None)
            call = f"cb.{name}({_TOKEN.sub(whole, source)})"
            if type(function) is FunctionType:
                namespace[f"f_{name}"] = function
                call = f"f_{name}(cb, {_TOKEN.sub(whole, source)})"
            table = cached.get(name)
            if table is not None and table.isidentifier() and len(parts) == 1 and \
                    re.fullmatch("t[0-9]+", parts[0]):
                tables.add(table)
                body.append(f"    {slot} = t_{table}.get(G[{parts[0][1:]}])")
                body.append(f"    if {slot} is None:")
                body.append(f"        {slot} = {call}")
            else:
                body.append(f"    {slot} = {call}")
    # the texts of the tokens read, ``G<k>``, in one call that makes only those strings
    body = [_GROUP.sub(r"G\1", line) for line in body]
    used = sorted({int(k) for line in body for k in _GROUP_NAME.findall(line)})
    head = ["def run(m, cb):", "    S = m.start", "    ctx = cb.ctx"]
    if len(used) == 1:
        head.append(f"    G{used[0]} = m.group({used[0] + 1})")
    elif used:
        head.append(f"    {', '.join(f'G{k}' for k in used)} = "
                    f"m.group({', '.join(str(k + 1) for k in used)})")
    head += [f"    t_{t} = ctx.{t}" for t in sorted(tables)]
    # (the values of `_CONSTANT_RULES` are the namespace's `x<k>`)
    exec("\n".join(head + body), namespace)  # noqa: S102 - no input text in it (docstring)
    run: LineTrace = namespace["run"]
    return run


def _clause(parts: list, kinds: tuple, texts: list, forms: dict, constant: Any,
            longest: int) -> list[str]:
    """The lines building the `Decl` list of a `component_clause` with children ``parts``."""
    i = 0
    prefixes = []
    while i < len(parts) and parts[i][:1] == "t" and kinds[_token(parts[i], kinds)] in \
            _PREFIXES:
        n = _token(parts[i], kinds)
        prefixes.append(f"({constant(texts[n])}, S({n + 1}))")
        i += 1
    if len(parts) != i + 3:
        raise _Refused
    t = _token(parts[i], kinds, "NAME")
    if texts[t] not in _PLAIN_TYPES:
        raise _Refused
    semi = _token(parts[i + 2], kinds, "SEMI")
    if not parts[i + 1].startswith("["):
        raise _Refused
    decls = [forms.get(p, ("",)) for p in children(parts[i + 1])]
    if not decls or any(d[0] != "decl" for d in decls):
        raise _Refused
    lines = []
    if longest > 2 * MAX_DEPTH:
        # a clause this long has its bindings bounded (`component_clause`): the trace
        lines.append(f"    if S({semi + 1}) + 1 - S({t + 1}) > {2 * MAX_DEPTH}:")
        lines.append("        return trace(m, cb)")
    type_name = constant(texts[t])
    prefix_source = "(" + "".join(p + ", " for p in prefixes) + ")"
    lines.append("    W = ctx.words.setdefault")
    for j, (_, n, mod, desc) in enumerate(decls):
        name = f"G[{n}]"
        if "'" in texts[n] or " " in texts[n] or "\t" in texts[n]:
            name = f"normalize_name(G[{n}])"
        lines.append(f"    n{j} = {name}")
        modifiers = "()"
        binding = "None"
        if mod is not None:
            if mod[1]:
                modifiers = "[" + ", ".join(
                    f"({a[1]}, {a[3] or 'None'}, S({a[2] + 1}), False)" for a in mod[1]) + "]"
            if mod[2] is not None:
                binding = mod[2]
        values = {"name": f"W(n{j}, n{j})", "loc": f"S({n + 1})", "type_name": type_name,
                  "type_loc": f"S({t + 1})", "prefixes": prefix_source,
                  "modifiers": modifiers, "binding": binding,
                  "description": desc[1] if desc is not None else "None", "explicit": "None",
                  "dims": "()"}
        lines.append(f"    d{j} = new(Decl)")
        for field in _DECL_FIELDS:
            lines.append(f"    set_{field}(d{j}, {values.pop(field)})")
        if values:
            raise _Refused                      # (a field `Decl` no longer has)
    lines.append("    return [" + ", ".join(f"d{j}" for j in range(len(decls))) + "]")
    return lines


__all__ = ["compile_declaration"]
