"""The ``impulse(v)`` outputs of a when-branch's restart come from the analysis (issue 26
Deliver 1: code generation consumes the `Analysis` and never analyses): the integrals over the
instant are computed where the restart is standardized (`mdae_fmu.modes.explore.
with_integrals`), saved with the analysis, and read by `mdae_fmu.codegen.restarts`.

Oracles: the closed form of the Cup-and-Ball's impulse (`mdae_fmu.impulse.integrals`, module
docstring: the radial momentum change over |p|^2), the enumerated analysis (``implicit=False``)
against the one analysis, and the sources of a direct plan against those planned from the saved
analysis with every impulse and restart analysis made to fail."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu import api
from mdae_fmu.analysis import analyze
from mdae_fmu.saved import SavedAnalysisError, digest, load, save

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "reference_models"
PACKAGE = ROOT / "mdae_fmu"


def _r(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


def _integrals(a) -> dict[str, tuple]:
    """``{dst label: integrals of its first instant}`` of the automaton's changes."""
    return {ch.dst_label: ch.instants[0].integrals for ch in a.automaton.changes
            if ch.instants}


def _sources(model, a) -> dict[str, str]:
    from mdae_fmu.codegen import emit
    from mdae_fmu.fmu.export import GUID_PLACEHOLDER, plan_code
    from mdae_fmu.progress import as_progress
    progress = as_progress(False, "export")
    plan = plan_code(model, a, progress)
    out: dict[str, str] = emit.generate_sources(plan.compiled, plan.events, plan.init,
                                                GUID_PLACEHOLDER)
    out["variables"] = "\n".join(v.name for v in plan.compiled.variables)
    return out


def test_cup_and_ball_integrals_are_the_radial_momentum_change():
    """CupAndBallElastic: one change into the impact, whose first instant carries the
    integrals of ``lam`` and of ``s`` (``s = -lam``): ``nu_lam = -(x (vx+ - vx-) +
    y (vy+ - vy-)) / (x^2 + y^2)`` at the left limits of the positions."""
    a = analyze(api.load(REF / "CupAndBallElastic.mo"))
    assert a.accepted
    found = _integrals(a)
    assert list(found) == ["edge(contact)"]
    by_var = {v: num / den for v, num, den in found["edge(contact)"]}
    assert sorted(by_var) == ["lam", "s"]
    x, y = _r("x-"), _r("y-")
    jump = x * (_r("vx+") - _r("vx-")) + y * (_r("vy+") - _r("vy-"))
    assert sp.simplify(by_var["lam"] - (-jump / (x**2 + y**2))) == 0
    assert sp.simplify(by_var["s"] + by_var["lam"]) == 0
    # the later instant of the change (the continuation) moves nothing and carries none
    ch = a.automaton.changes[0]
    assert all(i.integrals == () for i in ch.instants[1:])


@pytest.mark.parametrize("name", ["CupAndBallElastic", "BouncingBall"])
def test_enumerated_analysis_gives_the_same_integrals(name):
    """The enumerated analysis (the oracle, ``analyze --list-modes``) of a model of one long
    mode fills the same integrals as the one analysis' event automaton."""
    model = api.load(REF / f"{name}.mo")
    one = _integrals(analyze(model))
    enumerated = _integrals(analyze(model, implicit=False))
    for label, integrals in one.items():
        assert enumerated[label] == integrals
    assert any(one.values()) == (name == "CupAndBallElastic")      # BouncingBall: none


@pytest.mark.parametrize("name", ["CupAndBallElastic", "BouncingBall"])
def test_code_from_the_saved_analysis_runs_no_impulse_analysis(name, monkeypatch):
    """The sources planned from the saved analysis (JSON text and back), with the restart
    problem, the impulse analysis and the integrals made to fail, are those of the direct
    plan, impulse outputs included."""
    model = api.load(REF / f"{name}.mo")
    a = analyze(model)
    direct = _sources(model, a)
    text = json.dumps(save(model, a))
    m2, a2 = load(json.loads(text))

    def boom(*args, **kwargs):
        raise AssertionError("an impulse analysis ran during code generation")

    import mdae_fmu.impulse.analysis
    import mdae_fmu.impulse.integrals
    import mdae_fmu.modes.restart
    for mod, fn in ((mdae_fmu.impulse.analysis, "impulse_analysis"),
                    (mdae_fmu.impulse.integrals, "impulse_integrals"),
                    (mdae_fmu.modes.restart, "restart_problem")):
        monkeypatch.setattr(mod, fn, boom)
    again = _sources(m2, a2)
    assert again == direct
    outputs = {"impulse(lam)", "impulse(s)"} if name == "CupAndBallElastic" else set()
    assert {v for v in direct["variables"].split("\n") if v.startswith("impulse(")} == outputs


def test_saved_integrals_are_checked():
    """An integral of a name that is not a variable of the model, in an edited saved
    analysis, is refused at its place."""
    model = api.load(REF / "CupAndBallElastic.mo")
    doc = save(model, analyze(model))
    text = json.dumps(doc)
    assert text.count('"integrals": {"$t": [{"$t": ["lam"') == 1
    edited = json.loads(text.replace('"integrals": {"$t": [{"$t": ["lam"',
                                     '"integrals": {"$t": [{"$t": ["nosuch"'))
    edited["sha256"] = digest(edited["payload"])
    with pytest.raises(SavedAnalysisError, match=r"instants\[0\]\.integrals\[0\]\[0\]: "
                                                 r"'nosuch' is not a variable of the model"):
        load(edited)


def _imported(path: Path) -> set[str]:
    """The package modules ``path`` imports (relative imports resolved), anywhere in it."""
    name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    package = name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if not node.level and not target.startswith("mdae_fmu"):
                continue
            target = target.removeprefix("mdae_fmu").lstrip(".")
            out |= {target} | {f"{target}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name.removeprefix("mdae_fmu.") for a in node.names
                    if a.name.startswith("mdae_fmu.")}
    return out


def test_code_generation_imports_no_restart_or_impulse_analysis():
    """codegen/ and fmu/ import nothing of the impulse analysis (impulse/) nor the restart
    problems (modes.restart, modes.shiftform): what they print of a restart the analysis
    computed."""
    banned = ("impulse", "modes.restart", "modes.shiftform")
    found = {(str(p.relative_to(PACKAGE)), m)
             for sub in ("codegen", "fmu") for p in sorted((PACKAGE / sub).rglob("*.py"))
             for m in _imported(p) if m == banned[0] or m.startswith(banned)}
    assert not found
    # the reader sees an import of the kind it looks for
    assert "impulse.integrals" in _imported(PACKAGE / "modes" / "explore.py")


def test_a_saved_analysis_without_integrals_is_an_older_format():
    """Format 2 held no integrals: such a file is refused as older, with the fix."""
    model = api.load(REF / "BouncingBall.mo")
    doc = save(model, analyze(model))
    assert doc["format"] == "mdae_fmu.saved-analysis/3"
    doc["format"] = "mdae_fmu.saved-analysis/2"
    with pytest.raises(SavedAnalysisError, match=r"saved_analysis\.format: mdae_fmu\.saved-"
                                                 r"analysis/2 is an older format, not read any "
                                                 r"more; run `mdae-fmu analyze --json` again"):
        load(doc)
