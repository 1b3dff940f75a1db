"""Record values in the lowering (Modelica 3.6 §12.6, record constructors): ``R(a, f = c)``
with the defaults of the record's bindings, and a record that OpenModelica's scalarized output
declares field by field read back as a record value."""

from __future__ import annotations

from .. import expr as E
from . import arrays as A
from . import types as T
from .lower_context import LowerContext
from .lower_names import ref
from .lowered import Rec
from .syntax import Decl, Named, normalize_name


def construct(lw: LowerContext, rec: T.RecordDef, e, args, env):
    """``R(a, b, f = c)``: the record value, defaults from the record's bindings."""
    fields = [f for f in rec.fields if isinstance(f, Decl)]
    values = {}
    pos = [a for a in e.args if type(a) is not Named]
    if len(pos) > len(fields):
        lw.fail(f"record constructor {rec.name}() takes {len(fields)} arguments, got "
                f"{len(pos)}", e.where)
    for f, v in zip(fields, [a for a, raw in zip(args, e.args) if type(raw) is not Named]):
        values[f.name] = v
    for raw in e.args:
        if type(raw) is Named:
            fname = normalize_name(raw.name[1])
            if rec.field(fname) is None:
                lw.fail(f"record '{rec.name}' has no field '{fname}'", raw.name[2])
            values[fname] = lw.value_of(raw.value, env)
    out = []
    for f in fields:
        if f.name in values:
            out.append((f.name, values[f.name]))
        elif f.binding is not None:
            out.append((f.name, lw.value_of(f.binding, env)))
        else:
            lw.fail(f"record constructor {rec.name}(): no value for field '{f.name}'",
                    e.where)
    return Rec(type=rec.name, fields=tuple(out))


def late_constructor(lw: LowerContext, e: E.Call) -> A.ArrayCall:
    """``R(...)`` read as a call because the record ``R`` is defined later in the file (Base
    Modelica orders a package's classes freely): the record constructor, no longer a call of
    a function to check."""
    calls = lw.ctx.calls
    k = next((k for k, c in enumerate(calls) if c[0] == e.func), None)
    where = calls.pop(k)[1] if k is not None else None
    return A.ArrayCall(e.func, e.args, where)


def fields_of(lw: LowerContext, v, like: Rec):
    """OpenModelica's scalarized record ``h`` (``Real h.k; Real h.c;`` declared, no record
    variable ``h``) as a record value of the type of ``like``; ``v`` itself when it is not
    one."""
    if type(v) is not E.Ref or v.name in lw.scalars:
        return v
    rec = lw.types.get(like.type)
    if type(rec) is not T.RecordDef:
        return v
    names = [f.name for f in rec.fields if isinstance(f, Decl)]
    values = []
    for f in names:
        full = f"{v.name}.{f}"
        if full not in lw.scalars and full not in lw.shapes and full not in lw.records:
            return v
        values.append((f, ref(lw, full, {}, None)))
    lw.unresolved.discard(v.name)
    lw.resolved.add(v.name)
    return Rec(type=rec.name, fields=tuple(values))


__all__ = ["construct", "late_constructor", "fields_of"]
