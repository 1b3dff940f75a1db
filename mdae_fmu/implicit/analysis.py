"""Implicit structural analysis of a multimode model: well-posedness, offsets, index and states
as functions of the mode, without enumerating the modes (docs/theory.md §10.2; IsamDAE's implicit
approach, docs/theory.md §1.8).

The model's DAE equations (the same as the per-mode stage's, `mdae_fmu.structure.per_mode`:
guard and discrete-variable definitions left out) become rows of a `LabelledGraph`: each
equation's existence is the formula of its guard literals, and its if-expressions on guards
are split into branches (RR-9334 Defs 30 and 33, docs/theory.md §5.2, §5.4) whose formulas label
their signature-matrix
entries. `mdae_fmu.implicit.sigma` then finds a perfect matching and Pryce's offsets in every
mode at once. The result answers, for any mode, what the per-mode analysis answers
(`ImplicitAnalysis.at`), and a failure is reported on one concrete mode of the failing formula
with the per-mode stage's own diagnostic (Dulmage–Mendelsohn culprits, docs/theory.md §10.2).
"""

from __future__ import annotations

from typing import Any  # BDD nodes of the optional, untyped dd package
import time
from dataclasses import dataclass, field

from .. import expr as E
from ..diagnostics import EXIT_OK, EXIT_REJECTED, InputError
from ..ir import Model
from ..structure.variables import discrete_equation_flags
from ..structure.zero_terms import drop_zero_terms
from ..structure.per_mode import (MAX_ENUMERATED_MODES, Instance, ModeAnalysis, TooManyModes,
                                  analyze_mode, check_declared, classify_variables,
                                  defines_discrete,
                                  enumerate_valuations, fixed_guard_values,
                                  guard_definitions, long_guard_atoms, mode_name, specialize,
                                  symbol_table)
from ..structure.signature import sigma_row
from ..structure.valuations import has_long_guards
from .formulas import GuardSpace
from .blocks import conditional_blocks
from .sigma import LabelledGraph, add_guarded_entries, case_max, transversal

FORMAT = "mdae_fmu.implicit/1"


@dataclass
class ImplicitAnalysis:
    """The labelled results. Formulas are BDDs of ``space.bdd`` over the guard atoms."""
    model: Model
    space: GuardSpace
    graph: LabelledGraph
    match: list                     # match[i] = {unknown index: formula}
    singular: Any                # modes with no perfect matching
    undecided: Any               # modes without offsets (an internal error: `transversal`)
    c: list                         # c[i] = {offset: formula}
    d: list                         # d[j] = {offset: formula}
    index: dict                     # {max c: formula}
    structural_index: dict          # {nu_S: formula}
    sweeps: int
    seconds: float
    blocks: list = field(default_factory=list)     # ConditionalBlock, in a valid order
    diagnostic: str | None = None
    failing_mode: tuple | None = None
    #: the over-determined equations (β_O of the Dulmage-Mendelsohn decomposition) of the
    #: one structurally singular mode the diagnostic names (``failing_mode``)
    failing_over: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.diagnostic is None

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_REJECTED

    @property
    def n_modes(self) -> int:
        return self.space.count(self.space.care)

    def differentiated(self) -> list[tuple[str, int, Any]]:
        """``(equation id, c, formula)``: equation i is differentiated c >= 1 times (its
        offset, docs/theory.md §4.2) in the regular modes of the formula."""
        bdd = self.space.bdd
        regular = self.space.care & ~self.singular
        out = []
        for eq_id, ci in zip(self.graph.rows, self.c):
            for k, f in sorted(ci.items()):
                if k > 0 and (f & regular) != bdd.false:
                    out.append((eq_id, k, f & regular))
        return out

    def one_mode(self, f) -> tuple[tuple[str, bool], ...]:
        """One mode of formula ``f`` (a consistent one), as ``(guard text, value)`` pairs."""
        asg = self.space.bdd.pick(f & self.space.care,
                                  care_vars=[self.space.var_of[a] for a in self.space.atoms])
        return self.space.mode_pairs(asg)

    # --- querying one mode ------------------------------------------------------------------
    def at(self, pairs) -> dict:
        """The per-mode answers at the mode ``pairs`` (``(guard text, value)`` as
        `mdae_fmu.structure.per_mode.ModeAnalysis.valuation`): ``ok``, ``c``, ``d``,
        ``index``, ``structural_index``, ``states`` (as `Instance`), ``blocks`` (the
        `ConditionalBlock` s whose formula holds)."""
        bdd = self.space.bdd
        asg = self.space.assignment(pairs)

        def holds(f) -> bool:
            return bdd.let(asg, f) == bdd.true

        if not holds(self.space.care):
            raise KeyError(f"mode {mode_name(tuple(pairs))} is not a consistent mode")
        if holds(self.singular):
            return dict(ok=False, c={}, d={}, index=-1, structural_index=-1, states=set(),
                        blocks=[])

        def value(case):
            for v, f in case.items():
                if holds(f):
                    return v
            return None

        rows, cols = self.graph.rows, self.graph.cols
        c = {rows[i]: v for i in range(len(rows)) if (v := value(self.c[i])) is not None}
        d = {cols[j]: v for j in range(len(cols)) if (v := value(self.d[j])) is not None}
        states = {Instance(name=n, order=k) for n, dn in d.items() for k in range(dn)}
        return dict(ok=True, c=c, d=d, index=value(self.index),
                    structural_index=value(self.structural_index), states=states,
                    blocks=[b for b in self.blocks if holds(b.formula)])

    # --- summaries --------------------------------------------------------------------------
    def state_formulas(self) -> list[tuple[str, Any]]:
        """``(der(x,k) text, formula of the modes where it is a state)``, for every instance
        that is a state in some mode."""
        bdd = self.space.bdd
        out = []
        for j, name in enumerate(self.graph.cols):
            top = max(self.d[j], default=0)
            for k in range(top):
                f = bdd.false
                for v, fv in self.d[j].items():
                    if v > k:
                        f |= fv
                if f != bdd.false:
                    out.append((str(Instance(name=name, order=k)), f))
        return out

    def assignment_formulas(self) -> list[tuple[str, str, Any]]:
        """The conditional transversal: ``(equation, unknown, formula)``, equation i solved
        for the leading derivative of that unknown in the modes of the formula."""
        out = []
        for i, row in enumerate(self.match):
            for j, f in row.items():
                f = f & ~self.singular & self.space.care
                if f != self.space.bdd.false:
                    out.append((self.graph.rows[i], self.graph.cols[j], f))
        return out


#: Most distinct mode-dependent terms of the degrees of freedom whose case split (the value in
#: each set of modes) `DofFormula.cases` computes (each term doubles the sets at worst)
MAX_DOF_TERMS = 8


@dataclass(frozen=True)
class DofFormula:
    """The degrees of freedom of every regular mode, Val(Σ) = Σ d_j - Σ c_i (the states less
    the consistency equations, docs/theory.md §4.2, §10.4), as ``constant + Σ value·[formula]``:
    ``terms`` are ``(value, formula)`` with distinct formulas (BDDs), the value added in the
    modes of the formula; the constant holds in every regular mode."""
    constant: int
    terms: tuple[tuple[int, Any], ...]
    regular: Any

    def at(self, holds) -> int:
        """The degrees of freedom of one mode; ``holds(formula)``: whether it holds there."""
        return self.constant + sum(v for v, f in self.terms if holds(f))

    def cases(self, bdd, max_terms: int = MAX_DOF_TERMS) -> dict[int, Any] | None:
        """``{degrees of freedom: formula of the regular modes with that many}``, or None
        when there are more than ``max_terms`` terms (the linear form is then the answer)."""
        if len(self.terms) > max_terms:
            return None
        out = {self.constant: self.regular}
        for v, f in self.terms:
            nxt: dict[int, Any] = {}
            for w, g in out.items():
                for x, h in ((w + v, g & f), (w, g & ~f)):
                    if h != bdd.false:
                        nxt[x] = nxt.get(x, bdd.false) | h
            out = nxt
        return dict(sorted(out.items()))


def degrees_of_freedom(a: ImplicitAnalysis) -> DofFormula:
    """The degrees of freedom of every regular mode as one linear form over the formulas of
    the offsets (docs/theory.md §10.4), computed from the offset cases ``d`` and ``c`` without
    enumerating modes: each case ``{value: formula}`` is its most frequent value (0 where the
    variable or equation is absent) plus ``(value - that)·[formula]`` for the others, and the
    terms with the same formula (the same BDD node) are added."""
    bdd = a.space.bdd
    regular = a.space.care & ~a.singular
    constant = 0
    terms: dict[Any, int] = {}
    for sign, cases in ((1, a.d), (-1, a.c)):
        for case in cases:
            parts = [(v, f & regular) for v, f in case.items() if (f & regular) != bdd.false]
            rest = regular
            for _, f in parts:
                rest &= ~f
            if rest != bdd.false:
                parts.append((0, rest))
            if len(parts) == 1:
                constant += sign * parts[0][0]
                continue
            base = max(parts, key=lambda p: (a.space.count(p[1]), -abs(p[0])))[0]
            constant += sign * base
            for v, f in parts:
                if v != base:
                    terms[f] = terms.get(f, 0) + sign * (v - base)
    return DofFormula(constant=constant, regular=regular,
                      terms=tuple((v, f) for f, v in terms.items() if v != 0))


def needs_implicit(model: Model, max_modes: int = MAX_ENUMERATED_MODES) -> bool:
    """Whether the model has more consistent long modes than the explicit enumeration handles
    (the per-mode stage's `TooManyModes`, stopped early: the cost does not grow with the
    number of modes). A model without long guards has one mode, known from its guards
    alone (`has_long_guards`): no equation is looked at."""
    if max_modes >= 1 and not has_long_guards(model):
        return False
    cls = classify_variables(model)
    dae = [eq for eq, d in zip(model.equations, discrete_equation_flags(model)) if not d]
    atoms = long_guard_atoms(model, dae)
    try:
        enumerate_valuations(atoms, guard_definitions(model, cls) if atoms else None,
                             limit=max_modes)
    except TooManyModes:
        return True
    return False


def branch_residuals(space: GuardSpace, res: E.Expr, f):
    """Split ``res`` on its if-expressions whose condition the guards decide: ``[(formula,
    residual)]`` with disjoint formulas covering ``f`` (RR-9334 Defs 30 and 33, docs/theory.md §5.2,
    §5.4; the symbolic form of `mdae_fmu.structure.per_mode.specialize`). As there, a branch's
    literal-zero coefficients read nothing (`mdae_fmu.structure.zero_terms.drop_zero_terms`):
    the ideal diode ``u = s*(if off then 1 else 0)`` reads ``s`` only where ``off`` holds."""
    bdd = space.bdd
    node, cf = None, None
    for n in E.walk(res):
        if isinstance(n, E.If):
            cf = space.cond(n.cond)
            if cf is not None:
                node = n
                break
    if node is None:
        return [(f, res)]
    assert cf is not None       # found together with node
    out = []
    for branch, bf in ((node.then, f & cf), (node.orelse, f & ~cf)):
        if bf != bdd.false:
            picked = drop_zero_terms(E.substitute(res, {node: branch}))
            out.extend(branch_residuals(space, picked, bf))
    return out


def labelled_graph(model: Model) -> tuple[GuardSpace, LabelledGraph]:
    """The model's DAE equations as a `LabelledGraph` over its continuous unknowns (module
    docstring)."""
    cls = classify_variables(model)
    check_declared(model)
    dae = [eq for eq in model.equations if not defines_discrete(eq, cls)]
    atoms = long_guard_atoms(model, dae)
    space = GuardSpace(atoms, fixed_guard_values(atoms), guard_definitions(model, cls))
    bdd = space.bdd
    cols = list(cls.continuous)
    col_index = {n: j for j, n in enumerate(cols)}
    rows, sig, present = [], [], []
    # (an equation without if-expressions is its one residual branch: no walk)
    has_if = {eq.id: bool(ifs) for eq, ifs in zip(model.equations, model.if_conditions)}
    for eq in dae:
        f = space.care
        for lit in eq.guard:
            lf = space.cond(lit.cond)
            if lf is None:
                raise InputError(f"equation {eq.id}: its guard is not decided by the long "
                                 "guards of the model", eq.loc)
            f &= lf if lit.positive else ~lf
        row: dict[int, dict[int, Any]] = {}
        for bf, res in (branch_residuals(space, eq.residual, f) if has_if[eq.id]
                        else ((f, eq.residual),)):
            # (the residual scan's rows)
            add_guarded_entries(row, sigma_row(model, res), col_index, bf)
        rows.append(eq.id)
        sig.append(row)
        present.append(f)
    return space, LabelledGraph(
        bdd=bdd, care=space.care, rows=rows, cols=cols, sig=sig, present=present
    )


def analyze_implicit(model: Model) -> ImplicitAnalysis:
    """Well-posedness, offsets, index and states of every consistent mode at once (module
    docstring), with no mode analysed alone: the transversal is a highest-value one in every
    mode (`mdae_fmu.implicit.sigma.transversal`). A model with a structurally singular mode
    is rejected with the per-mode diagnostic of one such mode and the formula of all of
    them."""
    t0 = time.perf_counter()
    space, g = labelled_graph(model)
    bdd = space.bdd
    m, off = transversal(g)
    index = case_max(bdd, off.c + [{0: off.domain}])
    has_zero = bdd.false
    for dj in off.d:
        has_zero |= dj.get(0, bdd.false)
    nu: dict = {}
    for v, f in index.items():
        for w, fw in ((v + 1, f & has_zero), (v, f & ~has_zero)):
            if fw != bdd.false:
                nu[w] = nu.get(w, bdd.false) | fw
    res = ImplicitAnalysis(
        model=model,
        space=space,
        graph=g,
        match=m.match,
        singular=m.singular,
        undecided=off.undecided,
        c=off.c,
        d=off.d,
        index=index,
        structural_index=nu,
        sweeps=off.sweeps,
        seconds=0.0,
    )
    if off.undecided != bdd.false:
        # `transversal` ends with an exact highest-value matching: a mode left without
        # offsets is a bug of this module, reported with the modes it concerns
        res.diagnostic = (
            f"model {model.name}: internal error: Pryce's offsets iteration has no fixpoint "
            f"in {space.count(off.undecided)} modes ({space.text(off.undecided)}) after the "
            "highest-value matching")
    res.blocks = conditional_blocks(res)
    bad = m.singular
    if bad != bdd.false and res.diagnostic is None:
        pairs, ma = concrete_mode(res, bad)
        n_bad = space.count(bad)
        res.failing_mode = pairs
        res.failing_over = tuple(ma.over_equations)
        res.diagnostic = (
            f"{ma.diagnostic}\n  structurally singular in {n_bad} of {res.n_modes} modes: "
            f"{space.text(bad)}")
    res.seconds = time.perf_counter() - t0
    return res


def concrete_mode(a: ImplicitAnalysis, formula) -> tuple[tuple[tuple[str, bool], ...],
                                                         ModeAnalysis]:
    """One concrete mode of ``formula`` (a non-false formula over the guards, within the
    consistent modes) as ``(guard text, value)`` pairs, and its per-mode analysis (Σ-method,
    Dulmage-Mendelsohn, blocks; `_one_mode`): how a set of modes given as a formula is shown
    with the per-mode stage's diagnostic (docs/multimode.md "One analysis")."""
    pairs = pick_mode(a, formula)
    return pairs, _one_mode(a.model, pairs)


def pick_mode(a: ImplicitAnalysis, formula) -> tuple[tuple[str, bool], ...]:
    """One mode of the non-false ``formula`` over the guards, as ``(guard text, value)``
    pairs (`mdae_fmu.structure.per_mode.ModeAnalysis.valuation`)."""
    space = a.space
    return space.mode_pairs(space.bdd.pick(formula, care_vars=[space.var_of[x]
                                                              for x in space.atoms]))


def _one_mode(model: Model, pairs):
    """The per-mode analysis (Σ-method, DM diagnostics) of one mode."""
    cls = classify_variables(model)
    by_text = dict(pairs)
    cls_atoms = long_guard_atoms(model, [eq for eq in model.equations
                                         if not defines_discrete(eq, cls)])
    from ..structure.printing import expr_text
    val = dict(fixed_guard_values(cls_atoms))
    for a in cls_atoms:
        if a not in val:
            val[a] = by_text[expr_text(a)]
    eqs = specialize(model, val, classes=cls)
    return analyze_mode(model, mode_name(tuple(pairs)), tuple(pairs), eqs, cls.continuous,
                        symbol_table(model), latent=False)


# --- rendering -------------------------------------------------------------------------------

def _case_text(space: GuardSpace, case: dict) -> list[str]:
    return [f"{v} in {space.count(f)} modes: {space.text(f)}" for v, f in sorted(case.items())]


def render_text(a: ImplicitAnalysis, max_lines: int = 60) -> str:
    """A summary whose size grows with the guards and equations, not with the modes."""
    sp_ = a.space
    lines = [f"model {a.model.name}: implicit multimode analysis (docs/theory.md §10.2)",
             f"  {len(sp_.atoms)} long guards, {a.n_modes} consistent modes, "
             f"{len(a.graph.rows)} equations, {len(a.graph.cols)} unknowns, "
             f"{a.sweeps} sweeps, {a.seconds:.2f} s"]
    shown = ", ".join(sp_.names[:max_lines])
    more = f", ... {len(sp_.names) - max_lines} more" if len(sp_.names) > max_lines else ""
    lines.append(f"guards: {shown}{more}" if sp_.names else "guards: none (single mode)")
    lines.append("index (max c):")
    lines += [f"  {t}" for t in _case_text(sp_, a.index)]
    lines.append("nu_S (Pryce's structural index):")
    lines += [f"  {t}" for t in _case_text(sp_, a.structural_index)]
    states = a.state_formulas()
    always = [s for s, f in states if f == sp_.care & ~a.singular]
    lines.append(f"states: {len(always)} in every regular mode"
                 + (f": {', '.join(always[:20])}" + (" ..." if len(always) > 20 else "")
                    if always else ""))
    always_set = set(always)
    cond = [(s, f) for s, f in states if s not in always_set]
    shown_states = max_lines // 5
    for s, f in cond[:shown_states]:
        lines.append(f"  {s} when {sp_.text(f, 100)}")
    if len(cond) > shown_states:
        lines.append(f"  ... {len(cond) - shown_states} more conditional states (--json "
                     "lists them all)")
    always_f = sp_.care & ~a.singular
    shared = [b for b in a.blocks if b.formula == always_f and not b.coarse]
    coarse = [b for b in a.blocks if b.coarse]
    cond_b = [b for b in a.blocks if b.formula != always_f and not b.coarse]
    lines.append(f"blocks (block-triangular form, each with its modes): {len(a.blocks)}; "
                 f"{len(shared)} in every regular mode, {len(cond_b)} conditional"
                 + (f", {len(coarse)} coarse (not split per mode)" if coarse else "")
                 + (f"; largest {max(len(b.equations) for b in a.blocks)} equations"
                    if a.blocks else ""))
    for blk in (coarse + cond_b)[:shown_states]:
        eqs = ", ".join(blk.equations[:8]) + (", ..." if len(blk.equations) > 8 else "")
        unk = ", ".join(blk.unknowns[:8]) + (", ..." if len(blk.unknowns) > 8 else "")
        tag = "coarse " if blk.coarse else ""
        lines.append(f"  {tag}{{{eqs}}} -> {{{unk}}} when {sp_.text(blk.formula, 100)}")
    if len(coarse) + len(cond_b) > shown_states:
        lines.append(f"  ... {len(coarse) + len(cond_b) - shown_states} more (--json lists "
                     "them all)")
    lines.append("conditional transversal (equation -> unknown, when):")
    classes: dict[str, int] = {}
    for _eq, _var, f in a.assignment_formulas():
        classes["always" if f == sp_.care & ~a.singular else "conditional"] = \
            classes.get("always" if f == sp_.care & ~a.singular else "conditional", 0) + 1
    lines.append(f"  {classes.get('always', 0)} assignments in every regular mode, "
                 f"{classes.get('conditional', 0)} conditional")
    lines.append("verdict: " + ("accepted (every consistent mode is structurally nonsingular)"
                                if a.ok else f"rejected\n  {a.diagnostic}"))
    return "\n".join(lines)


def render_json(a: ImplicitAnalysis) -> dict:
    """`render_text`'s content as JSON (docs/analyze-json.md, "implicit")."""
    sp_ = a.space

    def case(c):
        return [{"value": v, "modes": sp_.count(f), "formula": sp_.text(f, 10 ** 6)}
                for v, f in sorted(c.items())]

    return {
        "format": FORMAT, "model": a.model.name,
        "guards": [{"var": f"g{k}", "guard": n} for k, n in enumerate(sp_.names)],
        "modes": a.n_modes, "equations": len(a.graph.rows), "unknowns": len(a.graph.cols),
        "singular": {"modes": sp_.count(a.singular), "formula": sp_.text(a.singular, 10 ** 6)},
        "index": case(a.index), "structural_index": case(a.structural_index),
        "states": [{"state": s, "modes": sp_.count(f), "formula": sp_.text(f, 10 ** 6)}
                   for s, f in a.state_formulas()],
        "blocks": [{"equations": list(blk.equations), "unknowns": list(blk.unknowns),
                    "coarse": blk.coarse, "modes": sp_.count(blk.formula),
                    "formula": sp_.text(blk.formula, 10 ** 6)} for blk in a.blocks],
        "transversal": [{"equation": e, "unknown": v, "formula": sp_.text(f, 10 ** 6)}
                        for e, v, f in a.assignment_formulas()],
        "differentiated": [{"equation": e, "times": k, "modes": sp_.count(f),
                            "formula": sp_.text(f, 10 ** 6),
                            "mode": [[n, v] for n, v in a.one_mode(f)]}
                           for e, k, f in a.differentiated()],
        "degrees_of_freedom": _dof_json(a),
        "mode_changes": a.n_modes * (a.n_modes - 1),
        "failing_mode": None if a.failing_mode is None else
        [{"guard": n, "value": v} for n, v in a.failing_mode],
        "seconds": a.seconds, "exit_code": a.exit_code, "accepted": a.ok,
        "messages": [] if a.ok else [a.diagnostic],
    }


def _dof_json(a: ImplicitAnalysis) -> dict:
    """`degrees_of_freedom` as JSON (docs/cli.md): the linear form, and its case split
    when it has at most `MAX_DOF_TERMS` terms (else None)."""
    sp_ = a.space
    if not a.ok:
        return {"constant": None, "terms": [], "cases": None}
    dof = degrees_of_freedom(a)
    cases = dof.cases(sp_.bdd)
    return {
        "constant": dof.constant,
        "terms": [{"value": v, "modes": sp_.count(f), "formula": sp_.text(f, 10 ** 6)}
                  for v, f in dof.terms],
        "cases": None if cases is None else
        [{"value": v, "modes": sp_.count(f), "formula": sp_.text(f, 10 ** 6)}
         for v, f in cases.items()],
    }
