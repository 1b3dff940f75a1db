"""Synchronous (clocked) Modelica is refused by name with what to write instead (shapes of
OpenModelica's flattening tests WhenClocked1 and FuncBuiltinNoClock1, found by
benchmarks/corpus.py)."""

from __future__ import annotations

import pytest

from mdae_fmu.cli import main


@pytest.mark.parametrize("body, where, what", [
    ("  Real x;\nequation\n  when Clock(0.1) then\n    x = 1.0;\n  end when;\n", "4:8",
     "'Clock' is an operator of synchronous (clocked) Modelica, which is not supported"),
    ("  Real x;\n  Real y;\nequation\n  y = time;\n  x = previous(y);\n", "6:7",
     "'previous' is an operator of synchronous (clocked) Modelica"),
    ("  Clock c;\nequation\n", "2:3",
     "variables of type Clock (synchronous Modelica) are not supported"),
])
def test_clocked_constructs_are_refused_by_name(tmp_path, capsys, body, where, what):
    path = tmp_path / "C.mo"
    path.write_text(f"class C\n{body}end C;\n")
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{where}: {what}"), err
    assert "when sample(start, interval)" in err and "Traceback" not in err


def test_flat_state_machine_is_refused_by_name(tmp_path, capsys):
    """OpenModelica prints a state machine's flat form as ``stateMachine s  state s ...``
    (its statemachines/HierarchicalAndParallelStateMachine test): refused as a state machine
    at the 'stateMachine' line, not as a missing ';'."""
    path = tmp_path / "SM.mo"
    path.write_text("class SM\n  Integer v(start = 0);\nstateMachine state1\n  state state1\n"
                    "    Integer state1.i(start = 0);\n  equation\n"
                    "    state1.i = 1 + previous(state1.i);\n  end state1;\n"
                    "end state1;\nequation\n  v = 1;\nend SM;\n")
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3:1: unsupported construct: a state machine"), err
    assert "when-clauses" in err and "missing ';'" not in err and "Traceback" not in err
