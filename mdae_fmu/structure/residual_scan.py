"""One walk over every residual of a model, shared by the per-mode stage's checks.

The per-mode stage (`mdae_fmu.structure.per_mode`) asks three questions of every residual,
each of which used to walk every node of every equation: which names it reads that the model
does not declare (`per_mode.check_declared`), its row of the signature matrix σ(e, x), the
highest derivative order of each name outside ``pre`` (docs/theory.md §2.1, §4.1;
`mdae_fmu.structure.signature.signature_row`), and whether it has a symbolic form
(`mdae_fmu.symbolic.check_convertible`: the equations the Σ-method differentiates are
converted to sympy, docs/theory.md §4.6). At 10^5 equations each walk cost about a tenth of
the structure stage (docs/performance.md, issue 29); `scan_residuals` answers the three in
one pre-order walk per residual, and keeps only the rows and the (rare) defects: the rows go
to the signature rows' memo (`signature.sigma_row`), the defects are indexed by equation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection

from .. import expr as E
from ..ir import Model
from ..symbolic import SYMBOLIC_CALLS
from .signature import SignatureRows


@dataclass(frozen=True)
class ResidualScan:
    """The defects `scan_residuals` found in a model's residuals: ``undeclared`` the first
    undeclared name each defective residual reads (in walk order), by position in
    ``model.equations``; ``unconvertible`` the error `mdae_fmu.symbolic.check_convertible`
    raises on each residual without a symbolic form (its class and message), by equation id.
    Both are empty for a model without defects. ``heads``: by position in
    ``model.equations``, 1 where the residual has a head (`Defects.heads`) whose name occurs
    nowhere else in it."""
    undeclared: dict[int, str]
    unconvertible: dict[str, tuple[type[Exception], str]]
    heads: bytes = b""


#: The key of ``Model.__dict__`` under which an importer certifies, with True, that every name
#: the residuals of the model's equations read is declared by one of its variables: it
#: resolved each name of the text once against the declarations and refused the file
#: otherwise (`mdae_fmu.importers.flat_modelica.build_model`). The model is frozen and a new
#: model (``dataclasses.replace``) has no such entry, so the certificate stays true; on a model
#: with it, `residual_scan` looks no name up in the declarations again (issue 29).
NAMES_DECLARED = "_names_declared"


def residual_scan(model: Model) -> ResidualScan:
    """`scan_residuals` of ``model``, computed once per model object (the model is
    immutable). The signature rows go to the rows' memo of `signature.sigma_row` (which
    drops each after its last reader) unless that memo exists already. On a model whose
    importer resolved its names (`NAMES_DECLARED`) the walk tests no name against the
    declarations."""
    cached = model.__dict__.get("_residual_scan")
    if cached is None:
        # (no set of the declared names, no test per name, when the importer checked every
        # name its residuals read: `NAMES_DECLARED`)
        declared = None if model.__dict__.get(NAMES_DECLARED) is True \
            else frozenset(v.name for v in model.variables)
        residuals = [eq.residual for eq in model.equations]
        # (the symbol table has a function table exactly when the model has functions,
        # `per_mode.symbol_table`)
        # the if-conditions of each residual too, unless `Model.if_conditions` has them
        conds: list[tuple[E.Expr, ...]] | None = \
            None if "if_conditions" in model.__dict__ else []
        # (the rows as flat arrays, `SignatureRows`: no dict per row kept)
        memo = None if "_sigma_rows" in model.__dict__ else SignatureRows(model.equations)
        _, found = scan_residuals(residuals, declared, bool(model.functions), conds, memo)
        if conds is not None:
            # (`Model.if_conditions` is a cached property: its value goes where it keeps it)
            model.__dict__["if_conditions"] = tuple(conds)
        cached = model.__dict__["_residual_scan"] = ResidualScan(
            undeclared=found.undeclared,
            unconvertible={model.equations[i].id: err
                           for i, err in found.unconvertible.items()},
            heads=bytes(found.heads))
        if memo is not None:
            model.__dict__["_sigma_rows"] = memo
    return cached


class _Resume(int):
    """On `scan_residuals`' stack: the derivative order to resume at (an `int` of its own
    type, so that no node of a malformed tree is taken for one)."""


@dataclass(frozen=True)
class Defects:
    """`scan_residuals`' defects by position: the first undeclared name, the symbolic-form
    error (`ResidualScan`); and ``heads``, one byte per residual: 1 when the residual is
    ``L - R`` or ``m*L - R`` with ``L`` a variable or a chain of ``der`` of one (its head)
    whose name occurs nowhere else in it, the form of most equations ``x = f``: the
    singular-block check answers such a block of one equation solved for its head without
    walking it again (`mdae_fmu.structure.conversion.singular_blocks`, `_generic_entry`)."""
    undeclared: dict[int, str]
    unconvertible: dict[int, tuple[type[Exception], str]]
    heads: bytearray = field(default_factory=bytearray)


#: The rows `scan_residuals` gathers before handing them to its sink at once
#: (`SignatureRows.extend`: no call per row).
ROW_BATCH = 4096


def scan_residuals(residuals: Collection[E.Expr], declared: Collection[str] | None,
                   functions: bool = False,
                   if_conditions: list[tuple[E.Expr, ...]] | None = None,
                   sink: SignatureRows | None = None
                   ) -> tuple[list[dict[str, int]] | SignatureRows, Defects]:
    """The signature rows (`signature.signature_row` of each residual) and the defects
    (`Defects`: undeclared names, symbolic-form errors) of ``residuals`` in one pre-order
    walk of each (the order of `mdae_fmu.expr.walk`, so the first error found
    is `check_convertible`'s). ``declared``: the declared names, or None when every name is
    known to be declared (`NAMES_DECLARED`: no name is looked up). ``functions``: whether the
    model has user functions (a call to
    a name that is not built in then converts, `SymbolTable.functions`). ``if_conditions``:
    a list to which the conditions of each residual's if-expressions are appended, one tuple
    per residual in walk order (`mdae_fmu.ir.Model.if_conditions`, the same walk). ``sink``:
    where the rows go instead of a list (`mdae_fmu.structure.signature.SignatureRows`), in
    batches of `ROW_BATCH`."""
    rows: list[dict[str, int]] | SignatureRows = [] if sink is None else sink
    batch: list[dict[str, int]] = rows if type(rows) is list else []
    add_row = batch.append
    none: tuple[E.Expr, ...] = ()
    add_conds = if_conditions.append if if_conditions is not None else None
    undeclared: dict[int, str] = {}
    unconvertible: dict[int, tuple[type[Exception], str]] = {}
    heads = bytearray()
    add_head = heads.append
    Ref, BinOp, Const, Der, UnOp, Call, If, Time, Str = (
        E.Ref, E.BinOp, E.Const, E.Der, E.UnOp, E.Call, E.If, E.Time, E.Str)
    builtin = E.BUILTIN_FUNCTIONS
    Resume = _Resume
    # the first undeclared name of a residual, before its walk: None (none found yet), or a
    # marker that is no name when no name is to be looked up
    unseen: Any = None if declared is not None else Resume(-1)
    # nodes, each at the derivative order k above it (-1 inside pre(): not counted); a
    # `_Resume` on the stack is the order to return to once the subtree above it is walked
    # (the order changes only under der() of an expression and in pre(): no tuple per node);
    # one stack for all the residuals, empty after each
    stack: list[Any] = []
    pop, push = stack.pop, stack.append
    for i, res in enumerate(residuals):
        orders: dict[str, int] = {}
        bad: Any = unseen
        error: tuple[type[Exception], str] | None = None
        push(res)
        conds: list[E.Expr] | None = None       # (made at the first if-expression)
        k = 0
        # the head (`Defects.heads`) and how many times its name occurs
        head: str | None = None
        if type(res) is BinOp and res.op == "-":
            top: Any = res.left
            if type(top) is BinOp and top.op == "*":
                top = top.right
            while type(top) is Der:
                top = top.arg
            if type(top) is Ref:
                head = top.name
        n_head = 0
        while stack:
            node = pop()
            t = type(node)
            while t is BinOp:           # down its left operands, the right ones kept
                push(node.right)
                node = node.left
                t = type(node)
            if t is Ref:
                name = node.name
                if k == 0:                      # (the usual order: no call)
                    if name not in orders:
                        orders[name] = 0
                elif k > 0 and orders.get(name, -1) < k:
                    orders[name] = k
                if bad is None and name not in declared:     # type: ignore[operator]
                    bad = name
                if name == head:
                    n_head += 1
            elif t is Const or t is Time:
                pass
            elif t is Der:
                arg = node.arg
                if type(arg) is Ref:            # der(x): x at order k + 1, inline
                    name = arg.name
                    if k >= 0 and orders.get(name, -1) < k + 1:
                        orders[name] = k + 1
                    if bad is None and name not in declared:     # type: ignore[operator]
                        bad = name
                    if name == head:
                        n_head += 1
                else:
                    push(Resume(k))
                    push(arg)
                    if k >= 0:
                        k += 1
            elif t is Resume:
                k = int(node)
            elif t is UnOp:
                push(node.arg)
            elif t is Call:
                func, args = node.func, node.args
                if func == "pre":
                    if error is None and not (args and type(args[0]) is Ref):
                        error = (ValueError, "pre() applies to a variable")
                    push(Resume(k))
                    k = -1
                elif error is None and func not in SYMBOLIC_CALLS and (
                        not functions or func in builtin):
                    error = (ValueError, f"no symbolic form for {func}()")
                stack.extend(reversed(args))
            elif t is If:
                if conds is None:
                    conds = []
                conds.append(node.cond)
                push(node.orelse)
                push(node.then)
                push(node.cond)
            elif t is Str:
                if error is None:
                    error = (ValueError, "a string is not a numeric expression")
            elif error is None:
                error = (TypeError, f"not an expression: {node!r}")
        add_row(orders)
        if batch is not rows and len(batch) == ROW_BATCH:
            rows.extend(batch)          # (`SignatureRows.extend`)
            batch.clear()
        add_head(n_head == 1)
        if add_conds is not None:
            add_conds(tuple(conds) if conds else none)
        if bad is not unseen:
            undeclared[i] = bad
        if error is not None:
            unconvertible[i] = error
    if batch is not rows and batch:
        rows.extend(batch)
    return rows, Defects(undeclared=undeclared, unconvertible=unconvertible, heads=heads)


__all__ = ["Defects", "ResidualScan", "residual_scan", "scan_residuals"]
