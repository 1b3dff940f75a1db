"""Scalable multimode model families for the mode-change benchmarks (benchmarks/modes_bench.py).

* ``clutch_chain(n)``: n + 1 shafts coupled by n ideal clutches, each clutch engaged by its own
  Boolean input (2^n long modes; engaging a clutch is the impulsive restart of
  docs/theory.md §13.1, a weighted mean of the coupled speeds);
* ``diode_bank(n)``: an RL source feeding n parallel branches "ideal diode + capacitor", each
  diode encoded as in RLDC2 (§2.4) with a left-limit guard (2^n long modes; passing diodes put
  capacitors in parallel: index 1, charge sharing at the switch), with the physical diode law
  of reference_models/RLDC2Diodes.mo (blocking branch ``s = u``, u = V − v the forward
  voltage; the printed ``s = -u`` is docs/theory.md §14.2 and chatters);
* ``fault_chain(n)``: n RL branches feeding a common capacitor, each branch resistor with a
  nominal, an open and a short mode (two Boolean inputs per component, 4^n valuations, 3^n
  distinct equation sets; opening a branch forces its inductor current to 0: the flux jumps and
  the voltages are impulsive);
* ``fault_chain_ill_posed(n, a, b)``: the fault chain with one structurally singular
  combination (branches a and b both open), the bad input of the implicit analysis.

The models are `mdae_fmu.ir.Model` objects built with the helpers of tests/multimode_examples.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mdae_fmu.ir import Model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from multimode_examples import boolean, boolean_input, eq, param, real  # noqa: E402


def boolean_fixed(name: str, start: bool):
    """A discrete Boolean whose start value is fixed (the initial mode)."""
    from dataclasses import replace
    return replace(boolean(name, start), fixed=True)


def clutch_chain(n: int) -> Model:
    vs = [real(f"w{i}", 1.0 + 0.1 * i, True) for i in range(n + 1)]
    vs += [real(f"c{i}") for i in range(n)]
    vs += [boolean_input(f"g{i}") for i in range(n)]
    vs += [param(f"J{i}", 1.0 + 0.5 * i) for i in range(n + 1)]
    vs += [param(f"k{i}", 0.01 * (i + 1)) for i in range(n + 1)]
    eqs = []
    for i in range(n + 1):
        torque = " + ".join(([f"c{i - 1}"] if i > 0 else []) + ([f"-c{i}"] if i < n else []))
        eqs.append(eq(f"s{i}", f"J{i}*der(w{i}) = -k{i}*w{i} + {torque}"))
    for i in range(n):
        eqs.append(eq(f"e{i}", f"0 = (w{i} - w{i + 1} if g{i} else c{i})"))
    return Model(name=f"ClutchChain{n}", variables=tuple(vs), equations=tuple(eqs))


def diode_bank(n: int, charged: bool = False) -> Model:
    """``charged``: the capacitors start at spread voltages v_k = 1.3 (1 − k/(n−1)) instead of
    -1, the last diode conducting and the others blocking (consistent starts of s and g), so
    that the diodes switch physically: the diodes turn on one after the other as the node
    voltage V (the source charging the conducting group) passes their capacitor's voltage,
    then the whole group turns off when the inductor current reverses."""
    vstart = [1.3 * (1.0 - k / max(n - 1, 1)) if charged else -1.0 for k in range(n)]
    vs = [real("j", 0.0, True), real("V")]
    vs += [real(f"v{k}", vstart[k], True) for k in range(n)]
    for k in range(n):
        on = charged and k == n - 1
        vs += [real(f"i{k}"), real(f"u{k}"),
               real(f"s{k}", (vstart[-1] - vstart[k]) if charged else None),
               boolean(f"g{k}", on) if not charged else boolean_fixed(f"g{k}", on)]
    vs += [param("E", 1.0), param("R", 1.0), param("L", 1.0)]
    vs += [param(f"C{k}", 0.1 * (k + 1)) for k in range(n)]
    eqs = [eq("src", "L*der(j) = E - R*j - V"),
           eq("kcl", "j = " + " + ".join(f"i{k}" for k in range(n)))]
    for k in range(n):
        eqs += [eq(f"kvl{k}", f"V = u{k} + v{k}"),
                eq(f"cap{k}", f"i{k} = C{k}*der(v{k})"),
                eq(f"S{k}", f"s{k} = (i{k} if g{k} else u{k})"),
                eq(f"Z{k}", f"0 = (u{k} if g{k} else i{k})"),
                eq(f"G{k}", f"g{k} = (pre(s{k}) >= 0)")]
    return Model(name=f"DiodeBank{n}", variables=tuple(vs), equations=tuple(eqs))


def fault_chain(n: int) -> Model:
    vs = [real("v", 0.0, True)] + [real(f"j{k}", 0.0, True) for k in range(n)]
    vs += [real(f"u{k}") for k in range(n)]
    vs += [boolean_input(f"open{k}") for k in range(n)] + [boolean_input(f"short{k}")
                                                          for k in range(n)]
    vs += [param("E", 1.0), param("C", 1.0)]
    vs += [param(f"L{k}", 1.0 + 0.5 * k) for k in range(n)]
    vs += [param(f"R{k}", 1.0 + k) for k in range(n)]
    eqs = [eq("cap", "C*der(v) = " + " + ".join(f"j{k}" for k in range(n)))]
    for k in range(n):
        eqs.append(eq(f"ind{k}", f"L{k}*der(j{k}) = E - v - u{k}"))
        eqs.append(eq(f"r{k}",
                      f"0 = (j{k} if open{k} else (u{k} if short{k} else u{k} - R{k}*j{k}))"))
    return Model(name=f"FaultChain{n}", variables=tuple(vs), equations=tuple(eqs))


def fault_chain_ill_posed(n: int, a: int, b: int) -> Model:
    """``fault_chain(n)`` plus a probe between branches a and b, ill-posed in the modes where
    both are open (bad input of issue 17: one singular combination among 4^n valuations).

    The probe adds the unknown z and the equation ``0 = j_a − j_b`` when branches a and b are
    both open, ``0 = z − u_a`` otherwise. With both open, ``j_a = 0`` and ``j_b = 0`` (their
    resistor equations) and the probe equation is a third equation on two currents, while
    nothing determines z: structurally singular. Every other mode is regular."""
    base = fault_chain(n)
    vs = base.variables + (real("z"),)
    eqs = base.equations + (
        eq("probe", f"0 = ((j{a} - j{b} if open{b} else z - u{a}) if open{a} else z - u{a})"),)
    return Model(name=f"FaultChainIllPosed{n}", variables=vs, equations=eqs)


FAMILIES = {"clutch_chain": clutch_chain, "diode_bank": diode_bank, "fault_chain": fault_chain}
