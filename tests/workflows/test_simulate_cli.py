"""``mdae-fmu simulate`` and ``mdae_fmu.simulate`` (mdae_fmu/simulation.py): FMUs and model
files in, CSV/PNG and a summary out, user errors as one message with exit code 1 or 2 and no
traceback; every option of FMPy's vocabulary gives the values ``fmpy.simulate_fmu`` gives with
the same settings on the same FMU; ``mdae-fmu info`` and ``--version`` (issue 28)."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu.cli import main

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from fmu_files import baseline_fmu  # noqa: E402


@pytest.fixture(scope="module")
def baselines():
    """The hand-written BouncingBall and ClutchBasic FMUs, built once per run (read-only)."""
    return {n: baseline_fmu(n) for n in ("BouncingBall", "ClutchBasic")}


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [[float(v) for v in r] for r in rows[1:]]


def test_simulate_fmu_writes_csv_plot_and_summary(baselines, tmp_path, capsys):
    """Default recorded variables: every output and local one, in the model's order (here the
    derivatives too: der(h) = v on every row)."""
    out_csv, out_png = tmp_path / "bb.csv", tmp_path / "bb.png"
    rc = main(["simulate", str(baselines["BouncingBall"]), "--stop-time", "2",
               "--output-file", str(out_csv), "--plot", str(out_png)])
    assert rc == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("BouncingBall: simulated 0 .. 2 s") and "event(s)" in stdout
    header, rows = read_csv(out_csv)
    assert header == ["time", "h", "der(h)", "v", "der(v)"]
    assert rows[0] == [0.0, 1.0, 0.0, 0.0, -9.81] and rows[-1][0] == 2.0
    assert all(r[2] == r[3] for r in rows)
    h, v = header.index("h"), header.index("v")
    rows = [[r[0], r[h], r[v]] for r in rows]
    # first impact at sqrt(2 h0 / g): the recorded event rows bracket it
    t_hit = math.sqrt(2 / 9.81)
    bounce = next(r for r, s in zip(rows, rows[1:]) if r[0] == s[0])
    assert bounce[0] == pytest.approx(t_hit, abs=1e-4)
    assert min(r[1] for r in rows) > -1e-3
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_clutch_matches_closed_form(baselines, tmp_path):
    out_csv = tmp_path / "clutch.csv"
    assert main(["simulate", str(baselines["ClutchBasic"]), "--output-file", str(out_csv),
                 "--output-variables", "w1,w2", "g"]) == 0
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
    rc = main(["simulate", str(src), "--stop-time", "1", "--output-file", str(out_csv)])
    assert rc == 0, capsys.readouterr().err
    header, rows = read_csv(out_csv)
    assert header[0] == "time" and len(header) >= 2 and rows[-1][0] == 1.0


# ---------------------------------------------------------------------------------------------
# FMPy's vocabulary: each option against fmpy.simulate_fmu with the same settings
# ---------------------------------------------------------------------------------------------

BALL = """model Ball "a bouncing ball that counts its bounces"
  parameter Real e = 0.8 "coefficient of restitution";
  parameter Real g = 9.81;
  parameter Real h0 = 1;
  Real h(start = h0, fixed = true);
  Real v(start = 0, fixed = true);
  Real p "momentum flow of a mass 2";
  Integer n(start = 0, fixed = true) "bounces";
  Boolean falling "moving down";
equation
  der(h) = v;
  der(v) = -g;
  p = 2 * v;
  falling = v < 0;
  when h < 0 then
    reinit(v, -e * pre(v));
    n = pre(n) + 1;
  end when;
  annotation(experiment(StopTime = 1.0, Interval = 0.01));
end Ball;
"""


@pytest.fixture(scope="module")
def ball(tmp_path_factory):
    """Our FMU of BALL (Model Exchange, and Co-Simulation when SUNDIALS is installed)."""
    from cosim_util import sundials_available
    from fmu_files import export_text
    return export_text(tmp_path_factory.mktemp("ball"), BALL, "Ball",
                       fmi_type="both" if sundials_available() else "me")


def _fmpy(fmu, **settings):
    from fmpy import simulate_fmu
    return simulate_fmu(str(fmu), **settings)


def _assert_same(csv_path, reference):
    """The CSV holds exactly FMPy's result: same columns, same rows, same values (the CSV
    keeps every float's repr, so equality is exact)."""
    header, rows = read_csv(csv_path)
    assert header == list(reference.dtype.names)
    assert len(rows) == len(reference)
    for k, name in enumerate(header):
        assert [r[k] for r in rows] == [float(x) for x in reference[name]], name


def test_default_records_discrete_variables_with_closed_form(ball, tmp_path, capsys):
    """The default CSV holds the bounce counter, the Boolean and the flow besides the states;
    one bounce in 0..1 s at t1 = sqrt(2 h0 / g), with v+ = -e v- (closed form), and the
    output interval is the model's Interval (0.01 s) between events."""
    out = tmp_path / "b.csv"
    assert main(["simulate", str(ball), "--output-file", str(out)]) == 0
    header, rows = read_csv(out)
    assert set(header) == {"time", "h", "v", "p", "der(h)", "der(v)", "n", "falling"}
    col = {n: k for k, n in enumerate(header)}
    t1 = math.sqrt(2 / 9.81)
    assert rows[-1][col["n"]] == 1.0 and rows[0][col["n"]] == 0.0
    first = next(r for r in rows if r[col["n"]] == 1.0)
    assert first[0] == pytest.approx(t1, abs=1e-6)
    v1 = math.sqrt(2 * 9.81)
    assert first[col["v"]] == pytest.approx(0.8 * v1, rel=1e-5)
    end = rows[-1]
    assert end[col["h"]] == pytest.approx(0.8 * v1 * (1 - t1) - 9.81 / 2 * (1 - t1) ** 2,
                                          rel=1e-5)
    assert end[col["falling"]] == 1.0 and end[col["p"]] == pytest.approx(2 * end[col["v"]])
    regular = [r[0] for r in rows if abs(r[0] * 100 - round(r[0] * 100)) < 1e-9]
    assert len(regular) >= 100
    assert "n = 1" in capsys.readouterr().out


OPTION_CASES = [
    # (command-line options, fmpy.simulate_fmu keywords)
    (["--start-values", "e", "0.5", "--start-values", "h0", "2"],
     dict(start_values={"e": 0.5, "h0": 2.0})),
    (["--start-values", "e", "0.5", "h0", "2"], dict(start_values={"e": 0.5, "h0": 2.0})),
    (["--output-variables", "h", "n", "--output-variables", "falling"],
     dict(output=["h", "n", "falling"])),
    (["--relative-tolerance", "1e-9"], dict(relative_tolerance=1e-9)),
    (["--start-time", "0.2", "--stop-time", "2.5"], dict(start_time=0.2, stop_time=2.5)),
    (["--output-interval", "0.125"], dict(output_interval=0.125)),
    (["--timeout", "120"], dict()),
    (["--fmi-type", "ModelExchange"], dict(fmi_type="ModelExchange")),
]


@pytest.mark.parametrize("options, settings", OPTION_CASES,
                         ids=[" ".join(o) for o, _ in OPTION_CASES])
def test_option_gives_fmpys_values(ball, tmp_path, options, settings):
    """CLI and API: the same values as fmpy.simulate_fmu on the same FMU with the same
    settings (the output interval given to both)."""
    import mdae_fmu
    settings = dict(settings)
    settings.setdefault("output_interval", 0.05)
    if "--output-interval" not in options:
        options = options + ["--output-interval", "0.05"]
    settings.setdefault("output", ["h", "v", "p", "der(h)", "der(v)", "n", "falling"])
    if "--output-variables" not in options:
        options = options + ["--output-variables", ",".join(settings["output"])]
    settings.setdefault("fmi_type", "ModelExchange")
    reference = _fmpy(ball, **settings)
    out = tmp_path / "r.csv"
    assert main(["simulate", str(ball), "--output-file", str(out), *options]) == 0
    _assert_same(out, reference)
    api = mdae_fmu.simulate(ball, output_variables=settings["output"],
                            output_interval=settings["output_interval"],
                            **{k: v for k, v in settings.items()
                               if k in ("start_values", "relative_tolerance", "start_time",
                                        "stop_time", "fmi_type")})
    assert api.result.dtype.names == reference.dtype.names
    for name in reference.dtype.names:
        assert np.array_equal(api.result[name], reference[name]), name


@pytest.mark.requires_sundials
def test_cosimulation_gives_fmpys_values(ball, tmp_path, capsys):
    settings = dict(fmi_type="CoSimulation", output=["h", "v", "n"], output_interval=0.02,
                    stop_time=1.5)
    reference = _fmpy(ball, **settings)
    out = tmp_path / "cs.csv"
    assert main(["simulate", str(ball), "--fmi-type", "CoSimulation", "--output-variables",
                 "h,v,n", "--output-interval", "0.02", "--stop-time", "1.5",
                 "--output-file", str(out)]) == 0
    _assert_same(out, reference)
    header, rows = read_csv(out)
    assert rows[-1][header.index("n")] == 2.0        # t2 = t1 + 2 e v1 / g = 1.174 < 1.5


def test_old_spellings_work_with_a_deprecation_note(ball, tmp_path, capsys):
    new, old = tmp_path / "new.csv", tmp_path / "old.csv"
    assert main(["simulate", str(ball), "--output-file", str(new),
                 "--fmi-type", "ModelExchange"]) == 0
    capsys.readouterr()
    assert main(["simulate", str(ball), "--csv", str(old), "--fmi-type", "me"]) == 0
    err = capsys.readouterr().err
    assert "--csv is deprecated, use --output-file" in err
    assert "--fmi-type me is deprecated, use --fmi-type ModelExchange" in err
    assert old.read_text() == new.read_text()


@pytest.mark.parametrize("options, words", [
    (["--start-values", "e"], "--start-values takes name-value pairs; 'e' has no value"),
    (["--start-values", "E", "0.5"], "no parameter 'E' (did you mean 'e'?)"),
    (["--start-values", "n", "1.5x"], "start value of 'n' (Integer): cannot use '1.5x'"),
    (["--output-variables", "hh"], "no variable 'hh' to record (did you mean 'h'?)"),
    (["--relative-tolerance", "0"], "--relative-tolerance must be a positive number"),
    (["--timeout", "-1"], "--timeout must be a positive number"),
    (["--start-time", "2", "--stop-time", "1"], "--stop-time (1) must be after --start-time (2)"),
    (["--output-interval", "nan"], "--output-interval must be a positive number"),
])
def test_bad_options_exit_2_with_the_reason(ball, capsys, options, words):
    assert main(["simulate", str(ball), *options]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_fmi_type_the_fmu_lacks_exits_2(baselines, capsys):
    assert main(["simulate", str(baselines["BouncingBall"]), "--fmi-type", "CoSimulation"]) == 2
    assert "the FMU has no CoSimulation interface" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["simulate", str(baselines["BouncingBall"]), "--fmi-type", "cosim"])
    assert exc.value.code == 2
    assert "'cosim' is not ModelExchange or CoSimulation" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# info, --version, the Python API from a plain script
# ---------------------------------------------------------------------------------------------

def test_info_is_fmpys_plus_our_modes(ball, baselines, capsys):
    from fmpy.util import fmu_info
    clutch = ROOT / "reference_models" / "ClutchBasic.mo"
    import mdae_fmu
    fmu = ball.with_name("ClutchBasic.fmu")
    # the guarded FMU numbers the modes by their guard bits: one guard, 0 = [not g], 1 = [g]
    mdae_fmu.export_fmu(mdae_fmu.load(clutch), fmu, progress=False)
    assert main(["info", str(fmu)]) == 0
    out = capsys.readouterr().out
    for line in fmu_info(str(fmu)).strip("\n").splitlines():
        assert line in out
    assert "Modes              2\n    0 = [not g]\n    1 = [g]" in out
    assert "g (Boolean)  clutch engaged" in out and "impulse(f1) (Real)" in out
    # another tool's FMU: FMPy's content only
    assert main(["info", str(baselines["BouncingBall"])]) == 0
    out = capsys.readouterr().out
    assert "Model Name         BouncingBall" in out and "Multimode" not in out
    assert main(["info", str(ROOT / "reference_models" / "Dahlquist.mo")]) == 2
    assert "info takes an .fmu" in capsys.readouterr().err


def test_version(capsys):
    from mdae_fmu import __version__
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"mdae-fmu {__version__}\n"


def test_api_from_a_plain_script(ball, tmp_path):
    """``mdae_fmu.simulate`` in a script without ``if __name__ == "__main__":``; the error
    types are importable from mdae_fmu."""
    script = tmp_path / "run.py"
    script.write_text(
        "import mdae_fmu\n"
        "from mdae_fmu import InputError, ModelRejected, SimulationFailed\n"
        f"r = mdae_fmu.simulate({str(ball)!r}, start_values={{'e': 0.5}}, stop_time=1.2)\n"
        "print(r.model_name, r.fmi_type, int(r.result['n'][-1]), len(r.events) > 0)\n"
        "try:\n"
        f"    mdae_fmu.simulate({str(ball)!r}, start_values={{'ee': 1}})\n"
        "except InputError as err:\n"
        "    print('InputError', err)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # e = 0.5: bounces at t1 = sqrt(2/g) = 0.4515, then after flights of 2 e^k v1 / g
    # (v1 = sqrt(2 g)): 0.9030, 1.1288, 1.2417: three before t = 1.2
    assert lines[0].split() == ["Ball", "ModelExchange", "3", "True"]
    assert lines[1].startswith("InputError ") and "did you mean 'e'?" in lines[1]


def test_plot_draws_events_and_impulses_as_impulses():
    """The demo plot (scripts/demo.sh): every subplot has a dotted line at each event (the
    clutch engages at 5 and releases at 7), and impulse(f1), the angular momentum j1 (w+ - w1-)
    transferred at engagement and held until the next mode change, is one stem at t = 5 of
    that height, not a plateau from 5 to 7 (it is 0 after the release: no stem at 7)."""
    import matplotlib.pyplot as plt
    from cosim_util import build_me

    import mdae_fmu
    from mdae_fmu.fmu_runner import event_spans
    from mdae_fmu.simulation import plot_figure
    run = mdae_fmu.simulate(build_me("ClutchBasic"), stop_time=10)
    r = run.result
    events = event_spans(r["time"])
    assert [te for te, _, _ in events] == [5.0, 7.0]
    _, first, last = events[0]
    assert r["time"][first - 1] < 5.0 < r["time"][last + 1]
    transferred = 1.0 * (r["w1"][last] - r["w1"][first])          # j1 = 1
    fig = plot_figure(r, "ClutchBasic")
    try:
        names = list(r.dtype.names[1:])
        axes = fig.axes
        for ax, name in zip(axes, names):
            dotted = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"]
            assert dotted == [5.0, 7.0], (name, dotted)
        ax = axes[names.index("impulse(f1)")]
        stems = [seg for coll in ax.collections for seg in coll.get_segments()]
        assert len(stems) == 1
        (x0, y0), (x1, y1) = stems[0]
        assert x0 == x1 == 5.0 and y0 == 0.0
        assert y1 == pytest.approx(transferred, rel=1e-9, abs=1e-12) and y1 > 0.3
        # no curve of the held value: the only solid line is the zero axis
        solid = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
        assert all(set(ln.get_ydata()) <= {0.0} for ln in solid)
        assert axes[-1].get_xlabel() == "time [s]"
    finally:
        plt.close(fig)
