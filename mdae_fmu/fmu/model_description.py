"""modelDescription.xml (FMI 2.0), written as text.

Rules followed (FMI 2.0.x, section 2.2; docs/fmi-mapping.md):
causality/variability/initial combinations of the standard's table, ``start`` exactly when
``initial`` is exact/approx or the variable is an input, ``derivative`` on every state
derivative (1-based ScalarVariable index of the state), ``reinit`` on states a when-clause
re-initializes, ModelStructure with Outputs (one per output), Derivatives (defines the state
vector), InitialUnknowns (outputs and derivatives and states with initial approx/calculated,
calculated parameters; sorted by index), all with ``dependencies`` (`mdae_fmu.fmu.dependencies`:
states and inputs for Outputs and Derivatives, inputs and ``initial="exact"`` variables for
InitialUnknowns), and a DefaultExperiment (the model's experiment annotation overridden by the
command line, `merge_default_experiment`, completed by `resolve_default_experiment`). No
generation date: the same model gives the same bytes.

The document is written as text, byte for byte what lxml's ``tostring(pretty_print=True)``
gave for the same elements (two spaces per level, attribute values escaped as libxml2 does,
`_attr`): building an lxml element per variable and attribute cost 1.3 s of the export of
10^5 equations (docs/performance.md, "stop 40, FMU description").
"""

from __future__ import annotations

import math
import re

from ..version import VERSION
from ..codegen.plan import CompiledModel, FmiVariable, fmi_name
from ..diagnostics import InputError
from .dependencies import Structure, model_structure
from ..units import BASE, base_unit, display_unit

# A model without an experiment annotation gets the defaults OpenModelica uses for such a
# model: 0 .. 1 s, tolerance 1e-6, 500 intervals.
DEFAULT_EXPERIMENT = {"startTime": 0.0, "stopTime": 1.0, "tolerance": 1e-6}
DEFAULT_INTERVALS = 500

LOG_CATEGORIES = (
    ("logEvents", "events, time events, projections"),
    ("logStatusWarning", "warnings"),
    ("logStatusDiscard", "discarded calls"),
    ("logStatusError", "errors"),
    ("logStatusFatal", "fatal errors"),
    ("logStatusPending", "pending (unused)"),
    ("logAll", "everything"),
)


#: the characters XML 1.0 cannot hold
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` (a description or a unit from the model) with the characters XML 1.0 cannot
    hold (control characters other than tab, newline and carriage return; U+FFFE, U+FFFF)
    written as backslash escapes ``\\xHH``/``\\uHHHH``, like names (`fmi_name`)."""
    if _INVALID.search(text) is None:
        return text
    return "".join(c if " " <= c < "\ufffe" or c in "\t\n\r" or c > "\uffff"
                   else (f"\\x{ord(c):02x}" if c < " " else f"\\u{ord(c):04x}")
                   for c in text)


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


#: experiment annotation argument -> DefaultExperiment attribute
ANNOTATION_KEYS = {"StartTime": "startTime", "StopTime": "stopTime", "Tolerance": "tolerance",
                   "Interval": "stepSize"}


def merge_default_experiment(annotation, given: dict | None = None) -> dict:
    """The DefaultExperiment values of a model: those of its ``experiment`` annotation
    (`mdae_fmu.ir.Model.experiment`), each overridden by a non-None value of ``given``
    (the command line's --start-time, --stop-time, --tolerance, --step-size). Without a stop
    time, a start time given alone ends one second later. `resolve_default_experiment`
    completes and checks the result."""
    de = {ANNOTATION_KEYS[k]: v for k, v in annotation}
    de.update({k: v for k, v in (given or {}).items() if v is not None})
    if "stopTime" not in de and "startTime" in de:
        try:
            de["stopTime"] = float(de["startTime"]) + 1.0
        except (TypeError, ValueError):
            pass
    return de


def resolve_default_experiment(given: dict | None = None) -> dict:
    """The DefaultExperiment of an FMU: ``given`` (keys ``startTime``, ``stopTime``,
    ``tolerance``, ``stepSize``; None values are ignored) completed with
    `DEFAULT_EXPERIMENT`; ``stepSize`` defaults to (stop - start)/500. Raises `InputError`
    for a non-finite value, stop <= start, a tolerance outside (0, 1) or a step <= 0."""
    de = dict(DEFAULT_EXPERIMENT)
    unknown = set(given or {}) - {"startTime", "stopTime", "tolerance", "stepSize"}
    if unknown:
        raise InputError(f"unknown default experiment key(s): {', '.join(sorted(unknown))}")
    for k, v in (given or {}).items():
        if v is not None:
            try:
                de[k] = float(v)
            except (TypeError, ValueError):
                raise InputError(f"default experiment {k} must be a number, got {v!r}") from None
    if not all(math.isfinite(v) for v in de.values()):
        raise InputError(f"default experiment values must be finite: {de}")
    if de["stopTime"] <= de["startTime"]:
        raise InputError(f"default experiment: stop time {de['stopTime']!r} must be after the "
                         f"start time {de['startTime']!r}")
    if not 0.0 < de["tolerance"] < 1.0:
        raise InputError(f"default experiment tolerance {de['tolerance']!r} must be in (0, 1)")
    if "stepSize" not in de:
        de["stepSize"] = (de["stopTime"] - de["startTime"]) / DEFAULT_INTERVALS
    if not de["stepSize"] > 0.0:
        raise InputError(f"default experiment step size {de['stepSize']!r} must be positive")
    return de


def build_model_description(cm: CompiledModel, number_of_event_indicators: int, guid: str,
                            source_files: list[str],
                            default_experiment: dict | None = None,
                            fmi_type: str = "me",
                            structure: Structure | None = None,
                            enumerations: tuple = (),
                            declared_types: dict | None = None,
                            display_units: dict | None = None,
                            strings: tuple = ()) -> bytes:
    """The XML bytes (UTF-8, declaration included) of the model description: the pieces of
    `model_description_pieces` (same parameters) joined."""
    return b"".join(model_description_pieces(
        cm, number_of_event_indicators, guid, source_files, default_experiment, fmi_type,
        structure, enumerations, declared_types, display_units, strings))


def model_description_pieces(cm: CompiledModel, number_of_event_indicators: int, guid: str,
                             source_files: list[str],
                             default_experiment: dict | None = None,
                             fmi_type: str = "me",
                             structure: Structure | None = None,
                             enumerations: tuple = (),
                             declared_types: dict | None = None,
                             display_units: dict | None = None,
                             strings: tuple = ()) -> list[bytes]:
    """The model description as the list of its UTF-8 encoded pieces, in order, each ending
    with an element, never joined (a 10^6 model's document, 278 MB, is then held once:
    `mdae_fmu.fmu.export` sets the GUID in the first piece, which holds the root element, and
    `mdae_fmu.fmu.package.write_zip` compresses the pieces one after the other).
    ``fmi_type`` ("me", "cs", "both") selects the ModelExchange/CoSimulation elements;
    ``default_experiment`` is completed by `resolve_default_experiment`; ``structure``: the
    ModelStructure dependencies (computed from ``cm``'s single schedule when None).
    ``enumerations`` (`ir.Model.enumerations`) become <Enumeration> TypeDefinitions and the
    Integer variables named in ``declared_types`` (FMI name -> type name) <Enumeration>
    variables of that type (FMI 2.0 §2.2.3, §2.2.7; accessed with fmi2Get/SetInteger).
    ``display_units`` (FMI name -> display unit) become <DisplayUnit>s of the variables'
    units where both units read in SI symbols with the same dimensions (`display_unit`).
    ``strings`` (`ir.Model.strings`) are String variables after the others (`fmu.strings`)."""
    declared_types = declared_types or {}
    display_units = display_units or {}
    shown: dict[str, str] = {}  # FMI name -> its display unit, when it can be converted
    for v in cm.variables:
        du = display_units.get(v.name)
        if v.unit and du and du != v.unit and display_unit(v.unit, du) is not None:
            shown[v.name] = du
    if structure is None:
        structure = model_structure(cm, [cm.blocks])
    out: list[str] = ["<?xml version='1.0' encoding='UTF-8'?>\n"]
    root = [("fmiVersion", "2.0"), ("modelName", fmi_name(cm.name)), ("guid", guid)]
    if cm.description:
        root.append(("description", xml_text(cm.description)))
    root += [("generationTool", f"mdae_fmu {VERSION}"), ("variableNamingConvention", "flat"),
             ("numberOfEventIndicators", str(number_of_event_indicators))]
    out.append(_start("fmiModelDescription", root) + ">\n")

    files = [_element(3, "File", [("name", name)]) for name in source_files]
    if fmi_type in ("me", "both"):
        out.append(_element(1, "ModelExchange", [
            ("modelIdentifier", cm.identifier), ("canGetAndSetFMUstate", "true"),
            ("canSerializeFMUstate", "true")], [_element(2, "SourceFiles", [], files)]))
    if fmi_type in ("cs", "both"):
        out.append(_co_simulation(cm.identifier, files))

    units = sorted({xml_text(v.unit) for v in cm.variables if v.unit})
    if units:
        defs = []
        for u in units:
            children = []
            base = base_unit(u)            # known SI symbols: <BaseUnit> (FMI 2.0 §2.2.2)
            if base is not None:
                attrs = [(name, str(exponent)) for name, exponent in zip(BASE, base.exponents)
                         if exponent]
                if base.factor != 1.0:
                    attrs.append(("factor", repr(float(base.factor))))
                if base.offset:
                    attrs.append(("offset", repr(float(base.offset))))
                children.append(_element(3, "BaseUnit", attrs))
            for du in sorted({shown[v.name] for v in cm.variables
                              if v.name in shown and xml_text(v.unit or "") == u}):
                conv = display_unit(u, du)
                assert conv is not None     # a unit is shown only when it converts (above)
                factor, offset = conv
                attrs = [("name", xml_text(du))]
                if factor != 1.0:
                    attrs.append(("factor", repr(float(factor))))
                if offset:
                    attrs.append(("offset", repr(float(offset))))
                children.append(_element(3, "DisplayUnit", attrs))
            defs.append(_element(2, "Unit", [("name", u)], children))
        out.append(_element(1, "UnitDefinitions", [], defs))

    if enumerations:
        types = []
        for name, literals in enumerations:
            items = []
            for k, (lit, desc) in enumerate(literals, start=1):
                attrs = [("name", xml_text(lit)), ("value", str(k))]
                if desc:
                    attrs.append(("description", xml_text(desc)))
                items.append(_element(4, "Item", attrs))
            types.append(_element(2, "SimpleType", [("name", xml_text(name))],
                                  [_element(3, "Enumeration", [], items)]))
        out.append(_element(1, "TypeDefinitions", [], types))

    out.append(_element(1, "LogCategories", [], [
        _element(2, "Category", [("name", name), ("description", desc)])
        for name, desc in LOG_CATEGORIES]))

    de_values = resolve_default_experiment(default_experiment)
    out.append(_element(1, "DefaultExperiment", [
        (key, _fmt(de_values[key])) for key in ("startTime", "stopTime", "tolerance",
                                                "stepSize")]))

    index = {v.name: k + 1 for k, v in enumerate(cm.variables)}
    out.append("  <ModelVariables>\n")
    # (the text so far and each chunk of variables encoded at once: the document is held
    # once, as the list of its encoded pieces, never as one string besides)
    done = ["".join(out).encode("utf-8")]
    out = []
    for chunk in _scalar_variables(cm.variables, index, declared_types, shown):
        done.append(chunk.encode("utf-8"))
    out += _string_variables(strings)
    out.append("  </ModelVariables>\n")

    # ModelStructure: each list of unknowns encoded once written
    out.append("  <ModelStructure>\n")
    any_unknown = False
    outputs = [v for v in cm.variables if v.causality == "output"]
    if outputs:
        any_unknown = True
        out.append(_element(2, "Outputs", [], [_unknown(v, index, structure)
                                               for v in outputs]))
    del outputs
    ders = [v for v in cm.variables if v.derivative_of is not None]
    state_order = {s.name: k for k, s in enumerate(cm.states)}
    ders.sort(key=lambda v: state_order[v.derivative_of or ""])
    if ders:
        any_unknown = True
        done.append("".join(out).encode("utf-8"))
        out = [_element(2, "Derivatives", [], [_unknown(v, index, structure) for v in ders])]
    del ders, index
    state_names = {s.name for s in cm.states}
    init = []       # (index, name) of the InitialUnknowns, in index order
    for k, v in enumerate(cm.variables, start=1):
        unset = v.initial is None or v.initial == "approx" or v.initial == "calculated"
        if (unset and (v.causality == "output" and v.variability != "constant"
                       or v.derivative_of is not None or v.name in state_names)) \
                or v.causality == "calculatedParameter":
            init.append((k, v.name))
    del state_names
    if init:
        any_unknown = True
        get = structure.initial.get
        done.append("".join(out).encode("utf-8"))
        out = [_element(2, "InitialUnknowns", [], [
            f'      <Unknown index="{k}" dependencies="{" ".join(map(str, get(name, ())))}"/>\n'
            for k, name in init])]
    del init
    if any_unknown:
        out.append("  </ModelStructure>\n")
    else:       # (an element without children closes itself, as `_element` writes it)
        out[-1] = "  <ModelStructure/>\n"
    out.append("</fmiModelDescription>\n")
    done.append("".join(out).encode("utf-8"))
    del out
    return done


def _as_is(value: str) -> str:
    return value


def _text_attribute(value: str) -> str:
    """A description or unit as an attribute value (`xml_text`, `xml_attribute`)."""
    return xml_attribute(xml_text(value))


#: variables written per piece of text (`_scalar_variables`)
CHUNK = 4096


def _scalar_variables(variables, index: dict, declared_types: dict, shown: dict):
    """The <ScalarVariable> elements of ``variables`` (`build_model_description`), written as
    text, ``CHUNK`` variables to a string: one f-string per variable, where building lxml
    elements cost a microsecond per attribute at 10^5 variables. The names, descriptions and
    units are escaped one by one only when one of them needs it (one search over all of
    them first: a model's names rarely hold ``& < > "``)."""
    def plain(texts) -> bool:
        return _SPECIAL.search(" ".join(texts)) is None

    attr_name = _as_is if plain([v.name for v in variables]) else xml_attribute
    attr_text = _as_is if plain([v.description for v in variables if v.description]
                                + [v.unit for v in variables if v.unit]) else _text_attribute
    for k in range(0, len(variables), CHUNK):
        out = []
        for v in variables[k:k + CHUNK]:
            vtype = v.type
            causality = v.causality
            initial = v.initial
            d = v.description
            head = f'    <ScalarVariable name="{attr_name(v.name)}" valueReference="{v.vr}"'
            if d:
                head += f' description="{attr_text(d)}"'
            head += f' causality="{causality}" variability="{v.variability}"'
            if initial is not None and causality != "input":
                head += f' initial="{initial}"'
            enum = declared_types.get(v.name) if vtype == "Integer" else None
            if enum is None:
                t = f"      <{vtype}"
            else:
                t = f'      <Enumeration declaredType="{xml_attribute(xml_text(enum))}"'
            if causality == "input" or initial == "exact" or initial == "approx":
                start = v.start
                if start is None:
                    start = False if vtype == "Boolean" else 0
                t += f' start="{_fmt(start)}"'
            if vtype == "Real":
                if v.derivative_of is not None:
                    t += f' derivative="{index[v.derivative_of]}"'
                if v.reinit:
                    t += ' reinit="true"'
                if v.unit:
                    t += f' unit="{attr_text(v.unit)}"'
                    if v.name in shown:
                        t += f' displayUnit="{xml_attribute(xml_text(shown[v.name]))}"'
            out.append(f"{head}>\n{t}/>\n    </ScalarVariable>\n")
        yield "".join(out)


def _string_variables(strings) -> list[str]:
    """The String <ScalarVariable> elements, after the others (`mdae_fmu.fmu.strings`: value
    references 0, 1, ... in their own space; a parameter is fixed and exact, a constant
    local)."""
    out = []
    for vr, p in enumerate(strings):
        attrs = [("name", p.name), ("valueReference", str(vr))]
        if p.description:
            attrs.append(("description", xml_text(p.description)))
        if p.constant:
            attrs += [("causality", "local"), ("variability", "constant")]
        else:
            attrs += [("causality", "parameter"), ("variability", "fixed")]
        attrs.append(("initial", "exact"))
        out.append(_element(2, "ScalarVariable", attrs,
                            [_element(3, "String", [("start", p.value)])]))
    return out


#: what XML attribute values escape (as lxml writes them), and the characters XML 1.0 cannot
#: hold (`_INVALID`)
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\t": "&#9;", "\n": "&#10;",
            "\r": "&#13;"}
_SPECIAL = re.compile("[&<>\"\t\n\r\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_attribute(value: str) -> str:
    """``value`` escaped for a double-quoted XML attribute, byte for byte as lxml (libxml2)
    writes it: ``& < > "`` as entities, tab and line breaks as character references (kept
    by attribute-value normalization). A character XML 1.0 cannot hold raises ValueError,
    as lxml does; `xml_text` and `mdae_fmu.codegen.plan.fmi_name` have escaped them."""
    if _SPECIAL.search(value) is None:
        return value
    if _INVALID.search(value) is not None:
        raise ValueError("All strings must be XML compatible: Unicode or ASCII, no NULL bytes "
                         "or control characters")
    return _SPECIAL.sub(lambda m: _ESCAPES[m.group()], value)


def _start(tag: str, attrs) -> str:
    """``<tag name="value" ...`` (not closed), the values escaped."""
    return f"<{tag}" + "".join(f' {k}="{xml_attribute(v)}"' for k, v in attrs)


def _element(depth: int, tag: str, attrs, children: list[str] | None = None) -> str:
    """An element at nesting ``depth`` with its ``children`` (elements written one
    ``depth`` deeper), indented as lxml's ``pretty_print`` (two spaces per level, an element
    without children closed by ``/>``)."""
    pad = "  " * depth
    if not children:
        return f"{pad}{_start(tag, attrs)}/>\n"
    return f"{pad}{_start(tag, attrs)}>\n{''.join(children)}{pad}</{tag}>\n"


def _co_simulation(identifier: str, files: list[str]) -> str:
    """<CoSimulation>: embedded CVODE, variable communication steps, FMU state, inputs held
    constant over a step (docs/cosimulation.md). SUNDIALS allocates with malloc."""
    return _element(1, "CoSimulation", [
        ("modelIdentifier", identifier), ("canHandleVariableCommunicationStepSize", "true"),
        ("canInterpolateInputs", "false"), ("maxOutputDerivativeOrder", "0"),
        ("canRunAsynchronuously", "false"), ("canNotUseMemoryManagementFunctions", "true"),
        ("canGetAndSetFMUstate", "true"), ("canSerializeFMUstate", "true")],
        [_element(2, "SourceFiles", [], files)])


def _indices(indices) -> str:
    return " ".join(map(str, indices))


def _unknown(v: FmiVariable, index: dict, structure: Structure) -> str:
    """An Outputs/Derivatives entry: parameters and constants depend on no known; a
    discrete unknown (set at events from left limits) gets no ``dependencies`` attribute
    (all knowns); a continuous one lists the states and inputs it reads."""
    head = f'      <Unknown index="{index[v.name]}"'
    if v.variability in ("constant", "fixed", "tunable"):
        return f'{head} dependencies=""/>\n'
    deps = structure.continuous.get(v.name)
    if v.variability == "discrete" or deps is None:
        return f"{head}/>\n"
    return f'{head} dependencies="{_indices(deps)}"/>\n'
