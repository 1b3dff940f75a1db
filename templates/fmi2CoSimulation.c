/* mdae_fmu: the FMI 2.0 Co-Simulation interface. Hand-written and identical in every FMU.
 *
 * The communication step is integrated by SUNDIALS CVODE (BDF, Newton with a direct linear
 * solver and a difference-quotient Jacobian) through the same generated model code as the
 * Model Exchange wrapper (mdae_compute, mdae_get_derivatives, mdae_event_indicators).
 * The linear solver follows the structure (mdae_info.cs_*, chosen by the exporter,
 * mdae_fmu.fmu.cosim.choose_linear_solver; docs/cosimulation.md, "Linear solver"): dense for
 * few states; for more, CVODE's vector holds the states in an order that makes the Jacobian
 * banded (reverse Cuthill-McKee) and a band solver is used, of the half-widths of every
 * mode's dependencies when these are narrow, else of the current mode's Jacobian measured at
 * each start of the integrator (cs_probe_band), dense when that band is wide.
 * Events are handled as a Model Exchange host handles them (FMI 2.0 §3.2.2 pseudo-code,
 * docs/cosimulation.md):
 *   - state events are located by CVODE's rootfinding on the event indicators (CVodeRootInit),
 *   - time events are hit exactly (CVodeSetStopTime at the next event time),
 *   - at an event the runtime's event iteration (mdae_event_iteration, the function behind
 *     fmi2NewDiscreteStates) runs instants until no new discrete states are needed, so mode
 *     changes and restart cascades happen inside the communication step, then CVODE restarts,
 *   - index-reduced modes are projected onto their consistency equations when the drift
 *     exceeds mdae_drift_tolerance (mdae_drift/mdae_project, as fmi2CompletedIntegratorStep does),
 *     checked at every communication point and at every event.
 * Inputs are piecewise constant over a step: a change of an input between two steps is an
 * event at the start of the next step (event iteration, then a CVODE restart).
 *
 * Rollback: fmi2GetFMUstate and fmi2SetFMUstate both mark the next step as a restart point
 * (event iteration + fresh CVODE start from ModelData), so a step repeated after
 * fmi2SetFMUstate gives bit-identical results.
 *
 * Without MDAE_CS_INTEGRATOR (config.h: MDAE_CO_SIMULATION and MDAE_WITH_SUNDIALS, which
 * mdae-fmu's build defines; Model Exchange only FMUs, or a rebuild from sources/ without
 * SUNDIALS) the CS functions fail cleanly and nothing of SUNDIALS is compiled in. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mdae_wrapper.h"


#if MDAE_CS_INTEGRATOR
#include <cvode/cvode.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_band.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_band.h>
#include <sunmatrix/sunmatrix_dense.h>
#endif

#define CS_STATES (MDAE_CONTINUOUS | MDAE_TERMINATED | MDAE_ERROR)

static fmi2Status cs_fail(ModelInstance *inst, const char *f, const char *what)
{
    mdae_log(inst, LOG_ERROR, fmi2Error, "%s: %s", f, what);
    if (inst->state != MDAE_FATAL) inst->state = MDAE_ERROR;
    return fmi2Error;
}

static int cs_allowed(ModelInstance *inst, const char *f, int mask)
{
    if (!inst) return 0;
    if (inst->fmuType != fmi2CoSimulation) {
        cs_fail(inst, f, "not a Co-Simulation instance");
        return 0;
    }
    if (inst->state & mask) return 1;
    mdae_refuse_call(inst, f);    /* in the Error state: logged once, then counted */
    return 0;
}

#if MDAE_CS_INTEGRATOR

#define NY MDAE_DIM(mdae_info.nx)  /* CVODE needs one state: a dummy x' = 0 if NX == 0 */
/* relative tolerance when fmi2SetupExperiment defines none: the model's DefaultExperiment
   tolerance (compiled in by the exporter, mdae_model.h) */
#define DEFAULT_RTOL (mdae_info.default_tolerance)
#define MAX_EVENTS_AT_ONE_TIME 1000

typedef struct {
    SUNContext ctx;
    void *cvode;                 /* NULL until the first step */
    N_Vector y, atol;
    SUNMatrix A;
    SUNLinearSolver LS;
    int ordered;                 /* CVODE's vector is in mdae_info.cs_state_order */
    int mu, ml;                  /* half-widths of the band solver in use; -1: dense */
    double *xs, *fx, *f0, *f1;   /* states and derivatives in the model's order; probe */
    int *rootsfound;
    int nin_r, nin_i, nin_b;     /* inputs, by type */
    int *in_r, *in_i, *in_b;     /* their slots */
    double *last_r;              /* input values at the last (re)start */
    int *last_i, *last_b;
    int restart;                 /* the next step starts with an event iteration + restart */
    int running;                 /* CVODE holds the solution from the current ModelData */
    double rtol, hmax;
    double lastSuccessfulTime;
    long nsteps, nevents, nrestarts;
} CsData;

/* ---- CVODE callbacks: the model code behind the ME functions ---------------------------- */

/* CVODE's vector y into the states of ModelData (fmi2SetContinuousStates), entry k being
 * state cs_state_order[k] when the band solver's order is on */
static void cs_put_states(ModelInstance *inst, const double *y)
{
    CsData *cs = (CsData *)inst->cs;
    int k;
    if (mdae_info.nx == 0) return;
    if (!cs->ordered) {
        mdae_set_states(&inst->d, y);
        return;
    }
    for (k = 0; k < mdae_info.nx; k++) cs->xs[mdae_info.cs_state_order[k]] = y[k];
    mdae_set_states(&inst->d, cs->xs);
}

/* the states of ModelData into CVODE's vector y (fmi2GetContinuousStates, same order) */
static void cs_take_states(ModelInstance *inst, double *y)
{
    CsData *cs = (CsData *)inst->cs;
    int k;
    if (mdae_info.nx == 0) {
        y[0] = 0.0;
        return;
    }
    if (!cs->ordered) {
        mdae_get_states(&inst->d, y);
        return;
    }
    mdae_get_states(&inst->d, cs->xs);
    for (k = 0; k < mdae_info.nx; k++) y[k] = cs->xs[mdae_info.cs_state_order[k]];
}

/* the derivatives (fmi2GetDerivatives) or the nominals of the states, in CVODE's order */
static void cs_take_vector(ModelInstance *inst, double *v, int nominals)
{
    CsData *cs = (CsData *)inst->cs;
    double *x = cs->ordered ? cs->fx : v;
    int k;
    if (mdae_info.nx == 0) {
        v[0] = nominals ? 1.0 : 0.0;
        return;
    }
    if (nominals) mdae_get_nominals(x);
    else mdae_get_derivatives(&inst->d, x);
    if (cs->ordered)
        for (k = 0; k < mdae_info.nx; k++) v[k] = x[mdae_info.cs_state_order[k]];
}

/* x' = f(t, x) of the current (frozen) mode at y (CVODE's order) into dy: fmi2SetTime +
 * fmi2SetContinuousStates + fmi2GetDerivatives. 1 when a block failed or a derivative is not
 * finite. */
static int cs_eval(ModelInstance *inst, double t, const double *y, double *dy)
{
    int k;
    inst->d.time = t;
    cs_put_states(inst, y);
    inst->dirty = 1;
    if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    inst->dirty = 0;
    cs_take_vector(inst, dy, 0);
    for (k = 0; k < NY; k++)
        if (!isfinite(dy[k])) return 1;
    return 0;
}

/* CVODE's right-hand side: a failing block is a recoverable error (CVODE retries a smaller
 * step) */
static int cs_rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    return cs_eval((ModelInstance *)user, t, N_VGetArrayPointer(y), N_VGetArrayPointer(ydot));
}

/* the event indicators (fmi2GetEventIndicators) as CVODE root functions */
static int cs_roots(sunrealtype t, N_Vector y, sunrealtype *g, void *user)
{
    ModelInstance *inst = (ModelInstance *)user;
    inst->d.time = t;
    cs_put_states(inst, N_VGetArrayPointer(y));
    inst->dirty = 1;
    if (mdae_compute(inst) || mdae_function_failed(inst)) return -1;
    inst->dirty = 0;
    mdae_event_indicators(&inst->d, g);
    return 0;
}

/* CVODE's messages go to the FMI logger (never to stderr) */
static void cs_cvode_message(int code, const char *module, const char *function, char *msg,
                             void *user)
{
    ModelInstance *inst = (ModelInstance *)user;
    if (code < 0)
        mdae_log(inst, LOG_ERROR, fmi2Error, "%s %s: %s", module, function, msg);
    else
        mdae_log(inst, LOG_WARNING, fmi2Warning, "%s %s: %s", module, function, msg);
}

/* ---- instance life cycle ------------------------------------------------------------------ */

static void *cs_alloc(ModelInstance *inst, size_t n, size_t size)
{
    if (n == 0) n = 1;
    if (inst->cb.allocateMemory) return inst->cb.allocateMemory(n, size);
    return calloc(n, size);
}

static void cs_dealloc(ModelInstance *inst, void *p)
{
    if (!p) return;
    if (inst->cb.freeMemory) inst->cb.freeMemory(p);
    else free(p);
}

static void cs_destroy_solver(CsData *cs)
{
    if (cs->cvode) CVodeFree(&cs->cvode);
    if (cs->LS) SUNLinSolFree(cs->LS);
    if (cs->A) SUNMatDestroy(cs->A);
    cs->cvode = NULL;
    cs->LS = NULL;
    cs->A = NULL;
    cs->mu = cs->ml = -1;
    cs->running = 0;
}

/* Allocate the driver of a Co-Simulation instance (fmi2Instantiate). 0 on success. */
int mdae_cs_instantiate(ModelInstance *inst)
{
    CsData *cs;
    int k;
    if (inst->fmuType != fmi2CoSimulation) return 0;
    cs = (CsData *)cs_alloc(inst, 1, sizeof(CsData));
    if (!cs) return 1;
    memset(cs, 0, sizeof *cs);
    inst->cs = cs;
    for (k = 0; k < mdae_info.nr; k++) cs->nin_r += MDAE_IS_INPUT(mdae_real_kind[k]);
    for (k = 0; k < mdae_info.ni; k++) cs->nin_i += MDAE_IS_INPUT(mdae_int_kind[k]);
    for (k = 0; k < mdae_info.nb; k++) cs->nin_b += MDAE_IS_INPUT(mdae_bool_kind[k]);
    cs->in_r = (int *)cs_alloc(inst, (size_t)cs->nin_r, sizeof(int));
    cs->in_i = (int *)cs_alloc(inst, (size_t)cs->nin_i, sizeof(int));
    cs->in_b = (int *)cs_alloc(inst, (size_t)cs->nin_b, sizeof(int));
    cs->last_r = (double *)cs_alloc(inst, (size_t)cs->nin_r, sizeof(double));
    cs->last_i = (int *)cs_alloc(inst, (size_t)cs->nin_i, sizeof(int));
    cs->last_b = (int *)cs_alloc(inst, (size_t)cs->nin_b, sizeof(int));
    cs->rootsfound = (int *)cs_alloc(inst, (size_t)MDAE_DIM(mdae_info.nz), sizeof(int));
    cs->xs = (double *)cs_alloc(inst, (size_t)NY, sizeof(double));
    cs->fx = (double *)cs_alloc(inst, (size_t)NY, sizeof(double));
    cs->f0 = (double *)cs_alloc(inst, (size_t)NY, sizeof(double));
    cs->f1 = (double *)cs_alloc(inst, (size_t)NY, sizeof(double));
    if (!cs->in_r || !cs->in_i || !cs->in_b || !cs->last_r || !cs->last_i || !cs->last_b ||
        !cs->rootsfound || !cs->xs || !cs->fx || !cs->f0 || !cs->f1)
        return 1;
    cs->ordered = mdae_info.nx > 0 && (mdae_info.cs_band_upper >= 0 ||
                                       mdae_info.cs_band_probe > 0);
    cs->mu = cs->ml = -1;
    cs->nin_r = cs->nin_i = cs->nin_b = 0;
    for (k = 0; k < mdae_info.nr; k++)
        if (MDAE_IS_INPUT(mdae_real_kind[k])) cs->in_r[cs->nin_r++] = k;
    for (k = 0; k < mdae_info.ni; k++)
        if (MDAE_IS_INPUT(mdae_int_kind[k])) cs->in_i[cs->nin_i++] = k;
    for (k = 0; k < mdae_info.nb; k++)
        if (MDAE_IS_INPUT(mdae_bool_kind[k])) cs->in_b[cs->nin_b++] = k;
    if (SUNContext_Create(NULL, &cs->ctx)) { cs->ctx = NULL; return 1; }
    cs->y = N_VNew_Serial(NY, cs->ctx);
    cs->atol = N_VNew_Serial(NY, cs->ctx);
    if (!cs->y || !cs->atol) return 1;
    cs->restart = 1;
    return 0;
}

/* Release the driver (fmi2FreeInstance; also after a failed fmi2Instantiate). */
void mdae_cs_free(ModelInstance *inst)
{
    CsData *cs = (CsData *)inst->cs;
    if (!cs) return;
    cs_destroy_solver(cs);
    if (cs->y) N_VDestroy(cs->y);
    if (cs->atol) N_VDestroy(cs->atol);
    if (cs->ctx) SUNContext_Free(&cs->ctx);
    cs_dealloc(inst, cs->in_r);
    cs_dealloc(inst, cs->in_i);
    cs_dealloc(inst, cs->in_b);
    cs_dealloc(inst, cs->last_r);
    cs_dealloc(inst, cs->last_i);
    cs_dealloc(inst, cs->last_b);
    cs_dealloc(inst, cs->rootsfound);
    cs_dealloc(inst, cs->xs);
    cs_dealloc(inst, cs->fx);
    cs_dealloc(inst, cs->f0);
    cs_dealloc(inst, cs->f1);
    cs_dealloc(inst, cs);
    inst->cs = NULL;
}

/* ModelData was replaced (fmi2SetFMUstate, fmi2Reset) or captured (fmi2GetFMUstate): the next
 * step restarts the integration from ModelData, with an event iteration first. Doing this on
 * both capture and restore makes a replayed step bit-identical to the original one. */
void mdae_cs_state_changed(ModelInstance *inst)
{
    CsData *cs = (CsData *)inst->cs;
    if (!cs) return;
    cs->restart = 1;
    cs->running = 0;
    if (inst->state == MDAE_INSTANTIATED) cs_destroy_solver(cs);
}

/* ---- one event: the Model Exchange event iteration ------------------------------------- */

/* Values of the current mode at (d.time, states) (a host's fmi2GetReal before the event). */
static int cs_compute(ModelInstance *inst)
{
    inst->dirty = 1;
    if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    inst->dirty = 0;
    return 0;
}

/* One event at d.time: fmi2EnterEventMode, then fmi2NewDiscreteStates, which runs the whole
 * event iteration (mdae_event_iteration; FMI 2.0 §3.2.2; docs/theory.md
 * §11: one nonstandard instant per round, cascades included). CVODE always restarts
 * afterwards. Returns 0, or 1 after logging the failure. *terminate is set when terminate()
 * ran. */
static int cs_event_iteration(ModelInstance *inst, const char *why, int *terminate)
{
    CsData *cs = (CsData *)inst->cs;
    MdaeEventFlags ev;
    int instants = 0;
    *terminate = 0;
    if (cs_compute(inst)) return 1;
    memset(&ev, 0, sizeof ev);
    if (mdae_event_iteration(inst, &ev, &instants)) return 1;
    inst->dirty = 0;
    if (ev.terminateSimulation) *terminate = 1;
    cs->nevents++;
    cs->running = 0;             /* the right-hand side may have changed: restart CVODE */
    mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: %s, %d instant(s), states %s", inst->d.time,
             why, instants, ev.statesChanged ? "changed" : "unchanged");
    return 0;
}

/* ---- CVODE set-up and restart --------------------------------------------------------------- */

/* The half-widths (*mu upper, *ml lower) of the Jacobian of the current mode at CVODE's y,
 * measured: f(y), then f with y_j moved by a difference-quotient increment, column by column
 * (NY + 2 evaluations of f); a derivative that moved at all depends on y_j. Stops early (*mu =
 * *ml = -1: dense) once the band is wider than mdae_info.cs_band_probe; also -1 when f fails.
 * Leaves ModelData at (d.time, y). A dependency whose partial derivative vanishes at y is not
 * seen: the band Jacobian then lacks it, which costs Newton iterations, not accuracy. */
static void cs_probe_band(ModelInstance *inst, int *mu, int *ml)
{
    CsData *cs = (CsData *)inst->cs;
    double *y = N_VGetArrayPointer(cs->y), *atol = N_VGetArrayPointer(cs->atol);
    const double t = inst->d.time, srur = sqrt(DBL_EPSILON);
    int i, j, up = 0, lo = 0, ok = !cs_eval(inst, t, y, cs->f0);
    for (j = 0; ok && j < NY; j++) {
        const double yj = y[j];
        y[j] = yj + srur * fmax(fabs(yj), atol[j] / cs->rtol);
        ok = !cs_eval(inst, t, y, cs->f1);
        y[j] = yj;
        for (i = 0; ok && i < NY; i++) {
            if (cs->f1[i] == cs->f0[i]) continue;
            if (j - i > up) up = j - i;
            if (i - j > lo) lo = i - j;
        }
        ok = ok && up + lo + 1 <= mdae_info.cs_band_probe;
    }
    if (cs_eval(inst, t, y, cs->f0)) ok = 0;
    *mu = ok ? up : -1;
    *ml = ok ? lo : -1;
}

/* Give CVODE a band solver of half-widths mu, ml (dense: -1), unless it has that one. */
static int cs_set_linear_solver(ModelInstance *inst, int mu, int ml)
{
    CsData *cs = (CsData *)inst->cs;
    SUNMatrix A;
    SUNLinearSolver LS;
    if (cs->A && mu == cs->mu && ml == cs->ml) return 0;
    A = mu >= 0 ? SUNBandMatrix(NY, mu, ml, cs->ctx) : SUNDenseMatrix(NY, NY, cs->ctx);
    if (!A) return 1;
    LS = mu >= 0 ? SUNLinSol_Band(cs->y, A, cs->ctx) : SUNLinSol_Dense(cs->y, A, cs->ctx);
    if (!LS || CVodeSetLinearSolver(cs->cvode, LS, A)) {
        if (LS) SUNLinSolFree(LS);
        SUNMatDestroy(A);
        return 1;
    }
    if (cs->LS) SUNLinSolFree(cs->LS);
    if (cs->A) SUNMatDestroy(cs->A);
    cs->A = A;
    cs->LS = LS;
    cs->mu = mu;
    cs->ml = ml;
    if (!cs->ordered)            /* few states: always dense, nothing to say */
        return 0;
    if (mu >= 0)
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: integrator linear solver: band, upper "
                 "half-width %d, lower %d, %d states", inst->d.time, mu, ml, (int)NY);
    else
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: integrator linear solver: dense, %d "
                 "states", inst->d.time, (int)NY);
    return 0;
}

/* Create CVODE (first step) or restart it (CVodeReInit) from ModelData at d.time, with the
 * linear solver of the structure (file header). */
static int cs_start_cvode(ModelInstance *inst)
{
    CsData *cs = (CsData *)inst->cs;
    double *y = N_VGetArrayPointer(cs->y), *atol = N_VGetArrayPointer(cs->atol);
    int k, mu = mdae_info.cs_band_upper, ml = mdae_info.cs_band_lower;
    cs_take_states(inst, y);
    if (!cs->cvode) {
        cs->rtol = inst->tolerance > 0.0 ? inst->tolerance : DEFAULT_RTOL;
        cs_take_vector(inst, atol, 1);
        for (k = 0; k < NY; k++)
            atol[k] = cs->rtol * (atol[k] > 0.0 && isfinite(atol[k]) ? atol[k] : 1.0);
        cs->hmax = inst->stopTimeDefined && inst->stopTime > inst->startTime
                       ? (inst->stopTime - inst->startTime) / 50.0 : 0.0;
        cs->cvode = CVodeCreate(CV_BDF, cs->ctx);
        if (!cs->cvode) goto fail;
        if (CVodeSetErrHandlerFn(cs->cvode, cs_cvode_message, inst)) goto fail;
        if (CVodeInit(cs->cvode, cs_rhs, inst->d.time, cs->y)) goto fail;
        if (CVodeSVtolerances(cs->cvode, cs->rtol, cs->atol)) goto fail;
        if (CVodeSetUserData(cs->cvode, inst)) goto fail;
        if (mdae_info.cs_band_probe <= 0 && cs_set_linear_solver(inst, mu, ml)) goto fail;
        if (mdae_info.nz > 0) {
            if (CVodeRootInit(cs->cvode, mdae_info.nz, cs_roots)) goto fail;
            if (CVodeSetNoInactiveRootWarn(cs->cvode)) goto fail;
        }
        if (cs->hmax > 0.0 && CVodeSetMaxStep(cs->cvode, cs->hmax)) goto fail;
        if (CVodeSetMaxNumSteps(cs->cvode, 100000)) goto fail;
    } else if (CVodeReInit(cs->cvode, inst->d.time, cs->y)) {
        goto fail;
    }
    if (mdae_info.cs_band_probe > 0) {
        /* the band of the mode the integrator starts in */
        cs_probe_band(inst, &mu, &ml);
        if (cs_set_linear_solver(inst, mu, ml)) goto fail;
    }
    for (k = 0; k < cs->nin_r; k++) cs->last_r[k] = inst->d.r[cs->in_r[k]];
    for (k = 0; k < cs->nin_i; k++) cs->last_i[k] = inst->d.i[cs->in_i[k]];
    for (k = 0; k < cs->nin_b; k++) cs->last_b[k] = inst->d.b[cs->in_b[k]];
    cs->running = 1;
    cs->nrestarts++;
    return 0;
fail:
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: the integrator (CVODE) could not be "
             "set up", inst->d.time);
    return 1;
}

static int cs_inputs_changed(const ModelInstance *inst)
{
    const CsData *cs = (const CsData *)inst->cs;
    int k;
    for (k = 0; k < cs->nin_r; k++) if (cs->last_r[k] != inst->d.r[cs->in_r[k]]) return 1;
    for (k = 0; k < cs->nin_i; k++) if (cs->last_i[k] != inst->d.i[cs->in_i[k]]) return 1;
    for (k = 0; k < cs->nin_b; k++) if (cs->last_b[k] != inst->d.b[cs->in_b[k]]) return 1;
    return 0;
}

/* Called by fmi2ExitInitializationMode for CS: the event iteration a ME host runs right after
 * initialization; the integrator starts with the first step. */
int mdae_cs_exit_initialization(ModelInstance *inst)
{
    CsData *cs = (CsData *)inst->cs;
    int terminate;
    if (!cs) return 1;
    cs_destroy_solver(cs);
    cs->nsteps = cs->nevents = cs->nrestarts = 0;
    if (cs_event_iteration(inst, "initial event iteration", &terminate)) return 1;
    cs->restart = 0;
    cs->lastSuccessfulTime = inst->d.time;
    if (cs_start_cvode(inst)) return 1;
    return 0;
}

/* ---- the communication step ------------------------------------------------------------------ */

/* Integrate from d.time to tEnd (algorithm in the file header). Returns fmi2OK, fmi2Discard
 * (terminate() executed at lastSuccessfulTime) or fmi2Error (logged). */
static fmi2Status cs_step(ModelInstance *inst, double tEnd)
{
    CsData *cs = (CsData *)inst->cs;
    ModelData *d = &inst->d;
    int terminate = 0, flag, same_time_events = 0;
    double tlast_event = -INFINITY;

    if (cs->restart || !cs->running || cs_inputs_changed(inst)) {
        /* inputs (or the whole state) changed since the last step: an event now */
        if (cs->restart || cs_inputs_changed(inst)) {
            if (cs_event_iteration(inst, cs->restart ? "restart" : "input event", &terminate))
                return fmi2Error;
            if (terminate) return fmi2Discard;
        }
        if (cs_start_cvode(inst)) return fmi2Error;
        cs->restart = 0;
    }

    while (d->time < tEnd) {
        double t0 = d->time, tnext, tstop, tret;
        const double tiny = 64.0 * DBL_EPSILON * fmax(1.0, fabs(t0));
        int time_event = 0;
        tnext = mdae_next_time_event(d);
        tstop = tEnd;
        if (isfinite(tnext) && tnext <= tEnd + 1e-12 * fmax(1.0, fabs(tEnd))) {
            time_event = 1;
            tstop = fmin(tnext, tEnd);
        }
        if (tstop - t0 <= tiny) {
            /* closer than the integrator can resolve: the states do not move */
            d->time = tstop;
            tret = tstop;
            flag = CV_TSTOP_RETURN;
        } else {
            if (!cs->running && cs_start_cvode(inst)) return fmi2Error;
            if (CVodeSetStopTime(cs->cvode, tstop)) return fmi2Error;
            flag = CVode(cs->cvode, tstop, cs->y, &tret, CV_ONE_STEP);
            if (flag < 0) {
                char *name = CVodeGetReturnFlagName(flag);   /* malloc'ed by SUNDIALS */
                mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: the integrator (CVODE) "
                         "failed with flag %d (%s) in the step to %.17g", t0, flag,
                         name ? name : "?", tEnd);
                free(name);
                return fmi2Error;
            }
            cs->nsteps++;
            d->time = tret;
            cs_put_states(inst, N_VGetArrayPointer(cs->y));
            inst->dirty = 1;
        }
        if (flag == CV_ROOT_RETURN) {
            if (cs_event_iteration(inst, "state event", &terminate)) return fmi2Error;
        } else if (flag == CV_TSTOP_RETURN && time_event) {
            if (tret < tEnd || tnext <= tEnd) d->time = tnext;   /* exactly the event time */
            if (cs_event_iteration(inst, "time event", &terminate)) return fmi2Error;
        } else {
            continue;
        }
        if (terminate) {
            cs->lastSuccessfulTime = d->time;
            return fmi2Discard;
        }
        if (d->time == tlast_event) {
            if (++same_time_events > MAX_EVENTS_AT_ONE_TIME) {
                mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: more than %d events at the "
                         "same time (chattering)", d->time, MAX_EVENTS_AT_ONE_TIME);
                return fmi2Error;
            }
        } else {
            tlast_event = d->time;
            same_time_events = 0;
        }
    }
    d->time = tEnd;
    if (cs_compute(inst)) return fmi2Error;
    /* drift control at the communication point, as fmi2CompletedIntegratorStep does */
    if (mdae_info.ncons > 0 && mdae_drift(d) > mdae_drift_tolerance(inst)) {
        d->drift = 1;
        if (cs_event_iteration(inst, "projection", &terminate)) return fmi2Error;
        if (terminate) {
            cs->lastSuccessfulTime = d->time;
            return fmi2Discard;
        }
    }
    cs->lastSuccessfulTime = tEnd;
    return fmi2OK;
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    ModelInstance *inst = mdae_instance(c);
    CsData *cs;
    double t = currentCommunicationPoint, h = communicationStepSize, tEnd;
    fmi2Status s;
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!cs_allowed(inst, "fmi2DoStep", MDAE_CONTINUOUS)) return fmi2Error;
    cs = (CsData *)inst->cs;
    if (!isfinite(t) || !isfinite(h) || !(h > 0.0))
        return cs_fail(inst, "fmi2DoStep", "the communication step size must be finite and "
                       "positive");
    if (inst->d.terminate)
        return cs_fail(inst, "fmi2DoStep", "the model requested termination (terminate()); "
                       "no further step is possible");
    if (fabs(t - inst->d.time) > 1e-10 * fmax(1.0, fabs(t))) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "fmi2DoStep: currentCommunicationPoint %.17g "
                 "differs from the FMU time %.17g (use fmi2SetFMUstate to go back)", t,
                 inst->d.time);
        inst->state = MDAE_ERROR;
        return fmi2Error;
    }
    tEnd = t + h;
    if (inst->stopTimeDefined && tEnd > inst->stopTime + 1e-10 * fmax(1.0, fabs(tEnd))) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "fmi2DoStep: the step to %.17g goes beyond the "
                 "stop time %.17g", tEnd, inst->stopTime);
        inst->state = MDAE_ERROR;
        return fmi2Error;
    }
    inst->d.time = t;
    s = cs_step(inst, tEnd);
    if (s == fmi2Error) {
        inst->state = MDAE_ERROR;
    } else if (s == fmi2Discard) {
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: terminate() requested, step ends "
                 "early", cs->lastSuccessfulTime);
    }
    return s;
}

fmi2Status fmi2CancelStep(fmi2Component c)
{
    ModelInstance *inst = mdae_instance(c);
    if (!cs_allowed(inst, "fmi2CancelStep", CS_STATES)) return fmi2Error;
    return cs_fail(inst, "fmi2CancelStep", "fmi2DoStep never returns fmi2Pending "
                   "(synchronous FMU): nothing to cancel");
}

/* ---- status ------------------------------------------------------------------------------------ */

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    ModelInstance *inst = mdae_instance(c);
    if (!cs_allowed(inst, "fmi2GetStatus", CS_STATES)) return fmi2Error;
    if (!value) return cs_fail(inst, "fmi2GetStatus", "NULL argument");
    (void)s;
    /* only fmi2DoStepStatus exists for this type, and only after fmi2Pending */
    mdae_log(inst, LOG_DISCARD, fmi2Discard, "fmi2GetStatus: no asynchronous step");
    return fmi2Discard;
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    ModelInstance *inst = mdae_instance(c);
    if (!cs_allowed(inst, "fmi2GetRealStatus", CS_STATES)) return fmi2Error;
    if (!value) return cs_fail(inst, "fmi2GetRealStatus", "NULL argument");
    if (s == fmi2LastSuccessfulTime) {
        *value = ((CsData *)inst->cs)->lastSuccessfulTime;
        return fmi2OK;
    }
    mdae_log(inst, LOG_DISCARD, fmi2Discard, "fmi2GetRealStatus: unknown status kind");
    return fmi2Discard;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    ModelInstance *inst = mdae_instance(c);
    if (!cs_allowed(inst, "fmi2GetIntegerStatus", CS_STATES)) return fmi2Error;
    if (!value) return cs_fail(inst, "fmi2GetIntegerStatus", "NULL argument");
    (void)s;
    mdae_log(inst, LOG_DISCARD, fmi2Discard, "fmi2GetIntegerStatus: no integer status");
    return fmi2Discard;
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    ModelInstance *inst = mdae_instance(c);
    if (!cs_allowed(inst, "fmi2GetBooleanStatus", CS_STATES)) return fmi2Error;
    if (!value) return cs_fail(inst, "fmi2GetBooleanStatus", "NULL argument");
    if (s == fmi2Terminated) {
        *value = inst->d.terminate ? fmi2True : fmi2False;
        return fmi2OK;
    }
    mdae_log(inst, LOG_DISCARD, fmi2Discard, "fmi2GetBooleanStatus: unknown status kind");
    return fmi2Discard;
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    ModelInstance *inst = mdae_instance(c);
    if (!cs_allowed(inst, "fmi2GetStringStatus", CS_STATES)) return fmi2Error;
    if (!value) return cs_fail(inst, "fmi2GetStringStatus", "NULL argument");
    (void)s;
    mdae_log(inst, LOG_DISCARD, fmi2Discard, "fmi2GetStringStatus: no asynchronous step");
    return fmi2Discard;
}

#else /* Model Exchange only, or rebuilt without SUNDIALS: no integrator compiled in */

int mdae_cs_instantiate(ModelInstance *inst) { (void)inst; return 0; }
void mdae_cs_free(ModelInstance *inst) { (void)inst; }
int mdae_cs_exit_initialization(ModelInstance *inst) { (void)inst; return 1; }
void mdae_cs_state_changed(ModelInstance *inst) { (void)inst; }

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior)
{
    (void)t; (void)h; (void)noSetPrior;
    cs_allowed(mdae_instance(c), "fmi2DoStep", 0);
    return fmi2Error;
}

fmi2Status fmi2CancelStep(fmi2Component c)
{
    cs_allowed(mdae_instance(c), "fmi2CancelStep", 0);
    return fmi2Error;
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    (void)s; (void)value;
    cs_allowed(mdae_instance(c), "fmi2GetStatus", 0);
    return fmi2Error;
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    (void)s; (void)value;
    cs_allowed(mdae_instance(c), "fmi2GetRealStatus", 0);
    return fmi2Error;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    (void)s; (void)value;
    cs_allowed(mdae_instance(c), "fmi2GetIntegerStatus", 0);
    return fmi2Error;
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    (void)s; (void)value;
    cs_allowed(mdae_instance(c), "fmi2GetBooleanStatus", 0);
    return fmi2Error;
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    (void)s; (void)value;
    cs_allowed(mdae_instance(c), "fmi2GetStringStatus", 0);
    return fmi2Error;
}

#endif

/* ---- input interpolation and output derivatives: not offered ---------------------------------- */

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                       size_t nvr, const fmi2Integer order[],
                                       const fmi2Real value[])
{
    ModelInstance *inst = mdae_instance(c);
    (void)vr; (void)nvr; (void)order; (void)value;
    if (!cs_allowed(inst, "fmi2SetRealInputDerivatives", ~0)) return fmi2Error;
    return cs_fail(inst, "fmi2SetRealInputDerivatives", "inputs are held constant over a step "
                   "(canInterpolateInputs=false)");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                        size_t nvr, const fmi2Integer order[], fmi2Real value[])
{
    ModelInstance *inst = mdae_instance(c);
    (void)vr; (void)nvr; (void)order; (void)value;
    if (!cs_allowed(inst, "fmi2GetRealOutputDerivatives", ~0)) return fmi2Error;
    return cs_fail(inst, "fmi2GetRealOutputDerivatives", "output derivatives are not provided "
                   "(maxOutputDerivativeOrder=0)");
}
