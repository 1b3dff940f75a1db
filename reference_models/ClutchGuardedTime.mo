// The ideal clutch in the guarded form (3) of RR-9334 (docs/theory.md
// §13.1, e1..e6), with g computed from the clock t exactly as in ClutchBasic (Figure 2).
// ClutchBasic (e4 unguarded, one if-expression) and this model (e4 guarded, e5/e6 explicit)
// must give the same mode automaton, restart maps and per-mode code (test T-CL-6).
// Equation ids e1..e6 coincide with the paper's labels; e7, e8 are the clock and the guard.
class ClutchGuardedTime "ideal clutch, guarded form (3), engaged for t1 <= t <= t2"
  parameter Real w01 = 1.0 "initial speed of shaft 1";
  parameter Real w02 = 1.5 "initial speed of shaft 2";
  parameter Real j1 = 1.0 "inertia of shaft 1";
  parameter Real j2 = 2.0 "inertia of shaft 2";
  parameter Real k1 = 0.01 "damping of shaft 1";
  parameter Real k2 = 0.0125 "damping of shaft 2";
  parameter Real t1 = 5.0 "engagement time";
  parameter Real t2 = 7.0 "release time";
  Real t(start = 0.0, fixed = true) "clock";
  Boolean g(start = false) "clutch engaged";
  Real w1(start = w01, fixed = true) "speed of shaft 1";
  Real w2(start = w02, fixed = true) "speed of shaft 2";
  Real f1 "torque on shaft 1";
  Real f2 "torque on shaft 2";
equation
  j1 * der(w1) = (-k1) * w1 + f1;   // (e1)
  j2 * der(w2) = (-k2) * w2 + f2;   // (e2)
  if g then
    w1 - w2 = 0.0;                  // (e3)
    f1 + f2 = 0.0;                  // (e4)
  else
    f1 = 0.0;                       // (e5)
    f2 = 0.0;                       // (e6)
  end if;
  der(t) = 1.0;                     // (e7) clock
  g = t >= t1 and t <= t2;          // (e8) guard, as in Figure 2
end ClutchGuardedTime;
