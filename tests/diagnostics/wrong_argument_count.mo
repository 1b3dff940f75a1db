class Args
  Real x;
  Real y;
equation
  x = sin(time);
  y = atan2(x);
end Args;
