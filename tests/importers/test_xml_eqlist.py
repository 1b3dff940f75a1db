"""XML equation list: reading, equality with the Modelica form, safety (no DTD, no entities),
schema violations and expression errors located at file:line(:col within the attribute)."""

from __future__ import annotations

import pytest
from lxml import etree

from mdae_fmu import expr as E
from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.importers.xml_eqlist import NAMESPACE, load_xml, parse_xml
from mdae_fmu.importers.xml_writer import main as writer_main
from mdae_fmu.importers.xml_writer import model_to_xml
from mdae_fmu.ir import GuardLiteral

HEAD = f'<?xml version="1.0" encoding="UTF-8"?>\n<model xmlns="{NAMESPACE}" name="Clutch">\n'

CLUTCH_XML = HEAD + '''  <variable name="Ja" variability="parameter" binding="1"/>
  <variable name="wa" start="1" fixed="true"/>
  <variable name="wb" start="1.5" fixed="true"/>
  <variable name="ta"/>
  <variable name="tb"/>
  <variable name="engaged" type="Boolean"/>
  <variable name="n" type="Integer" start="0"/>
  <equation id="e1" lhs="engaged" rhs="time &gt;= 5 and time &lt;= 7"/>
  <equation lhs="Ja*der(wa)" rhs="-0.01*wa + ta"/>
  <equation lhs="2*der(wb)" rhs="-0.0125*wb + tb"/>
  <equation lhs="ta + tb" rhs="0"/>
  <if>
    <branch condition="engaged"><equation lhs="wa - wb" rhs="0"/></branch>
    <else><equation id="e6" lhs="ta" rhs="0"/></else>
  </if>
  <when id="w1">
    <branch condition="engaged"><assign var="n" value="pre(n) + 1"/></branch>
    <branch condition="time &gt; 100"><terminate message="late"/></branch>
  </when>
  <assert condition="wa &lt; 100" message="runaway" level="warning"/>
  <initial><equation lhs="ta" rhs="0"/></initial>
</model>
'''

CLUTCH_MO = '''class Clutch
  parameter Real Ja = 1;
  Real wa(start = 1, fixed = true);
  Real wb(start = 1.5, fixed = true);
  Real ta;
  Real tb;
  Boolean engaged;
  Integer n(start = 0);
equation
  engaged = time >= 5 and time <= 7;
  Ja*der(wa) = -0.01*wa + ta;
  2*der(wb) = -0.0125*wb + tb;
  ta + tb = 0;
  if engaged then wa - wb = 0; else ta = 0; end if;
  when engaged then n = pre(n) + 1; elsewhen time > 100 then terminate("late"); end when;
  assert(wa < 100, "runaway", AssertionLevel.warning);
initial equation
  ta = 0;
end Clutch;
'''


def xerr(text: str | bytes) -> InputError:
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(InputError) as info:
        parse_xml(data, "m.xml")
    return info.value


def test_xml_form_equals_modelica_form():
    mx = parse_xml(CLUTCH_XML.encode(), "Clutch.xml")
    mm = parse_modelica(CLUTCH_MO, "Clutch.mo")
    assert mx == mm
    assert [q.id for q in mx.equations] == [f"e{i}" for i in range(1, 7)]
    assert mx.equations[5].guard == (GuardLiteral(cond=E.Ref("engaged"), positive=False),)
    assert mx.var("Ja").causality == "parameter"
    assert mx.equations[1].loc.file == "Clutch.xml" and mx.equations[1].loc.line == 11


def test_writer_is_deterministic_schema_valid_and_round_trips():
    m = parse_modelica(CLUTCH_MO, "Clutch.mo")
    x1, x2 = model_to_xml(m), model_to_xml(m)
    assert x1 == x2
    from mdae_fmu.importers.xml_eqlist import _get_schema
    assert _get_schema().validate(etree.fromstring(x1).getroottree())
    assert parse_xml(x1, "w.xml") == m
    assert b'<else>' in x1


def test_writer_cli(tmp_path):
    src = tmp_path / "Clutch.mo"
    src.write_text(CLUTCH_MO)
    out = tmp_path / "Clutch.xml"
    assert writer_main([str(src), str(out)]) == 0
    assert load_xml(out) == parse_modelica(CLUTCH_MO)
    bad = tmp_path / "bad.mo"
    bad.write_text("class X equation y = 1; end X;")
    assert writer_main([str(bad), str(tmp_path / "bad.xml")]) == 2


BILLION_LAUGHS = '''<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<model xmlns="urn:mdae-fmu:eqlist:1" name="&lol4;"/>
'''

EXTERNAL = '''<?xml version="1.0"?>
<!DOCTYPE model [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<model xmlns="urn:mdae-fmu:eqlist:1" name="M"><variable name="&xxe;"/></model>
'''


@pytest.mark.parametrize("doc", [BILLION_LAUGHS, EXTERNAL,
                                 '<?xml version="1.0"?>\n<!DOCTYPE model SYSTEM '
                                 '"http://example.invalid/x.dtd">\n<model/>'])
def test_doctype_and_entities_are_refused(doc):
    e = xerr(doc)
    assert "DOCTYPE declarations are not allowed" in str(e)
    assert e.loc.line == 2


def test_doctype_in_utf16_is_refused():
    e = xerr(EXTERNAL.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
             .encode("utf-16"))
    assert "DOCTYPE" in str(e)


@pytest.mark.parametrize("body, line, message", [
    ('  <variable name="x"/>\n  <equaton lhs="x" rhs="1"/>\n', 4, "equaton"),
    ('  <variable name="x"/>\n  <equation lhs="x"/>\n', 4, "'rhs' is required"),
    ('  <variable name="x" type="String"/>\n', 3, "type"),
    ('  <equation lhs="x" rhs="1"/>\n  <variable name="x"/>\n', 4, "variable"),
    ('  <variable name="x" fixed="yes"/>\n', 3, "fixed"),
])
def test_schema_violations_are_located(body, line, message):
    e = xerr(HEAD + body + "</model>\n")
    assert "schema violation" in str(e) and message in str(e)
    assert (e.loc.file, e.loc.line) == ("m.xml", line)


def test_not_well_formed():
    e = xerr(HEAD + '  <variable name="x">\n</model>\n')
    assert "invalid XML" in str(e) and e.loc.line == 4
    # shown like a Modelica syntax error: the line, and a caret under the column
    e = xerr(HEAD + '  <variable name="x" start>\n</model>\n')
    head, shown, caret = str(e).split("\n")
    assert head.endswith("invalid XML: Specification mandates value for attribute start")
    assert shown == '    <variable name="x" start>' and shown[len(caret) - 1] == ">"
    utf16 = xerr(("<m>\n<a></b>\n</m>").encode("utf-16"))
    assert str(utf16).split("\n")[1] == "  <a></b>"


def test_wrong_root_and_empty():
    assert "root element must be" in str(xerr('<model name="M"/>'))
    assert "empty file" in str(xerr("   "))


def test_expression_syntax_error_is_located_in_its_attribute():
    e = xerr(HEAD + '  <variable name="x"/>\n  <equation lhs="der(x)" rhs="-2 * * x"/>\n'
                    "</model>\n")
    assert (e.loc.line, e.loc.col) == (4, 6)
    assert "in attribute 'rhs' of <equation>" in e.message
    assert str(e).endswith("-2 * * x\n       ^")


def test_undefined_name_is_located_in_its_attribute():
    e = xerr(HEAD + '  <variable name="x"/>\n  <equation lhs="der(x)" rhs="-k*x"/>\n</model>\n')
    assert (e.loc.line, e.loc.col) == (4, 2)
    assert e.message == "undefined name 'k' (in attribute 'rhs' of <equation>)"


def test_semantic_errors_of_the_shared_builder():
    assert "duplicate declaration of 'x'" in str(xerr(
        HEAD + '  <variable name="x"/>\n  <variable name="x"/>\n</model>\n'))
    assert "reinit of undeclared variable 'y'" in str(xerr(
        HEAD + '  <variable name="x"/>\n  <equation lhs="der(x)" rhs="1"/>\n'
               '  <when><branch condition="x &gt; 1"><reinit var="y" value="0"/></branch></when>\n'
               '</model>\n'))
    assert "assignment to undeclared variable 'z'" in str(xerr(
        HEAD + '  <variable name="x"/>\n'
               '  <when><branch condition="x &gt; 1"><assign var="z" value="0"/></branch></when>\n'
               '</model>\n'))
    assert "unknown function 'foo'" in str(xerr(
        HEAD + '  <variable name="x"/>\n  <equation lhs="x" rhs="foo(1)"/>\n</model>\n'))


def test_equation_id_may_not_repeat_a_positional_one():
    """The binding of x is equation e1 (bindings count first); an equation that calls itself
    e1 too is an error at its own element (ids are labels, docs/importers.md)."""
    e = xerr(HEAD + '  <variable name="x" binding="1"/>\n  <variable name="y"/>\n'
                    '  <equation id="e1" lhs="y" rhs="x"/>\n</model>\n')
    assert "id 'e1' names two elements" in str(e)
    assert e.loc.line == 5


def test_assert_message_forms():
    m = parse_xml((HEAD + '  <variable name="x"/>\n  <equation lhs="x" rhs="1"/>\n'
                   '  <assert condition="x &gt; 0" messageExpr="&quot;a&quot; + &quot;b&quot;"/>\n'
                   '</model>\n').encode())
    assert m.assertions[0].message == E.Str("ab")
    assert "exactly one of" in str(xerr(
        HEAD + '  <variable name="x"/>\n  <assert condition="x &gt; 0"/>\n</model>\n'))


def test_names_with_special_characters():
    m = parse_xml((HEAD + '''  <variable name="a b.c[1]"/>
  <variable name="it's"/>
  <equation lhs="'a b.c[1]'" rhs="'it\\'s'"/>
  <equation lhs="'it\\'s'" rhs="2"/>
</model>
''').encode())
    assert [v.name for v in m.variables] == ["a b.c[1]", "it's"]
    assert parse_xml(model_to_xml(m)) == m
