"""Fuzzing of the untrusted files, short version (issue 25): mutated reference CSVs through
``mdae-fmu compare``, mutated FMU archives through ``mdae-fmu info`` and ``simulate``, mutated
suite files through ``mdae-fmu regress`` (benchmarks/fuzz_export.py, surfaces ``csv``,
``fmu`` and ``suite``): no traceback, no hang, the exit
code the harness's oracle expects (2 for a file the documented format refuses or a hostile
archive, 0 for a CSV equal to the seed in value, never 0 for an FMU without a usable binary),
messages naming the file, no temporary folder left, nothing written outside the extraction
folder. The long run (>= 2000 runs, README "Hostile input") is the benchmark itself."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "fuzz_export", Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_export.py")
fuzz = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fuzz)


def test_the_csv_oracle_reads_the_documented_format():
    seed = fuzz.read_csv_oracle(fuzz.csv_seed().encode())
    assert seed is not None and len(seed["time"]) == 101
    assert seed["x"][-1] == pytest.approx(1.5 * math.exp(-4.0), rel=1e-15)
    assert fuzz.read_csv_oracle(b'time,"x"\n0,1\n1,2\n') == {"time": [0.0, 1.0],
                                                             "x": [1.0, 2.0]}
    for bad in (b"", b"time,x\n0,1\n", b"time,x\n0,nan\n1,1\n", b"time,x\n1,0\n0,1\n",
                b"time,x,x\n0,1,1\n1,1,1\n", b"t,x\n0,1\n1,1\n", b"time,x\n0,1\n1\n",
                b"time,x\n0,1\n1,\xff\n"):
        assert fuzz.read_csv_oracle(bad) is None, bad


def _run(surface, n: int, seed: int, tmp_path: Path) -> list[dict]:
    records = [surface.run(label, data, tmp_path, timeout=300)
               for label, data in surface.inputs(n, seed)]
    failures = [(r["input"], surface.failure(r), r.get("stderr", "")[-400:])
                for r in records if surface.failure(r)]
    assert failures == []
    return records


def test_mutated_reference_csvs_through_compare(tmp_path):
    records = _run(fuzz.CsvSurface(), 40, 25, tmp_path)
    codes = {r[k] for r in records for k in ("as_test", "as_reference", "fmu") if k in r}
    assert codes == {0, 1, 2}, codes             # passes, failures and refusals, all reached
    assert any(not r["valid"] for r in records) and any(r["same"] for r in records)
    assert any("fmu" in r for r in records)


def test_mutated_fmus_through_info_and_simulate(tmp_path):
    records = _run(fuzz.FmuSurface(), 24, 25, tmp_path)
    assert {r["expected"] for r in records} == {"any", "refused", "fails"}
    assert {r["info"] for r in records} == {0, 2}
    assert 0 in {r["simulate"] for r in records} and 1 in {r["simulate"] for r in records}


def test_mutated_suite_files_through_regress(tmp_path):
    records = _run(fuzz.SuiteSurface(), 30, 4, tmp_path)
    assert {r["read"] for r in records} == {"ok", "refused"}
    assert {r["regress"] for r in records} >= {0, 2}
