"""Repeated blocks of a schedule printed once, as a loop over a table of slots.

A large model is mostly copies of one component (the masses of a chain, the cells of a
discretized line): its BTF schedule (docs/theory.md §11) repeats a
short sequence of blocks whose C code differs only in the Real slots it reads and writes. gcc
spends about a millisecond per printed block (issue 16: the floor of the export time), so a
repetition is printed once:

* `shape` reads the typed C of one block (`blocks.BlockCode`): its text has every Real slot as
  a hole numbered in the block's slot list, in order of first use (`mdae_fmu.codegen.slots`);
  everything else (constants, Integer and Boolean slots, left limits, frozen relations) is
  literal, so two blocks with the same text compute the same function of their slots;
* `find_runs` finds, greedily from the first block, the longest stretch made of ``m >=``
  `MIN_REPEATS` copies of a period of at most `MAX_PERIOD` blocks;
* `run_code` prints such a stretch as ``for (q = 0; q < m; q++)`` over a ``static const int``
  table with one row per copy (the slots of the period's blocks, then the unknowns of its
  Newton/linear blocks). The residual and Jacobian callbacks of a Newton or linear block are
  printed once per shape and read their slots from the row through the thread-local
  ``run_slots``.

The arithmetic, its order and the runtime calls are those of the blocks printed one by one,
so the FMU computes the same values; only the addressing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

from .block_code import FN, LOCALS, BlockCode, solver_call
from .slots import Slot, c_slot, fill

MIN_REPEATS = 4
MAX_PERIOD = 16

# the slot-table row of the block a loop is solving, read by its shared callbacks (the
# runtime's callbacks take the ModelData only); one per thread, as instances may run in
# parallel threads while an instance's solve is sequential
_DECL = "static __thread const int *run_slots;\n"


#: the key of an explicit block, ``("x", kind, text)``, and of a solver block, ``("s", kind,
#: solver, number of unknowns, callbacks, text)``
ShapeKey = Union[tuple[str, str, str], tuple[str, str, str, int, tuple[str, ...], str]]


@dataclass(frozen=True)
class Shape:
    """One block's C with its Real slots as holes (module docstring). ``key`` compares
    shapes; ``slots`` are this block's Real slots (then its unknowns for a solver call), the
    block's row of the table."""
    key: ShapeKey
    slots: tuple[Slot, ...]
    n_read: int              # slots read by the text; the rest are the solver's unknowns


def shape(code: BlockCode) -> Shape:
    """The `Shape` of a block: its text (the callbacks of a solver block, named from `FN`)
    is the same for every copy of a repeated block, its slots are the row of the table."""
    if not code.solver:
        return Shape(key=("x", code.kind, code.text), slots=code.slots, n_read=len(code.slots))
    key = ("s", code.kind, code.solver, len(code.unknowns), code.callbacks, code.text)
    return Shape(key=key, slots=code.slots + code.unknowns, n_read=len(code.slots))


def find_runs(keys: list[ShapeKey | None]) -> list[tuple[int, int, int]]:
    """``(start, period, repeats)`` of the stretches printed as loops (module docstring):
    greedy from the left, at each position the period that covers the most blocks with at
    least `MIN_REPEATS` copies; blocks without a shape (key None) are never in a run."""
    out: list[tuple[int, int, int]] = []
    n, i = len(keys), 0
    while i < n:
        best: tuple[int, int, int] | None = None
        for p in range(1, min(MAX_PERIOD, (n - i) // MIN_REPEATS) + 1):
            pattern = keys[i:i + p]
            if any(k is None for k in pattern):
                break
            m = 1
            while i + (m + 1) * p <= n and keys[i + m * p:i + (m + 1) * p] == pattern:
                m += 1
            if m >= MIN_REPEATS and (best is None or m * p > best[1] * best[2]):
                best = (i, p, m)
        if best is None:
            i += 1
        else:
            out.append(best)
            i += best[1] * best[2]
    return out


def affine(number: Sequence[int], period: int) -> bool:
    """Whether the block numbers ``number`` of a run's copies (``period`` blocks each) step by
    the same amount from one copy to the next, position by position: a run then names each
    solver block's number as ``first + step * q`` (`run_code`'s ``index``; the guarded
    schedule, whose blocks of every mode may be several printed blocks each, numbered as the
    block they solve)."""
    if len(number) < 2 * period:
        return True
    step = [number[period + j] - number[j] for j in range(period)]
    return all(number[q * period + j] == number[j] + q * step[j]
               for q in range(len(number) // period) for j in range(period))


def _row(text: str, base: int) -> str:
    """``text`` with its Real slots at the positions of the current table row ``s``, from
    ``base``."""
    return fill(text, lambda j: f"r[s[{base + j}]]")


def _indent(text: str) -> str:
    return "\n".join("    " + ln for ln in text.split("\n"))


def strides(copies: list[list[Shape]]) -> list[int] | None:
    """The step of every column of a run's slot table when each column is an arithmetic
    progression over the copies (row ``q`` = first row + ``q`` * steps: the copies of a
    component laid out one after the other), else None."""
    rows = [[k.index for sh in copy for k in sh.slots] for copy in copies]
    if len(rows) < 2:
        return None
    first = rows[0]
    steps = [b - a for a, b in zip(first, rows[1])]
    for q, row in enumerate(rows[2:], 2):
        if any(v != a + q * d for v, a, d in zip(row, first, steps)):
            return None
    return steps


def run_code(name: str, copies: list[list[Shape]], start: int,
             templates: dict[ShapeKey | str, str | bool],
             comment: str, index: Sequence[int] | None = None) -> tuple[str, str]:
    """``(statements, file-level text)`` of the loop over ``copies`` (each the `Shape` list
    of one copy of the period; the first block is number ``start``): the statements go into
    a schedule function (``d``, ``r``, ``inst`` in scope); the file-level text is the slot table
    ``name`` and the callbacks of solver shapes not yet in ``templates`` (key -> name of the
    shared callbacks, updated). When every column of the table is an arithmetic progression
    (`strides`), the table holds only the first row and the steps, and the loop computes
    each row, so that the C does not grow with the number of copies. ``index``: the number
    of each block of the run, copy after copy, when it is not ``start`` + its position (it
    must be `affine`): what a solver block's failure names."""
    first = copies[0]
    period, repeats = len(first), len(copies)
    steps = strides(copies)
    width = sum(len(sh.slots) for sh in first)
    if steps is None:
        row = f"        const int *s = {name}[q];"
    else:
        row = (f"        int row[{width}];\n        const int *s = row;\n"
               f"        for (int j = 0; j < {width}; j++) row[j] = {name}[0][j] + "
               f"{name}[1][j] * q;")
    if index is None:
        index = range(start, start + period * repeats)
    lines = [f"    /* blocks {index[0]}..{index[-1]}: {repeats} copies of {comment} */",
             f"    for (int q = 0; q < {repeats}; q++) {{", row]
    file_text = []
    base = 0

    def number(j: int) -> str:
        # the number of block j of copy q (`affine`; the copies' own positions by default)
        step = index[period + j] - index[j] if repeats > 1 else period
        return f"{index[j]} + {step} * q"

    for j, sh in enumerate(first):
        key = sh.key
        if len(key) == 3:           # an explicit block ("x", kind, text)
            lines.append(_indent(_row(key[2], base)))
        else:
            _, kind, solver, n, callbacks, helpers = key
            fn = templates.get(sh.key)
            if fn is None:
                if _DECL not in templates:
                    templates[_DECL] = True
                    file_text.append(_DECL)
                fn = templates[sh.key] = f"{name}_b{j}"
                text = helpers.replace(FN, f"{fn}_").replace(
                    LOCALS, LOCALS + "    const int *s = run_slots;\n    (void)s;\n")
                file_text.append(_row(text, 0))
            lines.append(f"        run_slots = s + {base};")
            lines.append("        " + solver_call(solver, n, f"s + {base + sh.n_read}",
                                                  [f"{fn}_{c}" for c in callbacks],
                                                  number(j)))
        base += len(sh.slots)
    lines.append("    }")
    # the first row names its slots (which variables the copies are); the others, at most
    # all of a large model's slots, stay plain numbers (gcc time, docs/decisions.md §13)
    named = "    {" + ", ".join(c_slot(k, position=True) for sh in first for k in sh.slots) + "}"
    if steps is None:
        rows = ",\n".join([named] + ["    {" + ", ".join(c_slot(k, position=True, named=False)
                                                       for sh in copy for k in sh.slots) + "}"
                                     for copy in copies[1:]])
        table = f"static const int {name}[{repeats}][{base}] = {{\n{rows}\n}};\n"
    else:
        rows = named + ",\n    {" + ", ".join(str(d) for d in steps) + "}"
        table = (f"/* {name}: the first copy's slots, then the step of each from one copy to "
                 f"the next */\nstatic const int {name}[2][{base}] = {{\n{rows}\n}};\n")
    return "\n".join(lines), "\n".join([table] + file_text)
