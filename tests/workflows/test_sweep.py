"""``mdae-fmu sweep`` on a real Dask LocalCluster (issue 18): the restart at engagement of
every run obeys conservation of angular momentum, w+ = (j1 w1- + j2 w2-)/(j1 + j2)
(docs/theory.md §13.1, RR-9334 (27)); a worker killed mid-sweep loses no
completed run; a killed client resumes with only the missing runs; bad specifications and
unknown parameters are refused before any run."""

from __future__ import annotations

import csv
import os
import re
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

ROOT = Path(__file__).resolve().parents[2]
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
    serial = sweep(clutch_fmu, ["j1=0.5:2.0:12", "j2=0.5:2.0:5"], executor="serial")
    assert np.array_equal(serial.column("w1@e1+"), res.column("w1@e1+"))


def _worker_pids(client):
    return client.run(os.getpid)


def test_killed_worker_loses_no_completed_run(clutch_fmu, dask_process_client, tmp_path):
    """On a cluster of worker processes (the suite's one, `dask_process_client`), SIGKILL one
    worker once 30 runs are written: the rows written before stay as they were,
    Dask reruns the lost tasks elsewhere, and the sweep ends with every run once, all ok."""
    out = tmp_path / "r.csv"
    result = {}

    def run():
        result["res"] = sweep(clutch_fmu, ["j1=0.5:2.0:80", "j2=0.5:2.0:5"], output=out,
                              client=dask_process_client)
    th = threading.Thread(target=run)
    th.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or len(_rows(out)) < 30):
        time.sleep(0.05)
    pids = _worker_pids(dask_process_client)
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
    dask_process_client.wait_for_workers(2, timeout=60)       # the nanny restarted it
    assert victim not in _worker_pids(dask_process_client).values()


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
    res = sweep(clutch_fmu, {"j1": [-2.0, 1.0], "j2": [2.0]}, executor="serial",
                output=tmp_path / "r.csv")
    assert [r["status"] for r in res.rows] == ["failed", "ok"]
    # the guarded FMU (the default) names the mode change, the block and its singular factor
    assert "t = 5: mode change [not g] -> [g]: the restart of block" in res.rows[0]["message"]
    assert "numerically singular (j1 + j2)" in res.rows[0]["message"]
    assert len(_rows(tmp_path / "r.csv")) == 2


def test_python_api_returns_plain_data(clutch_fmu):
    import mdae_fmu
    res = mdae_fmu.sweep(clutch_fmu, {"j1": [1.0, 2.0]}, executor="serial")
    table = res.to_numpy()
    assert list(table["j1"]) == [1.0, 2.0] and list(table["status"]) == ["ok", "ok"]
    # j2 = 2 (default): w+ = (j1 w1- + 2 w2-)/(j1 + 2)
    w = (table["j1"] * table["w1@e1-"] + 2.0 * table["w2@e1-"]) / (table["j1"] + 2.0)
    assert np.max(np.abs(table["w1@e1+"] - w)) <= 1e-8


def test_missing_extras_give_a_clear_message(clutch_fmu, tmp_path, monkeypatch, capsys):
    """Without pyarrow a parquet output is refused with the CSV alternative (which works);
    without Dask the runs go here, and --dask says which extra to install."""
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
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:2"]) == 0
    assert "2 runs in this process" in capsys.readouterr().out
    assert main(["sweep", str(clutch_fmu), "--param", "j1=1:2:2", "--dask"]) == 2
    assert ("runs on Dask distributed, which is not installed: pip install "
            "'mdae_fmu[distributed]'") in capsys.readouterr().err


def test_command_on_its_own_local_cluster(clutch_fmu, tmp_path, capsys):
    """With --dask and without --scheduler the command starts (and stops) its own
    LocalCluster, of thread workers."""
    out = tmp_path / "r.csv"
    assert main(["sweep", str(clutch_fmu), "--param", "j1=0.5:2.0:6", "--param", "j2=1,2",
                 "--workers", "1", "-o", str(out), "--dask"]) == 0
    printed = capsys.readouterr().out
    assert "12 runs (12 computed now, 0 resumed), 0 failed" in printed
    assert "  12 runs on Dask" in printed
    rows = _rows(out)
    j1 = np.array([float(r["j1"]) for r in rows])
    j2 = np.array([float(r["j2"]) for r in rows])
    w = (j1 * np.array([float(r["w1@e1-"]) for r in rows])
         + j2 * np.array([float(r["w2@e1-"]) for r in rows])) / (j1 + j2)
    assert np.max(np.abs(np.array([float(r["w2@e1+"]) for r in rows]) - w)) <= 1e-8


# ---------------------------------------------------------------------------------------------
# Where the runs go (issue 28 Deliver 2): here while the work is small, Dask when it pays
# ---------------------------------------------------------------------------------------------

def test_batch_rule_switches_to_dask_on_projected_work():
    """run_batch runs tasks here and projects the median time of those done (the first left
    out) times the tasks left; above the threshold the rest goes to the Dask runner."""
    from mdae_fmu.batch import run_batch
    seconds = {0: 0.2, 1: 0.02, 2: 0.02, 3: 0.02}
    here, there, done = [], [], []

    def run_here(k):
        time.sleep(seconds.get(k, 0.02))
        here.append(k)
        return k * k

    def run_there(rest):
        there.extend(rest)
        return ((k, k * k) for k in reversed(rest))
    ex = run_batch(list(range(10)), run_here, run_there, lambda k, r: done.append((k, r)),
                   threshold=0.1)
    assert here == [0, 1] and there == list(range(2, 10))      # 0.02 s x 8 left > 0.1 s
    assert sorted(done) == [(k, k * k) for k in range(10)]
    assert ex.executor == "serial+dask" and ex.here == 2 and ex.on_dask == 8
    assert "2 runs in this process, then 8 on Dask" in ex.describe()
    here.clear()
    ex = run_batch(list(range(10)), run_here, run_there, lambda k, r: None, threshold=5.0)
    assert here == list(range(10)) and ex.executor == "serial"     # 0.02 s x 8 < 5 s
    assert "10 runs in this process (about 0.2 s of work" in ex.describe()
    here.clear()
    ex = run_batch(list(range(10)), run_here, None, lambda k, r: None, threshold=0.0)
    assert here == list(range(10)) and ex.executor == "serial"     # no Dask: all here


def test_small_sweep_runs_here_and_says_so(clutch_fmu, capsys):
    """15 runs of about 50 ms: in this process, and the command says so (a 15-run sweep took
    8.6 s on Dask against 1.3 s serially)."""
    assert main(["sweep", str(clutch_fmu), "--param", "j1=0.5:2.0:15"]) == 0
    out = capsys.readouterr().out
    assert "15 runs (15 computed now, 0 resumed), 0 failed" in out
    assert "  15 runs in this process (about " in out and "Dask pays above 10 s)" in out


def test_auto_sweep_goes_to_the_embedded_cluster_and_agrees(clutch_fmu):
    """With the threshold at 0 the runs after the first two go to the embedded cluster (thread
    workers): the same rows as the serial sweep, bit for bit."""
    specs = ["j1=0.5:2.0:6", "j2=1,2"]
    res = _sweep_with_threshold(clutch_fmu, specs, 0.0)
    assert res.executed.executor == "serial+dask" and res.executed.here == 2
    _assert_momentum_restart(res, 12)
    serial = sweep(clutch_fmu, specs, executor="serial")
    for col in ("w1@e1+", "w2@e1-", "w1", "t@e1"):
        assert np.array_equal(serial.column(col), res.column(col)), col


def _sweep_with_threshold(fmu, specs, threshold):
    """`sweep` with `batch.run_batch`'s threshold set to ``threshold``."""
    from unittest import mock

    from mdae_fmu import batch, sweeps
    original = batch.run_batch

    def patched(*args, **kwargs):
        return original(*args, **{**kwargs, "threshold": threshold})
    with mock.patch.object(sweeps, "run_batch", patched):
        return sweep(fmu, specs, n_workers=2)


@pytest.fixture(scope="module")
def counter_fmu(tmp_path_factory):
    import step_fmus
    return step_fmus.build_counter(tmp_path_factory.mktemp("counter"), "good")


@pytest.mark.parametrize("executor", ["serial", "dask"])
def test_run_that_never_ends_is_stopped_and_the_others_kept(counter_fmu, executor):
    """period = 1e-9 gives an event every nanosecond: that run never ends; the timeout
    stops it and it is a failed row with the reason, while the other runs finish with their
    exact counts n(3) = floor(3/period), here and on the embedded cluster alike."""
    t0 = time.monotonic()
    res = sweep(counter_fmu, {"period": [1.0, 1e-9, 0.5]}, stop_time=3.0, timeout=3.0,
                output_variables=["n"], executor=executor, n_workers=2)
    assert time.monotonic() - t0 < 120
    assert [r["status"] for r in res.rows] == ["ok", "failed", "ok"]
    assert "no result within the timeout of 3 s: the simulation was stopped" in \
        res.rows[1]["message"]
    assert [res.rows[0]["n"], res.rows[2]["n"]] == [3.0, 6.0]
    assert res.rows[1]["wall_time"] >= 3.0


def test_progress_bar_counts_runs_with_time_left():
    """On a terminal the bar redraws one line: runs done of all, failed, seconds and the
    time left; not on a terminal, one line every few seconds and the last one."""
    import io

    from mdae_fmu.batch import ProgressBar

    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty = Tty()
    bar = ProgressBar("sweep", 4, "runs", enabled=True, stream=tty)
    bar.advance()
    time.sleep(0.15)
    bar.advance(failed=True)
    assert "\r\x1b[Ksweep  2/4 runs, 1 failed, " in tty.getvalue()
    assert "s left" in tty.getvalue().split("\r")[-1]
    for _ in range(2):
        bar.advance()
    bar.close()
    last = tty.getvalue().split("\r\x1b[K")[-1]
    assert last.startswith("sweep  4/4 runs, 1 failed, ") and last.endswith(" s\n")
    plain = io.StringIO()
    bar = ProgressBar("regress", 3, "models", enabled=True, stream=plain)
    for _ in range(3):
        bar.advance()
    assert plain.getvalue().splitlines()[-1].startswith("regress  3/3 models, ")
    silent = io.StringIO()
    bar = ProgressBar("sweep", 3, enabled=False, stream=silent)
    bar.advance()
    assert silent.getvalue() == ""


def test_dask_run_prints_nothing_of_dask(clutch_fmu, tmp_path):
    """`mdae-fmu sweep --dask` on its own cluster: stderr holds nothing (no Dask warnings at
    shutdown), stdout our lines only."""
    r = subprocess.run([MDAE, "sweep", str(clutch_fmu), "--param", "j1=0.5:2.0:8", "--dask",
                        "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "  8 runs on Dask" in r.stdout and "distributed" not in r.stdout


README_SWEEP = re.compile(r"```python\n((?:(?!```).)*mdae_fmu\.sweep\((?:(?!```).)*)```", re.S)


@pytest.mark.requires_sundials      # the README compares on the FMU's Co-Simulation side
def test_readme_sweep_example_runs_as_a_plain_script(clutch_fmu, tmp_path):
    """The README's code block with ``mdae_fmu.sweep(...)`` saved as a script, run with no
    ``if __name__ == "__main__":``: it ends with exit 0 and prints no Dask message (it gave
    490 lines of "Nanny failed to start"). Its sweep is large enough to go to Dask."""
    import shutil
    block = README_SWEEP.search((ROOT / "README.md").read_text())
    assert block, "no README code block calls mdae_fmu.sweep"
    shutil.copy(clutch_fmu, tmp_path / "ClutchBasic.fmu")
    (tmp_path / "reference_models").symlink_to(ROOT / "reference_models")
    script = tmp_path / "example.py"
    script.write_text("import mdae_fmu\n" + block.group(1)
                      + "\nprint('executor', r.executed.executor, len(r), len(r.failed))\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Nanny" not in p.stderr and "Traceback" not in p.stderr
    assert p.stderr == ""
    last = p.stdout.splitlines()[-1].split()
    assert last[0] == "executor" and last[2:] == ["1000", "0"]
