class Duplicate
  Real x;
  Real y;
  Real x(start = 0);
equation
  x = 1;
  y = 2;
end Duplicate;
