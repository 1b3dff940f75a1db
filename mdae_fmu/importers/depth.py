"""How deep the importers let expression trees grow, and the rebalancing of long sums.

The stages after the import (structural equality and hashing of the frozen nodes, sympy, the
printer, code generation) recurse over expressions, so the importers refuse trees deeper than
`MAX_DEPTH`. A flat sum as OpenModelica prints it, ``y = x1 + x2 + ... + x300``, parses
left-associatively into a chain 300 levels deep although nothing in it is nested; such chains
are rebuilt as balanced trees instead (`limited`), about log2(n) levels deep:

* only chains of one associative family are rebuilt: ``+``/``-`` (a ``-`` flips the signs of
  the terms it moves into a right operand: ``a - b - c - d`` becomes ``(a - b) - (c + d)``),
  ``.+``/``.-``, ``*``, ``.*``, ``and``, ``or``; ``/`` and ``^`` chains are left alone;
* only when the tree is deeper than `MAX_DEPTH`, and only chains of more than `CHAIN_MIN`
  terms, so every tree that was accepted before keeps its exact shape (and its floating-point
  evaluation order);
* the result prints (``modelica_printer``) with parentheses that parse back to the same tree,
  whose chains are then short: import, print and import again gives the same model.

Everything here is iterative, so a tree of any depth is handled without recursion.
"""

from __future__ import annotations

from .. import expr as E

#: Deepest expression tree accepted (after rebalancing). A sum of n terms is rebalanced to
#: about log2(n) levels; other nesting (``sin(sin(...))``, parentheses on the right) counts
#: one level per operator.
MAX_DEPTH = 256
#: Shortest chain that is rebalanced (in a tree deeper than MAX_DEPTH).
CHAIN_MIN = 32

_FAMILIES = {"+": ("+", "-"), "-": ("+", "-"), ".+": (".+", ".-"), ".-": (".+", ".-"),
             "*": ("*", None), ".*": (".*", None), "and": ("and", None), "or": ("or", None)}
_LEAVES = (E.Const, E.Ref, E.Time, E.Str)


def depth_exceeds(e, limit: int = MAX_DEPTH) -> bool:
    """True when the tree ``e`` is deeper than ``limit``."""
    stack = [(e, 1)]
    children = E.children
    while stack:
        node, d = stack.pop()
        if d > limit:
            return True
        if type(node) in _LEAVES:
            continue
        for c in children(node):
            stack.append((c, d + 1))
    return False


def limited(e):
    """``e`` if it is at most `MAX_DEPTH` deep; else ``e`` with its long associative chains
    balanced, if that is enough; else None (the caller reports the expression as too deep)."""
    if not depth_exceeds(e):
        return e
    e = rebalanced(e)
    return None if depth_exceeds(e) else e


def rebalanced(e):
    """``e`` with every left-deep chain of one family longer than `CHAIN_MIN` terms rebuilt
    as a balanced tree (module docstring); sub-trees without such chains are kept as they are
    (same objects)."""
    out: list = []
    work: list = [(e, None)]
    while work:
        node, pending = work.pop()
        if pending is not None:               # children done: rebuild the node
            kind, arg, count = pending
            kids = out[len(out) - count:]
            del out[len(out) - count:]
            out.append(_balanced(kids, arg) if kind == "chain" else _rebuilt(arg, kids))
            continue
        if type(node) in _LEAVES:
            out.append(node)
            continue
        if type(node) is E.BinOp and node.op in _FAMILIES:
            terms, ops = _chain(node)
            if len(terms) > CHAIN_MIN:
                work.append((None, ("chain", ops, len(terms))))
                work.extend((t, None) for t in reversed(terms))
                continue
        kids = E.children(node)
        work.append((None, ("node", node, len(kids))))
        work.extend((k, None) for k in reversed(kids))
    return out[0]


def _chain(node) -> tuple[list, list]:
    """Terms (leftmost first) and operators of the left-deep chain of ``node``'s family."""
    family = _FAMILIES[node.op]
    spine = []
    while type(node) is E.BinOp and node.op in family:
        spine.append(node)
        node = node.left
    spine.reverse()
    return [node] + [s.right for s in spine], [s.op for s in spine]


def _rebuilt(node, kids):
    """``node`` with the children ``kids`` (``node`` itself when they are unchanged)."""
    old = E.children(node)
    if all(a is b for a, b in zip(old, kids)):
        return node
    if type(node) is E.BinOp:
        return E.BinOp(node.op, kids[0], kids[1])
    if type(node) is E.UnOp:
        return E.UnOp(node.op, kids[0])
    if type(node) is E.Der:
        return E.Der(kids[0])
    if type(node) is E.Call:
        return E.Call(node.func, tuple(kids))
    if type(node) is E.If:
        return E.If(kids[0], kids[1], kids[2])
    raise TypeError(f"unexpected expression node {type(node).__name__}")


def _balanced(terms: list, ops: list):
    """The balanced tree of ``terms[0] ops[0] terms[1] ops[1] ...`` (left-associative)."""
    plus, minus = _FAMILIES[ops[0]]
    signs = [True] + [op == plus for op in ops]    # sign of each term in the whole chain

    def build(i: int, j: int):
        # terms i..j, with signs relative to term i's
        if i == j:
            return terms[i]
        m = (i + j + 1) // 2
        op = plus if signs[m] == signs[i] else minus
        assert op is not None       # (a family without inverse has every sign True)
        return E.BinOp(op, build(i, m - 1), build(m, j))

    return build(0, len(terms) - 1)


__all__ = ["MAX_DEPTH", "CHAIN_MIN", "depth_exceeds", "limited", "rebalanced"]
