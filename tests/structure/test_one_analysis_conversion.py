"""Blocks singular for all values on the one analysis (issue 26 Deliver 2,
mdae_fmu.implicit.conversion): the implicit analysis' block variants are tested, converted by
Tan-Nedialkov-Pryce's conversions or rejected with the formula of their modes, as the
enumerated path does per mode (tests/structure/test_singular_conversion.py).

Oracles: the enumerated path's verdicts and conversions (the same objects), its FMU's
trajectories (1e-10), and closed forms derived in the docstrings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdae_fmu import api
from mdae_fmu.analysis import analyze, guarded_analysis
from mdae_fmu.cli import main
from mdae_fmu.implicit.analysis import analyze_implicit
from mdae_fmu.implicit.conversion import convert_guarded, singular_variants
from mdae_fmu.structure.conversion import convert_singular
from mdae_fmu.structure.per_mode import analyze_modes

from fmu_files import export_text
from test_singular_conversion import (AHSI, ASSC, ES_DEMO, GUARDED_ASSC, INCONSISTENT,
                                      INFLUENZA_SETS, LC_DIFFERENTIATED, PENDULUM4,
                                      PRODUCT_BLOCK, RADIAL, REDUNDANT, VALUE_SINGULAR)

# the dependency of Redundant in the mode time < 0.5 only
GUARDED_REDUNDANT = """model GuardedRedundant
  Real x(start = 1, fixed = true); Real a, b;
equation
  der(x) = -a;
  a + b = x;
  if time < 0.5 then
    2*a + 2*b = 2*x;
  else
    a - b = 0;
  end if;
end GuardedRedundant;
"""

# ASSC's dependency in both modes of a switch (p = 0 or q = 0) that does not touch it
SWITCHED_ASSC = ASSC.replace("model ASSC", "model SwitchedASSC").replace(
    "Real a, b, c;", "Real a, b, c, p, q;").replace("end ASSC;", """  p + q = sin(time);
  if time > 0.3 then
    p = 0;
  else
    q = 0;
  end if;
end SwitchedASSC;""")


def wide_guarded_assc(n: int) -> str:
    """GuardedASSC beside n switches ``p_k = 0`` or ``q_k = 0`` driven by Boolean inputs
    (``s_k`` true for odd k at the start): 2^(n+1) modes."""
    decl = "\n".join(f"  input Boolean s{k}(start = {'true' if k % 2 else 'false'});\n"
                     f"  Real p{k}, q{k};" for k in range(n))
    eqs = "\n".join(f"  p{k} + q{k} = sin({k + 1}*time);\n  if s{k} then\n    p{k} = 0;\n"
                    f"  else\n    q{k} = 0;\n  end if;" for k in range(n))
    body = GUARDED_ASSC.split("equation\n")[1].replace("end GuardedASSC;\n", "")
    return (f"model WideGuardedASSC\n{decl}\n"
            "  Real x(start = 0, fixed = true), y(start = -5), a, b, c;\n"
            f"equation\n{body}{eqs}\nend WideGuardedASSC;\n")


def chained(text: str, name: str, n: int, old: str, new: str) -> str:
    """``text`` (the model ``name``) with its variable ``old`` reached through a chain of n
    algebraic equations ``w_k = w_(k+1)`` where the equation ``new`` used it: the model's
    singular block grows by n + 1 equations, and past 64 the implicit analysis leaves it
    coarse (a union component not split per mode, `mdae_fmu.implicit.blocks`)."""
    ws = ", ".join(f"w{k}" for k in range(n + 1))
    chain = "".join(f"  w{k} = w{k + 1};\n" for k in range(n))
    text = text.replace(new, new.replace(old, "w0"), 1)
    text = text.replace(f"end {name};", f"{chain}  w{n} = {old};\nend Chained{name};")
    text = text.replace(f"model {name}", f"model Chained{name}")
    return text.replace("equation\n", f"  Real {ws};\nequation\n", 1)


# GuardedASSC and GuardedRedundant, their singular block in a union component of 75 and 74
# equations
CHAINED_ASSC = chained(GUARDED_ASSC, "GuardedASSC", 70, "c", "a + b + c = 0;")
CHAINED_REDUNDANT = chained(GUARDED_REDUNDANT, "GuardedRedundant", 70, "b", "a + b = x;")

MODELS = {
    "ASSC": ASSC, "AHSI": AHSI, "ESDemo": ES_DEMO, "GuardedASSC": GUARDED_ASSC,
    "Redundant": REDUNDANT, "Inconsistent": INCONSISTENT, "ValueSingular": VALUE_SINGULAR,
    "ProductBlock": PRODUCT_BLOCK, "pendulum4": PENDULUM4, "LCDiff": LC_DIFFERENTIATED,
    "InfluenzaSets": INFLUENZA_SETS, "Radial": RADIAL, "GuardedRedundant": GUARDED_REDUNDANT,
    "SwitchedASSC": SWITCHED_ASSC, "ChainedGuardedASSC": CHAINED_ASSC,
    "ChainedGuardedRedundant": CHAINED_REDUNDANT,
}


def _load(tmp_path, name: str, text: str):
    src = tmp_path / f"{name}.mo"
    src.write_text(text)
    return api.load(src)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_analysis_gives_the_default_verdict_and_conversions(tmp_path, name):
    """The one analysis (`guarded_analysis`, run here on single-mode models too) and
    ``analyze(implicit=True)`` give the enumerated analysis' verdict (``implicit=False``, the
    oracle) and the same `Conversion` objects; the converted equations are the enumerated
    analysis'; a rejection is its message, with the formula of the modes concerned after it
    when the model has guards."""
    model = _load(tmp_path, name, MODELS[name])
    default = analyze(model, implicit=False)        # the enumerated oracle
    one = guarded_analysis(model, None)
    implicit = analyze(model, implicit=True)
    assert one.modes is None
    for a in (one, implicit):
        assert a.accepted == default.accepted, (a.messages, default.messages)
        assert a.conversions == default.conversions
    if default.conversions:
        assert one.model is not None and default.model is not None
        assert one.model.equations == default.model.equations
    if not default.accepted:
        assert default.rejection is not None and one.rejection is not None
        first, *rest = one.rejection.split("\n")
        assert first == default.rejection
        if len(model.guards()) == 0:
            assert rest == []
    else:
        assert one.guarded is not None


@pytest.mark.parametrize("name", ["ChainedGuardedASSC", "ChainedGuardedRedundant"])
def test_coarse_blocks_are_converted_or_rejected(tmp_path, name):
    """The singular block of GuardedASSC (resp. GuardedRedundant) inside a union component
    of 75 (74) equations, which the implicit analysis leaves coarse: the block is split at
    the mode time < 0.5 and found singular there, then converted as the enumerated path
    (``implicit=False``) converts it (the same `Conversion`, the combination of e3, e5, e6
    and the 71 chain equations, ``0 = x - y - 5``), or rejected with its message followed by
    the formula ``time < 0.5``. Before coarse blocks were checked the one analysis accepted
    both without a conversion.

    The oracle is the enumerated path's conversion stage (`convert_singular` of its per-mode
    report, as `analyze(implicit=False)` runs it: its rejection, conversions and model are
    the analysis'), not its whole analysis: the mode-change exploration after it (an impulse
    analysis of the 75-equation chain, 4 of 5 s of CPU) converts nothing. The whole
    enumerated verdict of both models is compared with the one analysis' by
    test_one_analysis_gives_the_default_verdict_and_conversions (issue 27, stop 38)."""
    model = _load(tmp_path, name, MODELS[name])
    ia = analyze_implicit(model)
    assert [len(b.equations) for b in ia.blocks if b.coarse] == [
        75 if name == "ChainedGuardedASSC" else 74]
    (found,) = singular_variants(model, ia)
    assert ia.space.text(found.formula) == "time < 0.5"
    assert found.finding.mode == "{time < 0.5}"
    oracle = convert_singular(model, analyze_modes(model))
    one = analyze(model, implicit=True)
    assert one.modes is None
    assert one.accepted == (not oracle.rejections) == (name == "ChainedGuardedASSC")
    assert one.conversions == oracle.conversions
    if one.accepted:
        (conv,) = one.conversions
        assert conv.result == "x - y - 5" and conv.replaced == "e3"
        assert one.model is not None
        assert one.model.equations == oracle.model.equations
    else:
        assert one.rejection is not None
        first, rest = one.rejection.split("\n")
        assert first == "\n".join(oracle.rejections) and "for all values" in first
        assert rest == "  singular for all values in 1 of 2 modes: time < 0.5"


def test_coarse_variants_cover_the_component_per_structure(tmp_path):
    """WideGuardedASSC's block chained as above beside 12 switches: the coarse component
    reads only the guard time < 0.5, so its two coarse variants are tested (not one per
    mode of the 8192) and the singular one is found at the enumerated path's first mode of
    time < 0.5 (every switch true: the order of `first_mode`)."""
    text = chained(wide_guarded_assc(12), "WideGuardedASSC", 70, "c", "a + b + c = 0;")
    model = _load(tmp_path, "ChainedWide", text)
    ia = analyze_implicit(model)
    assert ia.n_modes == 2 ** 13
    assert any(b.coarse for b in ia.blocks)
    (found,) = singular_variants(model, ia)
    assert ia.space.text(found.formula) == "time < 0.5"
    assert ia.space.count(found.formula) == 2 ** 12
    repair = convert_guarded(model, ia)
    (conv,) = repair.conversions
    assert (conv.result, conv.replaced) == ("x - y - 5", "e3")
    assert list(singular_variants(repair.model, repair.analysis)) == []


def test_rejection_names_the_modes_of_the_dependency(tmp_path, capsys):
    """GuardedRedundant: 2*e2 - e3 = 0 in the mode time < 0.5 only. ``analyze --implicit``
    and ``export --implicit`` exit 1 with the enumerated path's message (the mode, the
    equations, their lines and the combination) and the formula of the modes."""
    src = tmp_path / "GuardedRedundant.mo"
    src.write_text(GUARDED_REDUNDANT)
    assert main(["analyze", "--implicit", str(src)]) == 1
    out = capsys.readouterr().out
    message = ("mode {time < 0.5}: equations e2 (GuardedRedundant.mo:5), e3 "
               "(GuardedRedundant.mo:7) are dependent for all values: 2*e2 - e3 = 0 does not "
               "depend on a, b nor on any other unknown; they are redundant")
    assert message in out
    assert "singular for all values in 1 of 2 modes: time < 0.5" in out
    assert out.rstrip().split("\n")[-3] == "verdict: rejected"
    assert main(["export", "--implicit", str(src), "-o", str(tmp_path / "x.fmu")]) == 1
    err = capsys.readouterr().err
    assert message in err and "in 1 of 2 modes: time < 0.5" in err
    assert not (tmp_path / "x.fmu").exists()


def test_variants_are_tested_once_per_form_not_per_mode(tmp_path):
    """In WideGuardedASSC (12 switches beside GuardedASSC, 8192 modes) the block {e3, e5, e6}
    has two forms (time < 0.5 or not): one variant is singular, its formula is time < 0.5
    (4096 modes), and the conversion replaces e3 there only; the analysis of the converted
    model has no singular variant left."""
    model = _load(tmp_path, "WideGuardedASSC", wide_guarded_assc(12))
    ia = analyze_implicit(model)
    assert ia.n_modes == 2 ** 13
    (found,) = singular_variants(model, ia)
    assert ia.space.text(found.formula) == "time < 0.5"
    assert ia.space.count(found.formula) == 2 ** 12
    assert found.finding.block.equations == ("e3", "e5", "e6")
    repair = convert_guarded(model, ia)
    (conv,) = repair.conversions
    assert (conv.combination, conv.result, conv.replaced) == ("e3 - e5 - e6", "x - y - 5",
                                                              "e3")
    assert list(singular_variants(repair.model, repair.analysis)) == []
    assert repair.rejections == ()


@pytest.mark.long
def test_beyond_the_enumeration_converted_and_simulated(tmp_path):
    """WideGuardedASSC has 8192 modes: the default runs the one analysis (no mode
    enumerated), converts the block of time < 0.5 and exports it. Closed form (GuardedASSC,
    tests/structure/test_singular_conversion.py): x = 1 - cos t, y = x - 5 + z with z = 0
    before 0.5 and sin t - sin(0.5) e^(t - 0.5) after; p_k = sin((k+1) t), q_k = 0 for
    even k (s_k false), the reverse for odd k."""
    from fmpy import simulate_fmu
    text = wide_guarded_assc(12)
    model = _load(tmp_path, "WideGuardedASSC", text)
    a = analyze(model)
    assert a.accepted and a.modes is None, a.messages
    (conv,) = a.conversions
    assert conv.mode.startswith("{time < 0.5, ") and conv.combination == "e3 - e5 - e6"
    fmu = export_text(tmp_path, text, "WideGuardedASSC")
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05,
                       output=["x", "y", "p0", "q0", "p1", "q1"], relative_tolerance=1e-8)
    t = res["time"]
    x = 1 - np.cos(t)
    z = np.where(t < 0.5, 0.0, np.sin(t) - math.sin(0.5) * np.exp(t - 0.5))
    assert np.allclose(res["x"], x, atol=1e-6)
    assert np.allclose(res["y"], x - 5 + z, atol=1e-6)
    assert np.allclose(res["p0"], np.sin(t), atol=1e-8) and np.allclose(res["q0"], 0.0)
    assert np.allclose(res["q1"], np.sin(2 * t), atol=1e-8) and np.allclose(res["p1"], 0.0)


@pytest.mark.long
@pytest.mark.parametrize("name", ["GuardedASSC", "SwitchedASSC"])
def test_fmu_of_the_one_analysis_runs_the_default_trajectory(tmp_path, name):
    """The FMU exported from the one analysis (``implicit=True``) runs the default's
    trajectory to 1e-10 (both are guarded-schedule FMUs of the converted model)."""
    from fmpy import simulate_fmu
    text = MODELS[name]
    outputs = ["x", "y", "a", "b", "c"]
    runs = []
    for implicit in (None, True):
        sub = tmp_path / f"implicit_{implicit}"
        sub.mkdir()
        fmu = export_text(sub, text, name, implicit=implicit)
        runs.append(simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05,
                                 output=outputs, relative_tolerance=1e-8))
    default, one = runs
    assert np.array_equal(default["time"], one["time"])
    for v in outputs:
        assert np.allclose(one[v], default[v], rtol=0, atol=1e-10), v
    t = default["time"]
    assert np.allclose(default["y"][t < 0.5], (1 - np.cos(t) - 5)[t < 0.5], atol=1e-6)


@pytest.mark.long
def test_saved_one_analysis_exports_the_converted_model(tmp_path, capsys):
    """``analyze --implicit --json`` then ``export --from-json``: the saved one analysis
    carries the converted model (its code form) without a per-mode report, and the FMU built
    from it runs the hidden constraint y = x - 5 of the mode time < 0.5 (x = 1 - cos t)."""
    import json
    from fmpy import simulate_fmu
    src = tmp_path / "GuardedASSC.mo"
    src.write_text(GUARDED_ASSC)
    assert main(["analyze", "--implicit", "--json", str(src)]) == 0
    report = json.loads(capsys.readouterr().out)
    (text,) = report["conversions"]
    assert text.startswith("mode {time < 0.5}: equations e3 (GuardedASSC.mo:7)")
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(report))
    fmu = tmp_path / "saved.fmu"
    assert main(["export", "--from-json", str(saved), "-o", str(fmu)]) == 0
    res = simulate_fmu(str(fmu), stop_time=0.45, output_interval=0.05, output=["x", "y"],
                       relative_tolerance=1e-8)
    t = res["time"]
    assert np.allclose(res["x"], 1 - np.cos(t), atol=1e-6)
    assert np.allclose(res["y"], res["x"] - 5, atol=1e-6)


def test_regular_multimode_models_have_no_singular_variant():
    """The multimode reference models and those of tests/data (and tests/data/one_pipeline)
    have no block singular for all values (test_singular_conversion's
    ``test_regular_models_are_left_alone`` on the enumerated path): no variant of the one
    analysis is found singular, so none is converted. The implicit analysis alone runs, not
    the whole analysis, to keep the test fast."""
    from pathlib import Path
    from mdae_fmu.modes.delay import delay_same_instant_guards
    from mdae_fmu.structure.structural_parameters import fix_structural_parameters
    root = Path(__file__).resolve().parents[2]
    paths = sorted((root / "reference_models").glob("*.mo")) + sorted(
        (root / "tests" / "data").glob("*.mo")) + sorted(
        (root / "tests" / "data" / "one_pipeline").glob("*.mo"))
    checked = []
    for path in paths:
        model = fix_structural_parameters(api.load(path)).model
        if not any(g.kind == "long" for g in model.guards()):
            continue
        code = delay_same_instant_guards(model)
        ia = analyze_implicit(code)
        assert ia.ok, path.name
        assert list(singular_variants(code, ia)) == [], path.name
        checked.append(path.name)
    assert {"ClutchBasic.mo", "RLDC2.mo", "CupAndBall.mo", "GearPattern.mo"} <= set(checked)
