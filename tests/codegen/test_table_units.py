"""The name tables of model.c (`mdae_fmu.codegen.emit`, issue 29 Deliver 4): rendered as
markers and put back after the slots are named (`_HeldTables`), and beyond
`TABLE_UNIT_BYTES` moved to units of their own that gcc compiles while the model description
is built (`mdae_fmu.fmu.build.start_early`)."""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu.codegen import emit

ROOT = Path(__file__).resolve().parents[2]


def _chain(n: int):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_chain import loop_chain_model
    from mdae_fmu.importers.flat_modelica import parse_modelica
    return parse_modelica(loop_chain_model(n))


def _sources(fmu: Path) -> dict[str, str]:
    with zipfile.ZipFile(fmu) as z:
        return {n[len("sources/"):]: z.read(n).decode() for n in z.namelist()
                if n.startswith("sources/")}


def _generated(model, monkeypatch, inert: bool | None) -> dict[str, str]:
    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.export import GUID_PLACEHOLDER, plan_code
    from mdae_fmu.progress import as_progress
    if inert is not None:
        monkeypatch.setattr(emit._HeldTables, "inert", lambda self: inert)
    progress = as_progress(False, "export")
    plan = plan_code(model, analyze(model, progress=progress, full=False), progress)
    return emit.generate_sources(plan.compiled, plan.events, plan.init, GUID_PLACEHOLDER)


def test_held_tables_give_the_text_of_the_tables_named_in_place(monkeypatch):
    """The slots named with the tables held (`_HeldTables.inert`) or with the tables in place
    (the path of a table holding ``/*``): the same sources, byte for byte."""
    model = _chain(12)
    held = _generated(model, monkeypatch, None)
    monkeypatch.undo()
    in_place = _generated(model, monkeypatch, False)
    assert held == in_place
    assert "\x01" not in "".join(held.values())
    assert '    "chain.x[12]",\n' in held["model.c"]


def test_names_with_comment_openers_are_named_in_place(tmp_path):
    """A name holding ``/*`` reaches the string tables (the slower path, as before) and the
    FMU builds and loads."""
    from mdae_fmu import api
    from mdae_fmu.importers.flat_modelica import parse_modelica
    from fmpy import simulate_fmu
    model = parse_modelica(
        "model Weird\n  parameter Real 'k /* p */' = 2.0;\n"
        "  Real 'x /* y */'(start = 1.0, fixed = true);\nequation\n"
        "  der('x /* y */') = -'k /* p */' * 'x /* y */';\nend Weird;\n")
    fmu = api.export_fmu(model, tmp_path / "w.fmu")
    model_c = _sources(fmu)["model.c"]
    assert '    "x /* y */",\n' in model_c and '    "der(x /* y */)",\n' in model_c
    r = simulate_fmu(str(fmu), stop_time=1.0, output=["x /* y */"])
    assert r["x /* y */"][-1] == pytest.approx(np.exp(-2.0), rel=1e-4)


def test_large_name_tables_are_units_of_their_own(tmp_path, monkeypatch):
    """Beyond `TABLE_UNIT_BYTES` (lowered here) the block labels and the Real names are
    units of their own, compiled early (the library cache off): model.c names them instead
    of defining them, the tables hold the same lines, the build description lists the
    units, and the FMU computes bit for bit what the one-unit FMU computes."""
    from fmpy import simulate_fmu
    from mdae_fmu import api
    model = _chain(30)
    monkeypatch.setenv("MDAE_FMU_BUILD_CACHE", "")
    one = api.export_fmu(model, tmp_path / "one.fmu")
    monkeypatch.setattr(emit, "TABLE_UNIT_BYTES", 100)
    split = api.export_fmu(model, tmp_path / "split.fmu")
    a, b = _sources(one), _sources(split)
    assert "model_block_labels.c" not in a and "model_real_names.c" not in a
    for unit, symbol in emit.TABLE_UNITS.values():
        head = f"const char *const {symbol}[] = {{\n"
        table = re.search(re.escape(head) + r'(.*?)    ""\};\n', a["model.c"], re.S)
        assert table is not None
        assert head + table.group(1) + '    ""};\n' in b[unit]
        assert head not in b["model.c"] and f"/* {symbol}: {unit} */" in b["model.c"]
        assert f'name="{unit}"' in b["buildDescription.xml"]
    ra = simulate_fmu(str(one), stop_time=0.5, output=["chain.x[30]", "chain.v[1]"])
    rb = simulate_fmu(str(split), stop_time=0.5, output=["chain.x[30]", "chain.v[1]"])
    assert np.array_equal(ra["chain.x[30]"], rb["chain.x[30]"])
    assert np.array_equal(ra["chain.v[1]"], rb["chain.v[1]"])
