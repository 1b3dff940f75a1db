// Chua's circuit with the piecewise-linear resistor of the Modelica Standard Library's
// Modelica.Electrical.Analog.Examples.Utilities.NonlinearResistor (Ga, Gb, Ve): its three
// branches read the same unknowns (i, v) with other coefficients, so the conditional is not
// structural: one mode, two event indicators (v = -Ve, v = Ve). Element values of the
// dimensionless double scroll (alpha = 15.6, beta = 28, m0 = -8/7, m1 = -5/7), so that the
// trajectory crosses both breakpoints many times in 100 s.
class Chua
  parameter Real L = 1.0 / 28.0;
  parameter Real Ro = 0.0;
  parameter Real G = 1.0;
  parameter Real C1 = 1.0 / 15.6;
  parameter Real C2 = 1.0;
  parameter Real Ga = -8.0 / 7.0;
  parameter Real Gb = -5.0 / 7.0;
  parameter Real Ve = 1.0;
  Real iL(start = 0.0, fixed = true);
  Real v1(start = 0.7, fixed = true);
  Real v2(start = 0.0, fixed = true);
  Real iN "current through the nonlinear resistor";
  Real vN "voltage across the nonlinear resistor";
equation
  L * der(iL) = -v2 - Ro * iL;
  C2 * der(v2) = iL - G * (v2 - v1);
  C1 * der(v1) = G * (v2 - v1) - iN;
  vN = v1;
  iN = if vN < -Ve then Gb * (vN + Ve) - Ga * Ve elseif vN > Ve then Gb * (vN - Ve) + Ga * Ve else Ga * vN;
end Chua;
