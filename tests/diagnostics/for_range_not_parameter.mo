class Loop
  Real x[2];
  Integer k(start = 2);
equation
  for i in 1:k loop
    x[i] = i;
  end for;
  k = 2;
end Loop;
