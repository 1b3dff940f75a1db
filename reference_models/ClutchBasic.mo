// The ideal clutch of RR-9334 Figure 2 (docs/theory.md §13.1),
// written in OpenModelica's flat style. Two shafts, engaged for t1 <= t <= t2.
// OpenModelica and Dymola stop at t = 5 s with a division by zero on this model.
class ClutchBasic "ideal clutch, RR-9334 Figure 2"
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
  der(t) = 1.0;
  g = t >= t1 and t <= t2;
  j1 * der(w1) = (-k1) * w1 + f1;
  j2 * der(w2) = (-k2) * w2 + f2;
  0.0 = if g then w1 - w2 else f1;
  f1 + f2 = 0.0;
end ClutchBasic;
