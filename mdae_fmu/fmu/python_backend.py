"""``export --backend python``: the same plan as the C FMU, run by numpy/scipy in a pythonfmu
Co-Simulation FMU (docs/python-backend.md).

The analysis and the plan are the C exporter's (`mdae_fmu.analysis.Analysis`, read by its
guarded schedule as `mdae_fmu.fmu.export.plan_code` reads it: `mdae_fmu.codegen.plan.compile_model`
for the wrapped schedule of a model of one mode, `GuardedSchedule.single`, docs/theory.md §10.14;
the guarded block schedule of `mdae_fmu.codegen.guarded.plan_guarded` for any other,
`mdae_fmu.codegen.events.plan_events`):
value slots, block schedules (docs/theory.md §11; the guarded one of §10.2, one schedule for
all modes, each block variant guarded by a formula over the guard bits), event indicators and
the local restarts of the block variants at a mode change (docs/decisions.md §9).
`python_plan` writes them as plain JSON data: every expression a tree of ``[op, ...]`` lists
over slots and numbers (`_TreeWriter`), which the runtime (`mdae_fmu.fmu.pyfmu_runtime`,
shipped in the FMU, numpy and scipy only) walks; no model text is ever executed as Python
code. `python_fmu_bytes` packages the plan, the runtime and the pythonfmu slave class
(`mdae_fmu.fmu.pyfmu_slave`) with pythonfmu's ``FmuBuilder``.

What the plan holds that the runtime does not implement is refused here, with the feature
named (`ModelRejected`, exit code 1): block restarts without closed form (the delta-scheme,
S3), multimode models without a guarded schedule, samples, initial systems
on computed variables, ``terminate`` and ``assert`` inside when-clauses, when-clauses in
multimode models, user functions, ``edge``/``change``.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import sympy as sp

from ..diagnostics import ModelRejected
from ..ir import Model
from ..codegen.blocks import classify, linear_split, partial_derivative
from ..codegen.events import ASSERT_TOL, plan_events, signed_distance
from ..codegen.guarded import (guarded_initialization, held_discrete, held_relations,
                               plan_guarded, settled_assignments)
from ..codegen.initialization import plan_initialization
from ..codegen.layout import max_mode_changes
from ..codegen.plan import CompiledModel, compile_model
from ..codegen.restarts import base_name, slot_names, with_transient_restarts
from ..codegen.slots import Slot
from ..symbolic import as_sympy

RUNTIME_MODULE = "mdae_pyfmu_runtime"
SLAVE_MODULE = "mdae_pyfmu_slave"
PLAN_FILE = "mdae_plan.json"
PLAN_FORMAT = 1

_FUNCS = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
          "exp", "log", "Abs", "sign", "Min", "Max", "floor", "ceiling"}
_RELS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


class _Unsupported(Exception):
    pass


def check_available() -> None:
    """`ModelRejected` (exit 1) naming the missing extra when pythonfmu is not installed."""
    try:
        import pythonfmu  # noqa: F401
    except ImportError:
        raise ModelRejected("--backend python needs pythonfmu: pip install "
                            "'mdae_fmu[python]'") from None


def slot_of(slot) -> list:
    """``["v", array, index]`` of a `Slot` of the plan (``["t"]`` for time); the array is
    ``r``, ``i``, ``b`` or their left limits ``pr``, ``pi``, ``pb``."""
    if type(slot) is not Slot or slot.array == "homotopy":
        raise _Unsupported(f"value {slot}")
    if slot.array == "time":
        return ["t"]
    return ["v", ("p" if slot.pre else "") + slot.array, slot.index]


class _TreeWriter:
    """sympy expression -> JSON tree (module docstring). ``slots``: Symbol -> tree leaf;
    ``relations``: frozen relation -> its index (read as ``["rel", k]``)."""

    def __init__(self, slots: dict, relations: dict):
        self.slots = slots
        self.relations = relations

    def __call__(self, e) -> list:
        e = as_sympy(e)
        if e.is_Symbol:
            leaf = self.slots.get(e)
            if leaf is None:
                raise _Unsupported(f"the variable {e}")
            return leaf
        if e is sp.true or e is sp.false:
            return ["c", e is sp.true]
        if e.is_Number:
            if e in (sp.nan, sp.zoo, sp.oo, -sp.oo):
                return ["c", float(e) if e != sp.zoo else float("nan")]
            return ["c", float(e)]
        if e.is_Add:
            return ["+"] + [self(a) for a in e.args]
        if e.is_Mul:
            return ["*"] + [self(a) for a in e.args]
        if e.is_Pow:
            return ["^", self(e.args[0]), self(e.args[1])]
        if isinstance(e, sp.Piecewise):
            out: list = ["if"]
            for expr, cond in e.args:
                out.append([self(cond), self(expr)])
            return out
        if isinstance(e, sp.core.relational.Relational):
            k = self.relations.get(e)
            if k is not None:
                return ["rel", k]
            return ["cmp", _RELS[e.rel_op], self(e.lhs), self(e.rhs)]
        if isinstance(e, sp.And):
            return ["and"] + [self(a) for a in e.args]
        if isinstance(e, sp.Or):
            return ["or"] + [self(a) for a in e.args]
        if isinstance(e, sp.Not):
            return ["not", self(e.args[0])]
        if isinstance(e, (sp.Function, sp.Min, sp.Max)):
            name = type(e).__name__
            if name == "initial":
                return ["initial"]
            if name not in _FUNCS:
                raise _Unsupported(f"the function {name}()")
            return ["f", name] + [self(a) for a in e.args]
        if e.is_number:
            return ["c", float(e)]
        raise _Unsupported(f"the expression {type(e).__name__}")


def _block(blk, w: _TreeWriter, slot_index: dict) -> dict:
    """One block of a schedule: ``lin`` (one unknown, ``a*u + b = 0``) or ``newton``
    (residuals and their analytic Jacobian; a linear block converges in one iteration)."""
    us = blk.unknowns
    res = blk.residuals
    if len(us) == 1:
        split = linear_split(res[0], us[0])
        if split is None:
            split = linear_split(sp.expand(res[0]), us[0])
        if split is not None:
            return {"kind": "lin", "label": blk.label, "u": slot_index[us[0]],
                    "a": w(split[0]), "b": w(split[1])}
    jac = [[i, j, w(d)] for i, r in enumerate(res) for j, u in enumerate(us)
           for d in [partial_derivative(r, u)] if d != 0]
    return {"kind": "newton", "label": blk.label, "u": [slot_index[u] for u in us],
            "F": [w(r) for r in res], "J": jac, "linear": classify(blk) == "linear"}


def _projection(cm: CompiledModel, w: _TreeWriter, consistency) -> dict:
    """The consistency equations F^{<c} of a mode and their Jacobian in the states they
    read, for the minimal-norm projection at a mode change (docs/multimode-fmu.md)."""
    state_slot = {s.symbol: s.slot for s in cm.states}
    syms = sorted({s for _, e in consistency for s in e.free_symbols if s in state_slot},
                  key=lambda s: state_slot[s])
    return {"F": [w(e) for _, e in consistency],
            "J": [[i, j, w(d)] for i, (_, e) in enumerate(consistency)
                  for j, x in enumerate(syms) for d in [partial_derivative(e, x)] if d != 0],
            "slots": [state_slot[x] for x in syms]}


def _assertion(w: _TreeWriter, cond) -> list:
    """An assertion condition whose order relations hold up to the assertion tolerance
    (``["ge", a, b]``, as `mdae_fmu.codegen.emit.assertion_condition` prints them)."""
    if isinstance(cond, (sp.And, sp.Or)):
        return ["and" if isinstance(cond, sp.And) else "or"] + [_assertion(w, a)
                                                                for a in cond.args]
    if isinstance(cond, sp.Not):
        return ["not", _assertion(w, cond.args[0])]
    if isinstance(cond, sp.core.relational.Relational) and cond.rel_op in ("<", "<=", ">", ">="):
        a, b = (cond.lhs, cond.rhs) if cond.rel_op in (">", ">=") else (cond.rhs, cond.lhs)
        return ["ge", w(a), w(b)]
    return w(cond)


def _message(w: _TreeWriter, msg) -> list:
    """An assertion message (`mdae_fmu.codegen.messages.Message`): its literal parts as
    strings, each value as ``["f", kind, value, minimumLength, leftJustified,
    significantDigits]``, formatted by the run time when the assertion fails."""
    return [p if isinstance(p, str) else
            ["f", p.kind, w(p.value), w(p.min_length), w(p.left), w(p.digits)] for p in msg]


def _initial_system(cm: CompiledModel, w: _TreeWriter, init) -> dict:
    """The initial system (consistency and initial equations) and its Jacobian in the free
    states it determines (`mdae_fmu.codegen.initialization`), solved by minimal-norm
    Gauss-Newton from the start values."""
    sym_of = {s.slot: s.symbol for s in cm.states}
    syms = [sym_of[k] for k in init.unknown_slots]
    return {"F": [w(e) for _, e in init.rows],
            "J": [[i, j, w(d)] for i, (_, e) in enumerate(init.rows)
                  for j, x in enumerate(syms) for d in [partial_derivative(e, x)] if d != 0],
            "slots": list(init.unknown_slots)}


def _left_writer(cm: CompiledModel, w: _TreeWriter, right: dict | None = None):
    """A writer for restart formulas: ``x-`` (and parameters) read the current values (the
    left limits at the instant), ``x+`` the instant's new value ``["new", j]``."""
    names = slot_names(cm)
    other = getattr(names, "other", {})

    def write(e):
        slots = dict(w.slots)
        for s in as_sympy(e).free_symbols:
            n = base_name(s)
            if s.name.endswith("+") and right is not None and names.get(n) in right:
                slots[s] = ["new", right[names[n]]]
            elif n == "time" and n not in names:
                slots[s] = ["t"]
            elif n not in names and n in other:
                slots[s] = slot_of(other[n])
            elif n in names:
                slots[s] = ["v", "r", names[n]]
        return _TreeWriter(slots, w.relations)(e)
    return write


def python_plan(model: Model, analysis) -> dict:
    """The JSON plan of ``model`` from its accepted ``analysis`` (module docstring); raises
    `ModelRejected` for what the Python runtime does not run."""
    try:
        return _python_plan(model, analysis)
    except _Unsupported as err:
        raise ModelRejected(f"model {model.name}: the python backend does not support {err} "
                            "(use the C backend: mdae-fmu export --backend c)") from None


def _python_plan(model: Model, analysis) -> dict:
    model = analysis.code_model or model
    if analysis.guarded is not None:        # (export's `scheduled` gives every analysis one)
        report = analysis.guarded.single
    else:                                   # (an analysis made by hand: its per-mode report)
        report = analysis.code_modes or analysis.modes
        if report is not None and len(report.modes) > 1:
            report = None
    guarded = None
    if report is None:
        if analysis.guarded is None:
            why = analysis.guarded_refusal or "the analysis built no guarded schedule"
            raise _Unsupported(f"a multimode model without a guarded schedule ({why})")
        guarded = plan_guarded(model, analysis.guarded)
        if any(gb.delta is not None for gb in guarded.blocks):
            raise _Unsupported("a mode change without closed-form restart (delta-scheme, S3)")
        cm = guarded.compiled
        ev = plan_events(model, cm, extra_exprs=guarded.guards + guarded.watched,
                         steady=guarded.steady_states)
        init = guarded_initialization(model, guarded)
    else:
        cm = with_transient_restarts(model, compile_model(model, report), analysis.automaton)
        ev = plan_events(model, cm, steady=cm.state_symbols)
        init = plan_initialization(model, cm)
    if init.needs_compute:
        raise _Unsupported("an initial system on computed variables")
    if set(init.unknown_slots) - {s.slot for s in cm.states}:
        raise _Unsupported("parameters or discrete Reals computed by the initial system")
    if init.assignments:
        raise _Unsupported("initial equations of discrete Integer or Boolean variables")
    if ev.samples:
        raise _Unsupported("sample()")
    if getattr(model, "functions", None):
        raise _Unsupported("user functions")
    relations = {r.relation: k for k, r in enumerate(ev.relations)}
    banded = guarded.banded if guarded is not None else ()
    band_syms = {sym for sym, _, _ in banded}
    # homotopy's lambda is left out: an equation with homotopy() is then refused as
    # reading an unknown variable (the C backend continues the initial system in it)
    slots = {sym: slot_of(c) for sym, c in cm.slots.items()
             if sym not in band_syms and sym != cm.table.homotopy}
    w = _TreeWriter(slots, relations)
    for sym, rel, b in banded:
        # a left-limit guard keeps its previous value (hidden Boolean b) while its signed
        # distance lies within half the hysteresis (docs/multimode-fmu.md, "Left-limit
        # guards"); during initialization the relation is exact (strict or not)
        dist, strict = signed_distance(rel)
        slots[sym] = ["band", w(dist), b, strict]
    slot_index = {sym: leaf[2] for sym, leaf in slots.items()
                  if leaf[0] == "v" and leaf[1] == "r"}
    plan: dict = {
        "format": PLAN_FORMAT, "name": cm.name, "identifier": cm.identifier,
        "n": [cm.n_real, cm.n_int, cm.n_bool],
        "variables": [dict(name=v.name, type=v.type, vr=v.vr, causality=v.causality,
                           variability=v.variability, initial=v.initial, start=v.start,
                           description=v.description, kind=v.kind) for v in cm.variables],
        "states": [dict(name=s.name, slot=s.slot, der=s.der_slot, nominal=s.nominal,
                        store=s.store) for s in cm.states],
        "guesses": [[k, v] for k, v in sorted(cm.guesses.items())],
        "calculated": [[slot_of(t), w(e)] for t, e in cm.calculated_parameters],
        "start_bindings": [[k, w(e)] for k, e in cm.start_bindings],
        "discrete": [[slot_of(t), w(e)] for t, e in cm.discrete_assignments]
        + [[["v", "b", b], slots[sym]] for sym, _, b in banded],
        "init": _initial_system(cm, w, init),
        # its rows read the guards: the discrete equations run before it is solved
        "init_mode_dependent": init.mode_dependent,
        "relations": [dict(s=w(r.s), strict=r.strict,
                           rate=None if r.rate is None else w(r.rate))
                      for r in ev.relations],
        "assertions": [[_assertion(w, c), _message(w, msg), level]
                       for c, msg, level in ev.assertions],
        "assert_tol": ASSERT_TOL,
    }
    if guarded is None:
        plan["modes"] = [dict(label="", blocks=[_block(b, w, slot_index) for b in cm.blocks],
                              zero=[], stores=[], key=0,
                              project=_projection(cm, w, cm.consistency))]
        plan["guards"] = []
        plan["branches"] = [_branch(cm, w, b) for b in ev.branches]
        plan["clauses"] = [list(c) for c in ev.clauses]
        plan["assignment_order"] = [list(x) for x in ev.assignment_order]
    else:
        if ev.branches:
            raise _Unsupported("when-clauses in a multimode model")
        plan["modes"] = []
        plan["guards"] = [w(g) for g in guarded.guards]
        plan["guard_names"] = list(guarded.guard_names)
        plan["mode_slot"] = guarded.mode_slot
        plan["branches"] = []
        plan["guarded"] = _guarded_schedule(guarded, w, slot_index)
        # re-evaluated after a mode change's restart, as the C FMU's mdae_settle_discrete
        plan["settled"] = [[slot_of(t), w(e)] for t, e in settled_assignments(guarded)]
        # the discrete equations whose variables the mode step first holds at their previous
        # values (indices into "discrete"), as the C FMU's held_trial
        held = set(held_discrete(guarded))
        plan["held"] = [k for k, (t, _) in enumerate(cm.discrete_assignments) if t in held]
        if held:
            # the relations they read that are taken at their threshold (indices into
            # "relations"), as the C FMU's held_thresholds
            plan["held_relations"] = list(held_relations(guarded, ev))
    text = json.dumps(plan, sort_keys=True)
    plan["guid"] = _guid(text)
    return plan


def _slot_index(leaf: list, array: str) -> int:
    """The index of a slot leaf ``["v", array, k]`` of the plan's writer."""
    if leaf[0] != "v" or leaf[1] != array:
        raise _Unsupported(f"a selection copy through {leaf}")
    return leaf[2]


def _guarded_schedule(gp, w: _TreeWriter, slot_index: dict) -> dict:
    """The guarded block schedule of a `mdae_fmu.codegen.guarded.GuardedPlan` as data, what
    templates/model_guarded.c.j2 and the restarts of `generate_guarded_sources` print as C
    (docs/theory.md §10.2, §11; docs/decisions.md §9): the BDD of the formulas over the
    guard bits, per block variant its formula, ``merged``, the variables its restart reads
    and moves, its block, the selection copies around it (``[flag, proxy, target]``: Integer
    flag slot, Real slots), its restart (lower levels, singular factors, copies, block) and
    its consistency rows (``[when or None, F, [[state slot, dF/dx], ...]]``); the
    conditional states, the selection flags' formulas, the left-limit and impulse slots."""
    cm = gp.compiled
    rslots = dict(w.slots)
    rslots.update({sym: ["v", "r", k] for sym, k in gp.extra_slots.items()})
    rw = _TreeWriter(rslots, w.relations)
    rindex = dict(slot_index)
    rindex.update(gp.extra_slots)
    state_slot = {s.symbol: s.slot for s in cm.states}

    def copies(sel, slots):
        return [[_slot_index(slots[f], "i"), _slot_index(slots[p], "r"),
                 _slot_index(slots[t], "r")] for f, p, t in sel]

    def level(lv):
        return {"label": lv.label, "F": [rw(e) for e in lv.rows],
                "J": [[i, j, rw(d)] for i, e in enumerate(lv.rows)
                      for j, x in enumerate(lv.unknowns)
                      for d in [partial_derivative(e, x)] if d != 0],
                "slots": [rindex[x] for x in lv.unknowns]}

    blocks = []
    for gb in gp.blocks:
        restart = None
        if gb.restart is not None:
            restart = {"block": _block(gb.restart, rw, rindex),
                       "levels": [level(lv) for lv in gb.levels],
                       "singular": [[text, rw(den), rw(scale)]
                                    for text, den, scale in gb.singular],
                       "sel": copies(gb.sel.restart if gb.sel else (), rslots)}
        when = gb.sel.cons_when if gb.sel else (None,) * len(gb.cons)
        cons = [[None if c is None else w(c), w(e),
                 [[state_slot[x], w(d)] for x in sorted(e.free_symbols & state_slot.keys(),
                                                        key=lambda x: state_slot[x])
                  for d in [partial_derivative(e, x)] if d != 0]]
                for c, e in zip(when, gb.cons)]
        blocks.append({"formula": gb.formula, "merged": gb.merged, "reads": list(gb.reads),
                       "writes": list(gb.writes), "block": _block(gb.plan, w, slot_index),
                       "sel": copies(gb.sel.top if gb.sel else (), w.slots),
                       "restart": restart, "cons": cons})
    n_modes, ng = gp.n_modes, len(gp.guards)
    return {"bdd": [list(gp.table.var), list(gp.table.lo), list(gp.table.hi)],
            "bits_slot": gp.bits_slot, "active_slot": gp.active_slot, "blocks": blocks,
            "cond_states": [list(c) for c in gp.cond_states],
            "flags": list(gp.flag_roots),
            "left": [[a, b] for a, b in sorted(gp.left.items())],
            "impulse": sorted(gp.impulse.values()),
            "var_slots": [list(v) for v in gp.var_slots],
            # the C FMU's bound on mode changes at one instant (codegen.guarded)
            "max_changes": max(max_mode_changes(n_modes), min(n_modes, 2 * ng + 8))}


def _branch(cm: CompiledModel, w: _TreeWriter, b) -> dict:
    """A when-branch: its condition, its equations ``assign`` (``[target, value]`` by action
    index, run in the plan's ``assignment_order``), its literal reinits, and the analysed
    restart that replaces the reinits when there is one: ``(slot, f(x-))``, applied once
    per instant for all the branches that enter the same transient mode (``label``), with
    the impulse integrals over it (``x+`` = the restart's values; `mdae_fmu.codegen.emit`,
    ``_actions_code`` and ``_restart_code``)."""
    assign: dict = {}
    reinit = []
    for k, (kind, target, value, _typ) in enumerate(b.actions):
        if kind == "assign":
            assign[str(k)] = [slot_of(target), w(value)]
        elif kind == "reinit":
            if not b.restart:
                reinit.append([slot_of(target), w(value)])
        else:
            raise _Unsupported(f"{kind} in a when-clause")
    right = {slot: j for j, (slot, _) in enumerate(b.restart)}
    lw, rw = _left_writer(cm, w), _left_writer(cm, w, right)
    return {"clause": b.clause, "condition": w(b.condition), "initial": b.has_initial,
            "label": b.restart_label, "assign": assign, "reinit": reinit,
            "restart": [[slot, lw(x)] for slot, x in b.restart],
            "impulses": [[slot, rw(num), rw(den)] for slot, num, den in b.impulses]}


def _guid(text: str) -> str:
    x = hashlib.sha256(text.encode()).hexdigest()
    return "{" + f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:32]}" + "}"


def python_fmu_bytes(model: Model, analysis, default_experiment: dict) -> bytes:
    """The FMU (zip bytes) of ``model``: the plan, the runtime and the slave class packaged by
    pythonfmu's builder (module docstring)."""
    check_available()
    from pythonfmu import FmuBuilder
    plan = python_plan(model, analysis)
    plan["default_experiment"] = default_experiment
    here = Path(__file__).parent
    with tempfile.TemporaryDirectory(prefix="mdae_pyfmu_") as tmp:
        d = Path(tmp)
        shutil.copy(here / "pyfmu_slave.py", d / f"{SLAVE_MODULE}.py")
        shutil.copy(here / "pyfmu_runtime.py", d / f"{RUNTIME_MODULE}.py")
        (d / PLAN_FILE).write_text(json.dumps(plan), encoding="utf-8")
        out = d / "out"
        out.mkdir()
        path_before, modules_before = list(sys.path), set(sys.modules)
        try:
            fmu = FmuBuilder.build_FMU(d / f"{SLAVE_MODULE}.py", dest=out / "model.fmu",
                                       project_files=[d / f"{RUNTIME_MODULE}.py",
                                                      d / PLAN_FILE],
                                       needsExecutionTool="true",
                                       canHandleVariableCommunicationStepSize="true")
            return _flat_names(Path(fmu).read_bytes())
        finally:
            # the builder imports the slave from the temporary directory and leaves it on
            # sys.path and in sys.modules: an FMU loaded later in this process (FMPy,
            # libcosimpy) must import its own copy from its resources
            sys.path[:] = path_before
            for name in (SLAVE_MODULE, RUNTIME_MODULE):
                if name not in modules_before:
                    sys.modules.pop(name, None)


def _flat_names(fmu: bytes) -> bytes:
    """pythonfmu declares ``variableNamingConvention="structured"``; the plan's names
    (``der(x)``, ``impulse(f1)``) are those of the C FMU, whose convention is ``flat``."""
    src = zipfile.ZipFile(io.BytesIO(fmu))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "modelDescription.xml":
                data = data.replace(b'variableNamingConvention="structured"',
                                    b'variableNamingConvention="flat"', 1)
            dst.writestr(info.filename, data)
    return out.getvalue()
