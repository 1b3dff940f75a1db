// No continuous state: CVODE integrates a dummy state; time events and an output that
// depends on time (tests/test_cosim_modes.py).
class CsNoState "counter only"
  parameter Real period = 0.5;
  Integer n(start = 0, fixed = true);
  discrete Real next(start = 0.5, fixed = true);
  output Real y;
equation
  y = 2.0 * n + sin(time);
  when time >= pre(next) then
    n = pre(n) + 1;
    next = pre(next) + period;
  end when;
end CsNoState;
