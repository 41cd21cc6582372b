/* CUDA backend (the same-shape kernels): the method's launch, the pivot
 * flags, and the device entry point (host arrays: the framework's
 * pipeline, host_pipeline.c, runs it on chunks of cells). */
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "hines/cuda/cuda_backend.h"
#include "tree/tree_impl.h"

ns_status ns_cuda_launch_method(const ns_hines_solver_t *s, const ns_cuda_state *st,
                                ns_cuda_dev *d, int64_t c0, int64_t m) {
    const int32_t n = st->n;
    double *const *w = st->grouped ? d->grouped : d->flat; /* the arrays the kernel works on */
    cudaStream_t q = d->stream;
    switch (s->method) {
    case NS_HINES_FLAT:
        NS_CUDA_TRY(ns_hines_launch_strided(n, d->parent, w[0], w[1], w[2], w[3], m, 1, c0,
                                            st->threads, d->bad, q));
        return NS_OK;
    case NS_HINES_INTERLEAVED:
    case NS_HINES_BLOCK_INTERLEAVED:
        NS_CUDA_TRY(ns_hines_launch_strided(n, d->parent, w[0], w[1], w[2], w[3], m,
                                            ns_cuda_group(s, st, m), c0, st->threads, d->bad, q));
        return NS_OK;
    case NS_HINES_BLOCK_SHARED:
        NS_CUDA_TRY(ns_hines_launch_block_shared(n, d->parent, w[0], w[1], w[2], w[3], m,
                                                 st->block_size, c0, d->bad, q));
        return NS_OK;
    case NS_HINES_ONCHIP:
        NS_CUDA_TRY(ns_hines_launch_onchip(&d->sched, w[0], w[1], w[2], w[3], m, c0, st->warps,
                                           d->bad, q));
        return NS_OK;
    default:
        return ns_fail(NS_ERR_INTERNAL, "cuda solve: method '%s' has no kernel",
                       ns_hines_method_name(s->method));
    }
}

ns_status ns_cuda_read_pivots(const ns_hines_solver_t *s, const ns_cuda_state *st) {
    /* The lowest bad cell over all GPUs (keys order by cell first). */
    unsigned long long worst = NS_PIVOT_NONE;
    for (int k = 0; k < st->n_dev; ++k) {
        const ns_cuda_dev *d = &st->dev[k];
        unsigned long long key = NS_PIVOT_NONE;
        NS_CUDA_TRY(cudaSetDevice(d->device));
        NS_CUDA_TRY(cudaMemcpy(&key, d->bad, sizeof key, cudaMemcpyDeviceToHost));
        if (key < worst) worst = key;
    }
    if (worst != NS_PIVOT_NONE)
        return ns_hines_pivot_error(s->batch, ns_pivot_cell(worst), ns_pivot_index(worst));
    return NS_OK;
}

/* A device call needs a solver of one GPU, and the caller's arrays and
 * stream on it. */
static ns_status check_device_call(const ns_hines_solver_t *s, const double *a, const double *b, const double *d,
                                   const double *rhs, cudaStream_t q) {
    const ns_cuda_state *st = s->state;
    if (st->n_dev != 1)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "%s: device arrays live on one GPU, the solver was created for %d (devices = 1)",
                       ns_hines_method_name(s->method), st->n_dev);
    const void *ptr[4] = {a, b, d, rhs};
    return ns_device_call_check(&st->call, ns_hines_method_name(s->method), ptr,
                                (size_t)ns_batch_compartments(s->batch) * sizeof(double), q);
}

/* Device arrays: the caller's Flat arrays are the kernel's (Flat, onchip)
 * or the source and target of the layout conversion (grouped methods, in
 * chunks of the solver's buffers); everything on the caller's stream. */
ns_status ns_cuda_solve_device(ns_hines_solver_t *s, const double *a, const double *b, double *d, double *rhs,
                               void *stream) {
    ns_cuda_state *st = s->state;
    cudaStream_t q = (cudaStream_t)stream;
    ns_status e = check_device_call(s, a, b, d, rhs, q);
    if (e != NS_OK) return e;
    ns_cuda_dev view = st->dev[0]; /* the buffers and plan, with the caller's stream */
    view.stream = q;
    double *caller[4] = {(double *)a, (double *)b, d, rhs};
    const int32_t n = st->n;
    NS_CUDA_TRY(cudaSetDevice(view.device));
    NS_CUDA_TRY(cudaMemsetAsync(view.bad, 0xFF, sizeof *view.bad, q));
    for (int64_t c0 = 0; c0 < view.count; c0 += view.chunk) {
        const int64_t m = view.count - c0 < view.chunk ? view.count - c0 : view.chunk;
        const size_t off = (size_t)c0 * (size_t)n;
        for (int k = 0; k < 4; ++k) view.flat[k] = caller[k] + off;
        const int64_t group = ns_cuda_group(s, st, m);
        if (st->grouped)
            for (int k = 0; k < 4; ++k)
                NS_CUDA_TRY(ns_hines_launch_layout(n, view.flat[k], view.grouped[k], m, group, 0, q));
        e = ns_cuda_launch_method(s, st, &view, c0, m);
        if (e != NS_OK) return e;
        if (st->grouped) NS_CUDA_TRY(ns_hines_launch_layout(n, view.grouped[3], view.flat[3], m, group, 1, q));
    }
    return ns_device_call_queue(&st->call, view.bad, q);
}

ns_status ns_cuda_wait(ns_hines_solver_t *s) {
    ns_cuda_state *st = s->state;
    unsigned long long key = NS_PIVOT_NONE;
    int had = 0;
    ns_status e = ns_device_call_wait(&st->call, &key, &had);
    if (e != NS_OK || !had || key == NS_PIVOT_NONE) return e;
    return ns_hines_pivot_error(s->batch, ns_pivot_cell(key), ns_pivot_index(key));
}

/* The interleaved method on caller arrays already Full-Interleaved (group =
 * the whole batch): one launch, no conversion, no solver buffers. */
ns_status ns_cuda_solve_device_interleaved(ns_hines_solver_t *s, const double *a, const double *b, double *d,
                                           double *rhs, void *stream) {
    ns_cuda_state *st = s->state;
    cudaStream_t q = (cudaStream_t)stream;
    ns_status e = check_device_call(s, a, b, d, rhs, q);
    if (e != NS_OK) return e;
    const ns_cuda_dev *dev = &st->dev[0];
    NS_CUDA_TRY(cudaSetDevice(dev->device));
    NS_CUDA_TRY(cudaMemsetAsync(dev->bad, 0xFF, sizeof *dev->bad, q));
    NS_CUDA_TRY(ns_hines_launch_strided(st->n, dev->parent, a, b, d, rhs, dev->count, dev->count, 0, st->threads,
                                        dev->bad, q));
    return ns_device_call_queue(&st->call, dev->bad, q);
}

ns_status ns_hines_convert_launch(const ns_batch_t *batch, int to_flat, const double *src, double *dst, void *stream) {
    NS_CUDA_TRY(ns_hines_launch_layout(batch->shapes[0]->size, src, dst, batch->n_cells, batch->n_cells, to_flat,
                                       (cudaStream_t)stream));
    return NS_OK;
}
