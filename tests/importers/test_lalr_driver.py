"""`importers.lalr.Driver` against lark itself: the driver runs lark's compiled tables with its
own loop, its own lexing gears and a shape cache (`importers.lalr_shapes`), so every input must
give the tree `Lark.parse` gives, token for token, and every error must be found at the same
token. This is also the test that catches a lark release changing the internals the driver
reads (pyproject.toml bounds lark to the tested versions)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from mdae_fmu.importers import flat_modelica as F
from mdae_fmu.importers.lalr import Driver, ParseError
from mdae_fmu.importers.lalr_shapes import first_chars

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_chain import chain_model  # noqa: E402

REFERENCE = sorted(p for ext in ("*.mo", "*.bmo") for p in (ROOT / "reference_models").glob(ext))

ODD = [
    "classX M end M;",                                    # keyword prefix where no name fits
    "model M\n  Real x;\nequation\n  x = initial\nequation;\nend M;\n",
    "class M Real x; equation x = 1; initial equation x = 2; end M;",
    "class M Real x; /* a; b */ equation x = 1; // c\n x = 2; end M;",
    "//! base 0.1.0\npackage 'P' model 'P' Real 'a.b'; equation 'a.b' = 1; end 'P'; end 'P';",
    "class M Real x; equation x = 1 /* oops; end M;",
    "class M Real x; equation x = 1; x = 2 x = 3; end M;",
    "class M Real x; equation x = 1;",
    "// only a comment\n",
    "class M Real x; equation x = y +; end M;",
    "class M Real end; equation end M;",
    "class M Real x; equation x = 1; end M; trailing",
]


def _tree_lark() -> Lark:
    """The grammar of the importer, with lark's tree builder instead of the callbacks."""
    return Lark(F._GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                start=["start", "expression"], postlex=F._PostLexer(),
                maybe_placeholders=False, propagate_positions=False)


LARK = _tree_lark()
DRIVER = Driver(LARK, boundaries=("SEMI",))


def _plain(node):
    """A tree as nested tuples; tokens as (type, value, offset), whoever made them."""
    if isinstance(node, Tree):
        return (str(node.data), tuple(_plain(c) for c in node.children))
    if isinstance(node, Token):
        return (node.type, str(node), node.start_pos)
    return node


def _outcome_lark(text: str):
    try:
        return "ok", _plain(LARK.parse(text, start="start"))
    except UnexpectedToken as err:
        if err.token.type == "$END":
            return "end", None
        return "token", (err.token.type, err.token.start_pos)
    except UnexpectedCharacters as err:
        return "char", err.pos_in_stream
    except UnexpectedInput:
        return "end", None


def _outcome_driver(text: str, driver: Driver = DRIVER):
    try:
        return "ok", _plain(driver.parse(text, "start"))
    except ParseError as err:
        if err.kind == "token":
            return "token", (err.token[0], err.token[2])
        if err.kind == "char":
            return "char", err.pos
        return "end", None


@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: p.name)
def test_reference_models_parse_as_with_lark(path):
    text = path.read_text(encoding="utf-8")
    for t in (text, text + "\n" + text):           # the second copy goes through the shapes

        assert _outcome_driver(t) == _outcome_lark(t)


def test_repetitive_model_goes_through_the_shapes_and_parses_as_with_lark():
    text = chain_model(60)
    driver = Driver(_tree_lark(), boundaries=("SEMI",))
    assert _outcome_driver(text, driver) == _outcome_lark(text)
    segments = text.count(";")
    assert driver.shapes.replayed > 0.9 * segments        # nearly all through the fast path


@pytest.mark.parametrize("text", ODD)
def test_odd_inputs_and_errors_as_with_lark(text):
    assert _outcome_driver(text) == _outcome_lark(text)
    assert _outcome_driver(text + text) == _outcome_lark(text + text)


_TOKEN = re.compile(r"\s+|[A-Za-z_'][A-Za-z0-9_.'\[\],]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|"
                    r'"[^"]*"|.', re.S)
_CORPUS = [p.read_text(encoding="utf-8") for p in REFERENCE] + [chain_model(8)]


@st.composite
def _mutated(draw):
    toks = _TOKEN.findall(draw(st.sampled_from(_CORPUS)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(toks) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "replace"]))
        if kind == "delete":
            del toks[i]
        elif kind == "duplicate":
            toks.insert(i, toks[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        else:
            toks[i] = draw(st.sampled_from(["(", ")", ";", "=", "end", "if", "then", "x", "1",
                                            "classx", "initial", "equation", "/*", "'", "#"]))
        if not toks:
            break
    return "".join(toks)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_mutated())
def test_mutated_inputs_as_with_lark(text):
    assert _outcome_driver(text) == _outcome_lark(text)


def test_first_chars_over_approximates():
    assert first_chars(r"\.?[+\-]") == (frozenset(map(ord, ".+-")), False)
    digits, other = first_chars(r"\d+")
    assert digits == frozenset(range(48, 58)) and other
    assert first_chars(r"[^a]")[0] >= frozenset(map(ord, "bcd ;"))
    assert ord("i") in first_chars(r"initial(?:\s)+equation")[0]
    assert first_chars(r"(?:x|)y") == (frozenset(map(ord, "xy")), False)
    assert first_chars(r"(a)\1")[0] >= {ord("a")}                # back-references: anything
