"""Helpers of the Co-Simulation tests: FMUs built once per session, and a thin FMPy
``FMU2Slave`` wrapper that records the log messages and the status of every call."""

from __future__ import annotations

import shutil
import tempfile
from ctypes import byref, c_void_p
from dataclasses import dataclass, field
from pathlib import Path

from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Slave, defaultCallbacks, fmi2CallbackFunctions,
                       fmi2CallbackLoggerTYPE)

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference_models"
DATA = Path(__file__).resolve().parent / "data"

_CACHE: dict[tuple, Path] = {}
_TMP = None


def model_path(name: str) -> Path:
    p = REFERENCE / f"{name}.mo"
    return p if p.exists() else DATA / f"{name}.mo"


def build(name: str, fmi_type: str = "both", tolerance: float | None = 1e-10) -> Path:
    """The FMU of model ``name`` (reference_models/ or tests/data/), built once per process;
    ``tolerance``: DefaultExperiment tolerance (the CS default when the host gives none, as
    libcosim does; tests that need another tolerance pass it to fmi2SetupExperiment)."""
    global _TMP
    from mdae_fmu import load
    from mdae_fmu.fmu.export import export
    key = (name, fmi_type, tolerance)
    if key not in _CACHE:
        if _TMP is None:
            _TMP = Path(tempfile.mkdtemp(prefix="mdae_cosim_tests_"))
        de = None if tolerance is None else {"tolerance": tolerance}
        _CACHE[key] = export(load(model_path(name)),
                             _TMP / f"{name}_{fmi_type}_{tolerance}.fmu",
                             fmi_type=fmi_type, default_experiment=de, progress=False)
    return _CACHE[key]


def cleanup() -> None:
    global _TMP
    if _TMP is not None:
        shutil.rmtree(_TMP, ignore_errors=True)
        _TMP = None
        _CACHE.clear()


@dataclass
class Slave:
    """A Co-Simulation instance driven call by call. ``messages``: (status, category, text)
    of every log call. `call` returns the status instead of raising."""
    fmu: FMU2Slave
    vrs: dict
    messages: list = field(default_factory=list)

    def call(self, fname: str, *args) -> int:
        try:
            r = getattr(self.fmu, fname)(*args)
        except FMICallException as e:
            return e.status
        return 0 if r is None else r

    def get(self, names):
        return self.fmu.getReal([self.vrs[n] for n in names])

    def errors(self):
        return [m for m in self.messages if m[0] >= 3]


def open_slave(fmu_path: Path, start_time: float = 0.0, stop_time: float | None = None,
               tolerance: float | None = None, logging: bool = False,
               init: bool = True) -> Slave:
    """Instantiate (and by default initialize) the CS interface of ``fmu_path``."""
    md = read_model_description(str(fmu_path))
    unzip = extract(str(fmu_path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="cs")
    slave = Slave(fmu, {v.name: v.valueReference for v in md.modelVariables})

    def log(env, instance, status, category, message):
        slave.messages.append((status, category.decode(), message.decode()))

    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(log)
    cb.allocateMemory = defaultCallbacks.allocateMemory
    cb.freeMemory = defaultCallbacks.freeMemory
    slave._callbacks = cb                       # keep the ctypes callbacks alive
    fmu.instantiate(callbacks=cb, loggingOn=logging)
    slave._unzip = unzip
    if init:
        fmu.setupExperiment(tolerance=tolerance, startTime=start_time, stopTime=stop_time)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
    return slave


def close_slave(slave: Slave) -> None:
    try:
        slave.fmu.terminate()
    except FMICallException:
        pass
    slave.fmu.freeInstance()
    shutil.rmtree(slave._unzip, ignore_errors=True)


__all__ = ["build", "open_slave", "close_slave", "Slave", "cleanup", "byref", "c_void_p"]
