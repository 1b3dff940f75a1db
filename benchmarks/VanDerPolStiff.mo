// Stiff Van der Pol oscillator (mu = 1000) for benchmarks/cosim_bench.py: on 0..10 s the
// solution creeps along the slow manifold (x0 from 2 towards 1.99), which an explicit method
// can only follow with steps of order 1/mu; BDF takes large steps.
class VanDerPolStiff "Van der Pol oscillator, mu = 1000"
  parameter Real mu = 1000.0;
  Real x0(start = 2.0, fixed = true);
  Real x1(start = 0.0, fixed = true);
equation
  der(x0) = x1;
  der(x1) = mu * ((1.0 - x0 ^ 2) * x1) - x0;
end VanDerPolStiff;
