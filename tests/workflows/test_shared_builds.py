"""The suite's FMUs built once per run (tests/fmu_files.py `shared_build`, docs/testing.md):
one build per key whatever the number of processes asking at once, a new build for a new key,
nothing left by a build that fails, and the variable the xdist workers inherit."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

import fmu_files
from fmu_files import SHARED_ENV, shared_build
from mdae_fmu import api


def _slow_build(log: Path, content: str):
    def build(path: Path) -> None:
        with open(log, "a") as fh:           # one line per build actually run
            fh.write(f"{os.getpid()}\n")
        time.sleep(0.3)                      # the others ask while this one builds
        path.write_text(content)
    return build


def _ask(shared: str, log: str, out: "multiprocessing.Queue") -> None:
    os.environ[SHARED_ENV] = shared
    path = shared_build(("race", 1), "model.fmu", _slow_build(Path(log), "one"))
    out.put((str(path), path.read_text()))


def test_concurrent_callers_build_once(tmp_path, monkeypatch):
    shared, log = tmp_path / "shared", tmp_path / "log"
    shared.mkdir()
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_ask, args=(str(shared), str(log), out)) for _ in range(4)]
    for p in procs:
        p.start()
    answers = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(log.read_text().splitlines()) == 1          # built once, by one process
    assert len(set(answers)) == 1 and answers[0][1] == "one"
    # a later caller in this process reads the same file; another key is another build
    monkeypatch.setenv(SHARED_ENV, str(shared))
    again = shared_build(("race", 1), "model.fmu", _slow_build(log, "other"))
    assert str(again) == answers[0][0] and again.read_text() == "one"
    other = shared_build(("race", 2), "model.fmu", _slow_build(log, "two"))
    assert other != again and other.read_text() == "two"
    assert len(log.read_text().splitlines()) == 2


def test_failed_build_leaves_nothing_and_is_retried(tmp_path, monkeypatch):
    monkeypatch.setenv(SHARED_ENV, str(tmp_path))
    calls = []

    def broken(path: Path) -> None:
        calls.append(path)
        path.write_text("half")
        raise RuntimeError("gcc failed")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="gcc failed"):
            shared_build(("bad",), "bad.fmu", broken)
    assert len(calls) == 2                                  # the error is not cached
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".lock"]   # no partial build


def test_export_text_copies_the_shared_fmu(tmp_path, monkeypatch):
    """Each test gets its own copy (a test may change its FMU); options that are not plain
    data (a callback) are never part of a key: such an export runs every time; the MDAE_*
    environment is part of the key."""
    monkeypatch.setenv(SHARED_ENV, str(tmp_path / "shared"))
    built = []
    monkeypatch.setattr(api, "export_fmu",
                        lambda model, path, **kw: (built.append(kw), Path(path).write_text(
                            model.name))[1])
    text = "model M\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend M;\n"
    for sub in "abcde":
        (tmp_path / sub).mkdir()
    a = fmu_files.export_text(tmp_path / "a", text, "M", fmi_type="both")
    b = fmu_files.export_text(tmp_path / "b", text, "M", fmi_type="both")
    assert a != b and a.read_text() == b.read_text() == "M" and len(built) == 1
    fmu_files.export_text(tmp_path / "c", text, "M", on_warning=print)
    fmu_files.export_text(tmp_path / "d", text, "M", on_warning=print)
    assert len(built) == 3
    # an MDAE_* variable that the export compiles in is part of the key
    monkeypatch.setenv("MDAE_FUNCTION_BUDGET", "5000")
    fmu_files.export_text(tmp_path / "e", text, "M", fmi_type="both")
    assert len(built) == 4


def test_baseline_fmu_builds_each_variant_once(tmp_path, monkeypatch):
    """`fmu_files.baseline_fmu`: one build per (name, fault macros, debug, suffix, sources),
    named as `build_baseline` names it (after the macros unless a suffix is given)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from benchmarks.baselines import build as baselines
    monkeypatch.setenv(SHARED_ENV, str(tmp_path / "shared"))
    built = []

    def fake(name, out_dir, defines=(), debug=False, suffix=None):
        built.append((name, tuple(defines), debug, suffix))
        fmu = Path(out_dir) / f"{name}{'_' + suffix if suffix else ''}.fmu"
        fmu.write_text(repr(built[-1]))
        return fmu
    monkeypatch.setattr(baselines, "build_baseline", fake)
    plain = fmu_files.baseline_fmu("ClutchBasic")
    assert fmu_files.baseline_fmu("ClutchBasic") == plain and plain.name == "ClutchBasic.fmu"
    bug = fmu_files.baseline_fmu("ClutchBasic", "BUG_RESTART_W2")
    assert bug.name == "ClutchBasic_BUG_RESTART_W2.fmu"
    named = fmu_files.baseline_fmu("ClutchBasic", "BUG_RESTART_W2", suffix="wrong_restart")
    assert named.name == "ClutchBasic_wrong_restart.fmu"
    debug = fmu_files.baseline_fmu("ClutchBasic", debug=True)
    assert debug != plain and debug.name == plain.name
    assert fmu_files.baseline_fmu("ClutchBasic", debug=True) == debug
    assert built == [("ClutchBasic", (), False, None),
                     ("ClutchBasic", ("BUG_RESTART_W2",), False, "BUG_RESTART_W2"),
                     ("ClutchBasic", ("BUG_RESTART_W2",), False, "wrong_restart"),
                     ("ClutchBasic", (), True, None)]
    assert debug.read_text() == repr(built[-1])
    # the sources are in the key: a shared directory named beforehand outlives the run
    import shutil
    copy = tmp_path / "baselines"
    shutil.copytree(baselines.HERE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(baselines, "HERE", copy)
    assert fmu_files.baseline_fmu("ClutchBasic") == plain and len(built) == 4
    (copy / "ClutchBasic" / "model.c").write_text("/* changed */\n")
    assert fmu_files.baseline_fmu("ClutchBasic") != plain and len(built) == 5


def test_the_controller_shares_one_directory_with_its_workers():
    """tests/conftest.py sets the variable before the workers start: every worker of this run
    names the same existing directory."""
    assert os.environ.get(SHARED_ENV) and Path(os.environ[SHARED_ENV]).is_dir()
