"""Grammar callbacks of class definitions (issue 13, issue 27): the model class, the Base
Modelica package around it, the ``within`` clause, and the type definitions before the class
(enumerations, type aliases, records; module `types`), with the sections they hold.
"""

from __future__ import annotations

from dataclasses import replace

from . import types as T
from .callback_common import CallbackPart, left_list
from .declaration_callbacks import modifier_list
from .syntax import Description, normalize_name


class ClassCallbacks(CallbackPart):
    """Callbacks of the class, the package and the type definitions."""

    sections = staticmethod(left_list)

    def element_section(self, c):
        return c[0] if c else ("decls", [])

    def within_clause(self, c):
        return ("within",)

    def definitions(self, c):
        return ("decls", [d for x in c for d in x])

    def enum_literal(self, c):
        desc = next((x.text for x in c[1:] if type(x) is Description), None)
        return (normalize_name(c[0][1]), c[0][2], desc)

    def enum_literals(self, c):
        return c

    def _enum(self, c, name, where):
        lits = next((x for x in c if type(x) is list), [])
        return T.EnumDef(name, tuple(x[0] for x in lits), where, tuple(x[1] for x in lits),
                         tuple(x[2] for x in lits))

    def enum_definition(self, c):
        self.ctx.extended = True
        return [self._enum(c, normalize_name(c[1][1]), c[1][2])]

    def enum_type(self, c):
        # the inline ``enumeration(a, b) x;`` of OpenModelica's flat output: a type name
        # token of its own, resolved through `ParseContext.inline_types`
        ctx = self.ctx
        ctx.extended = True
        e = self._enum(c, "", c[0][2])
        key = "enumeration(" + ",".join(e.literals) + ")"
        ctx.inline_types.setdefault(key, replace(e, name=key))
        return ("NAME", key, c[0][2])

    def type_alias(self, c):
        # [TYPE, NAME, EQ, NAME, subscripts?, class_modification?, description?, annotation?]
        self.ctx.extended = True
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
                           base[2], dims, modifier_list(self.ctx, mods, False), desc)]

    def record_definition(self, c):
        # [RECORD, NAME, description?, ("decls", [...])?, NAME, SEMI]
        self.ctx.extended = True
        decls = next((x[1] for x in c if type(x) is tuple and x and x[0] == "decls"), [])
        name = normalize_name(c[1][1])
        end = normalize_name(c[-2][1])
        if end != name:
            self.ctx.error(self.ctx.tok_loc(c[-2]), f"'end {end};' does not match "
                                                    f"'record {name}'")
        self.ctx.record_names.add(name)
        return [T.RecordDef(name, c[1][2], tuple(decls))]

    def class_definition(self, c):
        # [kind, NAME, description?, contents..., NAME(end), SEMI]
        contents = []
        for x in c[2:-2]:
            if type(x) is list:              # sections
                contents.extend(x)
            elif type(x) is tuple:           # the declarations before the first section
                contents.append(x)
        return ("class", c[0], c[1], c[-2], contents)

    def package_definition(self, c):
        cls = next(x for x in c if type(x) is tuple and x[0] == "class")
        consts = [x for x in c if type(x) is tuple and x[0] == "decls"]
        return ("package", c[1], c[-2], consts, cls)

    def start(self, c):
        # [BASE_HEADER?, ("within",)?, ("decls", type definitions)?, class or package]
        result = c[-1]
        defs = next((x for x in c[:-1] if type(x) is tuple and x and x[0] == "decls"), None)
        if defs is not None:
            (result[3] if result[0] == "package" else result[4]).insert(0, defs)
        return result


__all__ = ["ClassCallbacks"]
