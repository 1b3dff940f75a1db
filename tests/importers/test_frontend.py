"""Hierarchical Modelica through the rumoca front end (issue 13, item 7;
mdae_fmu/importers/frontend.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu import api
from mdae_fmu.cli import main
from mdae_fmu.importers import frontend

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data" / "hierarchical"
REF = ROOT / "reference_models"

needs_rumoca = pytest.mark.skipif(not frontend.rumoca_available(),
                                  reason="rumoca (extra 'frontend') is not installed")


def test_flat_reference_models_are_not_taken_for_hierarchical():
    for path in sorted(REF.glob("*.mo")):
        assert not frontend.is_hierarchical(path.read_text()), path.name


def test_model_choice_last_model_or_file_stem():
    text = (DATA / "ClutchComponents.mo").read_text()
    assert frontend.is_hierarchical(text)
    assert frontend.choose_model(text, Path("ClutchComponents.mo")) == "ClutchComponents.Clutch"
    assert frontend.choose_model(text, Path("Shaft.mo")) == "ClutchComponents.Shaft"
    kinds = dict((n, k) for k, n in frontend.model_classes(
        (DATA / "DiodeCircuit.mo").read_text()))
    assert kinds["DiodeCircuit.OnePort"] == "partial model"
    assert kinds["DiodeCircuit.Pin"] == "connector"


def test_without_rumoca_the_message_says_how_to_flatten(monkeypatch, capsys):
    monkeypatch.setattr(frontend, "rumoca_available", lambda: False)
    path = DATA / "ClutchComponents.mo"
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:4:3: ") and "connector" in err.splitlines()[0]
    assert "pip install 'mdae-fmu[frontend]'" in err
    assert "omc --baseModelica -i=MODEL FILE.mo" in err and "instantiateModel(MODEL)" in err
    assert "Traceback" not in err


@needs_rumoca
def test_clutch_from_components_matches_the_flat_reference(tmp_path):
    """The connector-based clutch, flattened by rumoca, exported and simulated, follows the
    closed form of ClutchBasic (reference_models/ClutchBasic.csv) away from the events."""
    from fmpy import simulate_fmu
    model = api.load(DATA / "ClutchComponents.mo")
    assert {"s1.w", "s2.w", "c.g", "s1.flange.tau"} <= {v.name for v in model.variables}
    analysis = api.analyze(model)
    assert analysis.exit_code == 0
    fmu = tmp_path / "clutch.fmu"
    api.export_fmu(model, fmu, analysis=analysis)
    res = simulate_fmu(str(fmu), stop_time=10.0, relative_tolerance=1e-8,
                       output_interval=1e-2, output=["s1.w", "s2.w"])
    with open(REF / "ClutchBasic.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    ref = np.array([[float(v) for v in r] for r in rows[1:]])
    col = {h: i for i, h in enumerate(rows[0])}
    t_ref = ref[:, 0]
    keep = (np.abs(t_ref - 5.0) > 0.02) & (np.abs(t_ref - 7.0) > 0.02)
    t = np.asarray(res["time"])
    tt, idx = np.unique(t[::-1], return_index=True)   # right limits at event instants
    for ours, theirs in (("s1.w", "w1"), ("s2.w", "w2")):
        sim = np.interp(t_ref[keep], tt, np.asarray(res[ours])[::-1][idx])
        assert np.max(np.abs(sim - ref[keep, col[theirs]])) < 1e-5, ours


def _max_error(res, csv_name, pairs, events, t_max):
    """Largest |sim - reference| over ``pairs`` (our name, CSV column) away from ``events``."""
    with open(REF / csv_name, newline="") as fh:
        rows = list(csv.reader(fh))
    ref = np.array([[float(v) for v in r] for r in rows[1:]])
    col = {h: i for i, h in enumerate(rows[0])}
    t_ref = ref[:, 0]
    keep = t_ref <= t_max
    for te in events:
        keep &= np.abs(t_ref - te) > 0.02
    t = np.asarray(res["time"])
    tt, idx = np.unique(t[::-1], return_index=True)   # right limits at event instants
    return max(float(np.max(np.abs(np.interp(t_ref[keep], tt, np.asarray(res[ours])[::-1][idx])
                                   - ref[keep, col[theirs]]))) for ours, theirs in pairs)


@needs_rumoca
def test_diode_circuit_from_components_matches_rldc2diodes(tmp_path):
    """The connector-based RLDC2Diodes (ideal diodes guarded by the same-instant s), flattened
    by rumoca: both switchings (TF -> TT at 0.0358, TT -> FF at 0.2620) and the trajectories of
    reference_models/RLDC2Diodes.csv."""
    from fmpy import simulate_fmu
    model = api.load(DATA / "DiodeCircuitSameInstant.mo")
    analysis = api.analyze(model)
    assert analysis.exit_code == 0
    api.export_fmu(model, tmp_path / "dc.fmu", analysis=analysis)
    res = simulate_fmu(str(tmp_path / "dc.fmu"), stop_time=1.0, relative_tolerance=1e-8,
                       output_interval=1e-3, output=["l1.i", "l2.i", "c1.v", "c2.v", "d2.i"])
    err = _max_error(res, "RLDC2Diodes.csv", (("l1.i", "j1"), ("l2.i", "j2"), ("c1.v", "v1"),
                                              ("c2.v", "v2")), (0.0358204, 0.2619993), 1.0)
    assert err < 2e-5, err
    t, i2 = np.asarray(res["time"]), np.asarray(res["d2.i"])
    assert np.all(i2[t < 0.035] == 0) and np.all(i2[(t > 0.037) & (t < 0.26)] > 0)


@needs_rumoca
def test_clutch_from_components_through_the_cli(capsys):
    assert main(["analyze", "--verbose", str(DATA / "ClutchComponents.mo")]) == 0
    out = capsys.readouterr().out
    assert "model ClutchComponents_Clutch" in out and "guards: c.g\n" in out
    assert "1 long guards, 2 consistent modes, 10 equations, 10 unknowns" in out
    assert "verdict: accepted" in out


@needs_rumoca
def test_diode_circuit_with_pre_is_refused_naming_rumoca(capsys):
    """rumoca 0.10.2 refuses pre() of a continuous variable outside a when-clause, the
    left-limit guard of the ideal diode (reference_models/RLDC2Diodes.mo)."""
    path = DATA / "DiodeCircuit.mo"
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:1: rumoca could not flatten 'DiodeCircuit.Circuit': ")
    assert "pre(`d1.s`)" in err and "OpenModelica" in err and "Traceback" not in err


@needs_rumoca
def test_diode_circuit_with_when_clauses_is_refused_not_truncated(capsys):
    """rumoca's Base Modelica output has no when-clauses: the model is refused instead of being
    imported without its switching logic."""
    path = DATA / "DiodeCircuitWhen.mo"
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:1: 'DiodeCircuitWhen.Circuit' has when-clauses, which "
                          "rumoca")
    assert "omc --baseModelica" in err


@needs_rumoca
def test_rumoca_syntax_error_has_its_position(tmp_path, capsys):
    path = tmp_path / "Broken.mo"
    path.write_text("package P\n  connector C Real v; flow Real i; end C;\n"
                    "  model M\n    C c;\n  equation\n    c.v = ;\n  end M;\nend P;\n")
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:6:11: rumoca: syntax error: unexpected `;`"), err
    assert "Traceback" not in err
