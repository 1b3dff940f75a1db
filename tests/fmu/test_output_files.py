"""Output files are written whole or not at all, and output problems are reported as such
(issue 15, item 4; mdae_fmu/output.py).

* two concurrent ``mdae-fmu export`` runs of different models to one path leave a complete FMU
  equal to one of the two, and both say so truthfully (exit 0);
* a destination that is a directory, a read-only directory or the input file itself is refused
  with exit 2 and a message naming the output file and the reason, before the analysis (the
  input used here is rejected by the analysis, exit 1, so an exit 2 proves the order);
* SIGINT and SIGTERM during an export leave no temporary file, neither next to the output nor
  in the temporary directory of the build;
* the same for ``simulate --output-file/--plot`` and ``analyze --dot``.
"""

from __future__ import annotations

import filecmp
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from mdae_fmu.cli import main
from mdae_fmu.fmu.build_cache import CACHE_ENV

EXE = [sys.executable, "-m", "mdae_fmu.cli"]

DECAY = """class Decay
  parameter Real k = 2.0;
  Real x(start = 1.0, fixed = true);
equation
  der(x) = -k * x;
end Decay;
"""

GROWTH = """class Growth
  parameter Real a = 0.5;
  Real y(start = 2.0, fixed = true);
  output Real z;
equation
  der(y) = a * y;
  z = 2 * y;
end Growth;
"""

# structurally singular (x is defined twice, y never): the analysis rejects it with exit 1
REJECTED = """class Rejected
  Real x;
  Real y;
equation
  x = 1;
  x = 2;
end Rejected;
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture(scope="module")
def two_fmus(tmp_path_factory):
    """The two models and their FMUs exported alone (the reference contents)."""
    d = tmp_path_factory.mktemp("ref")
    models = [_write(d, "Decay.mo", DECAY), _write(d, "Growth.mo", GROWTH)]
    refs = []
    for m in models:
        out = d / f"{m.stem}.fmu"
        assert main(["export", str(m), "-o", str(out)]) == 0
        refs.append(out)
    assert not filecmp.cmp(refs[0], refs[1], shallow=False)
    return models, refs


# A worker process: runs ``mdae-fmu export MODEL -o OUT`` (the command line's main) each time
# it reads a line, and prints the exit code. Two of them, started once, race on each round
# (the Python start-up and imports are paid once, the analysis and gcc every round).
WORKER = """
import sys
from mdae_fmu.cli import main
for line in sys.stdin:
    code = main(["export", sys.argv[1], "-o", sys.argv[2]])
    print(f"exit {code}", flush=True)
"""


def _reply(worker) -> list[str]:
    lines = [worker.stdout.readline().strip()]
    while lines[-1] and not lines[-1].startswith("exit "):
        lines.append(worker.stdout.readline().strip())
    return lines


# four rounds by default, the 20 of the benchmark-like run with -m slow (docs/testing.md)
@pytest.mark.parametrize("rounds", [4, pytest.param(20, marks=pytest.mark.slow)])
def test_concurrent_exports_leave_one_complete_fmu(two_fmus, tmp_path, rounds):
    """``rounds`` rounds of two simultaneous exports to one path: the result is always a valid
    zip equal, byte for byte, to one of the two FMUs (the builds are reproducible), every export
    exits 0, and no temporary file is left. The workers share a library cache of their own
    (`mdae_fmu.fmu.build_cache`, empty at the start): the first round compiles, the others
    race on the output file only, and a cached library must give the FMU byte for byte."""
    models, refs = two_fmus
    out = tmp_path / "shared.fmu"
    env = {**os.environ, CACHE_ENV: str(tmp_path / "libraries")}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(m), str(out)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
               for m in models]
    try:
        for _ in range(rounds):
            for w in workers:
                w.stdin.write("go\n")
                w.stdin.flush()
            assert [_reply(w) for w in workers] == [["wrote " + str(out), "exit 0"]] * 2
            with zipfile.ZipFile(out) as zf:
                assert zf.testzip() is None
            same = [k for k, ref in enumerate(refs) if filecmp.cmp(out, ref, shallow=False)]
            assert len(same) == 1
            assert _leftovers(tmp_path) == []
    finally:
        for w in workers:
            w.stdin.close()
            w.wait(timeout=60)
    assert os.stat(out).st_mode & 0o777 == os.stat(refs[0]).st_mode & 0o777


def _run(args, **kw):
    return subprocess.run([*EXE, *args], capture_output=True, text=True, timeout=300, **kw)


def test_output_problems_refused_before_analysis(tmp_path):
    """Exit 2 and a message naming the output, before the analysis (which would exit 1)."""
    src = _write(tmp_path, "Rejected.mo", REJECTED)
    assert _run(["export", str(src), "-o", str(tmp_path / "ok.fmu")]).returncode == 1
    (tmp_path / "adir").mkdir()
    cases = [(tmp_path / "adir", "it is a directory"),
             (src, f"it is the input file {src}"),
             (Path("/sys/mdae_test.fmu"), "Permission denied")]     # read-only for root too
    for out, reason in cases:
        r = _run(["export", str(src), "-o", str(out)])
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"{out}: cannot write: {reason}"), r.stderr
        assert "cannot read" not in r.stderr and "Traceback" not in r.stderr
    assert src.read_text() == REJECTED
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_refused(tmp_path):
    src = _write(tmp_path, "Rejected.mo", REJECTED)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = _run(["export", str(src), "-o", str(ro / "x.fmu")])
    finally:
        ro.chmod(0o755)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{ro / 'x.fmu'}: cannot write: Permission denied"), r.stderr


def test_other_outputs_refused_before_work(tmp_path):
    """``analyze --dot`` and ``simulate --output-file/--plot`` check their outputs first too."""
    src = _write(tmp_path, "Rejected.mo", REJECTED)
    (tmp_path / "adir").mkdir()
    for args, out in ((["analyze", str(src), "--dot", str(tmp_path / "adir")], "adir"),
                      (["analyze", str(src), "--dot", str(src)], "Rejected.mo"),
                      (["simulate", str(src), "--output-file", str(src)], "Rejected.mo"),
                      (["simulate", str(src), "--plot", "/sys/mdae.png"], "/sys/mdae.png")):
        r = _run(args)
        assert r.returncode == 2, (args, r.stderr)
        assert f"{out}: cannot write: " in r.stderr.splitlines()[0], r.stderr
    assert src.read_text() == REJECTED


def test_simulate_csv_written_atomically(tmp_path):
    """The CSV replaces an existing file only when complete (no temporary file left), and
    keeps that file's permissions."""
    src = _write(tmp_path, "Decay.mo", DECAY)
    csv = tmp_path / "out.csv"
    csv.write_text("old\n")
    csv.chmod(0o640)
    assert main(["simulate", str(src), "--output-file", str(csv)]) == 0
    rows = csv.read_text().splitlines()
    assert rows[0] == "time,x,der(x)"
    t, x, dx = map(float, rows[-1].split(","))
    assert t == pytest.approx(1.0) and x == pytest.approx(2.718281828 ** -2, rel=1e-4)
    assert dx == pytest.approx(-2 * x, rel=1e-9)
    assert csv.stat().st_mode & 0o777 == 0o640
    assert _leftovers(tmp_path) == []


def _chain(n: int) -> str:
    """A linear chain of ``n`` first-order states: ``der(x_i) = k (x_{i-1} - x_i)``."""
    decls = "".join(f"  Real x{i}(start = 1.0, fixed = true);\n" for i in range(n))
    eqs = "".join(f"  der(x{i}) = k * (x{i - 1} - x{i});\n" for i in range(1, n))
    return (f"class Chain\n  parameter Real k = 2.0;\n{decls}equation\n"
            f"  der(x0) = -k * x0;\n{eqs}end Chain;\n")


@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGTERM, 143, "terminated")])
def test_signal_removes_temporary_files(tmp_path, sig, code, word):
    """A signal during the export (after the temporary output file is reserved, during the
    analysis or the build) ends it with 130/143 and a message; the output does not appear and
    no temporary file is left, next to it or in TMPDIR. The model is a chain of 10^4 states
    (an export of about 2 s after the reservation on an idle machine): with Decay the export
    could end within the 0.3 s before the signal, leaving a complete output (exit 143 with
    x.fmu written, or -15 after the handler was restored)."""
    src = _write(tmp_path, "Chain.mo", _chain(10_000))
    outdir = tmp_path / "out"
    outdir.mkdir()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # an empty build cache: with the run's shared cache the export can end within the 0.3 s
    # below, and the signal then meets the default handler (exit -15 instead of 143)
    env = dict(os.environ, TMPDIR=str(tmpdir), **{CACHE_ENV: str(tmp_path / "libraries")})
    p = subprocess.Popen([*EXE, "export", str(src), "-o", str(outdir / "x.fmu")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _leftovers(outdir) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _leftovers(outdir), "the temporary output file was not reserved first"
    time.sleep(0.3)
    assert p.poll() is None, "the export ended before the signal was sent"
    p.send_signal(sig)
    _, stderr = p.communicate(timeout=120)
    assert p.returncode == code, stderr
    assert f"mdae-fmu: {word}" in stderr and "Traceback" not in stderr
    assert list(outdir.iterdir()) == []
    assert list(tmpdir.iterdir()) == []


def test_a_signal_wrapped_by_another_exception_is_still_an_interruption(monkeypatch, capsys):
    """A signal raised while Python wraps exceptions (class creation during a lazy import
    turns it into a RuntimeError from __set_name__) exits 130/143 with the interruption
    message, not as an internal error (exit 3); a plain RuntimeError stays internal."""
    import signal as _signal

    from mdae_fmu import cli
    from mdae_fmu.output import Interrupted

    def wrapped(signum):
        def handler(args):
            try:
                raise Interrupted(signum)
            except Interrupted as inner:
                raise RuntimeError("Error calling __set_name__") from inner
        return handler

    model = str(Path(__file__).resolve().parents[2] / "reference_models" / "Dahlquist.mo")
    for signum, code, word in ((_signal.SIGINT, 130, "interrupted"),
                               (_signal.SIGTERM, 143, "terminated")):
        monkeypatch.setattr(cli, "_analyze", wrapped(signum))
        assert cli.main(["analyze", model]) == code
        err = capsys.readouterr().err
        assert f"mdae-fmu: {word}" in err and "internal error" not in err

    def plain(args):
        raise RuntimeError("plain")
    monkeypatch.setattr(cli, "_analyze", plain)
    assert cli.main(["analyze", model]) == 3
    assert "internal error (RuntimeError: plain)" in capsys.readouterr().err
