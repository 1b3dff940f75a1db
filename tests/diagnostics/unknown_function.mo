class Unknown
  Real x;
equation
  x = Modelica.Math.Vectors.norm(time);
end Unknown;
