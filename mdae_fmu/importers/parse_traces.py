"""Parse traces of the hand-written parser (`fast_parser`): the callbacks that parsing one line
of a known shape calls, recorded once and replayed as straight-line code.

A line shape (`fast_parser.Lexer.learn`) fixes the terminal kinds of every token of the line.
The recursive-descent parser decides only from token kinds (it never looks at a token's text
or at a callback's value), so parsing such a line from the same rule (a declaration, an
equation) makes the same callback calls, in the same order, with children that are the same
tokens of the line and the same earlier values, whatever the names and numbers of the line
are. `Recorder` stands in for the callbacks while a first line of the shape is parsed and
writes every call down; `compile_trace` turns that record into a function that makes exactly
those calls on the tokens of any later line of the shape (`FastParser.element`,
`FastParser.equation`). The callbacks themselves run as before, so the syntax tree and every
error they record are the same; only the parser's own work per token (reading a token,
testing its kind, the precedence levels) is skipped.

A record is refused (the shape is then parsed token by token in that rule) when a child is not
a token of the line, a value of an earlier call or a list of those (each list passed once), or
is a value that two calls returned (the replay could not tell which one it is). The parser
passes each token, list and value it holds once, so a value that is one of the call's own
children (a callback handing a child on) stands for that call's value from then on.
"""

from __future__ import annotations

import re
from types import FunctionType
from typing import Any, Callable

#: a compiled trace: (the line's tokens list, index of its first token, the callbacks) -> value
Trace = Callable[[list, int, Any], Any]
#: a compiled trace of a line of a known shape: (the match of the shape's regular
#: expression, the callbacks) -> value (`compile_trace` with the shape's kinds)
LineTrace = Callable[[Any, Any], Any]
#: the children of a call that are one token of the line
_ONE_TOKEN = re.compile(r"\[(t[0-9]+)\]")
#: a token's name in a trace's source, and its text read alone (`_line_trace`)
_TOKEN = re.compile(r"\bt([0-9]+)\b")
_TOKEN_TEXT = re.compile(r"\bt([0-9]+)\[1\]")
#: a token's offset read alone (`_line_trace`)
_TOKEN_OFFSET = re.compile(r"\bt([0-9]+)\[2\]")


class Recorder:
    """The grammar callbacks ``callbacks`` seen through a recorder while the tokens ``tokens``
    (one line) are parsed: each call is forwarded and written down in `ops` as (callback
    name, children as slots); `value_slot` encodes the rule's value at the end."""

    def __init__(self, callbacks: Any, tokens: list) -> None:
        self.callbacks = callbacks
        self.slots: dict[int, str] = {id(t): f"t{k}" for k, t in enumerate(tokens)}
        self.size = len(tokens)
        self.ops: list[tuple[str, str]] = []
        self.alive: list = []           # keeps every value and list seen (ids stay unique)
        self.failed = False

    def encode(self, value: Any, inside: set[int]) -> str:
        """Python source of ``value`` in terms of the line's tokens ``t<k>`` and earlier
        values ``x<k>``, adding to ``inside`` the ids of what it holds; marks the record failed
        for anything else."""
        key = id(value)
        inside.add(key)
        slot = self.slots.get(key)
        if slot is not None:
            return slot
        if type(value) is list:
            self.slots[key] = "!"               # a list passed twice: refused
            self.alive.append(value)
            return "[" + ", ".join(self.encode(v, inside) for v in value) + "]"
        self.failed = True
        return "!"

    def __getattr__(self, name: str) -> Callable[[list], Any]:
        method = getattr(self.callbacks, name)
        if not name.isidentifier() or name.startswith("_"):
            self.failed = True

        def call(children: list) -> Any:
            inside: set[int] = set()
            source = self.encode(children, inside)
            value = method(children)
            key = id(value)
            # the parser passes each token, list and value once: a callback returning one of
            # its own children (``class_modification``: its argument list) hands it on, and
            # its later use is this call's value; any other value met before (a shared
            # constant, None...) is ambiguous, and refused where it is used
            slots = self.slots
            slots[key] = f"x{len(self.ops)}" if key in inside or key not in slots else "!"
            self.alive.append(value)
            self.ops.append((name, source))
            return value
        return call


def children(source: str) -> list[str]:
    """The sources of the children in ``source``, the source of a call's children list
    (``[t0, x1, [x2, x3]]``: ``t0``, ``x1``, ``[x2, x3]``)."""
    parts: list[str] = []
    depth = 0
    begin = 1
    for k, char in enumerate(source):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0 and k > begin:
                parts.append(source[begin:k])
        elif char == "," and depth == 1:
            parts.append(source[begin:k])
            begin = k + 2                   # (after ", ")
    return parts


def is_name(source: str) -> bool:
    """``source`` is a token's or an earlier value's name (evaluating it twice gives the same
    object), not a list built where it is written."""
    return source[:1] in ("t", "x")


def compile_trace(record: Recorder, value: Any, kinds: tuple | None = None) -> Any:
    """The function replaying ``record`` whose rule returned ``value``; None when the record
    was refused (module docstring).

    The source given to ``exec`` never contains input text, so no model can inject code: it
    holds callback names (identifiers of the parser's own calls, checked), slot expressions
    built from integers, and the generated names ``x<k>``, ``t<k>``, ``f_<name>``, ``t_<table>``,
    ``ctx``, ``T``, ``j``, ``cb`` and those of ``inline_names``.
    A callback that is a function of the callbacks' class is called as that function with
    ``cb`` (the method's own code, without the attribute lookup of each call); any other is
    looked up on ``cb``. The class's ``inline_rules``, ``{rule: form}``, names the rules whose
    value only rearranges their children (no state read or written): ``form`` gives, from the
    children's sources, the source of an expression equal to the rule's value (or None: the
    rule is called), which the replay evaluates instead of calling the rule; each child's
    source is built as above, and a form uses a child twice only when it is a name (``t<k>``,
    ``x<k>``), so every list is built once, as the call's would be. A form may also choose,
    by the types of its children, between the value the rule gives them without reading or
    writing any state and a call of the rule (``f_<name>(cb, [...])``: `expression_callbacks`'
    ``binop`` of a name's reference); the class's ``inline_names``, ``{identifier: object}``,
    are the names other than ``f_<name>`` such forms use (node classes, tables). The class's
    ``cached_rules``, ``{rule: table}``, names the rules whose value for one token is the entry
    of that token's text in the dict ``cb.ctx.<table>`` when it has one (a name's `E.Ref`, a
    number's `E.Const`): the replay reads that entry and calls the rule only when there is
    none.

    With ``kinds``, the terminal kinds of the line's shape (`fast_parser.Lexer.learn`), the
    trace is a `LineTrace`: the same calls made from the match of the shape's regular
    expression, without the line's token tuples (`_line_trace`)."""
    result = record.encode(value, set())
    if record.failed or "!" in result or any("!" in source for _, source in record.ops):
        return None
    # each callback is called as the function of the callbacks' class, bound by name in the
    # function's namespace (no attribute lookup, no bound method per call)
    owner = type(record.callbacks)
    cached: dict[str, str] = getattr(owner, "cached_rules", {})
    inline: dict[str, Callable[[list[str]], str | None]] = getattr(owner, "inline_rules", {})
    namespace: dict[str, Any] = dict(getattr(owner, "inline_names", {}))
    lines = ["def run(T, j, cb):"]
    tables: set[str] = set()
    for k, (name, source) in enumerate(record.ops):
        function = getattr(owner, name, None)
        call = f"cb.{name}({source})"
        if type(function) is FunctionType:
            namespace[f"f_{name}"] = function
            call = f"f_{name}(cb, {source})"
        form = inline.get(name)
        expression = form(children(source)) if form is not None else None
        table = cached.get(name)
        token = _ONE_TOKEN.fullmatch(source)
        if expression is not None:
            # a callback that only rearranges its children (`inline_rules`): its value built
            # here, without the call
            lines.append(f"    x{k} = {expression}")
        elif table is not None and table.isidentifier() and token is not None:
            # the rule's value is the context's table entry of the token's text when there
            # is one (`cached_rules`): looked up here, the callback called only on a miss
            tables.add(table)
            lines.append(f"    x{k} = t_{table}.get({token.group(1)}[1])")
            lines.append(f"    if x{k} is None:")
            lines.append(f"        x{k} = {call}")
        else:
            lines.append(f"    x{k} = {call}")
    if tables:
        lines[1:1] = ["    ctx = cb.ctx"] + [f"    t_{t} = ctx.{t}" for t in sorted(tables)]
    lines.append(f"    return {result}")
    if kinds is not None:
        return _line_trace(lines, namespace, kinds)
    # the line's tokens as locals, in one slice
    names = [f"t{k}" for k in range(record.size)]
    lines.insert(1, f"    {', '.join(names)}, = T[j:j + {record.size}]")
    exec("\n".join(lines), namespace)  # noqa: S102 - no input text in it (docstring)
    run: Trace = namespace["run"]
    return run


def _line_trace(lines: list[str], namespace: dict, kinds: tuple) -> LineTrace | None:
    """The trace whose source is ``lines`` (``run(T, j, cb)`` over the line's tokens
    ``t<k>``) as a function of the match of the line's shape instead (`LineTrace`): a token's
    text read where it is used alone (``t<k>[1]``: ``G[k]``, the match's group), its offset
    likewise (``t<k>[2]``: ``S(k + 1)``, the group's start), and a token
    passed whole built as the lexer builds it, ``(kind, text, offset)``, only for the tokens
    passed whole: where it is passed when the source passes it once (on a line of known names
    a `ref` whose table entry exists never builds its token), else once at the start (the
    same tuple wherever the record used it). The kinds are the shape's terminal names
    (identifiers, no input text)."""
    if not all(k.isidentifier() for k in kinds):
        return None
    body = [_TOKEN_OFFSET.sub(lambda t: f"S({int(t.group(1)) + 1})",
                             _TOKEN_TEXT.sub(r"G[\1]", line)) for line in lines[1:]]
    uses: dict[int, int] = {}
    for line in body:
        for k in _TOKEN.findall(line):
            uses[int(k)] = uses.get(int(k), 0) + 1
    # a token passed whole once is built where it is passed (often only on a miss of a
    # cached rule, `ref` of a name seen before: never); one passed twice, once at the start
    once = {k for k, n in uses.items() if n == 1}
    if once:
        body = [_TOKEN.sub(lambda t: _token_tuple(int(t.group(1)), kinds)
                           if int(t.group(1)) in once else t.group(0), line) for line in body]
    head = ["def run(m, cb):", "    G = m.groups()", "    S = m.start"]
    head += [f"    t{k} = {_token_tuple(k, kinds)}" for k in sorted(uses) if k not in once]
    exec("\n".join(head + body), namespace)  # noqa: S102 - no input text in it (docstring)
    run: LineTrace = namespace["run"]
    return run


def _token_tuple(k: int, kinds: tuple) -> str:
    """The source of token ``k`` of a line trace as the lexer builds it, ``(kind, text,
    offset)``, from the match's groups ``G`` and its ``start``, ``S`` (`_line_trace`)."""
    return f"({kinds[k]!r}, G[{k}], S({k + 1}))"


__all__ = ["LineTrace", "Recorder", "Trace", "children", "compile_trace", "is_name"]
