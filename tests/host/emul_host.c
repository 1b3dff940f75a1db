/* emul_host: FMI 2.0 Model Exchange hosts that reproduce what two widely used third-party
 * hosts do with events (docs/fmi-mapping.md, "Events in third-party hosts"), plus the
 * instance-handle misuse checks.
 *
 *   emul_host checker <binary.so> <guid> <nx> <nz> <stop> <h> <vrs> [<input>...]
 *   emul_host fmusim  <binary.so> <guid> <nx> <nz> <stop> <rtol> <interval> <opts> <vrs>
 *                     [<input>...]
 *   emul_host magic   <binary.so> <guid>
 *
 * checker: the simulation loop of the FMU Compliance Checker (modelica-tools/
 *   FMUComplianceChecker, src/FMI2/fmi2_me_sim.c): explicit Euler with the fixed step h; a
 *   state event is a sign change z*z_prev < 0 of an event indicator at the END of a step (not
 *   located); time events from nextEventTime; the event iteration keeps only the LAST
 *   eventInfo of the fmi2NewDiscreteStates calls, and fmi2GetContinuousStates is called only
 *   when that last one has valuesOfContinuousStatesChanged (otherwise the host goes on with its
 *   own state vector). Rows after every step.
 * fmusim: the Model Exchange loop of fmusim (modelica/Reference-FMUs, fmusim/FMI2MESimulation.c
 *   and FMICVode.c before their removal): CVODE (BDF, dense, rtol, atol = rtol x nominal) in
 *   CV_NORMAL mode to the next output point, next time event or stop time (it may integrate
 *   past that point internally and interpolate), root finding on the event indicators; at an
 *   event the flags of all fmi2NewDiscreteStates calls are OR-ed and CVODE is re-initialized
 *   (CVodeReInit from fmi2GetContinuousStates) ONLY when valuesOfContinuousStatesChanged or
 *   nominalsOfContinuousStatesChanged was reported; otherwise CVODE continues from its own
 *   history, integrated with the vector field of before the event. <opts>: "c" calls
 *   fmi2CompletedIntegratorStep (needsCompletedIntegratorStep), "t" passes rtol to
 *   fmi2SetupExperiment (fmusim does; FMPy's ME simulation does not, so the FMU then works
 *   with its DefaultExperiment tolerance), "h" limits CVODE's step to 1/50 of the horizon (as
 *   FMPy does; fmusim does not), "-" none. Rows at every output point and
 *   before every event. Time comparisons with fmusim's FMIIsClose (1e-5).
 * magic: fmi2FreeInstance twice and calls with freed and foreign pointers must not crash and
 *   must return fmi2Error (docs/fmi-mapping.md, "Instance handles"). Prints "magic ok".
 *
 * <vrs>: comma-separated value references of the Reals written in each row ("-": none).
 * <input>: TYPE:VR:TIME:VALUE (TYPE R = Real, B = Boolean): the input takes VALUE from TIME on;
 * TIME <= 0 is set before initialization, later changes are external events (the host steps to
 * TIME, enters Event Mode, sets the input, runs the event iteration), in both modes.
 *
 * With the environment variable EMUL_LOG set, the FMU's log (all categories) goes to stderr.
 *
 * Output: CSV rows "t,v1,v2,..." (%.17g) on stdout. Exit 0: run completed; 1: an FMI call
 * failed or a check failed (message on stderr); 2: bad usage or the binary cannot be loaded. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cvode/cvode.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "fmi2_api.h"

typedef struct {
    char type;
    fmi2ValueReference vr;
    double time, value;
} InputChange;

#define MAX_INPUTS 64
#define MAX_VRS 256
static InputChange inputs[MAX_INPUTS];
static int ninputs = 0;
static fmi2ValueReference out_vrs[MAX_VRS];
static size_t nout = 0;
static Fmi2Api api;
static size_t nx, nz;
static fmi2Component comp;

/* a call that must not fail: abandon the run */
#define CALL(call)                                                                      \
    do {                                                                                \
        fmi2Status st_ = (call);                                                        \
        if (st_ > fmi2Warning) {                                                        \
            fprintf(stderr, "FAIL: %s returned %d (line %d)\n", #call, (int)st_, __LINE__); \
            return 1;                                                                   \
        }                                                                               \
    } while (0)


static int parse_vrs(const char *s)
{
    char *end;
    if (strcmp(s, "-") == 0) return 0;
    while (*s) {
        if (nout >= MAX_VRS) return -1;
        out_vrs[nout++] = (fmi2ValueReference)strtoul(s, &end, 10);
        if (end == s) return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static int parse_inputs(int argc, char **argv)
{
    int k;
    for (k = 0; k < argc; k++) {
        InputChange *in;
        unsigned vr;
        if (ninputs >= MAX_INPUTS) return -1;
        in = &inputs[ninputs];
        if (sscanf(argv[k], "%c:%u:%lf:%lf", &in->type, &vr, &in->time, &in->value) != 4 ||
            (in->type != 'R' && in->type != 'B'))
            return -1;
        in->vr = vr;
        ninputs++;
    }
    return 0;
}

/* the earliest input change strictly after t (INFINITY: none) */
static double next_input_time(double t)
{
    double tn = INFINITY;
    int k;
    for (k = 0; k < ninputs; k++)
        if (inputs[k].time > t && inputs[k].time < tn) tn = inputs[k].time;
    return tn;
}

/* set the inputs that change at time t (all with time <= 0 when t <= 0) */
static int apply_inputs(double t, int initial)
{
    int k;
    for (k = 0; k < ninputs; k++) {
        const InputChange *in = &inputs[k];
        if (initial ? in->time <= t : in->time == t) {
            if (in->type == 'R') {
                CALL(api.setReal(comp, &in->vr, 1, &in->value));
            } else {
                fmi2Boolean b = in->value != 0.0;
                CALL(api.setBoolean(comp, &in->vr, 1, &b));
            }
        }
    }
    return 0;
}

static int write_row(double t)
{
    double v[MAX_VRS];
    size_t k;
    if (nout) CALL(api.getReal(comp, out_vrs, nout, v));
    printf("%.17g", t);
    for (k = 0; k < nout; k++) printf(",%.17g", v[k]);
    printf("\n");
    return 0;
}

/* ---------------------------------------------------------------- the checker's loop */

/* fmi2NewDiscreteStates until newDiscreteStatesNeeded is false; *ei holds the LAST call's
   flags only (do_event_iteration of fmi2_me_sim.c) */
static int checker_event_iteration(fmi2EventInfo *ei)
{
    ei->newDiscreteStatesNeeded = fmi2True;
    ei->terminateSimulation = fmi2False;
    while (ei->newDiscreteStatesNeeded && !ei->terminateSimulation)
        CALL(api.newDiscreteStates(comp, ei));
    return 0;
}

static int run_checker(const char *guid, double stop, double h)
{
    double *x = calloc(nx + 1, sizeof(double)), *dx = calloc(nx + 1, sizeof(double));
    double *z = calloc(nz + 1, sizeof(double)), *zprev = calloc(nz + 1, sizeof(double));
    double tcur = 0.0, tnext, hcur;
    fmi2EventInfo ei;
    fmi2Boolean enter = fmi2False, term = fmi2False;
    size_t k;
    comp = api.instantiate("checker", fmi2ModelExchange, guid, NULL, &host_callbacks, fmi2False,
                           fmi2False);
    if (!comp) return 1;
    CALL(apply_inputs(0.0, 1));
    CALL(api.setupExperiment(comp, fmi2False, 0.0, 0.0, fmi2False, 0.0));
    CALL(api.enterInitializationMode(comp));
    CALL(api.exitInitializationMode(comp));
    memset(&ei, 0, sizeof ei);
    if (checker_event_iteration(&ei)) return 1;
    CALL(api.enterContinuousTimeMode(comp));
    if (nx) CALL(api.getContinuousStates(comp, x, nx));
    if (nz) CALL(api.getEventIndicators(comp, zprev, nz));
    if (write_row(tcur)) return 1;
    while (tcur < stop && !ei.terminateSimulation && !term) {
        int crossing = 0, time_event = 0, input_event = 0;
        double tin;
        if (nx) CALL(api.getDerivatives(comp, dx, nx));
        tnext = tcur + h;
        if (tnext > stop - h / 1e16) tnext = stop;
        tin = next_input_time(tcur);
        if (tnext >= tin) {               /* external event: the input data's change time */
            tnext = tin;
            input_event = 1;
        }
        if (ei.nextEventTimeDefined && tnext >= ei.nextEventTime) {
            tnext = ei.nextEventTime;
            time_event = 1;
        }
        hcur = tnext - tcur;
        tcur = tnext;
        CALL(api.setTime(comp, tcur));
        for (k = 0; k < nx; k++) x[k] += hcur * dx[k];
        if (nx) CALL(api.setContinuousStates(comp, x, nx));
        if (nz) CALL(api.getEventIndicators(comp, z, nz));
        for (k = 0; k < nz; k++)
            if (z[k] * zprev[k] < 0) { crossing = 1; break; }
        CALL(api.completedIntegratorStep(comp, fmi2True, &enter, &term));
        if (enter || crossing || time_event || input_event) {
            CALL(api.enterEventMode(comp));
            if (input_event && apply_inputs(tcur, 0)) return 1;
            if (checker_event_iteration(&ei)) return 1;
            if (ei.valuesOfContinuousStatesChanged && nx)
                CALL(api.getContinuousStates(comp, x, nx));
            if (nz) CALL(api.getEventIndicators(comp, zprev, nz));
            CALL(api.enterContinuousTimeMode(comp));
        }
        if (write_row(tcur)) return 1;
    }
    CALL(api.terminate(comp));
    api.freeInstance(comp);
    free(x); free(dx); free(z); free(zprev);
    return 0;
}

/* ---------------------------------------------------------------- fmusim's loop */

static int rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    (void)user;
    if (api.setTime(comp, t) > fmi2Warning) return -1;
    if (nx == 0) {
        NV_Ith_S(ydot, 0) = 0.0;
        return 0;
    }
    if (api.setContinuousStates(comp, N_VGetArrayPointer(y), nx) > fmi2Warning) return -1;
    if (api.getDerivatives(comp, N_VGetArrayPointer(ydot), nx) > fmi2Warning) return -1;
    return 0;
}

static int roots(sunrealtype t, N_Vector y, sunrealtype *g, void *user)
{
    (void)user;
    if (api.setTime(comp, t) > fmi2Warning) return -1;
    if (nx && api.setContinuousStates(comp, N_VGetArrayPointer(y), nx) > fmi2Warning)
        return -1;
    if (api.getEventIndicators(comp, g, nz) > fmi2Warning) return -1;
    return 0;
}

static int is_close(double a, double b)
{
    if (!isfinite(a) || !isfinite(b)) return 0;
    if (fabs(a - b) <= 1e-5) return 1;
    return fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b));
}

static int run_fmusim(const char *guid, double stop, double rtol, double interval,
                      const char *opts)
{
    int cis = strchr(opts, 'c') != NULL, tol_defined = strchr(opts, 't') != NULL;
    int max_step = strchr(opts, 'h') != NULL;
    SUNContext ctx = NULL;
    void *cvode = NULL;
    N_Vector y = NULL, atol = NULL;
    SUNMatrix A = NULL;
    SUNLinearSolver LS = NULL;
    size_t ny = nx > 0 ? nx : 1, k;
    double time = 0.0, tret;
    long nsteps = 0;
    int status = 1;
    fmi2EventInfo ei;
    fmi2Boolean step_event = fmi2False, term = fmi2False;
    comp = api.instantiate("fmusim", fmi2ModelExchange, guid, NULL, &host_callbacks, fmi2False,
                           fmi2False);
    if (!comp) return 1;
    if (apply_inputs(0.0, 1)) return 1;
    if (getenv("EMUL_LOG")) CALL(api.setDebugLogging(comp, fmi2True, 0, NULL));
    CALL(api.setupExperiment(comp, tol_defined ? fmi2True : fmi2False, tol_defined ? rtol : 0.0,
                             0.0, fmi2True, stop));
    CALL(api.enterInitializationMode(comp));
    CALL(api.exitInitializationMode(comp));
    memset(&ei, 0, sizeof ei);
    do {
        CALL(api.newDiscreteStates(comp, &ei));
        if (ei.terminateSimulation) return 0;
    } while (ei.newDiscreteStatesNeeded);
    CALL(api.enterContinuousTimeMode(comp));
    if (SUNContext_Create(NULL, &ctx)) goto done;
    y = N_VNew_Serial((sunindextype)ny, ctx);
    atol = N_VNew_Serial((sunindextype)ny, ctx);
    if (!y || !atol) goto done;
    if (nx) {
        CALL(api.getContinuousStates(comp, N_VGetArrayPointer(y), nx));
        CALL(api.getNominalsOfContinuousStates(comp, N_VGetArrayPointer(atol), nx));
    } else {
        NV_Ith_S(y, 0) = 1.0;
        NV_Ith_S(atol, 0) = 1.0;
    }
    for (k = 0; k < ny; k++) NV_Ith_S(atol, k) *= rtol;
    cvode = CVodeCreate(CV_BDF, ctx);
    if (!cvode || CVodeInit(cvode, rhs, 0.0, y) || CVodeSVtolerances(cvode, rtol, atol))
        goto done;
    A = SUNDenseMatrix((sunindextype)ny, (sunindextype)ny, ctx);
    LS = A ? SUNLinSol_Dense(y, A, ctx) : NULL;
    if (!LS || CVodeSetLinearSolver(cvode, LS, A)) goto done;
    if (CVodeRootInit(cvode, (int)nz, nz ? roots : NULL)) goto done;
    if (CVodeSetMaxNumSteps(cvode, 100000)) goto done;
    if (max_step && CVodeSetMaxStep(cvode, stop / 50.0)) goto done;
    for (;;) {
        double next_regular, next_point, next_input;
        int input_event, time_event, state_event, flag;
        if (write_row(time)) goto done;
        if (time > stop || is_close(time, stop)) break;
        next_regular = (double)(nsteps + 1) * interval;
        next_point = next_regular;
        next_input = next_input_time(time);
        if (next_point > next_input && !is_close(next_point, next_input)) next_point = next_input;
        if (ei.nextEventTimeDefined && next_point > ei.nextEventTime &&
            !is_close(next_point, ei.nextEventTime))
            next_point = ei.nextEventTime;
        if (next_point > stop && !is_close(next_point, stop)) next_point = stop;
        input_event = is_close(next_point, next_input);
        time_event = ei.nextEventTimeDefined && is_close(next_point, ei.nextEventTime);
        if (nx) CALL(api.getContinuousStates(comp, N_VGetArrayPointer(y), nx));
        flag = CVode(cvode, next_point, y, &tret, CV_NORMAL);
        if (flag < 0) {
            fprintf(stderr, "FAIL: CVode returned %d at t = %.17g\n", flag, time);
            goto done;
        }
        state_event = flag == CV_ROOT_RETURN;
        time = tret;
        if (nx) CALL(api.setContinuousStates(comp, N_VGetArrayPointer(y), nx));
        CALL(api.setTime(comp, time));
        if (is_close(time, next_regular)) nsteps++;
        if (cis) {
            CALL(api.completedIntegratorStep(comp, fmi2True, &step_event, &term));
            if (term) break;
        }
        if (input_event || time_event || state_event || step_event) {
            int reset = 0;
            if (write_row(time)) goto done;      /* the values before the event */
            CALL(api.enterEventMode(comp));
            if (input_event && apply_inputs(next_input, 0)) goto done;
            do {
                CALL(api.newDiscreteStates(comp, &ei));
                if (ei.terminateSimulation) break;
                reset |= ei.nominalsOfContinuousStatesChanged ||
                         ei.valuesOfContinuousStatesChanged;
            } while (ei.newDiscreteStatesNeeded);
            if (ei.terminateSimulation) break;
            CALL(api.enterContinuousTimeMode(comp));
            if (reset) {
                if (nx) {
                    CALL(api.getContinuousStates(comp, N_VGetArrayPointer(y), nx));
                    CALL(api.getNominalsOfContinuousStates(comp, N_VGetArrayPointer(atol), nx));
                    for (k = 0; k < nx; k++) NV_Ith_S(atol, k) *= rtol;
                }
                if (CVodeReInit(cvode, time, y)) goto done;
            }
        }
    }
    CALL(api.terminate(comp));
    status = 0;
done:
    if (comp) api.freeInstance(comp);
    if (cvode) CVodeFree(&cvode);
    if (LS) SUNLinSolFree(LS);
    if (A) SUNMatDestroy(A);
    if (y) N_VDestroy(y);
    if (atol) N_VDestroy(atol);
    if (ctx) SUNContext_Free(&ctx);
    return status;
}

/* ---------------------------------------------------------------- instance handles */

#define EXPECT(cond, what)                                  \
    do {                                                    \
        if (!(cond)) {                                      \
            fprintf(stderr, "FAIL: %s\n", what);            \
            failures++;                                     \
        }                                                   \
    } while (0)

static int run_magic(const char *guid)
{
    int failures = 0;
    fmi2Component a, b;
    fmi2EventInfo ei;
    fmi2ValueReference vr = 0;
    double v = 0.0, x[4];
    /* a foreign pointer: host memory that is no FMU instance (zeros, then a pattern) */
    static double foreign[64];
    size_t k;
    a = api.instantiate("a", fmi2ModelExchange, guid, NULL, &host_callbacks, fmi2False, fmi2False);
    b = api.instantiate("b", fmi2ModelExchange, guid, NULL, &host_callbacks, fmi2False, fmi2False);
    EXPECT(a && b, "fmi2Instantiate failed");
    if (!a || !b) return 1;
    for (k = 0; k < 2; k++) {
        if (k == 1) memset(foreign, 0x5a, sizeof foreign);
        EXPECT(api.setupExperiment((fmi2Component)foreign, fmi2False, 0.0, 0.0, fmi2False, 0.0)
               == fmi2Error, "fmi2SetupExperiment on a foreign pointer did not return fmi2Error");
        EXPECT(api.getReal((fmi2Component)foreign, &vr, 1, &v) == fmi2Error,
               "fmi2GetReal on a foreign pointer did not return fmi2Error");
        EXPECT(api.newDiscreteStates((fmi2Component)foreign, &ei) == fmi2Error,
               "fmi2NewDiscreteStates on a foreign pointer did not return fmi2Error");
        api.freeInstance((fmi2Component)foreign);       /* ignored */
    }
    EXPECT(api.setupExperiment(a, fmi2False, 0.0, 0.0, fmi2False, 0.0) == fmi2OK,
           "fmi2SetupExperiment on a live instance failed");
    if (getenv("EMUL_FREED")) {
        /* freed pointers (reads freed memory: not run under valgrind) */
        api.freeInstance(a);
        api.freeInstance(a);                             /* ignored */
        EXPECT(api.enterInitializationMode(a) == fmi2Error,
               "fmi2EnterInitializationMode on a freed instance did not return fmi2Error");
        EXPECT(api.getContinuousStates(a, x, nx) == fmi2Error,
               "fmi2GetContinuousStates on a freed instance did not return fmi2Error");
        EXPECT(api.setDebugLogging(a, fmi2True, 0, NULL) == fmi2Error,
               "fmi2SetDebugLogging on a freed instance did not return fmi2Error");
        EXPECT(api.terminate(a) == fmi2Error,
               "fmi2Terminate on a freed instance did not return fmi2Error");
        if (api.doStep)
            EXPECT(api.doStep(a, 0.0, 0.1, fmi2True) == fmi2Error,
                   "fmi2DoStep on a freed instance did not return fmi2Error");
    } else {
        api.freeInstance(a);
    }
    /* the other instance is untouched */
    EXPECT(api.setupExperiment(b, fmi2False, 0.0, 0.0, fmi2False, 0.0) == fmi2OK &&
           api.enterInitializationMode(b) == fmi2OK && api.exitInitializationMode(b) == fmi2OK,
           "the second instance does not work after the misuse");
    api.freeInstance(b);
    if (failures) return 1;
    printf("magic ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode;
    host_log_all = getenv("EMUL_LOG") != NULL;
    if (argc < 4) {
        fprintf(stderr, "usage: see tests/host/emul_host.c\n");
        return 2;
    }
    mode = argv[1];
    if (fmi2_api_load(&api, argv[2], FMI2_API_ME)) return 2;
    if (strcmp(mode, "magic") == 0) return run_magic(argv[3]);
    if (argc < 9) return 2;
    nx = (size_t)atoi(argv[4]);
    nz = (size_t)atoi(argv[5]);
    if (strcmp(mode, "checker") == 0) {
        if (parse_vrs(argv[8]) || parse_inputs(argc - 9, argv + 9)) return 2;
        return run_checker(argv[3], atof(argv[6]), atof(argv[7]));
    }
    if (strcmp(mode, "fmusim") == 0) {
        if (argc < 11 || parse_vrs(argv[10]) || parse_inputs(argc - 11, argv + 11)) return 2;
        return run_fmusim(argv[3], atof(argv[6]), atof(argv[7]), atof(argv[8]), argv[9]);
    }
    return 2;
}
