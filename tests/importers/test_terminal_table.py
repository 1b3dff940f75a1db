"""The grammar's terminals shipped as data for the hand-written parser's lexer
(`importers.terminal_table`, issue 29): the shipped file is what the installed lark computes
from the grammar (rerun scripts/write_terminal_table.py when this fails), a table made from
another grammar is never used, and without a usable table the lexer comes from lark and the
parse is the same."""

from __future__ import annotations

import json

from mdae_fmu.importers import flat_modelica as F
from mdae_fmu.importers import terminal_table as T
from mdae_fmu.importers.fast_parser import Lexer

MODEL = """model M
  parameter Real k = 2 "gain";
  Real x(start = 1, fixed = true);
  Boolean b;
initial equation
  x = 1;
equation
  der(x) = if b then -k * x else 0.5;
  b = x > 0.25 and time < 10; // a comment
end M;
"""


def test_shipped_table_is_larks_for_this_grammar():
    """Fresh: made from this grammar's bytes, and equal to what lark computes now, in lark's
    order and with lark's regular expressions (the file's text too, byte for byte)."""
    table = T.shipped()
    assert table is not None, "terminals.json is stale: run scripts/write_terminal_table.py"
    now = T.from_driver(F.lalr_driver())
    assert table == now
    assert [t.name for t in table.root_terminals] == [t.name for t in now.root_terminals]
    assert T.TABLE.read_text(encoding="utf-8") == T.to_json(now, T.grammar_digest())


def test_table_of_another_grammar_or_format_is_refused():
    text = T.TABLE.read_text(encoding="utf-8")
    digest = T.grammar_digest()
    assert T.from_json(text, digest) is not None
    assert T.from_json(text, "0" * 64) is None
    data = json.loads(text)
    data["format"] = "mdae_fmu.terminals/0"
    assert T.from_json(json.dumps(data), digest) is None


def test_missing_or_damaged_table_is_none(tmp_path, monkeypatch):
    for text in (None, "", "{", "[1, 2]", '{"format": "mdae_fmu.terminals/1"}',
                 T.TABLE.read_text(encoding="utf-8").replace('"flags": 32', '"flags": "x"')):
        path = tmp_path / "terminals.json"
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
        monkeypatch.setattr(T, "TABLE", path)
        assert T.shipped() is None


def test_lexers_from_the_table_and_from_lark_agree():
    """`fast_parser.Lexer` built from the shipped table and from lark's driver: the same
    regular expressions, fixed texts, ignored terminals and keyword table."""
    a, b = Lexer(T.shipped()), Lexer(F.lalr_driver())
    assert a.regex.pattern == b.regex.pattern and a.regex.flags == b.regex.flags
    assert a.fixed == b.fixed and a.ignore == b.ignore and a.first == b.first
    assert a.varying == b.varying and a.base_header.pattern == b.base_header.pattern


def test_stale_table_falls_back_to_lark(tmp_path, monkeypatch):
    """A table keyed by another grammar (an edited grammar, not yet rewritten): the lexer is
    lark's and the model is the same as with the shipped table."""
    want = F.parse_modelica(MODEL, "m.mo")
    stale = tmp_path / "terminals.json"
    stale.write_text(T.TABLE.read_text(encoding="utf-8").replace(T.grammar_digest(), "0" * 64))
    monkeypatch.setattr(T, "TABLE", stale)
    monkeypatch.setattr(F, "_fast", None)
    monkeypatch.setattr(F, "_instance", None)
    assert T.shipped() is None
    got = F.parse_modelica(MODEL, "m.mo")
    assert F._instance is not None and F._fast is not None
    assert F._fast.lexer is F._instance.lexer
    assert got == want
    assert [(v.name, v.loc) for v in got.variables] == [(v.name, v.loc) for v in want.variables]
