// Cartesian pendulum (index 3 classically; 2 in RR-9334's sense, max c_f): one mode, a
// constraint that needs two differentiations (docs/theory.md §4.6,
// §4.7). x and vx are fixed at t = 0; y, vy and lambda are
// found by the initialization (y from the constraint, start guess below the pivot).
// Reference result: Pendulum.csv (angle form theta'' = -(g/L) sin(theta), DOP853, rtol 1e-12).
class Pendulum "Cartesian pendulum, index 3"
  parameter Real m = 1.0 "mass";
  parameter Real L = 1.0 "length";
  parameter Real g = 9.81 "gravity";
  Real x(start = 0.6, fixed = true) "horizontal position";
  Real y(start = -0.8) "vertical position (free start)";
  Real vx(start = 0.0, fixed = true) "horizontal velocity";
  Real vy(start = 0.0) "vertical velocity (free start)";
  Real lambda "constraint force per unit length";
equation
  der(x) = vx;
  der(y) = vy;
  m * der(vx) = (-lambda) * x;
  m * der(vy) = (-lambda) * y - m * g;
  x ^ 2 + y ^ 2 = L ^ 2;
end Pendulum;
