"""The modes a guarded FMU declares (`mdae_fmu.codegen.guarded.mode_description`, the
description of its mode variable) and what `mdae-fmu info` reads from it (`mdae_fmu.info`):
the consistent modes numbered by their guard bits, as the per-mode FMU lists its own; the
enumerated analysis is the oracle of which modes are consistent."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("dd")

from mdae_fmu import api  # noqa: E402
from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.codegen.guarded import MAX_LISTED_GUARDS, mode_description  # noqa: E402
from mdae_fmu.info import mode_count, modes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2] / "reference_models"


def _md(description: str):
    """A model description whose mode variable has ``description`` (what `modes` reads)."""
    return SimpleNamespace(modelVariables=[SimpleNamespace(name="mdae_mode",
                                                           description=description)])


def test_rldc2_lists_its_four_modes_by_guard_bits():
    """RLDC2 (two diodes, guards g1, g2): 4 consistent modes, mode = g1 + 2 g2; the same
    valuations as the enumerated analysis' modes."""
    model = api.load(ROOT / "RLDC2.mo")
    a = analyze(model)                              # the one analysis: what export uses
    enumerated = analyze(model, implicit=False)     # the oracle
    text = mode_description(a.guarded)
    listed = modes(_md(text))
    assert listed == ["0 = [not g1,not g2]", "1 = [g1,not g2]", "2 = [not g1,g2]",
                      "3 = [g1,g2]"]
    assert mode_count(_md(text)) == 4 == a.guarded.n_modes == len(enumerated.modes.modes)
    # the per-mode report names its modes {g1, not g2}
    assert ({m.split(" = ")[1] for m in listed}
            == {"[" + m.name.strip("{}").replace(", ", ",") + "]"
                for m in enumerated.modes.modes})


def test_inconsistent_modes_are_not_listed():
    """Only the valuations of the schedule's formula of consistent modes are listed: with
    that formula ``g`` (one BDD node: g true) the clutch's FMU would declare its engaged mode
    alone."""
    from mdae_fmu.implicit.schedule import FormulaTable
    a = analyze(api.load(ROOT / "ClutchBasic.mo"))
    assert modes(_md(mode_description(a.guarded))) == ["0 = [not g]", "1 = [g]"]
    only_g = replace(a.guarded, table=FormulaTable(var=(0,), lo=(-2,), hi=(-1,)), modes=0,
                     n_modes=1)
    assert modes(_md(mode_description(only_g))) == ["1 = [g]"]


def test_many_guards_give_their_count():
    """Beyond `MAX_LISTED_GUARDS` guards the description gives the number of modes, which
    info reads; beyond 30 guards the mode variable counts changes, and says so."""
    a = analyze(api.load(ROOT / "ClutchBasic.mo"))
    many = replace(a.guarded, guards=a.guarded.guards * (MAX_LISTED_GUARDS + 1),
                   n_modes=5000)
    text = mode_description(many)
    assert modes(_md(text)) == [] and mode_count(_md(text)) == 5000
    huge = replace(a.guarded, guards=a.guarded.guards * 31, n_modes=2 ** 31)
    text = mode_description(huge)
    assert "count of mode changes" in text and mode_count(_md(text)) == 2 ** 31
    assert mode_count(_md("")) == 1
