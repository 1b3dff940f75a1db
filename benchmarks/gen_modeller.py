"""Multimode model families written the way a modeller writes them, as flat Modelica text.

The families of `benchmarks/gen_multimode.py` are the project's own: uniform parameters, one
equation per component, names chosen for the analysis. The models here are the same physics as
a modeller (or OpenModelica's flattening of a component model) writes it, so that scaling
claims are checked on input the project did not shape (issue 26):

* ``drive_line(n, engage=...)``: n + 1 rotating shafts (inertias drawn at random, a damper to
  the housing on every shaft), coupled by n ideal clutches; a sinusoidal drive torque on the
  first shaft and a viscous load on the last. Component names (``shaft3.J``,
  ``clutch2.flange_b.tau``), alias equations as connections print them, angles and speeds as
  states. The clutches engage by

  - ``"input"``: a Boolean input per clutch (``input Boolean engage[k]``, aliased as
    ``clutch_k.engaged``), switched by the host;
  - ``"time"``: a computed condition, ``clutch_k.engaged = time >= t_on and time < t_off``;
    with ``windows = m`` only m clutches, spread along the line, have their window inside
    the first 10 s (2m switchings in all at every n, like the host's 30 of ``"input"``), the
    others a window from 20 s on;
  - ``"pressure"``: a first-order actuator pressure state whose command steps at ``t_on``; the
    clutch engages while the pressure exceeds half the command (a state event).

  Engaging a clutch at unequal speeds is the impulsive restart of RR-9334's ideal clutch: the
  coupled shafts take the inertia-weighted mean speed, so the total angular momentum
  sum_k J_k w_k is continuous across every event (the torques of the dampers, the drive and
  the load are bounded).

* ``rlc_cells(n, element=...)``: a ladder of n cells fed by a sinusoidal source; cell k is a
  resistor and an inductor in series with an ideal element, into a node with a capacitor and a
  load resistor to ground. The element is

  - ``"switch"``: an ideal switch driven by a Boolean input (closed: no voltage, open: no
    current). Opening a branch forces its inductor current to 0 (the flux jumps, the switch
    voltage is impulsive); the states change with the mode (i_k is a state only while closed);
  - ``"diode"``: an ideal diode in the s-parameterization of RR-9334's RLDC2
    (``off = s < 0``, ``v = if off then s else 0``, ``i = if off then 0 else s``): the current
    vanishes continuously at turn-off, the inductor current is a state only while conducting.

``random_switchings(names, count, stop_time, seed)`` gives the host input for FMPy: Boolean
signals with ``count`` switchings in all at random times.

* ``shaft_tree(n)``: n + 1 shafts in a binary tree (shaft k on shaft k // 2), each coupling an
  ideal clutch engaged by a Boolean input: a gearbox-like tree of switched components.

Usage: ``python benchmarks/gen_modeller.py drive_line 8 [--engage input|time|pressure]
[--seed S] [--tail T] > DriveLine8.mo`` or ``... rlc_cells 10 [--element switch|diode] > RLC10.mo``.
"""

from __future__ import annotations

import argparse
import random

import numpy as np


def _num(x: float) -> str:
    return repr(round(x, 6))


def drive_line(n: int, engage: str = "input", seed: int = 0, windows: int | None = None,
               tail: int = 0) -> str:
    """Flat Modelica text of the drive line with ``n`` clutches (``n + 1`` shafts);
    ``windows``: how many of the ``"time"`` clutches switch in the first 10 s (all when
    None). ``tail``: that many more shafts after the last clutch, each coupled to the one
    before by an elastic coupling (spring and damper, no switch), the load on the last: the
    long unswitched part of a drive line (issue 29 Deliver 2). The clutched part is the same
    text as without a tail (the tail's parameters are drawn from their own generator)."""
    if n < 1:
        raise ValueError("a drive line needs at least one clutch")
    if engage not in ("input", "time", "pressure"):
        raise ValueError(f"engage must be 'input', 'time' or 'pressure', not {engage!r}")
    rng = random.Random(seed)
    name = f"DriveLine{n}" + ("" if engage == "input" else engage.capitalize())
    name += f"Tail{tail}" if tail else ""
    last = n + 1 + tail
    out = [f"class {name} \"{last} shafts with dampers, {n} ideal clutches ({engage})\""]
    decl = out.append
    m = min(windows or 0, n)
    switching = {1 + (i * n) // m for i in range(m)} if m else set()
    decl('  parameter Real source.amplitude(unit = "N.m") = 10.0 "drive torque amplitude";')
    decl('  parameter Real source.f(unit = "Hz") = 0.5 "drive torque frequency";')
    decl('  parameter Real load.d(unit = "N.m.s/rad") = 0.2 "viscous load";')
    for k in range(1, n + 2):
        decl(f'  parameter Real shaft{k}.J(unit = "kg.m2") = {_num(rng.uniform(0.5, 2.0))} '
             f'"moment of inertia";')
        decl(f'  parameter Real damper{k}.d(unit = "N.m.s/rad") = '
             f'{_num(rng.uniform(0.01, 0.05))} "damping to the housing";')
    for k in range(1, n + 1):
        if engage == "input":
            decl(f"  input Boolean engage[{k}](start = false);")
        else:
            t_on = rng.uniform(0.5, 8.0)
            t_off = min(t_on + rng.uniform(0.5, 3.0), 9.5)
            if windows is not None and k not in switching:
                t_on, t_off = t_on + 20.0, t_off + 20.0     # never engaged in a 10 s run
            decl(f'  parameter Real clutch{k}.t_on(unit = "s") = {_num(t_on)};')
            decl(f'  parameter Real clutch{k}.t_off(unit = "s") = {_num(t_off)};')
        if engage == "pressure":
            decl(f'  parameter Real clutch{k}.T(unit = "s") = {_num(rng.uniform(0.05, 0.2))} '
                 f'"actuator time constant";')
            decl(f'  Real clutch{k}.p(unit = "bar", start = 0.0, fixed = true) "pressure";')
            decl(f'  Real clutch{k}.p_cmd(unit = "bar");')
        decl(f"  Boolean clutch{k}.engaged;")
        decl(f'  Real clutch{k}.tau(unit = "N.m") "torque from shaft {k} to shaft {k + 1}";')
    decl('  Real source.tau(unit = "N.m");')
    decl('  Real load.tau(unit = "N.m");')
    trng = random.Random(seed + 1)
    for k in range(n + 2, last + 1):
        decl(f'  parameter Real shaft{k}.J(unit = "kg.m2") = {_num(trng.uniform(0.5, 2.0))};')
        decl(f'  parameter Real damper{k}.d(unit = "N.m.s/rad") = '
             f'{_num(trng.uniform(0.01, 0.05))};')
        decl(f'  parameter Real coupling{k}.c(unit = "N.m/rad") = '
             f'{_num(trng.uniform(50.0, 200.0))} "coupling stiffness";')
        decl(f'  parameter Real coupling{k}.d(unit = "N.m.s/rad") = '
             f'{_num(trng.uniform(0.1, 1.0))} "coupling damping";')
        decl(f'  Real coupling{k}.tau(unit = "N.m") "torque from shaft {k - 1} to shaft {k}";')
    for k in range(1, last + 1):
        if k == n + 2:
            rng = trng
        decl(f'  Real shaft{k}.phi(unit = "rad", start = 0.0, fixed = true);')
        decl(f'  Real shaft{k}.w(unit = "rad/s", start = {_num(rng.uniform(-1.0, 3.0))}, '
             f'fixed = true);')
        decl(f'  Real shaft{k}.flange_a.tau(unit = "N.m");')
        decl(f'  Real shaft{k}.flange_b.tau(unit = "N.m");')
        decl(f'  Real damper{k}.tau(unit = "N.m");')
    out.append("equation")
    eq = out.append
    eq("  source.tau = source.amplitude * sin(6.283185307179586 * source.f * time);")
    eq(f"  load.tau = load.d * shaft{last}.w;")
    eq("  shaft1.flange_a.tau = source.tau;")
    eq(f"  shaft{last}.flange_b.tau = -load.tau;")
    for k in range(n + 2, last + 1):
        eq(f"  coupling{k}.tau = coupling{k}.c * (shaft{k - 1}.phi - shaft{k}.phi)"
           f" + coupling{k}.d * (shaft{k - 1}.w - shaft{k}.w);")
        eq(f"  shaft{k - 1}.flange_b.tau = -coupling{k}.tau;")
        eq(f"  shaft{k}.flange_a.tau = coupling{k}.tau;")
    for k in range(1, last + 1):
        eq(f"  der(shaft{k}.phi) = shaft{k}.w;")
        eq(f"  shaft{k}.J * der(shaft{k}.w) = shaft{k}.flange_a.tau + shaft{k}.flange_b.tau"
           f" - damper{k}.tau;")
        eq(f"  damper{k}.tau = damper{k}.d * shaft{k}.w;")
    for k in range(1, n + 1):
        eq(f"  shaft{k}.flange_b.tau = -clutch{k}.tau;")
        eq(f"  shaft{k + 1}.flange_a.tau = clutch{k}.tau;")
        if engage == "input":
            eq(f"  clutch{k}.engaged = engage[{k}];")
        elif engage == "time":
            eq(f"  clutch{k}.engaged = time >= clutch{k}.t_on and time < clutch{k}.t_off;")
        else:
            eq(f"  clutch{k}.p_cmd = if time >= clutch{k}.t_on and time < clutch{k}.t_off "
               f"then 1.0 else 0.0;")
            eq(f"  clutch{k}.T * der(clutch{k}.p) = clutch{k}.p_cmd - clutch{k}.p;")
            eq(f"  clutch{k}.engaged = clutch{k}.p > 0.5;")
        eq(f"  if clutch{k}.engaged then")
        eq(f"    shaft{k}.w = shaft{k + 1}.w;")
        eq("  else")
        eq(f"    clutch{k}.tau = 0.0;")
        eq("  end if;")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def drive_line_singular(n: int, k: int) -> str:
    """`drive_line` of ``n`` clutches (inputs) where clutch ``k``, engaged while clutches 1
    and 2 are both disengaged, gives ``2*flange_b.tau + 2*clutch.tau = 0`` instead of equal
    speeds: with ``flange_b.tau = -clutch.tau`` a block of two rows singular for all values
    in those 2^(n-3) modes only, inside the drive line's coarse block (the tests' ill-posed
    variant: the one analysis must reject exactly those modes)."""
    text = drive_line(n)
    old = f"    shaft{k}.w = shaft{k + 1}.w;"
    assert old in text
    return text.replace(old, f"    0 = if clutch1.engaged or clutch2.engaged then shaft{k}.w - "
                             f"shaft{k + 1}.w else 2 * shaft{k}.flange_b.tau + 2 * "
                             f"clutch{k}.tau;")


def shaft_tree(n: int, seed: int = 0) -> str:
    """Flat Modelica text of a gearbox-like tree of ``n + 1`` shafts: shaft k (k >= 2) hangs
    on shaft k // 2 through clutch k - 1, engaged by a Boolean input (a binary tree of
    switched couplings: the "trees" of issue 26 Deliver 6, beside the drive line's chain).
    The drive torque acts on the root, every shaft has a damper to the housing and every
    leaf a viscous load."""
    if n < 1:
        raise ValueError("a shaft tree needs at least one clutch")
    rng = random.Random(seed)
    name = f"ShaftTree{n}"
    shafts = range(1, n + 2)
    children = {k: [c for c in (2 * k, 2 * k + 1) if c <= n + 1] for k in shafts}
    out = [f"class {name} \"{n + 1} shafts in a binary tree, {n} ideal clutches (input)\""]
    decl = out.append
    decl('  parameter Real source.amplitude(unit = "N.m") = 10.0 "drive torque amplitude";')
    decl('  parameter Real source.f(unit = "Hz") = 0.5 "drive torque frequency";')
    decl('  parameter Real load.d(unit = "N.m.s/rad") = 0.2 "viscous load of each leaf";')
    for k in shafts:
        decl(f'  parameter Real shaft{k}.J(unit = "kg.m2") = {_num(rng.uniform(0.5, 2.0))};')
        decl(f'  parameter Real damper{k}.d(unit = "N.m.s/rad") = '
             f'{_num(rng.uniform(0.01, 0.05))};')
    for c in range(1, n + 1):
        decl(f"  input Boolean engage[{c}](start = false);")
        decl(f"  Boolean clutch{c}.engaged;")
        decl(f'  Real clutch{c}.tau(unit = "N.m") "torque from shaft {(c + 1) // 2} to shaft '
             f'{c + 1}";')
    decl('  Real source.tau(unit = "N.m");')
    for k in shafts:
        decl(f'  Real shaft{k}.phi(unit = "rad", start = 0.0, fixed = true);')
        decl(f'  Real shaft{k}.w(unit = "rad/s", start = {_num(rng.uniform(-1.0, 3.0))}, '
             f'fixed = true);')
        decl(f'  Real shaft{k}.flange_a.tau(unit = "N.m") "torque from the parent";')
        decl(f'  Real shaft{k}.flange_b.tau(unit = "N.m") "torque from the children";')
        decl(f'  Real damper{k}.tau(unit = "N.m");')
    out.append("equation")
    eq = out.append
    eq("  source.tau = source.amplitude * sin(6.283185307179586 * source.f * time);")
    eq("  shaft1.flange_a.tau = source.tau;")
    for k in shafts:
        eq(f"  der(shaft{k}.phi) = shaft{k}.w;")
        eq(f"  shaft{k}.J * der(shaft{k}.w) = shaft{k}.flange_a.tau + shaft{k}.flange_b.tau"
           f" - damper{k}.tau;")
        eq(f"  damper{k}.tau = damper{k}.d * shaft{k}.w;")
        kids = " - ".join(f"clutch{c - 1}.tau" for c in children[k])
        eq(f"  shaft{k}.flange_b.tau = " + (f"-{kids};" if kids else f"-load.d * shaft{k}.w;"))
    for c in range(1, n + 1):
        parent, child = (c + 1) // 2, c + 1
        eq(f"  shaft{child}.flange_a.tau = clutch{c}.tau;")
        eq(f"  clutch{c}.engaged = engage[{c}];")
        eq(f"  if clutch{c}.engaged then")
        eq(f"    shaft{parent}.w = shaft{child}.w;")
        eq("  else")
        eq(f"    clutch{c}.tau = 0.0;")
        eq("  end if;")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def rlc_cells(n: int, element: str = "switch", seed: int = 0) -> str:
    """Flat Modelica text of the ladder of ``n`` RLC cells with ideal switches or diodes."""
    if n < 1:
        raise ValueError("a ladder needs at least one cell")
    if element not in ("switch", "diode"):
        raise ValueError(f"element must be 'switch' or 'diode', not {element!r}")
    rng = random.Random(seed)
    name = f"RLC{'Switch' if element == 'switch' else 'Diode'}{n}"
    out = [f"class {name} \"ladder of {n} RLC cells with ideal {element}es\""]
    decl = out.append
    decl('  parameter Real source.V(unit = "V") = 10.0;')
    decl('  parameter Real source.f(unit = "Hz") = 1.0;')
    for k in range(1, n + 1):
        decl(f'  parameter Real R{k}.R(unit = "Ohm") = {_num(rng.uniform(0.5, 2.0))};')
        decl(f'  parameter Real L{k}.L(unit = "H") = {_num(rng.uniform(0.05, 0.2))};')
        decl(f'  parameter Real C{k}.C(unit = "F") = {_num(rng.uniform(0.05, 0.2))};')
        decl(f'  parameter Real Rload{k}.R(unit = "Ohm") = {_num(rng.uniform(5.0, 20.0))};')
        if element == "switch":
            decl(f"  input Boolean close[{k}](start = true);")
            decl(f"  Boolean S{k}.closed;")
        else:
            decl(f"  Boolean D{k}.off(start = true);")
            decl(f'  Real D{k}.s(start = 0.0);')
        sw = f"S{k}" if element == "switch" else f"D{k}"
        decl(f'  Real {sw}.v(unit = "V");')
        decl(f'  Real L{k}.i(unit = "A", start = 0.0, fixed = true);')
        decl(f'  Real C{k}.v(unit = "V", start = 0.0, fixed = true);')
    decl('  Real source.v(unit = "V");')
    out.append("equation")
    eq = out.append
    eq("  source.v = source.V * sin(6.283185307179586 * source.f * time);")
    for k in range(1, n + 1):
        upstream = "source.v" if k == 1 else f"C{k - 1}.v"
        sw = f"S{k}" if element == "switch" else f"D{k}"
        eq(f"  L{k}.L * der(L{k}.i) = {upstream} - C{k}.v - R{k}.R * L{k}.i - {sw}.v;")
        outflow = f" - L{k + 1}.i" if k < n else ""
        eq(f"  C{k}.C * der(C{k}.v) = L{k}.i{outflow} - C{k}.v / Rload{k}.R;")
        if element == "switch":
            eq(f"  S{k}.closed = close[{k}];")
            eq(f"  if S{k}.closed then")
            eq(f"    S{k}.v = 0.0;")
            eq("  else")
            eq(f"    L{k}.i = 0.0;")
            eq("  end if;")
        else:
            eq(f"  D{k}.off = D{k}.s < 0.0;")
            eq(f"  D{k}.v = if D{k}.off then D{k}.s else 0.0;")
            eq(f"  L{k}.i = if D{k}.off then 0.0 else D{k}.s;")
    out.append(f"end {name};")
    return "\n".join(out) + "\n"


def random_switchings(names: list[str], count: int = 30, stop_time: float = 10.0,
                      seed: int = 0, start: bool = False) -> np.ndarray:
    """FMPy input (structured array: ``time`` then one Boolean column per name): ``count``
    switchings in all, each of a random input at a random time in (0, stop_time), every
    input starting at ``start``. Rows come in pairs at each switching time (value before,
    value after), as FMPy's input interpolation expects for steps."""
    rng = random.Random(seed)
    times = sorted(rng.uniform(0.05 * stop_time, 0.95 * stop_time) for _ in range(count))
    state = {nm: start for nm in names}
    rows = [(0.0, *state.values())]
    for t in times:
        rows.append((t, *state.values()))
        nm = rng.choice(names)
        state[nm] = not state[nm]
        rows.append((t, *state.values()))
    rows.append((stop_time, *state.values()))
    dtype = [("time", np.float64)] + [(nm, np.bool_) for nm in names]
    return np.array(rows, dtype=dtype)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("family", choices=["drive_line", "shaft_tree", "rlc_cells"])
    ap.add_argument("n", type=int)
    ap.add_argument("--engage", default="input", choices=["input", "time", "pressure"])
    ap.add_argument("--element", default="switch", choices=["switch", "diode"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tail", type=int, default=0,
                    help="drive_line: unswitched shafts after the last clutch")
    a = ap.parse_args()
    if a.family == "drive_line":
        print(drive_line(a.n, a.engage, a.seed, tail=a.tail), end="")
    elif a.family == "shaft_tree":
        print(shaft_tree(a.n, a.seed), end="")
    else:
        print(rlc_cells(a.n, a.element, a.seed), end="")


if __name__ == "__main__":
    main()
