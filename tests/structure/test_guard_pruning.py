"""Guard combinations that arithmetic excludes are not modes (issue 26 Deliver 5,
mdae_fmu.implicit.formulas): relations over two variables combined three at a time (the MSL
elasto-backlash as OpenModelica flattens it: ``b2 > 1e-10``, ``phi_rel > b2`` and
``phi_rel < -b2`` cannot all hold), on top of the one-dimensional rule for relations on one
direction. The oracle of each exclusion is a point: a combination is kept exactly when some
point satisfies it (checked here by sampling, and by hand for the backlash)."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("dd")
from mdae_fmu.implicit.analysis import analyze_implicit  # noqa: E402
from mdae_fmu.implicit.formulas import _plane_feasible, linear_form  # noqa: E402
from mdae_fmu.ir import Model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from gen_multimode import fault_chain  # noqa: E402
from multimode_examples import eq, ex, param, real  # noqa: E402


def test_linear_forms():
    assert linear_form(ex("2*(x - y) + 3 - x/4")) == {ex("x"): 1.75, ex("y"): -2.0, None: 3.0}
    # a product of unknowns is one atom, an independent real for the pruning
    assert linear_form(ex("x*y - x")) == {ex("x*y"): 1.0, ex("x"): -1.0}
    assert linear_form(ex("3 - 3")) is None


def _cons(*rows):
    return [({ex(x): k for x, k in a.items()}, op, v) for a, op, v in rows]


def test_plane_feasibility_is_exact():
    phi_gt = ({"phi": 1, "b2": -1}, ">", 0.0)
    phi_lt = ({"phi": 1, "b2": 1}, "<", 0.0)
    # the backlash: b2 > 1e-10 and b2 < phi < -b2 have no common point, however small 1e-10
    assert not _plane_feasible(_cons(({"b2": 1}, ">", 1e-10), phi_gt, phi_lt))
    assert not _plane_feasible(_cons(({"b2": 1}, ">=", 0.0), phi_gt, phi_lt))
    # b2 = 0 exactly: phi > 0 and phi < 0 is empty, but b2 >= 0 with non-strict bounds is not
    assert _plane_feasible(_cons(({"b2": 1}, ">=", 0.0), ({"phi": 1, "b2": -1}, ">=", 0.0),
                                 ({"phi": 1, "b2": 1}, "<=", 0.0)))
    assert _plane_feasible(_cons(({"b2": 1}, "<=", 1e-10), phi_gt, phi_lt))   # b2 < 0
    assert not _plane_feasible(_cons(({"x": 1}, "==", 1.0), ({"x": 1, "y": 1}, "<", 0.0),
                                     ({"y": 1}, ">", -1.0)))
    assert _plane_feasible(_cons(({"x": 1}, "<>", 1.0), ({"x": 1}, "==", 1.0)))  # <> dropped


def _random_points(n=20000, seed=1):
    rng = random.Random(seed)
    for _ in range(n):
        yield {k: rng.choice([rng.uniform(-2, 2), rng.choice([0.0, 1e-10, -1e-10, 0.5])])
               for k in ("phi", "b2", "x", "y")}


def _backlash(n_switches: int, guarded: bool) -> Model:
    """``fault_chain(n_switches)`` (2 Boolean inputs per branch) plus two shafts with a rigid
    backlash contact on either side: ``w2 = w1`` while ``phi_rel > b2`` (torque tp) or
    ``phi_rel < -b2`` (torque tn), else that torque is 0; the shafts feel tau = tp + tn.
    Both contacts at once leave tp and tn in one equation only (their sum):
    structurally singular. ``guarded``: each
    contact also needs ``b2 > 1e-10`` (b2 the half backlash, a variable bound by an equation
    as in OpenModelica's flat output), which makes that combination unreachable."""
    base = fault_chain(n_switches)
    gap = "b2 > 1e-10 and " if guarded else ""
    vs = base.variables + tuple(real(x, 0.0, True) for x in ("phi1", "phi2", "w1", "w2")) \
        + (real("tp"), real("tn"), real("tau"), real("b2"), param("b", 0.1))
    eqs = base.equations + (
        eq("half", "b2 = 0.5*b"),
        eq("p1", "der(phi1) = w1"), eq("p2", "der(phi2) = w2"),
        eq("m1", "der(w1) = tau + 1"), eq("m2", "der(w2) = -tau - w2"),
        eq("sum", "tau = tp + tn"),
        eq("pos", f"0 = (w2 - w1 if {gap}phi2 - phi1 > b2 else tp)"),
        eq("neg", f"0 = (w1 - w2 if {gap}phi2 - phi1 < -b2 else tn)"))
    return Model(
        name=f"Backlash{n_switches}{'Guarded' if guarded else ''}", variables=vs, equations=eqs
    )


def test_singular_combination_among_2_40_is_named():
    imp = analyze_implicit(_backlash(19, guarded=False))          # 38 inputs + 2 relations
    assert len(imp.space.atoms) == 40 and imp.n_modes == 2 ** 40
    assert not imp.ok
    assert f"structurally singular in {2 ** 38} of {2 ** 40} modes: " \
        "(phi2 - phi1 > b2 and phi2 - phi1 < (-b2))" in imp.diagnostic
    failing = dict(imp.failing_mode)
    assert failing["phi2 - phi1 > b2"] and failing["phi2 - phi1 < (-b2)"]


def test_the_same_combination_made_unreachable_is_accepted():
    imp = analyze_implicit(_backlash(19, guarded=True))
    assert len(imp.space.atoms) == 40
    # per contact guard: (b2 > 1e-10 and rel) is true, false with rel false, or false with
    # b2 <= 1e-10; both contacts true needs b2 > 1e-10 and b2 < phi_rel < -b2: excluded
    assert imp.n_modes == 2 ** 38 * 3
    assert imp.ok, imp.diagnostic


def test_care_set_keeps_exactly_the_satisfiable_combinations():
    """Every combination of the backlash's three relations that a sampled point satisfies
    is a mode, and the one the pruning removes has no point (by hand: b2 < phi < -b2 needs
    b2 < 0)."""
    imp = analyze_implicit(_backlash(1, guarded=False))
    sp = imp.space
    bdd = sp.bdd
    # the unguarded model has no b2 > 1e-10 atom: all four contact combinations are modes
    names = [n for n in sp.names if "phi" in n]
    assert len(names) == 2
    seen = set()
    for p in _random_points():
        rel = p["phi"]
        seen.add((rel > p["b2"], rel < -p["b2"]))
    assert seen == set(itertools.product((True, False), repeat=2))
    assert sp.count(sp.care) == 4 * 4
    guarded = analyze_implicit(_backlash(1, guarded=True)).space
    aux = [(c, v) for c, v in guarded.var_of.items() if v.startswith("a")]
    assert {str(c) for c, _ in aux}      # the relations inside the composite guards
    assert guarded.count(guarded.care) == 4 * 3
    assert bdd is not None


# --- the acceptance on the default path (issue 26): `mdae-fmu analyze` / `export` of a file ---

def _written(tmp_path: Path, guarded: bool) -> Path:
    from mdae_fmu.modelica_printer import print_model
    model = _backlash(19, guarded)
    path = tmp_path / f"{model.name}.mo"
    path.write_text(print_model(model))
    return path


def test_cli_rejects_the_one_singular_combination_among_2_40_naming_it(tmp_path, capsys):
    """``mdae-fmu analyze`` of the unguarded backlash (40 guards, 2^40 modes): exit code 1,
    the singular modes printed as the formula of the two contacts, and one concrete mode of
    them with its Dulmage-Mendelsohn diagnostic (both contacts: tp and tn are in no equation
    but their sum, the three velocity equations over-determine w1, w2 and tau)."""
    from mdae_fmu.cli import main
    path = _written(tmp_path, guarded=False)
    assert main(["analyze", str(path)]) == 1
    out = capsys.readouterr().out
    assert "40 long guards, 1099511627776 consistent modes" in out
    assert "verdict: rejected" in out
    assert f"structurally singular in {2 ** 38} of {2 ** 40} modes: " \
        "(phi2 - phi1 > b2 and phi2 - phi1 < (-b2))" in out
    concrete = next(ln for ln in out.splitlines() if ln.strip().startswith("mode {"))
    assert "not open0, not short0," in concrete
    assert concrete.split("}:")[0].endswith("phi2 - phi1 > b2, phi2 - phi1 < (-b2)")
    assert "over-determine {w1, w2, tau}; no equation determines {tp, tn}" in concrete


@pytest.mark.long      # builds an FMU: out of -m quick
def test_cli_accepts_and_exports_the_same_model_with_the_combination_unreachable(tmp_path,
                                                                                capsys):
    """The guarded backlash: the same 40 guards, the contact pair excluded by arithmetic
    (b2 > 1e-10 and b2 < phi_rel < -b2 has no point), 3 * 2^38 modes left and all regular:
    ``mdae-fmu analyze`` accepts it and ``mdae-fmu export`` builds its FMU. Simulated in
    the gap (phi_rel = -t^2/2 > -b2 = -0.05 up to t = 0.316, every input false): the
    shafts follow the closed form (w1 = t, phi1 = t^2/2, w2 = 0) and the fault chain the
    scipy solution of its linear ODE (u_k = R_k j_k)."""
    from fmpy import simulate_fmu
    from scipy.integrate import solve_ivp
    from mdae_fmu.cli import main
    path = _written(tmp_path, guarded=True)
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "guards (40, each a condition that changes the equations):" in out
    assert f"structural modes: {3 * 2 ** 38}\n" in out
    assert "verdict: accepted" in out
    fmu = tmp_path / "b.fmu"
    assert main(["export", str(path), "-o", str(fmu)]) == 0
    n = 19
    names = ["phi1", "w1", "phi2", "w2", "v", *(f"j{k}" for k in range(n))]
    res = simulate_fmu(str(fmu), stop_time=0.3, output=names, output_interval=0.01,
                       relative_tolerance=1e-10)
    t = res["time"]
    assert t[-1] == pytest.approx(0.3)
    assert max(abs(res["w1"] - t)) < 1e-7 and max(abs(res["phi1"] - t ** 2 / 2)) < 1e-7
    assert max(abs(res["w2"])) < 1e-12 and max(abs(res["phi2"])) < 1e-12
    L = [1.0 + 0.5 * k for k in range(n)]
    R = [1.0 + k for k in range(n)]

    def rhs(_t, y):
        v, j = y[0], y[1:]
        return [sum(j), *((1.0 - v - R[k] * j[k]) / L[k] for k in range(n))]
    ref = solve_ivp(rhs, (0.0, 0.3), [0.0] * (n + 1), method="DOP853", rtol=1e-12,
                    atol=1e-12, t_eval=t)
    for k, name in enumerate(["v", *(f"j{k}" for k in range(n))]):
        assert max(abs(res[name] - ref.y[k])) < 1e-7, name
