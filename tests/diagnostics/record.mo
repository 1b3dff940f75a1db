class WithRecord
  record Pair
    Real a;
    Real b;
  end Pair;
  Pair p;
equation
  p.a = 1;
end WithRecord;
