// Bouncing ball: a classic state event with a user reset (no multimode equations).
// Unlike the Reference-FMUs version it does not stop at small velocity, so it is Zeno at
// t = 0.4515 + 2.1071 = 2.5586 s; the reference result covers 0..2 s (4 bounces).
// Reference result: BouncingBall.csv (closed form, piecewise parabolas).
class BouncingBall "bouncing ball with restitution e"
  parameter Real g = 9.81 "gravity";
  parameter Real e = 0.7 "coefficient of restitution";
  Real h(start = 1.0, fixed = true) "height";
  Real v(start = 0.0, fixed = true) "velocity";
equation
  der(h) = v;
  der(v) = -g;
  when h <= 0.0 then
    reinit(v, (-e) * pre(v));
  end when;
end BouncingBall;
