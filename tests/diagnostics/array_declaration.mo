class NotScalarized
  Real x[3];
equation
  x[1] = 1;
  x[2] = 2;
  x[3] = 3;
end NotScalarized;
