"""Fuzzing through the whole pipeline, short version (issue 15, item 5): 50 mutated models
(benchmarks/fuzz_export.py: token edits, extreme literals, bindings and start values without a
finite value, control characters, odd experiment annotations) through ``mdae-fmu analyze`` and
``mdae-fmu export``: no traceback (no exit 3), no hang, no gcc failure, every exported FMU
valid for FMPy's schema. The long run (>= 1000 inputs) is the benchmark itself."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "fuzz_export", Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_export.py")
fuzz = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fuzz)


@pytest.mark.slow    # 50 x analyze + export: -m slow runs it (docs/testing.md)
def test_mutated_models_through_analyze_and_export(tmp_path):
    records = [fuzz.fuzz_one(name, text, tmp_path, timeout=300)
               for name, text in fuzz.mutants(50, seed=15)]
    s = fuzz.summarize(records)
    failures = [r for r in records if r.get("traceback") or r["gcc_failure"]
                or "hang" in (r["analyze"], r["export"]) or r.get("invalid_fmu")]
    assert failures == []
    assert (s["tracebacks"], s["hangs"], s["gcc_failures"], s["invalid_fmus"]) == (0, 0, 0, 0)
    # the corpus reaches both ends: FMUs built, and numeric refusals at the importer
    assert s["exported_fmus"] >= 5
    assert any("double" in m or "division by zero" in m or "domain" in m
               for m in s["messages"]), s["messages"]
    assert set(s["export_exit_codes"]) <= {"0", "1", "2"}
