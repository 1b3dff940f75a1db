/* Van der Pol oscillator: x0' = x1, x1' = mu (1 - x0^2) x1 - x0; no events. */
#include "model.h"

const unsigned STATE_VR[NX] = {VR_x0, VR_x1};
const unsigned DERIVATIVE_VR[NX] = {VR_der_x0, VR_der_x1};

void model_set_start_values(SimState *s) {
    s->r[VR_x0] = 2.0;
    s->r[VR_x1] = 0.0;
    s->r[VR_mu] = 1.0;
    s->nextEventTimeDefined = 0;
}

const char *model_initialize(SimState *s) {
    (void)s;
    return 0;
}

void model_calculate(SimState *s) {
    double x0 = s->r[VR_x0], x1 = s->r[VR_x1];
    s->r[VR_der_x0] = x1;
    s->r[VR_der_x1] = s->r[VR_mu] * (1.0 - x0 * x0) * x1 - x0;
}

void model_event_indicators(const SimState *s, double z[]) {
    (void)s;
    (void)z;
}

void model_event_update(SimState *s, EventFlags *f) {
    (void)s;
    (void)f;
}

int model_real_settable(unsigned vr, int mode) {
    if (vr == VR_x0 || vr == VR_x1 || vr == VR_mu)
        return (mode & (ST_Instantiated | ST_InitializationMode)) != 0;
    return 0;
}

int model_bool_settable(unsigned vr, int mode) {
    (void)vr;
    (void)mode;
    return 0;
}
