"""The pythonfmu slave class of a python-backend FMU (docs/python-backend.md).

Shipped inside the FMU as ``resources/mdae_pyfmu_slave.py`` next to the runtime
(``mdae_pyfmu_runtime.py``) and the plan (``mdae_plan.json``). The same file serves every
model: the model is the plan, read from the FMU's resources directory; the variables are
registered from the plan's list with getters and setters on the runtime's value arrays.
"""

import json
import math
from pathlib import Path

from pythonfmu import Fmi2Slave
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Boolean, Integer, Real

from mdae_pyfmu_runtime import SimulationError, Simulator



def _offset_wrapper_release() -> None:
    """Take one reference to this module's dictionary that is never given back.

    pythonfmu's native wrapper (0.7, ``findClass`` in PySlaveInstance.cpp) runs this file's
    code once per fmi2Instantiate and then releases the module's dictionary, a borrowed
    reference it does not own. Each instance thus leaves the dictionary's count one short,
    and the interpreter frees it while the module still points to it: the host aborts at
    exit ("corrupted double-linked list", 1 run in a few hundred under load). The module
    lives until the process ends, so one reference more per run of this code (the import
    plus each instantiation) costs nothing and keeps the count above the true holders.
    """
    try:
        import ctypes
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
    except (ImportError, AttributeError, OSError):   # no C API reachable: nothing to offset
        pass


_offset_wrapper_release()

_TYPES = {"Real": (Real, "r", float), "Integer": (Integer, "i", int),
          "Boolean": (Boolean, "b", bool)}


def _printf_safe(message: str) -> str:
    """``message`` with every '%' doubled: the host's logger reads it as a printf format
    (FMI 2.0 §2.1.5), and text from the model (assertion messages) must print as written."""
    return message.replace("%", "%%")


class MdaeModel(Fmi2Slave):
    """Co-Simulation slave running the plan of one model (module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        plan = json.loads((Path(self.resources) / "mdae_plan.json").read_text("utf-8"))
        self.modelName = plan["identifier"]
        self.description = plan["name"]
        self.guid = plan["guid"]
        self.author = "mdae_fmu (python backend)"
        de = plan.get("default_experiment") or {}
        self.default_experiment = DefaultExperiment(
            de.get("startTime"), de.get("stopTime"), de.get("stepSize"), de.get("tolerance"))
        self.sim = Simulator(plan)
        self.t_stop = math.inf      # the integrator's bound: the host's stopTime, if any
        for v in plan["variables"]:
            cls, arr, cast = _TYPES[v["type"]]
            self.register_variable(cls(
                v["name"], causality=Fmi2Causality[v["causality"]],
                variability=Fmi2Variability[v["variability"]],
                initial=Fmi2Initial[v["initial"]] if v["initial"] else None,
                description=v["description"],
                getter=self._getter(arr, v["vr"]),
                setter=self._setter(arr, v["vr"], cast)), nested=False)

    def _getter(self, arr, k):
        values = getattr(self.sim, arr)
        return lambda: values[k]

    def _setter(self, arr, k, cast):
        sim = self.sim

        def set_value(v):
            getattr(sim, arr)[k] = cast(v)
            sim.host_set.add((arr, k))
            sim.dirty = True           # a value set between steps: event iteration, restart
        return set_value

    def setup_experiment(self, start_time, stop_time, tolerance):
        self.sim.time = start_time
        if stop_time is not None:
            self.t_stop = stop_time
        if tolerance:
            self.sim.set_tolerance(tolerance)

    def exit_initialization_mode(self):
        try:
            self.sim.initialize(self.sim.time)
        except (SimulationError, ArithmeticError, ValueError) as err:
            self.log(_printf_safe(str(err)), Fmi2Status.error)
            raise

    def do_step(self, current_time, step_size):
        try:
            self.sim.do_step(current_time, step_size, self.t_stop)
        except (SimulationError, ArithmeticError, ValueError) as err:
            self.log(_printf_safe(f"{err}"), Fmi2Status.error)
            return False
        finally:
            for message in self.sim.warnings:
                self.log(_printf_safe(message), Fmi2Status.warning)
            self.sim.warnings.clear()
        return True
