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


# --- the 1x1 blocks passed without sampling (`_generic_entry`) ---------------------------------

def _r(name: str) -> E.Expr:
    return E.Ref(name)


def _bin(op: str, a: E.Expr, b: E.Expr) -> E.Expr:
    return E.BinOp(op, a, b)


def test_generic_entries_named_by_the_rule():
    x, y, c = _r("x"), _r("y"), _r("c")
    generic = conversion._generic_entry
    cases = [
        (_bin("-", E.Der(x), _r("v")), ("x", 1), True),                 # der(x) = v
        (_bin("-", _bin("*", _r("m"), E.Der(x)), y), ("x", 1), True),   # m*der(x) = y
        (_bin("-", E.Call("sin", (x,)), y), ("x", 0), True),
        (_bin("^", x, E.Const(2)), ("x", 0), True),                     # a nonzero constant power
        (_bin("+", x, E.If(c, y, _r("z"))), ("x", 0), True),            # the if reads no x
        (_bin("*", x, x), ("x", 0), False),                             # two occurrences
        (_bin("+", x, E.Call("sign", (x,))), ("x", 0), False),          # the second off the path
        (_bin("+", E.Call("sign", (y,)), x), ("x", 0), True),
        (_bin("-", _bin("*", E.Const(0), x), y), ("x", 0), False),      # a literal zero factor
        (_bin("-", _bin("*", x, E.Const(0.0)), y), ("x", 0), False),
        (_bin("^", x, y), ("x", 0), False),                             # a power of a variable
        (_bin("^", x, E.Const(0)), ("x", 0), False),
        (E.Call("floor", (x,)), ("x", 0), False),
        (_bin("+", x, E.Call("pre", (x,))), ("x", 0), False),           # pre(x) is an occurrence
        (_bin("+", x, E.If(c, x, y)), ("x", 0), False),
        (_bin("-", E.Der(_bin("*", x, y)), y), ("x", 1), False),        # der(x*y): no der(x)
        (_bin("-", E.Der(E.Der(x)), y), ("x", 2), True),
        (_bin("-", E.Der(E.Der(x)), y), ("x", 1), False),               # no occurrence
        (_bin("-", E.Der(x), x), ("x", 1), True),                       # x is another instance
    ]
    for residual, inst, expected in cases:
        assert generic(residual, inst) is expected, (residual, inst)


def test_generic_entries_are_nonzero_derivatives():
    """Oracle: sympy's partial derivative of the residual along the instance, at a random
    point, is nonzero wherever `_generic_entry` passes the entry. The random residuals are
    sums, products, quotients, sines and exponentials of x, der(x), random constants and
    names read once each, so that no factor off the path vanishes identically (the rule
    looks for literal zeros only: ``(y - y)*der(x)`` would pass it)."""
    import itertools
    import random

    import sympy as sp

    from mdae_fmu.symbolic import SymbolTable
    table = SymbolTable(constants=frozenset())
    rng = random.Random(29)
    fresh = (f"y{i}" for i in itertools.count())

    def tree(depth: int) -> E.Expr:
        if depth == 0 or rng.random() < 0.3:
            pick = rng.random()
            return _r(next(fresh)) if pick < 0.7 else E.Const(rng.uniform(0.5, 3.0))
        if rng.random() < 0.2:
            return E.Call(rng.choice(["sin", "exp"]), (tree(depth - 1),))
        return _bin(rng.choice("+-*/"), tree(depth - 1), tree(depth - 1))

    def with_x(residual: E.Expr) -> E.Expr:
        """``residual`` with one of its names replaced by x or der(x), or x added."""
        names = [n for n in E.walk(residual) if isinstance(n, E.Ref)]
        x = rng.choice([_r("x"), E.Der(_r("x"))])
        if not names:
            return _bin("+", residual, x)
        return E.substitute(residual, {rng.choice(names): x})

    passed = 0
    for _ in range(150):
        residual = with_x(tree(4))
        for inst in (("x", 0), ("x", 1)):
            if not conversion._generic_entry(residual, inst):
                continue
            passed += 1
            entry = sp.diff(table.to_sympy(residual), table.sym(*inst))
            point = {s: sp.Float(rng.uniform(0.3, 1.7)) for s in entry.free_symbols}
            assert abs(complex(entry.xreplace(point).evalf())) > 1e-12, (residual, inst)
    assert passed > 20
