// An event iteration that cannot settle, which the compile-time check cannot decide (s is not
// a constant in either mode): in mode g, s = -x < 0 selects not g; there s = x > 0 selects g
// again. Expected: accepted by the analysis; the FMU returns fmi2Error at the first event
// iteration, with a logged message naming the guard g.
class ChatterRuntime
  Real x(start = 1.0, fixed = true);
  Real s(start = 1.0);
  Boolean g;
equation
  der(x) = 1.0;
  g = s >= 0;
  if g then
    s = -x;
  else
    s = x;
  end if;
end ChatterRuntime;
