/* mdae_fmu runtime: sparse LU of the large linear blocks, kept between evaluations.
 * Hand-written, shipped unchanged in every FMU (docs/decisions.md §16).
 *
 * A merged block of the guarded schedule (mdae_fmu/implicit/merged.py) is one linear system
 * for a whole coupled component; the guard bits select its rows, so in any one mode most of its
 * entries are zero and what remains falls apart into small pieces (a run of engaged clutches).
 * Its matrix is also constant while the mode and the parameters do not change. Hence:
 *
 *   1. the generated code gives the entries of the matrix that can be nonzero in some mode
 *      (MdaeSparsePattern) and computes their values at every evaluation;
 *   2. when the values are bitwise those of the last factorization, the factors are reused:
 *      one forward and one back substitution, in time proportional to the factors' entries;
 *   3. otherwise, when the nonzeros are among those the pivot order was chosen for, the matrix
 *      is factored again along that order (`factor_rows`), accepted if every pivot still
 *      passes the threshold test;
 *   4. else a new pivot order is chosen by Markowitz's rule with threshold pivoting
 *      (`choose_pivots`: the entry of least (r - 1)(c - 1), r and c the counts of its row and
 *      column in the active submatrix, among those at least MDAE_SPARSE_U times the largest
 *      of their row), which takes the singletons of a block-triangular form first and keeps
 *      the fill of chains and trees small.
 *
 * The factorization is not part of the FMU state: it is a cache keyed by the matrix values,
 * so restoring an FMU state, setting parameters or changing the mode needs no invalidation.
 * Memory comes from the host's allocateMemory in a few blocks that grow geometrically. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mdae_wrapper.h"

#define MDAE_SPARSE_U 0.1           /* threshold of a new pivot choice */
#define MDAE_SPARSE_U_REUSE 0.01    /* ... and of a pivot order reused on new values */
#define MDAE_SPARSE_SEARCH 4        /* columns of least count examined per pivot */

typedef struct MdaeSparseLU {
    const MdaeSparsePattern *p;   /* the block's entries (generated, static) */
    int n, nnz;
    int *rowp, *rowk;       /* the pattern by rows: entries rowk[rowp[i] .. rowp[i+1]) */
    double *a;              /* the values factored last */
    unsigned char *used;    /* entry k was nonzero when the pivot order was chosen */
    int ordered, factored;  /* a pivot order exists; the factors are those of `a` */
    int *prow, *pcol, *cpos;     /* pivot k at (prow[k], pcol[k]); cpos[pcol[k]] = k */
    unsigned char *single;  /* pivot k was a singleton of its row or column: no threshold */
    /* the factors of the permuted matrix, by rows in pivot positions: L strictly lower with
       a unit diagonal, U with its diagonal entry first in each row */
    int *lp, *li, *up, *ui;
    double *lx, *ux;
    int lcap, ucap;
    double *w;              /* scratch: a dense row, the solve's vector */
    int *mark, *heap, *list;
    /* the active submatrix of `choose_pivots`: entries as nodes in a row and a column list */
    int *nrow, *ncol, *rnext, *cnext;
    double *nval;
    int ncap, nodes;
    int *rhead, *chead, *rcount, *ccount, *pos;
    unsigned char *rdone, *cdone;
    /* the rows and columns whose count fell to 1: candidate singletons, each listed once */
    int *rsingle, *csingle, nrs, ncs;
    unsigned char *rlisted, *clisted;
} MdaeSparseLU;

static void *sp_alloc(ModelInstance *inst, size_t n, size_t size)
{
    if (n == 0) n = 1;
    return inst->cb.allocateMemory ? inst->cb.allocateMemory(n, size) : calloc(n, size);
}

static void sp_free(ModelInstance *inst, void *p)
{
    if (!p) return;
    if (inst->cb.freeMemory) inst->cb.freeMemory(p);
    else free(p);
}

/* Grow the array *p of *cap elements of `size` bytes to at least `need` (doubling); 1 when out
 * of memory (*p unchanged). */
static int sp_grow(ModelInstance *inst, void **p, int *cap, int need, size_t size)
{
    int c = *cap > 0 ? *cap : 16;
    void *q;
    if (need <= *cap) return 0;
    while (c < need) c *= 2;
    q = sp_alloc(inst, (size_t)c, size);
    if (!q) return 1;
    if (*p) memcpy(q, *p, (size_t)*cap * size);
    sp_free(inst, *p);
    *p = q;
    *cap = c;
    return 0;
}

static void lu_free(ModelInstance *inst, MdaeSparseLU *s)
{
    void *arrays[] = {s->rowp, s->rowk, s->a, s->used, s->prow, s->pcol, s->cpos, s->single,
                      s->lp, s->li, s->up, s->ui, s->lx, s->ux, s->w, s->mark, s->heap,
                      s->list, s->nrow, s->ncol, s->rnext, s->cnext, s->nval, s->rhead,
                      s->chead, s->rcount, s->ccount, s->pos, s->rdone, s->cdone,
                      s->rsingle, s->csingle, s->rlisted, s->clisted};
    size_t k;
    for (k = 0; k < sizeof arrays / sizeof arrays[0]; k++) sp_free(inst, arrays[k]);
    sp_free(inst, s);
}

void mdae_sparse_free(ModelInstance *inst)
{
    int k;
    for (k = 0; k < inst->nsparse; k++)
        if (inst->sparse[k]) lu_free(inst, inst->sparse[k]);
    sp_free(inst, inst->sparse);
    inst->sparse = NULL;
    inst->nsparse = 0;
}

/* The kept factorization of block p, created at its first use (NULL: out of memory). */
static MdaeSparseLU *lu_of(ModelInstance *inst, const MdaeSparsePattern *p)
{
    MdaeSparseLU *s;
    int n = p->n, k, ok;
    if (p->cache >= inst->nsparse) {
        void *table = inst->sparse;
        int cap = inst->nsparse;
        if (sp_grow(inst, &table, &cap, p->cache + 1, sizeof(MdaeSparseLU *))) return NULL;
        memset((MdaeSparseLU **)table + inst->nsparse, 0,
               sizeof(MdaeSparseLU *) * (size_t)(cap - inst->nsparse));
        inst->sparse = (MdaeSparseLU **)table;
        inst->nsparse = cap;
    }
    if (inst->sparse[p->cache]) return inst->sparse[p->cache];
    s = (MdaeSparseLU *)sp_alloc(inst, 1, sizeof(MdaeSparseLU));
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->p = p;
    s->n = n;
    s->nnz = p->nnz;
    s->rowp = (int *)sp_alloc(inst, (size_t)n + 1, sizeof(int));
    s->rowk = (int *)sp_alloc(inst, (size_t)p->nnz, sizeof(int));
    s->a = (double *)sp_alloc(inst, (size_t)p->nnz, sizeof(double));
    s->used = (unsigned char *)sp_alloc(inst, (size_t)p->nnz, 1);
    s->prow = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->pcol = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->cpos = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->single = (unsigned char *)sp_alloc(inst, (size_t)n, 1);
    s->lp = (int *)sp_alloc(inst, (size_t)n + 1, sizeof(int));
    s->up = (int *)sp_alloc(inst, (size_t)n + 1, sizeof(int));
    s->w = (double *)sp_alloc(inst, (size_t)n, sizeof(double));
    s->mark = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->heap = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->list = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->rhead = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->chead = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->rcount = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->ccount = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->pos = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->rdone = (unsigned char *)sp_alloc(inst, (size_t)n, 1);
    s->cdone = (unsigned char *)sp_alloc(inst, (size_t)n, 1);
    s->rsingle = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->csingle = (int *)sp_alloc(inst, (size_t)n, sizeof(int));
    s->rlisted = (unsigned char *)sp_alloc(inst, (size_t)n, 1);
    s->clisted = (unsigned char *)sp_alloc(inst, (size_t)n, 1);
    ok = s->rowp && s->rowk && s->a && s->used && s->prow && s->pcol && s->cpos && s->single
         && s->lp && s->up && s->w && s->mark && s->heap && s->list && s->rhead && s->chead
         && s->rcount && s->ccount && s->pos && s->rdone && s->cdone && s->rsingle
         && s->csingle && s->rlisted && s->clisted;
    if (!ok) {
        lu_free(inst, s);
        return NULL;
    }
    /* the pattern by rows (counting sort of the entries by row) */
    for (k = 0; k < p->nnz; k++) s->rowp[p->row[k] + 1]++;
    for (k = 0; k < n; k++) s->rowp[k + 1] += s->rowp[k];
    for (k = 0; k < n; k++) s->list[k] = s->rowp[k];
    for (k = 0; k < p->nnz; k++) s->rowk[s->list[p->row[k]]++] = k;
    inst->sparse[p->cache] = s;
    return s;
}

/* --- the pivot order: Markowitz with threshold on the active submatrix ------------------- */

/* Append entry (i, j) of value v to the active submatrix; -1 when out of memory. */
static int add_node(ModelInstance *inst, MdaeSparseLU *s, int i, int j, double v)
{
    int e = s->nodes, cap = s->ncap;
    if (e == cap) {
        void *p;
        int c;
        p = s->nrow; c = cap; if (sp_grow(inst, &p, &c, e + 1, sizeof(int))) return -1;
        s->nrow = (int *)p;
        p = s->ncol; c = cap; if (sp_grow(inst, &p, &c, e + 1, sizeof(int))) return -1;
        s->ncol = (int *)p;
        p = s->rnext; c = cap; if (sp_grow(inst, &p, &c, e + 1, sizeof(int))) return -1;
        s->rnext = (int *)p;
        p = s->cnext; c = cap; if (sp_grow(inst, &p, &c, e + 1, sizeof(int))) return -1;
        s->cnext = (int *)p;
        p = s->nval; c = cap; if (sp_grow(inst, &p, &c, e + 1, sizeof(double))) return -1;
        s->nval = (double *)p;
        s->ncap = c;
    }
    s->nrow[e] = i;
    s->ncol[e] = j;
    s->nval[e] = v;
    s->rnext[e] = s->rhead[i];
    s->rhead[i] = e;
    s->cnext[e] = s->chead[j];
    s->chead[j] = e;
    s->rcount[i]++;
    s->ccount[j]++;
    s->nodes++;
    return e;
}

/* List row (or column) k as a candidate singleton, once. */
static void list_single(int *list, int *count, unsigned char *listed, int k)
{
    if (listed[k]) return;
    listed[k] = 1;
    list[(*count)++] = k;
}

/* Largest |value| of the active entries of row i. */
static double row_max(const MdaeSparseLU *s, int i)
{
    double m = 0.0;
    int e;
    for (e = s->rhead[i]; e >= 0; e = s->rnext[e])
        if (!s->cdone[s->ncol[e]]) m = fmax(m, fabs(s->nval[e]));
    return m;
}

/* The pivot of the active submatrix (the node), -1 when it is singular; *single: a singleton
 * of its row or column. Singletons come first (from the lists `eliminate` keeps, so that a
 * block-triangular matrix costs O(entries)): a column singleton updates no other row and a
 * row singleton adds no fill, so neither needs the threshold test. Otherwise the Markowitz
 * cost is minimized over the MDAE_SPARSE_SEARCH columns of least count (all columns when none
 * of theirs passes the threshold), ties broken by the larger |pivot| / max |row|. */
static int find_pivot(MdaeSparseLU *s, int *single)
{
    int n = s->n, j, i, e, t, cand[MDAE_SPARSE_SEARCH], ncand = 0, best = -1, pass;
    double best_cost = INFINITY, best_ratio = 0.0;
    *single = 1;
    while (s->ncs > 0) {             /* listed columns that are still singletons */
        j = s->csingle[--s->ncs];
        s->clisted[j] = 0;
        if (s->cdone[j] || s->ccount[j] != 1) continue;
        for (e = s->chead[j]; e >= 0; e = s->cnext[e])
            if (!s->rdone[s->nrow[e]] && s->nval[e] != 0.0) return e;
    }
    while (s->nrs > 0) {
        i = s->rsingle[--s->nrs];
        s->rlisted[i] = 0;
        if (s->rdone[i] || s->rcount[i] != 1) continue;
        for (e = s->rhead[i]; e >= 0; e = s->rnext[e])
            if (!s->cdone[s->ncol[e]] && s->nval[e] != 0.0) return e;
    }
    *single = 0;
    for (j = 0; j < n; j++) {        /* the columns of least count, kept sorted */
        if (s->cdone[j] || s->ccount[j] == 0) continue;
        if (ncand == MDAE_SPARSE_SEARCH && s->ccount[j] >= s->ccount[cand[ncand - 1]]) continue;
        if (ncand < MDAE_SPARSE_SEARCH) ncand++;
        for (t = ncand - 1; t > 0 && s->ccount[cand[t - 1]] > s->ccount[j]; t--)
            cand[t] = cand[t - 1];
        cand[t] = j;
    }
    for (pass = 0; pass < 2 && best < 0; pass++) {
        int count = pass == 0 ? ncand : n;
        for (t = 0; t < count; t++) {
            j = pass == 0 ? cand[t] : t;
            if (s->cdone[j]) continue;
            for (e = s->chead[j]; e >= 0; e = s->cnext[e]) {
                double v = fabs(s->nval[e]), m, cost, ratio;
                i = s->nrow[e];
                if (s->rdone[i] || v == 0.0 || !isfinite(v)) continue;
                m = row_max(s, i);
                if (v < MDAE_SPARSE_U * m) continue;
                cost = (double)(s->rcount[i] - 1) * (double)(s->ccount[j] - 1);
                ratio = v / m;
                if (cost < best_cost || (cost == best_cost && ratio > best_ratio)) {
                    best = e; best_cost = cost; best_ratio = ratio;
                }
            }
        }
    }
    return best;
}

/* Eliminate the pivot node e from the active submatrix: every other active row of its
 * column takes minus its multiple of the pivot row (new entries where it had none). */
static int eliminate(ModelInstance *inst, MdaeSparseLU *s, int e)
{
    int r = s->nrow[e], c = s->ncol[e], f, g, i, j;
    double p = s->nval[e];
    s->rdone[r] = 1;
    s->cdone[c] = 1;
    for (g = s->rhead[r]; g >= 0; g = s->rnext[g]) {
        j = s->ncol[g];
        if (!s->cdone[j] && --s->ccount[j] == 1) list_single(s->csingle, &s->ncs, s->clisted, j);
    }
    for (f = s->chead[c]; f >= 0; f = s->cnext[f]) {
        double l;
        i = s->nrow[f];
        if (s->rdone[i]) continue;
        l = s->nval[f] / p;
        if (--s->rcount[i] == 1 && l == 0.0) list_single(s->rsingle, &s->nrs, s->rlisted, i);
        if (l == 0.0) continue;
        for (g = s->rhead[i]; g >= 0; g = s->rnext[g]) s->pos[s->ncol[g]] = g;
        for (g = s->rhead[r]; g >= 0; g = s->rnext[g]) {
            j = s->ncol[g];
            if (s->cdone[j]) continue;
            if (s->pos[j] >= 0 && s->nrow[s->pos[j]] == i) {
                s->nval[s->pos[j]] -= l * s->nval[g];
            } else {
                double v = -l * s->nval[g];
                int h = add_node(inst, s, i, j, v);   /* may move the node arrays */
                if (h < 0) return 1;
                s->pos[j] = h;
            }
        }
        if (s->rcount[i] == 1) list_single(s->rsingle, &s->nrs, s->rlisted, i);
    }
    return 0;
}

/* Choose the pivot order of the values `a` (module comment, step 4); 1 when the matrix is
 * singular (no acceptable pivot left) or memory ran out. */
static int choose_pivots(ModelInstance *inst, MdaeSparseLU *s)
{
    int n = s->n, k, i;
    s->ordered = 0;
    s->nodes = 0;
    for (i = 0; i < n; i++) {
        s->rhead[i] = s->chead[i] = -1;
        s->rcount[i] = s->ccount[i] = 0;
        s->rdone[i] = s->cdone[i] = 0;
        s->rlisted[i] = s->clisted[i] = 0;
        s->pos[i] = -1;
    }
    s->nrs = s->ncs = 0;
    for (k = 0; k < s->nnz; k++) {
        s->used[k] = s->a[k] != 0.0;
        if (s->used[k] && add_node(inst, s, s->p->row[k], s->p->col[k], s->a[k]) < 0) return 1;
    }
    for (i = 0; i < n; i++) {
        if (s->ccount[i] == 1) list_single(s->csingle, &s->ncs, s->clisted, i);
        if (s->rcount[i] == 1) list_single(s->rsingle, &s->nrs, s->rlisted, i);
    }
    for (k = 0; k < n; k++) {
        int e = find_pivot(s, &i);
        if (e < 0) return 1;
        s->prow[k] = s->nrow[e];
        s->pcol[k] = s->ncol[e];
        s->cpos[s->ncol[e]] = k;
        s->single[k] = (unsigned char)i;
        if (eliminate(inst, s, e)) return 1;
    }
    s->ordered = 1;
    return 0;
}

/* --- the factors along a pivot order -------------------------------------------------- */

static void heap_push(int *heap, int *size, int v)
{
    int k = (*size)++;
    while (k > 0 && heap[(k - 1) / 2] > v) {
        heap[k] = heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    heap[k] = v;
}

static int heap_pop(int *heap, int *size)
{
    int top = heap[0], v = heap[--*size], k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= *size) break;
        if (c + 1 < *size && heap[c + 1] < heap[c]) c++;
        if (heap[c] >= v) break;
        heap[k] = heap[c];
        k = c;
    }
    heap[k] = v;
    return top;
}

/* Factor the values `a` along the pivot order, row by row (the row-wise form of Gaussian
 * elimination: row k of the permuted matrix minus its multiples of the rows of U before it, in
 * increasing pivot position, which a heap gives; its entries after k are row k of U). Returns
 * 0, or 1 when a pivot is zero, not finite or (not being a singleton) below `u` times the
 * largest entry of its row of U, or memory ran out. */
static int factor_rows(ModelInstance *inst, MdaeSparseLU *s, double u)
{
    int n = s->n, k, q, lnz = 0, unz = 0;
    double scale = 0.0;
    for (q = 0; q < s->nnz; q++) scale = fmax(scale, fabs(s->a[q]));
    for (k = 0; k < n; k++) s->mark[k] = -1;
    s->lp[0] = s->up[0] = 0;
    for (k = 0; k < n; k++) {
        int i = s->prow[k], nh = 0, nl = 0, t;
        double diag, big;
        void *p;
        for (t = s->rowp[i]; t < s->rowp[i + 1]; t++) {
            int e = s->rowk[t], m;
            if (s->a[e] == 0.0) continue;
            m = s->cpos[s->p->col[e]];
            if (s->mark[m] != k) {
                s->mark[m] = k;
                s->w[m] = 0.0;
                if (m < k) heap_push(s->heap, &nh, m);
                else if (m > k) s->list[nl++] = m;
            }
            s->w[m] += s->a[e];
        }
        while (nh > 0) {
            int j = heap_pop(s->heap, &nh);
            double l = s->w[j] / s->ux[s->up[j]];
            p = s->li; t = s->lcap;
            if (sp_grow(inst, &p, &t, lnz + 1, sizeof(int))) return 1;
            s->li = (int *)p;
            p = s->lx; t = s->lcap;
            if (sp_grow(inst, &p, &t, lnz + 1, sizeof(double))) return 1;
            s->lx = (double *)p;
            s->lcap = t;
            s->li[lnz] = j;
            s->lx[lnz++] = l;
            for (q = s->up[j] + 1; q < s->up[j + 1]; q++) {
                int m = s->ui[q];
                if (s->mark[m] != k) {
                    s->mark[m] = k;
                    s->w[m] = 0.0;
                    if (m < k) heap_push(s->heap, &nh, m);
                    else if (m > k) s->list[nl++] = m;
                }
                s->w[m] -= l * s->ux[q];
            }
        }
        s->lp[k + 1] = lnz;
        diag = s->mark[k] == k ? s->w[k] : 0.0;
        big = fabs(diag);
        for (t = 0; t < nl; t++) big = fmax(big, fabs(s->w[s->list[t]]));
        if (!(fabs(diag) > 1e-14 * scale) || !isfinite(big)
            || (!s->single[k] && fabs(diag) < u * big))
            return 1;
        p = s->ui; t = s->ucap;
        if (sp_grow(inst, &p, &t, unz + nl + 1, sizeof(int))) return 1;
        s->ui = (int *)p;
        p = s->ux; t = s->ucap;
        if (sp_grow(inst, &p, &t, unz + nl + 1, sizeof(double))) return 1;
        s->ux = (double *)p;
        s->ucap = t;
        s->ui[unz] = k;
        s->ux[unz++] = diag;
        for (t = 0; t < nl; t++) {
            s->ui[unz] = s->list[t];
            s->ux[unz++] = s->w[s->list[t]];
        }
        s->up[k + 1] = unz;
    }
    return 0;
}

/* The factors of the values `a` (module comment, steps 2-4); 1 when the matrix is singular. */
static int sparse_factor(ModelInstance *inst, MdaeSparseLU *s, const double *a)
{
    int k;
    if (s->factored && memcmp(a, s->a, sizeof(double) * (size_t)s->nnz) == 0) return 0;
    memcpy(s->a, a, sizeof(double) * (size_t)s->nnz);
    s->factored = 0;
    for (k = 0; k < s->nnz; k++)
        if (a[k] != 0.0 && !s->used[k]) break;
    if (!(s->ordered && k == s->nnz && !factor_rows(inst, s, MDAE_SPARSE_U_REUSE))) {
        if (choose_pivots(inst, s) || factor_rows(inst, s, MDAE_SPARSE_U_REUSE)) return 1;
    }
    s->factored = 1;
    return 0;
}

/* Solve with the factors: x = Q U^-1 L^-1 P c, c (n) overwritten by x. */
static void sparse_solve(MdaeSparseLU *s, double *c)
{
    int n = s->n, k, q;
    double *z = s->w;
    for (k = 0; k < n; k++) {
        double v = c[s->prow[k]];
        for (q = s->lp[k]; q < s->lp[k + 1]; q++) v -= s->lx[q] * z[s->li[q]];
        z[k] = v;
    }
    for (k = n - 1; k >= 0; k--) {
        double v = z[k];
        for (q = s->up[k] + 1; q < s->up[k + 1]; q++) v -= s->ux[q] * z[s->ui[q]];
        z[k] = v / s->ux[s->up[k]];
    }
    for (k = 0; k < n; k++) c[s->pcol[k]] = z[k];
}

/* A u = c of a sparse linear block: the generated `system` sets the pattern's values a
 * (p->nnz) and c (n); solved with the kept or new sparse factors, or, where A is singular, by
 * the dense `mdae_linear_singular` (least squares, accepted when consistent). Scratch: the
 * values and c at the start of inst->work, then the dense system of the fallback. */
int mdae_sparse_linear_block(ModelInstance *inst, const MdaeSparsePattern *p, const int *u,
                             void (*system)(const ModelData *, double *, double *), int block)
{
    int n = p->n, k;
    double *a = inst->work, *c = a + p->nnz;
    MdaeSparseLU *s = lu_of(inst, p);
    if (!s) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: block %d [%s]: out of memory",
                 inst->d.time, block, mdae_block_labels[block]);
        return 1;
    }
    system(&inst->d, a, c);
    if (sparse_factor(inst, s, a)) {
        double *A = inst->work;
        memcpy(s->w, c, sizeof(double) * (size_t)n);     /* c lies where the dense A goes */
        memset(A, 0, sizeof(double) * (size_t)n * (size_t)n);
        for (k = 0; k < p->nnz; k++) A[p->row[k] * n + p->col[k]] = s->a[k];
        memcpy(A + n * n, s->w, sizeof(double) * (size_t)n);
        return mdae_linear_singular(inst, n, u, block);
    }
    sparse_solve(s, c);
    return mdae_store_solution(inst, n, u, c, block);
}

/* --- Newton blocks ---------------------------------------------------------------------- */

static void set_unknowns(ModelData *d, int n, const int *u, const double *x, double lambda,
                         const double *dx)
{
    int k;
    for (k = 0; k < n; k++) d->r[u[k]] = x[k] - lambda * dx[k];
}

/* The Newton step dx = J^-1 F with the Jacobian values a (p->nnz), factored sparse (the kept
 * pivot order reused while valid); where J is singular, the least-squares step of the dense
 * J (`mdae_singular_step`, assembled over a and the scratch after it). 1 when neither. */
static int newton_step(ModelInstance *inst, MdaeSparseLU *s, double *a, const double *F,
                       double *dx)
{
    int n = s->n, k;
    if (!sparse_factor(inst, s, a)) {
        memcpy(dx, F, sizeof(double) * (size_t)n);
        sparse_solve(s, dx);
        return 0;
    }
    memset(a, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (k = 0; k < s->nnz; k++) a[s->p->row[k] * n + s->p->col[k]] = s->a[k];
    return mdae_singular_step(n, a, F, a + n * n, dx, inst->iwork);
}

/* Damped Newton on F(u) = 0 of a sparse block (the generated `jacobian` sets the values of
 * the pattern's entries), as `mdae_newton_block` (mdae_runtime.c) with the sparse LU, and
 * simplified first: where the block keeps the factors of an earlier evaluation's Jacobian,
 * up to 6 chord steps with them are taken while each at least halves the residual, and the
 * solve ends there when the scaled step is below 1e-12 with a residual below 1e-8 (1 + |u|)
 * (converging at least linearly at rate 1/2, the error is then below the step); otherwise, or
 * when the chord steps stop contracting (their last iterate undone), Newton with the analytic
 * Jacobian at every iteration. Scratch: F, the iterate, the step (2n), the guess, then the
 * Jacobian values and the dense fallback (2n^2). */
int mdae_sparse_newton_block(ModelInstance *inst, const MdaeSparsePattern *p, const int *u,
                             void (*residual)(const ModelData *, double *),
                             void (*jacobian)(const ModelData *, double *), int block)
{
    ModelData *d = &inst->d;
    int n = p->n, it, k, fresh = 0;
    double *F = inst->work, *x0 = F + n, *dx = x0 + n, *guess = dx + 2 * n, *a = guess + n;
    double fn, last = INFINITY;
    MdaeSparseLU *s = lu_of(inst, p);
    if (!s) {
        mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: block %d [%s]: out of memory",
                 inst->d.time, block, mdae_block_labels[block]);
        return 1;
    }
    for (k = 0; k < n; k++) guess[k] = d->r[u[k]];
    residual(d, F);
    fn = mdae_norm_inf(n, F);
    for (it = 0; it < 6 && s->factored && fn > 0.0 && isfinite(fn); it++) {
        double fnew, step;
        for (k = 0; k < n; k++) x0[k] = d->r[u[k]];
        memcpy(dx, F, sizeof(double) * (size_t)n);
        sparse_solve(s, dx);
        step = mdae_newton_step_size(n, dx, x0);
        set_unknowns(d, n, u, x0, 1.0, dx);
        residual(d, F);
        fnew = mdae_norm_inf(n, F);
        if (!(fnew <= 0.5 * fn)) {
            set_unknowns(d, n, u, x0, 0.0, dx);
            residual(d, F);
            break;
        }
        fn = fnew;
        if (step <= 1e-12 && fn <= 1e-8 * (1.0 + mdae_norm_inf(n, x0))) return 0;
    }
    for (it = 0; it < mdae_info.newton_maxit; it++) {
        double step;
        if (fn == 0.0) return 0;
        if (!isfinite(fn)) break;
        for (k = 0; k < n; k++) x0[k] = d->r[u[k]];
        if (fresh) {             /* chord step: converged when it is negligible */
            memcpy(dx, F, sizeof(double) * (size_t)n);
            sparse_solve(s, dx);
            step = mdae_newton_step_size(n, dx, x0);
            if ((step <= 1e-12 || (step <= 1e-10 && step > 0.5 * last))
                && fn <= 1e-8 * (1.0 + mdae_norm_inf(n, x0))) {
                set_unknowns(d, n, u, x0, 1.0, dx);
                return 0;
            }
        }
        jacobian(d, a);
        if (newton_step(inst, s, a, F, dx)) {
            set_unknowns(d, n, u, guess, 0.0, dx);
            mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: block %d [%s]: Newton iteration: "
                     "Jacobian is numerically singular", d->time, block,
                     mdae_block_labels[block]);
            return 1;
        }
        fresh = s->factored;
        fn = mdae_newton_damped(d, n, u, residual, x0, dx, F, fn);
        last = mdae_newton_step_size(n, dx, x0);
        if (last <= 1e-12 && fn <= 1e-8 * (1.0 + mdae_norm_inf(n, x0))) return 0;
    }
    if (isfinite(fn) && fn <= 1e-10) return 0;
    set_unknowns(d, n, u, guess, 0.0, dx);
    mdae_log(inst, LOG_ERROR, fmi2Error, "t = %.17g: block %d [%s]: Newton iteration did not "
             "converge in %d iterations (residual %.3g)", d->time, block,
             mdae_block_labels[block], mdae_info.newton_maxit, fn);
    return 1;
}
