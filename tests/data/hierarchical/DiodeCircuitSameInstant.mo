// RLDC2Diodes from components with connectors (written for mdae_fmu, BSD-3-Clause), the diode
// guard on the same-instant s (g = s >= 0, evaluated by event iteration as the analysis does since
// issue 14): flattened by rumoca, checked against reference_models/RLDC2Diodes.csv.
package DiodeCircuitSameInstant "RLDC2Diodes built from components with connectors: two R-L branches and two ideal-diode/capacitor branches between one node and ground"
  connector Pin "electrical pin"
    Real v "potential";
    flow Real i "current into the component";
  end Pin;

  partial model OnePort "two pins, voltage p.v - n.v, current from p to n"
    Real v "voltage drop";
    Real i "current from p to n";
    Pin p;
    Pin n;
  equation
    v = p.v - n.v;
    0 = p.i + n.i;
    i = p.i;
  end OnePort;

  model Resistor
    extends OnePort;
    parameter Real R = 1.0;
  equation
    v = R * i;
  end Resistor;

  model Inductor
    extends OnePort;
    parameter Real L = 1.0;
  equation
    v = L * der(i);
  end Inductor;

  model Capacitor
    extends OnePort;
    parameter Real C = 1.0;
  equation
    i = C * der(v);
  end Capacitor;

  model IdealDiode "0 <= i complementary to v <= 0; conducting while s >= 0 (same-instant guard)"
    extends OnePort;
    Real s "curve parameter";
    Boolean g "conducting";
  equation
    s = if g then i else v;
    0 = if g then v else i;
    g = s >= 0;
  end IdealDiode;

  model Ground
    Pin p;
  equation
    p.v = 0;
  end Ground;

  model Circuit "the RLDC2Diodes circuit"
    Resistor r1(R = 10.0);
    Resistor r2(R = 15.0);
    Inductor l1(L = 1.0, i(start = -1.0, fixed = true));
    Inductor l2(L = 1.5, i(start = 0.0, fixed = true));
    Capacitor c1(C = 0.1, v(start = 0.0, fixed = true));
    Capacitor c2(C = 0.15, v(start = 0.3, fixed = true));
    IdealDiode d1(s(start = 1.0), g(start = true, fixed = true));
    IdealDiode d2(s(start = -0.3), g(start = false, fixed = true));
    Ground ground;
  equation
    connect(r1.p, d1.p);
    connect(r2.p, d1.p);
    connect(d2.p, d1.p);
    connect(r1.n, l1.p);
    connect(r2.n, l2.p);
    connect(d1.n, c1.p);
    connect(d2.n, c2.p);
    connect(l1.n, ground.p);
    connect(l2.n, ground.p);
    connect(c1.n, ground.p);
    connect(c2.n, ground.p);
  end Circuit;
end DiodeCircuitSameInstant;
