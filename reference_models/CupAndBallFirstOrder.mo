// Cup-and-Ball, corrected model (29) of RR-9334 (docs/theory.md
// §13.2) rewritten with the velocities vx, vy as explicit states (the usual Modelica style).
// Same physics, same initial state and same reference result (CupAndBall.csv) as CupAndBall.mo;
// the structural analysis differs in detail (x, y have derivative order 1 in the free mode).
// Equation ids: e1, e2 = paper e1, e2; e3 = k0; e4..e7 = k1..k4; e8, e9 = kinematics.
class CupAndBallFirstOrder "Cup-and-Ball with a unilateral rope, RR-9334 (29), first-order form"
  parameter Real L = 1.0 "rope length";
  parameter Real g = 9.81 "gravity";
  Real x(start = 0.0, fixed = true) "horizontal position";
  Real y(start = -0.9, fixed = true) "vertical position";
  Real vx(start = 6.0, fixed = true) "horizontal velocity";
  Real vy(start = 0.0, fixed = true) "vertical velocity";
  Real lam "rope tension per unit mass and length";
  Real s(start = 0.19) "curve parameter: L^2 - x^2 - y^2 when slack, -lam when straight";
  Boolean taut(start = false, fixed = true) "rope straight";
equation
  der(vx) = (-lam) * x;             // (e1)
  der(vy) = (-lam) * y - g;         // (e2)
  taut = pre(s) <= 0.0;             // (k0)
  if taut then
    0.0 = L ^ 2 - (x ^ 2 + y ^ 2);  // (k1)
    0.0 = lam + s;                  // (k2)
  else
    0.0 = lam;                      // (k3)
    0.0 = L ^ 2 - (x ^ 2 + y ^ 2) - s;  // (k4)
  end if;
  der(x) = vx;
  der(y) = vy;
end CupAndBallFirstOrder;
