"""The C of one solved block (`BlockCode`): the statements of an explicit block or the
callbacks of a runtime solver (Newton, linear, sparse), with the Real slots left as holes
(`mdae_fmu.codegen.slots`) and the call that the schedule function makes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from typing import TYPE_CHECKING

import sympy as sp

from .slots import Slot, c_slot, fill, solved_tag

if TYPE_CHECKING:
    from .cprinter import SlotPrinter


# block helpers read the Reals through a local pointer, like the schedule functions
LOCALS = "    const double *r = d->r;\n    (void)r;\n"


#: the start of the names of a solver block's callbacks in `BlockCode.text` (``blk<k>_`` when
#: the block is printed on its own, the shared name of a loop's callbacks in a run)
FN = "\x01"


@dataclass(frozen=True)
class BlockCode:
    """C of block number ``index``, typed (`mdae_fmu.codegen.slots`): ``text`` holds the
    statements of an explicit block, or the callback functions of a solver block (their names
    start with `FN`), with each Real slot as a hole numbered in ``slots``. A solver block
    (``solver``: ``mdae_newton_block`` or ``mdae_linear_block``) is called with its
    ``unknowns`` and the callbacks ``FN + c`` for ``c`` in ``callbacks``. `body` and `helpers`
    are the C of the block printed on its own; `mdae_fmu.codegen.runs` prints repeated blocks
    from the same fields."""
    kind: str
    index: int
    text: str
    slots: tuple[Slot, ...] = ()
    unknowns: tuple[Slot, ...] = ()
    solver: str = ""
    callbacks: tuple[str, ...] = ()

    sparse: tuple[int, int] | None = None   # (cache number, entries) of a sparse block

    def _slot(self, j: int) -> str:
        return c_slot(self.slots[j], local=True)

    @property
    def prefix(self) -> str:
        """The start of the names of the block's callbacks: its number and what it solves
        (``blk3_u_w_``, `mdae_fmu.codegen.slots.solved_tag`)."""
        tag = solved_tag(self.unknowns)
        return f"blk{self.index}_{tag}_" if tag else f"blk{self.index}_"

    @property
    def body(self) -> str:
        """The statements executed in the schedule function."""
        if not self.solver:
            return fill(self.text, self._slot)
        u = ", ".join(c_slot(s, position=True) for s in self.unknowns)
        if self.sparse is not None:
            n, (cache, nnz), b = len(self.unknowns), self.sparse, self.prefix
            cbs = ", ".join(b + c for c in self.callbacks)
            return (f"    {{ static const int u[{n}] = {{{u}}};\n"
                    f"      static const MdaeSparsePattern p = {{{n}, {nnz}, {b}row, {b}col, "
                    f"{cache}}};\n      if ({self.solver}(inst, &p, u, {cbs}, {self.index})) "
                    f"return 1; }}")
        call = solver_call(self.solver, len(self.unknowns), "u",
                           [self.prefix + c for c in self.callbacks], str(self.index))
        return f"    {{ static const int u[{len(self.unknowns)}] = {{{u}}};\n      {call} }}"

    @property
    def helpers(self) -> str:
        """The file-level callback functions the statements call ("" for an explicit
        block)."""
        if not self.solver:
            return ""
        return fill(self.text.replace(FN, self.prefix), self._slot)


def solver_call(solver: str, n: int, unknowns: str, callbacks: list[str], index: str) -> str:
    """The call of a runtime solver on a block of ``n`` unknowns: ``unknowns`` is the C of a
    pointer to their Real positions, ``index`` the block number as C (run-time messages)."""
    return f"if ({solver}(inst, {n}, {unknowns}, {', '.join(callbacks)}, {index})) return 1;"


def solver_block(kind: str, index: int, printer: SlotPrinter,
                 unknowns: Iterable[sp.Basic], helpers: str, holes: dict[Slot, int],
                 sparse: tuple[int, int] | None = None) -> BlockCode:
    """The `BlockCode` of a Newton (``helpers``: ``FN`` residual and jacobian) or linear
    (``FN`` system) block, its ``unknowns`` the Real slots of ``printer``; ``sparse``: the
    (cache number, entries) of a sparse linear block (`sparse_helpers`)."""
    values = [printer.slots[u] for u in unknowns]
    us = tuple(s for s in values if isinstance(s, Slot) and s.real)
    if len(us) != len(values):
        raise KeyError(f"an unknown of block {index} has no Real slot")
    family = "mdae_sparse_" if sparse is not None else "mdae_"
    solver, callbacks = ((family + "linear_block", ("system",)) if kind == "linear"
                         else (family + "newton_block", ("residual", "jacobian")))
    return BlockCode(kind=kind, index=index, text=helpers, slots=tuple(holes), unknowns=us,
                     solver=solver, callbacks=callbacks, sparse=sparse)


def pattern_tables(pattern: list[tuple[int, int]]) -> str:
    """The entry tables ``FN row``, ``FN col`` of a sparse block: entry k of its matrix at row
    ``row[k]``, column ``col[k]``."""
    rows = ", ".join(str(i) for i, _ in pattern) or "0"
    cols = ", ".join(str(j) for _, j in pattern) or "0"
    return (f"static const int {FN}row[] = {{{rows}}};\n"
            f"static const int {FN}col[] = {{{cols}}};\n")


def sparse_helpers(pattern: list[tuple[int, int]], lines: list[str]) -> str:
    """The entry tables (`pattern_tables`) and the callback ``FN system`` of a sparse linear
    block: ``lines`` set the values ``a`` of the entries and all of ``c``."""
    return (pattern_tables(pattern)
            + f"static void {FN}system(const ModelData *d, double *a, double *c)\n"
            "{\n" + LOCALS + "\n".join(lines) + "\n}\n")


def explicit_block(index: int, text: str, holes: dict[Slot, int]) -> BlockCode:
    """The `BlockCode` of an explicit block: its statements ``text`` with the slots
    ``holes``."""
    return BlockCode(kind="explicit", index=index, text=text, slots=tuple(holes))


def linear_helpers(n: int, lines: list[str]) -> str:
    """The callback ``FN system`` of a linear block of ``n`` unknowns: ``lines`` set the
    nonzero entries of ``A`` and all of ``c`` (A u = c)."""
    # (void)c: a block of no unknown (a restart system emptied by its mode) sets no c
    return (f"static void {FN}system(const ModelData *d, double *A, double *c)\n"
            "{\n" + LOCALS + ("    (void)c;\n" if not n else "")
            + f"    memset(A, 0, sizeof(double) * {n * n});\n"
            + "\n".join(lines) + "\n}\n")


def newton_helpers(n: int, f_lines: list[str], j_lines: list[str]) -> str:
    """The callbacks ``FN residual`` (``f_lines`` set ``F``) and ``FN jacobian`` (``j_lines``
    set the nonzero entries of ``J``) of a Newton block of ``n`` unknowns."""
    return (f"static void {FN}residual(const ModelData *d, double *F)\n{{\n"
            + LOCALS + "\n".join(f_lines) + "\n}\n"
            f"static void {FN}jacobian(const ModelData *d, double *J)\n{{\n"
            + LOCALS + f"    memset(J, 0, sizeof(double) * {n * n});\n" + "\n".join(j_lines)
            + "\n}\n")
