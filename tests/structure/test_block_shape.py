"""Blocks of one shape are sampled once by the singularity check (`block_shape`, issue 29):
what makes two blocks one shape, and that every repeated singular cell is still found and
every repeated regular cell still passes."""

from __future__ import annotations

from mdae_fmu import expr as E
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.structure import conversion
from mdae_fmu.structure.conversion import block_shape, singular_blocks
from mdae_fmu.structure.per_mode import analyze_modes
from mdae_fmu.structure.system_jacobian import BlockSystem


def _block(residuals, columns, offsets=None) -> BlockSystem:
    return BlockSystem(
        equations=tuple(f"e{i}" for i in range(len(residuals))),
        residuals=tuple(residuals),
        offsets=tuple(offsets or (0,) * len(residuals)),
        columns=tuple(columns),
    )


def _loop(u: str, w: str, x: str, v: str, a: float = 0.5) -> BlockSystem:
    """u + a w - x = 0, w - 0.3 sin(u) - v = 0 over (u, w)."""
    r1 = E.BinOp("-", E.BinOp("+", E.Ref(u), E.BinOp("*", E.Const(a), E.Ref(w))), E.Ref(x))
    r2 = E.BinOp("-", E.BinOp("-", E.Ref(w), E.BinOp("*", E.Const(0.3),
                                                      E.Call("sin", (E.Ref(u),)))), E.Ref(v))
    return _block((r1, r2), ((u, 0), (w, 0)))


def test_renamed_blocks_share_a_shape():
    types: dict[str, str] = {}
    assert block_shape(_loop("u1", "w1", "x1", "v1"), types) == \
        block_shape(_loop("u7", "w7", "x7", "v7"), types)


def test_what_separates_shapes():
    types: dict[str, str] = {}
    base = block_shape(_loop("u", "w", "x", "v"), types)
    # another constant, one name read twice where the other reads two, another column order
    assert block_shape(_loop("u", "w", "x", "v", a=0.25), types) != base
    assert block_shape(_loop("u", "w", "x", "x"), types) != base
    swapped = _loop("u", "w", "x", "v")
    swapped = BlockSystem(
        equations=swapped.equations,
        residuals=swapped.residuals,
        offsets=swapped.offsets,
        columns=(("w", 0), ("u", 0)),
    )
    assert block_shape(swapped, types) != base
    # the type of a name: an Integer is drawn from 1..4, a Real from [0.5, 1.5]
    assert block_shape(_loop("u", "w", "x", "v"), {"v": "Integer"}) != base
    # the order of a derivative and the offset of an equation
    der = _block((E.BinOp("-", E.Der(E.Ref("a")), E.Ref("b")),), (("a", 1),))
    plain = _block((E.BinOp("-", E.Ref("a"), E.Ref("b")),), (("a", 0),))
    assert block_shape(der, types) != block_shape(plain, types)
    assert block_shape(plain, types) != block_shape(_block(plain.residuals, (("a", 0),), (1,)),
                                                    types)


def _cells(n: int, singular: bool) -> str:
    """n cells of two equations over (a_i, b_i); singular: the rows are proportional for all
    values (2 a + 2 b = x, a + b = y), each cell a hidden constraint x = 2 y."""
    decl = [f"  Real x{i}(start = 1, fixed = true);\n  Real a{i};\n  Real b{i};"
            for i in range(n)]
    eqs = []
    for i in range(n):
        eqs.append(f"  der(x{i}) = a{i} - b{i};")
        if singular:
            eqs.append(f"  2 * a{i} + 2 * b{i} = x{i};")
            eqs.append(f"  a{i} + b{i} = 3 * time;")
        else:
            eqs.append(f"  2 * a{i} + b{i} = x{i};")
            eqs.append(f"  a{i} + b{i} * b{i} = 3 * time;")
    return "model Cells\n" + "\n".join(decl) + "\nequation\n" + "\n".join(eqs) + \
        "\nend Cells;\n"


def _findings(text: str, monkeypatch) -> tuple[int, int]:
    model = parse_modelica(text)
    report = analyze_modes(model)
    calls = []
    real = conversion._singular_sample
    monkeypatch.setattr(conversion, "_singular_sample",
                        lambda *a: calls.append(1) or real(*a))
    found = list(singular_blocks(model, report))
    return len(found), len(calls)


def test_every_singular_cell_found_with_one_sample_per_shape(monkeypatch):
    found, samples = _findings(_cells(6, singular=True), monkeypatch)
    assert found == 6           # each cell is its own hidden constraint
    assert samples == 2         # one shape, singular at its two points


def test_regular_cells_pass_with_one_sample(monkeypatch):
    found, samples = _findings(_cells(6, singular=False), monkeypatch)
    assert found == 0 and samples == 1
