model MM
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
  Real u;
  Integer n = if x > 1 then 2 else 0;
  Boolean b = x > 0.5;
  Real w(start = 0, fixed = true);
equation
  der(x) = 1;
  if x > 1.5 then
    u = 1;
  else
    u = -der(y);
  end if;
  der(y) = n;
  der(w) = if b then 1 else 0;
end MM;
