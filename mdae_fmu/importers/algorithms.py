"""Algorithm sections of a flat Modelica / Base Modelica model (docs/importers.md,
"Algorithm sections").

An ``algorithm`` section of the model is one anonymous `mdae_fmu.functions.Function` of the
values it reads (variables, ``pre(v)``, ``time``) whose outputs are the variables it assigns;
the model gets one equation ``v = alg#k(inputs)`` per assigned variable, so the structural
analysis sees every output depending on every input of the block, and the generated C runs
the statements in order. ``initial algorithm`` gives initial equations the same way. ``when``
statements become when-clauses (assignments in order, later ones seeing the earlier values).
The statements are read by `importers.functions.FunctionResolver`, as a function body is.
"""

from __future__ import annotations

from .. import expr as E
from .. import functions as F
from ..ir import Assertion, Assign, Equation, Reinit, WhenBranch, WhenClause
from .functions import FunctionResolver, assigned_names, first_assign_loc, map_body

def lower_algorithm(builder, resolver: FunctionResolver, items, loc, initial: bool):
    """An algorithm section of the model as equations (and when-clauses) of ``builder``
    (module docstring; Modelica 3.6 §11.1: the section is executed in order as a whole, its
    assigned variables start from their pre or start values). Each pseudo-equation
    ``v = alg#k(inputs)`` has the whole block's inputs as its row of the signature matrix
    (docs/theory.md §4.1), so the structural analysis treats the block as a unit.
    ``resolver`` converts the statements (the same rules as a function body, the model's
    variables in scope)."""
    whens = [x for x in items if x[0] == "when"]
    rest = [x for x in items if x[0] != "when"]
    if whens and initial:
        builder.err(whens[0][2], "when-statements are not allowed in an initial algorithm")
        return
    declared = {v.name: v for v in builder.variables}
    scope = set(declared)
    stmts = resolver._statements(rest, f"algorithm at {loc.short()}", scope, frozenset())
    ret = _find_return(stmts)
    if ret is not None:
        builder.err(ret.loc, "return is only allowed in a function")
        return
    when_assigned = set()
    for w in whens:
        when_assigned |= _when_statement(builder, resolver, w, scope)
    if not stmts:
        return
    assigned: list[str] = []
    assigned_names(stmts, assigned)
    for name in assigned:
        if name in when_assigned:
            builder.err(loc, f"'{name}' is assigned both inside and outside a when-statement "
                             "of this algorithm")
            return
        v = declared.get(name)
        if v is not None and v.variability in ("parameter", "constant"):
            builder.err(loc, f"cannot assign '{name}' in an algorithm: it is a "
                             f"{v.variability}")
            return
    if not initial and _straight_line(stmts, declared):
        for st in stmts:
            builder.equations.append(Equation(f"e{len(builder.equations) + 1}",
                                              E.BinOp("-", E.Ref(st.target), st.value), (),
                                              st.loc or loc))
        return
    stmts = _without_edge(stmts)
    # inputs: every value the block reads (time, pre(v), variables, the event operators
    # initial(), terminal(), sample(...)), in order of appearance
    reads: dict = {}
    for e in F.statement_exprs(stmts):
        for n in E.walk(e):
            if type(n) is E.Call and n.func == "pre" and type(n.args[0]) is E.Ref:
                reads.setdefault(n, f"pre({n.args[0].name})")
            elif type(n) is E.Call and n.func in _EVENT_READS:
                reads.setdefault(n, f"{n.func}#{len(reads) + 1}")
            elif type(n) is E.Time:
                reads.setdefault(n, "time")
            elif type(n) is E.Ref and n.name in declared and n.name not in assigned:
                reads.setdefault(n, n.name)
    outputs = []
    for name in assigned:
        v = declared.get(name)
        init: E.Expr
        if v is not None and v.variability == "discrete" or (v is not None and v.type != "Real"):
            init = E.Call("pre", (E.Ref(name),))
        else:
            init = v.start if v is not None and v.start is not None else E.Const(0.0)
        default: E.Expr
        if isinstance(init, E.Const):
            default = init
        else:
            default = E.Ref(reads.setdefault(init, f"start({name})"))
        outputs.append(F.Param(name, v.type if v is not None else "Real", default, loc))
    mapping: dict[E.Expr, E.Expr] = {node: E.Ref(formal) for node, formal in reads.items()}
    body = map_body(tuple(stmts), lambda e: E.substitute(e, mapping))
    inputs = tuple(F.Param(formal, _read_type(node, declared), None, loc)
                   for node, formal in reads.items())
    fname = f"algorithm at {loc.short()}:{loc.col}" + (" (initial)" if initial else "")
    fn = F.Function(fname, inputs, tuple(outputs), (), body, None, None, False, loc)
    resolver.functions[fname] = fn
    resolver._inline_flag[fname] = False
    args = tuple(reads)
    for k, name in enumerate(assigned):
        call = E.Call(F.call_name(fname, k), args)
        eq_loc = first_assign_loc(stmts, name) or loc
        if initial:
            builder.initial.append(Equation(f"i{len(builder.initial) + 1}",
                                            E.BinOp("-", E.Ref(name), call), (), eq_loc))
        else:
            builder.equations.append(Equation(f"e{len(builder.equations) + 1}",
                                              E.BinOp("-", E.Ref(name), call), (), eq_loc))


#: operators an algorithm function receives as Boolean inputs, evaluated by the caller (the
#: model's event code) rather than inside the function, which has no event context
_EVENT_READS = ("initial", "terminal", "sample")


def _without_edge(stmts: list) -> list:
    """``edge(b)`` in the statements written ``b and not pre(b)`` (Modelica 3.6 §3.7.5), so
    that the function reads ``pre(b)`` as one of its inputs."""
    found = {n for e in F.statement_exprs(stmts) for n in E.walk(e)
             if type(n) is E.Call and n.func == "edge" and len(n.args) == 1}
    if not found:
        return stmts
    mapping: dict[E.Expr, E.Expr] = {
        n: E.BinOp("and", n.args[0], E.UnOp("not", E.Call("pre", n.args))) for n in found}
    return list(map_body(tuple(stmts), lambda e: E.substitute(e, mapping)))


def _straight_line(stmts, declared) -> bool:
    """True when the statements are plain assignments ``v := expr`` to declared variables,
    each variable assigned once and never read before (or by) its own assignment. Executed
    in order, such a block gives every ``v`` the value of ``expr`` evaluated on the final
    values of the earlier ones, so it is the equations ``v = expr`` (Modelica 3.6 §11.1).
    Lowered to equations, the relations of ``expr`` (``b1 := time > 0.5``) are tracked by
    the event code like those of any equation; inside an algorithm function they would be
    evaluated without event, and a when-clause on ``b1`` would never see it rise."""
    seen: set[str] = set()
    for st in stmts:
        if type(st) is not F.Assign or st.target not in declared or st.target in seen:
            return False
        later = {t.target for t in stmts if type(t) is F.Assign} - seen
        if E.current_refs(st.value) & later:
            return False
        seen.add(st.target)
    return bool(stmts)


def _find_return(stmts):
    for s in stmts:
        if isinstance(s, F.Return):
            return s
        for b in ([b for _c, b in s.branches] + [s.orelse] if isinstance(s, F.IfStmt)
                  else [s.body] if isinstance(s, (F.ForStmt, F.WhileStmt)) else []):
            r = _find_return(b)
            if r is not None:
                return r
    return None


def _read_type(node, declared) -> str:
    if type(node) is E.Ref and node.name in declared:
        return declared[node.name].type
    if type(node) is E.Call and node.func in _EVENT_READS:
        return "Boolean"
    if type(node) is E.Call:
        arg = node.args[0]
        if type(arg) is E.Ref and arg.name in declared:
            return declared[arg.name].type
    return "Real"


def _when_statement(builder, resolver, item, scope) -> set:
    """A when-statement of a model algorithm as a when-clause: in each branch the assignments
    run in order (a later value sees the earlier ones), if-statements become if-expressions
    (``pre(v)`` where a branch does not assign v), reinit/assert/terminate are actions."""
    _, branches, wloc = item
    out = []
    assigned: set[str] = set()
    targets: set[str] = set()
    for _c, _l, body in branches:
        _targets(body, targets)
    for cond, bloc, body in branches:
        env: dict = {name: (E.Call("pre", (E.Ref(name),)), None) for name in targets}
        order: list = []
        actions: list = []
        ok = _when_body(builder, body, env, order, actions)
        if not ok:
            return assigned
        assigns = [Assign(var=name, value=env[name][0], loc=env[name][1]) for name in order]
        for a in assigns:
            builder.assigned.setdefault(a.var, a.loc)
            assigned.add(a.var)
        out.append(WhenBranch(condition=cond, actions=tuple(assigns + actions), loc=bloc))
    builder.whens.append(WhenClause(id=f"w{len(builder.whens) + 1}", branches=tuple(out), loc=wloc))
    return assigned


def _targets(body, out: set) -> None:
    """The variables a when-statement's branch assigns (also inside its if-statements)."""
    for x in body:
        if x[0] == "assign" and type(x[1]) is E.Ref:
            out.add(x[1].name)
        elif x[0] == "if":
            for _c, _l, b in x[1]:
                _targets(b, out)
            _targets(x[2] or [], out)


def _guarded(a: Assertion, arms) -> Assertion:
    """The assertion ``a`` of the last of the if-statement's ``arms`` so far, checked only
    where that branch is taken: its condition ``if taken then cond else true``."""
    taken = arms[-1][0] if arms[-1][0] is not None else E.Const(True)
    for c, _e, _o in arms[:-1]:
        taken = E.BinOp("and", E.UnOp("not", c), taken)
    return Assertion(
        cond=E.If(taken, a.cond, E.Const(True)),
        message=a.message,
        level=a.level,
        guard=a.guard,
        loc=a.loc,
    )


def _when_body(builder, body, env, order, actions) -> bool:
    """The statements ``body`` of a when-branch run symbolically: ``env`` maps each variable
    to its value so far (a variable the when-statement assigns starts from ``pre(v)``,
    Modelica 3.6 §11.1.2, so ``d := d + 1`` is ``d = pre(d) + 1``), ``order`` lists the
    variables assigned, in order, ``actions`` gets reinit/assert/terminate."""
    ctx = builder.ctx

    def cur(e):
        m = {E.Ref(n): v for n, (v, _l) in env.items()}
        m.update({p: p for p in (E.Call("pre", (E.Ref(n),)) for n in env)})   # pre(v) stays
        return E.substitute(e, m) if m else e

    for x in body:
        tag = x[0]
        if tag == "assign":
            _, lhs, rhs, where = x
            loc = ctx.where_loc(where)
            if type(lhs) is not E.Ref or lhs is E.TIME:
                builder.err(loc, "the left side of ':=' in a when-statement must be a variable")
                return False
            if lhs.name not in order:
                order.append(lhs.name)
            env[lhs.name] = (cur(rhs), loc)
        elif tag == "stmt":
            s = x[1]
            if s is None:
                continue
            a = builder.action(s)
            if isinstance(a, Reinit):
                a = Reinit(var=a.var, value=cur(a.value), loc=a.loc)
            elif isinstance(a, Assertion):
                a = Assertion(
                    cond=cur(a.cond), message=a.message, level=a.level, guard=a.guard, loc=a.loc
                )
            if a is not None:
                actions.append(a)
        elif tag == "if":
            _, branches, orelse, loc = x
            arms = []
            for cond, _bl, b in branches + ([(None, None, orelse)] if orelse else []):
                sub_env = dict(env)
                sub_order = list(order)
                sub_actions: list = []
                if not _when_body(builder, b, sub_env, sub_order, sub_actions):
                    return False
                if any(not isinstance(a, Assertion) for a in sub_actions):
                    builder.err(loc, "reinit and terminate inside an if-statement inside a "
                                     "when-statement are not supported (write the if-statement "
                                     "as an elsewhen branch)")
                    return False
                arms.append((None if cond is None else cur(cond), sub_env, sub_order))
                actions.extend(_guarded(a, arms) for a in sub_actions)
            names = []
            for _c, _e, o in arms:
                for n in o:
                    if n not in names:
                        names.append(n)
            for n in names:
                default = env.get(n, (E.Call("pre", (E.Ref(n),)), loc))
                value = default[0]
                if arms and arms[-1][0] is None:
                    value = arms[-1][1].get(n, default)[0]
                    conds = arms[:-1]
                else:
                    conds = arms
                for c, e, _o in reversed(conds):
                    value = E.If(c, e.get(n, default)[0], value)
                if n not in order:
                    order.append(n)
                env[n] = (value, env.get(n, (None, None))[1] or loc)
        elif tag in ("for", "while", "return", "break", "when"):
            where = x[-1]
            builder.err(where, f"'{tag}' statements inside a when-statement of a model "
                               "algorithm are not supported")
            return False
    return True
