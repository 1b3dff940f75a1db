"""Functions with array or record inputs, outputs or protected variables (issue 13 items
1(b) and 4, issue 24), scalarized per call by `lowering` through a
`lower_context.LowerContext` (docs/importers.md, "Functions with arrays", "Functions with
records").

The generated C and the Python evaluator know scalar functions only. A call of a function
that declares array variables is therefore given a *specialization*: a scalar function
``f$a1`` whose array variables are replaced by their elements (``y[1]``, ``y[2]``...), its
statements scalarized as a model's algorithm (`algorithm_lowering`: for-loops unrolled,
``y := x * 2`` one assignment per element). The sizes come from the call: ``x[:]`` takes
the size of its argument, ``y[n]`` or ``y[size(x, 1)]`` are evaluated with the values of the
scalar Integer arguments that are parameter expressions at the call (Modelica 3.6 §12.4.5:
the sizes of a function's arrays are fixed when it is called). One specialization serves
every call with the same sizes and the same size-giving arguments.

The call becomes the specialization's call on the flattened arguments; an array output is
the array of its element outputs (`functions.call_name`). A size that is not known at the
call (it depends on a variable) is refused there with the input's name.

A record variable (``input ThermodynamicState state``, records nested in records, array
fields) is its fields in the same way, named as the model's are (``state.p``,
``state.X[1]``): the argument, a record value, is passed field by field in the order the
record declares them, and a record output is the record of its field outputs.

A functional input argument (``input PF pf`` with ``partial function PF``, Modelica 3.6
§12.4.2) takes the name of a function of the file at the call (``f(time, f2)``): the
specialization has no such input and calls that function where the body calls ``pf``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .. import expr as E
from .. import functions as F
from . import arrays as A
from . import types as T
from .lowered import LowerError, Rec

_ARRAY_ERROR = "array variables in functions are not supported"
_SUBSCRIPTED = re.compile(r"^(.*)\[([0-9]+(?:,[0-9]+)*)\]$")


@dataclass(frozen=True, slots=True)
class RecordShape:
    """The structure of a record output: its type and, per field, a shape (a tuple) or a
    `RecordShape`."""
    name: str
    fields: tuple           # ((field name, shape or RecordShape), ...)


def array_function_defs(low) -> dict:
    """Name -> `functions.FunctionDef` of the file's functions that declare arrays or
    records."""
    found = low.array_fn_defs
    if found is None:
        found = {}
        for d in low.ctx.functions:
            if any(getattr(decl, "dims", ()) or _record_of(low, decl) is not None
                   or _partial_of(low, decl) is not None for decl in _decls(d)):
                found[d.name] = d
        low.array_fn_defs = found
    return found


def _record_of(low, decl):
    """The `types.RecordDef` of ``decl``'s type, None when it is not a record."""
    if decl.type_name in ("Real", "Integer", "Boolean", "String"):
        return None
    rec = low.types.get(decl.type_name)
    return rec if type(rec) is T.RecordDef else None


def _partial_of(low, decl):
    """The partial function that is ``decl``'s type (a functional input argument), None when
    it is not one."""
    return next((f for f in low.ctx.functions if f.partial and f.name == decl.type_name), None)


def _function_argument(low, d, decl, arg) -> str:
    """The function passed to the functional input ``decl`` of ``d``: the name of a function
    of the file (a partial application ``function g(k = 2)`` or an expression is refused)."""
    if type(arg) is not E.Ref or not any(f.name == arg.name and not f.partial
                                         for f in low.ctx.functions):
        low.fail(f"the functional input '{decl.name}' of '{d.name}' takes the name of a "
                 "function defined in the file",
                 next((c[1] for c in low.ctx.calls if c[0] == d.name), None))
    low.resolved.add(arg.name)              # a function name, not an undeclared variable
    return arg.name


def _renamed(obj, names: dict):
    """The parse form ``obj`` (statement items, expressions) with the calls of and references
    to the keys of ``names`` renamed to their values (the functional inputs of a
    specialization replaced by the functions passed)."""
    t = type(obj)
    if t is E.Call:
        return E.Call(names.get(obj.func, obj.func), tuple(_renamed(a, names) for a in obj.args))
    if t is E.Ref:
        return E.Ref(names[obj.name]) if obj.name in names else obj
    if t is tuple:
        return tuple(_renamed(x, names) for x in obj)
    if t is list:
        return [_renamed(x, names) for x in obj]
    if hasattr(obj, "__dataclass_fields__"):
        changes = {f: _renamed(getattr(obj, f), names) for f in obj.__dataclass_fields__}
        return replace(obj, **changes)
    return obj


def _decls(d) -> list:
    """The declarations of ``d``; ``Real a[3]`` (read as one name ``a[3]``, the way a flat
    model's scalarized elements are) with its dimensions when no other element of ``a`` is
    declared."""
    decls = [decl for sec in d.contents if type(sec) is tuple and sec and sec[0] == "decls"
             for decl in sec[1]]
    bases: dict = {}
    for decl in decls:
        m = _SUBSCRIPTED.match(decl.name)
        if m is not None:
            bases[m.group(1)] = bases.get(m.group(1), 0) + 1
    out = []
    for decl in decls:
        m = _SUBSCRIPTED.match(decl.name)
        if m is not None and bases[m.group(1)] == 1 and not decl.dims:
            dims = tuple(E.Const(int(x)) for x in m.group(2).split(","))
            decl = replace(decl, name=m.group(1), dims=dims)
        out.append(decl)
    return out


def _kind(decl) -> str:
    kinds = {k for k, _ in decl.prefixes}
    return "input" if "input" in kinds else "output" if "output" in kinds else "local"


def call_value(low, d, e: E.Call, env):
    """The value of the call ``e`` of ``d`` (module docstring): a scalar call or an
    `arrays.Arr` of calls of the specialization."""
    decls = _decls(d)
    inputs = [x for x in decls if _kind(x) == "input"]
    passed: dict = {}                   # functional input -> the function passed
    given = []
    for k, a in enumerate(e.args):
        if k < len(inputs) and _partial_of(low, inputs[k]) is not None:
            passed[inputs[k].name] = _function_argument(low, d, inputs[k], a)
        else:
            given.append(a)
    inputs = [x for x in inputs if x.name not in passed]
    args = [low.value_of(a, env) for a in given]
    if len(args) > len(inputs):
        low.fail(f"'{d.name}' expects {len(inputs)} arguments, got {len(args)}")
    if len(args) < len(inputs):
        missing = inputs[len(args)]
        if missing.dims or any(x.binding is None for x in inputs[len(args):]):
            low.fail(f"'{d.name}' expects {len(inputs)} arguments, got {len(args)}")
        args += [low.value_of(x.binding, env) for x in inputs[len(args):]]
    shapes: dict = {}
    consts: dict = {}
    leaves: list = []
    for k, (decl, a) in enumerate(zip(inputs, args)):
        rec = _record_of(low, decl)
        if rec is not None:
            if decl.dims:
                low.fail(f"the input '{decl.name}' of '{d.name}' is an array of records, which "
                         "is not supported in functions")
            leaves.extend(_record_leaves(low, rec, a, f"argument {k + 1} of '{d.name}'"))
            continue
        leaves.extend(a.items if type(a) is A.Arr else (a,))
        got = A.shape_of(a)
        if decl.dims and len(got) != len(decl.dims):
            low.fail(f"argument {k + 1} of '{d.name}' has {len(got)} dimension"
                     f"{'' if len(got) == 1 else 's'}, its input '{decl.name}' is declared "
                     f"with {len(decl.dims)}")
        if decl.dims:
            want = _dims(low, d, decl, shapes, consts, got)
            if want != got:
                low.fail(f"argument {k + 1} of '{d.name}' has size {list(got)}, its input "
                         f"'{decl.name}' is declared with size {list(want)}")
            shapes[decl.name] = got
        elif got:
            low.fail(f"argument {k + 1} of '{d.name}' is an array of size {list(got)}, its "
                     f"input '{decl.name}' is a scalar (vectorized calls of functions with "
                     "array variables are not supported)")
        else:
            c = low.const(a, env)
            if type(c) is int and decl.type_name == "Integer":
                consts[decl.name] = c
    for decl in decls:
        if _kind(decl) != "input" and decl.dims:
            if _record_of(low, decl) is not None:
                low.fail(f"'{decl.name}' of '{d.name}' is an array of records, which is not "
                         "supported in functions")
            shapes[decl.name] = _dims(low, d, decl, shapes, consts, None)
    key = (d.name, tuple(sorted(shapes.items())), tuple(sorted(consts.items())),
           tuple(sorted(passed.items())))
    specs = low.ctx.array_specs
    spec = specs.get(key)
    if spec is None:
        spec = specs[key] = _specialize(low, d, [x for x in decls if x.name not in passed],
                                        shapes, consts, len(specs) + 1, passed)
    name, out_shapes = spec
    flat = tuple(leaves)
    ctx = low.ctx
    where = d.loc
    for k, call in enumerate(ctx.calls):
        if call[0] == d.name:           # this call is now one of the specialization
            where = call[1]
            del ctx.calls[k]
            break
    ctx.calls.append((name, where, len(flat)))
    low.last_array_call = (name, out_shapes, flat)
    if out_shapes[0] == ():
        return E.Call(name, flat)
    return _output_value(out_shapes[0], name, flat, 0)


def _count(shape) -> int:
    """The number of scalar outputs of an output of this shape (or `RecordShape`)."""
    if type(shape) is RecordShape:
        return sum(_count(f) for _, f in shape.fields)
    n = 1
    for s in shape:
        n *= s
    return n


def _output_value(shape, name: str, flat: tuple, first: int):
    """The value of an output of ``shape`` (or `RecordShape`) whose scalars are the outputs
    ``first``, ``first + 1``... of the specialization ``name`` called on ``flat``."""
    if type(shape) is RecordShape:
        fields = []
        for fname, fshape in shape.fields:
            fields.append((fname, _output_value(fshape, name, flat, first)))
            first += _count(fshape)
        return Rec(type=shape.name, fields=tuple(fields))
    calls = tuple(E.Call(F.call_name(name, first + j), flat) for j in range(_count(shape)))
    return A.Arr(shape, calls) if shape else calls[0]


def _record_leaves(low, rec, value, what: str) -> list:
    """The scalars of the record value ``value`` passed where ``rec`` is declared, in the
    order of ``rec``'s fields (nested records and array fields flattened)."""
    if type(value) is not Rec:
        low.fail(f"{what} must be a record of type {rec.name}")
    given = dict(value.fields)
    out: list = []
    for f in rec.fields:
        if not hasattr(f, "type_name"):
            continue
        if f.name not in given:
            low.fail(f"{what}: the record has no field '{f.name}' (a {rec.name} is expected)")
        v = given[f.name]
        sub = _record_of(low, f)
        if sub is not None:
            out.extend(_record_leaves(low, sub, v, f"{what}, field '{f.name}'"))
        else:
            out.extend(v.items if type(v) is A.Arr else (v,))
    return out


def tuple_values(low, rhs, env, n_targets: int):
    """The values of the outputs of a call ``(a, b, ...) := f(x)`` of a function with arrays:
    one scalar or `arrays.Arr` of calls per output, None when ``rhs`` is not such a call."""
    if type(rhs) is not E.Call or not low.ctx.functions or \
            rhs.func not in array_function_defs(low):
        return None
    call_value(low, array_function_defs(low)[rhs.func], rhs, env)
    name, out_shapes, flat = low.last_array_call
    if n_targets > len(out_shapes):
        low.fail(f"'{rhs.func}' has {len(out_shapes)} outputs, {n_targets} are assigned")
    values = []
    k = 0
    for shape in out_shapes:
        values.append(_output_value(shape, name, flat, k))
        k += _count(shape)
    return values


def _dims(low, d, decl, shapes, consts, got) -> tuple:
    """The size of ``decl``'s dimensions at this call (``:`` from the argument)."""
    scope = low.fresh()
    scope.shapes = dict(shapes)
    out = []
    for k, dim in enumerate(decl.dims):
        if dim is A.COLON or dim is None:
            if got is None or k >= len(got):
                low.fail(f"the size of '{decl.name}' in function '{d.name}' is ':' but it is "
                         "not an input")
            out.append(got[k])
            continue
        v = scope.value(dim, consts, None)
        c = scope.const(v, consts) if type(v) is not A.Arr else None
        if type(c) is not int:
            low.fail(f"the size of '{decl.name}' in function '{d.name}' is not known at this "
                     "call (it must follow from constants, parameters or the sizes of the "
                     "array arguments)")
        out.append(c)
    return tuple(out)


def _specialize(low, d, decls, shapes, consts, number, passed):
    """Register the scalar function for these sizes (and the functions ``passed`` to its
    functional inputs) in the file's functions; returns its name and the shape of its first
    output."""
    name = f"{d.name}$a{number}"
    body_low = low.fresh()
    body_low.shapes = dict(shapes)
    body_low.types = low.types              # the file's records and enumerations
    ctx = low.ctx

    def report(err, where, _name=d.name):
        ctx.error(ctx.where_loc(err.where if err.where is not None else where),
                  f"in function '{_name}', whose arrays are scalarized per call: "
                  f"{err.message}")
    body_low.report = report
    new_decls = []
    out_shapes = []
    bound = []                          # (position in new_decls, array declaration)
    for decl in decls:
        shape = shapes.get(decl.name)
        rec = _record_of(low, decl)
        if rec is not None:
            leaves = _record_decls(low, body_low, rec, decl, decl.name)
            if _kind(decl) == "output":
                out_shapes.append(_record_shape(low, rec, decl.name, body_low))
            new_decls.extend(leaves)
            continue
        if _kind(decl) == "output":
            out_shapes.append(shape or ())
        if shape is None:
            body_low.scalars.add(decl.name)
            body_low.base_types[decl.name] = decl.type_name
            new_decls.append(decl)
            continue
        if decl.binding is not None and _kind(decl) != "input":
            bound.append((len(new_decls), decl))
        for idx in list(A.indices(shape)):
            element = A.element_name(decl.name, idx)
            body_low.scalars.add(element)
            new_decls.append(replace(decl, name=element, dims=(), binding=None))
    for k, decl in bound:
        _element_bindings(body_low, decl, shapes[decl.name], consts, new_decls, k)
    new_decls = [_scalar_binding(body_low, x, consts) for x in new_decls]
    contents = []
    for sec in (_renamed(d.contents, passed) if passed else d.contents):
        tag = sec[0] if type(sec) is tuple and sec else None
        if tag == "decls":
            continue
        if tag == "algorithm":
            contents.append(("algorithm", body_low.lower_statements(sec[1], dict(consts)),
                             sec[2]))
        elif tag == "external":
            low.fail(f"external function '{d.name}' has array arguments, which are not "
                     "supported")
        else:
            contents.append(sec)
    contents.insert(0, ("decls", new_decls))
    errors = [x for x in d.errors if not (type(x) is tuple and x and type(x[-2]) is str
                                          and _ARRAY_ERROR in x[-2])]
    # the body's calls of functions with arrays were specialized while it was lowered (each
    # specialization is a call of the file, `call_value`): the original's are not called
    arrays = array_function_defs(low)
    calls = [(passed.get(c[0], c[0]), *c[1:]) for c in d.calls if c[0] not in arrays and
             type(low.types.get(c[0])) is not T.RecordDef]     # (record constructors)
    spec = replace(d, name=name, end_name=name, contents=contents, errors=errors, calls=calls)
    low.ctx.functions.append(spec)
    return name, out_shapes


def _record_decls(low, body_low, rec, decl, name: str) -> list:
    """The scalar declarations of the record variable ``decl`` (of type ``rec``) of a
    function, named ``name.field`` (nested records and array fields expanded), with the
    prefixes of ``decl``; the record structure is registered in ``body_low`` so that the body
    reads ``name``, ``name.field`` and ``name.field[i]`` as in a model."""
    body_low.records[name] = rec
    out = []
    for f in rec.fields:
        if not hasattr(f, "type_name"):
            continue
        path = f"{name}.{f.name}"
        sub = _record_of(low, f)
        if sub is not None:
            if f.dims:
                low.fail(f"the field '{f.name}' of record {rec.name} is an array of records, "
                         "which is not supported in functions")
            out.extend(_record_decls(low, body_low, sub, decl, path))
            continue
        binding = None if _kind(decl) == "input" else f.binding
        shape = low.shape(f.dims, f.loc) if f.dims else ()
        if shape:
            body_low.shapes[path] = shape
            for idx in A.indices(shape):
                element = A.element_name(path, idx)
                body_low.scalars.add(element)
                body_low.base_types[element] = f.type_name
                out.append(replace(decl, name=element, type_name=f.type_name, dims=(),
                                   binding=None, modifiers=()))
            continue
        body_low.scalars.add(path)
        body_low.base_types[path] = f.type_name
        out.append(replace(decl, name=path, type_name=f.type_name, dims=(), binding=binding,
                           modifiers=()))
    return out


def _record_shape(low, rec, name: str, body_low) -> RecordShape:
    """The `RecordShape` of a record output ``name`` of type ``rec``."""
    fields = []
    for f in rec.fields:
        if not hasattr(f, "type_name"):
            continue
        sub = _record_of(low, f)
        path = f"{name}.{f.name}"
        fields.append((f.name, _record_shape(low, sub, path, body_low) if sub is not None
                       else body_low.shapes.get(path, ())))
    return RecordShape(name=rec.name, fields=tuple(fields))


def _element_bindings(body_low, decl, shape, consts, new_decls, first) -> None:
    """The binding of the array ``decl`` (an output or protected variable of a function:
    ``output Real y[2] = {x[1] * 2, x[2] * 2}``, ``constant Real Z[2] = {2, 3}``, the value
    the variable has when the algorithm starts, Modelica 3.6 §12.4.4) as the bindings of its
    elements, which are ``new_decls[first:]`` in row-major order; a size mismatch is
    reported at the declaration."""
    try:
        v = body_low.value(decl.binding, dict(consts), decl.loc)
        if A.shape_of(v) != tuple(shape):
            body_low.fail(f"the binding of '{decl.name}' has size {list(A.shape_of(v))}, the "
                          f"array is declared with size {list(shape)}", decl.loc)
    except LowerError as err:
        body_low.report(err, decl.loc)
        return
    for j, item in enumerate(v.items):
        new_decls[first + j] = replace(new_decls[first + j], binding=item)


def _scalar_binding(body_low, decl, consts):
    """``decl`` (a scalar of the specialization) with its binding lowered for these sizes:
    ``protected Integer n = size(table, 1)`` is ``n = 4``."""
    if decl.binding is None or _kind(decl) == "input":
        return decl
    try:
        return replace(decl, binding=body_low.scalar(decl.binding, dict(consts), decl.loc,
                                                     f"binding of '{decl.name}'"))
    except LowerError as err:
        body_low.report(err, decl.loc)
        return decl


def tuple_equation(low, it, env, out) -> bool:
    """``(a, b) = f(x)`` (an equation item ``it``) with ``f`` a function with arrays: one
    equation per element of each target; False when it is not such an equation."""
    from .functions import Tuple
    lhs = it[1]
    if type(lhs) is not Tuple:
        return False
    values = tuple_values(low, it[2], env, len(lhs.items))
    if values is None:
        return False
    for x, v in zip(lhs.items, values):
        if x is not None:
            low.equate(low.value(x, env, it[3]), v, it[3], out)
    return True


__all__ = ["array_function_defs", "call_value", "tuple_equation", "tuple_values"]
