"""The mode-change diagnostics of the one analysis (issue 26 Deliver 2, docs/multimode.md "One
analysis"; `mdae_fmu.implicit.changes`): on every model whose enumerated analysis gives
E-RESTART-MISSING, E-RESTART-CONFLICT, E-IMPULSE-INCONSISTENT, W-IMPULSE-ORDER, W-STANDARDIZE
or W-FAKE-IMPULSE, ``analyze(model, implicit=True)`` (no mode enumerated) gives the same
codes and the same verdict, each message being the enumerated message of one concrete change
followed by the formulas of the changes concerned.

The oracle is the enumerated analysis itself (`mdae_fmu.modes.explore.analyze_multimode`
through `mdae_fmu.analysis.analyze` with ``implicit=False``), which explores every change."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("dd")

from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.importers.reading import load  # noqa: E402
from mdae_fmu.implicit.analysis import analyze_implicit  # noqa: E402
from mdae_fmu.implicit.changes import change_classes, concrete_change  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import multimode_examples as X  # noqa: E402

CODES = ("E-RESTART-MISSING", "E-RESTART-CONFLICT", "E-IMPULSE-INCONSISTENT",
         "W-IMPULSE-ORDER", "W-STANDARDIZE", "W-FAKE-IMPULSE")


def _change_messages(a) -> dict[str, list[str]]:
    """The messages of ``a`` with one of `CODES`, by code."""
    out: dict[str, list[str]] = {}
    for m in a.messages:
        code = m.split(":", 1)[0]
        if code in CODES:
            out.setdefault(code, []).append(m)
    return out


def _same_diagnostics(model, into: str, outside: str) -> dict[str, list[str]]:
    """Analyse ``model`` on both paths; assert the same verdict and codes, and that every
    message of the one analysis is an enumerated message followed by the formulas of its
    changes, from ``outside`` into ``into``. Returns the one analysis' messages by code."""
    enumerated = analyze(model, implicit=False)
    one = analyze(model, implicit=True)
    assert enumerated.modes is not None and one.modes is None
    assert one.accepted == enumerated.accepted
    want, got = _change_messages(enumerated), _change_messages(one)
    assert want and sorted(got) == sorted(want)
    tail = f" (changes from the modes {outside} into the modes {into})"
    for code, msgs in got.items():
        for m in msgs:
            assert m.endswith(tail), m
            assert m[:-len(tail)] in want[code], m
    return got


# --- the seed and reference models -----------------------------------------------------------

@pytest.mark.parametrize("path, code, change", [
    pytest.param("reference_models/AirBrake.mo", "W-FAKE-IMPULSE", ("not g", "g"),
                 marks=pytest.mark.long),
    pytest.param("reference_models/AirBrakeOriginal.mo", "W-FAKE-IMPULSE", ("not g", "g"),
                 marks=pytest.mark.long),
    ("tests/data/one_pipeline/ClutchSinh.mo", "W-IMPULSE-ORDER", ("not g", "g")),
])
def test_reference_models(path, code, change):
    """The three warnings the one analysis lacked (docs/multimode.md, "Where it stands"):
    the brake's inferred impulses come from the residual of an erased equation that a
    physical switch makes 0 (W-FAKE-IMPULSE, RR-9334 Comment 8), and sinh(t1) has no
    power order in 1/d (W-IMPULSE-ORDER, the delta-scheme restarts it)."""
    got = _same_diagnostics(load(ROOT / path), into=change[1], outside=change[0])
    [m] = got[code]
    assert m.startswith(f"{code}: {change[0]} -> {change[1]}, instant 0: ")


@pytest.mark.long
def test_fake_impulse_names_the_residual_and_the_guard():
    got = _same_diagnostics(X.air_brake(), into="g", outside="not g")
    [m] = got["W-FAKE-IMPULSE"]
    assert "the erased v1" in m and "s is the zero-crossing variable of guard g" in m


def test_impulse_order_of_a_non_power_impulse():
    m = X.clutch_cubic()
    eqs = tuple(X.eq("e1", "der(w1) = a1*w1 + b1*sinh(t1)") if e.id == "e1" else e
                for e in m.equations)
    model = type(m)(name="ClutchSinh", variables=m.variables, equations=eqs)
    got = _same_diagnostics(model, into="g", outside="not g")
    [w] = got["W-IMPULSE-ORDER"]
    assert "the impulse order of ('t1@0',) is not a power of 1/d" in w


# --- E-RESTART-MISSING ---------------------------------------------------------------------


def _model(tmp_path: Path, text: str, name: str):
    """The model of the Modelica ``text``, read from ``tmp_path / name`` (source lines)."""
    path = tmp_path / name
    path.write_text(text)
    return load(path)


def test_missing_restart_rejects_with_the_dm_diagnostic(tmp_path):
    """w2 is a state of the engaged mode that the released mode does not give (Algorithm 9,
    docs/theory.md §6.6): the one analysis accepted this model before (its schedule was
    built); now it rejects it as the enumerated analysis does, naming w2, the equations
    coupled to it with their source lines, and the changes concerned."""
    model = _model(tmp_path, X.CLUTCH_MISSING, "ClutchMissing.mo")
    got = _same_diagnostics(model, into="engaged", outside="not engaged")
    [m] = got["E-RESTART-MISSING"]
    assert m.startswith("E-RESTART-MISSING: when switching not engaged -> engaged, instant 0: "
                        "no equation determines the restart of {w2} (1 equation missing")
    assert "{f1, f2, w1} are coupled to it through" in m
    for line in (13, 15, 16, 17):
        assert f"ClutchMissing.mo:{line}" in m
    one = analyze(model, implicit=True)
    assert not one.accepted and one.guarded is None and one.errors == (m,)
    # the rigid coupling gives the restart: accepted on both paths, no diagnostic
    fixed = _model(tmp_path, X.CLUTCH_MISSING.replace("f1 = c * (w2 - w1)", "w1 - w2 = 0.0"),
                   "ClutchFixed.mo")
    one = analyze(fixed, implicit=True)
    assert one.accepted and one.guarded is not None and not _change_messages(one)
    assert analyze(fixed, implicit=False).accepted


TWO_CLUTCHES = """class TwoClutches "clutch a is well posed; clutch b lacks the restart of w3"
  parameter Real k = 0.01;
  Real t(start = 0.0, fixed = true);
  Boolean a(start = false);
  Boolean b(start = false);
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 0.5, fixed = true);
  Real w3;
  Real f1;
  Real f2;
  Real f3;
  Real f4;
equation
  der(t) = 1.0;
  a = t >= 2.0;
  b = t >= 5.0;
  der(w1) = (-k) * w1 + f1;
  der(w2) = (-k) * w2 + f2 + f3;
  f1 + f2 = 0.0;
  if a then
    w1 - w2 = 0.0;
  else
    f1 = 0.0;
  end if;
  if b then
    der(w3) = (-k) * w3 + f4;
    f3 + f4 = 0.0;
    f3 = w3 - w2;
  else
    w3 = 0.0;
    f3 = 0.0;
    f4 = 0.0;
  end if;
end TwoClutches;
"""


def test_missing_restart_among_two_guards(tmp_path):
    """Three consistent modes (b implies a: t >= 5 implies t >= 2). Engaging b misses the
    restart of w3 (the enumerated analysis finds it from both other modes); clutch a alone
    is well posed. The one analysis names one concrete change, a single switch of b, with
    the formulas of its class: into the block of ``a and b``, from every mode outside it."""
    model = _model(tmp_path, TWO_CLUTCHES, "TwoClutches.mo")
    got = _same_diagnostics(model, into="(a and b)", outside="not b")
    [m] = got["E-RESTART-MISSING"]
    assert m.startswith("E-RESTART-MISSING: when switching a,not b -> a,b, instant 0: no "
                        "equation determines the restart of {w3}")
    assert "TwoClutches.mo:27" in m and "TwoClutches.mo:28" in m
    enumerated = analyze(model, implicit=False)
    assert len([e for e in enumerated.errors if e.startswith("E-RESTART-MISSING")]) == 2


# --- W-STANDARDIZE and E-IMPULSE-INCONSISTENT, forced ------------------------------------

def test_failed_standardization_is_a_warning_on_both_paths(monkeypatch):
    """W-STANDARDIZE: the standardization of the instant raised (forced here as
    tests/modes/test_modes_enumeration.py does); the restart falls back to the delta-scheme
    and the model stays accepted."""
    import mdae_fmu.modes.restart as R

    def boom(*args, **kw):
        raise ValueError("no standard form")
    monkeypatch.setattr(R, "restart_problem", boom)
    got = _same_diagnostics(X.clutch_basic(), into="g", outside="not g")
    assert all("(no standard form)" in m for m in got["W-STANDARDIZE"])


def test_inconsistent_impulses_reject_on_both_paths(monkeypatch):
    """E-IMPULSE-INCONSISTENT: Algorithm IA finds no orders (forced: the order system has no
    solution, as for a restart inconsistent with finite restart states) on the cubic clutch
    (ClutchNonSemilinear, RR-9334 (188): a restart problem not affine in its unknowns, which
    the one analysis standardizes); both paths reject."""
    import mdae_fmu.impulse.analysis as IA
    import mdae_fmu.impulse.standardize as ST
    monkeypatch.setattr(IA._OrderSystem, "solve", lambda self, **kw: None)
    # the order systems and restart problems solved earlier in the process
    monkeypatch.setattr(IA, "_ORDERS_MEMO", {})
    monkeypatch.setattr(ST, "_STANDARD_MEMO", {})
    got = _same_diagnostics(X.clutch_cubic(), into="g", outside="not g")
    assert got["E-IMPULSE-INCONSISTENT"]


# --- the classes and their concrete change -----------------------------------------------------

def test_concrete_change_switches_one_guard_when_it_can(tmp_path):
    """Of the changes into a class F, the concrete one differs in one guard when a mode
    outside F is one switch away (TwoClutches: into b, from b's other value)."""
    model = _model(tmp_path, TWO_CLUTCHES, "TwoClutches.mo")
    ia = analyze_implicit(model)
    space = ia.space
    regular = space.care & ~ia.singular
    classes = change_classes(ia, None)
    assert classes and all(f != regular and f != space.bdd.false for f in classes)
    assert len({int(f) for f in classes}) == len(classes)
    for into in classes:
        old, new = concrete_change(space, into, regular & ~into)
        assert space.bdd.let(new, into) == space.bdd.true
        assert space.bdd.let(old, into) == space.bdd.false
        assert sum(old[k] != new[k] for k in new) == 1
    assert concrete_change(space, regular, space.bdd.false) is None


# --- the region of a change ----------------------------------------------------------------

sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_modeller import drive_line  # noqa: E402

SPARE = """  Real spare.w "a shaft with dynamics only while clutch {k} is engaged: no restart";
  Real spare.f;
equation
  if clutch{k}.engaged then
    der(spare.w) = (-0.01) * spare.w + spare.f;
    spare.f = shaft{k}.w - spare.w;
  else
    spare.w = 0.0;
    spare.f = 0.0;
  end if;
"""


def _drive_line_with_spare(tmp_path: Path, n: int, k: int):
    """The drive line of `gen_modeller.drive_line` (clutches engaged by Boolean inputs) with
    a spare shaft whose speed is a state only while clutch k is engaged (ClutchMissing's
    defect, in a model of 2^n modes)."""
    text = drive_line(n).replace("equation\n", SPARE.format(k=k), 1)
    return _model(tmp_path, text, f"DriveLineSpare{n}.mo")


def test_region_of_a_clutch_is_its_neighbourhood(tmp_path):
    """The region of a single switch of clutch k holds the clutch and the shafts it couples,
    the same number of equations at n = 6 and n = 12 (the diagnostics' cost follows the
    number of classes), far fewer than the model's."""
    from mdae_fmu.implicit.changes import change_region, occurrences
    from mdae_fmu.modes.normalize import normalize
    sizes = {}
    for n in (6, 12):
        system = normalize(_model(tmp_path, drive_line(n), f"DriveLine{n}.mo"))
        occurs = occurrences(system)
        old = tuple(False for _ in system.guards)
        for k in (1, 3):
            new = tuple(i == k for i in range(len(system.guards)))
            sub = change_region(system, old, new, occurs)
            sizes[n, k] = len(sub.equations)
            names = {e.id for e in sub.equations}
            # the clutch's own equations are there, the far end of the line is not
            assert {e.id for e in system.equations if e.guard and e.guard[0][0] == k} <= names
            far = f"shaft{n + 1}.w"
            assert not any(far in e.order_map for e in sub.equations)
        assert sizes[n, 3] < len(system.equations) / 3
    assert sizes[6, 3] == sizes[12, 3] and sizes[6, 1] == sizes[12, 1]


def test_region_gives_the_whole_systems_diagnostics(tmp_path, monkeypatch):
    """A missing restart (the spare shaft of clutch 4) found on the regions gives the messages
    the whole system gives (`change_region` replaced by the identity), one per block variant
    that engaging clutch 4 enters, and the model is rejected on both; the changes of the other
    clutches give nothing on either."""
    import mdae_fmu.implicit.changes as C
    model = _drive_line_with_spare(tmp_path, 6, 4)
    local = analyze(model, implicit=True)
    monkeypatch.setattr(C, "change_region", lambda system, old, new, occurs: system)
    whole = analyze(model, implicit=True)
    assert not local.accepted and not whole.accepted
    assert local.errors == whole.errors and local.warnings == whole.warnings
    assert local.errors
    for m in local.errors:
        assert m.startswith("E-RESTART-MISSING: when switching not clutch4.engaged,")
        assert "no equation determines the restart of {spare.w}" in m
        assert " into the modes (clutch4.engaged and " in m


def test_changes_equal_up_to_renaming_are_analysed_once_unless_they_say_something(
        tmp_path, monkeypatch):
    """The changes of a drive line's clutches are one region up to the names (`region_key`),
    so a class whose twin was analysed and said nothing is not analysed again; a twin that
    said something does not stand for another: the spare shafts of clutches 3 and 5 (the
    same defect on twin regions) are each reported with their own names. The diagnostics
    equal those of every class analysed (`region_key` replaced by None), with fewer
    changes analysed."""
    import mdae_fmu.implicit.changes as C
    from mdae_fmu.modes import explore
    head, body = SPARE.split("equation\n")
    spare = [(head.replace("spare.", f"spare{k}.").format(k=k),
              body.replace("spare.", f"spare{k}.").format(k=k)) for k in (3, 6)]
    text = drive_line(12).replace("equation\n", "".join(h for h, _ in spare) + "equation\n"
                                 + "".join(b for _, b in spare), 1)
    model = _model(tmp_path, text, "DriveLineSpares.mo")
    calls = []
    original = explore.analyze_changes

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)
    monkeypatch.setattr(explore, "analyze_changes", counting)
    reused = analyze(model, implicit=True)
    n_reused = len(calls)
    monkeypatch.setattr(C, "region_key", lambda *args: None)
    calls.clear()
    every = analyze(model, implicit=True)
    assert reused.errors == every.errors and reused.warnings == every.warnings
    assert any("restart of {spare3.w}" in m for m in reused.errors)
    assert any("restart of {spare6.w}" in m for m in reused.errors)
    assert n_reused < len(calls) / 2


# --- a region stops at the states a change leaves continuous (docs/theory.md §10.9) -------

def _per_change(model, monkeypatch, whole: bool) -> tuple:
    """``analyze(model, implicit=True)`` with every class analysed (`region_key` off), on the
    regions or on the whole system (`change_region` the identity): its verdict, errors,
    warnings, and the diagnostics of each concrete change analysed."""
    import mdae_fmu.implicit.changes as C
    from mdae_fmu.modes import explore
    seen: dict = {}
    original = explore.analyze_changes

    def spy(sub, pairs, *args, **kwargs):
        out = list(original(sub, pairs, *args, **kwargs))
        for pair, (_, found) in zip(pairs, out):
            seen[pair] = sorted((d.code, d.message) for d in found)
        return iter(out)
    with monkeypatch.context() as mp:
        mp.setattr(explore, "analyze_changes", spy)
        mp.setattr(C, "region_key", lambda *args: None)
        if whole:
            mp.setattr(C, "change_region", lambda system, old, new, occurs: system)
        a = analyze(model, implicit=True)
    return a.accepted, a.errors, a.warnings, seen


_TAIL = drive_line(2, tail=3)       # shafts 1..3 switched by clutches 1, 2; 4..6 the tail
_COUPLING4 = ("coupling4.tau = coupling4.c * (shaft3.phi - shaft4.phi) + coupling4.d * "
              "(shaft3.w - shaft4.w);")
_TAIL_SPARE = SPARE.replace("shaft{k}.w", "shaft5.w")
TAIL_VARIANTS = {
    # an elastic tail: cut at shaft 4
    "elastic": _TAIL,
    "cubic spring": _TAIL.replace("(shaft3.phi - shaft4.phi)", "(shaft3.phi - shaft4.phi)^3"),
    # the clutch's impulse reaches the tail: nothing to cut there
    "rigid angle": _TAIL.replace(_COUPLING4, "shaft3.phi = shaft4.phi;"),
    "rigid speed": _TAIL.replace(_COUPLING4, "shaft3.w = shaft4.w;"),
    "inerter": _TAIL.replace("damper4.tau = damper4.d * shaft4.w;",
                             "damper4.tau = damper4.d * der(shaft3.w);"),
    "torque not affine": _TAIL.replace(_COUPLING4, "coupling4.tau * (1 + coupling4.tau^2) = "
                                       "coupling4.c * (shaft3.phi - shaft4.phi);"),
    "inertia not affine": _TAIL.replace("shaft5.J * der(shaft5.w)",
                                        "shaft5.J * der(shaft5.w) * (1 + shaft5.w^2)"),
    # a row of offset 1 in the engaged mode (shaft 3's angle locked) reads the tail's speed:
    # its instance at the change reads the new value, so the region does not stop there
    "angle lock reads the tail": _TAIL.replace("shaft2.w = shaft3.w;", "shaft2.phi = shaft3.phi;")
    .replace("der(shaft3.phi) = shaft3.w;", "der(shaft3.phi) = shaft3.w + 0.01 * shaft4.w;"),
    # a guard and a switched equation that read the tail
    "guard reads the tail": _TAIL.replace("clutch1.engaged = engage[1];",
                                          "clutch1.engaged = engage[1] and shaft6.w > 0.5;"),
    "missing restart reads the tail": _TAIL.replace("equation\n", _TAIL_SPARE.format(k=2), 1),
}


@pytest.mark.parametrize("variant", sorted(TAIL_VARIANTS))
def test_tail_regions_give_the_whole_systems_diagnostics(tmp_path, monkeypatch, variant):
    """Oracle of docs/theory.md §10.9: on drive lines with an unswitched tail, and variants
    where the tail is not continuous across a clutch's change (rigid, an inerter on the
    clutched shaft's acceleration, rows not affine in the torque or the acceleration, a guard
    or a switched equation reading the tail), every concrete change gives the same
    diagnostics on its region as on the whole system, and the model the same verdict and
    messages."""
    model = _model(tmp_path, TAIL_VARIANTS[variant], "Tail.mo")
    local = _per_change(model, monkeypatch, whole=False)
    whole = _per_change(model, monkeypatch, whole=True)
    assert local == whole
    assert local[3]         # concrete changes were analysed
    if variant == "missing restart reads the tail":
        assert not local[0] and any("restart of {spare.w}" in m for m in local[1])


@pytest.mark.parametrize("family", ["rlc switch", "rlc diode", "tree", "pressure tail",
                                    "time tail"])
def test_other_families_give_the_whole_systems_diagnostics(tmp_path, monkeypatch, family):
    """The same oracle on the RLC ladders (ideal switches; ideal diodes, whose changes warn
    W-FAKE-IMPULSE), a tree of shafts, and drive lines with a tail whose clutches follow a
    pressure state or the time."""
    from gen_modeller import rlc_cells, shaft_tree
    text = {"rlc switch": lambda: rlc_cells(4, "switch"),
            "rlc diode": lambda: rlc_cells(3, "diode"),
            "tree": lambda: shaft_tree(4),
            "pressure tail": lambda: drive_line(3, "pressure", tail=4),
            "time tail": lambda: drive_line(3, "time", tail=4)}[family]()
    model = _model(tmp_path, text, "Family.mo")
    local = _per_change(model, monkeypatch, whole=False)
    assert local == _per_change(model, monkeypatch, whole=True)
    if family == "rlc diode":
        assert local[2] and all(m.startswith("W-FAKE-IMPULSE") for m in local[2])


MULTIMODE_REFERENCES = ["AirBrake", "ClutchBasic", "ClutchGuarded", "ClutchGuardedTime",
                        "ClutchNonSemilinear", "CupAndBall", "CupAndBallFirstOrder",
                        "RLDC2", "RLDC2Diodes", "RLDC2Original", "RLDC2Switched"]


@pytest.mark.long
def test_reference_models_give_the_whole_systems_diagnostics(monkeypatch):
    """The same oracle on every reference model whose changes `change_diagnostics`
    analyses."""
    for name in MULTIMODE_REFERENCES:
        model = load(ROOT / "reference_models" / f"{name}.mo")
        local = _per_change(model, monkeypatch, whole=False)
        assert local[3], name
        assert local == _per_change(model, monkeypatch, whole=True), name


def test_region_of_the_last_clutch_stops_at_the_tail(tmp_path):
    """The region of a switch of the clutch next to a long unswitched tail holds the clutch,
    its shafts and the first coupling, and reads the first tail shaft's angle and speed as
    known values (continuous states, docs/theory.md §10.9): the same size with a tail of 5
    and of 60 shafts, where it held the whole tail before; a rigid first coupling carries
    the clutch's impulse into the tail: the region goes on through it to the next elastic
    coupling, and stops there."""
    from mdae_fmu.implicit.changes import change_region, occurrences
    from mdae_fmu.modes.normalize import normalize
    sizes = {}
    for tail in (5, 60):
        system = normalize(_model(tmp_path, drive_line(3, tail=tail), f"T{tail}.mo"))
        occurs = occurrences(system)
        old = tuple(False for _ in system.guards)
        new = tuple(i == 2 for i in range(len(system.guards)))     # clutch 3 engages
        sub = change_region(system, old, new, occurs)
        sizes[tail] = len(sub.equations)
        assert "coupling5.tau" in sub.unknowns
        assert "shaft5.w" not in sub.unknowns and "shaft5.phi" not in sub.unknowns
        assert not any("shaft6.w" in e.order_map for e in sub.equations)
    assert sizes[5] == sizes[60] < 20
    rigid = drive_line(3, tail=5).replace(
        "coupling5.tau = coupling5.c * (shaft4.phi - shaft5.phi) + coupling5.d * "
        "(shaft4.w - shaft5.w);", "shaft4.w = shaft5.w;")
    system = normalize(_model(tmp_path, rigid, "Rigid.mo"))
    old = tuple(False for _ in system.guards)
    new = tuple(i == 2 for i in range(len(system.guards)))
    sub = change_region(system, old, new, occurrences(system))
    assert "shaft5.w" in sub.unknowns and "coupling6.tau" in sub.unknowns
    assert "shaft6.w" not in sub.unknowns and len(sub.equations) < 20
    # offset 1 for the row of shaft 3's angle, which reads shaft 4's speed: no cut there
    system = normalize(_model(tmp_path, TAIL_VARIANTS["angle lock reads the tail"], "Lock.mo"))
    sub = change_region(system, (False, False), (False, True), occurrences(system))
    assert "shaft4.w" in sub.unknowns and "shaft4.phi" in sub.unknowns


@pytest.mark.parametrize("variant", [
    pytest.param(v, marks=pytest.mark.long) if v == "torque not affine" else v
    for v in sorted(TAIL_VARIANTS)])
def test_tail_variants_agree_with_the_enumerated_analysis(tmp_path, variant):
    """The enumerated analysis (every mode change explored, on the whole system) gives the
    verdict and mode-change codes of the one analysis on its regions, and the one analysis'
    messages are enumerated messages (the missing restart of the spare shaft that reads the
    tail: E-RESTART-MISSING on both)."""
    model = _model(tmp_path, TAIL_VARIANTS[variant], "Tail.mo")
    enumerated = analyze(model, implicit=False)
    one = analyze(model, implicit=True)
    assert enumerated.modes is not None and one.modes is None
    assert one.accepted == enumerated.accepted
    want, got = _change_messages(enumerated), _change_messages(one)
    assert sorted(got) == sorted(want)
    for code, msgs in got.items():
        for m in msgs:
            assert any(m.startswith(w) for w in want[code]), m
    assert (variant == "missing restart reads the tail") == bool(got)
