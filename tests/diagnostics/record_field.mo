class WithRecord
  record Pair "two numbers"
    Real a;
    Real b;
  end Pair;
  Pair p;
equation
  p.a = 1;
  p.b = p.c;
end WithRecord;
