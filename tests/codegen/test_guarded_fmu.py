"""Guarded FMUs from the implicit analysis (issue 17 Deliver 2-3, mdae_fmu.codegen.guarded):
the BDD formula table the C code walks equals the BDDs; the clutch chain with random host
switching of its clutches (one or two adjacent clutches at once) conserves angular momentum
across every event and restarts every merged shaft group to the weighted mean of its left
limits (the closed form of docs/theory.md §13.1); the guarded FMU agrees with the enumerated
one on the clutch chain and the fault chain; at n = 8 the three families follow exact
piecewise solutions."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from zipfile import ZipFile

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from mdae_fmu.codegen.guarded import plan_guarded as _plan_schedule  # noqa: E402
from mdae_fmu.fmu.export import export  # noqa: E402
from mdae_fmu.implicit import variants  # noqa: E402
from mdae_fmu.implicit.analysis import analyze_implicit  # noqa: E402
from mdae_fmu.implicit.variants import guarded_schedule  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_multimode import clutch_chain, fault_chain  # noqa: E402
from piecewise_exact import piecewise as _piecewise  # noqa: E402


def _holds(table, u: int, bits) -> bool:
    """The C evaluator `holds` of templates/model_guarded.c.j2, in Python."""
    while u >= 0:
        u = table.hi[u] if bits[table.var[u]] else table.lo[u]
    return u == -1


def plan_guarded(model, ia):
    """The guarded plan of ``model`` from its implicit analysis ``ia``: the analysis' schedule
    (`mdae_fmu.implicit.variants.guarded_schedule`), laid out by code generation."""
    return _plan_schedule(model, guarded_schedule(model, ia))


@pytest.mark.parametrize("model", [clutch_chain(3), fault_chain(2)], ids=lambda m: m.name)
def test_formula_table_is_the_bdds(model):
    ia = analyze_implicit(model)
    plan = plan_guarded(model, ia)
    space = ia.space
    bdd = space.bdd
    # every formula of the plan, at every guard valuation, as dd evaluates it
    formulas = [b for b in ia.blocks]
    assert len(plan.blocks) >= len(formulas)
    for bits in itertools.product([False, True], repeat=len(space.atoms)):
        asg = {space.var_of[a]: v for a, v in zip(space.atoms, bits)}
        if bdd.let(asg, space.care) != bdd.true:
            continue
        active = [_holds(plan.table, gb.formula, bits) for gb in plan.blocks]
        # each equation is in exactly one active block variant, each unknown solved once
        eqs = [e for gb, a in zip(plan.blocks, active) if a for e in gb.plan.label.split("+")]
        assert sorted(e.rstrip("'") for e in eqs) == sorted(ia.graph.rows)
        unk = [u for gb, a in zip(plan.blocks, active) if a for u in gb.plan.unknowns]
        assert len(unk) == len(set(unk)) == len(ia.graph.cols)
        for cb in ia.blocks:
            want = bdd.let(asg, cb.formula) == bdd.true
            got = any(a and gb.origin == (cb.equations, cb.unknowns)
                      for gb, a in zip(plan.blocks, active))
            assert got == want


def _table(names, switches):
    """Boolean input table: ``switches`` = [(t, {name: value})], values held in between."""
    val = {n: False for n in names}
    rows = [(0.0, *val.values())]
    for t, change in switches:
        rows.append((t, *val.values()))
        val.update(change)
        rows.append((t, *val.values()))
    rows.append((6.0, *val.values()))
    return np.array(rows, dtype=[("time", float)] + [(n, np.bool_) for n in names])


SWITCHES = [(0.5, {"g1": True}), (1.0, {"g0": True, "g2": True}),    # two at once, merging
            (1.7, {"g1": False}), (2.2, {"g1": True}), (3.1, {"g0": False, "g1": False}),
            (4.0, {"g0": True, "g1": True}), (5.0, {"g2": False})]


def _shaft_groups(engaged) -> list[list[int]]:
    """The shafts of the clutch chain that turn together: runs joined by engaged clutches
    (clutch i joins shafts i and i + 1)."""
    out, cur = [], [0]
    for i, g in enumerate(engaged):
        if g:
            cur.append(i + 1)
        else:
            out.append(cur)
            cur = [i + 1]
    return out + [cur]


@pytest.mark.parametrize("merged", [False, True, "sparse"], ids=["blocks", "merged", "sparse"])
def test_clutch_chain_restarts_are_the_weighted_means(tmp_path, monkeypatch, merged):
    """Block by block (the runs of engaged clutches listed as variants), and with the whole
    chain merged into one block whose equations are selected by the guard bits, solved by the
    dense LU or (``sparse``) by the runtime's sparse LU kept between evaluations
    (templates/mdae_sparse.c; the block and its restart)."""
    import mdae_fmu.codegen.blocks as blocks
    if merged:
        monkeypatch.setattr(variants, "MAX_VARIANTS", 0)
    if merged == "sparse":
        monkeypatch.setattr(blocks, "SPARSE_MIN", 2)
    n = 3
    model = clutch_chain(n)
    path = export(model, tmp_path / "cc.fmu", implicit=True, progress=False)
    assert validate_fmu(str(path)) == []
    with ZipFile(path) as z:
        sources = "".join(z.read(f).decode() for f in z.namelist()
                          if f.startswith("sources/model_"))
    assert ("mdae_sparse_linear_block(inst" in sources) == (merged == "sparse")
    names = [f"g{i}" for i in range(n)]
    table = _table(names, SWITCHES)
    J = [1.0 + 0.5 * i for i in range(n + 1)]
    # the last switch is at t = 5: the run stops soon after it (the checks read the switches)
    r = simulate_fmu(str(path), stop_time=5.2, relative_tolerance=1e-10, output_interval=0.01,
                     input=table, output=[f"w{i}" for i in range(n + 1)], record_events=True)
    t = r["time"]
    checked = 0
    for ts, _ in SWITCHES:
        k = int(np.nonzero(t == ts)[0][0])
        last = int(np.nonzero(t == ts)[0][-1])
        g = [bool(table[names[i]][np.nonzero(table["time"] == ts)[0][-1]]) for i in range(n)]
        left = [r[f"w{i}"][k] for i in range(n + 1)]
        right = [r[f"w{i}"][last] for i in range(n + 1)]
        # the shaft groups of the new mode, and the weighted mean of each (closed form)
        for grp in _shaft_groups(g):
            engaged_before = all(r[f"w{i}"][k] == r[f"w{grp[0]}"][k] for i in grp)
            mean = sum(J[i] * left[i] for i in grp) / sum(J[i] for i in grp)
            for i in grp:
                if len(grp) > 1:
                    assert right[i] == pytest.approx(mean, rel=1e-12, abs=1e-14)
                elif not engaged_before:
                    assert right[i] == left[i]
        L_left = sum(J[i] * left[i] for i in range(n + 1))
        L_right = sum(J[i] * right[i] for i in range(n + 1))
        assert abs(L_right - L_left) <= 1e-12 * abs(L_left)
        checked += 1
    assert checked == len(SWITCHES)


# the guarded FMUs of clutch_chain(2) and fault_chain(1) under host input switches against
# the per-mode FMU's recorded runs (generated.ClutchChain2, generated.FaultChain1):
# tests/fmu/test_reference_trajectories.py


def test_cli_export_implicit(tmp_path, capsys):
    from gen_multimode import diode_bank

    from mdae_fmu.cli import main
    from mdae_fmu.modelica_printer import print_model
    src = tmp_path / "cc.mo"
    src.write_text(print_model(clutch_chain(2)))
    out = tmp_path / "cc.fmu"
    assert main(["export", str(src), "--implicit", "-o", str(out)]) == 0
    assert out.stat().st_size > 0
    # beyond 2^12 modes export takes the guarded path by itself (as analyze)
    big = tmp_path / "big.mo"
    big.write_text(print_model(clutch_chain(13)))
    assert main(["export", str(big), "-o", str(tmp_path / "big.fmu")]) == 0
    assert "sources/model_guarded_0.c" in ZipFile(tmp_path / "big.fmu").namelist()
    # the diode bank's states change with the mode (mode-dependent state slots)
    bank = tmp_path / "bank.mo"
    bank.write_text(print_model(diode_bank(2)))
    assert main(["export", str(bank), "--implicit", "-o", str(tmp_path / "b.fmu")]) == 0
    assert "sources/model_guarded_0.c" in ZipFile(tmp_path / "b.fmu").namelist()


def test_transient_guards_are_refused():
    """The guarded schedule runs no transient mode's equations (since stop 42 a model of one
    long mode with when-clauses is exported on its per-mode schedule, docs/decisions.md §19):
    CupAndBallElasticNoLaw's impact equation, selected by a transient guard, is refused by
    name, with the route that holds it, never accepted silently."""
    from mdae_fmu import api
    from mdae_fmu.diagnostics import ModelRejected
    m = api.load(ROOT / "reference_models" / "CupAndBallElasticNoLaw.mo")
    with pytest.raises(ModelRejected, match=r"equation e4 \(CupAndBallElasticNoLaw.mo:25\) is "
                       r"selected by a transient guard .*per-mode schedule"):
        plan_guarded(m, analyze_implicit(m))


def _bank_or_reference(name: str):
    from gen_multimode import diode_bank

    from mdae_fmu import api
    if name == "RLDC2Diodes":
        return api.load(ROOT / "reference_models" / "RLDC2Diodes.mo")
    n, charged = int(name[-1]), name.startswith("charged")
    return diode_bank(n, charged=charged)


# bank2: capacitors at -1 V, both diodes conducting at t = 0 (pre(s) = 0); its initial
# system's Jacobian is rank deficient (tests/fmu/test_bank_initialization.py)
@pytest.mark.parametrize("name", ["RLDC2Diodes", "bank2", "charged3"])
def test_mode_dependent_states_are_held_apart(name):
    """States that exist in some modes only (the diode currents while every diode blocks,
    the node voltage and the diode voltages while all conduct) are the plan's conditional
    states, whose state vector entries are held apart from their variables. The FMUs'
    switches and trajectories against the per-mode FMU's recorded runs (RLDC2Diodes,
    generated.DiodeBank2, generated.ChargedDiodeBank3): tests/fmu/test_reference_trajectories.py."""
    model = _bank_or_reference(name)
    plan = plan_guarded(model, analyze_implicit(model))
    assert plan.cond_states
    held = {st.variable for st in plan.compiled.states if st.store is not None}
    assert held and held <= {v.name for v in model.variables}


def _charged_bank_events(tmp_path, n: int, bank=None):
    """The charged diode bank of n diodes exported on the guarded path and simulated 10 s:
    the result, the total charge sum C_k v_k per row and the rows before each event.
    ``bank``: ``(model, analysis)`` of that bank already analysed (`bank_of_twelve`)."""
    from gen_multimode import diode_bank
    model, analysis = bank or (diode_bank(n, charged=True), None)
    path = export(model, tmp_path / f"bank{n}.fmu", implicit=True, analysis=analysis,
                  progress=False)
    r = simulate_fmu(str(path), stop_time=10.0, relative_tolerance=1e-10,
                     output_interval=0.05, output=["j"] + [f"v{k}" for k in range(n)],
                     record_events=True)
    q = sum(0.1 * (k + 1) * r[f"v{k}"] for k in range(n))
    return r, q, np.flatnonzero(np.diff(r["time"]) == 0)


def test_charged_bank_conserves_charge_across_events(tmp_path):
    """Every switch of the charged bank (the joint turn-off of the conducting group when the
    inductor current reverses) leaves the inductor current and the total capacitor charge
    sum C_k v_k unchanged: the current through the inductor is a state, so the impulses of
    the branch currents sum to zero (kcl)."""
    r, q, at = _charged_bank_events(tmp_path, 4)
    assert len(at) >= 1
    for k in at:
        assert abs(q[k + 1] - q[k]) <= 1e-9 * abs(q[k])
        # j is continuous up to the event location: the turn-off is located where the
        # indicator i_k passes the hysteresis (1e-10), then FF's consistency j = 0 holds
        assert abs(r["j"][k + 1] - r["j"][k]) <= 1e-9


@pytest.mark.parametrize("n", [2, 3])
def test_merged_bank_agrees_with_variants(tmp_path, monkeypatch, n):
    """The bank's coupled component forced into ONE block whose equations, orders and
    unknowns the guard bits select (`mdae_fmu.implicit.merged`: the node voltage, the diode
    currents and voltages are states in some modes and algebraic in others) takes the same
    switches at the same times and the same trajectories as the per-variant FMU, to 1e-8."""
    from gen_multimode import diode_bank
    model = diode_bank(n, charged=True)
    ia = analyze_implicit(model)
    assert not any(b.sel for b in plan_guarded(model, ia).blocks)
    outs = [v.name for v in model.variables if v.variability == "continuous"
            and v.type == "Real"]
    res = []
    for limit in (variants.MAX_VARIANTS, 0):
        monkeypatch.setattr(variants, "MAX_VARIANTS", limit)
        if limit == 0:      # the case of this test: proxies for mode-selected unknowns
            assert any(b.sel and b.sel.top for b in plan_guarded(model, ia).blocks)
        path = export(model, tmp_path / f"b{limit}.fmu", implicit=True, progress=False)
        res.append(simulate_fmu(str(path), stop_time=3.0, relative_tolerance=1e-10,
                                output_interval=0.015, output=outs, record_events=True))
    v, m = res
    assert len(v) == len(m)
    events = np.flatnonzero(np.diff(v["time"]) == 0)
    assert len(events) >= 1
    assert np.array_equal(np.flatnonzero(np.diff(m["time"]) == 0), events)
    assert np.max(np.abs(v["time"] - m["time"])) < 1e-8
    for x in outs:
        assert np.max(np.abs(v[x] - m[x]) / np.maximum(1.0, np.abs(v[x]))) < 1e-8, x


@pytest.fixture(scope="module")
def bank_of_twelve():
    """The charged diode bank of 12 and its analysis as ``export`` computes it (its implicit
    analysis takes seconds): read by the two tests below, the second exports it."""
    from gen_multimode import diode_bank
    from mdae_fmu.analysis import analyze
    model = diode_bank(12, charged=True)
    return model, analyze(model, implicit=True, full=False)


def test_coarse_bank_component_is_one_merged_block(bank_of_twelve):
    """From 12 diodes the analysis leaves the bank's coupled component coarse (not split per
    mode); the guarded plan solves it as one merged block with the diodes' Z_k equations
    (2 + 3n equations and unknowns), instead of refusing the model."""
    n = 12
    model, analysis = bank_of_twelve
    # the model as written was analysed (no code form, no conversion): its implicit analysis'
    # blocks and the guarded schedule built from them
    assert analysis.code_model is None and analysis.model is None and analysis.accepted
    assert any(b["coarse"] for b in analysis.implicit_json["blocks"])
    plan = _plan_schedule(model, analysis.guarded)
    merged = [b for b in plan.blocks if b.merged]
    assert len(merged) == 1
    assert len(merged[0].plan.unknowns) == len(merged[0].plan.residuals) == 2 + 3 * n
    assert {f"Z{k}" for k in range(n)} <= set(merged[0].origin[0])


def test_bank_of_twelve_switches_and_conserves_charge(tmp_path, bank_of_twelve):
    """The bank of 12 diodes (a coarse component, one merged block) exports and simulates
    10 s of physical switching: the diodes turn on as the node voltage passes their
    capacitors' voltages, and the total charge sum C_k v_k is unchanged across every event
    (the inductor current is a state: the impulses of the branch currents sum to zero)."""
    n = 12
    r, q, at = _charged_bank_events(tmp_path, n, bank_of_twelve)
    assert r[f"v{n - 2}"][0] == pytest.approx(1.3 / (n - 1), rel=1e-12)   # declared start
    assert len(at) >= 3
    for k in at:
        assert abs(q[k + 1] - q[k]) <= 1e-9 * abs(q[k])


def _simulate_switched(tmp_path, model, table, outputs, rtol=1e-10):
    """The guarded FMU of ``model`` simulated 10 s by FMPy (CVode at ``rtol``) under the host's
    ``table``: the result and, per row, whether it is the left limit at an event."""
    path = export(model, tmp_path / "m.fmu", implicit=True, progress=False)
    r = simulate_fmu(str(path), stop_time=10.0, relative_tolerance=rtol,
                     output_interval=0.01, input=table, output=outputs, record_events=True)
    t = r["time"]
    return r, [k + 1 < len(t) and t[k + 1] == t[k] for k in range(len(t))]


def _clutch_chain_closed_form(n: int, table, times):
    """The clutch chain's exact trajectory under a host switching table: between switches each
    group of shafts joined by engaged clutches turns at one speed, (sum J) w' = -(sum k) w,
    so w decays exponentially; at a switch each group of the new mode starts from the mean of
    its shafts' speeds weighted by J (its angular momentum is conserved). Returns w at
    ``times``, the left limit where a time is a switching instant and ``left`` is True."""
    J = np.array([1.0 + 0.5 * i for i in range(n + 1)])
    k = np.array([0.01 * (i + 1) for i in range(n + 1)])


    def advance(w, g, dt):
        w = w.copy()
        for grp in _shaft_groups(g):
            w[grp] *= np.exp(-k[grp].sum() / J[grp].sum() * dt)
        return w

    def restart(w, g):
        w = w.copy()
        for grp in _shaft_groups(g):
            w[grp] = (J[grp] * w[grp]).sum() / J[grp].sum()
        return w

    w0 = np.array([1.0 + 0.1 * i for i in range(n + 1)])
    return _piecewise(table, [f"g{i}" for i in range(n)], w0, advance, restart, times)[0]


def test_clutch_chain_of_eight_follows_the_closed_form(tmp_path):
    """Issue 17, "same answers" at n = 8 (256 modes, whose enumerated FMU takes too long to
    export): the guarded FMU under 20 random host switches of one or two clutches at once
    against the exact piecewise solution (`_clutch_chain_closed_form`), every output row,
    before and after each event, to 1e-8."""
    from guarded_sim import switching_table
    n = 8
    table = switching_table([f"g{i}" for i in range(n)], 10.0, 20, seed=5)
    r, left = _simulate_switched(tmp_path, clutch_chain(n), table,
                                 [f"w{i}" for i in range(n + 1)])
    t = r["time"]
    want = _clutch_chain_closed_form(n, table, list(zip(t, left)))
    got = np.column_stack([r[f"w{i}"] for i in range(n + 1)])
    assert int(np.sum(np.diff(t) == 0)) >= 15              # the switches are events
    assert np.max(np.abs(got - want)) < 1e-8, np.max(np.abs(got - want))


def _fault_chain_exact(n: int, table, times):
    """The fault chain's exact trajectory under a host switching table of its open_k and
    short_k inputs: in each mode the state x = (v, j_0 .. j_{n-1}) obeys the linear ODE
    C v' = sum j_k, L_k j_k' = E - v - r_k j_k (r_k = R_k nominal, 0 short) for the branches
    not open, j_k' = 0 for the open ones, solved by the exponential of the matrix augmented
    with the constant source E. Opening a branch restarts its current at 0 (the resistor
    equation j_k = 0; the inductor's flux jumps, its voltage is impulsive); the charge C v and
    the other currents are continuous (no impulse reaches them: C v' and L_m j_m' are sums
    of bounded terms). Returns (states at ``times``, valuations there), as `_piecewise`."""
    from scipy.linalg import expm
    E, C = 1.0, 1.0
    L = np.array([1.0 + 0.5 * k for k in range(n)])
    R = np.array([1.0 + k for k in range(n)])

    def matrix(val):
        is_open, short = val[:n], val[n:]
        M = np.zeros((n + 2, n + 2))
        M[0, 1:n + 1] = 1.0 / C
        for k in range(n):
            if not is_open[k]:
                M[k + 1, [0, k + 1, n + 1]] = [-1.0, -(0.0 if short[k] else R[k]), E] / L[k]
        return M

    def advance(x, val, dt):
        return (expm(matrix(val) * dt) @ np.append(x, 1.0))[:-1]

    def restart(x, val):
        x = x.copy()
        x[1:][np.array(val[:n])] = 0.0
        return x

    names = [f"open{k}" for k in range(n)] + [f"short{k}" for k in range(n)]
    return _piecewise(table, names, np.zeros(n + 1), advance, restart, times)


def test_fault_chain_of_eight_follows_the_exact_solution(tmp_path):
    """Issue 17, "same answers" at n = 8 (4^8 valuations, 3^8 modes): the guarded FMU under
    20 random host switches of one or two open/short inputs at once against the exact
    piecewise solution (`_fault_chain_exact`, whose restart rule agrees with the enumerated
    FMU at n = 2), every output row, before and after each event: the states to 1e-8, and
    the resistor voltages u_k of the mode in force on each row (E - v open, 0 short, R_k j_k
    nominal) from the FMU's own states, exactly."""
    from guarded_sim import switching_table
    n = 8
    names = [f"open{k}" for k in range(n)] + [f"short{k}" for k in range(n)]
    table = switching_table(names, 10.0, 20, seed=5)
    states = ["v"] + [f"j{k}" for k in range(n)]
    # rtol 1e-11: at 1e-10 CVode's own error is 8e-9 here (2e-10 at 1e-12)
    r, left = _simulate_switched(tmp_path, fault_chain(n), table,
                                 states + [f"u{k}" for k in range(n)], rtol=1e-11)
    t = r["time"]
    want, vals = _fault_chain_exact(n, table, list(zip(t, left)))
    got = np.column_stack([r[x] for x in states])
    events = np.flatnonzero(np.diff(t) == 0)
    assert len(events) >= 15                                # the switches are events
    assert sum(np.max(np.abs(want[k + 1] - want[k])) > 1e-3 for k in events) >= 5  # openings
    assert np.max(np.abs(got - want)) < 1e-8, np.max(np.abs(got - want))
    val = np.array(vals)
    R = np.array([1.0 + k for k in range(n)])
    u = np.where(val[:, :n], 1.0 - got[:, :1], np.where(val[:, n:], 0.0, R * got[:, 1:]))
    assert np.max(np.abs(np.column_stack([r[f"u{k}"] for k in range(n)]) - u)) < 1e-13


def _diode_bank_exact(n: int, stop: float, h: float = 1e-3):
    """The charged diode bank's exact trajectory (`gen_multimode.diode_bank(n, charged=True)`):
    while the diodes of a group S conduct, v_k = V for k in S (their capacitors in parallel),
    L j' = E - R j - V and (sum_S C_k) V' = j, the blocked capacitors keep their voltages: a
    linear ODE solved by the exponential of the matrix augmented with E. A blocked diode k
    turns on when V reaches v_k (S takes k, its capacitors start from the charge-weighted
    mean, here V itself); the group turns off at once when j reverses (every i_k = C_k j /
    sum_S C_k), then j = 0, V = E. The switching instants are the roots of V - v_k and j,
    bracketed on a grid of step h and refined by brentq. Returns the segments (start time,
    state (j, v_0 .. v_{n-1}) there, conducting set) and ``at(segment, t)``, the state."""
    from scipy.linalg import expm
    from scipy.optimize import brentq
    E, R, L = 1.0, 1.0, 1.0
    C = np.array([0.1 * (k + 1) for k in range(n)])

    def matrix(on):
        M = np.zeros((n + 2, n + 2))
        if on:
            M[0, [0, 1 + min(on), n + 1]] = [-R / L, -1.0 / L, E / L]
            M[1 + np.array(sorted(on)), 0] = 1.0 / C[sorted(on)].sum()
        return M

    def at(seg, t):
        t0, x, on = seg
        return (expm(matrix(on) * (t - t0)) @ np.append(x, 1.0))[:-1]

    def indicators(x, on):      # turn-off (j > 0 while on), turn-on of k (V - v_k < 0)
        return [x[0]] + [x[1 + min(on)] - x[1 + k] for k in range(n) if k not in on]

    def first_switch(seg):      # (time, diode turning on or -1: all off), or None
        on, cands = seg[2], [-1] + [k for k in range(n) if k not in seg[2]]
        step = expm(matrix(on) * h)
        t, y = seg[0], np.append(seg[1], 1.0)
        while t < stop:
            a, b = indicators(y, on), indicators(step @ y, on)
            hits = [(brentq(lambda s, i=i: indicators(at(seg, s), on)[i], t, t + h,
                            xtol=1e-15, rtol=1e-15), c)
                    for i, c in enumerate(cands)
                    if (a[i] > 0 >= b[i] if c < 0 else a[i] < 0 <= b[i])]
            if hits:
                return min(hits)
            t, y = t + h, step @ y
        return None

    x = np.array([0.0] + [1.3 * (1.0 - k / (n - 1)) for k in range(n)])
    segs = [(0.0, x, frozenset({n - 1}))]
    while segs[-1][2] and (hit := first_switch(segs[-1])):
        te, c = hit
        x, on = at(segs[-1], te), segs[-1][2]
        if c < 0:
            x[0], on = 0.0, frozenset()
        else:
            on = on | {c}
            grp = 1 + np.array(sorted(on))
            x[grp] = (C[grp - 1] * x[grp]).sum() / C[grp - 1].sum()
        segs.append((te, x, on))
    assert all(E - segs[-1][1][1:] < 0) or segs[-1][2]    # all blocked: nothing switches
    return segs, at


def test_diode_bank_of_eight_follows_the_exact_solution(tmp_path):
    """Issue 17, "same answers" at n = 8 (2^8 modes): the guarded FMU of the charged bank,
    switching physically over 12 s (five diodes turning on one after the other, then the
    group of six turning off at once), against the exact piecewise solution
    (`_diode_bank_exact`): the same switches, the turn-ons at the same times to 1e-7, the
    turn-off to 1e-6 (it is located where the smallest diode current passes the hysteresis
    1e-10 of its indicator, while j crosses 0 with a slope of 2e-3), and every output row,
    before and after each event, to 1e-8 (j, the v_k, and V: the group's voltage, E once
    every diode blocks)."""
    from gen_multimode import diode_bank
    n, stop = 8, 12.0
    segs, at = _diode_bank_exact(n, stop)
    path = export(diode_bank(n, charged=True), tmp_path / "bank8.fmu", implicit=True,
                  progress=False)
    outs = ["j"] + [f"v{k}" for k in range(n)]
    r = simulate_fmu(str(path), stop_time=stop, relative_tolerance=1e-10, output_interval=0.05,
                     output=outs + ["V"], record_events=True)
    t = r["time"]
    events = np.flatnonzero(np.diff(t) == 0)
    assert len(events) == len(segs) - 1 >= 6
    assert not segs[-1][2] and all(len(s[2]) == k + 1 for k, s in enumerate(segs[:-1]))
    dt = np.abs(t[events] - [s[0] for s in segs[1:]])
    assert np.max(dt[:-1]) < 1e-7 and dt[-1] < 1e-6, dt
    # each row in the segment of the FMU's mode on it (a left limit before its event)
    seg_of = [int(np.sum(events + 1 <= i)) for i in range(len(t))]
    want = np.array([at(segs[s], ti) for s, ti in zip(seg_of, t)])
    got = np.column_stack([r[x] for x in outs])
    assert np.max(np.abs(got - want)) < 1e-8, np.max(np.abs(got - want))
    V = [w[1 + min(segs[s][2])] if segs[s][2] else 1.0 for s, w in zip(seg_of, want)]
    assert np.max(np.abs(r["V"] - V)) < 1e-8
