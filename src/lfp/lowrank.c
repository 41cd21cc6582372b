/* LOWRANK storage (docs/extracellular.md, "Memory"): each cell's block of
 * coefficients, electrodes x its compartments, kept as U_k V_k of rank r_k
 * from a truncated Householder QR with column pivoting, with the residual's
 * row norms for a rigorous per-sample error bound. The kernel 1/r between a
 * cell and contacts away from it is smooth, so such blocks have low
 * numerical rank; a sample then costs 2 sum_k r_k (E + n_k) flops instead of
 * 2 E N. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lfp/lfp_impl.h"

#ifdef _OPENMP
#include <omp.h>
#define NS_PRAGMA(x) _Pragma(#x)
#else
#define NS_PRAGMA(x)
#endif

struct lfp_lowrank {
    int64_t n_el, n_cells;
    int32_t n_pop;
    int32_t *rank;         /* n_cells */
    double **U;            /* per cell: n_el x r_k, row-major */
    double **V;            /* per cell: r_k x n_k, row-major (the compartments in Flat order) */
    int64_t *owner;        /* n_cells: the cell whose U and V these are (itself, or a twin's: shared) */
    double *rho;           /* n_cells x n_el: each residual row's 2-norm */
    int64_t *w_off;        /* n_cells + 1: cell k's rows of W from w_off[k] */
    double *W;             /* w_off[n_cells] x NS_LFP_BLOCK: V_k i_k of the buffered samples */
    double *inorm;         /* n_cells x NS_LFP_BLOCK: ||i_k||_2 of the buffered samples */
    double *acc;           /* threads x n_pop x NS_LFP_BLOCK */
    double *err;           /* NS_LFP_BLOCK x n_el: the bound's sums of the buffered samples */
    int32_t threads;
};

static double norm2(const double *x, int64_t n, int64_t stride) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += x[i * stride] * x[i * stride];
    return sqrt(s);
}

static void swap_columns(double *A, int64_t m, int64_t a, int64_t b) {
    double *x = A + a * m, *y = A + b * m;
    for (int64_t i = 0; i < m; ++i) {
        const double t = x[i];
        x[i] = y[i], y[i] = t;
    }
}

/* Householder reflector of x (len entries) as LAPACK's dlarfg: x becomes
 * beta and the vector's tail (its head 1 implied); returns tau. */
static double reflector(double *x, int64_t len) {
    const double alpha = x[0], xn = norm2(x + 1, len - 1, 1);
    if (xn == 0.0) return 0.0;
    const double beta = -copysign(hypot(alpha, xn), alpha), s = 1.0 / (alpha - beta);
    for (int64_t i = 1; i < len; ++i) x[i] *= s;
    x[0] = beta;
    return (beta - alpha) / beta;
}

int64_t ns_lfp_pqr(double *A, int64_t m, int64_t n, double tol, double *tau, int64_t *perm, double *cn) {
    double *cn0 = cn + n, total = 0.0;
    for (int64_t j = 0; j < n; ++j) {
        perm[j] = j;
        cn[j] = cn0[j] = norm2(A + j * m, m, 1);
        total += cn[j] * cn[j];
    }
    const int64_t kmax = m < n ? m : n;
    const double stop = tol * tol * total, tiny = sqrt(DBL_EPSILON);
    for (int64_t k = 0; k < kmax; ++k) {
        double rest = 0.0; /* the trailing block's squared Frobenius norm: the residual of rank k */
        int64_t p = k;
        for (int64_t j = k; j < n; ++j) {
            rest += cn[j] * cn[j];
            if (cn[j] > cn[p]) p = j;
        }
        if (rest <= stop) return k;
        if (p != k) {
            swap_columns(A, m, k, p);
            int64_t t = perm[k];
            perm[k] = perm[p], perm[p] = t;
            double c = cn[k];
            cn[k] = cn[p], cn[p] = c;
            c = cn0[k], cn0[k] = cn0[p], cn0[p] = c;
        }
        double *v = A + k * m + k;
        const int64_t len = m - k;
        tau[k] = reflector(v, len);
        for (int64_t j = k + 1; j < n; ++j) {
            double *col = A + j * m + k, s = col[0];
            for (int64_t i = 1; i < len; ++i) s += v[i] * col[i];
            s *= tau[k];
            col[0] -= s;
            for (int64_t i = 1; i < len; ++i) col[i] -= s * v[i];
            if (cn[j] == 0.0) continue;
            /* the column's norm below row k, downdated (LAPACK's dlaqp2), recomputed when it cancels */
            double t = fabs(col[0]) / cn[j];
            t = fmax(0.0, (1.0 + t) * (1.0 - t));
            const double r = cn[j] / cn0[j];
            if (t * r * r <= tiny) cn[j] = cn0[j] = norm2(col + 1, len - 1, 1);
            else cn[j] *= sqrt(t);
        }
    }
    return kmax;
}

/* Q's first r columns (m x r, row-major into U) from the reflectors in A's
 * lower part (LAPACK's dorg2r, backwards). */
static void form_q(const double *A, int64_t m, int64_t r, const double *tau, double *U) {
    memset(U, 0, (size_t)(m * r) * sizeof *U);
    for (int64_t i = 0; i < r; ++i) U[i * r + i] = 1.0;
    for (int64_t k = r - 1; k >= 0; --k) {
        const double *v = A + k * m + k;
        for (int64_t j = k; j < r; ++j) {
            double s = U[k * r + j];
            for (int64_t i = k + 1; i < m; ++i) s += v[i - k] * U[i * r + j];
            s *= tau[k];
            U[k * r + j] -= s;
            for (int64_t i = k + 1; i < m; ++i) U[i * r + j] -= s * v[i - k];
        }
    }
}

/* Cell k's factors from its block B (E x n, row-major; kept): U_k, V_k and
 * the residual's row norms, each computed from B itself (B - U_k V_k), so
 * that the bound holds for the factors as stored. 1 when out of memory. */
static int factor_block(lfp_lowrank *lr, int64_t c, const double *B, int64_t n, double tol) {
    const int64_t E = lr->n_el, kmax = E < n ? E : n;
    double *A = malloc((size_t)(E * n + kmax + 2 * n) * sizeof *A);
    int64_t *perm = malloc((size_t)(n > 0 ? n : 1) * sizeof *perm);
    if (!A || !perm) {
        free(A), free(perm);
        return 1;
    }
    double *tau = A + E * n, *cn = tau + kmax;
    for (int64_t e = 0; e < E; ++e) /* column-major for the reflections */
        for (int64_t j = 0; j < n; ++j) A[j * E + e] = B[e * n + j];
    const int64_t r = ns_lfp_pqr(A, E, n, tol, tau, perm, cn);
    double *U = malloc((size_t)(E * r + 1) * sizeof *U), *V = calloc((size_t)(r * n + 1), sizeof *V);
    if (!U || !V) {
        free(A), free(perm), free(U), free(V);
        return 1;
    }
    form_q(A, E, r, tau, U);
    for (int64_t i = 0; i < r; ++i) /* V = R P^T: R's rows, each entry back in its column's place */
        for (int64_t j = i; j < n; ++j) V[i * n + perm[j]] = A[j * E + i];
    double *res = A; /* B's rows minus U V's, one at a time */
    for (int64_t e = 0; e < E; ++e) {
        memcpy(res, B + e * n, (size_t)n * sizeof *res);
        for (int64_t i = 0; i < r; ++i) {
            const double u = U[e * r + i], *vi = V + i * n;
            for (int64_t j = 0; j < n; ++j) res[j] -= u * vi[j];
        }
        lr->rho[c * E + e] = norm2(res, n, 1);
    }
    free(A), free(perm);
    lr->rank[c] = (int32_t)r, lr->U[c] = U, lr->V[c] = V;
    return 0;
}

lfp_lowrank *ns_lfp_lowrank_new(int64_t n_el, int64_t n_cells, int32_t n_pop, int32_t threads) {
    lfp_lowrank *lr = calloc(1, sizeof *lr);
    if (!lr) return NULL;
    lr->n_el = n_el, lr->n_cells = n_cells, lr->n_pop = n_pop, lr->threads = threads < 1 ? 1 : threads;
    lr->rank = calloc((size_t)n_cells + 1, sizeof *lr->rank);
    lr->U = calloc((size_t)n_cells + 1, sizeof *lr->U);
    lr->V = calloc((size_t)n_cells + 1, sizeof *lr->V);
    lr->owner = calloc((size_t)n_cells + 1, sizeof *lr->owner);
    lr->rho = malloc(((size_t)n_cells * (size_t)n_el + 1) * sizeof *lr->rho);
    lr->w_off = malloc(((size_t)n_cells + 1) * sizeof *lr->w_off);
    lr->inorm = malloc(((size_t)n_cells + 1) * NS_LFP_BLOCK * sizeof *lr->inorm);
    lr->acc = malloc((size_t)lr->threads * (size_t)n_pop * NS_LFP_BLOCK * sizeof *lr->acc);
    lr->err = malloc((size_t)n_el * NS_LFP_BLOCK * sizeof *lr->err);
    if (!lr->err || !lr->rank || !lr->U || !lr->V || !lr->owner || !lr->rho || !lr->w_off || !lr->inorm || !lr->acc) {
        ns_lfp_lowrank_free(lr);
        return NULL;
    }
    for (int64_t c = 0; c < n_cells; ++c) lr->owner[c] = c;
    return lr;
}

void ns_lfp_lowrank_free(lfp_lowrank *lr) {
    if (!lr) return;
    if (lr->U && lr->V && lr->owner) ns_lfp_lowrank_drop(lr);
    free(lr->rank), free(lr->U), free(lr->V), free(lr->owner), free(lr->rho), free(lr->w_off), free(lr->W);
    free(lr->inorm);
    free(lr->acc), free(lr->err);
    free(lr);
}

void ns_lfp_lowrank_drop(lfp_lowrank *lr) {
    for (int64_t c = 0; c < lr->n_cells; ++c) {
        if (lr->owner[c] == c) free(lr->U[c]), free(lr->V[c]);
        lr->U[c] = lr->V[c] = NULL;
    }
}

void ns_lfp_lowrank_share(lfp_lowrank *lr, int64_t c, int64_t twin) {
    lr->rank[c] = lr->rank[twin], lr->U[c] = lr->U[twin], lr->V[c] = lr->V[twin], lr->owner[c] = twin;
    memcpy(lr->rho + c * lr->n_el, lr->rho + twin * lr->n_el, (size_t)lr->n_el * sizeof *lr->rho);
}

int ns_lfp_lowrank_factor(lfp_lowrank *lr, int64_t c, const double *B, int64_t n, double tol) {
    return factor_block(lr, c, B, n, tol > 0.0 ? tol : NS_LFP_RANK_TOLERANCE);
}

int64_t ns_lfp_lowrank_finish(lfp_lowrank *lr, const int64_t *cell_offset) {
    int64_t kept = 0;
    lr->w_off[0] = 0;
    for (int64_t c = 0; c < lr->n_cells; ++c) {
        const int64_t r = lr->rank[c], n = cell_offset[c + 1] - cell_offset[c];
        lr->w_off[c + 1] = lr->w_off[c] + r;
        kept += 8 * r * (lr->n_el + (lr->owner[c] == c ? n : 0)) + 8 * lr->n_el; /* a twin: its U on the GPU */
    }
    lr->W = malloc(((size_t)lr->w_off[lr->n_cells] + 1) * NS_LFP_BLOCK * sizeof *lr->W);
    return lr->W ? kept : -1;
}

const int32_t *ns_lfp_lowrank_ranks(const lfp_lowrank *lr) { return lr ? lr->rank : NULL; }

int64_t ns_lfp_lowrank_owner(const lfp_lowrank *lr, int64_t c) { return lr->owner[c]; }

void ns_lfp_lowrank_cell(const lfp_lowrank *lr, int64_t c, const double **U, const double **V, const double **rho) {
    *U = lr->U[c], *V = lr->V[c], *rho = lr->rho + c * lr->n_el;
}

/* W_k = V_k I_k and ||i_k|| of the nb buffered samples, cell by cell. */
static void project(lfp_lowrank *lr, const double *I, const int64_t *off, int32_t nb, int nt) {
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 4) if (nt > 1))
    for (int64_t c = 0; c < lr->n_cells; ++c) {
        const int64_t o = off[c], n = off[c + 1] - o, r = lr->rank[c];
        double *w = lr->W + lr->w_off[c] * NS_LFP_BLOCK, *s = lr->inorm + c * NS_LFP_BLOCK;
        for (int32_t b = 0; b < NS_LFP_BLOCK; ++b) s[b] = 0.0;
        for (int64_t j = 0; j < n; ++j)
            for (int32_t b = 0; b < nb; ++b) s[b] += I[(o + j) * NS_LFP_BLOCK + b] * I[(o + j) * NS_LFP_BLOCK + b];
        for (int32_t b = 0; b < nb; ++b) s[b] = sqrt(s[b]);
        for (int64_t i = 0; i < r; ++i) {
            double a[NS_LFP_BLOCK] = {0};
            const double *v = lr->V[c] + i * n;
            for (int64_t j = 0; j < n; ++j) {
                const double *ij = I + (o + j) * NS_LFP_BLOCK;
                for (int32_t b = 0; b < nb; ++b) a[b] += v[j] * ij[b];
            }
            memcpy(w + i * NS_LFP_BLOCK, a, sizeof a);
        }
    }
}

void ns_lfp_lowrank_apply(lfp_lowrank *lr, const double *I, const int64_t *off, const int32_t *pop, int32_t nb,
                          int nt, double *phi, double *phi_pop, double *worst) {
    const int64_t ne = lr->n_el, nc = lr->n_cells;
    const int32_t np = lr->n_pop;
    if (nt > lr->threads) nt = lr->threads;
    project(lr, I, off, nb, nt);
    /* each electrode's sum over the cells in order (per population), then
     * the bound's sum_k rho_ke ||i_k||: the same for any thread count */
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static) if (nt > 1))
    for (int64_t e = 0; e < ne; ++e) {
        double *acc = ns_lfp_thread_acc(lr->acc, np);
        double err[NS_LFP_BLOCK] = {0};
        for (int64_t c = 0; c < nc; ++c) {
            double *a = acc + (size_t)(pop ? pop[c] : 0) * NS_LFP_BLOCK;
            const int64_t r = lr->rank[c];
            const double *u = lr->U[c] + e * r, *w = lr->W + lr->w_off[c] * NS_LFP_BLOCK;
            const double rho = lr->rho[c * ne + e], *s = lr->inorm + c * NS_LFP_BLOCK;
            for (int64_t i = 0; i < r; ++i)
                for (int32_t b = 0; b < nb; ++b) a[b] += u[i] * w[i * NS_LFP_BLOCK + b];
            for (int32_t b = 0; b < nb; ++b) err[b] += rho * s[b];
        }
        for (int32_t b = 0; b < nb; ++b) {
            double total = 0.0;
            for (int32_t p = 0; p < np; ++p) {
                if (phi_pop) phi_pop[((int64_t)b * np + p) * ne + e] = acc[p * NS_LFP_BLOCK + b];
                total += acc[p * NS_LFP_BLOCK + b];
            }
            phi[(int64_t)b * ne + e] = total;
            lr->err[(int64_t)b * ne + e] = err[b];
        }
    }
    for (int32_t b = 0; b < nb; ++b) {
        worst[b] = 0.0;
        for (int64_t e = 0; e < ne; ++e) worst[b] = fmax(worst[b], lr->err[(int64_t)b * ne + e]);
    }
}
