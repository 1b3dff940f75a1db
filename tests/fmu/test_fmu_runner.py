"""Running FMUs in a child process (mdae_fmu/fmu_runner.py, issue 25): FMUs whose binary
segfaults, aborts, calls exit(0) or loops for ever (built here from a small C file) give exit 1
with a message naming the FMU, never exit 0, each in well under 30 s; SIGTERM and SIGINT during
a hanging simulation kill the child and leave no temporary folder (exit 143 / 130); a parent
killed outright takes its child with it; the user's process survives every case."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import hostile_fmus as H
from mdae_fmu import SimulationFailed
from mdae_fmu.cli import main
from mdae_fmu.fmu_runner import run_fmu

MDAE = str(Path(sys.executable).with_name("mdae-fmu"))

VERDICTS = {
    "segfault": "the FMU crashed the simulation process (SIGSEGV, signal 11)",
    "abort": "the FMU crashed the simulation process (SIGABRT, signal 6)",
    "exit0": "the FMU ended the simulation process with exit status 0",
    "loop": "no result within the timeout of 3 s: the simulation was stopped",
}


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    return {b: H.build_fmu(d, b) for b in H.BEHAVIOURS}


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _running_fmu(parent: int, library: str, deadline: float = 90) -> int:
    """The pid of ``parent``'s child once it has loaded ``library`` (the FMU runs)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for pid in _children(parent):
            try:
                if library in Path(f"/proc/{pid}/maps").read_text():
                    return pid
            except OSError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"no child of {parent} loaded {library} within {deadline} s")


def test_well_behaved_fmu_gives_the_closed_form(fmus):
    r = run_fmu(fmus["decay"], output_interval=0.1)
    assert r.result["time"][-1] == 1.0 and r.events == ()
    assert np.max(np.abs(r.result["x"] - np.exp(-r.result["time"]))) < 1e-5
    assert r.wall_seconds >= r.seconds > 0


@pytest.mark.parametrize("behaviour", list(VERDICTS))
def test_hostile_binary_exits_1_naming_the_fmu(fmus, tmp_path, behaviour):
    """The command a user runs: exit 1, one message naming the FMU and what happened, never
    exit 0 and never a traceback, in under 30 s; the temporary folder is emptied."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fmu = fmus[behaviour]
    t0 = time.monotonic()
    r = subprocess.run([MDAE, "simulate", str(fmu), "--timeout", "3"], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "TMPDIR": str(tmp)})
    assert time.monotonic() - t0 < 30
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith(f"{fmu}: simulation failed: {VERDICTS[behaviour]}"), r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert os.listdir(tmp) == []


def test_this_process_survives_and_runs_the_next_fmu(fmus, capsys):
    """In-process API and CLI: a segfault is an exception here (pytest lives on), and the
    next run gets a new child."""
    with pytest.raises(SimulationFailed) as exc:
        run_fmu(fmus["segfault"])
    assert exc.value.fmu == str(fmus["segfault"]) and "SIGSEGV" in exc.value.reason
    assert main(["simulate", str(fmus["exit0"])]) == 1
    assert "exit status 0" in capsys.readouterr().err
    r = run_fmu(fmus["decay"], stop_time=2.0, output_interval=0.5)
    assert r.result["x"][-1] == pytest.approx(np.exp(-2.0), rel=1e-5)


def test_a_binary_that_does_not_load_leaves_the_child_usable(fmus, tmp_path):
    """FMPy changes to the binaries folder to load a library and stays there when loading
    fails; that folder is removed after the run, and the same child used to fail every later
    run with "[Errno 2] No such file or directory" (found by benchmarks/fuzz_export.py
    --surface fmu). The failure names the library; the next runs give the closed form."""
    broken = tmp_path / "broken.fmu"
    with zipfile.ZipFile(fmus["decay"]) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, b"not an ELF file" if item.filename.endswith(".so")
                         else src.read(item))
    for _ in range(2):
        with pytest.raises(SimulationFailed) as exc:
            run_fmu(broken)
        assert "Failed to load shared library" in exc.value.reason
        r = run_fmu(fmus["decay"], stop_time=1.0, output_interval=0.5)
        assert r.result["x"][-1] == pytest.approx(np.exp(-1.0), rel=1e-5)


def test_compare_and_sweep_report_the_hostile_fmu(fmus, tmp_path, capsys):
    reference = tmp_path / "ref.csv"            # x = exp(-t), the closed form
    t = np.linspace(0.0, 1.0, 1001)
    reference.write_text("time,x\n" + "".join(f"{a:.17g},{np.exp(-a):.17g}\n" for a in t))
    assert main(["compare", str(fmus["segfault"]), str(reference)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{fmus['segfault']}: simulation failed: the FMU crashed")
    assert main(["compare", str(fmus["decay"]), str(reference)]) == 0   # and the next one runs
    capsys.readouterr()
    assert main(["sweep", str(fmus["exit0"]), "--serial", "--timeout", "20"]) == 1
    out = capsys.readouterr().out
    assert "1 runs (1 computed now, 0 resumed), 1 failed" in out
    assert "run 0: the FMU ended the simulation process with exit status 0" in out


@pytest.mark.parametrize("signum, code, word", [(signal.SIGTERM, 143, "terminated"),
                                               (signal.SIGINT, 130, "interrupted")])
def test_signal_during_a_hang_kills_the_child_and_cleans_up(fmus, tmp_path, signum, code,
                                                            word):
    """``simulate`` of an FMU that loops in native code, no timeout: SIGTERM (SIGINT) to the
    command once the FMU runs ends it with 143 (130), its child is gone and TMPDIR is empty."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([MDAE, "simulate", str(fmus["loop"])], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        child = _running_fmu(proc.pid, "Hostile_loop.so")
        assert os.listdir(tmp) != []                  # the FMU's folder, while it runs
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 10
    assert proc.returncode == code and f"mdae-fmu: {word}" in err, (proc.returncode, err)
    assert not _alive(child)
    assert os.listdir(tmp) == []


def test_a_killed_parent_takes_its_child_along(fmus, tmp_path):
    """SIGKILL cannot be handled: the child still dies with its parent (PR_SET_PDEATHSIG), so
    no FMU keeps looping unseen."""
    proc = subprocess.Popen([MDAE, "simulate", str(fmus["loop"])], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        child = _running_fmu(proc.pid, "Hostile_loop.so")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        end = time.monotonic() + 10
        while _alive(child) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        proc.kill()
