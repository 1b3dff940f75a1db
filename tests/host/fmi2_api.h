/* The FMI 2.0 functions of an FMU binary, looked up with dlopen/dlsym: shared by the C test
 * hosts (me_host.c, cs_host.c, emul_host.c). Header-only (static functions), C99.
 *
 *   Fmi2Api api;
 *   if (fmi2_api_load(&api, "binaries/linux64/M.so", FMI2_API_ME)) exit(2);
 *
 * The common functions and those of the interface asked for (FMI2_API_ME, FMI2_API_CS, or
 * both) must be exported; the others are looked up too and stay NULL when missing. The
 * library is not dlclosed, so that valgrind can name its frames. */
#ifndef MDAE_TEST_FMI2_API_H
#define MDAE_TEST_FMI2_API_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmi2Functions.h"

/* The hosts' logger: errors always go to stderr, every message when host_log_all is set. */
static int host_log_all = 0;

static void host_logger(fmi2ComponentEnvironment env, fmi2String instanceName,
                        fmi2Status status, fmi2String category, fmi2String message, ...)
{
    va_list ap;
    (void)env;
    if (!host_log_all && status <= fmi2Warning) return;
    fprintf(stderr, "[%s] %s (%d): ", instanceName ? instanceName : "?",
            category ? category : "", (int)status);
    va_start(ap, message);
    vfprintf(stderr, message ? message : "", ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

static const fmi2CallbackFunctions host_callbacks __attribute__((unused)) =
    {host_logger, calloc, free, NULL, NULL};

/* A check of a host: when it fails, where and why go to stderr and host_failures counts it. */
static int host_failures __attribute__((unused)) = 0;

#define HOST_CHECK(cond, ...)                                      \
    do {                                                           \
        if (!(cond)) {                                             \
            fprintf(stderr, "FAIL (%s:%d): ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                          \
            fprintf(stderr, "\n");                                 \
            host_failures++;                                       \
        }                                                          \
    } while (0)

typedef struct {
    /* common */
    fmi2InstantiateTYPE *instantiate;
    fmi2FreeInstanceTYPE *freeInstance;
    fmi2SetDebugLoggingTYPE *setDebugLogging;
    fmi2SetupExperimentTYPE *setupExperiment;
    fmi2EnterInitializationModeTYPE *enterInitializationMode;
    fmi2ExitInitializationModeTYPE *exitInitializationMode;
    fmi2TerminateTYPE *terminate;
    fmi2ResetTYPE *reset;
    fmi2GetRealTYPE *getReal;
    fmi2SetRealTYPE *setReal;
    fmi2SetBooleanTYPE *setBoolean;
    fmi2GetFMUstateTYPE *getFMUstate;
    fmi2SetFMUstateTYPE *setFMUstate;
    fmi2FreeFMUstateTYPE *freeFMUstate;
    fmi2SerializedFMUstateSizeTYPE *serializedFMUstateSize;
    fmi2SerializeFMUstateTYPE *serializeFMUstate;
    fmi2DeSerializeFMUstateTYPE *deSerializeFMUstate;
    /* Model Exchange */
    fmi2EnterEventModeTYPE *enterEventMode;
    fmi2NewDiscreteStatesTYPE *newDiscreteStates;
    fmi2EnterContinuousTimeModeTYPE *enterContinuousTimeMode;
    fmi2CompletedIntegratorStepTYPE *completedIntegratorStep;
    fmi2SetTimeTYPE *setTime;
    fmi2SetContinuousStatesTYPE *setContinuousStates;
    fmi2GetDerivativesTYPE *getDerivatives;
    fmi2GetEventIndicatorsTYPE *getEventIndicators;
    fmi2GetContinuousStatesTYPE *getContinuousStates;
    fmi2GetNominalsOfContinuousStatesTYPE *getNominalsOfContinuousStates;
    /* Co-Simulation */
    fmi2DoStepTYPE *doStep;
    fmi2CancelStepTYPE *cancelStep;
    fmi2SetRealInputDerivativesTYPE *setRealInputDerivatives;
    fmi2GetRealStatusTYPE *getRealStatus;
} Fmi2Api;

enum { FMI2_API_COMMON = 1, FMI2_API_ME = 2, FMI2_API_CS = 4 };

/* Returns 0, or -1 after printing why (binary not loadable, a required function missing). */
static int fmi2_api_load(Fmi2Api *api, const char *path, int interfaces)
{
    static const struct {
        const char *name;
        size_t offset;
        int kind;
    } table[] = {
#define F(field, name, kind) {name, offsetof(Fmi2Api, field), kind}
        F(instantiate, "fmi2Instantiate", FMI2_API_COMMON),
        F(freeInstance, "fmi2FreeInstance", FMI2_API_COMMON),
        F(setDebugLogging, "fmi2SetDebugLogging", FMI2_API_COMMON),
        F(setupExperiment, "fmi2SetupExperiment", FMI2_API_COMMON),
        F(enterInitializationMode, "fmi2EnterInitializationMode", FMI2_API_COMMON),
        F(exitInitializationMode, "fmi2ExitInitializationMode", FMI2_API_COMMON),
        F(terminate, "fmi2Terminate", FMI2_API_COMMON),
        F(reset, "fmi2Reset", FMI2_API_COMMON),
        F(getReal, "fmi2GetReal", FMI2_API_COMMON),
        F(setReal, "fmi2SetReal", FMI2_API_COMMON),
        F(setBoolean, "fmi2SetBoolean", FMI2_API_COMMON),
        F(getFMUstate, "fmi2GetFMUstate", FMI2_API_COMMON),
        F(setFMUstate, "fmi2SetFMUstate", FMI2_API_COMMON),
        F(freeFMUstate, "fmi2FreeFMUstate", FMI2_API_COMMON),
        F(serializedFMUstateSize, "fmi2SerializedFMUstateSize", FMI2_API_COMMON),
        F(serializeFMUstate, "fmi2SerializeFMUstate", FMI2_API_COMMON),
        F(deSerializeFMUstate, "fmi2DeSerializeFMUstate", FMI2_API_COMMON),
        F(enterEventMode, "fmi2EnterEventMode", FMI2_API_ME),
        F(newDiscreteStates, "fmi2NewDiscreteStates", FMI2_API_ME),
        F(enterContinuousTimeMode, "fmi2EnterContinuousTimeMode", FMI2_API_ME),
        F(completedIntegratorStep, "fmi2CompletedIntegratorStep", FMI2_API_ME),
        F(setTime, "fmi2SetTime", FMI2_API_ME),
        F(setContinuousStates, "fmi2SetContinuousStates", FMI2_API_ME),
        F(getDerivatives, "fmi2GetDerivatives", FMI2_API_ME),
        F(getEventIndicators, "fmi2GetEventIndicators", FMI2_API_ME),
        F(getContinuousStates, "fmi2GetContinuousStates", FMI2_API_ME),
        F(getNominalsOfContinuousStates, "fmi2GetNominalsOfContinuousStates", FMI2_API_ME),
        F(doStep, "fmi2DoStep", FMI2_API_CS),
        F(cancelStep, "fmi2CancelStep", FMI2_API_CS),
        F(setRealInputDerivatives, "fmi2SetRealInputDerivatives", FMI2_API_CS),
        F(getRealStatus, "fmi2GetRealStatus", FMI2_API_CS),
#undef F
    };
    size_t k;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    for (k = 0; k < sizeof table / sizeof table[0]; k++) {
        void *f = dlsym(lib, table[k].name);
        *(void **)((char *)api + table[k].offset) = f;
        if (!f && (table[k].kind & (interfaces | FMI2_API_COMMON))) {
            fprintf(stderr, "%s does not export %s\n", path, table[k].name);
            return -1;
        }
    }
    return 0;
}

#endif
