"""A model without guards skips the mode-change exploration unless the full report is asked
(`mdae_fmu.modes.explore.analyze_multimode` with ``full=False``, issue 29 Deliver 2): the
verdict, the warnings and the summary are those of the full analysis, on every reference
model and on models built to reach the two checks that remain (the Σ-method and the
initialization check, docs/theory.md §8.5)."""

from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.analysis import analyze, render_json, render_text
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.modes import analyze_multimode, describe_automaton
from mdae_fmu.modes import runs as runs_module
from mdae_fmu.modes import explore as explore_module
from mdae_fmu.summary import summary_lines

MODELS = Path(__file__).resolve().parents[2] / "reference_models"

#: A pendulum whose two fixed start positions are not on the circle of its rod: the
#: initialization check over-determines the mode (W-INIT-INCONSISTENT), no guard anywhere.
OVERFIXED_PENDULUM = """
model OverfixedPendulum
  parameter Real L = 1.0;
  parameter Real g = 9.81;
  Real x(start = 0.6, fixed = true);
  Real y(start = -0.6, fixed = true);
  Real vx(start = 0.0);
  Real vy(start = 0.0);
  Real lambda;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -lambda * x;
  der(vy) = -lambda * y - g;
  x ^ 2 + y ^ 2 = L ^ 2;
end OverfixedPendulum;
"""

#: A chain of three masses with a nonlinear loop per mass (the benchmark's family, small).
LOOP_CHAIN = """
model SmallLoopChain
  parameter Real k = 100.0;
  Real x[3](each start = 0.1, each fixed = true);
  Real v[3](each start = 0.0, each fixed = true);
  Real u[3];
  Real w[3];
equation
  for i in 1:3 loop
    der(x[i]) = v[i];
    der(v[i]) = -k * x[i] - 0.2 * w[i];
    u[i] + 0.5 * w[i] = x[i];
    w[i] - 0.3 * sin(u[i]) = v[i];
  end for;
end SmallLoopChain;
"""


def _reference_models() -> list[Path]:
    return sorted(MODELS.glob("*.mo"))


def _same_verdict(model, short=None) -> tuple:
    """The full and the verdict-only analyses of ``model`` (``short``: the latter when already
    computed), checked to agree on everything the summary, the verdict and the export read."""
    full = analyze(model)
    short = analyze(model, full=False) if short is None else short
    assert short.accepted == full.accepted
    assert short.exit_code == full.exit_code
    assert short.messages == full.messages
    assert list(summary_lines(model, short)) == list(summary_lines(model, full))
    return full, short


@pytest.mark.parametrize("path", _reference_models(), ids=lambda p: p.stem)
def test_reference_models_same_verdict_and_summary(path):
    model = api.load(path)
    short = analyze(model, full=False)
    if short.modes is None:
        # a multimode model: the one analysis (`guarded_analysis`), which does not read
        # ``full`` (`analysis._structure`); the full analysis would be the same computation
        # again (issue 27: 5.6 s of CPU over the RLDC2 and CupAndBall models, stop 38)
        assert short.automaton is None and (short.guarded is not None or not short.accepted)
        return
    full, short = _same_verdict(model, short)
    if full.automaton is None:
        assert short.automaton is None
        return
    assert short.automaton is not None
    if full.automaton.guards:
        # a model with guards is explored in full whatever is asked
        assert short.automaton.complete and short.automaton == full.automaton
    else:
        assert not short.automaton.complete
        assert short.automaton.modes[0].states == full.automaton.modes[0].states
        assert short.automaton.modes[0].latent == full.automaton.modes[0].latent
        assert full.automaton.modes[0].blocks and not short.automaton.modes[0].blocks


def test_some_reference_models_have_no_guards():
    """The comparison above reaches the new path: Dahlquist, Van der Pol and the pendulum
    have no guard."""
    for name in ("Dahlquist", "VanDerPol", "Pendulum"):
        a = analyze(api.load(MODELS / f"{name}.mo"), full=False)
        assert a.automaton is not None and not a.automaton.guards
        assert not a.automaton.complete


def test_initialization_check_still_runs():
    """The one check of the exploration that can fail on a model without guards."""
    model = parse_modelica(OVERFIXED_PENDULUM)
    full, short = _same_verdict(model)
    codes = [w.split(":")[0] for w in short.warnings]
    assert codes == ["W-INIT-INCONSISTENT"] and short.accepted
    assert short.automaton is not None
    assert {"x", "y"} <= set(short.automaton.diagnostics[0].variables)


def test_no_steady_run_without_guards(monkeypatch):
    """The exploration is skipped, not redone more cheaply: no steady run, no other run."""
    model = parse_modelica(LOOP_CHAIN)
    calls = []
    for module in (runs_module, explore_module):
        for name in ("steady_run", "exec_long", "exec_transient"):
            if hasattr(module, name):
                real = getattr(module, name)
                monkeypatch.setattr(module, name,
                                    lambda *a, _real=real, **k: calls.append(1) or _real(*a, **k))
    a = analyze(model, full=False)
    assert a.accepted and not calls
    b = analyze(model)
    assert b.accepted and calls        # the full analysis does run it (the spy works)


def test_full_report_refuses_the_verdict_only_automaton():
    model = parse_modelica(LOOP_CHAIN)
    a = analyze(model, full=False)
    with pytest.raises(ValueError, match="verdict only"):
        render_text(model, a)
    with pytest.raises(ValueError, match="verdict only"):
        render_json(model, a)
    assert a.automaton is not None
    with pytest.raises(ValueError, match="full=True"):
        describe_automaton(a.automaton)
    full = analyze_multimode(model)
    assert full.complete and "blocks" in describe_automaton(full)
