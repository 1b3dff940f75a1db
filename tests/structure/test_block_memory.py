"""The compact `Block` of the per-mode stage (docs/performance.md, "stop 40, memory"): a block
of one equation keeps its equation id, offset and unknown in its own slots, and is otherwise
the frozen record it was (equality, hash, repr, pickling, saved analyses)."""

import gc
import pickle
from dataclasses import FrozenInstanceError

import pytest

from mdae_fmu import saved
from mdae_fmu.analysis import analyze
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure.per_mode import Block, Instance, analyze_modes

from structure_models import pendulum

X1 = Instance(name="x", order=1)
Y0 = Instance(name="y", order=0)


def chain_text(loops: int) -> str:
    """``loops`` oscillators, each with an algebraic loop: per oscillator two blocks of one
    equation (der(x), der(v)) and one of two (u, w)."""
    lines = [f"model Chain{loops}"]
    for i in range(loops):
        lines.append(f"  Real x{i}(start = 1); Real v{i}; Real u{i}; Real w{i};")
    lines.append("equation")
    for i in range(loops):
        lines += [f"  der(x{i}) = v{i};", f"  der(v{i}) = -x{i} - w{i};",
                  f"  u{i} + 0.5 * w{i} = x{i};", f"  w{i} - 0.3 * sin(u{i}) = v{i};"]
    lines.append(f"end Chain{loops};")
    return "\n".join(lines) + "\n"


def test_single_block_is_the_record_it_replaces():
    single = Block.single("e1", 2, X1)
    built = Block(equations=(("e1", 2),), unknowns=(X1,))
    assert single.equations == (("e1", 2),) and single.unknowns == (X1,)
    assert single == built and hash(single) == hash(built)
    assert repr(single) == "Block(equations=(('e1', 2),), unknowns=(Instance(name='x', order=1),))"
    assert single != Block.single("e1", 1, X1) and single != Block.single("e1", 2, Y0)
    assert (single == ("e1", 2)) is False          # not a tuple, not equal to one
    assert pickle.loads(pickle.dumps(single)) == single


def test_larger_block_keeps_its_tuples():
    b = Block(equations=[("e1", 0), ("e2", 1)], unknowns=[X1, Y0])
    assert b.equations == (("e1", 0), ("e2", 1)) and b.unknowns == (X1, Y0)
    assert b != Block.single("e1", 0, X1)
    assert pickle.loads(pickle.dumps(b)) == b
    # a malformed block (read from a hostile saved analysis) is kept as given, for the checks
    assert Block(equations=(), unknowns=(X1,)).unknowns == (X1,)


@pytest.mark.parametrize("field", ["equations", "unknowns", "other"])
def test_block_is_frozen(field):
    b = Block.single("e1", 0, X1)
    with pytest.raises(FrozenInstanceError):
        setattr(b, field, ())
    with pytest.raises(FrozenInstanceError):
        delattr(b, "_eq")


def test_chain_blocks_hold_no_tuple_of_their_own():
    """A single block refers to the model's equation id and to the mode's leading instance,
    and to no tuple: the 1-tuples and the (eq_id, k) pair (about 150 bytes a block) are gone."""
    model = parse_modelica(chain_text(20), "Chain20.mo")
    mode, = analyze_modes(model).modes
    assert mode.ok and mode.index == 0
    ids = {eq.id: eq.id for eq in model.equations}
    leading = {id(x) for x in mode.leading}
    singles = [b for b in mode.blocks if len(b.equations) == 1]
    larger = [b for b in mode.blocks if len(b.equations) > 1]
    assert len(singles) == 40 and len(larger) == 20      # per loop: 2 scalar blocks, 1 pair
    for b in singles:
        refs = gc.get_referents(b)
        assert not any(isinstance(r, tuple) for r in refs)
        (eq_id, _), = b.equations
        assert any(r is ids[eq_id] for r in refs)
        assert id(b.unknowns[0]) in leading
    for b in larger:
        assert all(id(u) in leading for u in b.unknowns)


def test_blocks_survive_a_saved_analysis():
    model = pendulum()
    a = analyze(model)
    _, back = saved.load(saved.save(model, a))
    assert back.modes.modes[0].blocks == a.modes.modes[0].blocks
    assert all(type(b) is Block for b in back.modes.modes[0].blocks)


def test_large_mode_gives_the_heap_back_before_and_after_its_latent_equations(monkeypatch):
    """From `TRIM_MIN_EQUATIONS` equations on, the C heap's free pages go back after the
    block-triangular form (before the latent equations' objects) and at the end; below it,
    never; the analysis is the same either way."""
    from mdae_fmu.structure import per_mode as PM
    model = parse_modelica(chain_text(5), "Chain5.mo")
    calls: list[str] = []
    latent_derivatives = PM.latent_derivatives

    def latent(*args, **kwargs):
        calls.append("latent")
        return latent_derivatives(*args, **kwargs)

    monkeypatch.setattr(PM, "release_free_heap", lambda: calls.append("trim"))
    monkeypatch.setattr(PM, "latent_derivatives", latent)
    monkeypatch.setattr(PM, "TRIM_MIN_EQUATIONS", 21)
    small = analyze_modes(model)
    assert calls == ["latent"]
    calls.clear()
    monkeypatch.setattr(PM, "TRIM_MIN_EQUATIONS", 20)
    large = analyze_modes(model)
    assert calls == ["trim", "latent", "trim"]
    assert large.modes[0].blocks == small.modes[0].blocks
    assert large.modes[0].solved == small.modes[0].solved
