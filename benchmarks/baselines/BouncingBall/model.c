/* BouncingBall: h' = v, v' = g, bounce v := -e v when h <= 0 and v < 0; the ball rests (v = 0,
 * no acceleration) once the rebound speed is below v_min, which ends the Zeno cascade.
 * Event indicator z = h; after a bounce h is set to DBL_MIN so z != 0 at the restart
 * (docs/fmi-testing.md).
 *
 * Fault injection (strict-driver tests):
 *   BUG_VALUES_FLAG    valuesOfContinuousStatesChanged stays false after a bounce
 *   BUG_ZERO_INDICATOR the restart leaves h = 0, so the event indicator is exactly 0
 */
#include "model.h"

const unsigned STATE_VR[NX] = {VR_h, VR_v};
const unsigned DERIVATIVE_VR[NX] = {VR_der_h, VR_der_v};

void model_set_start_values(SimState *s) {
    s->r[VR_h] = 1.0;
    s->r[VR_v] = 0.0;
    s->r[VR_g] = -9.81;
    s->r[VR_e] = 0.7;
    s->r[VR_v_min] = 0.1;
    s->d[D_resting] = 0;
    s->nextEventTimeDefined = 0;
}

const char *model_initialize(SimState *s) {
    if (!(s->r[VR_e] >= 0.0 && s->r[VR_e] <= 1.0)) return "e must be in [0, 1]";
    if (!(s->r[VR_v_min] >= 0.0)) return "v_min must be >= 0";
    s->d[D_resting] = 0;
    return 0;
}

void model_calculate(SimState *s) {
    s->r[VR_der_h] = s->r[VR_v];
    s->r[VR_der_v] = s->d[D_resting] ? 0.0 : s->r[VR_g];
}

void model_event_indicators(const SimState *s, double z[]) {
    z[0] = s->r[VR_h];
}

void model_event_update(SimState *s, EventFlags *f) {
    double h = s->r[VR_h], v = s->r[VR_v];
    if (!s->d[D_resting] && h <= 0.0 && v < 0.0) {
        v = -s->r[VR_e] * v;
#ifdef BUG_ZERO_INDICATOR
        h = 0.0;
#else
        h = DBL_MIN;
#endif
        if (v < s->r[VR_v_min]) {
            v = 0.0;
            s->d[D_resting] = 1;
        }
        s->r[VR_h] = h;
        s->r[VR_v] = v;
#ifdef BUG_VALUES_FLAG
        (void)f;
#else
        f->valuesChanged = 1;
#endif
    }
}

int model_real_settable(unsigned vr, int mode) {
    switch (vr) {
    case VR_h:
    case VR_v:
    case VR_g:
    case VR_v_min:
        return (mode & (ST_Instantiated | ST_InitializationMode)) != 0;
    case VR_e: /* tunable */
        return (mode & (ST_Instantiated | ST_InitializationMode | ST_EventMode)) != 0;
    default:
        return 0;
    }
}

int model_bool_settable(unsigned vr, int mode) {
    (void)vr;
    (void)mode;
    return 0;
}
