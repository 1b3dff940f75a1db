"""Algorithm ST: standardization of a restart instant (docs/theory.md §9.4, §9.6, RR-9334 §10.2-10.5
and §11.3).

From the shift-form restart system ``H(Z, X, d) = 0`` and its impulse analysis (Algorithm IA):

* **S0** (Theorem 67): write each equation at its leading order in d (multiply by the power of
  d that makes it finite, then d := 0); if the result is structurally nonsingular in the
  unknowns, it is the standard restart;
* **S1** (elimination, Theorem 72): the impulsive variables W_i enter linearly: solve one
  equation for each (a matching of W_i into the equations), substitute, then take the leading
  order in d of the rest (this performs the "subtract the satisfied constraint, divide by d"
  step of (40) when the lower shift is a fact); accept if structurally nonsingular;
* **S2** (rescaling, (191)-(193)): every impulsive w of finite order mu is written
  ``w = w_hat * d^(-mu)``, then leading order in d (rational powers allowed);
* **S3** (RR-9334 §11.3, Algorithm 14): otherwise the restart is computed numerically with d
  replaced by a decreasing standard delta (`mdae_fmu.impulse.numeric.delta_scheme`).

The result gives the standard restart as implicit equations ``K(Y, X, 0) = 0`` over the
right-limit symbols and, when sympy solves them, explicit equations ``x+ = f(x-)``; among several
isolated roots the one nearest to the left limits is kept (Lemmas 19-20: uniqueness is only
local; docs/decisions.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from ..structure.keyed import btf, dm
from ..symbolic import as_sympy
from .analysis import ImpulseResult, impulse_analysis
from .problem import RestartProblem, left, right


@dataclass(frozen=True)
class Standardized:
    """The standard restart of one instant."""
    method: str                          # "S0", "S1", "S2", "S3"
    level: str                           # "jet" or "shift" (problem module docstring)
    equations: tuple = ()                # implicit K(Y, X, 0) = 0, sympy expressions
    unknowns: tuple = ()                 # Y: right-limit / instance symbols solved for
    solution: dict = field(default_factory=dict)      # symbol -> expression of left limits
    restart: tuple = ()                  # sympy Eq(x+, f(x-)) for the state jets
    impulsive: tuple = ()                # (symbol, order text)
    impulse: ImpulseResult | None = None
    notes: tuple = ()


def leading_order(expr: sp.Expr, d: sp.Symbol) -> sp.Expr:
    """The coefficient of the lowest power of d of ``expr``'s numerator (the equation multiplied
    by the power of d that makes it finite, then d := 0; docs/theory.md §9.4 rule S0)."""
    terms = sp.Add.make_args(sp.expand(expr))
    quick: dict = {}
    for t in terms:
        c, p = t.as_coeff_exponent(d)
        if d in c.free_symbols:
            break
        quick.setdefault(p, []).append(c)
    else:
        if not quick or sp.expand(expr) == 0:
            return sp.Integer(0)
        low = min(quick, key=lambda q: float(q))
        return sp.factor_terms(sp.Add(*quick[low]))
    num = sp.expand(sp.numer(sp.together(sp.expand(expr))))
    if num == 0:
        return sp.Integer(0)
    powers: dict = {}
    for t in sp.Add.make_args(num):
        p = sp.Integer(0)
        rest = []
        for f in sp.Mul.make_args(t):
            b, e = f.as_base_exp()
            if b == d:
                p += e
            else:
                rest.append(f)
        powers.setdefault(p, []).append(sp.Mul(*rest))
    low = min(powers, key=lambda q: float(q))
    return sp.factor_terms(sp.Add(*powers[low]))


def _nonsingular(eqs: list, unknowns: list) -> bool:
    occ = {i: [s for s in e.free_symbols if s in set(unknowns)] for i, e in enumerate(eqs)}
    if len(eqs) != len(unknowns):
        return False
    r = dm(list(occ), occ, unknowns)
    return not (r.over_eqs or r.under_vars or r.under_eqs)


def level_form(problem: RestartProblem, level: str, impulse: ImpulseResult | None):
    """Equations in standard symbols: known instances through left jets, the top instances
    through the right-limit symbols of the level; with facts subtracted at jet level."""
    sub = problem.jet_substitution()
    sub.update(problem.top_substitution(level))
    tops = {j.top for j in problem.jets if j.top is not None}
    eqs = []
    for lab, e in problem.equations:
        ex = e.xreplace(sub)
        low = problem.lower.get(lab)
        if low is not None and low[0] == "fact" and level == "jet":
            ex = ex - low[1].xreplace(sub)
        eqs.append(ex)
    targets = problem.targets(level)
    others = [s for s in problem.unknowns if s not in tops]
    return eqs, list(targets.values()), others


#: Systems with more unknowns than this are solved only in the part the restart reads
#: (`_restart_part`) after an impulse analysis; smaller ones whole, as before (their impulse
#: values, e.g. the rescaled ``w_hat`` of S2, are part of the report).
WHOLE_SOLVE_LIMIT = 30


def _blocks(eqs: list, unknowns: list):
    """``(occ, blocks)``: the unknowns of each equation and the block-triangular form
    (docs/theory.md §2.3) of a square, structurally nonsingular system, blocks in a topological
    order; None for any other system."""
    if len(eqs) != len(unknowns) or not _nonsingular(eqs, unknowns):
        return None
    unk = set(unknowns)
    occ = {i: [x for x in e.free_symbols if x in unk] for i, e in enumerate(eqs)}
    return occ, btf(list(occ), occ, unknowns)


def _restart_part(problem: RestartProblem, eqs: list, unknowns: list,
                  targets: list, whole_limit: int = WHOLE_SOLVE_LIMIT) -> tuple[list, list]:
    """``(eqs, unknowns)`` reduced to the blocks of the block-triangular form (docs/theory.md
    §2.3) that the restart reads: the blocks of the right limits ``targets`` and of the next
    instances of variables new to the instant (`_restart_eqs`), with every block they read.
    Unchanged when the system has at most ``whole_limit`` unknowns or is singular.

    By Theorem 67 (docs/theory.md §9.4) the standard restart solves ``K(Y, X, 0) = 0``; the
    other blocks are the instant's algebraic unknowns, which the mode's own block schedule
    computes again at run time from the restarted states. A when-clause instant that assigns
    discrete variables and reinits nothing (MSL 3.1 ThyristorBehaviourTest and
    CauerLowPassSC: a pulse source's ``T0 = time``) has for each state the block
    ``C*(x+ - x-) = 0``, so its restart ``x+ = x-`` is found without solving the circuit."""
    if len(unknowns) <= whole_limit:
        return eqs, unknowns
    bt = _blocks(eqs, unknowns)
    if bt is None:
        return eqs, unknowns
    occ, blocks = bt
    have = {j.name for j in problem.jets}
    needed = set(targets) | {u for u in unknowns
                             if u.name.rpartition("@")[0] not in ("", *have)
                             and u.name.endswith("@1")}
    solved_in = {v: k for k, b in enumerate(blocks) for v in b.unknowns}
    keep: set[int] = set()
    todo = [solved_in[v] for v in needed if v in solved_in]
    while todo:
        k = todo.pop()
        if k in keep:
            continue
        keep.add(k)
        for i in blocks[k].equations:
            todo.extend(solved_in[v] for v in occ[i] if solved_in[v] not in keep)
    rows = sorted(i for k in keep for i in blocks[k].equations)
    cols = {v for k in keep for v in blocks[k].unknowns}
    return [eqs[i] for i in rows], [u for u in unknowns if u in cols]


def _solve_linear_blocks(eqs: list, unknowns: list) -> dict | None:
    """The structural and linear shortcut of `_solve`: the blocks of the block-triangular form
    (docs/theory.md §2.3) in order, each solved by LU elimination once the earlier blocks' values
    are substituted, when every block is linear in its own unknowns (coefficients may read
    parameters, left limits, earlier unknowns and if-expressions of discrete variables). Such a
    system has one solution, the one sympy.solve would return, which on a circuit with
    if-expressions sympy.solve seeks through a Gröbner basis (MSL 3.1 CauerLowPassSC: no answer
    in 600 s). None when a block is nonlinear or its matrix is singular."""
    bt = _blocks(eqs, unknowns)
    if bt is None:
        return None
    _occ, blocks = bt
    unk = set(unknowns)
    sol: dict = {}
    for b in blocks:
        bu = list(b.unknowns)
        beqs = [eqs[i].xreplace(sol) for i in b.equations]
        if any(s in unk and s not in bu for e in beqs for s in e.free_symbols):
            return None                  # not in topological order (never expected)
        try:
            A, rhs = sp.linear_eq_to_matrix(beqs, bu)
            x = A.LUsolve(rhs) if len(bu) > 1 else rhs / A[0, 0]
        except (ValueError, ZeroDivisionError, NotImplementedError):
            return None
        if any(e.has(sp.zoo, sp.nan, sp.oo) for e in x):
            return None
        sol.update(zip(bu, x))
    return sol


def _solve(eqs, unknowns, knowns_hint, params):
    """Explicit solution when sympy finds one; the root nearest to the left limits. A system
    linear block by block is solved without sympy.solve (`_solve_linear_blocks`)."""
    lin = _solve_linear_blocks(eqs, unknowns)
    if lin is not None:
        return lin
    try:
        sols = sp.solve(eqs, unknowns, dict=True, simplify=False, rational=False)
    except (NotImplementedError, ValueError, TypeError):
        return None
    sols = [s for s in sols if all(u in s for u in unknowns)]
    if not sols:
        return None
    if len(sols) == 1:
        return sols[0]
    rng = random.Random(7)
    free = set().union(*(e.free_symbols for s in sols for e in s.values()))
    point = {s: sp.Float(params.get(s.name, rng.uniform(0.5, 1.5))) for s in free}
    # left limits near a generic consistent point: distance of each root to the left values

    def dist(sol):
        tot = 0.0
        for u, e in sol.items():
            ref = knowns_hint.get(u)
            if ref is None:
                continue
            try:
                val = complex(as_sympy(e).xreplace(point).evalf())
                rv = complex(as_sympy(ref).xreplace(point).evalf())
            except (TypeError, ValueError):
                return float("inf")
            if abs(val.imag) > 1e-9:
                return float("inf")
            tot += abs(val - rv)
        return tot
    return min(sols, key=dist)


def _restart_eqs(problem: RestartProblem, level: str, solution: dict) -> tuple:
    """``x+ = f(x-)`` for every state jet touched by the instant (continuity for the jets the
    instant does not change). Built unevaluated: a right-limit symbol against an expression of
    left limits, which sympy's evaluation (``(lhs - rhs).is_zero``, 35 ms on a diode bank's
    restart) never decides; the object is the one evaluation returns when undecided."""
    out = []
    for j in problem.jets:
        if j.top is None:
            continue
        for k in range(j.m):
            r = right(j.name, k)
            if r in solution:
                out.append(sp.Eq(r, solution[r], evaluate=False))
            else:
                out.append(sp.Eq(r, left(j.name, k), evaluate=False))
    # variables not known before the instant whose next instance it computes: that instance is
    # their value after the Tick (e.g. the currents that become states of the new mode)
    have = {j.name for j in problem.jets}
    for s in problem.unknowns:
        name, _, k = s.name.rpartition("@")
        if name and name not in have and k == "1" and s in solution:
            out.append(sp.Eq(right(name, 0), solution[s], evaluate=False))
    return tuple(out)


#: `standardize` of the restart problems met in this process without a given impulse
#: analysis, by everything it reads of them (at most `STANDARD_MEMO_SIZE`, oldest first out).
_STANDARD_MEMO: dict = {}
STANDARD_MEMO_SIZE = 2048


def standardize(problem: RestartProblem, impulse: ImpulseResult | None = None,
                allow_numeric: bool = True) -> Standardized:
    """Algorithm ST (docs/theory.md §9.9): S0, then S1, S2, S3 in that order.

    Without ``impulse``, computed once per process for equal problems (their equations,
    unknowns, jets, lower instances and parameters; not the label, which the algorithm does
    not read): an instant's parts recur across the changes of a model (the diode bank of
    benchmarks/gen_multimode.py, 2^4 modes: 116 distinct problems among the 202 parts of its
    60 sampled changes) and across the callers that standardize the same changes."""
    if impulse is not None:
        return _standardize(problem, impulse, allow_numeric)
    key = (problem.equations, problem.unknowns, problem.jets, problem.d,
           frozenset(problem.lower.items()), frozenset(problem.params.items()), allow_numeric)
    if key not in _STANDARD_MEMO:
        if len(_STANDARD_MEMO) >= STANDARD_MEMO_SIZE:
            del _STANDARD_MEMO[next(iter(_STANDARD_MEMO))]
        _STANDARD_MEMO[key] = _standardize(problem, None, allow_numeric)
    return _STANDARD_MEMO[key]


def _standardize(problem: RestartProblem, impulse: ImpulseResult | None,
                 allow_numeric: bool) -> Standardized:
    """`standardize` computed."""
    d = problem.d
    if impulse is None:
        # S0 first: a restart whose leading-order system is already structurally nonsingular
        # (at jet level: the lower jets continuous) needs no impulse analysis (Theorem 67)
        eqs, targets, others = level_form(problem, "jet", None)
        K0 = [leading_order(e, d) for e in eqs]
        unk0 = targets + others
        if all(k != 0 for k in K0) and _nonsingular(K0, unk0):
            hint = {right(j.name, k): left(j.name, k) for j in problem.jets
                    for k in range(max(j.m, 1))}
            # no impulsive variable to report: only what the restart reads is solved
            part_eqs, part_unk = _restart_part(problem, K0, unk0, targets, whole_limit=0)
            sol = _solve(part_eqs, part_unk, hint, problem.params)
            if not _unsolved_through_function(K0, sol, targets):
                sol = {u: _tidy(e) for u, e in (sol or {}).items()}
                return Standardized(
                    method="S0",
                    level="jet",
                    equations=tuple(K0),
                    unknowns=tuple(unk0),
                    solution=sol,
                    restart=_restart_eqs(problem, "jet", sol),
                    impulsive=(),
                )
        impulse = impulse_analysis(problem)
    level = "jet" if impulse.jet_level else "shift"
    eqs, targets, others = level_form(problem, level, impulse)
    imp = [s for s in impulse.impulsive]
    imp_info = tuple((s, impulse.orders[s].text()) for s in imp if s in impulse.orders) + \
        tuple((s, "undetermined") for s in impulse.undetermined)
    hint = {right(j.name, k): left(j.name, k) for j in problem.jets for k in range(max(j.m, 1))}
    notes = list(impulse.warnings)

    def finish(method, K, unknowns, keep_out=()):
        part_eqs, part_unk = _restart_part(problem, K, unknowns, targets)
        sol = _solve(part_eqs, part_unk, hint, problem.params)
        if allow_numeric and _unsolved_through_function(K, sol, targets):
            notes.append("the restart equations call a user function that sympy cannot "
                         "invert: restart computed by the numerical delta-scheme (RR-9334 "
                         "RR-9334 §11.3)")
            return Standardized(method="S3", level=level, equations=tuple(eqs),
                                unknowns=tuple(targets + others), solution={}, restart=(),
                                impulsive=imp_info, impulse=impulse, notes=tuple(notes))
        sol = {} if sol is None else {u: _tidy(e) for u, e in sol.items() if u not in keep_out}
        return Standardized(
            method=method,
            level=level,
            equations=tuple(K),
            unknowns=tuple(unknowns),
            solution=sol,
            restart=_restart_eqs(problem, level, sol),
            impulsive=imp_info,
            impulse=impulse,
            notes=tuple(notes),
        )

    if impulse.feasible:
        # S0: leading order of the raw system
        K0 = [leading_order(e, d) for e in eqs]
        unk0 = targets + others
        if all(k != 0 for k in K0) and _nonsingular(K0, unk0):
            return finish("S0", K0, unk0)
        # S1: linear elimination of the impulsive variables
        if imp:
            res = _eliminate(eqs, imp)
            if res is not None:
                K1 = [leading_order(e, d) for e in res]
                unk1 = targets + [s for s in others if s not in imp]
                K1 = [k for k in K1 if k != 0]
                if _nonsingular(K1, unk1):
                    return finish("S1", K1, unk1)
            # S2: rescaling by the impulse orders
            orders = {s: impulse.orders[s] for s in imp}
            if all(o.lo is not None and o.lo == o.hi for o in orders.values()):
                hats = {s: sp.Symbol(f"{s.name}_hat", real=True) for s in imp}
                q = 1
                for o in orders.values():
                    q = q * Fraction(o.lo).denominator // _gcd(q, Fraction(o.lo).denominator)
                eps = sp.Symbol("eps", positive=True)
                sub = {s: hats[s] * eps ** (-int(Fraction(orders[s].lo) * q)) for s in imp}
                K2 = [leading_order(e.xreplace({d: eps ** q}).xreplace(sub), eps) for e in eqs]
                unk2 = targets + [s for s in others if s not in imp] + list(hats.values())
                if all(k != 0 for k in K2) and _nonsingular(K2, unk2):
                    return finish("S2", K2, unk2)
    if not allow_numeric:
        raise ValueError("restart cannot be standardized symbolically")
    notes.append("restart computed by the numerical delta-scheme (RR-9334 §11.3)")
    return Standardized(method="S3", level=level, equations=tuple(eqs),
                        unknowns=tuple(targets + others), solution={}, restart=(),
                        impulsive=imp_info, impulse=impulse, notes=tuple(notes))


def _unsolved_through_function(K, sol, targets) -> bool:
    """True when sympy found no explicit value for some right limit and the equations call a
    user function (`mdae_fmu.functions`: an opaque sympy function): continuity would then be
    assumed silently, so the numerical scheme, which evaluates the function, must decide."""
    if sol is not None and all(t in sol for t in targets):
        return False
    from sympy.core.function import AppliedUndef
    return any(hasattr(a.func, "_mdae_call") for e in K for a in as_sympy(e).atoms(AppliedUndef))


def _tidy(e: sp.Expr) -> sp.Expr:
    """A cheap normal form of a restart expression."""
    return sp.factor_terms(sp.cancel(e))


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _eliminate(eqs: list, imp: list):
    """Symbolic pivoting (docs/theory.md §9.4): for each impulsive variable, an equation in which
    it enters linearly is solved for it and substituted into the others. Returns the remaining
    equations, or None when some impulsive variable enters non-linearly or cannot be matched."""
    remaining = list(eqs)
    iset = set(imp)
    # the numerator of each equation that reads an impulsive variable, computed once for the
    # degree check and reused when the equation is a pivot as it stands
    numers: dict = {}
    for e in remaining:
        if not (e.free_symbols & iset):
            continue
        num = sp.numer(sp.together(e))
        try:
            degree = sp.Poly(num, *imp).total_degree()
        except sp.PolynomialError:
            return None
        if degree > 1:
            return None
        numers[e] = num
    for w in imp:
        cands = [e for e in remaining if w in e.free_symbols]
        if not cands:
            continue
        cands.sort(key=lambda e: (len(e.free_symbols & iset), sp.count_ops(e)))
        pivot = cands[0]
        num = sp.expand(numers[pivot] if pivot in numers else sp.numer(sp.together(pivot)))
        a = num.diff(w)                  # the pivot is linear in w: a w + b = 0
        if a == 0:
            return None
        sol = -num.xreplace({w: 0}) / a
        remaining.remove(pivot)
        remaining = [e.xreplace({w: sol}) for e in remaining]
    return remaining
