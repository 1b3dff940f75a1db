// Dahlquist's test equation: one state, one mode. Closed form x(t) = exp(-k t).
// Reference result: Dahlquist.csv (0..10 s).
class Dahlquist "Dahlquist test equation der(x) = -k x"
  parameter Real k = 1.0 "decay rate";
  Real x(start = 1.0, fixed = true);
equation
  der(x) = (-k) * x;
end Dahlquist;
