/* Hand-written FMI 2.0 Model Exchange baselines: the interface between the generic wrapper
 * (fmi2_me_wrapper.c) and one model (<Model>/model.c + <Model>/config.h).
 *
 * Layering in the style of the Reference-FMUs: a generic
 * wrapper owns the FMI state machine, status handling, caching and FMU-state copies; each
 * model only supplies its equations through the hooks below. Everything that must survive
 * fmi2GetFMUstate/fmi2SetFMUstate lives in `SimState` (plain data, memcpy-able).
 */
#ifndef BASELINE_MODEL_H
#define BASELINE_MODEL_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "fmi2Functions.h"
#include "config.h"

#ifndef NX
#error "config.h must define NX (number of continuous states)"
#endif
#ifndef NZ
#error "config.h must define NZ (number of event indicators)"
#endif
#ifndef NREAL
#error "config.h must define NREAL (Real value references are 0..NREAL-1)"
#endif
#ifndef NBOOL
#define NBOOL 0
#endif
#ifndef NDISC
#define NDISC 0
#endif

/* States of the FMI 2.0 ME calling sequence (FMI 2.0.5 §3.2.3), as bit masks. */
typedef enum {
    ST_Instantiated = 1 << 0,
    ST_InitializationMode = 1 << 1,
    ST_EventMode = 1 << 2,
    ST_ContinuousTimeMode = 1 << 3,
    ST_Terminated = 1 << 4,
    ST_Error = 1 << 5
} ModelState;

/* Everything an FMU state snapshot must contain. */
typedef struct {
    double time;
    int mode;                 /* ModelState */
    int dirty;                /* derived values (derivatives, outputs) must be recomputed */
    double r[NREAL];          /* Real variables indexed by value reference */
    int b[NBOOL > 0 ? NBOOL : 1];   /* Boolean variables indexed by value reference */
    int d[NDISC > 0 ? NDISC : 1];   /* hidden discrete states */
    int nextEventTimeDefined;
    double nextEventTime;
} SimState;

/* Flags a model's event update reports (subset of fmi2EventInfo it may set). */
typedef struct {
    int newDiscreteStatesNeeded;
    int terminateSimulation;
    int nominalsChanged;
    int valuesChanged;
} EventFlags;

/* Value references of the continuous states and of their derivatives, in state order. */
extern const unsigned STATE_VR[NX > 0 ? NX : 1];
extern const unsigned DERIVATIVE_VR[NX > 0 ? NX : 1];

/* Model hooks. */
void model_set_start_values(SimState *s);
/* Called by fmi2ExitInitializationMode; returns 0 on success, else a static message. */
const char *model_initialize(SimState *s);
/* Recompute derivatives and other derived Reals from time, states, parameters. */
void model_calculate(SimState *s);
/* Event indicators (after model_calculate). */
void model_event_indicators(const SimState *s, double z[]);
/* One super-dense step of the discrete equations (fmi2NewDiscreteStates). */
void model_event_update(SimState *s, EventFlags *flags);
/* Whether Real `vr` may be set in wrapper state `mode` (FMI 2.0.5 §2.2.7 rules). */
int model_real_settable(unsigned vr, int mode);
/* Whether Boolean `vr` may be set in wrapper state `mode`. */
int model_bool_settable(unsigned vr, int mode);

#endif
