// The ideal clutch of RR-9334 Figure 2 (reference_models/ClutchBasic.mo) driven through an
// input torque tau on shaft 1, for the two-FMU libcosim system (tests/test_cosim_libcosim.py):
// engaged for t1 <= t <= t2 (clock state t). It integrates its angular momentum balance:
// H = j1 w1 + j2 w2 changes only by the external torques, dH/dt = tau - k1 w1 - k2 w2
// (the clutch torques f1 + f2 = 0 cancel, also at the engagement impulse), so
// H - H(0) = Wnet at all times, continuous across the engagement and the release.
class CsClutch "ideal clutch, shaft 1 driven by an input torque"
  parameter Real j1 = 1.0 "inertia of shaft 1";
  parameter Real j2 = 2.0 "inertia of shaft 2";
  parameter Real k1 = 0.01 "damping of shaft 1";
  parameter Real k2 = 0.0125 "damping of shaft 2";
  parameter Real t1 = 5.0 "engagement time";
  parameter Real t2 = 7.0 "release time";
  input Real tau(start = 0.0) "driving torque on shaft 1";
  Real t(start = 0.0, fixed = true) "clock";
  Boolean g(start = false) "clutch engaged";
  output Real w1(start = 0.0, fixed = true) "speed of shaft 1";
  output Real w2(start = 1.5, fixed = true) "speed of shaft 2";
  Real f1 "clutch torque on shaft 1";
  Real f2 "clutch torque on shaft 2";
  Real Wnet(start = 0.0, fixed = true) "angular impulse of the external torques";
  Real Tin(start = 0.0, fixed = true) "angular impulse of the input torque";
  output Real H "angular momentum";
equation
  der(t) = 1.0;
  g = t >= t1 and t <= t2;
  j1 * der(w1) = tau - k1 * w1 + f1;
  j2 * der(w2) = (-k2) * w2 + f2;
  0.0 = if g then w1 - w2 else f1;
  f1 + f2 = 0.0;
  der(Wnet) = tau - k1 * w1 - k2 * w2;
  der(Tin) = tau;
  H = j1 * w1 + j2 * w2;
end CsClutch;
