"""Issue 14, when-clauses on `sample` clocks that reinit the same state: whether the clocks
can fire at the same instant is decided at compile time when their starts and intervals are
literals (mdae_fmu.structure.sample_clocks, a linear Diophantine equation); accepted when they
never coincide, refused (E-REINIT-SAME-INSTANT, both clauses named) when they do; parameters
stay checked at run time.

Oracles: enumeration of both clocks' instants in exact rationals (the Diophantine answer);
the closed form of x for der(x) = 1 between resets."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction as F

import numpy as np
import pytest
from fmpy import simulate_fmu

from mdae_fmu.analysis import analyze
from mdae_fmu.cli import main as cli_main
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure.sample_clocks import (Clock, first_coincidence, literal_value,
                                              sample_clock)


def _enumerated(a: Clock, b: Clock, n: int = 300) -> tuple[list[F], F]:
    """The common instants of the first n ticks of each clock, and the horizon they cover.
    Exact: the ticks counted in units of 1/D, D the common denominator of the two starts and
    intervals (integers, a tenth of the CPU of the same sets of Fractions)."""
    den = math.lcm(*(x.denominator for x in (a.start, a.interval, b.start, b.interval)))
    sa, ia, sb, ib = (int(x * den) for x in (a.start, a.interval, b.start, b.interval))
    assert ia > 0 and ib > 0
    ta = set(range(sa, sa + n * ia, ia))
    tb = set(range(sb, sb + n * ib, ib))
    horizon = min(sa + (n - 1) * ia, sb + (n - 1) * ib)
    return sorted(F(t, den) for t in ta & tb if t <= horizon), F(horizon, den)


def test_first_coincidence_agrees_with_enumeration():
    """2000 random pairs of clocks with rational starts and intervals (denominators 1-10):
    the common instants found by enumerating ticks are exactly t1 + j L, or there are none
    when first_coincidence says they never coincide."""
    rng = random.Random(14)
    both = 0
    for _ in range(2000):
        def q(lo):
            return F(rng.randint(lo, 30), rng.choice([1, 2, 3, 4, 5, 6, 10]))
        a, b = Clock(start=q(0), interval=q(1)), Clock(start=q(0), interval=q(1))
        common, horizon = _enumerated(a, b)
        hit = first_coincidence(a, b)
        if hit is None:
            assert common == [], (a, b)
            continue
        t1, period = hit
        expected = []
        for j in itertools.count():
            if t1 + j * period > horizon:
                break
            expected.append(t1 + j * period)
        assert common == expected, (a, b, hit)
        both += 1
    assert 300 < both < 1700          # both answers occur


def test_literals_are_read_as_their_decimal_text():
    """0.1 is 1/10 (the double nearest 0.1 is not): sample(0.1, 0.3) and sample(0.4, 0.3)
    coincide from 0.4 on; constants resolve, parameters do not."""
    m = parse_modelica("""class C
  constant Real c = 0.3;
  constant Real d = 2 * c - 0.2;
  parameter Real p = 0.3;
  Real x;
equation
  x = 0;
end C;""", "C.mo")
    consts = {v.name: v.binding for v in m.variables if v.variability == "constant"}
    import mdae_fmu.expr as E
    assert literal_value(E.Const(0.1), consts) == F(1, 10)
    assert literal_value(E.Ref("d"), consts) == F(2, 5)
    assert literal_value(E.Ref("p"), consts) is None
    a = sample_clock(E.Call("sample", (E.Const(0.1), E.Ref("c"))), consts)
    b = sample_clock(E.Call("sample", (E.Ref("d"), E.Const(0.3))), consts)
    assert first_coincidence(a, b) == (F(2, 5), F(3, 10))
    assert sample_clock(E.Call("sample", (E.Const(0), E.Ref("p"))), consts) is None
    assert sample_clock(E.Call("sample", (E.Const(0), E.Const(0))), consts) is None


TWO_CLOCKS = """class TwoClocks
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when sample(%s) then
    reinit(x, 0);
  end when;
  when sample(%s) then
    reinit(x, 10);
  end when;
end TwoClocks;
"""


def test_clocks_that_never_coincide_are_accepted_and_run(tmp_path):
    """sample(0, 0.3) and sample(0.1, 0.3): 0.3 k = 0.1 + 0.3 m has no integer solution.
    Accepted, the two clocks are not combined into one transient mode, and x follows the
    closed form: x = t - t_k after a reset to 0 at t_k = 0.3 k, 10 + t - t_k after the set
    to 10 at t_k = 0.1 + 0.3 k."""
    src = tmp_path / "TwoClocks.mo"
    src.write_text(TWO_CLOCKS % ("0, 0.3", "0.1, 0.3"))
    m = parse_modelica(src.read_text(), str(src))
    a = analyze(m)
    assert a.accepted
    assert len(a.automaton.system.non_simultaneous()) == 1
    fmu = tmp_path / "TwoClocks.fmu"
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 0
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.025, output=["x"])
    t, x = r["time"], r["x"]
    phase = np.round(t / 0.1) - t / 0.1
    away = np.abs(phase) > 1e-6                       # rows not at an event instant
    reset = 0.3 * np.floor(t / 0.3 + 1e-9)            # last tick of each clock
    kick = 0.1 + 0.3 * np.floor((t - 0.1) / 0.3 + 1e-9)
    expected = np.where(kick > reset, 10 + t - kick, t - reset)
    np.testing.assert_allclose(x[away], expected[away], atol=1e-9)
    assert away.sum() > 20


def test_clocks_that_coincide_are_refused_naming_both_clauses(tmp_path, capsys):
    """sample(0, 0.2) and sample(0.1, 0.3): 2k = 1 + 3m, first at k = 2, m = 1, t = 0.4, then
    every lcm(0.2, 0.3) = 0.6. Refused by analyze and export alike (exit 1), with both
    clauses, their lines, the instants and the fix; the fix (one when-clause with elsewhen)
    is accepted and runs, the first branch winning at t = 0.4."""
    src = tmp_path / "Clash.mo"
    src.write_text(TWO_CLOCKS % ("0, 0.2", "0.1, 0.3"))
    assert cli_main(["analyze", str(src)]) == 1
    out = capsys.readouterr().out
    assert (f"{src}:6:5: two when-clauses reinit x at the same instants "
            "(E-REINIT-SAME-INSTANT): when sample(0, 0.2) (w1, Clash.mo:6) and when "
            "sample(0.1, 0.3) (w2, Clash.mo:9) both fire at t = 0.4 + 0.6*j, j = 0, 1, 2, ..."
            ) in out
    assert "fix: merge them into one when-clause" in out
    fmu = tmp_path / "Clash.fmu"
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 1
    assert "E-REINIT-SAME-INSTANT" in capsys.readouterr().err and not fmu.exists()
    src.write_text("""class Merged
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when sample(0, 0.2) then
    reinit(x, 0);
  elsewhen sample(0.1, 0.3) then
    reinit(x, 10);
  end when;
end Merged;
""")
    assert cli_main(["export", str(src), "-o", str(fmu)]) == 0
    r = simulate_fmu(str(fmu), stop_time=0.5, output_interval=0.05, output=["x"])
    x = dict(zip(np.round(r["time"], 9), r["x"]))    # the last row at a time: right limit
    # ticks: 0 reset, 0.1 set, 0.2 reset, 0.4 both (the first branch wins: reset)
    for t, value in ((0.05, 0.05), (0.15, 10.05), (0.25, 0.05), (0.35, 0.15), (0.45, 0.05)):
        assert x[t] == pytest.approx(value, abs=1e-9), t


def test_parameter_clocks_stay_a_runtime_check(tmp_path):
    """With a parameter interval the host may change, nothing is decided at compile time:
    accepted (as before), and the run-time check reports the instant where both fire."""
    text = (TWO_CLOCKS % ("0, T", "0.1, 0.3")).replace(
        "  Real x", "  parameter Real T = 0.2;\n  Real x")
    m = parse_modelica(text, "Param.mo")
    assert analyze(m).accepted
    from mdae_fmu.fmu.export import export
    fmu = export(m, tmp_path / "Param.fmu", progress=False)
    messages = []
    with pytest.raises(Exception, match="fmi2NewDiscreteStates"):
        simulate_fmu(str(fmu), stop_time=1.0, output=["x"],
                     logger=lambda *a: messages.append(a[-1].decode()))
    assert any(msg.startswith("t = 0.4") and ": reinit(x, ...) at Param.mo:7 and at "
               "Param.mo:10 at the same instant" in msg for msg in messages), messages
