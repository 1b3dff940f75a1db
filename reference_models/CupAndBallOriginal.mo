// Cup-and-Ball, original complementarity encoding (4)/(5) of RR-9334 (docs/theory.md
// §13.2): the guard reads the CURRENT value of s, which is
// itself defined by the equations the guard selects: a logico-numerical fixpoint.
// Expected: ACCEPTED, taut evaluated by event iteration (the cascade of CupAndBall.mo's pre(s)).
// Equation ids: e1, e2 = paper e1, e2; e3 = k0; e4..e7 = k1..k4.
class CupAndBallOriginal "Cup-and-Ball, original encoding (5): guard on the current s"
  parameter Real L = 1.0 "rope length";
  parameter Real g = 9.81 "gravity";
  Real x(start = 0.0, fixed = true) "horizontal position";
  Real y(start = -0.9, fixed = true) "vertical position";
  Real lam "rope tension per unit mass and length";
  Real s(start = 0.19) "curve parameter";
  Boolean taut(start = false) "rope straight";
equation
  0.0 = der(der(x)) + lam * x;      // (e1)
  0.0 = der(der(y)) + lam * y + g;  // (e2)
  taut = s <= 0.0;                  // (k0) same-instant s: fixpoint
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
end CupAndBallOriginal;
