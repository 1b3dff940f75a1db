// The non-semilinear clutch of RR-9334 §11.4, model (188) (docs/theory.md
// §13.5): the torque enters shaft 1 cubically. Equation ids
// e1..e6 coincide with the paper's labels. The paper gives no parameter values; the values
// below are those of ClutchBasic (a_i = -k_i/j_i, b_i = 1/j_i), so the two clutches can be
// compared: at engagement the standardized restart is w1+ = w2+ = w2- (194), not the
// momentum-weighted mean of the linear clutch.
class ClutchNonSemilinear "clutch with a cubic torque on shaft 1, RR-9334 (188)"
  parameter Real w01 = 1.0 "initial speed of shaft 1";
  parameter Real w02 = 1.5 "initial speed of shaft 2";
  parameter Real a1 = -0.01 "damping rate of shaft 1";
  parameter Real a2 = -0.00625 "damping rate of shaft 2";
  parameter Real b1 = 1.0 "torque gain of shaft 1";
  parameter Real b2 = 0.5 "torque gain of shaft 2";
  parameter Real t1 = 5.0 "engagement time";
  parameter Real t2 = 7.0 "release time";
  Real t(start = 0.0, fixed = true) "clock";
  Boolean g(start = false) "clutch engaged";
  Real w1(start = w01, fixed = true) "speed of shaft 1";
  Real w2(start = w02, fixed = true) "speed of shaft 2";
  Real f1 "torque on shaft 1";
  Real f2 "torque on shaft 2";
equation
  der(w1) = a1 * w1 + b1 * f1 ^ 3;  // (e1)
  der(w2) = a2 * w2 + b2 * f2;      // (e2)
  if g then
    w1 - w2 = 0.0;                  // (e3)
    f1 + f2 = 0.0;                  // (e4)
  else
    f1 = 0.0;                       // (e5)
    f2 = 0.0;                       // (e6)
  end if;
  der(t) = 1.0;                     // (e7) clock
  g = t >= t1 and t <= t2;          // (e8) guard
end ClutchNonSemilinear;
