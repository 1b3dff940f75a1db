"""Code generation without a compiler run per test: linear splitting, block classification,
the C printer (slots only, frozen relations, escaping) and the emitted block code. One test
compiles the escaped string literals with gcc and checks the bytes round-trip."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from mdae_fmu.codegen.blocks import BlockPlan, classify, emit_block, linear_split
from mdae_fmu.codegen.cprinter import SlotPrinter, UnknownSymbol, c_comment, c_string
from mdae_fmu.codegen.plan import fmi_name, model_identifier
from mdae_fmu.codegen.slots import (
    IDENT_LIMIT, NAME_LIMIT, TIME, Slot, c_slot, name_slots, slot_identifiers)

x, y, u, w, p = sp.symbols("x y u w p", real=True)
SLOTS = {x: "d->r[0]", y: "d->r[1]", u: "d->r[2]", w: "d->r[3]", p: "d->r[4]"}
TYPED = {s: Slot(array="r", index=k, name=str(s)) for k, s in enumerate((x, y, u, w, p))}


def test_linear_split():
    a, b = linear_split(3 * u + x * u - sp.sin(x), u)
    assert sp.simplify(a - (3 + x)) == 0 and sp.simplify(b + sp.sin(x)) == 0
    assert linear_split(u ** 2 + x, u) is None
    assert linear_split(sp.sin(u) + x, u) is None
    assert linear_split(x * y, u) is None                       # u absent
    a, b = linear_split(u, u)
    assert a == 1 and b == 0


def test_classify():
    assert classify(BlockPlan(label="e1", unknowns=(u,), _residuals=(p * u - x,))) == "explicit"
    assert (
        classify(BlockPlan(label="e1", unknowns=(u,), _residuals=(x * (u + 1),))) == "explicit"
    )  # after expand
    assert classify(BlockPlan(label="e1", unknowns=(u,), _residuals=(u ** 3 + u - x,))) == "newton"
    assert (
        classify(BlockPlan(label="e1+e2", unknowns=(u, w), _residuals=(u + w - x, u - x * w - 2)))
        == "linear"
    )
    assert (
        classify(BlockPlan(label="e1+e2", unknowns=(u, w), _residuals=(u * w - x, u - w)))
        == "newton"
    )


def test_printer_maps_symbols_to_slots_only():
    pr = SlotPrinter(dict(SLOTS))
    code = pr.doprint(x ** 2 + sp.sin(y) / p - sp.Abs(u) + sp.sqrt(w))
    assert "x" not in code.replace("d->r", "")
    assert "d->r[0]*d->r[0]" in code and "sin(d->r[1])" in code and "fabs(d->r[2])" in code
    assert "sqrt(d->r[3])" in code
    with pytest.raises(UnknownSymbol):
        pr.doprint(x + sp.Symbol("stranger", real=True))


def test_printer_numeric_semantics():
    """The printed C, evaluated by Python with the same operator meanings, gives sympy's
    value (a cheap independent check of precedence/parenthesization)."""
    import math
    vals = {x: 0.7, y: -1.3, u: 2.5, w: 0.2, p: 3.0}
    exprs = [x ** 3 - y / (u * w), -x * y + p ** -2, sp.Rational(1, 3) * x - 2 * y ** 2,
             sp.Min(x, y) + sp.Max(u, w, p), sp.atan2(y, x) * sp.exp(-w),
             sp.sign(y) * sp.cos(p) ** 2, sp.sqrt(x) / sp.cbrt(u)]
    env = {"sin": math.sin, "cos": math.cos, "exp": math.exp, "fabs": abs,
           "sqrt": math.sqrt, "atan2": math.atan2, "fmin": min, "fmax": max, "pow": pow,
           "cbrt": lambda v: math.copysign(abs(v) ** (1 / 3), v)}
    slots = {s: f"v{k}" for k, s in enumerate(vals)}
    env.update({f"v{k}": v for k, v in enumerate(vals.values())})
    pr = SlotPrinter(slots)
    for e in exprs:
        code = pr.doprint(e)
        code = code.replace("? 1.0 : 0.0", "and 1.0 or 0.0")   # sign(): C ternary
        got = eval(code, env)  # noqa: S307  (test-only, our own printer output)
        assert got == pytest.approx(float(e.subs(vals)), rel=1e-14), code


def test_frozen_relations_and_event_functions():
    rel = x > 0
    pr = SlotPrinter(dict(SLOTS), {rel: "d->rel[0]"},
                     {"initial": lambda p_, a: "d->initial"})
    assert pr.doprint(sp.Piecewise((y, rel), (u, True))) == \
        "((d->rel[0]) ? (d->r[1]) : (d->r[2]))"
    assert pr.doprint(y < 1) == "(d->r[1] < 1.0)"       # untracked relation: evaluated
    assert pr.doprint(sp.Function("initial")()) == "d->initial"


def test_emit_blocks():
    """Blocks print their Real slots through the local pointer ``r``, named after the model's
    variables; a solver block lists its unknowns' positions, and its callbacks are named
    after its number and its unknowns."""
    pr = SlotPrinter(dict(TYPED), local=True)
    code = emit_block(BlockPlan(label="e1", unknowns=(u,), _residuals=(p * u - x,)), 0, pr)
    assert code.kind == "explicit" and code.body.strip() == \
        "r[2] /* u */ = -((-r[0] /* x */))/(r[4] /* p */);"
    assert code.slots == (TYPED[u], TYPED[x], TYPED[p]) and code.helpers == ""
    code = emit_block(
        BlockPlan(label="e1+e2", unknowns=(u, w), _residuals=(u + w - x, u - w - 2)), 3, pr
    )
    assert code.kind == "linear"
    assert "mdae_linear_block(inst, 2, u, blk3_u_w_system, 3)" in code.body
    assert "static const int u[2] = {2 /* u */, 3 /* w */};" in code.body
    assert "A[0] = 1.0;" in code.helpers and "static void blk3_u_w_system(" in code.helpers
    code = emit_block(BlockPlan(label="e1", unknowns=(u,), _residuals=(u ** 3 + u - x,)), 7, pr)
    assert code.kind == "newton" and "blk7_u_jacobian" in code.helpers
    assert "J[0] = ((3.0*(r[2] /* u */*r[2] /* u */)) + 1.0);" in code.helpers.replace(
        "(1.0 + (3.0*(r[2] /* u */*r[2] /* u */)))", "((3.0*(r[2] /* u */*r[2] /* u */)) + 1.0)")
    assert pr.holes is None                  # collection ends with the block


def test_slot_rendering_is_typed_and_names_are_inert():
    """One C form per slot (`c_slot`); a model name reaches C only in a comment, reduced to
    characters that cannot end the comment, splice a line or form a trigraph."""
    s = Slot(array="i", index=3, name="n")
    assert c_slot(s) == "d->i[3] /* n */" and c_slot(s.left()) == "d->pi[3] /* pre(n) */"
    assert c_slot(Slot(array="r", index=4, name="a.b"), local=True) == "r[4] /* a.b */"
    assert c_slot(Slot(array="r", index=4, pre=True, name="x"), local=True) == "d->pr[4] /* x */"
    assert c_slot(Slot(array="r", index=4, name="x"), position=True) == "4 /* x */"
    assert c_slot(TIME) == "d->time" and c_slot(Slot(array="b", index=1), named=False) == "d->b[1]"
    assert Slot(array="r", index=4, name="x") == Slot(
        array="r", index=4, name="y"
    )  # names never compare
    # ... but each model's printer shows its own names (the printer's memo keys the name)
    assert SlotPrinter({x: Slot(array="r", index=0, name="a")}).doprint(x) == "d->r[0] /* a */"
    assert SlotPrinter({x: Slot(array="r", index=0, name="b")}).doprint(x) == "d->r[0] /* b */"
    for bad in ["x*/ int y; /*", "a\\", "??/", "é\n", "/" * 50, "*" * 3 + "/"]:
        text = c_slot(Slot(array="r", index=0, name=bad))
        inner = text[len("d->r[0] /* "):-len(" */")]
        assert "*/" not in inner and "/*" not in inner and "/" not in inner
        assert "\\" not in inner and inner.isascii() and inner.isprintable()
        assert len(inner) <= NAME_LIMIT
    with pytest.raises(ValueError):
        Slot(array="q", index=0)


def test_generated_files_address_slots_by_name():
    """`name_slots` writes each named slot with the identifier `slot_identifiers` gives it,
    declared once per file as an enum of its index; names that mangle alike stay apart (the
    later slot gets its index), hidden slots and other arrays keep their positions."""
    ids = slot_identifiers({"r": ["a.b", "a_b", "", "der(a.b)", "x" * 80], "i": ["n"],
                            "b": ["a.b"]})
    assert ids.identifiers == {("r", 0): "R_a_b", ("r", 1): "R_a_b_1", ("r", 3): "R_der_a_b",
                   ("r", 4): "R_" + "x" * IDENT_LIMIT, ("i", 0): "I_n", ("b", 0): "B_a_b"}
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v) for v in ids.identifiers.values())
    text = (
        '#include <math.h>\n#include "mdae_model.h"\n\n'
        f"{c_slot(Slot(array='r', index=1, name='a_b'), local=True)} = "
        f"{c_slot(Slot(array='r', index=0, name='a.b'))} + "
        f"{c_slot(Slot(array='r', index=0, pre=True, name='pre(a.b)'))}"
        f" + {c_slot(Slot(array='i', index=0, pre=True, name='pre(n)'))} + "
        f"{c_slot(Slot(array='r', index=2, name='h'))}"
        f" + b[0] /* not a slot */;\n"
        "static const int u[3] = {0 /* a.b */, 1 /* other */, 3 /* der(a.b) */};\n"
    )
    out = name_slots(text, ids)
    assert out.endswith("r[R_a_b_1] = d->r[R_a_b] + d->pr[R_a_b] + d->pi[I_n] "
                        "+ d->r[2] /* h */ + b[0] /* not a slot */;\n"
                        "static const int u[3] = {R_a_b, 1 /* other */, R_der_a_b};\n")
    assert '#include "mdae_model.h"\n\n/* the model' in out
    assert "    R_a_b = 0,\n    R_a_b_1 = 1,\n" in out and "    I_n = 0,\n" in out
    assert name_slots("int x;\n", ids) == "int x;\n"     # nothing named: unchanged
    with pytest.raises(ValueError, match="mdae_model.h"):
        name_slots("r[0] /* a.b */;", ids)


def test_comment_and_identifier_sanitizing():
    assert "*/" not in c_comment("a*/b/*c\\")
    # a backslash after '*' (a quoted identifier 'x*\\') must not become a closing '*/'
    assert "*/" not in c_comment("x*\\ int injected = 1; //")
    assert c_comment("é\n") == "??"
    assert model_identifier("3 Body.Model \"x\"") == "m_3_Body_Model_x"
    assert model_identifier("Ünïcode").isidentifier()
    assert model_identifier("") == "model"
    assert fmi_name("a\nb\tc\x01") == "a\\nb\\tc\\x01"
    assert fmi_name("ü€") == "ü€"


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=0, max_size=30))
def test_c_string_is_plain_ascii(text):
    lit = c_string(text)
    assert lit.startswith('"') and lit.endswith('"')
    body = lit[1:-1]
    assert all(0x20 <= ord(c) < 0x7F for c in body)
    assert '"' not in body.replace('\\"', "") and "??" not in body


def test_c_string_round_trips_through_gcc(tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    samples = ['a"b', "back\\slash", "c*/d", "new\nline", "ünï€", "%s%n", "??="]
    src = ['#include <stdio.h>', 'int main(void) {']
    for s in samples:
        lit = c_string(s)
        src.append(f"    fwrite({lit}, 1, sizeof({lit}) - 1, stdout); putchar(0);")
    src.append("    return 0;\n}")
    (tmp_path / "t.c").write_text("\n".join(src))
    subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "t"),
                    str(tmp_path / "t.c")], check=True)
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, check=True).stdout
    assert out.split(b"\0")[:-1] == [s.encode() for s in samples]
