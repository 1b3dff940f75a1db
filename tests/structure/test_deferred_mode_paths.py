"""The per-mode stage's paths for a caller that reads no latent equation (issue 29, stop 43;
docs/performance.md "stop 43"): a mode analysed with ``deferred_latent`` keeps its solved
equations as `SolvedEquations` (made when read) and its offsets' dicts are built after the
block-triangular form; the single-mode schedule and the verdict without guards read their
per-unknown tests in C. Each is compared with the general path (the mode analysed in full,
the definitions the faster reads replace) on models with modes and without."""

import functools
import random
import sys
from pathlib import Path

import pytest

from mdae_fmu.diagnostics import EXIT_OK, MdaeError
from mdae_fmu.implicit.schedule import single_mode_schedule
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.modes import explore
from mdae_fmu.saved.objects import Writer
from mdae_fmu.structure.per_mode import SolvedEquations, analyze_modes

ROOT = Path(__file__).resolve().parents[2]


def _texts() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gen_chain
    import gen_scalable
    out = [(p.stem, p.read_text()) for p in sorted((ROOT / "reference_models").glob("*.mo"))]
    out += [(str(p.relative_to(ROOT)), p.read_text())
            for p in sorted((ROOT / "tests" / "data").rglob("*.mo"))[:40]]
    out += [("loop_chain", gen_chain.loop_chain_model(4)), ("chain", gen_chain.chain_model(3))]
    out += [(f, gen_scalable.FAMILIES[f][0](3)) for f in sorted(gen_scalable.FAMILIES)]
    return out


@functools.cache
def _reports() -> tuple:
    """(name, model, deferred report, full report) of every model whose per-mode stage runs
    (computed once for the module's tests)."""
    out = []
    for name, text in _texts():
        try:
            model = parse_modelica(text)
            full = analyze_modes(model)
            deferred = analyze_modes(parse_modelica(text), deferred_latent=True)
        except MdaeError:
            continue
        out.append((name, model, deferred, full))
    return tuple(out)


def test_deferred_modes_equal_the_full_ones():
    """Every field of every mode is the full analysis' (the solved equations compared item
    by item, sympy forms included), the offsets' dicts in the same key order; the deferred
    solved equations index, slice, iterate, hash and save as the tuple they stand for."""
    seen_lazy = multimode = 0
    for name, _, deferred, full in _reports():
        assert len(deferred.modes) == len(full.modes), name
        multimode += len(full.modes) > 1
        for a, b in zip(deferred.modes, full.modes):
            assert list(a.c.items()) == list(b.c.items()), name
            assert list(a.d.items()) == list(b.d.items()), name
            assert (a.index, a.structural_index, a.states, a.leading, a.blocks, a.ok,
                    a.diagnostic, a.status) == (b.index, b.structural_index, b.states,
                                                b.leading, b.blocks, b.ok, b.diagnostic,
                                                b.status), name
            if not isinstance(a.solved, SolvedEquations):
                assert a.solved == b.solved == ()       # (a rejected mode: none)
                continue
            seen_lazy += 1
            items = tuple(a.solved)
            assert all(x is y for x, y in zip(items, a.solved)) and a.solved[0] is items[0]
            assert len(a.solved) == len(b.solved) == len(items), name
            assert [(e.eq_id, e.k) for e in items] == [(e.eq_id, e.k) for e in b.solved]
            assert [e.expr for e in items] == [e.expr for e in b.solved], name
            assert a.solved == b.solved and b.solved == a.solved and hash(a.solved) == hash(items)
            assert a.solved[1:] == items[1:] and a.solved[-1].eq_id == items[-1].eq_id
            assert repr(a.solved) == repr(items)
            assert Writer().value(a.solved) == Writer().value(items)
            assert a == b, name
    assert seen_lazy >= 30 and multimode >= 5, (seen_lazy, multimode)


def test_single_mode_schedule_reads_the_definitions():
    """The schedule's leading instances and algebraic unknowns are those of their
    definitions (order > 0; offset d = 0 or none)."""
    compared = 0
    for name, _, report, _ in _reports():
        if report.exit_code != EXIT_OK or len(report.modes) != 1:
            continue
        mode, = report.modes
        s = single_mode_schedule(report)
        assert s.leading == tuple(i for i in mode.leading if i.order > 0), name
        assert s.impulsive == tuple(n for n in report.unknowns if mode.d.get(n, 0) == 0), name
        compared += 1
    assert compared >= 20, compared


@pytest.mark.parametrize("seed", [0, 1])
def test_all_states_is_the_all_of_its_definition(seed):
    """`explore._all_states` (every name an offset d > 0, a missing name counting as 0)
    against ``all`` on random offsets, empty lists and missing names included."""
    rng = random.Random(seed)
    for _ in range(2000):
        d = {f"x{j}": rng.choice((0, 1, 1, 2)) for j in range(rng.randrange(6))}
        names = [f"x{rng.randrange(8)}" for _ in range(rng.randrange(5))]
        want = all(d.get(n, 0) > 0 for n in names)
        assert explore._all_states(d, names) is want


@pytest.mark.parametrize("seed", [0, 1])
def test_state_labels_are_their_definition(seed):
    """`explore._state_labels` (the runs of names of order 1 copied as slices) against the
    definition, every instance ``x``, ``der(x)``, ... below ``d[x]`` of each sorted name, on
    random offsets: none above 1, some, all, and no state at all."""
    from mdae_fmu.modes.runs import var_label
    rng = random.Random(seed)
    for _ in range(2000):
        named = sorted({f"x{rng.randrange(40)}" for _ in range(rng.randrange(12))})
        top = rng.choice((1, 2, 4))
        d = {n: rng.randint(1, top) for n in named}
        want = tuple(var_label((n, k)) for n in named for k in range(d[n]))
        assert explore._state_labels(named, d) == want


def test_solved_equations_add_as_tuples():
    """``solved + consistency`` (and a tuple before them) is the tuple of both."""
    for _, _, deferred, _ in _reports():
        for mode in deferred.modes:
            if isinstance(mode.solved, SolvedEquations):
                both = mode.solved + mode.consistency
                assert type(both) is tuple and both == tuple(mode.solved) + mode.consistency
                assert () + mode.solved == tuple(mode.solved)
                assert mode.solved + mode.solved == tuple(mode.solved) * 2
                return
    raise AssertionError("no deferred mode")


#: A 2×2 block singular for all values (its two equations proportional), no guard.
SINGULAR_PAIR = """
model SingularPair
  Real x(start = 1, fixed = true);
  Real y;
  Real z;
equation
  der(x) = -x + y;
  y + z = x;
  2 * y + 2 * z = 2 * x;
end SingularPair;
"""


def test_singular_blocks_is_the_check_of_every_block():
    """On the single-mode models (whose blocks the check reads by id through its table of
    heads), the blocks `singular_blocks` finds are those `SingularityCheck.suspect` (the
    general test: the generic-entry walk, then the samples) finds block by block, with the
    blocks' equations; the singular pair is found."""
    from mdae_fmu.structure.conversion import SingularityCheck, singular_blocks
    from mdae_fmu.structure.system_jacobian import BlockSystem
    from mdae_fmu.structure.valuations import has_long_guards
    from mdae_fmu.structure.variables import classify_variables
    models = [(n, m, f) for n, m, _, f in _reports()]
    pair = parse_modelica(SINGULAR_PAIR)
    models.append(("SingularPair", pair, analyze_modes(pair)))
    compared, found = 0, []
    for name, model, report in models:
        if len(report.modes) != 1 or has_long_guards(model) or not report.modes[0].ok:
            continue
        mode, = report.modes
        got = [(f.block.equations, f.block.columns, tuple(e.id for e in f.equations))
               for f in singular_blocks(model, report)]
        check = SingularityCheck(classify_variables(model).types)
        points = check.points()
        by_id = {eq.id: eq for eq in model.equations}
        want = []
        for blk in mode.blocks:
            ids, offsets = zip(*blk.equations)
            system = BlockSystem(equations=ids,
                                 residuals=tuple(by_id[i].residual for i in ids),
                                 offsets=offsets,
                                 columns=tuple((u.name, u.order) for u in blk.unknowns))
            if check.suspect(system, points):
                want.append((ids, system.columns, ids))
        assert got == want, name
        compared += 1
        found += [name] if got else []
    assert compared >= 20 and "SingularPair" in found, (compared, found)


def _occurrences(tree, name: str) -> int:
    """How many times the name ``name`` occurs in ``tree`` (every `Ref`, under ``der`` too)."""
    from mdae_fmu import expr as E
    return sum(1 for n in E.walk(tree) if type(n) is E.Ref and n.name == name)


def test_block_looks_leave_out_only_heads_solved_for_themselves():
    """A mode whose equations are the model's own records the blocks the singular-block
    check reads (`per_mode.BlockLooks`, issue 29 stop 44): those it leaves out are exactly the
    blocks of one equation ``x - f`` (``x`` a name that occurs nowhere else in it) solved for
    ``x`` at order 0, told here by walking each residual; the positions it keeps are those of
    the blocks' equations. The findings are those of the check by id (the mode without its
    ``block_looks``) on every such model and the singular pair."""
    import dataclasses

    from mdae_fmu import expr as E
    from mdae_fmu.structure.conversion import singular_blocks
    models = [(n, m, f) for n, m, _, f in _reports()]
    pair = parse_modelica(SINGULAR_PAIR)
    models.append(("SingularPair", pair, analyze_modes(pair)))
    looked_at, found = 0, []
    for name, model, report in models:
        if len(report.modes) != 1 or not report.modes[0].ok:
            continue
        mode, = report.modes
        looks = mode.__dict__.get("block_looks")
        if looks is None:
            assert report.discrete_equations or report.long_guards or model.guards(), name
            continue
        looked_at += 1
        where = {eq.id: i for i, eq in enumerate(model.equations)}
        skipped, rows = [], []
        for b, blk in enumerate(mode.blocks):
            one = blk.scalar
            if one is not None:
                eq_id, c, u = one
                res = model.equations[where[eq_id]].residual
                if (u.order == c and type(res) is E.BinOp and res.op == "-"
                        and type(res.left) is E.Ref and res.left.name == u.name
                        and _occurrences(res, u.name) == 1):
                    skipped.append(b)
                    continue
            rows += [where[i] for i, _ in blk.equations]
        assert sorted(set(range(len(mode.blocks))) - set(looks.blocks)) == skipped, name
        assert list(looks.rows) == rows, name
        by_id = dataclasses.replace(report, modes=(dataclasses.replace(mode),))
        assert "block_looks" not in by_id.modes[0].__dict__
        want = [(f.block.equations, f.block.offsets, f.block.columns, f.equations)
                for f in singular_blocks(model, by_id)]
        got = [(f.block.equations, f.block.offsets, f.block.columns, f.equations)
               for f in singular_blocks(model, report)]
        assert got == want, name
        found += [name] if got else []
    assert looked_at >= 15 and "SingularPair" in found, (looked_at, found)
