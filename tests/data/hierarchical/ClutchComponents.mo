// Component-based form of reference_models/ClutchBasic.mo (written for mdae_fmu, BSD-3-Clause):
// read through the rumoca front end (mdae_fmu/importers/frontend.py).
package ClutchComponents "the ideal clutch of ClutchBasic, built from components with connectors"
  connector Flange "rotational flange: speed and cut torque"
    Real w "angular speed";
    flow Real tau "torque into the component";
  end Flange;

  model Shaft "inertia with viscous damping"
    parameter Real J = 1.0 "inertia";
    parameter Real k = 0.0 "damping";
    parameter Real w0 = 0.0 "initial speed";
    Real w(start = w0, fixed = true) "speed";
    Flange flange;
  equation
    flange.w = w;
    J * der(w) = -k * w + flange.tau;
  end Shaft;

  model IdealClutch "ideal clutch engaged for t1 <= time <= t2"
    parameter Real t1 = 5.0;
    parameter Real t2 = 7.0;
    Boolean g "engaged";
    Flange a;
    Flange b;
  equation
    g = time >= t1 and time <= t2;
    0 = if g then a.w - b.w else a.tau;
    a.tau + b.tau = 0;
  end IdealClutch;

  model Clutch "two shafts coupled by the ideal clutch"
    Shaft s1(J = 1.0, k = 0.01, w0 = 1.0);
    Shaft s2(J = 2.0, k = 0.0125, w0 = 1.5);
    IdealClutch c(t1 = 5.0, t2 = 7.0);
  equation
    connect(s1.flange, c.a);
    connect(c.b, s2.flange);
  end Clutch;
end ClutchComponents;
