function fib "recursive: refused"
  input Integer n;
  output Integer f;
algorithm
  f := if n < 2 then n else fib(n - 1) + fib(n - 2);
end fib;

class UsesFunction
  Real x;
equation
  x = fib(10);
end UsesFunction;
