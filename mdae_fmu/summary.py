"""The short report ``mdae-fmu analyze`` prints by default (issue 28 Deliver 3).

What a modeller asks of the analysis, each item with the source lines it comes from: the
guards that define modes (their defining equations), the structural modes as formulas over
the guards, the index per mode with the equations that must be differentiated, the states,
the mode changes whose restart moves a state (the restart in Modelica syntax, ``pre(x)`` for
the value before the event, `mdae_fmu.sympy_modelica`) or that are impulsive, the warnings,
then the verdict with the diagnostics of a rejected model. Every count says what it counts.
The full report (every offset, every block, every instant of every mode change) is
``--verbose`` (`mdae_fmu.analysis.text_pieces`) or ``--json``.

The summary is cheap whatever the size: lists are cut at `MAX_LISTED` names, the only pass
over the equations looks up the few it quotes, and no sympy expression is converted or
printed except the restarts of the mode changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from . import expr as E
from .analysis import Analysis, event_iteration_lines, fixed_parameters_text, verdict_text
from .ir import Equation, Model
from .modelica_printer import print_equation_body, print_expr
from .structure.per_mode import ModeAnalysis, ModesReport

#: Longest list of names, modes or equations printed in one line (the rest is counted).
MAX_LISTED = 8
#: A parenthesised citation (docs/theory.md) in a report line: the summary leaves it out.
_CITATION = re.compile(r" \((?:theory|docs/theory\.md) [^)]*\)")
#: Longest equation quoted (characters).
MAX_QUOTE = 100


def summary_lines(model: Model, a: Analysis) -> Iterator[str]:
    """The lines of the summary (module docstring); that of the one analysis where no mode
    is enumerated (``a.modes`` None); the structural parameters first, and the
    model they leave (`Analysis.model`) is the one summarised."""
    if a.fixed_parameters:
        yield from fixed_parameters_text(a.fixed_parameters).splitlines()
    if a.modes is None and a.guarded is not None:
        yield from _one_lines(a.model or model, a)
    elif a.modes is None:
        yield from _implicit_lines(a)
    else:
        yield from _modes_lines(a.model or model, a.modes, a)
    if a.conversions:           # the equations the analysis rewrote (docs/structure.md)
        yield "numerically singular blocks converted:"
        yield from (f"  {c.text()}" for c in a.conversions)
    yield "(the full report: mdae-fmu analyze --verbose)"
    warnings = [m for m in a.messages if m.startswith("W-")]
    if warnings and a.accepted:
        yield f"warnings ({len(warnings)}):"
        yield from (f"  {w}" for w in warnings)
    yield verdict_text(a)


def _implicit_lines(a: Analysis) -> Iterator[str]:
    """Without a schedule to read (a model rejected before it, or no implicit analysis): the
    implicit analysis' report, already a summary over formulas (its verdict aside:
    `verdict_text` gives the whole model's)."""
    text = a.implicit_text or f"model {a.model_name}: no implicit analysis"
    for line in text.split("\nverdict: ")[0].splitlines():
        yield _CITATION.sub("", line)


def _one_lines(model: Model, a: Analysis) -> Iterator[str]:
    """The summary of the one analysis (issue 26): the items of `_modes_lines`, each as
    formulas over the guards instead of a list of modes: the guards with their lines, the
    consistent modes (listed up to `MAX_LISTED_GUARDS` guards), the index per formula with the
    equations differentiated (quoted in one mode of the formula), the states with the modes
    where some are states only, and the restart into each listed mode
    (`mdae_fmu.schedule_report`)."""
    from .schedule_report import listed_modes, mode_text, restart_lines
    from .structure.variables import classify_variables
    s, js = a.guarded, a.implicit_json or {}
    assert s is not None
    eqs = _Equations(model)
    cls = classify_variables(model)
    yield (f"model {a.model_name}: {_count(len(model.equations), 'equation')}, "
           f"{_count(len(cls.continuous), 'continuous unknown')}, "
           f"{_count(len(cls.discrete), 'discrete variable')}, "
           f"{_count(len(cls.inputs), 'input')}")
    names = list(s.guard_names)
    if names:
        yield f"guards ({len(names)}, each a condition that changes the equations):"
    for name, g in list(zip(names, s.guards))[:MAX_LISTED]:
        yield f"  {eqs.guard_source(name, g)}"
    if len(names) > MAX_LISTED:
        yield f"  ... and {len(names) - MAX_LISTED} more (--verbose lists them)"
    yield from event_iteration_lines(js.get("event_iteration", []), MAX_LISTED)
    modes = listed_modes(s)
    head = f"structural modes: {js.get('modes', s.n_modes)}"
    if modes is not None:
        head += ": " + _listed(mode_text(bits, names) for bits in modes)
    yield head
    index = js.get("index", [])
    parts = [f"{c['value']}" + (f" in {_paren(c['formula'])}" if len(index) > 1 else "")
             for c in sorted(index, key=lambda c: -c["value"])]
    nus = sorted({c["value"] for c in js.get("structural_index", [])}, reverse=True)
    yield (f"index: {'; '.join(parts)} (the most times an equation is differentiated; "
           f"Pryce's structural index: {', '.join(map(str, nus))})")
    by_formula: dict[str, list[dict]] = {}
    for d in js.get("differentiated", []):
        by_formula.setdefault(d["formula"], []).append(d)
    for formula, diffs in list(by_formula.items())[:MAX_LISTED]:
        diffs.sort(key=lambda d: -d["times"])
        where = "" if formula == "true" else f"in {_paren(formula)}: "
        quoted = [eqs.in_formula(d["equation"], d["times"], d["mode"]) for d in diffs[:3]]
        more = f"; and {len(diffs) - 3} more" if len(diffs) > 3 else ""
        yield f"  {where}differentiated: " + "; ".join(quoted) + more
    states = js.get("states", [])
    always = [x["state"] for x in states if x["modes"] == js.get("modes")]
    yield f"states ({len(always)}" + (" in every mode" if len(always) < len(states) else "") \
        + f"): {_listed(always)}"
    some: dict[str, list[str]] = {}
    for x in states:
        if x["state"] not in always:
            some.setdefault(x["formula"], []).append(x["state"])
    for formula, group in list(some.items())[:MAX_LISTED]:
        yield f"  also in {_paren(formula)}: {_listed(group)}"
    if "degrees_of_freedom" in js:
        yield _dof_line(js["degrees_of_freedom"])
    if names:
        yield from restart_lines(s, 2 * MAX_LISTED)


def _dof_line(dof: dict) -> str:
    """The degrees of freedom of the one analysis (`implicit.analysis.degrees_of_freedom`,
    the ``degrees_of_freedom`` of its JSON): the value in each set of modes when it has a
    short case split, else the constant and the terms of its linear form grouped by value
    (``10, 1 less in each of (c1), (c2) that holds``)."""
    why = " (the states less the consistency equations, the differentiated ones)"
    terms, cases = dof["terms"], dof["cases"]
    if not terms:
        return f"degrees of freedom: {dof['constant']} in every mode{why}"
    if cases is not None and all(len(c["formula"]) <= MAX_QUOTE for c in cases):
        return ("degrees of freedom: "
                + "; ".join(f"{c['value']} in {_paren(c['formula'])}" for c in cases) + why)
    by_value: dict[int, list[str]] = {}
    for t in terms:
        by_value.setdefault(t["value"], []).append(_paren(_cut(t["formula"])))
    parts = [f"{abs(v)} {'more' if v > 0 else 'less'} in "
             + (f"each of {_listed(fs)}" if len(fs) > 1 else fs[0])
             for v, fs in sorted(by_value.items())]
    return (f"degrees of freedom: {dof['constant']}, " + "; ".join(parts)
            + " that holds" + why)


def _paren(formula: str) -> str:
    """A formula text of the implicit analysis as one item: ``(not g)``, ``(g1 and g2) or
    (g3)`` as printed."""
    if " or " in formula or (formula.startswith("(") and formula.endswith(")")):
        return formula
    return f"({formula})"


def _modes_lines(model: Model, r: ModesReport, a: Analysis) -> Iterator[str]:
    eqs = _Equations(model)
    yield (f"model {r.model_name}: {_count(len(model.equations), 'equation')}, "
           f"{_count(len(r.unknowns), 'continuous unknown')}, "
           f"{_count(len(r.discrete), 'discrete variable')}, {_count(len(r.inputs), 'input')}")
    long = set(r.long_guards)
    guards = [(n, g) for n, g in ((_guard_name(g), g) for g in r.guard_exprs) if n in long]
    names = [n for n, _ in guards]
    if names:
        yield f"guards ({len(names)}, each a condition that changes the equations):"
        for name, g in guards[:MAX_LISTED]:
            yield f"  {eqs.guard_source(name, g)}"
        if len(names) > MAX_LISTED:
            yield f"  ... and {len(names) - MAX_LISTED} more (--verbose lists them)"
    modes = r.modes
    labels = {m.name: _formula(m, names) for m in modes}
    rejected = [m for m in modes if not m.ok]
    head = f"structural modes: {len(modes)}"
    if len(modes) > 1 or names:
        head += ": " + _listed(labels[m.name] for m in modes)
    if rejected:
        head += f"; {len(rejected)} rejected: " + _listed(labels[m.name] for m in rejected)
    yield head
    ok = [m for m in modes if m.ok]
    if not ok:
        return
    yield from _index_lines(ok, labels, eqs, multimode=len(modes) > 1)
    yield from _state_lines(ok, labels, eqs, multimode=len(modes) > 1)
    if a.automaton is not None:
        yield from _change_lines(a)


def _index_lines(ok: list[ModeAnalysis], labels: dict[str, str], eqs: "_Equations",
                 multimode: bool) -> Iterator[str]:
    """The index (max c: the most times one equation is differentiated) per group of modes,
    Pryce's structural index ν_S, and the equations differentiated, with their lines."""
    by_index = _grouped(ok, lambda m: m.index)
    parts = []
    for index, group in sorted(by_index.items(), reverse=True):
        where = f" in {_listed(labels[m.name] for m in group)}" if len(by_index) > 1 else ""
        parts.append(f"{index}{where}")
    nus = sorted({m.structural_index for m in ok}, reverse=True)
    yield (f"index: {'; '.join(parts)} (the most times an equation is differentiated; "
           f"Pryce's structural index: {', '.join(map(str, nus))})")
    shown = 0
    for m in ok:
        if m.index <= 0 or shown == MAX_LISTED:
            continue
        shown += 1
        diff = sorted(((c, i) for i, c in m.c.items() if c > 0), key=lambda t: -t[0])
        where = f"in {labels[m.name]}: " if multimode else ""
        quoted = [eqs.in_mode(m, i, c) for c, i in diff[:3]]
        more = f"; and {len(diff) - 3} more" if len(diff) > 3 else ""
        yield f"  {where}differentiated: " + "; ".join(quoted) + more


def _state_lines(ok: list[ModeAnalysis], labels: dict[str, str], eqs: "_Equations",
                 multimode: bool) -> Iterator[str]:
    """The states (variables whose value the integrator carries) per group of modes, and
    those that consistency equations tie to the others."""
    if len(ok) == 1:
        # (one mode: the texts of its first states only, `_listed`'s line without the rest)
        one = ok[0].states
        yield (f"states ({len(one)}): {_listed(str(s) for s in one[:MAX_LISTED])}"
               + (f", ... ({len(one)} in all)" if len(one) > MAX_LISTED else ""))
        by_states: dict = {}
    else:
        by_states = _grouped(ok, lambda m: tuple(str(s) for s in m.states))
    if len(by_states) == 1:
        (states, _), = by_states.items()
        yield f"states ({len(states)}): {_listed(states)}"
    elif by_states:
        yield "states (per mode):"
        for states, group in by_states.items():
            yield (f"  {len(states)} in {_listed(labels[m.name] for m in group)}: "
                   f"{_listed(states)}")
    tied = [(m, m.dof) for m in ok if m.dof is not None and m.dof < len(m.states)]
    for m, dof in tied[:MAX_LISTED]:
        where = f"in {labels[m.name]}: " if multimode else ""
        cons = sorted({lat.eq_id for lat in m.consistency})
        computed = (_listed(str(s) for s in m.computed_states) if m.computed_states
                    else f"{len(m.states) - dof} of them")
        yield (f"  {where}{_count(dof, 'degree')} of freedom; {computed} computed from "
               + "; ".join(eqs.in_mode(m, i, 0) for i in cons[:3])
               + (f"; and {len(cons) - 3} more" if len(cons) > 3 else ""))


def _change_lines(a: Analysis) -> Iterator[str]:
    """The mode changes: how many, and those that restart a state or are impulsive."""
    aut = a.automaton
    assert aut is not None
    changes = aut.changes
    moving = [ch for ch in changes
              if not ch.accepted or ch.impulsive or _jumps(ch) or (ch.steps and not
                                                                   ch.closed_form)]
    still = len(changes) - len(moving)
    yield (f"mode changes: {len(changes)}"
           + (f" ({still} with every state continuous)" if still and moving else "")
           + (": every state continuous" if changes and not moving else "")
           + ("; restarts (the value after the event, pre(x) the value before):"
              if moving else ""))
    for ch in moving[:2 * MAX_LISTED]:
        head = f"  {_label(ch.src_label)} -> {_label(ch.dst_label)}: "
        if not ch.accepted:
            yield head + "rejected (see the verdict)"
            continue
        parts = []
        if ch.restart:
            parts.append(_restart_text(ch.restart))
        elif ch.steps:
            parts.append("computed numerically at the event on "
                         + _listed(v for st in ch.steps if st.numerical for v in st.variables))
        if ch.impulsive:
            imp = sorted({v for ri in ch.instants for v, _ in ri.impulsive})
            parts.append(f"impulsive: {_listed(imp)}")
        yield head + "; ".join(parts)
    if len(moving) > 2 * MAX_LISTED:
        yield f"  ... and {len(moving) - 2 * MAX_LISTED} more (--verbose lists them)"


def _label(label: str) -> str:
    """An automaton's mode label (``not g1,g2``) as a formula: ``(not g1 and g2)``."""
    return "(" + " and ".join(p.strip() for p in label.split(",")) + ")"


def _jumps(ch) -> bool:
    return any(not _identity(e) for e in ch.restart)


def _identity(e) -> bool:
    """``x+ = x-``: the state is continuous at the change."""
    lhs, rhs = e.lhs, e.rhs
    return (getattr(lhs, "name", "").endswith("+") and getattr(rhs, "name", None)
            == lhs.name[:-1] + "-")


def _restart_text(restart) -> str:
    """The restart ``x+ = f(x-)`` of the states that jump, in Modelica syntax, states with
    the same new value on one line: ``w1 = w2 = (j1*pre(w1) + j2*pre(w2))/(j1 + j2)``."""
    from .sympy_modelica import print_sympy
    groups: dict[str, list[str]] = {}
    for e in restart:
        if _identity(e):
            continue
        groups.setdefault(print_sympy(e.rhs), []).append(print_sympy(e.lhs))
    return "; ".join(" = ".join([*lhs, rhs]) for rhs, lhs in groups.items())


# --- helpers ------------------------------------------------------------------------------

class _Equations:
    """The model's equations by id, looked up only for the few the summary quotes."""

    def __init__(self, model: Model):
        self.model = model
        self._by_id: dict[str, Equation] | None = None

    def get(self, eq_id: str) -> Equation | None:
        # an imported equation's id is ``e<k>``, its position k - 1: the table of every
        # equation (about 25 ms at 10^5 equations, for the three the summary quotes) only
        # for an id that is not where that puts it (issue 29)
        if eq_id[:1] == "e" and eq_id[1:].isascii() and eq_id[1:].isdigit():
            k = int(eq_id[1:]) - 1
            equations = self.model.equations
            if 0 <= k < len(equations) and equations[k].id == eq_id:
                return equations[k]
        if self._by_id is None:
            self._by_id = {e.id: e for e in self.model.equations}
        return self._by_id.get(eq_id)

    def in_mode(self, m: ModeAnalysis, eq_id: str, times: int) -> str:
        """An equation as it stands in mode ``m`` (its if-expressions on guards resolved:
        ``w1 - w2 = 0``), ``(twice)`` when differentiated twice, and its line."""
        e = self.get(eq_id)
        text = None
        if e is not None and not any(isinstance(n, E.If) for n in E.walk(e.residual)):
            text = print_equation_body(e.residual)      # as written
        for lat in (() if text is not None else m.consistency):
            if lat.eq_id == eq_id and lat.k == 0:
                tree = lat.tree
                from .sympy_modelica import print_sympy
                text = (print_equation_body(tree) if tree is not None
                        else f"{print_sympy(lat.expr)} = 0")
                break
        if text is None:
            text = print_equation_body(e.residual) if e is not None else eq_id
        how = {0: "", 1: "", 2: " (twice)"}.get(times, f" ({times} times)")
        return f"{_cut(text)}{how}{_at(e) if e is not None else ''}"

    def in_formula(self, eq_id: str, times: int, pairs) -> str:
        """An equation differentiated ``times`` times in the modes of a formula, as it stands
        in the mode ``pairs`` of that formula (``(guard text, value)``: its if-expressions on
        guards resolved, `mdae_fmu.structure.valuations.specialize`), and its line."""
        e = self.get(eq_id)
        if e is None:
            return eq_id
        text = print_equation_body(e.residual)
        if any(isinstance(n, E.If) for n in E.walk(e.residual)):
            from .structure.valuations import specialize
            try:
                one = [x for x in specialize(self.model, [tuple(p) for p in pairs])
                       if x.id == eq_id]
            except KeyError:          # a guard the mode does not decide: as written
                one = []
            if one:
                text = print_equation_body(one[0].residual)
        how = {0: "", 1: "", 2: " (twice)"}.get(times, f" ({times} times)")
        return f"{_cut(text)}{how}{_at(e)}"

    def guard_source(self, name: str, g: E.Expr) -> str:
        """The guard with the equation that defines it (a Boolean variable) or the first
        equation it enables (an inline condition), and its line."""
        for e in self.model.equations:
            if isinstance(g, E.Ref):
                r = e.residual
                if isinstance(r, E.BinOp) and r.op == "-" and r.left == g:
                    return f"{_cut(print_equation_body(r))}{_at(e)}"
            elif any(lit.cond == g for lit in e.guard):
                return f"{name}{_at(e)}"
        return name


def _at(e: Equation) -> str:
    return f" ({e.loc.short()})" if e.loc is not None else ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_QUOTE else text[:MAX_QUOTE - 3] + "..."


def _guard_name(g: E.Expr) -> str:
    return g.name if isinstance(g, E.Ref) else print_expr(g)


def _formula(m: ModeAnalysis, guards: list[str]) -> str:
    """A mode as a formula over the guards: ``(g1 and not g2)``; ``(always)`` without any."""
    values = dict(m.valuation)
    lits = []
    for name in guards:
        if name not in values:
            continue
        plain = name.replace(".", "").replace("_", "").isalnum()
        lits.append(name if values[name] else (f"not {name}" if plain else f"not ({name})"))
    return f"({' and '.join(lits)})" if lits else "(always)"


def _grouped(items: Iterable[ModeAnalysis], key) -> dict:
    out: dict = {}
    for m in items:
        out.setdefault(key(m), []).append(m)
    return out


def _listed(items: Iterable[str]) -> str:
    """``a, b, c`` or ``a, b, ... (12 in all)`` beyond `MAX_LISTED`."""
    out: list[str] = []
    n = 0
    for x in items:
        n += 1
        if n <= MAX_LISTED:
            out.append(x)
    if n > MAX_LISTED:
        return ", ".join(out) + f", ... ({n} in all)"
    return ", ".join(out) or "none"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


__all__ = ["MAX_LISTED", "summary_lines"]
