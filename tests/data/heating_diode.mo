function exlin
  input Real x;
  input Real Maxexp;
  output Real z;
algorithm
  z := if x > Maxexp then exp(Maxexp) * (1.0 + x - Maxexp) else exp(x);
end exlin;

model HeatDiode
  parameter Real Ids = 1e-6;
  parameter Real Maxexp = 15.0;
  parameter Real Rp = 1e8;
  parameter Real EG = 1.11;
  parameter Real N = 1.0;
  parameter Real TNOM = 300.15;
  parameter Real XTI = 3.0;
  parameter Real k = 1.380662e-23;
  parameter Real q = 1.6021892e-19;
  parameter Real Gth = 10.0;
  parameter Real Cth = 0.1;
  parameter Real Rl = 1.0;
  parameter Real C = 1.0;
  parameter Real A = 1.0;
  Real v;
  Real i;
  Real LossPower;
  Real T_heatPort;
  Real portT(start = 293.15);
  Real htemp;
  Real vt_t;
  Real id;
  Real aux;
  Real auxp;
  Real Qa;
  Real Qflow;
  Real dT;
  Real Th(start = 293.15, fixed = true);
  Real vc(start = 0.0, fixed = true);
  Real vs;
equation
  htemp = T_heatPort;
  vt_t = k * htemp / q;
  id = exlin(v / (vt_t * N), Maxexp) - 1.0;
  aux = (htemp / TNOM - 1.0) * (EG / vt_t / N);
  auxp = exp(aux);
  i = Ids * (id * ((htemp / TNOM) ^ (XTI / N) * auxp)) + v / Rp;
  LossPower = i * v;
  portT = T_heatPort;
  Qa = LossPower;
  Qflow = Qa;
  Qflow = Gth * dT;
  dT = portT - Th;
  vs = A * sin(6.283185307179586 * time);
  v = vs - vc;
  C * der(vc) = i - vc / Rl;
  Cth * der(Th) = Qflow;
end HeatDiode;
