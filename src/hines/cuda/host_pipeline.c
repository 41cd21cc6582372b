/* Host arrays on the GPU, for every CUDA implementation of the Hines
 * solver (the framework's one host path; docs/api.md, "Host arrays"): the
 * batch is cut into chunks of whole cells, each solved by a sub-solver of
 * the same method through its device entry point, on one of two streams
 * per GPU so that the upload of chunk k + 1 (through pinned staging,
 * core/cuda/staging.h), the solve of chunk k and the download of chunk
 * k - 1 overlap. Chunks go round-robin over the solver's GPUs (devices),
 * and are small enough for a batch that does not fit device memory.
 *
 * The sub-solvers and buffers are made on the first host call (a solver
 * used only with device arrays never pays for them); that set-up is not
 * part of the call's timing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda/staging.h"
#include "core/cuda_check.h"
#include "core/device_impl.h"
#include "core/timer.h"
#include "hines/batch_impl.h"

/* Bytes of the four input arrays per chunk: large enough that each chunk's
 * kernel fills an H100/H200 (about 4 million compartments), small enough
 * that uploads, solves and downloads overlap (bench/README.md, "Host
 * arrays"). */
#define NS_PIPELINE_CHUNK_BYTES ((size_t)128 << 20)
#define NS_PIPELINE_MAX_CHUNKS 64

typedef struct chunk {
    int64_t first, count;      /* cells */
    int64_t offset, length;    /* compartments */
    ns_batch_t *batch;         /* NULL: the solver's own batch (one chunk) */
    ns_hines_solver_t *solver; /* the solver itself when one chunk on its device */
    int dev;                   /* index into gpu[] */
} chunk;

typedef struct gpu {
    int device;
    cudaStream_t q[2];
    cudaEvent_t k0[2], k1[2];
    double *buf[2][4];
    /* this GPU's own staging: a stager records its slots' events on the
     * copy's stream, and an event must belong to the stream's device
     * (cudaEventRecord), so GPUs cannot share one */
    ns_stager *stage;
} gpu;

struct ns_host_pipeline {
    int n_chunks, n_gpus;
    chunk c[NS_PIPELINE_MAX_CHUNKS];
    gpu *g;
};

void ns_host_pipeline_destroy(ns_host_pipeline *p) {
    if (!p) return;
    for (int k = 0; k < p->n_chunks; ++k) {
        if (p->c[k].batch) {
            ns_hines_solver_destroy(p->c[k].solver);
            ns_batch_destroy(p->c[k].batch);
        }
    }
    for (int i = 0; i < p->n_gpus && p->g; ++i) {
        if (cudaSetDevice(p->g[i].device) != cudaSuccess) continue;
        ns_stager_destroy(p->g[i].stage);
        for (int s = 0; s < 2; ++s) {
            for (int a = 0; a < 4; ++a) cudaFree(p->g[i].buf[s][a]);
            if (p->g[i].q[s]) cudaStreamDestroy(p->g[i].q[s]);
            if (p->g[i].k0[s]) cudaEventDestroy(p->g[i].k0[s]);
            if (p->g[i].k1[s]) cudaEventDestroy(p->g[i].k1[s]);
        }
    }
    (void)cudaGetLastError();
    free(p->g);
    free(p);
}

static ns_status plan(ns_hines_solver_t *s, ns_host_pipeline *p) {
    const ns_batch_t *b = s->batch;
    const int64_t total = ns_batch_compartments(b);
    /* devices 0: every usable GPU from the solver's on (hines.h), as the
     * same-shape implementation counts them */
    int n_gpus = s->options.devices > 0 ? s->options.devices : ns_cuda_usable_devices() - s->device;
    if (n_gpus < 1) n_gpus = 1;
    if ((int64_t)n_gpus > b->n_cells) n_gpus = (int)b->n_cells;
    int64_t chunks = (int64_t)((4 * (size_t)total * sizeof(double) + NS_PIPELINE_CHUNK_BYTES - 1) /
                               NS_PIPELINE_CHUNK_BYTES);
    if (chunks < n_gpus) chunks = n_gpus;
    if (chunks > NS_PIPELINE_MAX_CHUNKS) chunks = NS_PIPELINE_MAX_CHUNKS;
    if (chunks > b->n_cells) chunks = b->n_cells;
    /* cut at cell boundaries so that chunks hold about equal compartments */
    int64_t cell = 0;
    p->n_chunks = 0;
    for (int64_t k = 0; k < chunks && cell < b->n_cells; ++k) {
        const int64_t want_end = total * (k + 1) / chunks;
        int64_t end = cell + 1;
        while (end < b->n_cells && b->cell_offset[end] < want_end) ++end;
        if (k == chunks - 1) end = b->n_cells;
        chunk *c = &p->c[p->n_chunks++];
        c->first = cell;
        c->count = end - cell;
        c->offset = b->cell_offset[cell];
        c->length = b->cell_offset[end] - c->offset;
        c->dev = (int)(k % n_gpus);
        cell = end;
    }
    p->n_gpus = n_gpus;
    return NS_OK;
}

static ns_status setup(ns_hines_solver_t *s, ns_host_pipeline *p) {
    ns_status e = plan(s, p);
    if (e != NS_OK) return e;
    p->g = calloc((size_t)p->n_gpus, sizeof *p->g);
    if (!p->g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "pipeline GPUs");
    const ns_batch_t *b = s->batch;
    for (int k = 0; k < p->n_chunks; ++k) {
        chunk *c = &p->c[k];
        if (p->n_chunks == 1 && p->n_gpus == 1) { /* the solver itself */
            c->solver = s;
            continue;
        }
        const ns_tree_t *const *shapes = (const ns_tree_t *const *)b->shapes;
        e = ns_batch_create(b->n_shapes, shapes, c->count, b->cell_shape + c->first, &c->batch);
        if (e != NS_OK) return e;
        ns_solve_options o = s->options;
        o.method = s->method;
        o.device = s->device + c->dev;
        o.devices = 1;
        e = ns_hines_solver_create(c->batch, &o, &c->solver);
        if (e != NS_OK) {
            ns_error_prefix("host pipeline");
            return e;
        }
    }
    size_t longest = 0;
    for (int k = 0; k < p->n_chunks; ++k)
        if ((size_t)p->c[k].length > longest) longest = (size_t)p->c[k].length;
    for (int i = 0; i < p->n_gpus; ++i) {
        gpu *g = &p->g[i];
        g->device = s->device + i;
        NS_CUDA_TRY(cudaSetDevice(g->device));
        for (int q = 0; q < 2; ++q) {
            NS_CUDA_TRY(cudaStreamCreateWithFlags(&g->q[q], cudaStreamNonBlocking));
            NS_CUDA_TRY(cudaEventCreate(&g->k0[q]));
            NS_CUDA_TRY(cudaEventCreate(&g->k1[q]));
            for (int a = 0; a < 4; ++a) NS_CUDA_TRY(cudaMalloc((void **)&g->buf[q][a], longest * sizeof(double)));
        }
        e = ns_stager_create(&g->stage);
        if (e != NS_OK) return e;
    }
    return NS_OK;
}

/* The lowest failing cell over the chunks (chunk order is cell order). */
static ns_status wait_chunk(ns_host_pipeline *p, int k, ns_status *first_bad) {
    chunk *c = &p->c[k];
    ns_status e = ns_hines_solver_wait(c->solver);
    if (e == NS_ERR_SINGULAR && *first_bad == NS_OK) {
        /* renumber the cell: "cell N, compartment M: ..." from the chunk's solver */
        const char *msg = ns_last_error();
        long long cell = -1;
        int comp = -1;
        if (sscanf(msg, "cell %lld, compartment %d", &cell, &comp) == 2)
            *first_bad = ns_fail(NS_ERR_SINGULAR, "cell %lld, compartment %d: zero or non-finite pivot",
                                 cell + (long long)c->first, comp);
        else
            *first_bad = e;
        return NS_OK;
    }
    return e;
}

typedef struct timing {
    double up, down, kernel; /* [ms] host time in uploads and downloads; the chunks' solves (events) */
} timing;

static int slot_of(const ns_host_pipeline *p, int k) { return (k / p->n_gpus) & 1; }

/* Upload chunk k through the stager and queue its solve on its stream. */
static ns_status queue(ns_host_pipeline *p, int k, const double *const host[4], timing *t) {
    chunk *c = &p->c[k];
    gpu *g = &p->g[c->dev];
    const int slot = slot_of(p, k);
    cudaStream_t q = g->q[slot];
    NS_CUDA_TRY(cudaSetDevice(g->device));
    const double u0 = ns_time_ms();
    ns_status e = NS_OK;
    for (int i = 0; i < 4 && e == NS_OK; ++i)
        e = ns_stage_upload(g->stage, g->buf[slot][i], host[i] + c->offset, (size_t)c->length * sizeof(double), q);
    t->up += ns_time_ms() - u0;
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaEventRecord(g->k0[slot], q));
    e = ns_hines_solver_solve_device(c->solver, g->buf[slot][0], g->buf[slot][1], g->buf[slot][2], g->buf[slot][3],
                                     q);
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaEventRecord(g->k1[slot], q));
    return NS_OK;
}

/* Bring chunk k's solution back and read its pivots. */
static ns_status fetch(ns_host_pipeline *p, int k, double *rhs, timing *t, ns_status *bad) {
    chunk *c = &p->c[k];
    gpu *g = &p->g[c->dev];
    const int slot = slot_of(p, k);
    NS_CUDA_TRY(cudaSetDevice(g->device));
    const double w0 = ns_time_ms();
    ns_status e = ns_stage_download(g->stage, rhs + c->offset, g->buf[slot][3], (size_t)c->length * sizeof(double),
                                    g->q[slot]);
    t->down += ns_time_ms() - w0;
    if (e == NS_OK) e = wait_chunk(p, k, bad);
    float ms = 0;
    if (e == NS_OK)
        e = ns_cuda_status(cudaEventElapsedTime(&ms, g->k0[slot], g->k1[slot]), "chunk timing", __FILE__, __LINE__);
    t->kernel += ms;
    return e;
}

ns_status ns_host_pipeline_solve(ns_hines_solver_t *s, const double *a, const double *b, double *d, double *rhs) {
    ns_host_pipeline *p = s->pipeline;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p) return ns_fail(NS_ERR_OUT_OF_MEMORY, "host pipeline");
        s->pipeline = p;
        ns_status e = setup(s, p);
        if (e != NS_OK) {
            ns_host_pipeline_destroy(p);
            s->pipeline = NULL;
            return e;
        }
    }
    const double t0 = ns_time_ms();
    timing t = {0, 0, 0};
    const double *host[4] = {a, b, d, rhs};
    ns_status e = NS_OK, bad = NS_OK;
    /* chunk k is queued, then the previous chunk of its GPU (k - n_gpus)
     * comes back while k runs; chunk k reuses the buffers of k - 2 n_gpus,
     * whose download is done by then */
    for (int k = 0; k < p->n_chunks && e == NS_OK; ++k) {
        e = queue(p, k, host, &t);
        if (e == NS_OK && k >= p->n_gpus) e = fetch(p, k - p->n_gpus, rhs, &t, &bad);
    }
    for (int k = p->n_chunks - p->n_gpus; k < p->n_chunks && e == NS_OK; ++k)
        if (k >= 0) e = fetch(p, k, rhs, &t, &bad);
    if (e != NS_OK) {
        for (int i = 0; i < p->n_gpus; ++i)
            for (int q = 0; q < 2; ++q) (void)cudaStreamSynchronize(p->g[i].q[q]);
        (void)cudaGetLastError();
        return e;
    }
    s->timing.upload_ms = t.up;
    s->timing.layout_ms = -1.0;
    s->timing.kernel_ms = t.kernel;
    s->timing.download_ms = t.down;
    s->timing.total_ms = ns_time_ms() - t0;
    return bad;
}
