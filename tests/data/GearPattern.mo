model GearPattern "the MSL Gear's mode pattern: a gear box whose housing is fixed or free (an if-equation on a Boolean parameter) and an elasto-backlash written as OpenModelica flattens it"
  parameter Boolean bearingConnected = false;
  parameter Real ratio = 2.0;
  parameter Real J1 = 1.0;
  parameter Real J2 = 2.0;
  parameter Real k2 = 20.0;
  parameter Real d2 = 0.5;
  parameter Real c = 1000.0;
  parameter Real d = 5.0;
  parameter Real b = 0.1;
  parameter Real phi_rel0 = 0.0;
  Real phi1(start = 0.0, fixed = true);
  Real w1(start = 0.0, fixed = true);
  Real phi2(start = 0.0, fixed = true);
  Real w2(start = 0.0, fixed = true);
  Real phi_h;
  Real phi_g;
  Real tau_in;
  Real tau_h;
  Real tau;
  Real phi_rel;
  Real w_rel;
  Real b2 = 0.5 * b;
equation
  der(phi1) = w1;
  J1 * der(w1) = 10.0 * sin(3.0 * time) - tau_in;
  der(phi2) = w2;
  J2 * der(w2) = tau - k2 * phi2 - d2 * w2;
  phi1 - phi_h = ratio * (phi_g - phi_h);
  tau_in = tau / ratio;
  tau_h = tau - tau_in;
  if bearingConnected then
    0.0 = tau_h;
  else
    0.0 = phi_h;
  end if;
  phi_rel = phi_g - phi2;
  w_rel = der(phi_rel);
  tau = if b2 > 1e-10 then if phi_rel > b2 then c * (phi_rel - phi_rel0 - b2) + d * w_rel else if phi_rel < (-b2) then c * (phi_rel + b2 - phi_rel0) + d * w_rel else 0.0 else c * (phi_rel - phi_rel0) + d * w_rel;
  annotation(experiment(StopTime = 5.0));
end GearPattern;
