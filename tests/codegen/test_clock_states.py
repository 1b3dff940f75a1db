"""Clock states (mdae_fmu/codegen/events.py): a state with ``der(x) = c`` that appears only in
relations is affine in time, so its relations are time events, not event indicators.

Oracles are closed forms: the crossing of ``x0 + c*(t - t0)`` through a threshold."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fmpy")
from fmpy import read_model_description, simulate_fmu  # noqa: E402

from mdae_fmu.api import load  # noqa: E402
from mdae_fmu.codegen.events import clock_rates  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402
from mdae_fmu.symbolic import SymbolTable  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fmu_files import export_text  # noqa: E402
from strict_driver import simulate_strict  # noqa: E402


def _rates_of(model) -> dict:
    table = SymbolTable(constants=frozenset(
        v.name for v in model.variables if v.variability in ("parameter", "constant")))
    return {str(x): str(c) for x, c in clock_rates(model, table).items()}


def _rates(text: str) -> dict:
    return _rates_of(parse_modelica(text, "M.mo"))


CLOCK = """class M
  parameter Real k = 2.0;
  Real c(start = 1.0, fixed = true);
  Real y(start = 0.0, fixed = true);
  Boolean b;
equation
  der(c) = k;
  b = c >= 3.0;
  der(y) = if b then 1.0 else 0.0;
end M;"""


@pytest.mark.parametrize("text, expected", [
    (CLOCK, {"c": "k"}),
    # a parameter coefficient on der(): rate -b/a
    (CLOCK.replace("der(c) = k;", "2.0 * der(c) = -k;"), {"c": "-0.5*k"}),
    # c is used outside a relation: not a clock (its value feeds the dynamics)
    (CLOCK.replace("if b then 1.0 else 0.0", "c"), {}),
    # the rate depends on a state: not affine in time
    (CLOCK.replace("der(c) = k;", "der(c) = y;"), {}),
    # c is reinitialized by a when-clause: excluded
    (CLOCK.replace("end M;", "equation\n  when y > 1.0 then\n    reinit(c, 0.0);\n"
                   "  end when;\nend M;"), {}),
])
def test_clock_detection(text, expected):
    assert _rates(text) == expected


def test_clutch_clock_is_detected():
    rates = _rates_of(load(ROOT / "reference_models" / "ClutchBasic.mo"))
    assert rates == {"t": "1.00000000000000"}


WHEN = """class W
  parameter Real x0 = 2.0;
  parameter Real rate = -0.5;
  Real c(start = x0, fixed = true);
  Real te(start = -1.0);
  Integer n(start = 0, fixed = true);
equation
  der(c) = rate;
  when c <= 1.5 then
    te = time;
    n = pre(n) + 1;
  end when;
end W;"""


def test_clock_relation_is_a_time_event_at_the_closed_form_crossing(tmp_path):
    """``c(t) = 2 - t/2`` reaches 1.5 at t = 1 exactly: no event indicator, the when-clause fires
    once, at the published time event (|te - 1| at rounding level, not at the event locator's
    tolerance), in FMPy's CVode and in the strict driver."""
    fmu = export_text(tmp_path, WHEN, "W")
    assert read_model_description(str(fmu)).numberOfEventIndicators == 0
    r = simulate_fmu(str(fmu), stop_time=3.0, output=["te", "n", "c"], output_interval=0.1)
    assert r["te"][-1] == pytest.approx(1.0, abs=1e-12)
    assert r["n"][-1] == 1
    assert r["c"][-1] == pytest.approx(0.5, abs=1e-9)
    res = simulate_strict(fmu, stop_time=3.0, step=1e-2, host_safe=True)
    assert res.at("te", 3.0) == pytest.approx(1.0, abs=1e-12)
    assert [round(e.time, 12) for e in res.events if "time" in e.causes] == [1.0]


def test_changed_rate_parameter_moves_the_event(tmp_path):
    """The crossing time is computed at run time from the parameters the host sets."""
    fmu = export_text(tmp_path, WHEN, "W")      # the FMU of the test above, built once
    r = simulate_fmu(str(fmu), stop_time=1.9, output=["te", "n"], output_interval=0.1,
                     start_values={"rate": -0.25})
    assert r["n"][-1] == 0          # 2 - 1.9/4 > 1.5: no crossing before 1.9 s
    r = simulate_fmu(str(fmu), stop_time=3.0, output=["te", "n"], output_interval=0.1,
                     start_values={"rate": -0.25})
    assert r["n"][-1] == 1 and r["te"][-1] == pytest.approx(2.0, abs=1e-12)


def test_clutch_engages_at_t1_without_event_indicators(tmp_path):
    """The ideal clutch's clock t: engagement exactly at t1 = 5 (the right limit there is the
    engaged mode, g = t >= t1; at t2 the event switches to the released mode, the right limit
    of t <= t2), momentum conserved across the engagement (RR-9334 Figure 2)."""
    fmu = export(load(ROOT / "reference_models" / "ClutchBasic.mo"),
                 tmp_path / "C.fmu", progress=False)
    assert read_model_description(str(fmu)).numberOfEventIndicators == 0
    r = simulate_fmu(str(fmu), stop_time=10.0, output=["w1", "w2", "g"], output_interval=0.5,
                     relative_tolerance=1e-10)
    t = r["time"]
    eng = (t > 5.0) & (t < 7.0)
    assert np.all(r["g"][eng]) and not np.any(r["g"][(t < 5.0) | (t > 7.0)])
    assert [bool(g) for g in r["g"][t == 5.0]] == [False, True]     # left, right limit
    assert np.max(np.abs(r["w1"][eng] - r["w2"][eng])) <= 1e-12
    # closed form before t1: w1 = exp(-k1 t / j1), w2 = 1.5 exp(-k2 t / j2); restart conserves
    # j1 w1 + j2 w2
    w1m, w2m = np.exp(-0.01 * 5.0), 1.5 * np.exp(-0.0125 * 5.0 / 2.0)
    wplus = (w1m + 2.0 * w2m) / 3.0
    k5 = int(np.flatnonzero(t == 5.0)[-1])    # the right limit at t1
    assert r["w1"][k5] == pytest.approx(wplus, rel=1e-8)


def test_clock_candidates_are_the_equations_with_one_first_derivative():
    # the candidate test of `clock_rates` (one name outside the constants and pre(), at
    # derivative order 1) stops at a second name; oracle: `E.derivative_orders` of the whole
    # residual without the constants, on random residuals
    from hypothesis import given, settings, strategies as st

    from mdae_fmu import expr as E
    from mdae_fmu.codegen.events import _only_first_derivative

    def der(e, k):
        for _ in range(k):
            e = E.Der(e)
        return e

    leaves = st.one_of(
        st.tuples(st.sampled_from(["x", "y", "p"]), st.integers(0, 2)).map(
            lambda t: der(E.Ref(t[0]), t[1])),
        st.sampled_from(["x", "y", "p"]).map(lambda n: E.Call("pre", (E.Ref(n),))),
        st.integers(1, 3).map(E.Const), st.just(E.TIME))
    trees = st.recursive(leaves, lambda c: st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*"]), c, c).map(lambda t: E.BinOp(*t)),
        c.map(lambda a: E.Call("sin", (a,))), c.map(E.Der)), max_leaves=8)

    @settings(max_examples=300, deadline=None)
    @given(trees)
    def check(e):
        orders = {n: k for n, k in E.derivative_orders(e).items() if n != "p"}
        expected = next(iter(orders)) if len(orders) == 1 and 1 in orders.values() else None
        assert _only_first_derivative(e, {"p"}) == expected

    check()
    x = E.Ref("x")
    assert _only_first_derivative(E.BinOp("-", E.Der(x), E.Ref("p")), {"p"}) == "x"
    assert _only_first_derivative(E.BinOp("-", E.Der(x), E.Ref("y")), {"p"}) is None
    assert _only_first_derivative(E.BinOp("-", E.Der(E.Der(x)), E.Const(1)), set()) is None
    assert _only_first_derivative(E.BinOp("-", E.Der(x), E.Call("pre", (E.Ref("y"),))),
                                  set()) == "x"
