"""A tiny FMI 2.0 FMU with both interfaces, built in the test from one C file with gcc: a
decaying state ``x`` (der(x) = -x, x(0) = 1, unit m) and a counter ``n`` (Integer output,
discrete) that counts periods (parameter ``period``, default 1 s), n(t) = floor(t/period),
by time events in Model Exchange and at communication points in Co-Simulation
(``fmi2DoStep`` integrates x exactly, x *= exp(-h)). A tiny ``period`` (1e-9 s) makes a Model
Exchange run that never ends in practice (an event every nanosecond).

Variants (``build_counter(..., variant)``):

* ``good``: both interfaces right;
* ``frozen``: the Co-Simulation side is wrong: ``fmi2DoStep`` advances time and nothing else
  (x stays 1, n stays 0), while Model Exchange is right;
* ``badunit``: the model description uses a unit it does not define (FMPy's validation
  refuses it, as it refuses some FMUs exported by OpenModelica); the binary is ``good``'s.

`reference_csv` writes the closed form sampled without event rows (the way the Reference-FMUs'
CSVs are written)."""

from __future__ import annotations

import math
import subprocess
import zipfile
from pathlib import Path

GUID = "{5a0c63a8-2b53-4f4e-9b1e-6d1c0e2f7a11}"

C_SOURCE = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"

/* value references: 0 x, 1 der(x), 3 period (Real); 2 n (Integer) */
typedef struct { double t, x, next, period; int n; } M;

static void count(M *m) {
    while (m->t >= m->next - 1e-9 * m->period) { m->n++; m->next += m->period; }
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type kind, fmi2String guid, fmi2String res,
                              const fmi2CallbackFunctions *cb, fmi2Boolean vis,
                              fmi2Boolean log) {
    M *m; (void)name; (void)kind; (void)res; (void)cb; (void)vis; (void)log;
    if (strcmp(guid, GUID) != 0) return NULL;
    m = calloc(1, sizeof *m); m->x = 1.0; m->period = 1.0; m->next = 1.0; return m;
}
void fmi2FreeInstance(fmi2Component c) { free(c); }
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }
fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean o, size_t n, const fmi2String x[])
{ (void)c; (void)o; (void)n; (void)x; return fmi2OK; }
fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0,
                               fmi2Boolean d, fmi2Real e)
{ (void)a; (void)b; (void)d; (void)e; ((M *)c)->t = t0; return fmi2OK; }
#define OK0(f) fmi2Status f(fmi2Component c) { (void)c; return fmi2OK; }
OK0(fmi2EnterInitializationMode) OK0(fmi2Terminate)
fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{ M *m = c; m->next = m->t + m->period; return fmi2OK; }
OK0(fmi2EnterEventMode) OK0(fmi2EnterContinuousTimeMode)
fmi2Status fmi2Reset(fmi2Component c)
{ M *m = c; m->t = 0; m->x = 1.0; m->period = 1.0; m->next = 1.0; m->n = 0; return fmi2OK; }
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
    M *m = c; size_t i;
    for (i = 0; i < n; i++) {
        if (vr[i] == 3) v[i] = m->period;
        else if (vr[i] > 1) return fmi2Error;
        else v[i] = vr[i] == 0 ? m->x : -m->x;
    }
    return fmi2OK;
}
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                       const fmi2Real v[]) {
    M *m = c; size_t i;
    for (i = 0; i < n; i++) {
        if (vr[i] == 0) m->x = v[i];
        else if (vr[i] == 3 && v[i] > 0) m->period = v[i];
        else return fmi2Error;
    }
    return fmi2OK;
}
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                          fmi2Integer v[]) {
    M *m = c; size_t i;
    for (i = 0; i < n; i++) { if (vr[i] != 2) return fmi2Error; v[i] = m->n; }
    return fmi2OK;
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                          const fmi2Integer v[]) {
    M *m = c; size_t i;
    for (i = 0; i < n; i++) { if (vr[i] != 2) return fmi2Error; m->n = v[i]; }
    return fmi2OK;
}
#define NONE_GET(f, T) fmi2Status f(fmi2Component c, const fmi2ValueReference vr[], \
    size_t n, T v[]) { (void)c; (void)vr; (void)v; return n ? fmi2Error : fmi2OK; }
#define NONE_SET(f, T) fmi2Status f(fmi2Component c, const fmi2ValueReference vr[], \
    size_t n, const T v[]) { (void)c; (void)vr; (void)v; return n ? fmi2Error : fmi2OK; }
NONE_GET(fmi2GetBoolean, fmi2Boolean) NONE_GET(fmi2GetString, fmi2String)
NONE_SET(fmi2SetBoolean, fmi2Boolean) NONE_SET(fmi2SetString, fmi2String)
fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)c; (void)s; return fmi2Error; }
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) { (void)c; (void)s; return fmi2Error; }
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s)
{ (void)c; (void)s; return fmi2Error; }
fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n)
{ (void)c; (void)s; (void)n; return fmi2Error; }
fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t n)
{ (void)c; (void)s; (void)b; (void)n; return fmi2Error; }
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t n, fmi2FMUstate *s)
{ (void)c; (void)s; (void)b; (void)n; return fmi2Error; }
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference a[], size_t na,
    const fmi2ValueReference b[], size_t nb, const fmi2Real dv[], fmi2Real r[])
{ (void)c; (void)a; (void)na; (void)b; (void)nb; (void)dv; (void)r; return fmi2Error; }

/* Model Exchange */
fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *e) {
    M *m = c; count(m); memset(e, 0, sizeof *e);
    e->nextEventTimeDefined = fmi2True; e->nextEventTime = m->next; return fmi2OK;
}
fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean a, fmi2Boolean *e,
                                       fmi2Boolean *t)
{ (void)c; (void)a; *e = fmi2False; *t = fmi2False; return fmi2OK; }
fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { ((M *)c)->t = t; return fmi2OK; }
fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n)
{ if (n) ((M *)c)->x = x[0]; return fmi2OK; }
fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real d[], size_t n)
{ if (n) d[0] = -((M *)c)->x; return fmi2OK; }
fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t n)
{ (void)c; (void)z; (void)n; return fmi2OK; }
fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n)
{ if (n) x[0] = ((M *)c)->x; return fmi2OK; }
fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t n)
{ (void)c; if (n) x[0] = 1.0; return fmi2OK; }

/* Co-Simulation */
fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noPrior) {
    M *m = c; (void)noPrior;
    m->t = t + h;
#ifndef FROZEN
    m->x *= exp(-h); count(m);
#endif
    return fmi2OK;
}
fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
    size_t n, const fmi2Integer o[], const fmi2Real v[])
{ (void)c; (void)vr; (void)o; (void)v; return n ? fmi2Error : fmi2OK; }
fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
    size_t n, const fmi2Integer o[], fmi2Real v[])
{ (void)c; (void)vr; (void)o; (void)v; return n ? fmi2Error : fmi2OK; }
#define STATUS(f, T) fmi2Status f(fmi2Component c, const fmi2StatusKind s, T *v) \
    { (void)c; (void)s; (void)v; return fmi2Discard; }
STATUS(fmi2GetStatus, fmi2Status) STATUS(fmi2GetRealStatus, fmi2Real)
STATUS(fmi2GetIntegerStatus, fmi2Integer) STATUS(fmi2GetBooleanStatus, fmi2Boolean)
STATUS(fmi2GetStringStatus, fmi2String)
"""

MODEL_DESCRIPTION = """<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="{name}" guid="{guid}"
    generationTool="tests/step_fmus.py" numberOfEventIndicators="0">
  <ModelExchange modelIdentifier="{name}"/>
  <CoSimulation modelIdentifier="{name}" canHandleVariableCommunicationStepSize="true"/>
  {units}
  <DefaultExperiment startTime="0" stopTime="3" tolerance="1e-8" stepSize="0.01"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="0" causality="local" variability="continuous"
        initial="exact"><Real start="1" unit="m"/></ScalarVariable>
    <ScalarVariable name="der(x)" valueReference="1" causality="local"
        variability="continuous"><Real derivative="1" unit="{speed}"/></ScalarVariable>
    <ScalarVariable name="n" valueReference="2" causality="output" variability="discrete"
        initial="exact"><Integer start="0"/></ScalarVariable>
    <ScalarVariable name="period" valueReference="3" causality="parameter" variability="fixed"
        initial="exact"><Real start="1" unit="s"/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs><Unknown index="3"/></Outputs>
    <Derivatives><Unknown index="2"/></Derivatives>
  </ModelStructure>
</fmiModelDescription>
"""

UNITS = """<UnitDefinitions>
    <Unit name="m"><BaseUnit m="1"/></Unit>
    <Unit name="m/s"><BaseUnit m="1" s="-1"/></Unit>
    <Unit name="s"><BaseUnit s="1"/></Unit>
  </UnitDefinitions>"""

VARIANTS = ("good", "frozen", "badunit")


def build_counter(out_dir: Path, variant: str = "good") -> Path:
    """``out_dir/Counter_<variant>.fmu`` (module docstring)."""
    import fmpy
    headers = Path(fmpy.__file__).resolve().parent / "c-code"
    name = f"Counter_{variant}"
    src = out_dir / f"{name}.c"
    src.write_text(C_SOURCE.replace("GUID", '"' + GUID + '"'))
    so = out_dir / f"{name}.so"
    defines = ["-DFROZEN"] if variant == "frozen" else []
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-w", *defines, f"-I{headers}", str(src),
                    "-o", str(so), "-lm"], check=True, capture_output=True)
    # badunit: der(x) in "m/s" and no UnitDefinitions (FMPy: the unit is not defined)
    units = "" if variant == "badunit" else UNITS
    fmu = out_dir / f"{name}.fmu"
    with zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("modelDescription.xml", MODEL_DESCRIPTION.format(
            name=name, guid=GUID, units=units, speed="m/s"))
        z.write(so, f"binaries/linux64/{name}.so")
    return fmu


def reference_csv(path: Path, stop: float = 3.0, step: float = 0.01, shift: float = 0.0) -> Path:
    """The closed form x = exp(-t), n = floor(t - shift) on a grid of ``step`` from 0 to
    ``stop``, without event rows (one row per time)."""
    rows = ["time,x,n"]
    k = 0
    while k * step <= stop + 1e-12:
        t = round(k * step, 12)
        rows.append(f"{t!r},{math.exp(-t)!r},{max(0, math.floor(t - shift + 1e-9))}")
        k += 1
    path.write_text("\n".join(rows) + "\n")
    return path
