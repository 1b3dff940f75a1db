"""Event and transient-mode diagnostics of the one analysis (issue 26 Deliver 2; docs/multimode.md
"One analysis"): `analyze(model, implicit=True)` (`analysis.guarded_analysis`, no mode
enumerated) rejects the multimode models the enumerated analysis rejects with E-EVENT-DER,
E-WHEN-LOOP through the continuous equations and E-CASCADE-INFINITE, with the same message
on one concrete mode and the formula of the modes concerned; it accepts what the enumerated
analysis accepts. Oracle: the enumerated analysis (`analyze(model, implicit=False)`) and the
modes where the derivative or the loop exists, read off each model by hand."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mdae_fmu.analysis import analyze
from mdae_fmu.importers.flat_modelica import parse_modelica
from test_when_coupled import LOOP_MODES  # (its LoopModes: the loop in both modes)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "workflows"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_modeller  # noqa: E402
from test_analyze_cli import PING_PONG as ANALYZE_CLI_PING_PONG  # noqa: E402
from test_analyze_cli import TRANSIENT_FUTURE as ANALYZE_CLI_FUTURE  # noqa: E402

# A valve that holds y on the input while closed: der(y) exists only while it is open.
VALVE = """model Valve "y follows u through a first-order lag while open, equals u when closed"
  parameter Real k = 2.0;
  Real y(start = 1, fixed = true);
  Real u;
  discrete Integer falls(start = 0);
  input Boolean open(start = true);
equation
  u = sin(time);
  if open then
    der(y) = -k*y + u;
  else
    y = u;
  end if;
  when der(y) < 0 then
    falls = pre(falls) + 1;
  end when;
end Valve;
"""

# The when-equation reads x, which x + y = 5 computes from y while the coupling is closed;
# while it is open x is a state (not computed at the instant): the loop exists in one mode.
LOOP_ONE_MODE = """model SampledCoupling "a sampled controller and a switched coupling"
  Real x(start = 1, fixed = true);
  discrete Real y(start = 0);
  input Boolean closed(start = false);
equation
  when sample(0, 0.2) then
    y = 7 - 2*x + time;
  end when;
  if closed then
    x + y = 5;
  else
    der(x) = -x;
  end if;
end SampledCoupling;
"""

# A switched third state added to reference_models/CupAndBallElasticNoLaw.mo (the rope
# straight for one instant, no impact law: E-TRANSIENT-UNDER) and to
# tests/workflows/test_analyze_cli.py's TransientFuture (E-TRANSIENT-FUTURE).
SWITCHED_Z = """  if fast then
    der(z) = 2;
  else
    der(z) = 1;
  end if;
"""
REFERENCE = ROOT / "reference_models"
CUP_NO_LAW = "\n".join(
    line for line in (REFERENCE / "CupAndBallElasticNoLaw.mo").read_text().splitlines()
    if not line.startswith("//")).replace("CupAndBallElasticNoLaw", "CupNoLaw").replace(
    "  Boolean contact", "  Real z(start = 0, fixed = true);\n  input Boolean fast(start = false);"
    "\n  Boolean contact").replace("end CupNoLaw;", SWITCHED_Z + "end CupNoLaw;")
# tests/workflows/test_analyze_cli.py's PingPong with the switched third state: each event
# resets the variable the other one watches, in both long modes.
PING_PONG = ANALYZE_CLI_PING_PONG.replace("PingPong", "PingPongModes").replace(
    "equation", "  Real z(start = 0, fixed = true);\n  input Boolean fast(start = false);"
    "\nequation").replace("  when y", SWITCHED_Z + "  when y")
TRANSIENT_FUTURE = ANALYZE_CLI_FUTURE.replace(
    "  Boolean c", "  Real z(start = 0, fixed = true);\n  input Boolean fast(start = false);"
    "\n  Boolean c").replace("end TransientFuture;", SWITCHED_Z + "end TransientFuture;")

# Accepted by both: der(y) is a state's derivative in every mode; the bounce resets v, which
# its own guard reads only (no cascade); the when-equation reads pre(x).
ACCEPTED = {
    "ValveLag": VALVE.replace("    y = u;", "    der(y) = -y;"),
    "BouncingSwitch": """model BouncingSwitch "a bouncing ball with a switched damping"
  parameter Real e = 0.8;
  Real h(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  input Boolean damped(start = false);
equation
  der(h) = v;
  if damped then
    der(v) = -9.81 - 0.1*v;
  else
    der(v) = -9.81;
  end if;
  when h < 0 then
    reinit(v, -e*pre(v));
  end when;
end BouncingSwitch;
""",
    "SampledPre": LOOP_MODES.replace("7 - 2*x", "7 - 2*pre(x)"),
}


def _model(text: str):
    name = re.match(r"\s*(?:model|class) (\w+)", text).group(1)
    return parse_modelica(text, f"{name}.mo")


def _messages(a) -> list[str]:
    """The rejection messages of an analysis, each starting with its text (the automaton's
    diagnostics as ``code: message``)."""
    out = [m for m in (a.rejection or "").split("\n") if m and not m.startswith("  ")]
    if a.automaton is not None:
        out += [f"{d.code}: {d.message}" for d in a.automaton.diagnostics
                if d.code.startswith("E-")]
    return out


def _codes(a) -> set[str]:
    return {c for m in _messages(a) for c in re.findall(r"\bE-[A-Z-]+\b", m)}


def _both(text: str):
    model = _model(text)
    default, one = analyze(model, implicit=False), analyze(model, implicit=True)
    assert default.modes is not None and len(default.modes.modes) > 1    # enumerated
    assert one.modes is None and one.implicit_text                       # the one analysis
    return default, one


def test_event_derivative_in_the_modes_without_it():
    """E-EVENT-DER: der(y) exists in the open mode only; the closed one is the formula, the
    concrete mode and the enumerated message's line and fix."""
    default, one = _both(VALVE)
    assert not default.accepted and not one.accepted
    assert _codes(default) == _codes(one) == {"E-EVENT-DER"}
    head = ("derivative not computed (E-EVENT-DER): the condition of when-clause w1 "
            "(Valve.mo:14) reads der(y), which the analysis does not compute in mode "
            "{not open}: y is not differentiated by any equation")
    assert default.rejection.startswith(head)
    assert one.rejection.startswith(head)
    assert "fix: name the derivative in an equation, e.g. declare Real d_y; add the equation " \
           "d_y = der(y); and read d_y" in one.rejection
    assert one.rejection.endswith("\n  in 1 of 2 modes: not open")


def test_event_derivative_of_a_second_derivative():
    """An assertion reading der(der(y)) of a first-order y (which the importer does not name,
    tests/modes/test_when_semantics.py): missing in every mode (d_y = 1 < 2)."""
    text = VALVE.replace("    y = u;", "    der(y) = -y;").replace(
        "  when der(y) < 0 then\n    falls = pre(falls) + 1;\n  end when;",
        '  assert(der(der(y)) < 10, "bounded curvature");')
    default, one = _both(text)
    assert _codes(default) == _codes(one) == {"E-EVENT-DER"}
    head = ("derivative not computed (E-EVENT-DER): an assertion (Valve.mo:14) reads "
            "der(der(y)), which the analysis does not compute in mode")
    assert default.rejection.startswith(head + "s {open}, {not open}: ")
    assert one.rejection.startswith(head + " {")
    assert one.rejection.endswith("\n  in every one of the 2 modes")


def test_when_loop_in_one_mode_only():
    """E-WHEN-LOOP through x + y = 5, which only the closed mode has: the formula is that
    mode, the concrete mode's cycle is printed with its lines."""
    default, one = _both(LOOP_ONE_MODE)
    assert _codes(default) == _codes(one) == {"E-WHEN-LOOP"}
    for a in (default, one):
        assert ("algebraic loop between equations of when-clauses and continuous equations "
                "(E-WHEN-LOOP) in mode {closed}") in a.rejection
        assert "the equation of y in a when-clause (SampledCoupling.mo:7) reads x" \
            in a.rejection
        assert "the continuous equation (SampledCoupling.mo:10) computes x from y" \
            in a.rejection
        assert "the model has several modes" in a.rejection
    assert one.rejection.endswith("\n  in 1 of 2 modes: closed")


def test_when_loop_in_every_mode():
    """tests/modes/test_when_coupled.py's LoopModes: the loop is in both modes."""
    default, one = _both(LOOP_MODES)
    assert _codes(default) == _codes(one) == {"E-WHEN-LOOP"}
    assert "the continuous equation (LoopModes.mo:9) computes x from y" in one.rejection
    assert one.rejection.endswith("\n  in every one of the 2 modes")


def test_infinite_cascade_per_set_of_events():
    """E-CASCADE-INFINITE: one message per event that re-triggers the other (the enumerated
    path gives one per long mode too), with the reinits' lines and the long modes."""
    default, one = _both(PING_PONG)
    assert _codes(default) == _codes(one) == {"E-CASCADE-INFINITE"}
    lines = [m for m in _messages(one) if m.startswith("E-CASCADE-INFINITE")]
    assert len(lines) == 2 and len(_messages(default)) == 4
    for m in lines:
        assert "can re-trigger each other forever (Assumption 4 fails)" in m
        assert "PingPongModes.mo:15" in m and "PingPongModes.mo:18" in m
    texts = {m.split("]: ", 1)[1] for m in _messages(default)}
    assert {m.split("]: ", 1)[1] for m in lines} == texts
    assert one.rejection.count("\n  in every one of the 2 long modes") == 2


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_by_both(name):
    default, one = _both(ACCEPTED[name])
    assert default.accepted and one.accepted, (default.rejection, one.rejection)


def _valve_bank(n: int) -> str:
    """n valves on one source (`VALVE` without the counter), an assertion on der(y_n)."""
    decl = "".join(f"  Real y{i}(start = 1, fixed = true);\n"
                   f"  input Boolean open{i}(start = true);\n" for i in range(1, n + 1))
    eqs = "".join(f"  if open{i} then\n    der(y{i}) = -y{i} + u;\n  else\n    y{i} = u;\n"
                  f"  end if;\n" for i in range(1, n + 1))
    return (f'model ValveBank "{n} valves on one source"\n  Real u;\n{decl}equation\n'
            f'  u = sin(time);\n{eqs}  assert(der(y{n}) < 2, "bounded slope");\n'
            f"end ValveBank;\n")


def test_event_derivative_beyond_the_enumeration():
    """13 valves (2^13 modes, beyond the enumeration): the default analysis is the one
    analysis, and der(y13) is missing in the half of the modes where valve 13 is closed."""
    model = parse_modelica(_valve_bank(13), "ValveBank.mo")
    a = analyze(model)
    assert a.modes is None and not a.accepted
    assert a.rejection.startswith(
        "derivative not computed (E-EVENT-DER): an assertion (ValveBank.mo:96) reads "
        "der(y13), which the analysis does not compute in mode {")
    assert "not open13}" in a.rejection.split("\n")[0]
    assert a.rejection.endswith("\n  in 4096 of 8192 modes: not open13")


def test_transient_instant_without_impact_law():
    """E-TRANSIENT-UNDER: the straight-rope instant lacks an impact law whatever the switch;
    the enumerated path names the change from each long mode, the one path the change from
    one of them, with the same undetermined values and equation lines."""
    default, one = _both(CUP_NO_LAW)
    assert _codes(default) == _codes(one) == {"E-TRANSIENT-UNDER"}
    [m] = _messages(one)
    assert m in _messages(default)
    assert m.startswith("E-TRANSIENT-UNDER: when switching not edge(contact),")
    assert "{lam, s, vx^o, vy^o}" in m and "1 equation missing" in m
    for ln in (14, 15, 19):          # der(vx) = -lam*x, der(vy) = -lam*y - g, 0 = lam + s
        assert f"CupNoLaw.mo:{ln})" in m
    assert "impact/restart law for one of {vx, vy}" in m
    assert one.rejection.endswith("\n  in every one of the 2 long modes")


def test_transient_instant_depending_on_the_future():
    """E-TRANSIENT-FUTURE: the values of the instant come with y^o2 of the next mode."""
    default, one = _both(TRANSIENT_FUTURE)
    assert _codes(default) == _codes(one) == {"E-TRANSIENT-FUTURE"}
    [m] = _messages(one)
    assert m in _messages(default)
    assert "when switching not edge(c)," in m and "future values {y^o2}" in m
    for ln in (11, 12, 15, 17):
        assert f"TransientFuture.mo:{ln})" in m


# The event's equation p = 1 contradicts the long equation p = 3 of the long mode s only
# (p = q and q = 4 otherwise): E-TRANSIENT-OVER from s alone.
LONG_MODE_CONFLICT = """model LongDep "the event contradicts one long mode's equation"
  Real x(start = 0, fixed = true);
  Real p, q;
  input Boolean s(start = false);
  Boolean c(start = false, fixed = true);
equation
  der(x) = 1;
  c = x >= 1;
  if edge(c) then
    p = 1;
  else
    p = q;
  end if;
  if s then
    p = 3;
  else
    q = 4;
  end if;
end LongDep;
"""

# Each event alone sets p once (p = 1 with q = 0, or p = q = 2); at x = 1 and x = 2 they are
# apart in time, but nothing in the guards says so, so both at one instant is a transient
# mode, where p = 1 and p = 2 contradict each other (beside the switched z).
TWO_EVENTS = """model TwoEvents "each event sets p, both at once set it twice"
  Real x(start = 0, fixed = true);
  Real p, q;
  Boolean ca(start = false, fixed = true);
  Boolean cb(start = false, fixed = true);
  Real z(start = 0, fixed = true);
  input Boolean fast(start = false);
equation
  der(x) = 1;
  ca = x >= 1;
  cb = x >= 2;
  if edge(ca) then
    p = 1;
  else
    p = q;
  end if;
  if edge(cb) then
    p = 2;
  else
    q = 0;
  end if;
""" + SWITCHED_Z + "end TwoEvents;\n"


def _oracle_and_one(text: str):
    """The enumerated analysis (``implicit=False``, the oracle) and the one analysis."""
    model = _model(text)
    oracle, one = analyze(model, implicit=False), analyze(model, implicit=True)
    assert oracle.modes is not None and len(oracle.modes.modes) > 1
    assert one.modes is None and one.implicit_text
    return oracle, one


def test_transient_instant_failing_from_one_long_mode_only():
    """E-TRANSIENT-OVER in the long mode s only: the enumerated path finds it on the changes
    into [edge(c), s]; the one path runs the instant from each class of long modes with the
    same structure (s and not s differ by the equation p = 3), so it finds it from s, with
    the enumerated message and the formula s. Before, it ran the instant from one long mode,
    not s, found nothing and refused the model for its transient equations instead."""
    oracle, one = _oracle_and_one(LONG_MODE_CONFLICT)
    assert _codes(oracle) == _codes(one) == {"E-TRANSIENT-OVER"}
    [m] = _messages(one)
    assert m in _messages(oracle)
    assert m.startswith("E-TRANSIENT-OVER: when switching not edge(c),s -> edge(c),s: ")
    assert "{e3 (LongDep.mo:10), e5 (LongDep.mo:15)} contradict each other" in m
    assert one.rejection.split("\n")[1] == "  in 1 of 2 long modes: s"


def test_simultaneous_events():
    """E-TRANSIENT-OVER when both events happen at one instant: the enumerated path runs the
    transient mode [edge(ca), edge(cb)]; the one path runs every set of transient guards
    that can hold together, from each class of long modes (fast and not fast: der(z)
    differs); the same failure from both is one message, one of the enumerated path's, with
    both long modes. Before, it ran each event alone, found nothing and refused the model
    for its transient equations."""
    oracle, one = _oracle_and_one(TWO_EVENTS)
    assert _codes(oracle) == _codes(one) == {"E-TRANSIENT-OVER"}
    [m] = _messages(one)
    assert m in _messages(oracle)
    assert "at transient mode [edge(ca),edge(cb)," in m
    assert "{e4 (TwoEvents.mo:13), e6 (TwoEvents.mo:18)} contradict each other" in m
    assert one.rejection.endswith("\n  in every one of the 2 long modes")


def _sampled_drive_line(n: int, read: str) -> str:
    """benchmarks/gen_modeller.py's drive line of n clutches with a sampled controller that
    adds ``0.5*read`` to the drive torque."""
    return gen_modeller.drive_line(n).replace(
        '  Real source.tau(unit = "N.m");',
        '  Real source.tau(unit = "N.m");\n  discrete Real ctl(start = 0);').replace(
        "* source.f * time);", "* source.f * time) + ctl;\n  when sample(0, 0.1) then\n"
        f"    ctl = 0.5*{read};\n  end when;")


@pytest.mark.parametrize("n", [3, pytest.param(40, marks=pytest.mark.long)])
def test_when_loop_through_an_engaged_clutch(n):
    """The controller reads the torque of clutch 1, which the shafts' block computes from the
    drive torque while the clutch is engaged: E-WHEN-LOOP in the half of the modes where
    clutch 1 is engaged (2^40 modes: the one analysis by default); reading the speed of
    shaft 1 (a state) makes no loop."""
    model = parse_modelica(_sampled_drive_line(n, "clutch1.tau"), "DriveLine.mo")
    one = analyze(model, implicit=True)
    assert one.modes is None and _codes(one) == {"E-WHEN-LOOP"}
    assert "the equation of ctl in a when-clause (DriveLine.mo:" in one.rejection
    assert one.rejection.endswith(f"\n  in {2 ** (n - 1)} of {2 ** n} modes: clutch1.engaged")
    assert analyze(parse_modelica(_sampled_drive_line(n, "shaft1.w"), "DriveLine.mo"),
                   implicit=True).accepted
    if n == 3:
        default = analyze(model, implicit=False)
        assert default.modes is not None and _codes(default) == {"E-WHEN-LOOP"}
        assert "(E-WHEN-LOOP) in mode {clutch1.engaged" in default.rejection


# Held at y = 0 while not released (s false); released, y falls freely. The event reads v: a
# change into the event's instant from a held mode while the release switches at that same
# instant leaves v undetermined (the enumerated path runs every pair of long modes); from the
# released mode itself the instant is fine.
HELD_RELEASE = """model HeldRelease "a release switching at the instant of an event"
  Real x(start = 0, fixed = true);
  Real y(start = 0, fixed = true);
  Real v(start = 0, fixed = true);
  Real p;
  input Boolean s(start = false);
  Boolean c(start = false, fixed = true);
equation
  der(x) = 1;
  c = x >= 1;
  der(y) = v;
  if s then
    der(v) = -1;
  else
    y = 0;
  end if;
  if edge(c) then
    p = v;
  else
    p = 2;
  end if;
end HeldRelease;
"""


def test_transient_instant_of_a_change_from_another_long_mode():
    """E-TRANSIENT-UNDER only on the changes from not s into [edge(c), s] (the release at the
    instant of the event): the one path runs the instant from a mode of each class of long
    modes with other offsets (the sources), so it gives the enumerated message with both
    formulas; and, as the enumerated path, the E-RESTART-MISSING of the release alone.
    Before, it ran the instant from s only, found nothing there and reported the
    E-RESTART-MISSING alone."""
    oracle, one = _oracle_and_one(HELD_RELEASE)
    assert _codes(oracle) == _codes(one) == {"E-TRANSIENT-UNDER", "E-RESTART-MISSING"}
    [m] = [m for m in _messages(one) if m.startswith("E-TRANSIENT-UNDER")]
    assert m in _messages(oracle)
    assert m.startswith("E-TRANSIENT-UNDER: when switching not s,not edge(c) -> s,edge(c): ")
    assert "provide an impact/restart law for one of {v, y}" in m
    at = one.rejection.split("\n").index(m)
    assert one.rejection.split("\n")[at + 1] == (
        "  from 1 of 2 long modes: not s, the events in 1 of 2 long modes: s")


def _with_switches(text: str, n: int, body: str) -> str:
    """``text`` with n switched states z1..zn driven by inputs f1..fn, the equations
    ``body`` (``{k}`` the index) after the others."""
    decls = "".join(f"  Real z{k}(start = 0, fixed = true);\n  input Boolean f{k}(start = "
                    f"false);\n" for k in range(1, n + 1))
    eqs = "".join(body.format(k=k) for k in range(1, n + 1))
    head, rest = text.split("equation\n", 1)
    body_, last = rest.rsplit("end ", 1)
    return f"{head}{decls}equation\n{body_}{eqs}end {last}"


# LongDep with its failing long mode the second one (q = 4 while s, p = 3 otherwise), and 7
# switched states whose branches read the same instances: 256 long modes
LONG_DEP_NOT_S = LONG_MODE_CONFLICT.replace(
    "  if s then\n    p = 3;\n  else\n    q = 4;\n  end if;\n",
    "  if s then\n    q = 4;\n  else\n    p = 3;\n  end if;\n")


def test_branches_with_the_same_incidence_are_one_structure():
    """The branches of ``if fk then der(zk) = 2; else der(zk) = 1; end if;`` read the same
    instances with the same offset, so the runs of the transient instant see one structure
    whichever holds: the 2^7 combinations of the switches are one class, and the failure in
    not s (E-TRANSIENT-OVER, the enumerated message of LongDep's conflict) is found in all
    128 long modes of not s, with no W-TRANSIENT-UNCHECKED (the classes per structure were
    2^8, beyond the 64 run)."""
    text = _with_switches(LONG_DEP_NOT_S, 7,
                          "  if f{k} then\n    der(z{k}) = 2;\n  else\n    der(z{k}) = 1;\n"
                          "  end if;\n")
    one = analyze(_model(text), implicit=True)
    assert _codes(one) == {"E-TRANSIENT-OVER"}
    [m] = _messages(one)
    assert m.startswith("E-TRANSIENT-OVER: when switching ") and "edge(c)" in m
    assert "contradict each other" in m
    assert one.rejection.endswith("\n  in 128 of 256 long modes: not s")
    assert not any(w.startswith("W-TRANSIENT-UNCHECKED") for w in one.messages)
    # the same message on LongDep without the switches, where the enumerated path agrees
    oracle, small = _oracle_and_one(LONG_DEP_NOT_S)
    assert _codes(oracle) == _codes(small) == {"E-TRANSIENT-OVER"}
    assert _messages(small)[0] in _messages(oracle)


def _couplings(n: int) -> str:
    """BouncingSwitch with n switched couplings to the height (der(zk) = -h or 1: other
    instances in each branch, each a reader of the bounce's state h)."""
    bounce = ACCEPTED["BouncingSwitch"].replace("BouncingSwitch", "Couplings")
    return _with_switches(bounce, n, "  if f{k} then\n    der(z{k}) = -h;\n  else\n"
                          "    der(z{k}) = 1;\n  end if;\n")


def _reinit_drive_line(n: int) -> str:
    """benchmarks/gen_modeller.py's drive line of n clutches with a reinit of shaft 1's speed
    at an event: the instant fails (E-TRANSIENT-FUTURE) in some long modes only."""
    return gen_modeller.drive_line(n).replace(
        f"end DriveLine{n};", "  when shaft1.phi > 100 then\n    reinit(shaft1.w, 0);\n"
        f"  end when;\nend DriveLine{n};")


# Beside a model's event, a part outside the event's region (docs/theory.md §10.7): two
# capacitors in parallel while sw (under-determined at shift 0, as an engaged clutch, but
# apart from the event: DiffArray decides it on its own, §7.5), and a capacitor pin whose
# potential's derivative only the differentiated constraint gives (an unknown no row of
# offset 0 reads).
PAIR = ("  Real u1(start = 0, fixed = true);\n  Real u2(start = 0, fixed = true);\n"
        "  Real i1, i2;\n  input Boolean sw(start = false);\n",
        "  der(u1) = i1;\n  2*der(u2) = i2;\n  i1 + i2 = sin(time);\n  if sw then\n"
        "    u1 = u2;\n  else\n    i2 = -u2;\n  end if;\n")
PIN = ("  Real vc(start = 0, fixed = true);\n  Real pv, nv, ic;\n"
       "  input Boolean sp(start = false);\n",
       "  vc = pv - nv;\n  3*der(vc) = ic;\n  nv = 0;\n  if sp then\n    pv = sin(time);\n"
       "  else\n    ic = -vc;\n  end if;\n")


def _beside(text: str, *parts: tuple[str, str]) -> str:
    """``text`` with the declarations and equations of ``parts`` added."""
    for decl, eqs in parts:
        head, rest = text.split("equation\n", 1)
        body, last = rest.rsplit("end ", 1)
        text = f"{head}{decl}equation\n{body}{eqs}end {last}"
    return text


CUP_TEXT = "\n".join(line for line in (REFERENCE / "CupAndBallElasticNoLaw.mo").read_text()
                     .splitlines() if not line.startswith("//"))
BALL_PAIR_PIN = _beside(ACCEPTED["BouncingSwitch"], PAIR, PIN)
# PAIR fed by the ball's height through a switched source (linked to the event while sl)
LINK = ("  Real i3;\n  input Boolean sl(start = false);\n",
        "  if sl then\n    i3 = h;\n  else\n    i3 = 0;\n  end if;\n")
BALL_PAIR_LINKED = _beside(ACCEPTED["BouncingSwitch"],
                           (PAIR[0], PAIR[1].replace("sin(time);", "sin(time) + i3;")), LINK)
CUP_PAIR_PIN = _beside(CUP_TEXT, PAIR, PIN)

INSTANT_MODELS = {
    "HeldRelease": HELD_RELEASE, "CupNoLaw": CUP_NO_LAW, "TransientFuture": TRANSIENT_FUTURE,
    "LongDep": LONG_MODE_CONFLICT, "TwoEvents": TWO_EVENTS, "PingPong": PING_PONG,
    "BallPair": _beside(ACCEPTED["BouncingSwitch"], PAIR),
    "BallPairPin": BALL_PAIR_PIN, "BallPairLinked": BALL_PAIR_LINKED,
    "CupPair": _beside(CUP_TEXT, PAIR),
    "CupPairPin": CUP_PAIR_PIN, "Couplings5": _couplings(5),
    "DriveLine4": _reinit_drive_line(4),
}


def _instants_against_each_mode(text: str) -> tuple[int, int, int]:
    """Oracle of the region classes (docs/theory.md §10.7): every long mode of every class
    of `when_checks.transient_instants` runs its instant on the whole system
    (`runs.exec_transient`, the enumerated path's function) with the class's outcome (the
    same E-TRANSIENT code, or none), and the class's first mode with its message too.
    Returns the number of classes, of long modes run, and of those whose whole run fails."""
    from mdae_fmu.implicit.analysis import analyze_implicit
    from mdae_fmu.implicit.when_checks import transient_instants
    from mdae_fmu.modes.normalize import normalize
    from mdae_fmu.modes.runs import continuation_mode, exec_transient, sigma_of_mode, \
        steady_config
    from mdae_fmu.structure.printing import expr_text
    model = _model(text)
    code = analyze(model, implicit=True).code_model or model
    ia, system = analyze_implicit(code), normalize(code)
    space = ia.space
    names = [space.var_of[a] for a in space.atoms]
    fixed = {expr_text(a): v for a, v in space.fixed.items()}
    classes = modes = failing = 0

    def code_of(run):
        dg = run.diagnostic
        return dg.code if dg is not None and dg.code.startswith("E-TRANSIENT-") else None
    for on, f, dst, _, run, exact in transient_instants(system, ia):
        classes += 1
        if exact is not None:
            assert code_of(exact()) == code_of(run)
            run = exact()
        for asg in space.bdd.pick_iter(f, care_vars=names):
            value = {**fixed, **dict(space.mode_pairs(asg))}
            mode = tuple(bool(value.get(expr_text(g.cond), False)) if g.kind == "long"
                         else i in on for i, g in enumerate(system.guards))
            src = continuation_mode(system, mode)
            sig = sigma_of_mode(system, src)
            whole = exec_transient(system, steady_config(system, src, sig), mode, sig,
                                   pair=f"when switching {system.mode_label(src)} -> "
                                        f"{system.mode_label(mode)}")
            modes += 1
            failing += code_of(whole) is not None
            assert code_of(whole) == code_of(run), (system.mode_label(mode), whole, run)
            if mode == dst and code_of(run):
                assert whole.diagnostic.message == run.diagnostic.message
    return classes, modes, failing


@pytest.mark.parametrize("name", sorted(INSTANT_MODELS))
def test_region_classes_agree_with_each_long_mode(name):
    """The transient instant decided on its region (docs/theory.md §10.7) has, in every long
    mode of each class, the outcome of the enumerated path's run on the whole system: a far
    part under-determined at shift 0, apart from the event (PAIR) or linked to it (an engaged
    drive-line clutch: the phantom equations),
    a far unknown no row of offset 0 reads (PIN, in the region), a failure at shift 0
    (CupPair: run again on the whole system for its message) included."""
    classes, modes, _ = _instants_against_each_mode(INSTANT_MODELS[name])
    assert 0 < classes <= modes


@pytest.mark.parametrize("name", ["BallPair", "BallPairPin", "CupPair", "CupPairPin",
                                  "Couplings5"])
def test_parts_beside_the_event_as_the_enumerated_analysis(name):
    """The enumerated analysis (the oracle) accepts the bouncing ball beside PAIR (apart
    from the ball, its array is decided on its own: docs/theory.md §7.5) and the bounce with
    5 switched couplings of its height (2^6 long modes); it rejects the ball beside PIN (the
    pin fails any transient instant by itself) and the cup-and-ball without an impact law
    (ill-posed alone), whose message beside PAIR is the cup's alone; the one analysis gives
    the same verdicts, the same codes and only enumerated messages."""
    oracle, one = _oracle_and_one(INSTANT_MODELS[name])
    assert oracle.accepted == one.accepted == (name in ("BallPair", "Couplings5"))
    if name.startswith("Cup"):       # PAIR is named in no message
        assert not any("u1" in m or "e10 " in m for m in _messages(oracle) + _messages(one))
    assert _codes(oracle) == _codes(one)
    assert all(m in _messages(oracle) for m in _messages(one) if "more such failures" not in m)


def test_a_part_linked_to_the_event_only_in_some_modes():
    """PAIR reads the ball's height while sl (docs/theory.md §10.7 (b)): then, and while sw
    puts its capacitors in parallel (under-determined at shift 0), the bounce is decided with
    the pair by DiffArray's phase 2 and rejected by both analyses; while not sl the pair is
    apart from the ball (§7.5) and the bounce passes. The one analysis reads the switch of
    the link (8 classes, one per long mode) and names the failing modes only."""
    oracle, one = _oracle_and_one(BALL_PAIR_LINKED)
    assert not oracle.accepted and not one.accepted
    assert _codes(oracle) == _codes(one) == {"E-TRANSIENT-FUTURE"}
    assert all(m in _messages(oracle) for m in _messages(one))
    for m in _messages(oracle):
        assert "-> " in m and ",sw,sl,edge(h < 0)]" in m.split("-> ")[1], m
    assert _instants_against_each_mode(BALL_PAIR_LINKED) == (8, 8, 2)


@pytest.mark.long      # 512 classes and 512 runs on the whole system: about 8 s of CPU
def test_switched_couplings_beyond_the_old_bound_are_decided():
    """8 switched couplings of the bounce's height and the switched damping (512 long modes,
    each its own class of the instant: the region of the reinit holds v, h and every coupling
    of h): each class run on its region, the model is accepted with no W-TRANSIENT-UNCHECKED
    (the bound of 64 classes left 128 of 256 unchecked at 7 couplings before); the runs agree
    with each long mode's."""
    one = analyze(_model(_couplings(8)), implicit=True)
    assert one.accepted, one.rejection
    assert not any(m.startswith("W-TRANSIENT-UNCHECKED") for m in one.messages)
    classes, modes, failing = _instants_against_each_mode(_couplings(8))
    assert (classes, modes, failing) == (512, 512, 0)


@pytest.mark.long      # 256 runs on the whole system (the oracle): about 4 s of CPU
def test_drive_line_reinit_beyond_the_old_bound_is_decided():
    """A reinit of shaft 1 on a drive line of 8 clutches (256 long modes): the region of the
    instant is the shafts clutch 1 couples to shaft 1, so 16 classes cover the long modes;
    the rejection names the failing ones exactly (the long modes whose own run on the whole
    system fails, `FAILING_DL8`), with no W-TRANSIENT-UNCHECKED."""
    text = _reinit_drive_line(8)
    one = analyze(_model(text), implicit=True)
    assert _codes(one) == {"E-TRANSIENT-FUTURE"}
    assert not any(m.startswith("W-TRANSIENT-UNCHECKED") for m in one.messages)
    classes, modes, failing = _instants_against_each_mode(text)
    assert (classes, modes) == (16, 256)
    counts = [int(ln.split(" of 256 long modes")[0].rsplit(" ", 1)[1])
              for ln in one.rejection.split("\n") if " of 256 long modes" in ln]
    assert sum(counts) == failing == FAILING_DL8
    # 14 regions and outcomes fail with other equations: four messages, one counting 10 more
    messages = _messages(one)
    assert len(messages) == 5 and messages[4] == (
        "E-TRANSIENT-FUTURE: and 10 more such failures of the events {edge(shaft1.phi > "
        "100)} (other equations or variables, the messages above show the kind)")


# The long modes of the reinit drive line of 8 clutches whose instant fails, counted by hand:
# the reinit decides the instant alone only when shaft 1 has at most one clutch engaged beside
# it (the reinit, J1 and J2 for w1^o, w2^o and clutch1.tau) and no other clutch is engaged
# (an engaged clutch is under-determined at shift 0: the enumerated DiffArray then does not
# let der(shaft1.w) give way to the reinit). Two long modes pass: no clutch engaged, or only
# clutch 1.
FAILING_DL8 = 2 ** 8 - 2


@pytest.mark.long      # the enumerated oracle of 8 modes with a reinit: about 10 s of CPU
def test_drive_line_reinit_as_the_enumerated_analysis():
    """A reinit of shaft 1 of a drive line of 3 clutches (8 long modes): the instant fails
    (E-TRANSIENT-FUTURE, as on the enumerated path) in 6 long modes. Decided on its region
    (docs/theory.md §10.7), the changes where clutch 1 is disengaged are one region, shaft 1
    alone, and one message (the enumerated one) for the 3 long modes where a clutch beyond
    it is engaged; the three long modes with clutch 1 engaged that fail have a region each.
    Before, each long mode was its own class of the whole structure (5 messages, the last
    counting 2 more)."""
    oracle, one = _oracle_and_one(_reinit_drive_line(3))
    assert _codes(oracle) == _codes(one) == {"E-TRANSIENT-FUTURE"}
    messages = _messages(one)
    assert len(messages) == 4 and all(m in _messages(oracle) for m in messages)
    lines = one.rejection.split("\n")
    assert sum(ln.startswith("  in 1 of 8 long modes: ") for ln in lines) == 3
    assert lines[-1] == ("  in 3 of 8 long modes: (not clutch1.engaged and clutch2.engaged) or "
                         "(not clutch1.engaged and clutch3.engaged)")
