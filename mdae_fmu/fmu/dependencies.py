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
#: the set of a node that reaches no source (shared: no result is ever modified)
_NONE: tuple = ()


class Dependencies(Mapping):
    """FMI variable name -> the sorted tuple of the 1-based ScalarVariable indices of the
    knowns it depends on (positions in ``CompiledModel.variables`` plus one, as the
    ``dependencies`` attribute lists them). ``nodes``: name -> node of `model_structure`;
    ``sets``: node -> its sorted tuple of nodes (`closure`, one tuple shared by the nodes
    of equal sets); nodes above ``last`` are hidden slots, no variables, left out on lookup.
    The closure's tuples are kept as they are, without a copy per described variable: a
    tuple of a few nodes is a quarter of the Python set the closure held before (216 bytes
    and more), and it is sorted once, when it is made."""

    def __init__(self, nodes: dict, sets: dict, last: int) -> None:
        self._nodes = nodes
        self._sets = sets
        self._last = last

    def __getitem__(self, name: str) -> tuple:
        return self._visible(self._sets.get(self._nodes[name], _NONE))

    def get(self, name: str, default=None):     # (Mapping.get: without a KeyError)
        n = self._nodes.get(name)
        return default if n is None else self._visible(self._sets.get(n, _NONE))

    def _visible(self, got: tuple) -> tuple:
        if got and got[-1] > self._last:
            last = self._last
            return tuple(k for k in got if k <= last)
        return got

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


def _merge(parts: list) -> tuple:
    """The sorted union of the sorted tuples ``parts`` (at least two, not all one object):
    two disjoint ranges concatenated (a node reading its two neighbours' sets), any other
    through a set."""
    if len(parts) == 2:
        a, b = parts
        if a[-1] < b[0]:
            return a + b
        if b[-1] < a[0]:
            return b + a
    acc: set = set()
    for p in parts:
        acc.update(p)
    return tuple(sorted(acc))


def closure(reads: dict, sources: dict) -> dict:
    """``deps[n] = sources[n] | union(deps[m] for m in reads[n])`` (least fixpoint), for
    every node of ``reads`` and ``sources``, as sorted tuples: the sources reachable from
    ``n``. ``reads``: node -> iterable of the nodes it reads (duplicates allowed);
    ``sources``: node -> iterable of its own sources; sources are sortable.

    One pass over the strongly connected components of the read graph in reverse
    topological order (Tarjan's algorithm, iterative; docs/theory.md §11.1): a component's
    set is the union of its members' sources and of the sets of the components it reads,
    all final by then, shared by its members. Linear in the graph plus the sizes of the
    unions, where a round-robin iteration to the fixpoint repeats every union per round.
    A node whose set equals the one set it reads shares that tuple (no copy): the usual
    case of a node read in schedule order (every node it reads final) takes no search."""
    own = {n: tuple(sorted(s)) for n, s in sources.items()}
    deps: dict = {n: t for n, t in own.items() if n not in reads}
    get = deps.get
    slow: list = []
    for root, rs in reads.items():
        # every node it reads final (schedule order): its set at once, without the search
        acc = own.get(root) or None
        parts = None
        for m in rs:
            got = get(m)
            if got is None:
                if m in reads:
                    break           # not final: the search below
                continue
            if not got or got is acc:
                continue
            if acc is None:
                acc = got
            elif parts is None:
                parts = [acc, got]
            else:
                parts.append(got)
        else:
            deps[root] = _NONE if acc is None else acc if parts is None else _merge(parts)
            continue
        slow.append(root)
    if slow:
        _components(reads, own, deps, slow)
    return deps


def _components(reads: dict, own: dict, deps: dict, roots: list) -> None:
    """The sets of the nodes of ``reads`` not yet in ``deps`` reachable from ``roots``, one
    strongly connected component at a time (Tarjan, iterative; `closure`)."""
    index: dict = {}        # the visited nodes' numbers (visited and pending: on `stack`)
    low: dict = {}
    stack: list = []
    counter = 0
    for root in roots:
        if root in deps:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        work = [(root, iter(reads[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w in deps or w not in reads:     # final, or not a node of the graph
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
                inside = set(members)
                parts = []
                for n in members:
                    got = own.get(n)
                    if got:
                        parts.append(got)
                    for m in reads[n]:
                        if m not in inside:
                            got = deps.get(m)
                            if got:
                                parts.append(got)
                acc = _NONE if not parts else parts[0] if len(parts) == 1 else _merge(parts)
                for n in members:
                    deps[n] = acc


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
    # name -> node of the variables that own their slot (the last variable of a slot, as the
    # slot's one value: a later one hides an earlier one), the inputs, and the knowns of the
    # initialization
    names: dict = {}
    inputs: list = []
    known0: set = set()
    for pos, v in enumerate(variables, start=1):
        letter = _TYPE_LETTER.get(v.type)
        if letter is None or at[letter][v.vr] != pos:
            continue
        names[v.name] = pos
        if v.causality == "input":
            inputs.append(pos)
        if (v.causality == "input" or v.initial == "exact") \
                and v.variability != "constant" and v.causality != "calculatedParameter":
            known0.add(pos)
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

    reads: dict = {}        # node -> the nodes it reads (a list, or a set; never modified)

    def add(n, ks):     # (copied on write: a block's list is shared by its unknowns)
        old = reads.get(n)
        reads[n] = ks if old is None else [*old, *ks]

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
    guard_list = sorted(guard_nodes)
    get = by_id.get
    table = cm.table if hasattr(cm, "table") else None
    table_sym = table.sym if table is not None else None
    #: an instance key of a tree block (`tree_instance_keys`) -> (its symbol, node of its
    #: symbol by identity or None); (None, None) for a key whose symbol is 0
    known: dict = {}
    known_get = known.get

    for blocks in schedules:
        for blk in blocks:
            unknowns = blk.unknowns
            if len(unknowns) == 1:
                n = get(id(unknowns[0]))
                unodes = [slot_node(slots.get(unknowns[0])) if n is None else n]
            else:
                unodes = [slot_node(slots.get(u)) if n is None else n
                          for u, n in zip(unknowns, map(get, map(id, unknowns)))]
            acc: list = []
            if table_sym is not None and getattr(blk, "table", None) is table \
                    and getattr(blk, "on_tree", False) and blk._residuals is None \
                    and blk._symbols is None:
                # a block kept on its trees: the symbols it reads from the trees' instances
                # (each instance's symbol made once for the whole model, no sympy hashing:
                # a block's `BlockPlan.symbols`, a walk and a set of symbols per block, is
                # not built, nor kept on the block)
                if blk.tree is not None:
                    ks = tree_instance_keys(blk.tree)
                else:
                    ks = set()
                    for t in blk.trees:
                        ks |= tree_instance_keys(t)
                for key in ks:
                    got = known_get(key)
                    if got is None:
                        sym = table_sym(key) if type(key) is str else table_sym(*key)
                        got = known[key] = (sym, get(id(sym))) if sym.is_Symbol \
                            else (None, None)
                    sym, n = got
                    if n is None:
                        if sym is not None and sym not in unknowns:
                            acc += slow(sym)
                    elif n >= 0 and not (n in unodes and sym in unknowns):
                        acc.append(n)
            else:
                for sym in blk.symbols:
                    n = get(id(sym))
                    if n is None:
                        if sym not in unknowns:
                            acc += slow(sym)
                    elif n >= 0 and not (n in unodes and sym in unknowns):
                        acc.append(n)
            if not widen and len(unodes) == 1:
                n = unodes[0]
                if n >= 0:
                    old = reads.get(n)
                    reads[n] = acc if old is None else [*old, *acc]
                continue
            wide = acc + guard_list if widen else acc
            for u, n in zip(unknowns, unodes):
                if n >= 0:
                    add(n, wide if widen and u in mode_dependent else acc)
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
        add(var_node, (store_node,))
    state_nodes = {node("r", getattr(s, "vector_slot", s.slot)) for s in cm.states}

    # -- continuous time
    sources = {n: (n,) for n in state_nodes}
    sources.update((n, (n,)) for n in inputs)
    continuous = Dependencies({name: n for name, n in names.items()
                               if n in state_nodes or variables[n - 1].variability
                               == "continuous"},
                              closure(reads, sources), nv)
    del sources

    # -- initialization: the continuous reads, those of the initial system added (copied on
    # write), the knowns' own reads left out
    extra: dict = {}

    def add_init(n, ks):
        old = extra.get(n)
        extra[n] = ks if old is None else [*old, *ks]

    for var_node, store_node in stores:
        add_init(store_node, (var_node,))
    for lv, expr in cm.calculated_parameters:
        n = slot_node(lv)
        if n >= 0:
            add_init(n, keys(expr))
    if init is not None:
        row_nodes = set(guard_nodes)
        for _, r in tuple(init.rows) + tuple(init_rows):
            row_nodes |= keys(r)
        row_list = list(row_nodes)
        for slot in init.unknown_slots:
            add_init(node("r", slot), row_list)
        free = {node("r", s) for s in init.unknown_slots}
        known0 -= free
    known0 -= assigned
    known_reads = {n: rs for n, rs in reads.items() if n not in known0}
    reads = {}      # (released: `known_reads` holds what is left of it)
    for n, ks in extra.items():
        if n not in known0:
            old = known_reads.get(n)
            known_reads[n] = ks if old is None else [*old, *ks]
    # a state whose start is a parameter expression: set by the host, or computed from the
    # parameters (CompiledModel.start_bindings)
    for slot, e in cm.start_bindings:
        n = node("r", slot)
        old = known_reads.get(n)
        known_reads[n] = [*(old or ()), *keys(e)]
    ini = closure(known_reads, {n: (n,) for n in known0})

    return Structure(continuous=continuous, initial=Dependencies(names, ini, nv))


__all__ = ["Dependencies", "Structure", "closure", "model_structure"]
