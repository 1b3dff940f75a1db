type Level = enumeration(off, low, high);
model Disc
  parameter Integer k = 2;
  parameter Level level = Level.high;
  Integer p = m + 1 "declared before m: computed after it";
  Integer m = k + 1;
  Integer e = Integer(level);
  Integer n = if x > 1 then 1 else 0;
  Integer q = if z > 1 then 10 * m else 0;
  Real x(start = 0, fixed = true);
  Real v(start = 0, fixed = true);
  Real z(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
  Real w(start = 0, fixed = true);
equation
  der(x) = 1;
  der(v) = 1;
  der(z) = v;
  der(y) = m;
  der(w) = e + n + q + p;
end Disc;
