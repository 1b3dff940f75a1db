"""Write a `Model` as an XML equation list (``mdae_fmu/eqlist.xsd``), deterministically.

Used to produce the XML forms of the reference models from their ``.mo`` files:
``python -m mdae_fmu.importers.xml_writer IN.mo OUT.xml``. Reading the output back with
`mdae_fmu.importers.xml_eqlist.parse_xml` gives a `Model` equal to the input: equations are
written in id order, each guard literal as one ``<if><branch condition="c">`` (``not c`` for a
negative literal), consecutive equations sharing guard literals grouped; variability and
causality are always explicit; expressions are printed by `mdae_fmu.modelica_printer`.
"""

from __future__ import annotations

import re
import sys

from lxml import etree

from .. import expr as E
from ..diagnostics import InputError
from ..ir import Assertion, Assign, Model, Reinit, Terminate
from ..modelica_printer import equation_sides, print_expr, print_simple
from .xml_eqlist import NAMESPACE

_NS = "{" + NAMESPACE + "}"


def _sub(parent, tag: str, **attrs):
    el = etree.SubElement(parent, _NS + tag)
    for k, v in attrs.items():
        if v is not None:
            bad = _XML_INVALID.search(v)
            if bad is not None:
                raise InputError(f"cannot write the XML equation list: attribute '{k}' of "
                                 f"<{tag}> contains the character U+{ord(bad.group()):04X}, "
                                 "which XML 1.0 cannot hold (not even escaped)")
            el.set(k, v)
    return el


#: Characters XML 1.0 documents cannot contain (§2.2): the control characters other than tab,
#: newline and carriage return, and U+FFFE, U+FFFF.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _equation(parent, eq):
    lhs, rhs = equation_sides(eq.residual)
    _sub(parent, "equation", id=eq.id, lhs=print_simple(lhs), rhs=print_expr(rhs))


def _assert(parent, a: Assertion):
    if type(a.message) is E.Str:
        msg, msg_expr = a.message.value, None
    else:
        msg, msg_expr = None, print_expr(a.message)
    _sub(parent, "assert", condition=print_expr(a.cond), message=msg, messageExpr=msg_expr,
         level=None if a.level == "error" else a.level)


def _guarded(parent, items, write):
    """Items in order; each guard literal opens ``<if><branch condition=...>``, shared by
    consecutive items with the same leading literals; ``(c, True)`` then ``(c, False)`` at the
    same depth use the ``<else>`` of the same ``<if>``."""
    open_lits: list = []
    containers = [parent]             # containers[k + 1] holds items under open_lits[:k + 1]
    for item in items:
        guard = item.guard
        k = 0
        while k < len(open_lits) and k < len(guard) and open_lits[k] == guard[k]:
            k += 1
        use_else = (k < len(open_lits) and k < len(guard) and open_lits[k].positive
                    and not guard[k].positive and open_lits[k].cond == guard[k].cond)
        if use_else:
            if_el = containers[k + 1].getparent()
            del open_lits[k:]
            del containers[k + 1:]
            open_lits.append(guard[k])
            containers.append(_sub(if_el, "else"))
            k += 1
        else:
            del open_lits[k:]
            del containers[k + 1:]
        for lit in guard[k:]:
            cond = lit.cond if lit.positive else E.UnOp("not", lit.cond)
            branch = _sub(_sub(containers[-1], "if"), "branch", condition=print_expr(cond))
            open_lits.append(lit)
            containers.append(branch)
        write(containers[-1], item)


def model_to_xml(model: Model) -> bytes:
    """The XML equation list of ``model`` (UTF-8 bytes, with XML declaration). A model with
    user functions or String parameters has no XML form (the schema has neither): ValueError."""
    if model.functions:
        raise ValueError(f"model '{model.name}' calls user functions "
                         f"({', '.join(f.name for f in model.functions)}), which the XML "
                         "equation list cannot hold")
    if model.strings:
        raise ValueError(f"model '{model.name}' has String parameters "
                         f"({', '.join(p.name for p in model.strings)}), which the XML "
                         "equation list cannot hold")
    root = etree.Element(_NS + "model", nsmap={None: NAMESPACE})
    root.set("name", model.name)
    for name, literals in model.enumerations:
        en = _sub(root, "enumeration", name=name)
        for lit, desc in literals:
            _sub(en, "literal", name=lit, description=desc)
    for v in model.variables:
        attrs: dict[str, str | None] = {"name": v.name, "type": v.type,
                                        "variability": v.variability, "causality": v.causality}
        for a in ("start", "nominal", "min", "max"):
            value = getattr(v, a)
            if value is not None:
                attrs[a] = print_expr(value)
        if v.fixed is not None:
            attrs["fixed"] = "true" if v.fixed else "false"
        attrs["unit"] = v.unit
        attrs["displayUnit"] = v.display_unit
        attrs["stateSelect"] = v.state_select
        attrs["description"] = v.description
        attrs["declaredType"] = v.declared_type
        if v.binding is not None:
            attrs["binding"] = print_expr(v.binding)
        _sub(root, "variable", **attrs)
    _guarded(root, model.equations, _equation)
    for w in model.whens:
        wel = _sub(root, "when", id=w.id)
        for b in w.branches:
            bel = _sub(wel, "branch", condition=print_expr(b.condition))
            for act in b.actions:
                if isinstance(act, Reinit):
                    _sub(bel, "reinit", var=act.var, value=print_expr(act.value))
                elif isinstance(act, Assign):
                    _sub(bel, "assign", var=act.var, value=print_expr(act.value))
                elif isinstance(act, Terminate):
                    _sub(bel, "terminate", message=act.message)
                else:
                    _assert(bel, act)
    _guarded(root, model.assertions, _assert)
    if model.initial_equations:
        init = _sub(root, "initial")
        _guarded(init, model.initial_equations, _equation)
    if model.experiment:
        _sub(root, "experiment", **{k[0].lower() + k[1:]: repr(v) for k, v in model.experiment})
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m mdae_fmu.importers.xml_writer IN.mo OUT.xml``."""
    from .reading import load
    from ..diagnostics import MdaeError
    from ..output import check_writable, write_bytes
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m mdae_fmu.importers.xml_writer IN.mo OUT.xml", file=sys.stderr)
        return 2
    try:
        check_writable(argv[1], [argv[0]])
        model = load(argv[0])
        write_bytes(argv[1], model_to_xml(model), [argv[0]])
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    except ValueError as err:           # a model the format cannot hold (user functions)
        print(f"{argv[0]}: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
