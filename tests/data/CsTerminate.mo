// A ramp that asks to stop the simulation when it reaches 0.55 (tests/test_cosim_fmpy.py):
// a Co-Simulation step containing t = 0.55 returns fmi2Discard with lastSuccessfulTime 0.55.
class CsTerminate "ramp with terminate()"
  Real x(start = 0.0, fixed = true) "ramp";
equation
  der(x) = 1.0;
  when x >= 0.55 then
    terminate("x reached 0.55");
  end when;
end CsTerminate;
