"""The schedule split into gcc units of bounded size (`mdae_fmu.codegen.emit.schedule_units`,
issue 29 Deliver 4): the runs are found over the whole schedule, a unit is closed once it
holds `UNIT_BYTES` characters, a run is cut into loops of at most `run_copies` copies, and
the FMU computes exactly what the one-unit FMU computes."""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path

import numpy as np

from mdae_fmu.codegen import emit, runs
from mdae_fmu.codegen.runs import MIN_REPEATS, Shape, strides
from mdae_fmu.codegen.slots import Slot


def _copies(rows: list[list[int]]) -> list[list[Shape]]:
    return [[Shape(key=("x",), slots=tuple(Slot(array="r", index=k) for k in row), n_read=1)]
            for row in rows]


def test_strides_of_copies_laid_out_one_after_the_other():
    assert strides(_copies([[4, 100], [7, 102], [10, 104], [13, 106]])) == [3, 2]
    assert strides(_copies([[4, 100], [7, 102], [10, 105]])) is None
    assert strides(_copies([[4, 100]])) is None


def test_run_copies_bounds_the_slot_table():
    assert emit.run_copies(10, None) > 10 ** 12
    assert emit.run_copies(10, 8000) == 100            # 8 characters per slot
    assert emit.run_copies(1000, 8000) == MIN_REPEATS  # never fewer than a run's minimum


def _schedules(fmu: Path) -> dict[str, str]:
    with zipfile.ZipFile(fmu) as z:
        return {n: z.read(n).decode() for n in z.namelist()
                if re.fullmatch(r"sources/model_schedule_\d+\.c", n)}


def test_small_units_compute_what_one_unit_computes(tmp_path, monkeypatch):
    """The loop chain of 40 masses (a Newton block and explicit blocks per mass) exported as
    one schedule unit (its loops over tables of two rows, `strides`) and, with full slot
    tables, as units of about 1000 characters: several units, each of them called by model.c
    in order, every block defined once, the runs cut into loops of at most `run_copies`
    copies; bit-identical trajectories."""
    from fmpy import simulate_fmu
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_chain import loop_chain_model
    from mdae_fmu import api
    from mdae_fmu.importers.flat_modelica import parse_modelica
    model = parse_modelica(loop_chain_model(40))
    one = api.export_fmu(model, tmp_path / "one.fmu")
    (src,) = _schedules(one).values()
    # the masses' slots are laid out one after the other: each loop's table holds the first
    # copy's slots and their steps, whatever the number of copies
    tables = re.findall(r"static const int run\d+_\d+\[(\d+)\]", src)
    assert tables and set(tables) == {"2"}
    looped = [int(m) for m in re.findall(r"for \(int q = 0; q < (\d+); q\+\+\)", src)]
    monkeypatch.setattr(emit, "UNIT_BYTES", 1000)
    for module in (emit, runs):       # full tables, cut into loops of bounded size
        monkeypatch.setattr(module, "strides", lambda copies: None)
    small = api.export_fmu(model, tmp_path / "small.fmu")
    units = _schedules(small)
    assert len(units) >= 3
    with zipfile.ZipFile(small) as z:
        model_c = z.read("sources/model.c").decode()
    calls = re.findall(r"if \(mdae_schedule_(\d+)\(inst\)\) return 1;", model_c)
    assert calls == [str(k) for k in range(len(units))]
    defined, copies = [], []
    for text in units.values():
        defined += re.findall(r"static int (block\d+|run\d+_\d+_loop)\(", text)
        copies += [int(m) for m in re.findall(r"for \(int q = 0; q < (\d+); q\+\+\)", text)]
    assert len(defined) == len(set(defined))
    assert copies and max(copies) < 40 and all(m >= MIN_REPEATS for m in copies)
    # a cut run goes on in the next loop: only a last piece of fewer than MIN_REPEATS
    # copies per run is printed block by block
    assert len(copies) > len(looped)
    assert sum(copies) >= sum(looped) - (MIN_REPEATS - 1) * len(looped)
    # a unit is closed at the first piece that takes it past the bound
    assert all(len(t) < 1000 + 8000 for t in units.values())
    a = simulate_fmu(str(one), stop_time=1.0, output_interval=0.01)
    b = simulate_fmu(str(small), stop_time=1.0, output_interval=0.01)
    for name in a.dtype.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
