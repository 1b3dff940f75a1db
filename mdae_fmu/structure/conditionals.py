"""Structural and non-structural conditionals (which conditions define modes).

docs/theory.md §5.2, §5.3 (RR-9334 Defs 30–31): a mode is a valuation of the guards, and
each mode is analysed as its own DAE because a guard changes *the structure* of the system: which
equations exist (an if-equation), or the incidence and differentiation orders of an equation
(an if-expression whose branches read different unknowns, ``s = if g then i else u``). A
conditional whose branches have the same structure (same unknowns with the same derivative
orders, only other coefficients: the Modelica Standard Library's ideal diode
``u = s*(if off then 1 else Ron) + Vknee`` with ``Ron`` a parameter, a piecewise-linear
resistor ``i = if v < -Ve then Gb*v + c else Ga*v``) gives every mode the same signature matrix,
hence the same offsets, states and blocks (docs/theory.md §4, §4.6): enumerating its modes
multiplies the
work for nothing. Such a conditional is an ordinary piecewise expression of the single
structure; its relations are held between events and watched by event indicators
(`mdae_fmu.codegen.events`), so the integrator still stops exactly at the switch.

The criterion is purely structural, on the branches as written: a coefficient that is the
literal 0 in one branch removes the unknown from that branch's incidence (``s*0`` reads no
``s``), so ``u = s*(if off then 1 else 0)`` *is* structural, whereas ``s*Ron`` with a
parameter ``Ron`` keeps ``s`` whatever its value (a parameter is generically nonzero, docs/theory.md
§2.2).

Incidence is only the first test: a condition structural by incidence alone whose modes all
have the same offsets, and whose equations are never differentiated, is demoted to the
event-only class by the pipeline's classification (`mdae_fmu.structure.demotion`, docs/theory.md §4,
§4.6, §11; docs/decisions.md §12).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .. import expr as E
from ..ir import Equation, Model
from .demotion import demotable_atoms
from .valuations import has_long_guards
from .variables import classify_variables, discrete_equation_flags, is_event_guard
from .zero_terms import drop_zero_terms

# An equation whose if-expressions have more distinct conditions than this is not enumerated:
# its conditions are all taken as structural (the former behaviour, never wrong, only slower).
MAX_CONDITIONS_PER_EQUATION = 10


@dataclass(frozen=True)
class ConditionalClasses:
    """Condition atoms (``not c`` identified with c) split by their effect on the structure.

    ``structural``: guard an equation (if-equation) or select branches of different structure
    in some equation; ``why`` gives one reason per structural atom (equation id, text).
    ``event_only``: the other atoms of if-expressions of the DAE equations, in order of
    appearance; they define no mode."""
    structural: frozenset[E.Expr]
    event_only: tuple[E.Expr, ...]
    why: Mapping[E.Expr, tuple[str, str]]
    #: the event_only atoms whose conditionals are all under noEvent(...): piecewise,
    #: without event indicator
    no_event: tuple[E.Expr, ...] = ()
    #: the event_only atoms that are structural by incidence but whose modes share one
    #: structure (`structure.demotion`)
    demoted: tuple[E.Expr, ...] = ()

    def is_structural(self, cond: E.Expr) -> bool:
        return E.strip_not(cond)[0] not in self._event_only_set

    @property
    def _event_only_set(self) -> frozenset[E.Expr]:
        s = self.__dict__.get("_eo")
        if s is None:
            s = frozenset(self.event_only)
            object.__setattr__(self, "_eo", s)
        return s


def _if_atoms(e: E.Expr) -> list[E.Expr]:
    """The condition atoms of the if-expressions of ``e``, in order of appearance."""
    out: dict[E.Expr, None] = {}
    for n in E.walk(e):
        if isinstance(n, E.If):
            out.setdefault(E.strip_not(n.cond)[0], None)
    return list(out)


def _select(e: E.Expr, val: Mapping[E.Expr, bool]) -> E.Expr:
    """``e`` with every if-expression replaced by the branch ``val`` selects."""
    if isinstance(e, E.If):
        atom, pos = E.strip_not(e.cond)
        v = val[atom] if pos else not val[atom]
        return _select(e.then if v else e.orelse, val)
    kids = E.children(e)
    return with_children(e, tuple(_select(k, val) for k in kids)) if kids else e


def with_children(e: E.Expr, new: tuple[E.Expr, ...]) -> E.Expr:
    """``e`` with its direct sub-expressions (`mdae_fmu.expr.children` order) replaced by
    ``new``; ``e`` itself when they are the same objects."""
    if all(a is b for a, b in zip(new, E.children(e))):
        return e
    if isinstance(e, E.BinOp):
        return E.BinOp(e.op, new[0], new[1])
    if isinstance(e, (E.UnOp,)):
        return E.UnOp(e.op, new[0])
    if isinstance(e, E.Der):
        return E.Der(new[0])
    if isinstance(e, E.Call):
        return E.Call(e.func, tuple(new))
    if isinstance(e, E.If):
        return E.If(*new)
    return e


def _row(e: E.Expr, unknowns: frozenset[str]) -> frozenset[tuple[str, int]]:
    """Incidence with derivative orders of ``e`` over ``unknowns`` (literal zeros folded)."""
    return frozenset((n, k) for n, k in E.derivative_orders(drop_zero_terms(e)).items()
                     if n in unknowns)


def structural_atoms_of(residual: E.Expr, unknowns: frozenset[str]
                        ) -> tuple[list[E.Expr], list[E.Expr]]:
    """(structural, non-structural) condition atoms of the if-expressions of one residual: an
    atom is structural when two selections of the branches that differ only in its value give
    the equation different incidences or orders (`_row`). More than
    `MAX_CONDITIONS_PER_EQUATION` atoms: all structural."""
    atoms = _if_atoms(residual)
    if not atoms:
        return [], []
    if len(atoms) > MAX_CONDITIONS_PER_EQUATION:
        return atoms, []
    rows: dict[tuple[bool, ...], frozenset[tuple[str, int]]] = {}
    for bits in itertools.product((False, True), repeat=len(atoms)):
        rows[bits] = _row(_select(residual, dict(zip(atoms, bits))), unknowns)
    structural = []
    for i, a in enumerate(atoms):
        if any(rows[bits] != rows[bits[:i] + (True,) + bits[i + 1:]]
               for bits in rows if not bits[i]):
            structural.append(a)
    return structural, [a for a in atoms if a not in structural]


def classify_conditionals(model: Model, dae_equations: Iterable[Equation] | None = None,
                          continuous: Iterable[str] | None = None) -> ConditionalClasses:
    """Split the long conditions of ``model`` into structural and event-only ones (module
    docstring). ``dae_equations``: the equations of the modes' DAEs (default: those that do
    not define a discrete variable); ``continuous``: their unknowns (default: the per-mode
    stage's classification). Conditions of if-equations, of when-clauses' guards, with event
    operators (``edge``, ``initial()``) and every atom that is structural anywhere stay
    structural."""
    if dae_equations is None or continuous is None:
        # once per model object (immutable), without hashing the whole model
        cached = model.__dict__.get("_conditional_classes")
        if cached is None:
            cached = _classify_default(model)
            model.__dict__["_conditional_classes"] = cached
        return cached
    return _classify(model, tuple(dae_equations), frozenset(continuous))


def _classify_default(model: Model) -> ConditionalClasses:
    """The classification of the pipeline: by incidence (`_classify`), then the demotion of
    the conditions whose modes share one structure (`mdae_fmu.structure.demotion`); a
    condition under ``noEvent`` that stays structural is refused only then."""
    if not has_long_guards(model):
        # no if-equation, no if-expression: nothing to classify (time constant per
        # equation, issue 29)
        return ConditionalClasses(structural=frozenset(), event_only=(), why={})
    cls = classify_variables(model)
    eqs = tuple(eq for eq, d in zip(model.equations, discrete_equation_flags(model)) if not d)
    deferred = _Deferred()
    out = _classify(model, eqs, frozenset(cls.continuous), deferred)
    if deferred.candidates:
        demoted = demotable_atoms(model, out, tuple(deferred.candidates))
        if demoted:
            out = with_demoted(out, demoted, _loud_atoms(model, eqs))
    for atom, eq in deferred.refusals.items():
        if atom in out.structural:
            _refuse_no_event(atom, eq, _INCIDENCE, _SAME_INCIDENCE)
    return out


_INCIDENCE = "its branches differ in incidence or differentiation orders"
_SAME_INCIDENCE = "write both branches with the same variables and derivative orders"


def with_demoted(classes: ConditionalClasses, demoted: tuple[E.Expr, ...], loud: set[E.Expr]
                 ) -> ConditionalClasses:
    """``classes`` with the structural atoms ``demoted`` moved to the event-only class (and
    to the no-event class when none of their conditionals is outside ``noEvent``: ``loud``
    holds the atoms written outside it)."""
    if not demoted:
        return classes
    gone = frozenset(demoted)
    return ConditionalClasses(
        structural=classes.structural - gone,
        event_only=classes.event_only + tuple(demoted),
        why={a: w for a, w in classes.why.items() if a not in gone},
        no_event=classes.no_event + tuple(a for a in demoted if a not in loud),
        demoted=tuple(demoted),
    )


def _loud_atoms(model: Model, equations: tuple[Equation, ...]) -> set[E.Expr]:
    """Condition atoms written outside ``noEvent`` in the if-expressions of ``equations``."""
    conds_of = {id(eq): c for eq, c in zip(model.equations, model.if_conditions)}
    loud: set[E.Expr] = set()
    for eq in equations:
        if conds_of.get(id(eq), True):
            loud.update(_atoms_outside_no_event(eq.residual))
    return loud


@dataclass
class _Deferred:
    """What `_classify` leaves to the demotion: ``refusals``, the conditions under
    ``noEvent`` that are structural by incidence (atom -> equation), refused only if they
    stay structural; ``candidates``, the atoms structural by incidence only (no if-equation
    guard, no when-condition, no event operator)."""
    refusals: dict[E.Expr, Equation] = field(default_factory=dict)
    candidates: list[E.Expr] = field(default_factory=list)


def _classify(model: Model, equations: tuple[Equation, ...], unknowns: frozenset[str],
              deferred: _Deferred | None = None) -> ConditionalClasses:
    """Classification by incidence (module docstring). With ``deferred``, a condition under
    ``noEvent`` that is structural by incidence is recorded there instead of refused, and so
    are the candidates of the demotion (`_Deferred`)."""
    structural: dict[E.Expr, tuple[str, str]] = {}
    candidates: dict[E.Expr, None] = {}
    by_incidence: dict[E.Expr, None] = {}
    hard: set[E.Expr] = set()
    # equations without if-expressions have no atom (one walk per model, `Model.if_conditions`)
    conds_of = {id(eq): c for eq, c in zip(model.equations, model.if_conditions)}
    for eq in equations:
        for lit in eq.guard:
            atom = E.strip_not(lit.cond)[0]
            _refuse_no_event(atom, eq, "it guards which equations exist (an if-equation)",
                             "write it as one equation whose if-expression has branches with "
                             "the same variables and derivative orders")
            structural.setdefault(atom, (eq.id, "guards which equations exist (if-equation)"))
            hard.add(atom)
        if not conds_of.get(id(eq), True):
            continue
        s, ns = structural_atoms_of(eq.residual, unknowns)
        for a in s:
            if deferred is None:
                _refuse_no_event(a, eq, _INCIDENCE, _SAME_INCIDENCE)
            elif _under_no_event(a):
                deferred.refusals.setdefault(a, eq)
            structural.setdefault(a, (eq.id, "selects branches that differ in incidence or "
                                                  "differentiation orders"))
            by_incidence.setdefault(a, None)
        for a in ns:
            candidates.setdefault(a, None)
    when_atoms = {E.unedge(E.strip_not(b.condition)[0]) for w in model.whens
                  for b in w.branches}
    if deferred is not None:
        deferred.candidates.extend(a for a in by_incidence if a not in hard
                                   and a not in when_atoms and not is_event_guard(a))
    for a in candidates:
        if a in structural:
            continue
        if is_event_guard(a):
            structural[a] = ("", "event operator")
        elif a in when_atoms:
            structural[a] = ("", "also a when-condition")
    event_only = tuple(a for a in candidates if a not in structural)
    loud = _loud_atoms(model, equations)
    no_event = tuple(a for a in event_only if a not in loud)
    return ConditionalClasses(
        structural=frozenset(structural), event_only=event_only, why=structural, no_event=no_event
    )


def _under_no_event(atom: E.Expr) -> bool:
    """Whether a condition atom is written with ``noEvent`` (``noEvent(x > 0)``)."""
    return any(isinstance(n, E.Call) and n.func == "noEvent" for n in E.walk(atom))


def _refuse_no_event(atom: E.Expr, eq: Equation, reason: str, same_structure: str) -> None:
    """Refuse a structural condition written under ``noEvent(...)`` (issue 14, item 4).

    A structural condition defines modes (module docstring), and a mode change needs an
    event: the integrator must stop at the switch so that the restart of the change (docs/theory.md
    §11) is computed and applied. ``noEvent`` forbids that event, so such a
    condition has no meaning the exporter could give it: `ModelRejected` (exit 1) naming the
    equation's position, the condition and the two ways out."""
    if not _under_no_event(atom):
        return
    from ..diagnostics import ModelRejected
    from .printing import expr_text
    where = f"{eq.loc}: " if eq.loc else ""
    text = expr_text(atom)
    raise ModelRejected(
        f"{where}equation {eq.id}: the condition {text} is under noEvent but is structural "
        f"({reason}): a change of structure is a mode change, which needs an event to stop "
        f"the integration and compute the restart, and noEvent forbids the event; either "
        f"remove noEvent (the condition then defines modes, and the analysis computes the "
        f"restart of each change) or {same_structure} (it is then a piecewise expression, "
        f"with no mode and no event)")


def _atoms_outside_no_event(e: E.Expr) -> set[E.Expr]:
    """Condition atoms of the if-expressions of ``e`` that are not inside ``noEvent(...)``."""
    out, stack = set(), [(e, False)]
    while stack:
        node, quiet = stack.pop()
        if isinstance(node, E.If) and not quiet:
            atom = E.strip_not(node.cond)[0]
            if not _under_no_event(atom):     # ``if noEvent(c) then``: quiet too
                out.add(atom)
        if isinstance(node, E.Call) and node.func == "noEvent":
            quiet = True
        stack.extend((c, quiet) for c in E.children(node))
    return out


__all__ = ["ConditionalClasses", "classify_conditionals", "structural_atoms_of",
           "drop_zero_terms", "with_children", "MAX_CONDITIONS_PER_EQUATION"]
