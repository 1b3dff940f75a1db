"""Text and JSON rendering of the analysis for ``mdae-fmu analyze`` (schema: docs/analyze-json.md).

The report is built from sections: a header (model, counts, guards, and an equation legend
mapping every equation id to its source line and text), a summary table of the modes (index,
Pryce's structural index, DOF, states, latent equations, blocks), one section per mode
(offsets, states, leading variables, latent and consistency equations, blocks), and the
verdict. Index conventions (docs/theory.md §4.6, §4.7): "index" is max c, the seed papers'
convention; "nu_S" is Pryce's structural index; the classical differentiation index is not
computed. The whole analysis (`mdae_fmu.analysis`) adds the mode-change sections after
`report_lines` and gives its own verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .ir import Model
from .structure.per_mode import Block, Instance, LatentEquation, ModeAnalysis, ModesReport, \
    eq_label
from .structure.printing import equation_text, expr_text

if TYPE_CHECKING:
    import sympy as sp
else:   # loaded on first use (`mdae_fmu.lazy_modules`)
    from .lazy_modules import sympy as sp

FORMAT = "mdae_fmu.analysis/1"


# --- formulas -------------------------------------------------------------------------------

def formula(expr: sp.Expr) -> str:
    """``expr = 0`` as readable text in Modelica syntax (``der(w1) - der(w2) = 0``, ``x^2``,
    if-expressions, `mdae_fmu.sympy_modelica`; sympy's own syntax is kept in the JSON
    report)."""
    from .sympy_modelica import print_sympy
    return f"{print_sympy(expr)} = 0"


INDEX_LEGEND = (
    "index: max c, the seed papers' convention (docs/theory.md §4.6);",
    "nu_S: Pryce's structural index, max c + 1 when some d_j = 0 (docs/theory.md §4.7);",
    "the classical differentiation index nu_d (<= nu_S) is not computed.")


def block_text(b: Block) -> str:
    """``{e1, e2, e3', e4} -> {der(w1), der(w2), t1, t2}``."""
    eqs = ", ".join([eq_label(i, k) for i, k in b.equations])
    return f"{{{eqs}}} -> {{{', '.join(map(str, b.unknowns))}}}"


def _inst_list(xs: tuple[Instance, ...]) -> str:
    return ", ".join(map(str, xs)) if xs else "(none)"


# --- text -----------------------------------------------------------------------------------

def render_text(model: Model, result: ModesReport) -> str:
    """Human-readable report: `report_lines`, then the verdict of the per-mode analysis."""
    lines = report_lines(model, result)
    lines.append("")
    if result.exit_code == 0:
        lines.append(f"verdict: accepted ({len(result.modes)} modes)")
    else:
        lines.append("verdict: rejected")
        for msg in result.messages:
            lines.append(f"  {msg}")
    return "\n".join(lines)


def event_conditions(model: Model) -> list[str]:
    """The conditions of if-expressions whose branches all have the same structure: no mode,
    only an event indicator (`mdae_fmu.structure.conditionals`); those written only under
    ``noEvent`` (`no_event_conditions`) are left out."""
    from .structure.conditionals import classify_conditionals
    c = classify_conditionals(model)
    return [expr_text(a) for a in c.event_only if a not in c.no_event]


def no_event_conditions(model: Model) -> list[str]:
    """Conditions of the same kind as `event_conditions`, written only under ``noEvent``:
    evaluated as they are, without event indicator."""
    from .structure.conditionals import classify_conditionals
    return [expr_text(a) for a in classify_conditionals(model).no_event]


def report_lines(model: Model, result: ModesReport) -> list[str]:
    """The report without a verdict: header with the equation legend, summary table of the
    modes, one section per mode."""
    return list(iter_report_lines(model, result))


def iter_report_lines(model: Model, result: ModesReport) -> Iterator[str]:
    """`report_lines` one line at a time: a 10^6-equation report has two million lines, which
    `mdae-fmu analyze` writes as they come rather than holding them all (issue 16)."""
    yield f"model {result.model_name}"
    yield (f"  variables: {len(model.variables)} declared, {len(result.unknowns)} "
           f"continuous unknowns, {len(result.discrete)} discrete, "
           f"{len(result.inputs)} inputs")
    guards = model.guards()
    fixed = {t for t, _ in result.fixed_guards}
    yield (f"  guards: {len(result.long_guards) - len(fixed)} long (mode-defining), "
           f"{sum(g.kind == 'transient' for g in guards)} transient (when-conditions)")
    for t in result.long_guards:
        if t not in fixed:
            yield f"    long       {t}"
    for g in guards:
        if g.kind == "transient":
            yield f"    transient  {expr_text(g.cond)}"
    for t, v in result.fixed_guards:
        why = "event guard, false in long modes" if not v and "(" in t else "constant"
        yield f"    fixed      {t} = {'true' if v else 'false'} ({why})"
    events, quiet = event_conditions(model), no_event_conditions(model)
    yield (f"  structural modes: {len(result.modes)}; conditions that are only events "
           f"(same structure in every branch, no mode): {len(events)}")
    for t in events:
        yield f"    event      {t}"
    for t in quiet:
        yield f"    noEvent    {t} (same structure, no mode, no event)"
    yield from _equation_legend(model, result)
    yield ""
    yield from mode_table(result)
    numbered = bool(result.modes) and \
        max(len(m.name) for m in result.modes) > _MODE_COLUMN
    for k, m in enumerate(result.modes, 1):
        yield ""
        yield from _mode_text(m, f"#{k} " if numbered else "")


def _equation_legend(model: Model, result: ModesReport) -> Iterator[str]:
    """``e5  ClutchBasic.mo:24  0 = if g then w1 - w2 else f1``: every equation id with its
    source location and text, so that the ids used below can be traced to the source."""
    disc = set(result.discrete_equations)
    n_eq = len(model.equations)
    head = f"  equations ({n_eq}"
    if disc:
        head += ("; 1 defines a discrete variable and is" if len(disc) == 1 else
                 f"; {len(disc)} define discrete variables and are") + \
            " not part of the modes' DAEs"
    yield head + "):"
    if not n_eq:
        return
    ids = [e.id for e in model.equations]
    locs = [e.loc.short() if e.loc is not None else "" for e in model.equations]
    w_id, w_loc = max(map(len, ids)), max(map(len, locs))
    for e, i, loc in zip(model.equations, ids, locs):
        guard = " and ".join(expr_text(g.cond) if g.positive else f"not {expr_text(g.cond)}"
                             for g in e.guard) if e.guard else ""
        text = equation_text(e.residual)
        if guard:
            text = f"if {guard}: {text}"
        tag = "   [defines a discrete variable]" if e.id in disc else ""
        where = f"  {loc:<{w_loc}}" if w_loc else ""
        yield f"    {i:<{w_id}}{where}  {text}{tag}".rstrip()


_MODE_COLUMN = 40     # widest mode name shown in the summary table


def _cell(text: str, width: int = 32) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def mode_table(result: ModesReport) -> list[str]:
    """The summary table of the modes: one row per mode with its status, index (max c),
    Pryce's structural index, degrees of freedom, equation count, states, latent
    (differentiated) equations, and blocks (count and largest size)."""
    out = [f"modes ({len(result.modes)}):"]
    if not result.modes:
        return out
    head = ("mode", "status", "index", "nu_S", "DOF", "eqs", "states", "latent", "blocks",
            "largest")
    # long mode names (many guards) are numbered in the table and spelled out below it
    numbered = max(len(m.name) for m in result.modes) > _MODE_COLUMN
    rows = []
    for k, m in enumerate(result.modes, 1):
        has = m.index >= 0
        latent = [e.label for e in m.solved if e.k > 0] if m.solved else \
            [eq_label(i, k) for i, k in m.c.items() if k > 0]
        rows.append((
            f"#{k}" if numbered else m.name, "ok" if m.ok else ("REJECTED " + m.status),
            str(m.index) if has else "-", str(m.structural_index) if has else "-",
            str(m.dof) if m.dof is not None else "-", str(len(m.equations)),
            _cell(_inst_list(m.states)) if has else "-",
            _cell(", ".join(latent) or "(none)") if has else "-",
            str(len(m.blocks)) if has else "-",
            str(max((len(b.equations) for b in m.blocks), default=0)) if has else "-"))
    widths = [max(len(r[k]) for r in rows + [head]) for k in range(len(head))]

    def fmt(r):
        return "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()

    out.append(fmt(head))
    out.append("  " + "  ".join("-" * w for w in widths))
    out.extend(fmt(r) for r in rows)
    if numbered:
        out.extend(f"  #{k} = {m.name}" for k, m in enumerate(result.modes, 1))
    out.extend(f"  {line}" for line in INDEX_LEGEND)
    return out


def _mode_text(m: ModeAnalysis, number: str = "") -> Iterator[str]:
    yield f"mode {number}{m.name}: {'ok' if m.ok else 'REJECTED'}"
    yield f"  equations ({len(m.equations)}): {', '.join(m.equations) or '(none)'}"
    if m.absent:
        yield f"  not used in this mode: {', '.join(m.absent)}"
    if m.index >= 0:
        yield (f"  index (max c, seed papers' convention): {m.index}; "
               f"Pryce's structural index nu_S: {m.structural_index}")
        yield "  offsets c: " + ", ".join(f"{k}={v}" for k, v in m.c.items())
        yield "  offsets d: " + ", ".join(f"{k}={v}" for k, v in m.d.items())
        yield f"  degrees of freedom: {m.dof}"
        yield f"  states ({len(m.states)}): {_inst_list(m.states)}"
        if m.selected_states:
            yield (f"  selected states ({len(m.selected_states)}, stateSelect): "
                   f"{_inst_list(m.selected_states)}; computed from the consistency "
                   f"equations: {_inst_list(m.computed_states)}")
            yield from (f"  note: {n}" for n in m.state_notes)
        yield f"  leading variables ({len(m.leading)}): {_inst_list(m.leading)}"
        latent = [e for e in m.solved if e.k > 0]
        if latent:
            yield "  latent equations (differentiated):"
            yield from (f"    {e.label}: {formula(e.expr)}" for e in latent)
        if m.consistency:
            yield "  consistency equations:"
            yield from (f"    {e.label}: {formula(e.expr)}" for e in m.consistency)
        if m.blocks:
            yield f"  blocks ({len(m.blocks)}, in solve order):"
            yield from (f"    {block_text(b)}" for b in m.blocks)
    if m.diagnostic:
        yield f"  diagnostic: {m.diagnostic}"


# --- JSON -----------------------------------------------------------------------------------

def _latent_json(e: LatentEquation) -> dict:
    return {"equation": e.eq_id, "k": e.k, "label": e.label, "residual": sp.sstr(e.expr)}


def _inst_json(x: Instance) -> dict:
    return {"name": x.name, "order": x.order, "text": str(x)}


def _mode_json(m: ModeAnalysis) -> dict:
    has = m.index >= 0
    return {
        "name": m.name,
        "valuation": [{"guard": t, "value": v} for t, v in m.valuation],
        "ok": m.ok,
        "status": m.status,
        "diagnostic": m.diagnostic,
        "equations": list(m.equations),
        "unknowns": list(m.unknowns),
        "absent": list(m.absent),
        "index": m.index if has else None,
        "structural_index": m.structural_index if has else None,
        "dof": m.dof,
        "c": dict(m.c),
        "d": dict(m.d),
        "states": [_inst_json(x) for x in m.states],
        "selected_states": [_inst_json(x) for x in m.selected_states],
        "computed_states": [_inst_json(x) for x in m.computed_states],
        "state_notes": list(m.state_notes),
        "leading": [_inst_json(x) for x in m.leading],
        "solved": [_latent_json(e) for e in m.solved],
        "consistency": [_latent_json(e) for e in m.consistency],
        "blocks": [{"equations": [{"equation": i, "k": k, "label": eq_label(i, k)}
                                  for i, k in b.equations],
                    "unknowns": [_inst_json(x) for x in b.unknowns],
                    "text": block_text(b)} for b in m.blocks],
        "over": {"equations": list(m.over_equations), "variables": list(m.over_variables)},
        "under": {"equations": list(m.under_equations), "variables": list(m.under_variables)},
    }


def render_json(model: Model, result: ModesReport) -> dict:
    """The same content as `render_text`, as a JSON-serializable dict (docs/analyze-json.md)."""
    eqs = {eq.id: eq for eq in model.equations}
    out: dict = {
        "format": FORMAT,
        "model": result.model_name,
        "counts": {"variables": len(model.variables), "unknowns": len(result.unknowns),
                   "discrete": len(result.discrete), "inputs": len(result.inputs),
                   "equations": len(model.equations), "modes": len(result.modes),
                   "structural_modes": len(result.modes),
                   "event_conditions": len(event_conditions(model))},
        "unknowns": list(result.unknowns),
        "discrete": list(result.discrete),
        "inputs": list(result.inputs),
        "equations": [{"id": e.id, "text": equation_text(e.residual),
                       "guard": [{"cond": expr_text(g.cond), "positive": g.positive}
                                 for g in e.guard],
                       "loc": None if e.loc is None else
                       {"file": e.loc.file, "line": e.loc.line, "col": e.loc.col},
                       "discrete_definition": e.id in result.discrete_equations}
                      for e in eqs.values()],
        "guards": [{"cond": expr_text(g.cond), "kind": g.kind} for g in model.guards()],
        "long_guards": list(result.long_guards),
        "event_conditions": event_conditions(model),
        "noevent_conditions": no_event_conditions(model),
        "fixed_guards": [{"guard": t, "value": v} for t, v in result.fixed_guards],
        "modes": [_mode_json(m) for m in result.modes],
    }
    out["exit_code"] = result.exit_code
    out["accepted"] = result.exit_code == 0
    out["messages"] = list(result.messages)
    return out
