"""The whole compile-time analysis of a model: every mode, then every mode change.

`analyze` runs the per-mode structural analysis (`mdae_fmu.structure.per_mode`, theory note 003
§4 and 9334-theory-algorithms §3.2) and, when every mode is structurally regular, the
exploration of mode changes into the mode-change automaton (`mdae_fmu.modes`, 9334 §2.15, with
impulse analysis and standardization of the restarts). `render_text` / `render_json` give the
report of `mdae-fmu analyze`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .diagnostics import EXIT_OK, EXIT_REJECTED, ModelRejected
from .ir import Model
from .modes import Automaton, analyze_multimode, automaton_to_json, describe_automaton
from .modes.event_iteration import delay_same_instant_guards
from .report import render_json as _modes_json
from .report import iter_report_lines
from .structure.per_mode import ModesReport, analyze_modes
from .structure.when_clauses import when_clause_problems
from .work_budget import reports_call_sites


@dataclass(frozen=True)
class Analysis:
    """Per-mode report, and the automaton when the modes were regular enough to explore.

    ``rejection`` holds the message of a model rejected before exploration (for instance a
    logico-numerical fixpoint between a guard and the equations it enables).

    ``code_model`` / ``code_modes``: when guards read values computed at the same instant
    (``off = s < 0``), the form of the model code generation compiles, those guards reading
    the previous instant's values (`mdae_fmu.modes.event_iteration.delay_same_instant_guards`,
    same guards, modes and automaton), and its per-mode report; None when the model is
    compiled as it is."""
    model_name: str
    modes: ModesReport
    automaton: Automaton | None
    rejection: str | None = None
    code_model: Model | None = None
    code_modes: ModesReport | None = None

    @property
    def accepted(self) -> bool:
        return (self.modes.exit_code == EXIT_OK and self.rejection is None
                and self.automaton is not None and self.automaton.accepted)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.accepted else EXIT_REJECTED

    @property
    def errors(self) -> tuple[str, ...]:
        """The rejection diagnostics alone (no ``W-...`` warnings)."""
        return tuple(m for m in self.messages if not m.startswith("W-"))

    def raise_if_rejected(self) -> None:
        """`ModelRejected` (exit code 1) with the diagnostics `render_text` prints under
        "verdict: rejected", so that ``export`` and ``analyze`` give one verdict."""
        if not self.accepted:
            errors = self.errors or (f"model {self.model_name}: rejected by the analysis",)
            raise ModelRejected(f"model {self.model_name}: rejected by the analysis "
                                "(mdae-fmu analyze gives the full report):\n"
                                + "\n".join(f"  {m}" for m in errors))

    @property
    def messages(self) -> tuple[str, ...]:
        """Rejection diagnostics followed by warnings (``W-...``), one string each."""
        out = list(self.modes.messages)
        if self.rejection:
            out.append(self.rejection)
        if self.automaton is not None:
            out.extend(self.automaton.messages)
        return tuple(out)


@reports_call_sites
def analyze(model: Model, erasure: str = "restricted", lemma22: str = "two-graph", *,
            modes: ModesReport | None = None, progress=None) -> Analysis:
    """Analyse every mode; if all are regular, explore every mode change.

    ``erasure``: "restricted" or "canonical" conflict erasure (docs/decisions.md §2);
    ``lemma22``: "two-graph" or "literal" reading of Lemma 22 in the DiffArray of transient
    modes (9334-theory-algorithms §1.2, docs/decisions.md §1). ``modes``: the per-mode report
    when already computed; ``progress``: called with the name of each stage."""
    if lemma22 not in ("two-graph", "literal"):
        raise ValueError(f"lemma22 must be 'two-graph' or 'literal', not {lemma22!r}")
    if erasure not in ("restricted", "canonical"):
        raise ValueError(f"erasure must be 'restricted' or 'canonical', not {erasure!r}")
    if modes is None:
        if progress is not None:
            progress("structure")
        modes = analyze_modes(model)
    if progress is not None:
        progress("modes")
    if modes.exit_code != EXIT_OK:
        return Analysis(model.name, modes, None)
    problems = when_clause_problems(model, modes)
    if problems:
        return Analysis(model.name, modes, None, rejection="\n".join(problems))
    try:
        automaton = analyze_multimode(model, erasure=erasure,  # type: ignore[arg-type]  # checked above
                                      literal_lemma22=(lemma22 == "literal"), per_mode=modes)
    except ModelRejected as err:
        return Analysis(model.name, modes, None, rejection=str(err))
    if not automaton.accepted:
        return Analysis(model.name, modes, automaton)
    if len(modes.modes) > 1:
        # what the multimode exporter cannot run (reinits it cannot run as written, transient
        # guards on equations) is part of the verdict, so that analyze and export agree
        # (docs/multimode-fmu.md)
        from .codegen.multimode import check_exportable
        try:
            check_exportable(model, automaton)
        except ModelRejected as err:
            return Analysis(model.name, modes, automaton, rejection=err.message)
    delayed = delay_same_instant_guards(model, automaton.system)
    if delayed is model:
        return Analysis(model.name, modes, automaton)
    return Analysis(model.name, modes, automaton, code_model=delayed,
                    code_modes=analyze_modes(delayed))


def render_text(model: Model, a: Analysis) -> str:
    """The per-mode report (`report.report_lines`), the mode changes, then one verdict for
    the whole model."""
    return "".join(text_pieces(model, a))


def text_pieces(model: Model, a: Analysis) -> Iterator[str]:
    """`render_text` in pieces of at most `_LINES_PER_PIECE` lines, so that ``mdae-fmu
    analyze`` writes a report of millions of lines without holding it whole (issue 16)."""
    batch: list[str] = []
    for line in iter_report_lines(model, a.modes):
        batch.append(line)
        if len(batch) == _LINES_PER_PIECE:
            yield "\n".join(batch) + "\n"
            batch = []
    if batch:                           # (the report has at least its "model ..." line)
        yield "\n".join(batch) + "\n"
    if a.automaton is not None:
        yield "\n\n" + describe_automaton(a.automaton)
    if a.accepted:
        n_warn = sum(m.startswith("W-") for m in a.messages)
        yield "\n\nverdict: accepted" + (f", {n_warn} warning(s) above" if n_warn else "")
    else:
        yield "\n\n" + "\n".join(["verdict: rejected"] + [f"  {m}" for m in a.messages])


_LINES_PER_PIECE = 4096


def render_json(model: Model, a: Analysis) -> dict:
    """`render_text`'s content as JSON: the per-mode report (docs/analyze-json.md) with the
    automaton under ``mode_changes`` and the overall verdict."""
    out = _modes_json(model, a.modes)
    out["mode_changes"] = None if a.automaton is None else automaton_to_json(a.automaton)
    out["exit_code"] = a.exit_code
    out["accepted"] = a.accepted
    out["messages"] = list(a.messages)
    return out
