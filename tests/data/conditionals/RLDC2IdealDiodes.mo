// RLDC2Diodes (reference_models/RLDC2Diodes.mo) written as the Modelica Standard Library writes
// an ideal diode (Modelica.Electrical.Analog.Ideal.IdealDiode with Ron = Goff = Vknee = 0):
// off = s < 0 on the same-instant s, no pre(). The coefficients are the literals 1 and 0, so
// each diode's branches differ in incidence (u = s*0 reads no s): the conditionals are
// structural, the four modes of RLDC2Diodes, and the guards are evaluated by event iteration
// (the transient-mode cascade). Expected: the trajectory of RLDC2Diodes.csv.
class RLDC2IdealDiodes
  parameter Real R1 = 10.0;
  parameter Real R2 = 15.0;
  parameter Real L1 = 1.0;
  parameter Real L2 = 1.5;
  parameter Real C1 = 0.1;
  parameter Real C2 = 0.15;
  Real i1;
  Real i2;
  Real j1(start = -1.0, fixed = true);
  Real j2(start = 0.0, fixed = true);
  Real u1;
  Real u2;
  Real v1(start = 0.0, fixed = true);
  Real v2(start = 0.3, fixed = true);
  Real w1;
  Real w2;
  Real x1;
  Real x2;
  Real s1(start = 1.0);
  Real s2(start = -0.3);
  Boolean off1;
  Boolean off2;
equation
  0.0 = j1 + i1 + i2 + j2;
  x1 + w1 = u1 + v1;
  u1 + v1 = u2 + v2;
  u2 + v2 = x2 + w2;
  x1 = R1 * j1;
  x2 = R2 * j2;
  w1 = L1 * der(j1);
  w2 = L2 * der(j2);
  i1 = C1 * der(v1);
  i2 = C2 * der(v2);
  off1 = s1 < 0;
  off2 = s2 < 0;
  u1 = s1 * (if off1 then 1 else 0);
  u2 = s2 * (if off2 then 1 else 0);
  i1 = s1 * (if off1 then 0 else 1);
  i2 = s2 * (if off2 then 0 else 1);
end RLDC2IdealDiodes;
