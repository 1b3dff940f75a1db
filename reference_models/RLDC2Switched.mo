// RLDC2 (RR-9334 §12, Figure 31; docs/theory.md §13.4) with its two
// ideal diodes replaced by ideal switches whose states g1, g2 are Boolean inputs (closed: the
// switch voltage u is 0; open: its current i is 0). The four modes and the twelve mode changes
// are those of RLDC2, but the host decides when they happen, so a switch can close on two
// capacitors at different voltages or open on inductor currents that do not cancel. Expected:
// ACCEPTED; per-mode index TT = 1, TF = 0, FT = 0, FF = 1; restarts (docs/theory.md §13.4):
// into TT charge sharing v1+ = v2+ = (C1 v1- + C2 v2-)/(C1 + C2), into FF flux sharing
// j1+ = -j2+ = (L1 j1- - L2 j2-)/(L1 + L2), every other change continuous.
// Equation ids e1..e12 = K1, K2, K3, K4, R1, R2, L1, L2, C1, C2, Z1, Z2.
// Start: TF (switch 1 closed), no constraint on the states; reference run RLDC2Switched.csv
// with the input schedule of make_references.py (RLDC2_SWITCHED_SCHEDULE).
class RLDC2Switched "RLDC2 with the diodes replaced by ideal switches driven by Boolean inputs"
  parameter Real R1 = 10.0;
  parameter Real R2 = 15.0;
  parameter Real L1 = 1.0;
  parameter Real L2 = 1.5;
  parameter Real C1 = 0.1;
  parameter Real C2 = 0.15;
  input Boolean g1(start = true) "switch 1 closed";
  input Boolean g2(start = false) "switch 2 closed";
  Real i1 "capacitor current, branch 1";
  Real i2 "capacitor current, branch 2";
  Real j1(start = 1.0, fixed = true) "inductor current, branch 1";
  Real j2(start = 0.0, fixed = true) "inductor current, branch 2";
  Real u1 "switch voltage 1";
  Real u2 "switch voltage 2";
  Real v1(start = 0.0, fixed = true) "capacitor voltage 1";
  Real v2(start = 0.5, fixed = true) "capacitor voltage 2";
  Real w1 "inductor voltage 1";
  Real w2 "inductor voltage 2";
  Real x1 "resistor voltage 1";
  Real x2 "resistor voltage 2";
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
  0.0 = if g1 then u1 else i1;
  0.0 = if g2 then u2 else i2;
end RLDC2Switched;
