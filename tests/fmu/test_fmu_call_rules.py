"""Which calls an FMU accepts when (issue 25, deliver 5): a discrete input is set in Event or
Initialization Mode in Model Exchange, never in Continuous-Time Mode (FMI 2.0.5 section 3.2.3),
while Co-Simulation accepts any input between two steps; after an fmi2Error the instance is in
the Error state: fmi2NewDiscreteStates and fmi2CompletedIntegratorStep ask for termination,
refused calls are logged once then counted, fmi2Terminate is refused, fmi2Reset and
fmi2SetFMUstate bring the instance back."""

from __future__ import annotations

import ctypes

import pytest
from fmpy import read_model_description
from fmpy.fmi2 import fmi2EventInfo

from cosim_util import build, build_me, close_slave, open_slave
from fmu_files import export_text

ERROR = 3


def continuous_time(name_or_fmu):
    """The ME interface in Continuous-Time Mode at t = 0."""
    fmu = build_me(name_or_fmu) if isinstance(name_or_fmu, str) else name_or_fmu
    s = open_slave(fmu, stop_time=10.0, model_exchange=True)
    s.fmu.newDiscreteStates()
    s.fmu.enterContinuousTimeMode()
    return s


def raw(s, name, *args):
    """An FMI function called without FMPy's status check: its status."""
    return getattr(s.fmu.dll, name)(s.fmu.component, *args)


def new_discrete_states(s):
    info = fmi2EventInfo()
    info.newDiscreteStatesNeeded = 1
    status = raw(s, "fmi2NewDiscreteStates", ctypes.byref(info))
    return status, info


def test_discrete_input_refused_in_continuous_time_mode():
    s = continuous_time("ClutchGuarded")
    g = s.vrs["g"]
    assert s.call("setBoolean", [g], [True]) == ERROR
    (message,) = [m for _, _, m in s.errors()]
    assert message.startswith(f"fmi2SetBoolean: value reference {g} is a discrete input "
                              "(variability \"discrete\"), which Model Exchange sets in Event "
                              "Mode or Initialization Mode only")
    assert "(FMI 2.0.5 section 3.2.3, table of the state machine, condition 5)" in message
    assert 'fmi2SetReal "for a variable with causality = "input" and variability = ' \
           '"continuous", and for a continuous-time state variable"' in message
    assert s.fmu.getBoolean([g]) == [False]          # not applied at the next event either
    close_slave(s)


def test_discrete_input_set_in_event_mode_restarts_the_clutch():
    """g set in Event Mode at t = 0: the clutch engages in the same event iteration, the two
    speeds jump to the momentum-conserving (j1 w1 + j2 w2)/(j1 + j2) = (1 + 3)/3."""
    s = continuous_time("ClutchGuarded")
    s.fmu.enterEventMode()
    s.fmu.setBoolean([s.vrs["g"]], [True])
    s.fmu.newDiscreteStates()
    s.fmu.enterContinuousTimeMode()
    assert s.get(["w1", "w2"]) == pytest.approx([4 / 3, 4 / 3], rel=1e-12)
    assert not s.errors()
    close_slave(s)


@pytest.mark.requires_sundials
def test_cosimulation_sets_discrete_inputs_between_steps():
    s = open_slave(build("ClutchGuarded"), stop_time=10.0)
    s.fmu.doStep(0.0, 1.0)
    assert s.call("setBoolean", [s.vrs["g"]], [True]) == 0
    s.fmu.doStep(1.0, 1.0)
    w1, w2 = s.get(["w1", "w2"])
    assert w1 == pytest.approx(w2, rel=1e-9) and not s.errors()
    close_slave(s)


def test_real_input_declared_discrete(tmp_path):
    """``input discrete Real u`` is an FMI input of variability discrete: refused in
    Continuous-Time Mode like a Boolean; a continuous Real input is accepted there."""
    fmu = export_text(tmp_path, """model DiscreteInput
  input discrete Real u(start = 1.0);
  input Real v(start = 2.0);
  Real x(start = 0, fixed = true);
equation
  der(x) = u + v;
end DiscreteInput;
""", "DiscreteInput")
    var = {v.name: v for v in read_model_description(str(fmu)).modelVariables}
    assert (var["u"].variability, var["v"].variability) == ("discrete", "continuous")
    s = continuous_time(fmu)
    assert s.call("setReal", [s.vrs["v"]], [3.0]) == 0
    assert s.call("setReal", [s.vrs["u"]], [5.0]) == ERROR
    assert "is a discrete input" in s.errors()[0][2]
    close_slave(s)


def test_error_state_asks_for_termination_and_logs_once():
    """After an fmi2Error, 1000 more fmi2NewDiscreteStates (fmuCheck's loop): each returns
    fmi2Error with terminateSimulation and no further iteration; the log gets the first
    refusal, then the counts at 10, 100 and 1000."""
    s = continuous_time("ClutchBasic")
    assert s.call("newDiscreteStates") == ERROR     # not in Continuous-Time Mode
    assert s.errors()[-1][2] == ("fmi2NewDiscreteStates: illegal call sequence (not allowed "
                                 "in Continuous-Time Mode)")
    n = len(s.messages)
    for _ in range(1000):
        status, info = new_discrete_states(s)
        assert (status, info.terminateSimulation, info.newDiscreteStatesNeeded) == (ERROR, 1, 0)
    log = [m for _, _, m in s.messages[n:]]
    assert len(log) == 4
    assert log[0].startswith("fmi2NewDiscreteStates: illegal call sequence: an earlier call "
                             "returned fmi2Error, and in the Error state only fmi2Reset, "
                             "fmi2SetFMUstate")
    assert log[1:] == [f"fmi2NewDiscreteStates: {k} calls refused in the Error state so far"
                       for k in (10, 100, 1000)]
    close_slave(s)


def test_completed_step_after_error_asks_for_termination():
    s = continuous_time("ClutchBasic")
    assert s.call("enterInitializationMode") == ERROR
    enter, term = ctypes.c_int(1), ctypes.c_int(0)
    assert raw(s, "fmi2CompletedIntegratorStep", 1, ctypes.byref(enter),
               ctypes.byref(term)) == ERROR
    assert (enter.value, term.value) == (0, 1)
    close_slave(s)


def test_leaving_the_error_state():
    """fmi2Terminate is refused after an fmi2Error (FMI 2.0.5 section 2.1.6); the values
    stay readable; fmi2SetFMUstate of a state saved before, or fmi2Reset, leave the Error
    state, and a later refusal is logged again."""
    s = continuous_time("ClutchBasic")
    saved = s.fmu.getFMUstate()
    before = s.get(["w1", "w2"])
    assert s.call("enterEventMode") == 0
    assert s.call("enterInitializationMode") == ERROR  # not in Event Mode
    assert s.call("terminate") == ERROR
    assert s.get(["w1", "w2"]) == before               # values for debugging
    s.fmu.setFMUstate(saved)
    dx = (ctypes.c_double * 3)()
    s.fmu.getDerivatives(dx, 3)                        # Continuous-Time Mode again
    n = len(s.messages)
    assert s.call("newDiscreteStates") == ERROR
    assert s.call("newDiscreteStates") == ERROR
    log = [m for _, _, m in s.messages[n:]]
    assert len(log) == 2 and "illegal call sequence" in log[1] and "Error state" in log[1]
    s.fmu.reset()
    s.fmu.setupExperiment(startTime=0.0)
    s.fmu.enterInitializationMode()
    s.fmu.exitInitializationMode()
    s.fmu.freeFMUstate(saved)
    close_slave(s)
