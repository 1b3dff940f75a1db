// Cup-and-Ball with the rope straight for ONE instant only (the elastic reading, RR-9334 §3.5;
// docs/theory.md §13.2, §7).
// The straight mode is declared transient by guarding k1, k2 with edge(contact) (the normalized
// form "if gamma_up" of "when gamma", Def. 30): it is enabled exactly at the instant where
// contact rises. NO impact law is given, so the transient instant is underdetermined.
// Expected verdict: REJECTED (E-TRANSIENT-UNDER: "underdetermined at transient mode
// edge(contact); one more equation (an impact law) is needed").
// The guard reads only the states x, y, so there is no fixpoint.
// Equation ids: e1, e2 = paper e1, e2; e3 = guard; e4..e7 = k1..k4; e8, e9 = kinematics.
class CupAndBallElasticNoLaw "Cup-and-Ball, transient straight rope, no impact law"
  parameter Real L = 1.0 "rope length";
  parameter Real g = 9.81 "gravity";
  Real x(start = 0.0, fixed = true) "horizontal position";
  Real y(start = 0.0, fixed = true) "vertical position";
  Real vx(start = 1.0, fixed = true) "horizontal velocity";
  Real vy(start = 0.0, fixed = true) "vertical velocity";
  Real lam "rope tension per unit mass and length";
  Real s "curve parameter";
  Boolean contact(start = false, fixed = true) "ball reaches the end of the rope";
equation
  der(vx) = (-lam) * x;             // (e1)
  der(vy) = (-lam) * y - g;         // (e2)
  contact = x ^ 2 + y ^ 2 >= L ^ 2; // guard on states only
  if edge(contact) then
    0.0 = L ^ 2 - (x ^ 2 + y ^ 2);  // (k1) rope straight, one instant
    0.0 = lam + s;                  // (k2)
  else
    0.0 = lam;                      // (k3) rope slack
    0.0 = L ^ 2 - (x ^ 2 + y ^ 2) - s;  // (k4)
  end if;
  der(x) = vx;
  der(y) = vy;
end CupAndBallElasticNoLaw;
