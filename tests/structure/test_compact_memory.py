"""The compact layouts of stop 41 (issue 29 Deliver 3, docs/performance.md "stop 41, memory"):
`SourceLoc` as one packed int, the signature rows as flat arrays (`SignatureRows`), the
signature graph built from them, `WeightedGraph.from_arrays` on one sorted key. Each is
checked against what it replaces: the three fields of a location, a dict per row
(`signature_row`), the graph built from the rows' dicts, a dict-based construction of the
graph's rows."""

from __future__ import annotations

import copy
import pickle
import random

import numpy as np
import pytest

from mdae_fmu import expr as E
from mdae_fmu import heap
from mdae_fmu.diagnostics import InputError, SourceLoc, file_locations
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.ir import Equation, Model
from mdae_fmu.structure.graph import WeightedGraph
from mdae_fmu.structure.residual_scan import residual_scan, scan_residuals
from mdae_fmu.structure.signature import (SignatureRows, sigma_row, signature_graph,
                                          signature_row)


# --- SourceLoc -------------------------------------------------------------------------------

@pytest.mark.parametrize("file, line, col", [
    ("M.mo", 1, 1), ("dir/Long Name.mo", 2_000_011, 3), ("<string>", 0, 0),
    ("M.mo", (1 << 28) - 1, (1 << 28) - 1),
    ("M.mo", 1 << 28, 5), ("M.mo", 7, 1 << 40), ("M.mo", -1, 2)])   # beyond the bits
def test_source_loc_gives_back_its_fields(file, line, col):
    loc = SourceLoc(file, line, col)
    assert (loc.file, loc.line, loc.col) == (file, line, col)
    assert str(loc) == f"{file}:{line}:{col}" == f"{loc}" == "%s" % loc
    assert f"{loc:>40}" == f"{file}:{line}:{col}".rjust(40)
    assert repr(loc) == f"SourceLoc(file={file!r}, line={line!r}, col={col!r})"
    assert loc.short() == f"{file.rsplit('/', 1)[-1]}:{line}"
    assert loc                               # a location is never false
    for other in (pickle.loads(pickle.dumps(loc)), copy.copy(loc), copy.deepcopy(loc),
                  SourceLoc(file=file, line=line, col=col)):
        assert other == loc and hash(other) == hash(loc) and type(other) is SourceLoc


def test_source_loc_equality_is_that_of_its_fields():
    a = SourceLoc("A.mo", 3, 4)
    assert a == SourceLoc("A.mo", 3, 4) and not a != SourceLoc("A.mo", 3, 4)
    for other in (SourceLoc("B.mo", 3, 4), SourceLoc("A.mo", 4, 3), SourceLoc("A.mo", 3, 5)):
        assert a != other and not a == other
    assert a != int(a) and not a == int(a)            # never equal to a plain int
    assert len({a, SourceLoc("A.mo", 3, 4), SourceLoc("A.mo", 3, 5)}) == 2


def test_file_locations_are_the_locations():
    at = file_locations("F.mo")
    for line, col in [(1, 1), (123_456, 78), (1 << 28, 1), (1, 1 << 30)]:
        loc = at(line, col)
        assert type(loc) is SourceLoc and loc == SourceLoc("F.mo", line, col)
        assert (loc.file, loc.line, loc.col) == ("F.mo", line, col)


def test_source_loc_is_smaller_than_the_record():
    """48 bytes (an int of 60 bits with the collector's header), where the record of three
    slots was 56 and its line number 32 more. In a fresh process, as the command has it: the
    file's number is in the top bits, so a process that has numbered many files (a test
    worker) needs one more digit for the later ones."""
    import subprocess
    import sys
    code = ("import sys; from mdae_fmu.diagnostics import SourceLoc; "
            "print(sys.getsizeof(SourceLoc('M.mo', 2_000_011, 3)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert int(out) <= 48


def test_import_messages_keep_their_locations():
    with pytest.raises(InputError) as err:
        parse_modelica("model M\n  Real x;\nequation\n  der(x) = y;\nend M;\n", "M.mo")
    assert str(err.value).startswith("M.mo:4:12: undefined name 'y'")
    m = parse_modelica("model M\n  Real x;\nequation\n  der(x) = -x;\nend M;\n", "M.mo")
    assert m.variables[0].loc == SourceLoc("M.mo", 2, 8)
    assert (m.equations[0].loc.line, m.equations[0].loc.col) == (4, 3)
    assert Model.from_json(m.to_json()).equations[0].loc == m.equations[0].loc


# --- signature rows --------------------------------------------------------------------------

def _random_tree(rng: random.Random, depth: int = 0) -> E.Expr:
    k = rng.randrange(7 if depth < 4 else 2)
    if k == 0:
        return E.Ref(rng.choice("abcdefp"))
    if k == 1:
        return E.Const(value=float(rng.randrange(3)))
    if k == 2:
        return E.Der(_random_tree(rng, depth + 1))
    if k == 3:
        return E.Call("pre", (E.Ref(rng.choice("abc")),))
    if k == 4:
        return E.Call("sin", (_random_tree(rng, depth + 1),))
    return E.BinOp(rng.choice("+-*"), _random_tree(rng, depth + 1), _random_tree(rng, depth + 1))


def _model(residuals: list[E.Expr]) -> Model:
    return Model(name="M", equations=tuple(Equation(f"e{i}", r)
                                           for i, r in enumerate(residuals)))


@pytest.mark.parametrize("seed", range(20))
def test_flat_rows_stand_for_the_dict_memo(seed):
    rng = random.Random(seed)
    residuals = [_random_tree(rng) for _ in range(rng.randrange(1, 30))]
    m = _model(residuals)
    rows, _ = scan_residuals(residuals, frozenset("abcdefp"), sink=SignatureRows(m.equations))
    assert isinstance(rows, SignatureRows) and len(rows) == len(residuals)
    dicts = [signature_row(r) for r in residuals]
    assert [rows[id(r)] for r in residuals] == dicts == list(rows.values())
    assert all(id(r) in rows for r in residuals) and id(E.Ref("a")) not in rows
    assert rows.get(id(E.Ref("a"))) is None and "x" not in rows
    # a row taken out is gone (the normalization's last read); the others stay
    taken = rng.randrange(len(residuals))
    assert rows.pop(id(residuals[taken])) == dicts[taken]
    assert rows.pop(id(residuals[taken])) is None and id(residuals[taken]) not in rows
    assert len(rows) == len(residuals) - 1
    assert list(rows.values()) == dicts[:taken] + dicts[taken + 1:]
    assert rows.flat(m.equations) is None          # no longer every row


def test_residual_scan_fills_the_flat_rows_and_sigma_row_reads_them():
    rng = random.Random(7)
    m = _model([_random_tree(rng) for _ in range(50)])
    residual_scan(m)
    memo = m.__dict__["_sigma_rows"]
    assert type(memo) is SignatureRows
    names, orders, ends = memo.flat(m.equations)
    assert len(ends) == 51 and len(names) == len(orders) == ends[-1]
    assert memo.flat(m.equations[1:]) is None and memo.flat(list(reversed(m.equations))) \
        is None
    for eq in m.equations:
        assert sigma_row(m, eq.residual) == signature_row(eq.residual)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("absent", [True, False])
def test_graph_from_flat_rows_is_the_graph_from_dicts(seed, absent):
    """The graph of a model's own equations read from the flat rows is the one built from a
    dict per row (the oracle: no model given, so no memo)."""
    rng = random.Random(seed)
    m = _model([_random_tree(rng) for _ in range(rng.randrange(1, 25))])
    residual_scan(m)
    unknowns = [n for n in "abcdefgh" if rng.random() < 0.8]
    g1, u1, a1 = signature_graph(m.equations, unknowns, absent, m)
    g2, u2, a2 = signature_graph(m.equations, unknowns, absent)
    assert (u1, a1, g1.n_eqs, g1.n_vars) == (u2, a2, g2.n_eqs, g2.n_vars)
    for f in ("indptr", "indices", "weights"):
        assert np.array_equal(getattr(g1, f), getattr(g2, f))
        assert getattr(g1, f).dtype == np.int64
    # and a subset of the equations (a mode's) takes the path of the dicts
    sub = m.equations[::2]
    g3, _, _ = signature_graph(sub, unknowns, absent, m)
    g4, _, _ = signature_graph(sub, unknowns, absent)
    assert np.array_equal(g3.indices, g4.indices) and np.array_equal(g3.weights, g4.weights)


# --- WeightedGraph.from_arrays ---------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_from_arrays_keeps_each_edges_largest_weight_sorted(seed):
    """Oracle: the rows as dicts {column: largest weight}, sorted by column."""
    rng = np.random.default_rng(seed)
    n, nv = int(rng.integers(0, 30)), int(rng.integers(1, 30))
    e = int(rng.integers(0, 120)) if n else 0
    rows = rng.integers(0, max(n, 1), e)
    cols = rng.integers(0, nv, e)
    wts = rng.integers(-1, 4, e)
    if seed % 2:                            # without duplicates: the sorted key's path
        _, first = np.unique(rows * nv + cols, return_index=True)
        rows, cols, wts = rows[first], cols[first], wts[first]
        order = rng.permutation(len(rows))
        rows, cols, wts = rows[order], cols[order], wts[order]
    dtype = (np.int32, np.int64)[seed % 4 // 2]
    g = WeightedGraph.from_arrays(n, nv, rows.astype(dtype), cols.astype(dtype),
                                  wts.astype(dtype))
    want: list[dict[int, int]] = [{} for _ in range(n)]
    for i, j, w in zip(rows.tolist(), cols.tolist(), wts.tolist()):
        want[i][j] = max(w, want[i].get(j, w))
    assert [g.row(i) for i in range(n)] == want
    assert all(list(g.row(i)) == sorted(want[i]) for i in range(n))
    assert g.indptr.dtype == g.indices.dtype == g.weights.dtype == np.int64


def test_map_large_blocks_can_be_called():
    heap.map_large_blocks()                 # (a no-op where the C library has no mallopt)
    assert heap.LARGE_BLOCK == 1 << 20
