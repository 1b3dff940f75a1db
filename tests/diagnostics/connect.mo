class Circuit
  Real a.v;
  Real b.v;
equation
  connect(a, b);
end Circuit;
