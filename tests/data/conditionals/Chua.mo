// Chua's circuit with the piecewise-linear resistor of the Modelica Standard Library's
// Modelica.Electrical.Analog.Examples.Utilities.NonlinearResistor (Ga, Gb, Ve): its three
// branches read the same unknowns (i, v) with other coefficients, so the conditional is not
// structural: one mode, two event indicators (v = -Ve, v = Ve).
class Chua
  parameter Real L = 18.0;
  parameter Real Ro = 12.5e-3;
  parameter Real G = 0.565;
  parameter Real C1 = 10.0;
  parameter Real C2 = 100.0;
  parameter Real Ga = -0.757576;
  parameter Real Gb = -0.409091;
  parameter Real Ve = 1.0;
  Real iL(start = 0.0, fixed = true);
  Real v1(start = 4.0, fixed = true);
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
