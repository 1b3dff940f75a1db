class Str
  Real x "position;
equation
  x = 1;
end Str;
