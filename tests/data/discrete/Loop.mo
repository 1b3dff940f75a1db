model Loop
  Integer m = n + 1;
  Integer n = m - 1;
  Real x(start = 0, fixed = true);
equation
  der(x) = m;
end Loop;
