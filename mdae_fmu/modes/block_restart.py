"""The restart of one block of the guarded schedule by the nonstandard instant of RR-9334, for
the blocks whose local h -> 0 limit does not exist (`mdae_fmu.implicit.variants`: impulsive
unknowns that enter non-affinely, such as the cubic torque of the non-semilinear clutch,
RR-9334 (188), theory.md §13.5).

A change class of the guarded schedule is a block variant that a mode change enters (its
formula holds in the new mode, not in the old one): its restart depends on the block's
equations, branches and offsets only (docs/decisions.md §9: the restart system is block lower
triangular with the blocks of the new mode, each block's restart computed once, cached by the
variant). The instant that enters the block is written in shift form (theory.md §8.4, RR-9334
(74), `mdae_fmu.modes.shiftform`): each equation e of offset c_e at its shift c_e, a derivative
of order k as the k-th Euler difference over the instances ``x@j``; the lower shifts of an
equation with c_e >= 1 involve only instances the past fixes and are erased at the instant
(SolveConflict, theory.md §6.6: they conflict with the left limits, and are postponed). The
known instances are the block's lower instances ``x@0 .. x@(d_x - 1)`` (the state jets) and
every instance of a variable outside the block (read at its current value); the unknowns are
the block's top instances ``x@d_x``. Impulse analysis (Algorithm IA) and standardization
(Algorithm ST, `mdae_fmu.impulse.standardize`) then give the standard restart ``x+ = f(x-)``;
the enumerated analysis of a mode change into the same block gives the same instant (the
change's other blocks being triangular before or after it).
"""

from __future__ import annotations

from math import comb

import sympy as sp

from ..diagnostics import ModelRejected
from ..impulse.problem import RestartProblem, StateJet, presolve, split_problem


def _instance(name: str, j: int) -> sp.Symbol:
    """The symbol ``name@j`` of the instance ``name^oj`` (as `ShiftForm.X`)."""
    return sp.Symbol(f"{name}@{j}", real=True)


def block_restart_problem(table, equations, unknowns: dict, params: dict,
                          label: str) -> RestartProblem:
    """The `RestartProblem` of the instant that enters a block (module docstring).

    ``equations``: ``[(equation id, residual (sympy, over ``table``'s symbols), c)]``;
    ``unknowns``: ``{variable: d}`` of the block's unknowns; ``params``: numeric values of
    the parameters (the standardization's root choice)."""
    d = sp.Symbol("d", positive=True)
    shift_eqs = []
    lower = {}
    seen: dict[str, int] = {}            # instances of each variable read, highest shift
    for eq_id, res, c in equations:
        forms = []
        for s in (c, c - 1) if c >= 1 else (c,):
            sub = {}
            for sym in res.free_symbols:
                inst = table.instance(sym)
                if inst is None and sym.name.startswith("pre(") and sym.name.endswith(")"):
                    sub[sym] = _instance(sym.name[4:-1], s)     # the left limit, x@s
                    continue
                if inst is None:
                    continue
                n, k = inst
                sub[sym] = sum((-1) ** (k - j) * comb(k, j) * _instance(n, s + j)
                               for j in range(k + 1)) / d ** k
                if s == c:
                    seen[n] = max(seen.get(n, -1), s + k)
            forms.append(res.xreplace(sub))
        lab = eq_id + "'" * c
        shift_eqs.append((lab, forms[0]))
        if c >= 1:
            lower[lab] = ("erased", forms[1])
    jets = []
    tops = []
    for n in sorted(seen):
        if n in unknowns:
            m = unknowns[n]
            top = _instance(n, m)
            tops.append(top)
            if m >= 1:
                jets.append(
                    StateJet(name=n, m=m, known=tuple(_instance(n, j) for j in range(m)), top=top)
                )
        else:
            m = seen[n] + 1  # read at its current value: every instance known
            jets.append(
                StateJet(name=n, m=m, known=tuple(_instance(n, j) for j in range(m)), top=None)
            )
    return RestartProblem(
        label=label,
        equations=tuple(shift_eqs),
        unknowns=tuple(tops),
        jets=tuple(jets),
        d=d,
        lower=lower,
        params=params,
    )


def standard_block_restart(problem: RestartProblem):
    """``(method, restart, delta)``: the standard restart ``x+ = f(x-)`` of the block's
    instant (Algorithm ST after presolving the explicit algebraic unknowns and splitting the
    system into independent parts, as the enumerated analysis does), or, for an instant
    without closed form (S3), ``restart`` empty and ``delta`` its `DeltaForm` for the
    numerical delta-scheme (RR-9334 §11.3, Algorithm 14; `mdae_fmu.impulse.numeric`).
    `ModelRejected` when the instant cannot be standardized at all."""
    from ..impulse.analysis import impulse_analysis
    from ..impulse.numeric import delta_form
    from ..impulse.standardize import standardize
    try:
        reduced, _ = presolve(problem)
        parts = [standardize(p) for p in split_problem(reduced)] if reduced.equations else []
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RuntimeError) as exc:
        raise ModelRejected(f"the restart of block {problem.label} cannot be standardized "
                            f"({exc})") from None
    if any(p.method == "S3" for p in parts):
        try:
            ia = impulse_analysis(problem)
        except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RuntimeError):
            ia = None
        return "S3", (), delta_form(problem, ia)
    rank = {"S0": 0, "S1": 1, "S2": 2}
    method = max((p.method for p in parts), key=lambda m: rank.get(m, 3), default="S0")
    return method, tuple(e for p in parts for e in p.restart), None
