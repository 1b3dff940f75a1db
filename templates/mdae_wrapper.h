/* mdae_fmu: interface of the generic FMI 2.0 wrapper (fmi2Functions.c, fmi2CoSimulation.c,
 * mdae_runtime.c, mdae_sparse.c) with the generated model code. Hand-written, shipped
 * unchanged in every FMU. It does not include the model's config.h: the wrapper reads the
 * model's sizes at run time (mdae_info), so its object files do not depend on the model.
 *
 * All numerical state of an instance lives in ModelData and its block of value arrays, so
 * fmi2GetFMUstate/SetFMUstate/Serialize are plain copies of both. Nothing here is global or
 * static mutable: two instances in one process are independent. See docs/fmi-mapping.md. */
#ifndef MDAE_WRAPPER_H
#define MDAE_WRAPPER_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "fmi2Functions.h"

#define MDAE_DIM(n) ((n) > 0 ? (n) : 1)

/* the Co-Simulation integrator (SUNDIALS CVODE) is compiled in with -DMDAE_WITH_SUNDIALS
   (mdae_fmu.fmu.cosim, sources/buildDescription.xml) */
#ifndef MDAE_CS_INTEGRATOR
#ifdef MDAE_WITH_SUNDIALS
#define MDAE_CS_INTEGRATOR 1
#else
#define MDAE_CS_INTEGRATOR 0
#endif
#endif

/* user-function failure messages (mdae_functions.c, generated) */
extern const char *const mdae_fn_messages[];
extern const int mdae_fn_nmessages;

typedef struct {
    double time;
    double homotopy;           /* lambda of homotopy(actual, simplified): 1 except while the
                                  initial system is continued from 0 (mdae_runtime.c) */
    int mode;                  /* current mode index (single-mode models: 0) */
    int initial;               /* value of initial(): 1 during initialization */
    int terminate;             /* terminate() was executed */
    int drift;                 /* projection requested by fmi2CompletedIntegratorStep */
    int cascade;               /* multimode: 1 + mode change in progress (0: none) */
    int instant;               /* ... and the index of its next nonstandard instant */
    int changes;               /* multimode: mode changes since the event iteration last
                                  settled (bounded: MDAE_MAX_MODE_CHANGES, model_modes.c) */
    int fn_error;              /* a user function failed: 1 + index in mdae_fn_messages */
    char fn_text[256];         /* ... with this message when it has values (String(...)) */
    int fn_depth;              /* user-function calls in progress (0 between FMI calls) */
    long long fn_work;         /* loop iterations left to the call from the model in progress
                                  (mdae_functions.c: MDAE_FN_BUDGET per call) */
    /* The value arrays, sized by mdae_info: they point into one block of mdae_data_size()
     * bytes (ModelInstance.values, laid out by mdae_data_bind), so that the wrapper is
     * compiled without the model's sizes. An FMU state copies the fields above and that
     * block, never these pointers. */
    double *r;                 /* Reals: model variables, then derivative instances (nr) */
    double *pr;                /* left limits pre() of the Reals (nr) */
    double *smp_next;          /* per sample() operator (nsample) */
    double *smp_last;
    int *i;                    /* Integers (ni) */
    int *pi;
    int *b;                    /* Booleans (0/1) (nb) */
    int *pb;
    int *rel;                  /* frozen relations (state and time events) (nrel) */
    int *cond;                 /* when-conditions at the current instant (nwhen) */
    int *pcond;                /* ... at the previous instant */
    int *smp;                  /* sample() active at this instant (nsample) */
    unsigned char *rset;       /* Reals the host set before initialization ended: their start
                                  no longer follows the parameters (nr) */
} ModelData;

/* The sizes and settings of the model, defined by the generated mdae_info.c from config.h:
 * the only way the generic wrapper (fmi2Functions.c, fmi2CoSimulation.c, mdae_runtime.c,
 * mdae_sparse.c) learns them, so its object files are the same for every model
 * (mdae_fmu/fmu/object_cache.py compiles them once). */
typedef struct {
    const char *guid;
    int nr, ni, nb, nx, nz;    /* Real, Integer, Boolean slots, states, event indicators */
    int nrel, nwhen, nsample;  /* frozen relations, when-branches, sample() operators */
    int nassign, nwloop, ncons; /* when-equations, Real when-variables solved with the
                                  continuous equations, consistency equations */
    int nblocks, ninit_rows, ninit_cols;
    int homotopy;              /* 1: the equations use homotopy() */
    int assert_initial;        /* 1: an assertion reads initial() */
    int work_size, iwork_fire, iwork_size;   /* solver scratch */
    int newton_maxit, max_event_iterations;
    int model_exchange, co_simulation;       /* interfaces compiled in */
    double drift_tol, drift_tol_max, drift_per_tolerance, init_tol, default_tolerance;
    /* the Co-Simulation integrator's linear solver (mdae_fmu.fmu.cosim.choose_linear_solver):
       entry k of CVODE's vector is state cs_state_order[k]; cs_band_upper/lower >= 0: a band
       solver of these half-widths for every mode, -1: dense (cs_band_probe = 0) or the band
       of the current mode measured at each integrator start (cs_band_probe = 1) */
    int cs_band_upper, cs_band_lower, cs_band_probe;
    const int *cs_state_order;
} MdaeModelInfo;
extern const MdaeModelInfo mdae_info;

/* The value arrays of ModelData in one block: the double arrays first, then the int arrays,
 * then the bytes, each array at least one element long (MDAE_DIM), so that every array is
 * aligned for its type in a block from malloc. MDAE_DATA_SIZE: the bytes of such a block;
 * mdae_data_layout: the pointers of d into one. The wrapper passes mdae_info's sizes
 * (mdae_data_size, mdae_data_bind in mdae_runtime.c); a host that includes config.h (tests)
 * may pass its constants. */
#define MDAE_DATA_SIZE(nr, ni, nb, nrel, nwhen, nsample) \
    (sizeof(double) * (size_t)(2 * MDAE_DIM(nr) + 2 * MDAE_DIM(nsample)) + \
     sizeof(int) * (size_t)(2 * MDAE_DIM(ni) + 2 * MDAE_DIM(nb) + MDAE_DIM(nrel) + \
                            2 * MDAE_DIM(nwhen) + MDAE_DIM(nsample)) + (size_t)MDAE_DIM(nr))

static inline void mdae_data_layout(ModelData *d, void *block, int nr, int ni, int nb,
                                    int nrel, int nwhen, int nsample)
{
    double *x = (double *)block;
    int *k = (int *)(x + 2 * MDAE_DIM(nr) + 2 * MDAE_DIM(nsample));
    d->r = x;
    d->pr = x + MDAE_DIM(nr);
    d->smp_next = x + 2 * MDAE_DIM(nr);
    d->smp_last = d->smp_next + MDAE_DIM(nsample);
    d->i = k;
    d->pi = d->i + MDAE_DIM(ni);
    d->b = d->pi + MDAE_DIM(ni);
    d->pb = d->b + MDAE_DIM(nb);
    d->rel = d->pb + MDAE_DIM(nb);
    d->cond = d->rel + MDAE_DIM(nrel);
    d->pcond = d->cond + MDAE_DIM(nwhen);
    d->smp = d->pcond + MDAE_DIM(nwhen);
    d->rset = (unsigned char *)(d->smp + MDAE_DIM(nsample));
}

/* the block of this model (mdae_info's sizes) */
size_t mdae_data_size(void);
void mdae_data_bind(ModelData *d, void *block);


typedef enum {
    MDAE_START_AND_END = 1 << 0,
    MDAE_INSTANTIATED = 1 << 1,
    MDAE_INITIALIZATION = 1 << 2,
    MDAE_EVENT = 1 << 3,
    MDAE_CONTINUOUS = 1 << 4,
    MDAE_TERMINATED = 1 << 5,
    MDAE_ERROR = 1 << 6,
    MDAE_FATAL = 1 << 7
} MdaeState;

/* log categories, in the order of <LogCategories> in modelDescription.xml */
enum { LOG_EVENTS = 0, LOG_WARNING, LOG_DISCARD, LOG_ERROR, LOG_FATAL, LOG_PENDING, LOG_ALL,
       MDAE_NLOG };

/* What the host holds as fmi2Component: a small block whose magic number is MDAE_MAGIC while
 * the instance lives and is cleared by fmi2FreeInstance, so that a second fmi2FreeInstance, or
 * any call with a freed or foreign pointer, is recognized by mdae_instance and ignored or
 * answered with fmi2Error instead of crashing (docs/fmi-mapping.md, "Instance handles"). The
 * block is small so that the allocator keeps it mapped after free (a large ModelInstance may
 * be returned to the operating system by free, and reading it would fault). */
#define MDAE_MAGIC 0x6d646165u            /* "mdae" */
typedef struct MdaeHandle {
    unsigned int magic;
    struct ModelInstance *inst;
} MdaeHandle;

typedef struct ModelInstance {
    MdaeHandle *handle;        /* the host's fmi2Component (handle->inst == this) */
    char *instanceName;
    fmi2CallbackFunctions cb;
    int logOn;
    int logCat[MDAE_NLOG];
    MdaeState state;
    int dirty;                 /* values must be recomputed before the next read */
    int eventIterations;       /* calls of fmi2NewDiscreteStates in this Event Mode */
    long refused;              /* calls refused in the Error state since it was entered
                                  (mdae_refuse_call: the first is logged, then the count) */
    double startTime, stopTime, tolerance;
    int stopTimeDefined;
    double *work;              /* solver scratch (not part of the FMU state) */
    int *iwork;
    double *xbuf;              /* states before an event instant */
    int fmuType;               /* fmi2ModelExchange or fmi2CoSimulation */
    void *cs;                  /* Co-Simulation driver (fmi2CoSimulation.c); not FMU state */
    char **str;                /* String parameters set by the host, NULL: the start value
                                  (mdae_nstrings entries; fixed after initialization, so not
                                  part of the FMU state) */
    struct MdaeSparseLU **sparse; /* the kept factorizations of the sparse blocks
                                  (mdae_sparse.c; nsparse entries, NULL until first used): a
                                  cache keyed by the matrix values, not part of the FMU state */
    int nsparse;
    void *values;              /* the value arrays of d (mdae_data_size() bytes) */
    ModelData d;
} ModelInstance;

/* ---- FMU states (fmi2GetFMUstate ... fmi2DeSerializeFMUstate; docs/fmi-mapping.md, "FMU
 * states") ----
 * An FMU state is one flat block, a header then a body, and its serialized form is the same
 * bytes (for the same binary: the layout is this compiler's). Every state the FMU is given,
 * in memory or as bytes, is checked whole before any of it is used: the header (magic, format
 * version, model GUID, size, interface), a checksum of the body, then every flag, index and
 * counter of the body against its range (fmi2Functions.c, check_state; the mode fields by the
 * model's mdae_check_mode_data). A state that fails is refused with fmi2Error and a message
 * saying what is wrong; the instance keeps its values. */
#define MDAE_STATE_MAGIC "mdaeFMUs"     /* the first 8 bytes (no terminating NUL) */
#define MDAE_STATE_VERSION 3u           /* 1: unchecked (before issue 25); 2: the value arrays inside ModelData */
#define MDAE_STATE_GUID_LEN 64          /* the GUID, zero-padded */

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t fmuType;          /* fmi2ModelExchange or fmi2CoSimulation: the instance's */
    uint64_t size;             /* bytes of the whole state, header included */
    uint64_t checksum;         /* mdae_checksum of the body */
    char guid[MDAE_STATE_GUID_LEN];
} MdaeStateHeader;

typedef struct {
    MdaeState state;           /* the state machine's */
    int dirty;
    double startTime, stopTime, tolerance;
    int stopTimeDefined;
    ModelData d;
} MdaeStateBody;

/* the value arrays follow the body (mdae_data_size() bytes, at (MdaeSnapshot *)s + 1); the
   pointers in body.d are 0 */
typedef struct {
    MdaeStateHeader header;
    MdaeStateBody body;
} MdaeSnapshot;

/* 64-bit FNV-1a of n bytes: flipped bits, shifted or foreign bytes change it except with a
 * probability of about 2^-64. It detects accidents, not attacks (anyone can recompute it),
 * which is why every field is checked as well. */
static inline uint64_t mdae_checksum(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t k;
    for (k = 0; k < n; k++) {
        h ^= b[k];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* String parameters and constants (model_strings.c, mdae_fmu/fmu/strings.py) */
extern const unsigned int mdae_nstrings;
extern const char *const mdae_string_start[];
extern const unsigned char mdae_string_settable[];

/* flags of one event instant, or of a whole event iteration (fmi2EventInfo without the enum
 * types, plus what the runtime needs to report an iteration that does not settle) */
typedef struct {
    int newDiscreteStatesNeeded;
    int terminateSimulation;
    int nominalsChanged;
    int valuesChanged;         /* reported valuesOfContinuousStatesChanged: states moved, or the
                                  equations defining the derivatives changed (docs/fmi-mapping.md,
                                  "Events in third-party hosts") */
    int statesChanged;         /* a state value changed (bitwise) */
    int nextEventTimeDefined;
    double nextEventTime;
    int modeBefore, modeAfter; /* d.mode before and after the instant */
    int firedWhen;             /* index of the first when-branch that fired, -1 if none */
} MdaeEventFlags;

/* the live instance behind the host's pointer, NULL for NULL, freed or foreign pointers
   (fmi2Functions.c) */
ModelInstance *mdae_instance(fmi2Component c);

/* ---- runtime (mdae_runtime.c) ---- */
void mdae_log(ModelInstance *inst, int category, fmi2Status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int mdae_lu_factor(int n, double *A, int *perm);
void mdae_lu_solve(int n, const double *LU, const int *perm, double *b);
int mdae_linear_block(ModelInstance *inst, int n, const int *u,
                      void (*system)(const ModelData *, double *, double *), int block);
int mdae_newton_block(ModelInstance *inst, int n, const int *u,
                      void (*residual)(const ModelData *, double *),
                      void (*jacobian)(const ModelData *, double *), int block);
int mdae_linear_singular(ModelInstance *inst, int n, const int *u, int block);
int mdae_store_solution(ModelInstance *inst, int n, const int *u, const double *x, int block);
double mdae_norm_inf(int n, const double *v);
double mdae_newton_step_size(int n, const double *dx, const double *x);
double mdae_newton_damped(ModelData *d, int n, const int *u,
                          void (*residual)(const ModelData *, double *), const double *x0,
                          const double *dx, double *F, double fn);
int mdae_singular_step(int n, const double *J, const double *F, double *M, double *dx,
                       int *perm);
/* A sparse block (mdae_sparse.c): the matrix entries the generated code computes, entry k at
 * (row[k], col[k]), all distinct; `cache` numbers the block's kept factorization in
 * inst->sparse. */
typedef struct {
    int n, nnz;
    const int *row, *col;
    int cache;
} MdaeSparsePattern;
int mdae_sparse_linear_block(ModelInstance *inst, const MdaeSparsePattern *p, const int *u,
                             void (*system)(const ModelData *, double *, double *), int block);
int mdae_sparse_newton_block(ModelInstance *inst, const MdaeSparsePattern *p, const int *u,
                             void (*residual)(const ModelData *, double *),
                             void (*jacobian)(const ModelData *, double *), int block);
void mdae_sparse_free(ModelInstance *inst);
int mdae_gauss_newton(ModelInstance *inst, int m, int n, const int *u,
                      int (*residual)(ModelInstance *, double *), double tol,
                      double accept, int maxit, const char *what);
int mdae_gauss_newton_rows(ModelInstance *inst, int m, int n, const int *u,
                           int (*residual)(ModelInstance *, double *), double tol,
                           double accept, int maxit, const char *what,
                           const char *const *names);
/* The restart system of one nonstandard instant with d replaced by delta (RR-9334 §11.3,
 * mdae_fmu.impulse.numeric.delta_form): n equations F(z, delta) = 0 with Jacobian J (row-major),
 * the nt right limits T(z, delta) the instant computes, and the nm values M(T) whose
 * convergence decides (the right limits at the end of the cascade). */
typedef struct {
    int n, nt, nm;
    void (*guess)(const ModelData *d, double *z);
    void (*F)(const ModelData *d, const double *z, double h, double *F);
    void (*J)(const ModelData *d, const double *z, double h, double *J);
    void (*T)(const ModelData *d, const double *z, double h, double *T);
    void (*M)(const ModelData *d, const double *T, double *M);
} MdaeDeltaSystem;
int mdae_delta_scheme(ModelInstance *inst, const MdaeDeltaSystem *sys, double *z, double *T,
                      double *Tprev, double *M, double *Mprev, const char *change, int instant);
int mdae_event_update(ModelInstance *inst, MdaeEventFlags *ev);
int mdae_event_iteration(ModelInstance *inst, MdaeEventFlags *ev, int *instants);
int mdae_initialize_instance(ModelInstance *inst);
/* A call the state machine does not allow in the current state: fmi2Error, logged, and the
 * instance goes to the Error state; in the Error state only the first refused call is logged,
 * then the count (mdae_runtime.c). */
void mdae_refuse_call(ModelInstance *inst, const char *f);
const char *mdae_state_name(MdaeState state);
/* a user function failed since the last call: log its message, clear, return 1 (else 0) */
int mdae_function_failed(ModelInstance *inst);

/* ---- Co-Simulation driver (fmi2CoSimulation.c; no-ops without MDAE_CO_SIMULATION) ---- */
int mdae_cs_instantiate(ModelInstance *inst);
void mdae_cs_free(ModelInstance *inst);
int mdae_cs_exit_initialization(ModelInstance *inst);
void mdae_cs_state_changed(ModelInstance *inst);

/* ---- generated model code (model.c) ---- */
extern const char *const mdae_block_labels[];
extern const char *const mdae_real_names[];
/* per Real value reference: 0 constant, 1 parameter/exact, 2 calculated, 3 state,
   4 continuous input, 5 other (computed), 6 discrete input (Integer and Boolean inputs, a
   Real input declared discrete: not settable in Continuous-Time Mode, FMI 2.0.5 §3.2.3) */
#define MDAE_IS_INPUT(kind) ((kind) == 4 || (kind) == 6)
extern const unsigned char mdae_real_kind[];
extern const unsigned char mdae_int_kind[];
extern const unsigned char mdae_bool_kind[];
void mdae_set_start_values(ModelData *d);
int mdae_calculate_parameters(ModelInstance *inst);
int mdae_initial_assignments(ModelInstance *inst);
int mdae_compute(ModelInstance *inst);
int mdae_mode_step(ModelInstance *inst, int *more);
/* after a mode change's restart: relations and the discrete equations it did not read */
int mdae_settle_discrete(ModelInstance *inst);
const char *mdae_mode_label(int m);
/* the mode fields of a state given to the FMU (mode, cascade, instant, changes, the Integer
 * slots the mode logic indexes with) against their ranges: 0, or 1 with what is wrong in
 * why (n bytes). running: the state computes in the current mode (Event or Continuous-Time
 * Mode after initialization); otherwise the mode logic recomputes these fields first. */
int mdae_check_mode_data(const ModelData *d, int running, char *why, size_t n);
void mdae_get_states(const ModelData *d, double *x);
void mdae_set_states(ModelData *d, const double *x);
void mdae_get_derivatives(const ModelData *d, double *dx);
void mdae_get_nominals(double *nominals);
void mdae_event_indicators(const ModelData *d, double *z);
int mdae_update_relations(ModelData *d);
/* 1 if the current values change a frozen relation: the event iteration goes on */
int mdae_relations_pending(ModelData *d);
int mdae_update_samples(ModelData *d);
void mdae_when_conditions(ModelData *d);
int mdae_when_assign(ModelInstance *inst, const int *fire);
int mdae_when_actions(ModelInstance *inst, const int *fire);
int mdae_when_equations(ModelInstance *inst, int *fire);
int mdae_discrete_changed(const ModelData *d);
double mdae_next_time_event(const ModelData *d);
int mdae_init_residual(ModelInstance *inst, double *F);
int mdae_check_assertions(ModelInstance *inst);
double mdae_drift(const ModelData *d);
double mdae_drift_tolerance(const ModelInstance *inst);
int mdae_project(ModelInstance *inst);
extern const int mdae_init_unknowns[];
extern const int mdae_init_blocks[];
extern const char *const mdae_init_row_names[];
extern const char *const mdae_init_row_labels[];
extern const int mdae_state_slots[];
extern const unsigned char mdae_when_initial[];
extern const unsigned char mdae_when_recheck[];
extern const int mdae_when_loop[];

#endif
