class Loop
  Real x[1];
  Real x[2];
equation
  for i in 1:2 loop
    x[i] = i;
  end for;
end Loop;
