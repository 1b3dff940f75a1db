model Over
  parameter Integer k = 2;
  Integer m = k + 1;
  Real x(start = 0, fixed = true);
equation
  m = 3;
  der(x) = m;
end Over;
