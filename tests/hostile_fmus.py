"""Tiny FMI 2.0 Model Exchange FMUs built in the test from one C file with gcc: der(x) = -x,
x(0) = 1, plus one behaviour once the host sets a time at or after ``t = 0.3``:

* ``decay``: none (a well-behaved FMU: x(t) = exp(-t));
* ``segfault``: writes through a null pointer (SIGSEGV);
* ``exit0``: calls ``exit(0)``;
* ``loop``: spins for ever in native code;
* ``abort``: calls ``abort()`` (SIGABRT).

And hostile archives (zip files) for the extraction limits: a zip bomb generated here (small on
disk), path traversal, a symbolic link, too many entries, a truncated archive."""

from __future__ import annotations

import stat
import subprocess
import zipfile
from pathlib import Path

BEHAVIOURS = {
    "decay": ";",
    "segfault": "{ volatile int *volatile p = 0; *p = 1; }",
    "exit0": "exit(0);",
    "loop": "{ volatile int spin = 1; while (spin) { } }",
    "abort": "abort();",
}

GUID = "{8c4e810f-3df3-4a00-8276-176fa3c9f000}"

C_SOURCE = r"""
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"

typedef struct { double t, x; fmi2CallbackFunctions cb; } M;

static void hostile(double t) { if (t >= 0.3) { BEHAVIOUR } }

fmi2Component fmi2Instantiate(fmi2String n, fmi2Type k, fmi2String g, fmi2String r,
                              const fmi2CallbackFunctions *cb, fmi2Boolean v, fmi2Boolean l) {
    M *m; (void)n; (void)k; (void)r; (void)v; (void)l;
    if (strcmp(g, GUID) != 0) return NULL;
    m = calloc(1, sizeof *m); m->x = 1.0; m->cb = *cb; return m;
}
void fmi2FreeInstance(fmi2Component c) { free(c); }
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }
fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean o, size_t n, const fmi2String x[])
{ (void)c; (void)o; (void)n; (void)x; return fmi2OK; }
fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0,
                               fmi2Boolean d, fmi2Real e)
{ (void)a; (void)b; (void)d; (void)e; ((M *)c)->t = t0; return fmi2OK; }
#define OK0(name) fmi2Status name(fmi2Component c) { (void)c; return fmi2OK; }
OK0(fmi2EnterInitializationMode) OK0(fmi2ExitInitializationMode) OK0(fmi2Terminate)
OK0(fmi2Reset) OK0(fmi2EnterEventMode) OK0(fmi2EnterContinuousTimeMode)
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
    M *m = c; size_t i;
    for (i = 0; i < n; i++) v[i] = vr[i] == 0 ? m->x : -m->x;
    return fmi2OK;
}
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                       const fmi2Real v[]) {
    M *m = c; size_t i;
    for (i = 0; i < n; i++) if (vr[i] == 0) m->x = v[i];
    return fmi2OK;
}
#define NONE_GET(name, T) fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], \
    size_t n, T v[]) { (void)c; (void)vr; (void)v; return n ? fmi2Error : fmi2OK; }
#define NONE_SET(name, T) fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], \
    size_t n, const T v[]) { (void)c; (void)vr; (void)v; return n ? fmi2Error : fmi2OK; }
NONE_GET(fmi2GetInteger, fmi2Integer) NONE_GET(fmi2GetBoolean, fmi2Boolean)
NONE_GET(fmi2GetString, fmi2String)
NONE_SET(fmi2SetInteger, fmi2Integer) NONE_SET(fmi2SetBoolean, fmi2Boolean)
NONE_SET(fmi2SetString, fmi2String)
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
fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *e) {
    (void)c; memset(e, 0, sizeof *e); return fmi2OK;
}
fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean a, fmi2Boolean *e,
                                       fmi2Boolean *t)
{ (void)c; (void)a; *e = fmi2False; *t = fmi2False; return fmi2OK; }
fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { ((M *)c)->t = t; hostile(t); return fmi2OK; }
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
#define STATUS(name, T) fmi2Status name(fmi2Component c, const fmi2StatusKind s, T *v) \
    { (void)c; (void)s; (void)v; return fmi2Discard; }
STATUS(fmi2GetStatus, fmi2Status) STATUS(fmi2GetRealStatus, fmi2Real)
STATUS(fmi2GetIntegerStatus, fmi2Integer) STATUS(fmi2GetBooleanStatus, fmi2Boolean)
STATUS(fmi2GetStringStatus, fmi2String)
"""

MODEL_DESCRIPTION = """<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="{name}" guid="{guid}"
    generationTool="tests/hostile_fmus.py" numberOfEventIndicators="0">
  <ModelExchange modelIdentifier="{name}"/>
  <DefaultExperiment startTime="0" stopTime="1" tolerance="1e-6"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="0" causality="local" variability="continuous"
        initial="exact"><Real start="1"/></ScalarVariable>
    <ScalarVariable name="der(x)" valueReference="1" causality="local"
        variability="continuous"><Real derivative="1"/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Derivatives><Unknown index="2"/></Derivatives>
  </ModelStructure>
</fmiModelDescription>
"""


def build_fmu(out_dir: Path, behaviour: str) -> Path:
    """``out_dir/<Behaviour>.fmu``: the FMU of the module docstring with ``behaviour``."""
    import fmpy
    headers = Path(fmpy.__file__).resolve().parent / "c-code"
    name = f"Hostile_{behaviour}"
    src = out_dir / f"{name}.c"
    src.write_text(C_SOURCE.replace("BEHAVIOUR", BEHAVIOURS[behaviour])
                   .replace("GUID", '"' + GUID + '"'))
    so = out_dir / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-w", f"-I{headers}", str(src),
                    "-o", str(so)], check=True, capture_output=True)
    fmu = out_dir / f"{name}.fmu"
    with zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("modelDescription.xml", MODEL_DESCRIPTION.format(name=name, guid=GUID))
        z.write(so, f"binaries/linux64/{name}.so")
    return fmu


# ---------------------------------------------------------------------------------------------
# Hostile archives
# ---------------------------------------------------------------------------------------------

def copy_with(good: Path, out: Path, extra) -> Path:
    """``good``'s entries, then ``extra(zip)`` adds the hostile ones."""
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        extra(dst)
    return out


def zip_bomb(good: Path, out: Path, size: int) -> Path:
    """``good`` plus ``resources/zeros.bin``: ``size`` zero bytes, deflated (about size/1000
    on disk), streamed so that the test never holds them in memory."""
    def add(z: zipfile.ZipFile) -> None:
        block = bytes(1 << 20)
        info = zipfile.ZipInfo("resources/zeros.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as fh:
            for _ in range(size // len(block)):
                fh.write(block)
    return copy_with(good, out, add)


def path_traversal(good: Path, out: Path) -> Path:
    return copy_with(good, out, lambda z: z.writestr("resources/../../escaped.txt", "outside"))


def absolute_path(good: Path, out: Path) -> Path:
    return copy_with(good, out, lambda z: z.writestr(zipfile.ZipInfo("/tmp/absolute.txt"), "x"))


def symlink(good: Path, out: Path) -> Path:
    def add(z: zipfile.ZipFile) -> None:
        info = zipfile.ZipInfo("resources/link")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    return copy_with(good, out, add)


def many_files(good: Path, out: Path, count: int) -> Path:
    def add(z: zipfile.ZipFile) -> None:
        for k in range(count):
            z.writestr(f"resources/f{k}", "")
    return copy_with(good, out, add)


def truncated(good: Path, out: Path) -> Path:
    data = good.read_bytes()
    out.write_bytes(data[: len(data) * 2 // 3])
    return out
