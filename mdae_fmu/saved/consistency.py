"""Checks of a saved analysis once read: its objects hold together (docs/decisions.md §11,
"Consistency").

The reader (`objects`) guarantees that every value has its field's type; this module checks
what types cannot say, so that a file edited by hand or by an attacker is refused here (exit
code 2, with the place) rather than met later as an internal error in code generation:

* the model: variable, equation and function names unique; every name an expression reads is
  declared (a variable of the model, a formal parameter of the function); every call names a
  built-in function with its number of arguments or a function of the model with at most its
  inputs; values of parameters and start values pass the importer's checks
  (`mdae_fmu.importers.values.check_model`);
* the analysis refers to the model: names of variables, equation ids and the equations of the
  mode-change system, instances ``(name, order)`` with orders within `MAX_ORDER`, guard
  indices, configuration indices of the automaton's edges and instants of restart steps in
  range, valuations as long as the guards, the symbols of every sympy expression made of the
  model's names (``x``, ``der(x)``, ``der(x,2)``, ``pre(x)``, ``x+``, ``x-``, ``time``), and
  each symbol table consistent with itself.

Paths are those of the reader: fields and indices from ``payload``.
"""

from __future__ import annotations

import re
from typing import NoReturn

import sympy as sp
from sympy.core.function import AppliedUndef

from .. import expr as E
from ..functions import call_name, split_call_name
from ..ir import EXPERIMENT_KEYS
from .limits import MAX_ORDER
from .objects import FormatError

_BUILTIN_CALLS = {**E.BUILTIN_FUNCTIONS, "String": (1, 2, 3, 4)}
#: Kinds of values: "n" a number, "b" a condition, "s" a string, "?" not known.
_TYPE_KINDS = {"Real": "n", "Integer": "n", "Boolean": "b", "String": "s"}
_CONDITION_CALLS = frozenset(("edge", "change", "initial", "terminal", "sample"))
_ORDERING = frozenset(("<", "<=", ">", ">="))
_KIND_NAMES = {"n": "a number", "b": "a condition", "s": "a string", "?": "a value"}
_FIXED_SYMBOLS = frozenset(("time", "$homotopy"))
_DER_K = re.compile(r"(.*),(\d+)\Z", re.S)


def check(model, analysis) -> None:
    """`FormatError` at the first reference of ``analysis`` (and ``model``) that does not hold
    (module docstring)."""
    names = _Model(model, "payload.model")
    if analysis.model_name != model.name:
        _fail("payload.analysis.model_name", f"the analysis is of model "
                                             f"{analysis.model_name!r}, the saved model is "
                                             f"{model.name!r}")
    code = names
    if analysis.code_model is not None:
        code = _Model(analysis.code_model, "payload.analysis.code_model")
        if analysis.code_model.name != model.name:
            _fail("payload.analysis.code_model.name", f"model {analysis.code_model.name!r}, "
                                                      f"not {model.name!r}")
    if analysis.modes is not None and \
            (analysis.code_model is None) != (analysis.code_modes is None):
        # (the one analysis, `modes` None, compiles code_model through its guarded schedule)
        _fail("payload.analysis.code_modes", "code_model and code_modes go together")
    index = _index(analysis)
    names.index = code.index = index
    tables: dict[int, object] = {}
    if analysis.modes is not None:
        _report(analysis.modes, names, "payload.analysis.modes", tables)
    if analysis.code_modes is not None:
        _report(analysis.code_modes, code, "payload.analysis.code_modes", tables)
    if analysis.automaton is not None:
        _automaton(analysis.automaton, names.union(code), "payload.analysis.automaton", tables)
    if analysis.guarded is not None:
        _guarded(analysis.guarded, code, "payload.analysis.guarded")
        single = analysis.guarded.single
        if single is not None and single is not (analysis.code_modes or analysis.modes):
            # (the schedule of a model of one mode wraps the report code generation reads)
            _fail("payload.analysis.guarded.single", "the schedule of one mode must be the "
                  "analysis' own per-mode report (code_modes, else modes)")


def _index(analysis) -> int:
    """The highest number of differentiations the analysis reports: equation offsets c of
    the per-mode reports, indices of the automaton's modes (checked within `MAX_ORDER`)."""
    top = 0
    for attr in ("modes", "code_modes"):
        report = getattr(analysis, attr)
        for i, ma in enumerate(report.modes if report is not None else ()):
            for n, k in ma.c.items():
                _order(k, f"payload.analysis.{attr}.modes[{i}].c[{n!r}]")
                top = max(top, k)
    if analysis.automaton is not None:
        for i, mi in enumerate(analysis.automaton.modes):
            _order(mi.index, f"payload.analysis.automaton.modes[{i}].index")
            top = max(top, mi.index)
    return top


def _fail(path: str, message: str) -> NoReturn:
    raise FormatError(path, message)


class _Model:
    """The names a model declares, its expressions checked (module docstring)."""

    def __init__(self, model, path: str, check: bool = True):
        self.variables: set[str] = set()
        self.equations: set[str] = set()
        self.functions: dict = {}
        self.calls: dict = {}
        #: the kind of each name expressions read (`expression_kind`)
        self.kinds: dict[str, str] = {}
        #: the highest derivative order of each variable in the model's equations
        self.sigma: dict[str, int] = {}
        #: the bound of the instances' orders above sigma: the index (`check`)
        self.index = 0
        if not check:
            return
        self.name = model.name
        for i, v in enumerate(model.variables):
            if not v.name:
                _fail(f"{path}.variables[{i}].name", "empty variable name")
            if v.name in self.variables:
                _fail(f"{path}.variables[{i}].name", f"variable {v.name!r} declared twice")
            self.variables.add(v.name)
        strings = {s.name for s in model.strings}
        for i, f in enumerate(model.functions):
            if f.name in self.functions:
                _fail(f"{path}.functions[{i}].name", f"function {f.name!r} defined twice")
            self.functions[f.name] = f
        self.calls = {call_name(f.name, k): f for f in self.functions.values()
                      for k in range(len(f.outputs))}
        self.kinds = {v.name: _TYPE_KINDS.get(v.type, "?") for v in model.variables}
        self.kinds.update((s, "s") for s in strings)
        scope = self.kinds
        for i, f in enumerate(model.functions):
            _function(f, self, f"{path}.functions[{i}]")
        for i, v in enumerate(model.variables):
            for attr in ("start", "nominal", "min", "max", "binding"):
                e = getattr(v, attr)
                if e is not None:
                    self.expr(e, scope, f"{path}.variables[{i}].{attr}")
        for group in ("equations", "initial_equations"):
            ids: set[str] = set()
            for i, eq in enumerate(getattr(model, group)):
                where = f"{path}.{group}[{i}]"
                if eq.id in ids:
                    _fail(where + ".id", f"equation id {eq.id!r} used twice")
                ids.add(eq.id)
                self.expr(eq.residual, scope, where + ".residual", residual=True)
                for n, k in E.derivative_orders(eq.residual).items():
                    if k > self.sigma.get(n, -1):
                        self.sigma[n] = k
                for k, lit in enumerate(eq.guard):
                    self.expr(lit.cond, scope, f"{where}.guard[{k}].cond")
            if group == "equations":
                self.equations = ids
        whens: set[str] = set()
        for i, w in enumerate(model.whens):
            where = f"{path}.whens[{i}]"
            if w.id in whens:
                _fail(where + ".id", f"when-clause id {w.id!r} used twice")
            whens.add(w.id)
            for k, b in enumerate(w.branches):
                self.expr(b.condition, scope, f"{where}.branches[{k}].condition")
                for m, a in enumerate(b.actions):
                    self._action(a, scope, f"{where}.branches[{k}].actions[{m}]")
        for i, a in enumerate(model.assertions):
            self._action(a, scope, f"{path}.assertions[{i}]")
        for i, (key, _) in enumerate(model.experiment):
            if key not in EXPERIMENT_KEYS:
                _fail(f"{path}.experiment[{i}][0]", f"unknown experiment key {key!r} "
                                                    f"({', '.join(EXPERIMENT_KEYS)})")
        from ..importers.values import check_model
        problems = check_model(model.variables)
        if problems:
            loc, message = problems[0]
            k = next((i for i, v in enumerate(model.variables) if v.loc is loc), 0)
            _fail(f"{path}.variables[{k}]", message)

    def union(self, other: _Model) -> _Model:
        if other is self:
            return self
        out = _Model(None, "", check=False)
        out.name = self.name
        out.variables = self.variables | other.variables
        out.equations = self.equations | other.equations
        out.functions = {**other.functions, **self.functions}
        out.calls = {**other.calls, **self.calls}
        out.kinds = {**other.kinds, **self.kinds}
        out.sigma = {n: max(self.sigma.get(n, 0), other.sigma.get(n, 0))
                     for n in self.sigma.keys() | other.sigma.keys()}
        out.index = max(self.index, other.index)
        return out

    def order(self, name: str, k: int, path: str) -> None:
        """``k`` within `MAX_ORDER` and, for a variable, within its highest order in the
        equations plus the index of the analysis, plus one (the leading instance of a state
        one differentiation further)."""
        _order(k, path)
        top = self.sigma.get(name, 0) + self.index + 1
        if name in self.variables and k > top:
            _fail(path, f"derivative order {k} of {name!r}: its equations have order "
                        f"{self.sigma.get(name, 0)} and the index is {self.index}")

    def _action(self, a, scope: dict, path: str) -> None:
        kind = type(a).__name__
        if kind in ("Reinit", "Assign"):
            if a.var not in self.variables:
                _fail(path + ".var", f"{kind.lower()} of {a.var!r}, not a variable of the "
                                     "model")
            self.expr(a.value, scope, path + ".value")
        elif kind == "Assertion":
            self.expr(a.cond, scope, path + ".cond")
            self.expr(a.message, scope, path + ".message")
            if a.level not in ("error", "warning"):
                _fail(path + ".level", f"assertion level {a.level!r} (error or warning)")
            for k, lit in enumerate(a.guard):
                self.expr(lit.cond, scope, f"{path}.guard[{k}].cond")

    def expr(self, e: E.Expr, scope: dict, path: str, residual: bool = False) -> None:
        """Every name ``e`` reads is in ``scope`` (name -> kind), every call known, no
        arithmetic on a condition nor logic on a number (`expression_kind`; ``residual``:
        ``e`` is an equation's ``lhs - rhs``, whose two sides may be conditions)."""
        for node in E.walk(e):
            if isinstance(node, E.Ref):
                if node.name not in scope:
                    _fail(path, f"{node.name!r} is not declared")
            elif isinstance(node, E.Call):
                self._call(node, path)
        if residual and isinstance(e, E.BinOp) and e.op == "-":
            expression_kind(e.left, scope, self.calls, path)
            expression_kind(e.right, scope, self.calls, path)
        else:
            expression_kind(e, scope, self.calls, path)

    def _call(self, node: E.Call, path: str) -> None:
        n = len(node.args)
        counts = _BUILTIN_CALLS.get(node.func)
        if counts is not None:
            if n not in counts:
                _fail(path, f"{node.func}() with {n} arguments (it takes "
                            f"{' or '.join(map(str, counts))})")
            if node.func == "pre" and type(node.args[0]) is not E.Ref:
                _fail(path, "pre() of an expression (it applies to a variable)")
            return
        f = self.calls.get(node.func)
        if f is None:
            _fail(path, f"call of {node.func!r}, neither a built-in function nor a function "
                        "of the model")
        if n > len(f.inputs):
            _fail(path, f"{node.func}() with {n} arguments (it has {len(f.inputs)} inputs)")


def expression_kind(e: E.Expr, scope: dict, calls: dict, path: str) -> str:
    """The kind of ``e`` ("n" number, "b" condition, "s" string, "?" either), refusing an
    operand of the wrong kind where the kind is certain: arithmetic, ordering, ``der`` and
    mathematical functions on a condition, logic and if-conditions on a number (code
    generation would fail on them). Names have the kinds ``scope`` gives."""
    if isinstance(e, E.Const):
        return "b" if isinstance(e.value, bool) else "n"
    if isinstance(e, E.Str):
        return "s"
    if isinstance(e, E.Ref):
        return scope.get(e.name, "?")
    if isinstance(e, E.Time):
        return "n"

    def need(sub: E.Expr, refused: str, what: str) -> str:
        k = expression_kind(sub, scope, calls, path)
        if k in refused:
            _fail(path, f"{what} of {_KIND_NAMES[k]}")
        return k

    if isinstance(e, E.Der):
        need(e.arg, "bs", "der()")
        return "n"
    if isinstance(e, E.UnOp):
        if e.op == "not":
            need(e.arg, "ns", "'not'")
            return "b"
        need(e.arg, "bs", f"unary {e.op!r}")
        return "n"
    if isinstance(e, E.BinOp):
        op = e.op
        if op in ("and", "or"):
            need(e.left, "ns", repr(op))
            need(e.right, "ns", repr(op))
            return "b"
        if op in ("==", "<>"):
            expression_kind(e.left, scope, calls, path)
            expression_kind(e.right, scope, calls, path)
            return "b"
        if op == "+":               # numbers, or strings (messages) joined
            sides = (expression_kind(e.left, scope, calls, path),
                     expression_kind(e.right, scope, calls, path))
            if "b" in sides or "s" in sides and "n" in sides:
                _fail(path, f"'+' of {_KIND_NAMES[sides[0]]} and {_KIND_NAMES[sides[1]]}")
            return "s" if "s" in sides else "n"
        need(e.left, "bs", repr(op))
        need(e.right, "bs", repr(op))
        return "b" if op in _ORDERING else "n"
    if isinstance(e, E.If):
        need(e.cond, "ns", "an if-condition")
        a = expression_kind(e.then, scope, calls, path)
        b = expression_kind(e.orelse, scope, calls, path)
        return a if a == b else "?"
    if isinstance(e, E.Call):
        f = e.func
        kinds = [expression_kind(a, scope, calls, path) for a in e.args]
        if f in ("pre", "noEvent"):
            return kinds[0]
        if f == "smooth":
            return kinds[1]
        if f == "String":
            return "s"
        if f in _CONDITION_CALLS:
            return "b"
        fn = calls.get(f)
        if fn is not None:
            out = split_call_name(f)[1]
            return _TYPE_KINDS.get(fn.outputs[out].type, "?") if out < len(fn.outputs) else "?"
        for kind in kinds:
            if kind in "bs":
                _fail(path, f"{f}() of {_KIND_NAMES[kind]}")
        return "n"
    return "?"


def _function(f, names: _Model, path: str) -> None:
    seen: dict[str, str] = {}
    for group in ("inputs", "outputs", "locals"):
        for i, p in enumerate(getattr(f, group)):
            if p.name in seen:
                _fail(f"{path}.{group}[{i}].name", f"{p.name!r} declared twice in function "
                                                   f"{f.name}")
            seen[p.name] = _TYPE_KINDS.get(p.type, "?")
    writable = {p.name for p in f.outputs + f.locals}
    for group in ("inputs", "outputs", "locals"):
        for i, p in enumerate(getattr(f, group)):
            if p.default is not None:
                names.expr(p.default, seen, f"{path}.{group}[{i}].default")
    if f.derivative is not None:
        d = f.derivative
        if d.function not in names.functions:
            _fail(path + ".derivative.function", f"derivative function {d.function!r} is not "
                                                 "a function of the model")
        inputs = {p.name for p in f.inputs}
        for i, n in enumerate(d.without):
            if n not in inputs:
                _fail(f"{path}.derivative.without[{i}]", f"{n!r} is not an input of {f.name}")
    if f.smooth_order is not None and not 0 <= f.smooth_order <= MAX_ORDER:
        _fail(path + ".smooth_order", f"smooth order {f.smooth_order} outside 0 .. "
                                      f"{MAX_ORDER}")
    _statements(f.body, seen, writable, names, path + ".body")


def _statements(body, scope: dict, writable: set, names: _Model, path: str) -> None:
    from .. import functions as F
    for i, s in enumerate(body):
        where = f"{path}[{i}]"
        t = type(s)
        if t is F.Assign:
            if s.target not in writable:
                _fail(where + ".target", f"assignment to {s.target!r}, not an output or a "
                                         "protected variable")
            names.expr(s.value, scope, where + ".value")
        elif t is F.TupleAssign:
            names.expr(s.call, scope, where + ".call")
            callee = names.functions.get(s.call.func)
            if callee is None:
                _fail(where + ".call", f"{s.call.func!r} is not a function of the model")
            if len(s.targets) > len(callee.outputs):
                _fail(where + ".targets", f"{len(s.targets)} targets for the "
                                          f"{len(callee.outputs)} outputs of {callee.name}")
            for k, n in enumerate(s.targets):
                if n is not None and n not in writable:
                    _fail(f"{where}.targets[{k}]", f"assignment to {n!r}, not an output or a "
                                                   "protected variable")
        elif t is F.IfStmt:
            for k, (cond, branch) in enumerate(s.branches):
                names.expr(cond, scope, f"{where}.branches[{k}][0]")
                _statements(branch, scope, writable, names, f"{where}.branches[{k}][1]")
            _statements(s.orelse, scope, writable, names, where + ".orelse")
        elif t is F.ForStmt:
            for attr in ("start", "step", "stop"):
                names.expr(getattr(s, attr), scope, f"{where}.{attr}")
            _statements(s.body, {**scope, s.var: "n"}, writable, names, where + ".body")
        elif t is F.WhileStmt:
            names.expr(s.cond, scope, where + ".cond")
            _statements(s.body, scope, writable, names, where + ".body")
        elif t is F.AssertStmt:
            names.expr(s.cond, scope, where + ".cond")
            if not isinstance(s.message, str):
                names.expr(s.message, scope, where + ".message")
            if s.level not in ("error", "warning"):
                _fail(where + ".level", f"assertion level {s.level!r} (error or warning)")


# --- the analysis ----------------------------------------------------------------------------

def _order(k: int, path: str) -> None:
    if not 0 <= k <= MAX_ORDER:
        _fail(path, f"derivative order {k} outside 0 .. {MAX_ORDER}")


def _names(values, known: set, what: str, path: str) -> None:
    for i, n in enumerate(values):
        if n not in known:
            _fail(f"{path}[{i}]", f"{n!r} is not {what}")


def _instances(pairs, known: set, what: str, path: str, m: _Model | None = None) -> None:
    for i, (n, k) in enumerate(pairs):
        if n not in known:
            _fail(f"{path}[{i}][0]", f"{n!r} is not {what}")
        if m is None:
            _order(k, f"{path}[{i}][1]")
        else:
            m.order(n, k, f"{path}[{i}][1]")


def _report(r, m: _Model, path: str, tables: dict) -> None:
    """A per-mode report (`mdae_fmu.structure.per_mode.ModesReport`) of model ``m``."""
    if r.model_name != m.name:
        _fail(path + ".model_name", f"report of model {r.model_name!r}, not {m.name!r}")
    var, eqs = m.variables, m.equations
    for attr in ("unknowns", "discrete", "inputs"):
        _names(getattr(r, attr), var, "a variable of the model", f"{path}.{attr}")
    _names(r.discrete_equations, eqs, "an equation of the model", path + ".discrete_equations")
    for i, e in enumerate(r.guard_exprs):
        m.expr(e, m.kinds, f"{path}.guard_exprs[{i}]")
    if r.exit_code not in (0, 1):
        _fail(path + ".exit_code", f"exit code {r.exit_code} (0 or 1)")
    if r.n_valuations < 0:
        _fail(path + ".n_valuations", f"{r.n_valuations} valuations")
    _table(r.symbols, m, path + ".symbols", tables)
    guards = set(r.long_guards)
    for i, ma in enumerate(r.modes):
        where = f"{path}.modes[{i}]"
        _names([g for g, _ in ma.valuation], guards, "a long guard of the report",
               where + ".valuation")
        for attr in ("equations", "over_equations", "under_equations"):
            _names(getattr(ma, attr), eqs, "an equation of the model", f"{where}.{attr}")
        for attr in ("unknowns", "absent", "over_variables", "under_variables"):
            _names(getattr(ma, attr), var, "a variable of the model", f"{where}.{attr}")
        for attr, known, what in (("c", eqs, "an equation"), ("d", var, "a variable")):
            for n, k in getattr(ma, attr).items():
                if n not in known:
                    _fail(f"{where}.{attr}[{n!r}]", f"{n!r} is not {what} of the model")
                if attr == "c":
                    _order(k, f"{where}.{attr}[{n!r}]")
                else:
                    m.order(n, k, f"{where}.{attr}[{n!r}]")
        for attr in ("states", "leading", "selected_states", "computed_states"):
            _instances([(x.name, x.order) for x in getattr(ma, attr)], var,
                       "a variable of the model", f"{where}.{attr}", m)
        for attr in ("solved", "consistency"):
            for k, le in enumerate(getattr(ma, attr)):
                _latent(le, m, r.symbols, f"{where}.{attr}[{k}]", tables)
        for attr in ("leading", "states", "selected_states", "computed_states"):
            for k, x in enumerate(getattr(ma, attr)):
                d = ma.d.get(x.name)
                if d is None if ma.ok else False:
                    _fail(f"{where}.{attr}[{k}]", f"{x.name!r} has no offset d in the mode")
                if d is not None and (x.order != d if attr == "leading" else x.order >= d):
                    _fail(f"{where}.{attr}[{k}].order", f"order {x.order} of {x.name!r}, "
                          f"whose offset d is {d} (leading instances have order d, states "
                          "lower orders)")
        solved = {(le.eq_id, le.k) for le in ma.solved}
        leading = set(ma.leading)
        for k, b in enumerate(ma.blocks):
            _square(b, f"{where}.blocks[{k}]")
            for j, key in enumerate(b.equations):
                if key not in solved:
                    _fail(f"{where}.blocks[{k}].equations[{j}]", f"{key!r} is not among the "
                                                                 "mode's solved equations")
            for j, x in enumerate(b.unknowns):
                if x not in leading:
                    _fail(f"{where}.blocks[{k}].unknowns[{j}]", f"{x} is not among the mode's "
                                                                "leading instances")
        if ma.status not in ("ok", "singular", "overdetermined", "underdetermined"):
            _fail(where + ".status", f"status {ma.status!r}")
        for attr in ("index", "structural_index"):
            if not -1 <= getattr(ma, attr) <= MAX_ORDER + 1:
                _fail(f"{where}.{attr}", f"{attr} {getattr(ma, attr)} outside -1 .. "
                                         f"{MAX_ORDER + 1}")


def _latent(le, m: _Model, table, path: str, tables: dict) -> None:
    eq_id, k, expr, residual, own = le.parts
    if eq_id not in m.equations:
        _fail(path + ".eq_id", f"{eq_id!r} is not an equation of the model")
    _order(k, path + ".k")
    if own is not None and own is not table:
        _fail(path + ".table", "not the symbol table of its report")
    if residual is not None:
        m.expr(residual, m.kinds, path + ".residual", residual=True)
    if expr is not None:
        _sympy(expr, m, path + ".expr")


def _table(t, m: _Model, path: str, tables: dict) -> None:
    """A `mdae_fmu.symbolic.SymbolTable`: its symbols named after the model's variables, and
    its look-up tables inverse of each other (code generation maps symbols through them)."""
    if id(t) in tables:
        return
    tables[id(t)] = t
    _names(sorted(t.constants), m.variables, "a variable of the model", path + ".constants")
    for n, s in t._const.items():
        if n not in t.constants or s.name != n:
            _fail(f"{path}._const[{n!r}]", f"the symbol {s.name!r} of the constant {n!r}")
    for (n, k), s in t._inst.items():
        where = f"{path}._inst[{(n, k)!r}]"
        if n not in m.variables:
            _fail(where, f"{n!r} is not a variable of the model")
        m.order(n, k, where)
        label = n if k == 0 else f"der({n})" if k == 1 else f"der({n},{k})"
        if s.name != label or t._back.get(s) != (n, k):
            _fail(where, f"the symbol {s.name!r} of the instance {(n, k)!r} (expected "
                         f"{label!r}, and the same in _back)")
    if len(t._back) != len(t._inst):
        _fail(path + "._back", "not the inverse of _inst")
    for n, s in t._pre.items():
        if n not in m.variables or s.name != f"pre({n})":
            _fail(f"{path}._pre[{n!r}]", f"the symbol {s.name!r} of pre({n})")
    if t.time.name != "time":
        _fail(path + ".time", f"the time symbol is named {t.time.name!r}")
    if t.homotopy.name != "$homotopy":
        _fail(path + ".homotopy", f"the homotopy symbol is named {t.homotopy.name!r}")
    if t.functions is not None:
        _function_table(t.functions, m, path + ".functions")


def _function_table(ft, m: _Model, path: str) -> None:
    """The user functions of a symbol table (`mdae_fmu.functions.FunctionTable`): the model's
    and the derivative functions made from them, each checked as the model's are."""
    for n in m.functions:
        if n not in ft.functions:
            _fail(path + ".functions", f"function {n!r} of the model is not in the table")
    scope = _Model(None, "", check=False)
    scope.functions = dict(ft.functions)
    scope.calls = {call_name(f.name, k): f for f in ft.functions.values()
                   for k in range(len(f.outputs))}
    for n, f in ft.functions.items():
        if f.name != n:
            _fail(f"{path}.functions[{n!r}].name", f"function {f.name!r} under the name {n!r}")
        _function(f, scope, f"{path}.functions[{n!r}]")
    for n, (dfn, with_t) in ft.derivatives.items():
        where = f"{path}.derivatives[{n!r}]"
        if n not in ft.functions or ft.functions.get(dfn.name) is not dfn:
            _fail(where, f"the derivative of {n!r} is not a function of the table")
        inputs = {p.name for p in ft.functions[n].inputs}
        _names(sorted(with_t), inputs, f"an input of {n}", where + "[1]")


def known_symbol(name: str, variables: set) -> bool:
    """Whether a sympy symbol's name is made of the model's names: ``x``, ``der(x)``,
    ``der(der(x))``, ``der(x,k)``, ``pre(x)``, each also as ``x+`` / ``x-`` (right and left
    limits), ``time``, the homotopy parameter."""
    n = name
    if n in variables or n in _FIXED_SYMBOLS:
        return True
    if n.endswith(("+", "-")):
        n = n[:-1]
    for _ in range(MAX_ORDER + 1):
        if n in variables or n in _FIXED_SYMBOLS:
            return True
        if n.startswith("pre(") and n.endswith(")"):
            return n[4:-1] in variables
        if not (n.startswith("der(") and n.endswith(")")):
            return False
        n = n[4:-1]
        if n not in variables:
            mk = _DER_K.match(n)
            if mk and int(mk.group(2)) <= MAX_ORDER:
                n = mk.group(1)
    return False


def _sympy(e, m: _Model, path: str, extra: dict | None = None) -> None:
    """The symbols of ``e`` are the model's (`known_symbol`), real as the package makes them,
    or among ``extra`` (name -> the symbol itself); its user functions the model's."""
    for s in e.free_symbols:
        if not isinstance(s, sp.Symbol):
            _fail(path, f"{s!r} is not a symbol")
        own = extra.get(s.name) if extra else None
        if own is not None:
            if s != own:
                _fail(path, f"the symbol {s.name!r} with other assumptions than the "
                            "schedule's")
        elif not known_symbol(s.name, m.variables):
            _fail(path, f"the symbol {s.name!r} is not made of the names of the model")
        elif s.is_real is not True or s.is_positive is not None:
            _fail(path, f"the symbol {s.name!r} is not real (the symbols of the model's "
                        "names are)")
    for a in e.atoms(AppliedUndef):
        call = getattr(type(a), "_mdae_call", None)
        if call is not None and call not in m.calls and not _derivative_call(call, m):
            _fail(path, f"a call of {call!r}, not a function of the model")


def _derivative_call(call: str, m: _Model) -> bool:
    return call.split("#")[0].lstrip("'").startswith("der(")


def _automaton(a, m: _Model, path: str, tables: dict) -> None:
    """The mode-change automaton (`mdae_fmu.modes.explore.Automaton`)."""
    if a.name != m.name:
        _fail(path + ".name", f"automaton of model {a.name!r}, not {m.name!r}")
    if a.erasure not in ("restricted", "canonical"):
        _fail(path + ".erasure", f"erasure {a.erasure!r} (restricted or canonical)")
    if a.lemma22 not in ("two-graph", "literal"):
        _fail(path + ".lemma22", f"lemma22 {a.lemma22!r} (two-graph or literal)")
    n_guards = len(a.guards)
    for i, (_, kind) in enumerate(a.guards):
        if kind not in ("long", "transient"):
            _fail(f"{path}.guards[{i}][1]", f"guard kind {kind!r} (long or transient)")

    def mode(v, where: str) -> None:
        if len(v) != n_guards:
            _fail(where, f"a mode of {len(v)} guard values, the automaton has {n_guards} "
                         "guards")

    if a.initial_mode is not None:
        mode(a.initial_mode, path + ".initial_mode")
    system_eqs: set[str] = set()
    if a.system is not None:
        system_eqs = _system(a.system, m, n_guards, path + ".system")
    var = m.variables
    labels = set()
    for i, mi in enumerate(a.modes):
        where = f"{path}.modes[{i}]"
        mode(mi.mode, where + ".mode")
        labels.add(mi.label)
        for k, n in enumerate(mi.states):
            if not known_symbol(n, var):
                _fail(f"{where}.states[{k}]", f"{n!r} is not an instance of a variable of the "
                                              "model")
        _labels(mi.latent, system_eqs, where + ".latent")
        for k, b in enumerate(mi.blocks):
            _labels(b, system_eqs, f"{where}.blocks[{k}]")
    n_configs = len(a.configs)
    for i, c in enumerate(a.configs):
        _config(c, m, system_eqs, n_guards, f"{path}.configs[{i}]")
    for i, (src, v, dst, inst) in enumerate(a.edges):
        where = f"{path}.edges[{i}]"
        if not 0 <= src < n_configs:
            _fail(where + "[0]", f"configuration {src} out of range (there are {n_configs})")
        mode(v, where + "[1]")
        if not -1 <= dst < n_configs:
            _fail(where + "[2]", f"configuration {dst} out of range (there are {n_configs})")
        _instant(inst, m, system_eqs, n_guards, where + "[3]")
    for i, ch in enumerate(a.changes):
        where = f"{path}.changes[{i}]"
        mode(ch.src, where + ".src")
        mode(ch.dst, where + ".dst")
        for attr in ("src_label", "dst_label"):
            if getattr(ch, attr) not in labels:
                _fail(f"{where}.{attr}", f"{getattr(ch, attr)!r} is not the label of a mode")
        _restart(ch.restart, m, where + ".restart")
        n_inst = len(ch.instants)
        for k, ri in enumerate(ch.instants):
            w = f"{where}.instants[{k}]"
            if ri.mode not in labels:
                _fail(w + ".mode", f"{ri.mode!r} is not the label of a mode")
            _labels(ri.facts, system_eqs, w + ".facts")
            _labels(ri.erased, system_eqs, w + ".erased")
            _names(ri.variables, var, "a variable of the model", w + ".variables")
            _restart(ri.restart, m, w + ".restart")
            if ri.method not in ("", "S0", "S1", "S2", "S3"):
                _fail(w + ".method", f"standardization {ri.method!r}")
            if ri.level not in ("", "jet", "shift"):
                _fail(w + ".level", f"level {ri.level!r} (jet or shift)")
            if ri.instant is not None:
                _instant(ri.instant, m, system_eqs, n_guards, w + ".instant")
            for j, (v, num, den) in enumerate(ri.integrals):
                _names((v,), var, "a variable of the model", f"{w}.integrals[{j}]")
                _sympy(num, m, f"{w}.integrals[{j}][1]")
                _sympy(den, m, f"{w}.integrals[{j}][2]")
        for k, st in enumerate(ch.steps):
            w = f"{where}.steps[{k}]"
            for j, x in enumerate(st.instants):
                if not 0 <= x < n_inst:
                    _fail(f"{w}.instants[{j}]", f"instant {x} out of range (the mode change "
                                                f"has {n_inst})")
            _names(st.variables, var, "a variable of the model", w + ".variables")
            _restart(st.restart, m, w + ".restart")


def _system(s, m: _Model, n_guards: int, path: str) -> set[str]:
    """The multimode system (`mdae_fmu.modes.normalize.MultimodeSystem`); its equation ids."""
    var = m.variables
    if s.model is not None and s.model.name != m.name:
        _fail(path + ".model.name", f"model {s.model.name!r}, not {m.name!r}")
    if len(s.guards) != n_guards:
        _fail(path + ".guards", f"{len(s.guards)} guards, the automaton has {n_guards}")
    for i, g in enumerate(s.guards):
        m.expr(g.cond, m.kinds, f"{path}.guards[{i}].cond")
        m.expr(g.definition, m.kinds, f"{path}.guards[{i}].definition")
        _names(sorted(g.reads), var, "a variable of the model", f"{path}.guards[{i}].reads")
    _names(s.unknowns, var, "a variable of the model", path + ".unknowns")
    _names(sorted(s.constants), var, "a variable of the model", path + ".constants")
    ids: set[str] = set()
    for i, eq in enumerate(s.equations):
        where = f"{path}.equations[{i}]"
        if eq.id in ids:
            _fail(where + ".id", f"equation id {eq.id!r} used twice")
        ids.add(eq.id)
        m.expr(eq.residual, m.kinds, where + ".residual", residual=True)
        for k, (g, _) in enumerate(eq.guard):
            if not 0 <= g < len(s.guards):
                _fail(f"{where}.guard[{k}][0]", f"guard {g} out of range (there are "
                                                f"{len(s.guards)})")
        _instances(eq.orders, var, "a variable of the model", where + ".orders", m)
        if eq.reinit is not None and eq.reinit not in var:
            _fail(where + ".reinit", f"{eq.reinit!r} is not a variable of the model")
    return ids


def _square(block, path: str) -> None:
    """A block of a block triangular form: as many equations as unknowns, at least one
    (code generation solves it as a square system)."""
    if not block.equations or len(block.equations) != len(block.unknowns):
        _fail(path, f"a block of {len(block.equations)} equations and "
                    f"{len(block.unknowns)} unknowns (blocks are square and not empty)")


def _labels(labels, equations: set, path: str) -> None:
    """Equation labels of the mode-change system: an id, then primes (derivatives)."""
    for i, lab in enumerate(labels):
        if lab.rstrip("'") not in equations:
            _fail(f"{path}[{i}]", f"{lab!r} is not an equation of the mode-change system")


def _config(c, m: _Model, equations: set, n_guards: int, path: str) -> None:
    _instances(sorted(c.known), m.variables, "a variable of the model", path + ".known", m)
    _instances(sorted(c.context), equations, "an equation of the mode-change system",
               path + ".context")
    for i, g in enumerate(sorted(c.last_transient)):
        if not 0 <= g < n_guards:
            _fail(f"{path}.last_transient[{i}]", f"guard {g} out of range")


def _instant(inst, m: _Model, equations: set, n_guards: int, path: str) -> None:
    """An instant of a run (`mdae_fmu.modes.runs.Instant`)."""
    if len(inst.mode) != n_guards:
        _fail(path + ".mode", f"a mode of {len(inst.mode)} guard values, the automaton has "
                              f"{n_guards} guards")
    var = m.variables
    for attr in ("known", "unknowns"):
        _instances(sorted(getattr(inst, attr)), var, "a variable of the model",
                   f"{path}.{attr}", m)
    for attr in ("facts", "erased"):
        _instances(sorted(getattr(inst, attr)), equations,
                   "an equation of the mode-change system", f"{path}.{attr}")
    _instances(inst.solved, equations, "an equation of the mode-change system",
               path + ".solved")
    solved, unknowns = set(inst.solved), inst.unknowns
    for i, b in enumerate(inst.blocks):
        _square(b, f"{path}.blocks[{i}]")
        for j, key in enumerate(b.equations):
            if key not in solved:
                _fail(f"{path}.blocks[{i}].equations[{j}]", f"{key!r} is not among the "
                                                            "instant's solved equations")
        for j, key in enumerate(b.unknowns):
            if key not in unknowns:
                _fail(f"{path}.blocks[{i}].unknowns[{j}]", f"{key!r} is not among the "
                                                           "instant's unknowns")
    if inst.next is not None:
        _config(inst.next, m, equations, n_guards, path + ".next")


def _restart(eqs, m: _Model, path: str) -> None:
    """Restart equations ``x+ = f(x-)``: the target a right limit of the model's names."""
    for i, eq in enumerate(eqs):
        where = f"{path}[{i}]"
        if not isinstance(eq.lhs, sp.Symbol) or not eq.lhs.name.endswith("+"):
            _fail(where, f"the restart {eq} does not assign a right limit x+")
        _sympy(eq, m, where)


def _guarded(g, m: _Model, path: str) -> None:
    """The guarded block schedule (`mdae_fmu.implicit.schedule.GuardedSchedule`): formulas are
    nodes of its table, a table whose nodes test guards in range and continue at earlier nodes
    (so evaluating one ends), variable and state indices in range, every symbol of its rows
    an instance of the model or one of the schedule's own (`mdae_fmu.implicit.schedule`)."""
    from ..implicit.schedule import STEP, impulse_symbol, left_symbol
    if g.model_name != m.name:
        _fail(path + ".model_name", f"schedule of model {g.model_name!r}, not {m.name!r}")
    n_guards = len(g.guards)
    if len(g.guard_names) != n_guards:
        _fail(path + ".guard_names", f"{len(g.guard_names)} names for {n_guards} guards")
    for i, e in enumerate(g.guards):
        m.expr(e, m.kinds, f"{path}.guards[{i}]")
    var = m.variables
    _names(g.variables, var, "a variable of the model", path + ".variables")
    _names(g.impulsive, set(g.variables), "a variable of the schedule", path + ".impulsive")
    for attr in ("states", "leading"):
        _instances([(x.name, x.order) for x in getattr(g, attr)], var,
                   "a variable of the model", f"{path}.{attr}", m)
    table = g.table
    n = len(table.var)
    if len(table.lo) != n or len(table.hi) != n:
        _fail(path + ".table", f"{n} guards, {len(table.lo)} low and {len(table.hi)} high "
                               "branches")
    for k in range(n):
        if not 0 <= table.var[k] < n_guards:
            _fail(f"{path}.table.var[{k}]", f"guard {table.var[k]} out of range (there are "
                                            f"{n_guards})")
        for attr in ("lo", "hi"):
            u = getattr(table, attr)[k]
            if not -2 <= u < k:
                _fail(f"{path}.table.{attr}[{k}]", f"node {u}: a node continues at an earlier "
                                                   "node, -1 (true) or -2 (false)")

    def formula(u: int, where: str) -> None:
        if not -2 <= u < n:
            _fail(where, f"formula {u} out of range (the table has {n} nodes)")

    n_vars, n_states = len(g.variables), len(g.states)
    for i, (k, u) in enumerate(g.cond_states):
        if not 0 <= k < n_states:
            _fail(f"{path}.cond_states[{i}][0]", f"state {k} out of range")
        formula(u, f"{path}.cond_states[{i}][1]")
    own: dict = {STEP.name: STEP}
    own.update((left_symbol(k).name, left_symbol(k)) for k in range(n_states))
    own.update((impulse_symbol(j).name, impulse_symbol(j)) for j in range(n_vars))
    for i, (s, u) in enumerate(g.flags):
        formula(u, f"{path}.flags[{i}][1]")
        own[s.name] = s
    for attr in ("flags", "proxies", "rproxies"):
        for i, x in enumerate(getattr(g, attr)):
            s = x[0] if attr == "flags" else x
            if not _SCHEDULE_SYMBOL.match(s.name) or s.is_real is not None:
                _fail(f"{path}.{attr}[{i}]", f"{s.name!r} is not a symbol of the schedule")
            own[s.name] = s
    for i, v in enumerate(g.variants):
        where = f"{path}.variants[{i}]"
        formula(v.formula, where + ".formula")
        for attr in ("writes", "reads"):
            for j, x in enumerate(getattr(v, attr)):
                if not 0 <= x < n_vars:
                    _fail(f"{where}.{attr}[{j}]", f"variable {x} out of range (there are "
                                                  f"{n_vars})")
        for attr in ("block", "restart"):
            rows = getattr(v, attr)
            if rows is None:
                continue
            w = f"{where}.{attr}"
            if len(rows.rows) != len(rows.unknowns) and not (rows.tree is not None
                                                            and not rows.rows):
                _fail(w, f"{len(rows.rows)} rows for {len(rows.unknowns)} unknowns")
            for j, e in enumerate(rows.unknowns + rows.rows):
                _sympy(e, m, f"{w}.{'unknowns' if j < len(rows.unknowns) else 'rows'}"
                             f"[{j % max(len(rows.unknowns), 1)}]", own)
            if rows.tree is not None:
                m.expr(rows.tree, m.kinds, w + ".tree", residual=True)
        for j, e in enumerate(v.cons):
            _sympy(e, m, f"{where}.cons[{j}]", own)
        if v.sel is not None:
            for attr in ("top", "restart"):
                for j, triple in enumerate(getattr(v.sel, attr)):
                    for e in triple:
                        _sympy(e, m, f"{where}.sel.{attr}[{j}]", own)
            for j, s in enumerate(v.sel.cons_when):
                if s is not None:
                    _sympy(s, m, f"{where}.sel.cons_when[{j}]", own)


_SCHEDULE_SYMBOL = re.compile(r"mdae_(sel|w|rw)_\d+\Z")
