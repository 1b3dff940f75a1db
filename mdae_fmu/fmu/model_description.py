"""modelDescription.xml (FMI 2.0) with lxml.

Rules followed (FMI 2.0.x, section 2.2; summary in /work/shared/ecosystem/fmi-export.md §1.1):
causality/variability/initial combinations of the standard's table, ``start`` exactly when
``initial`` is exact/approx or the variable is an input, ``derivative`` on every state
derivative (1-based ScalarVariable index of the state), ``reinit`` on states a when-clause
re-initializes, ModelStructure with Outputs (one per output), Derivatives (defines the state
vector), InitialUnknowns (outputs and derivatives and states with initial approx/calculated,
calculated parameters; sorted by index), all with ``dependencies`` (`mdae_fmu.fmu.dependencies`:
states and inputs for Outputs and Derivatives, inputs and ``initial="exact"`` variables for
InitialUnknowns), and a DefaultExperiment (`resolve_default_experiment`). No generation date:
the same model gives the same bytes.
"""

from __future__ import annotations

from lxml import etree

import math

from ..version import __version__
from ..codegen.plan import CompiledModel, FmiVariable, fmi_name
from ..diagnostics import InputError
from .dependencies import Structure, model_structure

# A model without an experiment annotation (the importers do not keep annotations) gets the
# defaults OpenModelica uses for such a model: 0 .. 1 s, tolerance 1e-6, 500 intervals.
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


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


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
                            structure: Structure | None = None) -> bytes:
    """The XML bytes (UTF-8, declaration included) of the model description.
    ``fmi_type`` ("me", "cs", "both") selects the ModelExchange/CoSimulation elements;
    ``default_experiment`` is completed by `resolve_default_experiment`; ``structure``: the
    ModelStructure dependencies (computed from ``cm``'s single schedule when None)."""
    if structure is None:
        structure = model_structure(cm, [cm.blocks])
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
    outputs = [v for v in cm.variables if v.causality == "output"]
    if outputs:
        el = etree.SubElement(ms, "Outputs")
        for v in outputs:
            _unknown(el, v, index, structure)
    ders = [v for v in cm.variables if v.derivative_of is not None]
    state_order = {s.name: k for k, s in enumerate(cm.states)}
    ders.sort(key=lambda v: state_order[v.derivative_of])
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
            u.set("dependencies", _indices(structure.initial.get(name, ()), index))
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


def _indices(names, index: dict) -> str:
    return " ".join(str(i) for i in sorted(index[n] for n in names))


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
    u.set("dependencies", _indices(deps, index))
