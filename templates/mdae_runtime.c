/* mdae_fmu runtime: logging, dense LU, block solvers, Gauss-Newton, one event instant and the
 * initialization driver. Hand-written, shipped unchanged in every FMU (docs/fmi-mapping.md).
 * No global mutable state: everything goes through the ModelInstance. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mdae_wrapper.h"

/* the value arrays of this model (mdae_wrapper.h, MDAE_DATA_SIZE) */
size_t mdae_data_size(void)
{
    return MDAE_DATA_SIZE(mdae_info.nr, mdae_info.ni, mdae_info.nb, mdae_info.nrel,
                          mdae_info.nwhen, mdae_info.nsample);
}

void mdae_data_bind(ModelData *d, void *block)
{
    mdae_data_layout(d, block, mdae_info.nr, mdae_info.ni, mdae_info.nb, mdae_info.nrel,
                     mdae_info.nwhen, mdae_info.nsample);
}

static const char *const mdae_log_names[MDAE_NLOG] = {
    "logEvents", "logStatusWarning", "logStatusDiscard", "logStatusError", "logStatusFatal",
    "logStatusPending", "logAll"};

void mdae_log(ModelInstance *inst, int category, fmi2Status status, const char *fmt, ...)
{
    char buf[2048], msg[4096];
    va_list ap;
    if (!inst || !inst->cb.logger) return;
    /* errors are always reported; the rest only when logging is on for that category */
    if (status < fmi2Error && !(inst->logOn && (inst->logCat[category] || inst->logCat[LOG_ALL])))
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* the logger treats the message as a printf format (FMI 2.0 §2.1.5): double every '%'
       so that text from the model (names, messages) can never act as a conversion */
    {
        size_t i, j = 0;
        for (i = 0; buf[i] && j + 2 < sizeof msg; i++) {
            if (buf[i] == '%') msg[j++] = '%';
            msg[j++] = buf[i];
        }
        msg[j] = 0;
    }
    inst->cb.logger(inst->cb.componentEnvironment, inst->instanceName, status,
                    mdae_log_names[category], msg);
}

/* LU factorization with partial pivoting, in place, row-major. Returns the 1-based column
 * of the first (numerically) zero pivot, 0 on success. */
int mdae_lu_factor(int n, double *A, int *perm)
{
    int i, j, k;
    double scale = 0.0;
    for (i = 0; i < n * n; i++) scale = fmax(scale, fabs(A[i]));
    for (i = 0; i < n; i++) perm[i] = i;
    for (k = 0; k < n; k++) {
        int p = k;
        double best = fabs(A[k * n + k]);
        for (i = k + 1; i < n; i++) {
            double v = fabs(A[i * n + k]);
            if (v > best) { best = v; p = i; }
        }
        if (!(best > 1e-14 * scale) || !isfinite(best)) return k + 1;
        if (p != k) {
            int t = perm[k]; perm[k] = perm[p]; perm[p] = t;
            for (j = 0; j < n; j++) {
                double s = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = s;
            }
        }
        for (i = k + 1; i < n; i++) {
            double f = A[i * n + k] / A[k * n + k];
            A[i * n + k] = f;
            for (j = k + 1; j < n; j++) A[i * n + j] -= f * A[k * n + j];
        }
    }
    return 0;
}

/* Solve LU x = P b in place (b becomes x). */
void mdae_lu_solve(int n, const double *LU, const int *perm, double *b)
{
    int i, j;
    double *y = b + n; /* caller provides 2n doubles */
    for (i = 0; i < n; i++) y[i] = b[perm[i]];
    for (i = 0; i < n; i++)
        for (j = 0; j < i; j++) y[i] -= LU[i * n + j] * y[j];
    for (i = n - 1; i >= 0; i--) {
        for (j = i + 1; j < n; j++) y[i] -= LU[i * n + j] * y[j];
        y[i] /= LU[i * n + i];
    }
    memcpy(b, y, sizeof(double) * (size_t)n);
}

/* A user function (mdae_functions.c) failed: an assert or a loop limit. Its message is
 * logged once and the flag cleared; the caller returns an error (fmi2Error). The index is
 * range-checked here too, although a state given to the FMU is checked when it is set. */
int mdae_function_failed(ModelInstance *inst)
{
    int k = inst->d.fn_error;
    if (!k) return 0;
    inst->d.fn_error = 0;
    inst->d.fn_text[sizeof inst->d.fn_text - 1] = 0;
    mdae_log(inst, LOG_ERROR, fmi2Error, "%s",
             inst->d.fn_text[0] ? inst->d.fn_text
             : k > 0 && k <= mdae_fn_nmessages ? mdae_fn_messages[k - 1]
             : "a user function failed (message index out of range)");
    inst->d.fn_text[0] = 0;
    return 1;
}

const char *mdae_state_name(MdaeState state)
{
    switch (state) {
    case MDAE_START_AND_END: return "the start/end state";
    case MDAE_INSTANTIATED: return "the Instantiated state";
    case MDAE_INITIALIZATION: return "Initialization Mode";
    case MDAE_EVENT: return "Event Mode";
    case MDAE_CONTINUOUS: return "Continuous-Time Mode";
    case MDAE_TERMINATED: return "the Terminated state";
    case MDAE_ERROR: return "the Error state";
    case MDAE_FATAL: return "the Fatal state";
    default: return "an unknown state";
    }
}

/* A call the state machine does not allow (FMI 2.0.5 §3.2.3, §4.2.4): fmi2Error, and the
 * instance goes to the Error state. In the Error state (an earlier call returned fmi2Error)
 * the standard allows only fmi2Reset, fmi2FreeInstance, fmi2SetFMUstate and the functions that
 * read values for debugging (FMI 2.0.5 §2.1.3): the first refused call is logged, the later
 * ones only counted, with the count logged at 10, 100, 1000, ... refusals, so that a host
 * which keeps calling (fmuCheck's event loop calls fmi2NewDiscreteStates for ever) cannot fill
 * its log. fmi2Reset and a successful fmi2SetFMUstate leave the Error state. */
void mdae_refuse_call(ModelInstance *inst, const char *f)
{
    long n;
    if (!(inst->state & (MDAE_ERROR | MDAE_FATAL))) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "%s: illegal call sequence (not allowed in %s)",
                 f, mdae_state_name(inst->state));
        inst->state = MDAE_ERROR;
        inst->refused = 0;
        return;
    }
    n = ++inst->refused;
    if (n == 1) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "%s: illegal call sequence: an earlier call "
                 "returned fmi2Error, and in the Error state only fmi2Reset, fmi2SetFMUstate "
                 "(to a state saved before the error), fmi2FreeInstance and the functions "
                 "that read values for debugging are allowed (FMI 2.0.5 section 2.1.3, "
                 "\"fmi2Error\"); further calls refused in this state are counted, not "
                 "logged", f);
    } else {
        long p = 10;
        while (p < n && p <= 100000000L) p *= 10;
        if (p == n)
            mdae_log(inst, LOG_ERROR, fmi2Error, "%s: %ld calls refused in the Error state "
                     "so far", f, n);
    }
}

static void block_failure(ModelInstance *inst, int block, const char *why)
{
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: block %d [%s]: %s", inst->d.time, block,
             mdae_block_labels[block], why);
}

/* Regularized least-squares step of a numerically singular square system J dx = F (n x n,
 * row-major, read only): dx minimizes |J dx - F|^2 + mu |dx|^2 with mu = 1e-12 times the
 * largest diagonal entry of J^T J (Levenberg-Marquardt). For a consistent system this is its
 * minimum-norm solution to about 1e-12 relative: the unknowns the equations leave free at a
 * singular point (SaturatingInductor's inductance at zero current, a linear block whose
 * coefficients all carry a factor time at t = 0) keep their guess, the others are solved.
 * M (n x n) and dx (2n) are scratch; dx[0..n) is the result. Returns nonzero when J is zero
 * or not finite. */
int mdae_singular_step(int n, const double *J, const double *F, double *M, double *dx,
                       int *perm)
{
    int i, j, k;
    double top = 0.0;
    for (i = 0; i < n; i++) {
        double s = 0.0;
        for (k = 0; k < n; k++) s += J[k * n + i] * F[k];
        dx[i] = s;
        for (j = 0; j < n; j++) {
            double m = 0.0;
            for (k = 0; k < n; k++) m += J[k * n + i] * J[k * n + j];
            M[i * n + j] = m;
        }
        top = fmax(top, M[i * n + i]);
    }
    if (!(top > 0.0) || !isfinite(top)) return 1;
    for (i = 0; i < n; i++) M[i * n + i] += 1e-12 * top;
    if (mdae_lu_factor(n, M, perm)) return 1;
    mdae_lu_solve(n, M, perm, dx);
    return 0;
}

double mdae_norm_inf(int n, const double *v)
{
    double m = 0.0;
    int k;
    for (k = 0; k < n; k++) {
        if (!isfinite(v[k])) return INFINITY;
        m = fmax(m, fabs(v[k]));
    }
    return m;
}

/* Where a singular linear block A u = c has no solution: the unknowns A leaves undetermined, as
 * "; it does not determine a, b (...)". They are the support (entries above 1e-3 of the largest)
 * of a null vector of A, found by three steps of inverse iteration from (1, ..., 1) with the
 * factorization of A^T A + mu I that `mdae_singular_step` left in M, perm; v (2n) is scratch. At
 * most 12 names are listed. In a circuit this is a node whose capacitances are all 0 while the
 * structural analysis, which takes every parameter for nonzero, made its voltage a state: the
 * derivative has only zero coefficients and the node's current balance, which then has to hold
 * without it, is violated (MSL 3.1 HeatingNPN_OrGate, docs/corpus.md). */
static void undetermined_unknowns(int n, const double *M, const int *perm, const int *u,
                                  double *v, char *buf, size_t size)
{
    int k, it, count = 0;
    size_t len;
    double top = 0.0;
    buf[0] = 0;
    for (k = 0; k < n; k++) v[k] = 1.0;
    for (it = 0; it < 3; it++) {
        mdae_lu_solve(n, M, perm, v);
        top = mdae_norm_inf(n, v);
        if (!(top > 0.0) || !isfinite(top)) return;
        for (k = 0; k < n; k++) v[k] /= top;
    }
    for (k = 0; k < n; k++) {
        if (!(fabs(v[k]) > 1e-3)) continue;
        len = strlen(buf);
        if (count++ == 12) { snprintf(buf + len, size - len, ", ..."); break; }
        snprintf(buf + len, size - len, "%s%s", count > 1 ? ", " : "; it does not determine ",
                 mdae_real_names[u[k]]);
    }
    if (!count) return;
    len = strlen(buf);
    snprintf(buf + len, size - len, " (the matrix is singular in them: where a parameter that "
             "multiplies a derivative, such as C in i = C*der(v), an inductance, a mass or a "
             "time constant, is 0, the structural analysis, which takes parameters for nonzero, "
             "has made a state of what the equations then cannot determine; give that parameter "
             "a nonzero value, or remove the element)");
}

/* Store the solution x of a block into its unknowns' slots; 1 (logged) when an entry is not
 * finite. */
int mdae_store_solution(ModelInstance *inst, int n, const int *u, const double *x, int block)
{
    int k;
    for (k = 0; k < n; k++) {
        if (!isfinite(x[k])) {
            block_failure(inst, block, "solution is not finite");
            return 1;
        }
        inst->d.r[u[k]] = x[k];
    }
    return 0;
}

/* A u = c with A numerically singular, A (n x n, row-major) and c in inst->work as
 * `mdae_linear_block` lays them out: solved by `mdae_singular_step`, accepted if the system is
 * consistent (residual below 1e-10 relative to |A| |u| + |c|); otherwise the failure is logged
 * with the unknowns A leaves undetermined. Also the fallback of the sparse blocks
 * (mdae_sparse.c). */
int mdae_linear_singular(ModelInstance *inst, int n, const int *u, int block)
{
    double *A = inst->work, *c = A + n * n, *M = c + 2 * n, *x = M + n * n;
    double res = 0.0, size = 0.0;
    int *perm = inst->iwork, i, k;
    if (mdae_singular_step(n, A, c, M, x, perm)) {
        block_failure(inst, block, "linear system is numerically singular");
        return 1;
    }
    for (i = 0; i < n; i++) {
        double s = -c[i], a = fabs(c[i]);
        for (k = 0; k < n; k++) { s += A[i * n + k] * x[k]; a += fabs(A[i * n + k] * x[k]); }
        res = fmax(res, fabs(s));
        size = fmax(size, a);
    }
    if (!(res <= 1e-10 * size)) {
        char why[900];
        size_t len;
        snprintf(why, sizeof why, "linear system is numerically singular and has no solution");
        len = strlen(why);
        undetermined_unknowns(n, M, perm, u, c, why + len, sizeof why - len);
        block_failure(inst, block, why);
        return 1;
    }
    return mdae_store_solution(inst, n, u, x, block);
}

/* A u = c, assembled by the generated code, solved by LU with partial pivoting; when A is
 * numerically singular, by `mdae_linear_singular`. Scratch: A, c (2n), M, the step (2n). */
int mdae_linear_block(ModelInstance *inst, int n, const int *u,
                      void (*system)(const ModelData *, double *, double *), int block)
{
    double *A = inst->work, *c = A + n * n;
    int *perm = inst->iwork;
    system(&inst->d, A, c);
    if (mdae_lu_factor(n, A, perm)) {
        system(&inst->d, A, c);
        return mdae_linear_singular(inst, n, u, block);
    }
    mdae_lu_solve(n, A, perm, c);
    return mdae_store_solution(inst, n, u, c, block);
}

/* Drift threshold of the step-triggered projection (docs/fmi-mapping.md, "Drift control"):
 * MDAE_DRIFT_PER_TOLERANCE times the relative tolerance of the integration (the host's from
 * fmi2SetupExperiment, else the DefaultExperiment's), kept within [MDAE_DRIFT_TOL,
 * MDAE_DRIFT_TOL_MAX]. Every projection is an event after which the host restarts its
 * integrator, at the cost of about one local error: a threshold below what the integrator
 * itself achieves multiplies the restarts and loses accuracy instead of gaining it. */
double mdae_drift_tolerance(const ModelInstance *inst)
{
    double tol = inst->tolerance > 0.0 ? inst->tolerance : mdae_info.default_tolerance;
    return fmin(mdae_info.drift_tol_max,
                fmax(mdae_info.drift_tol, mdae_info.drift_per_tolerance * tol));
}


/* Scaled size of the Newton step dx at the iterate x (n entries): max |dx_k| / (1 + |x_k|). */
double mdae_newton_step_size(int n, const double *dx, const double *x)
{
    double step = 0.0;
    int k;
    for (k = 0; k < n; k++) step = fmax(step, fabs(dx[k]) / (1.0 + fabs(x[k])));
    return step;
}

/* The damped update of a Newton iteration: u = x0 - lambda dx with lambda = 1, 1/2, 1/4, ...
 * until the residual norm falls below fn (at most 12 halvings); F is the residual at the new
 * iterate, whose norm is returned. */
double mdae_newton_damped(ModelData *d, int n, const int *u,
                          void (*residual)(const ModelData *, double *), const double *x0,
                          const double *dx, double *F, double fn)
{
    int h, k;
    double fnew = fn;
    for (h = 0; h <= 12; h++) {
        double lambda = ldexp(1.0, -h);
        for (k = 0; k < n; k++) d->r[u[k]] = x0[k] - lambda * dx[k];
        residual(d, F);
        fnew = mdae_norm_inf(n, F);
        if (fnew < fn) break;
    }
    return fnew;
}

/* Damped Newton on F(u) = 0 with the analytic Jacobian; the current slot values are the
 * initial guess; where the Jacobian is numerically singular, the step is `mdae_singular_step`.
 * Step halving until the residual norm decreases (at most 12 halvings); at most
 * MDAE_NEWTON_MAXIT iterations. Converged when the residual is exactly zero, or when the
 * scaled step (in the units of the unknowns, `mdae_newton_step_size`) is below 1e-12 with a
 * residual below 1e-8 (1 + |u|). There is no absolute residual threshold: the residual's units
 * are the equation's (an ampere through a megohm), and a shortcut such as |F| <= 1e-14 left
 * the unknowns at their guess for small changes of the inputs, so a difference-quotient
 * Jacobian of the host saw a wrong, piecewise constant derivative (ThyristorBehaviourTest:
 * der(inductor.i) 5e6 instead of 4.9e11 per ampere). Once a step has been taken, the step from
 * the current residual with the last factorization (a chord step, no new Jacobian) decides
 * convergence and is applied; a chord step below 1e-10 that is not half the step before it is
 * the rounding floor of an ill-conditioned block, converged as well.
 * A failed solve puts the initial guess back into the slots, so that the host's retry from a
 * good state starts from the last solution, not from the failed iterate. */
int mdae_newton_block(ModelInstance *inst, int n, const int *u,
                      void (*residual)(const ModelData *, double *),
                      void (*jacobian)(const ModelData *, double *), int block)
{
    ModelData *d = &inst->d;
    double *J = inst->work, *F = J + n * n, *x0 = F + n, *dx = x0 + n; /* dx: 2n */
    double *guess = dx + 2 * n, *M = guess + n;
    int *perm = inst->iwork, it, k, factored = 0;
    double fn, last = INFINITY;
    for (k = 0; k < n; k++) guess[k] = d->r[u[k]];
    residual(d, F);
    fn = mdae_norm_inf(n, F);
    for (it = 0; it < mdae_info.newton_maxit; it++) {
        double step;
        if (fn == 0.0) return 0;
        if (!isfinite(fn)) break;
        for (k = 0; k < n; k++) x0[k] = d->r[u[k]];
        if (factored) {          /* chord step: converged when it is negligible */
            for (k = 0; k < n; k++) dx[k] = F[k];
            mdae_lu_solve(n, J, perm, dx);
            step = mdae_newton_step_size(n, dx, x0);
            if ((step <= 1e-12 || (step <= 1e-10 && step > 0.5 * last))
                && fn <= 1e-8 * (1.0 + mdae_norm_inf(n, x0))) {
                for (k = 0; k < n; k++) d->r[u[k]] = x0[k] - dx[k];
                return 0;
            }
        }
        jacobian(d, J);
        factored = !mdae_lu_factor(n, J, perm);
        if (!factored) {
            memset(J, 0, sizeof(double) * (size_t)(n * n));
            jacobian(d, J);
            if (mdae_singular_step(n, J, F, M, dx, perm)) {
                for (k = 0; k < n; k++) d->r[u[k]] = guess[k];
                block_failure(inst, block, "Newton iteration: Jacobian is numerically singular");
                return 1;
            }
        } else {
            for (k = 0; k < n; k++) dx[k] = F[k];
            mdae_lu_solve(n, J, perm, dx);
        }
        fn = mdae_newton_damped(d, n, u, residual, x0, dx, F, fn);
        last = mdae_newton_step_size(n, dx, x0);
        if (last <= 1e-12 && fn <= 1e-8 * (1.0 + mdae_norm_inf(n, x0))) return 0;
    }
    if (isfinite(fn) && fn <= 1e-10) return 0;
    for (k = 0; k < n; k++) d->r[u[k]] = guess[k];
    {
        char why[160];
        snprintf(why, sizeof why,
                 "Newton iteration did not converge in %d iterations (residual %.3g)",
                 mdae_info.newton_maxit, fn);
        block_failure(inst, block, why);
    }
    return 1;
}

/* Rank deficiency of a Gauss-Newton step: "; no equation depends on a, b at their current
 * values (...)" for the unknowns whose column of the difference Jacobian J (m x n) is zero, ""
 * when every column has an entry. Such an unknown sits where each equation is flat in it
 * (a saturation, sign()), which the start value decides. */
static void flat_unknowns(int m, int n, const double *J, const int *u, char *buf, size_t size)
{
    int i, j, count = 0;
    size_t len;
    buf[0] = 0;
    for (j = 0; j < n; j++) {
        double c = 0.0;
        for (i = 0; i < m; i++) c = fmax(c, fabs(J[i * n + j]));
        if (c > 0.0 || !isfinite(c)) continue;
        len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", count++ ? ", " : "; no equation depends on ",
                 mdae_real_names[u[j]]);
    }
    if (count) {
        len = strlen(buf);
        snprintf(buf + len, size - len, " at %s current value (an equation flat there, such "
                 "as a saturation or sign(): a start value closer to the solution may help)",
                 count > 1 ? "their" : "its");
    }
}

/* The independent rows of the m x n Jacobian J, by modified Gram-Schmidt (two passes) in row
 * order: a row whose component orthogonal to the rows kept before it is at most 1e-6 of its
 * norm (above the error of a forward difference) is dependent, sel[i] = -1; the others get
 * sel[i] = a, their number in order, an orthonormal row Q[a] (n) and the lower triangular
 * R (p x p, row-major) with J_i = sum_k R[a][k] Q[k]. At most p = min(m, n) rows are kept.
 * Returns their number r. The minimum-norm solution of the kept rows' linearization is then
 * dx = Q^T R^-1 F_kept (`gn_rank_step`); a dependent row is a combination of the kept ones
 * (`gn_combination`). */
static int gn_independent_rows(int m, int n, int p, const double *J, double *Q, double *R,
                               double *sel)
{
    int i, k, j, pass, r = 0;
    for (i = 0; i < m; i++) {
        double *w = Q + (size_t)r * n, norm0 = 0.0, norm = 0.0;
        sel[i] = -1.0;
        if (r == p) continue;
        for (j = 0; j < n; j++) {
            w[j] = J[(size_t)i * n + j];
            norm0 += w[j] * w[j];
        }
        if (!(norm0 > 0.0) || !isfinite(norm0)) continue;
        for (k = 0; k <= r; k++) R[r * p + k] = 0.0;
        for (pass = 0; pass < 2; pass++)
            for (k = 0; k < r; k++) {
                const double *q = Q + (size_t)k * n;
                double c = 0.0;
                for (j = 0; j < n; j++) c += q[j] * w[j];
                for (j = 0; j < n; j++) w[j] -= c * q[j];
                R[r * p + k] += c;
            }
        for (j = 0; j < n; j++) norm += w[j] * w[j];
        if (!(sqrt(norm) > 1e-6 * sqrt(norm0))) continue;
        norm = sqrt(norm);
        for (j = 0; j < n; j++) w[j] /= norm;
        R[r * p + r] = norm;
        sel[i] = r++;
    }
    return r;
}

/* The minimum-norm step dx (n) with J_kept dx = F_kept, from `gn_independent_rows`; z (r) is
 * scratch. */
static void gn_rank_step(int m, int n, int p, int r, const double *Q, const double *R,
                         const double *sel, const double *F, double *z, double *dx)
{
    int i, a = 0, k, j;
    for (i = 0; i < m && a < r; i++) {
        double s;
        if (sel[i] < 0.0) continue;
        s = F[i];
        for (k = 0; k < a; k++) s -= R[a * p + k] * z[k];
        z[a] = s / R[a * p + a];
        a++;
    }
    for (j = 0; j < n; j++) dx[j] = 0.0;
    for (a = 0; a < r; a++)
        for (j = 0; j < n; j++) dx[j] += z[a] * Q[(size_t)a * n + j];
}

/* The coefficients w (r) of dependent row i in the kept rows: J_i = sum_a w[a] J_(kept a),
 * from R^T w = Q J_i^T (back substitution). */
static void gn_combination(int n, int p, int r, const double *J, int i, const double *Q,
                           const double *R, double *w)
{
    int a, k, j;
    for (k = 0; k < r; k++) {
        double c = 0.0;
        for (j = 0; j < n; j++) c += Q[(size_t)k * n + j] * J[(size_t)i * n + j];
        w[k] = c;
    }
    for (k = r - 1; k >= 0; k--) {
        for (a = k + 1; a < r; a++) w[k] -= R[a * p + k] * w[a];
        w[k] /= R[k * p + k];
    }
}

/* Whether the linearization at the current point is consistent on dependent row i: its
 * residual F_i is the combination w of the kept rows' residuals, up to 1e-6 of the terms
 * (or ``tol``). w (r) is scratch. */
static int gn_row_consistent(int m, int n, int p, int r, const double *J, int i,
                             const double *Q, const double *R, const double *sel,
                             const double *F, double tol, double *w)
{
    int l;
    double s = F[i], size = fabs(F[i]);
    gn_combination(n, p, r, J, i, Q, R, w);
    for (l = 0; l < m; l++) {
        if (sel[l] < 0.0) continue;
        s -= w[(int)sel[l]] * F[l];
        size += fabs(w[(int)sel[l]] * F[l]);
    }
    return fabs(s) <= fmax(tol, 1e-6 * size);
}

/* The message of a rank-deficient system whose kept rows hold and whose dependent rows do
 * not: each such row (at most 3), with its residual and, when it depends on other rows, the
 * combination of them it is (row names ``names``, or "row k" without). */
static void gn_dependency_text(int m, int n, int p, int r, const double *J, const double *Q,
                               const double *R, const double *sel, const double *F,
                               double tol, const char *const *names, double *w, char *buf,
                               size_t size)
{
    int i, l, shown = 0;
    size_t len;
    buf[0] = 0;
    for (i = 0; i < m && shown < 3; i++) {
        double top = 0.0;
        int terms = 0;
        char own[32];
        if (sel[i] >= 0.0 || !(fabs(F[i]) > tol)) continue;
        len = strlen(buf);
        snprintf(own, sizeof own, "row %d", i + 1);
        snprintf(buf + len, size - len, "%s%s does not hold (residual %.3g)",
                 shown++ ? "; " : "", names ? names[i] : own, F[i]);
        if (r > 0) {
            gn_combination(n, p, r, J, i, Q, R, w);
            for (l = 0; l < r; l++) top = fmax(top, fabs(w[l]));
        }
        if (!(top > 0.0)) {
            len = strlen(buf);
            snprintf(buf + len, size - len, " and depends on no unknown here");
            continue;
        }
        for (l = 0; l < m; l++) {
            double c;
            if (sel[l] < 0.0) continue;
            c = w[(int)sel[l]];
            if (!(fabs(c) > 1e-9 * top)) continue;
            len = strlen(buf);
            snprintf(own, sizeof own, "row %d", l + 1);
            snprintf(buf + len, size - len, "%s%.6g * %s", terms++ ? " + " :
                     " while its linear part is ", c, names ? names[l] : own);
        }
        len = strlen(buf);
        snprintf(buf + len, size - len, "%s", terms > 1 ? ", which hold" : ", which holds");
    }
}

/* Damped Gauss-Newton on m residuals in n unknown Real slots with a forward-difference
 * Jacobian: minimum-norm step J^T (J J^T)^-1 F when m <= n (the solution closest to the
 * guess), least-squares step (J^T J)^-1 J^T F when m > n. Used for the initial system and
 * for the projection onto the consistency equations (docs/fmi-mapping.md). Iterates until
 * the residual is below ``tol`` (at most ``maxit`` iterations); fails unless it is below
 * ``accept`` (>= tol) by then.
 * When the normal matrix is singular (rows that vanish in the current mode, the consistency
 * rows of the other modes of a multimode initial system; unknowns that no row of the current
 * mode reads; redundant rows such as the Kirchhoff laws of a closed loop), the step is the
 * minimum-norm solution of the independent rows (`gn_independent_rows`) and the merit
 * function of the line search is their residual. A dependent row whose linearization
 * contradicts the kept rows' at the first iterate (a singular point of the equations, such as
 * x^2 + y^2 = L^2 at x = y = 0) moves the unknowns off that point once; when the kept rows
 * hold and a dependent row does not, the system is numerically dependent and inconsistent:
 * fmi2Error naming that row and the combination of the other rows it is (``names``: the
 * rows' names, or NULL). */
int mdae_gauss_newton_rows(ModelInstance *inst, int m, int n, const int *u,
                           int (*residual)(ModelInstance *, double *), double tol,
                           double accept, int maxit, const char *what,
                           const char *const *names)
{
    ModelData *d = &inst->d;
    int p = m <= n ? m : n, it, i, j, k, h, moved = 0, r = 0, ranked = 0;
    double *J = inst->work, *F = J + m * n, *F2 = F + m, *x0 = F2 + m, *dx = x0 + n,
           *M = dx + n, *y = M + p * p; /* y: 2p */
    double *Q = y + 2 * p, *sel = Q + (size_t)p * n;  /* Q: p x n, sel: m */
    int *perm = inst->iwork;
    double fn, merit;
    if (residual(inst, F)) return 1;
    fn = mdae_norm_inf(m, F);
    for (it = 0; it < maxit && fn > tol; it++) {
        for (k = 0; k < n; k++) x0[k] = d->r[u[k]];
        for (j = 0; j < n; j++) {
            double hstep = 1.4901161193847656e-08 * fmax(1.0, fabs(x0[j]));
            d->r[u[j]] = x0[j] + hstep;
            if (residual(inst, F2)) return 1;
            d->r[u[j]] = x0[j];
            for (i = 0; i < m; i++) J[i * n + j] = (F2[i] - F[i]) / hstep;
        }
        ranked = 0;
        if (m <= n) {
            for (i = 0; i < m; i++)
                for (j = 0; j < m; j++) {
                    double s = 0.0;
                    for (k = 0; k < n; k++) s += J[i * n + k] * J[j * n + k];
                    M[i * m + j] = s;
                }
            ranked = mdae_lu_factor(m, M, perm) != 0;
            if (!ranked) {
                for (i = 0; i < m; i++) y[i] = F[i];
                mdae_lu_solve(m, M, perm, y);
                for (k = 0; k < n; k++) {
                    double s = 0.0;
                    for (i = 0; i < m; i++) s += J[i * n + k] * y[i];
                    dx[k] = s;
                }
            }
        } else {
            for (i = 0; i < n; i++)
                for (j = 0; j < n; j++) {
                    double s = 0.0;
                    for (k = 0; k < m; k++) s += J[k * n + i] * J[k * n + j];
                    M[i * n + j] = s;
                }
            ranked = mdae_lu_factor(n, M, perm) != 0;
            if (!ranked) {
                for (i = 0; i < n; i++) {
                    double s = 0.0;
                    for (k = 0; k < m; k++) s += J[k * n + i] * F[k];
                    y[i] = s;
                }
                mdae_lu_solve(n, M, perm, y);
                for (k = 0; k < n; k++) dx[k] = y[k];
            }
        }
        merit = fn;
        if (ranked) {
            int consistent = 1;
            double kept = 0.0;
            r = gn_independent_rows(m, n, p, J, Q, M, sel);
            for (i = 0; i < m; i++) {
                if (sel[i] >= 0.0) kept = fmax(kept, fabs(F[i]));
                else if (consistent && fabs(F[i]) > tol)
                    consistent = gn_row_consistent(m, n, p, r, J, i, Q, M, sel, F, tol, y);
            }
            if (!consistent && !moved && it == 0) {
                /* the analysis found no dependency that holds for all values, so the
                 * start values may be a singular point of the equations (x^2 + y^2 = L^2
                 * at x = y = 0): step off it once, by 1e-3 relative, and go on */
                moved = 1;
                for (k = 0; k < n; k++) d->r[u[k]] = x0[k] + 1e-3 * fmax(1.0, fabs(x0[k]));
                if (residual(inst, F)) return 1;
                fn = mdae_norm_inf(m, F);
                mdae_log(inst, LOG_WARNING, fmi2Warning,
                         "t = %.17g: %s: the Jacobian is rank deficient at the start "
                         "values; they are moved by 1e-3 (relative) to leave that point",
                         d->time, what);
                continue;
            }
            if (kept <= tol && !consistent) {
                char flat[512], dep[1536];
                flat_unknowns(m, n, J, u, flat, sizeof flat);
                gn_dependency_text(m, n, p, r, J, Q, M, sel, F, tol, names, y, dep,
                                   sizeof dep);
                mdae_log(inst, LOG_ERROR, fmi2Error,
                         "t = %.17g: %s: the equations are numerically dependent (rank "
                         "deficient Jacobian: rank %d, %d rows) and contradict each other: "
                         "%s%s", d->time, what, r, m, dep, flat);
                return 1;
            }
            gn_rank_step(m, n, p, r, Q, M, sel, F, y, dx);
            merit = kept;
        }
        for (h = 0; h <= 20; h++) {
            double lambda = ldexp(1.0, -h), fnew;
            for (k = 0; k < n; k++) d->r[u[k]] = x0[k] - lambda * dx[k];
            if (residual(inst, F2)) return 1;
            fnew = mdae_norm_inf(m, F2);
            if (ranked) {
                double kept = 0.0;
                for (i = 0; i < m; i++) if (sel[i] >= 0.0) kept = fmax(kept, fabs(F2[i]));
                if (kept < merit || h == 20) {
                    fn = fnew;
                    memcpy(F, F2, sizeof(double) * (size_t)m);
                    break;
                }
            } else if (fnew < fn || h == 20) {
                fn = fnew;
                memcpy(F, F2, sizeof(double) * (size_t)m);
                break;
            }
        }
    }
    if (!(fn <= accept)) {
        mdae_log(inst, LOG_ERROR, fmi2Error,
                 "t = %.17g: %s: Gauss-Newton did not converge (residual %.3g > %.3g)",
                 d->time, what, fn, accept);
        return 1;
    }
    return 0;
}

/* `mdae_gauss_newton_rows` without row names (the messages say "row k"). */
int mdae_gauss_newton(ModelInstance *inst, int m, int n, const int *u,
                      int (*residual)(ModelInstance *, double *), double tol,
                      double accept, int maxit, const char *what)
{
    return mdae_gauss_newton_rows(inst, m, n, u, residual, tol, accept, maxit, what, NULL);
}

/* Damped Newton on the delta-system at a fixed delta, rows equilibrated by their largest
 * Jacobian entry. Converged when the step (relative to each component) is below 1e-10, or
 * when the steps stop shrinking at the rounding floor (the erased constraint's residual, e.g.
 * L^2 - |p|^2, is only known to machine precision, which the 1/delta rows amplify) with step
 * and equilibrated residual below 1e-6. */
static int delta_newton(ModelInstance *inst, const MdaeDeltaSystem *sys, double *z, double h,
                        const char **why)
{
    const ModelData *d = &inst->d;
    const int n = sys->n;
    double *J = inst->work, *F = J + n * n, *s = F + n, *z0 = s + n, *dz = z0 + n; /* dz: 2n */
    double *F2 = dz + 2 * n, last = INFINITY;
    int *perm = inst->iwork, it, i, j, hh, stalls = 0;
    for (it = 0; it < 60; it++) {
        double fn = 0.0, fnew = 0.0, step = 0.0;
        sys->F(d, z, h, F);
        memset(J, 0, sizeof(double) * (size_t)(n * n));
        sys->J(d, z, h, J);
        for (i = 0; i < n; i++) {
            double m = 0.0;
            for (j = 0; j < n; j++) m = fmax(m, fabs(J[i * n + j]));
            if (!(m > 0.0) || !isfinite(m) || !isfinite(F[i])) {
                *why = "its Jacobian has a zero or non-finite row";
                return 1;
            }
            s[i] = m;
            for (j = 0; j < n; j++) J[i * n + j] /= m;
            F[i] /= m;
            fn = fmax(fn, fabs(F[i]));
        }
        if (fn == 0.0) return 0;
        if (mdae_lu_factor(n, J, perm)) {
            *why = "its Jacobian is numerically singular";
            return 1;
        }
        for (i = 0; i < n; i++) { dz[i] = F[i]; z0[i] = z[i]; }
        mdae_lu_solve(n, J, perm, dz);
        for (hh = 0; hh <= 20; hh++) {
            double lambda = ldexp(1.0, -hh);
            fnew = 0.0;
            for (i = 0; i < n; i++) z[i] = z0[i] - lambda * dz[i];
            sys->F(d, z, h, F2);
            for (i = 0; i < n; i++) fnew = fmax(fnew, fabs(F2[i] / s[i]));
            if (fnew < fn || hh == 20 || (fnew <= 1e-13 && hh >= 2)) {
                for (i = 0; i < n; i++)
                    step = fmax(step, fabs(lambda * dz[i]) / (1.0 + fabs(z[i])));
                break;
            }
        }
        for (i = 0; i < n; i++) {
            if (!isfinite(z[i])) {
                *why = "Newton's iterate is not finite";
                return 1;
            }
        }
        if (step <= 1e-10) return 0;
        stalls = step >= 0.5 * last ? stalls + 1 : 0;
        if (stalls >= 3 && step <= 1e-6 && fnew <= 1e-6) return 0;
        last = step;
    }
    *why = "Newton's iteration does not converge";
    return 1;
}

/* Algorithm 14 of RR-9334 (docs/theory.md §9.7) with its safeguards: solve the delta-system
 * for delta = 1e-2, 5e-3, ... (warm starts), stop after two consecutive changes of M below
 * 1e-8 (relative); T then holds the right limits at the last delta. A right limit T that
 * grows like c/delta (the instant's own values diverge while the cascade's converge) means
 * left limits that violate the instant's constraints by c (an event located late): beyond
 * 1e-8 (relative to the cascade's result) a warning is logged. Failure (no solution at some
 * delta, no convergence before delta = 1e-15): fmi2Error naming the mode change, the instant
 * and the time. Buffers: z (n), T and Tprev (nt), M and Mprev (nm). */
int mdae_delta_scheme(ModelInstance *inst, const MdaeDeltaSystem *sys, double *z, double *T,
                      double *Tprev, double *M, double *Mprev, const char *change, int instant)
{
    const ModelData *d = &inst->d;
    double h = 1e-2;
    int it, i, small = 0;
    const char *why = "";
    sys->guess(d, z);
    for (it = 0; h >= 1e-15; it++, h *= 0.5) {
        double diff = 0.0, scale = 1.0;
        if (delta_newton(inst, sys, z, h, &why)) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: mode change %s (instant %d): the "
                     "restart system has no solution near the left limits (delta-scheme at "
                     "delta = %.3g: %s)", d->time, change, instant, h, why);
            return 1;
        }
        sys->T(d, z, h, T);
        sys->M(d, T, M);
        for (i = 0; i < sys->nm; i++) {
            if (!isfinite(M[i])) {
                mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: mode change %s (instant %d): "
                         "the restart system has no finite solution (delta-scheme at delta = "
                         "%.3g)", d->time, change, instant, h);
                return 1;
            }
            scale = fmax(scale, fabs(M[i]));
            if (it > 0) diff = fmax(diff, fabs(M[i] - Mprev[i]));
        }
        if (it > 0 && diff <= 1e-8 * scale) {
            if (++small >= 2) {
                double c = 0.0;
                for (i = 0; i < sys->nt; i++) c = fmax(c, 2.0 * h * fabs(T[i] - Tprev[i]));
                if (!(c <= 1e-8 * scale))
                    mdae_log(inst, LOG_WARNING, fmi2Warning, "t = %.17g: mode change %s "
                             "(instant %d): the instant's right limits grow like %.3g/delta: "
                             "the left limits violate its constraints (event located late?); "
                             "the restart is the limit of the cascade", d->time, change,
                             instant, c);
                mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: mode change %s (instant %d): "
                         "delta-scheme converged at delta = %.17g after %d solves", d->time,
                         change, instant, h, it + 1);
                return 0;
            }
        } else {
            small = 0;
        }
        memcpy(Mprev, M, sizeof(double) * (size_t)sys->nm);
        memcpy(Tprev, T, sizeof(double) * (size_t)sys->nt);
    }
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: mode change %s (instant %d): the numerical "
             "restart (delta-scheme) does not converge as delta -> 0", d->time, change, instant);
    return 1;
}

/* G(u) = Phi(u) - u for the Real when-variables u on a cycle through the continuous
 * equations (mdae_when_loop): Phi(u) is what one pass of the when-equations assigns once the
 * schedule has computed the continuous variables from u. */
static int when_loop_residual(ModelInstance *inst, const int *fire, const double *u,
                              double *g)
{
    int k;
    for (k = 0; k < mdae_info.nwloop; k++) inst->d.r[mdae_when_loop[k]] = u[k];
    if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    (void)mdae_when_assign(inst, fire);
    if (mdae_function_failed(inst)) return 1;
    for (k = 0; k < mdae_info.nwloop; k++) g[k] = inst->d.r[mdae_when_loop[k]] - u[k];
    return 0;
}

/* The equations of the when-branches that fire and the continuous equations coupled with
 * them, solved as one system (Modelica 3.6 §8.6; mdae_fmu.structure.when_clauses,
 * coupled_when_variables): Newton on G(u) = 0 with a forward-difference Jacobian, from the
 * current values, at most MDAE_NEWTON_MAXIT iterations. On return the slots hold the
 * solution and the schedule's values for it; the pass loop of mdae_when_equations then finds
 * nothing left to change. A fixed-point iteration (what that loop does) diverges as soon as
 * the loop gain exceeds 1 (bug1228: y = 7 - 2*x + time with x = 5 - y has gain 2). */
static int when_loop_newton(ModelInstance *inst, const int *fire)
{
    const int n = mdae_info.nwloop;     /* > 0 (mdae_when_equations) */
    double u[MDAE_DIM(n)], g[MDAE_DIM(n)], gh[MDAE_DIM(n)], du[2 * MDAE_DIM(n)];
    double J[MDAE_DIM(n * n)], gn = INFINITY;
    int perm[MDAE_DIM(n)], it, j, k;
    for (k = 0; k < n; k++) u[k] = inst->d.r[mdae_when_loop[k]];
    for (it = 0; it < mdae_info.newton_maxit; it++) {
        if (when_loop_residual(inst, fire, u, g)) return 1;
        gn = mdae_norm_inf(n, g);
        if (!isfinite(gn)) break;
        if (gn <= 1e-13 * (1.0 + mdae_norm_inf(n, u))) return 0;
        for (j = 0; j < n; j++) {
            double uj = u[j], h = 1e-7 * fmax(1.0, fabs(uj));
            u[j] = uj + h;
            if (when_loop_residual(inst, fire, u, gh)) return 1;
            u[j] = uj;
            for (k = 0; k < n; k++) J[k * n + j] = (gh[k] - g[k]) / h;
        }
        if (mdae_lu_factor(n, J, perm)) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: the equations of the "
                     "when-clauses that fire and the continuous equations coupled with them "
                     "form a singular system", inst->d.time);
            return 1;
        }
        for (k = 0; k < n; k++) du[k] = g[k];
        mdae_lu_solve(n, J, perm, du);
        for (k = 0; k < n; k++) u[k] -= du[k];
    }
    if (isfinite(gn) && when_loop_residual(inst, fire, u, g) == 0 &&
        mdae_norm_inf(n, g) <= 1e-10 * (1.0 + mdae_norm_inf(n, u)))
        return 0;
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: the equations of the when-clauses that "
             "fire and the continuous equations coupled with them: Newton did not converge "
             "in %d iterations (residual %.3g)", inst->d.time, mdae_info.newton_maxit, gn);
    return 1;
}

/* The when-branches that fire at an instant (docs/fmi-mapping.md, "Events"): their
 * equations in dependency order, then the schedule, repeated until no value of the equations
 * changes, so that an equation also reads the values the continuous equations compute from
 * the new discrete values (at most one pass per equation, plus the pass that finds nothing
 * changed); then assertions, terminate and reinits, and the schedule once more. When-
 * equations on a cycle through the continuous equations are first solved with them by
 * Newton (when_loop_newton). */
int mdae_when_equations(ModelInstance *inst, int *fire)
{
    int pass, k;
    if (mdae_info.nwloop > 0 && when_loop_newton(inst, fire)) return 1;
    for (pass = 0; pass <= mdae_info.nassign + mdae_info.nwhen + 1; pass++) {
        int changed = mdae_when_assign(inst, fire);
        if (mdae_function_failed(inst)) return 1;
        if (changed == 0) {
            if (mdae_when_actions(inst, fire) || mdae_function_failed(inst)) return 1;
            return mdae_compute(inst) || mdae_function_failed(inst);
        }
        if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
        if (!inst->d.initial) {
            /* the when-conditions read the values of the instant: a condition that reads
               a value just assigned is evaluated after it (rising edge against pre) */
            mdae_when_conditions(&inst->d);
            for (k = 0; k < mdae_info.nwhen; k++)
                if (mdae_when_recheck[k]) fire[k] = inst->d.cond[k] && !inst->d.pcond[k];
        }
    }
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: the equations of the when-clauses that "
             "fire do not settle after %d passes: they form an algebraic loop through the "
             "continuous equations, or one of them is not a number", inst->d.time, pass);
    return 1;
}

/* One event instant (docs/theory.md §11, docs/fmi-mapping.md):
 * left limits := current values; relations and samples un-frozen; a nonstandard instant of a
 * mode change (multimode, mdae_mode_step); schedule; when-conditions;
 * actions of the branches whose condition rose; projection onto the consistency equations if
 * drift was detected. Another instant is needed when a when-branch fired, a mode change is
 * in progress, a discrete variable changed, or the instant's solution changes a relation
 * (mdae_relations_pending: a variable that jumped crossed a threshold, Modelica 3.6 §8.6).
 * statesChanged iff a state value changed (bitwise); valuesChanged also when the instant
 * changed what defines the derivatives: a relation, the mode, a discrete variable (the
 * host's integrator must restart). */
int mdae_event_update(ModelInstance *inst, MdaeEventFlags *ev)
{
    ModelData *d = &inst->d;
    int k, fired = 0, cascade = 0, relations, *fire = inst->iwork + mdae_info.iwork_fire;
    double tnext;
    mdae_get_states(d, inst->xbuf);
    memcpy(d->pr, d->r, sizeof(double) * (size_t)MDAE_DIM(mdae_info.nr));
    memcpy(d->pi, d->i, sizeof(int) * (size_t)MDAE_DIM(mdae_info.ni));
    memcpy(d->pb, d->b, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nb));
    memcpy(d->pcond, d->cond, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nwhen));
    ev->modeBefore = d->mode;
    ev->firedWhen = -1;
    relations = mdae_update_relations(d);
    mdae_update_samples(d);
    /* multimode: a mode change, or the next instant of the one in progress (docs/multimode-fmu.md) */
    if (mdae_mode_step(inst, &cascade)) return 1;
    if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    mdae_when_conditions(d);
    for (k = 0; k < mdae_info.nwhen; k++) {
        fire[k] = d->cond[k] && !d->pcond[k];
        if (fire[k] && ev->firedWhen < 0) ev->firedWhen = k;
        fired |= fire[k];
    }
    if (fired && mdae_when_equations(inst, fire)) return 1;
    if (mdae_info.ncons > 0 && !cascade &&
        (d->drift || mdae_drift(d) > mdae_drift_tolerance(inst))) {
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: projection onto the consistency "
                 "equations (drift %.3g)", d->time, mdae_drift(d));
        if (mdae_project(inst)) return 1;
        if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    }
    if (!cascade) d->drift = 0;
    /* a restart moved values that relations read: the discrete equations it did not read
       re-evaluated from them (MLS §8.6: the instant's discrete values from its solution) */
    if (cascade && mdae_settle_discrete(inst)) return 1;
    if (mdae_check_assertions(inst)) return 1;
    ev->modeAfter = d->mode;
    ev->statesChanged = 0;
    {
        double *x = inst->xbuf + MDAE_DIM(mdae_info.nx);
        mdae_get_states(d, x);
        for (k = 0; k < mdae_info.nx; k++)
            if (x[k] != inst->xbuf[k]) { ev->statesChanged = 1; break; }
    }
    ev->newDiscreteStatesNeeded = fired || cascade || mdae_discrete_changed(d) ||
                                  mdae_relations_pending(d);
    ev->valuesChanged = ev->statesChanged || relations > 0 || cascade ||
                        ev->modeAfter != ev->modeBefore || mdae_discrete_changed(d);
    if (!ev->newDiscreteStatesNeeded && mdae_info.nsample > 0) {
        /* end of the event iteration: sample() is false again in continuous time, so the
           when-conditions take their continuous-time values (the next sample rises) */
        memset(d->smp, 0, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nsample));
        mdae_when_conditions(d);
    }
    ev->terminateSimulation = d->terminate;
    ev->nominalsChanged = 0;
    tnext = mdae_next_time_event(d);
    ev->nextEventTimeDefined = isfinite(tnext) ? 1 : 0;
    ev->nextEventTime = isfinite(tnext) ? tnext : 0.0;
    if (fired)
        mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: when-clauses fired, states %s",
                 d->time, ev->statesChanged ? "changed" : "unchanged");
    return 0;
}

/* The value that changed in the last instant of an iteration that does not settle, for the
 * error message: the mode (its guard valuation), a when-branch, or a discrete variable. */
static void unsettled_what(const ModelInstance *inst, const MdaeEventFlags *ev, char *buf,
                           size_t n)
{
    const ModelData *d = &inst->d;
    int k;
    if (ev->modeAfter != ev->modeBefore) {
        snprintf(buf, n, "the guards switch the mode back and forth ([%s] -> [%s] in the last "
                 "instant)", mdae_mode_label(ev->modeBefore), mdae_mode_label(ev->modeAfter));
        return;
    }
    if (ev->firedWhen >= 0) {
        snprintf(buf, n, "when-branch %d (in the order of the model's when-clauses) keeps "
                 "firing", ev->firedWhen + 1);
        return;
    }
    for (k = 0; k < mdae_info.ni; k++)
        if (d->i[k] != d->pi[k]) {
            snprintf(buf, n, "the Integer of value reference %d (modelDescription.xml) keeps "
                     "changing (%d -> %d)", k, d->pi[k], d->i[k]);
            return;
        }
    for (k = 0; k < mdae_info.nb; k++)
        if (d->b[k] != d->pb[k]) {
            snprintf(buf, n, "the Boolean of value reference %d (modelDescription.xml) keeps "
                     "changing", k);
            return;
        }
    for (k = 0; k < mdae_info.nr; k++)
        if (d->r[k] != d->pr[k] && !(isnan(d->r[k]) && isnan(d->pr[k]))) {
            snprintf(buf, n, "%s keeps changing (%.17g -> %.17g)", mdae_real_names[k],
                     d->pr[k], d->r[k]);
            return;
        }
    snprintf(buf, n, "a mode change keeps requesting instants");
}

/* The whole event iteration at one time, inside one fmi2NewDiscreteStates (and one event of
 * the Co-Simulation driver): instants (mdae_event_update) until none requests another, so the
 * host sees newDiscreteStatesNeeded = false with every state change of the cascade reported in
 * the same call (docs/fmi-mapping.md, "Events in third-party hosts"). The flags accumulate
 * over the instants (valuesChanged, statesChanged: any instant); the others are those of the
 * last instant. Bounded by MDAE_MAX_EVENT_ITERATIONS instants: beyond, fmi2Error with a
 * message naming what keeps changing. *instants: the number of instants run. */
/* logEvents: the states after one instant of the iteration (the intermediate right limits of
 * a cascade are otherwise invisible to the host), as "name = value" pairs, %.17g. */
static void log_instant_states(ModelInstance *inst, int instant)
{
    char buf[900];
    size_t len = 0;
    int k;
    if (!(inst->logOn && (inst->logCat[LOG_EVENTS] || inst->logCat[LOG_ALL]))) return;
    buf[0] = 0;
    for (k = 0; k < mdae_info.nx && len + 40 < sizeof buf; k++) {
        int w = snprintf(buf + len, sizeof buf - len, "%s%s = %.17g", k ? ", " : "",
                         mdae_real_names[mdae_state_slots[k]], inst->d.r[mdae_state_slots[k]]);
        if (w < 0 || (size_t)w >= sizeof buf - len) break;
        len += (size_t)w;
    }
    mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: after instant %d of the event iteration: "
             "%s%s", inst->d.time, instant, buf, k < mdae_info.nx ? ", ..." : "");
}

int mdae_event_iteration(ModelInstance *inst, MdaeEventFlags *ev, int *instants)
{
    MdaeEventFlags one;
    int it, values = 0, states = 0;
    for (it = 0;; it++) {
        if (it >= mdae_info.max_event_iterations) {
            char what[512];
            unsettled_what(inst, ev, what, sizeof what);
            mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: the event iteration does not "
                     "settle after %d instants: %s", inst->d.time, mdae_info.max_event_iterations,
                     what);
            *instants = it;
            return 1;
        }
        memset(&one, 0, sizeof one);
        if (mdae_event_update(inst, &one)) {
            *instants = it + 1;
            return 1;
        }
        if (one.statesChanged) log_instant_states(inst, it + 1);
        values |= one.valuesChanged;
        states |= one.statesChanged;
        *ev = one;
        if (one.terminateSimulation || !one.newDiscreteStatesNeeded) break;
    }
    ev->valuesChanged = values;
    ev->statesChanged = states;
    *instants = it + 1;
    return 0;
}

/* After the initial system failed: each row that does not hold at the last iterate, named
 * (its equation, mode and the fixed start values it reads: mdae_init_row_names). The
 * residuals go to the start of the scratch, which the failed Gauss-Newton no longer needs
 * (a residual that runs the schedule gives it the scratch after the Gauss-Newton's). */
static void log_unsatisfied_rows(ModelInstance *inst)
{
    double *F = inst->work;
    int k, shown = 0;
    if (mdae_info.ninit_rows == 0 || mdae_init_residual(inst, F)) return;
    for (k = 0; k < mdae_info.ninit_rows && shown < 8; k++) {
        if (fabs(F[k]) <= mdae_info.init_tol) continue;
        shown++;
        mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: initial system: residual %.3g: %s",
                 inst->d.time, F[k], mdae_init_row_names[k]);
    }
}

/* Newton on one leading block of the initial system (nb rows `rows` of mdae_init_residual in
 * the nb parameter slots `u`, codegen/initialization.py `parameter_blocks`), from the
 * current values: each column scaled by its unknown's size, each row by its largest scaled
 * Jacobian entry (the change of the row for a relative change of one unknown), so that rows
 * of size 1e5 and rows of size 1 weigh alike in the step and in the line search. Returns 0
 * when the step has fallen below 1e-12 (relative) or the scaled residual below 1e-15;
 * otherwise 1, with the block's unknowns back at their values on entry (the whole system's
 * Gauss-Newton then starts from them, as without blocks). Scratch: 2m + nb^2 + 6nb doubles
 * (m rows in all), within `gauss_newton_work`. */
#define COLUMN_SCALE(x) (fabs(x) > 0.0 ? fabs(x) : 1.0)
static int init_block_newton(ModelInstance *inst, int nb, const int *rows, const int *u)
{
    ModelData *d = &inst->d;
    const int m = mdae_info.ninit_rows;
    double *Fa = inst->work, *Fb = Fa + m, *J = Fb + m, *F = J + nb * nb, *x0 = F + nb,
           *rs = x0 + nb, *xs = rs + nb, *dx = xs + nb; /* dx: 2nb (mdae_lu_solve) */
    int *perm = inst->iwork, it, i, j, h;
    for (j = 0; j < nb; j++) xs[j] = d->r[u[j]];
    for (it = 0; it < 50; it++) {
        double merit = 0.0, fnew = 0.0, step = 0.0, lambda = 1.0;
        if (mdae_init_residual(inst, Fa)) break;
        for (j = 0; j < nb; j++) x0[j] = d->r[u[j]];
        for (j = 0; j < nb; j++) {
            double hstep = 1.4901161193847656e-08 * COLUMN_SCALE(x0[j]);
            d->r[u[j]] = x0[j] + hstep;
            if (mdae_init_residual(inst, Fb)) { d->r[u[j]] = x0[j]; goto fail; }
            d->r[u[j]] = x0[j];
            for (i = 0; i < nb; i++)
                J[i * nb + j] = (Fb[rows[i]] - Fa[rows[i]]) / hstep * COLUMN_SCALE(x0[j]);
        }
        for (i = 0; i < nb; i++) {
            double top = 0.0;
            for (j = 0; j < nb; j++) top = fmax(top, fabs(J[i * nb + j]));
            if (!(top > 0.0) || !isfinite(top) || !isfinite(Fa[rows[i]])) goto fail;
            rs[i] = top;
            for (j = 0; j < nb; j++) J[i * nb + j] /= top;
            F[i] = Fa[rows[i]] / top;
            merit = fmax(merit, fabs(F[i]));
        }
        if (merit <= 1e-15) return 0;
        if (mdae_lu_factor(nb, J, perm)) goto fail;
        memcpy(dx, F, sizeof(double) * (size_t)nb);
        mdae_lu_solve(nb, J, perm, dx);
        for (h = 0; h <= 20; h++) {
            lambda = ldexp(1.0, -h);
            for (j = 0; j < nb; j++) d->r[u[j]] = x0[j] - lambda * COLUMN_SCALE(x0[j]) * dx[j];
            if (mdae_init_residual(inst, Fb)) goto fail;
            fnew = 0.0;
            for (i = 0; i < nb; i++) fnew = fmax(fnew, fabs(Fb[rows[i]] / rs[i]));
            if (fnew < merit) break;
        }
        if (!(fnew < merit)) goto fail;
        for (j = 0; j < nb; j++) {
            if (!isfinite(d->r[u[j]])) goto fail;
            step = fmax(step, fabs(lambda * dx[j]));
        }
        if (step <= 1e-12 || fnew <= 1e-15) return 0;
    }
fail:
    for (j = 0; j < nb; j++) d->r[u[j]] = xs[j];
    return 1;
}

/* The leading blocks of the initial system (mdae_init_blocks), each solved alone before the
 * whole system; a block whose Newton iteration fails is left to the whole system. */
static void solve_init_blocks(ModelInstance *inst)
{
    const int *b = mdae_init_blocks;
    while (b[0] > 0) {
        if (init_block_newton(inst, b[0], b + 1, b + 1 + b[0]))
            mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: initial system: the block of %d "
                     "parameters was not solved alone (left to the whole system)",
                     inst->d.time, b[0]);
        b += 1 + 2 * b[0];
    }
}

static int solve_initial_system(ModelInstance *inst)
{
    solve_init_blocks(inst);
    if (mdae_gauss_newton_rows(inst, mdae_info.ninit_rows, mdae_info.ninit_cols,
                               mdae_init_unknowns, mdae_init_residual, mdae_info.init_tol,
                               mdae_info.init_tol, 100, "initial system",
                               mdae_init_row_labels)) {
        log_unsatisfied_rows(inst);
        return 1;
    }
    return 0;
}

/* The initial system at the current homotopy lambda, then the schedule; repeated while the
 * relations the solution gives differ from those it was computed with (at most
 * MDAE_MAX_EVENT_ITERATIONS times). */
static int solve_initial_settled(ModelInstance *inst)
{
    int k;
    for (k = 0; k < mdae_info.max_event_iterations; k++) {
        if (mdae_info.ninit_rows > 0 && solve_initial_system(inst)) return 1;
        if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
        if (!mdae_update_relations(&inst->d)) return 0;
    }
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: initial system: the relations do not "
             "settle at lambda = %g", inst->d.time, inst->d.homotopy);
    return 1;
}

/* Initialization of a model with homotopy(actual, simplified) (Modelica 3.6 §3.7.4.4), by
 * continuation: lambda = 0 (every homotopy() is its simplified expression), then up to 1 in
 * MDAE_HOMOTOPY_STEPS equal steps, each solved from the previous solution with its relations
 * settled (`solve_initial_settled`); lambda is 1 afterwards. OpenModelica's
 * equations/ticket-5206: the saturation's actual expression is flat in the unknowns at
 * their start values, its simplified one (u) is not. */
#define MDAE_HOMOTOPY_STEPS 8
static int homotopy_initialization(ModelInstance *inst)
{
    int k;
    for (k = 0; k <= MDAE_HOMOTOPY_STEPS; k++) {
        inst->d.homotopy = (double)k / MDAE_HOMOTOPY_STEPS;
        if (solve_initial_settled(inst)) {
            mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: homotopy continuation of the "
                     "initial system failed at lambda = %g", inst->d.time, inst->d.homotopy);
            inst->d.homotopy = 1.0;
            return 1;
        }
    }
    mdae_log(inst, LOG_EVENTS, fmi2OK, "t = %.17g: initial system solved by homotopy "
             "continuation in %d steps", inst->d.time, MDAE_HOMOTOPY_STEPS);
    return 0;
}

/* fmi2ExitInitializationMode: parameters, initial system (damped Gauss-Newton, start values
 * as the guess for free states; homotopy continuation when the equations use homotopy()),
 * schedule, when-clauses on initial(), left limits. */
int mdae_initialize_instance(ModelInstance *inst)
{
    ModelData *d = &inst->d;
    int k, fired = 0, *fire = inst->iwork + mdae_info.iwork_fire;
    d->initial = 1;
    if (mdae_calculate_parameters(inst) || mdae_function_failed(inst)) return 1;
    /* pre(v) during initialization is the start value of v (Modelica 3.6 §8.6): a discrete
     * equation n = pre(m) - 1 reads m's start */
    memcpy(d->pr, d->r, sizeof(double) * (size_t)MDAE_DIM(mdae_info.nr));
    memcpy(d->pi, d->i, sizeof(int) * (size_t)MDAE_DIM(mdae_info.ni));
    memcpy(d->pb, d->b, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nb));
    for (k = 0; k < mdae_info.nsample; k++) d->smp_last[k] = -INFINITY;
    mdae_update_relations(d);
    if (mdae_initial_assignments(inst) || mdae_function_failed(inst)) return 1;
    if (mdae_info.homotopy) {
        if (homotopy_initialization(inst)) return 1;
    } else if (mdae_info.ninit_rows > 0) {
        if (solve_initial_system(inst)) return 1;
    }
    if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    mdae_update_relations(d);
    if (mdae_compute(inst) || mdae_function_failed(inst)) return 1;
    mdae_when_conditions(d);
    for (k = 0; k < mdae_info.nwhen; k++) {
        fire[k] = d->cond[k] && mdae_when_initial[k]; /* only when-clauses on initial() */
        fired |= fire[k];
    }
    memcpy(d->pr, d->r, sizeof(double) * (size_t)MDAE_DIM(mdae_info.nr));
    memcpy(d->pi, d->i, sizeof(int) * (size_t)MDAE_DIM(mdae_info.ni));
    memcpy(d->pb, d->b, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nb));
    if (fired && mdae_when_equations(inst, fire)) return 1;
    /* assertions that read initial() (an assert inside 'if initial() then') are checked
     * while initial() holds; the others once, below */
    if (mdae_info.assert_initial && mdae_check_assertions(inst)) return 1;
    d->initial = 0;
    mdae_when_conditions(d);
    memcpy(d->pcond, d->cond, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nwhen));
    memcpy(d->pr, d->r, sizeof(double) * (size_t)MDAE_DIM(mdae_info.nr));
    memcpy(d->pi, d->i, sizeof(int) * (size_t)MDAE_DIM(mdae_info.ni));
    memcpy(d->pb, d->b, sizeof(int) * (size_t)MDAE_DIM(mdae_info.nb));
    return mdae_check_assertions(inst);
}
