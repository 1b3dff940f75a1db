"""Run an FMU's binary in the C host tests/host/me_host.c, optionally under valgrind memcheck.

    host = build_host(tmp_dir)                       # gcc, once per session
    run = run_fmu_in_host(host, "X.fmu", tmp_dir, stop_time=3.0, step=1e-3)
    run.returncode, run.stdout, run.report.errors, run.report.fmu_errors(run.binary)

The valgrind report is read from its XML output (``--xml=yes``), parsed with no entity
resolution and no network. Leak errors count only for the kinds given to
``--errors-for-leak-kinds`` (definite, indirect).
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

HERE = Path(__file__).resolve().parent
HOST_SOURCE = HERE / "host" / "me_host.c"
VALGRIND_ARGS = ("--error-exitcode=99", "--leak-check=full",
                 "--errors-for-leak-kinds=definite,indirect", "--track-origins=no")


def fmi_headers_dir() -> Path:
    """FMI 2.0 headers shipped with FMPy (unprefixed function names)."""
    import fmpy
    return Path(fmpy.__file__).resolve().parent / "c-code"


def have_valgrind() -> bool:
    return shutil.which("valgrind") is not None


def build_host(out_dir: str | Path) -> Path:
    """Compile me_host.c (``-g -O0 -Wall -Wextra -Werror``) into ``out_dir/me_host``."""
    out = Path(out_dir) / "me_host"
    cmd = ["gcc", "-std=c99", "-g", "-O0", "-Wall", "-Wextra", "-Werror",
           f"-I{fmi_headers_dir()}", str(HOST_SOURCE), "-o", str(out), "-ldl", "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"cannot build the ME host:\n{proc.stderr}")
    return out


@dataclass(frozen=True)
class FmuInfo:
    """What the host needs from the model description."""
    binary: Path
    guid: str
    nx: int
    nz: int
    stop_time: float | None
    param_vr: int | None      # a Real parameter for the NaN-input check, if any
    inputs: dict = None       # input name -> (type letter R|B, value reference)


def extract_fmu(fmu: str | Path, dest: str | Path) -> FmuInfo:
    """Unzip ``fmu`` into ``dest`` and read sizes, GUID and a Real parameter."""
    from fmpy import read_model_description
    dest = Path(dest)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(dest)
    md = read_model_description(str(dest / "modelDescription.xml"), validate=False)
    if md.modelExchange is None:
        raise ValueError(f"{fmu}: not a Model Exchange FMU")
    ident = md.modelExchange.modelIdentifier
    param = next((v.valueReference for v in md.modelVariables
                  if v.causality == "parameter" and v.type == "Real"), None)
    de = md.defaultExperiment
    stop = float(de.stopTime) if de is not None and de.stopTime is not None else None
    inputs = {v.name: (v.type[0], v.valueReference) for v in md.modelVariables
              if v.causality == "input" and v.type in ("Real", "Boolean")}
    return FmuInfo(dest / "binaries" / "linux64" / f"{ident}.so", md.guid, len(md.derivatives),
                   int(md.numberOfEventIndicators or 0), stop, param, inputs)


@dataclass(frozen=True)
class ValgrindError:
    kind: str            # e.g. InvalidWrite, Leak_DefinitelyLost
    what: str
    objects: tuple[str, ...]   # shared objects of the stack frames (innermost first)
    functions: tuple[str, ...]


@dataclass(frozen=True)
class ValgrindReport:
    errors: tuple[ValgrindError, ...]

    def fmu_errors(self, binary: str | Path) -> tuple[ValgrindError, ...]:
        """Errors with a stack frame in the FMU binary."""
        name = Path(binary).name
        return tuple(e for e in self.errors if any(Path(o).name == name for o in e.objects))

    def kinds(self) -> set[str]:
        return {e.kind for e in self.errors}


def parse_valgrind_xml(path: str | Path) -> ValgrindReport:
    """Read the ``<error>`` records of a valgrind memcheck XML file."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             recover=True)
    root = etree.parse(str(path), parser).getroot()
    errors = []
    for err in root.iter("error"):
        kind = err.findtext("kind") or ""
        what = err.findtext("what") or err.findtext("xwhat/text") or ""
        frames = err.findall("stack/frame")
        objs = tuple(f.findtext("obj") or "" for f in frames)
        fns = tuple(f.findtext("fn") or "" for f in frames)
        errors.append(ValgrindError(kind, what, objs, fns))
    return ValgrindReport(tuple(errors))


@dataclass(frozen=True)
class HostRun:
    returncode: int
    stdout: str
    stderr: str
    binary: Path
    report: ValgrindReport | None

    def final_states(self) -> list[float]:
        """The states printed by the host at the end of its first run."""
        for line in self.stdout.splitlines():
            if line.startswith("final "):
                return [float(v) for v in line.split()[2:]]
        return []


def run_fmu_in_host(host: str | Path, fmu: str | Path, work_dir: str | Path,
                    stop_time: float | None = None, step: float = 1e-3,
                    valgrind: bool = True, timeout: float = 300.0,
                    inputs: dict | None = None) -> HostRun:
    """Extract ``fmu`` under ``work_dir`` and run it in the host (under valgrind memcheck
    with `VALGRIND_ARGS` unless ``valgrind`` is false) until ``stop_time`` (default: the
    DefaultExperiment stopTime). ``inputs``: name -> ``[(time, value), ...]``, piecewise
    constant input signals (Real or Boolean) the host applies as external events."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    info = extract_fmu(fmu, work / "fmu")
    stop = stop_time if stop_time is not None else (info.stop_time or 1.0)
    args = [str(host), str(info.binary), info.guid, str(info.nx), str(info.nz), repr(stop),
            repr(step)]
    args.append(str(info.param_vr) if info.param_vr is not None else "-")
    for name, signal in (inputs or {}).items():
        typ, vr = info.inputs[name]
        for t, value in signal:
            args.append(f"{typ}:{vr}:{float(t)!r}:{float(value)!r}")
    xml = work / "valgrind.xml"
    if valgrind:
        args = ["valgrind", *VALGRIND_ARGS, "--xml=yes", f"--xml-file={xml}", *args]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    report = parse_valgrind_xml(xml) if valgrind else None
    return HostRun(proc.returncode, proc.stdout, proc.stderr, info.binary, report)


# --- the FMU-state fuzzer (tests/host/state_fuzz_host.c, issue 25) -----------------------------

STATE_FUZZ_SOURCE = HERE / "host" / "state_fuzz_host.c"


@dataclass(frozen=True)
class FuzzTarget:
    """An extracted FMU, its fuzzing host (built against its sources) and what the host is
    told: the interface, the binary, and the Integer slots the mode logic reads as flags."""
    host: Path
    interface: str            # "me" or "cs"
    binary: Path
    guid: str
    flag_slots: tuple[int, ...]


def prepare_state_fuzz(fmu: str | Path, work_dir: str | Path, interface: str = "me",
                       guarded: bool = False) -> FuzzTarget:
    """Extract ``fmu`` under ``work_dir`` and compile state_fuzz_host.c against its sources
    (``-g -O0 -Wall -Wextra -Werror``). ``guarded``: an ``--implicit`` FMU, whose Integer
    slots that are no variable of modelDescription.xml are the guard bits and activity flags
    (codegen/guarded.py), which a state must hold as 0 or 1."""
    import re
    from fmpy import read_model_description
    work = Path(work_dir)
    dest = work / "fmu"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(dest)
    md = read_model_description(str(dest / "modelDescription.xml"), validate=False)
    ident = (md.coSimulation if interface == "cs" else md.modelExchange).modelIdentifier
    flags: tuple[int, ...] = ()
    if guarded:
        config = (dest / "sources" / "config.h").read_text()
        n_int = int(re.search(r"#define MDAE_NI (\d+)", config).group(1))
        visible = {v.valueReference for v in md.modelVariables if v.type == "Integer"}
        flags = tuple(k for k in range(n_int) if k not in visible)
    host = work / "state_fuzz_host"
    cmd = ["gcc", "-std=c99", "-g", "-O0", "-Wall", "-Wextra", "-Werror",
           f"-I{fmi_headers_dir()}", f"-I{HERE / 'host'}", f"-I{dest / 'sources'}",
           str(STATE_FUZZ_SOURCE), "-o", str(host), "-ldl", "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"cannot build the state fuzzing host:\n{proc.stderr}")
    return FuzzTarget(host, interface, dest / "binaries" / "linux64" / f"{ident}.so",
                      md.guid, flags)


@dataclass(frozen=True)
class StateFuzzRun:
    """The output of one state_fuzz_host run: per kind (trials, refused, accepted), the first
    refusal message of each kind, the most log lines of 100 refused calls, the failed checks
    (stderr), and the valgrind report."""
    returncode: int
    kinds: dict
    messages: dict
    loop_lines: int
    failures: int
    stderr: str
    report: ValgrindReport | None


def run_state_fuzz(target: FuzzTarget, other: FuzzTarget, trials: int, seed: int,
                   work_dir: str | Path, valgrind: bool = True,
                   timeout: float = 1200.0) -> StateFuzzRun:
    """Run ``trials`` trials of the fuzzer on ``target`` (``other``: another model, whose
    states must be refused), under valgrind memcheck (`VALGRIND_ARGS`) unless ``valgrind``
    is false."""
    args = [str(target.host), target.interface, str(target.binary), str(other.binary),
            other.guid, str(trials), str(seed), *map(str, target.flag_slots)]
    xml = Path(work_dir) / f"valgrind_{target.interface}_{seed}.xml"
    if valgrind:
        args = ["valgrind", *VALGRIND_ARGS, "--xml=yes", f"--xml-file={xml}", *args]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    kinds, messages, loop, failures = {}, {}, -1, -1
    for line in proc.stdout.splitlines():
        words = line.split()
        if line.startswith("kind "):
            kinds[words[1]] = (int(words[3]), int(words[5]), int(words[7]))
        elif line.startswith("message "):
            name, _, text = line[len("message "):].partition(": ")
            messages[name] = text
        elif line.startswith("refused-loop log lines "):
            loop = int(words[-1])
        elif line.startswith("failures "):
            failures = int(words[-1])
    return StateFuzzRun(proc.returncode, kinds, messages, loop, failures, proc.stderr,
                        parse_valgrind_xml(xml) if valgrind else None)


__all__ = ["build_host", "extract_fmu", "run_fmu_in_host", "parse_valgrind_xml", "HostRun",
           "ValgrindReport", "ValgrindError", "FmuInfo", "have_valgrind", "VALGRIND_ARGS",
           "FuzzTarget", "prepare_state_fuzz", "StateFuzzRun", "run_state_fuzz"]
