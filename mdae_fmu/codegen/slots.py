"""Typed value slots of the compiled plan, and their one C form.

Every value an FMU instance keeps for a model variable lives in one of its value arrays
(docs/fmi-mapping.md, "Value references"): ``d->r`` (Reals: the declared variables, then the
derivative instances), ``d->i`` (Integers), ``d->b`` (Booleans), the left limits ``d->pr`` /
``d->pi`` / ``d->pb`` of the same positions, and the simulation time ``d->time``. The plan
(`mdae_fmu.codegen.plan`) maps each sympy symbol to a `Slot`; the stages after it read the
slot's fields (array, index, left limit) and never parse C text. `c_slot` is the only place a
slot becomes C.

Readable C (issues 16 and 27): a slot is printed with the model's name of its variable in a
comment, ``r[4] /* body.v */``, the name reduced to `plain_name` characters (no comment
delimiter, no backslash, nothing outside printable ASCII), so no model name reaches C
unescaped; the emitter's last step (`name_slots`) writes each such use by an identifier made of
the name's letters and digits, ``r[R_body_v]``, declared per file as an enum of slot indices
(docs/decisions.md, "Names in the generated C").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

#: the value arrays of ModelData (templates/mdae_model.h) a slot may address, and its two
#: scalars: the time and homotopy's lambda (mdae_runtime.c, ``homotopy_initialization``)
ARRAYS = ("r", "i", "b", "time", "homotopy")
_SCALARS = ("time", "homotopy")
_TYPE = {"r": "Real", "i": "Integer", "b": "Boolean", "time": "Real", "homotopy": "Real"}
#: longest model name written next to a slot use (longer ones end in "...")
NAME_LIMIT = 40


@dataclass(frozen=True, slots=True)
class Slot:
    """One value of the instance: position ``index`` of the value array ``array`` (``r``,
    ``i``, ``b``; the scalars ``time`` and ``homotopy`` have no index), its left limit when
    ``pre``. ``name`` is the model's
    name of the value (a comment in the C, never compared)."""
    array: str
    index: int = 0
    pre: bool = False
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
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
        return Slot(array=self.array, index=self.index, pre=True, name=name)


def make_slots(arrays: Iterable[str], indices: Iterable[int], names: Iterable[str],
               pre: bool = False) -> list[Slot]:
    """The slots ``Slot(array=a, index=k, pre=pre, name=n)`` for ``a, k, n`` of ``arrays``,
    ``indices`` and ``names`` together, in bulk: each slot is filled through its field
    descriptors, without the frozen dataclass's per-field ``__setattr__`` (the plan makes one
    value slot and one left limit per variable: at 10^5 equations a fifth of a second).
    ``ValueError`` for an array of no indexed slot or a negative index, as `Slot` itself."""
    new = object.__new__
    set_array, set_index, set_pre, set_name = _FIELD_SETTERS
    out: list[Slot] = []
    append = out.append
    for a, k, n in zip(arrays, indices, names):
        if a not in _INDEXED or k < 0:
            raise ValueError(f"no such slot: {a}[{k}]")
        s = new(Slot)
        set_array(s, a)
        set_index(s, k)
        set_pre(s, pre)
        set_name(s, n)
        append(s)
    return out


_INDEXED = frozenset(a for a in ARRAYS if a not in _SCALARS)
#: the descriptors of `Slot`'s fields (``__slots__``), in the order of `make_slots`
_FIELD_SETTERS = tuple(Slot.__dict__[f].__set__ for f in ("array", "index", "pre", "name"))


TIME = Slot(array="time", index=0, pre=False, name="time")
HOMOTOPY = Slot(array="homotopy")


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


def fill(text: str, value: Callable[[int], str]) -> str:
    """``text`` with each marker `hole` (j) replaced by ``value(j)``: the block's slots
    (`c_slot`) where the block is printed on its own, a row of a slot table in a loop
    (`mdae_fmu.codegen.runs`). The markers are this module's own, never C."""
    if _HOLE not in text:
        return text
    return _HOLE_RE.sub(lambda m: value(int(m.group(1))), text)


# --- names: the slots of a generated file by the model's names (issue 27 Deliver 4) ---------

#: a slot as `c_slot` prints it with its name: ``r[4] /* body.v */`` (Reals through the local
#: pointer), ``d->r[4] /* body.v */``, ``d->pi[2] /* pre(n) */`` (groups 1, the array, and 2,
#: the index), or a Real's position in a table of unknowns, ``{4 /* body.v */, ...}`` (group
#: 3 the index, 4 the name as written)
_NAMED_SLOT = re.compile(r"(d->p?[rib]|(?<![\w>])r)\[(\d+)\] /\* [^*]* \*/"
                         r"|(?:(?<=\{)|(?<=\{ )|(?<=, ))(\d+) /\* ([^*]*) \*/")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9]+")
#: longest identifier made from a model name (before the prefix and a disambiguating index)
IDENT_LIMIT = 48


def c_name_part(name: str, limit: int = IDENT_LIMIT) -> str:
    """``name`` as part of a C identifier: every run of characters other than ASCII letters
    and digits made one ``_``, at most ``limit`` characters ("" when nothing is left)."""
    return _NOT_IDENT.sub("_", name).strip("_")[:limit]


def solved_tag(unknowns: Sequence[Slot], shown: int = 3) -> str:
    """The part of a block function's name that says what the block solves: its first
    ``shown`` unknowns' names (`c_name_part`), then ``and_<n>_more`` (``der_w1_f1``,
    ``x1_x2_x3_and_47_more``); "" when none is named."""
    parts = [c_name_part(s.name, 24) for s in unknowns[:shown]]
    parts = [p for p in parts if p]
    if parts and len(unknowns) > shown:
        parts.append(f"and_{len(unknowns) - shown}_more")
    return "_".join(parts)


@dataclass(frozen=True)
class SlotNames:
    """The C identifier of every named slot, ``(array, index) -> identifier``, and the name
    `c_slot` writes next to a Real's position in a table, ``index -> name``."""
    identifiers: dict[tuple[str, int], str]
    real_comments: dict[int, str]


def slot_identifiers(names: dict[str, list[str]]) -> SlotNames:
    """A C identifier for every named slot: ``names[array][k]`` is the model's name of slot
    ``k`` of value array ``array`` (``r``, ``i``, ``b``; ``""``: a hidden slot, left out).
    The identifier is the array's prefix (``R_``, ``I_``, ``B_``) and the name with every run
    of characters other than ASCII letters and digits made one ``_`` (``body.v`` ->
    ``R_body_v``, ``der(w1)`` -> ``R_der_w1``), at most `IDENT_LIMIT` characters; a name that
    another slot of the same array already took gets the slot's index appended, so the map is
    one-to-one. Only letters, digits and ``_`` reach the C (docs/decisions.md, "Names in the
    generated C")."""
    out: dict[tuple[str, int], str] = {}
    comments: dict[int, str] = {}
    for array, slot_names in names.items():
        taken: set[str] = set()
        for k, name in enumerate(slot_names):
            if not name:
                continue
            base = c_name_part(name) or "slot"
            ident = f"{array.upper()}_{base}"
            if ident in taken:
                ident = f"{ident}_{k}"
            taken.add(ident)
            out[(array, k)] = ident
            if array == "r":
                comments[k] = plain_name(name)
    return SlotNames(identifiers=out, real_comments=comments)


def name_slots(text: str, names: SlotNames) -> str:
    """``text`` (a generated C file) with every named slot ``r[4] /* body.v */`` written
    ``r[R_body_v]`` (a Real's position in a table, ``4 /* body.v */``, as ``R_body_v`` when
    the name is the Real's), and the identifiers it uses declared once, as an enum of slot
    indices after the file's ``#include "mdae_model.h"``. The Reference-FMUs address
    variables by name, ``M(v)``; ours stay array positions, so the state vector and the FMU
    state keep their layout. A slot without an identifier keeps its index and comment."""
    ids = names.identifiers
    used: dict[str, int] = {}

    def named(m: re.Match[str]) -> str:
        if m.group(1) is None:
            k = int(m.group(3))
            ident = ids.get(("r", k))
            if ident is None or names.real_comments.get(k) != m.group(4):
                return m.group(0)
            used[ident] = k
            return ident
        array, k = m.group(1), int(m.group(2))
        ident = ids.get((array[-1], k))
        if ident is None:
            return m.group(0)
        used[ident] = k
        return f"{array}[{ident}]"

    out = _NAMED_SLOT.sub(named, text)
    if not used:
        return out
    order = sorted(used.items(), key=lambda item: ("RIB".index(item[0][0]), item[1]))
    decl = "\n".join(f"    {ident} = {k}," for ident, k in order)
    enum = f"/* the model's variables used in this file: their slots */\nenum {{\n{decl}\n}};\n"
    anchor = '#include "mdae_model.h"\n'
    at = out.find(anchor)
    if at < 0:
        raise ValueError("a generated file with named slots does not include mdae_model.h")
    at += len(anchor)
    return out[:at] + "\n" + enum + out[at:]
