"""The hand-written parser's line shapes (`fast_parser.Lexer.learn`): a line whose key (its text
with every run of ASCII digits replaced by one "0") was seen before is split by one match of
the shape learned from an earlier line. The tokens (kind, text, offset) and the terminator
offsets must be those of token-by-token lexing, on texts built to catch a wrong split: digits
inside names, numbers and strings of different lengths, keywords next to names, comments,
strings over several lines, trailing blanks, Unicode digits."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdae_fmu.importers import fast_parser as FP
from mdae_fmu.importers import flat_modelica as F


def _lex(text: str, shapes: bool) -> tuple[list, list, int]:
    """Every token of ``text`` with a fresh lexer (line shapes on or off), the terminator
    offsets, and how many shapes the lexer learned."""
    lexer = FP.Lexer(F._parser().driver)
    if not shapes:
        lexer.learn = lambda key, text, toks: None        # type: ignore[method-assign]
    ends: list = []
    fp = FP.FastParser(lexer, None, text, ends, 10 ** 9)
    toks = [fp.tok]
    while fp.kind != "$END":
        fp.advance()
        toks.append(fp.tok)
    return toks, ends, len(lexer.shapes)


def _same(text: str) -> int:
    """Assert equal lexing with and without shapes; the number of shapes learned."""
    try:
        plain = _lex(text, shapes=False)
    except FP.Unsupported:
        with pytest.raises(FP.Unsupported):
            _lex(text, shapes=True)
        return 0
    shaped = _lex(text, shapes=True)
    assert shaped[:2] == plain[:2]
    return shaped[2]


#: lines with digits in every kind of token; {} takes a number of 1 to 7 digits
LINES = [
    "  Real chain.x[{}](start = {}.{}, fixed = true) \"mass {}\";",
    "  der(chain.x[{}]) = chain.v[{}] + {}e{} * x{}y - 1.{}E-{};",
    "  rod.Q[{}] = G * (rod.T[{}] - rod.T[{}]);",
    "  a{} = if b{} then {} else end{};",
    "  initial{} = 'q{}'.z[{}, {}] ^ -{};",
    "  x{} = {}; // comment {}",
    "  y{} = \"two {}\nlines {}\";",
    "  z{} = {};   ",
    "  w{} = {};\r",
    "  v{} = {} /* block {} */ + {};",
    "  u{} = {}\u0663{};",
    "equation",
    "  when x{} > {} then",
    "  end when;",
    "  x{} = y{};",         # the same key but for letters: a keyword where a name was
    "  x{} = end;",
    "  x{} = then;",
]


def _fill(line: str, rng: random.Random) -> str:
    return line.format(*(str(rng.randrange(1, 10 ** rng.randint(1, 7)))
                         for _ in range(line.count("{}"))))


def test_repeated_lines_lex_as_token_by_token():
    rng = random.Random(29)
    body = [_fill(rng.choice(LINES), rng) for _ in range(3000)]
    text = "class M\n" + "\n".join(body) + "\nend M;\n"
    assert _same(text) >= 8                 # the shapes were learned and used


def test_generated_model_is_lexed_by_shapes():
    text = "class M\n" + "".join(f"  Real x[{i}](start = {i / 7!r});\n" for i in range(1, 500)) \
        + "end M;\n"
    assert _same(text) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=12),
       st.integers(min_value=0, max_value=2 ** 32), st.integers(min_value=2, max_value=6))
def test_random_line_mixes_lex_as_token_by_token(lines, seed, repeats):
    rng = random.Random(seed)
    body = [_fill(line, rng) for _ in range(repeats) for line in lines]
    _same("class M\n" + "\n".join(body) + "\nend M;\n")


def test_long_line_is_lexed_in_batches():
    """A text on one line is lexed a batch at a time (the token limit is checked per batch,
    before the whole file is in memory), with the tokens of token-by-token lexing."""
    text = "class M\n  Real x = " + " + ".join(["1"] * 20000) + ";\nend M;\n"
    lexer = FP.Lexer(F._parser().driver)
    fp = FP.FastParser(lexer, None, text, [], 10 ** 9)
    assert FP.FastParser.BATCH < len(fp.toks) <= 2 * FP.FastParser.BATCH
    _same(text)
    fp = FP.FastParser(lexer, None, text, [], 3 * FP.FastParser.BATCH)
    with pytest.raises(FP.Unsupported, match="too many tokens"):
        while fp.kind != "$END":
            fp.advance()
    assert fp.lexed < len(text) // 2        # refused before the end of the line


def test_lines_over_the_bounds_get_no_shape():
    long_line = "  x{} = " + " + ".join(["y{}"] * 70) + ";"
    rng = random.Random(3)
    text = "class M\n" + "\n".join(_fill(long_line, rng) for _ in range(20)) + "\nend M;\n"
    assert _same(text) == 0                 # more than MAX_SHAPE_TOKENS tokens
    wide = "  x{} = y" + "z" * FP.MAX_SHAPE_CHARS + ";"
    text = "class M\n" + "\n".join(_fill(wide, rng) for _ in range(20)) + "\nend M;\n"
    assert _same(text) == 0                 # more than MAX_SHAPE_CHARS characters
