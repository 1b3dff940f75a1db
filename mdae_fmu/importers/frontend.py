"""Hierarchical Modelica through an existing front end (issue 13, Deliver item 7).

mdae_fmu reads flat models (docs/importers.md). A ``.mo`` file that is not flat
(packages of component models, ``extends``, ``connect``, connectors with ``flow`` variables) is
handed to the optional `rumoca <https://github.com/CogniPilot/rumoca>`_ compiler
(``pip install mdae-fmu[frontend]``), whose Base Modelica output is then read by the flat
importer like any other file. When rumoca is not installed the error says how to install it and
how to flatten the model with OpenModelica instead.

Which class is flattened: ``--model NAME`` (short or qualified), else the one named like the
file (``Clutch.mo`` -> ``Clutch`` or ``Pkg.Clutch``), else the only non-partial
``model``/``block``/``class`` of the file that no other class uses; with several such models
the file is refused with their names. Libraries are found in ``--modelica-path`` directories
and ``MODELICAPATH`` (`modelica_path`). The equations keep their lines in the user's file
(`user_locations`); what rumoca cannot place there points into its flat text, which
``--keep-flat FILE`` writes.

rumoca 0.10.2 prints Base Modelica without the model's ``when``-clauses and algorithm sections
(its ``flat`` stage has them, the ``base-modelica`` target does not print them); a model that has
any is refused with that reason rather than imported without them (the importer never drops a
construct silently).
"""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import replace as dc_replace
from pathlib import Path

from ..diagnostics import InputError, SourceLoc
from ..ir import Model

#: Keywords that only occur in hierarchical (not flattened) Modelica.
_HIERARCHICAL_KEYWORDS = frozenset(
    "connect connector extends flow stream import expandable inner outer redeclare "
    "replaceable constrainedby".split())
#: Class kinds whose instances are components of a hierarchical model.
_MODEL_KINDS = frozenset(("model", "block", "class"))
_CLASS_KINDS = frozenset(("model", "block", "class", "package", "connector", "record",
                          "function", "type", "operator"))
_TOKEN_RE = re.compile(r"""//[^\n]*|/\*[\s\S]*?\*/|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
                       r"""|[A-Za-z_][A-Za-z0-9_]*|[;=(]""")

INSTALL_HINT = (
    "pip install 'mdae-fmu[frontend]' (the rumoca Modelica compiler), or flatten the model "
    "with OpenModelica and give the flat file instead: omc --baseModelica -i=MODEL FILE.mo "
    "> MODEL.bmo, or in an OMShell script: loadFile(\"FILE.mo\"); "
    "writeFile(\"MODEL.mo\", instantiateModel(MODEL));")


def _words(text: str) -> list[str]:
    """Identifiers and the punctuation ``; = (`` of ``text``, without comments, strings and
    quoted identifiers (these become the placeholder ``'``)."""
    out = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if tok.startswith(("//", "/*", '"')):
            continue
        out.append("'" if tok.startswith("'") else tok)
    return out


def model_classes(text: str) -> list[tuple[str, str]]:
    """``(kind, qualified name)`` of every class definition of ``text``, in source order
    (a lexical scan: ``model A ... end A;`` blocks, nested in packages)."""
    words = _words(text)
    stack: list[str] = []
    found: list[tuple[str, str]] = []
    prev = None
    for i, w in enumerate(words):
        if w in _CLASS_KINDS and prev != "end" and i + 1 < len(words):
            name = words[i + 1]
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in _CLASS_KINDS:
                # 'type T = ...;' and short class definitions have no 'end T;'
                short = i + 2 < len(words) and words[i + 2] == "="
                partial = prev == "partial"
                found.append(("partial " + w if partial else w, ".".join(stack + [name])))
                if not short:
                    stack.append(name)
        elif w == "end" and i + 1 < len(words) and stack and words[i + 1] == stack[-1]:
            stack.pop()
        prev = w
    return found


def uses_hierarchical_keywords(text: str) -> bool:
    """True when ``text`` uses a keyword of hierarchical models (``connect``, ``extends``,
    ``flow``, ...)."""
    return bool(_HIERARCHICAL_KEYWORDS.intersection(_words(text)))


def is_hierarchical(text: str) -> bool:
    """True when ``text`` is Modelica that is not flat: it uses a keyword of hierarchical
    models (``connect``, ``extends``, ``flow``, ...) or defines more than one model class."""
    if _HIERARCHICAL_KEYWORDS.intersection(_words(text)):
        return True
    return sum(1 for kind, _ in model_classes(text) if kind in _MODEL_KINDS) > 1


def choose_model(text: str, path: Path) -> str | None:
    """The qualified name of the class to flatten when none is given: the model named like
    the file, else the only model that no other class of the file uses (the top of the
    file's component tree); an `InputError` listing the candidates when there are several
    (never a guess), None when the file has no model."""
    from .select import class_spans
    spans = [c for c in class_spans(text) if c.kind in _MODEL_KINDS and not c.partial]
    for c in spans:
        if c.name.rsplit(".", 1)[-1] == path.stem:
            return c.name
    if len(spans) <= 1:
        return spans[0].name if spans else None
    every = class_spans(text)
    top = [c for c in spans if not _used_elsewhere(text, c, every)]
    if len(top) == 1:
        return top[0].name
    names = [c.name for c in (top or spans)]
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    raise InputError(f"this file defines {len(names)} models that could be the one to "
                     f"simulate ({shown}): choose one with --model NAME (short or qualified "
                     "name; api.load(path, model=NAME))", SourceLoc(str(path), 1, 1))


def _used_elsewhere(text: str, c, spans) -> bool:
    """Whether the short name of class ``c`` occurs in a class other than ``c`` and those
    that enclose it (a component declaration or an ``extends`` of it)."""
    word = re.compile(rf"\b{re.escape(c.name.rsplit('.', 1)[-1])}\b")
    for o in spans:
        if o.start <= c.start and c.end <= o.end:
            continue                    # c itself, or a package around it
        if o.depth > c.depth and c.start <= o.start and o.end <= c.end:
            continue                    # a class nested in c
        if word.search(text, o.start, o.end):
            return True
    return False


def rumoca_available() -> bool:
    return importlib.util.find_spec("rumoca") is not None


_REPORT_MSG_RE = re.compile(r"×\s*(.+)")
_REPORT_LOC_RE = re.compile(r"╭─\[.*:(\d+):(\d+)\]")


def _syntax_error(report: str, path: Path, line: int | None, col: int | None) -> InputError:
    """An `InputError` from one rumoca syntax diagnostic; its rendered report carries the
    message (after ``×``) and the position (``╭─[file:line:col]``) of the first problem."""
    msg = _REPORT_MSG_RE.search(report)
    pos = _REPORT_LOC_RE.search(report)
    if pos:
        line, col = int(pos.group(1)), int(pos.group(2))
    text = msg.group(1).strip() if msg else (report.strip().splitlines() or ["syntax error"])[0]
    return InputError(f"rumoca: syntax error: {text}", SourceLoc(str(path), line or 1, col or 1))


def modelica_path(dirs: Sequence[str | Path] = ()) -> tuple[str, ...]:
    """The library directories rumoca searches: ``dirs`` (``--modelica-path``, in order), then
    those of the ``MODELICAPATH`` environment variable (separated by ``os.pathsep``, as
    OpenModelica reads it); each once, existing directories only."""
    out: list[str] = []
    env = os.environ.get("MODELICAPATH", "")
    for d in [*map(str, dirs), *(p for p in env.split(os.pathsep) if p)]:
        d = str(Path(d).expanduser())
        if d not in out and Path(d).is_dir():
            out.append(d)
    return tuple(out)


def flatten_with_rumoca(text: str, path: Path, model: str,
                        roots: Sequence[str] = ()) -> str:
    """rumoca's Base Modelica text of class ``model`` of ``text`` (read from ``path``).
    rumoca's failures become `InputError`s naming rumoca; a model with when-clauses or
    algorithm sections is refused (module docstring). ``roots``: library directories."""
    return _flatten(text, path, model, roots)[0]


def _flatten(text: str, path: Path, model: str, roots: Sequence[str]) -> tuple[str, dict]:
    """`flatten_with_rumoca` and rumoca's flat model as a dict (its equations' spans)."""
    import rumoca
    loc = SourceLoc(str(path), 1, 1)
    for diag in rumoca.validate_source(text, filename=str(path)):
        if str(getattr(diag, "level", "error")).lower().endswith("error"):
            raise _syntax_error(str(diag.message or ""), path, diag.line, diag.column)
    # rumoca reads every .mo file beside the one it loads: give it an empty directory
    with tempfile.TemporaryDirectory(prefix="mdae_rumoca_") as tmp:
        # rumoca also reads MODELICAPATH itself and fails on a directory that does not
        # exist: it gets the roots `modelica_path` checked, and no variable
        env = os.environ.pop("MODELICAPATH", None)
        try:
            session = rumoca.Session(roots=list(roots)) if roots else rumoca.Session()
            compiled = session.loads(text, model=model, filename=str(Path(tmp) / path.name))
            flat = compiled.to_dict("flat")
            out = compiled.render("base-modelica")
        except (rumoca.RumocaError, RuntimeError) as err:   # RuntimeError: its printer
            msg = str(err).strip().splitlines()[0].replace(tmp + "/", "")
            hint = ("" if roots else "; if it uses a library, give the directory that holds "
                    "it with --modelica-path DIR (or MODELICAPATH)")
            raise InputError(f"rumoca could not flatten '{model}': {msg}{hint}; flatten the "
                             "model with OpenModelica instead (omc --baseModelica, or "
                             "instantiateModel) and give the flat file", loc) from None
        finally:
            if env is not None:
                os.environ["MODELICAPATH"] = env
    dropped = [what for key, what in (("when_chains", "when-clauses"),
                                      ("algorithms", "algorithm sections"),
                                      ("initial_algorithms", "initial algorithm sections"))
               if flat.get(key)]
    if dropped:
        raise InputError(
            f"'{model}' has {' and '.join(dropped)}, which rumoca "
            f"{getattr(rumoca, '__version__', '') or rumoca.version()} leaves out of its Base "
            "Modelica output; flatten the model with OpenModelica instead (omc --baseModelica, "
            "or instantiateModel) and give the flat file", loc)
    return out, flat


def load_hierarchical(text: str, path: Path, flat_error: InputError,
                      model: str | None = None, *, roots: Sequence[str | Path] = (),
                      keep_flat: str | Path | None = None) -> Model:
    """Flatten ``text`` (not flat: `is_hierarchical`) with rumoca and import the result.
    ``flat_error`` is the flat importer's error, reported with the install hint when rumoca
    is missing; ``model`` is the class to flatten, short (``Circuit2``) or qualified
    (``Pkg.Examples.Circuit2``) (default: `choose_model`); ``roots``: library directories
    besides ``MODELICAPATH`` (`modelica_path`). The equations' locations are mapped back to
    ``path`` (`user_locations`); the others (library classes, or when rumoca's spans do not
    correspond) point into the flat text, which ``keep_flat`` writes to that file."""
    from .flat_modelica import parse_modelica
    if not rumoca_available():
        raise InputError(f"{flat_error.message}; this file is hierarchical Modelica: to read "
                         f"it, {INSTALL_HINT}", flat_error.loc, flat_error.source_line)
    model = qualified_model(text, path, model) if model else choose_model(text, path)
    if model is None:
        raise InputError("no model, block or class to flatten in this file",
                         SourceLoc(str(path), 1, 1))
    flat_text, flat = _flatten(text, path, model, modelica_path(roots))
    if keep_flat is not None:
        Path(keep_flat).write_text(flat_text, encoding="utf-8")
        label = str(keep_flat)
    else:
        label = f"{path} (flat text: --keep-flat FILE)"
    return user_locations(parse_modelica(flat_text, label), text, path, flat)


def qualified_model(text: str, path: Path, model: str) -> str:
    """The qualified name of class ``model`` (qualified, or the unique class whose qualified
    name ends with ``.model``), or the `InputError` of `select.find_model`."""
    from .select import class_spans, find_model
    return find_model(class_spans(text), model, str(path)).name


def user_locations(parsed: Model, text: str, path: Path, flat: dict) -> Model:
    """``parsed`` (rumoca's flat text, imported) with each equation located in the user's
    file ``path`` (``text``) where rumoca's span of it lies there: equation i of the flat
    text is rumoca's i-th flat equation (same count required, else nothing is mapped);
    spans in library files, which rumoca names only by a hash, are left as they are."""
    eqs = list(flat.get("equations") or ())
    inits = list(flat.get("initial_equations") or ())
    if len(eqs) != len(parsed.equations) or len(inits) != len(parsed.initial_equations):
        return parsed
    data = text.encode("utf-8")
    source = _user_source([*eqs, *inits], data)
    if source is None:
        return parsed

    def moved(e, fe):
        span = fe.get("span") or {}
        start = span.get("start")
        if span.get("source") != source or not isinstance(start, int) \
                or not 0 <= start <= len(data):
            return e
        before = data[:start].decode("utf-8", "replace")
        line = before.count("\n") + 1
        return dc_replace(e, loc=SourceLoc(str(path), line, len(before) - before.rfind("\n")))

    return dc_replace(
        parsed, equations=tuple(moved(e, fe) for e, fe in zip(parsed.equations, eqs)),
        initial_equations=tuple(moved(e, fe) for e, fe in zip(parsed.initial_equations, inits)))


def _user_source(equations: list[dict], data: bytes) -> int | None:
    """The source id rumoca gives the user's file: the only one of the equations' spans, or
    the only one whose component equations all read as equations (``=``) in ``data``."""
    sources: dict[int, bool] = {}
    for fe in equations:
        span = fe.get("span") or {}
        src, start, end = span.get("source"), span.get("start"), span.get("end")
        if not isinstance(src, int):
            continue
        fits = sources.setdefault(src, True)
        if "ComponentEquation" in (fe.get("origin") or {}) and fits:
            ok = isinstance(start, int) and isinstance(end, int) and 0 <= start < end \
                <= len(data) and b"=" in data[start:end]
            sources[src] = ok
    if len(sources) == 1:
        return next(iter(sources))
    fitting = [s for s, ok in sources.items() if ok]
    return fitting[0] if len(fitting) == 1 else None
