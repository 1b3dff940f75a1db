/* state_fuzz_host: hands an mdae_fmu FMU corrupted FMU states (issue 25) and checks that each
 * is refused with fmi2Error and a message, that the instance keeps its values, and that the
 * calls a host makes next (fmi2GetDerivatives, fmi2GetEventIndicators, fmi2NewDiscreteStates,
 * fmi2CompletedIntegratorStep; fmi2DoStep in Co-Simulation) neither crash nor loop: meant to
 * run under valgrind memcheck.
 *
 *   state_fuzz_host me|cs BINARY.so OTHER.so OTHER_GUID TRIALS SEED [FLAG_SLOT ...]
 *
 * It is compiled against the FMU's own sources (-I FMU/sources: config.h, mdae_model.h), so it
 * knows the layout of a state (MdaeSnapshot) and its checksum, and can build states that pass
 * the checksum and the header checks but hold a field out of its range. OTHER.so is another
 * mdae_fmu model (its states must be refused as another model's). FLAG_SLOT: the Integer
 * slots the mode logic reads as flags (the guard bits and activity flags of an --implicit
 * FMU, which are not variables of modelDescription.xml): a state must hold them as 0 or 1.
 * The other Integer slots are the model's own Integers, which may hold any value.
 *
 * First a pool of good states: one before initialization, one in Initialization Mode, then
 * states along a run of the model (explicit Euler with its time and state events in Model
 * Exchange, fmi2DoStep in Co-Simulation), and one after fmi2Terminate. Then TRIALS trials,
 * trial k of kind k mod NKINDS (kinds below) from a pseudo-random pool state (xorshift64*,
 * seeded): the state is given as bytes to fmi2DeSerializeFMUstate then (if accepted) to
 * fmi2SetFMUstate, or, for the kinds that keep its size, as a block in memory straight to
 * fmi2SetFMUstate. After each trial: the calls above, then a good state is set again (the way
 * out of the Error state) and must work.
 *
 * Prints per kind "kind NAME trials N refused R accepted A", the first refusal message of each
 * kind ("message NAME: ..."), the most log lines a refused call loop of 100 calls produced
 * ("refused-loop log lines L"), and "failures F". Exit 0 when every check passed, 1 when one
 * failed, 2 on bad usage or when a binary cannot be loaded. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi2_api.h"
#include "mdae_model.h"

typedef Fmi2Api Api;

enum {
    K_VALID,          /* a good state, unchanged: accepted */
    K_BITFLIP,        /* 1 to 16 random bits flipped anywhere: refused (header, checksum) */
    K_TRUNCATE,       /* fewer bytes: refused */
    K_EXTEND,         /* more bytes: refused */
    K_RANDOM,         /* random bytes of a random length, sometimes behind a good magic */
    K_OTHER_MODEL,    /* a state of another model, as it is and with this model's GUID */
    K_OTHER_TYPE,     /* a state of the other interface of the same FMU (both ME and CS) */
    K_FIELD,          /* one field out of its range, checksum recomputed: refused */
    K_INTEGERS,       /* one Integer slot set to 2 or -1, checksum recomputed: refused for the
                         slots of the mode logic, accepted for the model's Integers */
    K_EXTREME_REALS,  /* Reals set to NaN, +-inf, +-1e308, checksum recomputed: accepted, and
                         the calls that follow fail cleanly or work */
    NKINDS
};
static const char *const kind_names[NKINDS] = {
    "valid", "bitflip", "truncate", "extend", "random", "other-model", "other-interface",
    "field", "integers", "extreme-reals"};

#define POOL_MAX 12

/* a whole state: the snapshot, then the value arrays (templates/mdae_wrapper.h) */
#define STATE_SIZE (sizeof(MdaeSnapshot) + MDAE_DATA_BYTES)

typedef struct {
    MdaeSnapshot s;
    double values[MDAE_DATA_BYTES / sizeof(double) + 1];   /* right after s: the arrays */
    double t;                  /* its time */
    int running;               /* in Continuous-Time Mode (ME) or Step Complete (CS) */
} PoolState;

static Api api, other;
static int cs;                 /* fuzzing the Co-Simulation interface */
static fmi2Type fmu_type;
static PoolState pool[POOL_MAX];
static int npool = 0, good = -1;   /* good: a running state before the stop time */
static long log_lines = 0;     /* every message of the FMU */
static char last_error[1024];  /* the last fmi2Error message */
static int flag_slot[MDAE_DIM(MDAE_NI)];
static long trials_of[NKINDS], refused_of[NKINDS], accepted_of[NKINDS];
static int message_shown[NKINDS];
static long worst_loop_lines = 0;
static unsigned long long rng_state;

#define CHECK HOST_CHECK

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    va_list ap;
    (void)env; (void)name; (void)category;
    log_lines++;
    if (status >= fmi2Error) {
        va_start(ap, message);
        vsnprintf(last_error, sizeof last_error, message ? message : "", ap);
        va_end(ap);
    }
}

static const fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};

/* xorshift64* */
static unsigned long long rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static void reseal(MdaeSnapshot *s)
{
    s->header.checksum = mdae_checksum(&s->body, STATE_SIZE - offsetof(MdaeSnapshot, body));
}

/* the value arrays of a whole state, as the pointers of a ModelData */
static ModelData arrays_of(MdaeSnapshot *s)
{
    ModelData a;
    memset(&a, 0, sizeof a);
    mdae_data_layout(&a, s + 1, MDAE_NR, MDAE_NI, MDAE_NB, MDAE_NREL, MDAE_NWHEN, MDAE_NSAMPLE);
    return a;
}

/* ------------------------------------------------------------------ the pool of good states */

static void keep(fmi2Component c, double t, int running)
{
    fmi2FMUstate st = NULL;
    size_t size = 0;
    if (npool == POOL_MAX) return;
    CHECK(api.getFMUstate(c, &st) == fmi2OK, "fmi2GetFMUstate failed at t = %g", t);
    CHECK(api.serializedFMUstateSize(c, st, &size) == fmi2OK && size == STATE_SIZE,
          "fmi2SerializedFMUstateSize: %lu, expected %lu", (unsigned long)size,
          (unsigned long)STATE_SIZE);
    if (size == STATE_SIZE &&
        api.serializeFMUstate(c, st, (fmi2Byte *)&pool[npool].s, size) == fmi2OK) {
        pool[npool].t = t;
        pool[npool].running = running;
        npool++;
    } else {
        CHECK(0, "fmi2SerializeFMUstate failed at t = %g", t);
    }
    api.freeFMUstate(c, &st);
}

static int event_iteration(fmi2Component c, double *next)
{
    fmi2EventInfo ei;
    int it = 0;
    *next = INFINITY;
    do {
        if (api.newDiscreteStates(c, &ei) != fmi2OK || ++it > 100) return -1;
        if (ei.terminateSimulation) return 1;
    } while (ei.newDiscreteStatesNeeded);
    if (ei.nextEventTimeDefined) *next = ei.nextEventTime;
    return 0;
}

/* Model Exchange: explicit Euler from 0 to stop in n steps, time events hit exactly, a state
 * event handled at the end of the step where an indicator changed sign (no location: the
 * states need not be accurate, only reachable); a state kept every n/4 steps. */
static int run_me(fmi2Component c, double stop, int n)
{
    double x[MDAE_DIM(MDAE_NX)], dx[MDAE_DIM(MDAE_NX)], z[MDAE_DIM(MDAE_NZ)],
        zprev[MDAE_DIM(MDAE_NZ)], t = 0.0, h = stop / n, next;
    int k, i;
    fmi2Boolean enter, term;
    if (api.exitInitializationMode(c) != fmi2OK) return -1;
    keep(c, 0.0, 0);                                       /* Event Mode after initialization */
    if (event_iteration(c, &next) != 0) return -1;
    if (api.enterContinuousTimeMode(c) != fmi2OK) return -1;
    if (MDAE_NX && api.getContinuousStates(c, x, MDAE_NX) != fmi2OK) return -1;
    if (MDAE_NZ && api.getEventIndicators(c, zprev, MDAE_NZ) != fmi2OK) return -1;
    keep(c, 0.0, 1);
    for (k = 1; k <= n; k++) {
        double t1 = k * h;
        int event = 0;
        if (next <= t1) { t1 = next; event = 1; }
        if (MDAE_NX && api.getDerivatives(c, dx, MDAE_NX) != fmi2OK) return -1;
        for (i = 0; i < MDAE_NX; i++) x[i] += (t1 - t) * dx[i];
        t = t1;
        if (api.setTime(c, t) != fmi2OK) return -1;
        if (MDAE_NX && api.setContinuousStates(c, x, MDAE_NX) != fmi2OK) return -1;
        if (MDAE_NZ) {
            if (api.getEventIndicators(c, z, MDAE_NZ) != fmi2OK) return -1;
            for (i = 0; i < MDAE_NZ; i++) event |= (z[i] > 0.0) != (zprev[i] > 0.0);
        }
        if (api.completedIntegratorStep(c, fmi2True, &enter, &term) != fmi2OK || term)
            return -1;
        if (event || enter) {
            if (api.enterEventMode(c) != fmi2OK || event_iteration(c, &next) != 0 ||
                api.enterContinuousTimeMode(c) != fmi2OK)
                return -1;
            if (MDAE_NX && api.getContinuousStates(c, x, MDAE_NX) != fmi2OK) return -1;
            if (MDAE_NZ && api.getEventIndicators(c, z, MDAE_NZ) != fmi2OK) return -1;
        }
        if (MDAE_NZ) memcpy(zprev, z, sizeof zprev);
        if (k % (n / 4) == 0) keep(c, t, 1);
    }
    return 0;
}

static int run_cs(fmi2Component c, double stop, int n)
{
    int k;
    double h = stop / n;
    if (api.exitInitializationMode(c) != fmi2OK) return -1;
    keep(c, 0.0, 1);
    for (k = 0; k < n; k++) {
        if (api.doStep(c, k * h, h, fmi2True) != fmi2OK) return -1;
        if ((k + 1) % (n / 4) == 0) keep(c, (k + 1) * h, 1);
    }
    return 0;
}

/* The pool of good states; the instance stays alive for the trials. */
static fmi2Component make_pool(void)
{
    fmi2Component c = api.instantiate("fuzz", fmu_type, MDAE_GUID, NULL, &callbacks, fmi2False,
                                      fmi2False);
    double stop = 10.0;
    int rc, k;
    if (!c) return NULL;
    if (api.setupExperiment(c, fmi2False, 0.0, 0.0, fmi2True, stop) != fmi2OK) return NULL;
    keep(c, 0.0, 0);                                       /* Instantiated */
    if (api.enterInitializationMode(c) != fmi2OK) return NULL;
    keep(c, 0.0, 0);                                       /* Initialization Mode */
    rc = cs ? run_cs(c, stop, 40) : run_me(c, stop, 400);
    CHECK(rc == 0, "the run that collects the pool failed: %s", last_error);
    for (k = npool - 1; k > 0 && (!pool[k].running || pool[k].t >= 0.9 * stop); k--) continue;
    good = k;                                    /* a running state some steps before stop */
    if (api.terminate(c) == fmi2OK) keep(c, stop, 0);      /* Terminated */
    return c;
}

/* A serialized state of OTHER.so (another model): as bytes, and as its in-memory block. */
static fmi2Byte *other_state(const char *guid, size_t *size, fmi2Component *oc,
                             fmi2FMUstate *ostate)
{
    fmi2Byte *bytes;
    *oc = other.instantiate("other", fmi2ModelExchange, guid, NULL, &callbacks, fmi2False,
                            fmi2False);
    if (!*oc || other.setupExperiment(*oc, fmi2False, 0.0, 0.0, fmi2False, 0.0) != fmi2OK ||
        other.enterInitializationMode(*oc) != fmi2OK ||
        other.exitInitializationMode(*oc) != fmi2OK || other.getFMUstate(*oc, ostate) != fmi2OK ||
        other.serializedFMUstateSize(*oc, *ostate, size) != fmi2OK)
        return NULL;
    bytes = (fmi2Byte *)malloc(*size);
    if (bytes && other.serializeFMUstate(*oc, *ostate, bytes, *size) != fmi2OK) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

/* A state of the same FMU through its other interface, NULL when the binary has only one. */
static MdaeSnapshot *other_interface_state(void)
{
    fmi2Type t = cs ? fmi2ModelExchange : fmi2CoSimulation;
    fmi2Component c = api.instantiate("other_type", t, MDAE_GUID, NULL, &callbacks, fmi2False,
                                      fmi2False);
    fmi2FMUstate st = NULL;
    MdaeSnapshot *s = NULL;
    if (!c) return NULL;
    if (api.getFMUstate(c, &st) == fmi2OK) {
        s = (MdaeSnapshot *)malloc(STATE_SIZE);
        if (s && api.serializeFMUstate(c, st, (fmi2Byte *)s, STATE_SIZE) != fmi2OK) {
            free(s);
            s = NULL;
        }
        api.freeFMUstate(c, &st);
    }
    api.freeInstance(c);
    return s;
}

/* ------------------------------------------------------------------ corruptions */

/* One field of a state set out of its range (the checksum is recomputed afterwards). */
static void break_field(MdaeSnapshot *s)
{
    MdaeStateBody *b = &s->body;
    ModelData *d = &b->d, a = arrays_of(s);
    static const int bad_ints[] = {-1, 2, 7, INT_MIN, INT_MAX};
    int v = bad_ints[rnd_below(5)];
    switch (rnd_below(20)) {
    case 0: s->header.version = MDAE_STATE_VERSION + 1 + (uint32_t)rnd_below(100); break;
    case 1: b->state = (MdaeState)(cs ? MDAE_EVENT : (rnd_below(2) ? 0 : 3 << 2)); break;
    case 2: b->dirty = v; break;
    case 3: b->stopTimeDefined = v; break;
    case 4: d->initial = v; break;
    case 5: d->terminate = v; break;
    case 6: d->drift = v; break;
    case 7: d->time = rnd_below(2) ? NAN : INFINITY; break;
    case 8: d->homotopy = rnd_below(2) ? NAN : 2.0; break;
    case 9: d->fn_error = rnd_below(2) ? -1 : (rnd_below(2) ? INT_MAX : 1000000); break;
    case 10: memset(d->fn_text, 'x', sizeof d->fn_text); break;
    case 11: d->mode = rnd_below(2) ? -1 : INT_MAX; break;
    case 12: d->cascade = rnd_below(2) ? -1 : INT_MAX; break;
    case 13: d->instant = -1; break;
    case 14: d->changes = rnd_below(2) ? -1 : INT_MAX; break;
    case 15: a.rset[rnd_below(MDAE_NR)] = (unsigned char)(2 + rnd_below(254)); break;
    case 16:
        if (MDAE_NB) a.b[rnd_below(MDAE_NB)] = v == 1 ? 2 : v;
        else a.pb[0] = 0, b->startTime = NAN;
        break;
    case 17:
        if (MDAE_NREL) a.rel[rnd_below(MDAE_NREL)] = v == 1 ? -1 : v;
        else b->startTime = -INFINITY;
        break;
    case 18:
        if (MDAE_NWHEN) a.pcond[rnd_below(MDAE_NWHEN)] = v == 0 ? 3 : v;
        else if (MDAE_NSAMPLE) a.smp[rnd_below(MDAE_NSAMPLE)] = 5;
        else b->stopTimeDefined = 1, b->stopTime = b->startTime - 1.0;
        break;
    default:
        if (MDAE_NB) a.pb[rnd_below(MDAE_NB)] = 2;
        else d->homotopy = -1.0;
        break;
    }
    reseal(s);
}

static void extreme_reals(MdaeSnapshot *s)
{
    static const double values[] = {NAN, INFINITY, -INFINITY, 1e308, -1e308, 0.0, -0.0,
                                    DBL_MIN, -DBL_MAX};
    int k, n = 1 + (int)rnd_below(4);
    ModelData a = arrays_of(s);
    for (k = 0; k < n; k++) {
        double v = values[rnd_below(sizeof values / sizeof values[0])];
        if (rnd_below(2)) a.r[rnd_below(MDAE_NR)] = v;
        else a.pr[rnd_below(MDAE_NR)] = v;
    }
    reseal(s);
}

/* ------------------------------------------------------------------ one trial */

static void remember_message(int kind)
{
    if (message_shown[kind]) return;
    message_shown[kind] = 1;
    printf("message %s: %s\n", kind_names[kind], last_error);
}

/* What a host calls next, whatever the state: none may crash; in the Error state a refused
 * call loop must not fill the log, and fmi2NewDiscreteStates must ask for termination. */
static void calls_after(fmi2Component c, double t)
{
    double dx[MDAE_DIM(MDAE_NX)], z[MDAE_DIM(MDAE_NZ)];
    fmi2Status st;
    int k;
    if (!cs) {
        fmi2EventInfo ei;
        fmi2Boolean enter = fmi2False, term = fmi2False;
        api.getDerivatives(c, dx, MDAE_NX);
        api.getEventIndicators(c, z, MDAE_NZ);
        api.enterEventMode(c);                   /* from Continuous-Time Mode: an event */
        memset(&ei, 0, sizeof ei);
        ei.newDiscreteStatesNeeded = fmi2True;
        st = api.newDiscreteStates(c, &ei);
        if (st == fmi2Error) {
            long before = log_lines;
            CHECK(ei.terminateSimulation && !ei.newDiscreteStatesNeeded,
                  "fmi2NewDiscreteStates returned fmi2Error without asking for termination");
            for (k = 0; k < 100; k++) {
                ei.newDiscreteStatesNeeded = fmi2True;
                st = api.newDiscreteStates(c, &ei);
                CHECK(st == fmi2Error && ei.terminateSimulation && !ei.newDiscreteStatesNeeded,
                      "fmi2NewDiscreteStates in the Error state: status %d, terminate %d",
                      (int)st, (int)ei.terminateSimulation);
            }
            if (log_lines - before > worst_loop_lines) worst_loop_lines = log_lines - before;
        }
        api.enterContinuousTimeMode(c);
        st = api.completedIntegratorStep(c, fmi2True, &enter, &term);
        if (st == fmi2Error) CHECK(term, "fmi2CompletedIntegratorStep failed without "
                                         "terminateSimulation");
    } else {
        st = api.doStep(c, t, 0.01, fmi2False);
        if (st == fmi2Error) {
            long before = log_lines;
            for (k = 0; k < 100; k++) api.doStep(c, t, 0.01, fmi2False);
            if (log_lines - before > worst_loop_lines) worst_loop_lines = log_lines - before;
        }
    }
}

/* Set the good running state of the pool (the way out of the Error state), and check that
 * the instance works again. */
static void set_good(fmi2Component c)
{
    fmi2FMUstate st = NULL;
    CHECK(api.deSerializeFMUstate(c, (const fmi2Byte *)&pool[good].s, STATE_SIZE,
                                  &st) == fmi2OK, "a good state was refused: %s", last_error);
    CHECK(api.setFMUstate(c, st) == fmi2OK, "fmi2SetFMUstate of a good state failed: %s",
          last_error);
    api.freeFMUstate(c, &st);
}

static void recover(fmi2Component c)
{
    double dx[MDAE_DIM(MDAE_NX)];
    set_good(c);
    if (!cs) {
        CHECK(api.getDerivatives(c, dx, MDAE_NX) == fmi2OK,
              "the recovered instance does not answer fmi2GetDerivatives: %s", last_error);
    } else {
        CHECK(api.doStep(c, pool[good].t, 0.01, fmi2False) == fmi2OK,
              "the recovered instance does not step: %s", last_error);
        set_good(c);
    }
}

/* Every Real of the instance, to check that a refused state changed nothing. */
static void snapshot_values(fmi2Component c, double *r)
{
    static fmi2ValueReference vr[MDAE_DIM(MDAE_NR)];
    int k;
    for (k = 0; k < MDAE_NR; k++) vr[k] = (fmi2ValueReference)k;
    CHECK(api.getReal(c, vr, MDAE_NR, r) == fmi2OK, "fmi2GetReal failed: %s", last_error);
}

static void trial(fmi2Component c, int kind, const fmi2Byte *other_bytes, size_t other_size,
                  fmi2FMUstate other_mem, const MdaeSnapshot *other_type)
{
    const PoolState *base = &pool[rnd_below((size_t)npool)];
    size_t size = STATE_SIZE, k;
    fmi2Byte *bytes = (fmi2Byte *)malloc(2 * STATE_SIZE + 64 + other_size);
    MdaeSnapshot *s = (MdaeSnapshot *)bytes;
    fmi2FMUstate st = NULL, given;
    fmi2Status status;
    int expect_ok = 0, in_memory = 0, int_slot = -1, n;
    static double before[MDAE_DIM(MDAE_NR)], after[MDAE_DIM(MDAE_NR)];
    memcpy(bytes, &base->s, STATE_SIZE);
    switch (kind) {
    case K_VALID:
        expect_ok = 1;
        in_memory = (int)rnd_below(2);
        break;
    case K_BITFLIP:
        n = 1 + (int)rnd_below(16);
        while (n--) {
            k = rnd_below(size);
            bytes[k] = (fmi2Byte)(bytes[k] ^ (1 << rnd_below(8)));
        }
        if (memcmp(bytes, &base->s, size) == 0) expect_ok = 1;   /* flipped back */
        in_memory = (int)rnd_below(2);
        break;
    case K_TRUNCATE:
        size = rnd_below(size);
        break;
    case K_EXTEND:
        n = 1 + (int)rnd_below(STATE_SIZE);
        for (k = 0; k < (size_t)n; k++) bytes[size + k] = (fmi2Byte)rnd();
        size += (size_t)n;
        break;
    case K_RANDOM:
        size = rnd_below(2 * STATE_SIZE + 64);
        for (k = 0; k < size; k++) bytes[k] = (fmi2Byte)rnd();
        if (size >= 8 && rnd_below(2)) memcpy(bytes, MDAE_STATE_MAGIC, 8);
        break;
    case K_OTHER_MODEL:
        if (rnd_below(2)) {
            size = other_size;
            memcpy(bytes, other_bytes, size);
            /* ... with this model's GUID: then its size tells it apart */
            if (rnd_below(2) && size >= sizeof(MdaeStateHeader) && size != STATE_SIZE)
                memcpy(((MdaeStateHeader *)bytes)->guid, base->s.header.guid,
                       MDAE_STATE_GUID_LEN);
        } else {
            in_memory = 2;                            /* the other FMU's own state block */
        }
        break;
    case K_OTHER_TYPE:
        if (!other_type) { free(bytes); return; }
        memcpy(bytes, other_type, STATE_SIZE);
        in_memory = (int)rnd_below(2);
        break;
    case K_FIELD:
        break_field(s);
        in_memory = (int)rnd_below(2);
        break;
    case K_INTEGERS:
        if (MDAE_NI == 0) { free(bytes); return; }
        int_slot = (int)rnd_below(MDAE_NI);
        arrays_of(s).i[int_slot] = rnd_below(2) ? 2 : -1;
        reseal(s);
        /* a slot of the mode logic must hold 0 or 1: refused; the model's own: accepted */
        expect_ok = !flag_slot[int_slot];
        in_memory = (int)rnd_below(2);
        break;
    case K_EXTREME_REALS:
        extreme_reals(s);
        expect_ok = 1;
        in_memory = (int)rnd_below(2);
        break;
    }
    trials_of[kind]++;
    snapshot_values(c, before);
    last_error[0] = 0;
    if (in_memory) {
        given = in_memory == 2 ? other_mem : (fmi2FMUstate)bytes;
        status = api.setFMUstate(c, given);
    } else {
        status = api.deSerializeFMUstate(c, bytes, size, &st);
        if (status == fmi2OK) {
            status = api.setFMUstate(c, st);
            CHECK(status == fmi2OK, "fmi2SetFMUstate refused a state fmi2DeSerializeFMUstate "
                  "accepted (%s): %s", kind_names[kind], last_error);
            api.freeFMUstate(c, &st);
        }
    }
    if (status == fmi2OK) {
        accepted_of[kind]++;
        CHECK(expect_ok || kind == K_INTEGERS,
              "%s state accepted (trial from the state at t = %g)", kind_names[kind], base->t);
        if (kind == K_INTEGERS)
            CHECK(expect_ok, "Integer slot %d of the mode logic accepted at %d",
                  int_slot, arrays_of(s).i[int_slot]);
    } else {
        refused_of[kind]++;
        CHECK(status == fmi2Error, "%s state: status %d", kind_names[kind], (int)status);
        CHECK(!expect_ok, "%s state refused: %s", kind_names[kind], last_error);
        CHECK(strstr(last_error, "FMU state is refused: ") != NULL,
              "%s state refused without saying why: '%s'", kind_names[kind], last_error);
        remember_message(kind);
        snapshot_values(c, after);
        CHECK(memcmp(before, after, sizeof before) == 0,
              "a refused %s state changed the instance", kind_names[kind]);
    }
    calls_after(c, status == fmi2OK ? base->t : pool[good].t);
    recover(c);
    free(bytes);
}

int main(int argc, char **argv)
{
    fmi2Component c, oc = NULL;
    fmi2FMUstate ostate = NULL;
    fmi2Byte *obytes;
    MdaeSnapshot *otype;
    size_t osize = 0;
    long trials;
    int k;
    if (argc < 7 || (strcmp(argv[1], "me") && strcmp(argv[1], "cs"))) {
        fprintf(stderr, "usage: %s me|cs BINARY.so OTHER.so OTHER_GUID TRIALS SEED "
                "[FLAG_SLOT ...]\n", argv[0]);
        return 2;
    }
    cs = strcmp(argv[1], "cs") == 0;
    fmu_type = cs ? fmi2CoSimulation : fmi2ModelExchange;
    trials = strtol(argv[5], NULL, 10);
    rng_state = strtoull(argv[6], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    for (k = 7; k < argc; k++) {
        int slot = atoi(argv[k]);
        if (slot >= 0 && slot < MDAE_NI) flag_slot[slot] = 1;
    }
    if (fmi2_api_load(&api, argv[2], cs ? FMI2_API_CS : FMI2_API_ME) ||
        fmi2_api_load(&other, argv[3], FMI2_API_ME))
        return 2;
    c = make_pool();
    obytes = other_state(argv[4], &osize, &oc, &ostate);
    otype = other_interface_state();
    if (!c || npool < 4 || !pool[good].running || !obytes) {
        fprintf(stderr, "cannot set up the trials (pool of %d states): %s\n", npool,
                last_error);
        return 1;
    }
    printf("pool %d states of %lu bytes, other model %lu bytes, other interface %s\n", npool,
           (unsigned long)STATE_SIZE, (unsigned long)osize, otype ? "yes" : "no");
    recover(c);
    for (k = 0; k < trials; k++) trial(c, k % NKINDS, obytes, osize, ostate, otype);
    for (k = 0; k < NKINDS; k++)
        printf("kind %s trials %ld refused %ld accepted %ld\n", kind_names[k], trials_of[k],
               refused_of[k], accepted_of[k]);
    printf("refused-loop log lines %ld\n", worst_loop_lines);
    /* "log once, then count": 100 refused calls log the first and the 10th and 100th count */
    CHECK(worst_loop_lines <= 3, "100 refused calls logged %ld lines", worst_loop_lines);
    printf("failures %d\n", host_failures);
    other.freeFMUstate(oc, &ostate);
    other.freeInstance(oc);
    api.freeInstance(c);
    free(obytes);
    free(otype);
    return host_failures ? 1 : 0;
}
