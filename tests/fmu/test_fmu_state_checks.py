"""FMU states handed to an FMU are checked before use (issue 25, deliver 5): header (magic,
format version, GUID, size, interface), checksum, and every flag, index and counter of the
body; a bad state is refused with fmi2Error and a message, the instance keeps its values and
a good state brings it back. Deterministic corruptions through FMPy (each message), then the
C fuzzer tests/host/state_fuzz_host.c under valgrind memcheck on the default (guarded)
multimode ME FMU and a Co-Simulation one (the 1000-trial run:
benchmarks/fuzz_fmu_state.py).
"""

from __future__ import annotations

import ctypes
import re
import struct
import subprocess

import pytest

from cosim_util import build, build_me, close_slave, open_slave, sundials_available
from valgrind_util import (fmi_headers_dir, have_valgrind, prepare_state_fuzz,
                           run_state_fuzz)

ERROR = 3
HEADER = 96            # magic 8, version 4, interface 4, size 8, checksum 8, GUID 64


def fnv1a64(data: bytes) -> int:
    """mdae_checksum (templates/mdae_model.h), written independently."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def reseal(state: bytearray) -> bytearray:
    state[24:32] = struct.pack("<Q", fnv1a64(bytes(state[HEADER:])))
    return state


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """Offsets of the body fields in a state of ClutchBasic, from its own sources (gcc)."""
    import zipfile
    work = tmp_path_factory.mktemp("layout")
    with zipfile.ZipFile(build_me("ClutchBasic")) as z:
        z.extractall(work)
    fields = ("body.state", "body.d.mode", "body.d.b[0]", "body.d.fn_error", "body.d.time")
    prog = work / "offsets.c"
    # the value arrays follow the snapshot (templates/mdae_wrapper.h, mdae_data_layout)
    prog.write_text('#include <stdio.h>\n#include "mdae_model.h"\nint main(void) {\n'
                    '    static double block[MDAE_DATA_BYTES / sizeof(double) + 1];\n'
                    '    ModelData d;\n'
                    '    mdae_data_layout(&d, block, MDAE_NR, MDAE_NI, MDAE_NB, MDAE_NREL, '
                    'MDAE_NWHEN, MDAE_NSAMPLE);\n'
                    + "".join(f'    printf("%lu\\n", (unsigned long)offsetof(MdaeSnapshot, {f}));\n'
                              for f in fields if "[" not in f)
                    + '    printf("%lu\\n", (unsigned long)(sizeof(MdaeSnapshot) + '
                    '(size_t)((char *)d.b - (char *)block)));\n'
                    '    printf("%lu\\n", (unsigned long)(sizeof(MdaeSnapshot) + '
                    'MDAE_DATA_BYTES));\n'
                    '    return 0;\n}\n')
    fields = tuple(f for f in fields if "[" not in f) + ("body.d.b[0]",)
    exe = work / "offsets"
    subprocess.run(["gcc", "-std=c99", f"-I{fmi_headers_dir()}", f"-I{work / 'sources'}",
                    str(prog), "-o", str(exe)], check=True)
    values = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True,
                                             check=True).stdout.split()]
    return dict(zip(fields + ("size",), values))


def me_instance():
    """ClutchBasic's ME interface in Continuous-Time Mode at t = 0, its serialized state."""
    s = open_slave(build_me("ClutchBasic"), stop_time=10.0, model_exchange=True)
    s.fmu.newDiscreteStates()
    s.fmu.enterContinuousTimeMode()
    state = s.fmu.getFMUstate()
    data = bytearray(s.fmu.serializeFMUstate(state))
    s.fmu.freeFMUstate(state)
    return s, data


def reals(s):
    return list(s.fmu.getReal(list(s.vrs.values())))


def test_good_state_round_trip_and_header(layout):
    s, data = me_instance()
    assert len(data) == layout["size"]
    assert data[:8] == b"mdaeFMUs" and struct.unpack("<I", data[8:12])[0] == 3
    assert struct.unpack("<Q", data[16:24])[0] == len(data)
    assert data[32:96].rstrip(b"\0").decode() == s.fmu.guid
    assert struct.unpack("<Q", data[24:32])[0] == fnv1a64(bytes(data[HEADER:]))
    state = s.fmu.deSerializeFMUstate(bytes(data))
    s.fmu.setFMUstate(state)
    s.fmu.freeFMUstate(state)
    assert not s.errors()
    close_slave(s)


def corrupt(data, layout, case):
    d = bytearray(data)
    if case == "truncated":
        return d[:-1]
    if case == "extended":
        return d + b"\0" * 8
    if case == "magic":
        d[0:8] = b"MDAEFMUS"
    elif case == "version":
        d[8:12] = struct.pack("<I", 1)
    elif case == "guid":
        d[32:96] = b"{00000000-0000-0000-0000-000000000000}".ljust(64, b"\0")
    elif case == "interface":
        d[12:16] = struct.pack("<I", 1)                       # fmi2CoSimulation
    elif case == "bitflip":
        d[layout["body.d.time"] + 3] ^= 0x10
    elif case == "mode":
        d[layout["body.d.mode"]:layout["body.d.mode"] + 4] = struct.pack("<i", 5)
        reseal(d)
    elif case == "boolean":
        d[layout["body.d.b[0]"]:layout["body.d.b[0]"] + 4] = struct.pack("<i", 2)
        reseal(d)
    elif case == "fn_error":
        d[layout["body.d.fn_error"]:layout["body.d.fn_error"] + 4] = struct.pack("<i", 3)
        reseal(d)
    elif case == "state":
        d[layout["body.state"]:layout["body.state"] + 4] = struct.pack("<I", 8 | 16)
        reseal(d)
    return d


CASES = {
    "truncated": r"{less} bytes \(its header says {n}\), but a state of this model has {n}$",
    "extended": r"{more} bytes \(its header says {n}\), but a state of this model has {n}$",
    "magic": r'not an FMU state of mdae_fmu \(the first 8 bytes are not "mdaeFMUs"\)',
    "version": r"format version 1, this FMU reads version 3",
    "guid": r"a state of another model \(its GUID is not this FMU's \{{",
    "interface": r"a state of a Co-Simulation instance, this one is Model Exchange",
    "bitflip": r"its checksum does not match its {n} bytes \(the state was changed or damaged",
    "mode": r"its mode 5 is not one of the 2 modes",
    "boolean": r"its Boolean of value reference 0 is 2, not 0 or 1",
    "fn_error": r"its user-function failure \(message 3 of 0\) or calls in progress \(0\) "
                r"are not valid",
    "state": r"its state-machine state 24 is not one that an instance of this FMU can be "
             r"saved in",
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("how", ["deserialize", "set"])
def test_bad_state_is_refused_with_its_reason(layout, case, how):
    """Each check, as bytes to fmi2DeSerializeFMUstate and (same size) as a block in memory
    to fmi2SetFMUstate: fmi2Error, the message naming what is wrong, the instance's values
    unchanged; a good state then brings it back out of the Error state."""
    s, data = me_instance()
    size = layout["size"]
    good = s.fmu.deSerializeFMUstate(bytes(data))
    bad = bytes(corrupt(data, layout, case))
    before = reals(s)
    n = len(s.messages)
    if how == "deserialize":
        assert s.call("deSerializeFMUstate", bad) == ERROR
        fname = "fmi2DeSerializeFMUstate"
    else:
        if len(bad) != len(data):
            pytest.skip("a block in memory has the state's size")
        buf = ctypes.create_string_buffer(bad, len(bad))
        assert s.call("setFMUstate", ctypes.c_void_p(ctypes.addressof(buf))) == ERROR
        fname = "fmi2SetFMUstate"
    errors = [m for _, _, m in s.messages[n:]]
    assert len(errors) == 1 and errors[0].startswith(f"{fname}: the FMU state is refused: ")
    expected = CASES[case].format(n=size, less=size - 1, more=size + 8)
    assert re.search(expected, errors[0]), errors[0]
    assert reals(s) == before                      # in the Error state, values for debugging
    s.fmu.setFMUstate(good)                        # the way out of the Error state
    dx = (ctypes.c_double * 3)()                   # ClutchBasic's states: w1, w2, t
    s.fmu.getDerivatives(dx, 3)
    assert sorted(dx) == pytest.approx(sorted([-0.01, -0.0125 * 1.5 / 2, 1.0]))
    s.fmu.completedIntegratorStep()
    s.fmu.freeFMUstate(good)
    close_slave(s)


def test_reused_state_block_is_overwritten_only_by_a_good_state(layout):
    """fmi2DeSerializeFMUstate into a state the host passes for reuse: a refused one leaves
    it as it was."""
    s, data = me_instance()
    state = s.fmu.deSerializeFMUstate(bytes(data))
    raw = ctypes.string_at(state, len(data))
    bad = bytes(corrupt(data, layout, "bitflip"))
    fn = s.fmu.dll.fmi2DeSerializeFMUstate
    assert fn(s.fmu.component, bad, len(bad), ctypes.byref(state)) == ERROR
    assert ctypes.string_at(state, len(data)) == raw
    close_slave(s)


# --- the fuzzer under valgrind ---------------------------------------------------------------

needs_valgrind = pytest.mark.skipif(not have_valgrind(), reason="valgrind is not installed")
TRIALS = 150           # the test's share; benchmarks/fuzz_fmu_state.py runs 1000 per FMU


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    return prepare_state_fuzz(build_me("BouncingBall"), tmp_path_factory.mktemp("other"))


@needs_valgrind
@pytest.mark.parametrize("variant", [
    "me", pytest.param("cs", marks=pytest.mark.requires_sundials)])
def test_fuzzed_states_are_refused_memcheck_clean(tmp_path, other, variant):
    """Bit flips, truncations, extensions, random bytes, another model's states, the other
    interface's states, fields out of range (checksum recomputed), Integer slots of the mode
    logic: every one refused with a message; good states and states with extreme Reals
    accepted; the calls after each neither crash nor flood the log (fmi2NewDiscreteStates
    asks for termination); no valgrind error."""
    fmu = build("ClutchBasic") if variant == "cs" else build_me("ClutchBasic")
    target = prepare_state_fuzz(fmu, tmp_path, variant, guarded=True)
    run = run_state_fuzz(target, other, TRIALS, seed=25, work_dir=tmp_path)
    assert run.returncode == 0 and run.failures == 0, run.stderr[-3000:]
    assert run.report.errors == (), run.report.errors[:3]
    for kind in ("bitflip", "truncate", "extend", "random", "other-model", "field"):
        trials, refused, accepted = run.kinds[kind]
        assert trials >= 10 and refused == trials and accepted == 0, (kind, run.kinds[kind])
    for kind in ("valid", "extreme-reals"):
        trials, refused, accepted = run.kinds[kind]
        assert trials >= 10 and accepted == trials, (kind, run.kinds[kind])
    trials, refused, accepted = run.kinds["integers"]
    # 7 of ClutchBasic's 8 Integer slots are guard bits and activity flags
    assert len(target.flag_slots) == 7 and refused > 0 and accepted > 0
    assert re.search(r"its (guard bit|block activity flag) \d+ is (2|-1), not 0 or 1",
                     run.messages["integers"])
    if sundials_available():  # the shared FMU: ME and CS
        trials, refused, _ = run.kinds["other-interface"]
        assert trials >= 10 and refused == trials
        assert "this one is " + ("Co-Simulation" if variant == "cs" else "Model Exchange") \
            in run.messages["other-interface"]
    assert "bytes (its header says" in run.messages["truncate"]
    assert 0 < run.loop_lines <= 3
