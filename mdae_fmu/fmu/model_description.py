"""modelDescription.xml (FMI 2.0) with lxml.

Rules followed (FMI 2.0.x, section 2.2; summary in /work/shared/ecosystem/fmi-export.md §1.1):
causality/variability/initial combinations of the standard's table, ``start`` exactly when
``initial`` is exact/approx or the variable is an input, ``derivative`` on every state
derivative (1-based ScalarVariable index of the state), ``reinit`` on states a when-clause
re-initializes, ModelStructure with Outputs (one per output), Derivatives (defines the state
vector), InitialUnknowns (outputs and derivatives and states with initial approx/calculated,
calculated parameters; sorted by index) and ``dependencies`` (indices of states and inputs)
for Outputs and Derivatives. No generation date: the same model gives the same bytes.
"""

from __future__ import annotations

from lxml import etree

from .. import __version__
from ..codegen.plan import CompiledModel, FmiVariable, fmi_name

LOG_CATEGORIES = (
    ("logEvents", "events, time events, projections"),
    ("logStatusWarning", "warnings"),
    ("logStatusDiscard", "discarded calls"),
    ("logStatusError", "errors"),
    ("logStatusFatal", "fatal errors"),
    ("logStatusPending", "pending (unused)"),
    ("logAll", "everything"),
)


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def build_model_description(cm: CompiledModel, number_of_event_indicators: int, guid: str,
                            source_files: list[str],
                            default_experiment: dict | None = None,
                            fmi_type: str = "me") -> bytes:
    """The XML bytes (UTF-8, declaration included) of the model description.
    ``fmi_type`` ("me", "cs", "both") selects the ModelExchange/CoSimulation elements."""
    root = etree.Element("fmiModelDescription")
    root.set("fmiVersion", "2.0")
    root.set("modelName", fmi_name(cm.name))
    root.set("guid", guid)
    if cm.description:
        root.set("description", cm.description)
    root.set("generationTool", f"mdae_fmu {__version__}")
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

    units = sorted({v.unit for v in cm.variables if v.unit})
    if units:
        ud = etree.SubElement(root, "UnitDefinitions")
        for u in units:
            etree.SubElement(ud, "Unit").set("name", u)

    lc = etree.SubElement(root, "LogCategories")
    for name, desc in LOG_CATEGORIES:
        c = etree.SubElement(lc, "Category")
        c.set("name", name)
        c.set("description", desc)

    if default_experiment:
        de = etree.SubElement(root, "DefaultExperiment")
        for key in ("startTime", "stopTime", "tolerance", "stepSize"):
            if default_experiment.get(key) is not None:
                de.set(key, _fmt(float(default_experiment[key])))

    index = {v.name: k + 1 for k, v in enumerate(cm.variables)}
    mv = etree.SubElement(root, "ModelVariables")
    for v in cm.variables:
        sv = etree.SubElement(mv, "ScalarVariable")
        sv.set("name", v.name)
        sv.set("valueReference", str(v.vr))
        if v.description:
            sv.set("description", v.description)
        sv.set("causality", v.causality)
        sv.set("variability", v.variability)
        if v.initial is not None and v.causality != "input":
            sv.set("initial", v.initial)
        t = etree.SubElement(sv, v.type)
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
                t.set("unit", v.unit)

    ms = etree.SubElement(root, "ModelStructure")
    state_names = {s.name for s in cm.states}
    knowns = {v.name for v in cm.variables
              if v.causality == "input" or v.name in state_names}
    outputs = [v for v in cm.variables if v.causality == "output"]
    if outputs:
        el = etree.SubElement(ms, "Outputs")
        for v in outputs:
            _unknown(el, v, index, cm, knowns)
    ders = [v for v in cm.variables if v.derivative_of is not None]
    state_order = {s.name: k for k, s in enumerate(cm.states)}
    ders.sort(key=lambda v: state_order[v.derivative_of])
    if ders:
        el = etree.SubElement(ms, "Derivatives")
        for v in ders:
            _unknown(el, v, index, cm, knowns)
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
            etree.SubElement(el, "Unknown").set("index", str(index[name]))
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


def _unknown(parent, v: FmiVariable, index: dict, cm: CompiledModel, knowns: set) -> None:
    u = etree.SubElement(parent, "Unknown")
    u.set("index", str(index[v.name]))
    if v.variability in ("constant", "fixed", "tunable", "discrete"):
        u.set("dependencies", "")
        return
    deps = cm.dependencies.get(v.name)
    if deps is None:
        return           # not computed by the schedule: depends on all knowns
    u.set("dependencies", " ".join(str(i) for i in sorted(index[n] for n in deps
                                                             if n in knowns)))
