/* The GPU sweep's per-cell phases (grad/cuda/grad_cuda.h): the assembly and
 * the Hines solve of the forward step and their transposes, one thread per
 * cell; the gathers and the loss's adjoint. Each thread walks its cell's
 * nodes in the CPU sweep's order (grad.c's solve and reverse_step). */
#include "grad/cuda/grad_cuda.h"

#define GRAD_THREADS 128

static unsigned blocks_of(int64_t n) { return (unsigned)((n + GRAD_THREADS - 1) / GRAD_THREADS); }

__global__ void grad_vinit(const grad_dev_cells c, double *v) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.nodes) v[i] = c.v_init[c.node_cell[i]];
}

/* hines' reference solve (ns_hines_solve_one) on one cell: d and r overwritten, r the solution */
__device__ static void hines_one(int32_t n, const int32_t *parent, const double *a, const double *b, double *d,
                                 double *r) {
    for (int32_t i = n - 1; i >= 1; --i) {
        const double f = a[i] / d[i];
        const int32_t p = parent[i];
        d[p] -= f * b[i];
        r[p] -= f * r[i];
    }
    r[0] /= d[0];
    for (int32_t i = 1; i < n; ++i) r[i] = (r[i] - b[i] * r[parent[i]]) / d[i];
}

__global__ void grad_solve(const grad_dev_cells c, double tm, double *v, double *rhs, double *d, double *x, double *dw,
                           int64_t step, int64_t *fault) {
    const int64_t cell = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= c.cells) return;
    const int64_t o = c.base[cell];
    const int32_t n = (int32_t)(c.base[cell + 1] - o);
    const int32_t *par = c.parent + o;
    const double *a = c.a + o, *b = c.b + o;
    double *cv = v + o, *cr = rhs + o, *cd = d + o, *cx = x + o, *cw = dw + o;
    for (int64_t q = c.stim_begin[cell]; q < c.stim_begin[cell + 1]; ++q) {
        const double i = (tm < c.stim_del[q] + c.stim_dur[q] && tm >= c.stim_del[q]) ? c.stim_amp[q] : 0.0;
        cr[c.stim_node[q]] += i * c.stim_scale[q];
    }
    for (int32_t i = 0; i < n; ++i) cd[i] += c.cap[o + i];
    for (int32_t i = 1; i < n; ++i) {
        cd[i] -= b[i];
        cd[par[i]] -= a[i];
    }
    for (int32_t i = 0; i < n; ++i) {
        cx[i] = cr[i];
        cw[i] = cd[i];
    }
    for (int32_t i = n - 1; i >= 1; --i) {
        const int32_t p = par[i];
        const double dv = cv[p] - cv[i];
        cx[i] -= b[i] * dv;
        cx[p] += a[i] * dv;
    }
    hines_one(n, par, a, b, cw, cx);
    int bad = 0;
    for (int32_t i = 0; i < n; ++i) {
        cv[i] += cx[i];
        bad |= !isfinite(cv[i]);
    }
    if (bad && fault[cell] == 0) fault[cell] = step + 1;
}

__global__ void grad_record(const grad_dev_cells c, const double *v, double *row) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < c.n_sites) row[k] = v[c.site_node[k]];
}

__global__ void grad_add(const double *v, const double *x, double *out, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v[i] + x[i];
}

__global__ void grad_rsolve(const grad_dev_cells c, const double *v, const double *x, const double *d,
                            const double *lv, double *y, double *ld, double *lvn, double *la, double *lb,
                            double *lcap) {
    const int64_t cell = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= c.cells) return;
    const int64_t o = c.base[cell];
    const int32_t n = (int32_t)(c.base[cell + 1] - o);
    const int32_t *par = c.parent + o;
    const double *a = c.a + o, *b = c.b + o, *cv = v + o, *cx = x + o;
    double *cy = y + o, *cl = ld + o, *cn = lvn + o;
    for (int32_t i = 0; i < n; ++i) {
        cy[i] = lv[o + i];
        cl[i] = d[o + i];
    }
    hines_one(n, par, b, a, cl, cy); /* A^T: the same tree, a and b exchanged */
    for (int32_t i = 0; i < n; ++i) {
        cl[i] = -cy[i] * cx[i];
        cn[i] = lv[o + i];
    }
    for (int32_t i = 1; i < n; ++i) {
        const int32_t p = par[i];
        const double dv = cv[p] - cv[i];
        lb[o + i] += -cy[i] * cx[p] - cy[i] * dv - cl[i];
        la[o + i] += -cy[p] * cx[i] + cy[p] * dv - cl[p];
        const double ldv = -b[i] * cy[i] + a[i] * cy[p];
        cn[p] += ldv;
        cn[i] -= ldv;
    }
    for (int32_t i = 0; i < n; ++i) lcap[o + i] += cl[i];
}

__global__ void grad_gather(const int *node, int64_t n, int nf, const double *y, const double *ld, double *lo) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    lo[(int64_t)nf * n + i] = y[node[i]];
    lo[(int64_t)(nf + 1) * n + i] = ld[node[i]];
}

__global__ void grad_loss(const grad_dev_cells c, const double *dldy, double *lv) {
    const int64_t cell = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= c.cells) return;
    for (int64_t q = c.site_begin[cell]; q < c.site_begin[cell + 1]; ++q) {
        const int32_t k = c.site[q];
        lv[c.site_node[k]] += dldy[k];
    }
}

extern "C" cudaError_t grad_launch_vinit(const grad_dev_cells *c, double *v, cudaStream_t s) {
    grad_vinit<<<blocks_of(c->nodes), GRAD_THREADS, 0, s>>>(*c, v);
    return cudaGetLastError();
}
extern "C" cudaError_t grad_launch_solve(const grad_dev_cells *c, double tm, double *v, double *rhs, double *d,
                                         double *x, double *dw, int64_t step, int64_t *fault, cudaStream_t s) {
    grad_solve<<<blocks_of(c->cells), GRAD_THREADS, 0, s>>>(*c, tm, v, rhs, d, x, dw, step, fault);
    return cudaGetLastError();
}
extern "C" cudaError_t grad_launch_record(const grad_dev_cells *c, const double *v, double *row, cudaStream_t s) {
    if (c->n_sites == 0) return cudaSuccess;
    grad_record<<<blocks_of(c->n_sites), GRAD_THREADS, 0, s>>>(*c, v, row);
    return cudaGetLastError();
}
extern "C" cudaError_t grad_launch_add(const double *v, const double *x, double *out, int64_t n, cudaStream_t s) {
    grad_add<<<blocks_of(n), GRAD_THREADS, 0, s>>>(v, x, out, n);
    return cudaGetLastError();
}
extern "C" cudaError_t grad_launch_rsolve(const grad_dev_cells *c, const double *v, const double *x, const double *d,
                                          const double *lv, double *y, double *ld, double *lvn, double *la,
                                          double *lb, double *lcap, cudaStream_t s) {
    grad_rsolve<<<blocks_of(c->cells), GRAD_THREADS, 0, s>>>(*c, v, x, d, lv, y, ld, lvn, la, lb, lcap);
    return cudaGetLastError();
}
extern "C" cudaError_t grad_launch_gather(const int *node, int64_t n, int nf, const double *y, const double *ld,
                                          double *lo, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    grad_gather<<<blocks_of(n), GRAD_THREADS, 0, s>>>(node, n, nf, y, ld, lo);
    return cudaGetLastError();
}
extern "C" cudaError_t grad_launch_loss(const grad_dev_cells *c, const double *dldy, double *lv, cudaStream_t s) {
    grad_loss<<<blocks_of(c->cells), GRAD_THREADS, 0, s>>>(*c, dldy, lv);
    return cudaGetLastError();
}
