// The RLDC2 circuit of RR-9334 §12, Figure 31 (model by Sven-Erik Mattsson; docs/theory.md
// §13.4): two RLC branches in parallel with two ideal diodes,
// each encoded by the parametric curve s = if g then i else -u, 0 = if g then u else i.
// Equation ids e1..e16 = K1, K2, K3, K4, R1, R2, L1, L2, C1, C2, S1, S2, Z1, Z2, G1, G2.
// Sign convention: as printed (Figure 31). With s = -u when blocking and g = (s >= 0), a
// blocking diode stays blocked while u > 0 (docs/theory.md §14.2); kept as printed.
// Exactly as printed in Figure 31: guards g = (s >= 0) on the CURRENT s (logico-numerical
// fixpoint) and the published starts. Expected: ACCEPTED, W-INIT-INCONSISTENT as Published.
class RLDC2Original "RLDC2 as printed in Figure 31 (guards on the current s)"
  parameter Real R1 = 10.0;
  parameter Real R2 = 15.0;
  parameter Real L1 = 1.0;
  parameter Real L2 = 1.5;
  parameter Real C1 = 0.1;
  parameter Real C2 = 0.15;
  Real i1 "capacitor/diode current, branch 1";
  Real i2 "capacitor/diode current, branch 2";
  Real j1(start = 2.0, fixed = true) "inductor current, branch 1";
  Real j2(start = 1.0, fixed = true) "inductor current, branch 2";
  Real u1 "diode voltage 1";
  Real u2 "diode voltage 2";
  Real v1(start = 0.5, fixed = true) "capacitor voltage 1";
  Real v2(start = 1.0, fixed = true) "capacitor voltage 2";
  Real w1 "inductor voltage 1";
  Real w2 "inductor voltage 2";
  Real x1 "resistor voltage 1";
  Real x2 "resistor voltage 2";
  Real s1 "diode curve parameter 1";
  Real s2 "diode curve parameter 2";
  Boolean g1(start = false) "diode 1 passing";
  Boolean g2(start = false) "diode 2 passing";
equation
  0.0 = j1 + i1 + i2 + j2;                // (K1)
  x1 + w1 = u1 + v1;                      // (K2)
  u1 + v1 = u2 + v2;                      // (K3)
  u2 + v2 = x2 + w2;                      // (K4)
  x1 = R1 * j1;                           // (R1)
  x2 = R2 * j2;                           // (R2)
  w1 = L1 * der(j1);                      // (L1)
  w2 = L2 * der(j2);                      // (L2)
  i1 = C1 * der(v1);                      // (C1)
  i2 = C2 * der(v2);                      // (C2)
  s1 = if g1 then i1 else -u1;            // (S1)
  s2 = if g2 then i2 else -u2;            // (S2)
  0.0 = if g1 then u1 else i1;            // (Z1)
  0.0 = if g2 then u2 else i2;            // (Z2)
  g1 = s1 >= 0.0;                         // (G1)
  g2 = s2 >= 0.0;                         // (G2)
end RLDC2Original;
