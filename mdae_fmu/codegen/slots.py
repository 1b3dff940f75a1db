"""Typed value slots of the compiled plan, and their one C form.

Every value an FMU instance keeps for a model variable lives in one of its value arrays
(docs/fmi-mapping.md, "Value references"): ``d->r`` (Reals: the declared variables, then the
derivative instances), ``d->i`` (Integers), ``d->b`` (Booleans), the left limits ``d->pr`` /
``d->pi`` / ``d->pb`` of the same positions, and the simulation time ``d->time``. The plan
(`mdae_fmu.codegen.plan`) maps each sympy symbol to a `Slot`; the stages after it read the
slot's fields (array, index, left limit) and never parse C text. `c_slot` is the only place a
slot becomes C.

Readable C (issue 16): a slot is printed with the model's name of its variable in a comment,
``r[4] /* body.v */``, the name reduced to `plain_name` characters (no comment delimiter, no
backslash, nothing outside printable ASCII), so no model name reaches C unescaped
(docs/decisions.md, "Names in the generated C").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: the value arrays of ModelData (templates/mdae_model.h) a slot may address, and its two
#: scalars: the time and homotopy's lambda (mdae_runtime.c, ``homotopy_initialization``)
ARRAYS = ("r", "i", "b", "time", "homotopy")
_SCALARS = ("time", "homotopy")
_TYPE = {"r": "Real", "i": "Integer", "b": "Boolean", "time": "Real", "homotopy": "Real"}
#: longest model name written next to a slot use (longer ones end in "...")
NAME_LIMIT = 40


@dataclass(frozen=True)
class Slot:
    """One value of the instance: position ``index`` of the value array ``array`` (``r``,
    ``i``, ``b``; the scalars ``time`` and ``homotopy`` have no index), its left limit when
    ``pre``. ``name`` is the model's
    name of the value (a comment in the C, never compared)."""
    array: str
    index: int = 0
    pre: bool = False
    name: str = field(default="", compare=False)

    def __post_init__(self):
        if self.array not in ARRAYS or self.index < 0 or \
                (self.array in _SCALARS and (self.pre or self.index)):
            raise ValueError(f"no such slot: {self!r}")

    @property
    def type(self) -> str:
        """``Real``, ``Integer`` or ``Boolean``: the type of the value the slot holds."""
        return _TYPE[self.array]

    @property
    def real(self) -> bool:
        """A position of ``d->r`` (not its left limit, not a scalar)."""
        return self.array == "r" and not self.pre

    def left(self) -> Slot:
        """The slot of this value's left limit (``pre``)."""
        if self.array in _SCALARS:
            raise ValueError(f"{self.array} has no left limit slot")
        name = f"pre({self.name})" if self.name else ""
        return Slot(self.array, self.index, True, name)


TIME = Slot("time", 0, False, "time")
HOMOTOPY = Slot("homotopy")


def c_slot(slot: Slot, local: bool = False, named: bool = True,
           position: bool = False) -> str:
    """The C of ``slot``: its lvalue ``d->r[4]``, ``d->pb[2]``, ``d->time``,
    ``d->homotopy``, Reals through the
    local pointer ``r`` (``r[4]``) when ``local`` (the schedule functions and block callbacks
    declare ``r = d->r``); only its index when ``position`` (a table of slots); followed by
    the model's name in a comment when ``named``."""
    if slot.array in _SCALARS:
        return f"d->{slot.array}"
    arr = ("p" if slot.pre else "") + slot.array
    if position:
        text = str(slot.index)
    else:
        text = f"{arr}[{slot.index}]" if local and arr == "r" else f"d->{arr}[{slot.index}]"
    return f"{text} /* {plain_name(slot.name)} */" if named and slot.name else text


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.,()\[\] +'-]*")


def plain_name(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` with every character but ASCII letters, digits and ``_.,()[] +'-`` shown as
    ``?``, at most ``limit`` characters: a model name in a C comment, readable for ordinary
    names and inert for any other (no ``*/``, ``/*``, ``\\``, control or non-ASCII character
    can remain; ``?`` followed by ``?`` and ``/`` cannot form the trigraph ``??/``, as ``/``
    never remains)."""
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    if _PLAIN_NAME.fullmatch(text):
        return text
    return "".join(c if (c.isascii() and c.isalnum()) or c in "_.,()[] +'-" else "?"
                   for c in text)


# --- holes: Real slots of a block's C text, filled when the text is placed -----------------

_HOLE = "\x00"
_HOLE_RE = re.compile("\x00(\\d+)\x00")


def hole(j: int) -> str:
    """The marker of the ``j``-th Real slot of a block's text (`fill` replaces it)."""
    return f"{_HOLE}{j}{_HOLE}"


def fill(text: str, value) -> str:
    """``text`` with each marker `hole` (j) replaced by ``value(j)``: the block's slots
    (`c_slot`) where the block is printed on its own, a row of a slot table in a loop
    (`mdae_fmu.codegen.runs`). The markers are this module's own, never C."""
    if _HOLE not in text:
        return text
    return _HOLE_RE.sub(lambda m: value(int(m.group(1))), text)
