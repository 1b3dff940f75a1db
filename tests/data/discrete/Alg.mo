model Alg
  Real x(start = 0, fixed = true);
  Real s;
  Integer n = if s > 1 then 1 else 0;
  Integer c = integer(s);
  Real y(start = 0, fixed = true);
equation
  der(x) = 1;
  s = 2 * x + 0.25;
  der(y) = n + c;
end Alg;
