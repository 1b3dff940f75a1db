"""Algorithm IA: impulse analysis of a restart system (docs/theory.md §9.2, §9.3, RR-9334 §10.1).

Each unknown v gets an order ``[[v]]``: ``v * d^[[v]]`` is finite and nonzero; ``-inf`` means
v = 0; v is impulsive iff ``[[v]] > 0``. Rules R1-R8 (Figure 22) amount, for an equation
written as a sum of monomials, to the tropical balancing condition: **the largest monomial order
is attained at least twice** (or every monomial vanishes). Orders are rational (the cubic clutch
gives 1/3), so the constraint system is solved exactly as a small mixed-integer linear program
(HiGHS through `scipy.optimize.milp`): binaries choose which monomials vanish and which attain
the maximum.

Setting (docs/theory.md §9.1, §9.3): the unknown top instance of a state is written ``x@m = x@(m-1)
+ U`` with the increment U finite (``[[U]] <= 0``, Assumption 7: states are finite); for an equation
whose once-less-shifted instance was erased at this instant the residual ``r`` of the erased
equation (a finite nonzero quantity, ``[[r]] = 0``) is made explicit:
``f^o(j+1) = r + (f^o(j+1) - f^oj)``; a fact contributes ``r = 0``. Known values are finite
nonzero (order 0), ``[[d]] = -1``. A non-polynomial function of unknowns forces them to be
non-impulsive (rule (127): an impulsive argument gives order +inf, which nothing can balance);
if that makes the system infeasible the orders are reported as undetermined (W-IMPULSE-ORDER) and
standardization falls back to the numerical scheme.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from .problem import RestartProblem

BOUND = 8.0     # orders are searched in [-BOUND, BOUND]
BIG = 40.0
TOL = 1e-7


@dataclass(frozen=True)
class OrderInfo:
    """The feasible orders of one unknown: ``lo..hi`` when it is nonzero (None if it must be 0),
    and whether it may vanish."""
    lo: Fraction | None
    hi: Fraction | None
    may_vanish: bool

    def text(self) -> str:
        if self.lo is None:
            return "-inf"
        if self.lo <= -BOUND + 1e-6:
            return f"<= {self.hi}"
        s = str(self.lo) if self.lo == self.hi else f"[{self.lo}, {self.hi}]"
        return s + (" or -inf" if self.may_vanish else "")


@dataclass(frozen=True)
class ImpulseResult:
    """Outcome of Algorithm IA on one restart instant."""
    feasible: bool
    orders: dict = field(default_factory=dict)        # symbol -> OrderInfo (algebraics and U's)
    forced: tuple = ()        # impulsive in every solution
    possible: tuple = ()      # impulsive in some solutions
    jet_level: bool = True    # the lower jets of the states stay continuous
    undetermined: tuple = ()  # W-IMPULSE-ORDER: growth not a power of 1/d
    warnings: tuple = ()

    @property
    def impulsive(self) -> tuple:
        return tuple(self.forced) + tuple(self.possible)


def _as_fraction(x: float) -> Fraction:
    return Fraction(x).limit_denominator(12)


class _OrderSystem:
    """The tropical constraint system of one restart instant, encoded for `milp`."""

    def __init__(self, problem: RestartProblem):
        self.p = problem
        d = problem.d
        ks = problem.jet_substitution()
        self.U = {}
        sub = dict(ks)
        for j in problem.jets:
            if j.top is not None:
                u = sp.Symbol(f"U_{j.name}", real=True)
                self.U[u] = j
                prev = j.known[-1].xreplace(ks) if j.known else 0
                sub[j.top] = prev + u
        tops = {j.top for j in problem.jets if j.top is not None}
        self.alg = [s for s in problem.unknowns if s not in tops]
        self.vars = list(self.U) + self.alg
        self.index = {v: i for i, v in enumerate(self.vars)}
        self.funcs: list[sp.Expr] = []
        self.eq_monos = []
        self.nonpoly: set[sp.Symbol] = set()
        self._rows: tuple | None = None           # `_balance_rows`, built at the first solve
        for k, (lab, expr) in enumerate(problem.equations):
            e = expr.xreplace(sub)
            low = problem.lower.get(lab)
            if low is not None:
                kind, lexpr = low
                le = lexpr.xreplace(sub)
                e = e - le
                if kind == "erased":
                    e = e + sp.Symbol(f"r_{k}", real=True)
            num = sp.numer(sp.together(sp.expand(e)))
            num = sp.expand(num)
            if num == 0:
                continue
            monos = []
            for term in sp.Add.make_args(num):
                monos.append(self._monomial(term, d))
            self.eq_monos.append((lab, monos))

    def _monomial(self, term: sp.Expr, d: sp.Symbol):
        """``(coefficients over order variables, constant)`` of a monomial's order."""
        coef: dict[int, float] = {}
        const = 0.0
        for f in sp.Mul.make_args(term):
            base, ex = f.as_base_exp()
            if base == d:
                const -= float(ex)
            elif base in self.index and ex.is_number:
                coef[self.index[base]] = coef.get(self.index[base], 0.0) + float(ex)
            elif f.free_symbols & set(self.index):
                # a non-polynomial factor of unknowns: its own order variable (finite or zero)
                for s in f.free_symbols & set(self.index):
                    self.nonpoly.add(s)
                key = f
                if key not in self.funcs:
                    self.funcs.append(key)
                fi = len(self.vars) + self.funcs.index(key)
                coef[fi] = coef.get(fi, 0.0) + 1.0
            # known factors: order 0
        return coef, const

    def signature(self) -> tuple:
        """Everything the MILPs of `solve` read, by position: the monomials of each equation
        (coefficients in insertion order, constants), the numbers of unknowns and function
        factors, the state increments with their jet order, the arguments of non-polynomial
        factors and the algebraic unknowns. Two systems with one signature solve the same
        MILPs."""
        return (tuple(tuple((tuple(coef.items()), const) for coef, const in monos)
                      for _lab, monos in self.eq_monos),
                len(self.vars), len(self.funcs),
                tuple((self.index[u], j.m) for u, j in self.U.items()),
                tuple(sorted(self.index[s] for s in self.nonpoly)),
                tuple(self.index[v] for v in self.alg))

    def _balance_rows(self):
        """The constraints of the balancing condition, the same for every `solve` of the
        instant: built once, as sparse triplets (a dense row per constraint and its
        conversion inside `milp` took about a fifth of the MSL Gear's analysis). Returns
        ``(nv, n, eq_layout, (rows, cols, vals), lo, hi)``: ``n`` columns (o, z, then per
        equation M, w and per monomial a, b)."""
        if self._rows is not None:
            return self._rows
        nv = len(self.vars) + len(self.funcs)
        n = 2 * nv
        eq_layout = []
        for _lab, monos in self.eq_monos:
            M, w = n, n + 1
            n += 2
            am = []
            for _ in monos:
                am.append((n, n + 1))
                n += 2
            eq_layout.append((M, w, am))
        ri: list[int] = []
        ci: list[int] = []
        vi: list[float] = []
        lo: list[float] = []
        hi: list[float] = []

        def add(coefs: dict, low, h):
            r = len(lo)
            for i, c in coefs.items():
                ri.append(r)
                ci.append(i)
                vi.append(c)
            lo.append(low)
            hi.append(h)

        for (_lab, monos), (M, w, am) in zip(self.eq_monos, eq_layout):
            for (coef, const), (a, b) in zip(monos, am):
                vs = list(coef)
                for v in vs:                     # a <= 1 - z_v
                    add({a: 1, nv + v: 1}, -np.inf, 1)
                add({a: 1, **{nv + v: 1 for v in vs}}, 1, np.inf)   # a >= 1 - sum z
                # L - M <= BIG (1 - a)   ->  L - M + BIG a <= BIG - const
                add({**coef, M: -1, a: BIG}, -np.inf, BIG - const)
                # L - M >= -BIG (1 - b) ->  L - M - BIG b >= -BIG - const
                add({**coef, M: -1, b: -BIG}, -BIG - const, np.inf)
                add({b: 1, a: -1}, -np.inf, 0)   # b <= a
                add({w: 1, a: 1}, -np.inf, 1)    # w <= 1 - a
            add({**{b: 1 for _, b in am}, w: 2}, 2, np.inf)   # sum b >= 2 (1 - w)
        self._rows = (nv, n, eq_layout, (ri, ci, vi), lo, hi)
        return self._rows

    def solve(self, extra_ub: dict | None = None, objective: tuple | None = None,
              force_zero: dict | None = None, spread: list | None = None,
              nonzero: list | None = None):
        """Feasibility (and optionally optimize one order). ``extra_ub``: order upper bounds;
        ``force_zero``: {var index: 0/1} fixes its vanishing binary; ``spread``: maximize
        ``sum min(o_v, 1)`` over these nonvanishing variables (finds impulsive candidates)."""
        from scipy.sparse import coo_array
        nv, n, eq_layout, (ri, ci, vi), lo, hi = self._balance_rows()
        ri, ci, vi, lo, hi = list(ri), list(ci), list(vi), list(lo), list(hi)
        # variable layout: the balancing columns (`_balance_rows`), then y per spread one
        ys = {}
        for i in spread or ():
            ys[i] = n
            n += 1
        lb = np.full(n, 0.0)
        ub = np.full(n, 1.0)
        integ = np.ones(n)
        lb[:nv] = -BOUND
        ub[:nv] = BOUND
        integ[:nv] = 0
        for M, _w, _am in eq_layout:
            lb[M], ub[M], integ[M] = -BIG, BIG, 0
        for y in ys.values():
            lb[y], ub[y], integ[y] = -BIG, 1.0, 0
        # priors: increments finite; non-polynomial arguments and function values finite
        for u in self.U:
            ub[self.index[u]] = min(ub[self.index[u]], 0.0)
        for s in self.nonpoly:
            ub[self.index[s]] = min(ub[self.index[s]], 0.0)
        for fi in range(len(self.funcs)):
            ub[len(self.vars) + fi] = 0.0
        for i, v in (extra_ub or {}).items():
            ub[i] = min(ub[i], v)
        for i, z in (force_zero or {}).items():
            lb[nv + i] = ub[nv + i] = z
        for i, y in ys.items():
            r = len(lo)                                  # y <= o
            ri += [r, r]
            ci += [y, i]
            vi += [1.0, -1.0]
            r += 1                                       # y <= 1 - 2 z (vanishing: y <= -1)
            ri += [r, r]
            ci += [y, nv + i]
            vi += [1.0, 2.0]
            lo += [-np.inf, -np.inf]
            hi += [0.0, 1.0]
        c = np.zeros(n)
        for y in ys.values():
            c[y] = -1.0
        for i in nonzero or ():
            c[nv + i] = 1.0                              # as few vanishing unknowns as possible
        if objective is not None:
            i, sense = objective
            c[i] = sense
        cons = LinearConstraint(coo_array((vi, (ri, ci)), shape=(len(lo), n)).tocsr(),
                                np.array(lo), np.array(hi)) if lo else ()
        res = milp(c, constraints=cons, integrality=integ, bounds=Bounds(lb, ub))
        if res.status != 0 or res.x is None:
            return None
        return res


#: `_bounds` of the order systems met in this process, by `_OrderSystem.signature` (at most
#: `ORDERS_MEMO_SIZE`, the oldest dropped first).
_ORDERS_MEMO: dict = {}
ORDERS_MEMO_SIZE = 4096


@dataclass(frozen=True)
class _Bounds:
    """What Algorithm IA finds of an order system, by position in `_OrderSystem.vars`:
    ``orders[i]`` is the `OrderInfo` of ``vars[i]``, ``forced`` and ``possible`` positions of
    algebraic unknowns, in the order of ``vars``."""
    orders: tuple
    forced: tuple
    possible: tuple
    jet_level: bool


def impulse_analysis(problem: RestartProblem) -> ImpulseResult:
    """Algorithm IA (docs/theory.md §9.3): orders of every unknown, the forced / possibly
    impulsive algebraic variables, and whether the states' lower jets stay continuous (jet
    level: ``[[U]] <= -(m-1)``).

    The MILPs read only the numbers of the order system (`_OrderSystem.signature`), not the
    names of its unknowns: the restart problems of a bank of identical components that differ
    by the component switching (the diode bank of benchmarks/gen_multimode.py: 35 problems, 10
    systems for the 60 changes of 2^4 modes) have the same system, whose bounds are computed
    once per process (`_bounds`) and read back by position: the same MILPs, so the same
    result."""
    osys = _OrderSystem(problem)
    key = osys.signature()
    if key in _ORDERS_MEMO:
        found = _ORDERS_MEMO[key]
    else:
        found = _bounds(osys)
        if len(_ORDERS_MEMO) >= ORDERS_MEMO_SIZE:
            del _ORDERS_MEMO[next(iter(_ORDERS_MEMO))]
        _ORDERS_MEMO[key] = found
    if found is None:
        if osys.nonpoly:
            names = tuple(sorted(str(s) for s in osys.nonpoly))
            return ImpulseResult(feasible=False, undetermined=tuple(sorted(osys.nonpoly, key=str)),
                                 warnings=(f"W-IMPULSE-ORDER: the impulse order of {names} is not "
                                           "a power of 1/d (non-polynomial entry); the restart "
                                           "is computed numerically (delta-scheme)",))
        return ImpulseResult(
            feasible=False,
            warnings=(
                "E-IMPULSE-INCONSISTENT: the restart system is "
                "inconsistent with finite restart states",
            ),
        )
    return ImpulseResult(
        feasible=True,
        orders={v: found.orders[i] for i, v in enumerate(osys.vars)},
        forced=tuple(osys.vars[i] for i in found.forced),
        possible=tuple(osys.vars[i] for i in found.possible),
        jet_level=found.jet_level,
        undetermined=(),
        warnings=(),
    )


def _bounds(osys: _OrderSystem) -> _Bounds | None:
    """The MILPs of Algorithm IA (docs/theory.md §9.3) on one order system: None when it has
    no solution, else the feasible orders of each unknown (`_Bounds`)."""
    base = osys.solve()
    if base is None:
        return None
    jet_ub = {osys.index[u]: -(j.m - 1.0) for u, j in osys.U.items() if j.m > 1}
    jet_level = not jet_ub or osys.solve(extra_ub=jet_ub) is not None
    extra = jet_ub if jet_level else None
    # impulsive candidates: maximize sum min(order, 1) over the algebraic unknowns not yet
    # known to be possibly positive, until no further one can be positive (few MILPs instead of
    # one per unknown)
    positive: set = set()
    while True:
        rest = [osys.index[v] for v in osys.alg if v not in positive]
        if not rest:
            break
        sol = osys.solve(extra_ub=extra, spread=rest)
        new = {osys.vars[i] for i in rest
               if sol is not None and sol.x[i] > TOL and sol.x[len(osys.vars)
                                                              + len(osys.funcs) + i] < 0.5}
        if not new:
            break
        positive |= new
    # which of the others can be nonzero at all (the rest vanish: order -inf)
    nz: set = set()
    nvall = len(osys.vars) + len(osys.funcs)
    while True:
        rest = [osys.index[v] for v in osys.alg if v not in positive and v not in nz]
        if not rest:
            break
        sol = osys.solve(extra_ub=extra, nonzero=rest)
        new = {osys.vars[i] for i in rest if sol is not None and sol.x[nvall + i] < 0.5}
        if not new:
            break
        nz |= new
    orders: dict = {}
    forced: list = []
    possible: list = []
    for v in osys.vars:
        i = osys.index[v]
        if v in osys.alg and v not in positive:
            orders[v] = (
                OrderInfo(lo=Fraction(int(-BOUND)), hi=Fraction(0), may_vanish=True)
                if v in nz
                else OrderInfo(lo=None, hi=None, may_vanish=True)
            )
            continue
        hi = osys.solve(extra_ub=extra, force_zero={i: 0}, objective=(i, -1.0))
        if hi is None:
            orders[v] = OrderInfo(lo=None, hi=None, may_vanish=True)
            continue
        hv = _as_fraction(hi.x[i])
        if v in osys.alg and hv <= TOL:
            orders[v] = OrderInfo(lo=Fraction(int(-BOUND)), hi=hv, may_vanish=True)
            continue
        lo = osys.solve(extra_ub=extra, force_zero={i: 0}, objective=(i, 1.0))
        # whether a state increment may vanish is not needed (not computed, reported False)
        may_vanish = v not in osys.U and \
            osys.solve(extra_ub=extra, force_zero={i: 1}) is not None
        lv = _as_fraction(lo.x[i])
        orders[v] = OrderInfo(lo=lv, hi=hv, may_vanish=may_vanish)
        if v in osys.alg:
            if not may_vanish and lv > TOL:
                forced.append(v)
            elif hv > TOL:
                possible.append(v)
    return _Bounds(orders=tuple(orders[v] for v in osys.vars),
                   forced=tuple(osys.index[v] for v in forced),
                   possible=tuple(osys.index[v] for v in possible),
                   jet_level=jet_level)
