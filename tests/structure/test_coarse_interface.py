"""The interface certificate of a coarse block (docs/theory.md §10.15,
`mdae_fmu.implicit.conversion._interface_certificate`): every mode of a union component solved
as one system is shown free of diagonal blocks singular for all values from one Schur
complement of its switched rows, with no per-mode block listed, so that drive lines and shaft
trees of any size are checked in every mode (no W-SINGULAR-UNCHECKED); the modes it leaves
are those where an interface row vanishes, and each is rejected with the formula of exactly
the modes of its singular block.

Oracles: the enumerated path mode by mode up to 2^6 modes (its conversion stage,
`convert_singular` of `analyze_modes`, as `analyze(model, implicit=False)` runs it: its
verdicts and conversions; its whole analysis for a rejection: the rejected mode and its
dependency), the per-mode blocks'
formulas of the split (`implicit.blocks.component_blocks`), and a closed form: the
Jacobian of a run of engaged clutches between shafts of inertias J_k has determinant
±(J_1 + ... + J_p), never zero at the sampled point (inertias in [0.5, 1.5])."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu.analysis import analyze
from mdae_fmu.implicit import analysis as implicit_analysis
from mdae_fmu.implicit import conversion
from mdae_fmu.implicit.analysis import analyze_implicit
from mdae_fmu.implicit.blocks import block_formula, component_blocks, conditional_blocks
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure.conversion import convert_singular
from mdae_fmu.structure.per_mode import analyze_modes, classify_variables
from mdae_fmu.structure.system_jacobian import Point

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_modeller  # noqa: E402


def _model(text: str, name: str):
    return parse_modelica(text, f"{name}.mo")


def _where(model, ia):
    return conversion._Where(
        rows={r: i for i, r in enumerate(ia.graph.rows)},
        cols={c: j for j, c in enumerate(ia.graph.cols)},
        equations={eq.id: eq for eq in model.equations},
        has_if={eq.id: bool(ifs) for eq, ifs in zip(model.equations, model.if_conditions)})


def _certificates(model):
    """The interface certificate of each coarse block of ``model``'s implicit analysis."""
    ia = analyze_implicit(model)
    point = Point(4114, classify_variables(model).types)
    where = _where(model, ia)
    return ia, [(b, conversion._interface_certificate(ia, b, where, point))
                for b in ia.blocks if b.coarse]


def _parallel_clutch(n: int, k: int) -> str:
    """The drive line of ``n`` clutches with a second clutch beside clutch ``k`` (the same two
    shafts, its own input): both engaged, the two equal-speed constraints are one twice (a
    redundant constraint, singular for all values in that run's blocks)."""
    text = gen_modeller.drive_line(n)
    text = text.replace(f"  Real clutch{k}.tau(", f"  input Boolean engage_b(start = false);\n"
                                                  f"  Real twin.tau;\n  Real clutch{k}.tau(", 1)
    old = f"  shaft{k}.flange_b.tau = -clutch{k}.tau;"
    assert old in text
    text = text.replace(old, f"  shaft{k}.flange_b.tau = -clutch{k}.tau - twin.tau;")
    old = f"  shaft{k + 1}.flange_a.tau = clutch{k}.tau;"
    assert old in text
    text = text.replace(old, f"  shaft{k + 1}.flange_a.tau = clutch{k}.tau + twin.tau;")
    return text.replace("end DriveLine", f"""  if engage_b then
    shaft{k}.w = shaft{k + 1}.w;
  else
    twin.tau = 0.0;
  end if;
end DriveLine""")


FAMILIES = {
    "drive_line_6": lambda: gen_modeller.drive_line(6),
    "drive_line_3_time": lambda: gen_modeller.drive_line(3, engage="time"),
    "shaft_tree_6": lambda: gen_modeller.shaft_tree(6),
    "shaft_tree_5": lambda: gen_modeller.shaft_tree(5, seed=3),
}


def _coarse(monkeypatch):
    """Every union component of more than 4 equations scheduled as one coarse block, and no
    split of the check: the certificate decides it (as beyond 64 and 128 equations)."""
    monkeypatch.setattr(implicit_analysis, "conditional_blocks",
                        lambda a: conditional_blocks(a, max_component=4))
    monkeypatch.setattr(conversion, "MAX_SPLIT_MEMBERS", 0)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_certificate_as_the_enumerated_analysis(monkeypatch, family):
    """Drive lines (clutches by inputs and by time windows) and shaft trees up to 2^6 modes,
    their components coarse and unsplit: the certificate shows every mode regular (no
    mode left), and the one analysis gives the enumerated verdict and conversions (none)
    with no W-SINGULAR-UNCHECKED, where the sampled test of one coarse variant left the
    other modes to it."""
    model = _model(FAMILIES[family](), family)
    oracle = convert_singular(model, analyze_modes(model))
    _coarse(monkeypatch)
    ia, certs = _certificates(model)
    assert certs and all(c is not None and c.zero == ia.space.bdd.false for _, c in certs)
    one = analyze(model, implicit=True)
    assert one.accepted and not oracle.rejections
    assert one.conversions == tuple(oracle.conversions) == ()
    assert not any(m.startswith("W-SINGULAR") for m in one.messages)
    monkeypatch.setattr(conversion, "MAX_INTERFACE_ROWS", 0)
    monkeypatch.setattr(conversion, "MAX_COARSE_VARIANTS", 1)
    sampled = analyze(model, implicit=True)
    assert any(m.startswith("W-SINGULAR-UNCHECKED") for m in sampled.messages)


def test_singular_modes_are_rejected_as_the_enumerated_analysis(monkeypatch):
    """A block singular for all values in 8 of the 64 modes of a drive line of 6 clutches
    inside a coarse block: the certificate leaves exactly those modes (the interface row of
    the clutch vanishes there), and the one analysis rejects the model with the enumerated
    analysis' message (its first singular mode, its dependency) and the formula of exactly
    those modes, the formula the split gives the block."""
    model = _model(gen_modeller.drive_line_singular(6, 3), "DriveLine6")
    oracle = analyze(model, implicit=False)
    assert not oracle.accepted and oracle.rejection
    _coarse(monkeypatch)
    ia, [(blk, cert)] = _certificates(model)
    assert cert is not None
    assert ia.space.count(cert.zero) == 8
    # (the if-expression's condition is an atom of its own, its negation printed last)
    assert ia.space.text(cert.zero) == ("(not clutch1.engaged and not clutch2.engaged and "
                                        "clutch3.engaged and not clutch1.engaged or "
                                        "clutch2.engaged)")
    one = analyze(model, implicit=True)
    assert one.rejection == (oracle.rejection + "\n  singular for all values in 8 of 64 "
                             "modes: (not clutch1.engaged and not clutch2.engaged and "
                             "clutch3.engaged and not clutch1.engaged or clutch2.engaged)")


def test_block_formula_is_the_split_formula(monkeypatch):
    """`block_formula` (two labelled searches from the block's first member) gives every
    per-mode block of the drive line of 6 clutches the formula the split gives it
    (`component_blocks`, a search from every member)."""
    model = _model(gen_modeller.drive_line(6), "DriveLine6")
    _coarse(monkeypatch)
    ia = analyze_implicit(model)
    [blk] = [b for b in ia.blocks if b.coarse]
    parts = component_blocks(ia, blk.equations, max_blocks=10 ** 4, max_size=10 ** 6,
                             max_nodes=10 ** 6)
    assert parts is not None and len(parts) > 20
    for p in parts:
        assert block_formula(ia, blk.equations, p.equations, p.unknowns) == p.formula


def test_fifty_clutches_singular_in_some_modes_rejected_with_their_formula():
    """The same defect at clutch 25 of a drive line of 50 (a coarse block of 201 equations,
    2^50 modes; the sampled test missed it and accepted the model with W-SINGULAR-UNCHECKED):
    rejected with the dependency of the two equations, as at 6 clutches, at the first mode
    of the 2^47 modes concerned, whose formula follows."""
    model = _model(gen_modeller.drive_line_singular(50, 25), "DriveLine50")
    eqs = {str(eq.residual): eq.id for eq in model.equations}
    one = analyze(model, implicit=True)
    assert not one.accepted and one.rejection is not None
    first, rest = one.rejection.split("\n")
    assert first.startswith("mode {not clutch1.engaged, not clutch2.engaged, clutch3.engaged, ")
    flange = next(e.id for e in model.equations
                  if "shaft25.flange_b.tau" in repr(e.residual)
                  and "clutch25.tau" in repr(e.residual) and "If" not in repr(e.residual))
    switched = next(e.id for e in model.equations if "If" in repr(e.residual)
                    and "clutch25.tau" in repr(e.residual))
    assert eqs and f"are dependent for all values: 2*{flange} - {switched} = 0" in first
    assert rest == ("  singular for all values in 140737488355328 of 1125899906842624 modes: "
                    "(not clutch1.engaged and not clutch2.engaged and clutch25.engaged and not "
                    "clutch1.engaged or clutch2.engaged)")


def test_redundant_twin_clutch_is_not_certified(monkeypatch):
    """Two clutches between the same shafts: their interface rows are equal, the symmetric
    part of the interface matrix is singular, and the certificate declines (it never shows a
    singular mode regular); the split then decides the block, and the model is rejected with
    the enumerated analysis' message (the redundant speeds in the mode where all are
    engaged), followed by the formula of exactly the modes where both speed constraints hold.
    The split torques of the twins come first in the one analysis' order: their conversion
    leaves the model structurally singular, and the redundant speeds left in that pass are
    the verdict, not that structural singularity."""
    model = _model(_parallel_clutch(4, 2), "DriveLine4")
    oracle = analyze(model, implicit=False)
    monkeypatch.setattr(implicit_analysis, "conditional_blocks",
                        lambda a: conditional_blocks(a, max_component=4))
    ia, certs = _certificates(model)
    assert certs and all(c is None for _, c in certs)
    one = analyze(model, implicit=True)
    assert not oracle.accepted and not one.accepted
    assert oracle.rejection is not None and one.rejection is not None
    assert oracle.rejection.startswith("mode {clutch1.engaged, clutch2.engaged, clutch3.engaged, "
                                       "clutch4.engaged, engage_b}: equations e28 ")
    assert "they are redundant" in oracle.rejection
    assert one.rejection == (oracle.rejection + "\n  singular for all values in 8 of 32 modes: "
                             "(clutch2.engaged and engage_b)")
    assert not one.conversions and not oracle.conversions


def test_run_determinant_closed_form():
    """The closed form behind the drive line's certificate: the Jacobian of a run of p
    shafts rigidly engaged (rows J_k w'_k = a_k + b_k, b_k = -t_k, a_(k+1) = t_k,
    w'_k = w'_(k+1); columns w', a, b, t) has determinant ±(J_1 + ... + J_p), and the
    interface matrix of the certificate (the Schur complement on the t) is the weighted
    path Laplacian, symmetric positive definite for positive inertias."""
    rng = np.random.default_rng(4)
    for p in range(2, 7):
        J = rng.uniform(0.5, 1.5, p)
        n_t = p - 1
        # columns: w'(p), a(p-1: shafts 2..p), b(p-1: shafts 1..p-1), t(p-1)
        cols = p + 3 * n_t
        rows = []
        for k in range(p):
            r = np.zeros(cols)
            r[k] = J[k]
            if k > 0:
                r[p + k - 1] = -1.0
            if k < p - 1:
                r[p + n_t + k] = -1.0
            rows.append(r)
        for k in range(n_t):
            r = np.zeros(cols)
            r[p + n_t + k] = 1.0
            r[p + 2 * n_t + k] = 1.0
            rows.append(r)
            r = np.zeros(cols)
            r[p + k] = 1.0
            r[p + 2 * n_t + k] = -1.0
            rows.append(r)
        for k in range(n_t):
            r = np.zeros(cols)
            r[k], r[k + 1] = 1.0, -1.0
            rows.append(r)
        M = np.array(rows)
        assert abs(abs(np.linalg.det(M)) - J.sum()) < 1e-12 * J.sum()
        fixed = M[:p + 2 * n_t, :p + 2 * n_t]
        schur = M[p + 2 * n_t:, p + 2 * n_t:] - M[p + 2 * n_t:, :p + 2 * n_t] @ np.linalg.solve(
            fixed, M[:p + 2 * n_t, p + 2 * n_t:])
        lap = np.zeros((n_t, n_t))
        for k in range(n_t):
            lap[k, k] = 1 / J[k] + 1 / J[k + 1]
            if k + 1 < n_t:
                lap[k, k + 1] = lap[k + 1, k] = -1 / J[k + 1]
        assert np.allclose(schur, -lap) or np.allclose(schur, lap)
        assert np.all(np.linalg.eigvalsh(lap) > 0)
