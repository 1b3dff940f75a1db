"""One nonstandard instant of a multimode system: the constructive semantics of RR-9334 §7.

docs/theory.md §3.4, §6, §7. A *configuration* is what the past
guarantees at the start of an instant: the variable instances ``(name, shift)`` already evaluated
(status t) and the context Delta of equation instances ``(eq_id, shift)`` known to hold. For a
mode (a valuation of the guards, an oracle), `exec_run` performs Algorithm 13:

1. facts Phi = context equations still enabled (RR-9334 Def 40, docs/theory.md §6.3);
2. index reduction: Pryce's Sigma-method for a long mode (Algorithm 8), the difference array of
   the continuation for a transient mode (Algorithms 11/12, `diff_array`);
3. SolveConflict (Algorithm 9): DM of the index-reduced system minus the facts, over the
   instances not known from the past; the over-determined part is erased (postponed), an
   under-determined part is a missing restart equation;
4. Eval: the block-triangular form of the remaining square system (the restart blocks);
5. Tick (Algorithm 7): shift the evaluated instances and the solved equations one instant back.

Everything here is structural (keys and graphs); the symbolic restart equations are built from
the result by `mdae_fmu.modes.shiftform`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Literal

from ..structure.keyed import DMResult, btf, dm, sigma_offsets
from .normalize import MEquation, Mode, MultimodeSystem, memo_table

VarKey = tuple[str, int]
Erasure = Literal["restricted", "canonical"]


@dataclass(frozen=True)
class Config:
    """Known instances and context at the start of an instant (docs/theory.md §8.1), plus the
    transient guards that were true at the previous instant (a rising edge cannot hold at two
    consecutive instants, docs/theory.md §7.4)."""
    known: frozenset
    context: frozenset
    last_transient: frozenset = frozenset()


@dataclass(frozen=True)
class Diagnostic:
    """A failure or warning with its catalogue code (docs/theory.md §8.2, docs/multimode.md)."""
    code: str
    message: str
    variables: tuple = ()
    equations: tuple = ()


@dataclass(frozen=True)
class SigmaInfo:
    """Sigma-method of one mode: smallest offsets c (per equation id) and d (per variable)."""
    ok: bool
    c: dict = field(default_factory=dict)
    d: dict = field(default_factory=dict)
    diagnostic: Diagnostic | None = None

    @property
    def index(self) -> int:
        return max(self.c.values(), default=0)


@dataclass(frozen=True)
class Instant:
    """The outcome of one nonstandard instant (one ExecRun)."""
    mode: Mode
    kind: Literal["long", "transient"]
    ok: bool
    known: frozenset
    facts: frozenset = frozenset()
    erased: frozenset = frozenset()
    solved: tuple = ()
    unknowns: frozenset = frozenset()
    blocks: tuple = ()
    next: Config | None = None
    diagnostic: Diagnostic | None = None


def eq_vars(eq: MEquation, shift: int) -> frozenset:
    """Variable instances of ``eq`` shifted ``shift`` times: ``x`` of highest order k contributes
    ``x^o shift .. x^o (shift+k)`` (its Euler expansion, RR-9334 (74), docs/theory.md §5.5)."""
    return orders_vars(eq.orders, shift)


def orders_vars(orders, shift: int) -> frozenset:
    """`eq_vars` of an equation whose signature row is ``orders`` (``(name, order)`` pairs)."""
    return frozenset([(n, shift + j) for n, k in orders for j in range(k + 1)])


def instance_vars(system: MultimodeSystem, key: tuple[str, int]) -> frozenset:
    """`eq_vars` of the equation instance ``key = (eq_id, shift)`` of ``system``, computed
    once per system (the run of a mode and the initialization check share them)."""
    cache = memo_table(system, "_instance_vars")
    r = cache.get(key)
    if r is None:
        r = cache[key] = eq_vars(system.equation(key[0]), key[1])
    return r


def sigma_of_mode(system: MultimodeSystem, mode: Mode) -> SigmaInfo:
    """Algorithm 6 on the equations enabled in ``mode`` (docs/theory.md §4); a structurally singular
    mode gives the E-MODE-SINGULAR diagnostic with its DM culprits."""
    enabled = system.enabled(mode)
    rows = {e.id: e.order_map for e in enabled}
    res = sigma_offsets(rows) if rows else ({}, {})
    if res is not None:
        return SigmaInfo(ok=True, c=res[0], d=res[1])
    occ = {e.id: [(n, 0) for n in e.order_map] for e in enabled}
    unk = {v for vs in occ.values() for v in vs}
    r = dm(occ, occ, unk)
    parts = []
    if r.over_eqs:
        parts.append(f"over-determined equations {equation_list(system, sorted(r.over_eqs))} "
                     f"(variables {{{', '.join(sorted(n for n, _ in r.over_vars))}}})")
    if r.under_vars:
        parts.append(f"variables {{{', '.join(sorted(n for n, _ in r.under_vars))}}} are not "
                     f"determined (equations {equation_list(system, sorted(r.under_eqs))})")
    n_eq, n_var = len(rows), len(unk)
    msg = (f"mode [{system.mode_label(mode)}] is structurally singular ({n_eq} equations, "
           f"{n_var} variables): " + "; ".join(parts))
    return SigmaInfo(
        ok=False,
        diagnostic=Diagnostic(
            code="E-MODE-SINGULAR",
            message=msg,
            variables=tuple(sorted(n for n, _ in r.under_vars | r.over_vars)),
            equations=tuple(sorted(r.over_eqs | r.under_eqs)),
        ),
    )


def sigma_from_report(system: MultimodeSystem, mode: Mode, report) -> SigmaInfo | None:
    """The Σ offsets of ``mode`` taken from the per-mode stage's `ModesReport` ``report``
    instead of running Algorithm 6 again (docs/theory.md §4; memoized per mode, docs/theory.md
    §8.1), or None when the per-mode stage did not provably analyse the same signature matrix.

    It did when some accepted mode of ``report`` has exactly the enabled equations of
    ``mode``, in order, none of them a branch of an if-expression (``e.id == e.origin``) nor
    an equation with if-expressions, and both stages have the same continuous unknowns: each
    row is then ``sigma_row`` of the same residual restricted to the same unknowns, and the
    smallest offsets of a signature matrix are unique (docs/theory.md §4.3)."""
    model = system.model
    if report is None or model is None or set(report.unknowns) != set(system.unknowns):
        return None
    enabled = system.enabled(mode)
    ma = _accepted_modes_by_equations(report).get(tuple(e.id for e in enabled))
    if ma is None:
        return None
    plain = _plain_ids(system, model)
    if any(e.id != e.origin or e.id not in plain for e in enabled):
        return None
    return SigmaInfo(ok=True, c=dict(ma.c), d=dict(ma.d))


def _accepted_modes_by_equations(report) -> dict:
    """The accepted modes of the `ModesReport` ``report`` by their tuple of equation ids, the
    first of equal tuples kept (computed once per report: thousands of modes are looked up)."""
    index = report.__dict__.get("_accepted_by_equations")
    if index is None:
        index = {}
        for m in report.modes:
            if m.ok:
                index.setdefault(m.equations, m)
        object.__setattr__(report, "_accepted_by_equations", index)
    return index


def _plain_ids(system: MultimodeSystem, model) -> frozenset:
    """Ids of the equations of ``model`` without if-expressions (computed once per system)."""
    ids = system.__dict__.get("_plain_ids")
    if ids is None:
        ids = frozenset(eq.id for eq, conds in zip(model.equations, model.if_conditions)
                        if not conds)
        object.__setattr__(system, "_plain_ids", ids)
    return ids


def equation_list(system: MultimodeSystem, keys) -> str:
    """``{e3 (file:line), e4'}``: the equations ``keys`` (ids, or (id, derivative order)
    pairs) labelled with their derivative order and their source location."""
    out = []
    for k in keys:
        eid = k if isinstance(k, str) else k[0]
        e = system.equation(eid)
        lab = eq_label(k)
        out.append(f"{lab} ({e.loc.short()})" if e.loc else lab)
    return "{" + ", ".join(out) + "}"


def eq_label(k) -> str:
    """``e3``, ``e3'`` ... for an equation instance key: the shift written as primes of the
    derivative form (Lemma 52: same structure)."""
    if isinstance(k, str):
        return k
    eid, s = k
    return eid + ("'" * s if s <= 3 else f"^({s})")


def var_label(v: VarKey) -> str:
    """Standard (derivative) reading of an instance: ``x``, ``der(x)``, ``der(x,2)``."""
    n, s = v
    if s == 0:
        return n
    return f"der({n})" if s == 1 else f"der({n},{s})"


def inst_label(v: VarKey) -> str:
    """Nonstandard (shift) reading of an instance: ``x``, ``x^o``, ``x^o2``."""
    n, s = v
    return n if s == 0 else (f"{n}^o" if s == 1 else f"{n}^o{s}")


def solve_conflict(system: MultimodeSystem, keys, occ, unknowns, erasure: Erasure,
                   c_family: dict, pair: str, instant_no: int, levels: dict | None = None):
    """Algorithm 9 SolveConflict (docs/theory.md §6.6) with the erasure rule of docs/decisions.md:

    * ``canonical``: erase the whole over-determined part beta_O (Comment 18, Lemma 17);
    * ``restricted`` (default): erase a minimal subset of the beta_O equations that belong to an
      index-reduction family of the new mode (``c_f > 0``) such that the remaining system is
      structurally nonsingular; ties broken by the textual order of the equations, then the
      shift (docs/theory.md §13.4, option 2). Equations without unknowns are always erased.

    ``levels`` (the offsets d of the new mode, or of the continuation of a transient mode)
    lets a missing restart name the state instances that lack one (`lacking_restart`).

    Returns ``(erased, DMResult of the kept system, diagnostic or None)``.
    """
    keys = frozenset(keys)
    r = dm(keys, occ, unknowns)
    erased: frozenset = frozenset()
    if r.over_eqs:
        if erasure == "canonical":
            erased = r.over_eqs
        else:
            order = {e.id: i for i, e in enumerate(system.equations)}
            erased = _minimal_erasure(keys, occ, unknowns, r, c_family, order)
            if erased is None:
                erased = r.over_eqs
    if erased:
        kept = keys - erased
        unk2 = {v for k in kept for v in occ[k] if v in unknowns}
        r2 = dm(kept, occ, unk2)
    else:       # the same graph (dm keeps only the unknowns that occur): the same result
        r2 = r
    if r2.over_eqs:
        return (
            erased,
            r2,
            Diagnostic(
                code="E-RESTART-CONFLICT",
                message=f"{pair}, instant {instant_no}: equations "
                f"{equation_list(system, sorted(r2.over_eqs))} "
                f"conflict with values fixed by the previous instant and cannot be postponed",
                variables=tuple(sorted(inst_label(v) for v in r2.over_vars)),
                equations=tuple(sorted(r2.over_eqs)),
            ),
        )
    if r2.under_vars:
        return erased, r2, _missing_restart(system, r2, occ, erased, levels or {}, pair,
                                            instant_no)
    return erased, r2, None


def _missing_restart(system: MultimodeSystem, r2: DMResult, occ, erased, levels: dict,
                     pair: str, instant_no: int) -> Diagnostic:
    """E-RESTART-MISSING (docs/theory.md §6.6: mode pair, variables lacking restart values,
    equations involved). beta_U of SolveConflict (Algorithm 9) holds every instance coupled to the
    missing equations; the message singles out the state-level instances of the new mode
    (``x^ok``, ``k < d_x``: known in its steady configuration, docs/theory.md §8.1) that the
    previous instant left unknown and whose values, if given, would make the restart determined."""
    deficit, culprits = lacking_restart(r2.under_eqs, r2.under_vars, occ, (
        v for v in r2.under_vars if v[1] < levels.get(v[0], 0)))
    eqs = equation_list(system, sorted(r2.under_eqs))
    before = f"; erased before: {equation_list(system, sorted(erased))}" if erased else ""
    missing = f"{deficit} equation{'s' if deficit != 1 else ''} missing"
    head = f"{pair}, instant {instant_no}: no equation determines the restart of "
    if culprits:
        lack = sorted({v for c in culprits for v in c})
        names = [var_label(v) for v in lack]
        which = ("one of " if len(culprits) > 1 and deficit == 1 else "") + \
            "{" + ", ".join(names) + "}"
        others = sorted({var_label((n, 0)) for n, _ in r2.under_vars} - {n for n, _ in lack})
        coupled = (f"; {{{', '.join(others)}}} {'are' if len(others) > 1 else 'is'} coupled "
                   f"to {'them' if len(lack) > 1 else 'it'} through {eqs}" if others
                   else f"; equations involved {eqs}")
        msg = (head + which + f" ({missing}: the new mode needs "
               + ("these values, which the previous instant does not give"
                  if len(lack) > 1 else "this value, which the previous instant does not give")
               + coupled + before + ")")
        return Diagnostic(
            code="E-RESTART-MISSING",
            message=msg,
            variables=tuple(names),
            equations=tuple(sorted(r2.under_eqs)),
        )
    names = sorted({n for n, _ in r2.under_vars})
    inst = ", ".join(inst_label(v) for v in sorted(r2.under_vars))
    msg = (head + f"{{{', '.join(names)}}} ({missing}; undetermined instances {inst}; "
           f"equations involved {eqs}{before})")
    return Diagnostic(
        code="E-RESTART-MISSING",
        message=msg,
        variables=tuple(names),
        equations=tuple(sorted(r2.under_eqs)),
    )


def lacking_restart(under_eqs, under_vars, occ, candidates, max_tries: int = 4096):
    """The instances that lack an equation, within an under-determined part beta_U of DM.

    ``deficit = |beta_U variables| - |beta_U equations|`` equations are missing (docs/theory.md
    §2.4, RR-9334 Def 15: beta_U has a matching covering its equations, not its variables). Returns
    ``(deficit, sets)``: every set S of ``deficit`` instances among ``candidates`` such that
    beta_U with S given is structurally nonsingular (empty beta_O and beta_U), i.e. the values
    that, supplied by a restart (or impact) law, would complete the system. At most
    ``max_tries`` subsets are tried; ``sets`` is empty when no candidate set works."""
    under_vars = frozenset(under_vars)
    deficit = len(under_vars) - len(under_eqs)
    cands = sorted(set(candidates) & under_vars)
    found = []
    if deficit <= 0 or len(cands) < deficit:
        return max(deficit, 0), ()
    for i, combo in enumerate(itertools.combinations(cands, deficit)):
        if i >= max_tries:
            break
        r = dm(under_eqs, occ, under_vars - set(combo))
        if not r.over_eqs and not r.under_vars:
            found.append(combo)
            if deficit > 1:
                break
    return deficit, tuple(found)


def _minimal_erasure(keys, occ, unknowns, r: DMResult, c_family, order=None):
    """The restricted rule of `solve_conflict`: candidates sorted by (position of the equation
    in the source, shift), subsets tried by size then in that order."""
    forced = frozenset(k for k in r.over_eqs if not (set(occ[k]) & set(unknowns)))
    pos = order or {}
    cands = sorted((k for k in r.over_eqs - forced if c_family.get(k[0], 0) > 0),
                   key=lambda k: (pos.get(k[0], len(pos)), k[0], k[1]))
    for size in range(0, len(cands) + 1):
        for combo in itertools.combinations(cands, size):
            er = forced | frozenset(combo)
            kept = keys - er
            unk2 = {v for k in kept for v in occ[k] if v in unknowns}
            r2 = dm(kept, occ, unk2)
            if not r2.over_eqs and not r2.under_vars:
                return er
    return None


def tick(known, solved_keys, new_vars, facts) -> Config:
    """Algorithm 7 Tick (docs/theory.md §6.4): ``x^o(m+1)`` evaluated gives ``x^om`` known; an
    equation
    instance ``e^o(m+1)`` solved or a fact gives ``e^om`` in the next context (docs/theory.md
    §6.3)."""
    nk = frozenset((n, j - 1) for n, j in set(known) | set(new_vars) if j >= 1)
    nc = frozenset((e, k - 1) for e, k in set(solved_keys) | set(facts) if k >= 1)
    return Config(known=nk, context=nc)


def exec_long(system: MultimodeSystem, cfg: Config, mode: Mode, sig: SigmaInfo,
              erasure: Erasure = "restricted", pair: str = "", instant_no: int = 0,
              kind: Literal["long", "transient"] = "long") -> Instant:
    """Algorithm 10 ExecRun for a long mode (docs/theory.md §6.7). ``kind="transient"``: the instant
    of a transient mode whose equations are those of its continuation (`exec_transient`),
    ``sig`` being the continuation's Σ-method."""
    if not sig.ok:
        return Instant(mode=mode, kind=kind, ok=False, known=cfg.known, diagnostic=sig.diagnostic)
    enabled = system.enabled(mode)
    ids = {e.id for e in enabled}
    facts = frozenset(k for k in cfg.context if k[0] in ids)
    system_keys = {(e.id, k) for e in enabled for k in range(sig.c[e.id] + 1)}
    keys = system_keys - facts
    occ = {k: instance_vars(system, k) for k in keys}
    unknowns = set().union(*occ.values()) - cfg.known
    erased, r2, diag = solve_conflict(system, keys, occ, unknowns, erasure, sig.c, pair,
                                      instant_no, sig.d)
    if diag is not None:
        return Instant(mode=mode, kind=kind, ok=False, known=cfg.known, facts=facts,
                       erased=erased, diagnostic=diag)
    return _finish(system, cfg, mode, kind, facts, erased, r2, occ)


def steady_run(system: MultimodeSystem, mode: Mode, sig: SigmaInfo) -> Instant:
    """The run of the regular long mode ``mode`` from its steady configuration (`steady_config`),
    the self-loop of the automaton whose system is the mode's index-reduced leading system
    G_Sig (docs/theory.md §8.3), built from the Σ offsets instead of Algorithm 10's
    DM: the facts are the context (every ``(e, k)``, ``k < c_e``), the equations left are the
    top instances ``(e, c_e)``, whose unknowns are the leading instances ``(x, d_x)`` on the
    tight edges ``sigma_ex + c_e = d_x`` (every other instance they read is state-level, hence
    known). The transversal of the Σ-method is a complete matching of these tight edges, so
    SolveConflict erases nothing and solves every top instance, and Tick (Algorithm 7) gives
    back the steady configuration. Same `Instant` as `exec_long` from that configuration; only
    its BTF is computed."""
    assert sig.ok, "steady_run needs the offsets of a regular mode"
    cfg = steady_config(system, mode, sig)
    c, d = sig.c, sig.d
    occ = {}
    for e in system.enabled(mode):
        ce = c[e.id]
        occ[(e.id, ce)] = frozenset([(n, d[n]) for n, k in e.orders if k + ce == d[n]])
    solved = tuple(sorted(occ))
    leading = frozenset((n, dn) for n, dn in d.items())
    blocks = tuple(btf(solved, occ, leading))
    return Instant(
        mode=mode,
        kind="long",
        ok=True,
        known=cfg.known,
        facts=cfg.context,
        erased=frozenset(),
        solved=solved,
        unknowns=leading,
        blocks=blocks,
        next=cfg,
    )


def _finish(system, cfg, mode, kind, facts, erased, r2: DMResult, occ) -> Instant:
    solved = tuple(sorted(r2.well_eqs))
    new_vars = frozenset(r2.well_vars)
    blocks = tuple(btf(solved, occ, new_vars))
    nxt = tick(cfg.known, solved, new_vars, facts)
    if kind == "transient":
        nxt = Config(known=nxt.known, context=nxt.context, last_transient=frozenset(
            i for i, (g, v) in enumerate(zip(system.guards, mode)) if v and g.kind == "transient"))
    return Instant(
        mode=mode,
        kind=kind,
        ok=True,
        known=cfg.known,
        facts=facts,
        erased=erased,
        solved=solved,
        unknowns=new_vars,
        blocks=blocks,
        next=nxt,
    )


# --- transient modes: ExistQuantifEqn and DiffArray ------------------------------------------

@dataclass(frozen=True)
class EQResult:
    """Outcome of Algorithm 5 ExistQuantifEqn (docs/theory.md §3.4).

    On failure, ``culprits`` is what the reason is about (equations, or variables for
    "underdetermined" and "X depends on future-only variables"); ``equations`` and
    ``variables`` are the equation and variable instances involved (for the diagnostics), and
    ``missing`` the number of equations missing for "underdetermined"."""
    b_O: bool
    b_U: bool
    F_sig: tuple = ()
    Fbar_sig: tuple = ()
    reason: str = ""
    culprits: tuple = ()
    equations: tuple = ()
    variables: tuple = ()
    missing: int = 0


def exist_quantif(keys, occ, X, W, Y, literal: bool = False) -> EQResult:
    """Algorithm 5 ExistQuantifEqn, in the two-graph reading of Lemma 22 (docs/theory.md §3.3):
    condition 1 on DM with X, W, Y unknown; conditions 2-3 on DM with Y given. ``literal=True``
    is Lemma 22 as printed (Y unknown in condition 2 as well), kept for comparison."""
    X, W, Y = set(X), set(W), set(Y)
    keys = frozenset(keys)
    r1 = dm(keys, occ, X | W | Y)
    if r1.over_eqs:
        over = tuple(sorted(r1.over_eqs))
        return EQResult(
            b_O=False,
            b_U=False,
            reason="overdetermined",
            culprits=over,
            equations=over,
            variables=tuple(sorted(r1.over_vars)),
        )
    U2 = (X | W | Y) if literal else (X | W)
    r2 = dm(keys, occ, U2)
    if r2.under_vars & X:
        return EQResult(b_O=True, b_U=False, reason="underdetermined",
                        culprits=tuple(sorted(r2.under_vars & X)),
                        equations=tuple(sorted(r2.under_eqs)),
                        variables=tuple(sorted(r2.under_vars)),
                        missing=len(r2.under_vars) - len(r2.under_eqs))
    if r2.over_vars & X:
        over = tuple(sorted(r2.over_eqs))
        return EQResult(b_O=True, b_U=False, reason="X over-determined given Y", culprits=over,
                        equations=over, variables=tuple(sorted(r2.over_vars & X)))
    blocks = btf(r2.well_eqs, occ, set(r2.well_vars))
    owner = {v: bi for bi, b in enumerate(blocks) for v in b.unknowns}
    f_sig: list = []
    fbar: list = []
    for bi, b in enumerate(blocks):
        if set(b.unknowns) & X:
            if set(b.unknowns) & W:
                return EQResult(b_O=True, b_U=False, reason="X and future-only variables coupled",
                                culprits=tuple(sorted(set(b.unknowns) & W)),
                                equations=tuple(sorted(b.equations)),
                                variables=tuple(sorted(set(b.unknowns) & X)))
            reads = {v for k in b.equations for v in occ[k] if v in W and owner.get(v) != bi}
            if reads:
                return EQResult(b_O=True, b_U=False, reason="X depends on future-only variables",
                                culprits=tuple(sorted(reads)),
                                equations=tuple(sorted(k for k in b.equations
                                                       if set(occ[k]) & reads)),
                                variables=tuple(sorted(set(b.unknowns) & X)))
            f_sig.extend(b.equations)
        else:
            fbar.extend(b.equations)
    fbar.extend(sorted(r2.over_eqs))
    return EQResult(b_O=True, b_U=True, F_sig=tuple(f_sig), Fbar_sig=tuple(fbar))


def continuation_mode(system: MultimodeSystem, mode: Mode) -> Mode:
    """The long mode that follows a transient instant: transient guards false, long guards
    unchanged (a long guard lasts a positive duration, Assumption 2; docs/decisions.md)."""
    return tuple(v if g.kind == "long" else False for g, v in zip(system.guards, mode))


def diff_array(system: MultimodeSystem, cfg: Config, mode: Mode, cont_sig: SigmaInfo,
               n_inf: int | None = None, literal: bool = False):
    """Algorithm 11 DiffArray for one transient instant followed by its continuation long mode
    (docs/theory.md §7.3, K = 0): phase 1 on the transient equations alone, phase 2 appending
    ``n_inf`` shifted copies of the continuation's index-reduced system, where only its
    consistency part may be erased. When phase 1 fails, the array is decided per connected
    component (`array_components`, docs/theory.md §7.5): a part of the model that shares no
    instance with the event's equations (two capacitors in parallel beside a bouncing ball)
    neither forces the event's equations into phase 2 nor lends them its failure. Returns
    ``(EQResult, occ, long equations that gave way to the transient ones)``."""
    enabled = system.enabled(mode)
    f0 = {(e.id, 0) for e in enabled}
    occ = {k: eq_vars(system.equation(k[0]), k[1]) for k in f0}
    res, gone = _first_phase(system, f0, occ, cfg.known, literal)
    if gone or not res.b_O or res.b_U:
        return res, occ, gone
    if not cont_sig.ok:
        d = cont_sig.diagnostic
        return (EQResult(b_O=True, b_U=False, reason="continuation mode structurally singular",
                         equations=d.equations if d else ()), occ, frozenset())
    n_inf = n_inf if n_inf is not None else cont_sig.index + 1
    rows, cons = _continuation_rows(system, mode, cont_sig, f0, n_inf)
    for row in rows:
        occ[row] = eq_vars(system.equation(row[0]), row[1])
    parts = array_components(set(f0) | rows, occ)
    if len(parts) == 1:
        return _second_phase(f0, rows, cons, occ, cfg.known, res, literal), occ, frozenset()
    passed: list[EQResult] = []
    gave_way: frozenset = frozenset()
    failing: set = set()
    for part in parts:
        p0 = f0 & part
        r, g = _first_phase(system, p0, occ, cfg.known, literal)
        if not (r.b_O and r.b_U) and r.b_O and not g:
            r = _second_phase(p0, rows & part, cons & part, occ, cfg.known, r, literal)
        if r.b_O and r.b_U:
            passed.append(r)
            gave_way |= g
        else:
            failing |= part
    if failing:
        # the failing components together, as the whole array was decided before: with every
        # component failing, the whole array's verdict and message
        f0_f = f0 & failing
        if failing == set(f0) | rows:
            r_f = res
        else:
            r_f, g = _first_phase(system, f0_f, occ, cfg.known, literal)
            if g or not r_f.b_O or r_f.b_U:
                return r_f, occ, g
        r = _second_phase(f0_f, rows & failing, cons & failing, occ, cfg.known, r_f, literal)
        if not (r.b_O and r.b_U):
            return r, occ, frozenset()
        passed.append(r)
    return EQResult(b_O=True, b_U=True,
                    F_sig=tuple(k for r in passed for k in r.F_sig),
                    Fbar_sig=tuple(k for r in passed for k in r.Fbar_sig)), occ, gave_way


def array_components(keys, occ) -> list[set]:
    """The connected components of a difference array (docs/theory.md §7.5): its equation
    instances ``keys`` linked through every variable instance they read (``occ``), known ones
    included, in the order of their smallest key."""
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for k in keys:
        rk = find(("eq", k))
        for v in occ[k]:
            rv = find(("var", v))
            if rv != rk:
                parent[rv] = rk
    groups: dict = {}
    for k in keys:
        groups.setdefault(find(("eq", k)), set()).add(k)
    return sorted(groups.values(), key=lambda g: min(g, key=repr).__repr__())


def _first_phase(system, f0, occ, known, literal):
    """Phase 1 of DiffArray (`diff_array`): ExistQuantifEqn on the transient instant's
    equations ``f0`` alone, the reinit's dynamics giving way when it over-determines the
    instant (`_yield_to_reinit`). Returns ``(EQResult, equations that gave way)``."""
    vars0 = {v for k in f0 for v in occ[k]}
    X = vars0 - known
    Y = vars0 & known
    res = exist_quantif(f0, occ, X, set(), Y, literal)
    if res.b_O and not res.b_U and res.reason == "X over-determined given Y":
        res, gone = _yield_to_reinit(system, f0, occ, X, Y, res, literal)
        if gone:
            return res, gone
    return res, frozenset()


def _continuation_rows(system, mode, cont_sig, f0, n_inf):
    """The rows phase 2 of DiffArray appends: ``n_inf`` shifted copies of the continuation's
    index-reduced system, and those of them that are consistency rows (which may be erased)."""
    cont = continuation_mode(system, mode)
    rows, cons = set(), set()
    for e in system.enabled(cont):
        for j in range(1, n_inf + 1):
            for k in range(cont_sig.c[e.id] + 1):
                key = (e.id, k + j)
                if key in f0:
                    continue
                rows.add(key)
                if k < cont_sig.c[e.id]:
                    cons.add(key)
    return rows, cons


def _second_phase(f0, rows, cons, occ, known, res, literal) -> EQResult:
    """Phase 2 of DiffArray (`diff_array`) over the instant's rows ``f0`` and the
    continuation's ``rows`` (``cons`` those that may be erased); ``res`` is phase 1's failure,
    whose message an under-determined phase 2 keeps."""
    X = {v for k in f0 for v in occ[k]} - known
    A = set(f0) | rows
    allv = {v for k in A for v in occ[k]}
    Y = allv & known
    W = allv - X - Y
    for _ in range(3):
        r = dm(A, occ, X | W | Y)
        if not r.over_eqs:
            break
        if not r.over_eqs <= cons:
            over = tuple(sorted(r.over_eqs))
            return EQResult(b_O=False, b_U=False, reason="overdetermined", culprits=over,
                            equations=over, variables=tuple(sorted(r.over_vars)))
        A -= r.over_eqs
    res2 = exist_quantif(A, occ, X, W, Y, literal)
    if res2.b_O and res2.b_U:
        # only the transient rows (and latent rows that involve X only) are solved now
        return res2
    return res2 if res2.reason != "underdetermined" else res


def _yield_to_reinit(system, f0, occ, X, Y, res, literal):
    """A transient instant over-determined given the past: the continuous (long) equations
    give way to the transient ones (a reinit overrides the dynamics of its variable, e.g. the
    bouncing ball's ``der(v) = -g`` at the bounce), never the reverse: the smallest set of
    long equations of the over-determined part whose removal makes the instant well-posed
    (docs/decisions.md, "reinit at a transient instant")."""
    def transient_only(k):
        return any(p and system.guards[i].kind == "transient"
                   for i, p in system.equation(k[0]).guard)
    cands = sorted(k for k in res.culprits if not transient_only(k))
    for size in range(1, len(cands) + 1):
        for combo in itertools.combinations(cands, size):
            rest = set(f0) - set(combo)
            vars_ = {v for k in rest for v in occ[k]}
            r = exist_quantif(rest, occ, X & vars_, set(), Y & vars_, literal)
            if r.b_O and r.b_U:
                return r, frozenset(combo)
    return res, frozenset()


def same_as_continuation(system: MultimodeSystem, mode: Mode) -> bool:
    """Whether the transient ``mode`` enables exactly the equations of its continuation: its
    transient guards select no equation of the continuous unknowns, only the discrete updates
    of when-clauses (a pulse source's ``when sample(...) then T0 = time``), which are not part
    of the modes' DAEs (docs/decisions.md §6)."""
    ids = {e.id for e in system.enabled(mode)}
    return ids == {e.id for e in system.enabled(continuation_mode(system, mode))}


def exec_transient(system: MultimodeSystem, cfg: Config, mode: Mode, cont_sig: SigmaInfo,
                   erasure: Erasure = "restricted", pair: str = "", instant_no: int = 0,
                   literal: bool = False) -> Instant:
    """Algorithm 13 ExecRun for a transient mode (docs/theory.md §7.3): DiffArray, then
    SolveConflict on ``(F_Sig ∪ Fbar_Sig) \\ Phi``, Eval, Tick.

    IndexReduc (Algorithm 12) takes the latent equations of a transient instant from its
    continuation because the instant's own equations are not enabled at the next instant
    (docs/theory.md §7). When they are (`same_as_continuation`), the continuation's Σ-method holds
    at this instant too: the instant is the continuation's first one, run as a long mode
    (Algorithm 12 line 2). DiffArray would count the leading instances that only the latent
    equations determine (``der(C.p.v)`` of a capacitor pin) as future values of the array
    (``W``) and refuse any index-1 circuit at every event of a pulse source."""
    if same_as_continuation(system, mode):
        return exec_long(system, cfg, mode, cont_sig, erasure, pair, instant_no, "transient")
    label = system.mode_label(mode)
    enabled = system.enabled(mode)
    ids = {e.id for e in enabled}
    facts = frozenset(k for k in cfg.context if k[0] in ids)
    res, occ, gave_way = diff_array(system, cfg, mode, cont_sig, literal=literal)
    if not res.b_O:
        return Instant(
            mode=mode,
            kind="transient",
            ok=False,
            known=cfg.known,
            facts=facts,
            diagnostic=Diagnostic(
                code="E-TRANSIENT-OVER",
                message=f"{pair}: at transient mode [{label}] the equations "
                f"{equation_list(system, res.culprits)} contradict each other or the past "
                "(transient equations are never erased)",
                variables=tuple(sorted({inst_label(v) for v in res.variables})),
                equations=res.culprits,
            ),
        )
    if not res.b_U:
        return Instant(mode=mode, kind="transient", ok=False, known=cfg.known, facts=facts,
                       diagnostic=_transient_failure(system, res, occ, mode, cont_sig, pair))
    keys = (set(res.F_sig) | set(res.Fbar_sig)) - facts
    unknowns = set().union(*occ.values()) - cfg.known
    erased, r2, diag = solve_conflict(system, keys, occ, unknowns, erasure,
                                      {k[0]: 1 for k in res.Fbar_sig}, pair, instant_no,
                                      cont_sig.d)
    erased = erased | gave_way
    if diag is not None:
        return Instant(
            mode=mode,
            kind="transient",
            ok=False,
            known=cfg.known,
            facts=facts,
            erased=erased,
            diagnostic=diag,
        )
    return _finish(system, cfg, mode, "transient", facts, erased, r2, occ)


def _transient_failure(system: MultimodeSystem, res: EQResult, occ, mode: Mode,
                       cont_sig: SigmaInfo, pair: str) -> Diagnostic:
    """E-TRANSIENT-UNDER / E-TRANSIENT-FUTURE (docs/theory.md §8.2, docs/multimode.md) for a
    DiffArray
    (Algorithm 11) whose ExistQuantifEqn (Algorithm 5) has ``b_O`` and not ``b_U``: the mode
    change, the variables left undetermined, the equations involved with their source lines,
    and, for an under-determined instant, how many equations are missing and which state
    values an impact law (a ``reinit``) could supply."""
    label = system.mode_label(mode)
    eqs = equation_list(system, res.equations) if res.equations else "{}"
    if res.reason == "underdetermined":
        names = sorted({inst_label(v) for v in res.culprits})
        # an impact law gives the next value x^o of a state of the following long mode
        cands = [v for v in res.culprits if v[1] >= 1 and cont_sig.d.get(v[0], 0) >= 1]
        deficit, sets = lacking_restart(res.equations, res.variables, occ, cands)
        deficit = res.missing or deficit
        law = ""
        if sets:
            vs = sorted({v[0] for c in sets for v in c})
            law = (" for " + ("one of " if len(sets) > 1 and deficit == 1 else "")
                   + "{" + ", ".join(vs) + "}")
        msg = (f"{pair}: transient mode [{label}] is underdetermined, {deficit} equation"
               f"{'s' if deficit != 1 else ''} missing: {{{', '.join(names)}}} cannot be "
               f"determined by {eqs}, not even with the latent equations of the following long "
               f"mode; provide an impact/restart law{law} (e.g. a reinit in the when-clause)")
        return Diagnostic(
            code="E-TRANSIENT-UNDER",
            message=msg,
            variables=tuple(names),
            equations=tuple(res.equations),
        )
    names = sorted({inst_label(v) for v in res.variables})
    if res.reason == "continuation mode structurally singular":
        cont = continuation_mode(system, mode)
        return Diagnostic(
            code="E-TRANSIENT-FUTURE",
            message=f"{pair}: transient mode [{label}] is followed by the long "
            f"mode [{system.mode_label(cont)}], which is structurally singular (equations "
            f"{eqs})",
            variables=(),
            equations=tuple(res.equations),
        )
    if res.reason == "X depends on future-only variables":
        fut = ", ".join(inst_label(v) for v in res.culprits)
        what = (f"the values {{{', '.join(names)}}} computed at the transient instant would "
                f"depend on the future values {{{fut}}} through {eqs}")
    elif res.reason == "X and future-only variables coupled":
        fut = ", ".join(inst_label(v) for v in res.culprits)
        what = (f"the values {{{', '.join(names)}}} computed at the transient instant are "
                f"determined together with the future values {{{fut}}} by {eqs}")
    else:       # X over-determined given Y
        what = (f"{{{', '.join(names)}}} over-determined given the values known from the past "
                f"by {eqs}")
    return Diagnostic(
        code="E-TRANSIENT-FUTURE",
        message=f"{pair}: at transient mode [{label}]: {what}",
        variables=tuple(names),
        equations=tuple(res.equations),
    )


def steady_config(system: MultimodeSystem, mode: Mode, sig: SigmaInfo) -> Config:
    """The steady configuration of a long mode (docs/theory.md §8.5):
    state-level instances ``x^ok, k < d_x`` known, context = the consistency equations."""
    known = frozenset((n, k) for n, d in sig.d.items() for k in range(d))
    ctx = frozenset((e, k) for e, c in sig.c.items() for k in range(c))
    return Config(known=known, context=ctx)
