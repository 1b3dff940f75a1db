class OutOfRange
  parameter Integer n = 3;
  Real x[n];
equation
  for i in 1:n loop
    x[i + 1] = i;
  end for;
end OutOfRange;
