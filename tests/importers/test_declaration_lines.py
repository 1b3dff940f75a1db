"""Declaration lines of a known shape built from their match (`importers.declaration_lines`):
the `Decl` records equal those of the callbacks (the parse trace of the same lines, itself
checked against the grammar), the models and errors (`file:line:col`, message, source line)
equal the LALR grammar's, the plain forms are compiled and the others keep the trace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mdae_fmu.importers import declaration_lines as DL
from mdae_fmu.importers import flat_modelica as F
from mdae_fmu.importers.fast_parser import FastParser
from mdae_fmu.importers.parse_traces import Recorder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_fast_parser import parse_outcome  # noqa: E402

#: declaration lines, ``{i}`` the varying digits (each line is repeated: its shape is learned,
#: recorded, then built from its match), and whether `compile_declaration` compiles the form
LINES = [
    ("  Real x{i};\n", True),
    ("  Real a.x[{i}](start = 0.{i}, fixed = true);\n", True),
    ("  Real b.v[{i}](start = -{i}.5, fixed = false) \"speed {i}\";\n", True),
    ("  Real c{i} \"left spring force\";\n", True),
    ("  parameter Real p{i} = {i}.0 \"gain\";\n", True),
    ("  parameter Real q{i}(max = {i}e3, unit = \"m\") = 2 * k;\n", True),
    ("  discrete Integer n{i}(start = {i});\n", True),
    ("  input Real u{i}(start = 1);\n", True),
    ("  output Boolean y{i}(start = false, fixed = true);\n", True),
    ("  final parameter Real f{i} = 1, g{i} = 2 \"two at once\";\n", True),
    ("  Real 'quoted.name{i}'(nominal = 10) \"a \\\"quoted\\\" text {i}\";\n", True),
    ("  Real d{i}(start);\n", True),
    ("  Real e{i}() \"empty\";\n", True),
    ("  Real h{i}(stateSelect = StateSelect.prefer);\n", True),
    ("  Real k{i}(quantity = \"Length\", start = {i});\n", True),
    ("  Real r{i}(start = 1 + {i}) = time;\n", True),
    # forms that keep the trace
    ("  Real s{i}[2](each start = {i});\n", False),
    ("  Real t{i} \"joined \" + \"text\";\n", False),
    ("  Real w{i}(start = 1) annotation(Evaluate = true);\n", False),
    ("  Real z{i}(start(fixed = true) = 1);\n", False),
]


def _text(lines: list[str], repeats: int = 12, first: int = 1) -> str:
    body = "".join(line.format(i=i) for line in lines for i in range(first, first + repeats))
    return f"class M\n{body}equation\nend M;\n"


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    """Token batches of a line or two: the lines after a shape's recorded one are lexed once
    its trace exists, as `Line` tokens (the lexer reads a batch ahead of the parse)."""
    monkeypatch.setattr(FastParser, "BATCH", 24)


def _decls(text: str, compiled: bool, monkeypatch) -> tuple[list, int]:
    """The `Decl`s of ``text`` parsed by the hand-written parser with a fresh lexer (no shape
    learned elsewhere), with or without the compiled declaration lines; and the lines
    replayed."""
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(F._Callbacks, "line_rules", {})
        parser = F._parser()
        lexer = type(parser.lexer)(parser.driver)
        ctx = F.ParseContext("m.mo", text)
        parser.callbacks.ctx = ctx
        try:
            fast = FastParser(lexer, parser.callbacks, text, ctx.term_ends, ctx.tokens_left)
            value = fast.parse_start()
        finally:
            parser.callbacks.ctx = None
    contents = value[-1]                # (the class: tag, kind, name, end name, contents)
    return [d for section in contents if section[0] == "decls" for d in section[1]], \
        fast.replayed


def _counting(patch) -> list:
    """The results of `compile_declaration` while ``patch`` holds (a function or None)."""
    seen: list = []
    original = DL.compile_declaration

    def counted(*args):
        result = original(*args)
        seen.append(result)
        return result
    patch.setattr(F._Callbacks, "line_rules", {"element": counted})
    return seen


def _fresh_outcome(text: str, monkeypatch) -> object:
    """`parse_outcome` of the hand-written parser with a fresh lexer (shapes learned from
    ``text`` alone)."""
    with monkeypatch.context() as patch:
        parser = F._parser()
        patch.setattr(parser, "lexer", type(parser.lexer)(parser.driver))
        return parse_outcome(text, "fast", patch)


@pytest.mark.parametrize("line, plain", LINES, ids=[line.strip() for line, _ in LINES])
def test_line_compiled_as_expected_and_equal(line, plain, monkeypatch):
    text = _text([line])
    with monkeypatch.context() as patch:
        seen = _counting(patch)
        _decls(text, True, monkeypatch)
    assert seen, "the line was never recorded"
    assert all((f is not None) == plain for f in seen)
    built, replayed = _decls(text, True, monkeypatch)
    traced, replayed_too = _decls(text, False, monkeypatch)
    assert replayed == replayed_too >= 3
    assert built == traced
    assert [d.loc for d in built] == [d.loc for d in traced]


def test_mixed_lines_equal_the_grammar(monkeypatch):
    """Every form above, interleaved and repeated: the `Decl`s equal the trace's, and the model
    (variables, equations and their locations) or the first error equals the grammar's."""
    good = [line for line, _ in LINES if "annotation" not in line and "each" not in line
            and "start(" not in line]
    text = "".join(line.format(i=i) for i in range(1, 8) for line in good)
    text = f"class M\n{text}equation\nend M;\n"
    built, _ = _decls(text, True, monkeypatch)
    traced, _ = _decls(text, False, monkeypatch)
    assert built == traced
    fast = _fresh_outcome(text, monkeypatch)
    lalr = parse_outcome(text, "lalr", monkeypatch)
    assert fast == lalr
    if not isinstance(fast, tuple):
        assert [v.loc for v in fast.variables] == [v.loc for v in lalr.variables]


@pytest.mark.parametrize("good, bad, message", [
    ("  Real x{i}(start = {i}, fixed = true);\n", "  Real x5(start = 1, fixed = true);\n",
     "duplicate declaration of 'x5'"),
    ("  Real y{i}(start = 1e{i}, fixed = true);\n", "  Real y9(start = 1e999, fixed = true);\n",
     "too large for a double"),
    ("  parameter Real p{i} = {i} \"p\";\n", "  parameter Real p3 = 4 \"p\";\n",
     "duplicate declaration of 'p3'"),
    ("  Real 'q{i}'(start = {i}) \"d {i}\";\n", "  Real 'q2'(start = 7) \"d 8\";\n",
     "duplicate declaration of 'q2'"),
])
def test_errors_on_built_lines_are_the_grammars(good, bad, message, monkeypatch):
    """An error on a line built from its match (the seventh of its shape) has the grammar's
    location, message and source line."""
    lines = "".join(good.format(i=i) for i in range(1, 7))
    text = f"class M\n{lines}{bad}equation\nend M;\n"
    with monkeypatch.context() as patch:
        seen = _counting(patch)
        outcome = _fresh_outcome(text, monkeypatch)
    assert len(seen) == 1 and seen[0] is not None
    assert outcome == parse_outcome(text, "lalr", monkeypatch)
    assert isinstance(outcome, tuple) and message in outcome[2]
    assert outcome[1].startswith("m.mo:8:")


def test_generated_chain_lines_are_built(monkeypatch):
    """The declaration lines of the generated loop chain are all of compiled forms."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_chain import loop_chain_model
    text = loop_chain_model(30)
    with monkeypatch.context() as patch:
        seen = _counting(patch)
        outcome = _fresh_outcome(text, monkeypatch)
    assert seen and all(f is not None for f in seen)
    assert outcome == parse_outcome(text, "lalr", monkeypatch)


def test_refused_records_give_none():
    """A record that is not a declaration's (an equation's) is refused."""
    text = "class M\n" + "".join(f"  Real x{i};\n" for i in range(1, 5)) + "equation\n" + \
        "".join(f"  x{i} = {i}.0;\n" for i in range(1, 5)) + "end M;\n"
    parser = F._parser()
    ctx = F.ParseContext("m.mo", text)
    parser.callbacks.ctx = ctx
    try:
        tokens = [("NAME", "x1", 0)]
        record = Recorder(parser.callbacks, tokens)
        value = record.ref([tokens[0]])
        assert not record.failed
        assert DL.compile_declaration(record, value, ("NAME",), ["x1"], lambda m, cb: None,
                                      512) is None
    finally:
        parser.callbacks.ctx = None


def test_input_text_is_data_in_the_compiled_lines(tmp_path, monkeypatch):
    """Security: the compiled source of a declaration shape holds no input text; names,
    descriptions (with and without escapes) and values that read as Python reach the records
    as the strings they are, and nothing of them runs."""
    sentinel = tmp_path / "ran"
    code = f"__import__('pathlib').Path({str(sentinel)!r}).touch()"
    lines = [f"  Real x{i}(start = {i}) \"{i}') ; {code} ; ('\";\n" for i in range(1, 13)]
    lines += [f"  Real y{i} \"{i}\\\"); {code}; (\\\"\";\n" for i in range(1, 13)]
    text = "class M\n" + "".join(lines) + "equation\nend M;\n"
    with monkeypatch.context() as patch:
        seen = _counting(patch)
        built, _ = _decls(text, True, monkeypatch)
    assert any(f is not None for f in seen), "the shapes were not compiled"
    traced, _ = _decls(text, False, monkeypatch)
    assert built == traced
    described = {d.name: d.description for d in built}
    assert described["x7"] == f"7') ; {code} ; ('"
    assert described["y7"] == f"7\"); {code}; (\""
    assert not sentinel.exists()


#: modifications of a declaration without prefix or binding: those `declare` reads on its
#: short way (at most once each of start, nominal, min, max and fixed = true/false) and those
#: it hands to the general one (twice, no value, another modifier, fixed not a Boolean)
MODIFICATIONS = ["", "(start = 1.5)", "(start = 1.5, fixed = true)", "(fixed = false, start = 2)",
                 "(nominal = 3, min = -1, max = 10)", "(min = 0, max = 2, nominal = 1, "
                 "fixed = true, start = 1)", "(start = 1, start = 2)", "(fixed = 1)",
                 "(fixed = true, fixed = false)", "(start)", "(unit = \"m\", start = 1)",
                 "(max = 1, max = 2)", "(stateSelect = StateSelect.never)", "()",
                 "(fixed = time > 1)", "(nominal(x = 1) = 2)"]


@pytest.mark.parametrize("type_name", ["Real", "Integer", "Boolean"])
def test_declare_plain_way_is_the_general_one(type_name, monkeypatch):
    """`_ModelBuilder.declare` of a declaration without prefix, binding or enumeration type
    (its short way) gives what the general way gives: the same declaration after ``final``
    (a prefix without effect, which takes the general way) has the same variable, or the same
    error six columns further."""
    for mods in MODIFICATIONS:
        if type_name == "Boolean":
            mods = mods.replace("1.5", "true").replace("= 2)", "= false)")
        outcomes = []
        for prefix in ("", "final "):
            text = f"model M\n  {prefix}{type_name} x{mods} \"d\";\n  Real y;\nend M;\n"
            got = parse_outcome(text, "fast", monkeypatch)
            if isinstance(got, tuple):
                line, col = got[1].rsplit(":", 2)[1:]
                outcomes.append((line, int(col) - len(prefix), got[2].split(": ", 1)[1]
                                 .split("\n")[0]))
            else:
                outcomes.append((got, [(v.name, v.loc.line, v.loc.col - len(prefix) * (
                    v.name == "x")) for v in got.variables]))
        assert outcomes[0] == outcomes[1], mods
