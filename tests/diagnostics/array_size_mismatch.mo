class Sizes
  Real x[3];
equation
  x = {1, 2};
end Sizes;
