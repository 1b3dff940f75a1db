"""Scalarization of a model's algorithm sections (docs/importers.md, "Algorithm sections";
issue 13 items 4 and 5), run by `lowering` on files it lowers.

The statements keep their structure and order; only their expressions and targets are
rewritten as the equations are: enumeration literals become their positions, array values
their elements. Beyond that:

* a ``for`` statement whose range is a parameter expression is unrolled (its body once per
  index value, the index a constant there), so that ``x[i] := ...`` assigns the scalar
  ``x[1]``, ``x[2]``...; a loop with ``break``, ``return`` or a range that is not a parameter
  expression stays a loop (its subscripts must then not depend on the index);
* ``x := e`` with an array ``x`` becomes one assignment per element (Modelica 3.6 §11.2.1:
  the sizes must agree);
* ``when b then`` with an array ``b`` (or ``when {c1, c2} then``) fires when any element
  becomes true (§11.2.7, §8.3.5.1): one branch per element, as for when-equations.
"""

from __future__ import annotations

from .. import expr as E
from . import arrays as A
from .functions import is_range
from .lowered import ElementAlias, LowerError, Rec

#: unroll a for-statement of a model algorithm up to this many iterations
MAX_UNROLLED = 10_000


def lower_statements(low, items, env) -> list:
    """The statements ``items`` (parse tuples of `functions.FunctionCallbacks`) with scalar
    expressions; errors are reported through ``low`` (a `lower_context.LowerContext`) at the
    statement's location."""
    out: list = []
    for it in items:
        if it is None:
            continue
        saved, low.range_checks = low.range_checks, []
        lowered: list = []
        try:
            _statement(low, it, env, lowered)
        except LowerError as err:
            low.report(err, _where(it))
        finally:
            checks, low.range_checks = low.range_checks, saved
        out.extend(("stmt", c) for c in checks)     # before the statement that indexes
        out.extend(lowered)
    return out


def _fixed_subscripts(low, f, *args):
    """``f(*args)`` where a variable subscript is refused
    (`lower_subscripts.variable_subscript`): an assignment target."""
    saved, low.range_checks = low.range_checks, None
    try:
        return f(*args)
    finally:
        low.range_checks = saved


def _where(it):
    tag = it[0]
    if tag == "assign":
        return it[3]
    if tag == "stmt":
        return it[1].loc if it[1] is not None else None
    return it[-1]


def _statement(low, it, env, out):
    tag = it[0]
    if tag == "assign":
        _assign(low, it, env, out)
    elif tag == "stmt":
        low.stmt(it[1], env, out)
    elif tag == "if":
        _, branches, orelse, loc = it
        arms = [(low.scalar(c, env, bloc, "if-condition"), bloc,
                 lower_statements(low, body, env)) for c, bloc, body in branches]
        els = None if orelse is None else lower_statements(low, orelse, env)
        out.append(("if", arms, els, loc))
    elif tag == "when":
        branches = []
        for cond, bloc, body in it[1]:
            c = low.value(cond, env, bloc)
            sub = lower_statements(low, body, env)
            conds = c.items if type(c) is A.Arr else (c,)
            branches.extend((x, bloc, sub) for x in conds)
        out.append(("when", branches, it[2]))
    elif tag == "for":
        _for(low, it, env, out)
    elif tag == "while":
        _while(low, it, env, out)
    else:                                   # return, break
        out.append(it)


def _assign(low, it, env, out):
    _, lhs, rhs, where = it
    from .functions import Tuple
    if type(lhs) is Tuple:                  # (a, b) := f(x)
        values = low.tuple_values(rhs, env, len(lhs.items))
        if values is not None:              # a function with arrays: element by element
            for x, v in zip(lhs.items, values):
                if x is not None:
                    _assign(low, ("assign", x, _Value(v), where), env, out)
            return
        items = [x if x is None else _fixed_subscripts(low, low.scalar, x, env, where, "target")
                 for x in lhs.items]
        out.append(
            ("assign", Tuple(items=items, error=lhs.error), low.value(rhs, env, where), where)
        )
        return
    if type(lhs) is E.Ref and lhs.name in env:
        low.fail(f"cannot assign the for-index '{lhs.name}'", where)
    target = lhs.value if type(lhs) is _Target else \
        _fixed_subscripts(low, low.value, lhs, env, where)
    value = rhs.value if type(rhs) is _Value else low.value(rhs, env, where)
    if type(target) is Rec or type(value) is Rec:     # `state := R(p, T)`, field by field
        if type(target) is not Rec or type(value) is not Rec:
            low.fail("a record is assigned to a value that is not a record", where)
        given = dict(value.fields)
        for fname, t in target.fields:
            if fname not in given:
                low.fail(f"the record assigned has no field '{fname}'", where)
            _assign(low, ("assign", _Target(t), _Value(given[fname]), where), env, out)
        return
    if type(target) is A.Arr:
        if type(value) is not A.Arr or value.shape != target.shape:
            low.fail(f"the two sides of ':=' have different sizes: {list(target.shape)} and "
                     f"{list(A.shape_of(value))}", where)
        for t, v in zip(target.items, value.items):
            out.append(("assign", t, v, where))
        return
    if type(value) is A.Arr:
        low.fail(f"the two sides of ':=' have different sizes: [] and "
                 f"{list(value.shape)}", where)
    out.append(("assign", target, value, where))


class _Target:
    """A target already lowered (a field of a record target)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Value:
    """A right side already lowered (an output of a tuple call)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _for(low, it, env, out):
    """Unroll ``for`` when its ranges are parameter expressions (module docstring)."""
    _, indices, body, loc = it
    if not _jumps(body):
        try:
            envs = low.iterate(indices, env)
        except LowerError:
            envs = None
        if envs is not None and len(envs) <= MAX_UNROLLED:
            for en in envs:
                out.extend(lower_statements(low, body, en))
            return
    inner = {k: v for k, v in env.items() if k not in {n for n, _r, _l in indices}}
    if len(indices) == 1 and not is_range(indices[0][1]):
        _for_elements(low, indices[0], body, inner, loc, out)
        return
    ranges = []
    for name, rng, iloc in indices:
        if not is_range(rng):
            low.fail("a for-range must be 'a:b' or 'a:step:b' (or one vector of elements)",
                     iloc)
        ranges.append((name, A.Range(*(None if x is None else
                                       low.scalar(x, inner, iloc, "for-range bound")
                                       for x in (rng.start, rng.step, rng.stop)), iloc),
                       iloc))
    out.append(("for", ranges, lower_statements(low, body, inner), loc))


def _for_elements(low, index, body, env, loc, out) -> None:
    """``for v in x loop body end for`` over the elements of a vector ``x`` of variables
    (Modelica 3.6 §11.2.2.2: the index takes the values of the vector's elements): unrolled
    with ``v`` the element itself, or, when the body jumps (``break``, ``return``), the loop
    over the positions ``v$i in 1:n`` with ``v`` the element at ``v$i`` (an if-chain over the
    elements: OpenModelica's ``Break1``)."""
    name, rng, iloc = index
    vec = low.value(rng, env, iloc)
    if type(vec) is not A.Arr or len(vec.shape) != 1 or \
            any(type(x) is A.Arr for x in vec.items):
        low.fail(f"the range of for-index '{name}' must be 'a:b', 'a:step:b' or a vector",
                 iloc)
    items = vec.items
    if not _jumps(body) and len(items) <= MAX_UNROLLED:
        for x in items:
            out.extend(lower_statements(low, body, {**env, name: ElementAlias(x)}))
        return
    if not items:
        return
    pos = f"{name}$i"
    chosen = items[-1]
    for j in range(len(items) - 2, -1, -1):
        chosen = E.If(E.BinOp("==", E.Ref(pos), E.Const(j + 1)), items[j], chosen)
    rng_pos = A.Range(E.Const(1), None, E.Const(len(items)), iloc)
    out.append(("for", [(pos, rng_pos, iloc)],
                lower_statements(low, body, {**env, name: ElementAlias(chosen)}), loc))


def _while(low, it, env, out):
    """``while c loop body``; when ``c`` has variable subscripts, their range checks run
    before each evaluation of ``c``: ``while true loop checks; if not c then break; end if;
    body end while``."""
    _, cond, body, loc = it
    saved, low.range_checks = low.range_checks, []
    try:
        c = low.scalar(cond, env, loc, "while-condition")
    finally:
        checks, low.range_checks = low.range_checks, saved
    stmts = lower_statements(low, body, env)
    if checks:
        exit_ = ("if", [(E.UnOp("not", c), loc, [("break", loc)])], None, loc)
        stmts = [("stmt", ck) for ck in checks] + [exit_] + stmts
        c = E.Const(True)
    out.append(("while", c, stmts, loc))


def _jumps(body) -> bool:
    """``break`` or ``return`` somewhere in ``body`` (not unrollable)."""
    for it in body:
        if it is None:
            continue
        tag = it[0]
        if tag in ("break", "return"):
            return True
        if tag == "if":
            if any(_jumps(b) for _c, _l, b in it[1]) or _jumps(it[2] or []):
                return True
        elif tag == "when":
            if any(_jumps(b) for _c, _l, b in it[1]):
                return True
        elif tag in ("for", "while"):
            if _jumps(it[2]):
                return True
    return False
