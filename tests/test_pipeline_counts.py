"""Counted, not timed: the analysis does only the symbolic work the theory asks for, and the
export consumes the analysis instead of re-running it (issue 16).

The model is a chain of masses with a nonlinear algebraic loop per mass and a Cartesian
pendulum (index 2: its rod constraint is differentiated twice, its two kinematic equations
once; theory 003 §4.3 Def 15), the small form of benchmarks/gen_chain.loop_chain_model.
"""

from __future__ import annotations

import pytest

from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure.per_mode import analyze_modes
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
    model = parse_modelica(loop_chain(n))
    report = analyze_modes(model)
    assert report.exit_code == 0
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

