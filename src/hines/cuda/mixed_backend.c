/* CUDA backend, mixed-shape path (issue 5): Flat and Full-Interleaved one
 * thread per cell on batches of several shapes, the fine-grained tree solver
 * (one thread per branch, one block per group of cells) and the branch-level
 * method (one launch per level). One GPU (device 0), no chunking: a batch
 * whose arrays do not fit fails with NS_ERR_DEVICE_MEMORY.
 *
 * Device buffers: four Flat arrays for the benchmark, and for every method
 * but Flat the same four in the method's storage (gathered from the
 * caller's Flat device arrays, the solution scattered back: the permutation
 * never leaves this file). Host arrays: the framework's pipeline
 * (host_pipeline.c). */
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "hines/cuda/device_call.h"
#include "hines/cuda/hines_kernels.h"
#include "hines/cuda/mixed_backend.h"
#include "hines/cuda/mixed_kernels.h"
#include "tree/tree_impl.h"
#include "neurosolve/device.h"

#define NS_FINE_THREADS 128 /* threads per block of the fine-grained kernel (bench/README.md (mixed shapes)) */
/* Blocks per SM the fine-grained packing aims for at small counts, so a
 * few hundred cells still spread over every SM. */
#define NS_FINE_BLOCKS_PER_SM 4
/* Blocks per SM the shared-memory images of the fine-grained groups are
 * sized for (bench/README.md (mixed shapes)). */
#define NS_FINE_SHARED_BLOCKS 4
#define NS_MIXED_FLUSH_BYTES ((size_t)256 << 20) /* > L2 of any current GPU */
#define NS_MIXED_RESERVE_BYTES ((size_t)64 << 20)

enum { EV_UP0, EV_LAY0, EV_K0, EV_K1, EV_LAY1, EV_DOWN, EV_N };

typedef struct mstate {
    ns_mixed_layout lay;   /* fine-grained, branch-level */
    ns_mixed_cells cells;  /* interleaved */
    int grouped;           /* 1: lay is used */
    int threads;           /* fine-grained block size */
    cudaStream_t q;
    cudaEvent_t ev[EV_N];
    double *flat[4];       /* a, b, d, rhs: Flat */
    double *work[4];       /* the method's storage (NULL for Flat) */
    double *spare[2];      /* Flat benchmark: pristine d and rhs */
    int64_t *gather, *edge;
    void *layout_blob;     /* every other device table, in one allocation */
    int32_t *cell_shape, *shape_size, *parents, *sorted_shape;
    int64_t *cell_offset, *shape_poff, *c_rowoff;
    unsigned long long *bad;
    ns_mixed_args args;
    /* Fine-grained: every group's image in shared memory (shared_bytes per
     * block; a and b too when ab_shared), or every group in device memory
     * (fine_shared_choice). */
    int fine_shared, ab_shared;
    size_t shared_bytes;
    int optin; /* shared memory one block may opt in to [bytes] */
    ns_device_call call;  /* device arrays: checks and the pivot key */
} mstate;


/* Plan options: both of the Arbor report's passes by default, for both
 * grouped methods (measured faster than any subset on every workload of
 * bench/README.md (mixed shapes), branch-level included although splitting
 * adds launches); ns_solve_options.plan_passes picks a subset, for
 * benchmarking the passes. */
static ns_mixed_plan_options plan_options(const ns_solve_options *so) {
    ns_mixed_plan_options o = {1, 1};
    if (so->plan_passes != 0) {
        o.reroot = (so->plan_passes & NS_PLAN_REROOT) != 0;
        o.split = (so->plan_passes & NS_PLAN_SPLIT) != 0;
    }
    return o;
}

static void mixed_destroy(ns_hines_solver_t *s) {
    mstate *st = s->state;
    if (!st) return;
    for (int k = 0; k < 4; ++k) {
        cudaFree(st->flat[k]);
        cudaFree(st->work[k]);
    }
    cudaFree(st->spare[0]);
    cudaFree(st->spare[1]);
    cudaFree(st->gather);
    cudaFree(st->edge);
    cudaFree(st->layout_blob);
    cudaFree(st->bad);
    ns_cuda_queue_destroy(st->q, st->ev, EV_N);
    ns_device_call_free(&st->call);
    (void)cudaGetLastError();
    ns_mixed_layout_free(&st->lay);
    ns_mixed_cells_free(&st->cells);
    free(st);
    s->state = NULL;
}

/* Copy host tables into one device allocation; each entry's device address
 * is written to *dst[k]. */
static ns_status upload_tables(mstate *st, int n, const void *const *src, const size_t *bytes,
                               void **const *dst) {
    size_t total = 0;
    for (int k = 0; k < n; ++k) total += (bytes[k] + 255) & ~(size_t)255;
    NS_CUDA_TRY(cudaMalloc(&st->layout_blob, total ? total : 256));
    char *at = st->layout_blob;
    for (int k = 0; k < n; ++k) {
        if (bytes[k]) NS_CUDA_TRY(cudaMemcpy(at, src[k], bytes[k], cudaMemcpyHostToDevice));
        *dst[k] = at;
        at += (bytes[k] + 255) & ~(size_t)255;
    }
    return NS_OK;
}

/* Whether the fine-grained groups run with their images in shared memory
 * (mixed_fine_shared.cu): all of them when one cell of every shape fits one
 * block's opt-in shared memory, else none. Measured (bench/README.md at 01b826c,
 * "Fine-grained with the group in shared memory"): the shared images speed
 * up a large same-shape batch, but the bundled mix, whose largest cell
 * (38,580 compartments) must stay in device memory, ran slower with the
 * two kinds of group mixed than with every group in device memory (also
 * on separate streams). ns_solve_options.fine_shared: NS_FINE_SHARED_NEVER, _AB (a and b
 * in shared memory too) or _AUTO (d and rhs only). */
static void fine_shared_choice(mstate *st, const ns_mixed_shapes *shapes, int32_t mode) {
    st->fine_shared = mode != NS_FINE_SHARED_NEVER;
    st->ab_shared = mode == NS_FINE_SHARED_AB;
    for (int32_t k = 0; k < shapes->count && st->fine_shared; ++k) {
        const ns_mixed_shape *m = &shapes->shape[k];
        /* rows: at most one per compartment plus one per level */
        if (ns_mixed_fine_shared_bytes(m->n_levels, m->n, m->n_branches, m->n_branches - 1,
                                       (int64_t)m->n + m->n_levels, st->ab_shared) > (size_t)st->optin)
            st->fine_shared = 0;
    }
}

static ns_status plan(ns_hines_solver_t *s, mstate *st, int sms) {
    const ns_batch_t *batch = s->batch;
    if (s->method == NS_HINES_FLAT || s->method == NS_HINES_INTERLEAVED)
        return ns_mixed_cells_build(batch, &st->cells);
    ns_mixed_shapes shapes;
    const ns_mixed_plan_options o = plan_options(&s->options);
    ns_status e = ns_mixed_shapes_build(batch, &o, &shapes);
    if (e != NS_OK) return e;
    st->grouped = 1;
    if (s->method == NS_HINES_FINE_GRAINED) {
        st->threads = s->options.block_size > 0 ? s->options.block_size : NS_FINE_THREADS;
        if (st->threads > 1024) {
            ns_mixed_shapes_free(&shapes);
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "fine-grained: block_size %d exceeds 1024 threads per CUDA block",
                           (int)st->threads);
        }
        /* At small counts, fewer cells per block so every SM gets blocks. */
        const int64_t target_blocks = (int64_t)sms * NS_FINE_BLOCKS_PER_SM;
        const int64_t per_group = (batch->n_cells + target_blocks - 1) / target_blocks;
        /* With images in shared memory, groups small enough for
         * NS_FINE_SHARED_BLOCKS blocks per SM (bytes per compartment: the
         * image's doubles and about 2 bytes of tables). */
        fine_shared_choice(st, &shapes, s->options.fine_shared);
        const int64_t max_nodes =
            st->fine_shared ? (int64_t)st->optin / (NS_FINE_SHARED_BLOCKS * (st->ab_shared ? 34 : 18)) : 0;
        e = ns_mixed_layout_build(batch, &shapes, st->threads, per_group, max_nodes, &st->lay);
        if (e == NS_OK && st->lay.max_width < st->threads) {
            /* No group needs the whole block: launch the widest level's
             * warps only. */
            st->threads = (st->lay.max_width + 31) / 32 * 32;
        }
    } else {
        e = ns_mixed_layout_build(batch, &shapes, 0, 0, 0, &st->lay);
    }
    ns_mixed_shapes_free(&shapes);
    return e;
}

/* The largest group image (exact, after packing); every group fits, since
 * the packing capped groups of several cells below the opt-in size. */
static ns_status fine_shared_setup(mstate *st) {
    const ns_mixed_layout *l = &st->lay;
    size_t most = 0;
    for (int32_t g = 0; g < l->n_groups; ++g) {
        const ns_mixed_level *f = &l->levels[l->group_level[g]];
        const ns_mixed_level *z = &l->levels[l->group_level[g + 1] - 1];
        const int64_t nb = z->first_branch + z->width - f->first_branch;
        const size_t bytes = ns_mixed_fine_shared_bytes(
            l->group_level[g + 1] - l->group_level[g], z->base + l->rowoff[z->rows + z->max_len] - f->base,
            nb, l->br_child[f->first_branch + nb] - l->br_child[f->first_branch],
            z->rows + z->max_len + 1 - f->rows, st->ab_shared);
        if (bytes > most) most = bytes;
    }
    if (most > (size_t)st->optin)
        return ns_fail(NS_ERR_INTERNAL, "fine-grained: a group needs %zu bytes of shared memory, %d allowed",
                       most, st->optin);
    st->shared_bytes = most;
    NS_CUDA_TRY(ns_mixed_fine_shared_setup(st->ab_shared, most));
    return NS_OK;
}

static ns_status setup_device(ns_hines_solver_t *s, mstate *st) {
    const ns_batch_t *batch = s->batch;
    const int64_t n = ns_batch_compartments(batch);
    const size_t arr = (size_t)n * sizeof(double);
    const int layout = s->method != NS_HINES_FLAT;
    /* Device memory needed [bytes]: Flat arrays, method storage, indices. */
    size_t need = 4 * arr + (layout ? 4 * arr + (size_t)n * sizeof(int64_t) : 2 * arr);
    if (st->grouped) /* edge indices, branch tables (length, parent, children), levels */
        need += (size_t)n * sizeof(int64_t) + (size_t)st->lay.n_branches * 28 +
                (size_t)st->lay.n_levels * sizeof(ns_mixed_level) + (size_t)st->lay.n_rowoff * 8;
    size_t budget;
    NS_CUDA_TRY(ns_cuda_memory_budget(s->options.device_memory_limit, NS_MIXED_RESERVE_BYTES, &budget));
    if (need > budget)
        return ns_fail(NS_ERR_DEVICE_MEMORY,
                       "method '%s' on %lld compartments needs %zu bytes of device memory, %zu "
                       "allowed (the mixed-shape path does not split batches into chunks)",
                       ns_hines_method_name(s->method), (long long)n, need, budget);
    NS_CUDA_TRY(cudaStreamCreateWithFlags(&st->q, cudaStreamNonBlocking));
    for (int k = 0; k < EV_N; ++k) NS_CUDA_TRY(cudaEventCreate(&st->ev[k]));
    NS_CUDA_TRY(cudaMalloc((void **)&st->bad, sizeof *st->bad));
    /* st->flat and st->spare (counted in `need`) are the benchmark's
     * staging, allocated by bench_on: device calls point flat at the
     * caller's arrays, host calls go through the host pipeline */
    for (int k = 0; k < 4 && layout; ++k) NS_CUDA_TRY(cudaMalloc((void **)&st->work[k], arr ? arr : 8));
    if (st->grouped) {
        const ns_mixed_layout *l = &st->lay;
        NS_CUDA_TRY(cudaMalloc((void **)&st->gather, (size_t)n * sizeof(int64_t)));
        NS_CUDA_TRY(cudaMalloc((void **)&st->edge, (size_t)n * sizeof(int64_t)));
        NS_CUDA_TRY(cudaMemcpy(st->gather, l->gather, (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice));
        NS_CUDA_TRY(cudaMemcpy(st->edge, l->edge, (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice));
        const void *src[7] = {l->group_level, l->levels, l->rowoff, l->br_len,
                              l->br_ppos, l->br_child, l->child_pos};
        const size_t bytes[7] = {((size_t)l->n_groups + 1) * sizeof(int32_t),
                                 (size_t)l->n_levels * sizeof(ns_mixed_level),
                                 (size_t)l->n_rowoff * sizeof(int64_t),
                                 (size_t)l->n_branches * sizeof(int32_t),
                                 (size_t)l->n_branches * sizeof(int64_t),
                                 ((size_t)l->n_branches + 1) * sizeof(int64_t),
                                 (size_t)(l->n_branches - batch->n_cells + 1) * sizeof(int64_t)};
        ns_mixed_args *g = &st->args;
        void **dst[7] = {(void **)&g->group_level, (void **)&g->levels, (void **)&g->rowoff,
                         (void **)&g->br_len, (void **)&g->br_ppos, (void **)&g->br_child,
                         (void **)&g->child_pos};
        ns_status e = upload_tables(st, 7, src, bytes, dst);
        if (e != NS_OK) return e;
        g->gather = st->gather;
        g->a = st->work[0];
        g->b = st->work[1];
        g->d = st->work[2];
        g->rhs = st->work[3];
        g->bad = st->bad;
        if (st->fine_shared && (e = fine_shared_setup(st)) != NS_OK) return e;
    } else {
        const ns_mixed_cells *c = &st->cells;
        const int32_t ns = batch->n_shapes;
        if (layout) {
            NS_CUDA_TRY(cudaMalloc((void **)&st->gather, (size_t)n * sizeof(int64_t)));
            NS_CUDA_TRY(cudaMemcpy(st->gather, c->gather, (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice));
        }
        const void *src[7] = {batch->cell_shape, batch->cell_offset, c->shape_size, c->shape_poff,
                              c->parents, c->sorted_shape, c->rowoff};
        const size_t bytes[7] = {(size_t)batch->n_cells * sizeof(int32_t),
                                 ((size_t)batch->n_cells + 1) * sizeof(int64_t),
                                 (size_t)ns * sizeof(int32_t), (size_t)ns * sizeof(int64_t),
                                 (size_t)c->n_parents * sizeof(int32_t),
                                 (size_t)batch->n_cells * sizeof(int32_t),
                                 ((size_t)c->max_size + 1) * sizeof(int64_t)};
        void **dst[7] = {(void **)&st->cell_shape, (void **)&st->cell_offset, (void **)&st->shape_size,
                         (void **)&st->shape_poff, (void **)&st->parents, (void **)&st->sorted_shape,
                         (void **)&st->c_rowoff};
        ns_status e = upload_tables(st, 7, src, bytes, dst);
        if (e != NS_OK) return e;
    }
    /* The uploads ran on the legacy default stream, which the non-blocking
     * solve stream does not wait for: finish them before any solve (that
     * stream only, not the device). */
    NS_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
    return NS_OK;
}

static ns_status mixed_create(ns_hines_solver_t *s) {
    const char *name = ns_hines_method_name(s->method);
    if (s->method != NS_HINES_FLAT && s->method != NS_HINES_INTERLEAVED &&
        s->method != NS_HINES_FINE_GRAINED && s->method != NS_HINES_BRANCH_LEVEL)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "method '%s' needs cells of one shape; this batch has %d shapes (for mixed "
                       "shapes use fine-grained, branch-level, interleaved or flat)",
                       name, (int)s->batch->n_shapes);
    ns_status e = NS_OK;
    mstate *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "mixed solver state");
    s->state = st;
    int old = 0;
    const int have_old = cudaGetDevice(&old) == cudaSuccess;
    int sms = 1;
    e = ns_cuda_status(cudaSetDevice(s->device), "cudaSetDevice", __FILE__, __LINE__);
    if (e == NS_OK)
        e = ns_cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, s->device),
                           "multiprocessor count", __FILE__, __LINE__);
    if (e == NS_OK)
        e = ns_cuda_status(cudaDeviceGetAttribute(&st->optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, s->device),
                           "shared memory per block", __FILE__, __LINE__);
    if (e == NS_OK) e = plan(s, st, sms);
    if (e == NS_OK) e = setup_device(s, st);
    if (e == NS_OK) e = ns_device_call_init(&st->call, s->device);
    if (have_old) cudaSetDevice(old);
    (void)cudaGetLastError();
    if (e != NS_OK) mixed_destroy(s);
    return e;
}

/* Queue the method's kernel(s) on the data already in place. */
static ns_status launch(const ns_hines_solver_t *s, mstate *st) {
    const ns_batch_t *batch = s->batch;
    switch (s->method) {
    case NS_HINES_FLAT:
        NS_CUDA_TRY(ns_mixed_launch_flat(batch->n_cells, st->cell_shape, st->cell_offset,
                                         st->shape_size, st->shape_poff, st->parents, st->flat[0],
                                         st->flat[1], st->flat[2], st->flat[3], st->bad, st->q));
        return NS_OK;
    case NS_HINES_INTERLEAVED:
        NS_CUDA_TRY(ns_mixed_launch_cells(batch->n_cells, st->sorted_shape, st->shape_size,
                                          st->shape_poff, st->parents, st->c_rowoff, st->gather,
                                          st->work[0], st->work[1], st->work[2], st->work[3],
                                          st->bad, st->q));
        return NS_OK;
    case NS_HINES_FINE_GRAINED:
        if (st->fine_shared)
            NS_CUDA_TRY(ns_mixed_launch_fine_shared(&st->args, st->lay.n_groups, st->threads,
                                                    st->ab_shared, st->shared_bytes, st->q));
        else
            NS_CUDA_TRY(ns_mixed_launch_fine(&st->args, st->lay.n_groups, st->threads, st->q));
        return NS_OK;
    case NS_HINES_BRANCH_LEVEL: {
        /* One group: its levels are the whole batch's, root level first. */
        const ns_mixed_layout *l = &st->lay;
        for (int64_t li = l->n_levels - 1; li >= 0; --li)
            NS_CUDA_TRY(ns_mixed_launch_level(&st->args, &l->levels[li], 1, st->q));
        for (int64_t li = 0; li < l->n_levels; ++li)
            NS_CUDA_TRY(ns_mixed_launch_level(&st->args, &l->levels[li], 0, st->q));
        return NS_OK;
    }
    default:
        return ns_fail(NS_ERR_INTERNAL, "mixed path: no kernel for '%s'", ns_hines_method_name(s->method));
    }
}

static ns_status gather_in(const ns_hines_solver_t *s, mstate *st, int which) {
    if (s->method == NS_HINES_FLAT) return NS_OK;
    const double *const src[4] = {st->flat[0], st->flat[1], st->flat[2], st->flat[3]};
    NS_CUDA_TRY(ns_mixed_launch_gather(ns_batch_compartments(s->batch), st->gather,
                                       st->grouped ? st->edge : NULL, src, st->work, which, st->q));
    return NS_OK;
}

static ns_status scatter_out(const ns_hines_solver_t *s, mstate *st) {
    if (s->method == NS_HINES_FLAT) return NS_OK;
    NS_CUDA_TRY(ns_mixed_launch_scatter(ns_batch_compartments(s->batch), st->gather, st->work[3],
                                        st->flat[3], st->q));
    return NS_OK;
}

static ns_status read_pivot(const ns_hines_solver_t *s, mstate *st) {
    unsigned long long bad = NS_PIVOT_NONE;
    NS_CUDA_TRY(cudaMemcpy(&bad, st->bad, sizeof bad, cudaMemcpyDeviceToHost));
    if (bad == NS_PIVOT_NONE) return NS_OK;
    const int64_t flat = (int64_t)bad, cell = ns_mixed_cell_of(s->batch, flat);
    return ns_hines_pivot_error(s->batch, cell, (int32_t)(flat - s->batch->cell_offset[cell]));
}

static float elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1.0f;
    }
    return ms;
}

/* Stage once; each run restores d and rhs (gather or copy) and evicts L2
 * outside the timed region; events time the kernel(s) alone. */
static ns_status bench_on(ns_hines_solver_t *s, mstate *st, const double *const host[4],
                          double *rhs, int repeats, double *kernel_ms, void *flush) {
    const size_t bytes = (size_t)ns_batch_compartments(s->batch) * sizeof(double);
    const int flat = s->method == NS_HINES_FLAT;
    for (int k = 0; k < 4; ++k)
        if (!st->flat[k]) NS_CUDA_TRY(cudaMalloc((void **)&st->flat[k], bytes ? bytes : 8));
    for (int k = 0; k < 2 && flat; ++k)
        if (!st->spare[k]) NS_CUDA_TRY(cudaMalloc((void **)&st->spare[k], bytes ? bytes : 8));
    NS_CUDA_TRY(cudaMemsetAsync(st->bad, 0xFF, sizeof *st->bad, st->q));
    for (int k = 0; k < 4; ++k)
        NS_CUDA_TRY(cudaMemcpyAsync(st->flat[k], host[k], bytes, cudaMemcpyHostToDevice, st->q));
    if (flat)
        for (int k = 0; k < 2; ++k)
            NS_CUDA_TRY(cudaMemcpyAsync(st->spare[k], st->flat[2 + k], bytes, cudaMemcpyDeviceToDevice, st->q));
    NS_CUDA_TRY(cudaEventRecord(st->ev[EV_LAY0], st->q));
    ns_status e = gather_in(s, st, 3);
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaEventRecord(st->ev[EV_K0], st->q));
    NS_CUDA_TRY(cudaStreamSynchronize(st->q));
    const float gather_ms = elapsed(st->ev[EV_LAY0], st->ev[EV_K0]);
    for (int r = 0; r < repeats; ++r) {
        if (flat) {
            for (int k = 0; k < 2; ++k)
                NS_CUDA_TRY(cudaMemcpyAsync(st->flat[2 + k], st->spare[k], bytes, cudaMemcpyDeviceToDevice, st->q));
        } else if (r > 0) {
            e = gather_in(s, st, 2);
            if (e != NS_OK) return e;
        }
        if (flush) NS_CUDA_TRY(cudaMemsetAsync(flush, r & 0xFF, NS_MIXED_FLUSH_BYTES, st->q));
        NS_CUDA_TRY(cudaEventRecord(st->ev[EV_K0], st->q));
        e = launch(s, st);
        if (e != NS_OK) return e;
        NS_CUDA_TRY(cudaEventRecord(st->ev[EV_K1], st->q));
        NS_CUDA_TRY(cudaEventSynchronize(st->ev[EV_K1]));
        kernel_ms[r] = elapsed(st->ev[EV_K0], st->ev[EV_K1]);
    }
    NS_CUDA_TRY(cudaEventRecord(st->ev[EV_K1], st->q));
    e = scatter_out(s, st);
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaEventRecord(st->ev[EV_LAY1], st->q));
    NS_CUDA_TRY(cudaMemcpyAsync(rhs, st->flat[3], bytes, cudaMemcpyDeviceToHost, st->q));
    NS_CUDA_TRY(cudaStreamSynchronize(st->q));
    s->timing.layout_ms = flat ? 0.0 : (double)gather_ms + (double)elapsed(st->ev[EV_K1], st->ev[EV_LAY1]);
    return read_pivot(s, st);
}

static ns_status mixed_benchmark(ns_hines_solver_t *s, const double *a, const double *b,
                                 double *d, double *rhs, int repeats, double *kernel_ms) {
    mstate *st = s->state;
    const double *const host[4] = {a, b, d, rhs};
    int old = 0;
    const int have_old = cudaGetDevice(&old) == cudaSuccess;
    const double t0 = ns_time_ms();
    void *flush = NULL;
    ns_status e = ns_cuda_status(cudaSetDevice(s->device), "cudaSetDevice", __FILE__, __LINE__);
    if (e == NS_OK && cudaMalloc(&flush, NS_MIXED_FLUSH_BYTES) != cudaSuccess) {
        flush = NULL; /* no room: time without the flush */
        (void)cudaGetLastError();
    }
    if (e == NS_OK) e = bench_on(s, st, host, rhs, repeats, kernel_ms, flush);
    cudaFree(flush);
    if (have_old) cudaSetDevice(old);
    (void)cudaGetLastError();
    s->timing.upload_ms = s->timing.download_ms = -1.0;
    s->timing.kernel_ms = kernel_ms[repeats - 1];
    s->timing.total_ms = ns_time_ms() - t0;
    return e;
}

/* Device arrays: the caller's Flat arrays stand in for the solver's own
 * Flat buffers, and the caller's stream for its stream, for one solve. */
static ns_status mixed_solve_device(ns_hines_solver_t *s, const double *a, const double *b, double *d,
                                    double *rhs, void *stream) {
    mstate *st = s->state;
    cudaStream_t q = (cudaStream_t)stream;
    const void *ptr[4] = {a, b, d, rhs};
    ns_status e = ns_device_call_check(&st->call, ns_hines_method_name(s->method), ptr,
                                       (size_t)ns_batch_compartments(s->batch) * sizeof(double), q);
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaSetDevice(s->device));
    double *own[4];
    const cudaStream_t own_q = st->q;
    memcpy(own, st->flat, sizeof own);
    st->flat[0] = (double *)a;
    st->flat[1] = (double *)b;
    st->flat[2] = d;
    st->flat[3] = rhs;
    st->q = q;
    e = ns_cuda_status(cudaMemsetAsync(st->bad, 0xFF, sizeof *st->bad, q), "pivot key", __FILE__, __LINE__);
    if (e == NS_OK) e = gather_in(s, st, 3);
    if (e == NS_OK) e = launch(s, st);
    if (e == NS_OK) e = scatter_out(s, st);
    if (e == NS_OK) e = ns_device_call_queue(&st->call, st->bad, q);
    memcpy(st->flat, own, sizeof own);
    st->q = own_q;
    return e;
}

static ns_status mixed_wait(ns_hines_solver_t *s) {
    mstate *st = s->state;
    unsigned long long key = NS_PIVOT_NONE;
    int had = 0;
    ns_status e = ns_device_call_wait(&st->call, &key, &had);
    if (e != NS_OK || !had || key == NS_PIVOT_NONE) return e;
    const int64_t flat = (int64_t)key, cell = ns_mixed_cell_of(s->batch, flat);
    return ns_hines_pivot_error(s->batch, cell, (int32_t)(flat - s->batch->cell_offset[cell]));
}

/* No `auto` rule here: the family's one rule (hines/policy.c) picks `tree`
 * for mixed batches. */
const ns_hines_backend_ops *ns_hines_mixed_cuda_backend(void) {
    static const ns_hines_backend_ops ops = {"cuda-mixed",    mixed_create,    NULL,              mixed_destroy,
                                             mixed_benchmark, mixed_solve_device, mixed_wait, NULL};
    return &ops;
}
