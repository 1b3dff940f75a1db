"""XML equation list importer: ``<model xmlns="urn:mdae-fmu:eqlist:1">`` -> `Model`.

The format (schema ``mdae_fmu/eqlist.xsd``, documented in its header and in docs/importers.md)
lists declarations and guarded equations whose expressions are Modelica expression text, parsed
with the flat Modelica grammar (`flat_modelica.parse_expression`). The elements are turned into
the same intermediate form as the Modelica importer and handed to the same
`flat_modelica.build_model`, so the XML and Modelica forms of a model give equal `Model`s.

Safety: the document is parsed by lxml with entity resolution, DTD loading and network access
off and ``huge_tree`` off; any DOCTYPE is refused (no entity tricks such as "billion laughs" or
external entities), then the document is validated against the XSD. Every problem is an
`InputError` at ``file:line`` (``:col`` within the attribute value for expression errors, whose
message names the attribute).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from lxml import etree

from .. import expr as E
from ..diagnostics import InputError, SourceLoc
from ..ir import EXPERIMENT_KEYS, Model
from . import flat_modelica as _fm
from . import types as T
from .annotations import check_experiment
from .call_callbacks import message_strings
from .flat_modelica import build_model, parse_expression
from .parse_context import ParseContext
from .syntax import Decl, Stmt

NAMESPACE = "urn:mdae-fmu:eqlist:1"
_NS = "{" + NAMESPACE + "}"
#: an id attribute: a name, as equation ids are (`e3`, `clutch.e1`, `s0`)
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_XSD = Path(__file__).resolve().parent.parent / "eqlist.xsd"
_schema: etree.XMLSchema | None = None

_VAR_EXPRS = ("start", "nominal", "min", "max")


def _get_schema() -> etree.XMLSchema:
    global _schema
    if _schema is None:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        _schema = etree.XMLSchema(etree.parse(str(_XSD), parser))
    return _schema


def _safe_parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, dtd_validation=False, remove_comments=True,
                           remove_pis=True)


def load_xml(path: str | Path) -> Model:
    """Read an XML equation list file (see module docstring). The size limit is half the flat
    Modelica one: the document is about twice as long as the same model in flat Modelica, and
    lxml's tree costs about as much memory again (docs/importers.md, "Limits")."""
    return parse_xml(_fm.read_file(path, _fm.MAX_FILE_BYTES // 2), str(path))


def _document_line(data: bytes, line: int) -> str | None:
    """Line ``line`` (from 1) of an XML document, as text (shown under a message)."""
    for bom, encoding in ((b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe\x00\x00", "utf-32"),
                          (b"\xfe\xff", "utf-16"), (b"\xff\xfe", "utf-16")):
        if data.startswith(bom):
            lines = data.decode(encoding, errors="replace").split("\n")
            return lines[line - 1] if line <= len(lines) else None
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
        if start == 0:
            return None
    end = data.find(b"\n", start)
    return data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace")


def _clean(message: str) -> str:
    return message.replace(_NS, "").strip()


def parse_xml(data: bytes, filename: str = "<string>") -> Model:
    """Parse an XML equation list given as bytes (see module docstring)."""
    if not data.strip():
        raise InputError("empty file: expected an XML equation list (<model ...>)",
                         SourceLoc(filename, 1, 1))
    head = data[:262144]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head[:4] in (b"\x00\x00\xfe\xff",
                                                           b"\xff\xfe\x00\x00"):
        encoding = "utf-32" if head[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00") \
            else "utf-16"
        head = head.decode(encoding, errors="ignore").encode("utf-8", errors="ignore")
    m = re.search(rb"<!DOCTYPE", head, re.IGNORECASE)
    if m is not None:
        line = head.count(b"\n", 0, m.start()) + 1
        raise InputError("DOCTYPE declarations are not allowed in an XML equation list (no "
                         "DTDs, no entities)", SourceLoc(filename, line, 1))
    try:
        tree = etree.fromstring(data, _safe_parser()).getroottree()
    except etree.XMLSyntaxError as err:
        line, col = err.position if err.position else (err.lineno or 1, 1)
        line = line or 1
        msg = re.sub(r", line \d+, column \d+$", "", _clean(err.msg))   # said in front already
        if "Excessive depth" in msg:
            msg = "elements nested too deeply (more than 256 levels)"
        raise InputError(f"invalid XML: {msg}", SourceLoc(filename, line, max(col, 1)),
                         _document_line(data, line)) from None
    except ValueError as err:          # e.g. unsupported encodings
        raise InputError(f"invalid XML: {err}", SourceLoc(filename, 1, 1)) from None
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise InputError("DOCTYPE declarations are not allowed in an XML equation list (no "
                         "DTDs, no entities)", SourceLoc(filename, 1, 1))
    root = tree.getroot()
    if root.tag != _NS + "model":
        raise InputError(f"the root element must be <model xmlns=\"{NAMESPACE}\"> (found "
                         f"<{_clean(str(root.tag))}>)", SourceLoc(filename, root.sourceline or 1,
                                                                  1))
    schema = _get_schema()
    if not schema.validate(tree):
        first = schema.error_log[0]
        raise InputError(f"schema violation: {_clean(first.message)}",
                         SourceLoc(filename, first.line or 1, max(first.column or 1, 1)))
    reader = _Reader(filename)
    reader.ctx.tokens_left -= sum(1 for _ in root.iter())     # elements count as tokens
    if reader.ctx.tokens_left < 0:
        raise _fm.too_large(SourceLoc(filename, 1, 1))
    return reader.read(root)


class _Reader:
    """Walk of a schema-valid document into the importers' intermediate form."""

    def __init__(self, filename: str):
        self.filename = filename
        self.ctx = ParseContext(filename=filename, whole_file=False)
        self.n_eq = 0
        self.n_init = 0
        self.n_when = 0
        self.renames: dict[str, tuple[str, SourceLoc]] = {}

    def loc(self, el) -> SourceLoc:
        return SourceLoc(self.filename, el.sourceline or 1, 1)

    def expr(self, el, attr: str):
        """The expression in attribute ``attr`` of ``el`` (errors are recorded in ctx)."""
        text = el.get(attr)
        tag = etree.QName(el).localname
        return parse_expression(text.replace("\n", " ").replace("\r", " "), self.filename,
                                el.sourceline or 1, 1, ctx=self.ctx,
                                note=f" (in attribute '{attr}' of <{tag}>)")

    def record_id(self, el, positional: str):
        """An ``id`` attribute names the element's equation or when-clause instead of its
        positional name (``e3``, ``i2``, ``w1``): ids are labels, kept so that a model read
        back from its XML form equals the model written (`xml_writer.model_to_xml`)."""
        given = el.get("id")
        if given is not None and given != positional:
            if not _ID.fullmatch(given):
                self.ctx.error(self.loc(el), f"<{etree.QName(el).localname}> id '{given}' is "
                                             "not a name (letters, digits, '_' and '.', "
                                             "starting with a letter or '_')")
                return
            self.renames[positional] = (given, self.loc(el))

    def read(self, root) -> Model:
        sections: list[tuple[str, object]] = []
        decls: list[Decl | T.EnumDef] = []
        body: list = []
        initial: list = []
        for el in root:
            tag = etree.QName(el).localname
            if tag == "enumeration":
                decls.append(self.enumeration(el))
            elif tag == "variable":
                decls.append(self.variable(el))
            elif tag == "initial":
                initial.extend(self.items(el, initial=True))
            elif tag == "experiment":
                sections.append(("experiment", self.experiment(el)))
            else:
                body.append(self.item(el, initial=False))
        sections.append(("decls", decls))
        sections.append(("equations", body))
        sections.append(("initial", initial))
        return self.named(build_model(root.get("name"), sections, self.ctx))

    def named(self, model: Model) -> Model:
        """``model`` with the ids the document gives (`record_id`); two equations, initial
        equations or when-clauses of one name are an error at the second one's element."""
        if not self.renames:
            return model

        def rename(items: tuple) -> tuple:
            seen: set[str] = set()
            out = []
            for x in items:
                new, loc = self.renames.get(x.id, (x.id, x.loc))
                if new in seen:
                    raise InputError(f"id '{new}' names two elements",
                                     loc or SourceLoc(self.filename, 1, 1))
                seen.add(new)
                out.append(replace(x, id=new))
            return tuple(out)
        return replace(model, equations=rename(model.equations),
                       initial_equations=rename(model.initial_equations),
                       whens=rename(model.whens))

    def enumeration(self, el) -> T.EnumDef:
        """``<enumeration name="E"><literal name="a" description="..."/>...``: the type
        `lowering` gives to the variables with ``declaredType="E"``."""
        self.ctx.extended = True
        lits = list(el)
        return T.EnumDef(el.get("name"), tuple(x.get("name") for x in lits), self.loc(el),
                         tuple(self.loc(x) for x in lits),
                         tuple(x.get("description") for x in lits))

    def experiment(self, el) -> tuple:
        """<experiment startTime=... stopTime=... tolerance=... interval=.../> (the schema
        checks the number syntax; `annotations.check_experiment` the values)."""
        found, where = {}, {}
        for key in EXPERIMENT_KEYS:
            text = el.get(key[0].lower() + key[1:])
            if text is not None:
                found[key] = float(text)
                where[key] = self.loc(el)
        pairs, problems = check_experiment(found, where, "<experiment>")
        for loc, message in problems:
            self.ctx.errors.append((loc.line, loc.col, 0, message, None))
        return pairs

    def variable(self, el) -> Decl:
        loc = self.loc(el)
        type_name = el.get("type", "Real")
        if el.get("declaredType") is not None:
            if type_name != "Integer":
                self.ctx.error(loc, f"variable '{el.get('name')}' has a declaredType: its "
                                    "type must be Integer")
            type_name = el.get("declaredType")
            self.ctx.extended = True
        explicit = {k: el.get(k) for k in ("variability", "causality") if el.get(k)}
        modifiers = []
        for attr in _VAR_EXPRS:
            if el.get(attr) is not None:
                modifiers.append((attr, self.expr(el, attr), loc, False))
        if el.get("fixed") is not None:
            modifiers.append(("fixed", E.Const(el.get("fixed") in ("true", "1")), loc, False))
        for attr in ("unit", "displayUnit"):
            if el.get(attr) is not None:
                modifiers.append((attr, E.Str(el.get(attr)), loc, False))
        if el.get("stateSelect") is not None:
            modifiers.append(("stateSelect", E.Ref("StateSelect." + el.get("stateSelect")),
                              loc, False))
        binding = self.expr(el, "binding") if el.get("binding") is not None else None
        variability = explicit.get("variability") or ("continuous" if type_name == "Real"
                                                      else "discrete")
        if binding is not None and variability not in ("parameter", "constant"):
            self.n_eq += 1            # becomes the equation name = binding, numbered here
        return Decl(name=el.get("name"), loc=loc, type_name=type_name, type_loc=loc, prefixes=(),
                    modifiers=modifiers, binding=binding, description=el.get("description"),
                    explicit=explicit)

    def items(self, parent, initial: bool) -> list:
        return [self.item(el, initial) for el in parent]

    def item(self, el, initial: bool):
        tag = etree.QName(el).localname
        loc = self.loc(el)
        if tag == "equation":
            if initial:
                self.n_init += 1
                self.record_id(el, f"i{self.n_init}")
            else:
                self.n_eq += 1
                self.record_id(el, f"e{self.n_eq}")
            return ("eq", self.expr(el, "lhs"), self.expr(el, "rhs"), loc)
        if tag == "if":
            branches = []
            orelse = None
            for child in el:
                ctag = etree.QName(child).localname
                if ctag == "branch":
                    branches.append((self.expr(child, "condition"), self.loc(child),
                                     self.items(child, initial)))
                else:
                    orelse = self.items(child, initial)
            return ("if", branches, orelse, loc)
        if tag == "when":
            self.n_when += 1
            self.record_id(el, f"w{self.n_when}")
            branches = []
            for child in el:
                actions = [self.action(a) for a in child]
                branches.append((self.expr(child, "condition"), self.loc(child), actions))
            return ("when", branches, loc)
        return ("stmt", self.assertion(el))

    def action(self, el):
        tag = etree.QName(el).localname
        loc = self.loc(el)
        if tag == "assign":
            return ("eq", E.Ref(el.get("var")), self.expr(el, "value"), loc)
        if tag == "reinit":
            return ("stmt", Stmt(func="reinit", named={}, loc=loc,
                                 args=[E.Ref(el.get("var")), self.expr(el, "value")]))
        if tag == "terminate":
            return ("stmt", Stmt(func="terminate", args=[E.Str(el.get("message"))], named={},
                                 loc=loc))
        return ("stmt", self.assertion(el))

    def assertion(self, el):
        loc = self.loc(el)
        if (el.get("message") is None) == (el.get("messageExpr") is None):
            self.ctx.error(loc, "<assert> needs exactly one of the attributes 'message' and "
                                "'messageExpr'")
            return None
        message = (E.Str(el.get("message")) if el.get("message") is not None
                   else self.expr(el, "messageExpr"))
        message_strings(self.ctx, [message])     # String(...) belongs in a message
        args = [self.expr(el, "condition"), message]
        level = el.get("level", "error")
        if level != "error":
            args.append(E.Ref("AssertionLevel." + level))
        return Stmt(func="assert", args=args, named={}, loc=loc)


__all__ = ["load_xml", "parse_xml", "NAMESPACE"]
