/* CUDA backend: the benchmark entry point (ns_hines_solver_benchmark).
 * When every GPU's share fits in one chunk, the inputs are uploaded once and
 * each run restores d and rhs on the device (outside the timed region) and
 * times the kernel alone with CUDA events; otherwise each run is a full
 * solve (transfers and chunks included, kernel time as in a solve). */
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "hines/cuda/cuda_backend.h"

/* Runs through full solves, restoring rhs on the host (GPU methods leave
 * the host's d untouched). */
static ns_status by_solves(ns_hines_solver_t *s, const double *a, const double *b, double *d,
                           double *rhs, int repeats, double *kernel_ms) {
    const size_t bytes = (size_t)ns_batch_compartments(s->batch) * sizeof(double);
    double *r0 = malloc(bytes);
    if (!r0) return ns_fail(NS_ERR_OUT_OF_MEMORY, "benchmark copy of %zu bytes", bytes);
    memcpy(r0, rhs, bytes);
    ns_status e = NS_OK;
    for (int r = 0; r < repeats && e == NS_OK; ++r) {
        if (r) memcpy(rhs, r0, bytes);
        e = ns_hines_solver_solve(s, a, b, d, rhs);
        kernel_ms[r] = s->timing.kernel_ms;
    }
    free(r0);
    return e;
}

/* Device copies of the pristine d and rhs for the in-place Flat methods
 * (grouped methods restore from their Flat buffers instead). */
typedef struct {
    double *d0[64], *r0[64];
    void *flush[64]; /* scratch written before each run to evict the inputs from L2 */
} spares;

/* Larger than the L2 of any current GPU (H100 50 MB, H200 60 MB): writing it
 * evicts the inputs that the restore copies left in L2, so small batches
 * are timed from device memory like large ones (BENCHMARKING.md, rule 2). */
#define NS_L2_FLUSH_BYTES ((size_t)256 << 20)

static void free_spares(const ns_cuda_state *st, spares *sp) {
    for (int k = 0; k < st->n_dev; ++k) {
        if (cudaSetDevice(st->dev[k].device) != cudaSuccess) break;
        cudaFree(sp->d0[k]);
        cudaFree(sp->r0[k]);
        cudaFree(sp->flush[k]);
    }
    (void)cudaGetLastError();
}

/* Stage inputs: upload, keep pristine copies, convert a and b once. */
static ns_status stage(const ns_hines_solver_t *s, const ns_cuda_state *st, spares *sp,
                       const double *const host[4]) {
    for (int k = 0; k < st->n_dev; ++k) {
        ns_cuda_dev *d = &st->dev[k];
        const size_t bytes = (size_t)d->count * (size_t)st->n * sizeof(double);
        const size_t off = (size_t)d->first * (size_t)st->n;
        NS_CUDA_TRY(cudaSetDevice(d->device));
        if (cudaMalloc(&sp->flush[k], NS_L2_FLUSH_BYTES) != cudaSuccess) {
            sp->flush[k] = NULL; /* no room: time without the flush */
            (void)cudaGetLastError();
        }
        NS_CUDA_TRY(cudaMemsetAsync(d->bad, 0xFF, sizeof *d->bad, d->stream));
        for (int j = 0; j < 4; ++j) /* the staging (backend_cuda.c counts it in the chunk), on first use */
            if (!d->flat[j])
                NS_CUDA_TRY(cudaMalloc((void **)&d->flat[j], (size_t)d->chunk * (size_t)st->n * sizeof(double)));
        for (int j = 0; j < 4; ++j)
            NS_CUDA_TRY(cudaMemcpyAsync(d->flat[j], host[j] + off, bytes, cudaMemcpyHostToDevice,
                                        d->stream));
        if (st->grouped) {
            const int64_t g = ns_cuda_group(s, st, d->count);
            for (int j = 0; j < 2; ++j)
                NS_CUDA_TRY(ns_hines_launch_layout(st->n, d->flat[j], d->grouped[j], d->count, g, 0,
                                                   d->stream));
        } else {
            NS_CUDA_TRY(cudaMalloc((void **)&sp->d0[k], bytes));
            NS_CUDA_TRY(cudaMalloc((void **)&sp->r0[k], bytes));
            NS_CUDA_TRY(cudaMemcpyAsync(sp->d0[k], d->flat[2], bytes, cudaMemcpyDeviceToDevice,
                                        d->stream));
            NS_CUDA_TRY(cudaMemcpyAsync(sp->r0[k], d->flat[3], bytes, cudaMemcpyDeviceToDevice,
                                        d->stream));
        }
    }
    return NS_OK;
}

/* One timed run on every GPU; kernel time = the slowest GPU's. */
static ns_status one_run(const ns_hines_solver_t *s, const ns_cuda_state *st, const spares *sp,
                         int r, double *kernel_ms) {
    for (int k = 0; k < st->n_dev; ++k) {
        ns_cuda_dev *d = &st->dev[k];
        const size_t bytes = (size_t)d->count * (size_t)st->n * sizeof(double);
        NS_CUDA_TRY(cudaSetDevice(d->device));
        if (st->grouped) {
            const int64_t g = ns_cuda_group(s, st, d->count);
            for (int j = 2; j < 4; ++j)
                NS_CUDA_TRY(ns_hines_launch_layout(st->n, d->flat[j], d->grouped[j], d->count, g, 0,
                                                   d->stream));
        } else {
            NS_CUDA_TRY(cudaMemcpyAsync(d->flat[2], sp->d0[k], bytes, cudaMemcpyDeviceToDevice,
                                        d->stream));
            NS_CUDA_TRY(cudaMemcpyAsync(d->flat[3], sp->r0[k], bytes, cudaMemcpyDeviceToDevice,
                                        d->stream));
        }
        if (sp->flush[k])
            NS_CUDA_TRY(cudaMemsetAsync(sp->flush[k], r & 0xFF, NS_L2_FLUSH_BYTES, d->stream));
        NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_K0], d->stream));
        ns_status e = ns_cuda_launch_method(s, st, d, d->first, d->count);
        if (e != NS_OK) return e;
        NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_K1], d->stream));
    }
    *kernel_ms = 0.0;
    for (int k = 0; k < st->n_dev; ++k) {
        ns_cuda_dev *d = &st->dev[k];
        float ms = 0.0f;
        NS_CUDA_TRY(cudaSetDevice(d->device));
        NS_CUDA_TRY(cudaEventSynchronize(d->ev[NS_EV_K1]));
        NS_CUDA_TRY(cudaEventElapsedTime(&ms, d->ev[NS_EV_K0], d->ev[NS_EV_K1]));
        if ((double)ms > *kernel_ms) *kernel_ms = (double)ms;
    }
    return NS_OK;
}

/* Bring the last run's x home (converting it back where needed). */
static ns_status gather(const ns_hines_solver_t *s, const ns_cuda_state *st, double *rhs,
                        double *layout_ms) {
    *layout_ms = 0.0;
    for (int k = 0; k < st->n_dev; ++k) {
        ns_cuda_dev *d = &st->dev[k];
        const size_t bytes = (size_t)d->count * (size_t)st->n * sizeof(double);
        NS_CUDA_TRY(cudaSetDevice(d->device));
        NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY2], d->stream));
        if (st->grouped)
            NS_CUDA_TRY(ns_hines_launch_layout(st->n, d->grouped[3], d->flat[3], d->count,
                                               ns_cuda_group(s, st, d->count), 1, d->stream));
        NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY3], d->stream));
        NS_CUDA_TRY(cudaMemcpyAsync(rhs + (size_t)d->first * (size_t)st->n, d->flat[3], bytes,
                                    cudaMemcpyDeviceToHost, d->stream));
        /* Time the forward conversion of all four arrays as a solve does
         * (the grouped buffers are free now that x is home). */
        NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY0], d->stream));
        if (st->grouped)
            for (int j = 0; j < 4; ++j)
                NS_CUDA_TRY(ns_hines_launch_layout(st->n, d->flat[j], d->grouped[j], d->count,
                                                   ns_cuda_group(s, st, d->count), 0, d->stream));
        NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY1], d->stream));
        NS_CUDA_TRY(cudaStreamSynchronize(d->stream));
        float back = 0.0f, forth = 0.0f;
        NS_CUDA_TRY(cudaEventElapsedTime(&back, d->ev[NS_EV_LAY2], d->ev[NS_EV_LAY3]));
        NS_CUDA_TRY(cudaEventElapsedTime(&forth, d->ev[NS_EV_LAY0], d->ev[NS_EV_LAY1]));
        if ((double)back + (double)forth > *layout_ms) *layout_ms = (double)back + (double)forth;
    }
    return NS_OK;
}

ns_status ns_cuda_benchmark(ns_hines_solver_t *s, const double *a, const double *b, double *d,
                            double *rhs, int repeats, double *kernel_ms) {
    ns_cuda_state *st = s->state;
    int one_chunk = st->n_dev <= 64;
    for (int k = 0; k < st->n_dev && one_chunk; ++k)
        if (st->dev[k].count > st->dev[k].chunk) one_chunk = 0;
    if (!one_chunk) return by_solves(s, a, b, d, rhs, repeats, kernel_ms);

    int old = 0;
    const int have_old = cudaGetDevice(&old) == cudaSuccess;
    const double *const host[4] = {a, b, d, rhs};
    spares sp;
    memset(&sp, 0, sizeof sp);
    const double t0 = ns_time_ms();
    ns_status e = stage(s, st, &sp, host);
    if (e == NS_ERR_DEVICE_MEMORY) {
        /* No room for the pristine copies: time full solves instead. */
        free_spares(st, &sp);
        if (have_old) cudaSetDevice(old);
        return by_solves(s, a, b, d, rhs, repeats, kernel_ms);
    }
    for (int r = 0; r < repeats && e == NS_OK; ++r) e = one_run(s, st, &sp, r, &kernel_ms[r]);
    double layout = 0.0;
    if (e == NS_OK) e = gather(s, st, rhs, &layout);
    if (e == NS_OK) e = ns_cuda_read_pivots(s, st);
    free_spares(st, &sp);
    if (have_old) cudaSetDevice(old);
    (void)cudaGetLastError();
    s->timing.upload_ms = -1.0; /* staged once, not timed per run */
    s->timing.download_ms = -1.0;
    s->timing.layout_ms = st->grouped ? layout : 0.0;
    s->timing.kernel_ms = repeats > 0 ? kernel_ms[repeats - 1] : -1.0;
    s->timing.total_ms = ns_time_ms() - t0;
    return e;
}
