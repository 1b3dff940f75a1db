"""No block of no unknown reaches code generation (issue 26): a linear block of size 0 (a
restart system that moves nothing) compiled only because `block_code.linear_helpers` casts
its unused ``c`` away. The stage that made one is the block restart of the implicit
analysis (`mdae_fmu.implicit.variants._standard_restart`: a standard restart that moves none
of the block's instances is no restart, None); the C cast stays as a belt.

Checked on the plan that code generation compiles, for every family of
benchmarks/gen_multimode.py: the guarded schedule's block variants and their restart
systems."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("dd")
from mdae_fmu.analysis import analyze  # noqa: E402
from mdae_fmu.codegen.block_code import linear_helpers  # noqa: E402
from mdae_fmu.codegen.guarded import plan_guarded  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_multimode import FAMILIES, diode_bank  # noqa: E402

# fault_chain(3) has 4^3 modes, whose enumeration alone takes minutes: n = 2 for it
CASES = [(f"{family}({n})", FAMILIES[family](n)) for family in FAMILIES
         for n in ((2,) if family == "fault_chain" else (2, 3))]
CASES.append(("diode_bank(3, charged)", diode_bank(3, charged=True)))


@pytest.mark.parametrize("name,model", CASES, ids=[c[0] for c in CASES])
def test_no_block_of_no_unknown(name, model):
    """Every block and restart system of the FMU of ``model`` has an unknown, and each has
    as many rows as unknowns."""
    a = analyze(model)
    assert a.guarded is not None, name
    plan = plan_guarded(a.code_model or model, a.guarded)
    assert plan.blocks
    for k, gb in enumerate(plan.blocks):
        assert gb.plan.unknowns, (name, "block", k, gb.plan.label)
        if gb.restart is not None:
            assert gb.restart.unknowns, (name, "restart", k, gb.restart.label)
            assert len(gb.restart.residuals) == len(gb.restart.unknowns), (name, k)


def test_the_c_belt_still_compiles_an_empty_system():
    """The belt: a linear block of no unknown would set no ``c``; the cast keeps gcc's
    -Werror=unused-parameter quiet (templates are compiled with -Wall -Wextra -Werror)."""
    text = linear_helpers(0, [])
    assert "(void)c;" in text and "memset(A, 0, sizeof(double) * 0);" in text
    assert "(void)c;" not in linear_helpers(2, ["    c[0] = 1;", "    c[1] = 2;"])
