model OMBouncingBall "OpenModelica's bouncing ball: a when-clause reinits v and assigns the flag of an if-equation"
  parameter Real e = 0.7;
  parameter Real g = 9.81;
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  Boolean flying(start = true);
equation
  der(h) = v;
  if flying then
    der(v) = -g;
  else
    der(v) = 0;
  end if;
  when h <= 0 then
    flying = v < -3.0;
    reinit(v, -e*pre(v));
  end when;
  annotation(experiment(StopTime = 2.0));
end OMBouncingBall;
