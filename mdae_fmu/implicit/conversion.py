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
enumerated path's message, naming m, followed by the formula of the variant's modes. Blocks are
tested in the order of their equations, not in a mode's solve order as on the enumerated path:
when a conversion leaves the model structurally singular, the variants that the same pass had
not yet tested are tested before that verdict, and a dependency among them that cannot be
converted rejects the model instead (the enumerated path's message: two clutches between the
same shafts, both engaged, have redundant speeds, which the enumerated path meets first, and
an undetermined split of their torques, which it never reaches).

A *coarse* block (a union component the implicit analysis does not split per mode,
`ConditionalBlock.coarse`: more than 64 equations, or too many per-mode blocks for the
schedule) is block-triangular in each mode with the mode's per-mode blocks on its diagonal,
so it is singular for all values exactly where one of them is (docs/theory.md §10.13): its
distinct per-mode blocks, each with the formula of the modes where it is one
(`mdae_fmu.implicit.blocks.component_blocks`, the split of the schedule with a budget of the
check's own: `MAX_SPLIT_MEMBERS`, `MAX_SPLIT_BLOCKS`, `MAX_SPLIT_SIZE`, `MAX_SPLIT_NODES`), are
tested as blocks,
variant by variant. Before that, the *interface certificate* (`_interface_certificate`,
docs/theory.md §10.15) decides every mode at once when the block's switched rows (those whose
presence, branch or offset changes with the mode) each have one unknown of their own: the
Schur complement of those rows over the others, at a sampled point, is a matrix whose rows
are chosen per mode among a pin and one active row; when its symmetric part is definite no
mode has a singular diagonal block, except the modes where an active row vanishes, which
are split at their first mode and tested with the formula of exactly the modes of each
singular block (`_zero_modes`, `mdae_fmu.implicit.blocks.block_formula`). The drive lines
and shaft trees of any size are checked so, with no per-mode block listed. Where it does not
apply and beyond the split's budget (`_sampled_coarse`) its variants are found at modes
(`_coarse_parts`): at a mode m picked in what is left of its formula, the per-mode blocks of
the component are the strongly connected components of its dependency graph at m
(docs/theory.md §4.4: equation i depends on the equation assigned the unknown on which i has a
tight entry), and the *coarse variant* of m is the set of modes of the block's formula where
the guards read by what that graph and its blocks are made of take their values at m: the
formulas, among those that are not constant in the block's formula, of which equations exist,
which unknown each is assigned, the offsets c of the equations and d of the unknowns they
read, which signature entries exist and which residual branch each equation takes. In every
mode of it the component splits into the same blocks with the same residuals, each of which
is then tested as a variant of its own (`_variant`).

Not checked (a singularity there shows at run time, as before the check existed): blocks of
more than `MAX_SAMPLED_BLOCK` equations (as on the enumerated path, which does not test them
either), the variants of a block beyond `MAX_BLOCK_VARIANTS`, and, for a coarse block beyond
the split's budget that the certificate does not decide, the coarse variants beyond
`MAX_COARSE_VARIANTS` (the first ones in the
enumerated path's order of the modes). The last two are work budgets, not verdicts: the modes
they leave are named by the warning W-SINGULAR-UNCHECKED (`GuardedRepair.warnings`), never
left out silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any  # BDD nodes of the optional, untyped dd package

from ..ir import Equation, GuardLiteral, Model
from ..structure.conversion import (MAX_SAMPLED_BLOCK, Conversion, conversion_limit,
                                    DependencyRejected, Finding, SingularityCheck, convert_block)
from ..structure.per_mode import classify_variables, mode_name
from ..structure.signature import signature_row
from ..structure.system_jacobian import BlockSystem, NotEvaluable, Point, sample
from .analysis import ImplicitAnalysis, analyze_implicit, branch_residuals
from .blocks import ConditionalBlock, block_formula, component_blocks
from .formulas import conj

#: Variants of one block tested before the rest of its modes are left unchecked (each test
#: picks a mode and builds the block there: a block whose equations read many independent
#: guards can have exponentially many variants).
MAX_BLOCK_VARIANTS = 256

#: Coarse variants of one coarse block tested (each splits a component of up to hundreds of
#: equations at one mode, about 20 ms at 200 equations: a drive line of 50 clutches has a
#: coarse variant per mode, and 256 of them would add 5 s to its analysis).
MAX_COARSE_VARIANTS = 32

#: The budget of the split of a coarse block into its per-mode blocks for the check
#: (`mdae_fmu.implicit.blocks.component_blocks`, docs/theory.md §10.13): the equations of the
#: component (its labelled reachability has a formula per pair of them: about 2 s of CPU at
#: 121 equations, the drive line of 30 clutches, 9 s at 201), then its distinct blocks and
#: their equations added up (a chain of n switched couplings has O(n^2) blocks of O(n)
#: equations: the drive line of 30 clutches 556 blocks, 20 396 equations; of 50, 1 426 and
#: 89 826).
MAX_SPLIT_MEMBERS = 128
MAX_SPLIT_BLOCKS = 1024
MAX_SPLIT_SIZE = 50_000
#: ... and the BDD nodes its formulas add (the drive line of 30 clutches about 6 500; a tree of
#: 16 or 30 switched shafts, whose connected subtrees are blocks, goes past it early)
MAX_SPLIT_NODES = 12_000

#: The interface certificate of a coarse block (`_interface_certificate`, docs/theory.md
#: §10.15) holds a dense row per row whose structure changes with the mode (the switched
#: couplings: a drive line of n clutches has n, 0.3 s of CPU at n = 400): beyond this many
#: it is not tried.
MAX_INTERFACE_ROWS = 2000

#: An entry of the interface matrix below this fraction of its row's scale is zero (the
#: tolerance of the sampled test, `mdae_fmu.structure.system_jacobian.SINGULAR_RATIO`), and the
#: symmetric part is definite when its eigenvalues keep one sign above this fraction of the
#: largest one.
_INTERFACE_RATIO = 1e-9
#: The seed of the certificate's point (`mdae_fmu.structure.system_jacobian.Point`).
_CERTIFICATE_SEED = 4114


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
    #: W-SINGULAR-UNCHECKED: the modes of a block or coarse block left untested beyond
    #: `MAX_BLOCK_VARIANTS` / `MAX_COARSE_VARIANTS` (`unchecked_warning`)
    warnings: tuple[str, ...] = ()


def singular_variants(model: Model, ia: ImplicitAnalysis,
                      unchecked: list[tuple[ConditionalBlock, Any]] | None = None
                      ) -> Iterator[SingularVariant]:
    """The variants of the blocks of ``ia`` (the implicit analysis of ``model``) that the
    numerical test finds singular (module docstring), in block order. A variant equal to
    one already tested (the same residuals, offsets and columns) is not tested again.
    A coarse block is tested by its per-mode blocks (`component_blocks`, docs/theory.md
    §10.13), or beyond the split's budget by coarse variants (`_sampled_coarse`).
    ``unchecked``: gets ``(block, formula)`` for each block whose modes of ``formula`` were
    not tested, beyond `MAX_BLOCK_VARIANTS` (`MAX_COARSE_VARIANTS` for a coarse block)."""
    if not ia.ok:
        return
    space = ia.space
    bdd = space.bdd
    order = {space.var_of[a]: k for k, a in enumerate(space.atoms)}
    where = _Where(rows={r: i for i, r in enumerate(ia.graph.rows)},
                   cols={c: j for j, c in enumerate(ia.graph.cols)},
                   equations={eq.id: eq for eq in model.equations},
                   has_if={eq.id: bool(ifs)
                           for eq, ifs in zip(model.equations, model.if_conditions)})
    check = SingularityCheck(classify_variables(model).types)
    points = check.points()     # (one pair of sample points for all blocks, as per mode)
    seen: set[tuple[Any, ...]] = set()

    def test(part: ConditionalBlock, asg: dict[str, bool], narrow: bool
             ) -> tuple[Any, SingularVariant | None]:
        """The variant of ``part`` at ``asg`` (its formula) and what the numerical test
        finds there (None: regular, too large to sample or tested already)."""
        v = _variant(ia, part, where, asg, narrow=narrow)
        if len(part.equations) > MAX_SAMPLED_BLOCK:
            return v.formula, None
        key = (tuple(id(r) for r in v.system.residuals), v.system.offsets, v.system.columns)
        if key in seen:
            return v.formula, None
        seen.add(key)
        if not check.suspect(v.system, points):
            return v.formula, None
        literals = tuple(GuardLiteral(cond=a, positive=asg[space.var_of[a]])
                         for a in space.atoms)
        finding = Finding(mode=mode_name(space.mode_pairs(asg)), block=v.system,
                          equations=v.equations, d=v.d, literals=literals)
        return v.formula, SingularVariant(finding=finding, formula=v.formula)

    cert_point: Point | None = None
    for blk in ia.blocks:
        cert = None
        if not blk.coarse:
            parts: list[ConditionalBlock] | None = [blk]
        else:
            if cert_point is None:      # (a point of its own: the others' draws unchanged)
                cert_point = Point(_CERTIFICATE_SEED, check.types)
            cert = _interface_certificate(ia, blk, where, cert_point)
            if cert is not None and cert.zero == bdd.false:
                continue
            parts = (component_blocks(ia, blk.equations, max_blocks=MAX_SPLIT_BLOCKS,
                                      max_size=MAX_SPLIT_SIZE, max_nodes=MAX_SPLIT_NODES)
                     if len(blk.equations) <= MAX_SPLIT_MEMBERS else None)
        if parts is None:
            if cert is not None:
                yield from _zero_modes(ia, blk, where, order, cert.zero, check, points, test,
                                       unchecked)
            else:
                yield from _sampled_coarse(ia, blk, where, order, test, unchecked)
            continue
        for part in parts:
            if len(part.equations) > MAX_SAMPLED_BLOCK:
                continue
            remaining = part.formula
            for _ in range(MAX_BLOCK_VARIANTS):
                if remaining == bdd.false:
                    break
                formula, found = test(part, first_mode(bdd, remaining, order), True)
                remaining &= ~formula
                if found is not None:
                    yield found
            if remaining != bdd.false and unchecked is not None:
                unchecked.append((part, remaining))


def _sampled_coarse(ia: ImplicitAnalysis, blk: ConditionalBlock, where: _Where,
                    order: Mapping[str, int],
                    test: Callable[[ConditionalBlock, dict[str, bool], bool],
                                   tuple[Any, SingularVariant | None]],
                    unchecked: list[tuple[ConditionalBlock, Any]] | None
                    ) -> Iterator[SingularVariant]:
    """`singular_variants` of a coarse block whose per-mode blocks are beyond the split's
    budget (`MAX_SPLIT_BLOCKS`, `MAX_SPLIT_SIZE`): its blocks at the first mode of each of
    up to `MAX_COARSE_VARIANTS` coarse variants (module docstring), by ``test``; the modes
    left go to ``unchecked``."""
    bdd = ia.space.bdd
    remaining = blk.formula
    varying: dict[Any, frozenset[str]] = {}
    for _ in range(MAX_COARSE_VARIANTS):
        if remaining == bdd.false:
            break
        asg = first_mode(bdd, remaining, order)
        within, parts = _coarse_parts(ia, blk, where, asg, varying)
        remaining &= ~within
        for part in parts:
            if len(part.equations) <= MAX_SAMPLED_BLOCK:
                found = test(part, asg, False)[1]
                if found is not None:
                    yield found
    if remaining != bdd.false and unchecked is not None:
        unchecked.append((blk, remaining))


@dataclass(frozen=True)
class _Certificate:
    """The outcome of `_interface_certificate`: the modes of the coarse block where it is
    not shown regular, ``zero`` (a BDD: the modes of the variants whose interface row
    vanishes; false when the whole block is regular in every mode)."""
    zero: Any


def _interface_certificate(ia: ImplicitAnalysis, blk: ConditionalBlock, where: _Where,
                           point: Any) -> _Certificate | None:
    """Whether the coarse block ``blk`` has no diagonal block singular for all values in any
    of its modes, decided at the sampled ``point`` without listing its per-mode blocks
    (docs/theory.md §10.15): None when the block is not of the form the theorem reads (some
    switched row; the others present in all of its modes with one branch and offset; each
    switched row present throughout with one unknown, or exactly where an unknown of its own
    is solved; the columns at fixed orders; at most one active interface row per switched
    row; the fixed rows regular on their columns) or the symmetric part of the interface
    matrix is not definite; otherwise the modes where an interface row vanishes (each a
    singular mode), the rest regular."""
    from scipy.sparse import csc_matrix, csr_matrix
    from scipy.sparse.linalg import splu, spsolve
    import numpy as np
    bdd = ia.space.bdd
    F = bdd.false
    g = ia.graph
    scope = blk.formula
    members = [where.rows[e] for e in blk.equations]
    fixed: list[tuple[int, Any, int]] = []              # (row, residual, c)
    switched: list[tuple[int, Any, list[tuple[Any, Any, int]]]] = []  # row, presence, variants
    assigned: dict[int, Any] = {}                       # column -> the modes it is solved in
    for i in members:
        present = g.present[i] & scope
        cs = [(v, f & scope) for v, f in ia.c[i].items() if f & present != F]
        bs = [(bf & scope, res) for bf, res in where.branches_of(ia, g.rows[i])
              if bf & present != F]
        for j, f in ia.match[i].items():
            if f & scope != F:
                assigned[j] = assigned.get(j, F) | (f & scope)
        if present == scope and len(cs) == 1 and len(bs) == 1:
            fixed.append((i, bs[0][1], cs[0][0]))
            continue
        variants = [(fb & fc & present, res, c) for fb, res in bs for c, fc in cs
                    if fb & fc & present != F]
        switched.append((i, present, variants))
    if not switched or len(assigned) != len(members) or len(switched) > MAX_INTERFACE_ROWS:
        return None             # (one structure in every mode: `_sampled_coarse` tests it once)
    # sigma: the column of each switched row, solved exactly where the row is (its pin
    # where the row is absent), or for a row present in every mode its one assigned column
    by_modes: dict[Any, list[int]] = {}
    for j, f in assigned.items():
        if f != scope:
            by_modes.setdefault(f, []).append(j)
    sigma: list[int] = []
    for i, present, _ in switched:
        if present != scope:
            free = by_modes.get(present)
            if not free:
                return None
            sigma.append(free.pop(0))
        else:
            js = [j for j, f in ia.match[i].items() if f & scope != F]
            if len(js) != 1 or assigned[js[0]] != scope:
                return None
            sigma.append(js[0])
    if any(by_modes.values()) or len(set(sigma)) != len(sigma):
        return None
    d: dict[int, int] = {}
    for j in assigned:
        ds = [v for v, f in ia.d[j].items() if f & assigned[j] != F]
        if len(ds) != 1:
            return None
        d[j] = ds[0]
    rest = sigma
    own = [j for j in assigned if j not in set(sigma)]
    order = own + rest
    cols = tuple((g.cols[j], d[j]) for j in order)
    rows = [(g.rows[i], res, c) for i, res, c in fixed]
    rows += [(g.rows[i], res, c) for i, _, variants in switched for _, res, c in variants]
    # each row sampled over the columns it reads (one system of all the rows would seed every
    # column in every row: quadratic in the block)
    at = {name: k for k, (name, _) in enumerate(cols)}
    jac = np.zeros((len(rows), len(cols)))
    for r, (eq_id, res, c) in enumerate(rows):
        reads = [at[n] for n in dict.fromkeys(signature_row(res)) if n in at]
        one = BlockSystem(equations=(eq_id,), residuals=(res,), offsets=(c,),
                          columns=tuple(cols[k] for k in reads))
        try:
            jac[r, reads] = sample(one, point)[0]
        except NotEvaluable:
            return None
    n_f = len(fixed)
    w_ptr, w_col, w_val = np.zeros(n_f + 1, dtype=int), np.zeros(0, dtype=int), np.zeros(0)
    if n_f:
        a = csc_matrix(jac[:n_f, :n_f])
        try:
            lu = splu(a)
        except RuntimeError:            # (exactly singular)
            return None
        pivots = np.abs(lu.U.diagonal())
        if not pivots.min() > _INTERFACE_RATIO * pivots.max():
            return None
        if rest:
            # W = A^-1 J[R, sigma(G)], sparse (a coupling moves a few unknowns of its cells;
            # one right-hand side at a time: SuperLU's dense block solve is far slower)
            w = csr_matrix(spsolve(a, csc_matrix(jac[:n_f, n_f:])).reshape(n_f, len(rest)))
            w_ptr, w_col, w_val = w.indptr, w.indices, w.data
    scale_w = max(1.0, float(np.abs(w_val).max())) if w_val.size else 1.0
    active: list[Any] = []              # per switched row: its interface row (or None)
    zero = F
    k = n_f
    for n_k, (_, _, variants) in enumerate(switched):
        act = None
        for f, _, _ in variants:
            u = jac[k]
            k += 1
            row = u[n_f:].copy()
            for col in np.flatnonzero(u[:n_f]):    # (a switched row reads few fixed columns)
                p0, p1 = w_ptr[col], w_ptr[col + 1]
                row[w_col[p0:p1]] -= u[col] * w_val[p0:p1]
            scale = max(float(np.abs(u).max()), 1e-300) * scale_w
            big = np.flatnonzero(np.abs(row) > _INTERFACE_RATIO * scale)
            if len(big) == 0:
                zero |= f
            elif len(big) == 1 and int(big[0]) == n_k:
                continue                # (a pin of its own column, as where it is absent)
            else:
                if act is not None and not np.array_equal(act, row):
                    return None
                act = row
        active.append(act)
    keep = [k for k, a in enumerate(active) if a is not None]
    if keep:
        # the symmetric part of M definite: its LDL^T pivots (no pivoting, the leading
        # principal minors' ratios, Sylvester's criterion) all of one sign
        m_rows, m_cols, m_vals = [], [], []
        for r, k2 in enumerate(keep):
            row = active[k2][keep]
            nz = np.flatnonzero(row)
            m_rows.append(np.full(len(nz), r))
            m_cols.append(nz)
            m_vals.append(row[nz])
        m = csc_matrix((np.concatenate(m_vals), (np.concatenate(m_rows),
                                                 np.concatenate(m_cols))),
                       shape=(len(keep), len(keep)))
        sym = ((m + m.T) / 2).tocsc()
        top = float(abs(sym).max())
        try:
            ldl = splu(sym, permc_spec="NATURAL", diag_pivot_thresh=0.0,
                       options={"SymmetricMode": True})
        except RuntimeError:            # (a zero pivot)
            return None
        if np.any(ldl.perm_r != np.arange(len(keep))):
            return None
        pivots = ldl.U.diagonal()
        if not (pivots.min() > _INTERFACE_RATIO * top
                or pivots.max() < -_INTERFACE_RATIO * top):
            return None
    return _Certificate(zero=zero)


def _zero_modes(ia: ImplicitAnalysis, blk: ConditionalBlock, where: _Where,
                order: Mapping[str, int], zero: Any, check: SingularityCheck,
                points: Sequence[Any],
                test: Callable[[ConditionalBlock, dict[str, bool], bool],
                               tuple[Any, SingularVariant | None]],
                unchecked: list[tuple[ConditionalBlock, Any]] | None
                ) -> Iterator[SingularVariant]:
    """`singular_variants` of a coarse block beyond the split's budget whose interface
    certificate leaves the modes ``zero`` (docs/theory.md §10.15: each has a singular
    diagonal block): at the first mode of what is left of them, the per-mode blocks of the
    component (`_coarse_parts`); each that the numerical test finds singular is tested as a
    block with the formula of exactly the modes where it is a diagonal block
    (`mdae_fmu.implicit.blocks.block_formula`), as the split would give it. Up to
    `MAX_COARSE_VARIANTS` modes; the modes left go to ``unchecked``."""
    bdd = ia.space.bdd
    remaining = zero
    for _ in range(MAX_COARSE_VARIANTS):
        if remaining == bdd.false:
            break
        asg = first_mode(bdd, remaining, order)
        within, parts = _coarse_parts(ia, blk, where, asg, {})
        remaining &= ~within
        for part in parts:
            if len(part.equations) > MAX_SAMPLED_BLOCK:
                continue
            v = _variant(ia, part, where, asg, narrow=False)
            if not check.suspect(v.system, points):
                continue
            exact = ConditionalBlock(equations=part.equations, unknowns=part.unknowns,
                                     formula=block_formula(ia, blk.equations, part.equations,
                                                           part.unknowns))
            formula, found = test(exact, asg, True)
            remaining &= ~formula
            if found is not None:
                yield found
    if remaining != bdd.false and unchecked is not None:
        unchecked.append((blk, remaining))


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
    #: whether the residual of an equation has if-expressions (`Model.if_conditions`)
    has_if: Mapping[str, bool]
    #: the residual branches of an equation (`branch_residuals`), made at its first use
    branches: dict[str, list[tuple[Any, Any]]] = field(default_factory=dict)

    def branches_of(self, ia: ImplicitAnalysis, eq_id: str) -> list[tuple[Any, Any]]:
        """``[(branch formula, residual)]`` of the equation ``eq_id``."""
        found = self.branches.get(eq_id)
        if found is None:
            residual = self.equations[eq_id].residual
            found = self.branches[eq_id] = (
                branch_residuals(ia.space, residual, ia.space.care) if self.has_if[eq_id]
                else [(ia.space.care, residual)])
        return found


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
             asg: Mapping[str, bool], narrow: bool = True) -> _Variant:
    """The variant of ``blk`` that holds the mode ``asg`` (module docstring); with
    ``narrow`` false its formula is ``blk.formula`` (a coarse variant, which fixes already
    what the block's variant fixes)."""
    holds = value_at(ia.space.bdd, asg)

    def fix(case: dict[int, Any]) -> tuple[int, Any]:
        """The value of an offset case at the mode and its formula."""
        return next((v, f) for v, f in case.items() if holds(f))

    formula = blk.formula
    fixed = []                  # the formulas the variant keeps
    equations, offsets = [], []
    read: dict[str, None] = dict.fromkeys(blk.unknowns)
    for eq_id in blk.equations:
        eq = where.equations[eq_id]
        residual = eq.residual
        for bf, res in where.branches_of(ia, eq_id):
            if holds(bf):
                fixed.append(bf)
                residual = res
                break
        equations.append(Equation(id=eq.id, residual=residual, guard=(), loc=eq.loc))
        c, fc = fix(ia.c[where.rows[eq_id]])
        fixed.append(fc)
        offsets.append(c)
        read.update(dict.fromkeys(n for n in signature_row(residual) if n in where.cols))
    d: dict[str, int] = {}
    for name in read:
        d[name], fd = fix(ia.d[where.cols[name]])
        fixed.append(fd)
    if narrow:
        for f in dict.fromkeys(fixed):      # (the same formula once: a conjunction each)
            formula = conj(formula, f)
    system = BlockSystem(equations=blk.equations,
                         residuals=tuple(eq.residual for eq in equations),
                         offsets=tuple(offsets),
                         columns=tuple((name, d[name]) for name in blk.unknowns))
    return _Variant(formula=formula, system=system, equations=tuple(equations), d=d)


def _coarse_parts(ia: ImplicitAnalysis, blk: ConditionalBlock, where: _Where,
                  asg: Mapping[str, bool], varying: dict[Any, frozenset[str]]
                  ) -> tuple[Any, list[ConditionalBlock]]:
    """The coarse variant of the mode ``asg`` in the coarse block ``blk`` and the per-mode
    blocks of the component in it (module docstring), in solve order; each block's formula is
    the coarse variant. Only what changes inside ``blk.formula`` narrows the variant
    (``varying``: the guards each formula reads if it does, remembered across the modes of
    one block)."""
    import networkx as nx   # (imported on use, as in `mdae_fmu.implicit.blocks`)
    bdd = ia.space.bdd
    g = ia.graph
    scope = blk.formula
    supports = _varies(bdd, scope, varying)
    at_mode = value_at(bdd, asg)
    kept: dict[Any, bool] = {}          # the formulas that vary, with their value at the mode

    def narrow(f: Any) -> bool:
        """Whether ``f`` holds at the mode; the variant keeps its value there."""
        holds = kept.get(f)
        if holds is None:
            holds = at_mode(f)
            if supports(f):
                kept[f] = holds
        return holds

    def value(case: Mapping[int, Any]) -> int:
        return next(v for v, f in case.items() if narrow(f))

    members = [where.rows[e] for e in blk.equations]
    assigned: dict[int, int] = {}           # row -> its unknown at the mode
    for i in members:
        if not narrow(g.present[i]):
            continue
        # (the residual branch at the mode: its formula's guards enter the variant)
        next((bf for bf, _ in where.branches_of(ia, g.rows[i]) if narrow(bf)), None)
        assigned[i] = next(j for j, f in ia.match[i].items() if narrow(f))
    owner = {j: i for i, j in assigned.items()}
    d: dict[int, int] = {}
    graph = nx.DiGraph()
    graph.add_nodes_from(assigned)
    for i in assigned:
        c = value(ia.c[i])
        for j, cell in g.sig[i].items():
            if j not in d:
                d[j] = value(ia.d[j])
            if any(narrow(fs) and d[j] - c == s for s, fs in cell.items()) \
                    and owner.get(j, i) != i:
                graph.add_edge(i, owner[j])
    # the values at the mode of the guards these formulas read (cheaper than their
    # conjunction, and within it)
    support: set[str] = set()
    for f in kept:
        support |= supports(f)
    within = scope & bdd.cube({v: asg[v] for v in support})
    cond = nx.condensation(graph)
    parts = []
    # an edge i -> i2: i reads the unknown of i2, so i2's component is solved first
    for comp in reversed(list(nx.topological_sort(cond))):
        rows = sorted(cond.nodes[comp]["members"])
        parts.append(ConditionalBlock(equations=tuple(g.rows[i] for i in rows),
                                      unknowns=tuple(g.cols[j] for j in
                                                     sorted(assigned[i] for i in rows)),
                                      formula=within))
    return within, parts


def value_at(bdd: Any, asg: Mapping[str, bool]) -> Callable[[Any], bool]:
    """Whether a formula holds at the mode ``asg`` (a value for every variable of ``bdd``):
    the path from its root through the manager's nodes (complement edges: a negative
    reference complements its children), without building a BDD as ``bdd.let`` does."""
    at: dict[int, bool] = {}

    def holds(f: Any) -> bool:
        m = f.manager
        if not at:
            at.update((m.level_of_var(v), x) for v, x in asg.items())
        r = f.node
        true, false = m.true, m.false
        while r != true and r != false:
            level, low, high = m.succ(r)
            r = (high if at[level] else low) * (-1 if r < 0 else 1)
        return bool(r == true)
    return holds


def _varies(bdd: Any, scope: Any, memo: dict[Any, frozenset[str]]
            ) -> Callable[[Any], frozenset[str]]:
    """The variables a formula reads (`bdd.support`) if it is neither false nor true
    everywhere in ``scope``, else none (remembered in ``memo``)."""
    def varies(f: Any) -> frozenset[str]:
        known = memo.get(f)
        if known is None:
            part = f & scope
            known = memo[f] = (frozenset(bdd.support(f)) if part != bdd.false
                               and part != scope else frozenset())
        return known
    return varies


def convert_guarded(model: Model, ia: ImplicitAnalysis) -> GuardedRepair:
    """Convert the singular block variants of ``ia``, the implicit analysis of ``model``,
    running the implicit analysis again after each conversion, until none is left (module
    docstring); the model is rejected, with the formula of the variant's modes, at the first
    dependency that cannot be converted, or at one left in the pass of a conversion after
    which the model is structurally singular. Pure: ``model`` is not modified. A structurally
    singular analysis (``not ia.ok``) is returned as it is: its verdict comes first."""
    current, analysis = model, ia
    done: list[Conversion] = []
    limit = conversion_limit(model)
    while True:
        step = None
        unchecked: list[tuple[ConditionalBlock, Any]] = []
        variants = singular_variants(current, analysis, unchecked)
        for found in variants:
            try:
                step = convert_block(current, found.finding)
            except DependencyRejected as err:
                return GuardedRepair(model=model, analysis=ia, conversions=tuple(done),
                                     rejections=(str(err) + _modes_text(analysis, found),))
            if step is not None:
                break
        if step is None:
            return GuardedRepair(model=current, analysis=analysis, conversions=tuple(done),
                                 warnings=tuple(unchecked_warning(analysis, blk, f)
                                                for blk, f in unchecked))
        if len(done) == limit:
            break
        converted = analyze_implicit(step[0])
        if not converted.ok:
            # structurally singular after the conversion: a dependency left in this pass
            # that cannot be converted is the verdict (module docstring)
            for found in variants:
                try:
                    convert_block(current, found.finding)
                except DependencyRejected as err:
                    return GuardedRepair(model=model, analysis=ia, conversions=tuple(done),
                                         rejections=(str(err) + _modes_text(analysis, found),))
        current, conv = step
        done.append(conv)
        analysis = converted
    return GuardedRepair(model=model, analysis=ia, conversions=tuple(done), rejections=(
        f"model {model.name}: {limit} conversions of numerically singular "
        "blocks did not leave a regular system",))


def unchecked_warning(ia: ImplicitAnalysis, blk: ConditionalBlock, formula: Any) -> str:
    """W-SINGULAR-UNCHECKED: the modes of ``formula`` where the block ``blk`` of ``ia`` was not
    tested for singularity for all values (`singular_variants` beyond its work budget)."""
    space = ia.space
    first = ", ".join(blk.equations[:3]) + (", ..." if len(blk.equations) > 3 else "")
    if blk.coarse:
        kind, bound = "coarse block", MAX_COARSE_VARIANTS
        why = (f" (its per-mode blocks are beyond the budget of the check: more than "
               f"{MAX_SPLIT_MEMBERS} equations, {MAX_SPLIT_BLOCKS} distinct blocks, "
               f"{MAX_SPLIT_SIZE} equations in them or {MAX_SPLIT_NODES} BDD nodes in their "
               f"formulas)")
    else:
        kind, bound, why = "block", MAX_BLOCK_VARIANTS, ""
    return (f"W-SINGULAR-UNCHECKED: the {kind} of {len(blk.equations)} equations {{{first}}}"
            f"{why} was tested for blocks singular for all values in {bound} sets of modes and "
            f"not in the {space.count(formula)} of {ia.n_modes} modes {space.text(formula)} (a "
            f"block singular there shows when the simulation solves it; the model is not "
            f"refused for it)")


def _modes_text(ia: ImplicitAnalysis, found: SingularVariant) -> str:
    """The line after a rejection's message: ``singular for all values in N of M modes:
    <formula>``; nothing for a model without guards (its one mode is the model)."""
    space = ia.space
    if not space.atoms:
        return ""
    return (f"\n  singular for all values in {space.count(found.formula)} of {ia.n_modes} "
            f"modes: {space.text(found.formula)}")


__all__ = ["GuardedRepair", "SingularVariant", "convert_guarded", "first_mode",
           "singular_variants", "unchecked_warning", "value_at", "MAX_BLOCK_VARIANTS",
           "MAX_COARSE_VARIANTS", "MAX_INTERFACE_ROWS", "MAX_SPLIT_BLOCKS",
           "MAX_SPLIT_MEMBERS", "MAX_SPLIT_NODES", "MAX_SPLIT_SIZE"]
