model LoopPre
  Integer m(start = 2) = n + 1;
  Integer n = pre(m) - 1;
  Real x(start = 0, fixed = true);
equation
  der(x) = m;
end LoopPre;
