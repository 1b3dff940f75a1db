"""Structurally regular, numerically singular modes: detection, conversion, or rejection.

The Σ-method (docs/theory.md §4) succeeds where Pryce's System Jacobian J is nonsingular
(docs/theory.md §4.7; Pryce 2001). Its structural test sees a transversal of tight entries;
it cannot see a symbolic cancellation: rows that are linearly dependent for every value of
the variables, the parameters and time. Such a mode is accepted by the structure and fails
at run time inside the host ("linear system is numerically singular" at the first step).
OpenModelica's testsuite model ``ASSC`` is one::

    der(x) = sin(time); der(y) = cos(time) + a;
    2*a + 2*b + c + x = 10; a + b + y = 5; a + b + c = 0;      // e3, e4, e5

The block {e3, e4, e5} over {a, b, c} has J = [[2, 2, 1], [1, 1, 0], [1, 1, 1]], of rank 2
whatever the values: e3 − e4 − e5 = x − y − 5 does not depend on a, b, c. It is a hidden
constraint between the states.

Detection (`singular_blocks`): J is block triangular in the BTF of the tight graph, so J is
singular iff one of its diagonal blocks is. Each block's J is evaluated at a random point
(`mdae_fmu.structure.system_jacobian.sample`, parameters random too); a block singular there
and at a second point is a suspect, confirmed symbolically (sympy, floats read as the decimals
written) before anything is done: a Jacobian singular only for some parameter values (a zero
capacitance) or at some points is a run-time matter and is left alone.

Repair, after Tan, Nedialkov and Pryce ("Conversion methods for improving structural analysis
of differential-algebraic equation systems", BIT 57, 2017; their block version, BIT 2018,
converts each identically singular diagonal block) [R]:

* **linear combination (LC)**: take u ≠ 0 with uᵀJ = 0 on the block, I = {i : u_i ≠ 0},
  c* = min over I of c_i, and an equation l of I with c_l = c* and a constant u_l ≠ 0.
  Replace f_l by f̄_l = Σ_{i∈I} u_i f_i^(c_i − c*). When u does not depend on any
  x_j^(k) with k ≥ d_j − c* (constant u always qualifies), the leading derivatives
  x_j^(d_j − c*) of the block cancel in f̄_l (their coefficient is (uᵀJ)_j = 0, Griewank's
  lemma), so Val(Σ) decreases; the new system is equivalent to the old one wherever u_l ≠ 0
  (f_l = (f̄_l − Σ_{i≠l} u_i f_i^(c_i−c*)) / u_l, the other f_i and their derivatives
  holding). The Σ-method is then run again, and the conversion repeated while a block is
  singular. ASSC becomes e3 := x − y − 5 (index 1; y = x − 5, as OpenModelica's ASSC
  finds).
* **expression substitution (ES)**, when no admissible u exists but a constant v ≠ 0 has
  J v = 0 (the block depends on its unknowns only through a common subexpression, as
  exp(a + b) and (a + b)^3): with M = {j : v_j ≠ 0} and l ∈ M of largest d_l, each x_j,
  j ∈ M∖{l}, is written y_j + (v_j/v_l) x_l^(d_l − d_j) in the block's equations, with the new
  variable y_j defined by the added equation y_j = x_j − (v_j/v_l) x_l^(d_l − d_j). The
  block's equations then no longer contain x_l's leading derivative (its coefficient is
  (J v)_i / v_l = 0); y_j is the common subexpression (a + b above).
* **nonlinear expression substitution** (docs/theory.md §4.9), when the null space of J is one
  direction v that depends on the unknowns: a subexpression φ of the block's equations that
  is constant along v (∇φ·v = 0) and linear in one x_l of M becomes the new variable y = φ,
  and x_l is written (y − b)/a (φ = a x_l + b) in the block's equations. Tan-Nedialkov-Pryce's
  modified pendulum needs it after its linear combination: the block then reads x2, x3
  through x2 sin x3 only, with v = (x2 cos x3, −sin x3).

Otherwise, and when the combination contains no unknown at all (redundant or inconsistent
equations), the model is rejected at analysis time naming the equations, their lines and the
combination: ``e3 - e4 - e5 = 5 does not depend on a, b, c``.

`convert_singular` is a pure function of the Model: it returns a Model whose equations are
the repaired ones (a replaced equation keeps its id and source location; the report lists the
equations it combines with their lines), so that every later stage, the per-mode and the
implicit analysis alike, and the initial system, see the converted equations. The rewrite
replaces the model's equations when the block's equations hold in every mode as written
(unguarded, no if-expression on a long guard). When they read guards, it holds in the mode
found only: the new equation is guarded by that mode's values of those guards, and copies of
the original equation cover the other valuations (`_apply`). The one analysis (no mode
enumerated) runs the same test (`SingularityCheck`) and conversion (`convert_block`) on the
block variants of the implicit analysis (`mdae_fmu.implicit.conversion`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Collection, Iterator, Mapping, Sequence

import numpy as np

from .. import expr as E
from ..ir import Equation, GuardLiteral, Model, Variable
from ..symbolic import SymbolTable, from_sympy
from .latent import successive_derivatives
from .per_mode import (BlockLooks, ModeAnalysis, ModesReport, analyze_modes,
                       classify_variables, specialize, symbol_table)
from .printing import expr_text
from .system_jacobian import BlockSystem, NotEvaluable, Point, sample, singular_at, symbolic
from .valuations import has_long_guards
from .variables import discrete_equation_flags

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from ..lazy_modules import sympy as sp

#: Conversions made on one model before giving up, at least (each lowers Val(Σ) of a mode by
#: one at least, so a model needs at most its number of equations: `conversion_limit`).
MAX_CONVERSIONS = 64
#: Largest block whose Jacobian is sampled (a dense SVD: about 0.1 s at this size); a larger
#: algebraic loop is not checked, and a singularity there shows at run time as before.
MAX_SAMPLED_BLOCK = 500
#: Largest block whose null space sympy computes symbolically (a suspect with no constant
#: null vector); larger ones are rejected when confirmed singular, never converted.
MAX_SYMBOLIC_BLOCK = 8
#: Candidate common subexpressions tried by the nonlinear expression substitution.
MAX_SUBEXPRESSIONS = 200
_SEEDS = (24, 2417)


@dataclass(frozen=True)
class Conversion:
    """One conversion: in ``mode``, the block of equations ``block`` over the leading
    derivatives ``unknowns`` was singular for all values; ``method`` is "linear combination"
    or "expression substitution"; ``combination`` the dependency (``e3 - e4 - e5``),
    ``result`` the new equation's text, ``replaced`` the equation it replaces (LC),
    ``new_variables`` / ``new_equations`` what ES adds; ``lines`` the source locations of
    the block's equations."""
    mode: str
    method: str
    block: tuple[str, ...]
    unknowns: tuple[str, ...]
    combination: str
    result: str
    replaced: str | None = None
    new_variables: tuple[str, ...] = ()
    new_equations: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()

    def text(self) -> str:
        """One line for the report."""
        where = ", ".join(f"{e} ({loc})" if loc else e for e, loc in zip(self.block, self.lines))
        head = (f"{_in_mode(self.mode)}equations {where} are dependent in "
                f"{{{', '.join(self.unknowns)}}} for all values")
        if self.method == "linear combination":
            return (f"{head}: {self.combination} = {self.result} does not depend on "
                    f"{', '.join(self.unknowns)}; {self.replaced} is replaced by "
                    f"0 = {self.result} (linear combination, Tan-Nedialkov-Pryce)")
        return (f"{head}: they read {self.combination} only; "
                f"{', '.join(self.new_variables)} = {self.combination} is a new variable "
                f"(equation {', '.join(self.new_equations)}) and the equations read "
                f"{self.result} (expression substitution, Tan-Nedialkov-Pryce)")


def _in_mode(name: str) -> str:
    """``mode <name>: `` before a message about one mode; nothing for the single mode of a
    model without guards (named ``{}``)."""
    return "" if name == "{}" else f"mode {name}: "


@dataclass(frozen=True)
class Repair:
    """The outcome of `convert_singular`: the model to analyse (``model`` is the input itself
    when nothing was converted), the conversions made, in order, and the rejections (exit
    code 1) of dependencies that could not be converted."""
    model: Model
    conversions: tuple[Conversion, ...] = ()
    rejections: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.conversions)


class DependencyRejected(Exception):
    """A dependency that is not converted: the message of the rejection."""


class _NotApplicable(Exception):
    """This conversion does not apply (another may)."""


# --- detection ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """A block singular at two random points (a suspect): ``mode`` the name of the mode
    (`mdae_fmu.structure.per_mode.mode_name`), ``equations`` the mode's (specialized)
    equations of the block, ``d`` the mode's offsets of the unknowns, ``literals`` the mode's
    value of each free long guard (`_apply` guards a rewrite by those its equations read)."""
    mode: str
    block: BlockSystem
    equations: tuple[Equation, ...]
    d: Mapping[str, int]
    literals: tuple[GuardLiteral, ...]


@dataclass(frozen=True)
class _Rewrite:
    """What a conversion changes, in the mode's terms: new residuals of equations (by id),
    added equations and variables; ``involved``: the equations whose mode form it reads."""
    residuals: Mapping[str, E.Expr]
    involved: tuple[str, ...]
    equations: tuple[Equation, ...] = ()
    variables: tuple[Variable, ...] = ()


def _mode_literals(report: ModesReport, mode: ModeAnalysis, fixed: bool = False
                   ) -> tuple[GuardLiteral, ...]:
    """The mode's valuation of the free long guards (and of the fixed ones if ``fixed``) as
    guard literals."""
    by_text = dict(zip(report.long_guards, report.guard_exprs))
    pairs = tuple(mode.valuation) + (tuple(report.fixed_guards) if fixed else ())
    return tuple(GuardLiteral(cond=by_text[t], positive=v) for t, v in pairs if t in by_text)


def _mode_equations(model: Model, report: ModesReport, mode: ModeAnalysis) -> list[Equation]:
    """The mode's specialized equations (`per_mode.specialize` of its valuation); those of a
    model without long guards are its own DAE equations, as they are."""
    if not has_long_guards(model):
        return [eq for eq, d in zip(model.equations, discrete_equation_flags(model)) if not d]
    return specialize(model, {lit.cond: lit.positive
                              for lit in _mode_literals(report, mode, fixed=True)})


#: Functions whose derivative vanishes nowhere but at isolated points: an entry reached
#: through them is nonzero for almost all values.
_GENERIC_CALLS = frozenset(("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                            "exp", "log", "log10", "sqrt", "abs", "erf", "erfc", "noEvent"))
#: The calls a generic path passes through: those above and ``smooth``.
_GENERIC_PATH_CALLS = _GENERIC_CALLS | {"smooth"}
#: The binary operators by what they do to a generic path: 1 a sum (both operands stay on
#: it), 2 a product or quotient (each operand stays unless the other is a literal zero), 3 a
#: power (the base stays when the exponent is a nonzero constant); any other leaves it.
_PATH_KIND = {"+": 1, "-": 1, ".+": 1, ".-": 1, "*": 2, "/": 2, ".*": 2, "./": 2,
              "^": 3, ".^": 3}


def _generic_entry(residual: E.Expr, inst: tuple[str, int]) -> bool:
    """Whether ``inst`` occurs once in ``residual``, on a path of sums, products, quotients,
    constant powers and functions whose derivative vanishes at isolated points only: its
    Jacobian entry, a product of such partial derivatives, is then nonzero for almost all
    values, and a 1x1 block with that entry needs no evaluation (``x = ...``,
    ``m*der(v) = f``). A literal zero factor on the path, a condition, ``sign()`` or
    ``floor()`` make it non-generic.

    The walk keeps the nodes on a generic path on one stack and the subtrees off it on
    another: a second occurrence on the path answers at once, and the subtrees off it are
    only searched for an occurrence (`_occurs`) once the path holds exactly one (this runs
    on every 1x1 block of every mode)."""
    name, order = inst
    if type(residual) is E.BinOp and residual.op == "-":
        # the commonest 1x1 blocks, ``x = f`` and ``m*der(v) = f``: the instance on the path,
        # generic iff it occurs nowhere else (and m is not a literal zero)
        left = residual.left
        if _is_instance(left, name, order):
            return not _occurs([residual.right], name, order)
        if type(left) is E.BinOp and left.op == "*" and _is_instance(left.right, name, order):
            m = left.left
            return not (type(m) is E.Const and m.value == 0) \
                and not _occurs([m, residual.right], name, order)
    good: list[Any] = [residual]         # (Any: dispatch on type() below)
    bad: list[Any] = []
    pop, keep, drop = good.pop, good.append, bad.append
    # dispatch on the exact node type (the tree's classes have no subclasses)
    Ref, Der, BinOp, UnOp, Call, Const = E.Ref, E.Der, E.BinOp, E.UnOp, E.Call, E.Const
    kinds, calls = _PATH_KIND, _GENERIC_PATH_CALLS
    found = False
    while good:
        node = pop()
        t = type(node)
        if t is Ref:
            if order == 0 and node.name == name:
                if found:
                    return False
                found = True
        elif t is BinOp:
            kind = kinds.get(node.op)
            left, right = node.left, node.right
            if kind == 1:
                keep(left)
                keep(right)
            elif kind == 2:
                # (a literal zero: `Const.__eq__` with ZERO, a Const of value == 0)
                (drop if type(right) is Const and right.value == 0 else keep)(left)
                (drop if type(left) is Const and left.value == 0 else keep)(right)
            elif kind == 3:
                (keep if type(right) is Const and right.value != 0 else drop)(left)
                drop(right)
            else:
                drop(left)
                drop(right)
        elif t is Der:
            base, k = _der_base(node)
            if type(base) is Ref:
                if k == order and base.name == name:
                    if found:
                        return False
                    found = True
            else:
                drop(base)
        elif t is UnOp:
            (keep if node.op == "-" or node.op == "+" else drop)(node.arg)
        elif t is Call:
            if node.func in calls:
                good.extend(node.args)
            else:
                bad.extend(node.args)
        else:
            bad.extend(E.children(node))
    return found and not (bad and _occurs(bad, name, order))


def _head_entry(residual: Any, inst: tuple[str, int]) -> bool | None:
    """`_generic_entry` of a residual ``L - R`` or ``m*L - R`` whose head ``L`` has a name
    that occurs nowhere else in it (`residual_scan.Defects.heads`), read off its top nodes:
    for ``inst`` the head, generic (unless ``m`` is a literal zero) since nothing else can
    hold the instance; None for another instance (the walk of `_generic_entry` decides)."""
    name, order = inst
    left = residual.left
    if _is_instance(left, name, order):
        return True
    if type(left) is E.BinOp and left.op == "*" and _is_instance(left.right, name, order):
        m = left.left
        return not (type(m) is E.Const and m.value == 0)
    return None


def _der_base(node: Any) -> tuple[Any, int]:
    """The expression under the chain of ``der`` that ``node`` (a `E.Der`) starts, and the
    chain's length."""
    k = 0
    while type(node) is E.Der:
        node, k = node.arg, k + 1
    return node, k


def _is_instance(node: E.Expr, name: str, order: int) -> bool:
    """Whether ``node`` is the instance ``(name, order)``: the name itself (order 0) or a
    chain of ``order`` ``der`` around it."""
    for _ in range(order):
        if type(node) is not E.Der:
            return False
        node = node.arg
    return type(node) is E.Ref and node.name == name


def _occurs(roots: list[Any], name: str, order: int) -> bool:
    """Whether the instance ``(name, order)`` occurs in one of the trees ``roots`` (consumed
    as the stack), as `_generic_entry` counts occurrences: a name alone outside ``der``, or
    the base of a chain of ``der`` of that length; the names under the ``der`` of an
    expression count as if outside it."""
    stack = roots
    pop, push = stack.pop, stack.append
    Ref, Der, BinOp, UnOp, Call, Const = E.Ref, E.Der, E.BinOp, E.UnOp, E.Call, E.Const
    while stack:
        node = pop()
        t = type(node)
        if t is Ref:
            if order == 0 and node.name == name:
                return True
        elif t is BinOp:
            push(node.left)
            push(node.right)
        elif t is Const:
            pass
        elif t is Der:
            base, k = _der_base(node)
            if type(base) is Ref:
                if k == order and base.name == name:
                    return True
            else:
                push(base)
        elif t is UnOp:
            push(node.arg)
        elif t is Call:
            stack.extend(node.args)
        else:
            stack.extend(E.children(node))
    return False


#: An equation's id and residual (`singular_blocks`' table by id, read in C).
_EQ_ID = attrgetter("id")
_RESIDUAL = attrgetter("residual")


def singular_blocks(model: Model, report: ModesReport) -> Iterator[Finding]:
    """The blocks of the accepted modes of ``report`` whose System Jacobian is singular at
    two random points (module docstring), in mode order then solve order. A block shared by
    several modes (the same equations, offsets and unknowns) is checked once; blocks of more
    than `MAX_SAMPLED_BLOCK` equations are not. The test is `SingularityCheck.suspect`'s,
    made here from the block's parts: a `BlockSystem` is built only for a block whose shape
    has no verdict yet or is a suspect (the repeated cells of a large model build one)."""
    check = SingularityCheck(classify_variables(model).types)
    # (one mode: no block is shared, every block is checked)
    seen: set[tuple[Any, ...]] | None = set() if len(report.modes) > 1 else None
    generic = _generic_entry
    # the residuals whose head occurs once (`residual_scan`'s `heads`, by position in
    # ``model.equations``): a block of one of them solved for its head needs no walk; a
    # model without long guards has its own equations in every mode
    scan = model.__dict__.get("_residual_scan")
    heads = scan.heads if scan is not None else b""
    unspecialized = not has_long_guards(model)
    Ref = E.Ref
    for mode in report.modes:
        if not mode.ok or not mode.blocks:
            continue
        looks = mode.__dict__.get("block_looks")
        if looks is not None and looks.equations is model.equations \
                and len(heads) == len(model.equations):
            # the blocks to read and their equations by position (`BlockLooks`)
            yield from _looked_blocks(model, report, mode, looks, heads, check)
            continue
        # the mode's equations, and each by its id: its `Equation`, or its residual itself
        # when the residual has a head (`Defects.heads`, read by position; existing objects
        # as the values, not an int per position: 28 MB at 10^6 equations)
        eqs: Sequence[Equation] | None = None
        where: dict[str, Any] = {}
        by_id: dict[str, Equation] | None = None       # (a finding's equations)
        quick = False
        points = check.points()
        for blk in mode.blocks:
            one = blk.scalar
            if one is None and len(blk.equations) > MAX_SAMPLED_BLOCK:
                continue
            if eqs is None:
                eqs = model.equations if unspecialized else \
                    _mode_equations(model, report, mode)
                quick = unspecialized and len(heads) == len(eqs)
                # (the ids read in C: 10^6 equations at 10^6)
                where = dict(zip(map(_EQ_ID, eqs), eqs))
                if quick:
                    where.update(zip(compress(map(_EQ_ID, eqs), heads),
                                     map(_RESIDUAL, compress(eqs, heads))))
            if one is not None:
                # the commonest block, most often passed at once (`SingularityCheck.suspect`)
                eq_id, c, u = one
                found = where[eq_id]
                name, order = u.name, u.order - c
                if type(found) is not Equation:
                    # a residual with a head: `_head_entry`, ``x = f`` for x inline (two
                    # blocks in three of a large model)
                    residual = found
                    left = found.left       # (``L - R``: `Defects.heads`)
                    if order == 0 and type(left) is Ref and left.name == name:
                        continue
                    entry = _head_entry(residual, (name, order))
                else:
                    residual, entry = found.residual, None
                if entry is None:
                    entry = generic(residual, (name, order))
                if entry:
                    continue
            beqs = blk.equations
            ids, offsets = zip(*beqs)
            residuals = tuple([w.residual if type(w) is Equation else w
                               for w in map(where.__getitem__, ids)])
            columns = tuple([(u.name, u.order) for u in blk.unknowns])
            if seen is not None:
                key = (tuple(map(id, residuals)), offsets, columns)
                if key in seen:
                    continue
                seen.add(key)
            system = check.sampled_block(ids, residuals, offsets, columns, points)
            if system is not None:
                if by_id is None:
                    by_id = {eq.id: eq for eq in eqs}
                yield Finding(mode=mode.name, block=system,
                              equations=tuple(by_id[i] for i in ids), d=mode.d,
                              literals=_mode_literals(report, mode))


def _looked_blocks(model: Model, report: ModesReport, mode: ModeAnalysis, looks: BlockLooks,
                   heads: bytes, check: SingularityCheck) -> Iterator[Finding]:
    """`singular_blocks` of the one mode ``mode`` of ``report``, whose equations are the
    model's own and whose blocks to read, with their equations' positions, are ``looks``
    (`per_mode.BlockLooks`: the others are ``x = f`` solved for x); ``heads``: the
    residuals' heads by position (`residual_scan.ResidualScan.heads`)."""
    eqs, blocks, rows = model.equations, mode.blocks, looks.rows
    generic = _generic_entry
    points = check.points()
    by_id: dict[str, Equation] | None = None
    r = 0
    for b in looks.blocks:
        blk = blocks[b]
        one = blk.scalar
        if one is not None:
            p = rows[r]
            r += 1
            eq_id, c, u = one
            name, order = u.name, u.order - c
            residual = eqs[p].residual
            entry = _head_entry(residual, (name, order)) if heads[p] else None
            if entry is None:
                entry = generic(residual, (name, order))
            if entry:
                continue
            ids: tuple[str, ...] = (eq_id,)
            offsets: tuple[int, ...] = (c,)
            residuals: tuple[E.Expr, ...] = (residual,)
        else:
            beqs = blk.equations
            n = len(beqs)
            at = rows[r:r + n]
            r += n
            if n > MAX_SAMPLED_BLOCK:
                continue
            ids, offsets = zip(*beqs)
            residuals = tuple([eqs[p].residual for p in at])
        columns = tuple([(u.name, u.order) for u in blk.unknowns])
        system = check.sampled_block(ids, residuals, offsets, columns, points)
        if system is not None:
            if by_id is None:
                by_id = {eq.id: eq for eq in eqs}
            yield Finding(mode=mode.name, block=system,
                          equations=tuple(by_id[i] for i in ids), d=mode.d,
                          literals=_mode_literals(report, mode))


class SingularityCheck:
    """The numerical test of `singular_blocks` on one block (module docstring, Detection):
    a scalar block whose entry cannot vanish identically (`_generic_entry`) passes, a larger
    block than `MAX_SAMPLED_BLOCK` is not checked, and the others are sampled at two random
    points, once per `block_shape` (the verdicts are kept here, ``verdicts``). ``types``:
    the variables' types (`mdae_fmu.structure.per_mode.classify_variables`)."""

    def __init__(self, types: Mapping[str, str]):
        self.types = types
        #: singular at the points or not, by `block_shape`
        self.verdicts: dict[tuple[Any, ...], bool] = {}

    def points(self) -> list[Point]:
        """Fresh random points (one set per mode: a mode's verdicts do not depend on the
        blocks sampled before it)."""
        return [Point(s, self.types) for s in _SEEDS]

    def suspect(self, system: BlockSystem, points: Sequence[Point]) -> bool:
        """Whether ``system``'s Jacobian is singular at the ``points`` (`points`)."""
        if len(system.equations) > MAX_SAMPLED_BLOCK:
            return False
        if len(system.equations) == 1:
            (name, order), (c,) = system.columns[0], system.offsets
            if _generic_entry(system.residuals[0], (name, order - c)):
                return False
        return self.sampled(system, block_shape(system, self.types), points)

    def sampled(self, system: BlockSystem, shape: tuple[Any, ...],
                points: Sequence[Point]) -> bool:
        """The verdict of the shape ``shape`` (`block_shape` of ``system``): ``system``
        sampled at the ``points`` when the shape has none yet."""
        singular = self.verdicts.get(shape)
        if singular is None:
            singular = all(_singular_sample(system, p) for p in points)
            self.verdicts[shape] = singular
        return singular

    def sampled_block(self, ids: tuple[str, ...], residuals: tuple[E.Expr, ...],
                      offsets: tuple[int, ...], columns: tuple[tuple[str, int], ...],
                      points: Sequence[Point]) -> BlockSystem | None:
        """The block of equations ``ids`` (``residuals`` with ``offsets`` over ``columns``)
        as a `BlockSystem` when `sampled` finds it singular, else None; no `BlockSystem`
        is built for a shape already known regular (`singular_blocks`' two readers)."""
        shape = _shape(residuals, offsets, columns, self.types)
        if self.verdicts.get(shape) is False:
            return None
        system = BlockSystem(equations=ids, residuals=residuals, offsets=offsets,
                             columns=columns)
        return system if self.sampled(system, shape, points) else None


def block_shape(system: BlockSystem, types: Mapping[str, str]) -> tuple[Any, ...]:
    """The block up to a renaming of its names: its residual trees with every name replaced
    by its rank of first occurrence and its type, its offsets and its columns so renamed.
    The sampler gives every name an independent random value of its type
    (`mdae_fmu.structure.system_jacobian.Point`), so two blocks of one shape have the same
    Jacobian function of those values: singular for all values (docs/theory.md §4.7) for
    both or for neither, and one sample decides both (the repeated cells of a large model
    are sampled once)."""
    return _shape(system.residuals, system.offsets, system.columns, types)


def _shape(residuals: Sequence[E.Expr], offsets: tuple[int, ...],
           columns: Sequence[tuple[str, int]], types: Mapping[str, str]) -> tuple[Any, ...]:
    """`block_shape` of the block of ``residuals`` with ``offsets`` over ``columns``."""
    # each name's token, (rank of first occurrence, type), made at its first occurrence
    ranks: dict[str, tuple[int, str]] = {}
    ranked = ranks.get
    out: list[Any] = []
    push = out.append
    # dispatch on the exact node type (the tree's classes have no subclasses), children
    # pushed inline in `E.walk`'s pre-order: this runs on every sampled block of a model
    Ref, Const, BinOp, UnOp, Der, Call, If = E.Ref, E.Const, E.BinOp, E.UnOp, E.Der, E.Call, E.If
    for res in residuals:
        stack: list[Any] = [res]
        pop, down = stack.pop, stack.append
        while stack:
            node = pop()
            t = type(node)
            if t is Ref:
                name = node.name
                token = ranked(name)
                if token is None:
                    token = ranks[name] = (len(ranks), types.get(name, "Real"))
                push(token)
            elif t is BinOp:
                push(node.op)
                down(node.right)
                down(node.left)
            elif t is Const:
                push((type(node.value).__name__, node.value))
            elif t is UnOp:
                push(node.op)
                down(node.arg)
            elif t is Call:
                push((node.func, len(node.args)))
                stack.extend(reversed(node.args))
            elif t is E.Str:
                push(("Str", node.value))
            else:
                push(t.__name__)            # Der, If, Time: their children say the rest
                if t is Der:
                    down(node.arg)
                elif t is If:
                    down(node.orelse)
                    down(node.then)
                    down(node.cond)
        push(None)                          # end of a residual
    renamed = []
    for name, order in columns:
        token = ranked(name)
        if token is None:
            token = ranks[name] = (len(ranks), types.get(name, "Real"))
        renamed.append((token, order))
    return tuple(out), offsets, tuple(renamed)


def _singular_sample(system: BlockSystem, point: Point) -> bool:
    try:
        return singular_at(sample(system, point))
    except NotEvaluable:
        return False


# --- null vectors ---------------------------------------------------------------------------

def _rational(x: float) -> Fraction | None:
    f = Fraction(x).limit_denominator(10_000)
    return f if abs(float(f) - x) <= 1e-9 * max(1.0, abs(x)) else None


def _constant_null_vector(system: BlockSystem, types: Mapping[str, str], left: bool
                          ) -> list[Fraction] | None:
    """A rational vector u with uᵀJ = 0 (``left``) or J u = 0 that is the same at both
    sampled points, normalized to a largest entry 1; None when the null space is not one
    constant direction there."""
    vectors = []
    for seed in _SEEDS:
        try:
            J = sample(system, Point(seed, types))
        except NotEvaluable:
            return None
        M = J.T if left else J
        _, s, vt = np.linalg.svd(M)
        if s[0] == 0.0:
            return None
        null = vt[-1]
        if len(s) > 1 and s[-2] <= 1e-9 * s[0]:
            return None         # a null space of dimension 2 or more: not one direction
        null = null / null[np.argmax(np.abs(null))]
        vectors.append(null)
    if not np.allclose(vectors[0], vectors[1], rtol=1e-8, atol=1e-10):
        return None
    out = []
    for x in vectors[0]:
        f = _rational(float(x))
        if f is None:
            return None
        out.append(f)
    return out


def _exact(e: sp.Expr) -> sp.Expr:
    """``e`` with its floats read as the decimals they print as (0.1 as 1/10), so that a
    cancellation the modeller wrote in decimals is exact."""
    floats = e.atoms(sp.Float)
    if not floats:
        return e
    return e.xreplace({f: sp.Rational(repr(float(f))) for f in floats})


def _is_zero(e: sp.Expr) -> bool:
    e = _exact(e)
    if e == 0:
        return True
    e = sp.expand(e)
    if e == 0:
        return True
    try:
        return bool(sp.simplify(e) == 0)
    except (TypeError, ValueError, RecursionError):     # sympy on an odd expression
        return False


def _symbolic_null(J: sp.Matrix, left: bool) -> list[sp.Expr] | None:
    """A left (uᵀJ = 0) or right (J v = 0) null vector of a small symbolic J (sympy), or
    None. A right one only when the null space is one direction (the expression
    substitution reads the direction, not a basis)."""
    try:
        M = _exact_matrix(J)
        basis = (M.T if left else M).nullspace(simplify=True)
    except (TypeError, ValueError, ZeroDivisionError, RecursionError):
        return None
    if not basis or (not left and len(basis) > 1):
        return None
    return [sp.simplify(x) for x in basis[0]]


def _exact_matrix(J: sp.Matrix) -> sp.Matrix:
    return J.applyfunc(_exact)


# --- the conversions ------------------------------------------------------------------------

def _label(eq_id: str, k: int) -> str:
    return eq_id + ("'" * k if k <= 2 else f"^({k})")


def _combination_text(terms: Sequence[tuple[sp.Expr, str]]) -> str:
    """``e3 - e4 - e5``, ``2*e1 + e2'``, ``C*e1 - e2`` (coefficients as Modelica text)."""
    out = ""
    for coeff, label in terms:
        negative = coeff.could_extract_minus_sign()
        mag = -coeff if negative else coeff
        part = label if mag == 1 else f"{_coeff_text(mag)}*{label}"
        if not out:
            out = f"-{part}" if negative else part
        else:
            out += f" - {part}" if negative else f" + {part}"
    return out


def _coeff_text(c: sp.Expr) -> str:
    text = expr_text(from_sympy(SymbolTable(), c)) if not c.free_symbols else str(c)
    return text if c.is_Atom else f"({text})"


def _unknown_instances(table: SymbolTable, e: sp.Expr, unknowns: Collection[str]
                       ) -> set[tuple[str, int]]:
    return {i for i in table.instances(e) if i[0] in unknowns}


def _parameters_only(table: SymbolTable, e: sp.Expr) -> bool:
    """Whether ``e`` reads parameters and constants only (a nonzero such u_l keeps the
    converted system equivalent everywhere)."""
    return all(s.name in table.constants and table.sym(s.name) == s for s in e.free_symbols)


def _where(eq: Equation) -> str:
    return eq.loc.short() if eq.loc is not None else ""


def _lead_texts(system: BlockSystem) -> tuple[str, ...]:
    return tuple(expr_text(_der(name, k)) for name, k in system.columns)


def _der(name: str, k: int) -> E.Expr:
    node: E.Expr = E.Ref(name)
    for _ in range(k):
        node = E.Der(node)
    return node


def _cancel(f: sp.Expr, gone: set[sp.Symbol]) -> sp.Expr | None:
    """``f`` rewritten so that the symbols ``gone`` (of which it does not depend: its
    derivatives in them vanish) no longer occur, or None."""
    if not (f.free_symbols & gone):
        return f
    for step in (sp.expand, sp.cancel, sp.simplify):
        try:
            f = step(f)
        except (TypeError, ValueError, RecursionError):
            return None
        if not (f.free_symbols & gone):
            return f
    return None


def _linear_combination(model: Model, finding: Finding, u: Sequence[sp.Expr],
                        table: SymbolTable) -> tuple[_Rewrite, Conversion]:
    """The LC conversion of ``finding`` with left null vector ``u`` (module docstring)."""
    system = finding.block
    unknowns = set(classify_variables(model).continuous)
    rows = [i for i, x in enumerate(u) if x != 0]
    c_star = min(system.offsets[i] for i in rows)
    d = finding.d
    # the admissibility condition: u reads no x_j^(k) with k >= d_j - c*
    for i in rows:
        for name, k in _unknown_instances(table, u[i], unknowns):
            if k >= d.get(name, 0) - c_star:
                raise _NotApplicable
    pivots = [i for i in rows if system.offsets[i] == c_star and _parameters_only(table, u[i])]
    if not pivots:
        raise _NotApplicable
    l_row = pivots[0]
    u = [sp.simplify(x / u[l_row]) for x in u]
    if all(x.is_Rational for x in u):       # integer coefficients: 2*e2 - e3, not e2 - 1/2*e3
        scale = sp.ilcm(*(sp.Rational(x).q for x in u)) if len(u) > 1 else 1
        u = [x * scale for x in u]
    terms, total = [], sp.Integer(0)
    for i in rows:
        k = system.offsets[i] - c_star
        f = table.to_sympy(system.residuals[i])
        fk = successive_derivatives(table, f, k)[k] if k else f
        total += u[i] * fk
        terms.append((u[i], _label(system.equations[i], k)))
    gone = {table.sym(name, dj - c_star) for name, dj in system.columns if dj >= c_star}
    combo = _combination_text(terms)
    leads = _lead_texts(system)
    new = _cancel(_exact(total), gone)
    if new is None:
        raise _NotApplicable
    if not _unknown_instances(table, new, unknowns):
        where = ", ".join(f"{e} ({_where(eq)})" for e, eq in
                          zip(system.equations, finding.equations))
        kind = ("they are redundant: the equations leave some of them undetermined"
                if new == 0 else "the equations are inconsistent")
        value = expr_text(from_sympy(table, new)) if new != 0 else "0"
        raise DependencyRejected(
            f"{_in_mode(finding.mode)}equations {where} are dependent for all values: "
            f"{combo} = {value} does not depend on {', '.join(leads)} nor on any other "
            f"unknown; {kind}")
    try:
        residual = from_sympy(table, new)
    except ValueError:
        raise _NotApplicable from None
    replaced = system.equations[l_row]
    conv = Conversion(mode=finding.mode, method="linear combination",
                      block=system.equations, unknowns=leads, combination=combo,
                      result=expr_text(residual), replaced=replaced,
                      lines=tuple(_where(eq) for eq in finding.equations))
    involved = tuple(system.equations[i] for i in rows)
    return _Rewrite(residuals={replaced: residual}, involved=involved), conv


def _expression_substitution(model: Model, finding: Finding, v: Sequence[Fraction],
                             table: SymbolTable) -> tuple[_Rewrite, Conversion]:
    """The ES conversion of ``finding`` with constant right null vector ``v`` (module
    docstring)."""
    system = finding.block
    cols = system.columns
    support = [j for j, x in enumerate(v) if x != 0]
    if len(support) < 2:
        raise _NotApplicable
    lead = max(support, key=lambda j: (cols[j][1], -j))
    lname, ld = cols[lead]
    taken = {var.name for var in model.variables}
    n_new = 0
    new_vars: list[Variable] = []
    new_eqs: list[Equation] = []
    subst: dict[sp.Symbol, sp.Expr] = {}
    ids = {eq.id for eq in model.equations}
    anchor = finding.equations[0]
    defs = []
    for j in support:
        if j == lead:
            continue
        name, dj = cols[j]
        n_new += 1
        new_name = _fresh(taken, "_es")
        taken.add(new_name)
        ratio = sp.Rational(v[j].numerator, v[j].denominator) / \
            sp.Rational(v[lead].numerator, v[lead].denominator)
        for k in range(dj + 1):
            subst[table.sym(name, k)] = table.sym(new_name, k) + \
                ratio * table.sym(lname, k + ld - dj)
        definition = table.sym(name, 0) - ratio * table.sym(lname, ld - dj)
        eq_id = _fresh(ids, "e", start=len(model.equations) + 1)
        ids.add(eq_id)
        new_eqs.append(Equation(eq_id, from_sympy(table, table.sym(new_name, 0) - definition),
                                (), anchor.loc))
        text = expr_text(from_sympy(table, definition))
        new_vars.append(Variable(name=new_name,
                                 description=f"{text} (expression substitution, "
                                 "docs/structure.md)",
                                 start=_start_of(model, name, lname, ratio, ld - dj)))
        defs.append(text)
    rewritten: dict[str, E.Expr] = {}
    for i, res in enumerate(system.residuals):
        f = table.to_sympy(res).xreplace(subst)
        gone = {table.sym(lname, ld - system.offsets[i])}
        f = _cancel(f, gone)
        if f is None:
            raise _NotApplicable
        rewritten[system.equations[i]] = from_sympy(table, f)
    conv = Conversion(mode=finding.mode, method="expression substitution",
                      block=system.equations, unknowns=_lead_texts(system),
                      combination=" and ".join(defs),
                      result="; ".join(f"{i}: {expr_text(r)}" for i, r in rewritten.items()),
                      new_variables=tuple(var.name for var in new_vars),
                      new_equations=tuple(eq.id for eq in new_eqs),
                      lines=tuple(_where(eq) for eq in finding.equations))
    return _Rewrite(
        residuals=rewritten,
        involved=system.equations,
        equations=tuple(new_eqs),
        variables=tuple(new_vars),
    ), conv


def _fresh(taken: set[str], prefix: str, start: int = 1) -> str:
    k = start
    while f"{prefix}{k}" in taken:
        k += 1
    return f"{prefix}{k}"


def _start_of(model: Model, name: str, lname: str, ratio: sp.Expr, order: int) -> E.Expr | None:
    """The start value of a substituted variable: x_j's start minus ratio times x_l's, when
    both are numbers (a guess for the solver; otherwise none)."""
    def number(n: str) -> float | None:
        var = model.var(n) if n in model.var_index else None
        if var is None or var.start is None:
            return 0.0
        return float(var.start.value) if isinstance(var.start, E.Const) else None
    a = number(name)
    b = number(lname) if order == 0 else 0.0
    if a is None or b is None:
        return None
    return E.Const(a - float(ratio) * b)


def _common_subexpressions(table: SymbolTable, residuals: Sequence[sp.Expr],
                           names: set[str]) -> list[sp.Expr]:
    """The candidates φ of the nonlinear expression substitution: the subexpressions of the
    block's residuals that read two or more of ``names`` and no derivative, and, for each
    product, the product of its factors that read ``names`` with their exponents divided by
    their greatest common divisor (x2*sin(x3) from x2^2*sin(x3)^2 and from
    1/(x2*sin(x3))). At most `MAX_SUBEXPRESSIONS`, simplest first."""
    seen: set[sp.Expr] = set()
    out: list[sp.Expr] = []

    def consider(phi: sp.Expr) -> None:
        if phi in seen or len(out) >= MAX_SUBEXPRESSIONS:
            return
        seen.add(phi)
        inst = table.instances(phi)
        if all(k == 0 for _, k in inst) and len({n for n, _ in inst} & names) >= 2:
            out.append(phi)

    for f in residuals:
        for visited, node in enumerate(sp.preorder_traversal(f)):
            if visited >= 20 * MAX_SUBEXPRESSIONS:
                break
            if node.is_Atom:
                continue
            consider(node)
            if not node.is_Mul:
                continue
            pairs = [a.as_base_exp() for a in node.args
                     if {n for n, _ in table.instances(a)} & names]
            if len(pairs) >= 2 and all(e.is_Integer for _, e in pairs):
                g = 0
                for _, e in pairs:
                    g = sp.igcd(g, abs(int(e)))
                g = -g if pairs[0][1] < 0 else g
                consider(sp.Mul(*(b ** (e / g) for b, e in pairs)))
    return sorted(out, key=sp.count_ops)


def _nonlinear_substitution(model: Model, finding: Finding, v: Sequence[sp.Expr],
                            table: SymbolTable) -> tuple[_Rewrite, Conversion]:
    """The expression substitution with a right null vector ``v`` that depends on the
    unknowns (docs/theory.md §4.9): the block reads the unknowns of M = {j : v_j ≠ 0} through
    a common subexpression φ that is constant along v (∇φ·v = 0, φ reading no derivative).
    With φ = a·x_l + b linear in one x_l of M (a ≠ 0, a and b free of x_l), the new variable
    y = φ is defined by the added equation y = φ, and every x_l^(k) of the block's equations
    becomes the k-th total derivative of (y − b)/a: an equivalent system wherever a ≠ 0.
    The conversion is kept only if, after it, the leading derivative of another unknown x_m
    of M has left every equation of the block (the column of x_m in J was a combination of
    the others along v; it is now zero), so that the Σ-method sees less than before."""
    system = finding.block
    cols = system.columns
    support = [j for j, x in enumerate(v) if not _is_zero(x)]
    if len(support) < 2:
        raise _NotApplicable
    names = {cols[j][0] for j in support}
    residuals = [_exact(table.to_sympy(r)) for r in system.residuals]
    for phi in _common_subexpressions(table, residuals, names):
        grad = [sp.diff(phi, table.sym(name, 0)) for name, _ in cols]
        read = [j for j in support if grad[j] != 0]
        if len(read) < 2 or not _is_zero(sum((g * x for g, x in zip(grad, v) if g != 0),
                                             sp.Integer(0))):
            continue
        for lead in read:
            try:
                return _substitute(model, finding, table, residuals, phi, lead,
                                   [j for j in support if j != lead])
            except _NotApplicable:
                continue
    raise _NotApplicable


def _substitute(model: Model, finding: Finding, table: SymbolTable,
                residuals: Sequence[sp.Expr], phi: sp.Expr, lead: int,
                others: Sequence[int]) -> tuple[_Rewrite, Conversion]:
    """`_nonlinear_substitution` eliminating x_l (column ``lead``) with y = ``phi``; raises
    `_NotApplicable` unless the leading derivative of some x_m, m in ``others``, leaves every
    equation of the block."""
    system = finding.block
    lname = system.columns[lead][0]
    xl = table.sym(lname, 0)
    a = sp.diff(phi, xl)
    if a == 0 or xl in a.free_symbols:
        raise _NotApplicable            # φ is not linear in x_l
    b = _cancel(phi - a * xl, {xl})
    if b is None:
        raise _NotApplicable
    new_name = _fresh({var.name for var in model.variables}, "_es")
    top = max((k for f in residuals for n, k in table.instances(f) if n == lname), default=0)
    solved = successive_derivatives(table, (table.sym(new_name, 0) - b) / a, top)
    subst = {table.sym(lname, k): solved[k] for k in range(top + 1)}
    replaced = [f.xreplace(subst) for f in residuals]
    for m in others:
        mname, dm = system.columns[m]
        rewritten: dict[str, E.Expr] = {}
        for i, f in enumerate(replaced):
            c = system.offsets[i]
            new = _cancel(f, {table.sym(mname, dm - c)} if dm >= c else set())
            if new is None:
                break
            if residuals[i] != new:
                try:
                    rewritten[system.equations[i]] = from_sympy(table, new)
                except ValueError:
                    break
        else:
            return _substitution_rewrite(model, finding, table, phi, new_name, rewritten)
    raise _NotApplicable


def _substitution_rewrite(model: Model, finding: Finding, table: SymbolTable, phi: sp.Expr,
                          new_name: str, rewritten: Mapping[str, E.Expr]
                          ) -> tuple[_Rewrite, Conversion]:
    """The rewrite and report of a nonlinear expression substitution: the new variable
    ``new_name`` = ``phi``, its defining equation and the block's rewritten equations."""
    system = finding.block
    definition = from_sympy(table, phi)
    text = expr_text(definition)
    eq_id = _fresh({eq.id for eq in model.equations}, "e", start=len(model.equations) + 1)
    anchor = finding.equations[0]
    equation = Equation(eq_id, E.BinOp("-", E.Ref(new_name), definition), (), anchor.loc)
    variable = Variable(name=new_name,
                        description=f"{text} (expression substitution, docs/structure.md)",
                        start=_start_value(model, table, phi))
    conv = Conversion(mode=finding.mode, method="expression substitution",
                      block=system.equations, unknowns=_lead_texts(system), combination=text,
                      result="; ".join(f"{i}: {expr_text(r)}" for i, r in rewritten.items()),
                      new_variables=(new_name,), new_equations=(eq_id,),
                      lines=tuple(_where(eq) for eq in finding.equations))
    return _Rewrite(
        residuals=rewritten, involved=system.equations, equations=(equation,), variables=(variable,)
    ), conv


def _start_value(model: Model, table: SymbolTable, phi: sp.Expr) -> E.Expr | None:
    """φ at the start values of the unknowns it reads (0 for one without) and the values of
    the parameters, when all are numbers (a guess for the solver; otherwise none)."""
    values: dict[sp.Basic, sp.Expr] = {}
    for s in phi.free_symbols:
        inst = table.instance(s)
        name = inst[0] if inst is not None else s.name
        var = model.var(name) if name in model.var_index else None
        if var is None:
            return None
        given = var.start if var.is_unknown else (var.binding or var.start)
        if given is None and var.is_unknown:
            values[s] = sp.Integer(0)
        elif isinstance(given, E.Const) and type(given.value) in (int, float):
            values[s] = sp.Float(given.value)
        else:
            return None
    try:
        value = complex(phi.xreplace(values).evalf())
    except (TypeError, ValueError):
        return None
    return E.Const(value.real) if value.imag == 0 and np.isfinite(value.real) else None


# --- the driver -----------------------------------------------------------------------------

def _apply(model: Model, finding: Finding, rewrite: _Rewrite) -> Model:
    """The model with ``rewrite`` made. When the equations it involves are the model's as
    written (unguarded, no if-expression the mode selects), the new residuals replace the
    model's: the rewrite is an equivalence in every mode. Otherwise it holds where the
    involved equations take their mode form, i.e. under the mode's values of the guards they
    read (M = m1 and ... and mK): each rewritten equation keeps its id under its guard and M,
    and copies of the original, with new ids, cover the complement (m1..m(k-1), not mk)."""
    by_id = {eq.id: eq for eq in model.equations}
    spec = {eq.id: eq for eq in finding.equations}
    involved = set(rewrite.involved) | set(rewrite.residuals)
    local = any(by_id[i].guard or by_id[i].residual is not spec[i].residual for i in involved)
    literals = _relevant(finding.literals, [by_id[i] for i in sorted(involved)]) \
        if local else ()
    ids = set(by_id) | {eq.id for eq in rewrite.equations}
    equations: list[Equation] = []
    for eq in model.equations:
        new = rewrite.residuals.get(eq.id)
        if new is None:
            equations.append(eq)
            continue
        extra = tuple(lit for lit in literals if lit not in eq.guard)
        equations.append(Equation(eq.id, new, eq.guard + extra, eq.loc))
        for k, lit in enumerate(extra):
            copy_id = _fresh(ids, "e", start=len(model.equations) + 1)
            ids.add(copy_id)
            equations.append(
                Equation(
                    copy_id,
                    eq.residual,
                    eq.guard
                    + extra[:k]
                    + (GuardLiteral(cond=lit.cond, positive=not lit.positive),),
                    eq.loc,
                )
            )
    return replace(model, equations=tuple(equations) + rewrite.equations,
                   variables=model.variables + rewrite.variables)


def _relevant(literals: Sequence[GuardLiteral], equations: Sequence[Equation]
              ) -> tuple[GuardLiteral, ...]:
    """The literals whose guard the ``equations`` read (in their guards or their
    if-expressions' conditions)."""
    nodes: set[E.Expr] = set()
    for eq in equations:
        for lit in eq.guard:
            nodes.update(E.walk(lit.cond))
        for node in E.walk(eq.residual):
            if type(node) is E.If:
                nodes.update(E.walk(node.cond))
    return tuple(lit for lit in literals if lit.cond in nodes)


def convert_block(model: Model, finding: Finding) -> tuple[Model, Conversion] | None:
    """Confirm the suspect ``finding`` and convert it; None when it is not singular for all
    values (a run-time matter). Raises `DependencyRejected` with the message of a rejection."""
    system = finding.block
    table = symbol_table(model)
    types = classify_variables(model).types
    J = symbolic(system, table)
    where = ", ".join(f"{e} ({_where(eq)})" for e, eq in zip(system.equations,
                                                              finding.equations))
    leads = ", ".join(_lead_texts(system))
    head = (f"{_in_mode(finding.mode)}equations {where} are dependent in {{{leads}}} for "
            f"all values (the Jacobian of their block is singular)")
    u_const = _constant_null_vector(system, types, left=True)
    candidates: list[list[sp.Expr]] = []
    if u_const is not None:
        u = [sp.Rational(x.numerator, x.denominator) for x in u_const]
        if all(_is_zero(sum((u[i] * J[i, j] for i in range(len(u))), sp.Integer(0)))
               for j in range(J.cols)):
            candidates.append(u)
    if not candidates and len(system.columns) <= MAX_SYMBOLIC_BLOCK:
        u_sym = _symbolic_null(J, left=True)
        if u_sym is not None:
            candidates.append(u_sym)
    for u in candidates:
        try:
            rewrite, conv = _linear_combination(model, finding, u, table)
            return _apply(model, finding, rewrite), conv
        except _NotApplicable:
            pass
    v_const = _constant_null_vector(system, types, left=False)
    if v_const is not None:
        v = [sp.Rational(x.numerator, x.denominator) for x in v_const]
        if all(_is_zero(sum((J[i, j] * v[j] for j in range(len(v))), sp.Integer(0)))
               for i in range(J.rows)):
            try:
                rewrite, conv = _expression_substitution(model, finding, v_const, table)
                return _apply(model, finding, rewrite), conv
            except _NotApplicable:
                pass
    # J is confirmed singular when a left null vector was found: its right null space too
    v_sym = _symbolic_null(J, left=False) \
        if candidates and len(system.columns) <= MAX_SYMBOLIC_BLOCK else None
    if v_sym is not None:
        try:
            rewrite, conv = _nonlinear_substitution(model, finding, v_sym, table)
            return _apply(model, finding, rewrite), conv
        except _NotApplicable:
            pass
    if candidates or v_const is not None or v_sym is not None or _confirmed_singular(J):
        raise DependencyRejected(f"{head}; neither a linear combination nor an expression "
                        "substitution (Tan-Nedialkov-Pryce) removes the dependency")
    return None


def _confirmed_singular(J: sp.Matrix) -> bool:
    if J.rows > MAX_SYMBOLIC_BLOCK:
        return False
    try:
        return _is_zero(_exact_matrix(J).det(method="berkowitz"))
    except (TypeError, ValueError, ZeroDivisionError, RecursionError):
        return False


def convert_singular(model: Model, report: ModesReport | None = None) -> Repair:
    """Detect the blocks of the modes of ``model`` that are singular for all values, convert
    them (LC, else ES) and re-run the structural analysis until none is left (module
    docstring). ``report``: the per-mode analysis of ``model`` when already computed (else
    it is computed here, without latent equations). Pure: ``model`` is not modified."""
    current = model
    rep = report if report is not None else analyze_modes(model, latent=False)
    done: list[Conversion] = []
    limit = conversion_limit(model)
    while True:
        step = None
        for finding in singular_blocks(current, rep):
            try:
                step = convert_block(current, finding)
            except DependencyRejected as err:
                return Repair(model=model, conversions=tuple(done), rejections=(str(err),))
            if step is not None:
                break
        if step is None:
            return Repair(model=current, conversions=tuple(done))
        if len(done) == limit:
            break
        current, conv = step
        done.append(conv)
        rep = analyze_modes(current, latent=False)
        if rep.exit_code != 0:
            return Repair(model=current, conversions=tuple(done))
    return Repair(model=model, conversions=tuple(done), rejections=(
        f"model {model.name}: {limit} conversions of numerically singular "
        "blocks did not leave a regular system",))


def conversion_limit(model: Model) -> int:
    """The conversions `convert_singular` (and the one analysis' `convert_guarded`) make on
    ``model`` before giving up: its number of equations, `MAX_CONVERSIONS` at least (each
    conversion lowers Val(Σ) of a mode, docs/theory.md §4.9, and the count of independent
    dependencies grows with the model: 64 copies of OpenModelica's ASSC, each converted
    once, were refused by a fixed bound of 64, issue 26 "Bad input")."""
    return max(MAX_CONVERSIONS, len(model.equations))


__all__ = ["Conversion", "DependencyRejected", "Finding", "Repair", "SingularityCheck",
           "convert_block", "convert_singular", "conversion_limit", "singular_blocks",
           "MAX_CONVERSIONS"]
