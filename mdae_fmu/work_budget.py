"""The work budget of a user function: how much one call of a Modelica function may do before
it is stopped as a loop that does not end (issue 25; docs/decisions.md, "Work budget of user
functions").

The model's functions run in two places: in Python at compile time, when the analysis or the
exporter needs a number (a parameter binding that calls a function: `functions.run`), and in
the FMU (the C of `codegen.functions`). In both, one call from the model gets one budget,
shared by the calls it makes in turn: Python counts every statement and every loop iteration,
the C counts loop iterations. The default is the bound one loop always had in the C code,
10^8; the environment variable ``MDAE_FUNCTION_BUDGET`` changes it for both (the C value is
compiled into the FMU at export). A Python evaluation that runs out raises
`BudgetExceeded`, an `InputError` (exit 2) that names the function, the statement it was
running and the call site in the model: the one the code evaluating it declared
(`evaluation_site`), else every call of the function the model holds (`at_call_sites`).
"""

from __future__ import annotations

import contextvars
import functools
import os
import re
from contextlib import contextmanager
from typing import Callable, Iterator

from . import expr as E
from .diagnostics import InputError, SourceLoc

BUDGET_ENV = "MDAE_FUNCTION_BUDGET"
#: the loop bound of the generated C before issue 25 (`functions.MAX_LOOP_ITERATIONS`)
DEFAULT_BUDGET = 100_000_000
#: a budget above this is refused (a typo of a few extra digits would disable the bound)
MAX_BUDGET = 10 ** 15


def function_budget() -> int:
    """The budget of one call: ``MDAE_FUNCTION_BUDGET`` when set (a positive integer, at most
    `MAX_BUDGET`), else `DEFAULT_BUDGET`; `InputError` for any other value."""
    text = os.environ.get(BUDGET_ENV)
    if text is None or not text.strip():
        return DEFAULT_BUDGET
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        value = 0
    if not 0 < value <= MAX_BUDGET:
        raise InputError(f"{BUDGET_ENV}={text!r}: the work budget of a user function must be "
                         f"a whole number from 1 to {MAX_BUDGET} (statements and loop "
                         f"iterations of one call; default {DEFAULT_BUDGET})")
    return value


class Work:
    """The budget left to one call from the model and the calls it makes: ``left`` is
    decremented per statement and per loop iteration by `functions._exec`."""
    __slots__ = ("left", "limit", "root")

    def __init__(self, limit: int, root: str):
        self.left = limit
        self.limit = limit
        self.root = root

    def exceeded(self, function: str, where: SourceLoc | None,
                 iterations: float | None = None) -> "BudgetExceeded":
        """The error to raise: the budget ran out in ``function`` at statement ``where``, or
        the for-loop there has ``iterations``, more than the whole budget."""
        site = _SITE.get()
        if site is None:
            return BudgetExceeded(self.root, function, where, self.limit,
                                  iterations=iterations)
        loc, line = _call_column(site[0], self.root)
        return BudgetExceeded(self.root, function, where, self.limit, loc, site[1],
                              source_line=line, iterations=iterations)


class BudgetExceeded(InputError):
    """A call of a user function at compile time that ran out of its work budget (exit 2).
    ``root``: the function the model calls; ``function``, ``where``: the function and the
    statement that were running; ``site``, ``what``: where the model calls ``root``;
    ``iterations``: the range of a for-loop larger than the whole budget, which did not
    start."""

    def __init__(self, root: str, function: str, where: SourceLoc | None, limit: int,
                 site: SourceLoc | None = None, what: str | None = None,
                 others: int = 0, source_line: str | None = None,
                 iterations: float | None = None):
        self.root, self.function, self.where, self.limit = root, function, where, limit
        self.what, self.others, self.iterations = what, others, iterations
        running = function if function == root else f"{function} (called by {root})"
        at = f" at {where}" if where is not None else ""
        called = f" in {what}" if what else " from the model"
        more = f" (and {others} more call site{'s' if others > 1 else ''})" if others else ""
        if iterations is None:
            stopped = (f"was stopped after {limit} statements and loop iterations, its work "
                       f"budget (the statement running was in {running}{at})")
        else:
            stopped = (f"would run a for-loop of {iterations:.17g} iterations (in {running}"
                       f"{at}), more than its work budget of {limit} statements and loop "
                       "iterations")
        super().__init__(
            f"the call of function {root}{called}{more} {stopped}: a loop that does not end, "
            "or more work than a function may do while the model is compiled; the "
            f"environment variable {BUDGET_ENV} sets the budget", site, source_line)

    def at_call_sites(self, model) -> "BudgetExceeded":
        """This error with its call site found in ``model`` (`call_sites`), when the code
        that evaluated the call declared none."""
        if self.loc is not None:
            return self
        sites = call_sites(model, self.root)
        if not sites:
            return self
        (loc, what), others = sites[0], len(sites) - 1
        loc, line = _call_column(loc, self.root)
        return BudgetExceeded(self.root, self.function, self.where, self.limit, loc, what,
                              others, line, self.iterations)


_SITE: contextvars.ContextVar[tuple[SourceLoc | None, str] | None] = \
    contextvars.ContextVar("mdae_evaluation_site", default=None)


@contextmanager
def evaluation_site(loc: SourceLoc | None, what: str) -> Iterator[None]:
    """Declare where the expressions evaluated inside the block come from (``what``: "the
    binding of parameter p"), for the message of `BudgetExceeded`."""
    token = _SITE.set((loc, what))
    try:
        yield
    finally:
        _SITE.reset(token)


def call_sites(model, name: str) -> list[tuple[SourceLoc | None, str]]:
    """Where ``model`` (an `ir.Model`) calls user function ``name``: the attributes of its
    variables (binding, start, nominal, min, max), then its equations, initial equations,
    when-clauses and assertions, in source order within each."""
    def calls(e) -> bool:    # "f" is output 1 of f, "f#2" output 2 (functions.call_name)
        return e is not None and any(type(n) is E.Call and n.func.split("#")[0] == name
                                     for n in E.walk(e))

    out: list[tuple[SourceLoc | None, str]] = []
    for v in model.variables:
        for attr in ("binding", "start", "nominal", "min", "max"):
            if calls(getattr(v, attr)):
                kind = "the binding" if attr == "binding" else f"the {attr} value"
                out.append((v.loc, f"{kind} of {v.name}"))
    for what, eqs in (("an equation", model.equations),
                      ("an initial equation", model.initial_equations)):
        out.extend((eq.loc, what) for eq in eqs if calls(eq.residual))
    for w in model.whens:
        for b in w.branches:
            exprs = [b.condition] + [getattr(a, "value", None) or getattr(a, "cond", None)
                                     for a in b.actions]
            if any(calls(x) for x in exprs):
                out.append((b.loc or w.loc, "a when-clause"))
    out.extend((a.loc, "an assertion") for a in model.assertions if calls(a.cond))
    return out


def _call_column(loc: SourceLoc | None, name: str) -> tuple[SourceLoc | None, str | None]:
    """``loc`` moved to the column of ``name(`` on its line of the source file, and that line
    (for the caret of the message); ``loc`` unchanged when the file or the call is not there."""
    if loc is None:
        return None, None
    try:
        with open(loc.file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return loc, None
    if not 0 < loc.line <= len(lines):
        return loc, None
    line = lines[loc.line - 1]
    call = re.compile(rf"(?<![\w.']){re.escape(name.rsplit('.', 1)[-1])}\s*\(")
    m = call.search(line, max(loc.col - 1, 0)) or call.search(line)
    if m is None:
        return loc, line
    return SourceLoc(loc.file, loc.line, m.start() + 1), line


def reports_call_sites(stage: Callable) -> Callable:
    """Decorator of a stage ``stage(model, ...)``: a `BudgetExceeded` raised inside it
    without a call site gets the model's (`BudgetExceeded.at_call_sites`)."""
    @functools.wraps(stage)
    def wrapper(model, *args, **kwargs):
        try:
            return stage(model, *args, **kwargs)
        except BudgetExceeded as err:
            raise err.at_call_sites(model) from None
    return wrapper
