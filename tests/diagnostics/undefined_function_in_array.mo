class Undefined
  Real x[2];
equation
  x = fooBar({1, 2});
end Undefined;
