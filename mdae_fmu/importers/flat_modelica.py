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

import bisect
import gc
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, cast
from pathlib import Path

from lark import Lark

from .. import expr as E
from ..diagnostics import InputError, SourceLoc
from ..ir import (Assertion, Assign, Equation, GuardLiteral, Model, Reinit, Terminate,
                  Variability, Variable, VarType, WhenBranch, WhenClause)
from . import arrays as A
from . import types as T
from .depth import MAX_DEPTH, limited
from . import values
from .annotations import read_experiment
from .algorithms import lower_algorithm
from .functions import CONSTANTS, FunctionCallbacks, FunctionResolver, Tuple
from .. import functions as F
from .fast_parser import FastParser, Lexer, Unsupported
from .lalr import Driver, ParseError
from .quiet_if import merge_quiet_if_equations
from .syntax import (ENUM_PREFIXES, NAME_PART_RE, Argument, Decl, Description, Modification,
                     Named, Stmt, fold_strings, normalize_name, unescape)

#: Files larger than this are refused before being read (bytes). The import of typical flat
#: models takes 15 to 25 bytes of memory per byte of text (docs/importers.md, "Limits").
MAX_FILE_BYTES = 128 * 1024 * 1024
#: Most tokens (plus XML elements) one file may have: a 10^6-equation model has about 18.5
#: million. Memory grows with what the tokens declare and build, at most about 250 bytes per
#: token (a file of nothing but short declarations); this bounds the import of any file to
#: about 5 GB (docs/importers.md, "Limits").
MAX_TOKENS = 20_000_000

_GRAMMAR = Path(__file__).with_name("modelica.lark")

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
#: Formal parameter names of built-in operators that flat output calls with named arguments
#: (Modelica 3.6 §3.7.4.4 homotopy, §3.7.5 sample, §3.7.4.3 semiLinear).
BUILTIN_PARAMETERS = {"homotopy": ("actual", "simplified"), "sample": ("start", "interval"),
                      "semiLinear": ("x", "k_pos", "k_neg")}
_STATEMENTS = ("reinit", "assert", "terminate", "print")
#: The options of String(x, ...) in the order of the specification (Modelica 3.6 §3.7).
_STRING_OPTIONS = ("significantDigits", "minimumLength", "leftJustified")
_BUILTIN_TYPES = frozenset(("Real", "Integer", "Boolean"))
_BINOPS = {op: op for op in E.BINARY_OPS}
_TRUE, _FALSE = E.Const(True), E.Const(False)
_UNOPS = {"-": "-", "+": "+", ".-": "-", ".+": "+"}

_SKIP_RE = re.compile(r"(?:\s+|//[^\n]*|/\*[\s\S]*?\*/)*")
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


class _Parser:
    """The lark grammar with the callbacks as its transformer, and the `lalr.Driver` that runs
    it; built once per process."""

    def __init__(self):
        self.callbacks = _Callbacks()
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
        self.lexer = Lexer(self.driver)


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


# --- per-parse state and intermediate form ---------------------------------------------------

@dataclass
class ParseContext:
    """Names, errors and positions gathered while parsing one file (or, for the XML importer,
    all the expressions of one file)."""
    filename: str
    text: str = ""
    line0: int = 1          # position of the parsed text in the file (XML attributes)
    col0: int = 1
    note: str = ""          # appended to messages, e.g. "in attribute 'rhs' of <equation>"
    refs: dict = field(default_factory=lambda: {"time": E.TIME})
    consts: dict = field(default_factory=dict)
    # name -> offset of its first use in the text (whole file), or (line, col, note, source)
    first_use: dict = field(default_factory=dict)
    enum_uses: dict = field(default_factory=dict)     # enum literal -> uses
    enum_consumed: dict = field(default_factory=dict)
    der_names: set = field(default_factory=set)
    errors: list = field(default_factory=list)        # (line, col, priority, message, src)
    stmts: dict = field(default_factory=dict)         # id -> pending statement calls
    term_ends: list = field(default_factory=list)     # end offsets of ; then else equation
    words: dict = field(default_factory=dict)  # one copy of each repeated string, names too
    string_params: list = field(default_factory=list)  # (name, value, constant, descr, where)
    folded: dict = field(default_factory=dict)        # id -> (node, value) of constant parts
    tokens_left: int = field(default_factory=lambda: MAX_TOKENS)
    whole_file: bool = True  # `text` is the whole file (False: XML attribute values)
    # the text uses arrays, for-equations, records, enumerations or type aliases: the
    # equations go through `lowering` before the model is built (issue 13)
    extended: bool = False
    inline_types: dict = field(default_factory=dict)  # "enumeration(a,b)" -> EnumDef
    record_names: set = field(default_factory=set)    # records defined so far
    enum_vars: dict = field(default_factory=dict)     # variable -> EnumDef (`lowering`)
    experiment: tuple = ()      # the class annotation's experiment values, where read
    functions: list = field(default_factory=list)     # function definitions (FunctionDef)
    annotations: list = field(default_factory=list)   # offsets of annotations not yet claimed
    calls: list = field(default_factory=list)         # (name, where, nargs) of non-built-ins
    # id -> (node, location) of the String(...) calls not (yet) found in the message of an
    # assert or terminate: any left when the model is built is refused (`string_call`)
    string_calls: dict = field(default_factory=dict)
    # id -> location of the String(x, format = ...) calls among them: supported only where
    # the value is not used (the binding of a String variable, which the model ignores)
    string_formats: dict = field(default_factory=dict)
    string_names: set = field(default_factory=set)    # String variables declared so far
    # (function, array sizes, Integer constants) -> (name, output shapes) of the functions
    # specialized per call sizes so far (`array_functions`): one per key in the whole file,
    # whichever function body or equation calls it
    array_specs: dict = field(default_factory=dict)
    # (offset, its line, the offset where that line starts): positions are counted from the
    # last one requested
    _cursor: tuple = (0, 1, 0)

    def line_col(self, pos: int) -> tuple[int, int]:
        """Line and column (from 1) of offset ``pos`` of the parsed text. Lines and the start
        of the line are counted from the previous request, so a pass through the text in order
        costs one pass (also along one very long line)."""
        text = self.text
        last, line, start = self._cursor
        if pos >= last:
            newlines = text.count("\n", last, pos)
            if newlines:                    # (the same int object on the same line)
                line += newlines
                start = text.rfind("\n", last, pos) + 1
        elif pos < start:
            line -= text.count("\n", pos, last)
            start = text.rfind("\n", 0, pos) + 1
        self._cursor = (pos, line, start)
        return line, pos - start + 1

    def loc(self, line: int, col: int) -> SourceLoc:
        """File position of (line, col) of the parsed text."""
        if line == 1:
            return SourceLoc(self.filename, self.line0, self.col0 + col - 1)
        return SourceLoc(self.filename, self.line0 + line - 1, col)

    def pos_loc(self, pos: int) -> SourceLoc:
        """File position of offset ``pos`` of the parsed text."""
        line, col = self.line_col(pos)
        if self.line0 == 1 and self.col0 == 1:    # a whole file: no shift (the usual case)
            return SourceLoc(self.filename, line, col)
        return self.loc(line, col)

    def tok_loc(self, tok: tuple) -> SourceLoc:
        """File position of a token ``(type, value, offset)``."""
        return self.pos_loc(tok[2])

    def where_loc(self, where) -> SourceLoc:
        """A location of the intermediate form (a SourceLoc, an offset or a token)."""
        t = type(where)
        if t is int:
            pos = where
        elif t is tuple:
            pos = where[2]
        else:
            return where
        last, line, start = self._cursor        # (`line_col`, inlined for the usual case)
        if pos < start or self.line0 != 1 or self.col0 != 1:
            return self.pos_loc(pos)
        if pos >= last:
            text = self.text
            newlines = text.count("\n", last, pos)
            if newlines:
                line += newlines
                start = text.rfind("\n", last, pos) + 1
        self._cursor = (pos, line, start)
        return SourceLoc(self.filename, line, pos - start + 1)

    def error(self, loc, message: str, priority: int = 0) -> tuple:
        """Record an error at ``loc`` (a SourceLoc or an offset); the earliest one in the file
        is raised when parsing ends."""
        loc = self.where_loc(loc)
        src = None if self.whole_file else self._src(loc)
        entry = (loc.line, loc.col, priority, message + self.note, src)
        self.errors.append(entry)
        return entry

    def withdraw(self, entry: tuple):
        """Forget an error recorded by `error` (the construct turned out to be valid)."""
        self.errors.remove(entry)

    def _src(self, loc: SourceLoc):
        """The line to show under a message: a line of the file, or the parsed expression text
        (an XML attribute value) placed at its column."""
        if not self.whole_file:
            return " " * (self.col0 - 1) + self.text if "\n" not in self.text else None
        return source_line(self.text, loc.line)

    def raise_first(self):
        if self.errors:
            line, col, _, message, src = min(self.errors, key=lambda e: e[:3])
            if src is None and self.whole_file and self.text:
                src = source_line(self.text, line)
            raise InputError(message, SourceLoc(self.filename, line, col), src)


def source_line(text: str, line: int) -> str | None:
    """Line ``line`` (from 1) of ``text``, without reading more than that line."""
    pos = 0
    for _ in range(line - 1):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return None
    end = text.find("\n", pos)
    return text[pos:] if end < 0 else text[pos:end]


# Locations ("where") and the tagged tuples of equation items and sections: module `syntax`.


# --- grammar callbacks ------------------------------------------------------------------------

class _Callbacks(FunctionCallbacks):
    """Callbacks of the LALR parser, one per grammar rule (lark calls them on each reduction
    with the list of children); they build expressions and the intermediate form."""

    ctx: ParseContext

    def _start(self, tok: tuple) -> int:
        """Offset of the start of the equation containing ``tok``: the first token after the
        last ``;``, ``then``, ``else`` or ``equation`` before it. Equations are reduced in
        source order, so the terminators before that one are dropped."""
        ctx = self.ctx
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

    # ---- expressions ----
    def number(self, c):
        text = c[0][1]
        k = self.ctx.consts.get(text)
        if k is None:
            try:
                k = E.Const(values.literal(text))
            except values.ValueProblem as p:
                self.ctx.error(c[0][2], str(p))
                return E.ZERO
            self.ctx.consts[text] = k
        return k

    def _value(self, e):
        """The value of a literal or of a constant sub-expression already evaluated
        (`values.fold`), None for anything else (booleans included)."""
        t = type(e)
        if t is E.Const:
            v = e.value
        elif t is E.BinOp or t is E.UnOp or t is E.Call:
            hit = self.ctx.folded.get(id(e))
            if hit is None or hit[0] is not e:
                return None
            v = hit[1]
        else:
            return None
        return None if type(v) is bool else v

    def _fold(self, node, where, compute):
        """Evaluate a constant sub-expression (module `values`): remember its value, or record
        the error at ``where`` (an offset) when it has no finite double value."""
        try:
            v = compute()
        except values.ValueProblem as p:
            self.ctx.error(where, f"{p} (in a constant expression)")
            return node
        if v is not None:
            self.ctx.folded[id(node)] = (node, v)
        return node

    def string(self, c):
        return E.Str(unescape(c[0][1][1:-1]))

    def true(self, c):
        return _TRUE                    # (immutable: one node for every `true`)

    def false(self, c):
        return _FALSE

    def ref(self, c):
        tok = c[0]
        r = self.ctx.refs.get(tok[1])
        if r is not None:
            return r
        return self._new_ref(tok)

    def _new_ref(self, tok):
        ctx = self.ctx
        name = normalize_name(tok[1])
        name = ctx.words.get(name, name)        # the declaration's copy (`component_clause`)
        r = E.Ref(name)
        if name.startswith(ENUM_PREFIXES):
            ctx.enum_uses[name] = ctx.enum_uses.get(name, 0) + 1
        else:
            ctx.refs[tok[1]] = r
        if name not in ctx.first_use:
            if ctx.whole_file:          # located only if the name turns out to be undefined
                ctx.first_use[name] = tok[2]
            else:
                loc = ctx.tok_loc(tok)
                ctx.first_use[name] = (loc.line, loc.col, ctx.note, ctx._src(loc))
        return r

    def binop(self, c):
        left, op_tok, right = c
        node = E.BinOp(_BINOPS[op_tok[1]], left, right)
        tr = type(right)
        if tr is E.Ref or tr is E.Der:          # the usual case: nothing to evaluate
            return node
        b = self._value(right)
        if b is None:
            return node
        a = self._value(left)
        if a is not None:
            return self._fold(node, op_tok[2], lambda: values.binary(node.op, a, b))
        if b == 0 and node.op in ("/", "./"):
            self.ctx.error(op_tok[2], "division by zero (the divisor is the constant 0)")
        return node

    def unop(self, c):
        op = _UNOPS[c[0][1]]
        arg = c[1]
        if op == "-" and type(arg) is E.Const and type(arg.value) is not bool:
            return E.Const(-arg.value)
        node = E.UnOp(op, arg)
        v = self._value(arg)
        if v is not None:
            self.ctx.folded[id(node)] = (node, -v if op == "-" else v)
        return node

    def binop_signed(self, c):
        """``a - -b``, ``a + -b`` (a sign right after a binary sign: outside Modelica 3.6
        §B.2.7, printed by OpenModelica, e.g. ``Celsius - -273.15``) read as ``a - (-b)``."""
        left, op_tok, sign_tok, right = c
        return self.binop([left, op_tok, self.unop([sign_tok, right])])

    def pow_signed(self, c):
        """``a ^ -b`` (``^`` then a unary sign, which Modelica 3.6 §B.2.7 does not allow but
        OpenModelica prints, e.g. ``n ^ -2.0``) read as ``a ^ (-b)``."""
        left, op_tok, sign_tok, right = c
        return self.binop([left, op_tok, self.unop([sign_tok, right])])

    def not_expr(self, c):
        return E.UnOp("not", c[0])

    def and_expr(self, c):
        return E.BinOp("and", c[0], c[1])

    def or_expr(self, c):
        return E.BinOp("or", c[0], c[1])

    def paren(self, c):
        return c[1]

    def if_expr(self, c):
        # [IF, cond, then, (ELSEIF, cond, then)*, ELSE, else]
        items = c[1:-2]
        result = c[-1]
        for j in range(len(items) - 2, -1, -3):
            result = E.If(_edges_as_pre(items[j]), items[j + 1], result)
        return result

    def _refuse(self, tok, message):
        self.ctx.error(self.ctx.tok_loc(tok), message)
        return E.ZERO

    def empty_slot(self, c):
        return None                     # an output a tuple does not assign

    def tuple_expr(self, c):
        entry = self.ctx.error(self.ctx.tok_loc(c[0]), "tuple expressions '(a, b, ...)' are "
                                                       "only allowed left of '=' or ':='")
        return Tuple(items=c[1:], error=entry)

    # array expressions are kept as `arrays` nodes and scalarized by `lowering` (issue 13)
    def array_expr(self, c):
        self.ctx.extended = True
        if c[0][0] == "LBRACE":
            return A.ArrayCons(tuple(c[1:]), c[0][2])
        rows, row = [], []
        for x in c[1:]:
            if type(x) is tuple:             # the SEMI token between rows
                rows.append(tuple(row))
                row = []
            else:
                row.append(x)
        rows.append(tuple(row))
        return A.MatrixCons(tuple(rows), c[0][2])

    def range_expr(self, c):
        self.ctx.extended = True
        if len(c) == 3:
            return A.Range(c[0], None, c[2], c[1][2])
        return A.Range(c[0], c[2], c[4], c[1][2])

    def end_expr(self, c):
        self.ctx.extended = True
        return A.END

    def end_offset(self, c):
        self.ctx.extended = True
        return E.BinOp(_BINOPS[c[0][1]], A.END, c[1])

    def range_to_end(self, c):
        # [a, COLON, END] or [a, COLON, step, COLON]: ``a:end``, ``a:step:end``
        self.ctx.extended = True
        step = c[2] if len(c) > 3 else None
        return A.Range(c[0], step, A.END, c[1][2])

    def range_from_end(self, c):
        # [COLON, b] or [COLON, step, COLON, b]: ``end:b``, ``end:step:b``
        self.ctx.extended = True
        if len(c) == 2:
            return A.Range(A.END, None, c[1], c[0][2])
        return A.Range(A.END, c[1], c[3], c[0][2])

    def array_subscripts(self, c):
        return tuple(A.COLON if type(x) is tuple else x for x in c[1:])

    def subscripted(self, c):
        self.ctx.extended = True
        tok = c[0]
        return A.Subscripted(normalize_name(tok[1]), c[1], tok[2])

    def paren_subscripted(self, c):
        # [LPAR, expression, subscripts]
        self.ctx.extended = True
        return A.Indexed(c[1], c[2], c[0][2])

    def call_subscripted(self, c):
        # [NAME, LPAR, call_args?, subscripts]
        self.ctx.extended = True
        return A.Indexed(self.call(c[:-1]), c[-1], c[0][2])

    def path_ref(self, c):
        # [NAME, subscripts, DOT_NAME, subscripts?, DOT_NAME, ...]: `a[i].b[1].c[j]`
        self.ctx.extended = True
        steps = []
        for x in c[2:]:
            if type(x) is tuple and x and type(x[0]) is str:     # a DOT_NAME token
                for m in NAME_PART_RE.finditer(x[1], 1):
                    plain, quoted, subs, _ = m.groups()
                    part = plain if plain is not None else unescape(quoted)
                    lits = () if not subs else tuple(
                        E.Const(int(n)) for n in re.sub(r"[ \t\[\]]", "", subs).split(","))
                    steps.append([part, lits])
            else:                                                  # its subscripts
                steps[-1][1] = steps[-1][1] + x
        tok = c[0]
        return A.Path(normalize_name(tok[1]), c[1], tuple((f, s) for f, s in steps), tok[2])

    def array_comprehension(self, c):
        self.ctx.extended = True
        return A.Comprehension(None, c[1], c[3], c[0][2])

    def call_comprehension(self, c):
        self.ctx.extended = True
        name = normalize_name(c[0][1])
        # array(e for i in r) is {e for i in r} (Modelica 3.6 §10.4.1)
        return A.Comprehension(None if name == "array" else name, c[2], c[4], c[0][2])

    def for_index(self, c):
        return (normalize_name(c[0][1]), c[2], c[0][2])

    def for_indices(self, c):
        return tuple(c)

    def named_arg(self, c):
        return Named(name=c[0], value=c[2])

    def call_args(self, c):
        return c

    def initial_call(self, c):
        return E.Call("initial", ())

    def call(self, c):
        tok = c[0]
        args = c[2] if len(c) > 2 else []
        name = normalize_name(tok[1])
        if name.startswith("Modelica.Math.") and name[14:] in E.MATH_FUNCTIONS:
            name = name[14:]
        elif name in ("Modelica.Math.Special.erf", "Modelica.Math.Special.erfc"):
            name = name[22:]
        ctx = self.ctx
        if name == "der":
            if len(args) != 1 or type(args[0]) is Named:
                ctx.error(ctx.tok_loc(tok), f"der expects 1 argument, got {len(args)}")
                return E.ZERO
            arg = args[0]
            if type(arg) is E.Ref:
                ctx.der_names.add(arg.name)
            else:
                ctx.der_names.update(E.refs(arg))
            return E.Der(arg)
        if name == "String":
            return self._string_call(tok, args)
        if name == "array" and \
                not any(type(a) is Named for a in args):
            ctx.extended = True         # array(a, b, ...) is {a, b, ...} (§10.4.1)
            return A.ArrayCons(tuple(args), tok[2])
        if name in _STATEMENTS:
            named = {}
            pos = []
            for a in args:
                if type(a) is Named:
                    named[normalize_name(a.name[1])] = a
                else:
                    pos.append(a)
            if ctx.string_calls:
                message_strings(ctx, pos[1 if name == "assert" else 0:] +
                                [a.value for k, a in named.items() if k != "condition"])
            s = Stmt(func=name, args=pos, named=named, loc=ctx.tok_loc(tok))
            ctx.stmts[id(s)] = s
            return s
        if name in ctx.record_names:         # a record constructor R(...)
            ctx.extended = True
            return A.ArrayCall(name, tuple(args), tok[2])
        counts = E.BUILTIN_FUNCTIONS.get(name)
        if name in A.ARRAY_FUNCTIONS and (counts is None or len(args) not in counts):
            return self._array_call(tok, name, args)
        if counts is None:
            if not ctx.whole_file:      # an XML equation list defines no functions
                ctx.error(ctx.tok_loc(tok), f"unknown function '{name}' (only the Modelica "
                                            "built-in functions and operators are supported)")
                return E.ZERO
            # a function defined in the file (checked when the model is built)
            for a in args:
                if type(a) is Named:
                    ctx.error(ctx.tok_loc(a.name), f"named arguments are not supported in "
                                                   f"'{name}(...)'")
                    return E.ZERO
            ctx.calls.append((name, tok[2], len(args)))
            return E.Call(name, tuple(args))
        args = self._by_position(name, args)
        if not self._arguments_fit(tok, name, args, counts):
            return E.ZERO
        node = E.Call(name, tuple(args))
        vals = [self._value(a) for a in args]
        if args and None not in vals:
            return self._fold(node, tok[2], lambda: values.call(name, tuple(vals)))
        return node

    def _string_call(self, tok, args):
        """``String(x, ...)`` (Modelica 3.6 §3.7, String conversion) as the canonical call
        ``String(x, minimumLength, leftJustified, significantDigits)``, the options that are
        not given at their defaults (0, true, 6). Named options are read by name; positional
        ones in the order their Boolean ``leftJustified`` shows: OpenModelica 1.x prints
        ``String(x, 0, true, 6)`` (significantDigits last), the specification and later
        OpenModelica ``String(x, 6, 0, true)``. An order that cannot be told (``String(x, n)``:
        minimumLength for an Integer, significantDigits for a Real) is refused, as is
        ``format``. The call is recorded in ``ctx.string_calls`` until the message of an
        assert or terminate claims it (`message_strings`)."""
        ctx = self.ctx
        where = ctx.tok_loc(tok)
        pos = [a for a in args if type(a) is not Named]
        if not args or type(args[0]) is Named:
            ctx.error(where, "String expects the value to convert as its first argument")
            return E.ZERO
        opts = pos[1:]
        order: tuple = ()
        if len(opts) == 2 and _boolean_form(opts[1]):
            order = ("minimumLength", "leftJustified")
        elif len(opts) == 2 and type(opts[1]) is E.Const and not _boolean_form(opts[0]):
            order = ("significantDigits", "minimumLength")
        elif len(opts) == 3 and _boolean_form(opts[1]) and not _boolean_form(opts[2]):
            order = ("minimumLength", "leftJustified", "significantDigits")
        elif len(opts) == 3 and _boolean_form(opts[2]) and not _boolean_form(opts[1]):
            order = _STRING_OPTIONS
        elif opts:
            ctx.error(where, "cannot tell which options of String these positional arguments "
                             "are: name them (String(x, significantDigits = 6, minimumLength "
                             "= 0, leftJustified = true))")
            return E.ZERO
        given = dict(zip(order, opts))
        for a in args[1 + len(opts):]:
            if type(a) is not Named:
                ctx.error(where, "positional arguments of String must come before the named "
                                 "ones")
                return E.ZERO
            key = a.name[1]
            if key == "format" and "format" not in given:
                given["format"] = a.name
                continue
            if key not in _STRING_OPTIONS or key in given:
                ctx.error(ctx.tok_loc(a.name), f"'String' has no parameter '{key}' here (its "
                          f"options: {', '.join(_STRING_OPTIONS)}; each given once)")
                return E.ZERO
            given[key] = a.value
        node = E.Call("String", (args[0], given.get("minimumLength", E.ZERO),
                                 given.get("leftJustified", E.Const(True)),
                                 given.get("significantDigits", E.Const(6))))
        ctx.string_calls[id(node)] = (node, where)
        if "format" in given:
            ctx.string_formats[id(node)] = ctx.tok_loc(given["format"])
        return node

    @staticmethod
    def _by_position(name: str, args: list) -> list:
        """``args`` of a built-in with the formal names of `BUILTIN_PARAMETERS` (OpenModelica
        prints ``homotopy(actual = a, simplified = s)``) in their positional order; a name that
        is not a formal parameter, or given twice, stays named (and is refused)."""
        formal = BUILTIN_PARAMETERS.get(name)
        if not formal or all(type(a) is not Named for a in args):
            return args
        out = [a for a in args if type(a) is not Named]
        named = {}
        for a in args:
            if type(a) is Named:
                key = a.name[1]
                if key not in formal or key in named or formal.index(key) < len(out):
                    return args
                named[key] = a.value
        for key in formal[len(out):]:
            if key not in named:
                break
            out.append(named.pop(key))
        return args if named else out

    def _arguments_fit(self, tok, name, args, counts) -> bool:
        """Positional arguments, as many as ``counts`` allows (99: any number from the
        first); otherwise the error is recorded and False returned."""
        ctx = self.ctx
        named = [a for a in args if type(a) is Named]
        formal = BUILTIN_PARAMETERS.get(name)
        if named and formal:      # the argument that `_by_position` could not place
            n_pos, seen = sum(type(a) is not Named for a in args), set()
            for a in named:
                key = a.name[1]
                if key not in formal or key in seen or formal.index(key) < n_pos:
                    named = [a]
                    break
                seen.add(key)
        for a in named[:1]:
            ctx.error(ctx.tok_loc(a.name), (
                f"'{name}' has no parameter '{a.name[1]}' here (its parameters, in order: "
                f"{', '.join(formal)}; each given once, positional ones first)")
                if formal else f"named arguments are not supported in '{name}(...)'")
            return False
        if len(args) not in counts:
            want = " or ".join(str(n) for n in counts) if counts[-1] < 99 else \
                f"at least {counts[0]}"
            ctx.error(ctx.tok_loc(tok), f"'{name}' expects {want} argument"
                                        f"{'' if counts == (1,) else 's'}, got {len(args)}")
            return False
        return True

    def _array_call(self, tok, name, args):
        """A call of an array function or cast (`arrays.ARRAY_FUNCTIONS`), evaluated by
        `lowering`; ``delay`` is refused here."""
        ctx = self.ctx
        counts = A.ARRAY_FUNCTIONS[name]
        if counts is None:
            ctx.error(ctx.tok_loc(tok), A.REFUSED_FUNCTIONS[name])
            return E.ZERO
        if not self._arguments_fit(tok, name, args, counts):
            return E.ZERO
        ctx.extended = True
        return A.ArrayCall(name, tuple(args), tok[2])

    # ---- equations ----
    def _limited(self, e, where):
        """``e`` within `depth.MAX_DEPTH` (long sums rebalanced), or an error at ``where``."""
        out = limited(e)
        if out is None:
            self.ctx.error(where, f"expression nested too deeply (more than {MAX_DEPTH} "
                                  "levels)")
            return E.ZERO
        return out

    def eq(self, c):
        lhs, eq_tok, rhs = c[0], c[1], c[2]
        if type(lhs) is Tuple:
            self.ctx.withdraw(lhs.error)
        start = self._start(eq_tok)
        if c[-1][2] + 1 - start > 2 * MAX_DEPTH:    # shorter text cannot nest that deep
            lhs = self._limited(lhs, start)
            rhs = self._limited(rhs, start)
        ctx = self.ctx
        if ctx.string_calls and ctx.string_names and any(
                type(x) is E.Ref and x.name in ctx.string_names for x in (lhs, rhs)):
            string_values(ctx, [lhs, rhs])      # `s = String(x)` of a String variable s
        return ("eq", lhs, rhs, start)

    def call_eq(self, c):
        e = c[0]
        if type(e) is Stmt:
            del self.ctx.stmts[id(e)]
            named = {k: Named(name=a.name, value=self._limited(a.value, e.loc))
                     for k, a in e.named.items()}
            return ("stmt", Stmt(func=e.func, args=[self._limited(a, e.loc) for a in e.args],
                                 named=named, loc=e.loc))
        self.ctx.error(self._start(c[-1]), "expected an equation 'lhs = rhs' (only reinit, "
                                           "assert, terminate and print can be called as "
                                           "statements)")
        return ("stmt", None)

    def _branches(self, c, branch_tag):
        """[KW, cond, items..., (tag, tok, cond, items)..., ...] -> [(cond, loc, items)], else."""
        ctx = self.ctx
        branches = [(c[1], ctx.tok_loc(c[0]), [])]
        orelse = None
        for x in c[2:]:
            if type(x) is list:
                branches[-1][2].extend(x)
            elif type(x) is tuple:
                if x[0] == branch_tag:
                    branches.append((x[2], ctx.tok_loc(x[1]), x[3]))
                elif x[0] == "else":
                    orelse = x[1]
                else:
                    branches[-1][2].append(x)
        return [(self._limited(cond, loc), loc, items) for cond, loc, items in branches], orelse

    def if_eq(self, c):
        branches, orelse = _literal_branches(*self._branches(c, "elseif"))
        return ("if", branches, orelse, self.ctx.tok_loc(c[0]))

    def if_item(self, c):
        """An if-statement: its branches as written."""
        branches, orelse = self._branches(c, "elseif")
        return ("if", branches, orelse, self.ctx.tok_loc(c[0]))

    def when_eq(self, c):
        branches, _ = self._branches(c, "elsewhen")
        out = []
        for cond, loc, items in branches:
            if type(cond) is A.ArrayCons and cond.items:
                # ``when {c1, c2} then A`` fires when any ci becomes true (Modelica 3.6
                # §8.3.5.1), which is not ``when c1 or c2`` (that one does not fire when c2
                # becomes true while c1 is true). It is ``when c1 then A elsewhen c2 then A``:
                # the first branch whose condition becomes true runs, once, ahead of the
                # elsewhen branches that follow.
                out.extend((self._limited(item, loc), loc, items) for item in cond.items)
            else:
                out.append((cond, loc, items))
        return ("when", out, self.ctx.tok_loc(c[0]))

    def for_eq(self, c):
        # [FOR, indices, LOOP, equations?, FOR, description?, annotation?, SEMI]
        self.ctx.extended = True
        items = c[3] if type(c[3]) is list else []
        return ("for", c[1], items, self.ctx.tok_loc(c[0]))

    def annotation_eq(self, c):
        self._class_annotation(c)
        return ("stmt", None)

    def elseif_branch(self, c):
        return ("elseif", c[0], c[1], c[2] if len(c) > 2 else [])

    def elsewhen_branch(self, c):
        return ("elsewhen", c[0], c[1], c[2] if len(c) > 2 else [])

    def else_branch(self, c):
        return ("else", c[1] if len(c) > 1 else [])

    # ---- lists (left-recursive, built in place) ----
    def _list(self, c):
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[-1])
        return c[0]

    equations = sections = arguments = decls = _list

    def elements(self, c):
        # declarations in a row, one flat ("decls", [Decl, ...]) section
        if len(c) == 1:
            return ("decls", c[0])
        c[0][1].extend(c[1])
        return c[0]

    # ---- sections and declarations ----
    def equation_section(self, c):
        return ("equations", c[1] if len(c) > 1 else [])

    def initial_equation_section(self, c):
        return ("initial", c[1] if len(c) > 1 else [])

    def element_section(self, c):
        return c[0] if c else ("decls", [])

    def parameter_equation(self, c):
        self.ctx.error(self.ctx.tok_loc(c[0]),
                       "'parameter equation' (Base Modelica) is not supported: give the "
                       "parameter a binding instead")
        return []

    def description(self, c):
        out = []
        for t in c:
            if t[0] == "STRING":
                out.append(unescape(t[1][1:-1]))
            elif t[1] != "+":
                self.ctx.error(self.ctx.tok_loc(t), "descriptions can only be joined with '+'")
        text = "".join(out)             # often repeated: shared through `words`
        return Description(text=self.ctx.words.setdefault(text, text))

    def annotation(self, c):
        if self.ctx.whole_file:
            self.ctx.annotations.append(c[0][2])
        return c[0][2]                  # where it starts: `annotation_end` reads it again

    def _class_annotation(self, c):
        """An ``annotation(...);`` clause (class element or among the equations): its
        ``experiment`` values (`annotations.read_experiment`) are the model's
        (`ParseContext.experiment`)."""
        start = c[0]
        if type(start) is not int or not self.ctx.whole_file:
            return
        pairs, problems = read_experiment(self.ctx.text[start:c[1][2]])
        for offset, message in problems:
            self.ctx.error(start + offset, message)
        if pairs:
            self.ctx.experiment = pairs
    def annotation_element(self, c):
        self._class_annotation(c)
        return []

    # ---- type definitions (issue 13; `types` module) ----
    def within_clause(self, c):
        return ("within",)

    def definitions(self, c):
        return ("decls", [d for x in c for d in x])

    def enum_literal(self, c):
        desc = next((x.text for x in c[1:] if type(x) is Description), None)
        return (normalize_name(c[0][1]), c[0][2], desc)

    def enum_literals(self, c):
        return c

    def _enum(self, c, name, where):
        lits = next((x for x in c if type(x) is list), [])
        return T.EnumDef(name, tuple(x[0] for x in lits), where, tuple(x[1] for x in lits),
                         tuple(x[2] for x in lits))

    def enum_definition(self, c):
        self.ctx.extended = True
        return [self._enum(c, normalize_name(c[1][1]), c[1][2])]

    def enum_type(self, c):
        # the inline ``enumeration(a, b) x;`` of OpenModelica's flat output: a type name
        # token of its own, resolved through `ParseContext.inline_types`
        ctx = self.ctx
        ctx.extended = True
        e = self._enum(c, "", c[0][2])
        key = "enumeration(" + ",".join(e.literals) + ")"
        ctx.inline_types.setdefault(key, replace(e, name=key))
        return ("NAME", key, c[0][2])

    def type_alias(self, c):
        # [TYPE, NAME, EQ, NAME, subscripts?, class_modification?, description?, annotation?]
        self.ctx.extended = True
        base = c[3]
        dims = ()
        mods = []
        desc = None
        for x in c[4:]:
            if type(x) is tuple and x and x[0] == "SEMI":
                continue
            if type(x) is tuple:
                dims = x
            elif type(x) is list:
                mods = x
            elif type(x) is Description:
                desc = x.text
        return [T.AliasDef(normalize_name(c[1][1]), c[1][2], normalize_name(base[1]),
                           base[2], dims, self._modifiers(mods, False), desc)]

    def record_definition(self, c):
        # [RECORD, NAME, description?, ("decls", [...])?, NAME, SEMI]
        self.ctx.extended = True
        decls = next((x[1] for x in c if type(x) is tuple and x and x[0] == "decls"), [])
        name = normalize_name(c[1][1])
        end = normalize_name(c[-2][1])
        if end != name:
            self.ctx.error(self.ctx.tok_loc(c[-2]), f"'end {end};' does not match "
                                                    f"'record {name}'")
        self.ctx.record_names.add(name)
        return [T.RecordDef(name, c[1][2], tuple(decls))]

    def argument(self, c):
        # [EACH?, FINAL?, NAME, modification?, description?]
        name_tok = None
        mod = None
        for x in c:
            if type(x) is tuple and x[0] == "NAME":
                name_tok = x
            elif type(x) is Modification:
                mod = x
        return Argument(name=name_tok, mod=mod)

    def class_modification(self, c):
        return c[1] if len(c) > 1 else []

    def modification(self, c):
        # [class_modification] | [class_modification, EQ, expr] | [EQ or ASSIGN, expr]
        args = c[0] if type(c[0]) is list else None
        binding = c[-1] if len(c) > 1 else None
        return Modification(args=args, binding=binding)

    def component_decl(self, c):
        mod = None
        desc = None
        for x in c[1:]:
            if type(x) is Modification:
                mod = x
            elif type(x) is Description:
                desc = x.text
        return (c[0], mod, desc)

    def _modifiers(self, args, long_clause):
        """[(name, value, where, nested), ...] of a class modification's arguments; a nested
        modification keeps its own arguments as the value (records: ``r(x(start = 1))``)."""
        words = self.ctx.words
        modifiers = []
        for a in args or ():
            m = a.mod
            name = normalize_name(a.name[1])
            value = None if m is None else m.binding
            if long_clause and value is not None:
                value = self._limited(value, a.name[2])
            nested = m is not None and m.args is not None
            if nested and m.args and "." not in name:
                self.ctx.extended = True   # maybe a record field: `lowering` decides
                value = T.Nested(self._modifiers(m.args, long_clause), value)
            modifiers.append((words.setdefault(name, name), value, a.name[2], nested))
        return modifiers

    def component_clause(self, c):
        # [prefix..., type NAME, decls, SEMI]; small strings repeated in every declaration
        # (type, prefix and modifier names) and the declared names, which the references
        # use, are shared through `words`
        words = self.ctx.words
        prefixes = []
        i = 0
        while c[i][0] != "NAME":
            prefixes.append((words.setdefault(c[i][1], c[i][1]), c[i][2]))
            i += 1
        type_tok = c[i]
        type_name = normalize_name(type_tok[1])
        type_name = words.setdefault(type_name, type_name)
        if type_name not in _BUILTIN_TYPES:       # String, alias, enumeration, record
            self.ctx.extended = True
        decls = []
        long_clause = c[-1][2] + 1 - type_tok[2] > 2 * MAX_DEPTH
        prefixes = tuple(prefixes)
        type_dims = c[i + 1] if type(c[i + 1]) is tuple and c[i + 1] and \
            c[i + 1][0] != "NAME" and type(c[i + 1][0]) is not str else ()
        if type_name[-1] == "]":        # `Real[3] x`: the literal subscripts are in the token
            k = type_name.rfind("[")
            type_dims = tuple(E.Const(int(n)) for n in type_name[k + 1:-1].split(",")) + \
                type_dims
            type_name = type_name[:k]
            self.ctx.extended = True
        for name_tok, mod, desc in c[-2]:
            dims = type_dims
            if type(name_tok) is A.Subscripted:     # `Real x[3]`
                dims = name_tok.subs + type_dims
                name_tok = ("NAME", name_tok.name, name_tok.where)
            where = name_tok[2]
            modifiers = ()
            binding = None
            if mod is not None:
                binding = mod.binding
                if long_clause and binding is not None:
                    binding = self._limited(binding, where)
                if mod.args:
                    modifiers = self._modifiers(mod.args, long_clause)
            name = normalize_name(name_tok[1])      # one copy, shared with its references
            if type_name == "String":
                self.ctx.string_names.add(name)
                if binding is not None and self.ctx.string_calls:
                    string_values(self.ctx, [binding])
            decls.append(Decl(name=words.setdefault(name, name), loc=where, type_name=type_name,
                              type_loc=type_tok[2], prefixes=prefixes, modifiers=modifiers,
                              binding=binding, description=desc, dims=dims))
        return decls

    def array_type_clause(self, c):
        # `Real[3] x;`: the type's dimensions come before the declaration's own
        self.ctx.extended = True
        return self.component_clause(c)

    def class_definition(self, c):
        # [kind, NAME, description?, contents..., NAME(end), SEMI]
        contents = []
        for x in c[2:-2]:
            if type(x) is list:              # sections
                contents.extend(x)
            elif type(x) is tuple:           # the declarations before the first section
                contents.append(x)
        return ("class", c[0], c[1], c[-2], contents)

    def package_definition(self, c):
        cls = next(x for x in c if type(x) is tuple and x[0] == "class")
        consts = [x for x in c if type(x) is tuple and x[0] == "decls"]
        return ("package", c[1], c[-2], consts, cls)

    def start(self, c):
        # [BASE_HEADER?, ("within",)?, ("decls", type definitions)?, class or package]
        result = c[-1]
        defs = next((x for x in c[:-1] if type(x) is tuple and x and x[0] == "decls"), None)
        if defs is not None:
            (result[3] if result[0] == "package" else result[4]).insert(0, defs)
        return result


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
        return InputError("syntax error: " + msg + ctx.note, loc, ctx._src(loc))
    kind, value, start = err.token
    loc = ctx.pos_loc(start)
    if kind == "$END":
        if err.previous is None and ctx.whole_file:
            return InputError("no class definition in the file (only comments): expected "
                              "'class Name ... end Name;'", loc, ctx._src(loc))
        return InputError("syntax error: unexpected end of input" +
                          _describe_expected(err.expected, parser) + ctx.note, loc,
                          ctx._src(loc))
    for p in (start - 1, start):
        if p >= 0 and text.startswith("/*", p):
            loc = ctx.pos_loc(p)
            return InputError("syntax error: unterminated comment '/*'" + ctx.note, loc,
                              ctx._src(loc))
    if err.previous is not None and err.previous[0] == "PARTIAL":
        # (`partial function` is read: the type of functional input arguments)
        loc = ctx.pos_loc(err.previous[2])
        return InputError("unsupported construct: " + _UNSUPPORTED_KEYWORDS["PARTIAL"] +
                          ctx.note, loc, ctx._src(loc))
    if kind in _UNSUPPORTED_KEYWORDS:
        return InputError("unsupported construct: " + _UNSUPPORTED_KEYWORDS[kind] + ctx.note,
                          loc, ctx._src(loc))
    shown = value if len(value) <= 40 else value[:40] + "..."
    prev = err.previous
    machine = _STATE_MACHINE.search(text, max(0, start - 200), start)
    if machine is not None:
        where = ctx.pos_loc(machine.start(1))
        return InputError("unsupported construct: a state machine (Modelica 3.6 §17, printed "
                          "by OpenModelica as 'stateMachine ... state ...'), which is "
                          "synchronous Modelica: write its modes with Boolean or Integer "
                          "variables updated in when-clauses" + ctx.note, where,
                          ctx._src(where))
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
                      ctx._src(loc))


# OpenModelica's flat output of a state machine: 'stateMachine name' right before the error
_STATE_MACHINE = re.compile(r"(?:^|\s)(stateMachine)\s+[\w.']+\s*$")


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector (if it runs) while a model is built. An import
    allocates millions of small acyclic objects; without the pause the collector scans the
    growing heap again and again, about 20 % of the import time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def too_large(loc: SourceLoc) -> InputError:
    """The error of a file with more than `MAX_TOKENS` tokens (and XML elements)."""
    return InputError(f"model too large: more than {MAX_TOKENS:,} tokens (the limit keeps the "
                      "memory of an import under about 5 GB)", loc)


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
    with gc_paused():
        try:
            return _parse_class(text, ParseContext(filename=filename, text=text))
        except _Relower:
            pass        # (outside the handler the first attempt's objects are freed)
        return _parse_class(text, ParseContext(filename=filename, text=text, extended=True))


def _parse_start(text: str, ctx: ParseContext) -> tuple:
    """Rule ``start`` of a whole file: (the callbacks' value, the context that holds what they
    recorded). The hand-written parser (`fast_parser`) reads the texts it covers; any other text,
    and every text when `PARSER` is ``"lalr"``, is parsed by the LALR driver, in a fresh context
    when the hand-written parser gave up half-way."""
    if PARSER == "fast":
        with _lock:
            parser = _parser()
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

def _edges_as_pre(cond: E.Expr) -> E.Expr:
    """The condition of an if-expression with ``edge(b)`` written ``b and not pre(b)`` and
    ``change(b)`` written ``b <> pre(b)`` (Modelica 3.6 §3.7.5), for a variable ``b``: the
    value of such an if-expression is a plain Boolean function of ``b`` and ``pre(b)``
    (OpenModelica's BouncingBallExamples: ``v_new = if edge(impact) then -e*pre(v) else 0``
    in a when-clause, which the code generator could not build)."""
    found = [n for n in E.walk(cond) if type(n) is E.Call and n.func in ("edge", "change")
             and len(n.args) == 1 and type(n.args[0]) is E.Ref]
    if not found:
        return cond
    mapping: dict[E.Expr, E.Expr] = {
        n: E.BinOp("and", n.args[0], E.UnOp("not", E.Call("pre", n.args)))
        if n.func == "edge" else E.BinOp("<>", n.args[0], E.Call("pre", n.args))
        for n in found}
    return E.substitute(cond, mapping)


def _literal_branches(branches: list, orelse: list | None) -> tuple[list, list | None]:
    """The branches of an if-equation without those whose condition is a Boolean literal
    (Modelica 3.6 §8.3.4): a ``false`` branch is never taken; a ``true`` branch is taken
    whenever the branches before it are not, so it is the else-branch, and the branches after
    it are never taken (OpenModelica prints ``elseif true then`` for the last branch). No guard
    is ever the constant ``true`` or ``false``; an if-equation whose first branch is ``true``
    is its body (no branch left, its body the else-branch)."""
    kept: list = []
    for branch in branches:
        cond = branch[0]
        if type(cond) is E.Const and type(cond.value) is bool:
            if cond.value:
                return kept, branch[2]
            continue
        kept.append(branch)
    return kept, orelse


def _literal(cond: E.Expr, positive: bool = True) -> GuardLiteral:
    """Guard literal of an if-condition, ``not`` stripped into the sign (ir module docstring)."""
    while type(cond) is E.UnOp and cond.op == "not":
        cond = cond.arg
        positive = not positive
    return GuardLiteral(cond=cond, positive=positive)


def _boolean_form(e) -> bool:
    """``e`` is a Boolean by its form: a Boolean literal, a relation, and/or/not."""
    t = type(e)
    return (t is E.Const and type(e.value) is bool) or \
        (t is E.BinOp and e.op in E.REL_OPS + E.BOOL_OPS) or (t is E.UnOp and e.op == "not")


def message_strings(ctx: ParseContext, messages) -> None:
    """The String(...) calls inside ``messages`` (expressions of an assert or terminate
    message) are where String is supported: claim them (`Callbacks._string_call`)."""
    for n in _string_calls(messages):
        ctx.string_calls.pop(id(n), None)
        where = ctx.string_formats.pop(id(n), None)
        if where is not None:
            ctx.error(where, "String(r, format = ...) is not supported in a message (use "
                             "significantDigits, minimumLength and leftJustified)")


def string_values(ctx: ParseContext, exprs) -> None:
    """The String(...) calls inside ``exprs`` (the binding of a String variable, an equation
    between Strings) give the value of a String variable, which the model ignores (docs/
    importers.md, "String variables"): claim them, the ``format`` option included."""
    for n in _string_calls(exprs):
        ctx.string_calls.pop(id(n), None)
        ctx.string_formats.pop(id(n), None)


def _string_calls(exprs):
    for m in exprs:
        for n in E.walk(m):
            if type(n) is E.Call and n.func == "String":
                yield n


def refuse_string_calls(ctx: ParseContext) -> None:
    """Refuse every String(...) call no assert or terminate message claimed."""
    for _node, where in ctx.string_calls.values():
        ctx.error(where, "String(...) is only supported in the message of assert or terminate "
                         "and in the value of a String variable (which the model ignores)")
    ctx.string_calls.clear()
    ctx.string_formats.clear()


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

    def err(self, where, message, priority=0):
        loc = self.ctx.where_loc(where)
        self.ctx.errors.append((loc.line, loc.col, priority, message, None))

    # ---- declarations ----
    def declare(self, d: Decl):
        loc = self.ctx.where_loc(d.loc)
        if d.name in self.declared:
            first = self.declared[d.name]
            assert first is not None        # (the importer's own names come after the file's)
            self.err(loc, f"duplicate declaration of '{d.name}' (first declared at "
                          f"{first.short()}:{first.col})")
            return
        if d.name == "time":
            self.err(loc, "'time' is the built-in time variable and cannot be declared")
            return
        self.declared[d.name] = loc
        kw: dict[str, Any] = {}
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
        if d.type_name not in ("Real", "Integer", "Boolean"):
            if d.type_name == "String":
                self.err(d.type_loc, f"String variables are not supported ('{d.name}')")
            elif "[" in d.type_name:
                self.err(d.type_loc, "array declarations are not supported (only scalarized "
                                     "models: declare each element)")
            else:
                self.err(d.type_loc, f"unsupported type '{d.type_name}' of '{d.name}': only "
                                     "Real, Integer and Boolean (records, enumerations and type "
                                     "aliases are not supported)")
            return
        explicit = d.explicit or {}       # XML: attributes given explicitly win
        variability = explicit.get("variability", variability)
        if variability is None:
            variability = "continuous" if d.type_name == "Real" else "discrete"
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
        causality = explicit.get("causality", causality)
        if causality == "input" and d.binding is not None \
                and variability not in ("parameter", "constant"):
            self.err(loc, f"input '{d.name}' has a binding: a variable with a binding "
                          "equation is computed, no host sets it; drop causality=\"input\" "
                          "or the binding (a default value for the host is its start)")
        seen = {}
        for mname, value, mloc, nested in d.modifiers:
            if mname == "StateSelect":
                # OpenModelica's old front end (instantiateModel of MSL 3.1 examples) prints
                # the attribute capitalized: `Real phi(StateSelect = StateSelect.default)`
                mname = "stateSelect"
            if mname in seen:
                self.err(mloc, f"modifier '{mname}' given twice for '{d.name}'")
                continue
            seen[mname] = True
            if nested:
                self.err(mloc, f"nested modification of '{mname}' is not supported")
                continue
            if mname in IGNORED_MODIFIERS:
                continue
            if mname not in _MODIFIERS:
                self.err(mloc, f"unsupported modifier '{mname}' of '{d.name}' (supported: "
                               f"{', '.join(_MODIFIERS + IGNORED_MODIFIERS)})")
                continue
            if value is None:
                self.err(mloc, f"modifier '{mname}' of '{d.name}' has no value")
                continue
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
        binding: E.Expr | None = None
        if d.binding is not None:
            if variability in ("parameter", "constant"):
                binding = cast(E.Expr, d.binding)
            else:
                self.add_equation(("eq", E.Ref(d.name), d.binding, loc), ())
        enum = self.ctx.enum_vars.get(d.name) if self.ctx.enum_vars else None
        if enum is not None:
            kw["declared_type"] = enum.name
        self.variables.append(Variable(
            name=d.name, type=cast(VarType, d.type_name),    # (checked above)
            variability=cast(Variability, variability), causality=causality,
            description=d.description, binding=binding, loc=loc, **kw))

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
        append = target.append
        prefix = "i" if initial else "e"
        where_loc = self.ctx.where_loc
        while stack:
            it, guard = stack[-1]
            for item in it:
                if item is None or item[0] != "eq" or type(item[1]) is Tuple:
                    break
                # `add_equation` of one residual, inlined (the usual item)
                _, lhs, rhs, where = item
                if type(lhs) is E.Const or type(rhs) is E.Const:
                    r = E.residual(lhs, rhs)
                else:
                    r = E.BinOp("-", lhs, rhs)
                append(Equation(f"{prefix}{len(target) + 1}", r, guard, where_loc(where)))
            else:
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
        # the names used and not declared, in one pass in C (usually none); then their uses
        # in the order of the text
        undeclared = ctx.first_use.keys() - self.declared.keys()
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
    b = _ModelBuilder(name, ctx)
    b.experiment = ctx.experiment
    resolver = FunctionResolver(ctx.functions, ctx, b.err) if ctx.functions or ctx.calls \
        else None
    for sec in sections:
        tag = sec[0]
        if tag == "decls":
            for d in _drained(sec[1]):
                b.declare(d)
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
