/* ClutchBasic (docs/theory.md §13.1): two shafts
 *     j1 w1' = -k1 w1 + f1,   j2 w2' = -k2 w2 + f2,   f1 + f2 = 0,
 *     engaged (g):  w1 = w2,      released (not g):  f1 = 0,
 * with g = (t1 <= t < t2) driven by time events. Engaged dynamics in closed form (§2.1.2,
 * Figure 23): a_i = -k_i/j_i w_i, b_i = 1/j_i, f1 = (a2 - a1)/(b1 + b2), w_i' = a_i + b_i f_i.
 * Restart when engaging (conservation of angular momentum, (27) of §2.1.10):
 *     w1+ = w2+ = (j1 w1- + j2 w2-) / (j1 + j2);
 * releasing changes no state.
 *
 * Fault injection (strict-driver tests):
 *   BUG_NEXT_EVENT_STALE  nextEventTime is not advanced after the engagement event
 *   BUG_RESTART_W2        wrong restart at engagement: w1+ = w2+ = w2- (momentum not
 *                         conserved; the regression tests' failing FMU, docs/regression.md)
 */
#include "model.h"

const unsigned STATE_VR[NX] = {VR_w1, VR_w2};
const unsigned DERIVATIVE_VR[NX] = {VR_der_w1, VR_der_w2};

static double time_eps(double t) { return 1e-12 * (1.0 + fabs(t)); }

static int engaged_at(const SimState *s, double t) {
    double e = time_eps(t);
    return t >= s->r[VR_t1] - e && t < s->r[VR_t2] - e;
}

/* Publish the next time event after time t (FMI 2.0.5: republished at every event). */
static void schedule(SimState *s, double t) {
    double e = time_eps(t);
    if (t < s->r[VR_t1] - e) {
        s->nextEventTimeDefined = 1;
        s->nextEventTime = s->r[VR_t1];
    } else if (t < s->r[VR_t2] - e) {
        s->nextEventTimeDefined = 1;
        s->nextEventTime = s->r[VR_t2];
    } else {
        s->nextEventTimeDefined = 0;
        s->nextEventTime = 0.0;
    }
}

/* Restart at engagement; returns whether a state value changed (bitwise). */
static int engage(SimState *s) {
    double j1 = s->r[VR_j1], j2 = s->r[VR_j2];
    double w1 = s->r[VR_w1], w2 = s->r[VR_w2];
#ifdef BUG_RESTART_W2
    double w = w2;
    (void)j1;
    (void)j2;
#else
    double w = (j1 * w1 + j2 * w2) / (j1 + j2);
#endif
    int changed = memcmp(&w, &w1, sizeof w) != 0 || memcmp(&w, &w2, sizeof w) != 0;
    s->r[VR_w1] = w;
    s->r[VR_w2] = w;
    return changed;
}

void model_set_start_values(SimState *s) {
    s->r[VR_w1] = 1.0;
    s->r[VR_w2] = 1.5;
    s->r[VR_j1] = 1.0;
    s->r[VR_j2] = 2.0;
    s->r[VR_k1] = 0.01;
    s->r[VR_k2] = 0.0125;
    s->r[VR_t1] = 5.0;
    s->r[VR_t2] = 7.0;
    s->b[VR_g] = 0;
    s->nextEventTimeDefined = 0;
}

const char *model_initialize(SimState *s) {
    if (!(s->r[VR_j1] > 0.0 && s->r[VR_j2] > 0.0)) return "inertias j1, j2 must be > 0";
    if (!(s->r[VR_t1] <= s->r[VR_t2])) return "t1 must not exceed t2";
    s->b[VR_g] = engaged_at(s, s->time);
    if (s->b[VR_g]) engage(s);
    schedule(s, s->time);
    return 0;
}

void model_calculate(SimState *s) {
    double j1 = s->r[VR_j1], j2 = s->r[VR_j2];
    double a1 = -s->r[VR_k1] / j1 * s->r[VR_w1], b1 = 1.0 / j1;
    double a2 = -s->r[VR_k2] / j2 * s->r[VR_w2], b2 = 1.0 / j2;
    double f1 = s->b[VR_g] ? (a2 - a1) / (b1 + b2) : 0.0;
    s->r[VR_f1] = f1;
    s->r[VR_f2] = -f1;
    s->r[VR_der_w1] = a1 + b1 * f1;
    s->r[VR_der_w2] = a2 - b2 * f1;
}

void model_event_indicators(const SimState *s, double z[]) {
    (void)s;
    (void)z;
}

void model_event_update(SimState *s, EventFlags *f) {
    int g = engaged_at(s, s->time);
    if (g && !s->b[VR_g]) f->valuesChanged = engage(s);
    s->b[VR_g] = g;
#ifdef BUG_NEXT_EVENT_STALE
    if (s->nextEventTimeDefined && s->time < s->r[VR_t1] - time_eps(s->time))
        schedule(s, s->time);
#else
    schedule(s, s->time);
#endif
}

int model_real_settable(unsigned vr, int mode) {
    if (vr == VR_w1 || vr == VR_w2 || vr >= VR_j1)
        return (mode & (ST_Instantiated | ST_InitializationMode)) != 0;
    return 0;
}

int model_bool_settable(unsigned vr, int mode) {
    (void)vr;
    (void)mode;
    return 0;
}
