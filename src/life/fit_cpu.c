/* SBBNNLS on the CPU: the vector operations of ns_life_vec_ops on host
 * arrays. Reductions sum fixed chunks in a fixed order, so the result does
 * not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pragma.h"
#include "life/life_impl.h"

#define CHUNKS 64

typedef struct cpu_ctx {
    ns_life_engine_t *e;
    int32_t nt;
} cpu_ctx;

static ns_status c_alloc(void *ctx, int64_t n, double **p) {
    (void)ctx;
    *p = malloc((size_t)(n > 0 ? n : 1) * sizeof **p);
    return *p ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "SBBNNLS vector of %lld", (long long)n);
}
static void c_release(void *ctx, double *p) {
    (void)ctx;
    free(p);
}
static ns_status c_copy(void *ctx, double *dst, const double *src, int64_t n) {
    (void)ctx;
    memcpy(dst, src, (size_t)n * sizeof *dst);
    return NS_OK;
}
static ns_status c_upload_signal(void *ctx, double *dst) {
    const ns_life_model_t *m = ((cpu_ctx *)ctx)->e->model;
    return c_copy(ctx, dst, m->Y, (int64_t)m->n_theta * m->n_voxels);
}
static ns_status c_mw(void *ctx, const double *x, double *y) { return ns_life_mw(((cpu_ctx *)ctx)->e, x, y); }
static ns_status c_mty(void *ctx, const double *y, double *x) { return ns_life_mty(((cpu_ctx *)ctx)->e, y, x); }

static ns_status c_fill(void *ctx, double *v, double value, int64_t n) {
    const int32_t nt = ((cpu_ctx *)ctx)->nt;
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static))
    for (int64_t i = 0; i < n; ++i) v[i] = value;
    return NS_OK;
}
static ns_status c_sub(void *ctx, double *a, const double *b, int64_t n) {
    const int32_t nt = ((cpu_ctx *)ctx)->nt;
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static))
    for (int64_t i = 0; i < n; ++i) a[i] -= b[i];
    return NS_OK;
}
static ns_status c_mul(void *ctx, double *a, const double *b, int64_t n) {
    const int32_t nt = ((cpu_ctx *)ctx)->nt;
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static))
    for (int64_t i = 0; i < n; ++i) a[i] *= b[i];
    return NS_OK;
}
static ns_status c_add_scalar(void *ctx, double *a, double s, int64_t n) {
    (void)ctx;
    for (int64_t i = 0; i < n; ++i) a[i] += s;
    return NS_OK;
}
static ns_status c_dot(void *ctx, const double *a, const double *b, int64_t n, double *r) {
    const int32_t nt = ((cpu_ctx *)ctx)->nt;
    (void)nt;
    double part[CHUNKS];
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static))
    for (int c = 0; c < CHUNKS; ++c) {
        double s = 0.0;
        for (int64_t i = n * c / CHUNKS; i < n * (c + 1) / CHUNKS; ++i) s += a[i] * b[i];
        part[c] = s;
    }
    double s = 0.0;
    for (int c = 0; c < CHUNKS; ++c) s += part[c];
    *r = s;
    return NS_OK;
}
static ns_status c_mask(void *ctx, double *v, const double *x, const double *g, int64_t n) {
    (void)ctx;
    for (int64_t i = 0; i < n; ++i)
        if (x[i] == 0.0 && g[i] > 0.0) v[i] = 0.0;
    return NS_OK;
}
static ns_status c_update(void *ctx, double *x, const double *g, double alpha, int64_t n) {
    (void)ctx;
    for (int64_t i = 0; i < n; ++i) {
        const double v = x[i] - alpha * g[i];
        x[i] = v > 0.0 ? v : 0.0;
    }
    return NS_OK;
}
static ns_status c_pgnorm(void *ctx, const double *x, const double *g, int64_t n, double *r) {
    (void)ctx;
    double m = 0.0;
    for (int64_t i = 0; i < n; ++i)
        if ((x[i] != 0.0 || g[i] < 0.0) && fabs(g[i]) > m) m = fabs(g[i]);
    *r = m;
    return NS_OK;
}
static ns_status c_nnz(void *ctx, const double *x, int64_t n, int64_t *r) {
    (void)ctx;
    int64_t c = 0;
    for (int64_t i = 0; i < n; ++i) c += x[i] != 0.0;
    *r = c;
    return NS_OK;
}

void ns_life_diag(const ns_life_model_t *m, double *d) {
    const int64_t T = m->n_theta;
    memset(d, 0, (size_t)m->n_fibers * sizeof *d);
    for (int64_t k = 0; k < m->n_coeffs; ++k) {
        const double *col = m->D + (int64_t)m->atom[k] * T;
        double s = 0.0;
        for (int64_t i = 0; i < T; ++i) s += col[i] * col[i];
        d[m->fiber[k]] += s * m->value[k] * m->value[k];
    }
}

static ns_status c_precond(void *ctx, double *hinv) {
    const ns_life_model_t *m = ((cpu_ctx *)ctx)->e->model;
    ns_life_diag(m, hinv);
    for (int32_t f = 0; f < m->n_fibers; ++f) {
        if (!(hinv[f] > 0.0))
            return ns_fail(NS_ERR_SINGULAR,
                           "preconditioner: fiber %d has a zero column (all its coefficients or "
                           "dictionary columns are zero)", (int)f);
        hinv[f] = 1.0 / hinv[f];
    }
    return NS_OK;
}

ns_status ns_life_cpu_fit(ns_life_engine_t *e, const ns_life_fit_options *opt, double *w,
                          double *history, ns_life_fit_result *res) {
    cpu_ctx ctx = {e, ns_life_cpu_threads(e->options.threads, e->model->n_coeffs)};
    ns_life_vec_ops o = {0};
    o.ctx = &ctx;
    o.n_fib = e->model->n_fibers;
    o.n_vox = (int64_t)e->model->n_theta * e->model->n_voxels;
    o.alloc = c_alloc;
    o.release = c_release;
    o.upload = c_copy;
    o.download = c_copy;
    o.upload_signal = c_upload_signal;
    o.mw = c_mw;
    o.mty = c_mty;
    o.fill = c_fill;
    o.copy = c_copy;
    o.sub = c_sub;
    o.mul = c_mul;
    o.add_scalar = c_add_scalar;
    o.dot = c_dot;
    o.mask = c_mask;
    o.update = c_update;
    o.pgnorm = c_pgnorm;
    o.nnz = c_nnz;
    o.precond = c_precond;
    return ns_life_sbbnnls(&o, opt, w, history, res);
}
