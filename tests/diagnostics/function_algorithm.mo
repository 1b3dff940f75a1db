function square
  input Real u;
  output Real y;
algorithm
  y := u * u;
end square;

class UsesFunction
  Real x;
equation
  x = square(time);
end UsesFunction;
