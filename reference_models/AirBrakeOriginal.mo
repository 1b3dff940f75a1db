// The Westinghouse air brake of RR-9334 Figure 8 (docs/theory.md
// §13.3), one railcar: the connector pressure pb is an input, the next-car flow fbn = 0.
// The paper gives no numerical values: the parameters below are dimensionless choices, and the
// flow characteristic is linear (laminar), phi(u) = u. Equation ids e1..e10 = m1, m2, f1, f2,
// f3, r, p1, p2, l1, l2; e11 = v0 (guard); e12..e15 = v1..v4.
// [E] Sign of v4: the paper prints s = pr - pt in the closed branch, i.e. the complementarity
// 0 <= pr - pt _|_ fv >= 0. With fv flowing from the pipe side (pr) into the reservoir side
// (m1, m2) that is a valve which closes under forward pressure and makes the closed mode chatter.
// We use s = pt - pr (closed while the reservoir pressure exceeds the pipe pressure), which is
// the physical one-way valve; the incidence (hence every structural result) is unchanged.
// (p2) keeps the paper's factor der(x) * S * pt (docs/theory.md §14.5).
// Initial state: valve closed (g = false), pt > pr, b and x from l1, l2 (index 1).
// Original valve encoding (6): the guard reads the CURRENT s, defined by the equations the
// guard selects. Expected: ACCEPTED, g evaluated by event iteration (AirBrake.mo's pre(s)).
class AirBrakeOriginal "Westinghouse air brake, original valve encoding (RR-9334 (6))"
  parameter Real F1 = 1.0 "flow coefficient of the brake pipe connector";
  parameter Real F2 = 0.05 "leakage flow coefficient";
  parameter Real rho = 1.0 "density";
  parameter Real V = 1.0 "reservoir volume";
  parameter Real P0 = 1.0 "reference pressure";
  parameter Real S = 1.0 "piston area";
  parameter Real L = 1.0 "cylinder length";
  parameter Real K = 10.0 "spring stiffness";
  input Real pb(start = 1.0) "brake pipe (connector) pressure, the driver's control";
  Real pbn "next connector pressure";
  Real pr(start = 0.4, fixed = true) "railcar (brake pipe side) pressure";
  Real pt(start = 0.5, fixed = true) "reservoir pressure";
  Real fb "mass flow at the brake connector";
  Real fv "mass flow through the one-way valve";
  Real fl "leakage mass flow";
  Real fcl "mass flow, low-pressure side of the cylinder";
  Real fch "mass flow, high-pressure side of the cylinder";
  Real ft "mass flow into the reservoir";
  Real b(start = 0.1) "brake force";
  Real x(start = 0.01) "piston position";
  Real s(start = 0.1) "valve curve parameter";
  Boolean g(start = false) "valve open";
equation
  0.0 = fb - fv - fcl + fl;                                     // (m1) mass balance
  0.0 = fv - fch - fl - ft;                                     // (m2) mass balance
  0.0 = fb - F1 * (pb - pr);                                    // (f1) flow, phi(u) = u
  0.0 = F1 * (pbn - pr);                                        // (f2) flow, fbn = 0
  0.0 = fl - F2 * (pt - pr);                                    // (f3) leakage
  0.0 = ft - rho * V / P0 * der(pt);                            // (r) reservoir
  0.0 = rho * S * (der(x) * pr + (x - L) * der(pr)) + P0 * fcl; // (p1) piston, low side
  0.0 = rho * S * (der(x) * S * pt + x * der(pt)) - P0 * fch;   // (p2) piston, high side
  0.0 = S * (pt - pr) - b;                                      // (l1) brake force
  0.0 = K * x - b;                                              // (l2) mechanical link
  g = s <= 0.0;                                                 // (v0) same-instant s: fixpoint
  if g then
    0.0 = pr - pt;                                              // (v1) open: no pressure drop
    0.0 = fv + s;                                               // (v2)   s = -fv <= 0
  else
    0.0 = fv;                                                   // (v3) closed: no flow
    0.0 = pt - pr - s;                                          // (v4)   s = pt - pr > 0 [E]
  end if;
end AirBrakeOriginal;
