"""Hierarchical Modelica through an existing front end (issue 13, Deliver item 7).

mdae_fmu reads flat models (docs/importers.md). A ``.mo`` file that is not flat
(packages of component models, ``extends``, ``connect``, connectors with ``flow`` variables) is
handed to the optional `rumoca <https://github.com/CogniPilot/rumoca>`_ compiler
(``pip install mdae-fmu[frontend]``), whose Base Modelica output is then read by the flat
importer like any other file. When rumoca is not installed the error says how to install it and
how to flatten the model with OpenModelica instead.

Which class is flattened: the one named like the file (``Clutch.mo`` -> ``Clutch`` or
``Pkg.Clutch``), otherwise the last non-partial ``model``/``block``/``class`` of the file (the
usual place of the top-level model of a small library file).

rumoca 0.10.2 prints Base Modelica without the model's ``when``-clauses and algorithm sections
(its ``flat`` stage has them, the ``base-modelica`` target does not print them); a model that has
any is refused with that reason rather than imported without them (the importer never drops a
construct silently).
"""

from __future__ import annotations

import importlib.util
import re
import tempfile
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
    """The qualified name of the class to flatten (module docstring), or None."""
    candidates = [name for kind, name in model_classes(text) if kind in _MODEL_KINDS]
    for name in candidates:
        if name.rsplit(".", 1)[-1] == path.stem:
            return name
    return candidates[-1] if candidates else None


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


def flatten_with_rumoca(text: str, path: Path, model: str) -> str:
    """rumoca's Base Modelica text of class ``model`` of ``text`` (read from ``path``).
    rumoca's failures become `InputError`s naming rumoca; a model with when-clauses or
    algorithm sections is refused (module docstring)."""
    import rumoca
    loc = SourceLoc(str(path), 1, 1)
    for diag in rumoca.validate_source(text, filename=str(path)):
        if str(getattr(diag, "level", "error")).lower().endswith("error"):
            raise _syntax_error(str(diag.message or ""), path, diag.line, diag.column)
    # rumoca reads every .mo file beside the one it loads: give it an empty directory
    with tempfile.TemporaryDirectory(prefix="mdae_rumoca_") as tmp:
        try:
            compiled = rumoca.Session().loads(text, model=model,
                                              filename=str(Path(tmp) / path.name))
            flat = compiled.to_dict("flat")
            out = compiled.render("base-modelica")
        except (rumoca.RumocaError, RuntimeError) as err:   # RuntimeError: its printer
            msg = str(err).strip().splitlines()[0].replace(tmp + "/", "")
            raise InputError(f"rumoca could not flatten '{model}': {msg}; flatten the model "
                             "with OpenModelica instead (omc --baseModelica, or "
                             "instantiateModel) and give the flat file", loc) from None
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
    return out


def load_hierarchical(text: str, path: Path, flat_error: InputError,
                      model: str | None = None) -> Model:
    """Flatten ``text`` (not flat: `is_hierarchical`) with rumoca and import the result.
    ``flat_error`` is the flat importer's error, reported with the install hint when rumoca
    is missing; ``model`` is the class to flatten (default: `choose_model`)."""
    from .flat_modelica import parse_modelica
    if not rumoca_available():
        raise InputError(f"{flat_error.message}; this file is hierarchical Modelica: to read "
                         f"it, {INSTALL_HINT}", flat_error.loc, flat_error.source_line)
    model = model or choose_model(text, path)
    if model is None:
        raise InputError("no model, block or class to flatten in this file",
                         SourceLoc(str(path), 1, 1))
    flat_text = flatten_with_rumoca(text, path, model)
    return parse_modelica(flat_text, f"{path} [flattened by rumoca: {model}]")
