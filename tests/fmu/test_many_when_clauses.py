"""More when-clauses than the enumeration handles in a model of one long mode (issue 26: a
well-posed model is never refused by a size limit): 20 counters on one decaying state, and
17 bouncing balls, were refused with E-EXPLORE-BOUND (2^20 - 1 and 2^17 - 1 transient modes,
beyond `mdae_fmu.modes.normalize.MAX_TRANSIENT_MODES`); they take the one analysis
(the per-mode analysis of their mode and the one analysis' event checks, no transient mode
enumerated: `mdae_fmu.implicit.when_checks.event_automaton_of`), are exported and run in FMPy.

Oracles: closed forms. ``der(x) = -x``, ``x(0) = 1``: the counter ``c_k`` of
``when x < 0.9 - 0.01 k`` is 0 before ``t_k = -ln(0.9 - 0.01 k)`` and 1 after; a ball
dropped from rest at height ``h`` under ``g`` hits the floor at ``sqrt(2 h / g)`` and leaves
it with ``e`` times its speed ``g t``, so that it rises for ``e t`` more seconds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.importers.flat_modelica import parse_modelica  # noqa: E402

N_WHEN, N_BALLS, G, E = 20, 17, 9.81, 0.8


def counters(n: int) -> str:
    """The lead's mw.mo: one state ``der(x) = -x`` and n counters of its thresholds."""
    decl = "".join(f"  discrete Real c{k}(start = 0, fixed = true);\n" for k in range(n))
    eqs = "".join(f"  when x < {0.9 - 0.01 * k!r} then\n    c{k} = pre(c{k}) + 1;\n"
                  "  end when;\n" for k in range(n))
    return (f"model ManyWhen\n{decl}  Real x(start = 1, fixed = true);\nequation\n"
            f"  der(x) = -x;\n{eqs}end ManyWhen;\n")


def balls(n: int) -> str:
    """n bouncing balls dropped from rest at heights 1, 1.1, ..., one long mode."""
    decl = "".join(f"  Real h{k}(start = {1 + 0.1 * k!r}, fixed = true);\n"
                   f"  Real v{k}(start = 0, fixed = true);\n" for k in range(n))
    eqs = "".join(f"  der(h{k}) = v{k};\n  der(v{k}) = -{G};\n"
                  f"  when h{k} < 0 then\n    reinit(v{k}, -{E}*pre(v{k}));\n  end when;\n"
                  for k in range(n))
    return f"model Balls\n{decl}equation\n{eqs}end Balls;\n"


def crossing(k: int) -> float:
    return -math.log(0.9 - 0.01 * k)


def _runs(source: str, name: str, tmp_path: Path, stop: float, outputs: list[str]) -> dict:
    """The default FMU (ME and CS in one archive) of ``source``, run in both interfaces."""
    model = parse_modelica(source, f"{name}.mo")
    fmu = tmp_path / f"{name}.fmu"
    api.export_fmu(model, fmu, fmi_type="both", progress=False)
    return {fmi_type: simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=stop,
                                   relative_tolerance=1e-8, output_interval=0.01,
                                   output=outputs, record_events=fmi_type == "ModelExchange")
            for fmi_type in ("ModelExchange", "CoSimulation")}


def test_twenty_counters_exported_and_run(tmp_path):
    """Each counter is 0 before its crossing and 1 after, in ME (its event rows at the
    crossing, to 1e-5) and CS (at every communication point), x on exp(-t)."""
    names = [f"c{k}" for k in range(N_WHEN)]
    runs = _runs(counters(N_WHEN), "ManyWhen", tmp_path, 0.5, [*names, "x"])
    for fmi_type, r in runs.items():
        t = r["time"]
        assert np.max(np.abs(r["x"] - np.exp(-t))) < 1e-5, fmi_type
        for k, name in enumerate(names):
            tk, c = crossing(k), r[name]
            assert set(c) == {0.0, 1.0}, (fmi_type, name)
            on = t[c == 1.0]
            assert np.all(c[t < tk - 1e-5] == 0.0) and np.all(c[t > tk + 1e-5] == 1.0), \
                (fmi_type, name)
            if fmi_type == "ModelExchange":
                assert abs(on[0] - tk) < 1e-5, (name, on[0], tk)
            else:
                assert on[0] == pytest.approx(math.ceil(tk / 0.01) * 0.01, abs=1e-9), name


def height(h0: float, t: np.ndarray) -> np.ndarray:
    """The closed form of a ball dropped from rest at ``h0``, up to its second impact
    (``(1 + 2 e)`` times the first: past 1 s for every ball here)."""
    impact = math.sqrt(2 * h0 / G)
    s = t - impact
    return np.where(t < impact, h0 - G * t * t / 2, E * G * impact * s - G * s * s / 2)


def test_seventeen_bouncing_balls_exported_and_run(tmp_path):
    """Each ball's impact at sqrt(2 h / g) (ME: the event row, to 1e-5) and its heights
    before and after it (ME and CS) on the closed form `height`."""
    a = analyze(parse_modelica(balls(N_BALLS), "Balls.mo"))
    assert a.accepted and a.guarded is not None, a.rejection
    runs = _runs(balls(N_BALLS), "Balls", tmp_path, 1.0,
                 [f"{p}{k}" for k in range(N_BALLS) for p in ("h", "v")])
    for fmi_type, r in runs.items():
        t = r["time"]
        for k in range(N_BALLS):
            h0 = 1 + 0.1 * k
            assert np.max(np.abs(r[f"h{k}"] - height(h0, t))) < 1e-5, (fmi_type, k)
            if fmi_type == "ModelExchange":
                impact = math.sqrt(2 * h0 / G)
                i = np.flatnonzero(r[f"v{k}"] > 0)[0]
                assert abs(t[i] - impact) < 1e-5, (k, t[i], impact)
                assert r[f"v{k}"][i] == pytest.approx(E * G * impact, rel=1e-5), k


def test_listed_modes_keep_the_bound():
    """The enumerated view (``implicit=False``, `analyze --list-modes`) keeps its bound,
    legitimate for a listing: E-EXPLORE-BOUND naming the 20 when-conditions."""
    a = analyze(parse_modelica(counters(N_WHEN), "ManyWhen.mo"), implicit=False)
    assert not a.accepted and a.guarded is None
    [error] = a.errors
    assert error.startswith(
        "E-EXPLORE-BOUND: model ManyWhen: 20 when-conditions (transient guards) can become "
        "true at the same instant in 2^20 - 1 combinations, more than the enumeration limit "
        "of 65536 transient modes"), error


@pytest.mark.parametrize("implicit", [None, True])
@pytest.mark.parametrize("rhs", ["-x", "if x > 0.5 then -x else -2*x"])
def test_one_analysis_past_the_bound(implicit, rhs):
    """`analyze` (default and ``implicit=True``, `--implicit`, which means the default,
    docs/decisions.md §19) of the 20 counters, also with an if-expression that leaves the
    model one mode (the lead's mwm.mo), accepted with its guarded schedule, the state x, no
    transient mode enumerated: as every model of one long mode with when-clauses, the
    per-mode analysis of its mode and the automaton the one analysis' event checks build
    (`implicit.when_checks.event_automaton_of`), one change per counter, which selects no
    equation and so has no instant to run."""
    source = counters(N_WHEN).replace("der(x) = -x;", f"der(x) = {rhs};")
    a = analyze(parse_modelica(source, "ManyWhen.mo"), implicit=implicit)
    assert a.accepted and a.guarded is not None, a.rejection
    assert a.modes is not None and len(a.modes.modes) == 1
    assert a.automaton is not None and len(a.automaton.modes) == 1 + N_WHEN
    assert len(a.automaton.changes) == N_WHEN and a.guarded.single is not None
    assert all(ch.accepted and not ch.instants for ch in a.automaton.changes)
    assert not a.errors
