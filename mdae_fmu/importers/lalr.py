"""Running a grammar compiled by lark: lexing and LALR(1) parsing, fast, with lark's own tables.

`Driver` takes a `lark.Lark` built with ``parser="lalr", lexer="contextual"`` and parses text
with the grammar's compiled tables: the terminal regular expressions, lark's LALR(1) action and
goto table and its rule callbacks (a transformer given to lark, or lark's tree builder). Nothing
of the grammar is written here; `Lark.parse` is not called because its per-token overhead
(token objects with line counters, a generator per lexer state, a callback per unit reduction)
dominates the import of large models (docs/importers.md, "Parser notes").

Lexing is lark's contextual lexing, done in two gears:

* Fast gear: one compiled alternation of *all* terminals, in lark's order (lark's root lexer),
  matched at the current position. Tokens are plain tuples ``(type, value, start offset)``;
  lines and columns are left to the caller, which computes them only where it needs them.
* Exact gear: lark's contextual lexer matches, in each parser state, only the terminals that
  state accepts (plus the ignored ones and the ``always_accept`` keywords). The two agree
  whenever the root token is accepted in the current state: both alternations list the
  terminals in the same order, so the first match of the larger one is also the first match of
  the smaller one. When the root token is *not* accepted, the state's own alternation decides:
  if it finds the same token the input has a syntax error there; if it finds another token
  (e.g. a keyword that is a prefix of a name in a state that accepts no name) the rest of the
  text is lexed in the exact gear, exactly as lark would.

Runs of unit reductions of inlined ``?rules`` (``primary -> factor -> term -> ...``) do not
change the value and have no callback; their end state depends only on (state below, state,
lookahead) and is memoized. Terminals whose name starts with ``_`` are filtered out of the
callbacks' children by lark; the driver pushes ``None`` for them instead of a token.

The text is parsed in *segments*, each ending with a ``boundaries`` token (``;`` for Modelica).
A segment whose token sequence recurs is handed to `lalr_shapes.Shapes`, which matches the
whole segment with one regular expression built from the terminals' and replays the LALR
actions recorded for it as straight-line code (that module's docstring explains why this is
exact). Anything else, including every error, goes through the token-by-token loop.

`tests/importers/test_lalr_driver.py` parses the reference models and generated ones with
this driver and with `Lark.parse` (tree mode) and requires identical trees and identical
errors: a lark release that changes its tables or internals fails there first.
pyproject.toml bounds the lark versions to the tested ones.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

from .lalr_shapes import Shapes

if TYPE_CHECKING:
    from lark import Lark

# (lark's classes are imported where they are read, so that importing this module does not
# import lark: `flat_modelica._FastParts`)


class ParseError(Exception):
    """A syntax error found by the driver, before any interpretation.

    ``kind`` is ``"token"`` (a token the grammar does not accept here), ``"char"`` (no terminal
    matches at ``pos``), ``"end"`` (the text ends too early) or ``"size"`` (the text has more
    tokens than the caller allows). ``token`` is the offending
    ``(type, value, start)`` tuple (``("$END", "", pos)`` at the end), ``expected`` the names
    the parser state accepts and ``previous`` the token before it (or None)."""

    def __init__(self, kind: str, pos: int, token=None, expected=frozenset(), previous=None):
        super().__init__(kind, pos)
        self.kind = kind
        self.pos = pos
        self.token = token
        self.expected = frozenset(expected)
        self.previous = previous


def _direct(callback):
    """``callback``, or, for lark's child filter that only drops children (punctuation), a
    function that picks the kept children by position and calls the rule's callback: the same
    call, without the filter's per-child loop. The generated source holds only the integer
    positions (lark's ``to_include``), never input text."""
    from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders
    if type(callback) is not ChildFilterLALR_NoPlaceholders or \
            any(expand for _, expand in callback.to_include):
        return callback
    picked = ", ".join(f"c[{int(i)}]" for i, _ in callback.to_include)
    namespace = {"build": callback.node_builder}
    exec(f"def direct(c):\n    return build([{picked}])\n", namespace)  # noqa: S102
    return namespace["direct"]


class Driver:
    """lark's compiled LALR(1) grammar, run over a text (module docstring).

    ``terminators`` names terminals whose end offsets are appended, as they are read, to the
    list given to `parse` (the Modelica callbacks locate statements with them);
    ``boundaries`` names the terminals that end a segment."""

    def __init__(self, lark: Lark, terminators=(), boundaries=()):
        frontend = lark.parser
        lexer = getattr(frontend.lexer, "lexer", frontend.lexer)     # under a PostLexConnector
        lalr = frontend.parser.parser
        table = lalr.parse_table
        self.start_states = dict(table.start_states)
        self.end_states = dict(table.end_states)
        self._end_set = frozenset(self.end_states.values())
        self.terminators = frozenset(terminators)
        self.boundaries = frozenset(boundaries)
        self.states = self._actions(table, lalr.callbacks)
        root = lexer.root_lexer
        self.ignore = frozenset(root.ignore_types)
        self.root_terminals, self.remap = self._scanner(root)
        self.root_re = re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})"
                                           for t in self.root_terminals),
                                  lark.options.g_regex_flags)
        self.flags = self.root_re.flags
        self.kinds = {i: name for name, i in self.root_re.groupindex.items()}
        self.keep = {t.name: not t.name.startswith("_") for t in lark.terminals}
        self._lexers = lexer.lexers
        self._state_lexers: dict = {}
        self._unit_runs: dict = {}
        self.shapes = Shapes(self) if self.boundaries else None
        self.tokens_read = 0

    @staticmethod
    def _actions(table, callbacks) -> dict:
        """Per state: terminal or rule name -> shift target (int) or reduction.

        A reduction is ``(size, rule name, callback)``; the callback is None for a unit
        reduction of an inlined ``?rule`` (the value is passed up unchanged), lark's callback
        otherwise (through `_direct` where lark only filters the children). Keys are plain
        strings (lark's are partly Token objects, whose ``__eq__`` makes lookups slow)."""
        from lark.parsers.lalr_analysis import Shift
        reductions = {}
        states = {}
        for state, actions in table.states.items():
            row = {}
            for key, (action, arg) in actions.items():
                if action is Shift:
                    row[str(key)] = arg
                    continue
                rule = arg
                if rule not in reductions:
                    size = len(rule.expansion)
                    sym = rule.expansion[0] if size == 1 else None
                    unit = (sym is not None and rule.options.expand1 and rule.alias is None
                            and not sym.name.startswith("_")
                            and not (sym.is_term and sym.filter_out))
                    reductions[rule] = (size, str(rule.origin.name),
                                        None if unit else _direct(callbacks[rule]))
                row[str(key)] = reductions[rule]
            states[state] = row
        return states

    @staticmethod
    def _scanner(basic):
        """The terminals of a lark lexer in matching order (lark's scanner, built on first
        use) and its keyword remapping: for a terminal such as NAME, the keyword terminal of
        each value that is a keyword (lark's "unless" callbacks)."""
        from lark.lexer import UnlessCallback
        scanner = basic.scanner
        remap = {}
        for kind, cb in basic.callback.items():
            if not isinstance(cb, UnlessCallback):
                raise TypeError(f"lexer callback on {kind} is not supported")
            remap[kind] = {t.pattern.value: t.name for t in cb.scanner.terminals}
        return scanner.terminals, remap

    def _exact_token(self, text: str, pos: int, state):
        """Token at ``pos`` as lark's contextual lexer reads it in ``state``: ``(type, end)``,
        or None when no terminal of the state matches."""
        lexer = self._state_lexers.get(state)
        if lexer is None:
            terminals, remap = self._scanner(self._lexers[state])
            pattern = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals)
            lexer = self._state_lexers[state] = (re.compile(pattern, self.root_re.flags).match,
                                                 remap)
        match, remap = lexer
        m = match(text, pos)
        if m is None:
            return None
        kind = m.lastgroup
        if kind in remap:
            kind = remap[kind].get(m.group(), kind)
        return kind, m.end()

    def unit_run(self, below, state, kind):
        """State reached from ``state`` (above ``below``) by the unit reductions that lookahead
        ``kind`` triggers one after the other; memoized."""
        key = (below, state, kind)
        end = self._unit_runs.get(key)
        if end is not None:
            return end
        states = self.states
        ends = self._end_set
        while state not in ends:
            action = states[state].get(kind)
            if action is None or type(action) is int or action[2] is not None:
                break
            state = states[below][action[1]]
        self._unit_runs[key] = state
        return state

    def parse(self, text: str, start: str, term_ends: list | None = None,
              max_tokens: int | None = None, shapes: bool = True):
        """LALR(1) parse of ``text`` from rule ``start``; returns the start rule's value.

        Raises `ParseError`: a syntax error, or (kind ``"size"``) more than ``max_tokens``
        tokens (ignored ones not counted; the value is built as the tokens are read, so this
        bounds the memory). When ``term_ends`` is a list, the end offsets of the
        ``terminators`` tokens are appended to it as they are read. `tokens_read` is the
        number of tokens read. ``shapes=False`` skips the shape cache (for short texts
        without boundary tokens, where it cannot help)."""
        stack = [self.start_states[start]]
        values: list = []
        end = len(text)
        pos, tok, exact = 0, None, False
        budget = sys.maxsize if max_tokens is None else max_tokens
        left = budget
        cache = self.shapes if shapes else None
        recent: tuple = (None, None)        # shapes of the last two segments
        while pos < end:
            if cache is not None and not exact:
                hit = cache.replay(text, pos, stack, values, term_ends, recent)
                if hit is not None:
                    pos, tok, shape = hit
                    recent = (recent[1], shape)
                    left -= len(shape.tokens)
                    if left < 0:
                        raise ParseError("size", tok[2], previous=tok)
                    continue
            kinds: list = []
            pos, tok, exact, bounded, left = self._segment(text, pos, stack, values,
                                                           term_ends, tok, exact, kinds, left)
            if cache is not None:
                shape = cache.learn(kinds, recent) if bounded and not exact else None
                recent = (recent[1], shape)
        self.tokens_read = budget - left
        return self._finish(start, stack, values, tok)

    def _segment(self, text, pos, stack, values, term_ends, tok, exact, kinds, left):
        """Token-by-token parse from ``pos`` until a ``boundaries`` token is shifted or the
        text ends, ``left`` tokens at most. Appends the type of every token read (ignored
        ones too) to ``kinds``. Returns (position, last token, exact gear, whether a boundary
        token ended it, tokens left)."""
        states = self.states
        unit_runs = self._unit_runs
        ignore = self.ignore
        names = self.kinds
        remap = self.remap
        keep = self.keep
        boundaries = self.boundaries
        match = self.root_re.match
        terminators = self.terminators if term_ends is not None else ()
        record = kinds.append
        end = len(text)
        while pos < end:
            if exact:
                found = self._exact_token(text, pos, stack[-1])
                if found is None:
                    self._char_error(text, pos, stack[-1], tok)
                kind, npos = found
            else:
                m = match(text, pos)
                if m is None:
                    raise ParseError("char", pos, previous=tok)
                kind = names[m.lastindex]
                npos = m.end()
            record(kind)
            if kind in ignore:
                pos = npos
                continue
            left -= 1
            if left < 0:
                raise ParseError("size", pos, previous=tok)
            value = text[pos:npos]
            if kind in remap and not exact:     # (the exact gear remaps with its state's own)
                kind = remap[kind].get(value, kind)
                kinds[-1] = kind
            row = states[stack[-1]]
            if kind not in row and not exact:
                # the root token is not accepted here: let the state's own terminals decide
                found = self._exact_token(text, pos, stack[-1])
                if found is None:
                    raise ParseError("token", pos, (kind, value, pos), row, tok)
                if found != (kind, npos):
                    exact = True            # re-read this token in the exact gear
                    left += 1
                    continue
            prev = tok
            tok = (kind, value, pos)
            if kind in terminators:
                term_ends.append(npos)
            pos = npos
            while True:
                action = row.get(kind)
                if type(action) is int:
                    stack.append(action)
                    values.append(tok if keep[kind] else None)
                    if kind in boundaries:
                        return pos, tok, exact, True, left
                    break
                if action is None:
                    raise ParseError("token", tok[2], tok, row, prev)
                size, origin, callback = action
                if callback is None:
                    key = (stack[-2], stack[-1], kind)
                    state = unit_runs.get(key)
                    if state is None:
                        state = self.unit_run(*key)
                    stack[-1] = state
                    row = states[state]
                    continue
                if size:
                    children = values[-size:]
                    del values[-size:]
                    del stack[-size:]
                else:
                    children = []
                values.append(callback(children))
                state = states[stack[-1]][origin]
                stack.append(state)
                row = states[state]
        return pos, tok, exact, False, left

    def _finish(self, start, stack, values, tok):
        """The reductions at the end of the text, up to the end state of ``start``."""
        states = self.states
        end_state = self.end_states[start]
        end_tok = ("$END", "", 0 if tok is None else tok[2] + len(tok[1]))
        while stack[-1] != end_state:
            row = states[stack[-1]]
            action = row.get("$END")
            if action is None or type(action) is int:
                raise ParseError("end", end_tok[2], end_tok, row, tok)
            size, origin, callback = action
            if callback is None:
                stack[-1] = self.unit_run(stack[-2], stack[-1], "$END")
                continue
            children = values[-size:] if size else []
            if size:
                del values[-size:]
                del stack[-size:]
            values.append(callback(children))
            stack.append(states[stack[-1]][origin])
        return values[-1]

    def _char_error(self, text, pos, state, previous):
        """No terminal of ``state`` matches at ``pos``: an unexpected token if some other
        terminal matches there (lark's contextual-lexer rule), else an unexpected character."""
        m = self.root_re.match(text, pos)
        if m is None:
            raise ParseError("char", pos, previous=previous)
        kind = self.kinds[m.lastindex]
        value = m.group()
        if kind in self.remap:
            kind = self.remap[kind].get(value, kind)
        raise ParseError("token", pos, (kind, value, pos), self.states[state], previous)


__all__ = ["Driver", "ParseError"]
