"""Issue 13, MSL 3.1 HeatingNPN_OrGate and CauerLowPassSC: the when-clause of a pulse source
(``when pre(counter2) <> 0 and sample(startTime, period) then T0 = time; ...``) updates
discrete variables only, so its transient mode enables the equations of its continuation.
Such an instant is run as the continuation's first instant (its Σ-method, Algorithm 12 line 2;
docs/decisions.md §6), not by DiffArray, which refused every index-1 circuit there with
E-TRANSIENT-FUTURE. The edges of several such sources on one clock are the same structural
problem whatever subset rises (docs/decisions.md §7): no W-SINGLE-CHANGES.

Oracles: the closed form of an RC circuit driven by rectangular pulses (two capacitors in
parallel, tau = R (C1 + C2)); the exhaustive exploration (``simultaneous=True``)."""

from __future__ import annotations

import math

import numpy as np
from fmpy import simulate_fmu

from mdae_fmu.analysis import analyze
from mdae_fmu.cli import main as cli_main
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.modes.explore import analyze_multimode
from mdae_fmu.modes.normalize import normalize
from mdae_fmu.modes.runs import same_as_continuation

R, C1, C2, AMPLITUDE, WIDTH, PERIOD, START, NPERIOD = 2.0, 0.25, 0.15, 3.0, 0.2, 0.5, 0.1, 3

PULSE_RC = f"""class PulseRC "two capacitors in parallel (index 1) charged through R \
by MSL 3.1's Pulse"
  parameter Real R = {R};
  parameter Real C1 = {C1};
  parameter Real C2 = {C2};
  parameter Real amplitude = {AMPLITUDE};
  parameter Real width = {WIDTH};
  parameter Real period = {PERIOD};
  parameter Real startTime = {START};
  parameter Integer nperiod = {NPERIOD};
  Real T0(start = startTime) "start time of the current period";
  Integer counter(start = nperiod);
  Integer counter2(start = nperiod);
  Real u;
  Real i;
  Real i1;
  Real i2;
  Real pv;
  Real nv;
  Real v(start = 0.0, fixed = true);
equation
  when pre(counter2) <> 0 and sample(startTime, period) then
    T0 = time;
    counter2 = pre(counter);
    counter = pre(counter) - (if pre(counter) > 0 then 1 else 0);
  end when;
  u = if time < startTime or counter2 == 0 or time >= T0 + width then 0.0 else amplitude;
  u - pv = R * i;
  nv = 0.0;
  v = pv - nv;
  i = i1 + i2;
  i1 = C1 * der(v);
  i2 = C2 * der(pv);
end PulseRC;
"""


def _closed_form(t: float) -> float:
    """v(t): u = amplitude on [T0, T0 + width) for the first nperiod periods, 0 elsewhere;
    between the switching instants v relaxes exponentially to u with tau = R (C1 + C2)."""
    tau = R * (C1 + C2)
    edges = [e for k in range(NPERIOD)
             for e in ((START + k * PERIOD, AMPLITUDE), (START + k * PERIOD + WIDTH, 0.0))]
    v, t0, u = 0.0, 0.0, 0.0
    for te, after in edges:
        if t < te:
            break
        v, t0, u = u + (v - u) * math.exp(-(te - t0) / tau), te, after
    return u + (v - u) * math.exp(-(t - t0) / tau)


def test_pulse_source_instant_of_an_index1_circuit_is_accepted_and_runs(tmp_path):
    """The capacitor pins make the circuit index 1 (latent ``v' = pv' - nv'``): DiffArray saw
    ``v^o`` determined together with the future ``nv^o`` and refused. The instant is now the
    long mode's (its latent equation e4' solved at the instant), states kept, and the FMU
    follows the closed form, ``pv = v``."""
    src = tmp_path / "PulseRC.mo"
    src.write_text(PULSE_RC)
    m = parse_modelica(src.read_text(), str(src))
    a = analyze(m)
    assert a.accepted, a.messages
    # (the instant itself: the enumerated automaton's; the default lists the sample event,
    # which selects no equation, as a change with no instant)
    assert not a.automaton.changes[0].instants
    a = analyze(m, implicit=False)
    s = a.automaton.system
    [g] = s.guards
    assert g.kind == "transient" and "sample" in g.name
    assert same_as_continuation(s, (True,))
    [ch] = a.automaton.changes
    first = ch.instants[0]
    assert any("e4'" in b.equations for b in first.blocks)
    assert {str(e) for e in ch.restart} == {"Eq(nv+, nv-)", "Eq(pv+, pv-)", "Eq(v+, v-)"}
    fmu = tmp_path / "PulseRC.fmu"
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 0
    r = simulate_fmu(str(fmu), stop_time=2.0, output_interval=0.013, relative_tolerance=1e-9,
                     output=["v", "pv", "u"])
    t = r["time"]
    expected = np.array([_closed_form(x) for x in t])
    np.testing.assert_allclose(r["v"], expected, atol=1e-6)
    np.testing.assert_allclose(r["pv"], r["v"], atol=1e-12)
    # nperiod pulses, then none: u is 0 after the last one
    assert r["u"][t > START + (NPERIOD - 1) * PERIOD + WIDTH + 1e-6].max() == 0.0
    assert r["u"].max() == AMPLITUDE


def test_transient_modes_with_their_own_equations_keep_diff_array():
    """A reinit, or an ``if edge(c)`` that selects equations, gives the transient mode
    equations its continuation has not: DiffArray still decides (E-TRANSIENT-FUTURE and the
    impact laws are tested in test_analyze_cli and test_modes_runs)."""
    m = parse_modelica("""class Ball
  Real h(start = 1.0, fixed = true);
  Real v(start = 0.0, fixed = true);
equation
  der(h) = v;
  der(v) = -9.81;
  when h <= 0.0 then
    reinit(v, -0.5 * pre(v));
  end when;
end Ball;
""", "Ball.mo")
    s = normalize(m)
    [mode] = [md for md in s.modes() if s.is_transient(md)]
    assert not same_as_continuation(s, mode)


def _clocked_sources(n: int) -> str:
    """n pulse sources with equal parameters (as MSL 3.1 CauerLowPassSC's, one per switch:
    nothing decides at compile time whether they coincide, and they do), each switching its
    own resistor of a parallel RC bank."""
    decl = "\n".join(f"  parameter Real t{k} = 0.1;\n  parameter Real dt{k} = 0.2;\n"
                     f"  Real T{k}(start = 0.0);\n  Real i{k};" for k in range(n))
    whens = "\n".join(f"  when sample(t{k}, dt{k}) then\n    T{k} = time;\n  end when;\n"
                      f"  i{k} = (if time < T{k} + {0.01 * (k + 1)} then 1.0 else 0.5) * (1.0 - v);"
                      for k in range(n))
    total = " + ".join(f"i{k}" for k in range(n))
    return f"""class Clocked
{decl}
  Real pv;
  Real v(start = 0.0, fixed = true);
equation
{whens}
  v = pv;
  0.5 * der(v) + 0.5 * der(pv) = {total};
end Clocked;
"""


def test_simultaneous_edges_of_discrete_updates_are_one_structural_change():
    """7 sources on one clock: 127 transient modes, all enabling the long mode's equations.
    Above 6 guards only single edges are explored, and that now analyses every subset (the
    same `structural_key`): accepted without W-SINGLE-CHANGES, as the exhaustive exploration
    of all 127 changes."""
    s = normalize(parse_modelica(_clocked_sources(7), "Clocked.mo"))
    assert len(s.guards) == 7 and all(g.kind == "transient" for g in s.guards)
    assert sum(map(s.is_transient, s.modes())) == 127
    a = analyze_multimode(s, standardize=False)
    assert a.accepted and [d.code for d in a.diagnostics] == []
    assert len(a.changes) == 7
    full = analyze_multimode(s, standardize=False, simultaneous=True)
    assert full.accepted and len(full.changes) == 127
    assert {len(c.instants) for c in full.changes} == {len(c.instants) for c in a.changes}


def test_steady_run_restart_is_the_standardized_one():
    """The instants of the pulse change are steady runs of the long mode: their restart is
    continuity, written without the impulse analysis; the full route (impulse analysis and
    standardization, `_describe_instant`) finds the same restart on this small circuit."""
    from mdae_fmu.modes.explore import _describe_instant, _Explorer
    m = parse_modelica(PULSE_RC, "PulseRC.mo")
    a = analyze(m)
    [ch] = a.automaton.changes
    ex = _Explorer(a.automaton.system, "restricted", False)
    for ri in ch.instants:
        assert ri.method == "S0" and not ri.impulsive
        full = _describe_instant(ex, ri.index, ri.instant, True)
        assert set(full.restart) == set(ri.restart) and len(ri.restart) == 3
