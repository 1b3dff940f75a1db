"""Modelica unit strings and their SI base units (issue 13 item 3, issue 28 Deliver 5).

A unit string (Modelica 3.6 §19.1: ``"N.m"``, ``"m/s2"``, ``"W/(m2.K)"``, ``"1/s"``,
``"kg.m-3"``, ``"degC"``, ``"mm"``) is parsed into the exponents of the FMI 2.0 base units
(kg, m, s, A, K, mol, cd, rad), a factor and an offset, so that ``value_in_base = factor *
value + offset`` (FMI 2.0 §2.2.2, ``<BaseUnit>``). Symbols are the SI base and derived units,
the units accepted with the SI and those of the Modelica Standard Library's ``Modelica.Units``
(min, h, d, l, bar, deg, rev, eV, var, and the logarithmic or psychoacoustic levels dB, Np,
phon, sone read as dimensionless), with the SI prefixes; a string that does not parse gives
None. Two readers use it: the FMU's ``<UnitDefinitions>`` (`mdae_fmu.fmu.model_description`)
and the unit check of the equations (`mdae_fmu.unit_check`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

BASE = ("kg", "m", "s", "A", "K", "mol", "cd", "rad")


@dataclass(frozen=True)
class BaseUnit:
    exponents: tuple            # one int per `BASE` unit
    factor: float = 1.0
    offset: float = 0.0

    def times(self, other: "BaseUnit", power: int = 1) -> "BaseUnit":
        return BaseUnit(
            exponents=tuple(a + power * b for a, b in zip(self.exponents, other.exponents)),
            factor=self.factor * other.factor**power,
        )


def _u(factor=1.0, offset=0.0, **exps) -> BaseUnit:
    return BaseUnit(exponents=tuple(exps.get(b, 0) for b in BASE), factor=factor, offset=offset)


ONE = _u()
#: unit symbol -> base unit (the symbols of SI, Modelica 3.6 §19.1 and the MSL's
#: Modelica.Units / Modelica.SIunits)
SYMBOLS = {
    "m": _u(m=1), "s": _u(s=1), "A": _u(A=1), "K": _u(K=1), "mol": _u(mol=1), "cd": _u(cd=1),
    "rad": _u(rad=1), "g": _u(1e-3, kg=1), "sr": _u(rad=2),
    "Hz": _u(s=-1), "N": _u(kg=1, m=1, s=-2), "Pa": _u(kg=1, m=-1, s=-2),
    "J": _u(kg=1, m=2, s=-2), "W": _u(kg=1, m=2, s=-3), "C": _u(s=1, A=1),
    "V": _u(kg=1, m=2, s=-3, A=-1), "F": _u(kg=-1, m=-2, s=4, A=2),
    "Ohm": _u(kg=1, m=2, s=-3, A=-2), "S": _u(kg=-1, m=-2, s=3, A=2),
    "Wb": _u(kg=1, m=2, s=-2, A=-1), "T": _u(kg=1, s=-2, A=-1),
    "H": _u(kg=1, m=2, s=-2, A=-2), "lm": _u(cd=1, rad=2), "lx": _u(cd=1, rad=2, m=-2),
    "Bq": _u(s=-1), "Gy": _u(m=2, s=-2), "Sv": _u(m=2, s=-2), "kat": _u(mol=1, s=-1),
    "min": _u(60.0, s=1), "h": _u(3600.0, s=1), "d": _u(86400.0, s=1),
    "l": _u(1e-3, m=3), "L": _u(1e-3, m=3), "bar": _u(1e5, kg=1, m=-1, s=-2),
    "deg": _u(math.pi / 180, rad=1), "rev": _u(2 * math.pi, rad=1),
    "degC": _u(1.0, 273.15, K=1), "degF": _u(5 / 9, 273.15 - 32 * 5 / 9, K=1),
    "degRk": _u(5 / 9, K=1),
    "eV": _u(1.602176634e-19, kg=1, m=2, s=-2), "var": _u(kg=1, m=2, s=-3),
    # levels and psychoacoustic units: dimensionless (Modelica.Units.SI: dB, phon, sone)
    "B": _u(), "Np": _u(), "phon": _u(), "sone": _u(),
}
PREFIXES = {"Y": 1e24, "Z": 1e21, "E": 1e18, "P": 1e15, "T": 1e12, "G": 1e9, "M": 1e6,
            "k": 1e3, "h": 1e2, "da": 1e1, "d": 1e-1, "c": 1e-2, "m": 1e-3, "u": 1e-6,
            "n": 1e-9, "p": 1e-12, "f": 1e-15, "a": 1e-18, "z": 1e-21, "y": 1e-24}
_NO_PREFIX = ("degC", "degF", "degRk", "kg", "min", "h", "d", "rev", "deg", "Np", "phon",
              "sone")
#: Bounds on what a unit string may hold (it is user text): longer, more nested or with larger
#: exponents, it does not read (None).
MAX_LENGTH, MAX_NESTING, MAX_EXPONENT = 200, 16, 64
_FACTOR = re.compile(r"([A-Za-z]+)([+-]?\d+)?")


def _symbol(text: str) -> BaseUnit | None:
    if text in SYMBOLS:
        return SYMBOLS[text]
    if text == "kg":
        return _u(kg=1)
    for p in ("da",) + tuple(PREFIXES):
        if text.startswith(p) and len(text) > len(p):
            rest = text[len(p):]
            base = SYMBOLS.get(rest)
            if base is not None and rest not in _NO_PREFIX:
                return BaseUnit(exponents=base.exponents, factor=base.factor * PREFIXES[p])
    return None


def _factors(text: str, pos: int, stop: str) -> tuple[BaseUnit | None, int]:
    """``f1.f2...`` from ``pos`` up to ``stop`` (a closing parenthesis, a slash or the end)."""
    out = ONE
    while True:
        if text.startswith("(", pos):
            inner, pos = _expression(text, pos + 1, ")")
            if inner is None or not text.startswith(")", pos):
                return None, pos
            pos += 1
            m = re.compile(r"[+-]?\d+").match(text, pos)
            power = 1
            if m is not None:
                power = int(m.group(0))
                pos = m.end()
                if abs(power) > MAX_EXPONENT:
                    return None, pos
            out = out.times(inner, power)
        else:
            m = _FACTOR.match(text, pos)
            if m is None:
                return None, pos
            sym = _symbol(m.group(1))
            if sym is None:
                return None, pos
            power = int(m.group(2)) if m.group(2) else 1
            if abs(power) > MAX_EXPONENT:
                return None, pos
            out = out.times(sym, power)
            pos = m.end()
        if text.startswith(".", pos):
            pos += 1
            continue
        return out, pos


def _expression(text: str, pos: int, stop: str) -> tuple[BaseUnit | None, int]:
    num: BaseUnit | None
    if text.startswith("1", pos) and (pos + 1 == len(text) or text[pos + 1] in "/)"):
        num, pos = ONE, pos + 1
    else:
        num, pos = _factors(text, pos, stop)
        if num is None:
            return None, pos
    if text.startswith("/", pos):
        den, pos = _factors(text, pos + 1, stop)
        if den is None:
            return None, pos
        num = num.times(den, -1)
    return num, pos


def base_unit(unit: str) -> BaseUnit | None:
    """The base unit of a Modelica unit string, None if it cannot be read (module
    docstring). An offset is kept only for a unit that is one offset symbol (``degC``)."""
    unit = unit.strip()
    if not unit or len(unit) > MAX_LENGTH or unit.count("(") > MAX_NESTING:
        return None
    sym = SYMBOLS.get(unit)
    if sym is not None and sym.offset:
        return sym
    value, pos = _expression(unit, 0, "")
    if value is None or pos != len(unit):
        return None
    return BaseUnit(exponents=value.exponents, factor=value.factor, offset=0.0)


def display_unit(unit: str, display: str) -> tuple[float, float] | None:
    """``(factor, offset)`` of the FMI 2.0 <DisplayUnit> ``display`` of ``unit``
    (``value_display = factor * value_unit + offset``, FMI 2.0 §2.2.2): from
    ``base = f_u * value_unit + o_u = f_d * value_display + o_d``; None when either unit does not
    read or their dimensions differ (``"degC"`` of ``"K"``: (1, -273.15))."""
    u, d = base_unit(unit), base_unit(display)
    if u is None or d is None or u.exponents != d.exponents:
        return None
    return u.factor / d.factor, (u.offset - d.offset) / d.factor


__all__ = ["BASE", "BaseUnit", "base_unit", "display_unit", "SYMBOLS", "PREFIXES"]
