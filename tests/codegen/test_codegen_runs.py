"""Repeated blocks printed as loops over slot tables (`mdae_fmu.codegen.runs`, issue 16
item 3): the FMU computes exactly what the blocks printed one by one compute."""

from __future__ import annotations

import numpy as np
import pytest

import sympy as sp

from mdae_fmu.codegen import runs
from mdae_fmu.codegen.blocks import explicit_block
from mdae_fmu.codegen.cprinter import SlotPrinter
from mdae_fmu.codegen.slots import Slot


def test_find_runs_takes_the_longest_repetition():
    keys = ["a", "b", "c"] * 5 + ["z"] + ["d"] * 3 + [None, "e", "e", "e", "e"]
    assert runs.find_runs(keys) == [(0, 3, 5), (20, 1, 4)]
    # fewer than MIN_REPEATS copies, or a block without a shape, make no run
    assert runs.find_runs(["a", "b"] * (runs.MIN_REPEATS - 1)) == []
    assert runs.find_runs(["a", None] * 8) == []


def _explicit(printer, target, value):
    """An explicit block ``target = value`` printed as `blocks.emit_block` prints one."""
    with printer.collect() as holes:
        return explicit_block(0, f"    {printer.symbol(target)} = {printer.doprint(value)};",
                              holes)


def test_shape_abstracts_real_slots_only():
    """Two blocks whose texts differ only in their Real slots have one shape; an Integer
    slot or a left limit is part of the shape."""
    a, b, c, e, f, g, n, m = sp.symbols("a b c e f g n m")
    slots = {
        a: Slot(array="r", index=7, name="a"),
        b: Slot(array="r", index=2, name="b"),
        c: Slot(array="r", index=5, name="c"),
        e: Slot(array="r", index=9, name="e"),
        f: Slot(array="r", index=6, name="f"),
        n: Slot(array="i", index=1, name="n"),
        m: Slot(array="i", index=2, name="m"),
        g: Slot(array="r", index=1, pre=True, name="pre(g)"),
    }
    pr = SlotPrinter(slots, local=True)
    one = runs.shape(_explicit(pr, a, b * (c - n)))
    two = runs.shape(_explicit(pr, e, b * (f - n)))
    other = runs.shape(_explicit(pr, e, b * (f - m)))
    assert one.key == two.key != other.key
    assert [k.index for k in one.slots] == [7, 2, 5] and \
        [k.index for k in two.slots] == [9, 2, 6]
    # a left limit is not a Real slot of the local array: literal in the shape
    same = runs.shape(_explicit(pr, a, g))
    assert same.slots == (slots[a],) and "d->pr[1]" in same.key[2]
    assert "/*" not in same.key[2].split("=")[0]       # the holes carry no name


@pytest.mark.parametrize("n", [9])
def test_loops_compute_what_the_blocks_compute(tmp_path, monkeypatch, n):
    """The loop chain (a Newton block, four explicit blocks per mass) exported with and
    without loops: the two FMUs give bit-identical trajectories (same arithmetic, only the
    addressing differs), and the one with loops has one."""
    import sys
    import zipfile
    from pathlib import Path
    from fmpy import simulate_fmu
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_chain import loop_chain_model
    from mdae_fmu import api
    from mdae_fmu.importers.flat_modelica import parse_modelica
    model = parse_modelica(loop_chain_model(n))
    looped = api.export_fmu(model, tmp_path / "looped.fmu")
    monkeypatch.setattr(runs, "MIN_REPEATS", 10 ** 9)
    flat = api.export_fmu(model, tmp_path / "flat.fmu")
    with zipfile.ZipFile(looped) as z:
        src = z.read("sources/model_schedule_0.c").decode()
    assert "for (int q = 0;" in src and "copies of" in src
    # the slot table's first row names the variables of the first copy (by the identifiers
    # the file declares, docs/decisions.md §13), the others are plain
    table = src[src.index("static const int run"):]
    rows = table[:table.index("};")].split("\n")[1:-1]
    assert len(rows) >= 2 and "R_chain_v_1," in rows[0] and "    R_chain_v_1 = " in src
    assert all("/*" not in row and "R_" not in row for row in rows[1:])
    with zipfile.ZipFile(flat) as z:
        flat_src = z.read("sources/model_schedule_0.c").decode()
    assert "for (int q" not in flat_src
    # one function per block (docs/decisions.md §14), headed by its equations and unknowns,
    # called once, in schedule order
    import re
    defined = re.findall(r"/\* block (\d+): [^\n]*\*/\nstatic int block(\d+)\(", flat_src)
    assert len(defined) >= 5 * n and all(a == b for a, b in defined)
    called = [int(k) for k in re.findall(r"if \(block(\d+)\(inst, d, r\)\) return 1;", flat_src)]
    assert called == sorted(int(k) for k, _ in defined)
    a = simulate_fmu(str(looped), stop_time=1.0, output_interval=0.01)
    b = simulate_fmu(str(flat), stop_time=1.0, output_interval=0.01)
    for name in a.dtype.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
