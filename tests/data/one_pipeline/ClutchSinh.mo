class ClutchSinh "clutch whose shaft-1 torque enters through sinh: no power-law impulse order"
  parameter Real a1 = -1.0;
  parameter Real a2 = -1.0;
  parameter Real b1 = 1.0;
  parameter Real b2 = 1.0;
  Real t(start = 0.0, fixed = true);
  Boolean g(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 5.0, fixed = true);
  Real t1;
  Real t2;
equation
  der(t) = 1.0;
  g = t >= 0.5;
  der(w1) = a1 * w1 + b1 * sinh(t1);
  der(w2) = a2 * w2 + b2 * t2;
  0.0 = if g then w1 - w2 else t1;
  t1 + t2 = 0.0;
end ClutchSinh;
