class Ball
  Real h(start = 1);
  Real v;
equation
  der(h) = v;
  der(v) = -9.81;
  when h < 0 then
    reinit(vel, -0.8 * pre(v));
  end when;
end Ball;
