"""``mdae-fmu sweep`` on a real Dask LocalCluster (issue 18): the restart at engagement of
every run obeys conservation of angular momentum, w+ = (j1 w1- + j2 w2-)/(j1 + j2)
(docs/theory.md §13.1, RR-9334 (27)); a worker killed mid-sweep loses no
completed run; a killed client resumes with only the missing runs; bad specifications and
unknown parameters are refused before any run."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

from mdae_fmu.cli import main  # noqa: E402
from mdae_fmu.sweeps import make_cases, parse_param, sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MDAE = str(Path(sys.executable).with_name("mdae-fmu"))


@pytest.fixture(scope="module")
def clutch_fmu():
    from cosim_util import build_me
    return build_me("ClutchBasic")


def _assert_momentum_restart(res, n):
    """Every run ok, engaged at t1 = 5, and w1+ = w2+ = (j1 w1- + j2 w2-)/(j1 + j2)."""
    assert len(res) == n and not res.failed
    assert sorted(res.column("run").astype(int)) == list(range(n))
    j1, j2 = res.column("j1"), res.column("j2")
    w = (j1 * res.column("w1@e1-") + j2 * res.column("w2@e1-")) / (j1 + j2)
    assert np.all(res.column("t@e1") == 5.0) and np.all(res.column("events") == 2)
    assert np.max(np.abs(res.column("w1@e1+") - w)) <= 1e-8
    assert np.max(np.abs(res.column("w2@e1+") - w)) <= 1e-8
    # the pre-event speeds really depend on the inertias (damping k/j): not a constant table
    assert np.ptp(res.column("w1@e1-")) > 0.05


def _complete_lines(path):
    """The lines of a file being appended to, without a torn last one."""
    text = path.read_text()
    return text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------------------------------------
# Specifications
# ---------------------------------------------------------------------------------------------

def test_grid_list_and_random_specifications():
    assert parse_param("j1=0.5:2.0:4").values == pytest.approx((0.5, 1.0, 1.5, 2.0))
    assert parse_param("k1=0.1,0.2").values == (0.1, 0.2)
    cases = make_cases([parse_param("j1=1:2:2"), parse_param("k1=uniform(0,1)")], samples=3,
                       seed=7)
    assert len(cases) == 6 and [c["j1"] for c in cases] == [1, 1, 1, 2, 2, 2]
    again = make_cases([parse_param("j1=1:2:2"), parse_param("k1=uniform(0,1)")], samples=3,
                       seed=7)
    assert cases == again and len({c["k1"] for c in cases}) == 6
    assert all(0 <= c["k1"] < 1 for c in cases)
    normal = make_cases([parse_param("k2=normal(1,0.1)")], samples=2000, seed=1)
    ks = np.array([c["k2"] for c in normal])
    assert abs(ks.mean() - 1) < 0.01 and abs(ks.std() - 0.1) < 0.01


@pytest.mark.parametrize("spec, words", [
    ("j1=0.5:2.0", "expected NAME=START:STOP:COUNT"),
    ("j1", "expected NAME=START:STOP:COUNT"),
    ("j1=uniform(2,1)", "uniform(A,B) needs A < B"),
])
def test_bad_specification_is_refused(clutch_fmu, capsys, spec, words):
    assert main(["sweep", str(clutch_fmu), "--param", spec]) == 2
    assert words in capsys.readouterr().err


def test_unknown_parameter_is_refused_before_any_run(clutch_fmu, tmp_path, capsys):
    """A name the FMU does not have: exit 2 with the closest parameter, no output written."""
    out = tmp_path / "r.csv"
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:3", "--param", "jj2=1:2:3",
                 "-o", str(out), "--serial"]) == 2
    err = capsys.readouterr().err
    assert "no parameter 'jj2' (did you mean 'j2'?)" in err and "Traceback" not in err
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# On the cluster
# ---------------------------------------------------------------------------------------------

def test_sweep_restart_conserves_momentum_on_the_cluster(clutch_fmu, dask_client, tmp_path):
    """j1 x j2 grid (12 x 5) on the 2-worker cluster, streamed to parquet; the same table
    from the serial FMPy baseline."""
    import pyarrow.parquet as pq
    out = tmp_path / "r.parquet"
    res = sweep(clutch_fmu, ["j1=0.5:2.0:12", "j2=0.5:2.0:5"], output=out, client=dask_client)
    _assert_momentum_restart(res, 60)
    table = pq.read_table(str(out)).to_pylist()
    assert [r["run"] for r in table] == list(range(60))
    assert not (tmp_path / "r.parquet.partial.csv").exists()
    serial = sweep(clutch_fmu, ["j1=0.5:2.0:12", "j2=0.5:2.0:5"], serial=True)
    assert np.array_equal(serial.column("w1@e1+"), res.column("w1@e1+"))


def _worker_pids(client):
    return client.run(os.getpid)


def test_killed_worker_loses_no_completed_run(clutch_fmu, dask_client, tmp_path):
    """SIGKILL one worker once 30 runs are written: the rows written before stay as they were,
    Dask reruns the lost tasks elsewhere, and the sweep ends with every run once, all ok."""
    out = tmp_path / "r.csv"
    result = {}

    def run():
        result["res"] = sweep(clutch_fmu, ["j1=0.5:2.0:80", "j2=0.5:2.0:5"], output=out,
                              client=dask_client)
    th = threading.Thread(target=run)
    th.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or len(_rows(out)) < 30):
        time.sleep(0.05)
    pids = _worker_pids(dask_client)
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    before = _complete_lines(out)
    assert 31 <= len(before) < 401 and th.is_alive(), "the kill came after the sweep ended"
    th.join(timeout=300)
    assert not th.is_alive()
    _assert_momentum_restart(result["res"], 400)
    after = out.read_text().splitlines()
    assert after[:len(before)] == before
    runs = [r["run"] for r in _rows(out)]
    assert sorted(map(int, runs)) == list(range(400))
    dask_client.wait_for_workers(2, timeout=60)       # the nanny restarted it
    assert victim not in _worker_pids(dask_client).values()


def test_killed_client_resumes_only_the_missing_runs(clutch_fmu, dask_client, tmp_path):
    """Kill the ``mdae-fmu sweep`` process once some rows are written, rerun with --resume:
    the rows already there are kept byte for byte, only the others are computed."""
    out = tmp_path / "r.csv"
    cmd = [MDAE, "sweep", str(clutch_fmu), "--param", "j1=0.5:2.0:80", "--param",
           "j2=0.5:2.0:5", "-o", str(out), "--scheduler", dask_client.scheduler.address]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or len(_rows(out)) < 40):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    kept = _complete_lines(out)[1:]
    assert 40 <= len(kept) < 400, "the sweep finished before it was killed: nothing to resume"
    done = proc.returncode
    assert done == -signal.SIGKILL
    r = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (f"400 runs ({400 - len(kept)} computed now, {len(kept)} resumed), 0 failed"
            in r.stdout)
    lines = out.read_text().splitlines()
    assert lines[1:1 + len(kept)] == kept
    rows = _rows(out)
    assert sorted(int(x["run"]) for x in rows) == list(range(400))
    j1 = np.array([float(x["j1"]) for x in rows])
    j2 = np.array([float(x["j2"]) for x in rows])
    w = (j1 * np.array([float(x["w1@e1-"]) for x in rows]) +
         j2 * np.array([float(x["w2@e1-"]) for x in rows])) / (j1 + j2)
    assert np.max(np.abs(np.array([float(x["w1@e1+"]) for x in rows]) - w)) <= 1e-8


def test_resume_refuses_a_file_from_another_sweep(clutch_fmu, tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:2", "-o", str(out),
                 "--serial"]) == 0
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:3:2", "-o", str(out),
                 "--serial", "--resume"]) == 2
    assert "run 1 has j1 = 2.0, this sweep has 3.0" in capsys.readouterr().err


def test_failed_runs_are_kept_with_their_message(clutch_fmu, tmp_path):
    """j1 + j2 = 0 makes the restart at engagement singular: that run is a failed row with
    the FMU's message, the other one is computed."""
    res = sweep(clutch_fmu, {"j1": [-2.0, 1.0], "j2": [2.0]}, serial=True,
                output=tmp_path / "r.csv")
    assert [r["status"] for r in res.rows] == ["failed", "ok"]
    assert "t = 5: mode change [not g] -> [g]" in res.rows[0]["message"]
    assert "numerically singular (j1 + j2)" in res.rows[0]["message"]
    assert len(_rows(tmp_path / "r.csv")) == 2


def test_python_api_returns_plain_data(clutch_fmu):
    import mdae_fmu
    res = mdae_fmu.sweep(clutch_fmu, {"j1": [1.0, 2.0]}, serial=True)
    table = res.to_numpy()
    assert list(table["j1"]) == [1.0, 2.0] and list(table["status"]) == ["ok", "ok"]
    # j2 = 2 (default): w+ = (j1 w1- + 2 w2-)/(j1 + 2)
    w = (table["j1"] * table["w1@e1-"] + 2.0 * table["w2@e1-"]) / (table["j1"] + 2.0)
    assert np.max(np.abs(table["w1@e1+"] - w)) <= 1e-8


def test_missing_extras_give_a_clear_message(clutch_fmu, tmp_path, monkeypatch, capsys):
    """Without pyarrow a parquet output is refused with the CSV alternative (which works);
    without Dask the command says which extra to install."""
    from mdae_fmu import sweeps
    monkeypatch.setattr(sweeps, "_parquet_module", lambda: None)
    out = tmp_path / "r.parquet"
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:2", "-o", str(out),
                 "--serial"]) == 2
    err = capsys.readouterr().err
    assert "parquet output needs pyarrow" in err and f"--output {tmp_path / 'r.csv'}" in err
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:2", "--output",
                 str(tmp_path / "r.csv"), "--serial"]) == 0
    from mdae_fmu import dask_tasks
    monkeypatch.setattr(dask_tasks, "available", lambda: None)
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:2"]) == 2
    assert ("runs on Dask distributed, which is not installed: pip install "
            "'mdae_fmu[distributed]'") in capsys.readouterr().err


def test_command_on_its_own_local_cluster(clutch_fmu, tmp_path, capsys):
    """Without --scheduler the command starts (and stops) its own LocalCluster."""
    out = tmp_path / "r.csv"
    assert main(["sweep", str(clutch_fmu), "--param", "j1=0.5:2.0:6", "--param", "j2=1,2",
                 "--workers", "1", "-o", str(out)]) == 0
    assert "12 runs (12 computed now, 0 resumed), 0 failed" in capsys.readouterr().out
    rows = _rows(out)
    j1 = np.array([float(r["j1"]) for r in rows])
    j2 = np.array([float(r["j2"]) for r in rows])
    w = (j1 * np.array([float(r["w1@e1-"]) for r in rows])
         + j2 * np.array([float(r["w2@e1-"]) for r in rows])) / (j1 + j2)
    assert np.max(np.abs(np.array([float(r["w2@e1+"]) for r in rows]) - w)) <= 1e-8
