"""What `mdae-fmu analyze` keeps in memory between its stages (issue 16): the report is written
in pieces, never joined, and the signature rows the per-mode stage remembers are handed over to
the normalization of the mode-change stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdae_fmu import analysis
from mdae_fmu.api import load
from mdae_fmu.cli import main
from mdae_fmu.modes import describe_automaton
from mdae_fmu.modes.normalize import normalize
from mdae_fmu.report import report_lines
from mdae_fmu.structure.per_mode import analyze_modes
from mdae_fmu.structure.signature import sigma_row, signature_row

ROOT = Path(__file__).resolve().parents[2] / "reference_models"


def _joined(model, a) -> str:
    """The report as one string, assembled from its sections (the former `render_text`)."""
    n_warn = sum(m.startswith("W-") for m in a.messages)
    verdict = "verdict: accepted" + (f", {n_warn} warning(s) above" if n_warn else "") \
        if a.accepted else "\n".join(["verdict: rejected"] + [f"  {m}" for m in a.messages])
    parts = ["\n".join(report_lines(model, a.modes)) + "\n"]
    if a.automaton is not None:
        parts.append(describe_automaton(a.automaton))
    return "\n\n".join(parts + [verdict])


@pytest.mark.parametrize("name", ["ClutchBasic.mo", "BouncingBall.mo"])
@pytest.mark.parametrize("per_piece", [1, 2, 3, 7])
def test_report_pieces_join_to_the_report(name, per_piece, monkeypatch, capsys):
    """Any piece size (a line count that divides the report's or not) gives the report, and
    the command prints it followed by one newline (the enumerated report: that of
    ``--list-modes``; ``--verbose`` of a single-mode model prints the default analysis'
    report the same way)."""
    model = load(ROOT / name)
    a = analysis.analyze(model, implicit=False)
    whole = _joined(model, a)
    monkeypatch.setattr(analysis, "_LINES_PER_PIECE", per_piece)
    pieces = list(analysis.text_pieces(model, a))
    assert "".join(pieces) == whole == analysis.render_text(model, a)
    assert len(pieces) >= len(report_lines(model, a.modes)) // per_piece   # not joined
    assert main(["analyze", "--list-modes", str(ROOT / name)]) == a.exit_code
    assert capsys.readouterr().out == whole + "\n"
    if len(a.modes.modes) == 1:
        # (the default analysis' report: a model with when-clauses has the automaton of the
        # one analysis' event checks, its single events, instead of the enumerated one)
        default = analysis.analyze(model)
        assert main(["analyze", "--verbose", str(ROOT / name)]) == default.exit_code
        assert capsys.readouterr().out == _joined(model, default) + "\n"


def test_signature_rows_handed_over_to_the_normalization():
    """After the per-mode stage, the normalization's read takes each remembered row out of
    the model (rows computed again afterwards are the same)."""
    model = load(ROOT / "ClutchBasic.mo")
    analyze_modes(model)
    memo = model.__dict__["_sigma_rows"]
    assert any(row is not None for row in memo.values())
    normalize(model)
    assert all(row is None for row in memo.values())
    for eq in model.equations:
        assert sigma_row(model, eq.residual) == signature_row(eq.residual)



@pytest.mark.parametrize("name", ["Pendulum.mo", "VanDerPol.mo"])
def test_signature_rows_released_by_the_one_mode_without_guards(name, monkeypatch):
    """A model without guards and when-clauses is not normalized: its one mode's graph is
    the rows' last reader and releases them (`analyze_mode`'s ``rows_last_read``), with the
    same analysis as when the rows are kept; a model with guards keeps them for the
    normalization (above)."""
    from mdae_fmu.structure import per_mode
    model = load(ROOT / name)
    assert not model.guards() and not model.whens
    report = analyze_modes(model)
    assert model.__dict__["_sigma_rows"] == {}
    kept = load(ROOT / name)
    with monkeypatch.context() as m:
        m.setattr(per_mode, "release_rows", lambda model: None)
        kept_report = analyze_modes(kept)
    assert any(row is not None for row in kept.__dict__["_sigma_rows"].values())
    for a, b in zip(report.modes, kept_report.modes, strict=True):
        assert (a.c, a.d, a.states, a.blocks, a.ok) == (b.c, b.d, b.states, b.blocks, b.ok)
    clutch = load(ROOT / "ClutchBasic.mo")
    analyze_modes(clutch)
    assert any(row is not None for row in clutch.__dict__["_sigma_rows"].values())
