within Examples.Structured;
type Rate = Real(unit = "1/s", min = 0, displayUnit = "1/min") "a rate";
type Mode = enumeration(off "no input", on "input on") annotation(Evaluate = true);
record Gains "gains of the chain"
  Rate k = 2 "rate";
  Real c = 1;
end Gains;
model Structured "chain of first-order lags, written with arrays"
  parameter Integer n = 4;
  parameter Gains g;
  parameter Mode mode = Mode.on;
  parameter String label = "chain";
  Real x[n](start = cat(1, {1}, zeros(n - 1)), each fixed = true) "stages";
  Real total "sum of x";
  Real y(start = 0, fixed = true);
  Real z(start = 0, fixed = true);
  Real w(start = 1, fixed = true);
  Integer m = Integer(mode);
  annotation(Documentation(info = "<html>structured</html>"));
initial equation
  /* nothing here: a second section follows */
equation
  der(x[1]) = -g.k * x[1] "first stage";
  for i in 2:n loop
    der(x[i]) = g.k * (x[i - 1] - x[i]) annotation(__x = 1);
  end for "the other stages";
  total = sum(x);
  der(2 * y) = 2 * m;
  der(z) = semiLinear(cos(time), g.c, 3);
  der(w) = homotopy(-w, 0);
  assert(total < 1.5, label + " mass grew", AssertionLevel.warning);
  annotation(experiment(StopTime = 2));
end Structured;
