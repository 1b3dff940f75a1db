"""Co-Simulation FMUs in a plain C host (tests/host/cs_host.c) under valgrind memcheck:
misuse refused with fmi2Error, a full run with inputs, events and a mid-run rollback
(bit-identical), and no memory error or leak in the FMU (SUNDIALS included: it is linked
into the FMU binary)."""

from __future__ import annotations

import subprocess
import zipfile

import pytest

from cosim_util import build
from valgrind_util import VALGRIND_ARGS, fmi_headers_dir, have_valgrind, parse_valgrind_xml

pytestmark = pytest.mark.requires_sundials
HOST = __import__("pathlib").Path(__file__).resolve().parent / "host" / "cs_host.c"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    out = tmp_path_factory.mktemp("cs_host") / "cs_host"
    cmd = ["gcc", "-std=c99", "-g", "-O0", "-Wall", "-Wextra", "-Werror",
           f"-I{fmi_headers_dir()}", str(HOST), "-o", str(out), "-ldl", "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def run(host, fmu, work, stop, step, input_name=None, valgrind=True):
    from fmpy import read_model_description
    with zipfile.ZipFile(fmu) as z:
        z.extractall(work)
    md = read_model_description(str(work / "modelDescription.xml"), validate=False)
    binary = work / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    nreal = sum(1 for v in md.modelVariables if v.type == "Real")
    args = [str(host), str(binary), md.guid, str(nreal), repr(stop), repr(step)]
    if input_name:
        args.append(str(next(v.valueReference for v in md.modelVariables
                             if v.name == input_name)))
    xml = work / "valgrind.xml"
    if valgrind:
        args = ["valgrind", *VALGRIND_ARGS, "--xml=yes", f"--xml-file={xml}", *args]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    report = parse_valgrind_xml(xml) if valgrind else None
    return proc, binary, report


@pytest.mark.parametrize("name,stop,step,input_name", [
    ("CsShaft", 2.0, 0.01, "tau"),           # input changes, restarts
    ("BouncingBall", 2.0, 0.05, None),       # state events located by CVODE
    ("Stair", 4.0, 0.3, None),               # time events between grid points
    ("Pendulum", 1.0, 0.05, None),           # Newton blocks, projection
])
def test_memcheck_clean(host, tmp_path, name, stop, step, input_name):
    if not have_valgrind():
        pytest.skip("valgrind not installed")
    proc, binary, report = run(host, build(name), tmp_path, stop, step, input_name)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:], proc.stdout[-2000:])
    assert "rollback identical" in proc.stdout
    assert "final" in proc.stdout
    assert report.fmu_errors(binary) == ()
    assert not any(e.kind.startswith("Leak_Definitely") or e.kind.startswith("Invalid")
                   for e in report.errors), report.errors


def test_host_detects_misuse_without_valgrind(host, tmp_path):
    """The host itself fails (exit 2) if a misuse is accepted: run it natively on a
    well-behaved FMU to show the checks pass, and check its final time."""
    proc, _, _ = run(host, build("CsShaft"), tmp_path, 1.0, 0.1, "tau", valgrind=False)
    assert proc.returncode == 0, proc.stderr
    final = [line for line in proc.stdout.splitlines() if line.startswith("final")][0]
    assert abs(float(final.split()[1]) - 1.0) < 1e-9
    assert proc.stdout.count("logStatusError") >= 5
