/* CUDA backend: method configuration, device memory (chunks, GPUs) and the
 * `auto` rule. The solve itself is in solve_cuda.c; docs/methods.md explains
 * each method and layout. */
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/device_impl.h"
#include "hines/cuda/cuda_backend.h"
#include "hines/policy.h"
#include "tree/tree_impl.h"
#include "neurosolve/device.h"

#define NS_DEFAULT_BLOCK_SIZE 128  /* Block-Interleaved BS until measured (bench/README.md) */
#define NS_PAPER_SHARED_BYTES 49152 /* the paper's (and CUDA's default) shared memory per block */
#define NS_STRIDED_THREADS 128      /* CUDA block of the one-thread-per-cell kernels (the paper's) */
/* Free device memory left to the runtime and other users when no limit is
 * given: 5 % plus 64 MiB [bytes]. */
#define NS_MEMORY_RESERVE_BYTES ((size_t)64 << 20)

static int is_grouped(ns_hines_method m) {
    return m == NS_HINES_INTERLEAVED || m == NS_HINES_BLOCK_INTERLEAVED || m == NS_HINES_BLOCK_SHARED;
}

/* Largest power of two <= x (x >= 1). */
static int32_t floor_pow2(int64_t x) {
    int32_t p = 1;
    while ((int64_t)p * 2 <= x && p < (1 << 30)) p *= 2;
    return p;
}

static size_t optin_shared(int device) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
        v <= 0) {
        (void)cudaGetLastError();
        return NS_PAPER_SHARED_BYTES;
    }
    return (size_t)v;
}

/* Method parameters that do not depend on the device's memory. */
static ns_status configure(ns_hines_solver_t *s, ns_cuda_state *st, size_t optin) {
    const int32_t n = st->n;
    const int32_t want = s->options.block_size;
    const char *name = ns_hines_method_name(s->method);
    st->threads = NS_STRIDED_THREADS;
    st->grouped = is_grouped(s->method);
    switch (s->method) {
    case NS_HINES_FLAT:
    case NS_HINES_INTERLEAVED:
        return NS_OK;
    case NS_HINES_BLOCK_INTERLEAVED:
        st->block_size = want > 0 ? want : NS_DEFAULT_BLOCK_SIZE;
        return NS_OK;
    case NS_HINES_BLOCK_SHARED: {
        const size_t per_cell = (size_t)n * sizeof(double);
        if (want > 0) {
            if (want > 1024)
                return ns_fail(NS_ERR_INVALID_ARGUMENT,
                               "%s: block_size %d exceeds 1024 threads per CUDA block", name,
                               (int)want);
            if ((size_t)want * per_cell > optin)
                return ns_fail(NS_ERR_UNSUPPORTED,
                               "%s: block_size %d cells of %d compartments need %zu bytes of "
                               "shared memory, the device allows %zu per block",
                               name, (int)want, (int)n, (size_t)want * per_cell, optin);
            st->block_size = want;
        } else {
            /* As many cells as the paper's 48 KiB hold (more than needs
             * the opt-in), rounded down to a power of two, at most 512. */
            int64_t fit = (int64_t)(NS_PAPER_SHARED_BYTES / per_cell);
            if (fit < 1) fit = (int64_t)(optin / per_cell);
            if (fit < 1)
                return ns_fail(NS_ERR_UNSUPPORTED,
                               "%s: one cell's rhs (%d compartments, %zu bytes) exceeds the "
                               "%zu bytes of shared memory per block",
                               name, (int)n, per_cell, optin);
            st->block_size = floor_pow2(fit < 512 ? fit : 512);
        }
        return NS_OK;
    }
    case NS_HINES_ONCHIP: {
        /* One cell with 32 lanes is the smallest footprint (see choose_lanes). */
        const size_t bytes = ns_onchip_cell_doubles(n) * sizeof(double);
        if (bytes > optin || n > NS_ONCHIP_MAX_N)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "%s: a cell of %d compartments needs %zu bytes of shared memory, the "
                           "device allows %zu per block (use 'interleaved')",
                           name, (int)n, bytes, optin);
        return NS_OK;
    }
    default:
        return ns_fail(NS_ERR_UNSUPPORTED, "method '%s' is not implemented by the cuda backend yet",
                       name);
    }
}

/* Cells per chunk on one device so that everything allocated fits into
 * `budget` bytes; 0 if not even one cell (or one group) fits. */
static int64_t chunk_cells(const ns_cuda_state *st, ns_hines_method m, int64_t count,
                           size_t budget, size_t fixed) {
    const size_t arrays = st->grouped ? 8 : 4;
    const size_t per_cell = arrays * (size_t)st->n * sizeof(double);
    if (budget <= fixed) return 0;
    int64_t fit = (int64_t)((budget - fixed) / per_cell);
    if (m == NS_HINES_BLOCK_INTERLEAVED || m == NS_HINES_BLOCK_SHARED) {
        /* Buffers hold whole groups of BS cells. */
        const int64_t bs = st->block_size;
        if (count < bs) return fit >= bs ? count : 0;
        fit = fit / bs * bs;
    }
    return fit < count ? fit : count;
}

static void free_dev(ns_cuda_dev *d) {
    if (cudaSetDevice(d->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    for (int k = 0; k < 4; ++k) {
        cudaFree(d->flat[k]);
        cudaFree(d->grouped[k]);
    }
    cudaFree(d->parent);
    cudaFree(d->plan);
    cudaFree(d->bad);
    ns_cuda_queue_destroy(d->stream, d->ev, NS_EV_COUNT);
    (void)cudaGetLastError();
}

static void cuda_destroy(ns_hines_solver_t *s) {
    ns_cuda_state *st = s->state;
    if (!st) return;
    int old = 0;
    const int have_old = cudaGetDevice(&old) == cudaSuccess;
    for (int k = 0; k < st->n_dev; ++k) free_dev(&st->dev[k]);
    if (have_old) cudaSetDevice(old);
    (void)cudaGetLastError();
    ns_onchip_plan_free(&st->plan);
    ns_device_call_free(&st->call);
    free(st->dev);
    free(st);
    s->state = NULL;
}

/* Allocate one device's buffers; d->device, first, count are set. */
static ns_status setup_dev(ns_hines_solver_t *s, ns_cuda_state *st, ns_cuda_dev *d) {
    const ns_tree_t *t = s->batch->shapes[0];
    const int32_t n = st->n;
    NS_CUDA_TRY(cudaSetDevice(d->device));
    const size_t optin = optin_shared(d->device);
    size_t fixed = (size_t)n * sizeof(int32_t) + sizeof(unsigned long long) + 4096;
    if (s->method == NS_HINES_ONCHIP) fixed += st->plan.count * sizeof(int32_t);
    size_t budget;
    NS_CUDA_TRY(ns_cuda_memory_budget(s->options.device_memory_limit, NS_MEMORY_RESERVE_BYTES, &budget));
    d->chunk = chunk_cells(st, s->method, d->count, budget, fixed);
    if (d->chunk <= 0)
        return ns_fail(NS_ERR_DEVICE_MEMORY,
                       "device %d: %zu bytes of device memory allowed, too few for one %s of "
                       "%d compartments with method '%s'",
                       d->device, budget,
                       st->block_size > 0 && st->grouped ? "group of cells" : "cell", (int)n,
                       ns_hines_method_name(s->method));
    /* Grouped buffers hold whole groups (Block-*) or exactly one chunk. */
    int64_t cells = d->chunk;
    if (st->block_size > 0) cells = (cells + st->block_size - 1) / st->block_size * st->block_size;
    const size_t bytes = (size_t)cells * (size_t)n * sizeof(double);

    NS_CUDA_TRY(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    for (int k = 0; k < NS_EV_COUNT; ++k) NS_CUDA_TRY(cudaEventCreate(&d->ev[k]));
    NS_CUDA_TRY(cudaMalloc((void **)&d->bad, sizeof *d->bad));
    NS_CUDA_TRY(cudaMalloc((void **)&d->parent, (size_t)n * sizeof(int32_t)));
    NS_CUDA_TRY(cudaMemcpy(d->parent, t->parent, (size_t)n * sizeof(int32_t),
                           cudaMemcpyHostToDevice));
    /* d->flat (the benchmark's staging, counted in the chunk above) is
     * allocated by the benchmark that uses it (benchmark_cuda.c): solves
     * run on the caller's arrays or the host pipeline's staging */
    for (int k = 0; k < 4; ++k) {
        if (st->grouped) {
            NS_CUDA_TRY(cudaMalloc((void **)&d->grouped[k], bytes));
            /* Padding cells of the last group are never written by the
             * conversion; zero them once so no kernel reads garbage. */
            NS_CUDA_TRY(cudaMemset(d->grouped[k], 0, bytes));
        }
    }
    if (s->method == NS_HINES_ONCHIP) {
        NS_CUDA_TRY(cudaMalloc((void **)&d->plan, st->plan.count * sizeof(int32_t)));
        NS_CUDA_TRY(cudaMemcpy(d->plan, st->plan.data, st->plan.count * sizeof(int32_t),
                               cudaMemcpyHostToDevice));
        ns_onchip_plan_bind(&st->plan, d->plan, &d->sched);
        NS_CUDA_TRY(ns_hines_onchip_setup(st->plan.lanes, optin));
    }
    if (s->method == NS_HINES_BLOCK_SHARED)
        NS_CUDA_TRY(ns_hines_block_shared_setup((size_t)st->block_size * (size_t)n * sizeof(double)));
    /* The copies and memsets above run on the legacy default stream, which the
     * solver's non-blocking stream does not wait for (a pageable cudaMemcpy may
     * even return before its DMA lands): finish them before any solve. Only
     * that stream is waited for, not the device (other users' streams). */
    NS_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
    return NS_OK;
}

/* Warps per block of the on-chip kernel with `lanes` lanes per cell: the
 * most resident warps per SM, the fewer per block on a tie (finer-grained
 * residency). *resident receives the resident warps per SM (0: none fit). */
static ns_status choose_warps(const ns_onchip_plan *p, size_t optin, int *warps, int *resident) {
    const int32_t core = (int32_t)p->pos_of_node;
    *warps = 1;
    *resident = 0;
    for (int w = 1; w <= 8; w *= 2) {
        const size_t bytes = ns_onchip_block_bytes(p->n, p->lanes, core, w);
        if (bytes > optin) break;
        int blocks = 0;
        NS_CUDA_TRY(ns_hines_onchip_setup(p->lanes, bytes));
        NS_CUDA_TRY(ns_hines_onchip_occupancy(p->lanes, w, bytes, &blocks));
        if (blocks * w > *resident) {
            *resident = blocks * w;
            *warps = w;
        }
    }
    return NS_OK;
}

/* Lanes per cell of the on-chip kernel, measured on an H200 at 256,000
 * cells (docs/methods.md, "Lanes per cell"): 4 for cells of up to 128
 * compartments; above, 16 for trees with long unbranched runs (fewer than
 * one run per 10 compartments) and 32 for the others. */
static int32_t onchip_lanes(int32_t n, int32_t n_runs) {
    if (n <= 128) return 4;
    return (int64_t)n_runs * 10 < n ? 16 : 32;
}

/* Build the on-chip plan and pick warps per block; falls back to more lanes
 * (fewer cells per warp, a smaller block) when the preferred count does not
 * fit the device's shared memory. */
static ns_status choose_lanes(const int32_t *parent, ns_cuda_state *st, size_t optin) {
    ns_onchip_plan probe;
    ns_status e = ns_onchip_plan_build(st->n, parent, NS_ONCHIP_LANES, &probe);
    if (e != NS_OK) return e;
    const int32_t want = onchip_lanes(st->n, probe.n_runs);
    ns_onchip_plan_free(&probe);
    for (int32_t lanes = want; lanes <= NS_ONCHIP_LANES; lanes *= 2) {
        ns_onchip_plan plan;
        e = ns_onchip_plan_build(st->n, parent, lanes, &plan);
        if (e != NS_OK) return e;
        int warps = 0, resident = 0;
        e = choose_warps(&plan, optin, &warps, &resident);
        if (e != NS_OK || resident == 0) {
            ns_onchip_plan_free(&plan);
            if (e != NS_OK) return e;
            continue;
        }
        ns_onchip_plan_free(&st->plan);
        st->plan = plan;
        st->warps = warps;
        return ns_cuda_status(
            ns_hines_onchip_setup(lanes, ns_onchip_block_bytes(st->n, lanes, (int32_t)plan.pos_of_node,
                                                               warps)),
            "onchip setup", __FILE__, __LINE__);
    }
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "onchip: a cell of %d compartments and its schedule do not fit one block's "
                   "%zu bytes of shared memory (use 'interleaved')",
                   (int)st->n, optin);
}

static ns_status cuda_create(ns_hines_solver_t *s) {
    const ns_batch_t *batch = s->batch;
    const char *name = ns_hines_method_name(s->method);
    if (ns_hines_method_backend(s->method) != NS_BACKEND_CUDA)
        return ns_fail(NS_ERR_UNSUPPORTED, "method '%s' is not a CUDA method", name);
    /* GPUs s->device .. s->device + n_dev - 1 (devices 0: every usable one from s->device on) */
    const int usable = ns_cuda_usable_devices() - s->device;
    ns_status status = NS_OK;
    int n_dev = s->options.devices > 0 ? s->options.devices : usable;
    if (n_dev > usable)
        return ns_fail(NS_ERR_NO_DEVICE, "method '%s': %d GPUs asked for from GPU %d on, %d usable", name, n_dev,
                       s->device, usable);
    if ((int64_t)n_dev > batch->n_cells) n_dev = (int)batch->n_cells;

    ns_cuda_state *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "cuda solver state");
    s->state = st;
    st->n = batch->shapes[0]->size;
    int old = 0;
    const int have_old = cudaGetDevice(&old) == cudaSuccess;
    (void)cudaGetLastError();
    const size_t optin = optin_shared(s->device);
    status = configure(s, st, optin);
    if (status == NS_OK && s->method == NS_HINES_ONCHIP) {
        status = ns_cuda_status(cudaSetDevice(s->device), "cudaSetDevice", __FILE__, __LINE__);
        if (status == NS_OK) status = choose_lanes(batch->shapes[0]->parent, st, optin);
    }
    if (status == NS_OK) {
        st->dev = calloc((size_t)n_dev, sizeof *st->dev);
        if (!st->dev) status = ns_fail(NS_ERR_OUT_OF_MEMORY, "cuda device table");
    }
    /* Contiguous ranges of cells, as even as possible. */
    for (int k = 0; status == NS_OK && k < n_dev; ++k) {
        ns_cuda_dev *d = &st->dev[k];
        d->device = s->device + k;
        d->first = batch->n_cells * k / n_dev;
        d->count = batch->n_cells * (k + 1) / n_dev - d->first;
        st->n_dev = k + 1;
        status = setup_dev(s, st, d);
    }
    if (status == NS_OK && st->n_dev == 1) {
        status = ns_cuda_status(cudaSetDevice(st->dev[0].device), "cudaSetDevice", __FILE__, __LINE__);
        if (status == NS_OK) status = ns_device_call_init(&st->call, st->dev[0].device);
    }
    if (have_old) cudaSetDevice(old);
    (void)cudaGetLastError();
    if (status != NS_OK) cuda_destroy(s);
    return status;
}

const ns_hines_backend_ops *ns_hines_cuda_backend(void) {
    /* the interleaved method's native layout is Full-Interleaved (solver.c) */
    static const ns_hines_backend_ops ops = {"cuda",       cuda_create,          NULL,         cuda_destroy,
                                             ns_cuda_benchmark, ns_cuda_solve_device, ns_cuda_wait,
                                             ns_cuda_solve_device_interleaved};
    return &ops;
}
