/* The CUDA backend of the tridiagonal solvers: device buffers allocated once
 * per solver, layout conversion on the device, kernel launches through the
 * launchers of kernels.h, cuSPARSE calls, CUDA-event timings. Host logic
 * only: the kernels live in thomas.cu and onchip.cu. */
#include <stdlib.h>
#include <string.h>

#include "core/cuda/device_args.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "tridiag/cuda/cusparse_check.h"
#include "tridiag/cuda/kernels.h"
#include "tridiag/tridiag_impl.h"

/* Timed phases of a solve, summed from CUDA event pairs. */
enum { PH_UPLOAD, PH_LAYOUT, PH_KERNEL, PH_DOWNLOAD, PH_CHECK, PH_COUNT };
#define NS_TD_MARKS 24

typedef struct cuda_state {
    cudaStream_t own;           /* the host-array calls' stream (created here, synchronised by them) */
    cudaStream_t q;             /* the stream of the call under way: own, or the caller's */
    int timed;                  /* 1: record the phase events (host-array calls only) */
    ns_device_key key;          /* the device call's pivot key, read by wait */
    cudaEvent_t ev[2 * NS_TD_MARKS];
    int phase[NS_TD_MARKS];
    int marks;
    size_t elem;                /* [bytes] per entry: 4 or 8 */
    ns_tridiag_layout native;   /* what the kernel reads */
    int64_t native_len;         /* entries of each native array (n or nmax, times batch) */
    void *buf[4];               /* native dl, d, du, x */
    int convert;                /* 1: the caller's layout is converted on the device */
    void *stage;                /* one array in the caller's (dense) layout, when convert */
    int64_t stage_len;
    int32_t *sizes;             /* device sizes (VBatch methods) */
    int64_t *offsets;           /* device offsets (variable Flat) */
    unsigned long long *err;    /* device pivot-failure slot */
    unsigned long long carry;   /* a pending device call's key, read early by a host-array call */
    cusparseHandle_t sparse;
    void *work;                 /* cuSPARSE workspace */
    size_t work_bytes;
} cuda_state;

static int is_cusparse(ns_tridiag_method m) {
    return m == NS_TRIDIAG_CUSPARSE_STRIDED || m == NS_TRIDIAG_CUSPARSE_INTERLEAVED;
}

/* ------------------------------------------------------------- timing */

static ns_status mark_begin(cuda_state *st, int phase) {
    if (!st->timed || st->marks >= NS_TD_MARKS) return NS_OK; /* untimed beyond the pool; never happens in practice */
    st->phase[st->marks] = phase;
    NS_CUDA_TRY(cudaEventRecord(st->ev[2 * st->marks], st->q));
    return NS_OK;
}

static ns_status mark_end(cuda_state *st) {
    if (!st->timed || st->marks >= NS_TD_MARKS) return NS_OK;
    NS_CUDA_TRY(cudaEventRecord(st->ev[2 * st->marks + 1], st->q));
    ++st->marks;
    return NS_OK;
}

static ns_status collect_timing(ns_tridiag_solver_t *solver, cuda_state *st) {
    double ms[PH_COUNT];
    int seen[PH_COUNT] = {0};
    for (int p = 0; p < PH_COUNT; ++p) ms[p] = 0.0;
    NS_CUDA_TRY(cudaStreamSynchronize(st->q));
    for (int m = 0; m < st->marks; ++m) {
        float t = 0.0f;
        NS_CUDA_TRY(cudaEventElapsedTime(&t, st->ev[2 * m], st->ev[2 * m + 1]));
        ms[st->phase[m]] += (double)t;
        seen[st->phase[m]] = 1;
    }
    solver->timing.upload_ms = seen[PH_UPLOAD] ? ms[PH_UPLOAD] : -1.0;
    solver->timing.layout_ms = seen[PH_LAYOUT] ? ms[PH_LAYOUT] : -1.0;
    solver->timing.kernel_ms = seen[PH_KERNEL] ? ms[PH_KERNEL] : -1.0;
    solver->timing.download_ms = seen[PH_DOWNLOAD] ? ms[PH_DOWNLOAD] : -1.0;
    st->marks = 0;
    return NS_OK;
}

/* ------------------------------------------------------ create/destroy */

static void cuda_destroy(ns_tridiag_solver_t *solver) {
    cuda_state *st = solver->state;
    if (!st) return;
    /* A device call still queued on the caller's stream uses the buffers
     * freed below: wait for it (its event only, not the device). */
    unsigned long long key;
    int had = 0;
    (void)ns_device_key_wait(&st->key, &key, &had);
    ns_device_key_free(&st->key);
    for (int i = 0; i < 4; ++i) cudaFree(st->buf[i]);
    cudaFree(st->stage);
    cudaFree(st->sizes);
    cudaFree(st->offsets);
    cudaFree(st->err);
    cudaFree(st->work);
    if (st->sparse) cusparseDestroy(st->sparse);
    ns_cuda_queue_destroy(st->own, st->ev, 2 * NS_TD_MARKS);
    (void)cudaGetLastError();
    free(st);
    solver->state = NULL;
}

static ns_status device_alloc(ns_tridiag_solver_t *solver, void **p, size_t bytes, const char *what) {
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return ns_fail(e == cudaErrorMemoryAllocation ? NS_ERR_DEVICE_MEMORY : NS_ERR_CUDA,
                       "tridiag (%s): cudaMalloc of %zu bytes for %s: %s",
                       ns_tridiag_method_name(solver->method), bytes, what, cudaGetErrorString(e));
    }
    solver->device_bytes += bytes;
    return NS_OK;
}

static cusparseStatus_t sparse_buffer_size(ns_tridiag_solver_t *solver, cuda_state *st, size_t *bytes) {
    const int n = solver->n, b = (int)solver->batch;
    const int f32 = solver->precision == NS_TRIDIAG_FLOAT32;
    if (solver->method == NS_TRIDIAG_CUSPARSE_STRIDED)
        return f32 ? cusparseSgtsv2StridedBatch_bufferSizeExt(st->sparse, n, st->buf[0], st->buf[1],
                                                              st->buf[2], st->buf[3], b, n, bytes)
                   : cusparseDgtsv2StridedBatch_bufferSizeExt(st->sparse, n, st->buf[0], st->buf[1],
                                                              st->buf[2], st->buf[3], b, n, bytes);
    return f32 ? cusparseSgtsvInterleavedBatch_bufferSizeExt(st->sparse, 0, n, st->buf[0], st->buf[1],
                                                             st->buf[2], st->buf[3], b, bytes)
               : cusparseDgtsvInterleavedBatch_bufferSizeExt(st->sparse, 0, n, st->buf[0], st->buf[1],
                                                             st->buf[2], st->buf[3], b, bytes);
}

static ns_status cuda_create(ns_tridiag_solver_t *solver) {
    NS_CUDA_TRY(cudaSetDevice(solver->device)); /* solver.c gives the caller's device back */
    cuda_state *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag: no memory for the CUDA state");
    solver->state = st;
    solver->device_bytes = 0;
    solver->workspace_bytes = 0;
    ns_status s = NS_OK;
    const ns_tridiag_method m = solver->method;
    const int vbatch = m == NS_TRIDIAG_VBATCH_CP || m == NS_TRIDIAG_VBATCH_NCP;
    st->elem = solver->precision == NS_TRIDIAG_FLOAT32 ? sizeof(float) : sizeof(double);
    st->native = ns_tridiag_method_layout(m);
    st->native_len = (int64_t)solver->n * solver->batch;
    st->convert = solver->variable ? solver->layout == NS_TRIDIAG_FLAT : solver->layout != st->native;
    st->stage_len = solver->variable ? solver->length : st->native_len;

    st->carry = NS_TD_NO_ERROR;
    /* The host-array calls' own stream: they synchronise it (and nothing
     * else) before returning. Device calls run on the caller's stream. */
    NS_CUDA_GOTO(cudaStreamCreateWithFlags(&st->own, cudaStreamNonBlocking), s, fail);
    st->q = st->own;
    if ((s = ns_device_key_init(&st->key)) != NS_OK) goto fail;
    for (int i = 0; i < 2 * NS_TD_MARKS; ++i) NS_CUDA_GOTO(cudaEventCreate(&st->ev[i]), s, fail);
    static const char *const names[4] = {"dl", "d", "du", "x"};
    for (int i = 0; i < 4; ++i)
        if ((s = device_alloc(solver, &st->buf[i], (size_t)st->native_len * st->elem, names[i])) != NS_OK)
            goto fail;
    if (st->convert &&
        (s = device_alloc(solver, &st->stage, (size_t)st->stage_len * st->elem, "the layout stage")) != NS_OK)
        goto fail;
    if ((s = device_alloc(solver, (void **)&st->err, sizeof *st->err, "the error slot")) != NS_OK) goto fail;
    /* clean between calls: host calls reset it after a failure, device calls' wait after reading it */
    NS_CUDA_GOTO(cudaMemsetAsync(st->err, 0xff, sizeof *st->err, st->own), s, fail);
    NS_CUDA_GOTO(cudaStreamSynchronize(st->own), s, fail); /* before any call on a caller's stream */
    if (vbatch) {
        const size_t bytes = (size_t)solver->batch * sizeof(int32_t);
        if ((s = device_alloc(solver, (void **)&st->sizes, bytes, "sizes")) != NS_OK) goto fail;
        if (solver->variable) {
            NS_CUDA_GOTO(cudaMemcpyAsync(st->sizes, solver->sizes, bytes, cudaMemcpyHostToDevice, st->own), s, fail);
        } else { /* a fixed-size batch through the VBatch kernels: every size is n */
            int32_t *h = malloc(bytes);
            if (!h) {
                s = ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag: no memory for %lld sizes", (long long)solver->batch);
                goto fail;
            }
            for (int64_t i = 0; i < solver->batch; ++i) h[i] = solver->n;
            cudaError_t e = cudaMemcpyAsync(st->sizes, h, bytes, cudaMemcpyHostToDevice, st->own);
            if (e == cudaSuccess) e = cudaStreamSynchronize(st->own); /* before h is freed */
            free(h);
            NS_CUDA_GOTO(e, s, fail);
        }
    }
    if (solver->variable && solver->layout == NS_TRIDIAG_FLAT) {
        const size_t bytes = (size_t)(solver->batch + 1) * sizeof(int64_t);
        if ((s = device_alloc(solver, (void **)&st->offsets, bytes, "offsets")) != NS_OK) goto fail;
        NS_CUDA_GOTO(cudaMemcpyAsync(st->offsets, solver->offsets, bytes, cudaMemcpyHostToDevice, st->own), s,
                     fail);
    }
    if (is_cusparse(m)) {
        const ns_cusparse_api *api = NULL;
        if ((s = ns_cusparse_load(&api)) != NS_OK) goto fail;
        NS_CUSPARSE_GOTO(cusparseCreate(&st->sparse), s, fail);
        NS_CUSPARSE_GOTO(cusparseSetStream(st->sparse, st->own), s, fail);
        NS_CUSPARSE_GOTO(sparse_buffer_size(solver, st, &st->work_bytes), s, fail);
        if (st->work_bytes &&
            (s = device_alloc(solver, &st->work, st->work_bytes, "the cuSPARSE workspace")) != NS_OK)
            goto fail;
        solver->workspace_bytes = st->work_bytes;
    }
    /* The table uploads above ran on the solver's own stream; finish them
     * now, so that a device call on any stream of the caller finds them. */
    NS_CUDA_GOTO(cudaStreamSynchronize(st->own), s, fail);
    return NS_OK;
fail:
    cuda_destroy(solver);
    solver->device_bytes = solver->workspace_bytes = 0;
    return s;
}

/* -------------------------------------------------- copies and layouts */

/* The caller's arrays as rows of `width` entries `pitch` entries apart. */
static void caller_shape(const ns_tridiag_solver_t *solver, int64_t *width, int64_t *height,
                         int64_t *pitch) {
    if (solver->variable && solver->layout == NS_TRIDIAG_FLAT) {
        *width = *pitch = solver->length; /* offsets place the systems: copy the whole extent */
        *height = 1;
    } else if (solver->layout == NS_TRIDIAG_FLAT) {
        *width = solver->n;
        *height = solver->batch;
        *pitch = solver->stride;
    } else {
        *width = solver->batch;
        *height = solver->n;
        *pitch = solver->stride;
    }
}

static int caller_dense(const ns_tridiag_solver_t *solver) {
    int64_t w, h, p;
    caller_shape(solver, &w, &h, &p);
    return w == p;
}

/* Copy between a caller array (to_caller: dst) and a dense one. */
static ns_status copy_caller(const ns_tridiag_solver_t *solver, cuda_state *st, void *dst,
                             const void *src, enum cudaMemcpyKind kind, int to_caller) {
    int64_t w, h, p;
    caller_shape(solver, &w, &h, &p);
    const size_t row = (size_t)w * st->elem;
    if (w == p) {
        NS_CUDA_TRY(cudaMemcpyAsync(dst, src, row * (size_t)h, kind, st->q));
    } else {
        const size_t pitch = (size_t)p * st->elem;
        NS_CUDA_TRY(cudaMemcpy2DAsync(dst, to_caller ? pitch : row, src, to_caller ? row : pitch, row,
                                      (size_t)h, kind, st->q));
    }
    return NS_OK;
}

/* Dense caller layout <-> native layout on the device. */
static ns_status convert(const ns_tridiag_solver_t *solver, cuda_state *st, const void *src, void *dst,
                         int to_native) {
    const int f32 = solver->precision == NS_TRIDIAG_FLOAT32;
    const int32_t b = (int32_t)solver->batch, n = solver->n;
    if (solver->variable) {
        NS_CUDA_TRY(to_native ? ns_td_launch_flat_to_padded(f32, src, dst, st->offsets, st->sizes, b, n, st->q)
                              : ns_td_launch_padded_to_flat(f32, src, dst, st->offsets, st->sizes, b, n, st->q));
        return NS_OK;
    }
    /* The source is rows x cols row-major: Flat is batch x n, Interleaved n x batch. */
    const int src_flat = to_native ? solver->layout == NS_TRIDIAG_FLAT : st->native == NS_TRIDIAG_FLAT;
    const int64_t rows = src_flat ? solver->batch : n, cols = src_flat ? n : solver->batch;
    NS_CUDA_TRY(ns_td_launch_transpose(f32, src, dst, rows, cols, st->q));
    return NS_OK;
}

/* Caller array (host or device) -> native buffer i. */
static ns_status import_array(const ns_tridiag_solver_t *solver, cuda_state *st, const void *src,
                              int host, int i) {
    const enum cudaMemcpyKind kind = host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
    const int phase = host ? PH_UPLOAD : PH_LAYOUT;
    ns_status s;
    if (!st->convert) {
        if ((s = mark_begin(st, phase)) != NS_OK) return s;
        if ((s = copy_caller(solver, st, st->buf[i], src, kind, 0)) != NS_OK) return s;
        return mark_end(st);
    }
    const void *dense = src;
    if (host || !caller_dense(solver)) {
        if ((s = mark_begin(st, phase)) != NS_OK) return s;
        if ((s = copy_caller(solver, st, st->stage, src, kind, 0)) != NS_OK) return s;
        if ((s = mark_end(st)) != NS_OK) return s;
        dense = st->stage;
    }
    if ((s = mark_begin(st, PH_LAYOUT)) != NS_OK) return s;
    if ((s = convert(solver, st, dense, st->buf[i], 1)) != NS_OK) return s;
    return mark_end(st);
}

/* Native x -> the caller's x (host or device). The stage still holds the
 * caller's x from the import, so entries outside the systems keep their
 * values when the whole extent is copied back. */
static ns_status export_x(const ns_tridiag_solver_t *solver, cuda_state *st, void *x, int host) {
    const enum cudaMemcpyKind kind = host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
    const int phase = host ? PH_DOWNLOAD : PH_LAYOUT;
    ns_status s;
    if (!st->convert) {
        if ((s = mark_begin(st, phase)) != NS_OK) return s;
        if ((s = copy_caller(solver, st, x, st->buf[3], kind, 1)) != NS_OK) return s;
        return mark_end(st);
    }
    const int via_stage = host || !caller_dense(solver);
    if ((s = mark_begin(st, PH_LAYOUT)) != NS_OK) return s;
    if ((s = convert(solver, st, st->buf[3], via_stage ? st->stage : x, 0)) != NS_OK) return s;
    if ((s = mark_end(st)) != NS_OK) return s;
    if (!via_stage) return NS_OK;
    if ((s = mark_begin(st, phase)) != NS_OK) return s;
    if ((s = copy_caller(solver, st, x, st->stage, kind, 1)) != NS_OK) return s;
    return mark_end(st);
}

/* ---------------------------------------------------------------- run */

static ns_status zero_ends(const ns_tridiag_solver_t *solver, cuda_state *st, void *dl, void *du) {
    if (!is_cusparse(solver->method)) return NS_OK;
    ns_status s = mark_begin(st, PH_LAYOUT);
    if (s != NS_OK) return s;
    NS_CUDA_TRY(ns_td_launch_zero_ends(solver->precision == NS_TRIDIAG_FLOAT32,
                                       st->native == NS_TRIDIAG_INTERLEAVED, solver->n,
                                       (int32_t)solver->batch, dl, du, st->q));
    return mark_end(st);
}

/* The solve itself on native arrays; no timing, no synchronisation. */
static ns_status launch(const ns_tridiag_solver_t *solver, cuda_state *st, void *dl, void *d, void *du,
                        void *x) {
    const int f32 = solver->precision == NS_TRIDIAG_FLOAT32;
    const int n = solver->n, b = (int)solver->batch;
    ns_td_args a = {f32, n, b, dl, d, du, x, st->sizes, solver->tol, st->err};
    ns_status s = NS_OK;
    switch (solver->method) {
    case NS_TRIDIAG_THOMAS_BATCH: NS_CUDA_TRY(ns_td_launch_thomas(&a, st->q)); break;
    case NS_TRIDIAG_VBATCH_CP: NS_CUDA_TRY(ns_td_launch_vbatch(&a, 1, st->q)); break;
    case NS_TRIDIAG_VBATCH_NCP: NS_CUDA_TRY(ns_td_launch_vbatch(&a, 0, st->q)); break;
    case NS_TRIDIAG_WARP: NS_CUDA_TRY(ns_td_launch_onchip(&a, 0, st->q)); break;
    case NS_TRIDIAG_BLOCK: NS_CUDA_TRY(ns_td_launch_onchip(&a, 1, st->q)); break;
    case NS_TRIDIAG_CUSPARSE_STRIDED:
        NS_CUSPARSE_GOTO(f32 ? cusparseSgtsv2StridedBatch(st->sparse, n, dl, d, du, x, b, n, st->work)
                             : cusparseDgtsv2StridedBatch(st->sparse, n, dl, d, du, x, b, n, st->work),
                         s, done);
        break;
    case NS_TRIDIAG_CUSPARSE_INTERLEAVED:
        NS_CUSPARSE_GOTO(f32 ? cusparseSgtsvInterleavedBatch(st->sparse, 0, n, dl, d, du, x, b, st->work)
                             : cusparseDgtsvInterleavedBatch(st->sparse, 0, n, dl, d, du, x, b, st->work),
                         s, done);
        break;
    default:
        return ns_fail(NS_ERR_INTERNAL, "tridiag: method %s has no CUDA launcher",
                       ns_tridiag_method_name(solver->method));
    }
done:
    return s;
}

/* Reset the error slot (host calls; device calls find it clean: wait
 * resets it, so that the calls queued since the last wait share it and wait
 * reports the lowest failure of them all), launch inside a kernel mark,
 * scan cuSPARSE's result. */
static ns_status run(const ns_tridiag_solver_t *solver, cuda_state *st, void *dl, void *d, void *du,
                     void *x, int reset) {
    ns_status s;
    if (reset) NS_CUDA_TRY(cudaMemsetAsync(st->err, 0xff, sizeof *st->err, st->q));
    if ((s = mark_begin(st, PH_KERNEL)) != NS_OK) return s;
    if ((s = launch(solver, st, dl, d, du, x)) != NS_OK) return s;
    if ((s = mark_end(st)) != NS_OK) return s;
    if (is_cusparse(solver->method)) { /* cuSPARSE reports no pivots: look for Inf/NaN instead */
        if ((s = mark_begin(st, PH_CHECK)) != NS_OK) return s;
        NS_CUDA_TRY(ns_td_launch_find_nonfinite(solver->precision == NS_TRIDIAG_FLOAT32,
                                                st->native == NS_TRIDIAG_INTERLEAVED, solver->n,
                                                (int32_t)solver->batch, x, st->err, st->q));
        if ((s = mark_end(st)) != NS_OK) return s;
    }
    return NS_OK;
}

/* Wait for the stream and turn the error slot into a status. */
static ns_status check_error(const ns_tridiag_solver_t *solver, cuda_state *st) {
    unsigned long long key = NS_TD_NO_ERROR;
    NS_CUDA_TRY(cudaMemcpyAsync(&key, st->err, sizeof key, cudaMemcpyDeviceToHost, st->q));
    NS_CUDA_TRY(cudaStreamSynchronize(st->q));
    if (key == NS_TD_NO_ERROR) return NS_OK;
    NS_CUDA_TRY(cudaMemsetAsync(st->err, 0xff, sizeof *st->err, st->q)); /* clean for the next device call */
    NS_CUDA_TRY(cudaStreamSynchronize(st->q));
    return ns_tridiag_pivot_error(solver, (int64_t)(key >> 32), (int64_t)(key & 0xffffffffull));
}

/* Before a host-array call on the solver's own stream: a device call
 * still queued on the caller's stream shares the buffers and the error
 * slot. Wait for it and keep its pivot key for ns_tridiag_solver_wait. */
static ns_status own_stream(cuda_state *st) {
    unsigned long long key = NS_TD_NO_ERROR;
    int had = 0;
    ns_status s = ns_device_key_wait(&st->key, &key, &had);
    if (s != NS_OK) return s;
    if (had && key < st->carry) st->carry = key;
    st->q = st->own;
    st->timed = 1;
    st->marks = 0;
    if (st->sparse) NS_CUSPARSE_TRY(cusparseSetStream(st->sparse, st->own));
    return NS_OK;
}

static ns_status cuda_solve(ns_tridiag_solver_t *solver, const void *dl, const void *d, const void *du,
                            void *x) {
    cuda_state *st = solver->state;
    ns_status s = own_stream(st);
    if (s != NS_OK) return s;
    const void *in[4] = {dl, d, du, x};
    for (int i = 0; i < 4 && s == NS_OK; ++i) s = import_array(solver, st, in[i], 1, i);
    if (s == NS_OK) s = zero_ends(solver, st, st->buf[0], st->buf[2]);
    if (s == NS_OK) s = run(solver, st, st->buf[0], st->buf[1], st->buf[2], st->buf[3], 1);
    if (s == NS_OK) s = export_x(solver, st, x, 1);
    if (s == NS_OK) s = collect_timing(solver, st);
    if (s == NS_OK) s = check_error(solver, st);
    if (s != NS_OK) (void)cudaStreamSynchronize(st->q);
    st->marks = 0;
    return s;
}

/* Device arrays on the caller's stream: checked, queued, not waited for.
 * An event marks the work; cuda_wait copies the pivot key behind it. */
static ns_status cuda_solve_device(ns_tridiag_solver_t *solver, void *dl, void *d, void *du, void *x,
                                   void *stream) {
    static const char *const who = "ns_tridiag_solver_solve_device";
    static const char *const names[4] = {"dl", "d", "du", "x"};
    cuda_state *st = solver->state;
    cudaStream_t q = (cudaStream_t)stream;
    void *in[4] = {dl, d, du, x};
    const size_t bytes = (size_t)solver->length * st->elem;
    ns_status s = NS_OK;
    for (int i = 0; i < 4; ++i)
        if ((s = ns_device_args_pointer(solver->device, who, in[i], bytes, names[i])) != NS_OK) return s;
    if ((s = ns_device_args_stream(solver->device, who, q)) != NS_OK) return s;
    st->q = q;
    st->timed = 0;
    st->marks = 0;
    if (st->sparse) NS_CUSPARSE_TRY(cusparseSetStream(st->sparse, q));
    if (!st->convert && caller_dense(solver)) { /* in place on the caller's arrays */
        s = zero_ends(solver, st, dl, du);
        if (s == NS_OK) s = run(solver, st, dl, d, du, x, 0);
    } else {
        for (int i = 0; i < 4 && s == NS_OK; ++i) s = import_array(solver, st, in[i], 0, i);
        if (s == NS_OK) s = zero_ends(solver, st, st->buf[0], st->buf[2]);
        if (s == NS_OK) s = run(solver, st, st->buf[0], st->buf[1], st->buf[2], st->buf[3], 0);
        if (s == NS_OK) s = export_x(solver, st, x, 0);
    }
    if (s == NS_OK) s = ns_device_key_queue(&st->key, st->err, q);
    st->q = st->own;
    return s;
}

static ns_status cuda_wait(ns_tridiag_solver_t *solver) {
    cuda_state *st = solver->state;
    unsigned long long key = NS_TD_NO_ERROR;
    int had = 0;
    ns_status s = ns_device_key_wait(&st->key, &key, &had);
    if (s != NS_OK) return s;
    if (!had) key = NS_TD_NO_ERROR;
    if (st->carry < key) key = st->carry;
    st->carry = NS_TD_NO_ERROR;
    if (key == NS_TD_NO_ERROR) return NS_OK;
    return ns_tridiag_pivot_error(solver, (int64_t)(key >> 32), (int64_t)(key & 0xffffffffull));
}

/* --------------------------------------------------------- benchmark */

/* Which native arrays a method overwrites and must be restored between runs. */
static void restore_set(ns_tridiag_method m, int keep[4]) {
    keep[0] = keep[1] = keep[2] = 0;
    keep[3] = 1;
    if (m == NS_TRIDIAG_THOMAS_BATCH || m == NS_TRIDIAG_VBATCH_CP || m == NS_TRIDIAG_VBATCH_NCP) keep[2] = 1;
    if (m == NS_TRIDIAG_CUSPARSE_INTERLEAVED) keep[0] = keep[1] = keep[2] = 1; /* non-const in its API */
}

static ns_status cuda_benchmark(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                                const void *du, void *x, int repeats, double *kernel_ms) {
    cuda_state *st = solver->state;
    const size_t bytes = (size_t)st->native_len * st->elem;
    void *pristine[4] = {NULL, NULL, NULL, NULL};
    void *flush = NULL;
    size_t flush_bytes = 0;
    int keep[4];
    restore_set(solver->method, keep);
    ns_status s = own_stream(st);
    if (s != NS_OK) return s;
    const void *in[4] = {dl, d, du, x};
    for (int i = 0; i < 4 && s == NS_OK; ++i) s = import_array(solver, st, in[i], 1, i);
    if (s == NS_OK) s = zero_ends(solver, st, st->buf[0], st->buf[2]);
    if (s != NS_OK) goto done;
    for (int i = 0; i < 4; ++i) {
        if (!keep[i]) continue;
        cudaError_t e = cudaMalloc(&pristine[i], bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            pristine[i] = NULL;
            s = ns_fail(NS_ERR_DEVICE_MEMORY, "tridiag benchmark: no device memory for a pristine copy (%zu bytes): %s",
                        bytes, cudaGetErrorString(e));
            goto done;
        }
        NS_CUDA_GOTO(cudaMemcpyAsync(pristine[i], st->buf[i], bytes, cudaMemcpyDeviceToDevice, st->q), s, done);
    }
    /* A buffer twice the L2 size, written before each run, so that no run
     * finds its inputs in L2 from the restore copies (BENCHMARKING.md rule 2). */
    {
        int device = 0, l2 = 0;
        NS_CUDA_GOTO(cudaGetDevice(&device), s, done);
        NS_CUDA_GOTO(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), s, done);
        flush_bytes = 2 * (size_t)l2;
        if (flush_bytes && cudaMalloc(&flush, flush_bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            flush = NULL; /* no flush: the runs are then warm-L2 figures */
        }
    }
    for (int r = -1; r < repeats; ++r) {
        for (int i = 0; i < 4; ++i)
            if (keep[i])
                NS_CUDA_GOTO(cudaMemcpyAsync(st->buf[i], pristine[i], bytes, cudaMemcpyDeviceToDevice, st->q),
                             s, done);
        if (flush) NS_CUDA_GOTO(cudaMemsetAsync(flush, r & 0xff, flush_bytes, st->q), s, done);
        NS_CUDA_GOTO(cudaMemsetAsync(st->err, 0xff, sizeof *st->err, st->q), s, done);
        NS_CUDA_GOTO(cudaEventRecord(st->ev[0], st->q), s, done);
        if ((s = launch(solver, st, st->buf[0], st->buf[1], st->buf[2], st->buf[3])) != NS_OK) goto done;
        NS_CUDA_GOTO(cudaEventRecord(st->ev[1], st->q), s, done);
        NS_CUDA_GOTO(cudaEventSynchronize(st->ev[1]), s, done);
        float t = 0.0f;
        NS_CUDA_GOTO(cudaEventElapsedTime(&t, st->ev[0], st->ev[1]), s, done);
        if (r >= 0) kernel_ms[r] = (double)t;
        if (is_cusparse(solver->method))
            NS_CUDA_GOTO(ns_td_launch_find_nonfinite(solver->precision == NS_TRIDIAG_FLOAT32,
                                                     st->native == NS_TRIDIAG_INTERLEAVED, solver->n,
                                                     (int32_t)solver->batch, st->buf[3], st->err, st->q),
                         s, done);
        if ((s = check_error(solver, st)) != NS_OK) goto done;
    }
    st->marks = 0;
    if ((s = export_x(solver, st, x, 1)) != NS_OK) goto done;
    NS_CUDA_GOTO(cudaStreamSynchronize(st->q), s, done);
    solver->timing.kernel_ms = solver->timing.total_ms = kernel_ms[repeats - 1];
    solver->timing.upload_ms = solver->timing.layout_ms = solver->timing.download_ms = -1.0;
done:
    (void)cudaStreamSynchronize(st->q);
    for (int i = 0; i < 4; ++i) cudaFree(pristine[i]);
    cudaFree(flush);
    (void)cudaGetLastError();
    st->marks = 0;
    return s;
}

static const ns_tridiag_backend_ops cuda_ops = {
    "cuda", cuda_create, cuda_solve, cuda_solve_device, cuda_wait, cuda_benchmark, cuda_destroy,
};

const ns_tridiag_backend_ops *ns_tridiag_cuda_backend(void) { return &cuda_ops; }
