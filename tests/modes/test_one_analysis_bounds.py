"""No size bound that a well-posed model can hit decides a verdict of the one analysis (issue 26
"Bad input"; docs/theory.md §10.10, §10.11): E-CASCADE-INFINITE is decided per set of
events, whatever the number of long modes, and E-WHEN-LOOP through a coarse block (a union
component solved as one system) from the per-mode blocks of the component, not from concrete
modes tried one by one. Oracle: the enumerated analysis (`analyze(model, implicit=False)`)
mode by mode up to 2^6 modes, and beyond the per-mode check (`through_continuous_message`) on
concrete modes of the formula and outside it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mdae_fmu.analysis import analyze
from mdae_fmu.implicit import when_checks
from mdae_fmu.implicit.analysis import analyze_implicit, concrete_mode
from mdae_fmu.implicit.blocks import conditional_blocks
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure.when_clauses import through_continuous_message

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_modeller  # noqa: E402

# tests/workflows/test_analyze_cli.py's PingPong (each event resets the variable the other
# one watches), with n switched couplings of x (der(zk) = -x or 1: another structure in each
# branch, so 2^n classes of the whole structure)
PING_PONG = """model PingPongN "each event resets the variable the other one watches"
  Real x(start = 0.0, fixed = true);
  Real y(start = 0.0, fixed = true);
{decls}equation
  der(x) = 1.0;
  der(y) = 1.0;
  when y >= 1.0 then
    reinit(x, 2.0);
  end when;
  when x >= 1.0 then
    reinit(y, 2.0);
  end when;
{eqs}end PingPongN;
"""


def _ping_pong(n: int) -> str:
    decls = "".join(f"  Real z{k}(start = 0, fixed = true);\n"
                    f"  input Boolean f{k}(start = false);\n" for k in range(1, n + 1))
    eqs = "".join(f"  if f{k} then\n    der(z{k}) = -x;\n  else\n    der(z{k}) = 1;\n"
                  f"  end if;\n" for k in range(1, n + 1))
    return PING_PONG.format(decls=decls, eqs=eqs)


def _model(text: str, name: str):
    return parse_modelica(text, f"{name}.mo")


def _cascade_lines(a) -> list[str]:
    return [m for m in (a.rejection or "").split("\n") if m.startswith("E-CASCADE-INFINITE")]


def test_cascade_per_set_of_events_as_the_enumerated_analysis():
    """PingPong with 2 switched couplings (4 long modes): the enumerated analysis rejects each
    of the two events in every long mode (one message per transient mode, 8); the one
    analysis gives one message per event, the enumerated text of its first transient mode,
    in every one of the 4 long modes."""
    model = _model(_ping_pong(2), "PingPongN")
    oracle, one = analyze(model, implicit=False), analyze(model, implicit=True)
    assert oracle.modes is not None and one.modes is None
    enumerated = [f"{d.code}: {d.message}" for d in oracle.automaton.diagnostics
                  if d.code == "E-CASCADE-INFINITE"]
    # each event from each long mode (fast: the 2 couplings' 2^2 combinations)
    assert len(enumerated) == 2 * 4
    per_event = {}
    for m in enumerated:
        head = m.split("]: ", 1)[1]
        per_event[head] = per_event.get(head, 0) + 1
    assert sorted(per_event.values()) == [4, 4]
    lines = _cascade_lines(one)
    assert len(lines) == 2
    assert all(m in enumerated for m in lines)
    assert one.rejection.count("\n  in every one of the 4 long modes") == 2


def test_cascade_beyond_the_old_class_bound():
    """7 switched couplings (128 long modes, 128 classes of the whole structure): the cascade
    was run from 64 of them and the rejection named 64 of the 128 long modes (the others
    W-TRANSIENT-UNCHECKED); now each event is one run, rejected in every long mode."""
    one = analyze(_model(_ping_pong(7), "PingPongN"), implicit=True)
    assert len(_cascade_lines(one)) == 2
    assert one.rejection.count("\n  in every one of the 128 long modes") == 2
    assert not any(m.startswith("W-TRANSIENT-UNCHECKED") for m in one.messages)


def _when_loop_drive_line(n: int, last: int) -> str:
    """benchmarks/gen_modeller.py's drive line of n clutches whose source torque adds u, which
    a sampled when-equation computes from clutch ``last``'s torque: at the sample instant u
    depends on itself (E-WHEN-LOOP) exactly in the modes where clutches 1..last are engaged
    (then shaft 1's torque reaches clutch ``last``'s through one block)."""
    return gen_modeller.drive_line(n).replace(
        "  Real source.tau(", "  discrete Real u(start = 0);\n  Real source.tau(").replace(
        "source.tau = source.amplitude", "source.tau = u + source.amplitude").replace(
        f"end DriveLine{n};", f"  when sample(0, 0.1) then\n    u = 0.5 * clutch{last}.tau;\n"
        f"  end when;\nend DriveLine{n};")


def _engaged(n: int, last: int) -> str:
    return "(" + " and ".join(f"clutch{k}.engaged" for k in range(1, last + 1)) + ")"


@pytest.mark.parametrize("n, last", [(4, 2), (5, 5)])
def test_when_loop_through_coarse_blocks_as_the_enumerated_analysis(n, last):
    """Every union component coarse (`conditional_blocks` with ``max_component=1``): the cycle
    formula of `_coupled_loop` holds exactly the modes whose own instant graph (the
    enumerated analysis' blocks of that mode) has the loop; before, a coarse block linked
    every read to every unknown, and after 16 concrete modes without a loop the rest of the
    formula was taken as free of cycles."""
    model = _model(_when_loop_drive_line(n, last), "DL")
    oracle = analyze(model, implicit=False)
    looping = {ma.name for ma in oracle.modes.modes
               if through_continuous_message(model, [ma], True) is not None}
    assert len(looping) == 2 ** (n - last)
    ia = analyze_implicit(model)
    ia.blocks = conditional_blocks(ia, max_component=1)
    assert any(b.coarse for b in ia.blocks)
    nodes = when_checks._loop_nodes(model, ia, {"u"})
    f = when_checks._cycle_formula(ia, when_checks._instant_edges(model, ia, nodes), {"u"})
    space = ia.space
    names = [space.var_of[a] for a in space.atoms]
    got = {"{" + ", ".join(k if v else f"not {k}" for k, v in space.mode_pairs(asg)) + "}"
           for asg in space.bdd.pick_iter(f, care_vars=names)}
    assert {re.sub(r"[{}]", "", m) for m in got} == {re.sub(r"[{}]", "", m) for m in looping}
    msg, warning = when_checks._coupled_loop(model, ia)
    assert warning is None and msg is not None
    assert msg.endswith(f"\n  in {2 ** (n - last)} of {2 ** n} modes: {_engaged(n, last)}")


@pytest.mark.parametrize("n", [8, pytest.param(40, marks=pytest.mark.long)])  # 40: ~3 s CPU
def test_when_loop_beyond_the_pick_bound_is_rejected(n):
    """The drive line of 8 (40) clutches (a coarse component at export's bounds) with the loop
    in the one mode where all are engaged: it was accepted silently (16 concrete modes
    without the loop tried, the rest taken as free of cycles); now rejected naming that mode,
    which its own analysis confirms, and a mode outside the formula has no loop."""
    model = _model(_when_loop_drive_line(n, n), "DL")
    one = analyze(model, implicit=True)
    assert not one.accepted
    assert one.rejection.startswith("algebraic loop between equations of when-clauses and "
                                    "continuous equations (E-WHEN-LOOP) in mode {clutch1."
                                    "engaged, clutch2.engaged")
    formula = _engaged(n, n) if n <= 8 else (  # (the text shows 8 literals of a cube)
        _engaged(n, 8)[:-1] + f" and ... ({n} literals))")
    assert one.rejection.endswith(f"\n  in 1 of {2 ** n} modes: {formula}")
    ia = analyze_implicit(model)
    assert any(b.coarse for b in ia.blocks)
    bdd = ia.space.bdd
    outside = bdd.var(ia.space.var_of[next(a for a in ia.space.atoms)])
    _, mode = concrete_mode(ia, ~outside)
    assert through_continuous_message(model, [mode], True) is None


def test_unconfirmed_loop_is_a_warning_not_a_silent_acceptance(monkeypatch):
    """Should the concrete modes not confirm the labelled graph's cycle (the work budget of
    `MAX_LOOP_PICKS`, here 0), the modes left are named by W-WHEN-LOOP-UNCHECKED."""
    monkeypatch.setattr(when_checks, "MAX_LOOP_PICKS", 0)
    model = _model(_when_loop_drive_line(3, 2), "DL")
    ia = analyze_implicit(model)
    msg, warning = when_checks._coupled_loop(model, ia)
    assert msg is None
    assert warning == (
        "W-WHEN-LOOP-UNCHECKED: the instant graph (when-equations and the blocks of the "
        "continuous equations) has a cycle through a when-variable in 2 of 8 modes "
        "(clutch1.engaged and clutch2.engaged), which 0 of its modes analysed one by one did "
        "not confirm (an algebraic loop there would be E-WHEN-LOOP; the model is not refused "
        "for it)")


def _drive_line(n: int):
    return _model(gen_modeller.drive_line(n), f"DriveLine{n}")


def test_singular_check_budget_names_the_modes_left(monkeypatch):
    """The drive line of 8 clutches has one coarse block (a union component of 33 equations)
    whose structure differs in each of its 256 modes. Its per-mode blocks, each with its
    formula (`implicit.blocks.component_blocks`, docs/theory.md §10.13), are all tested: no
    W-SINGULAR-UNCHECKED (the test at 32 sampled sets of modes left 224 modes named by it).
    Beyond the budget of the split (here 16 equations) the interface certificate
    (docs/theory.md §10.15) shows every mode regular; without it too, the sampled test
    comes back and the warning names the modes it left and why."""
    a = analyze(_drive_line(8), implicit=True)
    assert a.accepted and not any(m.startswith("W-SINGULAR") for m in a.messages)
    from mdae_fmu.implicit import conversion
    monkeypatch.setattr(conversion, "MAX_SPLIT_MEMBERS", 16)
    a = analyze(_drive_line(8), implicit=True)
    assert a.accepted and not any(m.startswith("W-SINGULAR") for m in a.messages)
    monkeypatch.setattr(conversion, "MAX_INTERFACE_ROWS", 0)
    a = analyze(_drive_line(8), implicit=True)
    assert a.accepted
    [w] = [m for m in a.messages if m.startswith("W-SINGULAR-UNCHECKED")]
    assert w.startswith("W-SINGULAR-UNCHECKED: the coarse block of 33 equations {e6, e9, e12, "
                        "...} (its per-mode blocks are beyond the budget of the check: more "
                        "than 16 equations, 1024 distinct blocks, 50000 equations in them or "
                        "12000 BDD nodes in their formulas) was tested for blocks singular "
                        "for all values in 32 sets of modes and not in the 224 of 256 modes "
                        "not clutch3.engaged or not clutch2.engaged or not clutch1.engaged (a "
                        "block singular there")
    monkeypatch.setattr(conversion, "MAX_COARSE_VARIANTS", 256)
    a = analyze(_drive_line(8), implicit=True)
    assert a.accepted and not any(m.startswith("W-SINGULAR-UNCHECKED") for m in a.messages)


def test_singular_in_some_modes_of_a_coarse_block_as_the_enumerated_analysis(monkeypatch):
    """A block singular for all values in 8 of the 64 modes of the drive line of 6 clutches,
    inside a coarse block (the component's split for the schedule refused): the one analysis
    rejects it with the enumerated analysis'
    message (the same first mode, the same dependency), followed by the formula of exactly
    those modes; it does so from the per-mode blocks of the component, with no coarse
    variant sampled (a budget of one sampled set of modes, the first, all engaged, would
    miss it)."""
    from mdae_fmu.implicit import analysis, conversion
    model = _model(gen_modeller.drive_line_singular(6, 3), "DriveLine6")
    oracle = analyze(model, implicit=False)
    # the component (25 equations) scheduled as one coarse block, as beyond 64 equations
    monkeypatch.setattr(analysis, "conditional_blocks",
                        lambda a: conditional_blocks(a, max_component=16))
    assert any(b.coarse for b in analyze_implicit(model).blocks)
    assert not oracle.accepted and oracle.rejection
    assert oracle.rejection.startswith(
        "mode {not clutch1.engaged, not clutch2.engaged, clutch3.engaged, ")
    assert "are dependent for all values: 2*e36 - e39 = 0" in oracle.rejection
    monkeypatch.setattr(conversion, "MAX_COARSE_VARIANTS", 1)
    one = analyze(model, implicit=True)
    assert not one.accepted
    # (the condition of the if-expression is an atom of its own, its negation printed last)
    assert one.rejection == (oracle.rejection + "\n  singular for all values in 8 of 64 "
                             "modes: (not clutch1.engaged and not clutch2.engaged and "
                             "clutch3.engaged and not clutch1.engaged or clutch2.engaged)")
    monkeypatch.setattr(conversion, "MAX_SPLIT_MEMBERS", 0)
    # beyond the split's budget, the interface certificate leaves exactly these modes, and
    # the per-mode blocks there give the same rejection (docs/theory.md §10.15)
    assert analyze(model, implicit=True).rejection == one.rejection
    monkeypatch.setattr(conversion, "MAX_INTERFACE_ROWS", 0)
    sampled = analyze(model, implicit=True)
    assert sampled.accepted
    [w] = [m for m in sampled.messages if m.startswith("W-SINGULAR-UNCHECKED")]
    assert "in 1 sets of modes and not in the 63 of 64 modes" in w


def test_drive_line_time_driven_accepted_without_warning():
    """The drive line of 8 clutches engaged by time windows: its coarse block's per-mode
    blocks are all tested, no warning."""
    a = analyze(_model(gen_modeller.drive_line(8, engage="time"), "DriveLine8Time"),
                implicit=True)
    assert a.accepted and not any(m.startswith("W-") for m in a.messages)


# (s is a guard of the structure through z's equation)
TWO_BRANCHES = """model TwoBranches "one block, its residual chosen by an input"
  Real x(start = 1, fixed = true);
  Real z(start = 0, fixed = true);
  Real y;
  input Boolean s(start = false);
equation
  der(x) = -y;
  y = if s then 2*x else 3*x;
  if s then
    der(z) = -x;
  else
    der(z) = 1;
  end if;
end TwoBranches;
"""


def test_block_variant_budget_names_the_modes_left(monkeypatch):
    """A block with two variants (its residual's branches) beyond a budget of one variant
    per block: W-SINGULAR-UNCHECKED names the modes of the variant left; none with the
    budget of the module."""
    from mdae_fmu.implicit import conversion
    model = _model(TWO_BRANCHES, "TwoBranches")
    a = analyze(model, implicit=True)
    assert a.accepted and not any(m.startswith("W-SINGULAR") for m in a.messages)
    monkeypatch.setattr(conversion, "MAX_BLOCK_VARIANTS", 1)
    a = analyze(model, implicit=True)
    assert a.accepted
    assert [m for m in a.messages if m.startswith("W-SINGULAR-UNCHECKED")] == [
        "W-SINGULAR-UNCHECKED: the block of 1 equations {e2} was tested for blocks singular "
        "for all values in 1 sets of modes and not in the 1 of 2 modes not s (a block "
        "singular there shows when the simulation solves it; the model is not refused for "
        "it)"]


def test_formula_table_leaves_no_reference_cycle():
    """`implicit.variants.formula_table` (the guarded schedule's flattened formulas) creates
    no reference cycle: its recursive closure was one, holding BDD nodes and their manager,
    which the garbage collector could finalize in any order (dd's "nodes still referenced
    upon shutdown" in BDD.__del__, the PytestUnraisableExceptionWarning of tests/fmu)."""
    import gc

    from mdae_fmu.implicit.variants import formula_table
    ia = analyze_implicit(_drive_line(4))
    roots = [b.formula for b in ia.blocks] + [f for case in ia.d for f in case.values()]
    gc.collect()
    gc.disable()
    try:
        table, nodes = formula_table(ia.space.bdd, ia.space, roots)
        assert len(nodes) == len(roots) and len(table.var) > 0
        del table, nodes
        assert gc.collect() == 0
    finally:
        gc.enable()


def _balls(n: int, coupled: bool = False, switched: bool = True) -> str:
    """n bouncing balls, each with its reinit (n events that select equations), beside a
    switched state (two long modes); ``coupled``: one algebraic sum reads every height, so
    that the events act on one connected part of the model."""
    decl = "".join(f"  Real h{k}(start = {k}, fixed = true);\n"
                   f"  Real v{k}(start = 0, fixed = true);\n" for k in range(1, n + 1))
    eqs = "".join(f"  der(h{k}) = v{k};\n  der(v{k}) = -9.81;\n  when h{k} < 0 then\n"
                  f"    reinit(v{k}, -0.8*pre(v{k}));\n  end when;\n" for k in range(1, n + 1))
    if coupled:
        decl += "  Real total;\n"
        eqs += "  total = " + " + ".join(f"h{k}" for k in range(1, n + 1)) + ";\n"
    if switched:
        decl += "  Real z(start = 0, fixed = true);\n  input Boolean fast(start = false);\n"
        eqs += "  if fast then\n    der(z) = 2;\n  else\n    der(z) = 1;\n  end if;\n"
    return f'model Balls "{n} bouncing balls"\n{decl}equation\n{eqs}end Balls;\n'


CUP_NO_LAW = "\n".join(
    line for line in (ROOT / "reference_models" / "CupAndBallElasticNoLaw.mo").read_text()
    .splitlines() if not line.startswith("//"))


def _cup_beside_balls(n: int) -> str:
    """The Cup-and-Ball without an impact law (its straight-rope instant under-determined)
    beside n bouncing balls and a switched state, in one model: n + 1 events in n + 1 parts
    apart, two long modes."""
    balls = _balls(n)
    decl, eqs = balls.split("equation\n", 1)
    head, rest = CUP_NO_LAW.split("equation\n", 1)
    body = rest.rsplit("end ", 1)[0]
    return (head + decl.split("\n", 1)[1] + "equation\n" + body + eqs.rsplit("end ", 1)[0]
            + "end CupAndBallElasticNoLaw;\n")


def test_events_apart_are_decided_alone_as_the_enumerated_analysis():
    """The cup's event and two balls' events act on parts of the model apart from each other:
    the one analysis runs each event alone (3 sets, not 7), and gives the enumerated
    analysis' verdict, codes and messages (the cup's instant fails alone and with any ball
    at the same instant, docs/theory.md §10.12)."""
    from mdae_fmu.implicit.when_checks import event_components
    from mdae_fmu.modes.normalize import normalize
    model = _model(_cup_beside_balls(2), "CupBalls")
    system = normalize(model)
    transient = [i for i, g in enumerate(system.guards) if g.kind == "transient"]
    assert [len(c) for c in event_components(system, transient, {})] == [1, 1, 1]
    oracle, one = analyze(model, implicit=False), analyze(model, implicit=True)
    assert oracle.modes is not None and one.modes is None
    assert not oracle.accepted and not one.accepted
    enumerated = [f"{d.code}: {d.message}" for d in oracle.automaton.diagnostics
                  if d.code.startswith("E-")]
    assert {m.split(":")[0] for m in enumerated} == {"E-TRANSIENT-UNDER"}
    mine = [m for m in one.rejection.split("\n") if m.startswith("E-")]
    assert mine and all(m in enumerated for m in mine)
    assert len(mine) == 1 and "{lam, s, vx^o, vy^o}" in mine[0]
    assert one.rejection.endswith("\n  in every one of the 2 long modes")


def test_many_events_apart_are_all_checked():
    """17 bouncing balls (17 events apart, 2^17 - 1 sets, beyond the enumerated path's 2^16
    transient modes): each event is run alone, which decides every set; no
    W-TRANSIENT-UNCHECKED. Before, only the single events were run beyond the bound, and
    the sets left out silently."""
    one = analyze(_model(_balls(17), "Balls"), implicit=True)
    assert one.accepted, one.rejection
    assert not any(m.startswith("W-TRANSIENT-UNCHECKED") for m in one.messages)


def test_events_of_one_part_beyond_the_bound_are_named(monkeypatch):
    """Events acting on one connected part (the sum of the heights), whose sets are more than
    the bound on transient modes (here 4, for 3 events: 7 sets): each event is run alone
    and the warning names them, instead of leaving their simultaneous sets out silently."""
    import importlib
    monkeypatch.setattr(importlib.import_module("mdae_fmu.modes.normalize"),
                        "MAX_TRANSIENT_MODES", 4)
    one = analyze(_model(_balls(3, coupled=True), "Balls"), implicit=True)
    assert one.accepted, one.rejection
    [w] = [m for m in one.messages if m.startswith("W-TRANSIENT-UNCHECKED")]
    assert w == (
        "W-TRANSIENT-UNCHECKED: the first instant (E-TRANSIENT-UNDER/-OVER/-FUTURE) was run "
        "for each of the events {edge(h1 < 0), edge(h2 < 0), edge(h3 < 0)} alone and not for "
        "two or more of them at one instant: they act on one connected part of the model, "
        "and their 2^3 - 1 combinations are more than 4 transient modes (a failure of "
        "simultaneous events would be an error; the model is not refused for it)")


@pytest.mark.parametrize("family", ["drive_line", "shaft_tree"])
def test_component_blocks_are_every_modes_blocks(family):
    """`implicit.blocks.component_blocks` (docs/theory.md §10.13) of a coarse block (the
    schedule's split refused beyond 8 equations): in each of the 32 modes of the drive line
    and the shaft tree of 5 clutches, the blocks whose formula holds are the per-mode
    analysis' blocks (`analyze_modes`, the enumerated oracle) inside the component, with
    their unknowns."""
    from mdae_fmu.implicit.blocks import component_blocks
    from mdae_fmu.structure.per_mode import analyze_modes
    model = _model(getattr(gen_modeller, family)(5), "M")
    rep = analyze_modes(model, latent=False)
    ia = analyze_implicit(model)
    assert ia.n_modes == len(rep.modes) == 32
    coarse = [b for b in conditional_blocks(ia, max_component=8) if b.coarse]
    assert coarse
    inside = {e for b in coarse for e in b.equations}
    ia.blocks = [p for b in coarse
                 for p in component_blocks(ia, b.equations, max_blocks=10 ** 4,
                                           max_size=10 ** 6, max_nodes=10 ** 6)]
    assert not any(b.coarse for b in ia.blocks)
    for ma in rep.modes:
        got = {(frozenset(b.equations), frozenset(b.unknowns))
               for b in ia.at(ma.valuation)["blocks"]}
        want = {(frozenset(e for e, _ in b.equations), frozenset(x.name for x in b.unknowns))
                for b in ma.blocks if {e for e, _ in b.equations} <= inside}
        assert got == want, ma.name
