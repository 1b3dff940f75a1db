"""Blocks singular for all values on the one analysis (issue 26 Deliver 2): the conversion of
`mdae_fmu.structure.conversion` (Tan-Nedialkov-Pryce, docs/theory.md §4.9) run on the blocks
of the implicit analysis (docs/theory.md §10.2) instead of those of enumerated modes.

A block of the implicit analysis (`mdae_fmu.implicit.blocks.ConditionalBlock`) is a block in
the modes of its formula, but its System Jacobian is not one function in all of them: its
equations' if-expressions on guards select different residuals, and the offsets c of its
equations and d of the unknowns they read may change with the mode. A *variant* of the block
is the set of modes where all of these are fixed: the block formula and, at one mode m of it,
the branch formula of each equation's residual (`mdae_fmu.implicit.analysis.branch_residuals`)
and the offset formulas (``ia.c``, ``ia.d``) of its equations and of every unknown they read.
In every mode of a variant the block is the same `BlockSystem` over the same instances, so one
test decides the variant: the numerical test of the enumerated path
(`mdae_fmu.structure.conversion.SingularityCheck`), then the symbolic confirmation and the
conversion (`convert_block`), both on the mode m picked in it. Variants are found by picking a
mode in what is left of the block formula and removing the variant it lies in, so that the
count of tests is the count of variants, not of modes. The mode picked is the first of the
variant in the enumerated path's order (`first_mode`), so a conversion names the mode the
enumerated path names.

The conversion rewrites the model as the enumerated path does (`convert_block`: the new
equation guarded by the values at m of the guards the block's equations read, which are the
variant's branch formulas), and the implicit analysis runs again on the converted model,
until no variant is singular. A dependency that cannot be converted rejects the model with the
enumerated path's message, naming m, followed by the formula of the variant's modes.

Not checked (a singularity there shows at run time, as before the check existed): coarse
blocks (union components the implicit analysis does not split per mode,
`ConditionalBlock.coarse`, whose per-mode blocks have no formula), blocks of more than
`MAX_SAMPLED_BLOCK` equations (as on the enumerated path), and the variants of a block beyond
`MAX_BLOCK_VARIANTS`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any  # BDD nodes of the optional, untyped dd package

from ..ir import Equation, GuardLiteral, Model
from ..structure.conversion import (MAX_CONVERSIONS, MAX_SAMPLED_BLOCK, Conversion,
                                    DependencyRejected, Finding, SingularityCheck, convert_block)
from ..structure.per_mode import classify_variables, mode_name
from ..structure.signature import signature_row
from ..structure.system_jacobian import BlockSystem
from .analysis import ImplicitAnalysis, analyze_implicit, branch_residuals
from .blocks import ConditionalBlock

#: Variants of one block tested before the rest of its modes are left unchecked (each test
#: picks a mode and builds the block there: a block whose equations read many independent
#: guards can have exponentially many variants).
MAX_BLOCK_VARIANTS = 256


@dataclass(frozen=True)
class SingularVariant:
    """A block variant whose Jacobian is singular at two random points: ``finding`` the block
    at one mode of the variant (what `convert_block` converts), ``formula`` (a BDD of the
    analysis' `GuardSpace`) the modes of the variant."""
    finding: Finding
    formula: Any


@dataclass(frozen=True)
class GuardedRepair:
    """The outcome of `convert_guarded`: the model to go on with and its implicit analysis
    (the inputs themselves when nothing was converted, and on a rejection), the conversions
    made, in order, and the rejections (exit code 1) of dependencies that could not be
    converted, each with the formula of its modes."""
    model: Model
    analysis: ImplicitAnalysis
    conversions: tuple[Conversion, ...] = ()
    rejections: tuple[str, ...] = ()


def singular_variants(model: Model, ia: ImplicitAnalysis) -> Iterator[SingularVariant]:
    """The variants of the blocks of ``ia`` (the implicit analysis of ``model``) that the
    numerical test finds singular (module docstring), in block order. A variant equal to
    one already tested (the same residuals, offsets and columns) is not tested again."""
    if not ia.ok:
        return
    space = ia.space
    bdd = space.bdd
    order = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    where = _Where(rows={r: i for i, r in enumerate(ia.graph.rows)},
                   cols={c: j for j, c in enumerate(ia.graph.cols)},
                   equations={eq.id: eq for eq in model.equations})
    check = SingularityCheck(classify_variables(model).types)
    seen: set[tuple[Any, ...]] = set()
    for blk in ia.blocks:
        if blk.coarse or len(blk.equations) > MAX_SAMPLED_BLOCK:
            continue
        remaining = blk.formula
        for _ in range(MAX_BLOCK_VARIANTS):
            if remaining == bdd.false:
                break
            asg = first_mode(bdd, remaining, order)
            v = _variant(ia, blk, where, asg)
            remaining &= ~v.formula
            key = (tuple(id(r) for r in v.system.residuals), v.system.offsets,
                   v.system.columns)
            if key in seen:
                continue
            seen.add(key)
            if check.suspect(v.system, check.points()):
                literals = tuple(GuardLiteral(cond=a, positive=asg[space.var_of[a]])
                                 for a in space.atoms)
                finding = Finding(mode=mode_name(space.mode_pairs(asg)), block=v.system,
                                  equations=v.equations, d=v.d, literals=literals)
                yield SingularVariant(finding=finding, formula=v.formula)


def first_mode(bdd: Any, formula: Any, order: Mapping[str, int]) -> dict[str, bool]:
    """The first mode of ``formula`` (not false) in the order the enumerated path lists the
    modes (`mdae_fmu.structure.valuations.enumerate_valuations`: the guards in order, true
    before false), as an assignment of the BDD variables ``order`` (each with its guard's
    rank), so that both paths name the same mode. Only the variables the formula reads are
    decided one by one; the others are true."""
    asg = dict.fromkeys(order, True)
    for v in sorted((v for v in bdd.support(formula) if v in order), key=order.__getitem__):
        high = bdd.let({v: True}, formula)
        asg[v] = high != bdd.false
        formula = high if asg[v] else bdd.let({v: False}, formula)
    return asg


@dataclass(frozen=True)
class _Where:
    """Where `_variant` reads an equation: its row of the analysis' graph, its column (of
    an unknown), the model's equation (by id)."""
    rows: Mapping[str, int]
    cols: Mapping[str, int]
    equations: Mapping[str, Equation]


@dataclass(frozen=True)
class _Variant:
    """A block variant (module docstring): its ``formula``, the block at one of its modes
    (``system``, the specialized ``equations``) and the offsets ``d`` of the unknowns its
    equations read."""
    formula: Any
    system: BlockSystem
    equations: tuple[Equation, ...]
    d: Mapping[str, int]


def _variant(ia: ImplicitAnalysis, blk: ConditionalBlock, where: _Where,
             asg: Mapping[str, bool]) -> _Variant:
    """The variant of ``blk`` that holds the mode ``asg`` (module docstring)."""
    space = ia.space
    bdd = space.bdd

    def holds(f: Any) -> bool:
        return bool(bdd.let(asg, f) == bdd.true)

    def fix(case: dict[int, Any]) -> tuple[int, Any]:
        """The value of an offset case at the mode and its formula."""
        return next((v, f) for v, f in case.items() if holds(f))

    formula = blk.formula
    equations, offsets = [], []
    read: dict[str, None] = dict.fromkeys(blk.unknowns)
    for eq_id in blk.equations:
        eq = where.equations[eq_id]
        residual = eq.residual
        for bf, res in branch_residuals(space, eq.residual, space.care):
            if holds(bf):
                formula &= bf
                residual = res
                break
        equations.append(Equation(id=eq.id, residual=residual, guard=(), loc=eq.loc))
        c, fc = fix(ia.c[where.rows[eq_id]])
        formula &= fc
        offsets.append(c)
        read.update(dict.fromkeys(n for n in signature_row(residual) if n in where.cols))
    d: dict[str, int] = {}
    for name in read:
        d[name], fd = fix(ia.d[where.cols[name]])
        formula &= fd
    system = BlockSystem(equations=blk.equations,
                         residuals=tuple(eq.residual for eq in equations),
                         offsets=tuple(offsets),
                         columns=tuple((name, d[name]) for name in blk.unknowns))
    return _Variant(formula=formula, system=system, equations=tuple(equations), d=d)


def convert_guarded(model: Model, ia: ImplicitAnalysis) -> GuardedRepair:
    """Convert the singular block variants of ``ia``, the implicit analysis of ``model``,
    running the implicit analysis again after each conversion, until none is left (module
    docstring); the model is rejected, with the formula of the variant's modes, at the first
    dependency that cannot be converted. Pure: ``model`` is not modified. A structurally
    singular analysis (``not ia.ok``) is returned as it is: its verdict comes first."""
    current, analysis = model, ia
    done: list[Conversion] = []
    for _ in range(MAX_CONVERSIONS):
        step = None
        for found in singular_variants(current, analysis):
            try:
                step = convert_block(current, found.finding)
            except DependencyRejected as err:
                return GuardedRepair(model=model, analysis=ia, conversions=tuple(done),
                                     rejections=(str(err) + _modes_text(analysis, found),))
            if step is not None:
                break
        if step is None:
            return GuardedRepair(model=current, analysis=analysis, conversions=tuple(done))
        current, conv = step
        done.append(conv)
        analysis = analyze_implicit(current)
    return GuardedRepair(model=model, analysis=ia, conversions=tuple(done), rejections=(
        f"model {model.name}: {MAX_CONVERSIONS} conversions of numerically singular "
        "blocks did not leave a regular system",))


def _modes_text(ia: ImplicitAnalysis, found: SingularVariant) -> str:
    """The line after a rejection's message: ``singular for all values in N of M modes:
    <formula>``; nothing for a model without guards (its one mode is the model)."""
    space = ia.space
    if not space.atoms:
        return ""
    return (f"\n  singular for all values in {space.count(found.formula)} of {ia.n_modes} "
            f"modes: {space.text(found.formula)}")


__all__ = ["GuardedRepair", "SingularVariant", "convert_guarded", "first_mode",
           "singular_variants", "MAX_BLOCK_VARIANTS"]
