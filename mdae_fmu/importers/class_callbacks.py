"""Grammar callbacks of class definitions (issue 13, issue 27): the model class, the Base
Modelica package around it, the ``within`` clause, and the type definitions before the class
(enumerations, type aliases, records; module `types`), with the sections they hold.
Each callback is a function ``rule(cb, c)`` of the callbacks object and the rule's children,
listed in ``RULES`` (`callback_common`).
"""

from __future__ import annotations

from dataclasses import replace

from . import types as T
from .callback_common import rule_table, left_list
from .declaration_callbacks import modifier_list
from .syntax import Description, normalize_name


def element_section(cb, c):
    return c[0] if c else ("decls", [])


def within_clause(cb, c):
    return ("within",)


def definitions(cb, c):
    return ("decls", [d for x in c for d in x])


def enum_literal(cb, c):
    desc = next((x.text for x in c[1:] if type(x) is Description), None)
    return (normalize_name(c[0][1]), c[0][2], desc)


def enum_literals(cb, c):
    return c


def _enum(cb, c, name, where):
    lits = next((x for x in c if type(x) is list), [])
    return T.EnumDef(name, tuple(x[0] for x in lits), where, tuple(x[1] for x in lits),
                     tuple(x[2] for x in lits))


def enum_definition(cb, c):
    cb.ctx.extended = True
    return [_enum(cb, c, normalize_name(c[1][1]), c[1][2])]


def enum_type(cb, c):
    # the inline ``enumeration(a, b) x;`` of OpenModelica's flat output: a type name
    # token of its own, resolved through `ParseContext.inline_types`
    ctx = cb.ctx
    ctx.extended = True
    e = _enum(cb, c, "", c[0][2])
    key = "enumeration(" + ",".join(e.literals) + ")"
    ctx.inline_types.setdefault(key, replace(e, name=key))
    return ("NAME", key, c[0][2])


def type_alias(cb, c):
    # [TYPE, NAME, EQ, NAME, subscripts?, class_modification?, description?, annotation?]
    cb.ctx.extended = True
    base = c[3]
    dims = ()
    mods = []
    desc = None
    for x in c[4:]:
        if type(x) is tuple and x and x[0] == "SEMI":
            continue
        if type(x) is tuple:
            dims = x
        elif type(x) is list:
            mods = x
        elif type(x) is Description:
            desc = x.text
    return [T.AliasDef(normalize_name(c[1][1]), c[1][2], normalize_name(base[1]),
                       base[2], dims, modifier_list(cb.ctx, mods, False), desc)]


def record_definition(cb, c):
    # [RECORD, NAME, description?, ("decls", [...])?, NAME, SEMI]
    cb.ctx.extended = True
    decls = next((x[1] for x in c if type(x) is tuple and x and x[0] == "decls"), [])
    name = normalize_name(c[1][1])
    end = normalize_name(c[-2][1])
    if end != name:
        cb.ctx.error(cb.ctx.tok_loc(c[-2]), f"'end {end};' does not match "
                                            f"'record {name}'")
    cb.ctx.record_names.add(name)
    return [T.RecordDef(name, c[1][2], tuple(decls))]


def class_definition(cb, c):
    # [kind, NAME, description?, contents..., NAME(end), SEMI]
    contents = []
    for x in c[2:-2]:
        if type(x) is list:              # sections
            contents.extend(x)
        elif type(x) is tuple:           # the declarations before the first section
            contents.append(x)
    return ("class", c[0], c[1], c[-2], contents)


def package_definition(cb, c):
    cls = next(x for x in c if type(x) is tuple and x[0] == "class")
    consts = [x for x in c if type(x) is tuple and x[0] == "decls"]
    return ("package", c[1], c[-2], consts, cls)


def start(cb, c):
    # [BASE_HEADER?, ("within",)?, ("decls", type definitions)?, class or package]
    result = c[-1]
    defs = next((x for x in c[:-1] if type(x) is tuple and x and x[0] == "decls"), None)
    if defs is not None:
        (result[3] if result[0] == "package" else result[4]).insert(0, defs)
    return result


#: The callbacks of this module, by grammar rule (`flat_modelica` assembles them).
RULES = rule_table(element_section, within_clause, definitions, enum_literal, enum_literals,
                   enum_definition, enum_type, type_alias, record_definition, class_definition,
                   package_definition, start, sections=left_list)


__all__ = ["RULES"]
