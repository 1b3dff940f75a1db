/* A minimal FMI 2.0 Co-Simulation host for memory checks (valgrind) of mdae_fmu CS FMUs.
 *
 *   cs_host <binary.so> <guid> <nreal> <stop> <step> [<input vr>]
 *
 * It dlopens the binary, looks the fmi2 functions up with dlsym (fmi2_api.h), and
 *   1. exercises misuse on throw-away instances and expects fmi2Error (or NULL): wrong GUID,
 *      fmi2DoStep before initialization, a negative step then a step after the error,
 *      fmi2SetRealInputDerivatives, fmi2CancelStep, a NaN input (when an input vr is given),
 *      then fmi2Reset / fmi2FreeInstance;
 *   2. runs the model from 0 to <stop> with communication steps <step> (the input, if any,
 *      switches from 0 to 1 at mid-run);
 *   3. at mid-run takes the FMU state (fmi2GetFMUstate, serialize, deserialize), runs three
 *      steps, restores the deserialized state, runs the same three steps and requires
 *      bit-identical Reals (exit 3 otherwise);
 *   4. prints "final <t> <reals...>" and frees everything.
 * Exit codes: 0 ok, 1 usage/loading, 2 a misuse was not refused, 3 rollback mismatch,
 * 4 a legal call failed. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2_api.h"

typedef Fmi2Api Api;

static int quiet = 0;

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    va_list ap;
    (void)env;
    if (quiet) return;
    printf("[%s|%d|%s] ", name ? name : "?", (int)status, category ? category : "?");
    va_start(ap, message);
    vprintf(message, ap);
    va_end(ap);
    printf("\n");
}

#define EXPECT_ERROR(call, what)                                                       \
    do {                                                                               \
        fmi2Status s_ = (call);                                                        \
        if (s_ != fmi2Error) {                                                         \
            fprintf(stderr, "misuse not refused: %s (status %d)\n", what, (int)s_);    \
            exit(2);                                                                   \
        }                                                                              \
    } while (0)

#define CHECK(call, what)                                                              \
    do {                                                                               \
        fmi2Status s_ = (call);                                                        \
        if (s_ > fmi2Warning) {                                                        \
            fprintf(stderr, "call failed: %s (status %d)\n", what, (int)s_);           \
            exit(4);                                                                   \
        }                                                                              \
    } while (0)

static fmi2Component start(Api *a, const fmi2CallbackFunctions *cb, const char *guid,
                           double stop)
{
    fmi2Component c = a->instantiate("cs_host", fmi2CoSimulation, guid, "", cb, fmi2False,
                                     fmi2True);
    if (!c) {
        fprintf(stderr, "fmi2Instantiate failed\n");
        exit(4);
    }
    CHECK(a->setupExperiment(c, fmi2True, 1e-8, 0.0, fmi2True, stop), "setup");
    CHECK(a->enterInitializationMode(c), "enter init");
    CHECK(a->exitInitializationMode(c), "exit init");
    return c;
}

int main(int argc, char **argv)
{
    Api a;
    const char *guid;
    int nreal, k, has_input = argc > 6;
    double stop, step, t = 0.0;
    fmi2ValueReference in_vr = 0, *vrs;
    double *v1, *v2;
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c;

    if (argc < 6) {
        fprintf(stderr, "usage: cs_host binary guid nreal stop step [input_vr]\n");
        return 1;
    }
    if (fmi2_api_load(&a, argv[1], FMI2_API_CS)) return 1;
    guid = argv[2];
    nreal = atoi(argv[3]);
    stop = atof(argv[4]);
    step = atof(argv[5]);
    if (has_input) in_vr = (fmi2ValueReference)atoi(argv[6]);

    /* 1. misuse */
    if (a.instantiate("bad", fmi2CoSimulation, "{wrong}", "", &cb, fmi2False, fmi2False)) {
        fprintf(stderr, "misuse not refused: wrong GUID\n");
        return 2;
    }
    c = a.instantiate("misuse", fmi2CoSimulation, guid, "", &cb, fmi2False, fmi2True);
    if (!c) return 4;
    EXPECT_ERROR(a.doStep(c, 0.0, step, fmi2True), "fmi2DoStep before initialization");
    a.freeInstance(c);
    c = start(&a, &cb, guid, stop);
    EXPECT_ERROR(a.doStep(c, 0.0, -step, fmi2True), "negative step");
    EXPECT_ERROR(a.doStep(c, 0.0, step, fmi2True), "step after an error");
    CHECK(a.reset(c), "reset after error");
    a.freeInstance(c);
    c = start(&a, &cb, guid, stop);
    {
        fmi2Integer order = 1;
        fmi2Real zero = 0.0;
        EXPECT_ERROR(a.setRealInputDerivatives(c, &in_vr, 1, &order, &zero),
                     "fmi2SetRealInputDerivatives");
    }
    a.freeInstance(c);
    c = start(&a, &cb, guid, stop);
    EXPECT_ERROR(a.cancelStep(c), "fmi2CancelStep");
    a.freeInstance(c);
    if (has_input) {
        double nan = NAN;
        c = start(&a, &cb, guid, stop);
        EXPECT_ERROR(a.setReal(c, &in_vr, 1, &nan), "NaN input");
        a.freeInstance(c);
    }

    /* 2. a full run with 3. a rollback at mid-run */
    quiet = 1;
    vrs = (fmi2ValueReference *)calloc((size_t)nreal, sizeof *vrs);
    v1 = (double *)calloc(3 * (size_t)nreal, sizeof *v1);
    v2 = (double *)calloc(3 * (size_t)nreal, sizeof *v2);
    for (k = 0; k < nreal; k++) vrs[k] = (fmi2ValueReference)k;
    c = start(&a, &cb, guid, stop);
    {
        int n = (int)floor(stop / step + 0.5), i, rolled = 0;
        for (i = 0; i < n; i++) {
            if (has_input && i == n / 3) {
                double one = 1.0;
                CHECK(a.setReal(c, &in_vr, 1, &one), "input");
            }
            if (!rolled && i == n / 2 && i + 3 <= n) {
                fmi2FMUstate s = NULL, s2 = NULL;
                size_t size = 0;
                fmi2Byte *bytes;
                int j;
                CHECK(a.getFMUstate(c, &s), "get state");
                CHECK(a.serializedFMUstateSize(c, s, &size), "state size");
                bytes = (fmi2Byte *)malloc(size);
                CHECK(a.serializeFMUstate(c, s, bytes, size), "serialize");
                CHECK(a.deSerializeFMUstate(c, bytes, size, &s2), "deserialize");
                for (j = 0; j < 3; j++) {
                    CHECK(a.doStep(c, t + j * step, step, fmi2False), "step");
                    CHECK(a.getReal(c, vrs, (size_t)nreal, v1 + j * nreal), "getReal");
                }
                CHECK(a.setFMUstate(c, s2), "set state");
                for (j = 0; j < 3; j++) {
                    CHECK(a.doStep(c, t + j * step, step, fmi2False), "step");
                    CHECK(a.getReal(c, vrs, (size_t)nreal, v2 + j * nreal), "getReal");
                }
                if (memcmp(v1, v2, 3 * (size_t)nreal * sizeof(double)) != 0) {
                    fprintf(stderr, "rollback is not bit-identical\n");
                    return 3;
                }
                printf("rollback identical at t = %.17g\n", t);
                CHECK(a.setFMUstate(c, s), "set state");   /* continue from t */
                CHECK(a.freeFMUstate(c, &s), "free state");
                CHECK(a.freeFMUstate(c, &s2), "free state");
                free(bytes);
                rolled = 1;
            }
            CHECK(a.doStep(c, t, step, fmi2True), "step");
            t += step;
        }
    }
    CHECK(a.getReal(c, vrs, (size_t)nreal, v1), "getReal");
    printf("final %.17g", t);
    for (k = 0; k < nreal; k++) printf(" %.17g", v1[k]);
    printf("\n");
    CHECK(a.terminate(c), "terminate");
    a.freeInstance(c);
    free(vrs);
    free(v1);
    free(v2);
    return 0;
}
