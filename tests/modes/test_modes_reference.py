"""The multimode analysis on the flat Modelica reference models (reference_models/README.md,
"What each model must show"), through the importer."""

from pathlib import Path

import pytest
import sympy as sp

from mdae_fmu.diagnostics import ModelRejected
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.modes import analyze_multimode

REF = Path(__file__).resolve().parents[2] / "reference_models"


def load(name):
    path = REF / name
    return parse_modelica(path.read_text(), str(path))


def restart(a, src, dst):
    return {str(e.lhs): e.rhs for e in a.change(src, dst).restart}


def test_clutch_guarded():
    a = analyze_multimode(load("ClutchGuarded.mo"))
    a.raise_if_rejected()
    ch = a.change("not g", "g")
    assert ch.n_instants == 1 and len(ch.instants[0].erased) == 1 and ch.impulsive
    m = restart(a, "not g", "g")
    j1, j2, w1, w2 = (sp.Symbol(n, real=True) for n in ("j1", "j2", "w1-", "w2-"))
    assert sp.simplify(m["w1+"] - (j1 * w1 + j2 * w2) / (j1 + j2)) == 0


@pytest.mark.long      # 2.4 s of CPU
def test_air_brake():
    a = analyze_multimode(load("AirBrake.mo"))
    assert a.accepted and [d.code for d in a.diagnostics] == ["W-FAKE-IMPULSE"]
    assert a.change("not g", "g").instants[0].erased == ("e12",)          # v1
    # the original valve encoding g = s <= 0 (same-instant s): evaluated by event iteration,
    # the automaton of the pre(s) encoding
    o = analyze_multimode(load("AirBrakeOriginal.mo"))
    assert o.accepted and [d.code for d in o.diagnostics] == ["W-FAKE-IMPULSE"]
    assert _changes(o) == _changes(a)


def test_bouncing_ball():
    a = analyze_multimode(load("BouncingBall.mo"))
    assert a.accepted
    m = {str(k): str(v) for k, v in restart(a, a.changes[0].src_label,
                                             a.changes[0].dst_label).items()}
    assert m["v+"] == "-e*v-" and m["h+"] == "h-"


def test_elastic_cup_and_ball():
    """v+ = v- - (1 + e) ((p.v-)/|p|^2) p, positions continuous; without the law: rejected."""
    a = analyze_multimode(load("CupAndBallElastic.mo"))
    a.raise_if_rejected()
    ch = a.changes[0]
    m = restart(a, ch.src_label, ch.dst_label)
    x, y, vx, vy, e = (sp.Symbol(n, real=True) for n in ("x-", "y-", "vx-", "vy-", "e"))
    pv = (x * vx + y * vy) / (x ** 2 + y ** 2)
    assert sp.simplify(m["vx+"] - (vx - (1 + e) * pv * x)) == 0
    assert sp.simplify(m["vy+"] - (vy - (1 + e) * pv * y)) == 0
    b = analyze_multimode(load("CupAndBallElasticNoLaw.mo"))
    assert not b.accepted and b.diagnostics[0].code == "E-TRANSIENT-UNDER"
    with pytest.raises(ModelRejected):
        b.raise_if_rejected()


def test_cup_and_ball_first_order():
    a = analyze_multimode(load("CupAndBallFirstOrder.mo"), standardize=False)
    assert a.accepted
    ch = a.change("not taut", "taut")
    assert [len(i.erased) for i in ch.instants] == [2, 1]


@pytest.mark.parametrize("name", ["Dahlquist.mo", "VanDerPol.mo", "Pendulum.mo", "Stair.mo"])
def test_single_mode_models(name):
    a = analyze_multimode(load(name), standardize=False)
    assert a.accepted and not a.diagnostics


def test_clutch_basic_and_guarded_time_give_the_same_restart():
    """T-CL-6 on the reference files: same automaton shape and restart map."""
    a, b = (analyze_multimode(load(n)) for n in ("ClutchBasic.mo", "ClutchGuardedTime.mo"))
    for x in (a, b):
        x.raise_if_rejected()
    for src, dst in (("not g", "g"), ("g", "not g")):
        ca, cb = a.change(src, dst), b.change(src, dst)
        assert ca.n_instants == cb.n_instants == 1 and ca.impulsive == cb.impulsive
        ma, mb = restart(a, src, dst), restart(b, src, dst)
        assert all(sp.simplify(ma[k] - mb[k]) == 0 for k in ("w1+", "w2+"))
    assert a.change("not g", "g").instants[0].erased == ("e5|g",)


def test_cup_and_ball_reference():
    a = analyze_multimode(load("CupAndBall.mo"))
    assert a.accepted
    ch = a.change("not taut", "taut")
    assert [i.erased for i in ch.instants] == [("e4", "e4'"), ("e4",)]
    assert not a.change("taut", "not taut").instants[0].erased
    o = analyze_multimode(load("CupAndBallOriginal.mo"))     # taut = s <= 0: event iteration
    assert o.accepted and _changes(o) == _changes(a)


def test_rldc2_reference():
    """README table: TF/FT -> TT erase {K3} = e3, TF/FT -> FF erase {K1} = e1, double switches
    two instants; published starts: initialization diagnostic; Figure 31 guards: fixpoint."""
    a = analyze_multimode(load("RLDC2.mo"), standardize=False)
    assert a.accepted and not a.diagnostics and len(a.changes) == 12
    er = {(c.src_label, c.dst_label): [i.erased for i in c.instants] for c in a.changes}
    assert er[("g1,not g2", "g1,g2")] == [("e3",)]
    assert er[("not g1,g2", "not g1,not g2")] == [("e1",)]
    assert er[("g1,g2", "not g1,not g2")] == [("e1", "e1'"), ("e1",)]
    assert er[("not g1,not g2", "g1,g2")] == [("e3", "e3'"), ("e3",)]
    p = analyze_multimode(load("RLDC2Published.mo"), standardize=False)
    assert [d.code for d in p.diagnostics] == ["W-INIT-INCONSISTENT"]
    # Figure 31 as printed (g = s >= 0 on the same-instant s): event iteration; its start
    # values are those of RLDC2Published, hence the same initialization diagnostic
    o = analyze_multimode(load("RLDC2Original.mo"), standardize=False)
    assert [d.code for d in o.diagnostics] == ["W-INIT-INCONSISTENT"] and len(o.changes) == 12


def _changes(a):
    """The mode changes of an automaton with the equations erased at each instant."""
    return sorted((c.src_label, c.dst_label, tuple(i.erased for i in c.instants))
                  for c in a.changes)
