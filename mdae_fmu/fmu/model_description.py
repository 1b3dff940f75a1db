"""modelDescription.xml (FMI 2.0) with lxml.

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
"""

from __future__ import annotations

from lxml import etree

import math

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


def xml_text(text: str) -> str:
    """``text`` (a description or a unit from the model) with the characters XML 1.0 cannot
    hold (control characters other than tab, newline and carriage return; U+FFFE, U+FFFF)
    written as backslash escapes ``\\xHH``/``\\uHHHH``, like names (`fmi_name`)."""
    if all(" " <= c < "\ufffe" or c in "\t\n\r" for c in text):
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
    """The XML bytes (UTF-8, declaration included) of the model description.
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
    root = etree.Element("fmiModelDescription")
    root.set("fmiVersion", "2.0")
    root.set("modelName", fmi_name(cm.name))
    root.set("guid", guid)
    if cm.description:
        root.set("description", xml_text(cm.description))
    root.set("generationTool", f"mdae_fmu {VERSION}")
    root.set("variableNamingConvention", "flat")
    root.set("numberOfEventIndicators", str(number_of_event_indicators))

    if fmi_type in ("me", "both"):
        me = etree.SubElement(root, "ModelExchange")
        me.set("modelIdentifier", cm.identifier)
        me.set("canGetAndSetFMUstate", "true")
        me.set("canSerializeFMUstate", "true")
        sf = etree.SubElement(me, "SourceFiles")
        for name in source_files:
            etree.SubElement(sf, "File").set("name", name)
    if fmi_type in ("cs", "both"):
        _co_simulation(root, cm.identifier, source_files)

    units = sorted({xml_text(v.unit) for v in cm.variables if v.unit})
    if units:
        ud = etree.SubElement(root, "UnitDefinitions")
        for u in units:
            unit = etree.SubElement(ud, "Unit")
            unit.set("name", u)
            base = base_unit(u)            # known SI symbols: <BaseUnit> (FMI 2.0 §2.2.2)
            if base is not None:
                bu = etree.SubElement(unit, "BaseUnit")
                for name, exponent in zip(BASE, base.exponents):
                    if exponent:
                        bu.set(name, str(exponent))
                if base.factor != 1.0:
                    bu.set("factor", repr(float(base.factor)))
                if base.offset:
                    bu.set("offset", repr(float(base.offset)))
            for du in sorted({shown[v.name] for v in cm.variables
                              if v.name in shown and xml_text(v.unit or "") == u}):
                conv = display_unit(u, du)
                assert conv is not None     # a unit is shown only when it converts (above)
                factor, offset = conv
                d = etree.SubElement(unit, "DisplayUnit")
                d.set("name", xml_text(du))
                if factor != 1.0:
                    d.set("factor", repr(float(factor)))
                if offset:
                    d.set("offset", repr(float(offset)))

    if enumerations:
        td = etree.SubElement(root, "TypeDefinitions")
        for name, literals in enumerations:
            st = etree.SubElement(td, "SimpleType")
            st.set("name", xml_text(name))
            en = etree.SubElement(st, "Enumeration")
            for k, (lit, desc) in enumerate(literals, start=1):
                item = etree.SubElement(en, "Item")
                item.set("name", xml_text(lit))
                item.set("value", str(k))
                if desc:
                    item.set("description", xml_text(desc))

    lc = etree.SubElement(root, "LogCategories")
    for name, desc in LOG_CATEGORIES:
        c = etree.SubElement(lc, "Category")
        c.set("name", name)
        c.set("description", desc)

    de_values = resolve_default_experiment(default_experiment)
    de = etree.SubElement(root, "DefaultExperiment")
    for key in ("startTime", "stopTime", "tolerance", "stepSize"):
        de.set(key, _fmt(de_values[key]))

    index = {v.name: k + 1 for k, v in enumerate(cm.variables)}
    mv = etree.SubElement(root, "ModelVariables")
    for v in cm.variables:
        sv = etree.SubElement(mv, "ScalarVariable")
        sv.set("name", v.name)
        sv.set("valueReference", str(v.vr))
        if v.description:
            sv.set("description", xml_text(v.description))
        sv.set("causality", v.causality)
        sv.set("variability", v.variability)
        if v.initial is not None and v.causality != "input":
            sv.set("initial", v.initial)
        enum = declared_types.get(v.name) if v.type == "Integer" else None
        t = etree.SubElement(sv, v.type if enum is None else "Enumeration")
        if enum is not None:
            t.set("declaredType", xml_text(enum))
        needs_start = v.causality == "input" or v.initial in ("exact", "approx")
        if needs_start:
            t.set("start", _fmt(v.start if v.start is not None else
                                (False if v.type == "Boolean" else 0)))
        if v.type == "Real":
            if v.derivative_of is not None:
                t.set("derivative", str(index[v.derivative_of]))
            if v.reinit:
                t.set("reinit", "true")
            if v.unit:
                t.set("unit", xml_text(v.unit))
                if v.name in shown:
                    t.set("displayUnit", xml_text(shown[v.name]))

    if strings:
        from .strings import string_variables
        string_variables(mv, strings, xml_text)

    ms = etree.SubElement(root, "ModelStructure")
    outputs = [v for v in cm.variables if v.causality == "output"]
    if outputs:
        el = etree.SubElement(ms, "Outputs")
        for v in outputs:
            _unknown(el, v, index, structure)
    ders = [v for v in cm.variables if v.derivative_of is not None]
    state_order = {s.name: k for k, s in enumerate(cm.states)}
    ders.sort(key=lambda v: state_order[v.derivative_of or ""])
    if ders:
        el = etree.SubElement(ms, "Derivatives")
        for v in ders:
            _unknown(el, v, index, structure)
    state_names = {s.name for s in cm.states}
    init = set()
    for v in cm.variables:
        if v.causality == "output" and v.initial in ("approx", "calculated", None) \
                and v.variability not in ("constant",):
            init.add(v.name)
        if v.causality == "calculatedParameter":
            init.add(v.name)
        if (v.name in state_names or v.derivative_of is not None) and \
                v.initial in ("approx", "calculated", None):
            init.add(v.name)
    if init:
        el = etree.SubElement(ms, "InitialUnknowns")
        for name in sorted(init, key=lambda n: index[n]):
            u = etree.SubElement(el, "Unknown")
            u.set("index", str(index[name]))
            u.set("dependencies", _indices(structure.initial.get(name, ())))
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def _co_simulation(root, identifier: str, source_files: list[str]) -> None:
    """<CoSimulation>: embedded CVODE, variable communication steps, FMU state, inputs held
    constant over a step (docs/cosimulation.md). SUNDIALS allocates with malloc."""
    cs = etree.SubElement(root, "CoSimulation")
    cs.set("modelIdentifier", identifier)
    cs.set("canHandleVariableCommunicationStepSize", "true")
    cs.set("canInterpolateInputs", "false")
    cs.set("maxOutputDerivativeOrder", "0")
    cs.set("canRunAsynchronuously", "false")
    cs.set("canNotUseMemoryManagementFunctions", "true")
    cs.set("canGetAndSetFMUstate", "true")
    cs.set("canSerializeFMUstate", "true")
    sf = etree.SubElement(cs, "SourceFiles")
    for name in source_files:
        etree.SubElement(sf, "File").set("name", name)


def _indices(indices) -> str:
    return " ".join(map(str, indices))


def _unknown(parent, v: FmiVariable, index: dict, structure: Structure) -> None:
    """An Outputs/Derivatives entry: parameters and constants depend on no known; a
    discrete unknown (set at events from left limits) gets no ``dependencies`` attribute
    (all knowns); a continuous one lists the states and inputs it reads."""
    u = etree.SubElement(parent, "Unknown")
    u.set("index", str(index[v.name]))
    if v.variability in ("constant", "fixed", "tunable"):
        u.set("dependencies", "")
        return
    deps = structure.continuous.get(v.name)
    if v.variability == "discrete" or deps is None:
        return
    u.set("dependencies", _indices(deps))
