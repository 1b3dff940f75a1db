// A counter driven by a Boolean input: every rising edge of "on" increments n, and x
// integrates n. With "on" switched between communication steps the increment happens at the
// start of the next step (tests/test_cosim_fmpy.py).
class CsToggle "counter of the rising edges of a Boolean input"
  input Boolean on(start = false) "switch";
  Integer n(start = 0, fixed = true) "number of rising edges";
  Real x(start = 0.0, fixed = true) "integral of n";
equation
  der(x) = n;
  when on then
    n = pre(n) + 1;
  end when;
end CsToggle;
