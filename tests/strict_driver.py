"""A strict FMI 2.0 Model Exchange driver for tests (docs/fmi-testing.md).

FMPy >= 0.3.30 re-reads the continuous states after every event whatever the FMU reports
(docs/fmi-testing.md), so it cannot see a wrong
``valuesOfContinuousStatesChanged``. This driver calls the raw FMI 2.0 C functions through
ctypes, follows the ME calling sequence of the FMI 2.0.5 standard (docs/3_2_model_exchange_api
.adoc, state machine and pseudo-code of the simulation algorithm), honours every flag the FMU
returns, and checks what the standard requires:

* every call returns fmi2OK (``status``), ``fmi2Instantiate`` returns non-NULL (``instantiate``);
* after each ``fmi2NewDiscreteStates``: ``valuesOfContinuousStatesChanged`` true when the
  continuous states changed bitwise (``values-flag``; the standard: "If no element of the
  continuous state vector has changed its value, valuesOfContinuousStatesChanged must return
  fmi2False", checked unless ``host_safe``), ``nominalsOfContinuousStatesChanged`` true iff
  the nominals changed (``nominals-flag``);
* with ``host_safe`` (the contract of issue 15 that makes every common host right,
  docs/fmi-mapping.md, "Events in third-party hosts"): the first ``fmi2NewDiscreteStates``
  of an event completes the iteration (``one-call``), and ``valuesOfContinuousStatesChanged``
  is also true when the derivatives at the same time and states changed, i.e. a mode switch
  without a jump (``field-flag``; fmusim restarts CVode only on this flag); true with
  unchanged states and derivatives is then accepted;
* the event iteration ends (``newDiscreteStatesNeeded`` false) within a bound
  (``iteration-bound``);
* a defined ``nextEventTime`` is finite and in the future when the iteration ends
  (``next-event-time``); an undefined one is never used;
* no event indicator is exactly 0 when continuous-time mode is re-entered (``zero-indicator``,
  pitfall 1);
* after events, getters agree: ``fmi2GetReal`` of the states/derivatives equals
  ``fmi2GetContinuousStates``/``fmi2GetDerivatives`` (``getter-mismatch``) and re-setting the
  same time and states gives bitwise the same derivatives and indicators (``stale-cache``);
* optionally, an FMU state taken mid-run, restored, and re-stepped reproduces the run bitwise,
  also through serialization (``fmu-state``).

Integration is fixed-step explicit RK4 (or Euler); state events are detected by a change of
domain ``z > 0`` <-> ``z <= 0`` over a step and located by bisection on the step length (each
trial re-integrates one step from the step start, so the located point lies on the method's
own trajectory); time events come from ``nextEventTime``; step events from
``fmi2CompletedIntegratorStep``.

Usage::

    res = simulate_strict("BouncingBall.fmu", stop_time=3.0, step=1e-3)
    res.values["h"], res.time, res.events
"""

from __future__ import annotations

import ctypes as C
import math
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending = range(6)
STATUS_NAMES = ("fmi2OK", "fmi2Warning", "fmi2Discard", "fmi2Error", "fmi2Fatal", "fmi2Pending")
fmi2ModelExchange = 0

_Logger = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p, C.c_int, C.c_char_p, C.c_char_p)
_Alloc = C.CFUNCTYPE(C.c_void_p, C.c_size_t, C.c_size_t)
_Free = C.CFUNCTYPE(None, C.c_void_p)
_StepFinished = C.CFUNCTYPE(None, C.c_void_p, C.c_int)


class _Callbacks(C.Structure):
    _fields_ = [("logger", _Logger), ("allocateMemory", _Alloc), ("freeMemory", _Free),
                ("stepFinished", _StepFinished), ("componentEnvironment", C.c_void_p)]


class _EventInfo(C.Structure):
    _fields_ = [("newDiscreteStatesNeeded", C.c_int), ("terminateSimulation", C.c_int),
                ("nominalsOfContinuousStatesChanged", C.c_int),
                ("valuesOfContinuousStatesChanged", C.c_int),
                ("nextEventTimeDefined", C.c_int), ("nextEventTime", C.c_double)]


_P = C.c_void_p
_D = C.POINTER(C.c_double)
_U = C.POINTER(C.c_uint)
_I = C.POINTER(C.c_int)
_SIGNATURES = {
    "fmi2Instantiate": (C.c_void_p, [C.c_char_p, C.c_int, C.c_char_p, C.c_char_p,
                                     C.POINTER(_Callbacks), C.c_int, C.c_int]),
    "fmi2FreeInstance": (None, [_P]),
    "fmi2SetupExperiment": (C.c_int, [_P, C.c_int, C.c_double, C.c_double, C.c_int, C.c_double]),
    "fmi2EnterInitializationMode": (C.c_int, [_P]),
    "fmi2ExitInitializationMode": (C.c_int, [_P]),
    "fmi2Terminate": (C.c_int, [_P]),
    "fmi2GetReal": (C.c_int, [_P, _U, C.c_size_t, _D]),
    "fmi2SetReal": (C.c_int, [_P, _U, C.c_size_t, _D]),
    "fmi2GetInteger": (C.c_int, [_P, _U, C.c_size_t, _I]),
    "fmi2SetInteger": (C.c_int, [_P, _U, C.c_size_t, _I]),
    "fmi2GetBoolean": (C.c_int, [_P, _U, C.c_size_t, _I]),
    "fmi2SetBoolean": (C.c_int, [_P, _U, C.c_size_t, _I]),
    "fmi2GetFMUstate": (C.c_int, [_P, C.POINTER(C.c_void_p)]),
    "fmi2SetFMUstate": (C.c_int, [_P, C.c_void_p]),
    "fmi2FreeFMUstate": (C.c_int, [_P, C.POINTER(C.c_void_p)]),
    "fmi2SerializedFMUstateSize": (C.c_int, [_P, C.c_void_p, C.POINTER(C.c_size_t)]),
    "fmi2SerializeFMUstate": (C.c_int, [_P, C.c_void_p, C.c_char_p, C.c_size_t]),
    "fmi2DeSerializeFMUstate": (C.c_int, [_P, C.c_char_p, C.c_size_t, C.POINTER(C.c_void_p)]),
    "fmi2EnterEventMode": (C.c_int, [_P]),
    "fmi2NewDiscreteStates": (C.c_int, [_P, C.POINTER(_EventInfo)]),
    "fmi2EnterContinuousTimeMode": (C.c_int, [_P]),
    "fmi2CompletedIntegratorStep": (C.c_int, [_P, C.c_int, _I, _I]),
    "fmi2SetTime": (C.c_int, [_P, C.c_double]),
    "fmi2SetContinuousStates": (C.c_int, [_P, _D, C.c_size_t]),
    "fmi2GetDerivatives": (C.c_int, [_P, _D, C.c_size_t]),
    "fmi2GetEventIndicators": (C.c_int, [_P, _D, C.c_size_t]),
    "fmi2GetContinuousStates": (C.c_int, [_P, _D, C.c_size_t]),
    "fmi2GetNominalsOfContinuousStates": (C.c_int, [_P, _D, C.c_size_t]),
}
_OPTIONAL = {"fmi2GetFMUstate", "fmi2SetFMUstate", "fmi2FreeFMUstate",
             "fmi2SerializedFMUstateSize", "fmi2SerializeFMUstate", "fmi2DeSerializeFMUstate"}

_libc = C.CDLL(None)
_libc.calloc.restype = C.c_void_p
_libc.calloc.argtypes = [C.c_size_t, C.c_size_t]
_libc.free.argtypes = [C.c_void_p]
# direct C function pointers (no Python thunk) for the memory callbacks
_CALLOC = C.cast(_libc.calloc, _Alloc)
_FREE = C.cast(_libc.free, _Free)


class FMIViolation(AssertionError):
    """The FMU broke the FMI 2.0 ME contract. ``kind`` is one of the check names of the
    module docstring; ``time`` the simulation time at which it was seen."""

    def __init__(self, kind: str, time: float, message: str):
        self.kind, self.time, self.message = kind, time, message
        super().__init__(f"[{kind}] t={time!r}: {message}")


@dataclass(frozen=True)
class EventRecord:
    """One event (one call of the event iteration). ``causes`` is a subset of
    {"init", "time", "state", "step"}; ``x_before``/``x_after`` are the continuous states on
    entering/leaving Event Mode; ``next_event_time`` is None when not defined."""
    time: float
    causes: tuple[str, ...]
    iterations: int
    values_changed: bool
    nominals_changed: bool
    x_before: tuple[float, ...]
    x_after: tuple[float, ...]
    next_event_time: float | None
    terminate: bool


@dataclass(frozen=True)
class StrictResult:
    """Trajectory (rows at every step end and on both sides of every event), the event log,
    the violations seen (empty when the FMU is correct), and the FMU's log messages."""
    time: np.ndarray
    values: dict
    events: tuple[EventRecord, ...]
    violations: tuple[FMIViolation, ...]
    log: tuple[tuple[int, str, str], ...]
    steps: int
    terminated_by_fmu: bool

    def at(self, name: str, t: float) -> float:
        """Value of ``name`` at the last recorded row with time <= t: the right limit at an
        event time; meant for times on the step grid (start + k*step) or event times."""
        i = int(np.searchsorted(self.time, t + 1e-12 * (1 + abs(t)), side="right")) - 1
        return float(self.values[name][max(i, 0)])


@dataclass
class _Model:
    path: Path
    identifier: str
    guid: str
    nx: int
    nz: int
    state_vrs: list
    derivative_vrs: list
    reals: dict          # name -> vr of Real variables to record
    bools: dict          # name -> vr of Boolean variables to record
    ints: dict           # name -> vr of Integer variables to record
    settable: dict       # name -> (type, vr) for start values
    can_get_set_state: bool
    can_serialize: bool
    default_stop: float | None
    tmpdir: object = field(default=None, repr=False)


def _load_model(fmu: str | Path) -> _Model:
    """Unzip (if needed) and read the model description with FMPy's reader."""
    from fmpy import read_model_description
    fmu = Path(fmu)
    tmp = None
    if fmu.is_file():
        tmp = tempfile.TemporaryDirectory(prefix="strict_")
        with zipfile.ZipFile(fmu) as z:
            z.extractall(tmp.name)
        root = Path(tmp.name)
    else:
        root = fmu
    md = read_model_description(str(root / "modelDescription.xml"), validate=False)
    if md.modelExchange is None:
        raise ValueError(f"{fmu}: not a Model Exchange FMU")
    ident = md.modelExchange.modelIdentifier
    derivs = md.derivatives
    state_vrs = [d.variable.derivative.valueReference for d in derivs]
    derivative_vrs = [d.variable.valueReference for d in derivs]
    reals, bools, ints, settable = {}, {}, {}, {}
    for v in md.modelVariables:
        if v.causality in ("parameter", "calculatedParameter", "independent"):
            if v.causality == "parameter":
                settable[v.name] = (v.type, v.valueReference)
            continue
        if v.type == "Real":
            reals[v.name] = v.valueReference
        elif v.type == "Boolean":
            bools[v.name] = v.valueReference
        elif v.type == "Integer":
            ints[v.name] = v.valueReference
        if v.initial in ("exact", "approx") or v.causality == "input":
            settable[v.name] = (v.type, v.valueReference)
    de = md.defaultExperiment
    stop = float(de.stopTime) if de is not None and de.stopTime is not None else None
    return _Model(root / "binaries" / "linux64" / f"{ident}.so", ident, md.guid, len(derivs),
                  int(md.numberOfEventIndicators or 0), state_vrs, derivative_vrs, reals, bools,
                  ints, settable, bool(md.modelExchange.canGetAndSetFMUstate),
                  bool(md.modelExchange.canSerializeFMUstate), stop, tmp)


def _arr(n: int):
    return (C.c_double * max(n, 1))()


class _Driver:
    """One run. Holds the raw functions, the instance and the bookkeeping; the algorithm is
    in `run`."""

    def __init__(self, model: _Model, fail_fast: bool, max_event_iterations: int,
                 host_safe: bool = False):
        self.m = model
        self.fail_fast = fail_fast
        self.host_safe = host_safe
        self.max_iter = max_event_iterations
        self.violations: list[FMIViolation] = []
        self.log: list[tuple[int, str, str]] = []
        self.t = 0.0
        lib = C.CDLL(str(model.path))
        self.f = {}
        for name, (res, args) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                if name in _OPTIONAL:
                    continue
                raise FMIViolation("status", 0.0, f"the binary does not export {name}") from None
            fn.restype, fn.argtypes = res, args
            self.f[name] = fn
        self._logger = _Logger(self._on_log)
        self.callbacks = _Callbacks(self._logger, _CALLOC, _FREE, _StepFinished(), None)
        self.c = None
        nx, nz = model.nx, model.nz
        self.xbuf, self.dbuf, self.zbuf, self.nbuf = _arr(nx), _arr(nx), _arr(nz), _arr(nx)
        self.svr = (C.c_uint * max(nx, 1))(*model.state_vrs)
        self.dvr = (C.c_uint * max(nx, 1))(*model.derivative_vrs)
        self.rnames = list(model.reals)
        self.rvr = (C.c_uint * max(len(self.rnames), 1))(*model.reals.values())
        self.rbuf = _arr(len(self.rnames))
        self.bnames = list(model.bools)
        self.bvr = (C.c_uint * max(len(self.bnames), 1))(*model.bools.values())
        self.bbuf = (C.c_int * max(len(self.bnames), 1))()
        self.inames = list(model.ints)
        self.ivr = (C.c_uint * max(len(self.inames), 1))(*model.ints.values())
        self.ibuf = (C.c_int * max(len(self.inames), 1))()

    # ------------------------------------------------------------------ plumbing
    def _on_log(self, env, instance, status, category, message):
        self.log.append((status, (category or b"").decode(errors="replace"),
                         (message or b"").decode(errors="replace")))

    def violation(self, kind: str, message: str, fatal: bool = False):
        v = FMIViolation(kind, self.t, message)
        self.violations.append(v)
        if fatal or self.fail_fast:
            raise v

    def call(self, name: str, *args):
        status = self.f[name](self.c, *args)
        if status != fmi2OK:
            last = f"; FMU log: {self.log[-1][2]}" if self.log else ""
            name_s = STATUS_NAMES[status] if 0 <= status < 6 else str(status)
            self.violation("status", f"{name} returned {name_s}{last}", fatal=True)

    def get_x(self) -> np.ndarray:
        self.call("fmi2GetContinuousStates", self.xbuf, self.m.nx)
        return np.array(self.xbuf[:self.m.nx], dtype=float)

    def get_nominals(self) -> np.ndarray:
        self.call("fmi2GetNominalsOfContinuousStates", self.nbuf, self.m.nx)
        return np.array(self.nbuf[:self.m.nx], dtype=float)

    def get_z(self) -> np.ndarray:
        if self.m.nz == 0:
            return np.zeros(0)
        self.call("fmi2GetEventIndicators", self.zbuf, self.m.nz)
        return np.array(self.zbuf[:self.m.nz], dtype=float)

    def get_der(self) -> np.ndarray:
        self.call("fmi2GetDerivatives", self.dbuf, self.m.nx)
        return np.array(self.dbuf[:self.m.nx], dtype=float)

    def set_tx(self, t: float, x: np.ndarray):
        self.call("fmi2SetTime", t)
        if self.m.nx:
            for i, v in enumerate(x):
                self.xbuf[i] = v
            self.call("fmi2SetContinuousStates", self.xbuf, self.m.nx)

    def set_input(self, name: str, value):
        if name not in self.m.settable:
            raise ValueError(f"{name!r} is not a settable variable of {self.m.identifier}")
        typ, vr = self.m.settable[name]
        vra = (C.c_uint * 1)(vr)
        if typ == "Real":
            self.call("fmi2SetReal", vra, 1, (C.c_double * 1)(float(value)))
        elif typ == "Boolean":
            self.call("fmi2SetBoolean", vra, 1, (C.c_int * 1)(int(bool(value))))
        else:
            self.call("fmi2SetInteger", vra, 1, (C.c_int * 1)(int(value)))

    def rhs(self, t: float, x: np.ndarray) -> np.ndarray:
        self.set_tx(t, x)
        return self.get_der()

    def get_reals(self, vrs, n) -> np.ndarray:
        buf = _arr(n)
        self.call("fmi2GetReal", vrs, n, buf)
        return np.array(buf[:n], dtype=float)

    def sample(self) -> list[float]:
        row = [self.t]
        if self.rnames:
            self.call("fmi2GetReal", self.rvr, len(self.rnames), self.rbuf)
            row += self.rbuf[:len(self.rnames)]
        if self.bnames:
            self.call("fmi2GetBoolean", self.bvr, len(self.bnames), self.bbuf)
            row += [float(b != 0) for b in self.bbuf[:len(self.bnames)]]
        if self.inames:
            self.call("fmi2GetInteger", self.ivr, len(self.inames), self.ibuf)
            row += [float(i) for i in self.ibuf[:len(self.inames)]]
        return row

    # ------------------------------------------------------------------ checks
    def check_getters(self, x: np.ndarray):
        """Getters after an event: GetReal vs GetContinuousStates/GetDerivatives, and no stale
        cache (re-setting the same t, x gives bitwise the same derivatives and indicators)."""
        nx = self.m.nx
        d1, z1 = self.get_der(), self.get_z()
        if nx:
            xs = self.get_reals(self.svr, nx)
            if xs.tobytes() != self.get_x().tobytes():
                self.violation("getter-mismatch",
                               f"fmi2GetReal(states) {xs} != fmi2GetContinuousStates")
            ds = self.get_reals(self.dvr, nx)
            if ds.tobytes() != d1.tobytes():
                self.violation("getter-mismatch",
                               f"fmi2GetReal(derivatives) {ds} != fmi2GetDerivatives {d1}")
        x_fmu = self.get_x()
        self.set_tx(self.t, x_fmu)
        d2, z2 = self.get_der(), self.get_z()
        if d1.tobytes() != d2.tobytes() or z1.tobytes() != z2.tobytes():
            self.violation("stale-cache",
                           f"derivatives/indicators changed from {d1}/{z1} to {d2}/{z2} after "
                           "re-setting the same time and states")
        # continue from the driver's states (they differ only if a wrong flag was honoured)
        self.set_tx(self.t, x)

    def event_iteration(self, causes: tuple[str, ...], x_driver: np.ndarray):
        """Event Mode: fmi2NewDiscreteStates until newDiscreteStatesNeeded is false, checking
        every flag against bitwise snapshots. Returns (EventRecord, accumulated flags)."""
        info = _EventInfo()
        x0 = self.get_x()
        self.get_nominals()     # its status is checked on entering Event Mode too
        values_acc = nominals_acc = False
        it = 0
        while True:
            if it >= self.max_iter:
                self.violation("iteration-bound",
                               f"newDiscreteStatesNeeded still true after {it} calls of "
                               "fmi2NewDiscreteStates", fatal=True)
            xb, nb, db = self.get_x(), self.get_nominals(), self.get_der()
            self.call("fmi2NewDiscreteStates", C.byref(info))
            it += 1
            xa, na, da = self.get_x(), self.get_nominals(), self.get_der()
            changed = xa.tobytes() != xb.tobytes()
            field = da.tobytes() != db.tobytes()
            flag = bool(info.valuesOfContinuousStatesChanged)
            if changed and not flag:
                self.violation(
                    "values-flag", "valuesOfContinuousStatesChanged=False but the states "
                    f"changed: {xb.tolist()} -> {xa.tolist()}")
            elif flag and not changed and not self.host_safe:
                self.violation(
                    "values-flag", "valuesOfContinuousStatesChanged=True but the states did "
                    f"not change: {xb.tolist()}")
            elif field and not flag and self.host_safe:
                self.violation(
                    "field-flag", "valuesOfContinuousStatesChanged=False but the derivatives "
                    f"at the same time and states changed: {db.tolist()} -> {da.tolist()} (a "
                    "host that restarts its integrator only on the flag goes on with the old "
                    "vector field)")
            if self.host_safe and it == 1 and info.newDiscreteStatesNeeded and \
                    not info.terminateSimulation:
                self.violation(
                    "one-call", "newDiscreteStatesNeeded=True after the first "
                    "fmi2NewDiscreteStates of the event (a host that keeps only the last "
                    "eventInfo misses the state changes of the earlier calls)")
            nchanged = na.tobytes() != nb.tobytes()
            if bool(info.nominalsOfContinuousStatesChanged) != nchanged:
                self.violation(
                    "nominals-flag",
                    f"nominalsOfContinuousStatesChanged="
                    f"{bool(info.nominalsOfContinuousStatesChanged)} but the nominals "
                    f"{'changed' if nchanged else 'did not change'}")
            if np.any(na <= 0) or not np.all(np.isfinite(na)):
                self.violation("nominals-flag", f"nominals must be finite and > 0: {na}")
            values_acc |= bool(info.valuesOfContinuousStatesChanged)
            nominals_acc |= bool(info.nominalsOfContinuousStatesChanged)
            if info.terminateSimulation or not info.newDiscreteStatesNeeded:
                break
        nxt = None
        if info.nextEventTimeDefined and not info.terminateSimulation:
            nxt = float(info.nextEventTime)
            if not math.isfinite(nxt) or nxt <= self.t:
                self.violation("next-event-time",
                               f"nextEventTime={nxt!r} is not in the future of t={self.t!r}")
                nxt = None
        # honour the flag: the driver re-reads the states only when told to
        x_new = self.get_x() if values_acc else x_driver
        rec = EventRecord(self.t, causes, it, values_acc, nominals_acc, tuple(x0.tolist()),
                          tuple(self.get_x().tolist()), nxt, bool(info.terminateSimulation))
        return rec, x_new, nxt, bool(info.terminateSimulation)

    def check_fmu_state(self, x: np.ndarray, h: float, step):
        """Round trip mid-run: get state, step, restore, re-step: bitwise identical; the same
        through serialization."""
        st = C.c_void_p()
        self.call("fmi2GetFMUstate", C.byref(st))
        t0 = self.t
        xa = step(t0, x, h)
        z_a = self.get_z()
        self.call("fmi2SetFMUstate", st)
        if self.get_x().tobytes() != x.tobytes():
            self.violation("fmu-state", "fmi2SetFMUstate did not restore the states")
        xb = step(t0, x, h)
        if xb.tobytes() != xa.tobytes() or self.get_z().tobytes() != z_a.tobytes():
            self.violation("fmu-state", "re-stepping from a restored FMU state differs")
        if self.m.can_serialize:
            size = C.c_size_t()
            self.call("fmi2SerializedFMUstateSize", st, C.byref(size))
            buf = C.create_string_buffer(size.value)
            self.call("fmi2SerializeFMUstate", st, buf, size.value)
            st2 = C.c_void_p()
            self.call("fmi2DeSerializeFMUstate", buf, size.value, C.byref(st2))
            self.call("fmi2SetFMUstate", st2)
            xc = step(t0, x, h)
            if xc.tobytes() != xa.tobytes():
                self.violation("fmu-state", "re-stepping from a deserialized FMU state differs")
            self.call("fmi2FreeFMUstate", C.byref(st2))
        # leave the FMU exactly as it was before the check
        self.call("fmi2SetFMUstate", st)
        self.call("fmi2FreeFMUstate", C.byref(st))


def _rk4(rhs, t, x, h):
    k1 = rhs(t, x)
    k2 = rhs(t + h / 2, x + h / 2 * k1)
    k3 = rhs(t + h / 2, x + h / 2 * k2)
    k4 = rhs(t + h, x + h * k3)
    return x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _euler(rhs, t, x, h):
    return x + h * rhs(t, x)


def _domains(z: np.ndarray) -> np.ndarray:
    return z > 0.0


def simulate_strict(fmu: str | Path, stop_time: float | None = None, step: float = 1e-3,
                    start_time: float = 0.0, start_values: dict | None = None,
                    method: str = "rk4", event_tolerance: float = 1e-12,
                    max_event_iterations: int = 100, max_steps: int = 1_000_000,
                    max_events: int = 100_000, fail_fast: bool = True,
                    check_fmu_state: bool = True, inputs: dict | None = None,
                    host_safe: bool = False) -> StrictResult:
    """Simulate an FMI 2.0 ME FMU (path to the .fmu or to an extracted directory) with the
    FMI 2.0.5 ME algorithm (docs/3_2_model_exchange_api.adoc, pseudo-code of the simulation
    loop), checking the contract listed in the module docstring.

    ``fail_fast``: raise `FMIViolation` at the first violation (default); otherwise collect
    flag/consistency violations in the result and continue (a non-OK status always raises).
    ``check_fmu_state``: when the FMU declares canGetAndSetFMUstate, round-trip its state once
    at mid-run (also serialized when canSerializeFMUstate). ``inputs``: name -> sequence of
    ``(time, value)``, piecewise constant from each time on; values at ``start_time`` are set
    before initialization, later changes are external events (the driver steps to the time
    exactly, calls fmi2EnterEventMode, sets the input, runs the event iteration; cause
    ``"input"``). ``host_safe``: also check the ``one-call`` and ``field-flag`` contract
    (module docstring), which mdae_fmu's FMUs promise beyond the standard."""
    integrate = {"rk4": _rk4, "euler": _euler}[method]
    m = _load_model(fmu)
    stop = stop_time if stop_time is not None else (m.default_stop or 1.0)
    d = _Driver(m, fail_fast, max_event_iterations, host_safe)
    changes = []          # (time, name, value) of the input changes after the start
    initial_inputs = {}
    for name, signal in (inputs or {}).items():
        for t_in, value in signal:
            if t_in <= start_time:
                initial_inputs[name] = value
            else:
                changes.append((float(t_in), name, value))
    changes.sort(key=lambda c: c[0])
    rows, events = [], []
    steps = 0
    terminated = False
    try:
        d.c = d.f["fmi2Instantiate"](b"strict", fmi2ModelExchange, m.guid.encode(), None,
                                     C.byref(d.callbacks), 0, 0)
        if not d.c:
            msg = d.log[-1][2] if d.log else "no message"
            d.violation("instantiate", f"fmi2Instantiate returned NULL ({msg})", fatal=True)
        d.t = start_time
        d.call("fmi2SetupExperiment", 0, 0.0, start_time, 1, stop)
        for name, value in list((start_values or {}).items()) + list(initial_inputs.items()):
            if name not in m.settable:
                raise ValueError(f"{name!r} is not a settable variable of {m.identifier}")
            typ, vr = m.settable[name]
            vra = (C.c_uint * 1)(vr)
            if typ == "Real":
                d.call("fmi2SetReal", vra, 1, (C.c_double * 1)(float(value)))
            elif typ == "Boolean":
                d.call("fmi2SetBoolean", vra, 1, (C.c_int * 1)(int(bool(value))))
            else:
                d.call("fmi2SetInteger", vra, 1, (C.c_int * 1)(int(value)))
        d.call("fmi2EnterInitializationMode")
        d.call("fmi2ExitInitializationMode")
        # ExitInitializationMode leaves ME in Event Mode: event iteration at t0
        x = d.get_x()
        rec, x, next_t, term = d.event_iteration(("init",), x)
        events.append(rec)
        if term:
            terminated = True
        else:
            d.call("fmi2EnterContinuousTimeMode")
            x = d.get_x()
            d.check_getters(x)
            z = d.get_z()
            if np.any(z == 0.0):
                d.violation("zero-indicator", f"event indicator exactly 0 at start: {z}")
            rows.append(d.sample())
            state_checked = not (check_fmu_state and m.can_get_set_state
                                 and "fmi2GetFMUstate" in d.f)
            rhs = d.rhs
            eps_t = 1e-14
            k = 1       # index of the next output grid point start_time + k*step
            while d.t < stop - eps_t * (1 + abs(stop)) and not terminated:
                steps += 1
                if steps > max_steps:
                    d.violation("step-limit", f"more than {max_steps} steps", fatal=True)
                t0 = d.t
                while start_time + k * step <= t0 + eps_t * (1 + abs(t0)):
                    k += 1
                t1 = min(start_time + k * step, stop)
                time_event = input_event = False
                if next_t is not None and next_t <= t1 + eps_t * (1 + abs(t1)):
                    t1, time_event = next_t, True
                if changes and changes[0][0] <= t1 + eps_t * (1 + abs(t1)):
                    if changes[0][0] < t1:
                        time_event = False
                    t1, input_event = changes[0][0], True
                h = t1 - t0
                if not state_checked and t0 >= start_time + (stop - start_time) / 2:
                    state_checked = True
                    def one_step(t, xx, hh):
                        xn = integrate(rhs, t, xx, hh)
                        d.set_tx(t + hh, xn)
                        return xn
                    d.check_fmu_state(x, h, one_step)
                x1 = integrate(rhs, t0, x, h)
                d.set_tx(t1, x1)
                z1 = d.get_z()
                dom0 = _domains(z)
                state_event = bool(np.any(_domains(z1) != dom0))
                if state_event:
                    # bisection on the step length: smallest tau whose end state crossed
                    lo, hi, x_hi, z_hi = 0.0, h, x1, z1
                    while hi - lo > event_tolerance * (1 + abs(t0)):
                        mid = 0.5 * (lo + hi)
                        xm = integrate(rhs, t0, x, mid)
                        d.set_tx(t0 + mid, xm)
                        zm = d.get_z()
                        if np.any(_domains(zm) != dom0):
                            hi, x_hi, z_hi = mid, xm, zm
                        else:
                            lo = mid
                    t1, x1, z1 = t0 + hi, x_hi, z_hi
                    time_event = time_event and hi == h
                    input_event = input_event and hi == h
                    d.set_tx(t1, x1)
                d.t, x, z = t1, x1, z1
                enter = C.c_int(0)
                term_c = C.c_int(0)
                d.call("fmi2CompletedIntegratorStep", 1, C.byref(enter), C.byref(term_c))
                rows.append(d.sample())
                if term_c.value:
                    terminated = True
                    break
                causes = tuple(c for c, on in (("time", time_event), ("state", state_event),
                                               ("step", bool(enter.value)),
                                               ("input", input_event)) if on)
                if not causes:
                    continue
                if len(events) >= max_events:
                    d.violation("step-limit", f"more than {max_events} events", fatal=True)
                d.call("fmi2EnterEventMode")
                while input_event and changes and changes[0][0] <= d.t + eps_t * (1 + abs(d.t)):
                    _, name, value = changes.pop(0)
                    d.set_input(name, value)
                rec, x, next_t, term = d.event_iteration(causes, x)
                events.append(rec)
                if term:
                    terminated = True
                    break
                d.call("fmi2EnterContinuousTimeMode")
                if rec.nominals_changed:
                    d.get_nominals()
                d.check_getters(x)
                z = d.get_z()
                if np.any(z == 0.0):
                    d.violation("zero-indicator",
                                f"event indicator exactly 0 after the event at t={d.t!r}: {z}")
                rows.append(d.sample())
        d.call("fmi2Terminate")
    finally:
        if d.c:
            d.f["fmi2FreeInstance"](d.c)
            d.c = None
        if m.tmpdir is not None:
            m.tmpdir.cleanup()
    names = d.rnames + d.bnames + d.inames
    data = np.array(rows, dtype=float).reshape(len(rows), 1 + len(names))
    values = {n: data[:, i + 1] for i, n in enumerate(names)}
    return StrictResult(data[:, 0], values, tuple(events), tuple(d.violations), tuple(d.log),
                        steps, terminated)


__all__ = ["simulate_strict", "StrictResult", "EventRecord", "FMIViolation"]
