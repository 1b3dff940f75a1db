// Stair: a counter driven by time events (the when-condition compares time with the left
// limit of a discrete variable, events at t = 1, 2, 3, ...) and a continuous state whose
// slope is the counter. Closed form: n(t) = floor(t), x(t) = n (n - 1)/2 + n (t - n).
// Reference result: Stair.csv (0..10 s).
class Stair "counter incremented every second, integrated by a continuous state"
  parameter Real period = 1.0 "time between increments";
  Integer n(start = 0, fixed = true) "counter";
  discrete Real next(start = 1.0, fixed = true) "time of the next increment";
  Real x(start = 0.0, fixed = true) "integral of the counter";
equation
  der(x) = n;
  when time >= pre(next) then
    n = pre(n) + 1;
    next = pre(next) + period;
  end when;
end Stair;
