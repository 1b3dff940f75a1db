// RLDC2 (RR-9334 §12, Figure 31; docs/theory.md §13.4) with the
// physical ideal-diode law 0 <= i _|_ u <= 0 (blocking while the forward voltage u < 0). The
// printed encoding s = if g then i else -u blocks while u > 0 (docs/theory.md
// §14.2) and makes conducting starts chatter; here the blocking branch reads s = u. Same
// equations otherwise, same parameters, left-limit guards g = (pre(s) >= 0).
// Equation ids e1..e16 = K1, K2, K3, K4, R1, R2, L1, L2, C1, C2, S1, S2, Z1, Z2, G1, G2.
// Expected: ACCEPTED (the same modes and automaton as RLDC2.mo). Run (RLDC2Diodes.csv): from TF
// (diode 1 conducting, i1 = 1 charges C1) diode 2 starts conducting when v1 reaches v2
// (t = 0.0358, TF -> TT, continuous since v1 = v2 there), then both diode currents vanish
// together (t = 0.2620, TT -> FF, continuous since j1 + j2 = 0 there), and the circuit stays in
// FF: the node voltage is 0 (R1/L1 = R2/L2), so u_k = -v_k < 0.
class RLDC2Diodes "RLDC2 with the physical diode sign convention"
  parameter Real R1 = 10.0;
  parameter Real R2 = 15.0;
  parameter Real L1 = 1.0;
  parameter Real L2 = 1.5;
  parameter Real C1 = 0.1;
  parameter Real C2 = 0.15;
  Real i1 "capacitor/diode current, branch 1";
  Real i2 "capacitor/diode current, branch 2";
  Real j1(start = -1.0, fixed = true) "inductor current, branch 1";
  Real j2(start = 0.0, fixed = true) "inductor current, branch 2";
  Real u1 "diode forward voltage 1";
  Real u2 "diode forward voltage 2";
  Real v1(start = 0.0, fixed = true) "capacitor voltage 1";
  Real v2(start = 0.3, fixed = true) "capacitor voltage 2";
  Real w1 "inductor voltage 1";
  Real w2 "inductor voltage 2";
  Real x1 "resistor voltage 1";
  Real x2 "resistor voltage 2";
  Real s1(start = 1.0) "diode curve parameter 1";
  Real s2(start = -0.3) "diode curve parameter 2";
  Boolean g1(start = true, fixed = true) "diode 1 conducting";
  Boolean g2(start = false, fixed = true) "diode 2 conducting";
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
  s1 = if g1 then i1 else u1;             // (S1)
  s2 = if g2 then i2 else u2;             // (S2)
  0.0 = if g1 then u1 else i1;            // (Z1)
  0.0 = if g2 then u2 else i2;            // (Z2)
  g1 = pre(s1) >= 0.0;                    // (G1)
  g2 = pre(s2) >= 0.0;                    // (G2)
end RLDC2Diodes;
