"""Property-based robustness of both importers (hypothesis): mutated reference models (tokens
deleted, duplicated, swapped; truncated; random bytes injected) either import or raise
`InputError`; never another exception (no traceback reaches a user)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import decode_source, parse_modelica
from mdae_fmu.importers.xml_eqlist import parse_xml
from mdae_fmu.importers.xml_writer import model_to_xml
from mdae_fmu.ir import Model

ROOT = Path(__file__).resolve().parent.parent
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
SOURCES = [p.read_bytes() for ext in ("*.mo", "*.bmo")
           for p in sorted((ROOT / "reference_models").glob(ext))][:12] or []
SOURCES.append(_FALLBACK.encode())
XML_SOURCES = []
for _src in SOURCES:
    try:
        XML_SOURCES.append(model_to_xml(parse_modelica(_src.decode("utf-8"), "ref.mo")))
    except InputError:
        pass

_TOKEN = re.compile(rb"\s+|[A-Za-z_'][A-Za-z0-9_.'\[\],]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|"
                    rb'"[^"]*"|.', re.S)


def _tokens(data: bytes) -> list[bytes]:
    return _TOKEN.findall(data)


@st.composite
def mutated(draw, sources):
    data = draw(st.sampled_from(sources))
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


def _import_modelica(data: bytes):
    return parse_modelica(decode_source(data, "fuzz.mo"), "fuzz.mo")


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated(SOURCES))
def test_mutated_modelica_imports_or_raises_input_error(data):
    try:
        m = _import_modelica(data)
    except InputError as err:
        assert str(err)                    # renders (file:line:col, caret) without failing
        return
    assert isinstance(m, Model)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated(XML_SOURCES))
def test_mutated_xml_imports_or_raises_input_error(data):
    try:
        m = parse_xml(data, "fuzz.xml")
    except InputError as err:
        assert str(err)
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


def test_fuzz_corpus_is_meaningful():
    assert len(SOURCES) >= 2 and len(XML_SOURCES) == len(SOURCES)
    for src in SOURCES:
        assert isinstance(_import_modelica(src), Model)
