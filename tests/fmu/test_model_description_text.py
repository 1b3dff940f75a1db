"""modelDescription.xml written as text (`mdae_fmu.fmu.model_description`) and the command's
fast end (`mdae_fmu.cli.console`).

Oracles: lxml. An attribute value escaped by `xml_attribute` is what lxml writes for it, byte
for byte, and a character XML 1.0 cannot hold is refused as lxml refuses it; a whole model
description (units and display units, an enumeration, Strings with XML metacharacters and
line breaks, inputs and outputs of every type, descriptions with quotes) is what lxml's
``tostring(pretty_print=True)`` writes for the document it parses to. The console script
ends the process without the interpreter's shutdown (an atexit hook does not run) after a
complete FMU and its message, and in-process calls of `main` return as before.
"""

from __future__ import annotations

import random
import subprocess
import sys
import zipfile

import pytest
from lxml import etree

from mdae_fmu.analysis import analyze
from mdae_fmu.cli import main
from mdae_fmu.codegen.events import plan_events
from mdae_fmu.codegen.initialization import plan_initialization
from mdae_fmu.codegen.plan import compile_model, fmi_name
from mdae_fmu.fmu.dependencies import model_structure
from mdae_fmu.fmu.export import GUID_PLACEHOLDER, content_guid
from mdae_fmu.fmu.model_description import (build_model_description, model_description_pieces,
                                            xml_attribute)
from mdae_fmu.fmu.package import write_zip
from mdae_fmu.importers.flat_modelica import parse_modelica

ODD = r'''model Odd "a <model> & \"odd\" description"
  type Mode = enumeration(off "switched \"off\"", on, auto "a & b < c > d");
  parameter Mode mode = Mode.on;
  parameter Real T0(unit = "K", displayUnit = "degC") = 300 "start & <temp>";
  parameter String label = "a \"quoted\" label\\ with\nnewline,	tab & <xml> é ]]>";
  constant String unit_name = "kg";
  input Real u(unit = "m/s") "in 'put'";
  input Boolean b;
  input Integer n;
  output Real y(unit = "m") "out";
  output Integer count;
  Real x(start = 1, fixed = true, unit = "m");
  Real T(start = 290, fixed = true, unit = "K", displayUnit = "degC");
equation
  der(x) = u - x + (if b then 1 else 0) + n;
  der(T) = (T0 - T) / 10;
  y = 2 * x;
  count = n + 1;
end Odd;
'''

CHAIN = "\n".join(
    ["model Chain", "  Real x[4](each start = 1, each fixed = true);", "  output Real s;",
     "equation", "  der(x[1]) = -x[1];"]
    + [f"  der(x[{i}]) = x[{i - 1}] - x[{i}];" for i in range(2, 5)]
    + ["  s = x[1] + x[4];", "end Chain;", ""])

# names that need escaping (quoted identifiers), and a model without unknowns
QUOTED = """model Q
  parameter Real 'p<&>' = 2 "gain";
  Real 'x"y'(start = 1, fixed = true);
  output Real 'o&'(unit = "m");
equation
  der('x"y') = -'p<&>' * 'x"y';
  'o&' = 3 * 'x"y';
end Q;
"""
NO_UNKNOWN = "model E\n  parameter Real p = 2;\nend E;\n"


def _lxml_attribute(value: str) -> str:
    el = etree.Element("a")
    el.set("x", value)
    return etree.tostring(el, encoding="UTF-8").decode("utf-8")


def test_attribute_values_are_escaped_as_lxml_escapes_them():
    alphabet = list("ab09 .[]()'&<>\"\t\n\r=;/\\") + ["é", "€", "\U0001F600", "\x7f", "\x85",
                                                       "\u2028", "]]>", "&amp;"]
    rng = random.Random(40)
    values = ["", "plain.name[3]", "&<>\"", "\t\n\r"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(400)]
    for value in values:
        assert f'<a x="{xml_attribute(value)}"/>' == _lxml_attribute(value), repr(value)


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x0b", "\x1f", "\ufffe", "\uffff"])
def test_a_character_xml_cannot_hold_is_refused_as_lxml_refuses_it(char):
    with pytest.raises(ValueError) as lxml_error:
        _lxml_attribute(f"a{char}b")
    with pytest.raises(ValueError) as ours:
        xml_attribute(f"a{char}b")
    assert str(ours.value) == str(lxml_error.value)


def _model_description(text: str, fmi_type: str) -> bytes:
    """The model description `mdae_fmu.fmu.export` writes for a single-mode model, without
    gcc."""
    model = parse_modelica(text, "m.mo")
    result = analyze(model)
    cm = compile_model(model, result.modes)
    ev = plan_events(model, cm, report=result.modes, steady=cm.state_symbols)
    init = plan_initialization(model, cm)
    import dataclasses
    return build_model_description(
        cm, sum(1 for r in ev.relations if r.kind == "state"), "{guid}", ["a.c", "b.c"],
        {"stopTime": 2.0}, fmi_type=fmi_type,
        structure=model_structure(cm, [cm.blocks], init=init),
        enumerations=model.enumerations,
        declared_types={fmi_name(v.name): v.declared_type for v in model.variables
                        if v.declared_type},
        display_units={fmi_name(v.name): v.display_unit for v in model.variables
                       if v.display_unit},
        strings=tuple(dataclasses.replace(p, name=fmi_name(p.name)) for p in model.strings))


@pytest.mark.parametrize("text,fmi_type", [(ODD, "both"), (ODD, "me"), (CHAIN, "cs"),
                                           (QUOTED, "me"), (NO_UNKNOWN, "me")])
def test_the_model_description_is_what_lxml_writes(text, fmi_type):
    md = _model_description(text, fmi_type)
    parsed = etree.fromstring(md, etree.XMLParser(remove_blank_text=True))
    assert md == etree.tostring(parsed, xml_declaration=True, encoding="UTF-8",
                                pretty_print=True)
    if text is ODD:         # every kind of element was written
        for tag in ("UnitDefinitions", "BaseUnit", "DisplayUnit", "TypeDefinitions", "Item",
                    "Enumeration", "String", "Outputs", "Derivatives", "InitialUnknowns"):
            assert parsed.find(f".//{tag}") is not None, tag
        label = parsed.find(".//ScalarVariable[@name='label']/String").get("start")
        assert label == 'a "quoted" label\\ with\nnewline,\ttab & <xml> é ]]>'
        assert parsed.find(".//ScalarVariable[@name='T0']").get("description") == \
            "start & <temp>"
    elif text is QUOTED:    # names escaped one by one, the dependencies by index
        names = [v.get("name") for v in parsed.iter("ScalarVariable")]
        assert {"p<&>", 'x"y', "o&"} <= set(names)
        out = parsed.find("ModelStructure/Outputs/Unknown")
        assert out.get("dependencies") == str(names.index('x"y') + 1)
    elif text is NO_UNKNOWN:
        assert md.endswith(b"  <ModelStructure/>\n</fmiModelDescription>\n")
    else:                   # the dependencies: s = x[1] + x[4] reads the states 1 and 4
        index = {v.get("name"): k for k, v in enumerate(parsed.iter("ScalarVariable"), 1)}
        out = parsed.find("ModelStructure/Outputs/Unknown")
        assert out.get("index") == str(index["s"])
        assert out.get("dependencies") == f"{index['x[1]']} {index['x[4]']}"


def test_the_variables_written_by_chunks_give_the_same_text(monkeypatch):
    """`_scalar_variables` writes ``CHUNK`` variables to a string: one variable a chunk
    gives the same document."""
    import mdae_fmu.fmu.model_description as md_module
    whole = [_model_description(t, "both") for t in (ODD, QUOTED)]
    monkeypatch.setattr(md_module, "CHUNK", 1)
    assert [_model_description(t, "both") for t in (ODD, QUOTED)] == whole


def test_the_pieces_hash_and_zip_as_the_joined_document(monkeypatch, tmp_path):
    """The export keeps the model description as its pieces (`model_description_pieces`,
    one variable a chunk here: many pieces): the GUID placeholder is in the first piece only,
    `content_guid` of the pieces is the SHA-256 of the joined document (hashed by hashlib
    here), and `write_zip` writes the pieces (and a text) into the same archive as the joined
    (and encoded) bytes; so
    does a 4 MB text cut at random places (zlib's stream does not depend on the cuts)."""
    import hashlib
    import mdae_fmu.fmu.model_description as md_module
    monkeypatch.setattr(md_module, "CHUNK", 1)
    model = parse_modelica(ODD, "m.mo")
    result = analyze(model)
    cm = compile_model(model, result.modes)
    ev = plan_events(model, cm, report=result.modes, steady=cm.state_symbols)
    pieces = model_description_pieces(cm, sum(1 for r in ev.relations if r.kind == "state"),
                                      GUID_PLACEHOLDER, ["a.c"], {"stopTime": 2.0},
                                      enumerations=model.enumerations)
    whole = b"".join(pieces)
    assert len(pieces) > 10
    assert whole == build_model_description(
        cm, sum(1 for r in ev.relations if r.kind == "state"), GUID_PLACEHOLDER, ["a.c"],
        {"stopTime": 2.0}, enumerations=model.enumerations)
    mark = GUID_PLACEHOLDER.encode()
    assert whole.count(mark) == 1 and mark in pieces[0]
    h = hashlib.sha256()
    for part in (whole, b"config.h\0#define X"):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    x = h.hexdigest()
    assert content_guid(iter([pieces, [b"config.h\0", b"#define X"]])) \
        == "{" + f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}" + "}"
    rng = random.Random(7)
    text = " ".join(rng.choice(["<a>", "x[1]", "dependencies", "17", "é"])
                    for _ in range(800_000)).encode("utf-8")
    cuts = sorted(rng.sample(range(1, len(text)), 40)) + [len(text)]
    cut = [text[a:b] for a, b in zip([0] + cuts, cuts)]
    for doc, parts in ((whole, pieces), (text, cut), (b"", [b""])):
        assert b"".join(parts) == doc
        write_zip(tmp_path / "joined.zip", {"modelDescription.xml": doc, "b.so": b"\x7fELF",
                                            "s.c": "/* é */".encode("utf-8")})
        write_zip(tmp_path / "pieces.zip", {"modelDescription.xml": parts, "b.so": b"\x7fELF",
                                            "s.c": "/* é */"})      # (text: encoded there)
        assert (tmp_path / "pieces.zip").read_bytes() == (tmp_path / "joined.zip").read_bytes()
        with zipfile.ZipFile(tmp_path / "pieces.zip") as z:
            assert z.read("modelDescription.xml") == doc


HOOK = ("import atexit, sys; atexit.register(lambda: print('atexit hook ran', file=sys.stderr));"
        " from mdae_fmu.cli import console; sys.argv[0] = 'mdae-fmu'; console()")


def test_the_console_script_ends_at_once_after_a_complete_export(tmp_path):
    src = tmp_path / "Chain.mo"
    src.write_text(CHAIN, encoding="utf-8")
    out = tmp_path / "Chain.fmu"
    r = subprocess.run([sys.executable, "-c", HOOK, "export", str(src), "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {out}\n"
    assert "atexit hook ran" not in r.stderr        # no interpreter shutdown
    with zipfile.ZipFile(out) as z:
        assert z.testzip() is None
        assert "modelDescription.xml" in z.namelist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Chain.fmu", "Chain.mo"]
    # an analysis prints its whole report through a pipe before the process ends
    r = subprocess.run([sys.executable, "-c", HOOK, "analyze", "-v", str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "atexit hook ran" not in r.stderr
    assert r.stdout == _in_process(["analyze", "-v", str(src)])
    # a failing command ends as before, through the interpreter's exit
    r = subprocess.run([sys.executable, "-c", HOOK, "export", str(tmp_path / "none.mo")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "atexit hook ran" in r.stderr


def _in_process(argv: list[str]) -> str:
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0          # returns: the process goes on
    return buf.getvalue()
