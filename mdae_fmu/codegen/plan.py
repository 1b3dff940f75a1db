"""The compiled plan of a model: value slots, FMI variables, the schedule of the mode.

This is the plain-data stage between the structural analysis (`mdae_fmu.structure.per_mode`)
and the C text (`mdae_fmu.codegen.emit`). It decides the variable layout (docs/fmi-mapping.md,
"Value references"):

* Reals live in ``d->r``: the declared Real variables in declaration order, then one slot per
  derivative instance ``der(x)``, ``der(x,2)``... that the mode integrates or computes. The
  Real value reference of a variable is its slot.
* Integers in ``d->i`` and Booleans in ``d->b``, declaration order, value reference = slot.

Each symbol's slot is a typed `mdae_fmu.codegen.slots.Slot` (array, index, left limit, the
model's name); the C generator reads its fields and prints it with `slots.c_slot` only.

and the schedule of the (single) mode (docs/theory.md §11): states
``x..x^(d-1)``, the blocks of the index-reduced system F^c in BTF order, the consistency
equations F^{<c} (drift control, initialization).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, TypedDict

import sympy as sp

from .. import expr as E
from ..diagnostics import ModelRejected
from ..importers.initial import is_free_parameter
from ..ir import Assign, Equation, Model, Reinit, Variable
from ..records import quick_init
from ..structure.per_mode import Instance, ModeAnalysis, ModesReport
from ..symbolic import SymbolTable
from ..work_budget import evaluation_site
from ..structure.discrete_equations import order_discrete
from .blocks import BlockPlan, classify
from .cprinter import SlotValue
from .trees import (C_FUNCTIONS, ONE, solution_of, tree_instance, tree_mul, tree_neg,
                    tree_solution)
from .slots import HOMOTOPY, TIME, Slot, make_slots
from .tearing import MIN_TREE_TEARING, tear_block, tear_tree_block
from .treeblock import tree_block_ok, tree_jacobian


@quick_init
@dataclass(frozen=True, slots=True)
class FmiVariable:
    """One ScalarVariable of modelDescription.xml."""
    name: str
    type: str                     # Real | Integer | Boolean
    vr: int
    causality: str
    variability: str
    initial: str | None
    start: float | int | bool | None
    description: str | None = None
    unit: str | None = None
    derivative_of: str | None = None   # name of the state this variable is the derivative of
    reinit: bool = False
    kind: int = 5                 # settability class, see mdae_model.h (mdae_real_kind)


@quick_init
@dataclass(frozen=True, slots=True)
class StatePlan:
    """A continuous state (an instance ``x^(j)``, j < d_x) and the slot of its derivative.

    ``slot`` is the value of the variable the schedules read and write. Multimode models: a
    union state that some mode computes as an algebraic variable keeps the host-visible state
    apart, in the hidden slot ``store`` (the FMI state variable ``name``, whose value
    ``variable`` takes while a mode integrates it; docs/multimode-fmu.md, "Layout");
    otherwise ``store`` is None and the state is ``slot`` itself."""
    name: str                     # FMI name of the state
    slot: int
    der_slot: int
    nominal: float
    symbol: sp.Symbol = None
    store: int | None = None
    variable: str | None = None   # FMI name of the variable when ``store`` is used

    @property
    def vector_slot(self) -> int:
        """The slot of the state vector entry (fmi2Get/SetContinuousStates)."""
        return self.slot if self.store is None else self.store


class WhenRestart(Protocol):
    """What the event plan reads of the standardized restart of a when-branch
    (`mdae_fmu.codegen.restarts.BranchRestart`; restarts imports this module): its mode-change
    label, ``(Real slot, f(x-))`` per state it moves, and ``(variable or Real slot, num, den)``
    per impulsive variable."""

    @property
    def label(self) -> str: ...

    @property
    def targets(self) -> tuple[tuple[int, sp.Expr], ...]: ...

    @property
    def impulses(self) -> tuple[tuple[str | int, sp.Expr, sp.Expr], ...]: ...


@dataclass(frozen=True)
class CompiledModel:
    """Everything the emitter needs (module docstring)."""
    name: str
    identifier: str
    description: str | None
    table: SymbolTable
    variables: tuple[FmiVariable, ...]
    slots: dict[sp.Basic, SlotValue]    # sympy Symbol -> Slot (C text: a derived value)
    pre_slots: dict[sp.Basic, Slot]     # sympy Symbol -> Slot of its left limit
    real_names: tuple[str, ...]
    n_real: int
    n_int: int
    n_bool: int
    states: tuple[StatePlan, ...]
    blocks: tuple[BlockPlan, ...]
    consistency: tuple[tuple[str, sp.Expr], ...]
    discrete_assignments: tuple[tuple[Slot, sp.Expr], ...]   # (target, expr) in compute
    calculated_parameters: tuple[tuple[Slot, sp.Expr], ...]
    discrete_real_slots: tuple[int, ...]
    state_symbols: frozenset[sp.Basic]
    continuous_symbols: frozenset[sp.Basic]     # symbols whose value changes continuously in time
    parameter_symbols: frozenset[sp.Basic]
    # constant between events: parameters, discrete, pre()
    event_constant_symbols: frozenset[sp.Basic]
    # FMI name -> tuple of FMI names; not filled by the planners (the ModelStructure
    # dependencies are `mdae_fmu.fmu.dependencies.model_structure`'s, over the read graph)
    dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # states whose start is a parameter expression: (Real slot, sympy expression), evaluated in
    # Initialization Mode unless the host sets the state (docs/fmi-mapping.md, "Initialization")
    start_bindings: tuple[tuple[int, sp.Expr], ...] = ()
    guesses: dict[int, float] = field(default_factory=dict)     # Real slot -> start guess
    default_experiment: tuple[float, float, float | None] | None = None
    # single-mode models: the standardized restart of the transient mode each when-branch
    # enters, ``(clause id, branch index) -> restarts.BranchRestart`` (docs/multimode-fmu.md)
    when_restarts: Mapping[tuple[str, int], WhenRestart] = field(default_factory=dict)

    def variable_slot(self, name: str) -> Slot:
        """The value slot of the declared variable ``name`` (`_variable_slots`)."""
        return _variable_slot(self.slots, self.table, name)

    def slot(self, array: str, k: int) -> Slot:
        """The slot ``k`` of value array ``array`` (``r``, ``i``, ``b``), named as its FMI
        variable (hidden slots: no name)."""
        if array == "r":
            return Slot(
                array="r", index=k, name=self.real_names[k] if k < len(self.real_names) else ""
            )
        typ = {"i": "Integer", "b": "Boolean"}[array]
        name = next((v.name for v in self.variables if v.type == typ and v.vr == k), "")
        return Slot(array=array, index=k, name=name)


def model_identifier(name: str) -> str:
    """A C identifier derived from the model name: letters, digits and ``_`` only, not
    starting with a digit, at most 64 characters (docs/fmi-mapping.md)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name.encode("ascii", "replace").decode())
    ident = re.sub(r"_+", "_", ident).strip("_") or "model"
    if ident[0].isdigit():
        ident = "m_" + ident
    return ident[:64]


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def fmi_name(name: str) -> str:
    """The modelDescription.xml form of a name: control characters (which XML 1.0 and FMPy's
    validation reject in names) are written as backslash escapes (``\\n``, ``\\t``,
    ``\\xHH``); everything else, non-ASCII included, is kept."""
    if _CONTROL.search(name) is None:
        return name
    out = []
    for c in name:
        if c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return "".join(out)


def der_name(name: str, order: int) -> str:
    """FMI name of the order-th derivative of ``name``: ``der(x)``, ``der(der(x))``."""
    out = name
    for _ in range(order):
        out = f"der({out})"
    return out


def _variable_slot(slots: Mapping[sp.Basic, SlotValue], table: SymbolTable, name: str) -> Slot:
    """The value slot of the declared variable ``name`` in ``slots`` (`_variable_slots`)."""
    slot = slots[table.sym(name, 0)]
    assert isinstance(slot, Slot)       # a variable's slot, never C text
    return slot


def numeric_value(e: E.Expr | None, table: SymbolTable, values: dict[str, float]
                  ) -> float | None:
    """Value of a start/binding expression given numeric values of the names it uses, None if
    it cannot be evaluated (unknown name, non-numeric)."""
    if e is None:
        return None
    if isinstance(e, E.Const):
        return e.value
    try:
        s = table.to_sympy(e)
        subs = {}
        for sym in s.free_symbols:
            if sym.name not in values:
                return None
            subs[sym] = values[sym.name]
        v = s.xreplace(subs)
        if v in (sp.true, sp.false):
            return bool(v)
        return float(v)
    except (TypeError, ValueError, AttributeError):
        return None


def _single_mode(report: ModesReport) -> ModeAnalysis:
    modes = [m for m in report.modes]
    if report.exit_code != 0 or not modes:
        raise ModelRejected("; ".join(report.messages) or
                            f"model {report.model_name}: the structural analysis rejects it")
    if len(modes) != 1:
        raise ModelRejected(
            f"model {report.model_name} has {len(modes)} modes "
            f"({', '.join(m.name for m in modes)}); this exporter generates single-mode "
            f"schedules only (multimode code generation: see docs/fmi-mapping.md)")
    return modes[0]


def _toposort_params(model: Model, table: SymbolTable) -> list[Variable]:
    """Parameters with a non-constant binding, ordered so that each comes after the
    parameters its binding uses."""
    bound = {v.name: v for v in model.variables
             if v.variability in ("parameter", "constant") and v.binding is not None
             and not isinstance(v.binding, E.Const)}
    order: list[Variable] = []
    seen: set[str] = set()
    busy: set[str] = set()

    def visit(n: str) -> None:
        if n in seen:
            return
        if n in busy:
            raise ModelRejected(f"parameter {n}: cyclic binding")
        busy.add(n)
        binding = bound[n].binding
        assert binding is not None      # `bound`: the parameters with a binding
        for m in sorted(E.refs(binding)):
            if m in bound:
                visit(m)
        busy.discard(n)
        seen.add(n)
        order.append(bound[n])

    for n in bound:
        visit(n)
    return order


def compile_model(model: Model, report: ModesReport) -> CompiledModel:
    """Build the `CompiledModel` of a single-mode model from its `ModesReport`
    (module docstring; docs/theory.md §11 for the schedule and the FMI mapping).
    The reinit statements of when-branches stay literal here; the exporter replaces them by
    the analysed restarts (`mdae_fmu.codegen.restarts.with_transient_restarts`).

    Steps: parameter values (`_parameter_values`), one value slot per variable
    (`_variable_slots`) and per derivative instance (`_instance_slots`), the states
    (`_state_plans`), the block schedule (`_block_plans`), the discrete equations
    (`_discrete_assignments`), the FMI variables (`_fmi_variables`)."""
    mode = _single_mode(report)
    table: SymbolTable = report.symbols
    discrete = set(report.discrete)
    when_assigned = {a.var for w in model.whens for b in w.branches for a in b.actions
                     if isinstance(a, Assign)}
    values = _parameter_values(model, table)
    slots, pre_slots, index = _variable_slots(model, table)
    real_idx = index["Real"]
    real_names, inst_slot = _instance_slots(model, mode, table, real_idx, slots)
    n_real = len(real_names)
    states = _state_plans(model, mode, table, values, inst_slot, real_names)
    state_symbols = frozenset(s.symbol for s in states)     # (the symbols of mode.states)
    starts = _alias_starts(model, table, values)
    sym = table.sym
    parameter_symbols = frozenset(sym(v.name, 0) for v in model.variables
                                  if v.variability in ("parameter", "constant"))
    blocks, consistency = _block_plans(mode, table, starts, parameter_symbols)
    disc_assign = _discrete_assignments(model, report, table, slots, discrete)
    calc_params = _toposort_params(model, table)
    calc: list[tuple[Slot, sp.Expr]] = []
    for v in calc_params:
        assert v.binding is not None        # `_toposort_params`: the bound parameters
        calc.append((_variable_slot(slots, table, v.name), table.to_sympy(v.binding)))
    continuous_names = set(report.unknowns) | set(report.inputs)
    event_assigned = discrete | when_assigned
    fmi_vars, start_bindings, guesses = _fmi_variables(
        model, table, values, index, states, real_names, {v.name for v in calc_params},
        event_assigned, continuous_names)
    if _CONTROL.search("".join(s.name for s in states)) is not None:
        states = [s if _CONTROL.search(s.name) is None else replace(s, name=fmi_name(s.name))
                  for s in states]
    discrete_real_slots = tuple(real_idx[n] for n in real_idx if n in event_assigned) \
        if event_assigned else ()
    continuous_symbols = frozenset(
        [sym(n, 0) for n in continuous_names] + [sym(*key) for key in inst_slot if key[1] > 0])
    pre = table.pre
    compiled = CompiledModel(
        name=model.name, identifier=model_identifier(model.name), description=None,
        table=table, variables=tuple(fmi_vars), slots=slots, pre_slots=pre_slots,
        real_names=tuple(real_names), n_real=n_real, n_int=len(index["Integer"]),
        n_bool=len(index["Boolean"]), states=tuple(states), blocks=tuple(blocks),
        consistency=consistency, discrete_assignments=disc_assign,
        calculated_parameters=tuple(calc), start_bindings=tuple(start_bindings),
        discrete_real_slots=discrete_real_slots,
        state_symbols=state_symbols, continuous_symbols=continuous_symbols,
        parameter_symbols=parameter_symbols,
        event_constant_symbols=frozenset(
            parameter_symbols | {sym(n, 0) for n in event_assigned}
            | {pre(v.name) for v in model.variables}))
    compiled.guesses.update(guesses)
    # no start of its own: an alias's start (docs/fmi-mapping.md); the FMI variables begin
    # with one per model variable, in its order (`_fmi_variables`)
    if starts:
        for v, fv in zip(model.variables, fmi_vars):
            if fv.kind == 5 and v.name in starts and fv.vr not in compiled.guesses:
                compiled.guesses[fv.vr] = starts[v.name]
    return compiled


def _alias_starts(model: Model, table: SymbolTable, values: dict[str, float]
                  ) -> dict[str, float]:
    """Name -> start value of every non-parameter Real that has a numeric start of its own
    or, failing that, through an alias: the variables an unguarded equation ``a = b``
    connects share the start of the first of them (declaration order) that has one, as
    OpenModelica does. Newton guesses of block unknowns and preferred tearing variables
    (`mdae_fmu.codegen.tearing`)."""
    reals = {v.name: v for v in model.variables
             if v.type == "Real" and v.variability not in ("parameter", "constant")}
    parent = {n: n for n in reals}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    aliased = False
    for eq in model.equations:
        r = eq.residual         # ``a - b`` (`E.split_residual`) of two names
        if type(r) is E.BinOp and r.op == "-" and type(r.left) is E.Ref \
                and type(r.right) is E.Ref and not eq.guard \
                and r.left.name in reals and r.right.name in reals:
            parent[find(r.left.name)] = find(r.right.name)
            aliased = True
    own: dict[str, float] = {}
    for n, v in reals.items():
        if v.start is None:
            continue
        val = numeric_value(v.start, table, values)
        if isinstance(val, (int, float)) and not isinstance(val, bool) and math.isfinite(val):
            own[n] = float(val)
    if not aliased:         # every variable its own class: its own start
        return own
    shared: dict[str, float] = {}
    for n in reals:
        if n in own:
            shared.setdefault(find(n), own[n])
    return {n: own.get(n, shared[find(n)]) for n in reals if find(n) in shared}


def _parameter_values(model: Model, table: SymbolTable) -> dict[str, float]:
    """The numeric value of every parameter and constant whose binding (else start) evaluates
    from literals and the values already known, by fixpoint over the declaration order (for
    start attributes and calculated parameters); unbound ones without start are 0 / false."""
    values: dict[str, float] = {}
    for _ in range(len(model.variables) + 1):
        changed = False
        for v in model.variables:
            if v.variability in ("parameter", "constant") and v.name not in values:
                what = "binding" if v.binding is not None else "start value"
                with evaluation_site(v.loc, f"the {what} of {v.variability} {v.name}"):
                    val = numeric_value(v.binding if v.binding is not None else v.start,
                                        table, values)
                if val is None and v.binding is None and v.start is None:
                    val = False if v.type == "Boolean" else 0
                if val is not None:
                    values[v.name] = val
                    changed = True
        if not changed:
            break
    return values


def _variable_slots(model: Model, table: SymbolTable
                    ) -> tuple[dict[sp.Basic, SlotValue], dict[sp.Basic, Slot],
                               dict[str, dict[str, int]]]:
    """One slot per model variable in the array of its type (``d->r``, ``d->i``, ``d->b``, in
    declaration order) and its left limit (``d->pr`` ...): the symbol -> `Slot` maps of the
    values and of the left limits (docs/theory.md §11), and per type name -> index. The
    slots are made in bulk (`make_slots`), one pass over the variables (no map by name kept:
    the plan's peak is the export's)."""
    slots: dict[sp.Basic, SlotValue] = {table.time: TIME, table.homotopy: HOMOTOPY}
    pre_slots: dict[sp.Basic, Slot] = {}
    index: dict[str, dict[str, int]] = {"Real": {}, "Integer": {}, "Boolean": {}}
    arrays = {"Real": "r", "Integer": "i", "Boolean": "b"}
    variables = model.variables
    names = [v.name for v in variables]
    letters = [arrays[v.type] for v in variables]
    positions = []
    for v in variables:
        idx = index[v.type]
        idx[v.name] = len(idx)
        positions.append(idx[v.name])
    values = make_slots(letters, positions, names)
    lefts = make_slots(letters, positions, [f"pre({n})" if n else "" for n in names], pre=True)
    sym, pre = table.sym, table.pre
    for n, value, left in zip(names, values, lefts):
        x = sym(n, 0)
        slots[x] = value
        slots[pre(n)] = pre_slots[x] = left
    return slots, pre_slots, index


def _instance_slots(model: Model, mode: ModeAnalysis, table: SymbolTable, real_idx: dict[str, int],
                    slots: dict[sp.Basic, SlotValue]
                    ) -> tuple[list[str], dict[tuple[str, int], int]]:
    """A Real slot for every derivative instance the mode uses (states, leading instances,
    block unknowns; docs/theory.md §11), after the model's Real variables, named
    ``der(x)`` made unique; adds them to ``slots``. Returns the Real slot names and the
    (name, order) -> slot map (order 0: the variable's own slot)."""
    real_names = [v.name for v in model.variables if v.type == "Real"]
    first = len(real_names)
    taken = {v.name for v in model.variables}
    inst_slot: dict[tuple[str, int], int] = {}
    new: list[tuple[str, int]] = []
    for group in (mode.states, mode.leading, _block_unknowns(mode)):
        for i in group:
            key = (i.name, i.order)
            if key in inst_slot:
                continue
            if key[1] == 0:
                inst_slot[key] = real_idx[key[0]]
                continue
            inst_slot[key] = len(real_names)
            label = f"der({key[0]})" if key[1] == 1 else der_name(*key)
            while label in taken:
                label += "'"
            taken.add(label)
            real_names.append(label)
            new.append(key)
    made = make_slots(["r"] * len(new), range(first, len(real_names)), real_names[first:])
    sym = table.sym
    for key, slot in zip(new, made):
        slots[sym(*key)] = slot
    return real_names, inst_slot


def _block_unknowns(mode: ModeAnalysis) -> Iterator[Instance]:
    """The unknowns of the mode's blocks in schedule order (a block of one equation without
    building its tuple, `Block.scalar`)."""
    for blk in mode.blocks:
        scalar = blk.scalar
        if scalar is not None:
            yield scalar[2]
        else:
            yield from blk.unknowns


def _state_plans(model: Model, mode: ModeAnalysis, table: SymbolTable, values: dict[str, float],
                 inst_slot: dict[tuple[str, int], int], real_names: list[str]) -> list[StatePlan]:
    """The `StatePlan` of every state instance of the mode (docs/theory.md §11: the
    highest-order instances below the leading ones): its slot, its derivative's slot and its
    nominal (the variable's nominal attribute when it evaluates to a finite nonzero number)."""
    # (no `Model.var_index`: the export does not build that map of every variable)
    nominals = {v.name: v.nominal for v in model.variables if v.nominal is not None}
    sym = table.sym
    states = []
    for inst in mode.states:
        name, order = inst.name, inst.order
        slot = inst_slot[name, order]
        der_slot = inst_slot.get((name, order + 1))
        if der_slot is None:
            raise ModelRejected(f"internal: no derivative slot for state {inst}")
        nominal = 1.0
        if order == 0:
            declared = nominals.get(name)
            nv = None if declared is None else numeric_value(declared, table, values)
            if nv is not None and math.isfinite(nv) and nv != 0:
                nominal = abs(float(nv))
        states.append(StatePlan(name=real_names[slot], slot=slot, der_slot=der_slot,
                                nominal=nominal, symbol=sym(name, order)))
    return states


def _block_plans(mode: ModeAnalysis, table: SymbolTable,
                 starts: Mapping[str, float] | None = None,
                 params: frozenset[sp.Basic] = frozenset()
                 ) -> tuple[list[BlockPlan], tuple[tuple[str, sp.Expr], ...]]:
    """The `BlockPlan` of every block of the mode's BTF schedule (docs/theory.md §11),
    and its consistency equations F^{<c} as (label, residual). One undifferentiated equation
    that its expression tree solves explicitly is planned on the tree: no sympy. A Newton
    block is torn (`mdae_fmu.codegen.tearing`: `tear_block` on the sympy path,
    `tear_tree_block` for tree blocks of at least `MIN_TREE_TEARING` equations; ``starts``:
    the variables with a start value (`_alias_starts`), whose symbols are preferred as
    tearing variables, made at the first block torn; ``params``: the symbols of the
    parameters and constants, the only divisors tearing allows)."""
    solved = {(le.eq_id, le.k): le for le in mode.solved}
    blocks: list[BlockPlan] = []
    sym = table.sym
    made: list[frozenset[sp.Basic]] = []

    def started() -> frozenset[sp.Basic]:
        if not made:
            made.append(frozenset(sym(n, 0) for n in (starts or {})))
        return made[0]

    for blk in mode.blocks:
        scalar = blk.scalar
        if scalar is not None:      # (nearly every block: one equation, one unknown)
            eq_id, k, u = scalar
            label = eq_id + ("'" * k if k <= 2 else f"^({k})")      # `_eq_label`
            tree = solved[eq_id, k].tree
            inst = (u.name, u.order)
            unknowns: tuple[sp.Expr, ...] = (sym(*inst),)
        else:
            label = "+".join(_eq_label(e, k) for e, k in blk.equations)
            tree = None
            u = blk.unknowns[0]
            inst = (u.name, u.order)
            unknowns = tuple(sym(u.name, u.order) for u in blk.unknowns)
        sol = None if tree is None else _assigned(tree, inst)
        if sol is None and tree is not None:
            sol = tree_solution(tree, inst)
        if tree is not None and sol is not None:
            blocks.append(
                BlockPlan(label=label, unknowns=unknowns, _residuals=None, tree=tree, table=table,
                          solution=(inst, sol))
            )
        elif tree_block_ok(kept := tuple(solved[key].tree for key in blk.equations)):
            trees = tuple(t for t in kept if t is not None)
            assert len(trees) == len(kept)      # `tree_block_ok`: every equation on its tree
            # a small block of plain undifferentiated equations: Newton or linear on the
            # tree, no sympy (mdae_fmu.codegen.treeblock)
            plan = BlockPlan(
                label=label, unknowns=unknowns, _residuals=None, tree=None, table=table, trees=trees
            )
            torn = None
            if len(unknowns) >= MIN_TREE_TEARING:
                kj = tree_jacobian(trees, [(u.name, u.order) for u in blk.unknowns])
                if kj is not None and kj[0] == "newton":
                    torn = tear_tree_block(plan, started(), params)
            blocks.extend(torn if torn is not None else [plan])
        else:
            plan = BlockPlan(
                label=label,
                unknowns=unknowns,
                _residuals=tuple(solved[key].expr for key in blk.equations),
            )
            torn = tear_block(plan, started(), params) \
                if len(unknowns) > 1 and classify(plan) == "newton" else None
            blocks.extend(torn if torn is not None else [plan])
    consistency = tuple((_eq_label(le.eq_id, le.k), le.expr) for le in mode.consistency)
    return blocks, consistency


def _assigned(tree: E.Expr, u: tuple[str, int]) -> E.Expr | None:
    """`tree_solution` of a residual ``u - rhs`` or ``c*u - rhs`` whose ``c`` and ``rhs`` are
    plain arithmetic free of ``u`` (the forms of nearly every equation of a large model,
    ``der(x) = f``, ``m*der(v) = f``, ``y = f``), by one walk of ``c`` and ``rhs``
    without the recursion of `linear_coefficients`: the coefficients ``a = c`` (1 for
    ``u - rhs``) and ``b = -rhs`` as `linear_coefficients` writes them, solved by
    `solution_of`. None when the residual has another form (then `tree_solution` decides).
    The nodes accepted are those `linear_coefficients` accepts (docs/theory.md §11: explicit
    assignment of a scalar block)."""
    if type(tree) is not E.BinOp or tree.op != "-":
        return None
    left = tree.left
    if tree_instance(left) == u:
        coefficient = None
    elif type(left) is E.BinOp and left.op == "*" and tree_instance(left.right) == u:
        coefficient = left.left
    else:
        return None
    name, order = u
    stack = [tree.right] if coefficient is None else [tree.right, coefficient]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        if type(n) is E.BinOp:
            if n.op not in _ARITHMETIC:
                return None
            push(n.right)
            push(n.left)
        elif type(n) is E.Ref:
            if order == 0 and n.name == name:
                return None
        elif type(n) is E.Const:
            if isinstance(n.value, bool):
                return None
        elif type(n) is E.UnOp:
            if n.op != "-" and n.op != "+":
                return None
            push(n.arg)
        elif type(n) is E.Der:
            if tree_instance(n) in (None, u):
                return None
        elif type(n) is E.Call:
            if n.func not in C_FUNCTIONS or len(n.args) != 1:
                return None
            push(n.args[0])
        else:
            return None
    # linear_coefficients: ``a = tree_mul(c, 1)``, ``b = tree_sub(None, rhs)``
    a = ONE if coefficient is None else tree_mul(coefficient, ONE)
    return solution_of(a, tree_neg(tree.right))


_ARITHMETIC = frozenset(("+", "-", "*", "/", "^"))


def _discrete_assignments(model: Model, report: ModesReport, table: SymbolTable,
                          slots: dict[sp.Basic, SlotValue], discrete: set[str]
                          ) -> tuple[tuple[Slot, sp.Expr], ...]:
    """The discrete equations (guard definitions, ``var = expr``) as ``(slot, sympy value)``
    in evaluation order (`order_discrete`), evaluated with frozen relations (docs/theory.md
    §5.4). `ModelRejected` for one that is not ``variable = expression`` or is guarded."""
    disc_assign: list[tuple[str, E.Expr, Equation]] = []
    for eq_id in getattr(report, "discrete_equations", ()):
        eq = next(e for e in model.equations if e.id == eq_id)
        lhs, rhs = E.split_residual(eq.residual)
        if isinstance(lhs, E.Ref) and lhs.name in discrete:
            target, value = lhs.name, rhs
        elif isinstance(rhs, E.Ref) and rhs.name in discrete:
            target, value = rhs.name, lhs
        else:
            raise ModelRejected(f"equation {eq_id}: a discrete equation must read "
                                f"'variable = expression'")
        if eq.guard:
            raise ModelRejected(f"equation {eq_id}: guarded discrete equations are not "
                                f"supported by the single-mode exporter")
        disc_assign.append((target, value, eq))
    ordered = [(t, table.to_sympy(v)) for t, v in order_discrete(disc_assign)]
    return tuple((_variable_slot(slots, table, t), e) for t, e in ordered)


def _fmi_variables(model: Model, table: SymbolTable, values: dict[str, float],
                   index: dict[str, dict[str, int]], states: list[StatePlan],
                   real_names: list[str], calc_names: set[str], event_assigned: set[str],
                   continuous_names: set[str]
                   ) -> tuple[list[FmiVariable], list[tuple[int, sp.Expr]], dict[int, float]]:
    """The FMI variables (docs/fmi-mapping.md; docs/theory.md §11): one per model variable,
    its causality, variability, initial and start from its declaration and its role (constant,
    parameter, calculated parameter, input, state, discrete, computed), then one per derivative
    instance slot; names made FMI names (`fmi_name`), duplicates refused. Also the start
    values bound to expressions (``(slot, sympy)``) and the start values of computed Reals
    (Newton guesses, slot -> value). ``event_assigned``: the discrete variables and the
    variables when-clauses assign. One pass over the variables (`FmiVariable` is a
    `quick_init` record: one per variable of a large model)."""
    reinit_targets = {a.var for w in model.whens for b in w.branches for a in b.actions
                      if isinstance(a, Reinit)}
    state_of_slot = {s.slot: s for s in states}
    der_of = {s.der_slot: s.name for s in states}
    fmi_vars: list[FmiVariable] = []
    append = fmi_vars.append
    start_bindings: list[tuple[int, sp.Expr]] = []
    guesses: dict[int, float] = {}
    fixed_kinds = ("parameter", "constant")
    for v in model.variables:
        typ, name = v.type, v.name
        vr = index[typ][name]
        start = v.start
        start_val = None if start is None else numeric_value(start, table, values)
        causality = v.causality if v.causality in ("input", "output") else "local"
        if v.variability in fixed_kinds or v.causality == "input":
            append(_declared_fmi_variable(v, vr, causality, start_val, table, values,
                                          calc_names, start_bindings))
        elif typ == "Real" and vr in state_of_slot:
            if start is not None and E.refs(start):
                start_bindings.append((vr, table.to_sympy(start)))
            append(FmiVariable(name=name, type=typ, vr=vr, causality=causality,
                                 variability="continuous",
                                 initial="exact" if v.fixed else "approx",
                                 start=float(start_val if start_val is not None else 0.0),
                                 description=v.description, unit=v.unit,
                                 derivative_of=der_of.get(vr), reinit=name in reinit_targets,
                                 kind=3))
        elif name in event_assigned:
            append(FmiVariable(name=name, type=typ, vr=vr, causality=causality,
                                 variability="discrete", initial="exact",
                                 start=_typed(start_val if start_val is not None else 0, typ),
                                 description=v.description, unit=v.unit, kind=1))
        else:
            if start_val is not None and typ == "Real":
                guesses[vr] = float(start_val)
            append(FmiVariable(name=name, type=typ, vr=vr, causality=causality,
                                 variability="continuous" if name in continuous_names
                                 else "discrete", initial=None, start=None,
                                 description=v.description, unit=v.unit,
                                 derivative_of=der_of.get(vr) if typ == "Real" else None,
                                 kind=5))
    for slot in range(len(index["Real"]), len(real_names)):
        state = slot in state_of_slot       # a state (kind 3) or a computed value (kind 5)
        append(FmiVariable(name=real_names[slot], type="Real", vr=slot, causality="local",
                             variability="continuous", initial="approx" if state else None,
                             start=0.0 if state else None, derivative_of=der_of.get(slot),
                             kind=3 if state else 5))
    if _CONTROL.search("".join(fv.name for fv in fmi_vars)) is not None:
        fmi_vars = [fv if _fmi_named(fv) else
                    replace(fv, name=fmi_name(fv.name),
                            derivative_of=None if fv.derivative_of is None
                            else fmi_name(fv.derivative_of)) for fv in fmi_vars]
    names = [fv.name for fv in fmi_vars]
    if len(set(names)) != len(names):
        seen_names: set[str] = set()
        for n in names:
            if n in seen_names:
                raise ModelRejected(f"two variables have the FMI name {n!r}")
            seen_names.add(n)
    return fmi_vars, start_bindings, guesses


def _declared_fmi_variable(v: Variable, vr: int, causality: str, start_val: float | None,
                           table: SymbolTable, values: dict[str, float], calc_names: set[str],
                           start_bindings: list[tuple[int, sp.Expr]]) -> FmiVariable:
    """The FMI variable of a constant, a parameter or an input (`_fmi_variables`), whose
    entry its declaration alone decides; appends a free parameter's start binding to
    ``start_bindings``."""
    # what every variable's entry but a constant's says of it
    named = _Naming(name=v.name, type=v.type, vr=vr, description=v.description, unit=v.unit)
    if v.variability == "constant":
        return FmiVariable(
            name=v.name,
            type=v.type,
            vr=vr,
            causality=causality if causality == "output" else "local",
            variability="constant",
            initial="exact",
            start=_typed(values.get(v.name, 0), v.type),
            description=v.description,
            unit=v.unit,
            kind=0,
        )
    if v.variability == "parameter":
        if v.name in calc_names:
            return FmiVariable(**named, causality="calculatedParameter", variability="fixed",
                               initial="calculated", start=None, kind=2)
        if is_free_parameter(v):
            # an unknown of the initial system (codegen/initialization.py), started
            # from its start value, which the host may set like a free state's
            if v.start is not None and E.refs(v.start):
                start_bindings.append((vr, table.to_sympy(v.start)))
            return FmiVariable(**named, causality="calculatedParameter", variability="fixed",
                               initial="approx", start=_typed(start_val or 0, v.type), kind=3)
        return FmiVariable(**named, causality="parameter", variability="fixed",
                           initial="exact", start=_typed(values.get(v.name, 0), v.type),
                           kind=1)
    # a discrete input (Integer, Boolean, a Real declared discrete) changes at events
    # only: Model Exchange refuses it in Continuous-Time Mode (kind 6, mdae_model.h)
    discrete = v.type != "Real" or v.variability == "discrete"
    return FmiVariable(**named, causality="input",
                       variability="discrete" if discrete else "continuous", initial=None,
                       start=_typed(start_val if start_val is not None else 0, v.type),
                       kind=6 if discrete else 4)


def _fmi_named(fv: FmiVariable) -> bool:
    """Whether the names of ``fv`` are already FMI names (`fmi_name`: no control character;
    nearly every model), so that it need not be copied."""
    return _CONTROL.search(fv.name) is None and (
        fv.derivative_of is None or _CONTROL.search(fv.derivative_of) is None)


class _Naming(TypedDict):
    """What every FMI variable's entry but a constant's says of its model variable."""
    name: str
    type: str
    vr: int
    description: str | None
    unit: str | None


def _typed(v: float, typ: str) -> float | int | bool:
    if typ == "Boolean":
        return bool(v)
    if typ == "Integer":
        return int(v)
    return float(v)


def _eq_label(eq_id: str, k: int) -> str:
    return eq_id + ("'" * k if k <= 2 else f"^({k})")
