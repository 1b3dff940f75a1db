"""``mdae-fmu export --from-json``: an FMU built from the analysis ``mdae-fmu analyze --json``
saved is the FMU a direct export builds, byte for byte, and no analysis runs on that path
(mdae_fmu.saved; docs/decisions.md "Saved analyses"). Bad saved analyses are input errors."""

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.diagnostics import EXIT_INPUT, EXIT_REJECTED, InputError
from mdae_fmu.saved import digest as _digest

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "reference_models"


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mdae_fmu.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _entries(fmu: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(fmu) as z:
        return {n: z.read(n) for n in z.namelist()}


def _saved_json(model: Path, tmp_path: Path) -> Path:
    r = _cli("analyze", "--json", str(model), cwd=tmp_path)
    out = tmp_path / f"{model.stem}.json"
    out.write_text(r.stdout)
    return out


# single mode with restarts; multimode with impulsive restarts; guards compiled on the
# previous instant's values (Analysis.code_model); user functions (a function with a
# derivative annotation, differentiated by the index reduction): tests/importers/test_functions.py
@pytest.mark.parametrize("name", ["BouncingBall", "CupAndBallElastic", "AirBrakeOriginal",
                                  "functions"])
def test_export_from_saved_analysis_is_the_direct_export(name, tmp_path):
    if name == "functions":
        sys.path.insert(0, str(ROOT / "tests" / "importers"))
        from test_functions import PENDULUM
        model = tmp_path / "P.mo"
        model.write_text(PENDULUM)
    else:
        model = REF / f"{name}.mo"
    saved = _saved_json(model, tmp_path)
    doc = json.loads(saved.read_text())
    if name == "AirBrakeOriginal":
        assert api.load_analysis(saved)[1].code_model is not None
    assert doc["saved_analysis"]["format"] == "mdae_fmu.saved-analysis/3"
    # each export in a fresh process: nothing is shared but the file
    r1 = _cli("export", str(model), "-o", "direct.fmu", "--fmi-type", "both", cwd=tmp_path)
    r2 = _cli("export", "--from-json", str(saved), "-o", "saved.fmu", "--fmi-type", "both",
              cwd=tmp_path)
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    direct, again = _entries(tmp_path / "direct.fmu"), _entries(tmp_path / "saved.fmu")
    assert sorted(direct) == sorted(again)
    assert direct["modelDescription.xml"] == again["modelDescription.xml"]
    for n in direct:
        if n.startswith("sources/"):
            assert direct[n] == again[n], n
    assert (tmp_path / "direct.fmu").read_bytes() == (tmp_path / "saved.fmu").read_bytes()


def test_export_fmu_with_a_loaded_analysis_runs_no_analysis(tmp_path, monkeypatch):
    """api.export_fmu(analysis=...) consumes the analysis: every analysis entry point is
    made to fail, and the export still builds the same FMU as from the model."""
    model = REF / "ClutchBasic.mo"
    saved = _saved_json(model, tmp_path)
    m, a = api.load_analysis(saved)
    assert a.accepted and a.guarded is not None and a.modes is None     # the one analysis

    def boom(*args, **kwargs):
        raise AssertionError("an analysis ran during export")

    import mdae_fmu.analysis
    import mdae_fmu.modes
    import mdae_fmu.modes.explore
    import mdae_fmu.structure.per_mode
    # (`mdae_fmu.analysis` imports `analyze_multimode` from `mdae_fmu.modes` when it runs it)
    for mod, fn in ((mdae_fmu.analysis, "analyze_modes"), (mdae_fmu.modes, "analyze_multimode"),
                    (mdae_fmu.analysis, "analyze"), (mdae_fmu.analysis, "guarded_analysis"),
                    (mdae_fmu.structure.per_mode, "analyze_modes"),
                    (mdae_fmu.modes.explore, "analyze_multimode")):
        monkeypatch.setattr(mod, fn, boom)
    out = api.export_fmu(m, tmp_path / "from_saved.fmu", analysis=a, progress=False)
    monkeypatch.undo()
    direct = api.export_fmu(api.load(model), tmp_path / "direct.fmu", progress=False)
    assert Path(out).read_bytes() == Path(direct).read_bytes()


def test_saved_analysis_of_a_rejected_model_gives_the_same_verdict(tmp_path):
    model = REF / "CupAndBallElasticNoLaw.mo"
    saved = _saved_json(model, tmp_path)
    r1 = _cli("export", str(model), "-o", "a.fmu", cwd=tmp_path)
    r2 = _cli("export", "--from-json", str(saved), "-o", "b.fmu", cwd=tmp_path)
    assert r1.returncode == r2.returncode == EXIT_REJECTED
    assert r1.stderr == r2.stderr and "rejected" in r2.stderr
    assert not (tmp_path / "b.fmu").exists()


def _first_with(j, key: str) -> dict:
    """The first JSON object (depth first) that has ``key``."""
    stack = [j]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if key in v:
                return v
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    raise KeyError(key)


def _altered(doc: dict, how: str) -> dict:
    doc = json.loads(json.dumps(doc))
    sa = doc["saved_analysis"]
    first = sa["payload"]["model"]
    if how == "version":
        sa["version"] = "0.0.0"
    elif how == "edited":
        first["f"]["name"] = "Other"
    elif how == "foreign class":               # digest recomputed: only the reader refuses it
        first["$o"] = "os:system"
        sa["sha256"] = _digest(sa["payload"])
    elif how == "sympy text":                   # the format of version 1 was srepr text
        _first_with(sa["payload"], "$sp")["$sp"] = "Symbol('x').__class__.__init__(1)"
        sa["sha256"] = _digest(sa["payload"])
    elif how == "missing":
        del doc["saved_analysis"]
    elif how == "format":
        sa["format"] = "something/1"
    return doc


@pytest.fixture(scope="module")
def ball_saved(tmp_path_factory) -> str:
    """``mdae-fmu analyze --json`` of BouncingBall, run once for the tests that alter it."""
    return _saved_json(REF / "BouncingBall.mo", tmp_path_factory.mktemp("ball")).read_text()


@pytest.mark.parametrize("how,message", [
    ("version", "saved by mdae-fmu 0.0.0"),
    ("edited", "altered or truncated"),
    ("foreign class", "payload.model: unknown class 'os:system'"),
    ("sympy text", "expected a sympy node ([head, ...] or an integer), found the string"),
    ("missing", "no \"saved_analysis\""),
    ("format", "not a saved analysis"),
])
def test_bad_saved_analysis_is_an_input_error(how, message, tmp_path, ball_saved):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_altered(json.loads(ball_saved), how)))
    with pytest.raises(InputError, match=re.escape(message)):
        api.load_analysis(bad)
    r = _cli("export", "--from-json", str(bad), "-o", "x.fmu", cwd=tmp_path)
    assert r.returncode == EXIT_INPUT
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.fmu").exists()


def test_missing_truncated_and_ambiguous_inputs(tmp_path, ball_saved):
    r = _cli("export", "--from-json", "nowhere.json", cwd=tmp_path)
    assert r.returncode == EXIT_INPUT and "nowhere.json" in r.stderr
    saved = tmp_path / "BouncingBall.json"
    saved.write_text(ball_saved)
    cut = tmp_path / "cut.json"
    cut.write_text(saved.read_text()[:3000])
    r = _cli("export", "--from-json", str(cut), cwd=tmp_path)
    assert r.returncode == EXIT_INPUT and "cut.json: not JSON" in r.stderr
    r = _cli("export", str(REF / "BouncingBall.mo"), "--from-json", str(saved), cwd=tmp_path)
    assert r.returncode == EXIT_INPUT and "not both" in r.stderr
    r = _cli("export", cwd=tmp_path)
    assert r.returncode == EXIT_INPUT and "--from-json" in r.stderr
    assert "Traceback" not in r.stderr


def test_unit_warnings_are_saved_and_read_back(tmp_path):
    """`Analysis.units` (W-UNIT warnings, on main since issue 28) is part of the format: read
    back equal, location included."""
    from mdae_fmu.analysis import analyze
    from mdae_fmu.saved import load_file, save
    src = tmp_path / "U.mo"
    src.write_text('class U\n  Real x(start = 1, fixed = true, unit = "m");\n'
                   '  Real v(unit = "s");\nequation\n  der(x) = v;\n  v = -x;\nend U;\n')
    model = api.load(src)
    a = analyze(model)
    assert len(a.units) == 2 and a.units[0].loc.line == 5
    saved = tmp_path / "U.json"
    saved.write_text(json.dumps({"saved_analysis": save(model, a)}))
    _, back = load_file(saved)
    assert back.units == a.units
