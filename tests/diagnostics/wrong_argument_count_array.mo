class WrongCount
  Real x[2];
  Real s;
equation
  x = {1, 2};
  s = sum(x, 2);
end WrongCount;
