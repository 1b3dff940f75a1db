class Strings
  String label = "x";
  Real x;
equation
  x = 1;
end Strings;
