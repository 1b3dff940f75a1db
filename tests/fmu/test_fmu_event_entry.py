"""Left limits at an event when the host set time and states and read nothing before entering
Event Mode (legal in FMI 2.0): ``pre(v)`` must be the value at those states."""

import ctypes

import numpy as np
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Model

from mdae_fmu import export_fmu, load


BALL = """class Ball
  parameter Real g = 9.81;
  parameter Real e = 0.7;
  Real h(start = 1.0, fixed = true);
  Real v(start = 0.0, fixed = true);
  Real p "momentum of a 2 kg ball: an algebraic variable whose left limit the reinit reads";
equation
  der(h) = v;
  der(v) = -g;
  p = 2*v;
  when h <= 0.0 then
    reinit(v, -e*pre(p)/2);
  end when;
end Ball;
"""


def test_reinit_reads_the_states_set_just_before_event_mode(tmp_path):
    fmu = tmp_path / "Ball.fmu"
    src = tmp_path / "Ball.mo"
    src.write_text(BALL)
    export_fmu(load(src), fmu)
    md = read_model_description(str(fmu))
    unzipdir = extract(str(fmu), str(tmp_path / "x"))
    m = FMU2Model(guid=md.guid, unzipDirectory=unzipdir,
                  modelIdentifier=md.modelExchange.modelIdentifier, instanceName="ball")
    m.instantiate()
    m.setupExperiment(startTime=0.0)
    m.enterInitializationMode()
    m.exitInitializationMode()
    info = m.newDiscreteStates()
    while info[0]:
        info = m.newDiscreteStates()
    m.enterContinuousTimeMode()
    # jump straight below the floor, falling at 3 m/s; no getter called before the event
    m.setTime(0.45)
    x = np.array([-1e-9, -3.0])
    m.setContinuousStates(x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), 2)
    m.enterEventMode()
    info = m.newDiscreteStates()
    assert info[3]                                  # valuesOfContinuousStatesChanged
    x = np.zeros(2)
    m.getContinuousStates(x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), 2)
    assert abs(x[1] - 0.7 * 3.0) < 1e-12            # v+ = -e * pre(p)/2 = -e * pre(v)
    m.terminate()
    m.freeInstance()
