"""Per-test CPU time of a test run, for finding where the suite's time goes (issue 27,
docs/testing.md "Where the time goes"). A pytest plugin, loaded by name with the tests folder
on the path; each process (the controller, every xdist worker) appends one JSON line per test
to ``<MDAE_TEST_CPU_LOG>/<worker>.jsonl``:

    MDAE_TEST_CPU_LOG=/tmp/cpu PYTHONPATH=tests bash scripts/test.sh -p cpu_log
    .venv/bin/python tests/cpu_log.py /tmp/cpu          # the per-file table, longest first

A test's CPU is the user + system time (`os.times`) its process spent from the start of its
setup to the end of its teardown, and that of the children the process waited for in that
time (gcc, CLI runs, C hosts): CPU, not wall time, so that a run on a loaded machine measures
what an idle one would spend. A session fixture is counted in the first test that uses it;
processes nobody waits for (a Dask cluster's workers until it closes) are not counted."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

LOG_ENV = "MDAE_TEST_CPU_LOG"


def _cpu() -> tuple[float, float]:
    """(this process, its waited children): user + system seconds so far."""
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


class _Log:
    """The open log file of this process (one per xdist worker)."""

    def __init__(self) -> None:
        self.file = None

    def write(self, record: dict) -> None:
        if self.file is not None:
            self.file.write(json.dumps(record) + "\n")


_LOG = _Log()


def pytest_configure(config: pytest.Config) -> None:
    folder = os.environ.get(LOG_ENV, "")
    if not folder:
        raise pytest.UsageError(f"-p cpu_log needs {LOG_ENV}: the folder of the CPU log")
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    Path(folder).mkdir(parents=True, exist_ok=True)
    _LOG.file = open(Path(folder) / f"{worker}.jsonl", "a", buffering=1)


def pytest_collection_finish(session: pytest.Session) -> None:
    own, children = _cpu()
    _LOG.write({"event": "collected", "self": own, "children": children})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    own0, children0 = _cpu()
    yield
    own1, children1 = _cpu()
    _LOG.write({"nodeid": item.nodeid, "self": own1 - own0, "children": children1 - children0})


def pytest_unconfigure(config: pytest.Config) -> None:
    if _LOG.file is not None:
        _LOG.file.close()
        _LOG.file = None


@dataclass(frozen=True)
class FileCpu:
    """The CPU seconds of a test file's tests: in their process and in its children."""
    path: str
    tests: int
    own: float
    children: float

    @property
    def total(self) -> float:
        return self.own + self.children


def per_file(records: Iterable[dict]) -> list[FileCpu]:
    """The test records of a log summed per test file, the most CPU first."""
    sums: dict[str, list[float]] = {}
    for r in records:
        if "nodeid" in r:
            s = sums.setdefault(r["nodeid"].split("::")[0], [0, 0.0, 0.0])
            s[0] += 1
            s[1] += r["self"]
            s[2] += r["children"]
    rows = [FileCpu(path=p, tests=int(s[0]), own=s[1], children=s[2]) for p, s in sums.items()]
    return sorted(rows, key=lambda f: (-f.total, f.path))


def read_log(folder: Path) -> list[dict]:
    """Every record of the log files in ``folder``."""
    return [json.loads(line) for f in sorted(folder.glob("*.jsonl"))
            for line in f.read_text().splitlines() if line]


def table(rows: list[FileCpu]) -> str:
    """``rows`` as a Markdown table, with the total."""
    lines = ["| file | tests | CPU s | of which children |", "|---|---:|---:|---:|"]
    lines += [f"| {r.path} | {r.tests} | {r.total:.1f} | {r.children:.1f} |" for r in rows]
    lines.append(f"| total | {sum(r.tests for r in rows)} | {sum(r.total for r in rows):.1f} "
                 f"| {sum(r.children for r in rows):.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(per_file(read_log(Path(sys.argv[1])))))
