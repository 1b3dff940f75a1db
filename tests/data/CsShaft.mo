// A shaft driven by an input torque, with viscous friction; it integrates its own energy
// balance: kinetic energy + dissipated energy = work of the input torque (tests/test_cosim_*).
class CsShaft "shaft driven by an input torque"
  parameter Real J = 0.5 "inertia";
  parameter Real d = 0.1 "viscous friction coefficient";
  input Real tau(start = 0.0) "driving torque";
  output Real w(start = 0.0, fixed = true) "speed";
  Real phi(start = 0.0, fixed = true) "angle";
  Real Ediss(start = 0.0, fixed = true) "energy dissipated by friction";
  Real Win(start = 0.0, fixed = true) "work of the input torque";
  output Real Ekin "kinetic energy";
equation
  der(phi) = w;
  J * der(w) = tau - d * w;
  der(Ediss) = d * w * w;
  der(Win) = tau * w;
  Ekin = 0.5 * J * w * w;
end CsShaft;
