"""The corpus run through both FMI interfaces (``benchmarks/corpus.py --fmi-type both``,
issue 24: the Base Modelica corpus "exports and simulates" in Model Exchange and
Co-Simulation): the Co-Simulation result must agree with the Model Exchange one at the
communication points, the Model Exchange value there being the right limit at an event."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus import cs_agreement, right_limit, run_one  # noqa: E402
from fetch_corpus import MANIFEST, corpus_file  # noqa: E402


def _result(time, **cols) -> np.ndarray:
    names = ["time", *cols]
    rows = list(zip(time, *cols.values()))
    return np.array(rows, dtype=[(n, np.float64) for n in names])


def test_right_limit_reads_the_value_after_an_event():
    """A step at t = 1 stored as two rows (1, 0) and (1, 1): at 1 the value after it; before
    it, interpolation towards the value before the event; after the last row, the last."""
    t = [0.0, 1.0, 1.0, 2.0, 3.0]
    v = [0.0, 0.0, 1.0, 1.0, 2.0]
    assert list(right_limit(t, v, [0.5, 1.0, 1.5, 2.5, 4.0])) == [0.0, 1.0, 1.0, 1.5, 2.0]


def test_cs_agreement_accepts_the_same_step_and_finds_a_frozen_output():
    me = _result([0.0, 0.5, 1.0, 1.0, 1.5, 2.0], x=[0.0, 0.5, 1.0, 3.0, 3.5, 4.0])
    same = _result([0.0, 1.0, 2.0], x=[0.0, 3.0, 4.0])
    assert cs_agreement(me, same) == ("ok", "", 1)
    frozen = _result([0.0, 1.0, 2.0], x=[0.0, 2.9, 0.0])
    verdict, text, n = cs_agreement(me, frozen)
    assert (verdict, n) == ("differs", 1)
    assert text == "CS x(2) = 0, ME 4"        # the worst point of the worst variable


def test_a_committed_model_with_events_agrees_in_both_interfaces():
    """BaseModelica.jl's WhenEquation (a when-clause on a state crossing) exported once with
    both interfaces: Co-Simulation agrees with Model Exchange on every state and output."""
    entry = next(e for e in json.loads(MANIFEST.read_text())["models"]
                 if e["id"] == "bm-jl/WhenEquation")
    r = run_one(entry, corpus_file(entry, ROOT), import_only=False, export=True,
                fmi_type="both")
    assert (r["simulate"], r["cs"]) == ("ok", "ok"), r
    assert r["cs_compared"] >= 1, r
