"""Unit strings and the unit check of equations (issue 28 Deliver 5; mdae_fmu.units,
mdae_fmu.unit_check): every unit string of the Modelica Standard Library's SI types reads to its
SI base units (the expected decompositions below are written by hand, not by the parser); each of
the seeded unit errors gets one W-UNIT warning at its line with both units; correct models get
none; --strict-units rejects."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.cli import main
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.unit_check import check_units
from mdae_fmu.units import BASE, base_unit

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference_models"

# Every distinct `unit` of Modelica.SIunits (MSL 3.2.3, Modelica/SIunits.mo) and of its successor
# Modelica.Units (MSL 4, Modelica/Units.mo): string -> "exponents [factor] [offset]" over kg m s A
# K mol cd rad (rad counted as FMI 2.0 counts it: sr = rad2, lm = cd.sr).
MSL_UNITS = {
    "1": "", "1/(A.s)": "A-1 s-1", "1/K": "K-1", "1/K2": "K-2", "1/Pa": "kg-1 m s2",
    "1/S": "kg m2 s-3 A-2", "1/V": "kg-1 m-2 s3 A", "1/cm2": "m-2 *1e4", "1/s": "s-1",
    "A": "A", "A.h": "s A *3600", "A.m2": "A m2", "A.m2/(J.s)": "kg-1 s A",
    "A/(m2.K2)": "A m-2 K-2", "A/V2": "kg-2 m-4 s6 A3", "A/m": "A m-1", "A/m2": "A m-2",
    "A/s": "A s-1", "Bq": "s-1", "Bq/kg": "kg-1 s-1", "C": "s A", "C.m": "m s A",
    "C.m2/V": "kg-1 s4 A2", "C/(kg.s)": "kg-1 A", "C/kg": "kg-1 s A", "C/m2": "m-2 s A",
    "C/m3": "m-3 s A", "C/mol": "s A mol-1", "F": "kg-1 m-2 s4 A2", "F/m": "kg-1 m-3 s4 A2",
    "F/m2": "kg-1 m-4 s4 A2", "Gy": "m2 s-2", "Gy/s": "m2 s-3", "H": "kg m2 s-2 A-2",
    "H-1": "kg-1 m-2 s2 A2", "H/m": "kg m s-2 A-2", "Hz": "s-1", "J": "kg m2 s-2",
    "J-1/m-3": "kg-1 m s2", "J.m.s2/kg": "m3", "J.m.s2/kg2": "kg-1 m3", "J.m2": "kg m4 s-2",
    "J.m2/kg": "m4 s-2", "J.m3/kg": "m5 s-2", "J/(K.s)": "kg m2 s-3 K-1",
    "J/(kg.K)": "m2 s-2 K-1", "J/(mol.K)": "kg m2 s-2 K-1 mol-1", "J/K": "kg m2 s-2 K-1",
    "J/kg": "m2 s-2", "J/m": "kg m s-2", "J/m2": "kg s-2", "J/m3": "kg m-1 s-2",
    "J/m4": "kg m-2 s-2", "J/mol": "kg m2 s-2 mol-1", "K": "K", "K/W": "kg-1 m-2 s3 K",
    "K/s": "K s-1", "N": "kg m s-2", "N.m": "kg m2 s-2", "N.m.s": "kg m2 s-1",
    "N.m.s/rad": "kg m2 s-1 rad-1", "N.m/A": "kg m2 s-2 A-1", "N.m/rad": "kg m2 s-2 rad-1",
    "N.s": "kg m s-1", "N.s/m": "kg s-1", "N/A": "kg m s-2 A-1", "N/m": "kg s-2",
    "Ohm": "kg m2 s-3 A-2", "Ohm.m": "kg m3 s-3 A-2", "Ohm/K": "kg m2 s-3 A-2 K-1",
    "Ohm/K2": "kg m2 s-3 A-2 K-2", "Ohm/m": "kg m s-3 A-2", "Pa": "kg m-1 s-2",
    "Pa.m3/kg": "m2 s-2", "Pa.s": "kg m-1 s-1", "Pa.s/m": "kg m-2 s-1",
    "Pa.s/m3": "kg m-4 s-1", "Pa/K": "kg m-1 s-2 K-1", "Pa/s": "kg m-1 s-3",
    "S": "kg-1 m-2 s3 A2", "S.m2/mol": "kg-1 s3 A2 mol-1", "S/m": "kg-1 m-3 s3 A2",
    "Sv": "m2 s-2", "T": "kg s-2 A-1", "V": "kg m2 s-3 A-1", "V.A": "kg m2 s-3",
    "V.s": "kg m2 s-2 A-1", "V.s/(A.m)": "kg m s-2 A-2", "V/K": "kg m2 s-3 A-1 K-1",
    "V/m": "kg m s-3 A-1", "V/s": "kg m2 s-4 A-1", "V2/K2": "kg2 m4 s-6 A-2 K-2",
    "W": "kg m2 s-3", "W.h": "kg m2 s-2 *3600", "W/(m.K)": "kg m s-3 K-1",
    "W/(m2.K)": "kg s-3 K-1", "W/(sr.m2)": "kg s-3 rad-2", "W/K": "kg m2 s-3 K-1",
    "W/m2": "kg s-3", "W/sr": "kg m2 s-3 rad-2", "Wb": "kg m2 s-2 A-1",
    "Wb.m": "kg m3 s-2 A-1", "Wb/m": "kg m s-2 A-1", "bar": "kg m-1 s-2 *1e5", "cd": "cd",
    "cd/m2": "cd m-2", "cm2": "m2 *1e-4", "cm2/(V.s)": "kg-1 s2 A *1e-4", "d": "s *86400",
    "dB": "*0.1", "deg": "rad *0.017453292519943295", "degC": "K +273.15",
    "degF": "K *0.5555555555555556 +255.37222222222223", "degRk": "K *0.5555555555555556",
    "eV": "kg m2 s-2 *1.602176634e-19", "g/s": "kg s-1 *1e-3", "h": "s *3600",
    "kW.h": "kg m2 s-2 *3.6e6", "kg": "kg", "kg.m/s": "kg m s-1", "kg.m2": "kg m2",
    "kg.m2/s": "kg m2 s-1", "kg.s2/m5": "kg m-5 s2", "kg/(m3.K)": "kg m-3 K-1",
    "kg/m": "kg m-1", "kg/m2": "kg m-2", "kg/m3": "kg m-3", "kg/mol": "kg mol-1",
    "kg/s": "kg s-1", "km/h": "m s-1 *0.2777777777777778", "l": "m3 *1e-3",
    "lm": "cd rad2", "lm.s": "s cd rad2", "lm/W": "kg-1 m-2 s3 cd rad2",
    "lm/m2": "m-2 cd rad2", "lx": "m-2 cd rad2", "lx.s": "m-2 s cd rad2", "m": "m",
    "m-1": "m-1", "m-2": "m-2", "m-2.s-1": "m-2 s-1", "m-3": "m-3", "m/s": "m s-1",
    "m/s2": "m s-2", "m/s3": "m s-3", "m2": "m2", "m2.K/W": "kg-1 s3 K",
    "m2/(V.s)": "kg-1 s2 A", "m2/(sr.J)": "kg-1 s2 rad-2", "m2/J": "kg-1 s2",
    "m2/kg": "kg-1 m2", "m2/mol": "m2 mol-1", "m2/s": "m2 s-1", "m2/sr": "m2 rad-2",
    "m3": "m3", "m3/C": "m3 s-1 A-1", "m3/kg": "kg-1 m3", "m3/mol": "m3 mol-1",
    "m3/s": "m3 s-1", "m4": "m4", "min": "s *60", "mol": "mol", "mol/kg": "kg-1 mol",
    "mol/m3": "m-3 mol", "mol/s": "s-1 mol", "phon": "", "rad": "rad", "rad/m": "m-1 rad",
    "rad/s": "s-1 rad", "rad/s2": "s-2 rad", "rad/s3": "s-3 rad",
    "rev/min": "s-1 rad *0.10471975511965977", "s": "s", "s-1": "s-1", "s-1.m-2": "m-2 s-1",
    "s-1.m-3": "m-3 s-1", "s-1.m2": "m2 s-1", "s/m3": "m-3 s", "s2/m2": "m-2 s2",
    "sone": "", "sr": "rad2", "var": "kg m2 s-3",
}


def _expected(spec: str) -> tuple[tuple[int, ...], float, float]:
    exps = dict.fromkeys(BASE, 0)
    factor, offset = 1.0, 0.0
    for tok in spec.split():
        if tok.startswith("*"):
            factor = float(tok[1:])
        elif tok.startswith("+"):
            offset = float(tok[1:])
        else:
            sym, power = re.fullmatch(r"([A-Za-z]+)(-?\d+)?", tok).groups()
            exps[sym] += int(power or 1)
    return tuple(exps[b] for b in BASE), factor, offset


def test_msl_unit_strings_read_to_their_si_base_units():
    assert len(MSL_UNITS) == 182
    wrong = []
    for unit, spec in MSL_UNITS.items():
        got = base_unit(unit)
        exps, factor, offset = _expected(spec)
        if got is None or tuple(got.exponents) != exps \
                or not math.isclose(got.factor, factor, rel_tol=1e-12) \
                or not math.isclose(got.offset, offset, rel_tol=1e-12):
            wrong.append((unit, got, spec))
    assert not wrong


def test_prefixes_and_bounds():
    assert base_unit("kN.m").factor == pytest.approx(1e3)
    assert base_unit("mm/s").factor == pytest.approx(1e-3)
    assert base_unit("MW").factor == pytest.approx(1e6)
    assert base_unit("ms").exponents == _expected("s")[0]
    assert base_unit("uF").factor == pytest.approx(1e-6)
    assert base_unit("mol").factor == 1.0            # a symbol, not milli-"ol"
    assert base_unit("kdegC") is None                # offset units take no prefix
    for hostile in ("m999", "(" * 40 + "m" + ")" * 40, "m" * 500, "furlong", "m//s", "m."):
        assert base_unit(hostile) is None


# --- the check on models -----------------------------------------------------------------------

GOOD = """model Units
  parameter Real r(unit = "m") = 0.3;
  parameter Real J(unit = "kg.m2") = 2;
  parameter Real d(unit = "N.m.s/rad") = 0.1;
  parameter Real g(unit = "m/s2") = 9.81;
  parameter Real Is(unit = "A") = 1e-9;
  parameter Real Vt(unit = "V") = 0.025;
  parameter Real Ron(unit = "Ohm") = 1e-5;
  parameter Real Goff(unit = "S") = 1e-5;
  constant Real unitVoltage(unit = "V") = 1;
  constant Real unitCurrent(unit = "A") = 1;
  Real phi(unit = "rad", start = 0, fixed = true);
  Real w(unit = "rad/s", start = 1, fixed = true);
  Real tau(unit = "N.m");
  Real v(unit = "m/s");
  Real x(unit = "m", start = 0, fixed = true);
  Real x_mm(unit = "mm");
  Real h(unit = "m", start = 1, fixed = true);
  Real vh(unit = "m/s", start = 0, fixed = true);
  Real T(unit = "K");
  Real T_C(unit = "degC");
  Real dT(unit = "K");
  Real u(unit = "V");
  Real i(unit = "A");
  Real s(unit = "1");
  Real p(unit = "W");
  Real k;
  Boolean off = s < 0;
equation
  der(phi) = w;
  J * der(w) = tau - d * w;
  tau = 2 * sin(phi) * k;
  v = w * r;
  der(x) = v;
  x_mm = 1000 * x;
  der(h) = vh;
  der(vh) = -g;
  T_C = T - 273.15;
  T = 293.15 + 10 * sin(0.5 * time);
  dT = T_C - 20;
  u = s * (if off then unitVoltage else Ron * unitCurrent);
  i = s * (if off then Goff * unitVoltage else unitCurrent) + Is * (exp(u / Vt) - 1);
  i = u / Ron + Goff * u;
  p = u * i;
  k = if x > r then 1 else 0;
  when h < 0 then
    reinit(vh, -0.8 * pre(vh));
  end when;
end Units;
"""

#: (what the seeded error is, old text, new text, the two units the warning names)
SEEDED = [
    ("the issue's example: a sum of rad and rad/s", "v = w * r;", "x_mm = phi + w;",
     ("rad", "rad/s")),
    ("the two sides of an equation", "v = w * r;", "v = x;", ("m/s", "m")),
    ("a derivative of the wrong unit", "der(x) = v;", "der(x) = g;", ("m/s", "m/s2")),
    ("a dimensional argument of exp", "exp(u / Vt)", "exp(u)", ("V",)),
    ("a prefix: mm is not m", "x_mm = 1000 * x;", "x_mm = x;", ("mm", "m")),
    ("an offset unit equated as it is", "T_C = T - 273.15;", "T_C = T;", ("degC", "K")),
    ("a relation between m and s", "k = if x > r then 1 else 0;",
     "k = if x > time then 1 else 0;", ("m", "s")),
    ("the branches of an if-expression", "v = w * r;", "v = if off then w * r else x;",
     ("m.rad/s", "m")),
    ("a reinit with a length into a velocity", "reinit(vh, -0.8 * pre(vh));",
     "reinit(vh, h);", ("m/s", "m")),
    ("a binding of the wrong unit", 'parameter Real Ron(unit = "Ohm") = 1e-5;',
     'parameter Real Ron(unit = "Ohm") = Goff;', ("Ohm", "S")),
    ("a power", "p = u * i;", "p = u ^ 2 * i;", ("W", "kg2.m4/(s6.A)")),
    ("the arguments of max", "p = u * i;", "p = max(u * i, u);", ("kg.m2/s3", "V")),
]


def _check(text: str, name: str = "Units.mo"):
    return check_units(parse_modelica(text, name))


def test_a_correct_model_with_units_gets_no_warning():
    assert _check(GOOD) == ()


@pytest.mark.parametrize("what,old,new,units", SEEDED, ids=[s[0] for s in SEEDED])
def test_each_seeded_unit_error_gets_one_warning(what, old, new, units):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    line = text[:text.index(new)].count("\n") + 1
    source_line = text.split("\n")[line - 1]
    first = len(source_line) - len(source_line.lstrip()) + 1
    last = source_line.index(new) + len(new)
    warnings = _check(text)
    assert len(warnings) == 1, warnings
    w = str(warnings[0])
    assert w.startswith(f"W-UNIT: Units.mo:{line}:"), w
    assert warnings[0].loc.line == line and first <= warnings[0].loc.col <= last
    for u in units:
        assert re.search(rf"is in {re.escape(u)}( |,|$)", w), (u, w)


def test_the_issue_example_message():
    text = GOOD.replace("v = w * r;", "x = phi + w;", 1)
    (w,) = _check(text)
    assert str(w) == ("W-UNIT: Units.mo:33:3: x = phi + w: 'phi' is in rad but 'w' is in "
                      "rad/s (the terms of a sum must have one unit)")


def test_msl31_ideal_diode_unit_error_and_its_msl4_fix():
    """MSL 3.1's ideal diode writes ``v = s*(if off then 1 else Ron) + Vknee`` with s of unit
    "1": the sum mixes Ohm and V (a real error, fixed in MSL 3.2 by unitVoltage/unitCurrent,
    as GOOD writes it)."""
    text = GOOD.replace("u = s * (if off then unitVoltage else Ron * unitCurrent);",
                        "u = s * (if off then 1 else Ron) + 0 * unitVoltage;")
    (w,) = _check(text)
    assert "is in Ohm" in str(w) and "in V " in str(w)


def test_unknown_units_never_warn():
    """No unit attribute, unparsed units, literals and user functions are unknown: nothing
    to compare."""
    text = """model Unknown
  function f
    input Real a;
    output Real b;
  algorithm
    b := 2 * a;
  end f;
  parameter Real c = 3;
  Real x(unit = "m", start = 1, fixed = true);
  Real y(unit = "furlong/fortnight");
  Real z(unit = "s");
  Real q;
equation
  der(x) = c * x;
  y = x;
  z = f(x);
  q = x + z * c;
end Unknown;
"""
    assert _check(text) == ()


def test_models_without_units_cost_nothing_and_reference_models_are_clean():
    for path in sorted(REFERENCE.glob("*.mo")):
        assert check_units(api.load(path)) == (), path.name


def test_reference_models_with_units_added_get_no_warning():
    """ClutchBasic and BouncingBall written with SI units (shaft speeds in rad/s, torques in
    N.m, inertias in kg.m2, heights in m): their equations are consistent."""
    clutch = (REFERENCE / "ClutchBasic.mo").read_text()
    for name, unit in (("w01", "rad/s"), ("w02", "rad/s"), ("j1", "kg.m2"), ("j2", "kg.m2"),
                       ("k1", "N.m.s/rad"), ("k2", "N.m.s/rad"), ("t1", "s"), ("t2", "s"),
                       ("t", "s"), ("w1", "rad/s"), ("w2", "rad/s"), ("f1", "N.m"),
                       ("f2", "N.m")):
        clutch, n = re.subn(rf"(Real {name})\b(\(?)", lambda m, u=unit: m.group(1) + (
            f'(unit = "{u}", ' if m.group(2) else f'(unit = "{u}")'), clutch, count=1)
        assert n == 1, name
    model = parse_modelica(clutch, "ClutchBasic.mo")
    assert sum(v.unit is not None for v in model.variables) == 13
    assert check_units(model) == ()
    # and with one unit wrong, the two equations that use it are named
    wrong = clutch.replace('Real f2(unit = "N.m")', 'Real f2(unit = "N")')
    got = check_units(parse_modelica(wrong, "ClutchBasic.mo"))
    assert [w.loc.line for w in got] == [23, 25], got


@pytest.mark.long      # builds an FMU: out of -m quick
def test_cli_warning_and_strict_units(tmp_path, capsys):
    src = tmp_path / "Units.mo"
    src.write_text(GOOD.replace("x_mm = 1000 * x;", "x_mm = phi + w;", 1))
    assert main(["analyze", str(src)]) == 0
    out = capsys.readouterr().out
    assert f"W-UNIT: {src}:35:3: x_mm = phi + w: 'phi' is in rad but 'w' is in rad/s" in out
    assert main(["analyze", "--strict-units", str(src)]) == 1
    out = capsys.readouterr().out
    assert "verdict: rejected" in out and f"E-UNIT: {src}:35:3:" in out
    assert main(["analyze", "--json", str(src)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["units"] == [{"file": str(src), "line": 35, "col": 3, "where": "x_mm = phi + w",
                             "reason": "'phi' is in rad but 'w' is in rad/s (the terms of a "
                                       "sum must have one unit)"}]
    assert main(["export", "--strict-units", str(src), "-o", str(tmp_path / "u.fmu")]) == 1
    err = capsys.readouterr().err
    assert "E-UNIT" in err and not (tmp_path / "u.fmu").exists()
    # the warnings travel with a saved analysis (saved/objects.py allow-list)
    saved = tmp_path / "units.json"
    saved.write_text(json.dumps(doc))
    from mdae_fmu import load_analysis
    _, analysis = load_analysis(saved)
    assert [w.where for w in analysis.units] == ["x_mm = phi + w"]
    assert analysis.units[0].loc.line == 35
