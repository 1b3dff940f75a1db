/* mdae_fmu: the generic FMI 2.0 Model Exchange wrapper. Hand-written and identical in every
 * FMU; the model-specific part is the generated model code behind mdae_model.h.
 *
 * Every function checks the call sequence against the FMI 2.0 state machine (an illegal call
 * returns fmi2Error and logs "illegal call sequence"), checks its arguments (value references,
 * array sizes, NaN inputs), and escalates fmi2Error/fmi2Fatal into the Error/Fatal states.
 * There is no global mutable state: all data hangs off the fmi2Component. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mdae_wrapper.h"


#define ANY_STATE (MDAE_INSTANTIATED | MDAE_INITIALIZATION | MDAE_EVENT | MDAE_CONTINUOUS | \
                   MDAE_TERMINATED | MDAE_ERROR)
#define READ_STATES (MDAE_INITIALIZATION | MDAE_EVENT | MDAE_CONTINUOUS | MDAE_TERMINATED | \
                     MDAE_ERROR)

/* The instance behind a host pointer: a live handle carries MDAE_MAGIC and points to an
 * instance that points back. NULL for NULL, for a handle fmi2FreeInstance cleared, and for a
 * pointer to anything else (no logger is reachable from such a pointer, so the callers return
 * fmi2Error, or ignore fmi2FreeInstance, without a message). */
ModelInstance *mdae_instance(fmi2Component c)
{
    const volatile MdaeHandle *h = (const volatile MdaeHandle *)c;
    ModelInstance *inst;
    if (!h || h->magic != MDAE_MAGIC) return NULL;
    inst = h->inst;
    if (!inst || inst->handle != (const MdaeHandle *)h) return NULL;
    return inst;
}

static fmi2Status status_of(ModelInstance *inst, fmi2Status s)
{
    if (s == fmi2Error) inst->state = MDAE_ERROR;
    if (s == fmi2Fatal) inst->state = MDAE_FATAL;
    return s;
}

static int allowed(ModelInstance *inst, const char *f, int mask)
{
    if (!inst) return 0;
    if (inst->state & mask) return 1;
    mdae_refuse_call(inst, f);
    return 0;
}

static fmi2Status bad_arg(ModelInstance *inst, const char *f, const char *what)
{
    mdae_log(inst, LOG_ERROR, fmi2Error, "%s: %s", f, what);
    return status_of(inst, fmi2Error);
}

/* Recompute the values of the current mode when inputs, time or states changed. */
static fmi2Status refresh(ModelInstance *inst)
{
    if (!inst->dirty) return fmi2OK;
    /* in Initialization Mode parameters may have just been set: bound ones follow */
    if (inst->state == MDAE_INITIALIZATION &&
        (mdae_calculate_parameters(inst) || mdae_function_failed(inst)))
        return status_of(inst, fmi2Error);
    if (mdae_compute(inst)) {
        /* a failed assert in a user function is an error; otherwise, inside a step the
           host may retry with a smaller one */
        if (mdae_function_failed(inst)) return status_of(inst, fmi2Error);
        if (inst->state == MDAE_CONTINUOUS) return fmi2Discard;
        return status_of(inst, fmi2Error);
    }
    if (mdae_function_failed(inst)) return status_of(inst, fmi2Error);
    inst->dirty = 0;
    return fmi2OK;
}

static void *mem_alloc(ModelInstance *inst, size_t n, size_t size)
{
    if (inst->cb.allocateMemory) return inst->cb.allocateMemory(n, size);
    return calloc(n, size);
}

static void mem_free(ModelInstance *inst, void *p)
{
    if (!p) return;
    if (inst->cb.freeMemory) inst->cb.freeMemory(p);
    else free(p);
}

/* ------------------------------------------------------------------------------------------
 * Common functions
 * ---------------------------------------------------------------------------------------- */
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t n,
                               const fmi2String categories[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    int j;
    if (!allowed(inst, "fmi2SetDebugLogging", ANY_STATE)) return fmi2Error;
    inst->logOn = loggingOn ? 1 : 0;
    for (j = 0; j < MDAE_NLOG; j++) inst->logCat[j] = (n == 0 && loggingOn) ? 1 : 0;
    for (k = 0; k < n; k++) {
        static const char *const names[MDAE_NLOG] = {
            "logEvents", "logStatusWarning", "logStatusDiscard", "logStatusError",
            "logStatusFatal", "logStatusPending", "logAll"};
        int found = 0;
        if (!categories || !categories[k]) return bad_arg(inst, "fmi2SetDebugLogging",
                                                          "NULL category");
        for (j = 0; j < MDAE_NLOG; j++)
            if (strcmp(categories[k], names[j]) == 0) { inst->logCat[j] = loggingOn; found = 1; }
        if (!found) return bad_arg(inst, "fmi2SetDebugLogging", "unknown log category");
    }
    return fmi2OK;
}

/* ModelData's fields and values zero, its pointers kept (into inst->values) */
static void clear_data(ModelInstance *inst)
{
    memset(&inst->d, 0, sizeof inst->d);
    memset(inst->values, 0, mdae_data_size());
    mdae_data_bind(&inst->d, inst->values);
}

static void reset_data(ModelInstance *inst)
{
    clear_data(inst);
    mdae_set_start_values(&inst->d);
    inst->d.time = inst->startTime;
    inst->dirty = 1;
    inst->eventIterations = 0;
}

/* Errors before the instance exists: constant messages straight to the host's logger (no
 * ModelInstance on the stack: its value arrays can be megabytes for large models). */
static void early_error(const fmi2CallbackFunctions *f, fmi2String name, const char *msg)
{
    f->logger(f->componentEnvironment, name, fmi2Error, "logStatusError", msg);
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn)
{
    ModelInstance *inst;
    size_t len;
    fmi2String name = instanceName ? instanceName : "?";
    (void)fmuResourceLocation;
    (void)visible;
    if (!functions || !functions->logger) return NULL;
    if (!instanceName || !instanceName[0]) {
        early_error(functions, name, "fmi2Instantiate: missing instance name");
        return NULL;
    }
    if (fmuType == fmi2CoSimulation && mdae_info.co_simulation && !MDAE_CS_INTEGRATOR) {
        early_error(functions, name, "fmi2Instantiate: this binary was built from the FMU's "
                    "sources without SUNDIALS CVODE, so Co-Simulation is not available (Model "
                    "Exchange is): define MDAE_WITH_SUNDIALS and link libsundials_cvode "
                    "(sources/buildDescription.xml, docs/cosimulation.md)");
        return NULL;
    }
    if (!((fmuType == fmi2ModelExchange && mdae_info.model_exchange) ||
          (fmuType == fmi2CoSimulation && mdae_info.co_simulation))) {
        early_error(functions, name, fmuType == fmi2CoSimulation
                    ? "fmi2Instantiate: this FMU does not support Co-Simulation"
                    : "fmi2Instantiate: this FMU does not support Model Exchange");
        return NULL;
    }
    if (!fmuGUID || strcmp(fmuGUID, mdae_info.guid) != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "fmi2Instantiate: wrong GUID (expected %s)", mdae_info.guid);
        early_error(functions, name, msg);
        return NULL;
    }
    inst = (ModelInstance *)(functions->allocateMemory
                             ? functions->allocateMemory(1, sizeof(ModelInstance))
                             : calloc(1, sizeof(ModelInstance)));
    if (!inst) {
        early_error(functions, name, "fmi2Instantiate: out of memory");
        return NULL;
    }
    memset(inst, 0, sizeof *inst);
    inst->cb = *functions;
    inst->fmuType = (int)fmuType;
    len = strlen(instanceName);
    inst->instanceName = (char *)mem_alloc(inst, len + 1, 1);
    inst->work = (double *)mem_alloc(inst, mdae_info.work_size, sizeof(double));
    inst->iwork = (int *)mem_alloc(inst, mdae_info.iwork_size, sizeof(int));
    inst->xbuf = (double *)mem_alloc(inst, 2 * MDAE_DIM(mdae_info.nx), sizeof(double));
    inst->values = mem_alloc(inst, mdae_data_size(), 1);
    inst->handle = (MdaeHandle *)mem_alloc(inst, 1, sizeof(MdaeHandle));
    inst->str = (char **)mem_alloc(inst, mdae_nstrings ? mdae_nstrings : 1, sizeof(char *));
    if (!inst->instanceName || !inst->work || !inst->iwork || !inst->xbuf || !inst->values ||
        !inst->handle || !inst->str || mdae_cs_instantiate(inst)) {
        early_error(functions, name, "fmi2Instantiate: out of memory");
        mdae_cs_free(inst);
        mem_free(inst, inst->str);
        mem_free(inst, inst->handle);
        mem_free(inst, inst->instanceName);
        mem_free(inst, inst->work);
        mem_free(inst, inst->iwork);
        mem_free(inst, inst->xbuf);
        mem_free(inst, inst->values);
        mem_free(inst, inst);
        return NULL;
    }
    memcpy(inst->instanceName, instanceName, len + 1);
    inst->logOn = loggingOn ? 1 : 0;
    {
        int j;
        for (j = 0; j < MDAE_NLOG; j++) inst->logCat[j] = 1;
    }
    inst->state = MDAE_INSTANTIATED;
    reset_data(inst);
    inst->handle->inst = inst;
    inst->handle->magic = MDAE_MAGIC;
    return inst->handle;
}

/* The String values the host set are dropped: the start values apply again. */
static void free_strings(ModelInstance *inst)
{
    unsigned int k;
    for (k = 0; k < mdae_nstrings; k++) {
        mem_free(inst, inst->str[k]);
        inst->str[k] = NULL;
    }
}

/* A second call with the same pointer, or a foreign pointer, is ignored (mdae_instance). */
void fmi2FreeInstance(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    if (!inst) return;
    inst->handle->magic = 0;
    inst->handle->inst = NULL;
    mem_free(inst, inst->handle);
    inst->handle = NULL;
    mdae_cs_free(inst);
    mdae_sparse_free(inst);
    free_strings(inst);
    mem_free(inst, inst->str);
    mem_free(inst, inst->instanceName);
    mem_free(inst, inst->work);
    mem_free(inst, inst->iwork);
    mem_free(inst, inst->xbuf);
    mem_free(inst, inst->values);
    mem_free(inst, inst);
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                               fmi2Real tolerance, fmi2Real startTime,
                               fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2SetupExperiment", MDAE_INSTANTIATED)) return fmi2Error;
    if (!isfinite(startTime) || (stopTimeDefined && !(stopTime >= startTime)))
        return bad_arg(inst, "fmi2SetupExperiment", "invalid start or stop time");
    inst->tolerance = toleranceDefined ? tolerance : 0.0;
    inst->startTime = startTime;
    inst->stopTime = stopTime;
    inst->stopTimeDefined = stopTimeDefined ? 1 : 0;
    inst->d.time = startTime;
    inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2EnterInitializationMode", MDAE_INSTANTIATED)) return fmi2Error;
    inst->state = MDAE_INITIALIZATION;
    inst->d.initial = 1;
    inst->d.time = inst->startTime;
    inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2ExitInitializationMode", MDAE_INITIALIZATION)) return fmi2Error;
    if (mdae_initialize_instance(inst)) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "fmi2ExitInitializationMode: the initial "
                 "system could not be solved at t = %.17g", inst->d.time);
        return status_of(inst, fmi2Error);
    }
    inst->dirty = 0;
    inst->eventIterations = 0;
    if (inst->fmuType == fmi2CoSimulation) {
        /* Co-Simulation: event iteration at the start time, then Step Complete */
        if (mdae_cs_exit_initialization(inst)) return status_of(inst, fmi2Error);
        inst->state = MDAE_CONTINUOUS;
        return fmi2OK;
    }
    inst->state = MDAE_EVENT;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    /* not after an fmi2Error (FMI 2.0.5 section 2.1.6): fmi2Reset or fmi2FreeInstance then */
    if (!allowed(inst, "fmi2Terminate", MDAE_EVENT | MDAE_CONTINUOUS)) return fmi2Error;
    inst->state = MDAE_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2Reset", ANY_STATE)) return fmi2Error;
    inst->state = MDAE_INSTANTIATED;
    inst->refused = 0;
    inst->startTime = 0.0;
    reset_data(inst);
    free_strings(inst);
    mdae_cs_state_changed(inst);
    return fmi2OK;
}

/* ------------------------------------------------------------------------------------------
 * Getting and setting values
 * ---------------------------------------------------------------------------------------- */
static fmi2Status check_vrs(ModelInstance *inst, const char *f, const fmi2ValueReference vr[],
                            size_t nvr, const void *values, size_t limit)
{
    size_t k;
    if (nvr > 0 && (!vr || !values)) return bad_arg(inst, f, "NULL argument");
    for (k = 0; k < nvr; k++)
        if (vr[k] >= limit) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "%s: unknown value reference %u", f,
                     (unsigned)vr[k]);
            return status_of(inst, fmi2Error);
        }
    return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[])
{
    ModelInstance *inst = mdae_instance(c);
    fmi2Status s;
    size_t k;
    if (!allowed(inst, "fmi2GetReal", READ_STATES)) return fmi2Error;
    if (check_vrs(inst, "fmi2GetReal", vr, nvr, value, mdae_info.nr) != fmi2OK) return fmi2Error;
    if (inst->state & (MDAE_INITIALIZATION | MDAE_EVENT | MDAE_CONTINUOUS)) {
        s = refresh(inst);
        if (s > fmi2Warning) return s;
    }
    for (k = 0; k < nvr; k++) value[k] = inst->d.r[vr[k]];
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2GetInteger", READ_STATES)) return fmi2Error;
    if (check_vrs(inst, "fmi2GetInteger", vr, nvr, value, mdae_info.ni) != fmi2OK) return fmi2Error;
    for (k = 0; k < nvr; k++) value[k] = inst->d.i[vr[k]];
    return fmi2OK;
}

fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2GetBoolean", READ_STATES)) return fmi2Error;
    if (check_vrs(inst, "fmi2GetBoolean", vr, nvr, value, mdae_info.nb) != fmi2OK) return fmi2Error;
    for (k = 0; k < nvr; k++) value[k] = inst->d.b[vr[k]] ? fmi2True : fmi2False;
    return fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2GetString", READ_STATES)) return fmi2Error;
    if (check_vrs(inst, "fmi2GetString", vr, nvr, value, mdae_nstrings) != fmi2OK)
        return fmi2Error;
    for (k = 0; k < nvr; k++)
        value[k] = inst->str[vr[k]] ? inst->str[vr[k]] : mdae_string_start[vr[k]];
    return fmi2OK;
}

/* May a variable of this kind be set in the current state? (FMI 2.0.5 section 2.2.7, "when
 * fmi2SetXXX is allowed", and the tables of the state machines, sections 3.2.3 and 4.2.4).
 * Kinds (mdae_model.h): 0 constant, 1 exact parameter/start, 2 calculated, 3 state start,
 * 4 continuous input, 5 computed, 6 discrete input. Inputs may also be set before
 * initialization (their start values; FMPy and the test hosts do so). A discrete input of a
 * Model Exchange instance takes a new value at events only: in Continuous-Time Mode it is
 * refused (refuse_set) instead of being applied silently at the next event. In
 * Co-Simulation every input may be set between two fmi2DoStep calls (the Continuous state
 * here is Step Complete). */
static int settable(ModelInstance *inst, unsigned char kind)
{
    switch (kind) {
    case 1: case 3: return (inst->state & (MDAE_INSTANTIATED | MDAE_INITIALIZATION)) != 0;
    case 4: return (inst->state & (MDAE_INSTANTIATED | MDAE_INITIALIZATION | MDAE_EVENT |
                                   MDAE_CONTINUOUS)) != 0;
    case 6: return (inst->state & (MDAE_INSTANTIATED | MDAE_INITIALIZATION | MDAE_EVENT)) != 0
                   || (inst->state == MDAE_CONTINUOUS && inst->fmuType == fmi2CoSimulation);
    default: return 0;
    }
}

static fmi2Status refuse_set(ModelInstance *inst, const char *f, fmi2ValueReference vr,
                             unsigned char kind)
{
    if (kind == 6 && inst->state == MDAE_CONTINUOUS)
        mdae_log(inst, LOG_ERROR, fmi2Error, "%s: value reference %u is a discrete input "
                 "(variability \"discrete\"), which Model Exchange sets in Event Mode or "
                 "Initialization Mode only: in Continuous-Time Mode the standard allows "
                 "fmi2SetReal \"for a variable with causality = \"input\" and variability = "
                 "\"continuous\", and for a continuous-time state variable\" and no "
                 "fmi2SetInteger, fmi2SetBoolean or fmi2SetString (FMI 2.0.5 section 3.2.3, "
                 "table of the state machine, condition 5). Call fmi2EnterEventMode, set the "
                 "input, then fmi2NewDiscreteStates", f, (unsigned)vr);
    else
        mdae_log(inst, LOG_ERROR, fmi2Error, "%s: value reference %u cannot be set in %s "
                 "(variability/causality)", f, (unsigned)vr, mdae_state_name(inst->state));
    return status_of(inst, fmi2Error);
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2SetReal", MDAE_INSTANTIATED | MDAE_INITIALIZATION | MDAE_EVENT |
                 MDAE_CONTINUOUS)) return fmi2Error;
    if (check_vrs(inst, "fmi2SetReal", vr, nvr, value, mdae_info.nr) != fmi2OK) return fmi2Error;
    for (k = 0; k < nvr; k++) {
        if (!settable(inst, mdae_real_kind[vr[k]]))
            return refuse_set(inst, "fmi2SetReal", vr[k], mdae_real_kind[vr[k]]);
        if (!isfinite(value[k])) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "fmi2SetReal: value reference %u (%s): "
                     "value is not finite", (unsigned)vr[k], mdae_real_names[vr[k]]);
            return status_of(inst, fmi2Error);
        }
    }
    for (k = 0; k < nvr; k++) inst->d.r[vr[k]] = value[k];
    if (inst->state & (MDAE_INSTANTIATED | MDAE_INITIALIZATION))
        for (k = 0; k < nvr; k++) inst->d.rset[vr[k]] = 1;
    if (nvr) inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2SetInteger", MDAE_INSTANTIATED | MDAE_INITIALIZATION |
                 MDAE_EVENT | MDAE_CONTINUOUS)) return fmi2Error;
    if (check_vrs(inst, "fmi2SetInteger", vr, nvr, value, mdae_info.ni) != fmi2OK) return fmi2Error;
    for (k = 0; k < nvr; k++)
        if (!settable(inst, mdae_int_kind[vr[k]]))
            return refuse_set(inst, "fmi2SetInteger", vr[k], mdae_int_kind[vr[k]]);
    for (k = 0; k < nvr; k++) inst->d.i[vr[k]] = value[k];
    if (nvr) inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2SetBoolean", MDAE_INSTANTIATED | MDAE_INITIALIZATION |
                 MDAE_EVENT | MDAE_CONTINUOUS)) return fmi2Error;
    if (check_vrs(inst, "fmi2SetBoolean", vr, nvr, value, mdae_info.nb) != fmi2OK) return fmi2Error;
    for (k = 0; k < nvr; k++)
        if (!settable(inst, mdae_bool_kind[vr[k]]))
            return refuse_set(inst, "fmi2SetBoolean", vr[k], mdae_bool_kind[vr[k]]);
    for (k = 0; k < nvr; k++) inst->d.b[vr[k]] = value[k] ? 1 : 0;
    if (nvr) inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[])
{
    ModelInstance *inst = mdae_instance(c);
    size_t k, len;
    char *copy;
    /* String parameters are fixed: settable before fmi2ExitInitializationMode only */
    if (!allowed(inst, "fmi2SetString", MDAE_INSTANTIATED | MDAE_INITIALIZATION))
        return fmi2Error;
    if (check_vrs(inst, "fmi2SetString", vr, nvr, value, mdae_nstrings) != fmi2OK)
        return fmi2Error;
    for (k = 0; k < nvr; k++) {
        if (!mdae_string_settable[vr[k]]) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "fmi2SetString: value reference %u is a "
                     "String constant, which cannot be set", (unsigned)vr[k]);
            return status_of(inst, fmi2Error);
        }
        if (!value[k]) return bad_arg(inst, "fmi2SetString", "NULL string");
    }
    for (k = 0; k < nvr; k++) {
        len = strlen(value[k]);
        copy = (char *)mem_alloc(inst, len + 1, 1);
        if (!copy) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "fmi2SetString: out of memory");
            return status_of(inst, fmi2Error);
        }
        memcpy(copy, value[k], len + 1);
        mem_free(inst, inst->str[vr[k]]);
        inst->str[vr[k]] = copy;
    }
    return fmi2OK;
}

/* ------------------------------------------------------------------------------------------
 * FMU state: an MdaeSnapshot (mdae_model.h), the instance's ModelData and state machine
 * behind a header; the serialized form is the same bytes. Whatever the host hands back, a
 * pointer or bytes, is checked whole (check_header, check_body) before any of it is used: a
 * state that fails is refused with fmi2Error and a message naming what is wrong, and the
 * instance keeps its values (docs/fmi-mapping.md, "FMU states").
 * ---------------------------------------------------------------------------------------- */
#define STATE_MASK (ANY_STATE)
#define WHY_LEN 400

/* the states an instance can be saved in, per interface (Co-Simulation has no Event Mode) */
#define ME_SAVED_STATES (ANY_STATE)
#define CS_SAVED_STATES (ANY_STATE & ~MDAE_EVENT)

/* the model's GUID zero-padded to the header's field (a content GUID has 38 characters) */
static void state_guid(char guid[MDAE_STATE_GUID_LEN])
{
    memset(guid, 0, MDAE_STATE_GUID_LEN);
    strncpy(guid, mdae_info.guid, MDAE_STATE_GUID_LEN - 1);
}

/* bytes of a state of this model: the snapshot, then the value arrays */
static size_t state_size(void)
{
    return sizeof(MdaeSnapshot) + mdae_data_size();
}

static const char *interface_name(unsigned long type)
{
    return type == fmi2ModelExchange ? "Model Exchange"
           : type == fmi2CoSimulation ? "Co-Simulation" : "unknown";
}

/* The header of a state of which `size` bytes are readable: 0, or 1 with what is wrong in
 * why. The tests go from "not a state at all" to "a state of this model, but damaged". */
static int check_header(const ModelInstance *inst, const MdaeStateHeader *h, size_t size,
                        char *why, size_t n)
{
    char guid[MDAE_STATE_GUID_LEN];
    if (size < sizeof *h) {
        snprintf(why, n, "%lu bytes are fewer than the %lu of the header of a state",
                 (unsigned long)size, (unsigned long)sizeof *h);
        return 1;
    }
    if (memcmp(h->magic, MDAE_STATE_MAGIC, sizeof h->magic) != 0) {
        snprintf(why, n, "not an FMU state of mdae_fmu (the first 8 bytes are not \""
                 MDAE_STATE_MAGIC "\")");
        return 1;
    }
    if (h->version != MDAE_STATE_VERSION) {
        snprintf(why, n, "format version %lu, this FMU reads version %lu",
                 (unsigned long)h->version, (unsigned long)MDAE_STATE_VERSION);
        return 1;
    }
    state_guid(guid);
    if (memcmp(h->guid, guid, sizeof guid) != 0) {
        snprintf(why, n, "a state of another model (its GUID is not this FMU's %s)",
                 mdae_info.guid);
        return 1;
    }
    if (size != state_size() || h->size != state_size()) {
        snprintf(why, n, "%lu bytes (its header says %llu), but a state of this model has %lu",
                 (unsigned long)size, (unsigned long long)h->size,
                 (unsigned long)state_size());
        return 1;
    }
    if (h->fmuType != (uint32_t)inst->fmuType) {
        snprintf(why, n, "a state of a %s instance, this one is %s",
                 interface_name(h->fmuType), interface_name((unsigned long)inst->fmuType));
        return 1;
    }
    return 0;
}

/* 0/1 flags: 0, or 1 with the first bad one in why */
static int check_flags(const int *v, int count, const char *what, char *why, size_t n)
{
    int k;
    for (k = 0; k < count; k++)
        if (v[k] != 0 && v[k] != 1) {
            snprintf(why, n, "%s %d is %d, not 0 or 1", what, k, v[k]);
            return 1;
        }
    return 0;
}

static int check_flag(int v, const char *what, char *why, size_t n)
{
    if (v == 0 || v == 1) return 0;
    snprintf(why, n, "%s is %d, not 0 or 1", what, v);
    return 1;
}

/* The body of a state whose header is good: the checksum, then every field against its range
 * (a state the instance can be in, finite times, 0/1 flags, the index of a user-function
 * message, the mode fields by the model's mdae_check_mode_data). 0, or 1 with what is wrong
 * in why. */
static int check_body(const ModelInstance *inst, const MdaeSnapshot *s, char *why, size_t n)
{
    const MdaeStateBody *b = &s->body;
    ModelData view = b->d;     /* the body's fields with the state's value arrays */
    const ModelData *d = &view;
    unsigned int st = (unsigned int)b->state;
    unsigned int saved = inst->fmuType == fmi2CoSimulation ? CS_SAVED_STATES : ME_SAVED_STATES;
    int k, running;
    if (mdae_checksum(b, state_size() - offsetof(MdaeSnapshot, body)) != s->header.checksum) {
        snprintf(why, n, "its checksum does not match its %lu bytes (the state was changed "
                 "or damaged after it was saved)", (unsigned long)state_size());
        return 1;
    }
    mdae_data_bind(&view, (void *)(s + 1));
    if (!(st & saved) || (st & (st - 1u))) {
        snprintf(why, n, "its state-machine state %u is not one that an instance of this FMU "
                 "can be saved in", st);
        return 1;
    }
    if (check_flag(b->dirty, "its flag 'values to recompute'", why, n) ||
        check_flag(b->stopTimeDefined, "its flag 'stop time defined'", why, n) ||
        check_flag(d->initial, "its flag initial()", why, n) ||
        check_flag(d->terminate, "its flag terminate()", why, n) ||
        check_flag(d->drift, "its flag 'projection requested'", why, n))
        return 1;
    if (!isfinite(b->startTime) || !isfinite(d->time) ||
        (b->stopTimeDefined && !(b->stopTime >= b->startTime))) {
        snprintf(why, n, "its times are not valid (start %.17g, stop %.17g, time %.17g)",
                 b->startTime, b->stopTime, d->time);
        return 1;
    }
    if (!(d->homotopy >= 0.0 && d->homotopy <= 1.0)) {
        snprintf(why, n, "its homotopy parameter %.17g is outside [0, 1]", d->homotopy);
        return 1;
    }
    if (d->fn_error < 0 || d->fn_error > mdae_fn_nmessages ||
        !memchr(d->fn_text, 0, sizeof d->fn_text) || d->fn_depth != 0) {
        snprintf(why, n, "its user-function failure (message %d of %d) or calls in progress "
                 "(%d) are not valid", d->fn_error, mdae_fn_nmessages, d->fn_depth);
        return 1;
    }
    if (check_flags(d->b, mdae_info.nb, "its Boolean of value reference", why, n) ||
        check_flags(d->pb, mdae_info.nb, "its pre() of the Boolean of value reference", why, n) ||
        check_flags(d->rel, mdae_info.nrel, "its frozen relation", why, n) ||
        check_flags(d->cond, mdae_info.nwhen, "its when-condition", why, n) ||
        check_flags(d->pcond, mdae_info.nwhen, "its previous when-condition", why, n) ||
        check_flags(d->smp, mdae_info.nsample, "its sample() flag", why, n))
        return 1;
    for (k = 0; k < mdae_info.nr; k++)
        if (d->rset[k] > 1) {
            snprintf(why, n, "its flag 'set by the host' of the Real of value reference %d "
                     "is %d, not 0 or 1", k, d->rset[k]);
            return 1;
        }
    running = (st & (MDAE_EVENT | MDAE_CONTINUOUS)) && !d->initial;
    return mdae_check_mode_data(d, running, why, n);
}

/* The fields of ModelData from src to dst, not its pointers to the value arrays: the
 * members before the first pointer (ModelData lists them first). */
static void copy_fields(ModelData *dst, const ModelData *src)
{
    memcpy(dst, src, offsetof(ModelData, r));
}

/* A refused state: fmi2Error with the reason, the instance's values unchanged. */
static fmi2Status bad_state(ModelInstance *inst, const char *f, const char *why)
{
    mdae_log(inst, LOG_ERROR, fmi2Error, "%s: the FMU state is refused: %s", f, why);
    return status_of(inst, fmi2Error);
}

static void save_state(const ModelInstance *inst, MdaeSnapshot *s)
{
    memset(s, 0, sizeof *s);            /* the padding too: it is summed */
    memcpy(s->header.magic, MDAE_STATE_MAGIC, sizeof s->header.magic);
    s->header.version = MDAE_STATE_VERSION;
    s->header.fmuType = (uint32_t)inst->fmuType;
    s->header.size = state_size();
    state_guid(s->header.guid);
    s->body.state = inst->state;
    s->body.dirty = inst->dirty;
    s->body.startTime = inst->startTime;
    s->body.stopTime = inst->stopTime;
    s->body.tolerance = inst->tolerance;
    s->body.stopTimeDefined = inst->stopTimeDefined;
    copy_fields(&s->body.d, &inst->d);
    memcpy(s + 1, inst->values, mdae_data_size());
    s->header.checksum = mdae_checksum(&s->body, state_size() - offsetof(MdaeSnapshot, body));
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *FMUstate)
{
    ModelInstance *inst = mdae_instance(c);
    MdaeSnapshot *s;
    char why[WHY_LEN];
    if (!allowed(inst, "fmi2GetFMUstate", STATE_MASK)) return fmi2Error;
    if (!FMUstate) return bad_arg(inst, "fmi2GetFMUstate", "NULL argument");
    s = (MdaeSnapshot *)*FMUstate;
    if (s && check_header(inst, &s->header, state_size(), why, sizeof why))  /* ours? */
        return bad_state(inst, "fmi2GetFMUstate", why);
    if (!s) {
        s = (MdaeSnapshot *)mem_alloc(inst, 1, state_size());
        if (!s) return bad_arg(inst, "fmi2GetFMUstate", "out of memory");
    }
    save_state(inst, s);
    *FMUstate = s;
    mdae_cs_state_changed(inst);   /* CS: restart the integrator here (bit-identical replay) */
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate)
{
    ModelInstance *inst = mdae_instance(c);
    const MdaeSnapshot *s = (const MdaeSnapshot *)FMUstate;
    char why[WHY_LEN];
    if (!allowed(inst, "fmi2SetFMUstate", STATE_MASK)) return fmi2Error;
    if (!s) return bad_arg(inst, "fmi2SetFMUstate", "NULL argument");
    if (check_header(inst, &s->header, state_size(), why, sizeof why) ||
        check_body(inst, s, why, sizeof why))
        return bad_state(inst, "fmi2SetFMUstate", why);
    inst->state = s->body.state;
    inst->refused = 0;
    inst->dirty = 1;
    inst->startTime = s->body.startTime;
    inst->stopTime = s->body.stopTime;
    inst->tolerance = s->body.tolerance;
    inst->stopTimeDefined = s->body.stopTimeDefined;
    copy_fields(&inst->d, &s->body.d);
    memcpy(inst->values, s + 1, mdae_data_size());
    mdae_cs_state_changed(inst);
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *FMUstate)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2FreeFMUstate", STATE_MASK)) return fmi2Error;
    if (!FMUstate) return bad_arg(inst, "fmi2FreeFMUstate", "NULL argument");
    mem_free(inst, *FMUstate);
    *FMUstate = NULL;
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t *size)
{
    ModelInstance *inst = mdae_instance(c);
    const MdaeSnapshot *s = (const MdaeSnapshot *)FMUstate;
    char why[WHY_LEN];
    if (!allowed(inst, "fmi2SerializedFMUstateSize", STATE_MASK)) return fmi2Error;
    if (!s || !size) return bad_arg(inst, "fmi2SerializedFMUstateSize", "NULL argument");
    if (check_header(inst, &s->header, state_size(), why, sizeof why))
        return bad_state(inst, "fmi2SerializedFMUstateSize", why);
    *size = state_size();
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte bytes[],
                                 size_t size)
{
    ModelInstance *inst = mdae_instance(c);
    const MdaeSnapshot *s = (const MdaeSnapshot *)FMUstate;
    char why[WHY_LEN];
    if (!allowed(inst, "fmi2SerializeFMUstate", STATE_MASK)) return fmi2Error;
    if (!s || !bytes) return bad_arg(inst, "fmi2SerializeFMUstate", "NULL argument");
    if (size < state_size()) return bad_arg(inst, "fmi2SerializeFMUstate",
                                            "buffer too small");
    if (check_header(inst, &s->header, state_size(), why, sizeof why) ||
        check_body(inst, s, why, sizeof why))
        return bad_state(inst, "fmi2SerializeFMUstate", why);
    memcpy(bytes, s, state_size());
    return fmi2OK;
}

/* The bytes are checked in a fresh copy (aligned, and a state the host passes in *FMUstate
 * for reuse is overwritten only by a good one). */
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[],
                                   size_t size, fmi2FMUstate *FMUstate)
{
    ModelInstance *inst = mdae_instance(c);
    MdaeStateHeader h;
    MdaeSnapshot *s, *old;
    char why[WHY_LEN];
    if (!allowed(inst, "fmi2DeSerializeFMUstate", STATE_MASK)) return fmi2Error;
    if (!serializedState || !FMUstate)
        return bad_arg(inst, "fmi2DeSerializeFMUstate", "NULL argument");
    memset(&h, 0, sizeof h);
    memcpy(&h, serializedState, size < sizeof h ? size : sizeof h);
    if (check_header(inst, &h, size, why, sizeof why))
        return bad_state(inst, "fmi2DeSerializeFMUstate", why);
    s = (MdaeSnapshot *)mem_alloc(inst, 1, state_size());
    if (!s) return bad_arg(inst, "fmi2DeSerializeFMUstate", "out of memory");
    memcpy(s, serializedState, state_size());
    if (check_body(inst, s, why, sizeof why)) {
        mem_free(inst, s);
        return bad_state(inst, "fmi2DeSerializeFMUstate", why);
    }
    old = (MdaeSnapshot *)*FMUstate;
    if (old && !check_header(inst, &old->header, state_size(), why, sizeof why)) {
        memcpy(old, s, state_size());
        mem_free(inst, s);
        return fmi2OK;
    }
    *FMUstate = s;
    return fmi2OK;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown[],
                                        size_t nUnknown, const fmi2ValueReference vKnown[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[])
{
    ModelInstance *inst = mdae_instance(c);
    (void)vUnknown; (void)nUnknown; (void)vKnown; (void)nKnown; (void)dvKnown; (void)dvUnknown;
    if (!inst) return fmi2Error;
    return bad_arg(inst, "fmi2GetDirectionalDerivative",
                   "not provided (providesDirectionalDerivative=false)");
}

/* ------------------------------------------------------------------------------------------
 * Model Exchange
 * ---------------------------------------------------------------------------------------- */
fmi2Status fmi2EnterEventMode(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    fmi2Status s;
    if (!allowed(inst, "fmi2EnterEventMode", MDAE_EVENT | MDAE_CONTINUOUS)) return fmi2Error;
    /* the left limits pre() are the values at the time and states the host set last, even
       when it read nothing since: compute them now, before inputs set in Event Mode */
    s = refresh(inst);
    if (s > fmi2Warning) return s;
    inst->state = MDAE_EVENT;
    inst->eventIterations = 0;
    return fmi2OK;
}

/* The event info of a call that fails: terminate, no further iteration. A host that ignores
 * the status and loops while newDiscreteStatesNeeded holds (fmuCheck 2.0.4) stops. */
static void request_termination(fmi2EventInfo *eventInfo)
{
    eventInfo->newDiscreteStatesNeeded = fmi2False;
    eventInfo->terminateSimulation = fmi2True;
    eventInfo->nominalsOfContinuousStatesChanged = fmi2False;
    eventInfo->valuesOfContinuousStatesChanged = fmi2False;
    eventInfo->nextEventTimeDefined = fmi2False;
    eventInfo->nextEventTime = 0.0;
}

/* The whole event iteration in one call (mdae_event_iteration): newDiscreteStatesNeeded is
 * false unless terminate() ran, so hosts that keep only the last eventInfo see the restarts
 * (docs/fmi-mapping.md, "Events in third-party hosts"). A host that sets inputs in Event Mode
 * and calls again gets a new iteration from those inputs. Every fmi2Error leaves the event
 * info asking for termination (request_termination). */
fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *eventInfo)
{
    ModelInstance *inst = mdae_instance(c);
    MdaeEventFlags ev;
    int instants = 0;
    if (eventInfo) request_termination(eventInfo);   /* until the iteration succeeds */
    if (!allowed(inst, "fmi2NewDiscreteStates", MDAE_EVENT)) return fmi2Error;
    if (!eventInfo) return bad_arg(inst, "fmi2NewDiscreteStates", "NULL argument");
    if (++inst->eventIterations > mdae_info.max_event_iterations) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: fmi2NewDiscreteStates called more "
                 "than %d times in one Event Mode", inst->d.time, mdae_info.max_event_iterations);
        return status_of(inst, fmi2Error);
    }
    memset(&ev, 0, sizeof ev);
    if (mdae_event_iteration(inst, &ev, &instants)) return status_of(inst, fmi2Error);
    inst->dirty = 0;
    eventInfo->newDiscreteStatesNeeded = ev.newDiscreteStatesNeeded ? fmi2True : fmi2False;
    eventInfo->terminateSimulation = ev.terminateSimulation ? fmi2True : fmi2False;
    eventInfo->nominalsOfContinuousStatesChanged = ev.nominalsChanged ? fmi2True : fmi2False;
    eventInfo->valuesOfContinuousStatesChanged = ev.valuesChanged ? fmi2True : fmi2False;
    eventInfo->nextEventTimeDefined = ev.nextEventTimeDefined ? fmi2True : fmi2False;
    eventInfo->nextEventTime = ev.nextEventTime;
    if (instants > 1 || ev.valuesChanged)
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: event iteration of %d instant(s), "
                 "states %s, valuesOfContinuousStatesChanged %s", inst->d.time, instants,
                 ev.statesChanged ? "changed" : "unchanged", ev.valuesChanged ? "true" : "false");
    if (ev.terminateSimulation)
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: terminate() requested", inst->d.time);
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2EnterContinuousTimeMode", MDAE_EVENT)) return fmi2Error;
    inst->state = MDAE_CONTINUOUS;
    return fmi2OK;
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation)
{
    ModelInstance *inst = mdae_instance(c);
    fmi2Status s;
    (void)noSetFMUStatePriorToCurrentPoint;
    if (enterEventMode) *enterEventMode = fmi2False;
    if (terminateSimulation) *terminateSimulation = fmi2True;   /* until the step is done */
    if (!allowed(inst, "fmi2CompletedIntegratorStep", MDAE_CONTINUOUS)) return fmi2Error;
    if (!enterEventMode || !terminateSimulation)
        return bad_arg(inst, "fmi2CompletedIntegratorStep", "NULL argument");
    s = refresh(inst);
    if (s == fmi2Discard) *terminateSimulation = fmi2False;   /* the host may retry */
    if (s > fmi2Warning) return s;
    *terminateSimulation = fmi2False;
    /* drift control: a step event projects the states back onto the consistency equations */
    if (mdae_info.ncons > 0 && mdae_drift(&inst->d) > mdae_drift_tolerance(inst)) {
        inst->d.drift = 1;
        *enterEventMode = fmi2True;
    }
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2SetTime", MDAE_EVENT | MDAE_CONTINUOUS)) return fmi2Error;
    if (!isfinite(time)) return bad_arg(inst, "fmi2SetTime", "time is not finite");
    inst->d.time = time;
    inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx)
{
    ModelInstance *inst = mdae_instance(c);
    size_t k;
    if (!allowed(inst, "fmi2SetContinuousStates", MDAE_EVENT | MDAE_CONTINUOUS))
        return fmi2Error;
    if (nx != (size_t)mdae_info.nx)
        return bad_arg(inst, "fmi2SetContinuousStates", "wrong number of states");
    if (nx && !x) return bad_arg(inst, "fmi2SetContinuousStates", "NULL argument");
    for (k = 0; k < nx; k++)
        if (!isfinite(x[k])) return bad_arg(inst, "fmi2SetContinuousStates",
                                            "a state value is not finite");
    mdae_set_states(&inst->d, x);
    inst->dirty = 1;
    return fmi2OK;
}

fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real derivatives[], size_t nx)
{
    ModelInstance *inst = mdae_instance(c);
    fmi2Status s;
    if (!allowed(inst, "fmi2GetDerivatives", READ_STATES)) return fmi2Error;
    if (nx != (size_t)mdae_info.nx)
        return bad_arg(inst, "fmi2GetDerivatives", "wrong number of states");
    if (nx && !derivatives) return bad_arg(inst, "fmi2GetDerivatives", "NULL argument");
    if (inst->state & (MDAE_INITIALIZATION | MDAE_EVENT | MDAE_CONTINUOUS)) {
        s = refresh(inst);
        if (s > fmi2Warning) return s;
    }
    mdae_get_derivatives(&inst->d, derivatives);
    return fmi2OK;
}

fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real eventIndicators[], size_t ni)
{
    ModelInstance *inst = mdae_instance(c);
    fmi2Status s;
    if (!allowed(inst, "fmi2GetEventIndicators", READ_STATES)) return fmi2Error;
    if (ni != (size_t)mdae_info.nz) return bad_arg(inst, "fmi2GetEventIndicators",
                                      "wrong number of event indicators");
    if (ni && !eventIndicators) return bad_arg(inst, "fmi2GetEventIndicators", "NULL argument");
    if (inst->state & (MDAE_INITIALIZATION | MDAE_EVENT | MDAE_CONTINUOUS)) {
        s = refresh(inst);
        if (s > fmi2Warning) return s;
    }
    mdae_event_indicators(&inst->d, eventIndicators);
    return fmi2OK;
}

fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2GetContinuousStates", READ_STATES)) return fmi2Error;
    if (nx != (size_t)mdae_info.nx)
        return bad_arg(inst, "fmi2GetContinuousStates", "wrong number of states");
    if (nx && !x) return bad_arg(inst, "fmi2GetContinuousStates", "NULL argument");
    mdae_get_states(&inst->d, x);
    return fmi2OK;
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x_nominal[], size_t nx)
{
    ModelInstance *inst = mdae_instance(c);
    if (!allowed(inst, "fmi2GetNominalsOfContinuousStates", ANY_STATE)) return fmi2Error;
    if (nx != (size_t)mdae_info.nx) return bad_arg(inst, "fmi2GetNominalsOfContinuousStates",
                                      "wrong number of states");
    if (nx && !x_nominal) return bad_arg(inst, "fmi2GetNominalsOfContinuousStates",
                                         "NULL argument");
    mdae_get_nominals(x_nominal);
    return fmi2OK;
}

/* Co-Simulation entry points (fmi2DoStep, fmi2GetStatus, ...): fmi2CoSimulation.c */
