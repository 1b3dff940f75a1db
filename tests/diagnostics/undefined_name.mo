class Undefined
  parameter Real k = 2;
  Real x(start = 1, fixed = true);
equation
  der(x) = -k * x + u;
end Undefined;
