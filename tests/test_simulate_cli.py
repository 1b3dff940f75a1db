"""``mdae-fmu simulate`` (mdae_fmu/simulate.py): FMUs and model files in, CSV/PNG and a summary
out, user errors as one message with exit code 1 or 2 and no traceback."""

from __future__ import annotations

import csv
import math
import sys
import zipfile
from pathlib import Path

import pytest

from mdae_fmu.cli import main

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks.baselines.build import build_baseline  # noqa: E402


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    out = tmp_path_factory.mktemp("baselines_cli")
    return {n: build_baseline(n, out) for n in ("BouncingBall", "ClutchBasic")}


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [[float(v) for v in r] for r in rows[1:]]


def test_simulate_fmu_writes_csv_plot_and_summary(baselines, tmp_path, capsys):
    out_csv, out_png = tmp_path / "bb.csv", tmp_path / "bb.png"
    rc = main(["simulate", str(baselines["BouncingBall"]), "--stop-time", "2",
               "--csv", str(out_csv), "--plot", str(out_png)])
    assert rc == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("BouncingBall: simulated 0 .. 2 s") and "event(s)" in stdout
    header, rows = read_csv(out_csv)
    assert header == ["time", "h", "v"]
    assert rows[0] == [0.0, 1.0, 0.0] and rows[-1][0] == 2.0
    # first impact at sqrt(2 h0 / g): the recorded event rows bracket it
    t_hit = math.sqrt(2 / 9.81)
    bounce = next(r for r, s in zip(rows, rows[1:]) if r[0] == s[0])
    assert bounce[0] == pytest.approx(t_hit, abs=1e-4)
    assert min(r[1] for r in rows) > -1e-3
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_clutch_matches_closed_form(baselines, tmp_path):
    out_csv = tmp_path / "clutch.csv"
    assert main(["simulate", str(baselines["ClutchBasic"]), "--csv", str(out_csv)]) == 0
    header, rows = read_csv(out_csv)
    assert header == ["time", "w1", "w2", "g"]
    w5 = (math.exp(-0.05) + 2 * 1.5 * math.exp(-0.03125)) / 3      # restart at t1 = 5
    row6 = next(r for r in rows if r[0] == pytest.approx(6.0, abs=1e-9))
    assert row6[1] == pytest.approx(w5 * math.exp(-0.0075), rel=1e-5)
    assert row6[2] == pytest.approx(row6[1], rel=1e-9) and row6[3] == 1.0


@pytest.mark.parametrize("make, code, text", [
    (lambda d: d / "missing.fmu", 2, "no such file"),
    (lambda d: (d / "junk.fmu").write_text("not a zip") and d / "junk.fmu", 2, "not an FMU"),
])
def test_unreadable_input_exits_2(tmp_path, capsys, make, code, text):
    rc = main(["simulate", str(make(tmp_path))])
    err = capsys.readouterr().err
    assert rc == code and text in err and "Traceback" not in err


def test_bad_stop_time_exits_2(baselines, capsys):
    rc = main(["simulate", str(baselines["BouncingBall"]), "--stop-time", "-1"])
    assert rc == 2 and "--stop-time" in capsys.readouterr().err


def test_runtime_failure_exits_1(baselines, tmp_path, capsys):
    """An FMU whose binary refuses to instantiate (GUID of the XML altered)."""
    bad = tmp_path / "bad.fmu"
    with zipfile.ZipFile(baselines["BouncingBall"]) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "modelDescription.xml":
                data = data.replace(b"{097de056", b"{197de056")
            dst.writestr(item, data)
    rc = main(["simulate", str(bad)])
    err = capsys.readouterr().err
    assert rc == 1 and "simulation failed" in err and "Traceback" not in err
    assert "wrong GUID" in err            # the FMU's own log message is passed on


def test_syntax_error_in_model_file_exits_2(tmp_path, capsys):
    src = tmp_path / "Bad.mo"
    src.write_text("model Bad\n  Real x(start = 1);\nequation\n  der(x) = -x +;\nend Bad;\n")
    rc = main(["simulate", str(src)])
    err = capsys.readouterr().err
    assert rc == 2 and "Bad.mo:4:" in err and "Traceback" not in err


def test_model_file_is_exported_then_simulated(tmp_path, capsys):
    src = ROOT / "reference_models" / "Dahlquist.mo"
    out_csv = tmp_path / "d.csv"
    rc = main(["simulate", str(src), "--stop-time", "1", "--csv", str(out_csv)])
    assert rc == 0, capsys.readouterr().err
    header, rows = read_csv(out_csv)
    assert header[0] == "time" and len(header) >= 2 and rows[-1][0] == 1.0
