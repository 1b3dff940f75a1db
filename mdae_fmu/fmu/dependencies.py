"""ModelStructure ``dependencies`` of Outputs, Derivatives and InitialUnknowns (FMI 2.0, 2.2.8).

Computed from the generated code's own data flow (docs/fmi-mapping.md, "Value references and
variable layout"), so a dependency is listed whenever the C code reads the known on the way
to the unknown; lists are supersets of the true (numerical) dependencies, never subsets.

Nodes are value slots (``d->r[k]``, ``d->i[k]``, ``d->b[k]``; ``pre(v)`` is read as ``v``).
Each node's dependency set is the union of the sets of the nodes it reads, up to a fixpoint
over every schedule of the model:

* **Continuous-time knowns** (Outputs, Derivatives): the continuous states and the inputs of
  every type. A block unknown reads the other symbols of its residuals; a discrete equation
  evaluated by ``mdae_compute`` (``g = t >= t1 and t <= t2``) reads its right-hand side.
  Multimode models: the union over the modes' schedules (a dependency in any mode is
  listed), and every block unknown also reads the long guards that select the mode (a Boolean
  input or a state in a guard is a dependency of everything the mode decides).
* **Initialization knowns** (InitialUnknowns): the inputs and every variable with
  ``initial="exact"`` (parameters, states with ``fixed=true``, discrete variables with a
  fixed start). Constants are never listed. A calculated parameter reads its binding; a free
  state solved by the initial system (``InitPlan.unknown_slots``) reads every known of every
  row of that system, because the rows are solved together (one damped Gauss-Newton
  iteration); the consistency rows of every mode count, because an input can select the
  initial mode. A free state that no row constrains keeps its start and depends on nothing.
  A state whose start is a parameter expression also reads that expression's parameters
  (docs/fmi-mapping.md, "Initialization").

Multimode union states that some mode computes (``mdae_state(x)``, ``StatePlan.store``): the
FMI state is the hidden store; the variable ``x`` reads it (modes integrating ``x``) or is
computed by a block (the others), and initialization fills the store from ``x``.

Discrete variables assigned in when-clauses (and restart-set outputs such as ``impulse(f)``
and ``mdae_mode``) are discrete states: they are not computed from the knowns in
continuous time but at events from the left limits, so a discrete output gets no
``dependencies`` attribute (= may depend on every known), never an empty one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codegen.slots import Slot

_TYPE_LETTER = {"Real": "r", "Integer": "i", "Boolean": "b"}


@dataclass(frozen=True)
class Structure:
    """Dependencies by FMI variable name: ``continuous`` for Outputs/Derivatives,
    ``initial`` for InitialUnknowns. A name missing from a dict has no ``dependencies``
    attribute (depends on all knowns)."""
    continuous: dict
    initial: dict


def _key(slot):
    """``(array, index)`` of a value slot of the plan (its left limit: the same key); None
    for the scalars (time, homotopy) and for derived values."""
    return (slot.array, slot.index) if type(slot) is Slot and slot.array in ("r", "i", "b") \
        else None


def closure(reads: dict, sources: dict) -> dict:
    """``deps[n] = sources[n] | union(deps[m] for m in reads[n])`` (least fixpoint), for
    every node of ``reads`` and ``sources``: the sources reachable from ``n``.

    One pass over the strongly connected components of the read graph in reverse
    topological order (Tarjan's algorithm, iterative; docs/theory.md §11.1): a component's
    set is the union of its members' sources and of the sets of the components it reads,
    all final by then, shared by its members. Linear in the graph plus the sizes of the
    unions, where a round-robin iteration to the fixpoint repeats every union per round."""
    deps: dict = {n: s for n, s in sources.items() if n not in reads}
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    counter = 0
    for root in reads:
        if root in index:
            continue
        rs = reads[root]
        if root not in rs and all(m in deps or m not in reads for m in rs):
            # every node it reads is final (the usual case in schedule order): its own
            # component, done without the search's bookkeeping
            acc: set = set(sources.get(root, ()))
            for m in rs:
                got = deps.get(m)
                if got:
                    acc |= got
            deps[root] = acc
            index[root] = -1
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(reads[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in reads:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(reads[w])))
                    break
                if w in on_stack and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    if low[v] < low[u]:
                        low[u] = low[v]
                if low[v] != index[v]:
                    continue
                members = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    members.append(w)
                    if w == v:
                        break
                inside = set(members) if len(members) > 1 else (v,)
                acc = set()
                for n in members:
                    got = sources.get(n)
                    if got:
                        acc |= got
                    for m in reads[n]:
                        if m in inside:
                            continue
                        got = deps.get(m)
                        if got:
                            acc |= got
                for n in members:
                    deps[n] = acc
    return deps


def model_structure(cm, schedules, guards=(), extra_symbols=None, init=None,
                    init_rows=(), mode_dependent=None) -> Structure:
    """Dependencies of the compiled model ``cm`` (module docstring).

    ``schedules``: the block lists of the modes (single mode: ``[cm.blocks]``); ``guards``:
    sympy expressions of the long guards (multimode); ``extra_symbols``: symbol -> sympy
    expression it stands for (banded left-limit relations); ``init``: the `InitPlan`;
    ``init_rows``: more residuals of the initial system (the other modes' consistency
    equations); ``mode_dependent``: the unknowns whose block changes with the mode, when
    ``schedules`` does not tell (the guarded schedule: one list of block variants,
    `mdae_fmu.codegen.guarded.mode_dependent_unknowns`)."""
    extra_symbols = extra_symbols or {}
    key_of = {}
    for sym, lv in cm.slots.items():
        k = _key(lv)
        if k is not None:
            key_of[sym] = k
    var_of = {(_TYPE_LETTER[v.type], v.vr): v for v in cm.variables if v.type in _TYPE_LETTER}

    def keys(expr, skip=()) -> set:
        out = set()
        for sym in expr.free_symbols:
            if sym in skip:
                continue
            if sym in extra_symbols:
                out |= keys(extra_symbols[sym])
                continue
            k = key_of.get(sym)
            if k is not None:
                out.add(k)
        return out

    guard_keys = set()
    for g in guards:
        guard_keys |= keys(g)

    reads: dict = {}

    def add(node, ks):
        reads.setdefault(node, set()).update(ks)

    # which block computes each unknown in each mode: an unknown computed the same way in
    # every mode does not depend on the mode, hence not on the guards
    if mode_dependent is None and len(schedules) == 1:
        mode_dependent = set()      # one schedule: every unknown computed one way
    if mode_dependent is None:
        how: dict = {}
        for blocks in schedules:
            seen = {}
            for blk in blocks:
                for u in blk.unknowns:
                    seen[u] = (frozenset(blk.unknowns), frozenset(blk.key))
            for u in set(how) | set(seen):
                how.setdefault(u, []).append(seen.get(u))
        mode_dependent = {u for u, ways in how.items()
                          if len(ways) < len(schedules) or len(set(ways)) > 1}
    for blocks in schedules:
        for blk in blocks:
            unknowns = blk.unknowns
            skip = set(unknowns)        # (hashed: sympy's == is slow)
            acc = set()
            for sym in blk.symbols:
                if sym in skip:
                    continue
                if sym in extra_symbols or not sym.is_Symbol:
                    acc |= keys(sym)
                else:       # a symbol: its own key (what `keys` gives, without the walk)
                    k = key_of.get(sym)
                    if k is not None:
                        acc.add(k)
            for u in unknowns:
                k = key_of.get(u)
                if k is not None:
                    add(k, acc | guard_keys if u in mode_dependent else acc)
    assigned = set()
    for lv, expr in cm.discrete_assignments:
        k = _key(lv)
        if k is not None:
            add(k, keys(expr))
            assigned.add(k)

    # a multimode union state that some mode computes lives apart in a hidden slot (the FMI
    # state `mdae_state(x)`, StatePlan.store): the variable x reads it while a mode integrates
    # x, and initialization fills it from x
    stores = [(("r", s.slot), ("r", s.store)) for s in cm.states
              if getattr(s, "store", None) is not None]
    for var_key, store_key in stores:
        add(var_key, {store_key})
    state_keys = {("r", getattr(s, "vector_slot", s.slot)) for s in cm.states}
    inputs = {k for k, v in var_of.items() if v.causality == "input"}

    # -- continuous time
    ct = closure(reads, {k: {k} for k in state_keys | inputs})

    # -- initialization
    # (copied on write: the sets of `reads` stay as they are)
    init_reads = dict(reads)

    def add_init(node, ks):
        init_reads[node] = init_reads.get(node, set()) | ks

    for var_key, store_key in stores:
        add_init(store_key, {var_key})
    for lv, expr in cm.calculated_parameters:
        k = _key(lv)
        if k is not None:
            add_init(k, keys(expr))
    if init is not None:
        row_keys = set(guard_keys)
        for _, r in tuple(init.rows) + tuple(init_rows):
            row_keys |= keys(r)
        for slot in init.unknown_slots:
            add_init(("r", slot), row_keys)
    known0 = {k for k, v in var_of.items()
              if (v.causality == "input" or v.initial == "exact")
              and v.variability != "constant" and v.causality != "calculatedParameter"}
    free = {("r", s) for s in (init.unknown_slots if init is not None else ())}
    known0 -= free | assigned
    known_reads = {n: rs for n, rs in init_reads.items() if n not in known0}
    # a state whose start is a parameter expression: set by the host, or computed from the
    # parameters (CompiledModel.start_bindings)
    for slot, e in cm.start_bindings:
        known_reads[("r", slot)] = known_reads.get(("r", slot), set()) | keys(e)
    ini = closure(known_reads, {k: {k} for k in known0})

    def names(ks):
        return tuple(sorted(var_of[k].name for k in ks if k in var_of))

    continuous = {}
    initial = {}
    for k, v in var_of.items():
        if v.variability == "continuous" or k in state_keys:
            continuous[v.name] = names(ct.get(k, ()))
        initial[v.name] = names(ini.get(k, ()))
    return Structure(continuous=continuous, initial=initial)


__all__ = ["Structure", "closure", "model_structure"]
