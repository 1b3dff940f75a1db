"""The committed (redistributable) part of the model corpus (tests/corpus/manifest.json):
each model imports and is analysed as the manifest records ("expected", measured by
benchmarks/corpus.py; "message": a part of the message; "route": flat or rumoca), so that a
regression of the importers shows up here; two small ones are exported and simulated against
closed forms."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus import _status, run_one  # noqa: E402
from fetch_corpus import MANIFEST, corpus_file  # noqa: E402

from mdae_fmu.importers import frontend  # noqa: E402

COMMITTED = [e for e in json.loads(MANIFEST.read_text())["models"] if e.get("committed")]


def test_manifest_entries_are_complete():
    entries = json.loads(MANIFEST.read_text())["models"]
    assert len(entries) >= 60
    for e in entries:
        assert {"id", "source", "commit", "path", "extract", "licence"} <= set(e), e["id"]
        assert len(e["commit"]) == 40
    for e in COMMITTED:
        assert (ROOT / e["file"]).is_file(), e["id"]
        assert "expected" in e, e["id"]


@pytest.mark.parametrize("entry", COMMITTED, ids=[e["id"] for e in COMMITTED])
def test_committed_model_status(entry):
    if entry.get("route") == "rumoca" and not frontend.rumoca_available():
        pytest.skip("rumoca (extra 'frontend') is not installed")
    r = run_one(entry, corpus_file(entry, ROOT), import_only=True, export=False)
    assert _status(r) == entry["expected"], r
    if "message" in entry:
        assert entry["message"] in r.get("message", ""), r
    if "route" in entry:
        assert r.get("route") == entry["route"], r


def test_sympy_decay_and_ball_simulate_to_their_closed_forms(tmp_path):
    """rumoca's examples SympyDecay (x = exp(-k t)) and Ball (free fall from x = 10 with
    v = 1, g = 9.81, bounce v := -0.8 v at x = 0): the FMUs follow the closed forms."""
    from fmpy import simulate_fmu

    from mdae_fmu import api
    decay = api.load(ROOT / "tests/corpus/rumoca/SympyDecay.mo")
    api.export_fmu(decay, tmp_path / "decay.fmu")
    r = simulate_fmu(str(tmp_path / "decay.fmu"), stop_time=2.0, relative_tolerance=1e-9,
                     output_interval=0.01, output=["x"])
    assert np.max(np.abs(r["x"] - np.exp(-0.5 * r["time"]))) < 1e-6

    ball = api.load(ROOT / "tests/corpus/rumoca/Ball.mo")
    api.export_fmu(ball, tmp_path / "ball.fmu")
    g, t_hit = 9.81, (1 + math.sqrt(1 + 2 * 9.81 * 10)) / 9.81
    r = simulate_fmu(str(tmp_path / "ball.fmu"), stop_time=2.0, relative_tolerance=1e-9,
                     output_interval=0.005, output=["x", "v"], record_events=True)
    t = r["time"]
    before = t < t_hit - 1e-6
    assert np.max(np.abs(r["x"][before] - (10 + t[before] - g / 2 * t[before] ** 2))) < 1e-5
    v_hit = 1 - g * t_hit
    after = t > t_hit + 1e-6
    ta = t[after] - t_hit
    assert np.max(np.abs(r["v"][after] - (-0.8 * v_hit - g * ta))) < 1e-4
    assert np.max(np.abs(r["x"][after] - (-0.8 * v_hit * ta - g / 2 * ta ** 2))) < 1e-4
