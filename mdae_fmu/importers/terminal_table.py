"""The terminals of ``modelica.lark`` as plain data, so that the hand-written parser
(`fast_parser`) can lex without lark (issue 29).

`fast_parser.Lexer` needs only the grammar's terminals in lark's matching order (name, kind,
fixed text, regular expression), the regular-expression flags, the ignored terminals and
the keyword remapping of NAME. lark computes them while it loads the whole grammar: its
import, its LALR tables and its contextual lexer (one compiled lexer per parser state) cost
about 0.13 s of CPU at every start, more than the import of a small model itself. This
module ships them in ``terminals.json`` beside the grammar, written by
``scripts/write_terminal_table.py`` from lark's own tables (`from_driver`), and
keyed by the SHA-256 of the grammar file: `shipped` returns None when the grammar has
changed since, and the caller then takes the table from lark as before (slower, never
different). tests/importers/test_terminal_table.py checks that the shipped table is what
the installed lark computes from the grammar, so a new lark release that orders or writes
the terminals otherwise fails there. The file is JSON, read with `json`: data, never code.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAMMAR = Path(__file__).with_name("modelica.lark")
TABLE = Path(__file__).with_name("terminals.json")
FORMAT = "mdae_fmu.terminals/1"


@dataclass(frozen=True)
class Pattern:
    """A terminal's pattern as `fast_parser.Lexer` reads lark's: ``type`` ``"str"`` (a
    fixed text, ``value``) or ``"re"``, and the regular expression that matches it."""
    type: str
    value: str
    regexp: str

    def to_regexp(self) -> str:
        return self.regexp


@dataclass(frozen=True)
class Terminal:
    """One terminal of the grammar: its name and `Pattern`."""
    name: str
    pattern: Pattern


@dataclass(frozen=True)
class TerminalTable:
    """What `fast_parser.Lexer` reads of the LALR driver (`lalr.Driver`): the root lexer's
    terminals in lark's matching order, the regular-expression flags, the ignored terminals
    and, per terminal, the keyword terminal of each of its texts that is a keyword."""
    root_terminals: tuple[Terminal, ...]
    flags: int
    ignore: frozenset[str]
    remap: dict[str, dict[str, str]]


def grammar_digest(grammar: Path = GRAMMAR) -> str:
    """SHA-256 of the grammar file's bytes (the key of a shipped table)."""
    return hashlib.sha256(grammar.read_bytes()).hexdigest()


def from_driver(driver: Any) -> TerminalTable:
    """The table of a `lalr.Driver` (lark's own terminals, order and remapping)."""
    return TerminalTable(
        root_terminals=tuple(Terminal(name=t.name, pattern=Pattern(
            type=t.pattern.type, value=t.pattern.value, regexp=t.pattern.to_regexp()))
            for t in driver.root_terminals),
        flags=int(driver.root_re.flags),
        ignore=frozenset(driver.ignore),
        remap={kind: dict(words) for kind, words in driver.remap.items()})


def to_json(table: TerminalTable, digest: str) -> str:
    """The text of ``terminals.json`` for ``table`` and the grammar digest ``digest``."""
    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=True)
    terminals = ",\n  ".join(dump([t.name, t.pattern.type, t.pattern.value, t.pattern.regexp])
                             for t in table.root_terminals)
    remap = ",\n  ".join(f"{dump(kind)}: {dump(list(words.items()))}"
                         for kind, words in table.remap.items())
    return (f'{{"format": {dump(FORMAT)},\n "grammar_sha256": {dump(digest)},\n'
            f' "flags": {table.flags},\n "ignore": {dump(sorted(table.ignore))},\n'
            f' "terminals": [\n  {terminals}],\n "remap": {{\n  {remap}}}}}\n')


def from_json(text: str, digest: str) -> TerminalTable | None:
    """The table in ``text``, or None when it is not this format or was made from another
    grammar than the one of digest ``digest``."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            data.get("grammar_sha256") != digest:
        return None
    return TerminalTable(
        root_terminals=tuple(Terminal(name=name, pattern=Pattern(type=kind, value=value,
                                                                 regexp=regexp))
                             for name, kind, value, regexp in data["terminals"]),
        flags=int(data["flags"]),
        ignore=frozenset(data["ignore"]),
        remap={kind: dict(words) for kind, words in data["remap"].items()})


def shipped() -> TerminalTable | None:
    """The table shipped with the package, if it was made from the grammar as it is now (None
    when it is missing, unreadable or damaged: the caller then takes lark's)."""
    try:
        return from_json(TABLE.read_text(encoding="utf-8"), grammar_digest())
    except (OSError, ValueError, KeyError, TypeError):
        return None
