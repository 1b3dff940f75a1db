// Cup-and-Ball, corrected model (29) of RR-9334 (docs/theory.md
// §13.2): a ball on a rope of length L tied to the origin,
// gravity along -y. The rope is straight (taut = true) or slack; the guard reads the LEFT LIMIT
// of s (pre), so there is no logico-numerical fixpoint. Both modes are long: the impact when
// the rope tightens is fully inelastic (positions projected on the circle, radial velocity
// removed, a two-instant restart). Written in the paper's second-order form: e1, e2 use
// der(der(.)). Equation ids: e1, e2 = paper e1, e2; e3 = k0; e4..e7 = k1..k4.
// Initial state (not given in the paper): the ball is thrown horizontally at 6 m/s from
// (0, -0.9), inside the circle; the rope tightens at t = 0.065 s.
// Reference result: CupAndBall.csv (columns vx = der(x), vy = der(y)).
class CupAndBall "Cup-and-Ball with a unilateral rope, RR-9334 (29)"
  parameter Real L = 1.0 "rope length";
  parameter Real g = 9.81 "gravity";
  Real x(start = 0.0, fixed = true) "horizontal position";
  Real y(start = -0.9, fixed = true) "vertical position";
  Real lam "rope tension per unit mass and length";
  Real s(start = 0.19) "curve parameter: L^2 - x^2 - y^2 when slack, -lam when straight";
  Boolean taut(start = false, fixed = true) "rope straight";
equation
  0.0 = der(der(x)) + lam * x;      // (e1)
  0.0 = der(der(y)) + lam * y + g;  // (e2)
  taut = pre(s) <= 0.0;             // (k0) left limit of s: no fixpoint
  if taut then
    0.0 = L ^ 2 - (x ^ 2 + y ^ 2);  // (k1)
    0.0 = lam + s;                  // (k2)
  else
    0.0 = lam;                      // (k3)
    0.0 = L ^ 2 - (x ^ 2 + y ^ 2) - s;  // (k4)
  end if;
initial equation
  der(x) = 6.0;
  der(y) = 0.0;
end CupAndBall;
