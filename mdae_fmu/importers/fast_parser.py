"""A hand-written parser for the common subset of flat Modelica: a tokenizer over one compiled
regular expression and a recursive-descent parser with precedence climbing for expressions.

It reads the same language as the LALR(1) grammar ``modelica.lark`` on the subset below and
calls the grammar's callbacks (`flat_modelica`'s ``_Callbacks``) with the same children, in the
same order, as the LALR driver (`lalr.Driver`) does: the syntax tree (module `syntax`) and every
error the callbacks record are therefore the same. The grammar stays the reference:
tests/importers/test_fast_parser.py parses the reference models, the corpus, generated models and
hypothesis-generated expressions both ways and requires equal results and equal errors.

The tokens are lark's own: the driver's alternation of all terminals in lark's order
(`lalr.Driver.root_re`) and its keyword remapping. A token that the parser accepts here is
also what lark's contextual lexer reads in the corresponding LALR state (the argument of the
`lalr` module docstring); any other token is handed to the LALR path.

Covered: one ``class``/``model``/``block`` definition, alone or in a Base Modelica package (with
declarations before and after it), after an optional ``//! base`` header, ``within`` clause and
type, record and function definitions; component declarations (prefixes, modifications,
descriptions, annotations, array dimensions), type aliases, enumeration types, records and
functions among them, ``public``/``protected`` sections, equation and initial equation
sections with equations ``lhs = rhs``, statement-like calls, if-, when- and for-equations,
algorithm and initial algorithm sections with every statement, external sections, and the
expressions of Modelica 3.6 §B.2.7 with calls, named arguments, array constructors ``{...}``
and ``[...; ...]``, ranges and subscripts. Not covered (`Unsupported`: the caller parses the
whole text with the LALR driver instead): connectors, ``parameter equation``, inline
``enumeration(...)`` types of a declaration, tuples ``(a, b)``, array comprehensions, ``end``
in subscripts, subscripts after a call or a parenthesized expression, field paths
``a[i].b``, the upper-case logical operators of the old OpenModelica front end where a name is
expected, and every syntax error (the LALR path reports it with its message), as well as texts
nested deeper than Python's recursion limit.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any, Callable

from .declaration_callbacks import elements as join_elements
from .lalr import Driver
from .parse_traces import Recorder, Trace, compile_trace
from .terminal_table import TerminalTable


class Unsupported(Exception):
    """The text leaves the subset this parser covers (or has a syntax error): parse it with
    the LALR driver."""


#: terminal kinds allowed inside an annotation's balanced token soup (``_ann_atom``)
_ANNOTATION_ATOMS = frozenset("""
NAME NUMBER STRING TRUE FALSE EQ _COMMA ADD_OP MUL_OP POW_OP REL_OP COLON SEMI ASSIGN EACH FINAL
IF _THEN ELSEIF ELSE _AND _OR _NOT _END INITIAL EQUATION PARAMETER CONSTANT DISCRETE INPUT OUTPUT
WHEN ELSEWHEN CLASS MODEL BLOCK PACKAGE REDECLARE REPLACEABLE FOR IN LOOP TYPE RECORD ENUMERATION
WITHIN FUNCTION ALGORITHM EXTERNAL""".split())
_OPENERS = {"LPAR": "_RPAR", "LBRACE": "_RBRACE", "LBRACK": "_RBRACK"}
_TYPE_PREFIXES = frozenset(("FINAL", "PARAMETER", "CONSTANT", "DISCRETE", "INPUT", "OUTPUT",
                            "FLOW", "STREAM", "INNER", "OUTER", "REPLACEABLE", "REDECLARE"))
_CLASS_KINDS = frozenset(("CLASS", "MODEL", "BLOCK"))
_NO_KINDS: frozenset = frozenset()
#: runs of ASCII digits, replaced by one "0" in the key of a line's shape (`Lexer.learn`)
_DIGITS = re.compile("[0-9]+")
_BLANK_CHARS = " \t\f\r\n\ufeff"
#: bounds of the line shapes (`Lexer.learn`): shapes kept, keys counted, characters and tokens
#: of a line that can have a shape
MAX_SHAPES = 1024
MAX_SEEN = 16384
MAX_SHAPE_CHARS = 512
MAX_SHAPE_TOKENS = 64
#: shapes tried, before a line's key is computed, after a line of a given shape (`_fill`)
MAX_SUCCESSORS = 4
#: refused parse-trace records of one shape and rule before the rule parses it token by token
MAX_TRACE_FAILURES = 3
#: the terminals whose end offsets are recorded (`flat_modelica._TERMINATORS`)
_TERMINATORS = frozenset(("SEMI", "_THEN", "ELSE", "EQUATION", "INITIAL_EQUATION", "ALGORITHM",
                          "INITIAL_ALGORITHM", "LOOP"))


class Line(tuple):
    """The token that stands for a whole line of a shape whose rule has a trace from the
    line's match (`parse_traces.LineTrace`): ``(kind of its first token, "", offset of its
    first token, shape, match)``. The parser reads it as that first token (its kind and
    offset); `FastParser._replayed` runs the trace on the match, and any other reading of the
    line puts the line's tokens in its place first (`FastParser._expand`)."""

    __slots__ = ()


class Lexer:
    """lark's root lexing of a text (the terminals of `lalr.Driver.root_terminals` in lark's
    order, or the same shipped as data, `terminal_table.TerminalTable`), in batches: one
    match of ``blanks (token)`` where the previous token ended, and the terminal of each
    token told from its text, which is exact because a fixed text
    belongs to one terminal only and the other terminals differ in their first character
    (`classify`)."""

    def __init__(self, driver: Driver | TerminalTable) -> None:
        body = "|".join(f"(?:{t.pattern.to_regexp()})" for t in driver.root_terminals)
        self.regex = re.compile(f"[ \\t\\f\\r\\n\\ufeff]*({body})", driver.flags)
        self.ignore = driver.ignore
        fixed: dict[str, str] = {}
        for t in driver.root_terminals:
            if t.pattern.type == "str":
                fixed[t.pattern.value] = t.name
        for words in driver.remap.values():
            for word, keyword in words.items():
                fixed[word] = keyword
        for kind, values in (("REL_OP", ("<=", ">=", "==", "<>", "<", ">")),
                             ("ADD_OP", ("+", "-", ".+", ".-")),
                             ("MUL_OP", ("*", "/", ".*", "./")), ("POW_OP", ("^", ".^"))):
            for v in values:
                fixed[v] = kind
        self.fixed = fixed
        first: dict[str, str] = {}
        for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghjklmnopqrstuvwxyz_$'":
            first[c] = "NAME"
        for c in "0123456789":
            first[c] = "NUMBER"
        first['"'] = "STRING"
        first["."] = "DOT_NAME"
        for c in " \t\f\r\n\ufeff":
            first[c] = "WS"
        self.first = first          # 'i' (initial equation) and '/' (comments): `_classify`
        self.base_header = next(re.compile(t.pattern.to_regexp()) for t in driver.root_terminals
                                if t.name == "BASE_HEADER")
        self.flags = driver.flags
        # the terminals whose text varies from line to line of one shape (`learn`)
        self.varying = {t.name: t.pattern.to_regexp() for t in driver.root_terminals
                        if t.name in ("NAME", "NUMBER", "STRING")}
        self.line_key = _DIGITS.sub
        # line key -> (regex, kinds, terminator groups, rule -> its parse trace or failures,
        # the token groups, the shapes that followed it, most recent first, rule -> its
        # trace from the line's match: `Line`)
        self.shapes: dict[str, tuple] = {}
        self.seen: dict[str, int] = {}        # line key -> lines seen with it (not yet shapes)

    def learn(self, key: str, text: str, toks: list) -> None:
        """Remember the shape of a line lexed token by token (``toks``, the tokens of the line
        ``key`` came from, in ``text``), once a second line has that key: the regular
        expression that matches exactly the lines with that key, each token in a group of its
        own: the line's text with every run of ASCII digits matched by ``[0-9]+``.

        A line with the same key differs from this one only in its runs of ASCII digits
        (`_DIGITS`), and every terminal treats any run of digits as any other (``\\d+``,
        ``[0-9]*``; no fixed text holds a digit), so the lexer splits it into the same kinds
        at the corresponding places, which are the groups' (each run of digits is bounded by
        characters matched as themselves). A match of the expression is therefore both the
        test that a line has the key and its split (`FastParser._fill` tries the shapes that
        followed the previous line's before it computes a key). At most `MAX_SHAPES` shapes of
        at most `MAX_SHAPE_TOKENS` tokens are kept (and `MAX_SEEN` keys counted, of lines of at
        most `MAX_SHAPE_CHARS` characters): text whose lines all differ is lexed token by
        token."""
        shapes = self.shapes
        if len(shapes) >= MAX_SHAPES or len(toks) > MAX_SHAPE_TOKENS:
            return
        seen = self.seen
        if seen.get(key, 0) == 0:
            if len(seen) >= MAX_SEEN:
                seen.clear()
            seen[key] = 1
            return
        del seen[key]
        fixed, varying = self.fixed, self.varying
        parts = []
        terms = []
        end = text.rfind("\n", 0, toks[0][2] + 1)
        if end < 0:
            return
        for g, (kind, value, start) in enumerate(toks, 1):
            blanks = text[end:start]
            if blanks.strip(_BLANK_CHARS):
                return
            if fixed.get(value) == kind:
                body = re.escape(value)
            elif kind in varying:
                body = "[0-9]+".join(map(re.escape, _DIGITS.split(value)))
            else:
                return
            parts.append(re.escape(blanks) + "(" + body + ")")
            end = start + len(value)
            if kind in _TERMINATORS:
                terms.append(g)
        regex = re.compile("".join(parts) + r"(?=\n|\Z)", self.flags)
        if regex.groups == len(toks):
            shapes[key] = (regex, tuple(t[0] for t in toks), tuple(terms), {},
                           range(1, len(toks) + 1), [], {})

    def classify(self, value: str) -> str:
        """The terminal of a token text starting with 'i' or '/' that is not a fixed text."""
        if value[0] == "i":
            if len(value) > 7 and value.startswith("initial") and \
                    value[7] in " \t\f\r\n\v/":
                return "INITIAL_EQUATION" if value.endswith("equation") else "INITIAL_ALGORITHM"
            return "NAME"
        if value.startswith("/*"):
            return "BLOCK_COMMENT"
        if self.base_header.fullmatch(value):
            return "BASE_HEADER"
        return "COMMENT"


def _follows(following: list, shape: tuple) -> None:
    """Record that a line of ``shape`` followed a line whose shape has the successor list
    ``following`` (most recent first, at most `MAX_SUCCESSORS`)."""
    if following[:1] != [shape]:
        if shape in following:
            following.remove(shape)
        following.insert(0, shape)
        del following[MAX_SUCCESSORS:]


class FastParser:
    """One parse of one text (`parse_start`, `parse_expression`) with the grammar callbacks
    ``cb`` and the lexer tables of ``lexer``. ``term_ends`` receives the end offsets of the
    terminator tokens (as `lalr.Driver.parse` does; they are appended as the tokens are lexed,
    a batch ahead of the parse, which `callback_common.equation_start` allows); at most
    ``max_tokens`` tokens are read (then `Unsupported`: the LALR path reports the limit)."""

    BATCH = 4096

    def __init__(self, lexer: Lexer, callbacks: Any, text: str, term_ends: list,
                 max_tokens: int) -> None:
        self.cb = callbacks
        self.lexer = lexer
        self.text = text
        self.match = lexer.regex.match
        self.lexed = 0                  # end of the last token lexed
        self.term_ends = term_ends
        self.left = max_tokens
        self.budget = max_tokens
        self.toks: list = []
        self.i = 0
        self.done = False
        self.kind = ""
        self.tok: tuple = ("$END", "", 0)
        # offset of the first token of a line lexed by its shape -> the shape (`_traced`)
        self.line_starts: dict[int, tuple] = {}
        self.recording = False
        self.prev_shape: tuple | None = None     # shape of the last line lexed (`_fill`)
        self.replayed = 0               # lines parsed by a trace (tests, benchmarks)
        self.advance()

    @property
    def tokens_read(self) -> int:
        return self.budget - self.left

    # ---- tokens ----
    def _fill(self) -> None:
        """Lex the next tokens (a batch, or what is left) after the ones not yet read; the
        ``$END`` token after the last one. The text is lexed a line at a time: a line whose
        shape was seen before (`Lexer.learn`) is split by one match of its shape's regular
        expression, any other token by token (a batch at most: a long line in pieces)."""
        if self.done:
            raise Unsupported("end of the text")
        lexer = self.lexer
        shapes, line_key = lexer.shapes, lexer.line_key
        ends = self.term_ends
        starts = self.line_starts
        toks: list = self.toks[self.i:]
        extend = toks.extend
        pos = self.lexed
        text = self.text
        size = len(text)
        prev = self.prev_shape
        while not toks:
            n = 0
            while n < self.BATCH and pos < size:
                key = None
                stop = -1
                m = None
                if text[pos] == "\n":
                    if prev is not None:
                        for shape in prev[5]:
                            m = shape[0].match(text, pos)
                            if m is not None:
                                break
                    if m is None:
                        stop = text.find("\n", pos + 1)
                        if stop < 0:
                            stop = size
                        if stop - pos <= MAX_SHAPE_CHARS:
                            key = line_key("0", text[pos:stop])
                            shape = shapes.get(key)
                            if shape is not None:
                                m = shape[0].match(text, pos)
                                if prev is not None:
                                    _follows(prev[5], shape)
                if m is not None:
                    start = m.start
                    if shape[6]:
                        # a line whose rule has a trace from the match: one `Line` token
                        toks.append(Line((shape[1][0], "", start(1), shape, m)))
                    else:
                        starts[start(1)] = shape
                        extend(zip(shape[1], m.groups(), map(start, shape[4])))
                    for g in shape[2]:
                        ends.append(m.end(g))
                    pos = m.end()
                    n += len(shape[1])
                    prev = shape
                    continue
                prev = None
                if stop < 0:
                    stop = text.find("\n", pos + 1)   # (the end of this line)
                    if stop < 0:
                        stop = size
                first = len(toks)
                pos, clean = self._lex_line(pos, stop, toks, first + self.BATCH)
                n += len(toks) - first
                if key is not None and clean and pos == stop and len(toks) > first:
                    lexer.learn(key, text, toks[first:])
            self.left -= n
            if self.left < 0:
                raise Unsupported("too many tokens")
            if pos >= size:
                toks.append(("$END", "", pos))
                self.done = True
        self.lexed = pos
        self.prev_shape = prev
        self.toks = toks
        self.i = 0

    def _lex_line(self, pos: int, stop: int, toks: list, most: int) -> tuple[int, bool]:
        """Lex token by token from ``pos`` until a token ends at or after ``stop`` or ``toks``
        holds ``most`` tokens, appending to ``toks``; the end of the last token and whether
        every token is one a line shape can hold (`Lexer.learn`: no comment)."""
        lexer = self.lexer
        fixed, first, ignore = lexer.fixed, lexer.first, lexer.ignore
        terminators = _TERMINATORS
        ends = self.term_ends
        append = toks.append
        text = self.text
        match = self.match
        clean = True
        while pos < stop and len(toks) < most:
            m = match(text, pos)
            if m is None:
                raise Unsupported("no terminal matches")
            start, pos = m.span(1)
            value = text[start:pos]
            kind = fixed.get(value)
            if kind is None:
                kind = first.get(value[0]) or lexer.classify(value)
                if kind in ignore:
                    clean = False
                    continue
                if kind in terminators:                 # initial equation / algorithm
                    ends.append(pos)
            elif kind in terminators:
                ends.append(pos)
            append((kind, value, start))
        return pos, clean

    def advance(self) -> tuple:
        """Read the next token into ``kind``/``tok``; return the previous one."""
        prev = self.tok
        if type(prev) is Line:
            prev = self._expand()
        i = self.i
        try:
            tok = self.toks[i]
        except IndexError:
            self._fill()
            i = 0
            tok = self.toks[0]
        self.i = i + 1
        self.tok = tok
        self.kind = tok[0]
        return prev

    def _expand(self) -> tuple:
        """Put the tokens of the `Line` that is the current token in its place (the line is
        parsed token by token: `_traced` may still replay or record its rule's trace over
        them); the first one, now the current token."""
        line = self.tok
        shape, m = line[3], line[4]
        i = self.i - 1
        tokens = list(zip(shape[1], m.groups(), map(m.start, shape[4])))
        self.toks[i:i + 1] = tokens
        self.line_starts[line[2]] = shape
        tok = self.tok = tokens[0]
        return tok

    def operand_alone(self) -> Any:
        """The rule callback of the current token if it is a name, a number or a Boolean
        literal that the expression ends after (the next token cannot continue it: the common
        case, read without the precedence levels), else None."""
        rule = _OPERAND_RULES.get(self.kind)
        if rule is None:
            return None
        i = self.i
        if i < len(self.toks) and self.toks[i][0] in _ENDS_OPERAND:
            return getattr(self.cb, rule)
        return None

    def peek_kind(self) -> str:
        """The kind of the token after the current one (not consumed)."""
        if self.i == len(self.toks):
            if self.kind == "$END":
                return "$END"
            self._fill()
        return self.toks[self.i][0]

    def expect(self, kind: str) -> tuple:
        if self.kind != kind:
            raise Unsupported(f"expected {kind}")
        return self.advance()

    # ---- start ----
    def parse_start(self) -> Any:
        """Rule ``start`` for a single class definition; the callbacks' value."""
        children = []
        if self.kind == "BASE_HEADER":
            children.append(self.advance())
        if self.kind == "WITHIN":
            w: list[Any] = [self.advance()]
            if self.kind == "NAME":
                w.append(self.advance())
            w.append(self.expect("SEMI"))
            children.append(self.cb.within_clause(w))
        if self.kind in _DEFINITIONS:
            defs = []
            while self.kind in _DEFINITIONS:
                kind = self.kind
                defs.append(self.type_definition() if kind == "TYPE" else
                            self.record_definition() if kind == "RECORD" else
                            self.function_definition())
            children.append(self.cb.definitions(defs))
        if self.kind == "PACKAGE":
            children.append(self.package_definition())
        elif self.kind in _CLASS_KINDS:
            children.append(self.class_definition())
        else:
            raise Unsupported("not a class definition")
        if self.kind != "$END":
            raise Unsupported("text after the class")
        return self.cb.start(children)

    def parse_expression(self) -> Any:
        """Rule ``expression`` for the whole text."""
        e = self.expression()
        if self.kind != "$END":
            raise Unsupported("text after the expression")
        return e

    def package_definition(self) -> Any:
        """A Base Modelica package: declarations, the model class, declarations."""
        c: list[Any] = [self.advance(), self.expect("NAME")]
        if self.kind == "STRING":
            c.append(self.description())
        if self.kind not in _CLASS_KINDS:
            c.append(self.elements(_CLASS_KINDS))
        if self.kind not in _CLASS_KINDS:
            raise Unsupported("not a class definition")
        c.append(self.class_definition())
        if self.kind != "_END":
            c.append(self.elements(_NO_KINDS))
        self.expect("_END")
        c.append(self.expect("NAME"))
        c.append(self.expect("SEMI"))
        return self.cb.package_definition(c)

    def class_definition(self) -> Any:
        return self.cb.class_definition(self._class_body([self.advance(), self.expect("NAME")]))

    def _class_body(self, c: list) -> list:
        """``description? elements? sections? end NAME ;`` of a class or a function, appended
        to ``c`` (its keyword and name)."""
        if self.kind == "STRING":
            c.append(self.description())
        if self.kind != "_END" and self.kind not in _SECTION_STARTS:
            c.append(self.elements())
        if self.kind in _SECTION_STARTS:
            sections = []
            while self.kind in _SECTION_STARTS:
                sections.append(self.section())
            c.append(sections)
        self.expect("_END")
        c.append(self.expect("NAME"))
        c.append(self.expect("SEMI"))
        return c

    # ---- declarations ----
    def elements(self, stops: frozenset = frozenset()) -> Any:
        """``elements``: one ("decls", [...]) value (the callback's left-recursive list), up to
        ``end``, a section or a token of ``stops``."""
        cb = self.cb
        if self.recording:
            acc = cb.elements([self.element()])
            while self.kind != "_END" and self.kind not in _SECTION_STARTS and \
                    self.kind not in stops:
                acc = cb.elements([acc, self.element()])
            return acc
        join = type(cb).elements
        acc = None
        ends = _SECTION_STARTS | stops | {"_END"}
        while True:
            if type(self.tok) is Line:
                values = self._replay_lines("element", ends)
                if values and join is join_elements:
                    # (that callback's joining in one step: the first value's list extended
                    # by the others')
                    if acc is None:
                        acc = join(cb, [values[0]])
                        values[0] = ()
                    acc[1].extend(chain.from_iterable(values))
                else:
                    for value in values:
                        acc = join(cb, [value] if acc is None else [acc, value])
                if values:
                    if self.kind in ends:
                        return acc
                    continue
            value = self._replayed("element")      # (`element` for a line of a traced shape)
            if value is _NOT_REPLAYED:
                value = self.element()
            acc = join(cb, [value] if acc is None else [acc, value])
            if self.kind == "_END" or self.kind in _SECTION_STARTS or self.kind in stops:
                return acc

    def _replay_lines(self, rule: str, ends: frozenset) -> list:
        """The values of rule ``rule`` parsed by its traces from the current token on, for
        as many lines as are `Line` tokens of shapes with a trace of the rule, one after the
        other and none of a kind in ``ends`` (the tokens that end the rule's list); the lines
        consumed. `_replayed` for a run of lines, in one loop."""
        out: list = []
        append = out.append
        cb = self.cb
        tok = self.tok
        toks = self.toks
        i = self.i
        size = len(toks)
        while True:
            run = tok[3][6].get(rule)
            if run is None:
                break
            append(run(tok[4], cb))
            if i < size:
                tok = toks[i]
                i += 1
            else:
                # the end of the batch: the next lines straight from the text while they are
                # of a shape with a trace of the rule (`_run_lines`), then `advance` lexes more
                self.tok = _NO_TOKEN
                self.toks = []
                self.i = 0
                self._run_lines(rule, ends, append)
                self.advance()
                tok, toks, i = self.tok, self.toks, self.i
                size = len(toks)
            if type(tok) is not Line or tok[0] in ends:
                break
        self.replayed += len(out)
        self.i = i
        self.tok = tok
        self.kind = tok[0]
        return out

    def _run_lines(self, rule: str, ends: frozenset, append: Callable[[Any], None]) -> None:
        """The lines after the last one lexed, each matched by a shape that followed the
        previous line's (as `_fill` tries them first) and parsed by that shape's trace of rule
        ``rule`` (its value passed to ``append``), as long as there are such lines and none
        starts with a token of a kind in ``ends``; called with every lexed token read. The
        tokens, terminator ends and the lexer's position and previous shape are those `_fill`
        leaves after these lines, without their `Line` tokens (`_replay_lines`)."""
        shape = self.prev_shape
        if shape is None or self.done:
            return
        text = self.text
        size = len(text)
        pos = self.lexed
        cb = self.cb
        term_ends = self.term_ends
        left = self.left
        try:
            while pos < size and text[pos] == "\n":
                for follower in shape[5]:
                    m = follower[0].match(text, pos)
                    if m is not None:
                        break
                else:
                    return
                run = follower[6].get(rule)
                if run is None or follower[1][0] in ends:
                    return
                left -= len(follower[1])
                if left < 0:
                    raise Unsupported("too many tokens")
                for g in follower[2]:
                    term_ends.append(m.end(g))
                pos = m.end()
                shape = follower
                append(run(m, cb))
        finally:
            self.lexed = pos
            self.prev_shape = shape
            self.left = left

    def _replayed(self, rule: str) -> Any:
        """The value of rule ``rule`` parsed from the current token by the rule's trace
        (`_traced`) when the token starts a line of a shape that has one, consuming the line;
        else `_NOT_REPLAYED`, with nothing consumed (`element` and `equation` inlined for the
        usual line of a generated model)."""
        tok = self.tok
        if type(tok) is Line:
            line_run = tok[3][6].get(rule)
            if line_run is None:
                self._expand()
            else:
                value = line_run(tok[4], self.cb)
                self.replayed += 1
                i = self.i
                toks = self.toks
                if i < len(toks):                   # (`advance`, inlined)
                    tok = toks[i]
                    self.i = i + 1
                    self.tok = tok
                    self.kind = tok[0]
                else:
                    self.tok = _NO_TOKEN
                    self.advance()
                return value
        shape = self.line_starts.get(self.tok[2])
        if shape is None:
            return _NOT_REPLAYED
        run = shape[3].get(rule, 0)
        if type(run) is int:
            return _NOT_REPLAYED
        del self.line_starts[self.tok[2]]
        j = self.i - 1
        toks = self.toks
        value = run(toks, j, self.cb)
        self.replayed += 1
        i = j + len(shape[1])
        if i < len(toks):                   # (`advance`, inlined)
            tok = toks[i]
            self.i = i + 1
            self.tok = tok
            self.kind = tok[0]
        else:
            self.i = i
            self.advance()
        return value

    def _traced(self, shape: tuple, rule: str, parse: Callable[[], Any]) -> Any:
        """``parse()`` (rule ``rule``) from the first token of a line of shape ``shape``: by
        the rule's trace of that shape if there is one (`parse_traces`), else by ``parse``,
        recording its trace when the rule reads exactly the line's tokens (at most
        `MAX_TRACE_FAILURES` refused records per shape and rule)."""
        traces = shape[3]
        run = traces.get(rule, 0)
        n = len(shape[1])
        j = self.i - 1
        toks = self.toks
        if type(run) is not int:
            self.replayed += 1
            value = run(toks, j, self.cb)
            self.i = j + n
            self.advance()
            return value
        if run >= MAX_TRACE_FAILURES or j + n >= len(toks):
            return parse()
        tokens = toks[j:j + n]
        after = toks[j + n]
        record = Recorder(self.cb, tokens)
        self.cb, self.recording = record, True
        try:
            value = parse()
        finally:
            self.cb, self.recording = record.callbacks, False
        trace: Trace | None = None
        if self.tok is after:
            trace = compile_trace(record, value)
        traces[rule] = trace if trace is not None else run + 1
        if trace is not None:
            line_trace = compile_trace(record, value, shape[1])
            if line_trace is not None:
                # a rule's own compiler of lines from their match (`line_rules`: declarations)
                build = getattr(type(record.callbacks), "line_rules", {}).get(rule)
                if build is not None:
                    line_trace = build(record, value, shape[1], [t[1] for t in tokens],
                                       line_trace, MAX_SHAPE_CHARS) or line_trace
                shape[6][rule] = line_trace
        return value

    def element(self) -> Any:
        if type(self.tok) is Line:
            self._expand()
        shape = self.line_starts.pop(self.tok[2], None)
        if shape is not None and not self.recording:
            return self._traced(shape, "element", self._element)
        return self._element()

    def _element(self) -> Any:
        kind = self.kind
        if kind == "ANNOTATION":
            ann = self.annotation()
            return self.cb.annotation_element([ann, self.expect("SEMI")])
        if kind == "TYPE":
            return self.type_definition()
        if kind == "RECORD":
            return self.record_definition()
        if kind in _FUNCTION_STARTS:
            return self.function_definition()
        c: list[Any] = []
        while self.kind in _TYPE_PREFIXES:
            c.append(self.advance())
        if self.kind != "NAME":
            raise Unsupported("not a component clause")
        c.append(self.advance())
        array_type = self.kind == "LBRACK"
        if array_type:
            c.append(self.array_subscripts())
        decls = [self.component_decl()]
        while self.kind == "_COMMA":
            self.advance()
            decls.append(self.component_decl())
        c.append(decls)
        c.append(self.expect("SEMI"))
        return self.cb.array_type_clause(c) if array_type else self.cb.component_clause(c)

    def type_definition(self) -> Any:
        """``type N = B[...](...) "d";`` (a type alias) or ``type N = enumeration(...);``."""
        c: list[Any] = [self.advance(), self.expect("NAME"), self.expect("EQ")]
        if self.kind == "ENUMERATION":
            c.append(self.advance())
            c.append(self.expect("LPAR"))
            if self.kind != "_RPAR":
                c.append(self.enum_literals())
            self.expect("_RPAR")
            return self.cb.enum_definition(self._tail(c))
        c.append(self.expect("NAME"))
        if self.kind == "LBRACK":
            c.append(self.array_subscripts())
        if self.kind == "LPAR":
            c.append(self.class_modification())
        return self.cb.type_alias(self._tail(c))

    def enum_literals(self) -> Any:
        out = [self.enum_literal()]
        while self.kind == "_COMMA":
            self.advance()
            out.append(self.enum_literal())
        return self.cb.enum_literals(out)

    def enum_literal(self) -> Any:
        c: list[Any] = [self.expect("NAME")]
        if self.kind == "STRING":
            c.append(self.description())
        if self.kind == "ANNOTATION":
            c.append(self.annotation())
        return self.cb.enum_literal(c)

    def record_definition(self) -> Any:
        """``record N "d" declarations end N;``"""
        c: list[Any] = [self.advance(), self.expect("NAME")]
        if self.kind == "STRING":
            c.append(self.description())
        if self.kind != "_END":
            c.append(self.elements())
        self.expect("_END")
        c.append(self.expect("NAME"))
        c.append(self.expect("SEMI"))
        return self.cb.record_definition(c)

    def function_definition(self) -> Any:
        """``pure|impure|partial? function N "d" declarations sections end N;``"""
        c: list[Any] = []
        if self.kind == "PARTIAL":
            c.append(self.advance())
        if self.kind == "PURE" or self.kind == "IMPURE":
            c.append(self.advance())
        c.append(self.expect("FUNCTION"))
        c.append(self.expect("NAME"))
        return self.cb.function_definition(self._class_body(c))

    def component_decl(self) -> Any:
        name = self.expect("NAME")
        if self.kind == "LBRACK":
            name = self.cb.subscripted([name, self.array_subscripts()])
        c = [name]
        if self.kind in ("LPAR", "EQ", "ASSIGN"):
            c.append(self.modification())
        if self.kind == "STRING":
            c.append(self.description())
        if self.kind == "ANNOTATION":
            c.append(self.annotation())
        return self.cb.component_decl(c)

    def modification(self) -> Any:
        c: list[Any] = []
        if self.kind == "LPAR":
            c.append(self.class_modification())
            if self.kind == "EQ":
                c.append(self.advance())
                c.append(self.expression())
        else:
            c.append(self.advance())            # EQ or ASSIGN
            c.append(self.expression())
        return self.cb.modification(c)

    def class_modification(self) -> Any:
        c: list[Any] = [self.advance()]                    # LPAR
        if self.kind != "_RPAR":
            args = [self.argument()]
            while self.kind == "_COMMA":
                self.advance()
                args.append(self.argument())
            c.append(args)
        self.expect("_RPAR")
        return self.cb.class_modification(c)

    def argument(self) -> Any:
        c: list[Any] = []
        if self.kind == "EACH":
            c.append(self.advance())
        if self.kind == "FINAL":
            c.append(self.advance())
        c.append(self.expect("NAME"))
        if self.kind in ("LPAR", "EQ", "ASSIGN"):
            c.append(self.modification())
        if self.kind == "STRING":
            c.append(self.description())
        return self.cb.argument(c)

    def description(self) -> Any:
        c: list[Any] = [self.advance()]                    # STRING
        while self.kind == "ADD_OP":
            c.append(self.advance())
            c.append(self.expect("STRING"))
        return self.cb.description(c)

    def annotation(self) -> Any:
        """``annotation(...)``: balanced token soup; the callback reads only where it starts."""
        c: list[Any] = [self.advance(), self.expect("LPAR")]
        closers = ["_RPAR"]
        while closers:
            kind = self.kind
            if kind == closers[-1]:
                closers.pop()
            elif kind in _OPENERS:
                closers.append(_OPENERS[kind])
            elif kind not in _ANNOTATION_ATOMS:
                raise Unsupported("token in an annotation")
            self.advance()
        return self.cb.annotation(c)

    # ---- sections and equations ----
    def section(self) -> Any:
        kind = self.kind
        tok = self.advance()
        if kind == "EQUATION" or kind == "INITIAL_EQUATION":
            c: list[Any] = [tok]
            if self.kind not in _SECTION_ENDS:
                c.append(self.equations())
            if kind == "EQUATION":
                return self.cb.equation_section(c)
            return self.cb.initial_equation_section(c)
        if kind == "ALGORITHM" or kind == "INITIAL_ALGORITHM":
            c = [tok]
            if self.kind not in _STATEMENT_ENDS:
                c.append(self.statements())
            if self.kind == "ANNOTATION":
                c.append(self.annotation())
                c.append(self.expect("SEMI"))
            if kind == "ALGORITHM":
                return self.cb.algorithm_section(c)
            return self.cb.initial_algorithm_section(c)
        if kind == "EXTERNAL":
            return self.external_section(tok)
        if self.kind == "_END" or self.kind in _SECTION_STARTS:
            return self.cb.element_section([])
        return self.cb.element_section([self.elements()])

    def external_section(self, tok: tuple) -> Any:
        """``external "C"? (v =)? f(args)? annotation? ;`` and the class annotation after it."""
        c: list[Any] = [tok]
        if self.kind == "STRING":
            c.append(self.advance())
        if self.kind == "NAME":
            call: list[Any] = [self.advance()]
            if self.kind == "EQ":
                call.append(self.advance())
                call.append(self.expect("NAME"))
            call.append(self.expect("LPAR"))
            if self.kind != "_RPAR":
                call.append(self.call_args())
            self.expect("_RPAR")
            c.append(self.cb.external_call(call))
        if self.kind == "ANNOTATION":
            c.append(self.annotation())
        c.append(self.expect("SEMI"))
        if self.kind == "ANNOTATION":
            c.append(self.annotation())
            c.append(self.expect("SEMI"))
        return self.cb.external_section(c)

    def statements(self) -> Any:
        """``statements``: the callback's left-recursive list, up to a block or section end."""
        cb = self.cb
        acc = cb.statements([self.statement()])
        while self.kind not in _STATEMENT_ENDS:
            acc = cb.statements([acc, self.statement()])
        return acc

    def _statements_then(self, c: list) -> list:
        """``expression then statements?`` appended to ``c``."""
        c.append(self.expression())
        self.expect("_THEN")
        if self.kind not in _STATEMENT_ENDS:
            c.append(self.statements())
        return c

    def statement(self) -> Any:
        kind = self.kind
        cb = self.cb
        if kind == "IF":
            c = self._statements_then([self.advance()])
            while self.kind == "ELSEIF":
                c.append(cb.stmt_elseif(self._statements_then([self.advance()])))
            if self.kind == "ELSE":
                e: list[Any] = [self.advance()]
                if self.kind not in _STATEMENT_ENDS:
                    e.append(self.statements())
                c.append(cb.stmt_else(e))
            self.expect("_END")
            c.append(self.expect("IF"))
            c.append(self.expect("SEMI"))
            return cb.if_stmt(c)
        if kind == "WHEN":
            c = self._statements_then([self.advance()])
            while self.kind == "ELSEWHEN":
                c.append(cb.stmt_elsewhen(self._statements_then([self.advance()])))
            self.expect("_END")
            c.append(self.expect("WHEN"))
            c.append(self.expect("SEMI"))
            return cb.when_stmt(c)
        if kind == "FOR" or kind == "WHILE":
            c = [self.advance()]
            if kind == "FOR":
                indices = cb.stmt_for_indices([self.stmt_for_index()])
                while self.kind == "_COMMA":
                    self.advance()
                    indices = cb.stmt_for_indices([indices, self.stmt_for_index()])
                c.append(indices)
            else:
                c.append(self.expression())
            c.append(self.expect("LOOP"))
            if self.kind not in _STATEMENT_ENDS:
                c.append(self.statements())
            self.expect("_END")
            c.append(self.expect(kind))
            c.append(self.expect("SEMI"))
            return cb.for_stmt(c) if kind == "FOR" else cb.while_stmt(c)
        if kind == "RETURN" or kind == "BREAK":
            c = [self.advance(), self.expect("SEMI")]
            return cb.return_stmt(c) if kind == "RETURN" else cb.break_stmt(c)
        lhs = self.simple_expression()
        if self.kind == "ASSIGN":
            c = [lhs, self.advance(), self.expression()]
            return cb.assign_stmt(self._tail(c))
        return cb.call_stmt(self._tail([lhs]))

    def stmt_for_index(self) -> Any:
        c: list[Any] = [self.expect("NAME"), self.expect("IN"), self.expression()]
        return self.cb.stmt_for_index(c)

    def equations(self) -> list:
        """``equations``: one or more equations up to a section, branch or block end."""
        if self.recording:
            out = [self.equation()]
            while self.kind not in _SECTION_ENDS:
                out.append(self.equation())
            return out
        out = []
        append = out.append
        replayed = self._replayed
        while True:
            if type(self.tok) is Line:
                values = self._replay_lines("equation", _SECTION_ENDS)
                if values:
                    out.extend(values)
                    if self.kind in _SECTION_ENDS:
                        return out
                    continue
            value = replayed("equation")
            append(self.equation() if value is _NOT_REPLAYED else value)
            if self.kind in _SECTION_ENDS:
                return out

    def _tail(self, c: list) -> list:
        """``description? annotation? SEMI`` appended to ``c``."""
        if self.kind == "STRING":
            c.append(self.description())
        if self.kind == "ANNOTATION":
            c.append(self.annotation())
        c.append(self.expect("SEMI"))
        return c

    def equation(self) -> Any:
        if type(self.tok) is Line:
            self._expand()
        shape = self.line_starts.pop(self.tok[2], None)
        if shape is not None and not self.recording:
            return self._traced(shape, "equation", self._equation)
        return self._equation()

    def _equation(self) -> Any:
        kind = self.kind
        cb = self.cb
        if kind == "IF":
            c = self._branches("ELSEIF", cb.elseif_branch)
            if self.kind == "ELSE":
                e: list[Any] = [self.advance()]
                if self.kind != "_END":
                    e.append(self.equations())
                c.append(cb.else_branch(e))
            self.expect("_END")
            c.append(self.expect("IF"))
            return cb.if_eq(self._tail(c))
        if kind == "WHEN":
            c = self._branches("ELSEWHEN", cb.elsewhen_branch)
            self.expect("_END")
            c.append(self.expect("WHEN"))
            return cb.when_eq(self._tail(c))
        if kind == "FOR":
            c = [self.advance(), self.for_indices(), self.expect("LOOP")]
            if self.kind != "_END":
                c.append(self.equations())
            self.expect("_END")
            c.append(self.expect("FOR"))
            return cb.for_eq(self._tail(c))
        if kind == "ANNOTATION":
            ann = self.annotation()
            return cb.annotation_eq([ann, self.expect("SEMI")])
        lhs = self.simple_expression()
        if self.kind == "EQ":
            c = [lhs, self.advance(), self.expression()]
            return cb.eq(self._tail(c))
        return cb.call_eq(self._tail([lhs]))

    def _branches(self, branch_kind: str, branch) -> list:
        """``KW cond then equations? (branch_kind cond then equations?)*`` as the children of
        an if- or when-equation (the branches reduced by ``branch``)."""
        c: list[Any] = [self.advance(), self.expression()]
        self.expect("_THEN")
        if self.kind not in _BRANCH_ENDS:
            c.append(self.equations())
        while self.kind == branch_kind:
            b: list[Any] = [self.advance(), self.expression()]
            self.expect("_THEN")
            if self.kind not in _BRANCH_ENDS:
                b.append(self.equations())
            c.append(branch(b))
        return c

    def for_indices(self) -> Any:
        out = [self.for_index()]
        while self.kind == "_COMMA":
            self.advance()
            out.append(self.for_index())
        return self.cb.for_indices(out)

    def for_index(self) -> Any:
        c: list[Any] = [self.expect("NAME"), self.expect("IN"), self.expression()]
        return self.cb.for_index(c)

    # ---- expressions (Modelica 3.6 §B.2.7) ----
    def expression(self) -> Any:
        rule = self.operand_alone()
        if rule is not None:
            return rule([self.advance()])
        if self.kind != "IF":
            return self.compound_expression()
        c: list[Any] = [self.advance(), self.expression()]
        self.expect("_THEN")
        c.append(self.expression())
        while self.kind == "ELSEIF":
            c.append(self.advance())
            c.append(self.expression())
            self.expect("_THEN")
            c.append(self.expression())
        c.append(self.expect("ELSE"))
        c.append(self.expression())
        return self.cb.if_expr(c)

    def simple_expression(self) -> Any:
        rule = self.operand_alone()
        if rule is not None:
            return rule([self.advance()])
        return self.compound_expression()

    def compound_expression(self) -> Any:
        """`simple_expression` where the current token is not an operand alone (known by
        the caller, which has just asked `operand_alone`)."""
        a = self.logical_expression()
        if self.kind != "COLON":
            return a
        c = [a, self.advance(), self.logical_expression()]
        if self.kind == "COLON":
            c.append(self.advance())
            c.append(self.logical_expression())
        return self.cb.range_expr(c)

    def logical_expression(self) -> Any:
        """``logical_expression``: or-terms of and-factors of relations (left-associative),
        the two levels in one function."""
        left = self.relation()
        kind = self.kind
        if kind not in _LOGICAL:
            return left
        cb = self.cb
        while kind == "_AND" or kind == "_AND_OMC":
            self.advance()
            left = cb.and_expr([left, self.relation()])
            kind = self.kind
        while kind == "_OR" or kind == "_OR_OMC":
            self.advance()
            right = self.relation()
            while self.kind == "_AND" or self.kind == "_AND_OMC":
                self.advance()
                right = cb.and_expr([right, self.relation()])
            left = cb.or_expr([left, right])
            kind = self.kind
        return left

    def relation(self) -> Any:
        """``logical_factor``: ``not``? arithmetic (comparison arithmetic)?"""
        negated = self.kind == "_NOT" or self.kind == "_NOT_OMC"
        if negated:
            self.advance()
        a = self.arithmetic()
        if self.kind == "REL_OP":
            op = self.advance()
            a = self.cb.binop([a, op, self.arithmetic()])
        return self.cb.not_expr([a]) if negated else a

    def arithmetic(self) -> Any:
        """``arithmetic``: a sign only before the first term; ``a - -b`` (two signs)."""
        if self.kind == "ADD_OP":
            sign = self.advance()
            left = self.cb.unop([sign, self.term()])
        else:
            left = self.term()
        if self.kind != "ADD_OP":
            return left
        cb = self.cb
        while self.kind == "ADD_OP":
            op = self.advance()
            if self.kind == "ADD_OP":
                sign = self.advance()
                left = cb.binop_signed([left, op, sign, self.term()])
            else:
                left = cb.binop([left, op, self.term()])
        return left

    def term(self) -> Any:
        """``term``: factors (``primary (^ sign? primary)?``) joined by ``*`` and ``/``."""
        left = self.primary()
        if self.kind == "POW_OP":
            left = self.power(left)
        while self.kind == "MUL_OP":
            op = self.advance()
            right = self.primary()
            if self.kind == "POW_OP":
                right = self.power(right)
            left = self.cb.binop([left, op, right])
        return left

    def power(self, a: Any) -> Any:
        op = self.advance()
        if self.kind == "ADD_OP":
            sign = self.advance()
            return self.cb.pow_signed([a, op, sign, self.primary()])
        return self.cb.binop([a, op, self.primary()])

    def primary(self) -> Any:
        kind = self.kind
        cb = self.cb
        if kind == "NAME":
            tok = self.advance()
            kind = self.kind
            if kind == "LPAR":
                c: list[Any] = [tok, self.advance()]
                if self.kind != "_RPAR":
                    c.append(self.call_args())
                self.expect("_RPAR")
                if self.kind == "LBRACK":
                    raise Unsupported("subscript after a call")
                return cb.call(c)
            if kind == "LBRACK":
                subs = self.array_subscripts()
                if self.kind == "DOT_NAME":
                    raise Unsupported("field path")
                return cb.subscripted([tok, subs])
            return cb.ref([tok])
        if kind == "NUMBER":
            return cb.number([self.advance()])
        if kind == "LPAR":
            c = [self.advance(), self.expression()]
            if self.kind != "_RPAR":
                raise Unsupported("tuple")
            self.advance()
            if self.kind == "LBRACK":
                raise Unsupported("subscript after a parenthesized expression")
            return cb.paren(c)
        if kind == "STRING":
            return cb.string([self.advance()])
        if kind == "TRUE":
            return cb.true([self.advance()])
        if kind == "FALSE":
            return cb.false([self.advance()])
        if kind == "INITIAL":
            c = [self.advance(), self.expect("LPAR")]
            self.expect("_RPAR")
            return cb.initial_call(c)
        if kind == "LBRACE":
            c = [self.advance()]
            if self.kind != "_RBRACE":
                c.append(self.expression())
                if self.kind == "FOR":
                    raise Unsupported("array comprehension")
                while self.kind == "_COMMA":
                    self.advance()
                    c.append(self.expression())
            self.expect("_RBRACE")
            return cb.array_expr(c)
        if kind == "LBRACK":
            c = [self.advance(), self.expression()]
            while self.kind == "_COMMA" or self.kind == "SEMI":
                sep = self.advance()
                if sep[0] == "SEMI":            # (the token between rows is a child)
                    c.append(sep)
                c.append(self.expression())
            self.expect("_RBRACK")
            return cb.array_expr(c)
        raise Unsupported("not an expression")

    def call_args(self) -> Any:
        out = [self.call_arg()]
        while self.kind == "_COMMA":
            self.advance()
            out.append(self.call_arg())
        if self.kind == "FOR":
            raise Unsupported("call comprehension")
        return self.cb.call_args(out)

    def call_arg(self) -> Any:
        if self.kind == "NAME" and self.peek_kind() == "EQ":
            c: list[Any] = [self.advance(), self.advance(), self.expression()]
            return self.cb.named_arg(c)
        return self.expression()

    def array_subscripts(self) -> Any:
        c: list[Any] = [self.advance()]                    # LBRACK
        c.append(self.subscript())
        while self.kind == "_COMMA":
            self.advance()
            c.append(self.subscript())
        self.expect("_RBRACK")
        return self.cb.array_subscripts(c)

    def subscript(self) -> Any:
        if self.kind == "COLON":
            return self.advance()
        if self.kind == "_END":
            raise Unsupported("end in a subscript")
        return self.expression()


#: `FastParser._replayed` when no trace parsed the line
_NOT_REPLAYED = object()
#: the current token after a `Line` that a trace consumed (`FastParser._replayed`)
_NO_TOKEN = ("$NONE", "", 0)
#: tokens that cannot continue an expression after an operand
_ENDS_OPERAND = frozenset(("_COMMA", "_RPAR", "SEMI", "_RBRACK", "_RBRACE", "_THEN", "LOOP",
                           "STRING", "ANNOTATION", "EQ", "ASSIGN", "ELSE", "ELSEIF"))
_OPERAND_RULES = {"NAME": "ref", "NUMBER": "number", "TRUE": "true", "FALSE": "false"}
_LOGICAL = frozenset(("_AND", "_AND_OMC", "_OR", "_OR_OMC"))
_SECTION_STARTS = frozenset(("EQUATION", "INITIAL_EQUATION", "_PUBLIC", "_PROTECTED",
                             "ALGORITHM", "INITIAL_ALGORITHM", "EXTERNAL"))
_FUNCTION_STARTS = frozenset(("FUNCTION", "PURE", "IMPURE", "PARTIAL"))
_DEFINITIONS = _FUNCTION_STARTS | {"TYPE", "RECORD"}
#: tokens after which no further equation of the same list can start
_SECTION_ENDS = frozenset(("_END", "EQUATION", "INITIAL_EQUATION", "_PUBLIC", "_PROTECTED",
                           "ALGORITHM", "INITIAL_ALGORITHM", "ELSE", "ELSEIF", "ELSEWHEN",
                           "$END"))
_BRANCH_ENDS = _SECTION_ENDS
#: tokens after which no further statement of the same list can start
_STATEMENT_ENDS = _SECTION_ENDS | {"ANNOTATION", "EXTERNAL"}


__all__ = ["FastParser", "Lexer", "Unsupported"]
