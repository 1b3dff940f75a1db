"""Choosing one model class of a file that defines several (issue 13; ``--model NAME``).

OpenModelica's flat output of several models, a test file of the OpenModelica test suite or a
package of flat models holds more than one ``model``/``block``/``class``. The flat importer reads
one class; `select_class` keeps the chosen class and the definitions it can use, and turns every
other character into a space (newlines stay), so that every ``file:line:col`` of the importer is
the position in the user's file. Kept: text outside every class (``within``, comments), the
functions, records and types defined outside the model classes (at the top level or in a
package; a package's header, ``end`` and other elements are blanked) that come before the chosen
class, and those after it that the class names (the importer then refuses them with its usual
"a function definition can only come before the model class" at their own line).

A lexical scan (`class_spans`), like `frontend.model_classes`, with character offsets; names are
qualified by their enclosing classes (``P.A``), OpenModelica's dotted class names (``class P.A``)
and Base Modelica's quoted names (``'M'``) read as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..diagnostics import InputError, SourceLoc

_MODEL_KINDS = frozenset(("model", "block", "class"))
_KINDS = frozenset(("model", "block", "class", "package", "connector", "record", "function",
                    "type", "operator"))
_PREFIXES = frozenset(("partial", "encapsulated", "impure", "pure", "expandable", "operator"))
_IDENT = r"(?:[A-Za-z_][A-Za-z0-9_]*|'(?:[^'\\]|\\.)*')"
_TOKEN_RE = re.compile(r"""//[^\n]*|/\*[\s\S]*?\*/|"(?:[^"\\]|\\.)*"|"""
                       rf"{_IDENT}(?:\.{_IDENT})*|[;=()]")


@dataclass(frozen=True)
class ClassSpan:
    """One class definition: ``text[start:end]`` from its first prefix to its ``;``."""
    kind: str           # model, block, class, package, function, record, type, ...
    name: str           # qualified by the enclosing classes, quotes removed
    start: int
    end: int
    partial: bool
    depth: int          # number of enclosing classes
    parent: str | None  # kind of the innermost enclosing class


def _plain(name: str) -> str:
    return ".".join(p[1:-1] if p.startswith("'") else p for p in re.findall(
        r"'(?:[^'\\]|\\.)*'|[^.]+", name))


def class_spans(text: str) -> list[ClassSpan]:
    """Every class definition of ``text`` in source order (nested ones after their parent's
    header); an unterminated class ends at the end of the text."""
    toks = [(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)
            if not m.group(0).startswith(("//", "/*", '"'))]
    open_: list[list] = []   # [kind, qualified, start, partial, short, parent kind, declared]
    done: list[tuple] = []
    depth_paren = 0
    i = 0
    while i < len(toks):
        w, s, e = toks[i]
        if w == "(":
            depth_paren += 1
        elif w == ")":
            depth_paren = max(0, depth_paren - 1)
        elif w == ";" and depth_paren == 0 and open_ and open_[-1][4]:
            kind, name, start, partial, _, parent, _ = open_.pop()
            done.append((kind, name, start, e, partial, len(open_), parent))
        elif (w in _KINDS and depth_paren == 0 and i + 1 < len(toks)
              and (i == 0 or toks[i - 1][0] != "end") and toks[i + 1][0] not in _KINDS
              and re.fullmatch(rf"{_IDENT}(?:\.{_IDENT})*", toks[i + 1][0])):
            j, partial = i, False
            while j > 0 and toks[j - 1][0] in _PREFIXES:
                partial = partial or toks[j - 1][0] == "partial"
                j -= 1
            name = _plain(toks[i + 1][0])
            short = i + 2 < len(toks) and toks[i + 2][0] == "="
            qual = f"{open_[-1][1]}.{name}" if open_ else name
            open_.append([w, qual, toks[j][1], partial, short,
                          open_[-1][0] if open_ else None, name])
            i += 2
            continue
        elif (w == "end" and i + 1 < len(toks) and open_ and not open_[-1][4]
              and _plain(toks[i + 1][0]) == open_[-1][6]):
            stop = toks[i + 2][2] if i + 2 < len(toks) and toks[i + 2][0] == ";" else toks[i + 1][2]
            kind, name, start, partial, _, parent, _ = open_.pop()
            done.append((kind, name, start, stop, partial, len(open_), parent))
            i += 3
            continue
        i += 1
    while open_:
        kind, name, start, partial, _, parent, _ = open_.pop()
        done.append((kind, name, start, len(text), partial, len(open_), parent))
    return sorted(
        (
            ClassSpan(kind=k, name=n, start=s, end=e, partial=p, depth=d, parent=par)
            for k, n, s, e, p, d, par in done
        ),
        key=lambda c: c.start,
    )


def model_names(spans: list[ClassSpan]) -> list[str]:
    """Qualified names of the non-partial model/block/class definitions."""
    return [c.name for c in spans if c.kind in _MODEL_KINDS and not c.partial]


#: Most model names a message lists (a library such as the MSL's package.mo has thousands).
MAX_NAMES = 20


def names_text(names: list[str]) -> str:
    """``names`` for a message: all of them up to `MAX_NAMES`; beyond, the documentation
    classes (``UsersGuide``, ``Icons``, ``Internal``) left out, the examples first, and how many
    there are with how to narrow the choice."""
    if len(names) <= MAX_NAMES:
        return ", ".join(names) or "none"
    doc = re.compile(r"(?:^|\.)(?:UsersGuide|Icons|Internal|Obsolete)(?:\.|$)")
    useful = [n for n in names if not doc.search(n)]
    examples = [n for n in useful if ".Examples." in n or n.startswith("Examples.")]
    shown = (examples + [n for n in useful if n not in examples])[:MAX_NAMES]
    return (", ".join(shown) + f", ... ({len(names)} models in all, {len(useful)} outside the "
            "documentation classes; --model takes the qualified name, e.g. "
            f"--model {shown[0] if shown else names[0]})")


def _blank(text: str) -> str:
    return re.sub(r"[^\r\n]", " ", text)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def find_model(spans: list[ClassSpan], model: str, filename: str) -> ClassSpan:
    """The class named ``model`` (qualified, or the unique class whose qualified name ends
    with ``.model``); an `InputError` listing the file's models otherwise."""
    want = _plain(model)
    classes = [c for c in spans if c.kind in _MODEL_KINDS]
    hits = [c for c in classes if c.name == want] or \
           [c for c in classes if c.name.endswith("." + want)]
    names = names_text(model_names(spans))
    loc = SourceLoc(filename, 1, 1)
    if not hits:
        raise InputError(f"no model, block or class named '{model}' in this file; its "
                         f"models: {names}", loc)
    if len(hits) > 1:
        raise InputError(f"'{model}' is ambiguous in this file: "
                         f"{names_text([c.name for c in hits])}; give the qualified name", loc)
    if hits[0].partial:
        raise InputError(f"'{hits[0].name}' is a partial class, which cannot be simulated; "
                         f"the file's models: {names}", loc)
    return hits[0]


def refuse_several(text: str, spans: list[ClassSpan], filename: str) -> None:
    """Raise the `InputError` of a file with several models and no ``--model`` (at the
    second model's header)."""
    models = [c for c in spans if c.kind in _MODEL_KINDS and not c.partial]
    line, col = _line_col(text, models[1].start)
    raise InputError(f"this file defines {len(models)} models "
                     f"({names_text([c.name for c in models])}): choose one with --model NAME "
                     "(api.load(path, model=NAME))", SourceLoc(filename, line, col))


def select_class(text: str, spans: list[ClassSpan], chosen: ClassSpan) -> str:
    """``text`` with everything but ``chosen`` and the definitions it can use blanked
    (module docstring); same length, same line breaks."""
    body = text[chosen.start:chosen.end]
    out = list(text)
    keep: list[tuple[int, int]] = [(chosen.start, chosen.end)]
    for c in spans:
        if c.kind in ("function", "record", "type") and c.parent in (None, "package"):
            if c.end <= chosen.start or re.search(
                    rf"\b{re.escape(c.name.rsplit('.', 1)[-1])}\b", body):
                keep.append((c.start, c.end))
    for c in spans:
        if c.depth == 0:
            out[c.start:c.end] = _blank(text[c.start:c.end])
    for a, b in keep:
        out[a:b] = text[a:b]
    return "".join(out)
