/* Internal interface of the tree-contraction kernels (src/hines/contract.h
 * explains the method): the device copy of a layout, the block-level sweeps
 * that the solver kernel and the simulation loop share
 * (contract_sweeps.cuh), and the solver's launchers (contract_kernel.cu).
 * Plain C types so that host code in .c files can fill them. */
#ifndef NS_HINES_CUDA_CONTRACT_CUDA_H
#define NS_HINES_CUDA_CONTRACT_CUDA_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "hines/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads of a block that solves a small group (images in shared memory)
 * and of one that solves a big cell in device memory. */
#define NS_CONTRACT_SMALL_THREADS 256
#define NS_CONTRACT_BIG_THREADS 1024
/* Small groups are sized for this many resident blocks per SM. */
#define NS_CONTRACT_BLOCKS_PER_SM 4
/* A big cell (device memory) is solved by a thread-block cluster of up to
 * this many blocks on GPUs of compute capability 9.0 and later (the
 * portable cluster size; fewer when the big cells would not all fit the
 * SMs at once): its rounds spread over that many SMs. */
#define NS_CONTRACT_CLUSTER 8

/* No bad pivot: the device key stays at this value. A bad pivot stores
 * min(key, (round << 40) | Flat index): the earliest round first. */
#define NS_CONTRACT_PIVOT_NONE 0xFFFFFFFFFFFFFFFFULL

/* A layout on the device (pointers into one allocation). */
typedef struct ns_contract_dev {
    const int64_t *g_base, *g_scratch;
    const int32_t *g_tmpl, *small, *medium, *large, *big;
    const int32_t *t_nodes, *t_rounds, *t_rt, *rt;
    const int32_t *t_tail, *t_head, *t_map, *tmap;
    const ns_contract_fwd *fwd;
    const int32_t *list;
    const ns_contract_bwd *bwd;
    int32_t n_small, n_medium, n_large, n_big, max_small_nodes, max_medium_nodes, max_large_nodes;
    int32_t max_tail_nodes;
    int32_t cluster; /* blocks per big cell (ns_contract_dev_upload): 1 to NS_CONTRACT_CLUSTER */
    void *blob; /* the allocation */
} ns_contract_dev;

/* Upload a layout (synchronous) for the current device (which sets the
 * cluster size); ns_contract_dev_free releases it. */
cudaError_t ns_contract_dev_upload(const ns_contract_layout *layout, ns_contract_dev *dev);
void ns_contract_dev_free(ns_contract_dev *dev);

/* Dynamic shared memory of a small-group block [bytes]. */
static inline size_t ns_contract_shared_bytes(int32_t nodes) {
    return (size_t)nodes * NS_CONTRACT_SHARED_DOUBLES * sizeof(double);
}

/* Raise the shared-memory kernel's dynamic limit (once per device). */
cudaError_t ns_contract_setup(size_t shared_bytes);

/* Solve every group: a, b read; d, rhs Flat in device memory (rhs becomes
 * x, d unspecified); scratch: 3 x layout.scratch_nodes doubles for the big
 * cells (up, down, lo); *bad: the pivot key (set to NS_CONTRACT_PIVOT_NONE by the caller).
 * Small groups run on `stream`, the other kinds on `side` (forked from and
 * joined back to `stream` with the two events), so the kinds share the GPU. */
cudaError_t ns_contract_launch(const ns_contract_dev *dev, const double *a, const double *b, double *d,
                               double *rhs, double *scratch, unsigned long long *bad, cudaStream_t stream,
                               cudaStream_t side, cudaEvent_t fork, cudaEvent_t join);

#ifdef __cplusplus
}
#endif
#endif
