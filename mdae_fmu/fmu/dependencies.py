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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..codegen.slots import Slot
from ..codegen.trees import tree_instance_keys

_TYPE_LETTER = {"Real": "r", "Integer": "i", "Boolean": "b"}
#: the set of a node that reaches no source (shared: no result set is ever modified)
_NONE: frozenset = frozenset()


class Dependencies(Mapping):
    """FMI variable name -> the sorted tuple of the 1-based ScalarVariable indices of the
    knowns it depends on (positions in ``CompiledModel.variables`` plus one, as the
    ``dependencies`` attribute lists them). ``nodes``: name -> node of `model_structure`;
    ``sets``: node -> its nodes (`closure`); nodes above ``last`` are hidden slots, no
    variables. Only the nodes of ``nodes`` are kept, each set as its sorted tuple (one tuple
    per set shared by several nodes): the closure's sets of every node (Python sets of
    216 bytes and more, most of them of one to four nodes) were half the memory of the
    dependencies at 10^6 equations."""

    def __init__(self, nodes: dict, sets: dict, last: int) -> None:
        self._nodes = nodes
        self._sets = compact_sets(sets, nodes.values(), last)

    def __getitem__(self, name: str) -> tuple:
        return self._sets.get(self._nodes[name], ())

    def get(self, name: str, default=None):     # (Mapping.get: through KeyError)
        return self[name] if name in self._nodes else default

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)


@dataclass(frozen=True)
class Structure:
    """Dependencies by FMI variable name (`Dependencies`): ``continuous`` for
    Outputs/Derivatives, ``initial`` for InitialUnknowns. A name missing from a mapping has
    no ``dependencies`` attribute (depends on all knowns)."""
    continuous: Mapping
    initial: Mapping


def compact_sets(sets: dict, nodes, last: int) -> dict:
    """``node -> tuple(sorted(sets[node]))`` for the ``nodes`` whose set is not empty, the
    nodes above ``last`` left out, one tuple per set object (`Dependencies`)."""
    out: dict = {}
    made: dict = {}     # id of a set (all alive in `sets`) -> its tuple
    for n in nodes:
        ks = sets.get(n)
        if not ks or n in out:
            continue
        got = made.get(id(ks))
        if got is None:
            got = tuple(sorted(ks))
            if got[-1] > last:
                got = tuple(k for k in got if k <= last)
            made[id(ks)] = got
        if got:
            out[n] = got
    return out


def _union(own, reads, deps):
    """``own | union(deps[m] for m in reads)``, sharing a set instead of copying it when it
    is the only non-empty one (the closure's sets are never modified); None when all are
    empty."""
    acc = own or None
    copied = False
    for m in reads:
        got = deps.get(m)
        if not got or got is acc:
            continue
        if acc is None:
            acc = got
            continue
        if not copied:
            acc = set(acc)
            copied = True
        acc |= got
    return acc


def closure(reads: dict, sources: dict) -> dict:
    """``deps[n] = sources[n] | union(deps[m] for m in reads[n])`` (least fixpoint), for
    every node of ``reads`` and ``sources``: the sources reachable from ``n``.

    One pass over the strongly connected components of the read graph in reverse
    topological order (Tarjan's algorithm, iterative; docs/theory.md §11.1): a component's
    set is the union of its members' sources and of the sets of the components it reads,
    all final by then, shared by its members. Linear in the graph plus the sizes of the
    unions, where a round-robin iteration to the fixpoint repeats every union per round.
    A node whose set equals the one set it reads shares that set (no copy): the returned
    sets must not be modified."""
    deps: dict = {n: s for n, s in sources.items() if n not in reads}
    pending = set(reads)    # the nodes of `reads` whose set is not final yet
    index: dict = {}        # the visited nodes' numbers (visited and pending: on `stack`)
    low: dict = {}
    stack: list = []
    counter = 0
    for root, rs in reads.items():
        if root not in pending:
            continue
        if pending.isdisjoint(rs):
            # every node it reads is final (the usual case in schedule order; a node that
            # reads itself reads a pending node): its own component, without the search
            got = _union(sources.get(root), rs, deps)
            deps[root] = _NONE if got is None else got
            pending.discard(root)
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        work = [(root, iter(rs))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in pending:        # final, or not a node of the graph
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    work.append((w, iter(reads[w])))
                    break
                if index[w] < low[v]:       # visited and pending: on the stack
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
                    members.append(w)
                    if w == v:
                        break
                if len(members) == 1:
                    got = _union(sources.get(v), [m for m in reads[v] if m != v], deps)
                    acc = _NONE if got is None else got
                else:
                    inside = set(members)
                    acc = set()
                    for n in members:
                        got = sources.get(n)
                        if got:
                            acc |= got
                        for m in reads[n]:
                            if m not in inside:
                                got = deps.get(m)
                                if got:
                                    acc |= got
                for n in members:
                    deps[n] = acc
                    pending.discard(n)
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
    `mdae_fmu.codegen.guarded.mode_dependent_unknowns`).

    Nodes are integers: a value slot of a variable is the variable's 1-based index (the
    last variable of the slot), the hidden slots come after, so a sorted set of nodes is
    sorted by index. Symbols are looked up by identity first (the plan's symbols are the
    blocks' own objects; sympy's hash is a Python call), by equality only when that fails.
    Linear in the schedule plus the sizes of the sets (`closure`)."""
    extra_symbols = extra_symbols or {}
    variables = cm.variables
    nv = len(variables)
    at: dict = {"r": {}, "i": {}, "b": {}}      # value array -> slot index -> node
    for pos, v in enumerate(variables, start=1):
        letter = _TYPE_LETTER.get(v.type)
        if letter is not None:
            at[letter][v.vr] = pos
    # (node, variable) of the variables' slots, in their order (the last variable of a slot,
    # as the slot's one value: a later one hides an earlier one)
    owned = [(pos, v) for pos, v in enumerate(variables, start=1)
             if at.get(_TYPE_LETTER.get(v.type, ""), {}).get(v.vr) == pos]
    hidden = [nv]       # the last node given to a slot of no variable

    def node(array: str, index: int) -> int:
        n = at[array].get(index)
        if n is None:
            hidden[0] += 1
            n = at[array][index] = hidden[0]
        return n

    def slot_node(lv) -> int:
        """The node of a `SlotValue` of the plan, -1 for none (`_key`)."""
        if type(lv) is Slot and lv.array in at:
            return node(lv.array, lv.index)
        return -1

    slots = cm.slots
    by_id: dict = {}            # id of a plain symbol of a value slot -> its node, -1 for none
    for sym, lv in slots.items():
        if sym.is_Symbol:
            by_id[id(sym)] = slot_node(lv)
    if extra_symbols:           # these stand for their expressions
        for sym in slots:
            if sym in extra_symbols:
                by_id.pop(id(sym), None)

    def slow(sym) -> set:
        """The nodes of a symbol not found by identity."""
        if sym in extra_symbols:
            return keys(extra_symbols[sym])
        if not sym.is_Symbol:
            return keys(sym)
        n = slot_node(slots.get(sym))
        return set() if n < 0 else {n}

    def keys(expr) -> set:
        out = set()
        for sym in expr.free_symbols:
            n = by_id.get(id(sym))
            if n is None:
                out |= slow(sym)
            elif n >= 0:
                out.add(n)
        return out

    guard_nodes: set = set()
    for g in guards:
        guard_nodes |= keys(g)

    reads: dict = {}

    def add(n, ks):     # (copied on write: a block's set is shared by its unknowns)
        old = reads.get(n)
        reads[n] = ks if old is None else old | ks

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
    widen = bool(mode_dependent) and bool(guard_nodes)
    get = by_id.get
    table_sym = cm.table.sym if hasattr(cm, "table") else None
    #: an instance key of a tree block (`tree_instance_keys`) -> (its symbol, node of its
    #: symbol by identity or None); (None, None) for a key whose symbol is 0
    known: dict = {}

    def tree_reads(blk) -> list:
        """``(symbol, node by identity or None)`` of each symbol a block kept on its trees
        reads, from the trees' instances (each instance's symbol made once for the whole
        model, no sympy hashing: a block's `BlockPlan.symbols`, a walk and a set of symbols
        per block, is not built, nor kept on the block)."""
        keys: set = set()
        for t in ((blk.tree,) if blk.tree is not None else blk.trees):
            keys |= tree_instance_keys(t)
        out = []
        sym = table_sym
        assert sym is not None      # (a plan with a symbol table: the caller's test)
        for key in keys:
            got = known.get(key)
            if got is None:
                s = sym(key) if type(key) is str else sym(*key)
                got = known[key] = (s, get(id(s))) if s.is_Symbol else (None, None)
            if got[0] is not None:
                out.append(got)
        return out

    for blocks in schedules:
        for blk in blocks:
            unknowns = blk.unknowns
            unodes = [slot_node(slots.get(u)) if n is None else n
                      for u, n in zip(unknowns, map(get, map(id, unknowns)))]
            acc = set()
            if table_sym is not None and getattr(blk, "table", None) is cm.table \
                    and getattr(blk, "on_tree", False) and blk._residuals is None \
                    and blk._symbols is None:
                pairs = tree_reads(blk)
            else:
                pairs = [(sym, get(id(sym))) for sym in blk.symbols]
            for sym, n in pairs:
                if n is None:
                    if sym not in unknowns:
                        acc |= slow(sym)
                elif n >= 0 and not (n in unodes and sym in unknowns):
                    acc.add(n)
            for u, n in zip(unknowns, unodes):
                if n >= 0:
                    add(n, acc | guard_nodes if widen and u in mode_dependent else acc)
    assigned = set()
    for lv, expr in cm.discrete_assignments:
        n = slot_node(lv)
        if n >= 0:
            add(n, keys(expr))
            assigned.add(n)

    # a multimode union state that some mode computes lives apart in a hidden slot (the FMI
    # state `mdae_state(x)`, StatePlan.store): the variable x reads it while a mode integrates
    # x, and initialization fills it from x
    stores = [(node("r", s.slot), node("r", s.store)) for s in cm.states
              if getattr(s, "store", None) is not None]
    for var_node, store_node in stores:
        add(var_node, {store_node})
    state_nodes = {node("r", getattr(s, "vector_slot", s.slot)) for s in cm.states}
    inputs = {n for n, v in owned if v.causality == "input"}

    # -- continuous time (kept as `Dependencies` at once: its closure's sets are freed for
    # the initialization's)
    continuous = Dependencies({v.name: n for n, v in owned
                               if v.variability == "continuous" or n in state_nodes},
                              closure(reads, {n: {n} for n in state_nodes | inputs}), nv)

    # -- initialization
    # (copied on write: the sets of `reads` stay as they are)
    init_reads = dict(reads)

    def add_init(n, ks):
        old = init_reads.get(n)
        init_reads[n] = ks if old is None else old | ks

    for var_node, store_node in stores:
        add_init(store_node, {var_node})
    for lv, expr in cm.calculated_parameters:
        n = slot_node(lv)
        if n >= 0:
            add_init(n, keys(expr))
    free: set = set()
    if init is not None:
        row_nodes = set(guard_nodes)
        for _, r in tuple(init.rows) + tuple(init_rows):
            row_nodes |= keys(r)
        for slot in init.unknown_slots:
            add_init(node("r", slot), row_nodes)
        free = {node("r", s) for s in init.unknown_slots}
    known0 = {n for n, v in owned
              if (v.causality == "input" or v.initial == "exact")
              and v.variability != "constant" and v.causality != "calculatedParameter"}
    known0 -= free | assigned
    known_reads = {n: rs for n, rs in init_reads.items() if n not in known0}
    # a state whose start is a parameter expression: set by the host, or computed from the
    # parameters (CompiledModel.start_bindings)
    for slot, e in cm.start_bindings:
        n = node("r", slot)
        known_reads[n] = known_reads.get(n, set()) | keys(e)
    ini = closure(known_reads, {n: {n} for n in known0})

    return Structure(continuous=continuous,
                     initial=Dependencies({v.name: n for n, v in owned}, ini, nv))


__all__ = ["Dependencies", "Structure", "closure", "compact_sets", "model_structure"]
