class Latin
  Real x "café";
equation
  x = 1;
end Latin;
