"""What the exporter of multimode models runs, as part of the analysis' verdict: when-clause
reinits it can run as written and transient guards it can hold (`check_exportable`, called
by `mdae_fmu.analysis.analyze`, so that ``analyze`` and ``export`` agree; docs/multimode-fmu.md,
"When-clauses"; docs/theory.md §11)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..diagnostics import ModelRejected
from ..ir import Model

if TYPE_CHECKING:
    from ..modes.explore import Automaton


def check_exportable(model: Model, automaton: Automaton) -> None:
    """Refuse what the multimode exporter cannot run, as part of the analysis' verdict
    (`mdae_fmu.analysis.analyze` calls it, so that ``analyze`` and ``export`` agree).

    When-clauses that assign discrete variables run through the event plan as in a
    single-mode model, and their reinits as `check_literal_reinits` allows; a transient guard
    (``edge(c)``, ``initial()``) selecting an ordinary equation (``if edge(c) then ...``) has
    no schedule here: `ModelRejected` naming the equations and their lines."""
    clause_ids = {w.id for w in model.whens}
    transient = {k for k, (_, kind) in enumerate(automaton.guards) if kind != "long"}
    system = automaton.system
    if transient and system is None:
        raise ModelRejected(f"model {model.name}: transient guards without a normalized "
                            f"system cannot be exported")
    if transient and system is not None:
        bad = [eq for eq in system.equations if eq.origin not in clause_ids
               and any(i in transient for i, _ in eq.guard)]
        if bad:
            where = ", ".join(f"{eq.origin} ({eq.loc.short()})" if eq.loc else eq.origin
                              for eq in bad)
            raise ModelRejected(
                f"model {model.name}: a transient guard (edge(c), initial()) selects the "
                f"equations {where}, which the exporter of multimode models does not "
                f"support; a value that changes at the event belongs in a when-clause "
                f"(`when c then v = ...; end when;`, held until the next event)")
    check_literal_reinits(model, automaton)


def check_literal_reinits(model: Model, automaton: Automaton) -> None:
    """Refuse the reinits the multimode exporter cannot run as written.

    In a multimode FMU the when-branches, reinits included, run through the event plan as in a
    single-mode model (docs/multimode-fmu.md, "When-clauses"): at the event the branch's
    reinit statements assign their states, then the long guards are re-evaluated and a mode
    change, if any, applies its own analysed restart (docs/theory.md §11, one instant per
    event iteration). That is the analysed cascade only when the first instant of every
    accepted change into the branch's transient mode (edge of its condition) has a closed
    form that moves no state but the ones the fired branches reinit: a restart that also moves
    another state (an impact law whose constraint couples velocities) would need the analysed
    restart per long mode, which this exporter does not apply to when-branches.
    `ModelRejected` naming the when-clause, its line and the moved state otherwise."""
    from .. import expr as E
    from ..ir import Reinit
    from .restarts import is_identity
    system = automaton.system
    if system is None:
        return
    # transient guard index -> [(clause id, line, reinit targets)]
    by_guard: dict[int, list[tuple[str, str, set[str]]]] = {}
    for w in model.whens:
        for br in w.branches:
            targets = {a.var for a in br.actions if isinstance(a, Reinit)}
            if not targets:
                continue
            atom = E.unedge(E.strip_not(br.condition)[0])
            line = next((a.loc.short() for a in br.actions
                         if isinstance(a, Reinit) and a.loc), model.name)
            for k, g in enumerate(system.guards):
                if g.kind == "transient" and g.cond == atom:
                    by_guard.setdefault(k, []).append((w.id, line, targets))
    if not by_guard:
        return
    for ch in automaton.changes:
        if not ch.accepted or system.is_transient(ch.src) or not ch.instants:
            continue
        fired = [c for k, cs in by_guard.items() if ch.dst[k] for c in cs]
        if not fired:
            continue
        reinit = set().union(*(t for _, _, t in fired))
        where = ", ".join(f"when-clause {c} ({line})" for c, line, _ in fired)
        first = ch.instants[0]
        if first.method == "S3" or not first.method:
            raise ModelRejected(
                f"model {model.name}: {where}: the restart of [{ch.src_label}] -> "
                f"[{ch.dst_label}] has no closed form; the multimode exporter runs reinit "
                f"statements as written and supports only restarts that move the reinitialized "
                f"states alone")
        for eq in first.restart:
            var = str(eq.lhs)[:-1]
            if not is_identity(eq) and var not in reinit:
                raise ModelRejected(
                    f"model {model.name}: {where}: at [{ch.src_label}] -> [{ch.dst_label}] "
                    f"the analysed restart also moves {var} ({eq.lhs} = {eq.rhs}), which the "
                    f"branch does not reinit; the multimode exporter runs reinit statements "
                    f"as written and supports only restarts that move the reinitialized "
                    f"states alone")
