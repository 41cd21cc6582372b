/* CUDA backend: one solve. Each GPU takes its contiguous range of cells in
 * chunks; in every round each GPU uploads a chunk, converts it to the
 * method's layout, solves, converts rhs back, and then the host downloads
 * the solutions (x only: d is left unspecified on the GPU, see hines.h).
 * Kernels of different GPUs run at the same time: one host thread launches
 * all of a round's work before it waits for any download.
 *
 * Timing (ns_solve_timing): kernel_ms, layout_ms and upload_ms are CUDA-event
 * times summed over a GPU's chunks, the largest over GPUs (they run side by
 * side); download_ms and total_ms are host wall-clock times. */
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "hines/cuda/cuda_backend.h"

typedef struct {
    double upload, layout, kernel;
} dev_times;

static ns_status elapsed(cudaEvent_t from, cudaEvent_t to, double *acc) {
    float ms = 0.0f;
    NS_CUDA_TRY(cudaEventElapsedTime(&ms, from, to));
    *acc += (double)ms;
    return NS_OK;
}

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

/* Queue one chunk of m cells starting at batch cell c0 on device d. */
static ns_status enqueue(const ns_hines_solver_t *s, ns_cuda_state *st, ns_cuda_dev *d,
                         int64_t c0, int64_t m, const double *const host[4]) {
    const int32_t n = st->n;
    const size_t bytes = (size_t)m * (size_t)n * sizeof(double);
    const size_t off = (size_t)c0 * (size_t)n;
    cudaStream_t q = d->stream;
    NS_CUDA_TRY(cudaSetDevice(d->device));
    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_UP0], q));
    for (int k = 0; k < 4; ++k) {
        ns_status e = ns_stage_upload(st->stage, d->flat[k], host[k] + off, bytes, q);
        if (e != NS_OK) return e;
    }
    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_UP1], q));

    const int64_t group = ns_cuda_group(s, st, m);
    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY0], q));
    if (st->grouped)
        for (int k = 0; k < 4; ++k)
            NS_CUDA_TRY(ns_hines_launch_layout(n, d->flat[k], d->grouped[k], m, group, 0, q));
    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY1], q));

    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_K0], q));
    ns_status e = ns_cuda_launch_method(s, st, d, c0, m);
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_K1], q));

    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY2], q));
    if (st->grouped)
        NS_CUDA_TRY(ns_hines_launch_layout(n, d->grouped[3], d->flat[3], m, group, 1, q));
    NS_CUDA_TRY(cudaEventRecord(d->ev[NS_EV_LAY3], q));
    return NS_OK;
}

/* Download chunk's x into host rhs and add its event times. */
static ns_status finish(ns_cuda_state *st, ns_cuda_dev *d, int64_t c0, int64_t m,
                        double *rhs, dev_times *t) {
    const size_t bytes = (size_t)m * (size_t)st->n * sizeof(double);
    NS_CUDA_TRY(cudaSetDevice(d->device));
    ns_status e = ns_stage_download(st->stage, rhs + (size_t)c0 * (size_t)st->n, d->flat[3], bytes, d->stream);
    if (e != NS_OK) return e;
    e = elapsed(d->ev[NS_EV_UP0], d->ev[NS_EV_UP1], &t->upload);
    if (e == NS_OK) e = elapsed(d->ev[NS_EV_LAY0], d->ev[NS_EV_LAY1], &t->layout);
    if (e == NS_OK) e = elapsed(d->ev[NS_EV_LAY2], d->ev[NS_EV_LAY3], &t->layout);
    if (e == NS_OK) e = elapsed(d->ev[NS_EV_K0], d->ev[NS_EV_K1], &t->kernel);
    return e;
}

static ns_status run(ns_hines_solver_t *s, ns_cuda_state *st, const double *const host[4],
                     double *rhs) {
    dev_times times[64];
    dev_times *t = times;
    if (st->n_dev > 64) return ns_fail(NS_ERR_UNSUPPORTED, "more than 64 GPUs");
    memset(times, 0, sizeof times);
    const double t0 = ns_time_ms();
    double download = 0.0;

    int64_t rounds = 0;
    for (int k = 0; k < st->n_dev; ++k) {
        ns_cuda_dev *d = &st->dev[k];
        NS_CUDA_TRY(cudaSetDevice(d->device));
        NS_CUDA_TRY(cudaMemsetAsync(d->bad, 0xFF, sizeof *d->bad, d->stream));
        const int64_t r = (d->count + d->chunk - 1) / d->chunk;
        if (r > rounds) rounds = r;
    }
    for (int64_t r = 0; r < rounds; ++r) {
        for (int k = 0; k < st->n_dev; ++k) {
            ns_cuda_dev *d = &st->dev[k];
            const int64_t c0 = d->first + r * d->chunk, end = d->first + d->count;
            if (c0 >= end) continue;
            ns_status e = enqueue(s, st, d, c0, end - c0 < d->chunk ? end - c0 : d->chunk, host);
            if (e != NS_OK) return e;
        }
        const double w0 = ns_time_ms();
        for (int k = 0; k < st->n_dev; ++k) {
            ns_cuda_dev *d = &st->dev[k];
            const int64_t c0 = d->first + r * d->chunk, end = d->first + d->count;
            if (c0 >= end) continue;
            ns_status e = finish(st, d, c0, end - c0 < d->chunk ? end - c0 : d->chunk, rhs, &t[k]);
            if (e != NS_OK) return e;
        }
        download += ns_time_ms() - w0;
    }

    ns_solve_timing *out = &s->timing;
    out->upload_ms = out->layout_ms = out->kernel_ms = 0.0;
    for (int k = 0; k < st->n_dev; ++k) {
        if (t[k].upload > out->upload_ms) out->upload_ms = t[k].upload;
        if (t[k].layout > out->layout_ms) out->layout_ms = t[k].layout;
        if (t[k].kernel > out->kernel_ms) out->kernel_ms = t[k].kernel;
    }
    if (!st->grouped) out->layout_ms = 0.0;
    out->download_ms = download;
    ns_status e = ns_cuda_read_pivots(s, st);
    out->total_ms = ns_time_ms() - t0;
    return e;
}

ns_status ns_cuda_solve(ns_hines_solver_t *s, const double *a, const double *b, double *d,
                        double *rhs) {
    ns_cuda_state *st = s->state;
    const double *const host[4] = {a, b, d, rhs};
    int old = 0;
    const int have_old = cudaGetDevice(&old) == cudaSuccess;
    ns_status e = run(s, st, host, rhs);
    if (have_old) cudaSetDevice(old);
    (void)cudaGetLastError();
    return e;
}

/* Device arrays: the caller's Flat arrays are the kernel's (Flat, onchip)
 * or the source and target of the layout conversion (grouped methods, in
 * chunks of the solver's buffers); everything on the caller's stream. */
ns_status ns_cuda_solve_device(ns_hines_solver_t *s, const double *a, const double *b, double *d, double *rhs,
                               void *stream) {
    ns_cuda_state *st = s->state;
    if (st->n_dev != 1)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "%s: device arrays live on one GPU, the solver was created for %d (devices = 1)",
                       ns_hines_method_name(s->method), st->n_dev);
    cudaStream_t q = (cudaStream_t)stream;
    const void *ptr[4] = {a, b, d, rhs};
    ns_status e = ns_device_call_check(&st->call, ns_hines_method_name(s->method), ptr,
                                       (size_t)ns_batch_compartments(s->batch) * sizeof(double), q);
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
