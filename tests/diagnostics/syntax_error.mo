class Broken
  Real x(start = 1);
equation
  der(x) = -2 * x
  x = 3;
end Broken;
