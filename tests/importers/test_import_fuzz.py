"""Property-based robustness of both importers (hypothesis): mutated reference models (tokens
deleted, duplicated, swapped; truncated; random bytes injected; numbers, parameter bindings and
start values replaced by values no double or FMI Integer holds) either import or raise
`InputError`; never another exception (no traceback reaches a user), and an imported model
holds finite values only. Every reference model is fuzzed, in its flat Modelica form and in
its shipped XML form (a few examples each). The same mutations through analyze and export:
tests/workflows/test_export_fuzz.py and benchmarks/fuzz_export.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import _FRIENDLY, _parser, decode_source, parse_modelica
from mdae_fmu.importers.xml_eqlist import parse_xml
from mdae_fmu.ir import Model

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference_models"
_FALLBACK = '''class Fallback
  parameter Real k = 2 "gain";
  Real x(start = 1, fixed = true);
  Boolean on;
  Integer n(start = 0);
equation
  der(x) = if on then -k * x else 0;
  on = x > 0.5;
  when on then n = pre(n) + 1; reinit(x, 0.9 * pre(x)); end when;
  assert(x < 10, "big");
initial equation
  pre(on) = false;
end Fallback;
'''
MODELICA_FILES = sorted(p for ext in ("*.mo", "*.bmo") for p in REFERENCE.glob(ext))
XML_FILES = sorted(REFERENCE.glob("*.xml"))
SOURCES = {p.name: p.read_bytes() for p in MODELICA_FILES}
SOURCES["Fallback.mo"] = _FALLBACK.encode()
XML_SOURCES = {p.name: p.read_bytes() for p in XML_FILES}
#: examples per source file; about 200 per importer in all
EXAMPLES = max(4, 200 // len(SOURCES))

_TOKEN = re.compile(rb"\s+|[A-Za-z_'][A-Za-z0-9_.'\[\],]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|"
                    rb'"[^"]*"|.', re.S)


def _tokens(data: bytes) -> list[bytes]:
    return _TOKEN.findall(data)


@st.composite
def mutated(draw, data: bytes):
    toks = _tokens(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "bytes",
                                     "replace"]))
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        if kind == "delete":
            del toks[i]
        elif kind == "duplicate":
            toks.insert(i, toks[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == "truncate":
            del toks[i:]
        elif kind == "bytes":
            toks.insert(i, draw(st.binary(min_size=1, max_size=8)))
        else:
            toks[i] = draw(st.sampled_from([b"(", b")", b";", b"=", b"end", b"if", b"when",
                                            b"then", b"else", b"der", b"'", b'"', b"/*",
                                            b"<", b"&", b"<!DOCTYPE x>", b"x[i]", b"1e999",
                                            b"pre(", b"initial", b"equation", b"\xff"]))
    return b"".join(toks)


_NUMBER = re.compile(rb"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")
_BINDING = re.compile(rb"(parameter (?:Real|Integer|Boolean) [\w.']+(?:\([^)]*\))? = )([^;\"]+)")
_START = re.compile(rb"(start = )([^,)]+)")
#: literals no double or FMI Integer holds, and expressions without a finite value
BAD_LITERALS = [b"1e400", b"1e-400", b"2147483648", b"99999999999", b"9" * 5000, b"1e308",
                b"0", b"0.0", b"4.9e-324"]
BAD_EXPRESSIONS = [b"1/0", b"0.0/0.0", b"sqrt(-1)", b"log(0)", b"10^100000", b"2^1000000",
                   b"exp(1000)", b"asin(2)", b"(-8)^(1/3)", b"mod(1, 0)", b"1e300*1e300",
                   b"2147483647 + 1", b"integer(1e300)", b"x/0", b"sqrt(2)", b"2^31"]


@st.composite
def value_mutated(draw, data: bytes):
    """One to three numbers, parameter bindings or start values replaced by values that a
    double or an FMI Integer cannot hold (or harmless ones)."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["literal", "binding", "start"]))
        pattern = {"literal": _NUMBER, "binding": _BINDING, "start": _START}[kind]
        spots = list(pattern.finditer(data))
        if not spots:
            continue
        m = spots[draw(st.integers(0, len(spots) - 1))]
        if kind == "literal":
            data = data[:m.start()] + draw(st.sampled_from(BAD_LITERALS)) + data[m.end():]
        else:
            data = data[:m.start(2)] + draw(st.sampled_from(BAD_EXPRESSIONS)) + data[m.end(2):]
    return data


def _finite_values(m: Model):
    """Every literal of an imported model is a finite double, every Integer parameter and
    start value fits 32 bits, and no parameter evaluates to a non-finite value."""
    from mdae_fmu import expr as E
    from mdae_fmu.importers import values
    exprs = [eq.residual for eq in m.equations + m.initial_equations]
    exprs += [getattr(v, a) for v in m.variables
              for a in ("start", "binding", "nominal", "min", "max") if getattr(v, a) is not None]
    for e in exprs:
        for node in E.walk(e):
            if type(node) is E.Const and type(node.value) is not bool:
                assert abs(node.value) <= 1.7976931348623157e308
    assert values.check_model(m.variables) == []


def _import_modelica(data: bytes):
    return parse_modelica(decode_source(data, "fuzz.mo"), "fuzz.mo")


def _rule_names() -> set[str]:
    lark = _parser().lark
    return {str(r.origin.name) for r in lark.rules} | {r.alias for r in lark.rules if r.alias}


RULES = _rule_names()
# the list ends at the first ')' outside quotes (an XML message goes on with "(in attribute ...)")
_EXPECTED = re.compile(r"\(expected (?:one of )?((?:'[^']*'|[^)'\n])*)\)")


def _check_message(err: InputError):
    """The message renders, and lists tokens, never grammar rule names."""
    text = str(err)
    assert text
    m = _EXPECTED.search(text.split("\n")[0])
    if m:
        listed = m.group(1)
        for friendly in _FRIENDLY.values():          # "a name", "a string"...
            listed = listed.replace(friendly, "")
        listed = re.sub(r"'[^']*'", "", listed)      # quoted tokens
        words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", listed))
        assert not words & RULES, text


@pytest.mark.parametrize("name", sorted(SOURCES))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_modelica_imports_or_raises_input_error(name, data):
    mutant = data.draw(mutated(SOURCES[name]))
    try:
        m = _import_modelica(mutant)
    except InputError as err:
        _check_message(err)                # renders (file:line:col, caret) without failing
        return
    assert isinstance(m, Model)


@pytest.mark.parametrize("name", sorted(SOURCES))
@settings(max_examples=max(3, EXAMPLES // 2), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_value_mutated_modelica_imports_finite_or_raises_input_error(name, data):
    """Extreme literals, bindings and start values: a located `InputError`, or a model whose
    values all fit (never a traceback, never inf or a wrapped Integer later)."""
    mutant = data.draw(value_mutated(SOURCES[name]))
    try:
        m = _import_modelica(mutant)
    except InputError as err:
        _check_message(err)
        assert err.loc is not None and err.loc.line >= 1, str(err)
        return
    _finite_values(m)


@pytest.mark.parametrize("name", sorted(XML_SOURCES))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_xml_imports_or_raises_input_error(name, data):
    mutant = data.draw(mutated(XML_SOURCES[name]))
    try:
        m = parse_xml(mutant, "fuzz.xml")
    except InputError as err:
        _check_message(err)
        return
    assert isinstance(m, Model)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data):
    for f in (_import_modelica, lambda d: parse_xml(d, "fuzz.xml")):
        try:
            f(data)
        except InputError:
            pass


def test_messages_name_tokens_not_grammar_rules():
    for text in ("class M Real ;", "class M Real x(start = ) ; end M;", "class M equation x = ;",
                 "class M Real x; equation x = {1, ; end M;", "model", "// only a comment\n"):
        try:
            parse_modelica(text, "m.mo")
        except InputError as err:
            _check_message(err)
            assert "class_kind" not in str(err) and "start)" not in str(err)
        else:
            raise AssertionError(text)
    assert "component_decl" in RULES and "class_kind" in RULES     # the check can fail


def test_fuzz_corpus_is_meaningful():
    # every reference model, in both forms, and every one imports before it is mutated
    assert len(MODELICA_FILES) >= 19
    assert {p.stem for p in XML_FILES} == {p.stem for p in MODELICA_FILES}
    for src in SOURCES.values():
        assert isinstance(_import_modelica(src), Model)
    for src in XML_SOURCES.values():
        assert isinstance(parse_xml(src, "ref.xml"), Model)
