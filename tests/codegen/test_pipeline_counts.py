"""Counted, not timed: the analysis does only the symbolic work the theory asks for, and the
export consumes the analysis instead of re-running it (issue 16).

The model is a chain of masses with a nonlinear algebraic loop per mass and a Cartesian
pendulum (index 2: its rod constraint is differentiated twice, its two kinematic equations
once; docs/theory.md §4.6), the small form of benchmarks/gen_chain.loop_chain_model.
"""

from __future__ import annotations

import pytest
from pathlib import Path

from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.symbolic import SymbolTable


def loop_chain(n: int) -> str:
    lines = ["class LoopChain", "  parameter Real k = 100.0;", "  parameter Real d = 0.5;",
             "  parameter Real c = 0.2;", "  parameter Real L = 1.0;", "  parameter Real g = 9.81;"]
    for i in range(1, n + 1):
        lines += [f"  Real x{i}(start = {0.1 * i}, fixed = true);",
                  f"  Real v{i}(start = 0.0, fixed = true);",
                  f"  Real u{i}(start = {0.1 * i});", f"  Real w{i}(start = 0.0);"]
    lines += ["  Real px(start = 0.6, fixed = true);", "  Real py(start = -0.8);",
              "  Real pvx(start = 0.0, fixed = true);", "  Real pvy(start = 0.0);",
              "  Real lambda;", "equation"]
    for i in range(1, n + 1):
        left = f"x{i - 1}" if i > 1 else "0.0"
        right = f"k * (x{i + 1} - x{i})" if i < n else f"k * (1.0 - x{i})"
        lines += [f"  der(x{i}) = v{i};",
                  f"  der(v{i}) = {right} - k * (x{i} - {left}) - d * v{i} - c * w{i};",
                  f"  u{i} + 0.5 * w{i} = x{i};", f"  w{i} - 0.3 * sin(u{i}) = v{i};"]
    lines += ["  der(px) = pvx;", "  der(py) = pvy;",
              f"  der(pvx) = (-lambda) * px + c * x{n};", "  der(pvy) = (-lambda) * py - g;",
              "  px ^ 2 + py ^ 2 = L ^ 2;", "end LoopChain;"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def conversions(monkeypatch):
    """Counts the expression trees converted to sympy (`SymbolTable.to_sympy` calls that are
    not memo hits)."""
    seen = []
    original = SymbolTable.to_sympy

    def counting(self, e):
        hit = self._memo.get(id(e))
        if hit is None or hit[0] is not e:
            seen.append(e)
        return original(self, e)

    monkeypatch.setattr(SymbolTable, "to_sympy", counting)
    return seen


@pytest.mark.parametrize("n", [3, 30])
def test_analysis_converts_only_differentiated_equations(conversions, n):
    from mdae_fmu.analysis import analyze
    model = parse_modelica(loop_chain(n))
    analysis = analyze(model)             # per-mode structure and the mode-change stage
    report = analysis.modes
    assert analysis.accepted and report.exit_code == 0
    mode, = report.modes
    differentiated = sorted(i for i, c in mode.c.items() if c > 0)
    # the pendulum: its two kinematic equations once, the rod constraint twice
    assert len(differentiated) == 3 and max(mode.c.values()) == 2
    assert len(conversions) == len(differentiated)      # independent of n
    # the undifferentiated equations still give their sympy form when a consumer asks
    first = next(le for le in mode.solved if le.eq_id not in differentiated)
    assert not first.converted
    assert first.expr.free_symbols and first.converted
    assert len(conversions) == len(differentiated) + 1



@pytest.mark.parametrize("n", [3, 30])
def test_sigma_method_runs_once_per_mode(monkeypatch, n):
    """The mode-change stage reuses the per-mode stage's Σ offsets (`sigma_from_report`) and
    builds the steady run from them without a DM (`steady_run`); its initialization check
    takes a DM on the consistency part alone: one Σ-method for the one mode, and DM graphs
    whose size does not grow with the chain."""
    import mdae_fmu.modes.runs as runs
    import mdae_fmu.structure.keyed as keyed
    import mdae_fmu.structure.per_mode as per_mode
    from mdae_fmu.analysis import analyze
    sigma_runs, dm_sizes = [], []
    real_sigma, real_dm = per_mode.sigma_method, keyed.dm

    def counting_sigma(g, *args, **kwargs):
        sigma_runs.append(g.n_eqs)
        return real_sigma(g, *args, **kwargs)

    def counting_dm(eqs, occ, unknowns):
        dm_sizes.append(len(eqs))
        return real_dm(eqs, occ, unknowns)

    for module in (per_mode, keyed):
        monkeypatch.setattr(module, "sigma_method", counting_sigma)
    for module in (keyed, runs):
        monkeypatch.setattr(module, "dm", counting_dm)
    analysis = analyze(parse_modelica(loop_chain(n)))
    assert analysis.accepted
    assert sigma_runs == [4 * n + 5]
    # the rod constraint, its derivative, the two kinematic equations, and the start values of
    # px and pvx (the fixed positions and velocities of the chain no consistency equation reads)
    assert dm_sizes == [6]


def test_analyze_without_guards_does_not_import_networkx(tmp_path):
    """networkx (about 0.1 s to import) serves the guards, when-clauses and discrete equations:
    ``mdae-fmu analyze`` of a model with none of them does not import it (a fresh process)."""
    import os
    import subprocess
    import sys
    src = tmp_path / "LoopChain.mo"
    src.write_text(loop_chain(3))
    code = ("import sys\nfrom mdae_fmu.cli import main\nrc = main(['analyze', sys.argv[1]])\n"
            "print('networkx' in sys.modules, rc, file=sys.stderr)")
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-c", code, str(src)], capture_output=True, text=True,
                         cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert res.stderr.strip().splitlines()[-1] == "False 0"
    assert "verdict: accepted" in res.stdout


# --- import structure: the stages import one way (issue 16 item 1) ---------------------------

def _imports(path) -> set[str]:
    """Modules of mdae_fmu that ``path`` imports anywhere (module level or inside functions)."""
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    rel = Path(path).resolve().relative_to(root).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("mdae_fmu")}


def _package_imports(pkg: str) -> set[str]:
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "mdae_fmu" / pkg
    return set().union(*(_imports(p) for p in root.glob("*.py")))


def test_no_import_cycles_between_stages():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "mdae_fmu"
    assert not any(m.startswith("mdae_fmu.codegen.restarts")
                   for m in _imports(root / "codegen" / "plan.py"))
    assert not any(m.startswith("mdae_fmu.modes") for m in _package_imports("impulse"))
    # model_description names the version without importing the package API (-> export)
    assert "mdae_fmu" not in _imports(root / "fmu" / "model_description.py")
    assert not any(m.startswith("mdae_fmu.api") for m in _package_imports("fmu"))


# --- one analysis, one verdict (issue 16 item 1) ---------------------------------------------

TWO_WHEN = """model TwoWhen
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when {time > 0.1, time > 0.2} then
    reinit(x, x + 1);
  end when;
end TwoWhen;
"""


def test_export_and_analyze_give_one_verdict(tmp_path, capsys):
    """A model the mode-change analysis rejects (the elastic Cup-and-Ball without its impact
    law: E-TRANSIENT-UNDER) is rejected by export with the same diagnostics and no FMU; the
    vector when-clause, which both once disagreed on, is accepted by both."""
    from mdae_fmu.cli import main as cli_main
    src = tmp_path / "NoLaw.mo"
    src.write_text((Path(__file__).resolve().parents[2] / "reference_models"
                    / "CupAndBallElasticNoLaw.mo").read_text())
    assert cli_main(["analyze", str(src)]) == 1
    verdict = capsys.readouterr().out.split("verdict: rejected\n", 1)[1].strip()
    assert verdict.startswith("E-TRANSIENT-UNDER")
    out = tmp_path / "NoLaw.fmu"
    assert cli_main(["export", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "rejected by the analysis" in err and verdict in err
    assert "Traceback" not in err and not out.exists()
    two = tmp_path / "TwoWhen.mo"
    two.write_text(TWO_WHEN)
    assert cli_main(["analyze", str(two)]) == 0
    assert cli_main(["export", str(two), "-o", str(tmp_path / "TwoWhen.fmu")]) == 0


def test_export_consumes_the_given_analysis(tmp_path, monkeypatch):
    """With the analysis given, the exporter runs no analysis stage; the options of analyze
    (here the canonical erasure rule) are the exporter's too."""
    import mdae_fmu.analysis as A
    import mdae_fmu.modes as M
    import mdae_fmu.modes.explore as X
    import mdae_fmu.structure.per_mode as P
    from mdae_fmu import api
    model = parse_modelica(loop_chain(2))
    analysis = api.analyze(model, erasure="canonical")
    assert analysis.accepted

    def forbidden(*a, **k):
        raise AssertionError("an analysis stage ran again during code generation")

    # (`analysis` reads `analyze_multimode` from mdae_fmu.modes when it needs it)
    for mod, name in ((P, "analyze_modes"), (X, "analyze_multimode"), (A, "analyze_modes"),
                      (M, "analyze_multimode")):
        monkeypatch.setattr(mod, name, forbidden)
    path = api.export_fmu(model, tmp_path / "L.fmu", analysis=analysis)
    monkeypatch.undo()
    # the same FMU, byte for byte, as the export that runs the analysis itself
    again = api.export_fmu(model, tmp_path / "L2.fmu", erasure="canonical")
    assert path.read_bytes() == again.read_bytes()
    with pytest.raises(ValueError, match="the analysis is of model LoopChain"):
        api.export_fmu(parse_modelica(TWO_WHEN), tmp_path / "T.fmu", analysis=analysis)


def test_block_jacobian_equals_sympy_diff():
    """`partial_derivative` (the Newton blocks' Jacobian) against ``sympy.diff``."""
    import sympy as sp
    from mdae_fmu.codegen.blocks import partial_derivative
    u, v, w, p = sp.symbols("u v w p", real=True)
    cases = [w - sp.Float(0.3) * sp.sin(u) - v, u ** 2 * sp.exp(u * v) + p / u,
             sp.sqrt(u ** 2 + w ** 2) - p, sp.Abs(u) * v + sp.atan2(u, v),
             sp.Piecewise((u ** 3, v > 0), (-u, True)), u ** u + sp.log(u * w), p * v]
    for e in cases:
        for x in (u, v, w):
            assert sp.simplify(partial_derivative(e, x) - sp.diff(e, x)) == 0, (e, x)


# --- code generation on the expression tree (issue 16 item 2) --------------------------------

def test_tree_solution_solves_the_residual():
    """`tree_solution` (explicit blocks solved on the expression tree) against sympy: the
    residual vanishes at the solution; non-linear or non-arithmetic residuals are refused."""
    import sympy as sp
    from mdae_fmu.codegen.blocks import tree_solution
    from mdae_fmu.importers.flat_modelica import parse_expression
    from mdae_fmu.symbolic import SymbolTable
    table = SymbolTable(constants=frozenset({"k", "m"}))
    u = table.sym("u", 1)
    for text in ["m * der(u) - (k * (x - y) - 0.5 * v)", "der(u) - v", "-(der(u)) + 3 * x",
                 "(x - der(u)) / m - sin(y)", "k * (2 * der(u) + x) - y ^ 2",
                 "der(u) * k / m + x"]:
        res = parse_expression(text)
        sol = tree_solution(res, ("u", 1))
        assert sol is not None, text
        r = table.to_sympy(res)
        assert sp.simplify(r.subs(u, table.to_sympy(sol))) == 0, text
    for text in ["der(u) * der(u) - x", "sin(der(u)) - x", "x / der(u) - 1",
                 "(if x > 0 then der(u) else 0) - x", "der(u) ^ 2 - x", "x - y"]:
        assert tree_solution(parse_expression(text), ("u", 1)) is None, text


def test_codegen_converts_only_blocks_that_need_sympy(conversions):
    """Code generation converts no equation of an extra mass of the chain: its four explicit
    equations and its algebraic loop (a two-equation Newton block, residuals and Jacobian
    printed from the tree by `mdae_fmu.codegen.treeblock`) never reach sympy; only the
    pendulum's blocks, which hold differentiated equations, do."""
    from mdae_fmu.analysis import analyze
    from mdae_fmu.codegen.emit import generate_sources
    from mdae_fmu.codegen.events import plan_events
    from mdae_fmu.codegen.initialization import plan_initialization
    from mdae_fmu.codegen.plan import compile_model
    from mdae_fmu.codegen.restarts import with_transient_restarts
    from mdae_fmu.fmu.dependencies import model_structure
    counts = []
    for n in (3, 6):
        model = parse_modelica(loop_chain(n))
        a = analyze(model)
        del conversions[:]
        cm = with_transient_restarts(model, compile_model(model, a.modes), a.automaton)
        ev = plan_events(model, cm)
        init = plan_initialization(model, cm)
        model_structure(cm, [cm.blocks], init=init)
        sources = generate_sources(cm, ev, init, "{guid}")
        # readable C: each block names what it solves for (model names, escaped in comments)
        text = "".join(sources.values())
        assert "-> der(x1) (explicit) */" in text
        assert "(newton)" in text and "_jacobian(const" in text
        counts.append(len(conversions))
    assert counts[1] == counts[0] <= 2


def test_tree_derivative_equals_sympy_diff():
    """`treeblock.tree_derivative` (Jacobians of blocks kept on the tree) against
    ``sympy.diff`` of the converted residual, and `tree_jacobian`'s linear/Newton verdict
    against the sympy block classification."""
    import sympy as sp
    from mdae_fmu.codegen.blocks import BlockPlan, classify
    from mdae_fmu.codegen.treeblock import plain, tree_derivative, tree_jacobian
    from mdae_fmu.importers.flat_modelica import parse_expression
    table = SymbolTable(constants=frozenset({"k", "m"}))
    insts = [("u", 0), ("w", 0), ("u", 1)]
    cases = ["w - 0.3 * sin(u) - v", "u ^ 2 * exp(u * w) + k / u", "sqrt(u ^ 2 + w ^ 2) - k",
             "tan(u) * cosh(w) - sinh(der(u)) / m", "log(u * w) + tanh(u) - atan(w)",
             "asin(u / 2) + acos(w / 3) + u ^ 3.5 - 2 ^ w", "-(u - w) / (k + u) + 1 / w",
             "k * (2 * der(u) + u) - w ^ 0.5", "m * der(u) - (k * (x - u) - 0.5 * w)"]
    for text in cases:
        tree = parse_expression(text)
        assert plain(tree), text
        r = table.to_sympy(tree)
        for inst in insts:
            d = tree_derivative(tree, inst)
            expect = sp.diff(r, table.sym(*inst))
            got = sp.Integer(0) if d is None else table.to_sympy(d)
            assert sp.simplify(got - expect) == 0, (text, inst)
    for texts in (["u + 0.5 * w - x", "w - 0.3 * sin(u) - v"], ["u + w - x", "u - x * w - 2"],
                  ["u * w - x", "u - w"], ["k * u / m + sin(x) * w", "(u - w) / k - 1"]):
        trees = [parse_expression(t) for t in texts]
        kind, _ = tree_jacobian(trees, [("u", 0), ("w", 0)])
        us = (table.sym("u"), table.sym("w"))
        assert kind == classify(
            BlockPlan(label="b", unknowns=us, _residuals=tuple(table.to_sympy(t) for t in trees))
        )
    assert not plain(parse_expression("if x > 0 then u else w"))
    assert tree_jacobian([parse_expression("abs(u) - x")], [("u", 0)]) is None
