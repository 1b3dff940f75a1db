"""Flat Modelica and Base Modelica importer: text -> `mdae_fmu.ir.Model`.

Accepted input (docs/importers.md): the scalarized flat output of OpenModelica (``class X ... end
X;``, dotted names such as
``mod1.x[1]``) and Base Modelica (``//! base 0.1.0``, ``package 'M' model 'M' ... end 'M'; end
'M';``, quoted identifiers), defined by one LALR(1) grammar (``modelica.lark``) with lark's
contextual lexer, and read by the hand-written parser of its common subset (`fast_parser`) or
by the grammar's (`PARSER`). The grammar's callbacks run *during* parsing (no parse tree is
built) and produce expressions (`mdae_fmu.expr`) plus a light intermediate form;
`build_model` then numbers the equations, builds the guards and resolves every name. The XML
importer feeds the same `build_model`, which is why both forms of a model give equal `Model`s.

Semantics (docs/importers.md):

* equation ids ``e1, e2, ...`` in source order (a non-parameter binding ``Real x = e`` is the
  equation ``x = e`` at its declaration), initial equations ``i1, ...``, when-clauses ``w1, ...``;
* ``lhs = rhs`` becomes the residual ``expr.residual(lhs, rhs)``;
* branch k of ``if c1 ... elseif c2 ... else`` is guarded by ``(c1,F), ..., (c_{k-1},F), (c_k,T)``
  (docs/theory.md §5.1, ir module docstring); ``not c`` is the literal ``(c, F)``;
* Boolean and Integer variables are discrete, so is a Real assigned in a when-clause (Modelica
  §3.8.3); parameters get causality ``parameter``;
* every name must be declared, ``reinit`` needs a state (a variable whose ``der`` appears);
* records, enumerations, type aliases, String constants, arrays and for-equations are lowered
  to the scalar intermediate form by `lowering` (only for texts that use them).

Everything that cannot be represented is refused with an `InputError` at ``file:line:col``; the
importer never drops a construct silently.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import replace
from itertools import repeat
from typing import Any, Iterator, cast
from pathlib import Path

from .. import expr as E
from ..collector import gc_paused
from ..diagnostics import InputError, SourceLoc
from ..heap import map_large_blocks, release_free_heap
from ..ir import (Assertion, Assign, Equation, GuardLiteral, Model, Reinit, Terminate,
                  Variable, WhenBranch, WhenClause)
from .depth import MAX_DEPTH, limited
from . import values
from .algorithms import lower_algorithm
from . import (annotation_callbacks, array_callbacks, call_callbacks, class_callbacks,
               declaration_callbacks, equation_callbacks, expression_callbacks, function_callbacks,
               statement_callbacks)
from .call_callbacks import refuse_string_calls
from .equation_callbacks import guard_literal as _literal
from .functions import CONSTANTS, FunctionResolver, Tuple
from .. import functions as F
from .fast_parser import FastParser, Lexer, Unsupported
from .lalr import Driver, ParseError
from .parse_context import MAX_FILE_BYTES, MAX_TOKENS, ParseContext, too_large
from .quiet_if import merge_quiet_if_equations
from .syntax import ENUM_PREFIXES, Decl, Stmt, fold_strings, normalize_name
from .terminal_table import GRAMMAR as _GRAMMAR, shipped as shipped_terminals

#: The parser of whole files: ``"fast"`` (the default: `fast_parser`, with the LALR driver for
#: the texts it does not cover) or ``"lalr"`` (the LALR driver over the grammar, the reference,
#: and the fallback). The environment variable MDAE_FMU_PARSER sets it for a process.
PARSER = os.environ.get("MDAE_FMU_PARSER", "fast")

# Terminals of reserved keywords that the grammar does not use as such; the lexer always
# recognizes them, and `_syntax_error` turns them into "unsupported construct" messages.
_UNSUPPORTED_KEYWORDS = {
    "FUNCTION": "a function definition can only come before the model class or inside the "
                "Base Modelica package",
    "CONNECTOR": "connector definitions are not supported (the input must be flattened)",
    "EXPANDABLE": "expandable connectors are not supported (the input must be flattened)",
    "OPERATOR": "operator definitions are not supported",
    "ALGORITHM": "an algorithm section cannot start here",
    "CONNECT": "connect-equations are not supported (the input must be flattened)",
    "EXTENDS": "extends-clauses are not supported (the input must be flattened)",
    "IMPORT": "import-clauses are not supported (the input must be flattened)",
    "ENCAPSULATED": "encapsulated classes are not supported (give one flat class)",
    "PARTIAL": "partial classes are not supported (give one flat class; only a partial "
               "function, the type of a functional input argument, is read)",
    "EXTERNAL": "an external clause can only end a function definition",
    "CONSTRAINEDBY": "constrainedby is not supported (the input must be flattened)",
    "WHILE": "while-loops are only supported as statements of an algorithm section",
    "BREAK": "break is only allowed inside a loop of an algorithm section",
    "RETURN": "return is only allowed in the algorithm section of a function",
    "PURE": "pure(...) is not supported",
    "IMPURE": "impure can only prefix a function definition",
    "FLOW": "flow variables are not supported (the input must be flattened)",
    "STREAM": "stream variables are not supported (the input must be flattened)",
}

_KEYWORD_TERMINALS = (
    "CLASS", "MODEL", "BLOCK", "PACKAGE", "_END", "EQUATION", "INITIAL", "_PUBLIC", "_PROTECTED",
    "FINAL", "PARAMETER", "CONSTANT", "DISCRETE", "INPUT", "OUTPUT", "INNER", "OUTER",
    "REPLACEABLE", "REDECLARE", "EACH", "ANNOTATION", "IF", "_THEN", "ELSEIF", "ELSE", "WHEN",
    "ELSEWHEN", "_AND", "_OR", "_NOT", "TRUE", "FALSE", "FOR", "IN", "LOOP", "TYPE", "RECORD",
    "ENUMERATION", "WITHIN", *_UNSUPPORTED_KEYWORDS)

#: Modelica keywords (Modelica 3.6 §2.3.3): printed names equal to one of them are quoted.
KEYWORDS = frozenset("""
algorithm and annotation block break class connect connector constant constrainedby der discrete
each else elseif elsewhen encapsulated end enumeration equation expandable extends external false
final flow for function if import impure in initial inner input loop model not operator or outer
output package parameter partial protected public pure record redeclare replaceable return stream
then true type when while within""".split())

_STATE_SELECT = ("never", "avoid", "default", "prefer", "always")
_ASSERTION_LEVELS = ("error", "warning")
#: Modifiers read into `Variable`, and modifiers ignored because they do not change the model.
_MODIFIERS = ("start", "fixed", "nominal", "min", "max", "unit", "displayUnit", "stateSelect")
IGNORED_MODIFIERS = ("quantity", "unbounded")
#: the modifiers whose value is the variable's attribute as it is (`_ModelBuilder.declare`)
_EXPRESSION_MODIFIERS = frozenset(("start", "nominal", "min", "max"))
_SCALAR_TYPES = frozenset(("Real", "Integer", "Boolean"))

_SUBSCRIPTS_RE = re.compile(r"\[([0-9,]+)\]")


# --- the parser (built once per process) ----------------------------------------------------

_TERMINATORS = ("SEMI", "_THEN", "ELSE", "EQUATION", "INITIAL_EQUATION", "ALGORITHM",
                "INITIAL_ALGORITHM", "LOOP")


class _PostLexer:
    """lark post-lexer that only declares the keywords to lex everywhere (`always_accept`)."""
    always_accept = _KEYWORD_TERMINALS

    def process(self, stream):
        return stream


_lock = threading.Lock()
_instance: "_Parser | None" = None
_fast: "_FastParts | None" = None


class _FastParts:
    """What the hand-written parser needs, built once per process: the grammar callbacks and
    the lexer (`fast_parser.Lexer`), from the terminal table shipped with the package
    (`terminal_table`) when it matches the grammar, so that a text the hand-written parser
    reads whole never loads lark (its import and tables: about 0.13 s of CPU; issue 29);
    else from lark's tables (`_Parser`). The LALR parser (`_Parser`) shares both."""

    def __init__(self):
        self.callbacks = _Callbacks()
        table = shipped_terminals()
        self.lexer = Lexer(table) if table is not None else None


class _Parser:
    """The lark grammar with the callbacks as its transformer, and the `lalr.Driver` that runs
    it; built once per process, on the first text that needs it (`_fast_parts` otherwise)."""

    def __init__(self):
        from lark import Lark     # (imported on use: see `_FastParts`)
        fast = _fast_parts(lalr=False)
        self.callbacks = fast.callbacks
        self.lark = Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                         start=["start", "expression"], transformer=self.callbacks,
                         postlex=_PostLexer(), maybe_placeholders=False,
                         propagate_positions=False, cache=_table_cache())
        self.terminal_text = {}
        for t in self.lark.terminals:
            if t.pattern.type == "str":
                self.terminal_text[t.name] = repr(t.pattern.value)
        self.terminal_names = frozenset(t.name for t in self.lark.terminals) | {"$END"}
        self.driver = Driver(self.lark, _TERMINATORS, boundaries=("SEMI",))
        if fast.lexer is None:
            fast.lexer = Lexer(self.driver)
        self.lexer = fast.lexer


def _table_cache() -> str | bool:
    """Where lark keeps the LALR tables of the grammar between processes (building them takes
    about 0.35 s of every command; loading them 0.05 s): a file in the user's cache directory
    (``$XDG_CACHE_HOME/mdae_fmu``, else ``~/.cache/mdae_fmu``), named by the grammar's hash so
    that another grammar or lark version never reads it (lark also checks the hash inside).
    False (no cache) when that directory cannot be created."""
    import hashlib
    import os
    from lark import __version__ as lark_version
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "mdae_fmu")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    digest = hashlib.sha256(_GRAMMAR.read_bytes() + lark_version.encode()).hexdigest()[:16]
    return os.path.join(folder, f"grammar-{digest}.lark")


def _parser() -> _Parser:
    global _instance
    if _instance is None:
        _instance = _Parser()
    return _instance


def _fast_parts(lalr: bool = True) -> _FastParts:
    """The callbacks and lexer of the hand-written parser, with a lexer for certain (made by
    the LALR parser when no shipped table fits, unless ``lalr`` is False: `_Parser` itself)."""
    global _fast
    if _fast is None:
        _fast = _FastParts()
    if _fast.lexer is None and lalr:
        _parser()
    return _fast


def lalr_driver() -> Driver:
    """The LALR driver of the grammar (`lalr.Driver`), built on first use."""
    return _parser().driver


# --- per-parse state and intermediate form ---------------------------------------------------

# Locations ("where") and the tagged tuples of equation items and sections: module `syntax`.


# --- grammar callbacks ------------------------------------------------------------------------

class _Callbacks:
    """The grammar's callbacks, one method per grammar rule (lark and `fast_parser` call them
    by rule name with the rule's children; they build expressions and the intermediate form),
    gathered from the tables of the construct modules (`CALLBACK_MODULES`): each callback is
    that module's own function, called with this object, whose one state is the parse context
    of the parse under way."""

    ctx: ParseContext | None = None
    #: rules whose value for a token may be read from a table of ``ctx`` (`parse_traces`)
    cached_rules = expression_callbacks.CACHED_RULES
    #: rules that only rearrange their children, by their forms (`parse_traces`)
    inline_rules: dict = {}
    #: the names those forms use (`parse_traces`)
    inline_names: dict = {}
    #: rules with a compiler of their lines of a known shape (`fast_parser.FastParser._traced`)
    line_rules: dict = {}


#: The modules of the grammar callbacks, one per construct (`callback_common`).
CALLBACK_MODULES = (expression_callbacks, call_callbacks, array_callbacks, equation_callbacks,
                    statement_callbacks, declaration_callbacks, class_callbacks,
                    annotation_callbacks, function_callbacks)


def _assemble_callbacks() -> None:
    """Make the callbacks of `CALLBACK_MODULES` the methods of `_Callbacks` (one per rule)."""
    owner: dict[str, str] = {}
    for module in CALLBACK_MODULES:
        for name, callback in module.RULES.items():
            if name in owner or name.startswith("_") or name in ("ctx", "cached_rules",
                                                                  "inline_rules",
                                                                  "inline_names",
                                                                  "line_rules"):
                raise AssertionError(f"callback '{name}' of {module.__name__} clashes "
                                     f"({owner.get(name, 'a name of _Callbacks')})")
            owner[name] = module.__name__
            setattr(_Callbacks, name, callback)
        _Callbacks.inline_rules.update(getattr(module, "INLINE_RULES", {}))
        _Callbacks.inline_names.update(getattr(module, "INLINE_NAMES", {}))
        _Callbacks.line_rules.update(getattr(module, "LINE_RULES", {}))


_assemble_callbacks()


# --- syntax errors --------------------------------------------------------------------------

_FRIENDLY = {"NAME": "a name", "NUMBER": "a number", "STRING": "a string",
             "REL_OP": "a comparison", "ADD_OP": "'+' or '-'", "MUL_OP": "'*' or '/'",
             "POW_OP": "'^'", "BASE_HEADER": "'//! base'", "$END": "end of file"}


def _describe_expected(expected, parser: _Parser) -> str:
    """`` (expected one of ...)`` for the terminals a parser state accepts (grammar rule names,
    which the table lists too, are left out: they mean nothing to a modeller)."""
    names = []
    for t in sorted(expected):
        if t in _UNSUPPORTED_KEYWORDS or t == "BASE_HEADER" or t not in parser.terminal_names:
            continue
        names.append(_FRIENDLY.get(t) or parser.terminal_text.get(t, t))
    names = sorted(set(names))
    if not names:
        return ""
    if len(names) > 8:
        return f" (expected one of {', '.join(names[:8])}, ...)"
    if len(names) == 1:
        return f" (expected {names[0]})"
    return f" (expected one of {', '.join(names)})"


def _syntax_error(err: ParseError, ctx: ParseContext, parser: _Parser) -> InputError:
    """Turn a `lalr.ParseError` into an `InputError` a modeller can act on."""
    text = ctx.text
    if err.kind == "size":
        return too_large(ctx.pos_loc(err.pos))
    if err.kind == "char":
        pos = err.pos
        ch = text[pos] if pos < len(text) else ""
        loc = ctx.pos_loc(pos)
        if ch == '"':
            msg = "unterminated string (or invalid escape sequence in it)"
        elif ch == "'":
            msg = "unterminated quoted identifier (or invalid escape sequence in it)"
        elif text.startswith("/*", pos):
            msg = "unterminated comment '/*'"
        else:
            msg = f"unexpected character {ch!r}"
        return InputError("syntax error: " + msg + ctx.note, loc, ctx.shown_source(loc))
    kind, value, start = err.token
    loc = ctx.pos_loc(start)
    if kind == "$END":
        if err.previous is None and ctx.whole_file:
            return InputError("no class definition in the file (only comments): expected "
                              "'class Name ... end Name;'", loc, ctx.shown_source(loc))
        return InputError("syntax error: unexpected end of input" +
                          _describe_expected(err.expected, parser) + ctx.note, loc,
                          ctx.shown_source(loc))
    for p in (start - 1, start):
        if p >= 0 and text.startswith("/*", p):
            loc = ctx.pos_loc(p)
            return InputError("syntax error: unterminated comment '/*'" + ctx.note, loc,
                              ctx.shown_source(loc))
    if err.previous is not None and err.previous[0] == "PARTIAL":
        # (`partial function` is read: the type of functional input arguments)
        loc = ctx.pos_loc(err.previous[2])
        return InputError("unsupported construct: " + _UNSUPPORTED_KEYWORDS["PARTIAL"] +
                          ctx.note, loc, ctx.shown_source(loc))
    if kind in _UNSUPPORTED_KEYWORDS:
        return InputError("unsupported construct: " + _UNSUPPORTED_KEYWORDS[kind] + ctx.note,
                          loc, ctx.shown_source(loc))
    shown = value if len(value) <= 40 else value[:40] + "..."
    prev = err.previous
    machine = _STATE_MACHINE.search(text, max(0, start - 200), start)
    if machine is not None:
        where = ctx.pos_loc(machine.start(1))
        return InputError("unsupported construct: a state machine (Modelica 3.6 §17, printed "
                          "by OpenModelica as 'stateMachine ... state ...'), which is "
                          "synchronous Modelica: write its modes with Boolean or Integer "
                          "variables updated in when-clauses" + ctx.note, where,
                          ctx.shown_source(where))
    hint = None
    if prev is not None and "SEMI" in err.expected and prev[0] != "SEMI":
        prev_end_line = ctx.line_col(prev[2] + len(prev[1]))[0]
        if ctx.line_col(start)[0] > prev_end_line:
            hint = f" (missing ';' at the end of line {prev_end_line}?)"
    if hint is None and value == "[" and prev is not None and prev[1] in ("}", ")"):
        hint = (" (a subscript after an array constructor {...} is not Modelica, Modelica 3.6 "
                "§B.2.7; write the element itself)" if prev[1] == "}" else
                " (a subscript after '(...)' is not supported; write the element itself)")
    if hint is None:
        hint = _describe_expected(err.expected, parser)
    return InputError(f"syntax error: unexpected {shown!r}" + hint + ctx.note, loc,
                      ctx.shown_source(loc))


# OpenModelica's flat output of a state machine: 'stateMachine name' right before the error
_STATE_MACHINE = re.compile(r"(?:^|\s)(stateMachine)\s+[\w.']+\s*$")


def _run(text: str, ctx: ParseContext, start: str):
    """Parse ``text`` with the shared parser, returning the callbacks' result."""
    with _lock:
        parser = _parser()
        parser.callbacks.ctx = ctx
        try:
            value = parser.driver.parse(text, start, ctx.term_ends, ctx.tokens_left,
                                        shapes=ctx.whole_file)
            ctx.tokens_left -= parser.driver.tokens_read
            return value
        except ParseError as err:
            if ctx.errors:              # an earlier semantic error is the first problem
                ctx.raise_first()
            raise _syntax_error(err, ctx, parser) from None
        except RecursionError:
            raise InputError("expression nested too deeply" + ctx.note,
                             ctx.loc(1, 1)) from None
        finally:
            parser.callbacks.ctx = None


# --- public API -------------------------------------------------------------------------------

def read_file(path: str | Path, limit: int) -> bytes:
    """The bytes of a model file; a missing or unreadable file, or one of more than ``limit``
    bytes (checked before reading), is an `InputError`."""
    name = str(path)
    try:
        size = Path(path).stat().st_size
        if size > limit:
            raise InputError(f"file is too large ({size} bytes; the limit is "
                             f"{limit // (1024 * 1024)} MiB)", SourceLoc(name, 1, 1))
        return Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"{name}: cannot read: {err.strerror or err}") from None


def read_text(path: str | Path) -> str:
    """Read a model file as text, refusing (with `InputError`) missing, oversized, empty and
    binary files before parsing."""
    return decode_source(read_file(path, MAX_FILE_BYTES), str(path))


def decode_source(data: bytes, filename: str) -> str:
    """UTF-8 text of ``data``; binary data (a NUL byte, invalid UTF-8) is an `InputError`."""
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        raise InputError("binary file (NUL byte): expected Modelica text",
                         SourceLoc(filename, line, col))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError("invalid UTF-8 (binary file?): expected Modelica text",
                         SourceLoc(filename, line, col)) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def load_modelica(path: str | Path) -> Model:
    """Read a flat Modelica (``.mo``) or Base Modelica (``.bmo``) file."""
    return parse_modelica(read_text(path), str(path))


def parse_modelica(text: str, filename: str = "<string>") -> Model:
    """Parse flat Modelica / Base Modelica text into a `Model` (module docstring)."""
    if not text.strip():
        raise InputError("empty file: expected a class definition ('class Name ... end Name;')",
                         SourceLoc(filename, 1, 1))
    if len(text) >= TRIM_MIN_CHARS:
        map_large_blocks()          # (the stages' large arrays go back to the system at free)
    with gc_paused():
        try:
            model = _parse_class(text, ParseContext(filename=filename, text=text))
        except _Relower:
            model = None    # (outside the handler the first attempt's objects are freed)
        if model is None:
            model = _parse_class(text, ParseContext(filename=filename, text=text,
                                                    extended=True))
    if len(text) >= TRIM_MIN_CHARS:
        release_free_heap()
    return model


#: The key of ``Model.__dict__`` by which `build_model` certifies that every name its
#: residuals read is declared (`mdae_fmu.structure.residual_scan.NAMES_DECLARED`, the same
#: string: the importers do not import the structural stages).
NAMES_DECLARED = "_names_declared"

#: Texts from this size on give the C heap's free memory back after their import
#: (`heap.release_free_heap`: the import frees its intermediate forms, the statements, the
#: token batches and the name tables, in the middle of the heap), and map their large blocks
#: on their own from their import on (`heap.map_large_blocks`); below it the release would
#: cost more than it saves.
TRIM_MIN_CHARS = 1 << 20


def _parse_start(text: str, ctx: ParseContext) -> tuple:
    """Rule ``start`` of a whole file: (the callbacks' value, the context that holds what they
    recorded). The hand-written parser (`fast_parser`) reads the texts it covers; any other text,
    and every text when `PARSER` is ``"lalr"``, is parsed by the LALR driver, in a fresh context
    when the hand-written parser gave up half-way."""
    if PARSER == "fast":
        with _lock:
            # (the LALR parser's callbacks and lexer are the same objects, once it is built)
            parser = _instance if _instance is not None else _fast_parts()
            parser.callbacks.ctx = ctx
            try:
                fast = FastParser(parser.lexer, parser.callbacks, text, ctx.term_ends,
                                  ctx.tokens_left)
                value = fast.parse_start()
                ctx.tokens_left -= fast.tokens_read
                return value, ctx
            except (Unsupported, RecursionError):
                pass
            finally:
                parser.callbacks.ctx = None
        ctx = ParseContext(filename=ctx.filename, text=text, extended=ctx.extended)
    return _run(text, ctx, "start"), ctx


def _parse_class(text: str, ctx: ParseContext) -> Model:
    """`parse_modelica` of a non-empty text."""
    result, ctx = _parse_start(text, ctx)
    if result[0] == "package":
        _, pkg_tok, pkg_end, consts, cls = result
        pkg = normalize_name(pkg_tok[1])
        if normalize_name(pkg_end[1]) != pkg:
            ctx.error(ctx.tok_loc(pkg_end), f"'end {normalize_name(pkg_end[1])};' does not "
                                            f"match 'package {pkg}'")
        if normalize_name(cls[2][1]) != pkg:
            ctx.error(ctx.tok_loc(cls[2]), f"the model '{normalize_name(cls[2][1])}' must "
                                           f"have the name of its package '{pkg}' (Base Modelica)")
    else:
        consts, cls = [], result
    _, kind, name_tok, end_tok, contents = cls
    name = normalize_name(name_tok[1])
    if normalize_name(end_tok[1]) != name:
        ctx.error(ctx.tok_loc(end_tok), f"'end {normalize_name(end_tok[1])};' does not match "
                                        f"'{kind[1]} {name}'")
    return build_model(name, consts + contents, ctx)


def parse_expression(text: str, filename: str = "<string>", line: int = 1, col: int = 1,
                     ctx: ParseContext | None = None, note: str = "") -> E.Expr:
    """Parse one Modelica expression (the XML importer's attribute values). Positions in
    errors are those of ``text`` placed at ``line``:``col`` of ``filename``; ``note`` is added to
    messages (e.g. " (in attribute 'rhs' of <equation>)"). With a shared ``ctx`` the names are
    recorded for `build_model` and errors are deferred to it; without, errors raise at once."""
    own = ctx is None
    if ctx is None:
        ctx = ParseContext(filename=filename, whole_file=False)
    ctx.text, ctx.line0, ctx.col0, ctx.note = text, line, col, note
    ctx.term_ends = []
    ctx._cursor = (0, 1, 0)
    if not text.strip():
        ctx.error(ctx.loc(1, 1), "empty expression")
        if own:
            ctx.raise_first()
        return E.ZERO
    e = _run(text, ctx, "expression")
    if type(e) is Stmt:
        del ctx.stmts[id(e)]
        ctx.error(e.loc, f"{e.func}(...) is not an expression")
        e = E.ZERO
    elif len(text) > 2 * MAX_DEPTH:                # shorter text cannot nest that deep
        shallow = limited(e)
        if shallow is None:
            ctx.error(ctx.loc(1, 1), f"expression nested too deeply (more than {MAX_DEPTH} "
                                     "levels)")
            e = E.ZERO
        else:
            e = shallow
    for s in list(ctx.stmts.values()):
        ctx.error(s.loc, f"{s.func}(...) can only be used as an equation, not inside an "
                         "expression")
    ctx.stmts.clear()
    if own:
        refuse_string_calls(ctx)
    if own and ctx.extended and not ctx.errors:    # arrays: only scalar values here
        from .lowering import lower_expression
        e = lower_expression(e, ctx)
    ctx.note = ""
    if own:
        ctx.raise_first()
    return e


# --- model building (shared with the XML importer) ---------------------------------------------

def _residual(lhs, rhs):
    """`expr.residual`, without its equality tests when neither side is a constant."""
    if type(lhs) is E.Const or type(rhs) is E.Const:
        return E.residual(lhs, rhs)
    return E.BinOp("-", lhs, rhs)


class _ModelBuilder:
    """Validation of declarations and numbering/guarding of equations: the semantic half of
    the importers (module docstring)."""

    def __init__(self, name: str, ctx: ParseContext):
        self.name = name
        self.ctx = ctx
        self.variables: list[Variable] = []
        # name -> where declared (None: declared by the importer, after the file's own)
        self.declared: dict[str, SourceLoc | None] = {}
        self.equations: list[Equation] = []
        self.initial: list[Equation] = []
        self.whens: list[WhenClause] = []
        self.assertions: list[Assertion] = []
        self.reinits: list[Reinit] = []
        self.assigned: dict[str, SourceLoc] = {}
        self.needs_lowering = False     # an undeclared name or a lone `x[3]` (`_Relower`)
        self.experiment: tuple = ()
        self.tuple_calls: list = []                # (function, outputs used, where)
        # the locations of the declarations and equations, in text order (one, or a list)
        self.locate, self.locate_many = ctx.locators()

    def err(self, where, message, priority=0):
        loc = self.ctx.where_loc(where)
        self.ctx.errors.append((loc.line, loc.col, priority, message, None))

    # ---- declarations ----
    def declare_all(self, decls: list) -> None:
        """`declare` of each of ``decls``, `DECLARATION_RUN` at a time: their locations in
        one pass of the locator (`ParseContext.locators`), then their records; each entry of
        the list is dropped once declared (`_drained`)."""
        declare = self.declare
        for first in range(0, len(decls), DECLARATION_RUN):
            run = decls[first:first + DECLARATION_RUN]
            decls[first:first + len(run)] = repeat(None, len(run))
            for d, loc in zip(run, self.locate_many([d.loc for d in run])):
                declare(d, loc)

    def declare(self, d: Decl, loc: SourceLoc | None = None):
        """The `Variable` of the declaration ``d`` (at ``loc``, else found from ``d.loc`` by
        the builder's locator), or its errors."""
        if loc is None:
            loc = self.locate(d.loc)
        name = d.name
        if name == "time":          # (never in `declared`: tested first, the same)
            self.err(loc, "'time' is the built-in time variable and cannot be declared")
            return
        declared = self.declared
        size = len(declared)
        first = declared.setdefault(name, loc)      # one look-up of the name
        if len(declared) == size:
            assert first is not None        # (the importer's own names come after the file's)
            self.err(loc, f"duplicate declaration of '{name}' (first declared at "
                          f"{first.short()}:{first.col})")
            return
        type_name = d.type_name
        if not d.prefixes and d.binding is None and d.explicit is None and \
                type_name in _SCALAR_TYPES and not self.ctx.enum_vars:
            # the usual declaration of a flat model: no prefix, no binding, and at most once
            # each of start, nominal, min, max and fixed = true/false (anything else, or
            # anything twice, goes the general way below, which reads them again)
            start = fixed = nominal = low = high = None
            for mname, value, _, nested in d.modifiers:
                if value is None or nested:
                    break
                if mname == "start" and start is None:
                    start = value
                elif mname == "fixed" and fixed is None and type(value) is E.Const and \
                        type(value.value) is bool:
                    fixed = value.value
                elif mname == "nominal" and nominal is None:
                    nominal = value
                elif mname == "min" and low is None:
                    low = value
                elif mname == "max" and high is None:
                    high = value
                else:
                    break
            else:
                self.variables.append(Variable(
                    name=name, type=cast(Any, type_name),
                    variability="continuous" if type_name == "Real" else "discrete",
                    start=start, fixed=fixed, nominal=nominal, min=low, max=high,
                    description=d.description, loc=loc))
                return
        variability = None
        causality = "local"
        for p, ploc in d.prefixes:
            if p in ("constant", "parameter", "discrete"):
                if variability is not None:
                    self.err(ploc, f"conflicting prefixes '{variability}' and '{p}'")
                variability = p
            elif p in ("input", "output"):
                if causality != "local":
                    self.err(ploc, f"conflicting prefixes '{causality}' and '{p}'")
                causality = p
            elif p != "final":
                self.err(ploc, f"prefix '{p}' is not supported (the input must be flattened)")
        if type_name not in _SCALAR_TYPES:
            if type_name == "String":
                self.err(d.type_loc, f"String variables are not supported ('{name}')")
            elif "[" in type_name:
                self.err(d.type_loc, "array declarations are not supported (only scalarized "
                                     "models: declare each element)")
            else:
                self.err(d.type_loc, f"unsupported type '{type_name}' of '{name}': only "
                                     "Real, Integer and Boolean (records, enumerations and type "
                                     "aliases are not supported)")
            return
        explicit = d.explicit       # XML: attributes given explicitly win
        if explicit:
            variability = explicit.get("variability", variability)
        if variability is None:
            variability = "continuous" if type_name == "Real" else "discrete"
        if variability == "parameter":
            causality = "parameter"
        if causality == "input" and d.binding is not None:
            # an input with a binding is no input of the simulated model: its binding is an
            # equation (Modelica 3.6 §4.7 counts as knowns only the top-level inputs without
            # binding equations; OpenModelica prints TopLevelInputs2's `input Real x = ...`
            # as `Real x` with the equation and a notification). A component's input bound by
            # a modifier, `c(u = 2*x)`, printed `input Real c.u = 2*x` (MSL 4 RollingWheel),
            # is the same case. A `start` modifier stays its start value.
            causality = "local"
        if explicit:
            causality = explicit.get("causality", causality)
        if causality == "input" and d.binding is not None \
                and variability not in ("parameter", "constant"):
            self.err(loc, f"input '{name}' has a binding: a variable with a binding "
                          "equation is computed, no host sets it; drop causality=\"input\" "
                          "or the binding (a default value for the host is its start)")
        kw: dict[str, Any] = {}
        if d.modifiers:
            seen: set[str] = set()
            for mname, value, mloc, nested in d.modifiers:
                if value is not None and not nested and mname not in seen:
                    if mname in _EXPRESSION_MODIFIERS:      # start, nominal, min, max
                        seen.add(mname)
                        kw[mname] = value
                        continue
                    if mname == "fixed" and type(value) is E.Const and \
                            type(value.value) is bool:      # the usual `fixed = true`
                        seen.add(mname)
                        kw[mname] = value.value
                        continue
                self.modifier(d, kw, seen, mname, value, mloc, nested)
        binding: E.Expr | None = None
        if d.binding is not None:
            if variability in ("parameter", "constant"):
                binding = cast(E.Expr, d.binding)
            else:
                self.add_equation(("eq", E.Ref(name), d.binding, loc), ())
        enum = self.ctx.enum_vars.get(name) if self.ctx.enum_vars else None
        if enum is not None:
            kw["declared_type"] = enum.name
        vtype: Any = type_name              # (checked above: a VarType)
        kind: Any = variability             # (a Variability)
        role: Any = causality               # (a Causality)
        self.variables.append(Variable(
            name=name, type=vtype, variability=kind, causality=role,
            description=d.description, binding=binding, loc=loc, **kw))

    def modifier(self, d: Decl, kw: dict, seen: set, mname: str, value, mloc, nested) -> None:
        """One modifier ``mname = value`` of the declaration ``d`` into the `Variable`
        keywords ``kw`` (``seen``: the modifiers of ``d`` read so far), or its error."""
        if mname == "StateSelect":
            # OpenModelica's old front end (instantiateModel of MSL 3.1 examples) prints
            # the attribute capitalized: `Real phi(StateSelect = StateSelect.default)`
            mname = "stateSelect"
        if mname in seen:
            self.err(mloc, f"modifier '{mname}' given twice for '{d.name}'")
            return
        seen.add(mname)
        if nested:
            self.err(mloc, f"nested modification of '{mname}' is not supported")
            return
        if mname in IGNORED_MODIFIERS:
            return
        if mname not in _MODIFIERS:
            self.err(mloc, f"unsupported modifier '{mname}' of '{d.name}' (supported: "
                           f"{', '.join(_MODIFIERS + IGNORED_MODIFIERS)})")
            return
        if value is None:
            self.err(mloc, f"modifier '{mname}' of '{d.name}' has no value")
            return
        if mname == "fixed":
            if type(value) is E.Const and type(value.value) is bool:
                kw["fixed"] = value.value
            else:
                self.err(mloc, f"'fixed' of '{d.name}' must be true or false")
        elif mname in ("unit", "displayUnit"):
            if type(value) is E.Str:
                kw["display_unit" if mname == "displayUnit" else "unit"] = value.value
            else:
                self.err(mloc, f"'{mname}' of '{d.name}' must be a string literal")
        elif mname == "stateSelect":
            ss = self.enum_value(value, "StateSelect", _STATE_SELECT)
            if ss is None:
                self.err(mloc, f"'stateSelect' of '{d.name}' must be one of "
                               f"{', '.join('StateSelect.' + s for s in _STATE_SELECT)}")
            else:
                kw["state_select"] = ss
        else:
            kw[mname] = value

    def enum_value(self, value, enum: str, literals) -> str | None:
        """The literal of ``enum`` named by ``value`` (a Ref such as StateSelect.prefer).
        Where the file also declares an enumeration with the same literals (omc's old front
        end prints ``parameter enumeration(never, avoid, default, prefer, always)
        inertia1.stateSelect``), the literal reaches here already resolved to its position,
        counted from 1 in the declaration order, which is ``literals``' order."""
        if type(value) is E.Const and type(value.value) is int \
                and 1 <= value.value <= len(literals):
            return literals[value.value - 1]
        if type(value) is not E.Ref or not value.name.startswith(enum + "."):
            return None
        lit = value.name[len(enum) + 1:]
        if lit not in literals:
            return None
        self.ctx.enum_consumed[value.name] = self.ctx.enum_consumed.get(value.name, 0) + 1
        return lit

    # ---- equations ----
    def add_equation(self, item, guard, initial=False):
        _, lhs, rhs, where = item
        target = self.initial if initial else self.equations
        prefix = "i" if initial else "e"
        if type(lhs) is Tuple:
            residuals = self.tuple_residuals(lhs, rhs, where)
        else:
            residuals = [_residual(lhs, rhs)]
        for r in residuals:
            target.append(Equation(f"{prefix}{len(target) + 1}", r, guard,
                                   self.ctx.where_loc(where)))

    def tuple_residuals(self, lhs, rhs, where) -> list:
        """``(a, b) = f(x)``: one residual per output, ``a - f(x)``, ``b - f#2(x)``."""
        if type(rhs) is not E.Call or rhs.func in E.BUILTIN_FUNCTIONS:
            self.err(where, "the right side of '(a, b) = ...' must be a call of a function "
                            "with several outputs")
            return []
        out = []
        for k, item in enumerate(lhs.items):
            if type(item) is Tuple:
                self.err(where, "nested tuples are not supported")
                return []
            if item is not None:        # an empty slot: output k is not used
                out.append(_residual(item, E.Call(F.call_name(rhs.func, k), rhs.args)))
        self.tuple_calls.append((rhs.func, len(lhs.items), where))
        return out

    def section(self, items, initial: bool):
        """Flatten one equation section in source order; if-branches extend the guard
        (iterative, so deeply nested if-equations cannot overflow the stack)."""
        stack: list[tuple[Iterator, tuple[GuardLiteral, ...]]] = [(iter(items), ())]
        target = self.initial if initial else self.equations
        prefix = "i" if initial else "e"
        while stack:
            it, guard = stack[-1]
            item = self.plain_equations(it, guard, target, prefix)
            if item is _RUN_END:
                stack.pop()
                continue
            if item is None:                    # (ends its list, as `next(it, None)` did)
                stack.pop()
                continue
            tag = item[0]
            if tag == "eq":
                self.add_equation(item, guard, initial)
            elif tag == "if":
                _, branches, orelse, _loc = item
                prior: list[GuardLiteral] = []
                pushed = []
                for cond, _bloc, body in branches:
                    lit = _literal(cond)
                    pushed.append((iter(body), guard + tuple(prior) + (lit,)))
                    prior.append(GuardLiteral(cond=lit.cond, positive=not lit.positive))
                if orelse is not None:
                    pushed.append((iter(orelse), guard + tuple(prior)))
                stack.extend(reversed(pushed))
            elif tag == "when":
                if initial:
                    self.err(item[2], "when-clauses are not allowed in an initial equation "
                                      "section")
                elif guard:
                    self.err(item[2], "when-clauses inside if-equations are not supported")
                else:
                    self.when(item)
            elif tag == "stmt":
                s = item[1]
                if s is None:
                    continue
                if s.func == "assert" and not initial:
                    a = self.assertion(s, guard)
                    if a is not None:
                        self.assertions.append(a)
                elif s.func == "assert":
                    self.err(s.loc, "assert in an initial equation section is not supported")
                else:
                    self.err(s.loc, f"{s.func}(...) can only be used inside a when-clause")

    def plain_equations(self, it: Iterator, guard: tuple, target: list, prefix: str) -> Any:
        """The equations ``lhs = rhs`` of ``it`` up to its first other item, each one residual
        (`add_equation` of the usual item), appended to ``target`` under ``guard``, a run of at
        most `EQUATION_RUN` at a time: residuals, then their locations in one pass, then the
        `Equation` records. Returns that other item, or `_RUN_END` at the end of ``it``."""
        const, binop = E.Const, E.BinOp
        item: Any = _RUN_END
        while True:
            residuals: list = []
            wheres: list = []
            add, place = residuals.append, wheres.append
            for item in it:
                if item is None or item[0] != "eq" or type(item[1]) is Tuple:
                    break
                _, lhs, rhs, where = item
                if type(lhs) is const or type(rhs) is const:
                    add(E.residual(lhs, rhs))
                else:
                    add(binop("-", lhs, rhs))
                place(where)
                if len(residuals) == EQUATION_RUN:
                    item = _RUN_FULL
                    break
            else:
                item = _RUN_END
            if residuals:
                first = len(target) + 1
                target.extend(map(Equation, [f"{prefix}{k}" for k in
                                             range(first, first + len(residuals))],
                                  residuals, repeat(guard), self.locate_many(wheres)))
            if item is not _RUN_FULL:
                return item

    def when(self, item):
        _, branches, loc = item
        out = []
        for cond, bloc, body in branches:
            if type(cond) is E.Ref and cond.name.startswith(ENUM_PREFIXES):
                self.err(bloc, "invalid when-condition")
            actions = []
            for x in body:
                tag = x[0]
                if tag == "eq":
                    assign = self.when_equation(x)
                    if assign is not None:
                        var, rhs, eloc = assign
                        actions.append(Assign(var=var, value=rhs, loc=eloc))
                        self.assigned.setdefault(var, eloc)
                elif tag == "stmt":
                    s = x[1]
                    if s is None:
                        continue
                    a = self.action(s)
                    if a is not None:
                        actions.append(a)
                elif tag == "if":
                    for var, value, aloc in self.when_if(x, 1):
                        shallow = limited(value)
                        if shallow is None:
                            self.err(aloc, f"expression nested too deeply (more than "
                                           f"{MAX_DEPTH} levels)")
                            continue
                        actions.append(Assign(var=var, value=shallow, loc=aloc))
                        self.assigned.setdefault(var, aloc)
                elif tag == "when":
                    self.err(x[2], "nested when-clauses are not allowed")
            out.append(WhenBranch(condition=cond, actions=tuple(actions), loc=bloc))
        self.whens.append(WhenClause(id=f"w{len(self.whens) + 1}", branches=tuple(out), loc=loc))

    def when_equation(self, item) -> tuple | None:
        """``v = expression`` in a when-clause: ``(v, expression, location)``; None (the error
        reported) when the left side is not a variable."""
        _, lhs, rhs, where = item
        loc = self.ctx.where_loc(where)
        if type(lhs) is not E.Ref or lhs is E.TIME:
            self.err(loc, "the left side of an equation in a when-clause must be a variable "
                          "('v = expression': Modelica 3.6 §8.3.5.2, a when-equation defines "
                          "its left side; write 0 = y - k*n as y = k*n)")
            return None
        return lhs.name, rhs, loc

    def when_if(self, item, depth: int) -> list:
        """An if-equation inside a when-branch, as assignments of if-expressions:
        ``if c then x = a; else y = b; end if;`` assigns ``x = if c then a else pre(x)`` and
        ``y = if c then pre(y) else b`` (a discrete variable that the firing branch does not
        assign keeps its value). Returns [(variable, value, location)] in source order."""
        _, branches, orelse, loc = item
        if depth > MAX_DEPTH:
            self.err(loc, f"if-equations nested too deeply (more than {MAX_DEPTH} levels)")
            return []
        arms = [(cond, self.when_if_body(body, depth)) for cond, _bloc, body in branches]
        default = self.when_if_body(orelse or [], depth)
        first: dict = {}                      # variable -> location of its first assignment
        for _, body in arms + [(None, default)]:
            for var, (_, aloc) in body.items():
                first.setdefault(var, aloc)
        out = []
        for var, aloc in sorted(first.items(), key=lambda kv: (kv[1].line, kv[1].col)):
            keep = E.Call("pre", (E.Ref(var),))
            value = default[var][0] if var in default else keep
            for cond, body in reversed(arms):
                value = E.If(cond, body[var][0] if var in body else keep, value)
            out.append((var, value, aloc))
        return out

    def when_if_body(self, items, depth: int) -> dict:
        """Assignments of one branch of an if-equation inside a when-clause:
        {variable: (value, location)}. reinit, assert and terminate have no guard in the model,
        so they are refused there."""
        body: dict = {}
        for x in items:
            tag = x[0]
            if tag == "eq":
                assign = self.when_equation(x)
                if assign is None:
                    continue
                var, rhs, loc = assign
                if var in body:
                    self.err(loc, f"'{var}' is assigned twice in this branch")
                else:
                    body[var] = (rhs, loc)
            elif tag == "if":
                for var, value, aloc in self.when_if(x, depth + 1):
                    if var in body:
                        self.err(aloc, f"'{var}' is assigned twice in this branch")
                    else:
                        body[var] = (value, aloc)
            elif tag == "stmt" and x[1] is not None:
                s = x[1]
                self.err(s.loc, f"{s.func}(...) inside an if-equation inside a when-clause is "
                                "not supported (the model has no guarded "
                                f"{'reinit' if s.func == 'reinit' else 'action'}: use a "
                                "separate when-clause)")
            elif tag == "when":
                self.err(x[2], "nested when-clauses are not allowed")
        return body

    def _positional(self, s: Stmt, allowed_named=()) -> bool:
        for key, a in s.named.items():
            if key not in allowed_named:
                self.err(self.ctx.tok_loc(a.name) if self.ctx.note == "" else s.loc,
                         f"named argument '{key}' is not supported in {s.func}(...)")
                return False
        return True

    def action(self, s: Stmt):
        if s.func == "reinit":
            if not self._positional(s):
                return None
            if len(s.args) != 2:
                self.err(s.loc, f"reinit expects 2 arguments, got {len(s.args)}")
                return None
            target, value = s.args
            if type(target) is not E.Ref or target is E.TIME:
                self.err(s.loc, "the first argument of reinit must be a variable")
                return None
            r = Reinit(var=target.name, value=value, loc=s.loc)
            self.reinits.append(r)
            return r
        if s.func == "terminate":
            if not self._positional(s):
                return None
            msg = fold_strings(s.args[0]) if len(s.args) == 1 else None
            if msg is not None and any(type(n) is E.Call and n.func == "String"
                                       for n in E.walk(msg)):
                self.err(s.loc, "a terminate message built with String(...) is not "
                                "supported (only the message of assert shows values)")
                return None
            if type(msg) is not E.Str:
                self.err(s.loc, "terminate expects one string argument")
                return None
            return Terminate(message=msg.value, loc=s.loc)
        if s.func == "print":
            return self.print_action(s)
        return self.assertion(s, ())

    def print_action(self, s: Stmt) -> Assertion | None:
        """``print(str)`` in a when-clause (an OpenModelica extension, ModelicaBuiltin.mo:
        "Prints to stdout") as an assertion of level warning that never holds: each time the
        clause fires, the FMU logs the message, its ``String(...)`` values at that instant
        (docs/importers.md, "String in messages")."""
        if not self._positional(s):
            return None
        if len(s.args) != 1:
            self.err(s.loc, f"print expects one String argument, got {len(s.args)}")
            return None
        return Assertion(
            cond=E.Const(False),
            message=fold_strings(s.args[0]),
            level="warning",
            guard=(),
            loc=s.loc,
        )

    def assertion(self, s: Stmt, guard) -> Assertion | None:
        if not self._positional(s, ("level",)):
            return None
        args = list(s.args)
        if "level" in s.named:
            args.append(s.named["level"].value)
        if len(args) not in (2, 3):
            self.err(s.loc, f"assert expects 2 or 3 arguments, got {len(args)}")
            return None
        level = "error"
        if len(args) == 3:
            chosen = self.enum_value(args[2], "AssertionLevel", _ASSERTION_LEVELS)
            if chosen is None:
                self.err(s.loc, "the level of assert must be AssertionLevel.error or "
                                "AssertionLevel.warning")
                return None
            level = chosen
        return Assertion(
            cond=args[0], message=fold_strings(args[1]), level=level, guard=guard, loc=s.loc
        )

    # ---- checks after everything is read ----
    def check_arrays(self):
        """Scalarized element declarations ``x[1] ... x[n]`` must cover their whole index box;
        a lone ``Real x[3]`` is an (unsupported) array declaration."""
        # key -> [(indices, position of the variable), ...], and for the usual `x[7]`, read
        # without the regular expression, key -> (its indices, the variables' positions)
        groups: dict[str, list] = {}
        simple: dict[str, tuple[list[int], list[int]]] = {}
        split = _SUBSCRIPTS_RE.split
        variables = self.variables
        for n, v in enumerate(variables):
            name = v.name
            if "[" in name and "'" not in name:
                k = name.find("[")
                digits = name[k + 1:-1]
                if name[-1] == "]" and digits.isdigit() and digits.isascii():
                    group = simple.get(name[:k] + "[]")
                    if group is None:
                        simple[name[:k] + "[]"] = ([int(digits)], [n])
                    else:
                        group[0].append(int(digits))
                        group[1].append(n)
                    continue
                parts = split(name)         # [name part, subscripts, name part, ...]
                if len(parts) == 1:
                    continue
                if len(parts) == 3 and not parts[2] and "," not in parts[1]:
                    key, idx = parts[0] + "[]", (int(parts[1]),)      # the usual `x[7]`
                else:
                    key = "[]".join(parts[::2])
                    try:
                        idx = tuple(int(i) for m in parts[1::2] for i in m.split(","))
                    except ValueError:
                        continue
                groups.setdefault(key, []).append((idx, n))
        bad = []                            # (position of the group's first variable, key)
        for key, (indices, positions) in simple.items():
            if key in groups:               # subscripted both ways: the general check below
                members = [((i,), p) for i, p in zip(indices, positions)] + groups[key]
                members.sort(key=lambda m: m[1])
                groups[key] = members
            elif len(indices) != max(indices) or min(indices) < 1:
                bad.append((positions[0], key))
        for key, members in groups.items():
            dims = {len(i) for i, _ in members}
            if len(dims) != 1:
                continue
            n = dims.pop()
            size = 1
            for k in range(n):
                size *= max(i[k] for i, _ in members)
            if len(members) != size or any(min(i) < 1 for i, _ in members):
                bad.append((members[0][1], key))
        for first, key in sorted(bad):      # (in the order of the variables)
            v = variables[first]
            self.needs_lowering = True
            self.err(v.loc, f"'{v.name}' looks like an array declaration: only "
                            "scalarized models are supported (declare every element "
                            f"{key.replace('[]', '[1]', 1)}, ... as a scalar)")

    def check_names(self):
        ctx = self.ctx
        # the names used and not declared, in one pass in C (usually none: then one look-up
        # of each name used, no set made); then their uses in the order of the text
        used = ctx.first_use.keys()
        undeclared = () if used <= self.declared.keys() else used - self.declared.keys()
        for name, use in ctx.first_use.items() if undeclared else ():
            if name not in undeclared:
                continue
            if type(use) is int:
                use = (*ctx.line_col(use), "", None)
            line, col, note, src = use
            if name.startswith(ENUM_PREFIXES):
                if ctx.enum_uses.get(name, 0) <= ctx.enum_consumed.get(name, 0):
                    continue
                msg = f"'{name}' can only be used as a stateSelect or assert level value"
            else:
                msg = f"undefined name '{name}'"
                self.needs_lowering = True
            ctx.errors.append((line, col, 1, msg + note, src))
        for r in self.reinits:
            d = self.declared.get(r.var)
            if d is None:
                self.err(r.loc, f"reinit of undeclared variable '{r.var}'")
            elif r.var not in ctx.der_names:
                self.err(r.loc, f"reinit of '{r.var}', which is not a state (der({r.var}) "
                                "appears in no equation)")
        variability = {v.name: v.variability for v in self.variables} if self.assigned \
            else {}
        for name, loc in self.assigned.items():
            if name not in self.declared:
                self.err(loc, f"assignment to undeclared variable '{name}'", 1)
            elif variability.get(name) in ("parameter", "constant"):
                self.err(loc, f"cannot assign '{name}' in a when-clause: it is a "
                              f"{variability[name]}")

    def model(self) -> Model:
        variables = []
        connected = _connected_component_inputs(self.variables, self.equations)
        for v in self.variables:
            if v.name in self.assigned and v.variability == "continuous":
                v = replace(v, variability="discrete")
            if v.name in connected:
                v = replace(v, causality="local")
            variables.append(v)
        enums: dict[str, Any] = {}
        for v in variables:
            e = self.ctx.enum_vars.get(v.name) if v.declared_type else None
            if e is not None:
                enums.setdefault(e.name, (e.name, tuple(zip(e.literals, e.descriptions or
                                                          (None,) * len(e.literals)))))
        equations = merge_quiet_if_equations(tuple(self.equations))
        initial = merge_quiet_if_equations(tuple(self.initial))
        return Model(
            name=self.name,
            variables=tuple(variables),
            equations=equations,
            initial_equations=initial,
            whens=tuple(self.whens),
            assertions=tuple(self.assertions),
            source=self.ctx.filename,
            experiment=self.experiment,
            enumerations=tuple(enums.values()),
        )


#: The most equations `_ModelBuilder.plain_equations` gathers before making their records.
EQUATION_RUN = 4096
#: The most declarations `_ModelBuilder.declare_all` locates at once.
DECLARATION_RUN = 4096
_RUN_END, _RUN_FULL = object(), object()     # (the end of the items; a full run)


def _connected_component_inputs(variables, equations) -> set[str]:
    """The inputs of sub-components that a connection determines.

    Only the inputs of the top-level model are inputs of the simulated model: in a
    component, the input prefix says that the enclosing model must provide an equation for
    the variable, usually a connection (the Modelica reference on 'input'/'output', and the
    balanced-model rules of the Modelica Language Specification, "Balanced Models").
    OpenModelica's flat output keeps the prefix, ``input Real SignalCurrent1.i``, and the
    connection, ``Constant1.y = SignalCurrent1.i``. A dotted input (one of a component)
    is determined by such a connection when an equation of the form ``a = b`` equates it to
    a variable outside its own component (``SignalCurrent1.i = SignalCurrent1.p.i`` is the
    component's own equation, not a connection). An unconnected component input, as in a
    component class simulated on its own, stays an input of the model, as OpenModelica
    treats it."""
    inputs = {v.name for v in variables
              if v.causality == "input" and v.binding is None and "." in v.name}
    if not inputs:
        return set()
    found = set()
    for eq in equations:
        r = eq.residual
        if eq.guard or type(r) is not E.BinOp or r.op != "-" or type(r.left) is not E.Ref \
                or type(r.right) is not E.Ref:
            continue
        for mine, other in ((r.left.name, r.right.name), (r.right.name, r.left.name)):
            if mine in inputs and not other.startswith(mine[:mine.rfind(".") + 1]):
                found.add(mine)
    return found


def _drained(items: list):
    """The items of ``items``, each dropped from the list once handed out: the intermediate
    form is freed while the model is built (less peak memory on large models)."""
    for i in range(len(items)):
        item = items[i]
        items[i] = None
        yield item


def _undeclared_names(sections: list, ctx: ParseContext) -> bool:
    """Some name used in the text is not declared: maybe a whole scalarized array ``x`` of
    the declared ``x[1]``, ``x[2]``, which `lowering` expands."""
    declared = set()
    subscripted = []
    for sec in sections:
        if sec[0] == "decls":
            for d in sec[1]:
                declared.add(d.name)
                if d.name[-1] == "]":
                    subscripted.append(d.name)
    for n in subscripted:       # `Real x[3];` without `x[1]`: an array declaration
        k = n.rfind("[")
        if n[:k + 1] + ",".join(["1"] * (n.count(",", k) + 1)) + "]" not in declared:
            return True
    return not all(n in declared or n.startswith(ENUM_PREFIXES) for n in ctx.first_use)


def build_model(name: str, sections: list, ctx: ParseContext) -> Model:
    """Build the `Model` from the intermediate form, in source order: declarations (a
    non-parameter binding becomes an equation where it is declared), equation sections,
    initial equation sections. Raises the earliest `InputError` of the file. The sections'
    lists are emptied on the way."""
    refuse_string_calls(ctx)
    ctx.raise_first()                 # errors found while parsing come first
    for s in list(ctx.stmts.values()):
        ctx.error(s.loc, f"{s.func}(...) can only be used as an equation, not inside an "
                         "expression")
    ctx.raise_first()
    lowered = ctx.extended or (not ctx.whole_file and _undeclared_names(sections, ctx))
    if lowered:
        from .lowering import lower
        sections = lower(sections, ctx)
        ctx.raise_first()
    # the parse's tables for sharing references, names and constants (and the raw names
    # that key them) serve the parse only: freed before the model's objects are made
    # (about 140 MB at 10^6 equations, docs/performance.md "stop 41, memory")
    ctx.refs.clear()
    ctx.words.clear()
    ctx.consts.clear()
    b = _ModelBuilder(name, ctx)
    b.experiment = ctx.experiment
    resolver = FunctionResolver(ctx.functions, ctx, b.err) if ctx.functions or ctx.calls \
        else None
    for sec in sections:
        tag = sec[0]
        if tag == "decls":
            b.declare_all(sec[1])
        elif tag == "equations":
            b.section(_drained(sec[1]), initial=False)
        elif tag == "initial":
            b.section(_drained(sec[1]), initial=True)
        elif tag == "experiment":
            b.experiment = sec[1]
        elif tag in ("algorithm", "initial_algorithm"):
            if resolver is None:
                resolver = FunctionResolver([], ctx, b.err)
            lower_algorithm(b, resolver, sec[1], sec[2], tag == "initial_algorithm")
        elif tag == "external":
            b.err(sec[3], "an external clause is only allowed in a function")
    if resolver is not None:
        resolver.finish(ctx.calls)
        _check_tuple_calls(b, resolver)
    _declare_constants(b, resolver)
    b.check_arrays()
    b.check_names()
    ctx.first_use.clear()           # (read by the name checks only)
    by_name = {v.name: v for v in b.variables} if b.whens else {}
    assigned = [(by_name[a.var], a.value, a.loc) for w in b.whens for br in w.branches
                for a in br.actions if type(a) is Assign and a.var in by_name]
    for where, message in values.check_model(b.variables, assigned):
        b.err(where, message)
    if b.needs_lowering and not lowered and ctx.whole_file:
        raise _Relower()
    _sample_conditions(b)
    _event_derivatives(b)
    ctx.note = ""
    ctx.raise_first()
    model = b.model()
    if resolver is None and not lowered and ctx.whole_file:
        # every name the residuals read was resolved against the declarations once, by
        # `check_names` (the names of the text) or is the importer's own declared one: the
        # structural stages look none up again (`structure.residual_scan.NAMES_DECLARED`)
        model.__dict__[NAMES_DECLARED] = True
    if resolver is not None:
        model = _with_functions(model, resolver)
        ctx.raise_first()
    if ctx.string_params:
        model = _with_string_parameters(model, ctx)
    from .initial import bind_free_parameters
    return bind_free_parameters(model)


def _with_string_parameters(model: Model, ctx: ParseContext) -> Model:
    """``model`` with the String parameters and constants the lowering found
    (`ir.StringParameter`, exported as FMI String variables)."""
    import dataclasses

    from ..ir import StringParameter
    return dataclasses.replace(
        model,
        strings=tuple(
            StringParameter(
                name=name,
                value=value,
                constant=constant,
                description=descr,
                loc=ctx.where_loc(where),
            )
            for name, value, constant, descr, where in ctx.string_params
        ),
    )


def _sample_conditions(b: _ModelBuilder) -> None:
    """``sample(start, interval)`` inside a compound when-condition (``when x > 1 and
    sample(0, 0.1)``, OpenModelica's testsuite) becomes a discrete Boolean ``$sampleK`` with
    the equation ``$sampleK = sample(start, interval)``, which the event code handles as it
    handles a sample() read as a Boolean (true in the first instant of its event iteration,
    docs/importers.md "Event operators"); the condition reads ``$sampleK``. A condition that is
    a sample() call itself stays as it is."""
    made: dict = {}
    whens = []
    for w in b.whens:
        branches = []
        for br in w.branches:
            c = br.condition
            if type(c) is E.Call and c.func == "sample":
                branches.append(br)
                continue
            calls = [n for n in E.walk(c) if type(n) is E.Call and n.func == "sample"]
            if not calls:
                branches.append(br)
                continue
            mapping: dict[E.Expr, E.Expr] = {}
            for call in calls:
                name = made.get(call)
                if name is None:
                    k = len(made) + 1
                    while f"$sample{k}" in b.declared:
                        k += 1
                    name = made[call] = f"$sample{k}"
                    b.declared[name] = None
                    b.variables.append(Variable(name=name, type="Boolean",
                                                variability="discrete", causality="local",
                                                loc=br.loc))
                    b.equations.append(Equation(f"e{len(b.equations) + 1}",
                                                E.BinOp("-", E.Ref(name), call), (), br.loc))
                mapping[call] = E.Ref(name)
            branches.append(replace(br, condition=E.substitute(c, mapping)))
        whens.append(replace(w, branches=tuple(branches)))
    if made:
        b.whens[:] = whens


def _der_chain(e: E.Expr) -> tuple[str, int] | None:
    """``(v, k)`` when ``e`` is ``der(v)`` (k = 1), ``der(der(v))`` (k = 2)..."""
    k = 0
    while isinstance(e, E.Der):
        k, e = k + 1, e.arg
    return (e.name, k) if k and isinstance(e, E.Ref) else None


def _event_derivatives(b: _ModelBuilder) -> None:
    """``der(y)`` of an algebraic Real ``y`` read by a when-clause (its condition or the value
    of one of its equations or reinits) and by no equation (OpenModelica's
    events/derInWhenCondition: ``when der(y) < 0``) is computed by the analysis only if an
    equation names it: it becomes a Real ``$der_y`` (``$der2_y`` for ``der(der(y))``) with the
    equation ``$der_y = der(y)``, which index reduction solves by differentiating the
    equations of ``y`` (the fix E-EVENT-DER suggests, docs/importers.md "Event operators")."""
    if not b.whens:
        return
    in_equations = {c for eq in b.equations for n in E.walk(eq.residual)
                    if (c := _der_chain(n)) is not None}
    reals = {v.name for v in b.variables if v.type == "Real" and v.causality != "input"
             and v.variability not in ("parameter", "constant", "discrete")}
    made: dict = {}

    def name_of(node, loc):
        v, k = chain = _der_chain(node)
        if chain not in made:
            name = f"$der{k if k > 1 else ''}_{v}"
            while name in b.declared:
                name = "$" + name
            made[chain] = name
            b.declared[name] = None
            b.variables.append(Variable(name=name, type="Real", causality="local", loc=loc))
            b.equations.append(Equation(f"e{len(b.equations) + 1}",
                                        E.BinOp("-", E.Ref(name), node), (), loc))
        return E.Ref(made[chain])

    def rewrite(e, loc):
        nodes = {n for n in E.walk(e) if (c := _der_chain(n)) is not None
                 and c[0] in reals and c not in in_equations}
        return E.substitute(e, {n: name_of(n, loc) for n in nodes}) if nodes else e

    whens = []
    for w in b.whens:
        branches = []
        for br in w.branches:
            actions = tuple(replace(a, value=rewrite(a.value, a.loc or br.loc))
                            if isinstance(a, (Assign, Reinit)) else a for a in br.actions)
            branches.append(replace(br, condition=rewrite(br.condition, br.loc),
                                    actions=actions))
        whens.append(replace(w, branches=tuple(branches)))
    if made:
        b.whens[:] = whens


def _check_tuple_calls(b: _ModelBuilder, resolver) -> None:
    """``(a, b, c) = f(x)`` needs a function with at least that many outputs."""
    for fname, n, where in b.tuple_calls:
        fn = resolver.functions.get(fname)
        if fn is not None and n > len(fn.outputs):
            b.err(where, f"'{fname}' has {len(fn.outputs)} output"
                         f"{'' if len(fn.outputs) == 1 else 's'}, {n} are assigned")


def _declare_constants(b: _ModelBuilder, resolver) -> None:
    """``Modelica.Constants.pi`` and the others used without a declaration become constants
    (their MSL 4.0 values, `importers.functions.CONSTANTS`)."""
    used = [n for n in b.ctx.first_use if n.startswith("Modelica.Constants.")]
    for name in used:
        short = name[len("Modelica.Constants."):]
        if name not in b.declared and short in CONSTANTS:
            b.declared[name] = None
            b.variables.append(Variable(name=name, type="Real", variability="constant",
                                        causality="local", binding=E.Const(CONSTANTS[short])))


def _with_functions(model: Model, resolver) -> Model:
    """``model`` with its calls resolved (aliases, defaults, inlining:
    `FunctionResolver.rewrite`) and the user functions it calls."""
    rw = resolver.rewrite

    def opt(e):
        return None if e is None else rw(e)

    def guard(g):
        return tuple(replace(lit, cond=rw(lit.cond)) for lit in g)

    def action(a):
        if isinstance(a, (Assign, Reinit)):
            return replace(a, value=rw(a.value))
        if isinstance(a, Assertion):
            return replace(a, cond=rw(a.cond), guard=guard(a.guard))
        return a

    variables = tuple(replace(v, start=opt(v.start), binding=opt(v.binding), min=opt(v.min),
                              max=opt(v.max), nominal=opt(v.nominal))
                      for v in model.variables)
    equations = tuple(replace(e, residual=rw(e.residual), guard=guard(e.guard))
                      for e in model.equations)
    initial = tuple(replace(e, residual=rw(e.residual), guard=guard(e.guard))
                    for e in model.initial_equations)
    whens = tuple(replace(w, branches=tuple(replace(br, condition=rw(br.condition),
                                                    actions=tuple(action(a)
                                                                  for a in br.actions))
                                            for br in w.branches)) for w in model.whens)
    assertions = tuple(action(a) for a in model.assertions)
    exprs = [e.residual for e in equations + initial]
    exprs += [x for v in variables for x in (v.start, v.binding) if x is not None]
    exprs += [a.value for w in whens for br in w.branches for a in br.actions
              if isinstance(a, (Assign, Reinit))]
    exprs += [br.condition for w in whens for br in w.branches]
    exprs += [a.cond for a in assertions]
    functions = resolver.used_functions(exprs)
    return replace(model, variables=variables, equations=equations, initial_equations=initial,
                   whens=whens, assertions=assertions, functions=functions)


class _Relower(Exception):
    """A Modelica text that uses a name it does not declare (maybe a whole array ``x`` of the
    declared ``x[1]``, ``x[2]``) or declares ``Real x[3];`` alone: it is parsed again and
    lowered (`parse_modelica`). Checking that after the plain build, which finds those names
    anyway, costs nothing on the files that need no lowering."""


__all__ = ["load_modelica", "parse_modelica", "parse_expression", "build_model", "Decl",
           "ParseContext", "normalize_name", "KEYWORDS", "MAX_FILE_BYTES", "MAX_TOKENS",
           "MAX_DEPTH", "too_large",
           "IGNORED_MODIFIERS", "read_file", "read_text", "decode_source"]
