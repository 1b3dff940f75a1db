/* mdae_fmu: the model's sizes and settings for the generic wrapper, from the generated
 * config.h (mdae_wrapper.h, MdaeModelInfo). Hand-written, shipped unchanged in every FMU and
 * compiled with the model's code. */
#include "mdae_model.h"

/* the Co-Simulation linear solver (config.h from mdae_fmu.fmu.cosim; default: dense) */
#ifndef MDAE_CS_BAND_UPPER
#define MDAE_CS_BAND_UPPER -1
#define MDAE_CS_BAND_LOWER -1
#define MDAE_CS_BAND_PROBE 0
#define MDAE_CS_STATE_ORDER {0}
#endif
static const int cs_state_order[] = MDAE_CS_STATE_ORDER;

const MdaeModelInfo mdae_info = {
    MDAE_GUID,
    MDAE_NR, MDAE_NI, MDAE_NB, MDAE_NX, MDAE_NZ,
    MDAE_NREL, MDAE_NWHEN, MDAE_NSAMPLE,
    MDAE_NASSIGN, MDAE_NWLOOP, MDAE_NCONS,
    MDAE_NBLOCKS, MDAE_NINIT_ROWS, MDAE_NINIT_COLS,
    MDAE_HOMOTOPY,
    MDAE_ASSERT_INITIAL,
    MDAE_WORK_SIZE, MDAE_IWORK_FIRE, MDAE_IWORK_SIZE,
    MDAE_NEWTON_MAXIT, MDAE_MAX_EVENT_ITERATIONS,
    MDAE_MODEL_EXCHANGE, MDAE_CO_SIMULATION,
    MDAE_DRIFT_TOL, MDAE_DRIFT_TOL_MAX, MDAE_DRIFT_PER_TOLERANCE, MDAE_INIT_TOL,
    MDAE_DEFAULT_TOLERANCE,
    MDAE_CS_BAND_UPPER, MDAE_CS_BAND_LOWER, MDAE_CS_BAND_PROBE, cs_state_order
};
