"""The BDD manager of the one analysis freed in any order with its nodes (`implicit.formulas.
bdd_manager`): dd's node table raised "There are nodes still referenced upon shutdown" from its
``__del__`` when the garbage collector finalized it before the ``Function``s that referenced its
nodes, which it does in any order when a reference cycle holds them all. The cycle of the
intermittent PytestUnraisableExceptionWarning of tests/fmu/test_reference_trajectories.py: a
rejected export kept by ``pytest.raises`` (the exception's traceback holds the test's frame,
which holds the exception; the frames below hold the analysis and its BDD), reported at a later
collection, in whichever test ran then (ChatterRuntime, after Chatter)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

pytest.importorskip("dd")
from dd import autoref  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.diagnostics import ModelRejected  # noqa: E402
from mdae_fmu.implicit.formulas import bdd_manager  # noqa: E402

CHATTER = Path(__file__).resolve().parents[1] / "data" / "conditionals" / "Chatter.mo"


def _referenced(manager) -> int:
    """The nodes of ``manager``'s table that some reference still holds (the terminal's own
    reference apart)."""
    return sum(1 for u, count in manager._bdd._ref.items() if count and u != 1)


def test_node_table_finalized_before_its_functions_raises_nothing():
    m = bdd_manager()
    m.declare("a", "b")
    before = _referenced(m)
    f = m.add_expr(r"a /\ ~ b")
    node = abs(f.node)
    assert m._bdd._ref[node] == 1 and _referenced(m) > before      # f's reference
    m._bdd.__del__()           # the order a collection of one cycle may take: table first
    del f                      # the Function's own finalizer then releases its node
    assert m._bdd._ref[node] == 0
    m._bdd.collect_garbage()
    assert _referenced(m) == before


def test_a_kept_rejection_is_collected_without_unraisable_errors(tmp_path, monkeypatch):
    """The rejected export of Chatter kept in the frame that caught it, as ``pytest.raises``
    keeps it: a reference cycle holding the analysis' BDD manager and its ``Function``s, then
    collected with nothing raised from a finalizer."""
    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook",
                        lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value}"[:80]))

    def kept() -> None:
        with pytest.raises(ModelRejected) as err:
            api.export_fmu(api.load(CHATTER), tmp_path / "Chatter.fmu", progress=False)
        assert err.value.__traceback__ is not None        # frame -> err -> traceback -> frame

    gc.collect()
    gc.disable()
    try:
        kept()
        gc.set_debug(gc.DEBUG_SAVEALL)    # the cycle's objects kept in gc.garbage to count them
        gc.collect()
        held = sum(isinstance(o, autoref.Function) for o in gc.garbage)
        gc.set_debug(0)
        del gc.garbage[:]
        gc.collect()
    finally:
        gc.set_debug(0)
        gc.enable()
    assert held > 0           # the cycle did hold BDD nodes, so the order mattered
    assert unraisable == []
