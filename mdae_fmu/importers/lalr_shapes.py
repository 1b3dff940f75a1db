"""Fast path of `lalr.Driver` for recurring segments: one regex match and straight-line code.

Generated flat models repeat a few statement shapes thousands of times
(``Real NAME(start = NUMBER, fixed = true);``, ``der(NAME) = NAME;``...). The driver parses
the text in segments that end with a boundary token (``;``). The *shape* of a segment is the
sequence of token types the lexer produced for it, whitespace and comments included. Once a
shape has been seen twice it gets

* a regular expression that matches exactly the texts the lexer would cut into that sequence of
  tokens. Element k of the sequence, a terminal T, is matched with the construction
  ``(?=(?P<a>C1|...|Cm|(?P<g>T)))(?P=a)(?(g)|(?!))``: inside the lookahead the alternatives are
  tried in lark's order and the first one that matches wins, with its own first match, which is
  what lark's lexer does; the lookahead is atomic, the back-reference consumes what it matched,
  and the conditional fails unless T was the winner. C1...Cm are the terminals lark tries
  before T; only those that can start with a character T can start with are kept
  (`first_chars`, an over-approximation computed from the parsed regular expressions), since no
  other can match where T does. A NAME element whose text is a keyword (which lark's lexer turns
  into the keyword's token) is refused by the replayed code before it does anything.
* per parser context, a *trace*: the LALR actions the table prescribes for that token sequence,
  computed by running the table over the types alone (shifts, reductions with their callbacks,
  unit reductions skipped, as in the token-by-token loop) and compiled to a Python function
  that slices the token texts, checks the keywords, calls the callbacks in the same order with
  the same children and pushes the same values. A trace reads the parser stack down to some
  depth (the reductions of the previous statement happen when this segment's first token is
  read); it applies only when the states down to that depth are the recorded ones.

At a segment boundary the driver tries the shapes that followed the previous two before, then
those that followed the previous one (at most four each, most recent first). If none matches,
if the context has no trace yet and the table rejects a token (a syntax error), or if a
keyword check fails, the segment is parsed token by token. The regular expression reproduces
the driver's fast lexing gear; the trace exists only if the table accepts each token in the
state it is read in, which is when the fast gear and lark's contextual lexer agree (`lalr`
module docstring). The caches are bounded (shapes, traces per shape, segment length, pending
counts), so a file without repetition costs only the bookkeeping.
"""

from __future__ import annotations

import importlib
import re

try:                                     # Python >= 3.11
    _sre = importlib.import_module("re._constants")
    _sre_parse = importlib.import_module("re._parser")
except ImportError:                      # pragma: no cover - Python 3.10
    _sre = importlib.import_module("sre_constants")
    _sre_parse = importlib.import_module("sre_parse")

MAX_SHAPES = 256          # compiled shapes per grammar
MAX_ELEMENTS = 96         # tokens (ignored ones included) of a shape
MAX_TRACES = 8            # parser contexts per shape
MAX_SUCCESSORS = 4        # shapes tried after a given one
MAX_PENDING = 4096        # shapes seen once, waiting for a second occurrence
_SEEN_BEFORE_COMPILE = 2

_ASCII = frozenset(range(128))
_CATEGORIES = {_sre.CATEGORY_DIGIT: r"\d", _sre.CATEGORY_NOT_DIGIT: r"\D",
               _sre.CATEGORY_SPACE: r"\s", _sre.CATEGORY_NOT_SPACE: r"\S",
               _sre.CATEGORY_WORD: r"\w", _sre.CATEGORY_NOT_WORD: r"\W"}


class _Unknown(Exception):
    """A construct `first_chars` does not analyse (the answer is then "any character")."""


def first_chars(regex: str, flags: int = 0) -> tuple[frozenset, bool]:
    """Characters a match of ``regex`` can start with, over-approximated: (the ASCII code
    points, whether non-ASCII characters are possible)."""
    try:
        tree = _sre_parse.parse(regex, flags)
        ascii_, other, nullable = _first_seq(tree)
    except _Unknown:
        return _ASCII, True
    if nullable:
        return _ASCII, True
    if tree.state.flags & re.IGNORECASE or "(?i" in regex:
        ascii_ = ascii_ | {ord(chr(c).swapcase()) for c in ascii_ if chr(c).isalpha()}
        other = True
    return frozenset(ascii_), other


def _first_seq(items) -> tuple[set, bool, bool]:
    """(ASCII first characters, non-ASCII possible, can match empty) of a sequence."""
    ascii_, other = set(), False
    for op, av in items:
        a, o, nullable = _first_item(op, av)
        ascii_ |= a
        other = other or o
        if not nullable:
            return ascii_, other, False
    return ascii_, other, True


def _first_item(op, av) -> tuple[set, bool, bool]:
    if op is _sre.LITERAL:
        return ({av} if av < 128 else set()), av >= 128, False
    if op is _sre.NOT_LITERAL:
        return set(_ASCII - {av}), True, False
    if op is _sre.ANY:
        return set(_ASCII), True, False
    if op is _sre.IN:
        a, o = _first_class(av)
        return a, o, False
    if op is _sre.BRANCH:
        ascii_, other, nullable = set(), False, False
        for branch in av[1]:
            a, o, n = _first_seq(branch)
            ascii_ |= a
            other = other or o
            nullable = nullable or n
        return ascii_, other, nullable
    if op is _sre.SUBPATTERN:
        return _first_seq(av[-1])
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) or op is getattr(_sre, "POSSESSIVE_REPEAT", 0):
        lo, _hi, sub = av
        a, o, n = _first_seq(sub)
        return a, o, n or lo == 0
    if op is getattr(_sre, "ATOMIC_GROUP", 0):
        return _first_seq(av)
    if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
        return set(), False, True          # zero width; ignoring a lookahead only adds
    raise _Unknown(op)


def _first_class(items) -> tuple[set, bool]:
    ascii_, other, negate = set(), False, False
    for op, av in items:
        if op is _sre.NEGATE:
            negate = True
        elif op is _sre.LITERAL:
            if av < 128:
                ascii_.add(av)
            else:
                other = True
        elif op is _sre.RANGE:
            lo, hi = av
            ascii_.update(range(lo, min(hi, 127) + 1))
            other = other or hi >= 128
        elif op is _sre.CATEGORY and av in _CATEGORIES:
            pattern = re.compile(_CATEGORIES[av])
            ascii_.update(c for c in _ASCII if pattern.match(chr(c)))
            other = True
        else:
            raise _Unknown(op)
    if negate:
        return set(_ASCII - ascii_), True
    return ascii_, other


def _intersects(a: tuple[frozenset, bool], b: tuple[frozenset, bool]) -> bool:
    return bool(a[0] & b[0]) or (a[1] and b[1])


class _Trace:
    """The compiled actions of a shape in one parser context (module docstring)."""
    __slots__ = ("depth", "context", "tail", "run")

    def __init__(self, depth, context, tail, run):
        self.depth = depth            # states of the stack top the trace reads and replaces
        self.context = context        # their values when the trace was recorded
        self.tail = tail              # what replaces them
        self.run = run


class _Shape:
    """A recurring token sequence: its regular expression and its traces."""
    __slots__ = ("kinds", "regex", "tokens", "groups", "traces")

    def __init__(self, kinds, regex, tokens, groups):
        self.kinds = kinds            # token types, ignored ones included
        self.regex = regex
        self.tokens = tokens          # indices of the non-ignored elements
        self.groups = groups          # element index -> group number of its text
        self.traces: list[_Trace] = []


class Shapes:
    """Shape cache of one `lalr.Driver` (module docstring)."""

    def __init__(self, driver):
        self.driver = driver
        flags = driver.root_re.flags
        order = driver.root_terminals
        firsts = {t.name: first_chars(t.pattern.to_regexp(), flags) for t in order}
        self.parts = {}
        for i, t in enumerate(order):
            conflicts = [f"(?:{u.pattern.to_regexp()})" for u in order[:i]
                         if _intersects(firsts[u.name], firsts[t.name])]
            self.parts[t.name] = ("|".join(conflicts), f"(?:{t.pattern.to_regexp()})")
        self.literal = {}             # keyword type -> (root terminal, text)
        for base, table in driver.remap.items():
            for text, kind in table.items():
                self.literal[kind] = (base, text)
        self.keywords = {base: frozenset(table) for base, table in driver.remap.items()}
        self.shapes: dict[tuple, _Shape] = {}
        self.pending: dict[tuple, int] = {}
        self.successors: dict = {}
        self.replayed = 0             # segments parsed through a shape (tests, benchmarks)

    # ---- learning -------------------------------------------------------------------------
    def learn(self, kinds: list, recent: tuple) -> _Shape | None:
        """Account for a segment parsed token by token; returns its shape once compiled.
        ``recent``: the shapes of the two segments before (None where there was none)."""
        key = tuple(kinds)
        shape = self.shapes.get(key)
        if shape is None:
            if len(key) > MAX_ELEMENTS or len(self.shapes) >= MAX_SHAPES:
                return None
            seen = self.pending.get(key, 0) + 1
            if seen < _SEEN_BEFORE_COMPILE:
                if len(self.pending) >= MAX_PENDING:
                    self.pending.clear()
                self.pending[key] = seen
                return None
            self.pending.pop(key, None)
            shape = self.shapes[key] = self._compile_shape(key)
        self._follows(recent, shape)
        self._follows(recent[1], shape)
        return shape

    def _follows(self, key, shape: _Shape):
        """Record that ``shape`` came after ``key`` (a shape, or the pair of the last two),
        most recent first."""
        following = self.successors.setdefault(key, [])
        if following[:1] != [shape]:
            if shape in following:
                following.remove(shape)
            following.insert(0, shape)
            del following[MAX_SUCCESSORS:]

    def _compile_shape(self, kinds: tuple) -> _Shape:
        """The regular expression of a token sequence (module docstring)."""
        ignore = self.driver.ignore
        parts = []
        tokens = []
        for n, kind in enumerate(kinds):
            base = self.literal.get(kind, (kind,))[0]
            conflicts, own = self.parts[base]
            if conflicts:
                parts.append(f"(?=(?P<a{n}>{conflicts}|(?P<g{n}>{own})))(?P=a{n})(?(g{n})|(?!))")
            else:
                parts.append(f"(?=(?P<a{n}>{own}))(?P=a{n})")
            if kind not in ignore:
                tokens.append(n)
        regex = re.compile("".join(parts), self.driver.root_re.flags)
        groups = {n: regex.groupindex[f"a{n}"] for n in tokens}
        return _Shape(kinds, regex, tuple(tokens), groups)

    # ---- replaying ------------------------------------------------------------------------
    def replay(self, text: str, pos: int, stack: list, values: list, term_ends, recent: tuple):
        """Parse the segment at ``pos`` through a shape, if one applies: returns
        (end position, last token, shape), or None (the driver then goes token by token).
        The shapes tried are those that followed the last two segments' shapes (``recent``),
        then those that followed the last one."""
        after_two = self.successors.get(recent, ())
        for shape in (*after_two, *self.successors.get(recent[1], ())):
            m = shape.regex.match(text, pos)
            if m is None:
                continue
            for trace in shape.traces:
                if stack[-trace.depth:] == trace.context:
                    break
            else:
                if len(shape.traces) >= MAX_TRACES:
                    return None
                trace = self._compile_trace(shape, stack)
                if trace is None:
                    return None
                shape.traces.append(trace)
            tok = trace.run(text, m.regs, values,
                            _discard if term_ends is None else term_ends.append)
            if tok is None:
                return None
            del stack[-trace.depth:]
            stack.extend(trace.tail)
            self.replayed += 1
            if not after_two or after_two[0] is not shape:
                self._follows(recent, shape)
            return m.end(), tok, shape
        return None

    def _compile_trace(self, shape: _Shape, stack: list) -> _Trace | None:
        """Run the LALR table over the shape's token types from ``stack`` and compile the
        actions; None if the table rejects a token there (the token-by-token loop then
        reports the syntax error)."""
        driver = self.driver
        states = driver.states
        st = list(stack)
        height = len(st)
        low = height - 1                  # lowest stack index the actions read
        ops: list[tuple] = []
        for i in shape.tokens:
            kind = shape.kinds[i]
            row = states[st[-1]]
            if kind not in row:
                return None
            if kind in driver.terminators:
                ops.append(("end", i))
            while True:
                action = row.get(kind)
                if action is None:
                    return None
                if type(action) is int:
                    st.append(action)
                    ops.append(("shift", i))
                    row = states[action]
                    break
                size, origin, callback = action
                if callback is None:
                    low = min(low, len(st) - 2)
                    st[-1] = driver.unit_run(st[-2], st[-1], kind)
                    row = states[st[-1]]
                    continue
                if size:
                    del st[-size:]
                low = min(low, len(st) - 1)
                ops.append(("reduce", size, callback))
                st.append(states[st[-1]][origin])
                row = states[st[-1]]
        run = self._codegen(shape, ops, height - 1 - low)
        return _Trace(height - low, stack[low:], st[low:], run)

    def _codegen(self, shape: _Shape, ops: list, below: int):
        """Python function replaying ``ops``; ``below`` values under the segment's own may be
        consumed (module docstring).

        The source given to ``exec`` never contains input text, so no model can inject code:
        it is built only from integers (element indices, regex group numbers, stack depths,
        counters), from terminal names of the grammar (``kinds``, the keys of
        ``driver.remap`` in ``K_<name>``; the lexer yields only those as token types, input
        text selects one but never becomes one), from keyword texts of the grammar written as
        ``repr`` literals, and from the generated names ``c<k>``, ``x<k>``, ``b``. The
        callbacks and keyword sets enter through the namespace, not as text; the segment's
        text is only read at run time, through the ``text`` argument."""
        keep = self.driver.keep
        kinds = shape.kinds
        # symbolic value stack: how deep into the values below the segment the ops reach
        depth = below
        sym = below
        for op in ops:
            if op[0] == "shift":
                sym += 1
            elif op[0] == "reduce":
                sym -= op[1]
                depth = min(depth, sym)
                sym += 1
        used = below - depth
        lines = ["def run(text, R, V, TE):"]
        for i in shape.tokens:
            lines.append(f" s{i}, e{i} = R[{shape.groups[i]}]")
            lines.append(f" v{i} = text[s{i}:e{i}]")
        checks = []
        for i in shape.tokens:
            kind = kinds[i]
            if kind in self.literal:
                checks.append(f"v{i} != {self.literal[kind][1]!r}")
            elif kind in self.keywords:
                checks.append(f"v{i} in K_{kind}")
        if checks:
            lines.append(" if " + " or ".join(checks) + ":")
            lines.append("  return None")
        for i in shape.tokens:
            if keep[kinds[i]]:
                lines.append(f" t{i} = ({kinds[i]!r}, v{i}, s{i})")
        names: dict = {}
        stack = []
        if used:
            lines.append(f" b = V[-{used}:]")
            lines.append(f" del V[-{used}:]")
            stack = [f"b[{j}]" for j in range(used)]
        x = 0
        for op in ops:
            if op[0] == "end":
                lines.append(f" TE(e{op[1]})")
            elif op[0] == "shift":
                stack.append(f"t{op[1]}" if keep[kinds[op[1]]] else "None")
            else:
                size, callback = op[1], op[2]
                children = stack[len(stack) - size:]
                del stack[len(stack) - size:]
                cb = names.setdefault(callback, f"c{len(names)}")
                lines.append(f" x{x} = {cb}([{', '.join(children)}])")
                stack.append(f"x{x}")
                x += 1
        if stack:
            lines.append(f" V.extend(({', '.join(stack)},))")
        last = shape.tokens[-1]
        if keep[kinds[last]]:
            lines.append(f" return t{last}")
        else:
            lines.append(f" return ({kinds[last]!r}, v{last}, s{last})")
        env = {name: cb for cb, name in names.items()}
        env.update({f"K_{base}": words for base, words in self.keywords.items()})
        params = "".join(f", {name}={name}" for name in env)
        lines[0] = f"def run(text, R, V, TE{params}):"
        namespace = dict(env)
        exec("\n".join(lines), namespace)  # noqa: S102 - no input text in it (docstring)
        return namespace["run"]


def _discard(_value):
    """Stand-in for ``term_ends.append`` when the caller records no terminators."""


__all__ = ["Shapes", "first_chars", "MAX_SHAPES"]
