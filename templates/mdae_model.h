/* mdae_fmu: the header of the generated model code (model.c, model_*.c, mdae_functions.c,
 * mdae_info.c): the generic interface (mdae_wrapper.h) with the model's sizes as constants
 * (the generated config.h) and its user functions. Hand-written, shipped unchanged in every
 * FMU; the generic wrapper includes mdae_wrapper.h only. */
#ifndef MDAE_MODEL_H
#define MDAE_MODEL_H

#include "config.h"
#include "mdae_wrapper.h"

/* interfaces compiled in (config.h may override; docs/cosimulation.md) */
#ifndef MDAE_MODEL_EXCHANGE
#define MDAE_MODEL_EXCHANGE 1
#endif
#ifndef MDAE_CO_SIMULATION
#define MDAE_CO_SIMULATION 0
#endif
/* the DefaultExperiment tolerance (config.h, from the exporter) */
#ifndef MDAE_DEFAULT_TOLERANCE
#define MDAE_DEFAULT_TOLERANCE 1e-6
#endif

/* bytes of the value arrays of this model (mdae_data_size() as a constant) */
#define MDAE_DATA_BYTES MDAE_DATA_SIZE(MDAE_NR, MDAE_NI, MDAE_NB, MDAE_NREL, MDAE_NWHEN, \
                                       MDAE_NSAMPLE)

#include "mdae_functions.h"

/* String(v, minimumLength, leftJustified[, significantDigits]) in an assertion message (of the
   model or of a function), into buf (MDAE_STR_LEN bytes): minimumLength clamped to
   0..MDAE_STR_MAX_WIDTH, significantDigits to 1..MDAE_STR_MAX_DIGITS (config.h, from
   mdae_fmu/codegen/messages.py) */
#define MDAE_STR_LEN 128
static inline int mdae_str_width(double n)
{
    return n >= 0.0 ? (n <= (double)MDAE_STR_MAX_WIDTH ? (int)n : MDAE_STR_MAX_WIDTH) : 0;
}

static inline const char *mdae_str_real(char *buf, double v, double n, double left, double digits)
{
    int p = digits >= 1.0 ? (digits <= (double)MDAE_STR_MAX_DIGITS ? (int)digits
                                                                  : MDAE_STR_MAX_DIGITS) : 1;
    snprintf(buf, MDAE_STR_LEN, left != 0.0 ? "%-*.*g" : "%*.*g", mdae_str_width(n), p, v);
    return buf;
}

static inline const char *mdae_str_integer(char *buf, double v, double n, double left)
{
    snprintf(buf, MDAE_STR_LEN, left != 0.0 ? "%-*.0f" : "%*.0f", mdae_str_width(n), rint(v));
    return buf;
}

static inline const char *mdae_str_boolean(char *buf, double v, double n, double left)
{
    snprintf(buf, MDAE_STR_LEN, left != 0.0 ? "%-*s" : "%*s", mdae_str_width(n),
             v != 0.0 ? "true" : "false");
    return buf;
}


#endif
