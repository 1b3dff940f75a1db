"""Export benchmark: parse -> .fmu (gcc included) for a scalable model.

The model is a chain of N masses between two walls, coupled by linear springs and dampers,
written as flat Modelica (2 N equations, 2 N states):

    der(x[i]) = v[i];
    m * der(v[i]) = k * (x[i-1] - 2 x[i] + x[i+1]) - c * v[i] + f[i];
    f[i] = a * sin(x[i])          (one algebraic variable per mass: 3 N equations)

Usage: python benchmarks/export_bench.py [--synthetic-analysis] [N_EQUATIONS ...]
(default 1000 10000 100000). ``--synthetic-analysis`` replaces the structural analysis by
its known result (`chain_report`) to time this exporter's own stages at large sizes.
Prints a table: equations, seconds per stage, total, and whether the FMU simulates.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def chain_model(n: int) -> str:
    """Flat Modelica text of the chain with ``n`` masses (3 n equations)."""
    lines = ["class Chain \"mass-spring-damper chain\"",
             "  parameter Real m = 1.0;", "  parameter Real k = 100.0;",
             "  parameter Real c = 0.5;", "  parameter Real a = 0.1;"]
    for i in range(1, n + 1):
        start = 0.1 if i == 1 else 0.0
        lines.append(f"  Real x{i}(start = {start}, fixed = true);")
        lines.append(f"  Real v{i}(start = 0.0, fixed = true);")
        lines.append(f"  Real f{i};")
    lines.append("equation")
    for i in range(1, n + 1):
        left = f"x{i - 1}" if i > 1 else "0.0"
        right = f"x{i + 1}" if i < n else "0.0"
        lines.append(f"  der(x{i}) = v{i};")
        lines.append(f"  m * der(v{i}) = k * ({left} - 2.0 * x{i} + {right}) - c * v{i} + f{i};")
        lines.append(f"  f{i} = a * sin(x{i});")
    lines.append("end Chain;")
    return "\n".join(lines) + "\n"


def chain_ir(n: int):
    """The same chain built directly as an `mdae_fmu.ir.Model` (no parser involved)."""
    from mdae_fmu import expr as E
    from mdae_fmu.ir import Equation, Model, Variable
    C, R, B, D = E.Const, E.Ref, E.BinOp, E.Der
    variables = [Variable(nm, variability="parameter", binding=C(v))
                 for nm, v in (("m", 1.0), ("k", 100.0), ("c", 0.5), ("a", 0.1))]
    eqs = []
    for i in range(1, n + 1):
        variables += [Variable(f"x{i}", start=C(0.1 if i == 1 else 0.0), fixed=True),
                      Variable(f"v{i}", start=C(0.0), fixed=True), Variable(f"f{i}")]
        left = R(f"x{i - 1}") if i > 1 else C(0.0)
        right = R(f"x{i + 1}") if i < n else C(0.0)
        spring = B("*", R("k"), B("+", B("-", left, B("*", C(2.0), R(f"x{i}"))), right))
        eqs.append(Equation(f"e{3 * i - 2}", E.residual(D(R(f"x{i}")), R(f"v{i}"))))
        eqs.append(Equation(f"e{3 * i - 1}", E.residual(
            B("*", R("m"), D(R(f"v{i}"))),
            B("+", B("-", spring, B("*", R("c"), R(f"v{i}"))), R(f"f{i}")))))
        eqs.append(Equation(f"e{3 * i}", E.residual(
            R(f"f{i}"), B("*", R("a"), E.Call("sin", (R(f"x{i}"),))))))
    return Model(name="Chain", variables=tuple(variables), equations=tuple(eqs))


def chain_report(model, n: int):
    """The structural analysis of the chain written down directly (index 0; per mass the
    blocks f_i, der(x_i), der(v_i)), to time code generation and gcc alone at sizes where the
    structural analysis dominates (``--synthetic-analysis``)."""
    from mdae_fmu.structure.per_mode import (Block, Instance, LatentEquation, ModeAnalysis,
                                             ModesReport, symbol_table)
    table = symbol_table(model)
    res = {eq.id: table.to_sympy(eq.residual) for eq in model.equations}
    states, leading, blocks = [], [], []
    for i in range(1, n + 1):
        states += [Instance(name=f"x{i}", order=0), Instance(name=f"v{i}", order=0)]
        leading += [
            Instance(name=f"x{i}", order=1),
            Instance(name=f"v{i}", order=1),
            Instance(name=f"f{i}", order=0),
        ]
        blocks += [
            Block(equations=((f"e{3 * i}", 0),), unknowns=(Instance(name=f"f{i}", order=0),)),
            Block(equations=((f"e{3 * i - 2}", 0),), unknowns=(Instance(name=f"x{i}", order=1),)),
            Block(equations=((f"e{3 * i - 1}", 0),), unknowns=(Instance(name=f"v{i}", order=1),)),
        ]
    eq_ids = tuple(res)
    mode = ModeAnalysis(
        name="{}", valuation=(), equations=eq_ids, c={e: 0 for e in eq_ids},
        d={n_: 1 for n_ in (s.name for s in states)}, index=0, structural_index=1,
        states=tuple(states), leading=tuple(leading),
        solved=tuple(LatentEquation(e, 0, res[e]) for e in eq_ids), consistency=(),
        blocks=tuple(blocks), ok=True, diagnostic=None)
    unknowns = tuple(v.name for v in model.variables if v.variability == "continuous")
    return ModesReport(model_name=model.name, long_guards=(), guard_exprs=(), symbols=table,
                       modes=(mode,), unknowns=unknowns, exit_code=0, messages=())


def run(n_equations: int, simulate: bool = True, synthetic: bool = False) -> dict:
    from mdae_fmu.codegen.emit import generate_sources  # noqa: F401  (import cost outside)
    from mdae_fmu.fmu import export as X
    from mdae_fmu.importers.flat_modelica import parse_modelica
    from mdae_fmu.structure.per_mode import analyze_modes
    n = max(1, n_equations // 3)
    text = chain_model(n)
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        try:
            if synthetic:   # the parser is benchmarked by its own suite
                raise ValueError("skipped")
            model = parse_modelica(text, "Chain.mo")
        except Exception as err:   # the parser is benchmarked by its own suite
            print(f"(parser unavailable: {type(err).__name__}; using the IR generator)",
                  file=sys.stderr)
            model = chain_ir(n)
        t1 = time.perf_counter()
        report = chain_report(model, n) if synthetic else analyze_modes(model)
        t2 = time.perf_counter()
        stages = {}
        last = [t2]

        class Timer(X.Progress):
            def __call__(self, message):
                now = time.perf_counter()
                stages[self.last] = stages.get(self.last, 0.0) + now - last[0]
                last[0] = now
                self.last = message.split(":")[0]

        p = Timer(enabled=True)
        p.last = "start"
        path = X.export(model, Path(tmp) / "Chain.fmu", report=report, progress=p)
        t3 = time.perf_counter()
        times = {"equations": 3 * n, "parse": t1 - t0, "analysis": t2 - t1,
                 "codegen": stages.get("generating C", 0.0) + stages.get("planning", 0.0),
                 "gcc": stages.get(next((s for s in stages if s.startswith("compiling")), ""),
                                   0.0),
                 "export total": t3 - t0, "fmu MB": path.stat().st_size / 1e6}
        if simulate:
            from fmpy import simulate_fmu
            # FMPy's CVode uses a dense Jacobian (nx^2 doubles): Euler for large chains
            solver = "CVode" if n <= 5000 else "Euler"
            r = simulate_fmu(str(path), stop_time=0.01, output=["x1"], solver=solver,
                             step_size=1e-3, output_interval=1e-3)
            times["simulates"] = bool(abs(r["x1"][-1] - 0.1) < 0.01)
    return times


def _parser():
    import argparse
    p = argparse.ArgumentParser(
        prog="export_bench.py",
        description="Export benchmark: parse -> .fmu (gcc included) of a chain of masses "
        "(3 equations per mass), then a short FMPy simulation. Prints a Markdown table: "
        "seconds per stage, total, FMU size, whether the FMU simulates.")
    p.add_argument("sizes", metavar="N_EQUATIONS", type=int, nargs="*",
                   default=[1000, 10000, 100000],
                   help="model sizes in equations, rounded to a multiple of 3 "
                   "(default: 1000 10000 100000)")
    p.add_argument("--synthetic-analysis", action="store_true",
                   help="replace the structural analysis by its known result (chain_report) "
                   "to time the exporter's own stages at large sizes")
    return p


def main(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    if any(n < 3 for n in args.sizes):
        _parser().error("N_EQUATIONS must be at least 3")
    cols = ["equations", "parse", "analysis", "codegen", "gcc", "export total", "fmu MB",
            "simulates"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for n in args.sizes:
        r = run(n, synthetic=args.synthetic_analysis)
        print("| " + " | ".join(f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c])
                                for c in cols) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
