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


# --- the verdict read off the per-mode report, without normalizing (docs/theory.md §8.6) -----

ROOT = MODELS.parent

#: A pendulum whose fixed start value is its force: an algebraic variable fixed, so the
#: initialization check's graph is the whole system (the normalized path).
FIXED_FORCE_PENDULUM = OVERFIXED_PENDULUM.replace(
    "Real x(start = 0.6, fixed = true);", "Real x(start = 0.6);").replace(
    "Real y(start = -0.6, fixed = true);", "Real y(start = -0.6);").replace(
    "Real lambda;", "Real lambda(start = 1.0, fixed = true);").replace(
    "OverfixedPendulum", "FixedForcePendulum")

#: Guards without a structural condition: an if-expression whose branches read the same
#: variables, and a Boolean variable defined by an equation that no guard reads.
NO_STRUCTURAL_GUARD = """
model NoStructuralGuard
  Real x(start = 1, fixed = true);
  Real y;
  Boolean b;
equation
  der(x) = if x > 0 then -x else -2 * x;
  y = 2 * x;
  b = x > 0.5;
end NoStructuralGuard;
"""


def _texts() -> list[tuple[str, str]]:
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gen_chain
    import gen_scalable
    out = [(p.stem, p.read_text()) for p in _reference_models()]
    out += [(str(p.relative_to(ROOT)), p.read_text())
            for p in sorted((ROOT / "tests" / "data").rglob("*.mo"))
            + sorted((ROOT / "tests" / "corpus" / "rumoca").glob("*.mo"))]
    out += [("loop_chain", gen_chain.loop_chain_model(4))]
    out += [(f, gen_scalable.FAMILIES[f][0](3)) for f in sorted(gen_scalable.FAMILIES)]
    out += [(s.split()[1], s) for s in (OVERFIXED_PENDULUM, FIXED_FORCE_PENDULUM, LOOP_CHAIN,
                                        NO_STRUCTURAL_GUARD)]
    return out


def _normalized_verdict(model, report):
    """`analyze_multimode`'s verdict-only automaton as computed before: through the
    normalization (given the normalized system, it cannot skip it)."""
    from mdae_fmu.diagnostics import MdaeError
    from mdae_fmu.modes.normalize import normalize
    try:
        return analyze_multimode(normalize(model), per_mode=report, full=False)
    except MdaeError as err:
        return type(err)


def test_verdict_without_normalization_is_the_normalized_one():
    """On every model at hand whose per-mode stage accepts one mode, the verdict-only
    automaton is the one the normalization gives (every field but the system, which the
    path without normalization does not build); the path is taken on the models without
    guards, and not where the initialization check must name over-determined start values
    or reads the whole system."""
    from mdae_fmu.diagnostics import EXIT_OK, MdaeError
    from mdae_fmu.structure.per_mode import analyze_modes
    quick, compared = [], 0
    for name, text in _texts():
        try:
            model = parse_modelica(text)
            report = analyze_modes(model)
        except MdaeError:
            continue
        if report.exit_code != EXIT_OK or len(report.modes) != 1:
            continue
        try:
            got = analyze_multimode(model, per_mode=report, full=False)
        except MdaeError as err:
            got = type(err)
        want = _normalized_verdict(model, report)
        assert got == want, name
        compared += 1
        if not isinstance(got, type) and got.system is None:
            quick.append(name)
            assert not got.complete and not model.guards()
    assert compared >= 30, compared
    assert {"Dahlquist", "VanDerPol", "Pendulum", "loop_chain", "grid", "heat",
            "transmission", "SmallLoopChain"} <= set(quick)
    assert not {"OverfixedPendulum", "FixedForcePendulum", "NoStructuralGuard"} & set(quick)


def test_fixed_algebraic_variable_still_checked():
    """The fixed force is not a state: the initialization check reads the whole system on
    the normalized path, and the verdict is the full analysis'."""
    model = parse_modelica(FIXED_FORCE_PENDULUM)
    full, short = _same_verdict(model)
    assert short.automaton is not None and short.automaton.system is not None


def test_summary_without_normalization(monkeypatch):
    """The loop chain's verdict-only analysis builds no normalized system (the normalization
    is not called), and its summary and verdict are the full analysis'."""
    model = parse_modelica(LOOP_CHAIN)
    calls = []
    real = explore_module.normalize
    monkeypatch.setattr(explore_module, "normalize", lambda m: calls.append(1) or real(m))
    short = analyze(model, full=False)
    monkeypatch.undo()
    assert not calls and short.automaton is not None and short.automaton.system is None
    # the per-mode stage's signature rows are released as the normalization released them
    # (issue 16's memory), and computed again when read
    assert not any(model.__dict__.get("_sigma_rows", {}).values())
    from mdae_fmu.structure.signature import sigma_row, signature_row
    assert all(sigma_row(model, eq.residual) == signature_row(eq.residual)
               for eq in model.equations)
    _same_verdict(model, short)
