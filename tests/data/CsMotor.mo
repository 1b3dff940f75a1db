// A DC motor at constant voltage: armature current i, back-EMF from the input speed w,
// output torque k i. It integrates its electrical energy balance:
// supplied energy = resistive losses + magnetic energy + mechanical work (tests/test_cosim_*),
// and the angular impulse it delivers (the integral of its torque).
class CsMotor "DC motor with speed input and torque output"
  parameter Real V = 2.0 "supply voltage";
  parameter Real R = 1.0 "armature resistance";
  parameter Real L = 0.05 "armature inductance";
  parameter Real k = 0.5 "motor constant";
  input Real w(start = 0.0) "shaft speed";
  output Real tau "torque on the shaft";
  Real i(start = 0.0, fixed = true) "armature current";
  Real Esup(start = 0.0, fixed = true) "energy supplied";
  Real Eres(start = 0.0, fixed = true) "resistive losses";
  Real Wmech(start = 0.0, fixed = true) "mechanical work";
  Real Ang(start = 0.0, fixed = true) "angular impulse delivered, integral of tau";
  output Real Emag "magnetic energy";
equation
  L * der(i) = V - R * i - k * w;
  tau = k * i;
  der(Esup) = V * i;
  der(Eres) = R * i * i;
  der(Wmech) = k * w * i;
  der(Ang) = tau;
  Emag = 0.5 * L * i * i;
end CsMotor;
