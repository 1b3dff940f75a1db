"""The runtime's sparse LU (templates/mdae_sparse.c, issue 26 Deliver 4) against numpy, and
the guarded FMUs whose merged blocks it solves.

The C solver is compiled with a small driver that feeds it matrices of the shapes the merged
blocks have (a chain of clutches, an arrow such as the diode bank's current balance, random
sparse ones with badly scaled rows), with values that change on a fixed pattern (the factors
are reused or recomputed along the kept pivot order) and patterns that change (a new mode: a
new pivot order); every solution is checked against numpy's dense solve, and a singular
matrix must reach the dense least-squares fallback. Then a drive line written the way a
modeller writes it (benchmarks/gen_modeller.py), merged into one block and switched at random
by the host, must conserve its angular momentum sum J_k w_k across every event, and the merged
clutch chain must give the same trajectory solved sparse as solved dense."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mdae_fmu.fmu.build import fmi_header_dir

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mdae_model.h"

const char *const mdae_block_labels[] = {"test block"};
const MdaeModelInfo mdae_info = {.guid = "test", .nr = N_OF_TEST, .newton_maxit = 50};
static double *values, *rhs;
static int singular;

void mdae_log(ModelInstance *inst, int category, fmi2Status status, const char *fmt, ...)
{
    (void)inst; (void)category; (void)status;
    printf("log %s\n", fmt);
}

int mdae_linear_singular(ModelInstance *inst, int n, const int *u, int block)
{
    (void)inst; (void)n; (void)u; (void)block;
    singular = 1;
    return 1;
}

int mdae_singular_step(int n, const double *J, const double *F, double *M, double *dx,
                       int *perm)
{
    (void)n; (void)J; (void)F; (void)M; (void)dx; (void)perm;
    return 1;
}

int mdae_store_solution(ModelInstance *inst, int n, const int *u, const double *x, int block)
{
    int k;
    (void)block;
    for (k = 0; k < n; k++) inst->d.r[u[k]] = x[k];
    return 0;
}

double mdae_norm_inf(int n, const double *v)                               /* not called */
{
    (void)n; (void)v;
    return 0.0;
}

double mdae_newton_step_size(int n, const double *dx, const double *x)   /* not called */
{
    (void)n; (void)dx; (void)x;
    return 0.0;
}

double mdae_newton_damped(ModelData *d, int n, const int *u,                 /* not called */
                          void (*residual)(const ModelData *, double *), const double *x0,
                          const double *dx, double *F, double fn)
{
    (void)d; (void)n; (void)u; (void)residual; (void)x0; (void)dx; (void)F;
    return fn;
}

static void test_system(const ModelData *d, double *a, double *c)
{
    (void)d;
    memcpy(a, values, sizeof(double) * (size_t)NNZ_OF_TEST);
    memcpy(c, rhs, sizeof(double) * (size_t)N_OF_TEST);
}

int main(void)
{
    static ModelInstance inst;
    int n, nnz, cases, k, t, *row, *col, *u;
    if (scanf("%d %d %d", &n, &nnz, &cases) != 3) return 2;
    row = malloc(sizeof(int) * nnz); col = malloc(sizeof(int) * nnz);
    u = malloc(sizeof(int) * n);
    values = malloc(sizeof(double) * nnz); rhs = malloc(sizeof(double) * n);
    inst.work = malloc(sizeof(double) * (2 * n * n + 5 * n));
    inst.iwork = malloc(sizeof(int) * n);
    inst.d.r = malloc(sizeof(double) * n);
    for (k = 0; k < nnz; k++) if (scanf("%d %d", &row[k], &col[k]) != 2) return 2;
    for (k = 0; k < n; k++) u[k] = k;
    {
        MdaeSparsePattern p = {n, nnz, row, col, 3};
        for (t = 0; t < cases; t++) {
            for (k = 0; k < nnz; k++) if (scanf("%lf", &values[k]) != 1) return 2;
            for (k = 0; k < n; k++) if (scanf("%lf", &rhs[k]) != 1) return 2;
            singular = 0;
            if (mdae_sparse_linear_block(&inst, &p, u, test_system, 0)) {
                printf("%s\n", singular ? "singular" : "failed");
                continue;
            }
            for (k = 0; k < n; k++) printf("%.17g ", inst.d.r[k]);
            printf("\n");
        }
    }
    mdae_sparse_free(&inst);
    return 0;
}
"""

CONFIG = """#define MDAE_GUID "test"
#define MDAE_NR {n}
#define MDAE_NI 1
#define MDAE_NB 1
#define MDAE_NX 1
#define MDAE_NZ 1
#define MDAE_NREL 1
#define MDAE_NWHEN 1
#define MDAE_NSAMPLE 1
#define MDAE_NASSIGN 1
#define MDAE_NWLOOP 1
#define MDAE_NCONS 1
#define MDAE_NBLOCKS 1
#define MDAE_STR_MAX_WIDTH 1
#define MDAE_STR_MAX_DIGITS 1
#define MDAE_NEWTON_MAXIT 50
"""


@pytest.fixture(scope="module")
def solver(tmp_path_factory):
    """``solve(pattern, [(values, rhs)]) -> [x or "singular"]`` through the compiled C."""
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    d = tmp_path_factory.mktemp("sparse")
    built: dict = {}

    def solve(n, pattern, cases):
        nnz = len(pattern)
        if (n, nnz) not in built:
            src = d / f"drv_{n}_{nnz}.c"
            src.write_text(DRIVER.replace("NNZ_OF_TEST", str(nnz)).replace("N_OF_TEST", str(n)))
            inc = d / f"inc_{n}"
            inc.mkdir(exist_ok=True)
            (inc / "config.h").write_text(CONFIG.format(n=n))
            (inc / "mdae_functions.h").write_text("")
            exe = d / f"drv_{n}_{nnz}"
            subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-O1", f"-I{inc}",
                            f"-I{ROOT / 'templates'}", f"-I{fmi_header_dir()}", "-o", str(exe),
                            str(src), str(ROOT / "templates" / "mdae_sparse.c"), "-lm"],
                           check=True)
            built[(n, nnz)] = exe
        lines = [f"{n} {nnz} {len(cases)}"] + [f"{i} {j}" for i, j in pattern]
        for vals, c in cases:
            lines.append(" ".join(repr(float(v)) for v in vals))
            lines.append(" ".join(repr(float(v)) for v in c))
        out = subprocess.run([str(built[(n, nnz)])], input="\n".join(lines) + "\n",
                             capture_output=True, text=True, check=True).stdout.split("\n")
        return [line.strip() if line.strip() in ("singular", "failed")
                else np.array([float(x) for x in line.split()]) for line in out[:len(cases)]]
    return solve


def _dense(n, pattern, vals):
    A = np.zeros((n, n))
    for (i, j), v in zip(pattern, vals):
        A[i, j] += v
    return A


def _clutch_pattern(m):
    """The merged clutch chain of m clutches: rows s_i (J_i w_i' + c_i - c_{i-1}) and e_i
    (engaged: w_i' - w_{i+1}'; free: c_i), unknowns w_0' .. w_m', c_0 .. c_{m-1}; the
    values of a mode select one of the two pieces of each e_i."""
    pat = []
    for i in range(m + 1):
        pat.append((i, i))
        if i < m:
            pat.append((i, m + 1 + i))
        if i > 0:
            pat.append((i, m + i))
    for i in range(m):
        pat += [(m + 1 + i, i), (m + 1 + i, i + 1), (m + 1 + i, m + 1 + i)]
    return pat


def _clutch_values(m, engaged, J):
    vals = []
    for i in range(m + 1):
        vals.append(J[i])
        if i < m:
            vals.append(1.0)
        if i > 0:
            vals.append(-1.0)
    for g in engaged:
        vals += [1.0, -1.0, 0.0] if g else [0.0, 0.0, 1.0]
    return vals


def test_clutch_chain_modes_against_numpy(solver):
    """Modes of a chain of 40 clutches one after the other (a new pivot order at each change
    of pattern), with right-hand sides that change while the mode does not (the factors
    reused), including every clutch engaged (one block of 81 unknowns)."""
    m = 40
    n = 2 * m + 1
    rng = np.random.default_rng(1)
    J = rng.uniform(0.5, 2.0, m + 1)
    pat = _clutch_pattern(m)
    modes = [[False] * m, [True] * m] + [list(rng.random(m) < p) for p in (0.2, 0.5, 0.9)]
    cases = []
    for g in modes:
        vals = _clutch_values(m, g, J)
        cases += [(vals, rng.normal(size=n)) for _ in range(3)]
    got = solver(n, pat, cases)
    for (vals, c), x in zip(cases, got):
        want = np.linalg.solve(_dense(n, pat, vals), c)
        assert isinstance(x, np.ndarray)
        np.testing.assert_allclose(x, want, rtol=1e-11, atol=1e-12)


def test_arrow_and_random_patterns_against_numpy(solver):
    """An arrow (one row and one column coupling all, as the diode bank's current balance and
    node voltage) and random sparse matrices with rows scaled from 1e-6 to 1e6, whose values
    change on the same pattern (the kept pivot order reused when its pivots pass the
    threshold, chosen again when they do not) and then lose entries (a new pattern)."""
    rng = np.random.default_rng(7)
    n = 30
    arrow = [(i, i) for i in range(n)] + [(i, n - 1) for i in range(n - 1)] \
        + [(n - 1, j) for j in range(n - 1)]
    rand = sorted({(i, i) for i in range(n)}
                  | {(int(rng.integers(n)), int(rng.integers(n))) for _ in range(4 * n)})
    for pat in (arrow, rand):
        cases = []
        for trial in range(6):
            vals = rng.normal(size=len(pat))
            scale = 10.0 ** rng.uniform(-6, 6, n)
            vals = [v * scale[i] for (i, _), v in zip(pat, vals)]
            if trial >= 4:      # a new mode: some entries vanish (not the diagonal)
                vals = [0.0 if i != j and rng.random() < 0.3 else v
                        for (i, j), v in zip(pat, vals)]
            cases.append((vals, rng.normal(size=n)))
            cases.append((vals, rng.normal(size=n)))
        got = solver(n, pat, cases)
        for (vals, c), x in zip(cases, got):
            A = _dense(n, pat, vals)
            want = np.linalg.solve(A, c)
            assert isinstance(x, np.ndarray)
            # backward error: the residual relative to |A| |x| + |c|, row by row
            res = np.abs(A @ x - c) / (np.abs(A) @ np.abs(x) + np.abs(c))
            assert res.max() <= 1e-12
            np.testing.assert_allclose(x, want, rtol=1e-7, atol=1e-9)


def test_singular_matrices_reach_the_dense_fallback(solver):
    """Structurally singular (an empty column), numerically singular (two equal rows) and a
    regular matrix after them: the first two go to `mdae_linear_singular`, the third is
    solved (the kept factorization of a failed matrix is not reused)."""
    n = 3
    pat = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 2), (2, 0)]
    cases = [([1.0, 2.0, 3.0, 4.0, 0.0, 1.0], [1.0, 2.0, 3.0]),
             ([1.0, 2.0, 2.0, 4.0, 5.0, 1.0], [1.0, 2.0, 3.0]),
             ([1.0, 2.0, 3.0, 4.0, 5.0, 1.0], [1.0, 2.0, 3.0])]
    got = solver(n, pat, cases)
    assert got[0] == "singular" and got[1] == "singular"
    np.testing.assert_allclose(got[2], np.linalg.solve(_dense(n, pat, cases[2][0]),
                                                       cases[2][1]), rtol=1e-13, atol=1e-14)


@pytest.fixture
def merged(monkeypatch):
    """Every coupled component of the guarded schedule as one merged block (no variants)."""
    pytest.importorskip("dd")
    from mdae_fmu.implicit import variants
    monkeypatch.setattr(variants, "MAX_VARIANTS", 0)


def test_drive_line_conserves_angular_momentum_across_random_switchings(tmp_path, merged):
    """The modeller's drive line of 8 clutches (9 shafts, random inertias), its whole chain one
    merged block solved by the sparse LU, with 30 random host switchings of the clutches in
    10 s: across every event the total angular momentum sum J_k w_k is continuous to 1e-10
    relative (the restart of RR-9334's ideal clutch: the engaged shafts take their
    inertia-weighted mean; the torques of the dampers, the drive and the load are bounded)."""
    from fmpy import simulate_fmu

    import mdae_fmu
    from gen_modeller import drive_line, random_switchings
    from mdae_fmu.fmu.export import export
    n = 8
    text = drive_line(n, "input")
    J = [float(re.search(rf"shaft{k}\.J\(unit = \"kg.m2\"\) = ([0-9.e-]+)", text).group(1))
         for k in range(1, n + 2)]
    src = tmp_path / f"DriveLine{n}.mo"
    src.write_text(text)
    path = export(mdae_fmu.load(src), tmp_path / "dl.fmu", implicit=True, progress=False)
    with zipfile.ZipFile(path) as z:
        c = "".join(z.read(f).decode() for f in z.namelist() if f.startswith("sources/model_g"))
    assert "mdae_sparse_linear_block" in c
    table = random_switchings([f"engage[{k}]" for k in range(1, n + 1)], 30, 10.0, seed=4)
    r = simulate_fmu(str(path), stop_time=10.0, relative_tolerance=1e-8, output_interval=0.05,
                     input=table, output=[f"shaft{k}.w" for k in range(1, n + 2)],
                     record_events=True)
    L = sum(Jk * r[f"shaft{k}.w"] for k, Jk in enumerate(J, 1))
    t = r["time"]
    events = [k for k in range(1, len(t)) if t[k] == t[k - 1]]
    assert len(events) >= 25          # (switchings closer than an output row share one)
    moved = 0
    for k in events:
        assert abs(L[k] - L[k - 1]) <= 1e-10 * abs(L[k - 1])
        moved += any(r[f"shaft{j}.w"][k] != r[f"shaft{j}.w"][k - 1] for j in range(1, n + 2))
    assert moved >= 10                 # the engagements did move the speeds


def test_if_equation_branches_share_a_row_of_the_merged_block(tmp_path, merged, monkeypatch):
    """The drive line's clutches are if-equations (``if engaged then w_k = w_k+1 else tau = 0``:
    two equations, each existing in the modes of one branch). Merged, the whole chain is ONE
    block whose rows pair the two branches of each clutch (`merged.row_groups`), and its
    trajectory under random host switching equals that of the block variants listed per mode
    (fixed-step Euler: the same steps, so equal to rounding)."""
    from fmpy import simulate_fmu

    import mdae_fmu
    import mdae_fmu.codegen.guarded as guarded
    from gen_modeller import drive_line, random_switchings
    from mdae_fmu.fmu.export import export
    from mdae_fmu.implicit import variants
    from mdae_fmu.implicit.analysis import analyze_implicit
    n = 4
    src = tmp_path / f"DriveLine{n}.mo"
    src.write_text(drive_line(n, "input", seed=2))
    model = mdae_fmu.load(src)
    plan = guarded.plan_guarded(model, variants.guarded_schedule(model,
                                                                 analyze_implicit(model)))
    big = max(plan.blocks, key=lambda gb: len(gb.plan.unknowns))
    assert big.merged
    assert {f"clutch{k}.tau" for k in range(1, n + 1)} <= {str(u) for u in big.plan.unknowns}
    assert len(big.plan.residuals) == len(big.plan.unknowns) == len(big.origin[0]) - n
    table = random_switchings([f"engage[{k}]" for k in range(1, n + 1)], 30, 10.0, seed=5)
    runs = []
    for max_variants in (0, 10 ** 6):
        monkeypatch.setattr(variants, "MAX_VARIANTS", max_variants)
        path = export(model, tmp_path / f"dl{max_variants}.fmu", implicit=True, progress=False)
        runs.append(simulate_fmu(str(path), stop_time=10.0, solver="Euler", step_size=1e-3,
                                 output_interval=0.05, input=table, record_events=True,
                                 output=[f"shaft{k}.w" for k in range(1, n + 2)]))
    a, b = runs
    assert len(a) == len(b)
    for name in a.dtype.names:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-12)


def _stiffening_chain(n: int):
    """The clutch chain (`gen_multimode.clutch_chain`) with inertias that grow with the
    speed, (J_i + 0.1 w_i^2) w_i' (the coefficients of the merged block read the states, so its
    matrix changes at every evaluation), whose restart (J_i + 0.1 X_i^2) (X_i - X_i^-) = ... is
    nonlinear in the right limits X_i (a Newton block)."""
    from dataclasses import replace

    from gen_multimode import clutch_chain
    from multimode_examples import eq
    model = clutch_chain(n)
    eqs = []
    for e in model.equations:
        if e.id.startswith("s"):
            i = int(e.id[1:])
            torque = " + ".join(([f"c{i - 1}"] if i > 0 else []) + ([f"-c{i}"] if i < n else []))
            e = eq(e.id, f"(J{i} + 0.1*w{i}*w{i})*der(w{i}) = -k{i}*w{i} + {torque}")
        eqs.append(e)
    return replace(model, name=f"StiffeningChain{n}", equations=tuple(eqs))


def test_state_dependent_and_newton_blocks_agree_with_dense(tmp_path, merged, monkeypatch):
    """Merged and solved sparse (the block's matrix refactored along its kept pivot order at
    every evaluation, its restart by the sparse Newton with the kept factors tried first) the
    stiffening chain follows, step for step, the same chain merged and solved dense."""
    from fmpy import simulate_fmu

    import mdae_fmu.codegen.blocks as blocks
    from gen_modeller import random_switchings
    from mdae_fmu.analysis import analyze
    from mdae_fmu.fmu.export import export
    n = 4
    model = _stiffening_chain(n)
    table = random_switchings([f"g{i}" for i in range(n)], 20, 6.0, seed=3)
    # one analysis for both exports, as `export` computes it (SPARSE_MIN is read by the code
    # generation only): the analysis, with its automaton of 16 modes, is nearly all the time
    analysis = analyze(model, implicit=True, full=False)
    runs = []
    for smallest in (2, 10 ** 6):
        monkeypatch.setattr(blocks, "SPARSE_MIN", smallest)
        path = export(model, tmp_path / f"sc{smallest}.fmu", analysis=analysis,
                      implicit=True, progress=False)
        with zipfile.ZipFile(path) as z:
            c = "".join(z.read(f).decode() for f in z.namelist() if f.startswith("sources/"))
        assert ("mdae_sparse_newton_block(inst" in c) == (smallest == 2)
        runs.append(simulate_fmu(str(path), stop_time=6.0, solver="Euler", step_size=1e-3,
                                 output_interval=0.02, input=table, record_events=True,
                                 output=[f"w{i}" for i in range(n + 1)]))
    a, b = runs
    assert len(a) == len(b)
    for name in a.dtype.names:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-9, atol=1e-10)
    assert max(np.ptp(a[f"w{i}"]) for i in range(n + 1)) > 0.1
