/* CUDA backend, method `tree` (tree contraction, src/hines/contract.h): any
 * batch, one shape or many. Planning once per solver (a plan per shape, the
 * batch layout, its upload); a solve runs in place on Flat device arrays on
 * the caller's stream (host arrays: the framework's pipeline,
 * host_pipeline.c).
 *
 * One GPU: the solver's device (ns_solve_options.device). */
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "hines/cuda/contract_cuda.h"
#include "hines/cuda/device_call.h"
#include "hines/cuda/tree_backend.h"
#include "tree/tree_impl.h"

#define NS_TREE_FLUSH_BYTES ((size_t)256 << 20) /* > L2 of any current GPU: benchmark runs start cold */

enum { EV_UP0, EV_K0, EV_K1, EV_DOWN, EV_FORK, EV_JOIN, EV_N };

typedef struct tstate {
    int device;
    ns_contract_dev dev;
    int64_t scratch_nodes;
    cudaStream_t q, side;
    cudaEvent_t ev[EV_N];
    double *flat[4];    /* a, b, d, rhs (host-array solves) */
    double *spare[2];   /* benchmark: pristine d and rhs */
    double *scratch;    /* big cells' up, down, lo */
    unsigned long long *bad;
    ns_device_call call;  /* device solves: checks and the pivot key */
} tstate;

static ns_status layout_with(const ns_batch_t *batch, const ns_contract_layout_options *o,
                             ns_contract_layout *layout) {
    ns_contract_plan *plans = calloc((size_t)batch->n_shapes, sizeof *plans);
    if (!plans) return ns_fail(NS_ERR_OUT_OF_MEMORY, "tree: plans");
    ns_status e = NS_OK;
    for (int32_t k = 0; k < batch->n_shapes && e == NS_OK; ++k)
        e = ns_contract_plan_create(batch->shapes[k]->size, batch->shapes[k]->parent, &plans[k]);
    if (e == NS_OK)
        e = ns_contract_layout_create(batch->n_shapes, plans, batch->n_cells, batch->cell_shape,
                                      batch->cell_offset, o, layout);
    for (int32_t k = 0; k < batch->n_shapes; ++k) ns_contract_plan_destroy(&plans[k]);
    free(plans);
    return e;
}

ns_status ns_tree_layout_for(const ns_batch_t *batch, int32_t group_nodes, int32_t mid_nodes, int32_t big_nodes,
                             int32_t min_groups, int32_t max_cells, int32_t tail_nodes, ns_contract_layout *layout) {
    const ns_contract_layout_options o = {group_nodes, mid_nodes, big_nodes, min_groups, max_cells, tail_nodes};
    return layout_with(batch, &o, layout);
}

ns_status ns_tree_layout_device(int device, const ns_batch_t *batch, ns_contract_layout *layout) {
    int sms = 0, per_sm = 0, optin = 0;
    NS_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    NS_CUDA_TRY(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    NS_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const size_t node_bytes = NS_CONTRACT_SHARED_DOUBLES * sizeof(double);
    /* small groups: NS_CONTRACT_BLOCKS_PER_SM blocks per SM (1 KiB per
     * block for the runtime); medium cells two blocks per SM; a large cell
     * may use the whole opt-in */
    const int32_t group_nodes = (int32_t)(((size_t)per_sm / NS_CONTRACT_BLOCKS_PER_SM - 1024) / node_bytes);
    const int32_t mid_nodes = (int32_t)(((size_t)per_sm / 2 - 1024) / node_bytes);
    const int32_t big_nodes = (int32_t)((size_t)optin / node_bytes);
    /* a big cell's tail: the nodes left when they fit the opt-in */
    const ns_contract_layout_options o = {group_nodes, mid_nodes, big_nodes, NS_CONTRACT_BLOCKS_PER_SM * sms, 0,
                                          big_nodes};
    return layout_with(batch, &o, layout);
}

static void tree_destroy(ns_hines_solver_t *s) {
    tstate *st = s->state;
    if (!st) return;
    for (int k = 0; k < 4; ++k) cudaFree(st->flat[k]);
    cudaFree(st->spare[0]);
    cudaFree(st->spare[1]);
    cudaFree(st->scratch);
    cudaFree(st->bad);
    ns_device_call_free(&st->call);
    ns_contract_dev_free(&st->dev);
    ns_cuda_queue_destroy(st->q, st->ev, EV_N);
    if (st->side) cudaStreamDestroy(st->side);
    (void)cudaGetLastError();
    free(st);
    s->state = NULL;
}

static ns_status tree_create(ns_hines_solver_t *s) {
    tstate *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "tree solver state");
    s->state = st;
    st->device = s->device;
    ns_status e = ns_cuda_status(cudaSetDevice(st->device), "cudaSetDevice", __FILE__, __LINE__);
    ns_contract_layout L;
    memset(&L, 0, sizeof L);
    if (e == NS_OK) e = ns_tree_layout_device(st->device, s->batch, &L);
    if (e == NS_OK) e = ns_cuda_status(ns_contract_dev_upload(&L, &st->dev), "tree layout upload", __FILE__, __LINE__);
    st->scratch_nodes = L.scratch_nodes;
    ns_contract_layout_destroy(&L);
    if (e == NS_OK && st->dev.n_small + st->dev.n_medium + st->dev.n_large + st->dev.max_tail_nodes > 0) {
        int32_t most = st->dev.max_medium_nodes > st->dev.max_small_nodes ? st->dev.max_medium_nodes
                                                                          : st->dev.max_small_nodes;
        if (st->dev.max_large_nodes > most) most = st->dev.max_large_nodes;
        if (st->dev.max_tail_nodes > most) most = st->dev.max_tail_nodes;
        e = ns_cuda_status(ns_contract_setup(ns_contract_shared_bytes(most)), "tree setup", __FILE__, __LINE__);
    }
    if (e == NS_OK) e = ns_cuda_status(cudaStreamCreateWithFlags(&st->q, cudaStreamNonBlocking), "stream", __FILE__, __LINE__);
    if (e == NS_OK) e = ns_cuda_status(cudaStreamCreateWithFlags(&st->side, cudaStreamNonBlocking), "stream", __FILE__, __LINE__);
    for (int k = 0; k < EV_N && e == NS_OK; ++k)
        e = ns_cuda_status(k >= EV_FORK ? cudaEventCreateWithFlags(&st->ev[k], cudaEventDisableTiming)
                                        : cudaEventCreate(&st->ev[k]),
                           "event", __FILE__, __LINE__);
    if (e == NS_OK)
        e = ns_cuda_status(cudaMalloc((void **)&st->scratch, 3 * (size_t)(st->scratch_nodes ? st->scratch_nodes : 1) *
                                                                  sizeof(double)),
                           "tree scratch", __FILE__, __LINE__);
    if (e == NS_OK) e = ns_cuda_status(cudaMalloc((void **)&st->bad, sizeof *st->bad), "pivot key", __FILE__, __LINE__);
    if (e == NS_OK) e = ns_device_call_init(&st->call, st->device);
    if (e != NS_OK) tree_destroy(s);
    return e;
}

/* The pivot key -> NS_ERR_SINGULAR naming the cell and compartment. */
static ns_status pivot_status(const ns_batch_t *batch, unsigned long long key) {
    if (key == NS_CONTRACT_PIVOT_NONE) return NS_OK;
    const int64_t flat = (int64_t)(key & ((1ULL << 40) - 1));
    int64_t lo = 0, hi = batch->n_cells; /* the cell c with offset[c] <= flat < offset[c + 1] */
    while (hi - lo > 1) {
        const int64_t mid = (lo + hi) / 2;
        if (batch->cell_offset[mid] <= flat) lo = mid;
        else hi = mid;
    }
    return ns_hines_pivot_error(batch, lo, (int32_t)(flat - batch->cell_offset[lo]));
}

/* Queue one solve of device arrays on stream q (pivot key reset first). */
static ns_status queue_solve(tstate *st, const double *a, const double *b, double *d, double *rhs, cudaStream_t q) {
    NS_CUDA_TRY(cudaMemsetAsync(st->bad, 0xFF, sizeof *st->bad, q));
    NS_CUDA_TRY(ns_contract_launch(&st->dev, a, b, d, rhs, st->scratch, st->bad, q, st->side, st->ev[EV_FORK],
                                   st->ev[EV_JOIN]));
    return NS_OK;
}

static ns_status device_buffers(ns_hines_solver_t *s, tstate *st) {
    if (st->flat[0]) return NS_OK;
    const size_t bytes = (size_t)ns_batch_compartments(s->batch) * sizeof(double);
    for (int k = 0; k < 4; ++k) NS_CUDA_TRY(cudaMalloc((void **)&st->flat[k], bytes));
    return NS_OK;
}

static ns_status tree_solve_device(ns_hines_solver_t *s, const double *a, const double *b, double *d, double *rhs,
                                   void *stream) {
    tstate *st = s->state;
    cudaStream_t q = (cudaStream_t)stream;
    const void *ptr[4] = {a, b, d, rhs};
    ns_status e = ns_device_call_check(&st->call, "tree", ptr,
                                       (size_t)ns_batch_compartments(s->batch) * sizeof(double), q);
    if (e != NS_OK) return e;
    NS_CUDA_TRY(cudaSetDevice(st->device));
    e = queue_solve(st, a, b, d, rhs, q);
    if (e != NS_OK) return e;
    return ns_device_call_queue(&st->call, st->bad, q);
}

static ns_status tree_wait(ns_hines_solver_t *s) {
    tstate *st = s->state;
    unsigned long long key = NS_CONTRACT_PIVOT_NONE;
    int had = 0;
    ns_status e = ns_device_call_wait(&st->call, &key, &had);
    if (e != NS_OK || !had) return e;
    return pivot_status(s->batch, key);
}

static ns_status tree_benchmark(ns_hines_solver_t *s, const double *a, const double *b, double *d, double *rhs,
                                int repeats, double *kernel_ms) {
    tstate *st = s->state;
    const size_t bytes = (size_t)ns_batch_compartments(s->batch) * sizeof(double);
    const double *host[4] = {a, b, d, rhs};
    NS_CUDA_TRY(cudaSetDevice(st->device));
    ns_status e = device_buffers(s, st);
    if (e != NS_OK) return e;
    if (!st->spare[0]) {
        NS_CUDA_TRY(cudaMalloc((void **)&st->spare[0], bytes));
        NS_CUDA_TRY(cudaMalloc((void **)&st->spare[1], bytes));
    }
    for (int k = 0; k < 4; ++k) NS_CUDA_TRY(cudaMemcpy(st->flat[k], host[k], bytes, cudaMemcpyHostToDevice));
    NS_CUDA_TRY(cudaMemcpy(st->spare[0], d, bytes, cudaMemcpyHostToDevice));
    NS_CUDA_TRY(cudaMemcpy(st->spare[1], rhs, bytes, cudaMemcpyHostToDevice));
    void *flush = NULL;
    if (cudaMalloc(&flush, NS_TREE_FLUSH_BYTES) != cudaSuccess) {
        flush = NULL; /* no room: time without the flush */
        (void)cudaGetLastError();
    }
    unsigned long long key = 0;
    for (int r = 0; r < repeats && e == NS_OK; ++r) {
        if (r) {
            NS_CUDA_GOTO(cudaMemcpyAsync(st->flat[2], st->spare[0], bytes, cudaMemcpyDeviceToDevice, st->q), e, out);
            NS_CUDA_GOTO(cudaMemcpyAsync(st->flat[3], st->spare[1], bytes, cudaMemcpyDeviceToDevice, st->q), e, out);
        }
        if (flush) NS_CUDA_GOTO(cudaMemsetAsync(flush, r & 0xFF, NS_TREE_FLUSH_BYTES, st->q), e, out);
        NS_CUDA_GOTO(cudaEventRecord(st->ev[EV_K0], st->q), e, out);
        e = queue_solve(st, st->flat[0], st->flat[1], st->flat[2], st->flat[3], st->q);
        if (e != NS_OK) goto out;
        NS_CUDA_GOTO(cudaEventRecord(st->ev[EV_K1], st->q), e, out);
        NS_CUDA_GOTO(cudaStreamSynchronize(st->q), e, out);
        float ms = 0;
        NS_CUDA_GOTO(cudaEventElapsedTime(&ms, st->ev[EV_K0], st->ev[EV_K1]), e, out);
        kernel_ms[r] = ms;
    }
    NS_CUDA_GOTO(cudaMemcpy(rhs, st->flat[3], bytes, cudaMemcpyDeviceToHost), e, out);
    NS_CUDA_GOTO(cudaMemcpy(&key, st->bad, sizeof key, cudaMemcpyDeviceToHost), e, out);
    e = pivot_status(s->batch, key);
out:
    cudaFree(flush);
    (void)cudaGetLastError();
    s->timing.kernel_ms = repeats > 0 ? kernel_ms[repeats - 1] : -1.0;
    return e;
}

const ns_hines_backend_ops *ns_hines_tree_cuda_backend(void) {
    static const ns_hines_backend_ops ops = {"cuda-tree", tree_create, NULL, tree_destroy, tree_benchmark,
                                             tree_solve_device, tree_wait, NULL};
    return &ops;
}

/* ------------------------------------------------------------ device copy */

cudaError_t ns_contract_dev_upload(const ns_contract_layout *L, ns_contract_dev *dev) {
    memset(dev, 0, sizeof *dev);
    const void *src[] = {L->g_base, L->g_scratch, L->g_tmpl, L->small, L->medium, L->large, L->big, L->t_nodes,
                         L->t_rounds, L->t_rt, L->rt, L->fwd, L->list, L->bwd, L->t_tail, L->t_head, L->t_map,
                         L->tmap};
    const size_t bytes[] = {(size_t)L->n_groups * sizeof(int64_t), (size_t)L->n_groups * sizeof(int64_t),
                            (size_t)L->n_groups * sizeof(int32_t), (size_t)L->n_small * sizeof(int32_t),
                            (size_t)L->n_medium * sizeof(int32_t), (size_t)L->n_large * sizeof(int32_t),
                            (size_t)L->n_big * sizeof(int32_t),    (size_t)L->n_templates * sizeof(int32_t),
                            (size_t)L->n_templates * sizeof(int32_t), (size_t)L->n_templates * sizeof(int32_t),
                            (size_t)L->n_rt * sizeof(int32_t),     (size_t)L->n_fwd * sizeof(ns_contract_fwd),
                            (size_t)L->n_list * sizeof(int32_t),   (size_t)L->n_bwd * sizeof(ns_contract_bwd),
                            (size_t)L->n_templates * sizeof(int32_t), (size_t)L->n_templates * sizeof(int32_t),
                            (size_t)L->n_templates * sizeof(int32_t), (size_t)L->n_tmap * sizeof(int32_t)};
    const void **dst[] = {(const void **)&dev->g_base, (const void **)&dev->g_scratch, (const void **)&dev->g_tmpl,
                          (const void **)&dev->small,  (const void **)&dev->medium, (const void **)&dev->large, (const void **)&dev->big,       (const void **)&dev->t_nodes,
                          (const void **)&dev->t_rounds, (const void **)&dev->t_rt,    (const void **)&dev->rt,
                          (const void **)&dev->fwd,    (const void **)&dev->list,      (const void **)&dev->bwd,
                          (const void **)&dev->t_tail, (const void **)&dev->t_head, (const void **)&dev->t_map,
                          (const void **)&dev->tmap};
    enum { N = sizeof bytes / sizeof bytes[0] };
    size_t total = 0;
    for (int k = 0; k < N; ++k) total += (bytes[k] + 255) & ~(size_t)255;
    cudaError_t e = cudaMalloc(&dev->blob, total ? total : 256);
    if (e != cudaSuccess) return e;
    char *at = dev->blob;
    for (int k = 0; k < N; ++k) {
        if (bytes[k] && (e = cudaMemcpy(at, src[k], bytes[k], cudaMemcpyHostToDevice)) != cudaSuccess) return e;
        *dst[k] = at;
        at += (bytes[k] + 255) & ~(size_t)255;
    }
    int device = 0, major = 0, sms = 0;
    if ((e = cudaGetDevice(&device)) != cudaSuccess) return e;
    if ((e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess) return e;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return e;
    /* blocks per big cell: as many as the SMs allow for all big cells at
     * once (a power of two up to NS_CONTRACT_CLUSTER); with more big cells
     * than SMs one block each (more would idle during a cell's tail) */
    dev->cluster = 1;
    if (major >= 9 && L->n_big > 0)
        while (dev->cluster < NS_CONTRACT_CLUSTER && (int64_t)dev->cluster * 2 * L->n_big <= sms) dev->cluster *= 2;
    dev->n_small = L->n_small;
    dev->n_medium = L->n_medium;
    dev->n_large = L->n_large;
    dev->max_large_nodes = L->max_large_nodes;
    dev->n_big = L->n_big;
    dev->max_small_nodes = L->max_small_nodes;
    dev->max_medium_nodes = L->max_medium_nodes;
    dev->max_tail_nodes = L->max_tail_nodes;
    return cudaSuccess;
}

void ns_contract_dev_free(ns_contract_dev *dev) {
    if (!dev) return;
    cudaFree(dev->blob);
    memset(dev, 0, sizeof *dev);
}
