"""tests/cpu_log.py, the per-test CPU log of docs/testing.md: a test that burns CPU in its own
process and one that waits for a child burning CPU are each charged their time, an idle test
next to nothing, and the table sums them per file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cpu_log import FileCpu, per_file, read_log, table

TESTS = Path(__file__).resolve().parents[1]

BURN = """
import subprocess, sys, time

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_own():
    spin(0.4)

def test_child():
    subprocess.run([sys.executable, "-c",
                    "import time\\nend = time.process_time() + 0.4\\n"
                    "while time.process_time() < end: pass"], check=True)

def test_idle():
    time.sleep(0.2)
"""


def test_each_test_is_charged_its_own_and_its_childrens_cpu(tmp_path):
    (tmp_path / "test_burn.py").write_text(BURN)
    log = tmp_path / "log"
    env = dict(os.environ, MDAE_TEST_CPU_LOG=str(log), PYTHONPATH=str(TESTS))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cpu_log", "-p",
                        "no:cacheprovider", "-n", "0", "test_burn.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_log(log)
    by = {rec["nodeid"].split("::")[1]: rec for rec in records if "nodeid" in rec}
    assert sorted(by) == ["test_child", "test_idle", "test_own"]
    assert by["test_own"]["self"] >= 0.39 and by["test_own"]["children"] < 0.05
    assert by["test_child"]["children"] >= 0.39
    assert by["test_idle"]["self"] + by["test_idle"]["children"] < 0.2
    (row,) = per_file(records)
    assert (row.path, row.tests) == ("test_burn.py", 3)
    assert row.total == sum(rec["self"] + rec["children"] for rec in by.values())


def test_table_lists_the_longest_file_first_with_the_total():
    records = [{"nodeid": "a.py::t1", "self": 1.0, "children": 0.5},
               {"event": "collected", "self": 9.0, "children": 0.0},
               {"nodeid": "b.py::t", "self": 3.0, "children": 0.0},
               {"nodeid": "a.py::t2", "self": 0.25, "children": 0.0}]
    rows = per_file(records)
    assert rows == [FileCpu(path="b.py", tests=1, own=3.0, children=0.0),
                    FileCpu(path="a.py", tests=2, own=1.25, children=0.5)]
    assert table(rows).splitlines()[2:] == ["| b.py | 1 | 3.0 | 0.0 |", "| a.py | 2 | 1.8 | 0.5 |",
                                           "| total | 3 | 4.8 | 0.5 |"]


def test_without_its_folder_the_plugin_refuses_to_start(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "MDAE_TEST_CPU_LOG"}
    env["PYTHONPATH"] = str(TESTS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cpu_log", "-p",
                        "no:cacheprovider", "test_one.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "-p cpu_log needs MDAE_TEST_CPU_LOG" in r.stderr
