"""Text and JSON renderings of the mode-change automaton (for ``mdae-fmu analyze``).

What the report shows per mode change (brief of issue 5, item 4; docs/theory.md §6.6): for every
nonstandard instant until the steady configuration, the facts, the erased equations, the restart
blocks with their shift-form formulas (``x@k`` is ``x^ok``, ``d`` the infinitesimal step), the
impulsive variables with their impulse orders, and the standardized restart ``x+ = f(x-)``;
then the restart of the whole change, composed over the instants when each has a closed form,
otherwise as steps that name the instants computed numerically (RR-9334 §11.3) and the
variables they restart.
"""

from __future__ import annotations

from .explore import Automaton, ModeChange
from .runs import eq_label


def _eq_text(e) -> str:
    return f"{e.lhs} = {e.rhs}"


def order_phrase(text: str, info=None) -> str:
    """The impulse order of an algebraic unknown, for a modeller (docs/theory.md §9.2: ``v d^o``
    finite and nonzero; order > 0 is impulsive, ``-inf`` means v = 0). ``info`` is the exact
    `mdae_fmu.impulse.analysis.OrderInfo` (``lo..hi`` over the solutions, or ``lo = None``
    when v must vanish); the JSON keeps ``text``."""
    if info is None:
        return f"order {text}"
    lo, hi = info.lo, info.hi
    if lo is None:
        return "zero, not impulsive"
    if lo == hi and not info.may_vanish:
        return f"order {lo}"
    if lo > 0:
        return f"order between {lo} and {hi}" + (", or zero" if info.may_vanish else "")
    if hi > 0:
        return f"order ≤ {hi}, possibly impulsive"
    return "not impulsive"


def jump_phrase(info, name: str = "the state") -> str | None:
    """The order of the increment ``x^om - x^o(m-1)`` of the new top instance of state ``name``
    (docs/theory.md §9.3; ``[[U]] <= 0`` by Assumption 7): order 0 is a finite jump
    of that instance, a negative order an infinitesimal increment (no jump of ``name`` in the
    standard limit; a velocity may still jump, read as increment / d), ``-inf`` no increment.
    None when the analysis says no more than the bound ``<= 0``."""
    lo, hi = info.lo, info.hi
    if lo is None:
        return f"order -inf: {name} unchanged"
    if lo == hi and not info.may_vanish:
        return (f"order 0: {name} jumps" if lo == 0
                else f"order {lo}: infinitesimal, {name} continuous")
    if hi < 0:
        return f"order ≤ {hi}: infinitesimal, {name} continuous"
    return None


def describe_change(ch: ModeChange, indent: str = "  ") -> list[str]:
    out = [f"{indent}{ch.src_label} -> {ch.dst_label}: "
           + (f"{ch.n_instants} instant(s) until steady"
              + (", impulsive" if ch.impulsive else "") if ch.accepted else "REJECTED")]
    if not ch.accepted:
        out.append(f"{indent}  {ch.diagnostic.message if ch.diagnostic else 'failed'}")
        return out
    for ri in ch.instants:
        out.append(f"{indent}  instant {ri.index} [{ri.mode}]: erased "
                   f"{{{', '.join(ri.erased)}}}, facts {{{', '.join(ri.facts)}}}")
        for b in ri.blocks:
            out.append(f"{indent}    block {{{', '.join(b.equations)}}} -> "
                       f"{{{', '.join(b.unknowns)}}}")
            if len(b.equations) > 1 or ri.erased:
                for lab, f in zip(b.equations, b.formulas):
                    out.append(f"{indent}      {lab}: 0 = {f}")
        if ri.impulsive:
            infos = dict(ri.orders)
            out.append(f"{indent}    impulsive: " + ", ".join(
                f"{v} ({order_phrase(o, infos.get(v))})" for v, o in ri.impulsive))
        jumps = [(inc, jump_phrase(info, v)) for v, inc, info in ri.jumps]
        if any(ph for _, ph in jumps):
            out.append(f"{indent}    state increments: " + ", ".join(
                f"{inc} ({ph or 'order ≤ 0: finite'})" for inc, ph in jumps))
        if ri.numerical:
            head = f"({ri.method}, {ri.level} level)" if ri.method else "(failed)"
            out.append(f"{indent}    standardized {head}: no closed form, numerical "
                       f"(δ-scheme, RR-9334 §11.3) on {{{', '.join(ri.variables)}}}")
        elif ri.method:
            out.append(f"{indent}    standardized ({ri.method}, {ri.level} level): "
                       + "; ".join(_eq_text(e) for e in ri.restart))
        for n in ri.notes:
            out.append(f"{indent}    note: {n}")
    if ch.restart:
        out.append(f"{indent}  restart: " + "; ".join(_eq_text(e) for e in ch.restart))
    elif ch.steps and not ch.closed_form:
        out.append(f"{indent}  restart: " + restart_steps_text(ch.steps))
    return out


def restart_steps_text(steps) -> str:
    """The composed restart of a mode change with an instant that has no closed form (theory
    docs/theory.md §9, RR-9334 §11.3): ``instant 0 numerical (δ-scheme, RR-9334 §11.3) on {vx, vy,
    x, y}; then instant 1: vx+ = ...``. The left limits ``x-`` of a closed step after a numerical
    one are the values the numerical instant computed."""
    parts = []
    for st in steps:
        where = (f"instant {st.instants[0]}" if len(st.instants) == 1
                 else f"instants {st.instants[0]}-{st.instants[-1]}")
        if st.numerical:
            parts.append(f"{where} numerical (δ-scheme, RR-9334 §11.3) on "
                         f"{{{', '.join(st.variables)}}}")
        else:
            parts.append(f"{where}: " + ("; ".join(_eq_text(e) for e in st.restart)
                                         or "no state restarted"))
    return "; then ".join(parts)


def _require_complete(a: Automaton) -> None:
    """The full report needs the whole automaton: one built for the verdict only
    (``analyze_multimode(..., full=False)``) would print no blocks and no run."""
    if not a.complete:
        raise ValueError(f"the automaton of {a.name} was built for the verdict only "
                         "(full=False): analyse with full=True for the full report")


def describe_automaton(a: Automaton) -> str:
    """Human-readable report of the modes and mode changes of an automaton."""
    _require_complete(a)
    lines = [f"model {a.name}: {'ACCEPTED' if a.accepted else 'REJECTED'} "
             f"(multimode analysis, erasure rule: {a.erasure}, Lemma 22: {a.lemma22} reading)"]
    lines.append("guards: " + ", ".join(f"{n} ({k})" for n, k in a.guards) if a.guards
                 else "guards: none")
    notes = [n for n in (a.system.notes if a.system is not None else ())
             if "event iteration" in n]
    for n in notes:
        lines.append(f"  {n}")
    n_transient = sum(m.kind == "transient" for m in a.modes)
    lines.append(f"modes of the mode-change automaton ({len(a.modes)}: "
                 f"{len(a.modes) - n_transient} long, {n_transient} transient):")
    for m in a.modes:
        if m.kind == "transient":
            lines.append(f"  [{m.label}] transient")
        elif not m.ok:
            lines.append(f"  [{m.label}] FAILS: {m.diagnostic.message if m.diagnostic else ''}")
        else:
            lines.append(f"  [{m.label}] index {m.index}; states {{{', '.join(m.states)}}}; "
                         f"latent {{{', '.join(m.latent)}}}; blocks "
                         + " ; ".join("+".join(b) for b in m.blocks))
    lines.append(f"mode changes ({len(a.changes)}), {len(a.configs)} configurations (what is "
                 f"known at the start of an instant), {len(a.edges)} explored runs:")
    if any(ch.instants for ch in a.changes):
        lines.append("  (in the formulas of an instant, x@k is x at the k-th instant of the "
                     "change, x@0 of a state its value before it, and δ the infinitesimal "
                     "step; x+ and x- are the values after and before the change)")
    for ch in a.changes:
        lines.extend(describe_change(ch))
    if a.diagnostics:
        lines.append("diagnostics:")
        for d in a.diagnostics:
            lines.append(f"  {d.code}: {d.message}")
    return "\n".join(lines)


def automaton_to_json(a: Automaton) -> dict:
    """JSON-serializable form of an automaton (formulas as strings)."""
    _require_complete(a)
    return {
        "format": "mdae_fmu.automaton/1",
        "model": a.name,
        "accepted": a.accepted,
        "erasure": a.erasure,
        "lemma22": a.lemma22,
        "guards": [{"name": n, "kind": k} for n, k in a.guards],
        "initial_mode": None if a.initial_mode is None else list(a.initial_mode),
        "modes": [{"label": m.label, "valuation": list(m.mode), "kind": m.kind, "ok": m.ok,
                   "index": m.index, "states": list(m.states), "latent": list(m.latent),
                   "blocks": [list(b) for b in m.blocks],
                   "diagnostic": m.diagnostic.message if m.diagnostic else None}
                  for m in a.modes],
        "mode_changes": [{
            "from": c.src_label, "to": c.dst_label, "accepted": c.accepted,
            "instants_until_steady": c.n_instants, "impulsive": c.impulsive,
            "diagnostic": c.diagnostic.message if c.diagnostic else None,
            "restart": [{"lhs": str(e.lhs), "rhs": str(e.rhs)} for e in c.restart],
            "restart_steps": [{
                "instants": list(st.instants), "numerical": st.numerical,
                "variables": list(st.variables),
                "restart": [{"lhs": str(e.lhs), "rhs": str(e.rhs)} for e in st.restart]}
                for st in c.steps],
            "instants": [{
                "index": i.index, "mode": i.mode, "facts": list(i.facts),
                "erased": list(i.erased),
                "blocks": [{"equations": list(b.equations), "unknowns": list(b.unknowns),
                            "formulas": list(b.formulas)} for b in i.blocks],
                "impulsive": [{"variable": v, "order": o} for v, o in i.impulsive],
                "standardization": i.method, "level": i.level,
                "restart": [{"lhs": str(e.lhs), "rhs": str(e.rhs)} for e in i.restart],
                "jumps": [{"variable": v, "increment": inc, "order": info.text()}
                          for v, inc, info in i.jumps],
                "notes": list(i.notes)} for i in c.instants]}
            for c in a.changes],
        "configurations": len(a.configs),
        "runs": len(a.edges),
        "diagnostics": [{"code": d.code, "message": d.message, "variables": list(d.variables),
                         "equations": [equation_json(a, e) for e in d.equations]}
                        for d in a.diagnostics],
    }


def equation_json(a: Automaton, key) -> dict:
    """An equation instance of a diagnostic: ``{"equation": id, "k": shift, "label": "e3'",
    "loc": "File.mo:12" or null}`` (the shift k reads as the k-th derivative, Lemma 52; the same
    ``equation``/``k``/``label`` keys as the per-mode blocks of docs/analyze-json.md)."""
    eid, k = (key, 0) if isinstance(key, str) else (str(key[0]), int(key[1]))
    loc = None
    if a.system is not None:
        try:
            e = a.system.equation(eid)
        except KeyError:
            e = None
        if e is not None and e.loc is not None:
            loc = e.loc.short()
    return {"equation": eid, "k": k, "label": eq_label((eid, k)), "loc": loc}
