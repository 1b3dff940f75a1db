"""Scalarization of the structured part of flat Modelica (issue 13): type aliases, enumerations,
records, String variables, arrays and for-equations are lowered to the scalar intermediate form
that `flat_modelica.build_model` already reads (docs/importers.md, "Types, records and
arrays").

`lower(sections, ctx)` runs only for texts that use one of these constructs
(`ParseContext.extended`, or a name that is not declared as such, e.g. the whole array ``x`` of
OpenModelica's scalarized ``x[1]``, ``x[2]``). It works in two passes:

1. declarations: every declaration is resolved through its type (alias chain, enumeration,
   record) and its dimensions, evaluated as parameter expressions, into scalar declarations
   named like OpenModelica's flat output (``x[2,1]``, ``r.f``, ``r[2].f``);
2. expressions: bindings, modifiers and equations are evaluated to array values (`arrays.Arr`)
   or record values (`Rec`) and split element by element into scalar equations, each keeping
   the location of its source equation. For-equations are unrolled (their ranges must be
   parameter expressions); if-equations whose condition is a constant after the unrolling
   (``if i == 1 then``) keep only the branch taken.

Errors (`LowerError`) are reported at the construct's ``file:line:col``: an index out of range,
a record field that does not exist, a for-range that is not a parameter expression, arrays of
different sizes.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import NoReturn

from .. import expr as E
from ..diagnostics import SourceLoc
from . import arrays as A
from .algorithm_lowering import lower_statements
from .array_functions import array_function_defs, call_value, tuple_equation, tuple_values
from .lowered import ElementAlias, LowerError, Rec
from . import types as T
from .syntax import ENUM_PREFIXES, Decl, Named, Stmt, normalize_name

_MAX_ELEMENTS = 1_000_000      # scalars one array declaration or range may produce
_MAX_CHAIN = 1_000             # elements a variable subscript may select among


class _StringVar:
    """A String variable that is not a constant: equations on it are dropped (issue 13 item 6:
    Strings are kept only as constants of assert messages)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class Lowering:
    """The two passes of the module docstring over one file."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.types: dict = {}           # type name -> EnumDef | AliasDef | RecordDef
        self.enums: list = []
        self.params: dict = {}          # scalar parameter/constant name -> binding expression
        self.shapes: dict = {}          # array name -> shape
        self.records: dict = {}         # record instance name -> RecordDef
        self.scalars: set = set()       # declared scalar names
        self.strings: dict = {}         # String variable -> E.Str value or _StringVar
        self.enum_vars: dict = {}       # variable -> EnumDef
        self.base_types: dict = {}      # scalar -> Real, Integer or Boolean
        self._evaluating: set = set()
        self._expanding: set = set()    # records being expanded (a record holding itself)
        self.prefix_types: dict = {}    # undeclared type path -> EnumDef (`learn_prefixes`)
        self.resolved: set = set()      # names used as arrays, records, literals...
        self.unresolved: set = set()    # names left as references although not declared
        # range checks of variable subscripts (`variable_subscript`) of the equation or
        # statement being lowered; None where a variable subscript is not allowed
        self.range_checks: list | None = None
        self._check_ids: set = set()    # id() of the range checks' assert Stmts

    def fresh(self) -> Lowering:
        """A new lowering of the same file, with nothing declared yet (the scope of a
        function body or of a function's dimensions, `array_functions`)."""
        return Lowering(self.ctx)

    def lower_statements(self, items, env) -> list:
        """`algorithm_lowering.lower_statements` run by this lowering."""
        return lower_statements(self, items, env)

    def tuple_values(self, rhs, env, n_targets: int):
        """`array_functions.tuple_values` of a call ``(a, b, ...) := f(x)`` here."""
        return tuple_values(self, rhs, env, n_targets)

    # ---- errors ----
    def fail(self, message, where=None) -> NoReturn:
        raise LowerError(message, where)

    def report(self, err: LowerError, where):
        self.ctx.error(self.ctx.where_loc(err.where if err.where is not None else where),
                       err.message)

    # ---- pass 1: types and declarations ----
    def run(self, sections: list) -> list:
        for sec in sections:
            if sec[0] == "decls":
                for d in sec[1]:
                    if isinstance(d, T.TYPE_DEFS):
                        self.define(d)
        for name, e in self.ctx.inline_types.items():
            self.types[name] = e
            self.enums.append(e)
        _literal_arrays([sec[1] for sec in sections if sec[0] == "decls"])
        decls = [d for sec in sections if sec[0] == "decls" for d in sec[1]
                 if type(d) is Decl]
        for d in decls:
            if not d.dims and d.binding is not None and (_is_param(d.prefixes, d.explicit)
                                                         or self._fixed_discrete(d)):
                self.params[d.name] = d.binding
        planned = []
        for d in decls:
            try:
                planned.append((d, self.plan(d, d.name, d.type_name, d.dims, d.modifiers,
                                             d.binding, d.prefixes)))
            except LowerError as err:
                self.report(err, d.loc)
        self.scalarized_shapes()
        out_decls = {}
        for d, plan in planned:
            out: list = []
            try:
                self.emit(plan, d, out)
            except LowerError as err:
                self.report(err, d.loc)
            out_decls[id(d)] = out
        result: list[tuple] = []
        for sec in sections:
            tag = sec[0]
            if tag == "decls":
                result.append(("decls", [x for d in sec[1] if type(d) is Decl
                                         for x in out_decls.get(id(d), ())]))
            elif tag in ("equations", "initial"):
                out = []
                self.items(sec[1], {}, out)
                result.append((tag, out))
            elif tag in ("algorithm", "initial_algorithm"):
                result.append((tag, self.lower_statements(sec[1], {}), sec[2]))
            else:
                result.append(sec)
        self.ctx.enum_vars = self.enum_vars
        for name in self.resolved - self.unresolved:
            self.ctx.first_use.pop(name, None)
        return result

    def _fixed_discrete(self, d) -> bool:
        """A discrete-valued variable (Integer, Boolean, enumeration, or declared
        ``discrete``) that is not an input and has a binding: ``Integer n = 1``. Its binding
        equation holds at every instant (Modelica 3.6 §4.4.3), so where a constant is needed
        (a for-range, an array subscript) a binding that is a parameter expression gives its
        value; ``pre(n)`` is not a parameter expression and is never folded this way."""
        words = {p for p, _ in d.prefixes}
        if words & {"input", "parameter", "constant"} or d.explicit:
            return False
        return "discrete" in words or d.type_name in ("Integer", "Boolean") or \
            type(self.types.get(d.type_name)) is T.EnumDef

    def scalarized_shapes(self):
        """Shapes of the arrays declared element by element (``Real x[1]; Real x[2];``, as
        OpenModelica prints them), so that ``x`` and ``x[i]`` can be used."""
        found: dict = {}
        for name in self.scalars | set(self.records) | set(self.strings):
            if name[-1:] == "]":
                m = _LAST_SUBS.match(name)
                if m is not None:
                    try:
                        idx = tuple(int(x) for x in m.group(2).split(","))
                    except ValueError:
                        continue
                    found.setdefault(m.group(1), []).append(idx)
        for base, idxs in found.items():
            if base in self.shapes or base in self.scalars:
                continue
            nd = {len(i) for i in idxs}
            if len(nd) != 1:
                continue
            shape = tuple(max(i[k] for i in idxs) for k in range(nd.pop()))
            if math.prod(shape) == len(set(idxs)):      # a complete box
                self.shapes[base] = shape

    def define(self, d):
        if type(d) is T.RecordDef:            # `Real y[2];` in a record: an array field
            fields = list(d.fields)
            _literal_arrays([fields])
            d = replace(d, fields=tuple(fields))
        if d.name in self.types:
            self.ctx.error(self.ctx.where_loc(d.where), f"duplicate definition of type "
                                                        f"'{d.name}'")
            return
        self.types[d.name] = d
        if type(d) is T.EnumDef:
            self.enums.append(d)

    def resolve(self, type_name: str, where):
        """(kind, base, modifiers, dims, definition) of a type name through its aliases:
        kind is "builtin", "enum", "record" or "string"."""
        mods: list = []
        dims: tuple = ()
        seen = set()
        while True:
            if type_name in T.BUILTIN_TYPES:
                return "builtin", type_name, mods, dims, None
            if type_name == "String":
                return "string", type_name, mods, dims, None
            d = self.types.get(type_name)
            if d is None and type_name in _BUILTIN_ENUMS:
                # a predefined enumeration as a type (OpenModelica prints the MSL's `parameter
                # StateSelect stateSelect = StateSelect.default`): an enumeration variable
                d = self.types[type_name] = T.EnumDef(name=type_name, where=None,
                                                      literals=_BUILTIN_ENUMS[type_name])
            if d is None and type_name == "Clock":
                self.fail("variables of type Clock (synchronous Modelica) are not supported: "
                          "write the sampled part with when sample(start, interval) clauses",
                          where)
            if d is None:
                self.fail(f"unknown type '{type_name}' (not Real, Integer, Boolean, String "
                          "nor a type, record or enumeration defined in the file)", where)
            if type(d) is T.EnumDef:
                return "enum", "Integer", mods, dims, d
            if type(d) is T.RecordDef:
                return "record", type_name, mods, dims, d
            if type_name in seen:
                self.fail(f"type '{type_name}' is defined through itself", where)
            seen.add(type_name)
            # the declaration's (outer) modifiers win over the alias's
            names = {m[0] for m in mods}
            mods = mods + [m for m in d.modifiers if m[0] not in names]
            dims = dims + tuple(d.dims)
            type_name = d.base

    def shape(self, dims, where, binding=None) -> tuple:
        """The sizes of ``dims``, Integer parameter expressions (Modelica 3.6 §10.1); a ``:``
        takes its size from the binding (``parameter Real table[:, 2] = [...]``)."""
        shape = []
        bound = None
        for k, s in enumerate(dims):
            if s is A.COLON:
                if bound is None and binding is not None:
                    try:
                        bound = A.shape_of(self.value(binding, {}, where))
                    except LowerError:
                        bound = ()
                if not bound or len(bound) != len(dims):
                    self.fail("array dimension ':' needs a binding of that many dimensions "
                              "(give the size)", where)
                shape.append(bound[k])
                continue
            if type(s) is E.Ref and (s.name == "Boolean" or
                                     type(self.types.get(s.name)) is T.EnumDef):
                index = "(if b then 2 else 1)" if s.name == "Boolean" else "Integer(e)"
                self.fail(f"arrays indexed by the type '{s.name}' are not supported (use an "
                          f"Integer dimension and {index} as the index)", where)
            if type(s) is A.ArrayCons:
                self.fail("an array dimension given as a vector of sizes (a ragged array, "
                          "which Modelica does not have; OpenModelica prints it for arrays of "
                          "components of different sizes with -d=-nfScalarize): export the "
                          "model scalarized (without -d=-nfScalarize)", where)
            v = self.const(s, {})
            if type(v) is not int or v < 0:
                bad = sorted({r.name for r in _refs(s) if self.const(r, {}) is None})
                why = f" ('{bad[0]}' has no parameter value)" if bad else ""
                self.fail("array dimension must be a non-negative Integer parameter "
                          "expression" + why, where)
            shape.append(v)
        if math.prod(shape) > _MAX_ELEMENTS:
            self.fail(f"array too large (more than {_MAX_ELEMENTS:,} elements)", where)
        return tuple(shape)

    def plan(self, d, name, type_name, dims, modifiers, binding, prefixes):
        """Names, shapes and record structure of one declaration (pass 1)."""
        kind, base, tmods, tdims, tdef = self.resolve(type_name, d.type_loc)
        if dims and all(type(x) is E.Ref and "." in x.name and (
                self.literal_or_none(x.name) is not None or self.const(x, {}) is None)
                for x in dims):
            # OpenModelica's scalarized element of an array indexed by an enumeration whose
            # type the flat file does not declare: `Real x[P.Color.green];` is one scalar
            name = f"{name}[{','.join(x.name for x in dims)}]"
            self.resolved.update(x.name for x in dims)
            dims = ()
        names = {m[0] for m in modifiers}
        mods = list(modifiers) + [m for m in tmods if m[0] not in names]
        shape = self.shape(tuple(dims) + tdims, d.loc, binding)
        if shape:
            self.shapes[name] = shape
        elements = [A.element_name(name, i) for i in A.indices(shape)] if shape else [name]
        fields = None
        if kind == "record":
            if tdef.name in self._expanding:
                self.fail(f"record '{tdef.name}' contains itself", d.type_loc)
            self._expanding.add(tdef.name)
            fields = {}
            for el in elements:
                self.records[el] = tdef
                for f in tdef.fields:
                    if isinstance(f, Decl):
                        fields[(el, f.name)] = self.plan(
                            f, f"{el}.{f.name}", f.type_name, f.dims, f.modifiers, f.binding,
                            f.prefixes)
            self._expanding.discard(tdef.name)
        elif kind == "string":
            for el in elements:
                self.strings[el] = _StringVar(el)
        else:
            self.scalars.update(elements)
            for el in elements:
                self.base_types[el] = base
            if kind == "enum":
                self.learn_prefixes(binding, tdef)
                for m in mods:
                    if m[0] == "start":
                        self.learn_prefixes(m[1], tdef)
                for el in elements:
                    self.enum_vars[el] = tdef
        return (name, kind, base, mods, shape, elements, binding, tdef, fields)

    # ---- pass 2: values of declarations ----
    def emit(self, plan, d, out, prefixes=None, outer_mods=(), outer_binding=None):
        name, kind, base, mods, shape, elements, binding, tdef, fields = plan
        prefixes = d.prefixes if prefixes is None else prefixes
        if outer_mods:
            names = {m[0] for m in outer_mods}
            mods = list(outer_mods) + [m for m in mods if m[0] not in names]
        if outer_binding is not None:
            binding = outer_binding
        value = None if binding is None else self.value(binding, {}, d.loc)
        if kind == "string":
            if type(value) is E.Str and _is_param(prefixes, d.explicit):
                for el in elements:
                    self.strings[el] = value
            if (value is None or type(value) is E.Str) and _is_param(prefixes, d.explicit) \
                    and not shape:
                constant = any(p == "constant" for p, _ in prefixes)
                self.ctx.string_params.append(
                    (name, "" if value is None else value.value, constant, d.description,
                     d.loc))
            return
        values = self.split(value, shape, elements, name, d.loc)
        if kind == "record":
            if any(v is not None and type(v) is not Rec for v in values):
                self.fail(f"the value of record '{name}' is not a record (write "
                          f"{tdef.name}(...))", d.loc)
            for el, v in zip(elements, values):
                fmods = {}
                for mname, mval, mloc, nested in mods:
                    if type(mval) is T.Nested or not nested:
                        fmods[mname] = (mval, mloc)
                for (inst, fname), fplan in fields.items():
                    if inst != el:
                        continue
                    fvalue = None
                    fnested = ()
                    if v is not None:
                        fvalue = dict(v.fields).get(fname)
                    if fname in fmods:
                        mval, _ = fmods.pop(fname)
                        if type(mval) is T.Nested:
                            fnested = mval.modifiers
                            mval = mval.binding
                        if mval is not None:
                            fvalue = mval
                    fdecl = tdef.field(fname)
                    self.emit(fplan, fdecl, out, _merge_prefixes(prefixes, fdecl.prefixes),
                              fnested, fvalue)
                for mname, (_, mloc) in fmods.items():
                    if mname not in ("each", "final"):
                        self.fail(f"record '{tdef.name}' has no field '{mname}'", mloc)
            return
        mod_values = []
        for mname, mval, mloc, nested in mods:
            if mname == "stateSelect" and _is_builtin_literal(mval):
                mod_values.append((mname, [mval] * len(elements), mloc, nested))
                continue
            if type(mval) is T.Nested:
                mod_values.append((mname, [mval.binding] * len(elements), mloc, True))
                continue
            if mval is None:
                mod_values.append((mname, [None] * len(elements), mloc, nested))
                continue
            v = self.value(mval, {}, mloc)
            mod_values.append((mname, self.split(v, shape, elements, f"{mname} of {name}",
                                                 mloc), mloc, nested))
        for k, el in enumerate(elements):
            b = values[k]
            if b is not None and _is_param(prefixes, d.explicit):
                self.params[el] = b
            out.append(Decl(name=el, loc=d.loc, type_name=base, type_loc=d.type_loc,
                            prefixes=prefixes,
                            modifiers=[(m, vals[k], mloc, nested) for m, vals, mloc, nested
                                       in mod_values],
                            binding=b, description=d.description, explicit=d.explicit))

    def split(self, value, shape, elements, what, where) -> list:
        """One value per element of a declaration of ``shape``: the elements of an array
        value of that shape, or a scalar value for every element (``each``, Modelica 3.6
        §7.2.5)."""
        if value is None:
            return [None] * len(elements)
        if not shape:
            if type(value) is A.Arr:
                self.fail(f"'{what}' is a scalar but its value is an array of size "
                          f"{list(value.shape)}", where)
            return [value]
        if type(value) is not A.Arr:
            return [value] * len(elements)
        if value.shape != shape:
            self.fail(f"'{what}' has size {list(shape)} but its value has size "
                      f"{list(value.shape)}", where)
        return list(value.items)

    # ---- constant evaluation (parameter expressions) ----
    def const(self, e, env):
        """The Python value of a parameter expression, None if it is not one."""
        t = type(e)
        if t is E.Const:
            return e.value
        if t is E.Ref:
            name = e.name
            if name in env:
                v = env[name]
                return None if type(v) is ElementAlias else v
            lit = self.enum_literal(name)
            if lit is not None:
                return lit
            b = self.params.get(name)
            if b is None or name in self._evaluating:
                return None
            self._evaluating.add(name)
            try:
                return self.const(b, {})
            finally:
                self._evaluating.discard(name)
        if t is E.UnOp:
            a = self.const(e.arg, env)
            if a is None:
                return None
            return (not a) if e.op == "not" else (-a if e.op == "-" else a)
        if t is E.BinOp:
            a = self.const(e.left, env)
            if a is None:
                return None
            b = self.const(e.right, env)
            if b is None:
                return None
            return _apply(e.op.lstrip(".") if len(e.op) == 2 and e.op[0] == "." else e.op,
                          a, b)
        if t is E.If:
            c = self.const(e.cond, env)
            if c is None:
                return None
            return self.const(e.then if c else e.orelse, env)
        if t is E.Call and e.func in _CONST_FUNCS:
            args = [self.const(a, env) for a in e.args]
            if any(a is None for a in args):
                return None
            try:
                return _CONST_FUNCS[e.func](*args)
            except (ValueError, ZeroDivisionError, OverflowError):
                return None
        if e is A.END:
            return env.get("end")
        if t in (A.ArrayCall, A.Subscripted):
            try:
                v = self.value(e, env, None)
            except LowerError:
                return None
            return None if type(v) in (A.Arr, Rec) else self.const(v, env)
        return None

    def literal_or_none(self, name: str):
        try:
            return self.enum_literal(name)
        except LowerError:
            return None

    def learn_prefixes(self, value, tdef):
        """``E v = P.E.a`` tells that ``P.E`` is the enumeration of ``v`` (OpenModelica's flat
        output does not declare it): other literals ``P.E.x`` are read in that type."""
        if type(value) is E.Ref and "." in value.name:
            prefix, lit = value.name.rsplit(".", 1)
            if tdef.value(lit) is not None and prefix not in self.types:
                self.prefix_types.setdefault(prefix, tdef)

    def enum_literal(self, name: str):
        """The value of an enumeration literal ``E.a`` (also ``P.E.a`` and OpenModelica's
        ``E$x.a`` when the type is not declared in the flat file), else None."""
        if "." not in name or name in self.scalars:
            return None
        if name.startswith(ENUM_PREFIXES):     # the built-in enumerations, as values
            prefix, lit = name.split(".", 1)
            lits = _BUILTIN_ENUMS[prefix]
            return lits.index(lit) + 1 if lit in lits else None
        prefix, lit = name.rsplit(".", 1)
        d = self.types.get(prefix) or self.prefix_types.get(prefix)
        if type(d) is T.EnumDef:
            v = d.value(lit)
            if v is None:
                self.fail(f"'{lit}' is not a literal of the enumeration '{prefix}' "
                          f"({', '.join(d.literals)})")
            return v
        if prefix in self.records or prefix in self.scalars or prefix in self.shapes:
            return None
        values = {e.value(lit) for e in self.enums} - {None}
        if len(values) == 1:
            return values.pop()
        if len(values) > 1:
            self.fail(f"ambiguous enumeration literal '{name}': '{lit}' has different "
                      "positions in the enumerations of the file")
        return None

    # ---- expressions ----
    def value(self, e, env, where):
        """The value of expression ``e``: a scalar expression, an `arrays.Arr` or a `Rec`."""
        try:
            return self._value(e, env)
        except A.ArrayError as err:
            raise LowerError(str(err), where) from None

    def scalar(self, e, env, where, what="expression"):
        v = self.value(e, env, where)
        if type(v) is A.Arr:
            self.fail(f"the {what} is an array of size {list(v.shape)}, a scalar is needed",
                      where)
        if type(v) is Rec:
            self.fail(f"the {what} is a record ({v.type}), a scalar is needed", where)
        return v

    def _value(self, e, env):
        t = type(e)
        if t is E.Const or t is E.Str or t is E.Time:
            return e
        if t is E.Ref:
            return self.ref(e.name, env, None)
        if t is E.BinOp:
            a = self._value(e.left, env)
            b = self._value(e.right, env)
            _no_string_var(a)
            _no_string_var(b)
            if type(a) is Rec or type(b) is Rec:
                self.fail("operators on records are not supported (write the fields)")
            if type(a) is E.Const and type(b) is E.Const and e.op in ("+", "-", "*") and \
                    type(a.value) is int and type(b.value) is int and \
                    (type(e.left) is not E.Const or type(e.right) is not E.Const):
                # (only what lowering substituted is folded: the rest keeps its shape)
                return E.Const(_apply(e.op, a.value, b.value))
            return A.binop(e.op, a, b)
        if t is E.UnOp:
            a = self._value(e.arg, env)
            _no_string_var(a)

            def neg(x, op=e.op):
                if op == "-" and type(x) is E.Const and type(x.value) is not bool:
                    return E.Const(-x.value)
                return E.UnOp(op, x)
            return A.elementwise(neg, a)
        if t is E.If:
            c = self.fold(self.scalar(e.cond, env, None, "if-condition"), e.cond)
            if type(c) is E.Const and type(e.cond) is not E.Const:
                return self._value(e.then if c.value else e.orelse, env)
            return A.elementwise(lambda x, y: E.If(c, x, y), self._value(e.then, env),
                                 self._value(e.orelse, env))
        if t is E.Der:
            a = self._value(e.arg, env)
            for r in E.walk(a) if type(a) is not A.Arr else \
                    (n for x in a.items for n in E.walk(x)):
                if type(r) is E.Ref:
                    self.ctx.der_names.add(r.name)
            return A.elementwise(E.Der, a)
        if t is E.Call:
            if self.ctx.functions and e.func in array_function_defs(self):
                return call_value(self, array_function_defs(self)[e.func], e, env)
            if type(self.types.get(e.func)) is T.RecordDef:
                return self.call(self.late_constructor(e), env)
            args = [self._value(a, env) for a in e.args]
            for a in args:
                _no_string_var(a)
            if any(type(a) is A.Arr for a in args):
                self.known_function(e.func)
            return A.elementwise(lambda *xs: E.Call(e.func, xs), *args)
        if t is A.Subscripted:
            return self.subscript(e, env)
        if t is A.Path:
            return self.path(e, env)
        if t is A.Indexed:
            return self.indexed(e, env)
        if t is A.ArrayCons:
            return A.stack([self._value(x, env) for x in e.items])
        if t is A.MatrixCons:
            return A.matrix_cons([[self._value(x, env) for x in row] for row in e.rows])
        if t is A.Range:
            return self.range(e, env)
        if t is A.Comprehension:
            return self.comprehension(e, env)
        if t is A.ArrayCall:
            return self.call(e, env)
        if e is A.END:
            if "end" not in env:
                self.fail("'end' can only be used in an array subscript")
            return E.Const(env["end"])
        return e

    def late_constructor(self, e: E.Call) -> A.ArrayCall:
        """``R(...)`` read as a call because the record ``R`` is defined later in the file
        (Base Modelica orders a package's classes freely): the record constructor, no longer
        a call of a function to check."""
        calls = self.ctx.calls
        k = next((k for k, c in enumerate(calls) if c[0] == e.func), None)
        where = calls.pop(k)[1] if k is not None else None
        return A.ArrayCall(e.func, e.args, where)

    def known_function(self, name: str) -> None:
        """Refuse a call of ``name`` that is neither a built-in nor a function of the file
        before it is vectorized over an array argument (``Foo.anyTrue({c})`` would otherwise
        be reported as an equation of two sizes), at the call."""
        from .functions import CLOCKED_OPERATORS, OMC_OPERATORS
        if name in E.BUILTIN_FUNCTIONS or name in OMC_OPERATORS or name in CLOCKED_OPERATORS \
                or any(d.name == name for d in self.ctx.functions):
            return
        where = next((c[1] for c in self.ctx.calls if c[0] == name), None)
        self.fail(f"unknown function '{name}' (neither a Modelica built-in nor a function "
                  "defined in the file)", where)

    def fold(self, c, original):
        """A condition that lowering turned into a constant expression (``i == 1`` in a
        for-equation) as a Const; conditions on parameters or variables stay as they are
        (they are guards of the model)."""
        if type(c) is E.Const or type(original) is E.Const or \
                any(type(n) in (E.Ref, E.Time, E.Call, E.Der) for n in E.walk(c)):
            return c
        v = self.const(c, {})
        return c if v is None else E.Const(v)

    def ref(self, name, env, where):
        v = self._ref(name, env, where)
        if type(v) is E.Ref:
            if name not in self.scalars:
                self.unresolved.add(name)
        else:
            self.resolved.add(name)
        return v

    def _ref(self, name, env, where):
        if name in env:
            v = env[name]
            return v.value if type(v) is ElementAlias else E.Const(v)
        if name in self.scalars:
            return E.Ref(name)
        shape = self.shapes.get(name)
        if shape is not None:
            return A.Arr(shape, tuple(self.ref(A.element_name(name, i), env, where)
                                      for i in A.indices(shape)))
        rec = self.records.get(name)
        if rec is not None:
            return Rec(
                type=rec.name,
                fields=tuple(
                    (f.name, self.ref(f"{name}.{f.name}", env, where))
                    for f in rec.fields
                    if isinstance(f, Decl)
                ),
            )
        s = self.strings.get(name)
        if s is not None:
            return s
        lit = self.enum_literal(name)
        if lit is not None:
            return E.Const(lit)
        if name[-1:] == "]":
            self.check_element(name)
        if "." in name:
            prefix, fname = name.rsplit(".", 1)
            rec = self.records.get(prefix)
            if rec is not None:
                self.fail(f"record '{prefix}' (of type {rec.name}) has no field '{fname}' "
                          f"(fields: {', '.join(f.name for f in rec.fields)})",
                          self.use_where(name) or where)
            parts = name.split(".")
            for k in range(len(parts) - 1, 0, -1):      # `p.x` of an array of records `p`
                prefix = ".".join(parts[:k])
                if self.is_record_array(prefix):
                    at = self.use_where(name) or where
                    v = self._ref(prefix, env, where)
                    for f in parts[k:]:
                        m = _LAST_SUBS.match(f)
                        subs = () if m is None else tuple(
                            E.Const(int(x)) for x in m.group(2).replace(" ", "").split(","))
                        v = self.field_of(v, f if m is None else m.group(1), subs, prefix,
                                          env, at)
                    return v
            v = self.scalarized_field(name, parts, env, where)
            if v is not None:
                return v
        return E.Ref(name)

    def check_element(self, name):
        """An undeclared element ``x[i,j]`` (subscripts read as part of the name): the index
        out of range, or too many subscripts, or ``x`` is not an array."""
        m = _LAST_SUBS.match(name)
        if m is None:
            return
        base = m.group(1)
        idx = [int(x) for x in m.group(2).replace(" ", "").replace("\t", "").split(",")]
        where = self.use_where(name)
        shape = self.shapes.get(base)
        if shape is None:
            if base in self.scalars or base in self.records:
                self.fail(f"'{base}' is not an array", where)
            return
        self.check_indices(base, shape, idx, where)

    def use_where(self, name):
        """Where ``name`` is first used: an offset, or (XML attributes) a SourceLoc."""
        use = self.ctx.first_use.get(name)
        if type(use) is tuple:
            return SourceLoc(self.ctx.filename, use[0], use[1])
        return use

    def check_indices(self, name, shape, idx, where):
        if len(idx) > len(shape):
            self.fail(f"'{name}' has {len(shape)} dimension{'s' * (len(shape) != 1)}, "
                      f"{len(idx)} subscripts given", where)
        for k, i in enumerate(idx):
            if not 1 <= i <= shape[k]:
                self.fail(f"array index {i} out of range for dimension {k + 1} of "
                          f"'{name}' (size {shape[k]})", where)

    def subscript(self, e: A.Subscripted, env):
        name = e.name
        shape = self.shapes.get(name)
        if shape is not None and self.range_checks is not None:
            chosen = self.variable_subscript(e, shape, env)
            if chosen is not None:
                return chosen
        if shape is None and all(type(x) is E.Ref for x in e.subs):
            element = f"{name}[{','.join(x.name for x in e.subs)}]"
            if element in self.scalars:
                self.resolved.update(x.name for x in e.subs)
                return E.Ref(element)
        if shape is None:
            if name in self.scalars or name in self.records:
                self.fail(f"'{name}' is not an array", e.where)
            self.fail(f"undefined array '{name}'", e.where)
        picks = self.picks(name, shape, e.subs, env, e.where)
        out_shape = tuple(len(idx) for idx, keep in picks if keep)
        items = tuple(self.ref(A.element_name(name, combo), env, e.where)
                      for combo in itertools.product(*(idx for idx, _ in picks)))
        if not out_shape:
            return items[0]
        return A.Arr(out_shape, items)

    def variable_subscript(self, e: A.Subscripted, shape, env):
        """``u[i, :]`` with a subscript ``i`` that is a variable expression (not a parameter
        expression) of a dimension of known size n: the if-chain ``if i == 1 then u[1, :]
        elseif ... else u[n, :]``, and a range check ``assert(i >= 1 and i <= n)`` of the
        equation or statement (`range_checks`). A Boolean subscript picks element 1 (false)
        or 2 (true), as OpenModelica does; an enumeration subscript is its position. None
        when every subscript is a parameter expression."""
        if all(type(x) is E.Const or x is A.COLON or (type(x) is E.Ref and x.name in env and
                                                       type(env[x.name]) is not ElementAlias)
               for x in e.subs):
            return None                 # (the common case, without evaluating)
        for k, sub in enumerate(e.subs[:len(shape)]):
            if sub is A.COLON:
                continue
            n = shape[k]
            v = self.value(sub, {**env, "end": n}, e.where)
            if type(v) is not A.Arr and type(v) is not Rec and \
                    type(v) is not _StringVar and self.const(v, env) is None:
                break
        else:
            return None
        from ..assert_messages import value_kind
        from ..modelica_printer import print_expr
        if n > _MAX_CHAIN:
            self.fail(f"a variable subscript of '{e.name}' selects among {n} elements (at "
                      f"most {_MAX_CHAIN} supported)", e.where)

        def pick(j):
            subs = e.subs[:k] + (E.Const(j),) + e.subs[k + 1:]
            return self.subscript(A.Subscripted(e.name, subs, e.where), env)

        kind = value_kind(v, _Typed(self.base_types))
        if kind == "Real":
            self.fail(f"array subscript of '{e.name}' must be an Integer, Boolean or "
                      f"enumeration expression ({print_expr(v)} is Real)", e.where)
        if kind == "Boolean":
            if n != 2:
                self.fail(f"a Boolean subscript of '{e.name}' needs a dimension of size 2 "
                          f"(dimension {k + 1} has size {n})", e.where)
            return A.elementwise(lambda a, b: E.If(v, a, b), pick(2), pick(1))
        check = E.BinOp("and", E.BinOp(">=", v, E.Const(1)), E.BinOp("<=", v, E.Const(n)))
        text = f"array index out of range: {print_expr(v)} for dimension {k + 1} of " \
               f"'{e.name}' (size {n})"
        stmt = Stmt(func="assert", args=[check, E.Str(text)], named={},
                    loc=self.ctx.where_loc(e.where))
        checks = self.range_checks
        assert checks is not None           # collected: `subscript` calls only then
        if all(c.args[0] != check for c in checks):
            checks.append(stmt)
            self._check_ids.add(id(stmt))
        out = pick(n)
        for j in range(n - 1, 0, -1):
            c = E.BinOp("==", v, E.Const(j))
            out = A.elementwise(lambda a, b, c=c: E.If(c, a, b), pick(j), out)
        return out

    def picks(self, name, shape, subs, env, where) -> list:
        """Per dimension of ``shape``: (the indices ``subs`` select, whether the dimension is
        kept), Modelica 3.6 §10.5 (a scalar index drops it, a vector or ``:`` keeps it)."""
        if len(subs) > len(shape):
            self.check_indices(name, shape, [1] * len(subs), where)
        picks = []
        for k, n in enumerate(shape):
            if k >= len(subs) or subs[k] is A.COLON:
                picks.append((list(range(1, n + 1)), True))
                continue
            sub_env = dict(env)
            sub_env["end"] = n
            v = self.value(subs[k], sub_env, where)
            if type(v) is A.Arr:
                idx = [self.const(x, sub_env) for x in v.items]
                keep = True
            else:
                idx = [self.const(v, sub_env)]
                keep = False
            for i in idx:
                if type(i) is bool or type(i) is not int:
                    self.fail(f"array subscript of '{name}' must be an Integer parameter "
                              "expression (a constant, a parameter or a for-index)", where)
                if not 1 <= i <= n:
                    self.fail(f"array index {i} out of range for dimension {k + 1} of "
                              f"'{name}' (size {n})", where)
            picks.append((idx, keep))
        return picks

    def path(self, e: A.Path, env):
        """``a[i].b[j].c``: subscripts of a record array, then fields and their subscripts,
        step by step on values (a field of an array of records is the array of the fields,
        Modelica 3.6 §10.6.8)."""
        merged = self.merged_path(e)
        if merged is not None:
            return self.subscript(merged, env)
        v = self.subscript(A.Subscripted(e.name, e.subs, e.where), env)
        shown = e.name + "[...]"
        for field, subs in e.steps:
            v = self.field_of(v, field, subs, shown, env, e.where)
            shown += "." + field
        return v

    def field_of(self, v, field, subs, shown, env, where):
        """The field ``field[subs]`` of the record value ``v``: of an array of records, the
        array of the fields, whose subscripts select in the field's own dimensions
        (``ra.z[1]`` is ``ra[:].z[1]``, Modelica 3.6 §10.6.8)."""
        lead = len(v.shape) if type(v) is A.Arr else 0
        v = self.field(v, field, shown, where)
        if subs:
            v = self.pick_value(v, f"{shown}.{field}", (A.COLON,) * lead + tuple(subs), env,
                                where)
        return v

    def scalarized_field(self, name, parts, env, where):
        """``m.ra.x`` where the file declares the elements ``m.ra[1].x``, ``m.ra[2].x``...
        (OpenModelica's scalarized output of an array of records): the array of those
        elements, None when ``name`` is not such a path."""
        arrays = self.element_arrays()
        for k in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:k])
            shape = arrays.get(prefix)
            if shape is None:
                continue
            rest = ".".join(parts[k:])
            items = [self._ref(f"{A.element_name(prefix, idx)}.{rest}", env, where)
                     for idx in A.indices(shape)]
            if any(type(x) is E.Ref and x.name not in self.scalars for x in items):
                return None
            return A.stack_shaped(shape, items)
        return None

    def element_arrays(self) -> dict:
        """Base name -> shape of the arrays whose elements are records declared field by
        field (``m.ra[1].x``, ``m.ra[2].x``: ``m.ra`` of shape (2,)), complete boxes only."""
        cached = getattr(self, "_element_arrays", None)
        if cached is not None and cached[0] == len(self.scalars):
            return cached[1]
        idxs: dict = {}
        for n in self.scalars:
            for m in _ELEMENT_PREFIX.finditer(n):
                try:
                    idx = tuple(int(x) for x in m.group(2).split(","))
                except ValueError:
                    continue
                idxs.setdefault(m.group(1), set()).add(idx)
        found = {}
        for base, got in idxs.items():
            if len({len(i) for i in got}) != 1:
                continue
            shape = tuple(max(i[d] for i in got) for d in range(len(next(iter(got)))))
            if math.prod(shape) == len(got):
                found[base] = shape
        self._element_arrays = (len(self.scalars), found)
        return found

    def is_record_array(self, name: str) -> bool:
        """``name`` is an array of records (its elements are records)."""
        shape = self.shapes.get(name)
        return shape is not None and A.element_name(name, (1,) * len(shape)) in self.records

    def indexed(self, e: A.Indexed, env):
        """``(e)[s]``, ``f(x)[s]``: the elements ``s`` selects of the array value of ``e``
        (Modelica 3.6 §10.5, as for a variable)."""
        v = self._value(e.value, env)
        shown = f"{e.value.func}(...)" if type(e.value) is E.Call else "(...)"
        return self.pick_value(v, shown, e.subs, env, e.where)

    def pick_value(self, v, shown, subs, env, where):
        """The elements of the array value ``v`` that ``subs`` select (``shown`` names it in
        messages)."""
        if type(v) is not A.Arr:
            self.fail(f"'{shown}' is not an array", where)
        picks = self.picks(shown, v.shape, subs, env, where)
        strides = [math.prod(v.shape[k + 1:]) for k in range(len(v.shape))]
        items = tuple(v.items[sum((i - 1) * s for i, s in zip(combo, strides))]
                      for combo in itertools.product(*(idx for idx, _ in picks)))
        out_shape = tuple(len(idx) for idx, keep in picks if keep)
        return A.Arr(out_shape, items) if out_shape else items[0]

    def merged_path(self, e: A.Path):
        """``m2[i].m1[j].x`` in OpenModelica's non-scalarized output (``-d=-nfScalarize``,
        ``mergeComponents``), where ``Real[3, 10] m2.m1.x`` declares the array of the
        component arrays' elements: the element ``m2.m1.x[i, j]`` (the subscripts in path
        order). None when ``e.name`` is an array or record of the file, or the joined name is
        no array."""
        if e.name in self.shapes or e.name in self.records or e.name in self.scalars:
            return None
        joined = e.name + "".join("." + f for f, _s in e.steps)
        subs = tuple(e.subs) + tuple(x for _f, s in e.steps for x in (s or ()))
        shape = self.shapes.get(joined)
        if shape is None:
            return None
        if len(subs) != len(shape):
            self.fail(f"'{e.name}' is not declared and '{joined}', the array its path names, "
                      f"has {len(shape)} dimension{'s' * (len(shape) != 1)}: {len(subs)} "
                      "subscripts given along the path", e.where)
        return A.Subscripted(joined, subs, e.where)

    def field(self, v, name, shown, where):
        if type(v) is Rec:
            fields = dict(v.fields)
            if name not in fields:
                self.fail(f"record '{shown}' (of type {v.type}) has no field '{name}' "
                          f"(fields: {', '.join(fields)})", where)
            return fields[name]
        if type(v) is A.Arr:
            return A.stack_shaped(v.shape, [self.field(x, name, shown, where)
                                            for x in v.items])
        self.fail(f"'{shown}' is not a record: it has no field '{name}'", where)

    def range(self, e: A.Range, env):
        start = self.const(e.start, env)
        stop = self.const(e.stop, env)
        step = 1 if e.step is None else self.const(e.step, env)
        if any(type(x) not in (int, float) for x in (start, stop, step)):
            bad = sorted({r.name for b in (e.start, e.step, e.stop) if b is not None
                          for r in _refs(b) if r.name not in env and self.const(r, env) is None})
            why = f" ('{bad[0]}' is not a parameter or constant with a value)" if bad else ""
            self.fail("the bounds of a range 'a:b' must be parameter expressions" + why,
                      e.where)
        if step == 0:
            self.fail("the step of a range is 0", e.where)
        if all(type(x) is int for x in (start, stop, step)):
            vals = list(range(start, stop + (1 if step > 0 else -1), step))
        else:
            n = math.floor((stop - start) / step + 1e-12) + 1
            vals = [start + k * step for k in range(max(n, 0))]
        if len(vals) > _MAX_ELEMENTS:
            self.fail(f"range too long (more than {_MAX_ELEMENTS:,} elements)", e.where)
        return A.Arr((len(vals),), tuple(E.Const(v) for v in vals))

    def iterate(self, indices, env):
        """The environments of for-indices ``((name, range, where), ...)``, the first index
        outermost (Modelica 3.6 §8.3.2.1)."""
        envs = [env]
        for name, rng, where in indices:
            try:
                r = self.value(rng, env, where)
            except LowerError as err:
                if err.where is None:
                    err.where = where
                err.message = f"for-index '{name}': {err.message}"
                raise
            vals = r.items if type(r) is A.Arr and len(r.shape) == 1 else None
            nxt = []
            for en in envs:
                if vals is None:
                    self.fail(f"the range of for-index '{name}' must be a vector", where)
                for x in vals:
                    c = self.const(x, en)
                    if c is None:
                        self.fail(f"the range of for-index '{name}' must be a parameter "
                                  "expression (constants, parameters, enclosing for-indices)",
                                  where)
                    nxt.append({**en, name: c})
            envs = nxt
        return envs

    def comprehension(self, e: A.Comprehension, env):
        vals = [self._value(e.body, en) for en in self.iterate(e.indices, env)]
        arr = A.stack(vals)
        if e.func is None:
            return arr
        return self.call(A.ArrayCall(e.func, (arr,), e.where), env, evaluated=True)

    def call(self, e: A.ArrayCall, env, evaluated=False):
        f = e.func
        args = list(e.args) if evaluated else [self._value(a, env) for a in e.args]
        rec = self.types.get(f)
        if type(rec) is T.RecordDef:
            return self.construct(rec, e, args, env)
        if f in ("sum", "product", "min", "max"):
            a = args[0]
            items = list(a.items) if type(a) is A.Arr else [a]
            if f == "sum":
                return A.balanced("+", items, E.Const(0))
            if f == "product":
                return A.balanced("*", items, E.Const(1))
            if not items:
                self.fail(f"{f}() of an empty array", e.where)
            return A.balanced(f, items, None)
        if f in ("size", "ndims"):
            shape = A.shape_of(args[0])
            if f == "ndims":
                return E.Const(len(shape))
            if len(args) == 1:
                return A.Arr((len(shape),), tuple(E.Const(n) for n in shape))
            k = self.const(args[1], env)
            if type(k) is not int or not 1 <= k <= len(shape):
                self.fail(f"size(..., {k}): the array has {len(shape)} dimensions", e.where)
            return E.Const(shape[k - 1])
        if f in ("fill", "zeros", "ones"):
            dims_args = args[1:] if f == "fill" else args
            sizes = []
            for x in dims_args:
                n = self.const(x, env)
                if type(n) is not int or n < 0:
                    self.fail(f"the sizes given to {f}() must be Integer parameter "
                              "expressions", e.where)
                sizes.append(n)
            v = args[0] if f == "fill" else E.Const(0 if f == "zeros" else 1)
            n = math.prod(sizes)
            if n > _MAX_ELEMENTS:
                self.fail(f"array too large (more than {_MAX_ELEMENTS:,} elements)", e.where)
            if type(v) is A.Arr:
                return A.Arr(tuple(sizes) + v.shape, tuple(v.items) * n)
            return A.Arr(tuple(sizes), (v,) * n)
        if f == "cat":
            k = self.const(args[0], env)
            if type(k) is not int:
                self.fail("the first argument of cat() must be an Integer parameter "
                          "expression", e.where)
            return A.cat(k, args[1:])
        if f == "vector":
            a = args[0]
            if type(a) is not A.Arr:
                return A.Arr((1,), (a,))
            if sum(1 for n in a.shape if n > 1) > 1:
                self.fail(f"vector() of an array of size {list(a.shape)}", e.where)
            return A.Arr((len(a.items),), a.items)
        if f == "matrix":
            a = args[0]
            if type(a) is not A.Arr:
                return A.Arr((1, 1), (a,))
            if len(a.shape) == 1:
                return A.Arr((a.shape[0], 1), a.items)
            return A.Arr(a.shape[:2], a.items)
        if f == "scalar":
            a = args[0]
            if type(a) is A.Arr:
                if len(a.items) != 1:
                    self.fail(f"scalar() of an array of size {list(a.shape)}", e.where)
                return a.items[0]
            return a
        if f == "transpose":
            return A.transpose(args[0])
        if f == "identity":
            n = self.const(args[0], env)
            if type(n) is not int or n < 0:
                self.fail("identity(n) needs an Integer parameter expression", e.where)
            return A.Arr((n, n), tuple(E.Const(int(i == j)) for i in range(n)
                                       for j in range(n)))
        if f == "diagonal":
            v = args[0]
            if type(v) is not A.Arr or len(v.shape) != 1:
                self.fail("diagonal() needs a vector", e.where)
            n = v.shape[0]
            return A.Arr((n, n), tuple(v.items[i] if i == j else E.Const(0)
                                       for i in range(n) for j in range(n)))
        if f == "linspace":
            a, b, n = (self.const(x, env) for x in args)
            if type(n) is not int or n < 2 or a is None or b is None:
                self.fail("linspace(x1, x2, n) needs parameter expressions and n >= 2",
                          e.where)
            return A.Arr((n,), tuple(E.Const(a + (b - a) * k / (n - 1)) for k in range(n)))
        if f == "cross":
            x, y = args
            if A.shape_of(x) != (3,) or A.shape_of(y) != (3,):
                self.fail("cross() needs two vectors of size 3", e.where)
            (x1, x2, x3), (y1, y2, y3) = x.items, y.items

            def d(a, b, c, d_):
                return E.BinOp("-", E.BinOp("*", a, b), E.BinOp("*", c, d_))
            return A.Arr((3,), (d(x2, y3, x3, y2), d(x3, y1, x1, y3), d(x1, y2, x2, y1)))
        if f == "Integer":
            return A.elementwise(lambda x: self.integer(x, e.where), args[0])
        if f == "Real":             # OpenModelica's Integer -> Real conversion: the value
            return args[0]
        self.fail(f"unknown function '{f}'", e.where)

    def integer(self, x, where):
        """``Integer(e)``: the position of an enumeration value, 1/0 of a Boolean."""
        if type(x) is E.Const:
            return E.Const(int(x.value))
        t = self.var_type(x.name) if type(x) is E.Ref else None
        if t == "Boolean":
            return E.If(x, E.Const(1), E.Const(0))
        if t == "Real" or type(x) is E.Time:
            self.fail("Integer() converts enumerations and Booleans; use integer() or "
                      "floor() for a Real", where)
        return x

    def var_type(self, name):
        return self.base_types.get(name)

    def construct(self, rec: T.RecordDef, e, args, env):
        """``R(a, b, f = c)``: the record value, defaults from the record's bindings."""
        fields = [f for f in rec.fields if isinstance(f, Decl)]
        values = {}
        pos = [a for a in e.args if type(a) is not Named]
        if len(pos) > len(fields):
            self.fail(f"record constructor {rec.name}() takes {len(fields)} arguments, got "
                      f"{len(pos)}", e.where)
        for f, v in zip(fields, [a for a, raw in zip(args, e.args) if type(raw) is not Named]):
            values[f.name] = v
        for raw in e.args:
            if type(raw) is Named:
                fname = normalize_name(raw.name[1])
                if rec.field(fname) is None:
                    self.fail(f"record '{rec.name}' has no field '{fname}'", raw.name[2])
                values[fname] = self._value(raw.value, env)
        out = []
        for f in fields:
            if f.name in values:
                out.append((f.name, values[f.name]))
            elif f.binding is not None:
                out.append((f.name, self._value(f.binding, env)))
            else:
                self.fail(f"record constructor {rec.name}(): no value for field '{f.name}'",
                          e.where)
        return Rec(type=rec.name, fields=tuple(out))

    # ---- equations ----
    def equate(self, a, b, where, out: list):
        """``a = b`` element by element (arrays) and field by field (records)."""
        strings = (_StringVar, E.Str)
        a, b = (_StringVar("String(...)") if _string_expr(x) else x for x in (a, b))
        if type(a) in strings or type(b) in strings:
            if type(a) in strings and type(b) in strings:
                return                      # an equation on Strings: ignored (docstring)
            self.fail("a String is equated to a number", where)
        if type(a) is A.Arr or type(b) is A.Arr:
            if A.shape_of(a) != A.shape_of(b):
                for x in (a, b):        # the real cause: a name the file does not declare
                    if type(x) is E.Ref and x.name in self.unresolved:
                        self.fail(f"undefined name '{x.name}'",
                                  self.use_where(x.name) or where)
                self.fail(f"the two sides of the equation have different sizes: "
                          f"{list(A.shape_of(a))} and {list(A.shape_of(b))}", where)
            for x, y in zip(a.items, b.items):
                self.equate(x, y, where, out)
            return
        if type(a) is Rec or type(b) is Rec:
            if type(a) is not Rec:
                a = self.fields_of(a, b)
            if type(b) is not Rec:
                b = self.fields_of(b, a)
            if type(a) is not Rec or type(b) is not Rec:
                self.fail("a record equated to a scalar", where)
            fa, fb = dict(a.fields), dict(b.fields)
            if set(fa) != set(fb):
                self.fail(f"records of different types {a.type} and {b.type} are equated",
                          where)
            for k, x in a.fields:
                self.equate(x, fb[k], where, out)
            return
        out.append(("eq", a, b, where))

    def fields_of(self, v, like: Rec):
        """OpenModelica's scalarized record ``h`` (``Real h.k; Real h.c;`` declared, no
        record variable ``h``) as a record value of the type of ``like``; ``v`` itself when it
        is not one."""
        if type(v) is not E.Ref or v.name in self.scalars:
            return v
        rec = self.types.get(like.type)
        if type(rec) is not T.RecordDef:
            return v
        names = [f.name for f in rec.fields if isinstance(f, Decl)]
        values = []
        for f in names:
            full = f"{v.name}.{f}"
            if full not in self.scalars and full not in self.shapes and \
                    full not in self.records:
                return v
            values.append((f, self.ref(full, {}, None)))
        self.unresolved.discard(v.name)
        self.resolved.add(v.name)
        return Rec(type=rec.name, fields=tuple(values))

    def items(self, items, env, out):
        for it in items:
            if it is None:
                continue
            saved, self.range_checks = self.range_checks, []
            try:
                self.item(it, env, out)
            finally:
                checks, self.range_checks = self.range_checks, saved
            out.extend(("stmt", c) for c in checks)

    def item(self, it, env, out):
        """One equation item ``it`` lowered into ``out``."""
        tag = it[0]
        where = it[3] if tag in ("eq", "for") else \
            (it[1].loc if tag == "stmt" and it[1] is not None else it[-1])
        try:
            if tag == "eq":
                if type(it[2]) is E.Call and self.ctx.functions and \
                        tuple_equation(self, it, env, out):
                    return              # (a, b) = f(x) of a function with arrays
                self.equate(self.value(it[1], env, it[3]), self.value(it[2], env, it[3]),
                            it[3], out)
            elif tag == "stmt":
                self.stmt(it[1], env, out)
            elif tag == "if":
                self.if_eq(it, env, out)
            elif tag == "when":
                branches = []
                for cond, loc, body in it[1]:
                    c = self.value(cond, env, loc)
                    sub: list = []
                    self.items(body, env, sub)
                    conds = c.items if type(c) is A.Arr else (c,)
                    branches.extend((x, loc, sub) for x in conds)
                out.append(("when", branches, it[2]))
            elif tag == "for":
                for en in self.iterate(it[1], env):
                    self.items(it[2], en, out)
            else:                       # items of other blocks (i13b): as they are
                out.append(it)
        except LowerError as err:
            self.report(err, where)

    def stmt(self, s, env, out):
        if s is None:
            return
        if s.func == "reinit" and len(s.args) == 2:
            t = self.value(s.args[0], env, s.loc)
            v = self.value(s.args[1], env, s.loc)
            if type(t) is A.Arr:
                if A.shape_of(v) not in ((), t.shape):
                    self.fail("reinit of arrays of different sizes", s.loc)
                vs = v.items if type(v) is A.Arr else (v,) * len(t.items)
                for x, y in zip(t.items, vs):
                    out.append(("stmt", Stmt(func="reinit", args=[x, y], named={}, loc=s.loc)))
                return
            out.append(("stmt", Stmt(func="reinit", args=[t, v], named={}, loc=s.loc)))
            return
        def arg(a, k):
            if s.func == "assert" and k == 2 and _is_builtin_literal(a):
                return a            # AssertionLevel.warning: read by the model builder
            return self.scalar(a, env, s.loc, f"argument of {s.func}")
        args = [arg(a, k) for k, a in enumerate(s.args)]
        named = {k: Named(name=a.name, value=arg(a.value, 2 if k == "level" else -1))
                 for k, a in s.named.items()}
        out.append(("stmt", Stmt(func=s.func, args=args, named=named, loc=s.loc)))

    def if_eq(self, it, env, out):
        _, branches, orelse, loc = it
        kept = []
        for cond, bloc, body in branches:
            c = self.fold(self.scalar(cond, env, bloc, "if-condition"), cond)
            if type(c) is E.Const and type(c.value) is bool and type(cond) is not E.Const:
                if not c.value:
                    continue                # a branch never taken
                if not kept:                # the first branch that can be taken: always
                    self.items(body, env, out)
                    return
                orelse = body
                break
            sub: list = []
            self.items(body, env, sub)
            kept.append((c, bloc, sub))
        if not kept:
            self.items(orelse or [], env, out)
            return
        els = None
        if orelse is not None:
            els = []
            self.items(orelse, env, els)
        self.hoist_checks(kept, els, out)
        out.append(("if", kept, els, loc))

    def hoist_checks(self, kept, els, out):
        """The range checks of the branches of an if-equation moved out of them, each
        ``assert(if taken then check else true, ...)`` with ``taken`` its branch's condition
        (and not the earlier ones'): an assertion inside a branch would be guarded, which
        the single-mode export does not support."""
        earlier: list = []
        for c, sub in [(c, sub) for c, _l, sub in kept] + [(None, els or [])]:
            taken = E.Const(True) if c is None else c
            for p in reversed(earlier):
                taken = E.BinOp("and", E.UnOp("not", p), taken)
            stay = []
            for x in sub:
                if x[0] == "stmt" and id(x[1]) in self._check_ids:
                    s = x[1]
                    moved = Stmt(func="assert", named={}, loc=s.loc,
                                 args=[E.If(taken, s.args[0], E.Const(True)), s.args[1]])
                    self._check_ids.add(id(moved))
                    out.append(("stmt", moved))
                else:
                    stay.append(x)
            sub[:] = stay
            if c is not None:
                earlier.append(c)


_LAST_SUBS = re.compile(r"^(.*)\[([0-9, \t]+)\]$")


#: a subscripted part followed by a field in a scalarized name: ``m.ra[2]`` of ``m.ra[2].x``
_ELEMENT_PREFIX = re.compile(r"(?=^(.*?)\[([0-9, ]+)\]\.)")

_ARRAYS = (A.ArrayCons, A.MatrixCons, A.Comprehension, A.ArrayCall)


def _literal_arrays(lists: list):
    """``Real x[3];`` is read as the name ``x[3]`` (OpenModelica's scalarized output declares
    its elements ``x[1]``, ``x[2]``, ... that way). A subscripted name that is the only
    declaration of its array is the declaration of the whole array: its dimensions are the
    literals (``x[1]`` alone is both). Rewritten in place."""
    groups: dict = {}
    for decls in lists:
        for k, d in enumerate(decls):
            if type(d) is Decl and d.name[-1:] == "]" and not d.dims:
                m = _LAST_SUBS.match(d.name)
                # (`r.a[1].z[3] = {0, 0, 0}`, an array field of an element of a record array
                # in OpenModelica's scalarized output, when its value is an array)
                if m is not None and ("[" not in m.group(1) or type(d.binding) in _ARRAYS):
                    groups.setdefault(m.group(1), []).append((decls, k, m.group(2)))
    for base, members in groups.items():
        if len(members) != 1:
            continue
        decls, k, subs = members[0]
        dims = tuple(E.Const(int(x)) for x in subs.replace(" ", "").replace("\t", "").split(","))
        d = decls[k]
        decls[k] = replace(d, name=base, dims=dims)


_BUILTIN_ENUMS = {"StateSelect": ("never", "avoid", "default", "prefer", "always"),
                  "AssertionLevel": ("error", "warning")}


def _is_builtin_literal(e) -> bool:
    """``StateSelect.prefer``, ``AssertionLevel.warning``: kept as references where the model
    builder reads them (the stateSelect modifier, the level of assert)."""
    return type(e) is E.Ref and e.name.startswith(ENUM_PREFIXES)


def _string_expr(v) -> bool:
    """``v`` is a String built by ``String(...)`` or ``+`` of strings (the value of a String
    variable, which the model ignores)."""
    t = type(v)
    if t is E.Call:
        return v.func == "String"
    if t is E.BinOp and v.op == "+":
        return any(type(x) in (E.Str, _StringVar) or _string_expr(x) for x in (v.left, v.right))
    return False


def _no_string_var(v):
    if type(v) is _StringVar:
        raise LowerError(f"the String variable '{v.name}' can only be used in an equation "
                         "between Strings (Strings are kept only as constants of assert "
                         "messages)")


def _refs(e):
    """The references in a (maybe unlowered) expression."""
    if type(e) is E.Ref:
        yield e
    elif type(e) in (A.Subscripted,):
        yield E.Ref(e.name)
    elif hasattr(e, "__slots__") and not isinstance(e, A._Marker):
        for k in e.__slots__:
            v = getattr(e, k, None)
            for x in (v if type(v) is tuple else (v,)):
                if x is not None and not isinstance(x, (str, int, float, bool)):
                    yield from _refs(x)


class _Typed(Mapping[str, str]):
    """Declared base types (Real, Integer, Boolean) for `assert_messages.value_kind`; a name
    without one (a for-index) reads as Integer."""
    __slots__ = ("types",)

    def __init__(self, types: Mapping[str, str]):
        self.types = types

    def __getitem__(self, name: str) -> str:
        return self.types.get(name, "Integer")

    def __iter__(self) -> Iterator[str]:
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)


def _is_param(prefixes, explicit=None) -> bool:
    """Parameter or constant, by its prefixes (or, XML, its explicit variability)."""
    if explicit and "variability" in explicit:
        return explicit["variability"] in ("parameter", "constant")
    return any(p in ("parameter", "constant") for p, _ in prefixes)


def _merge_prefixes(outer, inner) -> tuple:
    """Prefixes of a record field: the instance's variability/causality, then the field's
    own (Modelica 3.6 §4.5: a parameter record has parameter fields)."""
    have = {p for p, _ in inner}
    return tuple(inner) + tuple(p for p in outer if p[0] not in have and not (
        p[0] in ("parameter", "constant", "discrete") and have & {"parameter", "constant"}))


_PY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "^": operator.pow, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
           "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "<>": operator.ne}


def _apply(op, a, b):
    """``a op b`` of Python values; None when it is not defined (1/0...)."""
    f = _PY_OPS.get(op)
    if f is None:
        return None
    try:
        return f(a, b)
    except (ZeroDivisionError, OverflowError, TypeError):
        return None


_CONST_FUNCS = {
    "abs": abs, "min": min, "max": max, "integer": math.floor, "floor": math.floor,
    "ceil": math.ceil, "div": lambda a, b: int(a / b),
    "mod": lambda a, b: a - math.floor(a / b) * b,
    "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "exp": math.exp, "log": math.log,
}


def lower_expression(e, ctx):
    """A standalone expression (no declarations) as a scalar; errors go to ``ctx``."""
    try:
        return Lowering(ctx).scalar(e, {}, None)
    except LowerError as err:
        ctx.error(ctx.loc(1, 1) if err.where is None else ctx.where_loc(err.where),
                  err.message)
        return E.ZERO


def lower(sections: list, ctx) -> list:
    """Scalar sections of ``sections`` (module docstring)."""
    return Lowering(ctx).run(sections)


__all__ = ["lower", "LowerError", "Lowering", "Rec"]
