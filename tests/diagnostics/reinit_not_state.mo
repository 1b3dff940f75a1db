class Ball
  Real h(start = 1);
  Real v;
  Real a;
equation
  der(h) = v;
  der(v) = a;
  a = -9.81;
  when h < 0 then
    reinit(a, 0);
  end when;
end Ball;
