"""Mode enumeration and per-mode structural analysis (the data contract of the structure stage).

A mode is a valuation of the long guards of the model (RR-9334 Def 31, docs/theory.md §5.3); it
enables
the equations whose guard holds and selects one branch of every if-expression on those guards
(`specialize`). Each mode is then an ordinary DAE, analysed separately with Pryce's Σ-method
(docs/theory.md §4, §8.3): offsets, index (max c, and Pryce's ν_S), states, leading
variables, latent and consistency equations, and the block-triangular form of the
index-reduced system over the leading variables. A structurally singular mode is rejected with
the Dulmage–Mendelsohn culprits (docs/theory.md §10.2, §4 "Failure").

Unknowns of a mode's DAE: Real continuous variables that are not inputs and not assigned in a
when-clause; one that no enabled equation mentions stays an unknown (so the mode is rejected)
and is listed as ``absent``. Discrete variables (Boolean, Integer, Real assigned in when-clauses),
parameters, constants, inputs, ``pre(x)`` and ``time`` are known within a mode. An equation
that defines a discrete variable (a guard definition such as ``g = time >= t1 and time <= t2``)
is not part of any mode's DAE; it is listed separately in the report.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import FrozenInstanceError, dataclass
from itertools import repeat
from operator import and_, attrgetter
from operator import eq as equal
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence, TypedDict, overload

import numpy as np

from .. import expr as E
from ..collector import gc_paused
from ..diagnostics import EXIT_OK, EXIT_REJECTED, InputError
from ..ir import Equation, Model
from ..functions import function_table
from ..heap import release_free_heap
from ..records import quick_init
from ..symbolic import SymbolTable, check_convertible
from .graph import DM, iter_btf_chunks
from .latent import Derivatives, latent_derivatives
from .conditionals import ConditionalClasses, classify_conditionals
from .printing import expr_text
from .residual_scan import residual_scan
from .sigma import sigma_method, tight_edges
from .signature import release_rows, signature_graph
from .valuations import (MAX_ENUMERATED_MODES, TooManyModes, consistent_valuation,
                         enumerate_valuations, eval_condition, fixed_guard_values,
                         guard_definitions, has_long_guards, long_guard_atoms_under,
                         specialize)
from .variables import (classify_variables, defines_discrete,
                        discrete_equation_flags, is_event_guard)

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from ..lazy_modules import sympy as sp

# the stateSelect-guided choice (one matching per candidate, quadratic) is made for modes with
# at most this many states; larger ones report no selection
MAX_STATE_SELECTION = 400


# --- the data contract ----------------------------------------------------------------------

@quick_init
@dataclass(frozen=True, slots=True)
class Instance:
    """``name^(order)``: the order-th time derivative of a variable."""
    name: str
    order: int

    def __str__(self) -> str:
        if self.order == 0:
            return self.name
        if self.order == 1:
            return f"der({self.name})"
        return f"der({self.name},{self.order})"


class LatentEquation:
    """The k-th time derivative of equation ``eq_id``, in residual form ``0 = expr``.

    ``expr`` is a sympy expression, made when first read. An equation the Σ-method does not
    differentiate (k = 0 and c = 0) is kept as its expression tree (``residual``, with the
    mode's ``table``) and converted to sympy only when ``expr`` is first read: the analysis
    itself needs sympy only for the differentiated equations (docs/theory.md §4.6, RR-9387
    Def 15), and converting every equation of a 10^5-equation model cost most of its time.
    The latent and consistency equations of a differentiated equation (`derived`) share its
    `latent.Derivatives`, which converts and differentiates it when one of them is first
    read: the verdict and the summary read none, so a model whose report is not printed in
    full never imports sympy (issue 29)."""

    # three slots, 56 B with the collector's header where six were 80 (one per equation of a
    # mode: 10^6 at 10^6 equations; docs/performance.md, "stop 41, memory"). ``_key`` is the
    # `Equation` itself for an undifferentiated equation kept as its tree (`of_tree`: its id
    # and residual, k = 0), else ``(eq_id, k)``; ``_aux`` is then the symbol table, the
    # `Derivatives` of `derived`, or ``(residual, table)`` (or None) of the constructor.
    __slots__ = ("_key", "_aux", "_expr")

    _key: Equation | tuple[str, int]
    _aux: SymbolTable | Derivatives | tuple[E.Expr | None, SymbolTable | None] | None
    _expr: sp.Expr | None

    def __init__(self, eq_id: str, k: int, expr: sp.Expr | None = None, *,
                 residual: E.Expr | None = None, table: SymbolTable | None = None):
        if expr is None and (residual is None or table is None):
            raise ValueError("LatentEquation needs expr, or residual and table")
        self._key = (eq_id, k)
        self._aux = None if residual is None and table is None else (residual, table)
        self._expr = expr

    @classmethod
    def derived(cls, eq_id: str, k: int, source: Derivatives) -> LatentEquation:
        """The k-th derivative of equation ``eq_id``, ``source.get(k)`` when first read."""
        le = cls.__new__(cls)
        le._key, le._aux, le._expr = (eq_id, k), source, None
        return le

    @classmethod
    def of_tree(cls, eq: Equation, table: SymbolTable) -> LatentEquation:
        """``LatentEquation(eq.id, 0, residual=eq.residual, table=table)`` without the keyword
        call and its checks (one per equation of a mode), keeping ``eq`` itself."""
        le = cls.__new__(cls)
        le._key, le._aux, le._expr = eq, table, None
        return le

    @property
    def eq_id(self) -> str:
        key = self._key
        return key[0] if isinstance(key, tuple) else key.id

    @property
    def k(self) -> int:
        key = self._key
        return key[1] if isinstance(key, tuple) else 0

    @property
    def expr(self) -> sp.Expr:
        if self._expr is None:
            key, aux = self._key, self._aux
            if isinstance(key, Equation):
                assert isinstance(aux, SymbolTable)
                self._expr = aux.to_sympy(key.residual)
            elif isinstance(aux, Derivatives):
                self._expr = aux.get(key[1])
            else:
                # (__init__ keeps the residual and its table when no expression is given)
                assert isinstance(aux, tuple) and aux[0] is not None and aux[1] is not None
                self._expr = aux[1].to_sympy(aux[0])
        return self._expr

    @property
    def tree(self) -> E.Expr | None:
        """The residual's expression tree of an undifferentiated equation (k = 0), else None."""
        key, aux = self._key, self._aux
        if isinstance(key, Equation):
            return key.residual
        return aux[0] if key[1] == 0 and isinstance(aux, tuple) else None

    @property
    def converted(self) -> bool:
        """Whether the sympy form exists already (for tests that count conversions)."""
        return self._expr is not None

    @property
    def parts(self) -> tuple[str, int, sp.Expr | None, E.Expr | None, SymbolTable | None]:
        """``(eq_id, k, expr or None, residual, table)``: the constructor's arguments, the
        sympy form only when it was made already (`mdae_fmu.saved` writes them as they are);
        a latent equation of a differentiated one (`derived`) has its expression made now."""
        key, aux = self._key, self._aux
        if isinstance(key, Equation):
            assert isinstance(aux, SymbolTable)
            return key.id, 0, self._expr, key.residual, aux
        if isinstance(aux, Derivatives):
            return key[0], key[1], self.expr, None, None
        if isinstance(aux, tuple):
            return key[0], key[1], self._expr, aux[0], aux[1]
        return key[0], key[1], self._expr, None, None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LatentEquation):
            return NotImplemented
        return (self.eq_id, self.k, self.expr) == (other.eq_id, other.k, other.expr)

    def __hash__(self) -> int:
        return hash((self.eq_id, self.k))

    def __repr__(self) -> str:
        return f"LatentEquation({self.eq_id!r}, {self.k}, {self.expr!r})"

    @property
    def label(self) -> str:
        """``e3``, ``e3'``, ``e3''``, ``e3^(3)``."""
        return eq_label(self.eq_id, self.k)


class SolvedEquations(Sequence[LatentEquation]):
    """``ModeAnalysis.solved`` of a mode whose latent equations are made when first read
    (``deferred_latent``): per equation of the mode, in order, its differentiated form
    (``top``, by equation id) or, for an undifferentiated one, `LatentEquation.of_tree`; the
    objects are made all at once at the first read of an item (a reader of one reads them
    all: the full report, the export) and kept, so each read gives the same object, as the
    tuple it stands for did. That tuple held one object of 56 B per equation (64 MB at 10^6
    equations), which the verdict and the summary never read (docs/performance.md, "stop
    43"). Equal to the tuple of its items, and added to a tuple as that tuple."""

    __slots__ = ("_equations", "_table", "_top", "_items")

    def __init__(self, equations: Sequence[Equation], table: SymbolTable,
                 top: dict[str, LatentEquation]) -> None:
        self._equations = equations
        self._table = table
        self._top = top
        self._items: tuple[LatentEquation, ...] | None = None

    def _all(self) -> tuple[LatentEquation, ...]:
        items = self._items
        if items is None:
            top, table, tree = self._top, self._table, LatentEquation.of_tree
            items = self._items = tuple([top[eq.id] if eq.id in top else tree(eq, table)
                                         for eq in self._equations])
        return items

    def __len__(self) -> int:
        return len(self._equations)

    @overload
    def __getitem__(self, i: int) -> LatentEquation: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[LatentEquation, ...]: ...

    def __getitem__(self, i: int | slice) -> LatentEquation | tuple[LatentEquation, ...]:
        return self._all()[i]

    def __iter__(self) -> Iterator[LatentEquation]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, SolvedEquations)):
            return self._all() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __add__(self, other: object) -> tuple[LatentEquation, ...]:
        if isinstance(other, (tuple, SolvedEquations)):
            return self._all() + tuple(other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[LatentEquation, ...]:
        if isinstance(other, tuple):
            return other + self._all()
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._all())


class Block:
    """One block of the BTF: the (eq_id, k) equations solved together for ``unknowns``.

    Built as a frozen dataclass would be (``Block(equations=..., unknowns=...)``, equality,
    hash and ``repr`` over the two fields), but a block of one equation and one unknown, which
    most blocks of a large model are, keeps the equation id, its offset and the unknown in its
    own slots and builds the two 1-tuples when they are read: 56 bytes instead of the 200 of a
    block with its two 1-tuples and its (eq_id, k) pair; the block-triangular form of 10^6
    equations added 47 MB to the RSS instead of 180 (docs/performance.md, "stop 40,
    memory")."""

    __slots__ = ("_eq", "_k", "_unknown")
    _eq: str | tuple[tuple[str, int], ...]
    _k: int | None          # None: ``_eq`` and ``_unknown`` hold the tuples of the fields
    _unknown: Instance | tuple[Instance, ...]

    def __init__(self, equations: Sequence[tuple[str, int]], unknowns: Sequence[Instance]):
        if len(equations) == 1 and len(unknowns) == 1:
            (eq_id, k), = equations
            _set_eq(self, eq_id)
            _set_k(self, k)
            _set_unknown(self, unknowns[0])
        else:
            _set_eq(self, tuple(equations))
            _set_k(self, None)
            _set_unknown(self, tuple(unknowns))

    @classmethod
    def single(cls, eq_id: str, k: int, unknown: Instance) -> Block:
        """``Block(equations=((eq_id, k),), unknowns=(unknown,))`` without the tuples."""
        b = cls.__new__(cls)
        _set_eq(b, eq_id)
        _set_k(b, k)
        _set_unknown(b, unknown)
        return b

    @property
    def equations(self) -> tuple[tuple[str, int], ...]:
        """The block's equations as ``(eq_id, k)``: the k-th derivative of equation eq_id."""
        k = self._k
        # (`__init__`: ``_eq`` is the tuple when ``_k`` is None, the equation id otherwise)
        return self._eq if k is None else ((self._eq, k),)  # type: ignore[return-value]

    @property
    def scalar(self) -> tuple[str, int, Instance] | None:
        """``(eq_id, k, unknown)`` of a block of one equation, without building its tuples;
        None for a larger block."""
        k = self._k
        if k is None:
            return None
        return self._eq, k, self._unknown    # type: ignore[return-value]

    @property
    def unknowns(self) -> tuple[Instance, ...]:
        """The leading instances the block is solved for."""
        return (self._unknown if self._k is None      # type: ignore[return-value]
                else (self._unknown,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Block):
            return NotImplemented
        return (self.equations, self.unknowns) == (other.equations, other.unknowns)

    def __hash__(self) -> int:
        return hash((self.equations, self.unknowns))

    def __repr__(self) -> str:
        return f"Block(equations={self.equations!r}, unknowns={self.unknowns!r})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Block], tuple[tuple[tuple[str, int], ...],
                                                     tuple[Instance, ...]]]:
        return Block, (self.equations, self.unknowns)


# (the slots' own setters: `Block.__setattr__` refuses assignments, as a frozen dataclass)
_set_eq, _set_k, _set_unknown = (vars(Block)[n].__set__ for n in Block.__slots__)
#: An instance's order (`_chunk_blocks`, read in C).
_ORDER = attrgetter("order")


class BlockLooks:
    """What the singular-block check (`mdae_fmu.structure.conversion.singular_blocks`) must
    read of the blocks of a mode whose equations are the model's own, in order
    (``equations``, the model's sequence itself): the positions in the mode's ``blocks`` of
    the blocks it looks at (``blocks``) and the positions in ``equations`` of their
    equations, one block after the other (``rows``). The others are blocks of one equation
    ``x = f`` solved for its head ``x`` (`residual_scan.Defects.heads`: the name occurs nowhere
    else in the residual) at order 0, whose System Jacobian entry is 1: two blocks in three
    of a large model, told apart while the block-triangular form gives them by position, so
    the check reads neither them nor a table of the equations by id (issue 29,
    docs/performance.md "stop 44"). Kept on the `ModeAnalysis` as the attribute
    ``block_looks`` (not a field: it is no part of the report and is not saved)."""

    __slots__ = ("equations", "blocks", "rows")

    def __init__(self, equations: Sequence[Equation]) -> None:
        self.equations = equations
        self.blocks = array("i")
        self.rows = array("i")


@dataclass(frozen=True)
class ModeAnalysis:
    """Structural analysis of one mode (docs/theory.md §4.6).

    Two index conventions, which differ (docs/theory.md §4.6, §4.7): ``index`` is max c, the
    number of differentiations that brings the mode to ODE-like form in its leading
    variables (the seed papers' convention; 1 for the engaged clutch, 2 for the pendulum);
    ``structural_index`` is Pryce's structural index ν_S = max c + (1 if some d_j = 0)
    (2 and 3). The classical differentiation index ν_d (ν_d ≤ ν_S when Pryce's system
    Jacobian is nonsingular) is not computed. Both are −1 when the mode has no offsets
    (structurally singular). ``ok`` is false for a rejected mode, whose ``diagnostic`` says
    why."""
    name: str
    valuation: tuple[tuple[str, bool], ...]
    equations: tuple[str, ...]
    c: dict[str, int]
    d: dict[str, int]
    index: int
    structural_index: int
    states: tuple[Instance, ...]
    leading: tuple[Instance, ...]
    solved: tuple[LatentEquation, ...]      # (or `SolvedEquations`, a sequence)
    consistency: tuple[LatentEquation, ...]
    blocks: tuple[Block, ...]
    ok: bool
    diagnostic: str | None
    # additions beyond the minimal contract
    unknowns: tuple[str, ...] = ()            # the mode's DAE unknowns
    absent: tuple[str, ...] = ()              # continuous unknowns no enabled equation mentions
    dof: int | None = None                    # Σd − Σc = Val(Σ)
    over_equations: tuple[str, ...] = ()      # β_O of the DM (rejection culprits)
    over_variables: tuple[str, ...] = ()
    under_equations: tuple[str, ...] = ()     # β_U of the DM
    under_variables: tuple[str, ...] = ()
    status: str = "ok"                        # ok | singular | underdetermined | overdetermined
    sweeps: int = 0                           # sweeps of Pryce's iteration
    # stateSelect-guided choice of the independent states (structure/state_select.py); empty
    # when the mode has no consistency equations (every state is independent)
    selected_states: tuple[Instance, ...] = ()
    computed_states: tuple[Instance, ...] = ()
    state_notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModesReport:
    """Per-mode analysis of a whole model; ``exit_code`` 0 if every mode is accepted."""
    model_name: str
    long_guards: tuple[str, ...]
    guard_exprs: tuple[E.Expr, ...]
    symbols: SymbolTable
    modes: tuple[ModeAnalysis, ...]
    unknowns: tuple[str, ...]
    exit_code: int
    messages: tuple[str, ...]
    # additions beyond the minimal contract
    discrete_equations: tuple[str, ...] = ()   # guard / discrete-variable definitions
    discrete: tuple[str, ...] = ()             # discrete variables (known within a mode)
    inputs: tuple[str, ...] = ()
    fixed_guards: tuple[tuple[str, bool], ...] = ()   # guards with a mode-independent value
    n_valuations: int = 0                      # valuations considered before pruning


def long_guard_atoms(model: Model, equations: Iterable[Equation],
                     conditionals: ConditionalClasses | None = None) -> list[E.Expr]:
    """`valuations.long_guard_atoms_under` the classification ``conditionals``, by default
    the model's (`conditionals.classify_conditionals`, with demotion)."""
    if conditionals is None:
        conditionals = classify_conditionals(model)
    return long_guard_atoms_under(model, equations, conditionals)


def eq_label(eq_id: str, k: int) -> str:
    """Name of the k-th derivative of an equation: ``e3``, ``e3'``, ``e3''``, ``e3^(3)``."""
    return eq_id + ("'" * k if k <= 2 else f"^({k})")


# --- per-mode analysis ----------------------------------------------------------------------

def mode_name(valuation: Sequence[tuple[str, bool]]) -> str:
    """``{g}``, ``{not g}``, ``{g1, not g2}``; ``{}`` for the single mode of a model without
    long guards."""
    return "{" + ", ".join(t if v else f"not {t}" for t, v in valuation) + "}"


def _where(eq: Equation) -> str:
    return f"{eq.id} ({eq.loc.short()})" if eq.loc is not None else eq.id


class _ModeHeader(TypedDict):
    """The `ModeAnalysis` fields every mode has, singular or not."""
    name: str
    valuation: tuple[tuple[str, bool], ...]
    equations: tuple[str, ...]
    unknowns: tuple[str, ...]
    absent: tuple[str, ...]
    sweeps: int


class _StateChoice(TypedDict):
    """The `ModeAnalysis` fields of the stateSelect-guided state choice."""
    selected_states: tuple[Instance, ...]
    computed_states: tuple[Instance, ...]
    state_notes: tuple[str, ...]


#: Modes from this many equations on give the C heap's free memory back after their
#: block-triangular form and once analysed (`heap.release_free_heap`, a few milliseconds);
#: smaller ones would pay more than they save.
TRIM_MIN_EQUATIONS = 50_000


def analyze_mode(model: Model, name: str, valuation: tuple[tuple[str, bool], ...],
                 equations: Sequence[Equation], continuous: Sequence[str],
                 table: SymbolTable, latent: bool = True,
                 absent_are_unknowns: bool = True, rows_last_read: bool = False,
                 deferred_latent: bool = False, heads: bytes | None = None) -> ModeAnalysis:
    """Σ-method on one mode's DAE (docs/theory.md §4, §4.4 when it has fewer equations than
    unknowns), then the BTF of the index-reduced system over the leading variables, and (if
    ``latent``) its latent and consistency equations.

    ``continuous`` are the unknowns. A continuous unknown that no enabled equation mentions is
    listed in ``absent``; it stays an unknown (so the mode is rejected: nothing determines it)
    unless ``absent_are_unknowns`` is false, in which case it is left out of the mode's DAE
    (the reading of docs/theory.md §13, where such a variable is irrelevant in the mode).

    ``rows_last_read``: this mode's graph is the last reader of the model's signature rows
    (`signature.sigma_row`), which are released once it is built: about 250 MB less at the
    peak of 10^6 equations (a later read computes its row again).

    ``deferred_latent``: the latent and consistency equations of the differentiated
    equations are converted and differentiated when first read (`LatentEquation.derived`),
    for a caller that may read none of them (the verdict and the summary of ``analyze``:
    no sympy import, issue 29), and the solved equations are a `SolvedEquations` (their
    objects made at the first read); otherwise now, as a full report reads them.

    ``heads``: when ``equations`` are the model's own sequence, its residuals' heads
    (`residual_scan.ResidualScan.heads`): the mode then records what the singular-block
    check reads of its blocks (`BlockLooks`, the attribute ``block_looks``)."""
    g, unknowns, absent = signature_graph(equations, continuous, absent_are_unknowns,
                                           model)
    if rows_last_read:
        release_rows(model)
    res = sigma_method(g)
    eq_ids = tuple([eq.id for eq in equations])
    base = _ModeHeader(name=name, valuation=valuation, equations=eq_ids,
                       unknowns=tuple(unknowns), absent=absent, sweeps=res.sweeps)
    if res.status == "singular":
        assert res.dm is not None           # (`sigma_method`: a singular result has its DM)
        return _singular_mode(base, res.dm, equations, unknowns, name)
    # (`sigma_method`: offsets for every result but a singular one)
    assert res.c is not None and res.d is not None
    # (the offsets as Python ints through `tolist`: no numpy scalar per equation)
    c_list = res.c.tolist()
    d_list = res.d.tolist()
    # (every unknown in some equation, the usual case: the dict and the instances built by
    # zip and map, without a test per unknown; issue 29)
    everywhere = bool(len(res.d) == 0 or res.d.min() >= 0)
    index = max(c_list, default=0)
    # (d < 0: in no equation; d = 0 among the others, docs/theory.md §4.7)
    nu_s = index + (1 if 0 in d_list else 0)
    states = tuple([Instance(n, k) for n, v in zip(unknowns, d_list) if v > 0
                    for k in range(v)])
    # one Instance per leading variable, shared by the blocks (10^6 of them at 10^6 equations),
    # by unknown position (None: in no equation); a list, not a dict keyed by position, whose
    # table and int keys were about 70 MB at 10^6 equations
    lead: list[Instance | None] = list(map(Instance, unknowns, d_list)) if everywhere else \
        [Instance(n, v) if v >= 0 else None for n, v in zip(unknowns, d_list)]
    leading = tuple([x for x in lead if x is not None])
    # BTF of F^c over the leading variables: the tight edges, with a matching inside them
    tight = tight_edges(g, res.c, res.d)
    matching, dof, dm, sigma_status = res.matching, res.value, res.dm, res.status
    # (the result's offsets and owner arrays, 8 MB each at 10^6 equations, go before the BTF,
    # whose blocks are the per-mode stage's peak: docs/performance.md, "stop 41, memory")
    del res
    diag, ok, status = None, True, "ok"
    under_e: tuple[str, ...] = ()
    under_v: tuple[str, ...] = ()
    if sigma_status == "underdetermined":
        ok, status = False, "underdetermined"
        assert dm is not None               # (an underdetermined result has its DM)
        matching = matching.copy()          # (the result's, unchanged)
        well = np.zeros(len(equations), dtype=bool)
        well[list(dm.well_eqs)] = True
        matching[~well] = -1
        under_e = tuple(eq_ids[i] for i in dm.under_eqs)
        under_v = tuple(unknowns[j] for j in dm.under_vars)
        undetermined = ", ".join(str(Instance(name=unknowns[j], order=max(d_list[j], 0)))
                                 for j in dm.under_vars)
        diag = (f"mode {name}: {len(equations)} equations for {len(unknowns)} unknowns "
                f"(fewer equations than unknowns): no equation determines "
                f"{{{undetermined}}}"
                f" (equations involved: {', '.join(_where(equations[i]) for i in dm.under_eqs)})")
    # the graph and its tight edges serve the BTF only, which has taken the edges it reads
    # when it starts: freed before its blocks are made (the graph's three arrays, 56 MB at
    # 10^6 equations, were under the per-mode stage's high-water: docs/performance.md, "stop
    # 43"); the matching is the BTF's own from there
    btf = iter_btf_chunks(g, matching, tight)
    del g, tight, matching
    looks = BlockLooks(equations) if heads is not None and len(heads) == len(equations) \
        else None
    blocks = tuple(_chunk_blocks(btf, eq_ids, c_list, lead, looks, heads or b""))
    # the instance table serves the blocks only: freed before the latent equations, whose
    # sympy objects would otherwise come on top of them (the per-mode stage's peak;
    # docs/performance.md, "stop 39, memory")
    # (and the lists by position, about 8 MB each at 10^6 equations; the C heap's free pages
    # go back before the latent equations' objects, which do not reuse them: `heap`)
    del btf, lead
    if len(equations) >= TRIM_MIN_EQUATIONS:
        release_free_heap()
    # the offsets by equation id and by unknown, made once the BTF's arrays are gone: two
    # dicts of 40 MB each at 10^6 equations, which were on top of them at the per-mode
    # stage's peak (docs/performance.md, "stop 43")
    c = dict(zip(eq_ids, c_list))
    d = dict(zip(unknowns, d_list)) if everywhere else \
        {n: v for n, v in zip(unknowns, d_list) if v >= 0}   # d < 0: in no equation
    del eq_ids, d_list, unknowns
    solved: Sequence[LatentEquation] = ()
    consistency: tuple[LatentEquation, ...] = ()
    choice = _StateChoice(selected_states=(), computed_states=(), state_notes=())
    if latent:
        # no equation is converted to sympy here: the undifferentiated ones keep their
        # expression tree and the differentiated ones their `latent.Derivatives` until a
        # consumer reads their sympy form; a residual without one is refused now (one walk
        # per model found them, `residual_scan`; a mode's form of one of them is checked as
        # it is)
        unconvertible = residual_scan(model).unconvertible
        for eq in equations:
            if eq.id in unconvertible:
                _check_symbolic(eq, table)
        diff = [eq for eq, k in zip(equations, c_list) if k > 0]
        s, cons = latent_derivatives(table, diff, c)
        if deferred_latent:
            # converted and differentiated when first read (`LatentEquation.derived`)
            derived = LatentEquation.derived
            top = {i: derived(i, k, x) for i, k, x in s}
            consistency = tuple(derived(i, k, x) for i, k, x in cons)
        else:
            # now: every residual converted, then each differentiated (`latent_system`'s
            # order, in which the table makes its symbols: a saved analysis lists them so)
            with gc_paused():
                for _, _, x in s:
                    x.get(0)
                top = {i: LatentEquation(i, k, x.get(k)) for i, k, x in s}
                consistency = tuple(LatentEquation(i, k, x.get(k)) for i, k, x in cons)
        if deferred_latent:
            # (the undifferentiated equations' objects made at the first read, if any)
            solved = SolvedEquations(equations, table, top)
        else:
            tree = LatentEquation.of_tree
            solved = tuple([top[eq.id] if eq.id in top else tree(eq, table)
                            for eq in equations] if top else
                           [tree(eq, table) for eq in equations])
        if consistency and len(states) <= MAX_STATE_SELECTION:
            choice = _state_selection(model, states, consistency, table)
    if len(equations) >= TRIM_MIN_EQUATIONS:
        release_free_heap()     # the graph's and the BTF's arrays, freed mid-heap (`heap`)
    # (``solved``: a tuple or a `SolvedEquations`, the field's annotation the saved
    # analysis' tuple)
    out = ModeAnalysis(c=c, d=d, index=index, structural_index=nu_s,
                       states=states, leading=leading,
                       solved=solved,  # type: ignore[arg-type]
                       consistency=consistency, blocks=blocks, ok=ok, diagnostic=diag,
                       dof=dof, under_equations=under_e, under_variables=under_v,
                       status=status, **base, **choice)
    if looks is not None:
        object.__setattr__(out, "block_looks", looks)   # (not a field: `BlockLooks`)
    return out


def _chunk_blocks(chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
                  eq_ids: Sequence[str], c: list[int], lead: list[Instance | None],
                  looks: BlockLooks | None = None, heads: bytes = b"") -> list[Block]:
    """The `Block` of each block of the BTF, read off its chunks of arrays
    (`graph.iter_btf_chunks`): the equations ``eq_ids[i]`` with their offsets ``c[i]``, the
    unknowns ``lead[j]``. The blocks of one equation (the commonest) are made per chunk by
    ``map`` in C, without a Python step per block (`Block.single`'s fields set by the slots'
    own setters; issue 29, docs/performance.md "stop 44"). ``looks``: filled with the blocks
    the singular-block check must read (`BlockLooks`), ``heads`` the heads' flags of its
    equations by position (`residual_scan.ResidualScan.heads`)."""
    out: list[Block] = []
    new, Ref = Block.__new__, E.Ref
    for eqs, unknowns, cuts in chunks:
        sizes = np.diff(cuts)
        one = sizes == 1
        n_one = int(np.count_nonzero(one))
        at = cuts[:-1][one]
        ie, jv = eqs[at].tolist(), unknowns[at].tolist()
        ks = list(map(c.__getitem__, ie))
        # (a block's unknowns are matched, so in some equation: ``lead[j]`` is set)
        us: list[Instance] = list(map(lead.__getitem__, jv))     # type: ignore[arg-type]
        singles = list(map(new, repeat(Block, n_one)))
        deque(map(_set_eq, singles, map(eq_ids.__getitem__, ie)), maxlen=0)
        deque(map(_set_k, singles, ks), maxlen=0)
        deque(map(_set_unknown, singles, us), maxlen=0)
        if n_one == len(sizes):
            out += singles
        else:
            # the larger blocks: their (eq_id, k) pairs and leading instances, one block after
            # the other, cut into each block's tuples by slices (in C too)
            many = ~one
            rows = np.repeat(many, sizes)
            el, vl = eqs[rows].tolist(), unknowns[rows].tolist()
            pairs = list(zip(map(eq_ids.__getitem__, el), map(c.__getitem__, el)))
            insts = list(map(lead.__getitem__, vl))
            bounds = np.concatenate(([0], np.cumsum(sizes[many]))).tolist()
            parts = list(map(slice, bounds, bounds[1:]))
            others = list(map(new, repeat(Block, len(parts))))
            # (`Block.__init__`'s form of a block of several equations: the tuples, k None)
            deque(map(_set_eq, others, map(tuple, map(pairs.__getitem__, parts))), maxlen=0)
            deque(map(_set_k, others, repeat(None)), maxlen=0)
            deque(map(_set_unknown, others, map(tuple, map(insts.__getitem__, parts))),
                  maxlen=0)
            # (object arrays by `fromiter`, which stores the objects as they are: assigning
            # a list asks each object for the array protocols, four times slower)
            merged = np.empty(len(sizes), dtype=object)
            merged[one] = np.fromiter(singles, dtype=object, count=n_one)
            merged[many] = np.fromiter(others, dtype=object, count=len(others))
            out += merged.tolist()
        if looks is not None:
            # ``x = f`` solved for x at order 0 (`singular_blocks`' first test): a head
            # (its name nowhere else in the residual) whose left side is the unknown's name
            maybe = map(and_, map(heads.__getitem__, ie), map(equal, map(_ORDER, us), ks))
            equations = looks.equations
            skip = np.fromiter(
                [m and type(x := equations[i].residual.left) is Ref
                 and x.name == u.name for i, m, u in zip(ie, maybe, us)],
                dtype=bool, count=n_one)
            look = ~one
            look[np.flatnonzero(one)[~skip]] = True
            looks.blocks.extend((np.flatnonzero(look) + (len(out) - len(sizes))).tolist())
            looks.rows.extend(eqs[np.repeat(look, sizes)].tolist())
    return out


def _state_selection(model: Model, states: tuple[Instance, ...],
                     consistency: tuple[LatentEquation, ...], table: SymbolTable
                     ) -> _StateChoice:
    """The ModeAnalysis fields of the stateSelect-guided state choice
    (`structure.state_select`)."""
    from .state_select import select_states
    known = set(states)
    constraints = []
    for e in consistency:
        reads = (table.instance(sym) for sym in e.expr.free_symbols)
        constraints.append(frozenset(x for x in (Instance(*r) for r in reads if r is not None)
                                     if x in known))
    hints = {v.name: v.state_select for v in model.variables if v.state_select}
    sel = select_states(states, constraints, hints)
    return _StateChoice(selected_states=sel.selected, computed_states=sel.computed,
                        state_notes=sel.notes)


def _check_symbolic(eq: Equation, table: SymbolTable) -> None:
    """`_to_sympy`'s refusal, checked on the expression tree without converting."""
    try:
        check_convertible(eq.residual, table.functions)
    except (ValueError, TypeError) as err:
        raise InputError(f"equation {eq.id}: its residual has no symbolic form: {err}",
                         eq.loc) from None


def _singular_mode(base: _ModeHeader, dm: DM, equations: Sequence[Equation], unknowns: list[str],
                   name: str) -> ModeAnalysis:
    """A structurally singular mode: name the over-determined equations (with their source
    lines) and the unknowns they fight over, and the unknowns no equation determines
    (DM of the mode's graph; docs/theory.md §10.2 error report)."""
    over_e = tuple(equations[i].id for i in dm.over_eqs)
    over_v = tuple(unknowns[j] for j in dm.over_vars)
    under_e = tuple(equations[i].id for i in dm.under_eqs)
    under_v = tuple(unknowns[j] for j in dm.under_vars)
    n_e, n_v = len(equations), len(unknowns)
    parts = []
    if dm.over_eqs:
        who = ", ".join(_where(equations[i]) for i in dm.over_eqs)
        noun = "equation" if len(dm.over_eqs) == 1 else "equations"
        if dm.over_vars:
            parts.append(f"{noun} {who} over-determine {{{', '.join(over_v)}}}")
        else:
            parts.append(f"{noun} {who} contain no unknown of this mode")
    if dm.under_vars:
        parts.append(f"no equation determines {{{', '.join(under_v)}}}")
    msg = f"mode {name}: " + "; ".join(parts)
    if n_e != n_v:
        more = "more" if n_e > n_v else "fewer"
        msg += f" ({n_e} equations for {n_v} unknowns: {more} equations than unknowns)"
    status = "overdetermined" if n_e > n_v else ("underdetermined" if n_e < n_v else "singular")
    return ModeAnalysis(c={}, d={}, index=-1, structural_index=-1, states=(), leading=(),
                        solved=(), consistency=(), blocks=(), ok=False, diagnostic=msg,
                        over_equations=over_e, over_variables=over_v, under_equations=under_e,
                        under_variables=under_v, status=status, **base)


def symbol_table(model: Model) -> SymbolTable:
    """The SymbolTable of a model: parameters, constants and discrete variables are constants
    (zero time derivative within a mode); continuous unknowns and inputs are instances."""
    cls = classify_variables(model)
    return SymbolTable(constants=frozenset(cls.constants) | frozenset(cls.discrete),
                       functions=function_table(model.functions) if model.functions else None)


def enumeration_limit_message(model_name: str, n_free: int, err: TooManyModes,
                              max_modes: int, stage: str = "per-mode analysis") -> str:
    """The message of the explicit enumeration cut-off (`enumerate_valuations`), shared by the
    per-mode stage and the mode-change exploration (`mdae_fmu.modes`)."""
    return (f"model {model_name}: its {n_free} long guards have {err} "
            f"(explicit enumeration limit: {max_modes} modes); {stage} not "
            f"performed (`mdae-fmu analyze` switches to the implicit structural "
            f"analysis of all modes beyond this limit; mode changes are explored by "
            f"enumeration only)")


def check_declared(model: Model) -> None:
    """`InputError` at the first equation that reads an undeclared name (the first such
    name in the walk of its residual, `residual_scan`)."""
    undeclared = residual_scan(model).undeclared
    if undeclared:
        i = min(undeclared)
        eq = model.equations[i]
        raise InputError(f"equation {eq.id}: unknown variable {undeclared[i]}", eq.loc)


def release_unread_rows(model: Model, mode_equations: Sequence[Equation]) -> None:
    """Drop from the signature rows' memo (`mdae_fmu.structure.signature.sigma_row`, filled
    for every residual by `mdae_fmu.structure.residual_scan`) the rows of the equations no mode
    analyses as written: the discrete equations and the conditional ones, which a mode reads
    specialized (``mode_equations``, those of any one mode: an unconditional equation is the
    same object in every mode). The normalization reads only the others and takes their rows
    out, so after it the memo holds nothing (issue 16's memory at 10^6 equations)."""
    memo = model.__dict__.get("_sigma_rows")
    if not memo:            # (none, or emptied by the one mode's graph: `release_rows`)
        return
    read = {id(eq.residual) for eq in mode_equations}
    for eq in model.equations:
        if id(eq.residual) not in read:
            memo.pop(id(eq.residual), None)


def analyze_modes(model: Model, latent: bool = True,
                  max_guards: int | None = None,
                  absent_are_unknowns: bool = True,
                  max_modes: int = MAX_ENUMERATED_MODES,
                  deferred_latent: bool = False) -> ModesReport:
    """Per-mode structural analysis of every consistent valuation of the long guards (RR-9334
    Def 31, docs/theory.md §4, §5.3, §8.3). Contradictory valuations (``x > 0`` and ``x <= 0``
    both true, ``x > 1`` true with ``x > 0`` false, ``g2`` true with ``g1`` false when
    ``g1 = time >= 5`` and ``g2 = time >= 7``) are not enumerated (`enumerate_valuations`).
    When more than ``max_modes`` (2^12) valuations are consistent, nothing is analysed and
    the report says so; the count stops at the limit, so many correlated guards with few
    consistent valuations (13 thresholds ``x > 0`` … ``x > 12``: 14 modes) are fine.
    ``max_guards`` = k is the older form of ``max_modes`` = 2^k. ``deferred_latent``: the
    latent equations of the differentiated equations made when first read (`analyze_mode`)."""
    if max_guards is not None:
        max_modes = 2 ** max_guards
    cls = classify_variables(model)
    check_declared(model)
    disc_eqs = tuple(eq.id for eq, d in zip(model.equations, discrete_equation_flags(model))
                     if d)
    disc_set = frozenset(disc_eqs)
    # (without discrete equations, the model's own sequence: no copy, no test per equation)
    dae_eqs: Sequence[Equation] = model.equations if not disc_set else \
        [eq for eq in model.equations if eq.id not in disc_set]
    atoms = long_guard_atoms(model, dae_eqs)
    table = symbol_table(model)
    fixed = fixed_guard_values(atoms)
    n_free = len(atoms) - len(fixed)
    texts = tuple(expr_text(a) for a in atoms)
    try:
        # (without atoms the single valuation needs no guard definition)
        valuations, fixed = enumerate_valuations(
            atoms, guard_definitions(model, cls) if atoms else None, limit=max_modes)
    except TooManyModes as err:
        msg = enumeration_limit_message(model.name, n_free, err, max_modes)
        return ModesReport(model_name=model.name, symbols=table, unknowns=cls.continuous,
                           discrete_equations=disc_eqs, discrete=cls.discrete,
                           inputs=cls.inputs, long_guards=texts, guard_exprs=tuple(atoms),
                           modes=(), exit_code=EXIT_REJECTED, messages=(msg,),
                           fixed_guards=tuple((expr_text(a), v) for a, v in fixed.items()),
                           n_valuations=2 ** n_free)
    modes = []
    atoms_or_guards = bool(atoms) or has_long_guards(model)
    # a model without guards and when-clauses is not normalized (`modes.explore`'s path
    # without guards): its one mode's graph is the signature rows' last reader
    last_read = not atoms_or_guards and not model.whens and not model.guards()
    for val in valuations:
        pairs = tuple((expr_text(a), val[a]) for a in atoms if a not in fixed)
        name = mode_name(pairs)
        # (a model without long guards: its single mode's equations are its DAE equations)
        eqs = specialize(model, val, classes=cls, discrete_ids=disc_set) if atoms_or_guards \
            else dae_eqs
        modes.append(analyze_mode(model, name, pairs, eqs, cls.continuous, table, latent,
                                  absent_are_unknowns, rows_last_read=last_read,
                                  deferred_latent=deferred_latent,
                                  heads=(residual_scan(model).heads
                                         if eqs is model.equations else None)))
    messages = tuple(m.diagnostic for m in modes if not m.ok and m.diagnostic)
    exit_code = EXIT_OK if all(m.ok for m in modes) else EXIT_REJECTED
    if modes:
        release_unread_rows(model, eqs)
    model.__dict__["_sigma_rows_last_read"] = True      # the normalization's (`sigma_row`)
    return ModesReport(model_name=model.name, symbols=table, unknowns=cls.continuous,
                       discrete_equations=disc_eqs, discrete=cls.discrete, inputs=cls.inputs,
                       long_guards=texts, guard_exprs=tuple(atoms), modes=tuple(modes),
                       exit_code=exit_code, messages=messages,
                       fixed_guards=tuple((expr_text(a), v) for a, v in fixed.items()),
                       n_valuations=2 ** n_free)


__all__ = ["Instance", "LatentEquation", "SolvedEquations", "Block", "BlockLooks", "ModeAnalysis",
           "ModesReport", "specialize",
           "analyze_modes", "analyze_mode", "classify_variables", "defines_discrete",
           "enumerate_valuations", "eval_condition", "consistent_valuation", "mode_name",
           "symbol_table", "eq_label", "long_guard_atoms", "signature_graph", "is_event_guard",
           "fixed_guard_values", "guard_definitions", "TooManyModes", "MAX_ENUMERATED_MODES",
           "enumeration_limit_message", "check_declared"]
