/* me_host: a minimal FMI 2.0 Model Exchange host, meant to run FMU binaries under valgrind.
 *
 *   me_host <binary.so> <guid> <nx> <nz> <stop_time> <step> [<param_vr>|-] [<input>...]
 *
 * Each <input> is TYPE:VR:TIME:VALUE (TYPE R = Real, B = Boolean): the input takes VALUE from
 * TIME on. Changes at TIME <= 0 are set before initialization; later ones are external
 * events: the host steps to TIME exactly, enters Event Mode, sets the input and iterates.
 *
 * It dlopens the binary, looks the fmi2 functions up with dlsym (fmi2_api.h), and
 *   1. exercises misuse on throw-away instances and expects fmi2Error (or NULL):
 *      wrong GUID, fmi2NewDiscreteStates before initialization (wrong call order),
 *      fmi2GetReal of an unknown value reference, fmi2SetReal of NaN on a parameter
 *      (only if <param_vr> is given), wrong array length to fmi2GetContinuousStates;
 *      an instance in error is then reset (fmi2Reset) and freed;
 *   2. runs a whole ME simulation (FMI 2.0.5 §3.2 calling sequence): explicit Euler with a
 *      fixed step, state events by a domain change of the event indicators (z > 0 vs z <= 0)
 *      located by bisection on the step length to 1e-12, time events from nextEventTime,
 *      input changes (see below), step events from
 *      fmi2CompletedIntegratorStep, event iteration until newDiscreteStatesNeeded is false;
 *   3. round-trips the FMU state at mid-run: fmi2GetFMUstate, fmi2SerializeFMUstate,
 *      fmi2SetFMUstate, fmi2DeSerializeFMUstate, fmi2FreeFMUstate; the rerun from a
 *      restored state must reproduce the final states bitwise;
 *   4. frees everything. The library is not dlclosed so valgrind can name its frames.
 *
 * Prints "final t x..." on stdout; exits 0 when every check passed, 1 when one failed,
 * 2 on bad usage or when the binary cannot be loaded.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2_api.h"

typedef struct {
    char type;                 /* 'R' or 'B' */
    fmi2ValueReference vr;
    double time, value;
} InputChange;

#define MAX_INPUTS 64
static InputChange inputs[MAX_INPUTS];
static int ninputs = 0;

typedef Fmi2Api Api;

/* Host-side integration state (everything needed to continue a run). */
typedef struct {
    double t;
    int nextDefined;
    double nextTime;
    double *x, *dx, *z, *zprev, *x0;   /* x0: states at the start of the current step */
} Run;

static Api api;
static const char *guid;
static size_t nx, nz;
#define CHECK HOST_CHECK

/* a call that must return fmi2OK; on failure the current run is abandoned */
#define OK(call)                                                              \
    do {                                                                      \
        fmi2Status st_ = (call);                                              \
        if (st_ != fmi2OK) {                                                  \
            fprintf(stderr, "FAIL (%s:%d): %s returned %d\n", __FILE__, __LINE__, \
                    #call, (int)st_);                                         \
            host_failures++;                                                  \
            return -1;                                                        \
        }                                                                     \
    } while (0)


static fmi2Component instantiate(const char *name, const char *token) {
    return api.instantiate(name, fmi2ModelExchange, token, NULL, &host_callbacks, fmi2False,
                           fmi2False);
}

/* ------------------------------------------------------------------ misuse */

static void misuse(int param_vr) {
    fmi2Component c;
    fmi2EventInfo ei;
    fmi2ValueReference bad_vr = 0x7fffffffu;
    double v = 0.0;

    c = instantiate("wrong_guid", "{00000000-0000-0000-0000-000000000000}");
    CHECK(c == NULL, "fmi2Instantiate accepted a wrong GUID");
    if (c) api.freeInstance(c);

    c = instantiate("call_order", guid);
    CHECK(c != NULL, "fmi2Instantiate failed");
    if (c) {
        memset(&ei, 0, sizeof ei);
        CHECK(api.newDiscreteStates(c, &ei) == fmi2Error,
              "fmi2NewDiscreteStates before initialization did not return fmi2Error");
        CHECK(api.reset(c) == fmi2OK, "fmi2Reset after an error did not return fmi2OK");
        api.freeInstance(c);
    }

    c = instantiate("bad_vr", guid);
    if (c) {
        if (api.setupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) == fmi2OK &&
            api.enterInitializationMode(c) == fmi2OK) {
            CHECK(api.getReal(c, &bad_vr, 1, &v) == fmi2Error,
                  "fmi2GetReal of an unknown value reference did not return fmi2Error");
        } else {
            CHECK(0, "initialization of the bad_vr instance failed");
        }
        api.freeInstance(c);
    }

    if (param_vr >= 0) {
        c = instantiate("nan_input", guid);
        if (c) {
            fmi2ValueReference vr = (fmi2ValueReference)param_vr;
            double nan_value = NAN;
            CHECK(api.setReal(c, &vr, 1, &nan_value) == fmi2Error,
                  "fmi2SetReal accepted NaN for value reference %d", param_vr);
            api.freeInstance(c);
        }
    }

    c = instantiate("wrong_nx", guid);
    if (c) {
        double buf[4];
        if (api.setupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) == fmi2OK &&
            api.enterInitializationMode(c) == fmi2OK) {
            CHECK(api.getContinuousStates(c, buf, nx + 1) == fmi2Error,
                  "fmi2GetContinuousStates with nx+1 did not return fmi2Error");
        }
        api.freeInstance(c);
    }
}

/* ------------------------------------------------------------------ simulation */

static int event_iteration(fmi2Component c, Run *r, int *valuesChanged, int *terminate) {
    fmi2EventInfo ei;
    int it = 0;
    *valuesChanged = 0;
    *terminate = 0;
    do {
        memset(&ei, 0, sizeof ei);
        OK(api.newDiscreteStates(c, &ei));
        if (ei.valuesOfContinuousStatesChanged) *valuesChanged = 1;
        if (ei.terminateSimulation) {
            *terminate = 1;
            break;
        }
        if (++it > 1000) {
            CHECK(0, "event iteration did not converge at t=%g", r->t);
            return -1;
        }
    } while (ei.newDiscreteStatesNeeded);
    r->nextDefined = ei.nextEventTimeDefined ? 1 : 0;
    r->nextTime = ei.nextEventTime;
    return 0;
}

/* set the inputs whose change time lies in (t0, t1] */
static int apply_inputs(fmi2Component c, double t0, double t1) {
    int k;
    for (k = 0; k < ninputs; k++) {
        const InputChange *in = &inputs[k];
        if (!(in->time > t0 && in->time <= t1)) continue;
        if (in->type == 'R') {
            OK(api.setReal(c, &in->vr, 1, &in->value));
        } else {
            fmi2Boolean b = in->value != 0.0;
            OK(api.setBoolean(c, &in->vr, 1, &b));
        }
    }
    return 0;
}

/* the first input change strictly after t (or INFINITY) */
static double next_input(double t) {
    double best = INFINITY;
    int k;
    for (k = 0; k < ninputs; k++)
        if (inputs[k].time > t && inputs[k].time < best) best = inputs[k].time;
    return best;
}

static int initialize(fmi2Component c, Run *r, double stop) {
    int changed, term;
    OK(api.setupExperiment(c, fmi2False, 0.0, r->t, fmi2True, stop));
    if (apply_inputs(c, -INFINITY, r->t)) return -1;
    OK(api.enterInitializationMode(c));
    OK(api.exitInitializationMode(c));
    if (event_iteration(c, r, &changed, &term)) return -1;
    if (term) return 1;
    OK(api.enterContinuousTimeMode(c));
    if (nx) OK(api.getContinuousStates(c, r->x, nx));
    if (nz) OK(api.getEventIndicators(c, r->zprev, nz));
    return 0;
}

/* Explicit Euler from r->t to stop. Returns 0 at stop, 1 if the FMU terminated, -1 on error. */
static int simulate(fmi2Component c, Run *r, double stop, double h) {
    size_t i;
    const double eps = 1e-12;
    while (r->t < stop - eps * (1.0 + fabs(stop))) {
        double t1 = r->t + h, t0 = r->t, tin = next_input(r->t);
        int timeEvent = 0, stateEvent = 0, inputEvent = 0, changed, term;
        fmi2Boolean enter = fmi2False, stopNow = fmi2False;
        if (t1 > stop - 1e-6 * h) t1 = stop;
        if (r->nextDefined && r->nextTime <= t1) {
            t1 = r->nextTime;
            timeEvent = 1;
        }
        if (tin <= t1) {
            t1 = tin;
            inputEvent = 1;
        }
        if (nx) OK(api.getDerivatives(c, r->dx, nx));
        if (nx) memcpy(r->x0, r->x, nx * sizeof(double));
        for (i = 0; i < nx; i++) r->x[i] = r->x0[i] + (t1 - t0) * r->dx[i];
        r->t = t1;
        OK(api.setTime(c, r->t));
        if (nx) OK(api.setContinuousStates(c, r->x, nx));
        if (nz) {
            OK(api.getEventIndicators(c, r->z, nz));
            for (i = 0; i < nz; i++)
                if ((r->z[i] > 0.0) != (r->zprev[i] > 0.0)) stateEvent = 1;
        }
        if (stateEvent) {
            /* locate the domain change by bisection on the Euler step length (the Euler
             * state is linear in it), to 1e-12: the event instant sees left limits on the
             * switching surface, as with any host that locates events */
            double lo = 0.0, hi = t1 - t0;
            while (hi - lo > 1e-12 * (1.0 + fabs(t0))) {
                double mid = 0.5 * (lo + hi);
                int crossed = 0;
                for (i = 0; i < nx; i++) r->x[i] = r->x0[i] + mid * r->dx[i];
                OK(api.setTime(c, t0 + mid));
                if (nx) OK(api.setContinuousStates(c, r->x, nx));
                OK(api.getEventIndicators(c, r->z, nz));
                for (i = 0; i < nz; i++)
                    if ((r->z[i] > 0.0) != (r->zprev[i] > 0.0)) crossed = 1;
                if (crossed) hi = mid;
                else lo = mid;
            }
            if (hi < t1 - t0) timeEvent = inputEvent = 0;
            r->t = t0 + hi;
            for (i = 0; i < nx; i++) r->x[i] = r->x0[i] + hi * r->dx[i];
            OK(api.setTime(c, r->t));
            if (nx) OK(api.setContinuousStates(c, r->x, nx));
            OK(api.getEventIndicators(c, r->z, nz));
        }
        OK(api.completedIntegratorStep(c, fmi2True, &enter, &stopNow));
        if (stopNow) return 1;
        if (timeEvent || stateEvent || enter || inputEvent) {
            OK(api.enterEventMode(c));
            if (inputEvent && apply_inputs(c, t0, r->t)) return -1;
            if (event_iteration(c, r, &changed, &term)) return -1;
            if (term) return 1;
            OK(api.enterContinuousTimeMode(c));
            if (changed && nx) OK(api.getContinuousStates(c, r->x, nx));
            if (nz) OK(api.getEventIndicators(c, r->z, nz));
        }
        if (nz) memcpy(r->zprev, r->z, nz * sizeof(double));
    }
    return 0;
}

static int run_all(double stop, double h) {
    fmi2Component c;
    fmi2FMUstate s1 = NULL, s2 = NULL;
    fmi2Byte *ser = NULL;
    size_t size = 0, i;
    Run r, mid;
    double *xa = NULL, *zmid = NULL;
    int rc = -1, st;

    memset(&r, 0, sizeof r);
    r.x = calloc(nx ? nx : 1, sizeof(double));
    r.dx = calloc(nx ? nx : 1, sizeof(double));
    r.z = calloc(nz ? nz : 1, sizeof(double));
    r.zprev = calloc(nz ? nz : 1, sizeof(double));
    r.x0 = calloc(nx ? nx : 1, sizeof(double));
    xa = calloc(nx ? nx : 1, sizeof(double));
    zmid = calloc(nz ? nz : 1, sizeof(double));
    c = instantiate("host", guid);
    CHECK(c != NULL, "fmi2Instantiate failed");
    if (!c) goto done;

    st = initialize(c, &r, stop);
    if (st < 0) goto done;
    if (st == 0) st = simulate(c, &r, stop / 2, h);
    if (st < 0) goto done;
    if (st == 0) {
        /* mid-run FMU state: get, serialize, run to the end */
        if (api.getFMUstate(c, &s1) != fmi2OK ||
            api.serializedFMUstateSize(c, s1, &size) != fmi2OK || size == 0) {
            CHECK(0, "fmi2GetFMUstate / fmi2SerializedFMUstateSize failed");
            goto done;
        }
        ser = malloc(size);
        CHECK(api.serializeFMUstate(c, s1, ser, size) == fmi2OK, "fmi2SerializeFMUstate failed");
        mid = r;
        memcpy(zmid, r.zprev, nz * sizeof(double));
        st = simulate(c, &r, stop, h);
        if (st < 0) goto done;
        memcpy(xa, r.x, nx * sizeof(double));
        printf("final %.17g", r.t);
        for (i = 0; i < nx; i++) printf(" %.17g", r.x[i]);
        printf("\n");

        /* restore the state in memory and rerun */
        CHECK(api.setFMUstate(c, s1) == fmi2OK, "fmi2SetFMUstate failed");
        r.t = mid.t;
        r.nextDefined = mid.nextDefined;
        r.nextTime = mid.nextTime;
        if (nx) CHECK(api.getContinuousStates(c, r.x, nx) == fmi2OK, "get states failed");
        memcpy(r.zprev, zmid, nz * sizeof(double));
        if (simulate(c, &r, stop, h) < 0) goto done;
        CHECK(memcmp(xa, r.x, nx * sizeof(double)) == 0,
              "rerun from fmi2SetFMUstate differs from the first run");

        /* restore the deserialized state and rerun */
        CHECK(api.deSerializeFMUstate(c, ser, size, &s2) == fmi2OK,
              "fmi2DeSerializeFMUstate failed");
        CHECK(api.setFMUstate(c, s2) == fmi2OK, "fmi2SetFMUstate (deserialized) failed");
        r.t = mid.t;
        r.nextDefined = mid.nextDefined;
        r.nextTime = mid.nextTime;
        if (nx) CHECK(api.getContinuousStates(c, r.x, nx) == fmi2OK, "get states failed");
        memcpy(r.zprev, zmid, nz * sizeof(double));
        if (simulate(c, &r, stop, h) < 0) goto done;
        CHECK(memcmp(xa, r.x, nx * sizeof(double)) == 0,
              "rerun from a deserialized FMU state differs from the first run");
    }
    CHECK(api.terminate(c) == fmi2OK, "fmi2Terminate failed");
    rc = 0;
done:
    if (c) {
        if (s1) CHECK(api.freeFMUstate(c, &s1) == fmi2OK && s1 == NULL, "fmi2FreeFMUstate");
        if (s2) CHECK(api.freeFMUstate(c, &s2) == fmi2OK && s2 == NULL, "fmi2FreeFMUstate");
        api.freeInstance(c);
    }
    free(ser);
    free(r.x);
    free(r.dx);
    free(r.z);
    free(r.zprev);
    free(r.x0);
    free(xa);
    free(zmid);
    return rc;
}

int main(int argc, char **argv) {
    double stop, h;
    int param_vr = -1;
    int k;
    if (argc < 7 || argc > 8 + MAX_INPUTS) {
        fprintf(stderr, "usage: %s BINARY.so GUID NX NZ STOP_TIME STEP [PARAM_VR|-] "
                "[R|B:VR:TIME:VALUE ...]\n", argv[0]);
        return 2;
    }
    guid = argv[2];
    nx = (size_t)strtoul(argv[3], NULL, 10);
    nz = (size_t)strtoul(argv[4], NULL, 10);
    stop = strtod(argv[5], NULL);
    h = strtod(argv[6], NULL);
    if (argc >= 8 && strcmp(argv[7], "-") != 0) param_vr = atoi(argv[7]);
    for (k = 8; k < argc; k++) {
        InputChange *in = &inputs[ninputs];
        unsigned vr;
        if (sscanf(argv[k], "%c:%u:%lf:%lf", &in->type, &vr, &in->time, &in->value) != 4 ||
            (in->type != 'R' && in->type != 'B')) {
            fprintf(stderr, "bad input change %s (TYPE:VR:TIME:VALUE)\n", argv[k]);
            return 2;
        }
        in->vr = (fmi2ValueReference)vr;
        ninputs++;
    }
    host_log_all = getenv("ME_HOST_VERBOSE") != NULL;
    if (!(stop > 0.0) || !(h > 0.0)) {
        fprintf(stderr, "STOP_TIME and STEP must be > 0\n");
        return 2;
    }
    if (fmi2_api_load(&api, argv[1], FMI2_API_ME)) return 2;
    misuse(param_vr);
    if (run_all(stop, h) != 0) host_failures++;
    if (host_failures) fprintf(stderr, "%d check(s) failed\n", host_failures);
    return host_failures ? 1 : 0;
}
