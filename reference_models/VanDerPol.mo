// Van der Pol oscillator, as in modelica/Reference-FMUs (mu = 1, x0(0) = 2, x1(0) = 0).
// Reference result: VanDerPol.csv (0..20 s, scipy DOP853, rtol 1e-12, atol 1e-14).
class VanDerPol "Van der Pol oscillator"
  parameter Real mu = 1.0;
  Real x0(start = 2.0, fixed = true);
  Real x1(start = 0.0, fixed = true);
equation
  der(x0) = x1;
  der(x1) = mu * ((1.0 - x0 ^ 2) * x1) - x0;
end VanDerPol;
