// The ideal clutch in the guarded form (3) of RR-9334 (docs/theory.md
// §13.1, equations e1..e6), with the engage signal g as a Boolean input. Equation ids assigned
// by the importer (e1..e6, source order) coincide with the paper's labels.
// Reference result: ClutchBasic.csv when the input g is true exactly on [5, 7].
class ClutchGuarded "ideal clutch, guarded form (3), engage signal as input"
  parameter Real w01 = 1.0 "initial speed of shaft 1";
  parameter Real w02 = 1.5 "initial speed of shaft 2";
  parameter Real j1 = 1.0 "inertia of shaft 1";
  parameter Real j2 = 2.0 "inertia of shaft 2";
  parameter Real k1 = 0.01 "damping of shaft 1";
  parameter Real k2 = 0.0125 "damping of shaft 2";
  input Boolean g(start = false) "clutch engaged";
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
end ClutchGuarded;
