"""The guarded block schedule of a multimode model, as data: every block of every mode with the
formula of the modes where it is a block, its code-fixed variants and their restart systems,
computed once by the analysis from the implicit analysis (`mdae_fmu.implicit.analysis`) and
consumed by code generation (`mdae_fmu.codegen.guarded`), which analyses nothing.

Theory: docs/theory.md §10.2 (the "mDAE interpreter": blocks labelled by guard formulas),
docs/theory.md §11 (per-mode index-reduced system solved by blocks; restart at a mode
change), docs/theory.md §8.1, §8.3, §9 (the restart); the rule for local restarts and its argument
are in docs/decisions.md §9.

`mdae_fmu.implicit.variants.guarded_schedule(model, ia)` splits every (block, formula) of
``ia.blocks`` by the if-branches and offsets of its equations into *variants* whose code is fixed
(`GuardedVariant`: its rows, its formula and its restart system), merges the components with
too many variants into one block whose equations, orders and unknowns selection flags choose
(`mdae_fmu.implicit.merged`), orders the variants so that one order is valid in every mode,
and flattens every formula into one `FormulaTable` (BDD nodes as integers). The result
(`GuardedSchedule`) is plain frozen data: integers, names, expression trees and sympy
expressions, no BDD object, so that it is saved with the `Analysis` (`mdae_fmu.saved`).

Restart of one block variant (the local rule, docs/decisions.md §9). In the block's new-mode
equations the leading unknowns are replaced by what the instant determines: a leading
derivative ``x^(d)`` (d >= 1) by ``(X+ - X-)/h`` with X = x^(d-1) the state it integrates, an
algebraic unknown ``z`` by ``ζ_z/h`` (ζ_z: its integral over the instant, the impulse). An
equation of offset c = 0 is multiplied by h and h -> 0 taken (its bounded terms integrate to
nothing over the instant); an equation of offset c >= 1 is taken at order c - 1 (the
consistency equation, which the right limits satisfy); the lower orders 0 .. c - 2 of such an
equation are solved first, level by level, for the instances they read at the highest order
(the positions first when c = 2: the standardized restart at shift level, then at jet level,
docs/theory.md §9.6), so that the restart rows read the new positions. Outside the block,
the jump of a state ``Y+ - Y-`` already restarted and the impulse ζ_y of an algebraic variable
enter the same way.
The result is square, with the block's Jacobian, so it is solvable exactly when the block is;
a block whose equations are not affine in the 1/h terms (the limit does not exist) is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, not_
from typing import TYPE_CHECKING, Any

from .. import expr as E
from ..structure.per_mode import Instance, ModesReport, eq_label

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from ..lazy_modules import sympy as sp

#: the length of the nonstandard instant in the restart rows (h -> 0); made on first use
#: (`__getattr__`), so that the schedule of a model of one mode imports no sympy
STEP: sp.Symbol


def __getattr__(name: str) -> Any:
    """``STEP``, made when first read (PEP 562)."""
    if name == "STEP":
        step = globals()["STEP"] = sp.Symbol("mdae_h", positive=True)
        return step
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def left_symbol(k: int) -> sp.Symbol:
    """The left limit X- of the k-th state of `GuardedSchedule.states` in restart rows."""
    return sp.Symbol(f"mdae_left_{k}")


def impulse_symbol(j: int) -> sp.Symbol:
    """ζ, the integral over the instant of variable j of `GuardedSchedule.variables`."""
    return sp.Symbol(f"mdae_zeta_{j}")


@dataclass(frozen=True)
class FormulaTable:
    """The BDD nodes of all formulas: node k tests guard ``var[k]`` and continues at
    ``hi[k]`` (true) or ``lo[k]``; -1 is true and -2 false."""
    var: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]

    def holds(self, u: int, bits) -> bool:
        """Whether formula ``u`` holds for the guard values ``bits`` (what the C code's
        ``holds`` computes)."""
        while u >= 0:
            u = self.hi[u] if bits[self.var[u]] else self.lo[u]
        return u == -1

    def paths(self, u: int, names, limit: int) -> list[list[str]] | None:
        """The paths to true of formula ``u``, each as its literals (``g1``, ``not g2``),
        or None when there are more than ``limit`` of them or more than 64 ``limit`` steps
        find them."""
        paths: list[list[str]] = []
        stack: list[tuple[int, list[str]]] = [(u, [])]
        steps = 0
        while stack and len(paths) <= limit:
            steps += 1
            if steps > 64 * limit:
                return None
            node, lits = stack.pop()
            if node == -1:
                paths.append(lits)
            elif node >= 0:
                name = names[self.var[node]]
                stack.append((self.lo[node], lits + [f"not {name}"]))
                stack.append((self.hi[node], lits + [name]))
        return None if len(paths) > limit else paths

    def text(self, u: int, names, limit: int = 8) -> str:
        """Formula ``u`` as a disjunction of its paths to true, ``(g1 and not g2) or (g3)``
        (at most ``limit`` of them, `paths`; else ``(N guard combinations or more)``)."""
        if u < 0:
            return "(every mode)" if u == -1 else "(no mode)"
        paths = self.paths(u, names, limit)
        if paths is None:
            return f"({limit} guard combinations or more)"
        return " or ".join("(" + " and ".join(p) + ")" for p in paths)


def tree_instances(e: E.Expr) -> set[tuple[str, int]]:
    """The instances ``(name, order)`` of an expression tree: ``x``, ``der(x)``, ...;
    the names of parameters and constants included (as `signature_row` reads them)."""
    out: set[tuple[str, int]] = set()
    stack: list[tuple[E.Expr, int]] = [(e, 0)]
    while stack:
        n, k = stack.pop()
        if isinstance(n, E.Der):
            stack.append((n.arg, k + 1))
        elif isinstance(n, E.Ref):
            out.add((n.name, k))
        else:
            stack.extend((c, k) for c in E.children(n))
    return out


@dataclass(frozen=True)
class BlockRows:
    """A square block: ``0 = rows`` solved for ``unknowns`` (sympy symbols of the instances);
    ``tree``: the residual as an expression tree when the block is one undifferentiated
    equation (code generation may solve it on the tree). In a model without guards such a
    block keeps the tree alone (``rows`` empty; `mdae_fmu.implicit.variants._variant`):
    nothing restarts it, and code generation reads the tree."""
    label: str
    unknowns: tuple
    rows: tuple
    tree: E.Expr | None = None
    #: for a restart linear in its unknowns: the factors D of its determinant with the sum of
    #: the magnitudes of their terms, ``(text, D, scale)``; ``|D| <= 1e-13 scale`` at run time
    #: means the restart system is numerically singular (docs/multimode-fmu.md, "Failures")
    singular: tuple = ()
    #: for a restart whose block has an equation of offset c >= 2 (a constraint on positions):
    #: the lower levels of the standardized restart, solved in order before ``rows``
    #: (`mdae_fmu.implicit.variants.restart_levels`), each a `BlockRows` whose rows (the
    #: consistency equations of order j) move its unknowns (the instances they read at the
    #: highest order) by minimum norm
    levels: tuple = ()

    def symbols(self, table=None) -> frozenset:
        """The sympy symbols the rows read; of a block that keeps its tree alone, the
        symbols of the tree's instances in ``table`` (`mdae_fmu.symbolic.SymbolTable`)."""
        if not self.rows and self.tree is not None and table is not None:
            return frozenset(table.sym(n, k) for n, k in tree_instances(self.tree))
        return frozenset().union(*(r.free_symbols for r in self.rows))


@dataclass(frozen=True)
class Selection:
    """The mode-selected parts of a merged block: ``top`` and ``restart`` are
    ``(flag, proxy, target)`` copies (before the solve target -> proxy, after it proxy ->
    target, where the flag is set); ``cons_when`` the flag of each consistency row (None:
    every mode of the block)."""
    top: tuple = ()
    restart: tuple = ()
    cons_when: tuple = ()


@dataclass(frozen=True)
class DeltaRestart:
    """The restart of a block without closed form (S3), by the numerical delta-scheme of
    RR-9334 §11.3 (Algorithm 14, `mdae_fmu.impulse.numeric.delta_form`): the equations
    ``F(z, h) = 0`` in the solver variables ``z`` and the instant's length ``h``, the nonzero
    entries ``(i, j, dF_i/dz_j)`` of their Jacobian, and ``targets``: ``(x, T(z, h))``, the
    right limit of each state instance x the instant moves. Left limits are read as in
    `BlockRows` restarts (the block's own from their hidden slots)."""
    z: tuple
    h: sp.Symbol
    equations: tuple
    jacobian: tuple
    targets: tuple


@dataclass(frozen=True)
class GuardedVariant:
    """One block variant: ``block`` solved in the modes of ``formula`` (a node of the
    schedule's `FormulaTable`); ``restart`` its restart system (over X+ and ζ), ``writes``
    the variables (indices into `GuardedSchedule.variables`) it moves, ``reads`` the
    variables whose jump or impulse enters its restart, ``origin`` the (equations,
    unknowns) of the analysis' block it refines. ``merged``: one block for a whole component
    (`mdae_fmu.implicit.merged`), whose equations change with the mode, restarted at every
    change; ``sel`` its mode-selected unknowns and rows. ``cons``: its consistency equations
    F^{<c} (sympy), which hold in its modes: rows of the drift and of the projection.
    ``delta``: the restart when it has no closed form (``restart`` is then None)."""
    formula: int
    block: BlockRows
    restart: BlockRows | None
    writes: tuple[int, ...]
    reads: tuple[int, ...]
    origin: tuple = ()
    merged: bool = False
    cons: tuple = ()
    sel: Selection | None = None
    delta: DeltaRestart | None = None

    def written(self) -> tuple:
        """The instances the variant computes: its unknowns, for a merged block with
        mode-selected unknowns the leading instances its proxies stand for."""
        if self.sel is None:
            return self.block.unknowns
        proxies = {p for _, p, _ in self.sel.top}
        return tuple(u for u in self.block.unknowns if u not in proxies) + tuple(
            dict.fromkeys(t for _, _, t in self.sel.top))


@dataclass(frozen=True)
class GuardedSchedule:
    """The guarded block schedule of a model (module docstring).

    ``guards``: the guard atoms (bit k of the mode is guard k), ``guard_names`` their text;
    ``variables``: the continuous unknowns (variable indices of ``writes``/``reads``);
    ``states``, ``leading``: the union layout (the instances x^(k), k < max d, and the
    leading instances); ``impulsive``: the variables algebraic in some mode (an impulse slot
    each); ``variants`` in an order valid in every mode; ``cond_states``: ``(k, formula)``,
    state k of ``states`` is a state only in the modes of the formula; ``flags``: the
    selection flags of merged blocks ``(symbol, formula)``; ``proxies``/``rproxies``: the
    proxy unknowns of merged blocks (`mdae_fmu.implicit.merged`); ``n_modes``: the number of
    consistent modes; ``impulse_outputs``: the variables whose integral over a mode change
    can be nonzero (`mdae_fmu.implicit.variants.impulse_outputs`), the FMU's ``impulse(v)``
    outputs; ``initial``: the guard values of the initial mode (from the start values, as
    `mdae_fmu.modes.normalize.MultimodeSystem.initial_mode`), whose consistency equations
    join the initial system, or None when some are not known; ``max_offset``: the highest
    equation offset c of the analysis in a regular mode (2 or more: a constraint on positions,
    whose restarts have levels, `BlockRows.levels`); ``modes``: the formula (a node of
    ``table``) of the consistent modes, which the FMU lists (`mdae_fmu.codegen.guarded`);
    ``single``: the schedule of a model of one mode (no guard atom), that
    mode's per-mode analysis wrapped (`single_mode_schedule`, docs/theory.md §10.14): its blocks
    are the variants, each with formula true and no restart, held in the report and not
    copied into ``variants`` (empty; `block_variants` lists them), and code generation plans
    and prints them as the per-mode schedule of the mode (`mdae_fmu.fmu.export.plan_code`)."""
    model_name: str
    guards: tuple[E.Expr, ...]
    guard_names: tuple[str, ...]
    variables: tuple[str, ...]
    states: tuple[Instance, ...]
    leading: tuple[Instance, ...]
    impulsive: tuple[str, ...]
    variants: tuple[GuardedVariant, ...]
    table: FormulaTable
    cond_states: tuple[tuple[int, int], ...]
    flags: tuple[tuple[sp.Symbol, int], ...]
    proxies: tuple[sp.Symbol, ...]
    rproxies: tuple[sp.Symbol, ...]
    n_modes: int
    impulse_outputs: tuple[str, ...] = ()
    initial: tuple[bool, ...] | None = None
    max_offset: int = 0
    modes: int = -1
    single: ModesReport | None = None

    def block_variants(self) -> tuple[GuardedVariant, ...]:
        """The block variants: ``variants``, or those of the one mode of a ``single``
        schedule (`single_variants`), built on each call."""
        return self.variants if self.single is None else single_variants(self.single)


#: An instance's order (`single_mode_schedule`, read in C).
_ORDER = attrgetter("order")


def single_mode_schedule(report: ModesReport) -> GuardedSchedule:
    """The guarded schedule of a model of one mode from its accepted per-mode report
    (docs/theory.md §10.14): with no guard atom every formula is true, nothing restarts (no
    mode change: a reinit is the when-branch's own restart), no variable is impulsive and no
    state is conditional, so the schedule is the mode's block schedule as it is: its layout
    (states, leading instances of the differentiated variables, unknowns, the algebraic ones
    ``impulsive`` as the implicit schedule lists them, though nothing reads their impulse)
    and the report itself (``single``), in O(variables), with no sympy, no BDD and no second
    structural analysis."""
    mode, = report.modes
    # (per unknown, the tests read in C by `compress`: 10^6 of them at 10^6 equations; an
    # order and an offset are never negative)
    d, leading = mode.d, mode.leading
    return GuardedSchedule(
        model_name=report.model_name, guards=(), guard_names=(),
        variables=tuple(report.unknowns), states=tuple(mode.states),
        leading=tuple(compress(leading, map(_ORDER, leading))),
        impulsive=tuple(compress(report.unknowns,
                                 map(not_, map(d.get, report.unknowns, repeat(0))))),
        variants=(),
        table=FormulaTable(var=(), lo=(), hi=()), cond_states=(), flags=(), proxies=(),
        rproxies=(), n_modes=1, impulse_outputs=(), initial=(),
        max_offset=max(mode.c.values(), default=0), modes=-1, single=report)


def single_variants(report: ModesReport) -> tuple[GuardedVariant, ...]:
    """The block variants of the one mode of ``report`` (`single_mode_schedule`): per block
    of its schedule, in its order, the variant with formula true (-1), the block's latent
    equations as rows (one undifferentiated equation: its expression tree alone, as the
    guarded schedule of a model that nothing restarts keeps it), its consistency rows
    F^{<c}, no restart, the variables it writes and those of the mode's unknowns its
    equations read."""
    mode, = report.modes
    table = report.symbols
    var_id = {n: k for k, n in enumerate(report.unknowns)}
    solved = {(le.eq_id, le.k): le for le in mode.solved}
    lower: dict[str, list] = {}
    for le in mode.consistency:
        lower.setdefault(le.eq_id, []).append(le)
    out = []
    for blk in mode.blocks:
        eqs = blk.equations
        label = "+".join(eq_label(e, k) for e, k in eqs)
        unknowns = tuple(table.sym(u.name, u.order) for u in blk.unknowns)
        mine = {u.name for u in blk.unknowns}
        tree = solved[eqs[0]].tree if len(eqs) == 1 and eqs[0][1] == 0 else None
        rows: tuple = () if tree is not None else tuple(solved[key].expr for key in eqs)
        found = tree_instances(tree) if tree is not None else set().union(
            *(table.instances(r) for r in rows))
        # (the leading instances of the others: what a jump or an impulse would enter by)
        read = {n for n, k in found if n not in mine and n in var_id
                and k == mode.d.get(n, 0)}
        cons = tuple(le.expr for e, _ in eqs
                     for le in sorted(lower.get(e, ()), key=lambda x: x.k))
        out.append(GuardedVariant(
            formula=-1, block=BlockRows(label=label, unknowns=unknowns, rows=rows, tree=tree),
            restart=None, writes=tuple(var_id[u.name] for u in blk.unknowns),
            reads=tuple(sorted(var_id[n] for n in read)),
            origin=(tuple(e for e, _ in eqs), tuple(u.name for u in blk.unknowns)),
            cons=cons))
    return tuple(out)
