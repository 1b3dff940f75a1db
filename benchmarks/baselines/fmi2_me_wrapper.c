/* Generic FMI 2.0 Model Exchange wrapper for the hand-written baselines.
 *
 * Implements the common and ME C API of FMI 2.0.5 (docs/2_1_common_api.adoc,
 * docs/3_2_model_exchange_api.adoc) on top of the model hooks of model.h: calling-sequence
 * state machine with a mask per function, argument checks (value references, NaN inputs),
 * lazy recomputation of derived values, FMU state get/set/serialize. Any misuse returns
 * fmi2Error and puts the instance into the Error state, from which only fmi2Reset,
 * fmi2FreeInstance and getters are allowed.
 *
 * Compile-time fault injection for the strict-driver tests (never defined in normal builds):
 *   BUG_STALE_CACHE   fmi2NewDiscreteStates does not invalidate derived values
 *   BUG_NEEDED_FOREVER newDiscreteStatesNeeded is never cleared
 *   BUG_NOMINALS_FLAG nominalsOfContinuousStatesChanged reported although nominals are fixed
 *   BUG_LEAK          fmi2FreeInstance forgets one allocation
 *   BUG_ACCEPT_NAN    fmi2SetReal accepts NaN
 *   BUG_FMUSTATE_PARTIAL fmi2SetFMUstate restores the time only
 *   BUG_OVERRUN       fmi2GetEventIndicators writes one element past the caller's array
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"

#define SERIAL_MAGIC 0x4d444145u /* "MDAE" */

typedef struct {
    SimState s;
    char instanceName[128];
    fmi2CallbackFunctions cb;
    int loggingOn;
#ifdef BUG_LEAK
    void *leaked;
#endif
} Instance;

typedef struct {
    unsigned magic;
    unsigned size;
    SimState s;
} Serialized;

/* ---------------------------------------------------------------- helpers */

static void logf_(Instance *m, fmi2Status status, const char *category, const char *fmt, ...) {
    char buf[512], msg[1024];
    size_t i, j = 0;
    va_list ap;
    if (!m || !m->cb.logger) return;
    if (status == fmi2OK && !m->loggingOn) return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* the logger takes a format: escape '%' so the text is never interpreted as one, and
     * pass no variadic argument (importers that ignore varargs still see the full text) */
    for (i = 0; buf[i] && j + 2 < sizeof msg; i++) {
        if (buf[i] == '%') msg[j++] = '%';
        msg[j++] = buf[i];
    }
    msg[j] = 0;
    m->cb.logger(m->cb.componentEnvironment, m->instanceName, status, category, msg);
}

static fmi2Status fail(Instance *m, const char *fn, const char *why) {
    logf_(m, fmi2Error, "logStatusError", "%s: %s", fn, why);
    m->s.mode = ST_Error;
    return fmi2Error;
}

#define MASK_ANY_GET (ST_InitializationMode | ST_EventMode | ST_ContinuousTimeMode | \
                      ST_Terminated | ST_Error)

/* Checks that `fn` is legal in the current state (FMI 2.0.5 §3.2.3 table). */
#define ENTER(fn, mask)                                                    \
    Instance *m = (Instance *)c;                                           \
    if (!m) return fmi2Error;                                              \
    if (!(m->s.mode & (mask))) return fail(m, fn, "illegal call sequence")

static void refresh(Instance *m) {
    if (m->s.dirty) {
        model_calculate(&m->s);
        m->s.dirty = 0;
    }
}

/* Whether vr is a Boolean value reference of this model. */
static int bool_vr_ok(unsigned vr) {
#if NBOOL > 0
    return vr < (unsigned)NBOOL;
#else
    (void)vr;
    return 0;
#endif
}

/* ---------------------------------------------------------------- common API */

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn) {
    Instance *m;
    (void)fmuResourceLocation;
    (void)visible;
    if (!functions || !functions->allocateMemory || !functions->freeMemory) return NULL;
    if (!instanceName || !instanceName[0]) return NULL;
    m = (Instance *)functions->allocateMemory(1, sizeof(Instance));
    if (!m) return NULL;
    m->cb = *functions;
    strncpy(m->instanceName, instanceName, sizeof m->instanceName - 1);
    m->loggingOn = loggingOn ? 1 : 0;
    if (fmuType != fmi2ModelExchange) {
        logf_(m, fmi2Error, "logStatusError", "only Model Exchange is supported");
        functions->freeMemory(m);
        return NULL;
    }
    if (!fmuGUID || strcmp(fmuGUID, MODEL_GUID) != 0) {
        logf_(m, fmi2Error, "logStatusError", "wrong GUID, expected %s", MODEL_GUID);
        functions->freeMemory(m);
        return NULL;
    }
    model_set_start_values(&m->s);
    m->s.mode = ST_Instantiated;
    m->s.dirty = 1;
#ifdef BUG_LEAK
    m->leaked = functions->allocateMemory(1, 64);
#endif
    return m;
}

void fmi2FreeInstance(fmi2Component c) {
    Instance *m = (Instance *)c;
    if (!m) return;
    m->cb.freeMemory(m);
}

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
    ENTER("fmi2SetDebugLogging", ~0);
    (void)nCategories;
    (void)categories;
    m->loggingOn = loggingOn ? 1 : 0;
    return fmi2OK;
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined,
                               fmi2Real stopTime) {
    ENTER("fmi2SetupExperiment", ST_Instantiated);
    (void)toleranceDefined;
    (void)tolerance;
    if (isnan(startTime) || (stopTimeDefined && !(stopTime >= startTime)))
        return fail(m, "fmi2SetupExperiment", "invalid start/stop time");
    m->s.time = startTime;
    m->s.dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    ENTER("fmi2EnterInitializationMode", ST_Instantiated);
    m->s.mode = ST_InitializationMode;
    m->s.dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    const char *err;
    ENTER("fmi2ExitInitializationMode", ST_InitializationMode);
    err = model_initialize(&m->s);
    if (err) return fail(m, "fmi2ExitInitializationMode", err);
    m->s.dirty = 1;
    m->s.mode = ST_EventMode;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c) {
    ENTER("fmi2Terminate", ST_EventMode | ST_ContinuousTimeMode);
    m->s.mode = ST_Terminated;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c) {
    Instance *m = (Instance *)c;
    if (!m) return fmi2Error;
    memset(&m->s, 0, sizeof m->s);
    model_set_start_values(&m->s);
    m->s.mode = ST_Instantiated;
    m->s.dirty = 1;
    return fmi2OK;
}

/* ---------------------------------------------------------------- getters / setters */

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
    size_t i;
    ENTER("fmi2GetReal", MASK_ANY_GET);
    if (nvr > 0 && (!vr || !value)) return fail(m, "fmi2GetReal", "null argument");
    for (i = 0; i < nvr; i++)
        if (vr[i] >= NREAL) return fail(m, "fmi2GetReal", "unknown value reference");
    refresh(m);
    for (i = 0; i < nvr; i++) value[i] = m->s.r[vr[i]];
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
    size_t i;
    ENTER("fmi2SetReal", ST_Instantiated | ST_InitializationMode | ST_EventMode |
                             ST_ContinuousTimeMode);
    if (nvr > 0 && (!vr || !value)) return fail(m, "fmi2SetReal", "null argument");
    for (i = 0; i < nvr; i++) {
        if (vr[i] >= NREAL) return fail(m, "fmi2SetReal", "unknown value reference");
        if (!model_real_settable(vr[i], m->s.mode))
            return fail(m, "fmi2SetReal", "variable cannot be set in this state");
#ifndef BUG_ACCEPT_NAN
        if (!isfinite(value[i])) return fail(m, "fmi2SetReal", "value is not finite");
#endif
    }
    for (i = 0; i < nvr; i++) m->s.r[vr[i]] = value[i];
    m->s.dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
    ENTER("fmi2GetInteger", MASK_ANY_GET);
    (void)vr;
    (void)value;
    if (nvr > 0) return fail(m, "fmi2GetInteger", "unknown value reference");
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
    ENTER("fmi2SetInteger", ST_Instantiated | ST_InitializationMode | ST_EventMode |
                                ST_ContinuousTimeMode);
    (void)vr;
    (void)value;
    if (nvr > 0) return fail(m, "fmi2SetInteger", "unknown value reference");
    return fmi2OK;
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
    size_t i;
    ENTER("fmi2GetBoolean", MASK_ANY_GET);
    if (nvr > 0 && (!vr || !value)) return fail(m, "fmi2GetBoolean", "null argument");
    for (i = 0; i < nvr; i++)
        if (!bool_vr_ok(vr[i])) return fail(m, "fmi2GetBoolean", "unknown value reference");
    refresh(m);
    for (i = 0; i < nvr; i++) value[i] = m->s.b[vr[i]] ? fmi2True : fmi2False;
    return fmi2OK;
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
    size_t i;
    ENTER("fmi2SetBoolean", ST_Instantiated | ST_InitializationMode | ST_EventMode |
                                ST_ContinuousTimeMode);
    if (nvr > 0 && (!vr || !value)) return fail(m, "fmi2SetBoolean", "null argument");
    for (i = 0; i < nvr; i++) {
        if (!bool_vr_ok(vr[i])) return fail(m, "fmi2SetBoolean", "unknown value reference");
        if (!model_bool_settable(vr[i], m->s.mode))
            return fail(m, "fmi2SetBoolean", "variable cannot be set in this state");
    }
    for (i = 0; i < nvr; i++) m->s.b[vr[i]] = value[i] ? 1 : 0;
    m->s.dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
    ENTER("fmi2GetString", MASK_ANY_GET);
    (void)vr;
    (void)value;
    if (nvr > 0) return fail(m, "fmi2GetString", "unknown value reference");
    return fmi2OK;
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
    ENTER("fmi2SetString", ST_Instantiated | ST_InitializationMode | ST_EventMode |
                               ST_ContinuousTimeMode);
    (void)vr;
    (void)value;
    if (nvr > 0) return fail(m, "fmi2SetString", "unknown value reference");
    return fmi2OK;
}

/* ---------------------------------------------------------------- FMU state */

#define MASK_FMUSTATE (ST_Instantiated | ST_InitializationMode | ST_EventMode | \
                       ST_ContinuousTimeMode | ST_Terminated)

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate) {
    SimState *copy;
    ENTER("fmi2GetFMUstate", MASK_FMUSTATE);
    if (!FMUstate) return fail(m, "fmi2GetFMUstate", "null argument");
    copy = (SimState *)*FMUstate;
    if (!copy) copy = (SimState *)m->cb.allocateMemory(1, sizeof(SimState));
    if (!copy) return fail(m, "fmi2GetFMUstate", "out of memory");
    *copy = m->s;
    *FMUstate = copy;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
    ENTER("fmi2SetFMUstate", MASK_FMUSTATE);
    if (!FMUstate) return fail(m, "fmi2SetFMUstate", "null state");
#ifdef BUG_FMUSTATE_PARTIAL
    m->s.time = ((const SimState *)FMUstate)->time;
#else
    m->s = *(const SimState *)FMUstate;
#endif
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate) {
    Instance *m = (Instance *)c;
    if (!m) return fmi2Error;
    if (FMUstate && *FMUstate) {
        m->cb.freeMemory(*FMUstate);
        *FMUstate = NULL;
    }
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size) {
    ENTER("fmi2SerializedFMUstateSize", MASK_FMUSTATE);
    if (!FMUstate || !size) return fail(m, "fmi2SerializedFMUstateSize", "null argument");
    *size = sizeof(Serialized);
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                 size_t size) {
    Serialized out;
    ENTER("fmi2SerializeFMUstate", MASK_FMUSTATE);
    if (!FMUstate || !serializedState) return fail(m, "fmi2SerializeFMUstate", "null argument");
    if (size < sizeof(Serialized)) return fail(m, "fmi2SerializeFMUstate", "buffer too small");
    memset(&out, 0, sizeof out);
    out.magic = SERIAL_MAGIC;
    out.size = (unsigned)sizeof(Serialized);
    out.s = *(const SimState *)FMUstate;
    memcpy(serializedState, &out, sizeof out);
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate *FMUstate) {
    Serialized in;
    SimState *copy;
    ENTER("fmi2DeSerializeFMUstate", MASK_FMUSTATE);
    if (!serializedState || !FMUstate || size != sizeof(Serialized))
        return fail(m, "fmi2DeSerializeFMUstate", "bad serialized state");
    memcpy(&in, serializedState, sizeof in);
    if (in.magic != SERIAL_MAGIC || in.size != sizeof(Serialized))
        return fail(m, "fmi2DeSerializeFMUstate", "serialized state of another FMU");
    copy = (SimState *)*FMUstate;
    if (!copy) copy = (SimState *)m->cb.allocateMemory(1, sizeof(SimState));
    if (!copy) return fail(m, "fmi2DeSerializeFMUstate", "out of memory");
    *copy = in.s;
    *FMUstate = copy;
    return fmi2OK;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
    ENTER("fmi2GetDirectionalDerivative", MASK_ANY_GET);
    (void)vUnknown_ref;
    (void)nUnknown;
    (void)vKnown_ref;
    (void)nKnown;
    (void)dvKnown;
    (void)dvUnknown;
    return fail(m, "fmi2GetDirectionalDerivative", "not provided");
}

/* ---------------------------------------------------------------- Model Exchange */

fmi2Status fmi2EnterEventMode(fmi2Component c) {
    ENTER("fmi2EnterEventMode", ST_EventMode | ST_ContinuousTimeMode);
    m->s.mode = ST_EventMode;
    return fmi2OK;
}

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *eventInfo) {
    EventFlags f;
    ENTER("fmi2NewDiscreteStates", ST_EventMode);
    if (!eventInfo) return fail(m, "fmi2NewDiscreteStates", "null argument");
    memset(&f, 0, sizeof f);
    refresh(m);
    model_event_update(&m->s, &f);
#ifndef BUG_STALE_CACHE
    m->s.dirty = 1;
#endif
#ifdef BUG_NEEDED_FOREVER
    f.newDiscreteStatesNeeded = 1;
#endif
#ifdef BUG_NOMINALS_FLAG
    f.nominalsChanged = 1;
#endif
    eventInfo->newDiscreteStatesNeeded = f.newDiscreteStatesNeeded ? fmi2True : fmi2False;
    eventInfo->terminateSimulation = f.terminateSimulation ? fmi2True : fmi2False;
    eventInfo->nominalsOfContinuousStatesChanged = f.nominalsChanged ? fmi2True : fmi2False;
    eventInfo->valuesOfContinuousStatesChanged = f.valuesChanged ? fmi2True : fmi2False;
    eventInfo->nextEventTimeDefined = m->s.nextEventTimeDefined ? fmi2True : fmi2False;
    eventInfo->nextEventTime = m->s.nextEventTimeDefined ? m->s.nextEventTime : 0.0;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
    ENTER("fmi2EnterContinuousTimeMode", ST_EventMode);
    m->s.mode = ST_ContinuousTimeMode;
    return fmi2OK;
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode,
                                       fmi2Boolean *terminateSimulation) {
    ENTER("fmi2CompletedIntegratorStep", ST_ContinuousTimeMode);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!enterEventMode || !terminateSimulation)
        return fail(m, "fmi2CompletedIntegratorStep", "null argument");
    *enterEventMode = fmi2False;
    *terminateSimulation = fmi2False;
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
    ENTER("fmi2SetTime", ST_EventMode | ST_ContinuousTimeMode);
    if (isnan(time)) return fail(m, "fmi2SetTime", "time is NaN");
    m->s.time = time;
    m->s.dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
    size_t i;
    ENTER("fmi2SetContinuousStates", ST_EventMode | ST_ContinuousTimeMode);
    if (nx != NX) return fail(m, "fmi2SetContinuousStates", "wrong number of states");
    if (nx > 0 && !x) return fail(m, "fmi2SetContinuousStates", "null argument");
    for (i = 0; i < nx; i++)
        if (!isfinite(x[i])) return fail(m, "fmi2SetContinuousStates", "state is not finite");
    for (i = 0; i < nx; i++) m->s.r[STATE_VR[i]] = x[i];
    m->s.dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx) {
    size_t i;
    ENTER("fmi2GetDerivatives", MASK_ANY_GET);
    if (nx != NX) return fail(m, "fmi2GetDerivatives", "wrong number of states");
    if (nx > 0 && !derivatives) return fail(m, "fmi2GetDerivatives", "null argument");
    refresh(m);
    for (i = 0; i < nx; i++) derivatives[i] = m->s.r[DERIVATIVE_VR[i]];
    return fmi2OK;
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[], size_t ni) {
    ENTER("fmi2GetEventIndicators", MASK_ANY_GET);
    if (ni != NZ) return fail(m, "fmi2GetEventIndicators", "wrong number of event indicators");
    if (ni > 0 && !eventIndicators) return fail(m, "fmi2GetEventIndicators", "null argument");
    refresh(m);
    if (ni > 0) model_event_indicators(&m->s, eventIndicators);
#ifdef BUG_OVERRUN
    eventIndicators[ni] = 0.0;
#endif
    return fmi2OK;
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
    size_t i;
    ENTER("fmi2GetContinuousStates", MASK_ANY_GET);
    if (nx != NX) return fail(m, "fmi2GetContinuousStates", "wrong number of states");
    if (nx > 0 && !x) return fail(m, "fmi2GetContinuousStates", "null argument");
    for (i = 0; i < nx; i++) x[i] = m->s.r[STATE_VR[i]];
    return fmi2OK;
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[], size_t nx) {
    size_t i;
    ENTER("fmi2GetNominalsOfContinuousStates", ST_Instantiated | MASK_ANY_GET);
    if (nx != NX) return fail(m, "fmi2GetNominalsOfContinuousStates", "wrong number of states");
    if (nx > 0 && !x_nominal) return fail(m, "fmi2GetNominalsOfContinuousStates", "null argument");
    for (i = 0; i < nx; i++) x_nominal[i] = 1.0;
    return fmi2OK;
}
