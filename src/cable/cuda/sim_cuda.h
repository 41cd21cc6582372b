/* Private: the GPU simulation loop's launcher (sim_kernels.cu) and the data
 * it reads. Plain C so that sim_cuda.c can fill it.
 *
 * Cells are grouped by shape; a group of N cells of n compartments keeps its
 * state Full-Interleaved: node i of local cell j at [i * N + j] (one thread
 * per cell, coalesced). The kernel runs many steps per launch with no host
 * round trip: assembly, mechanisms, stimulus, Hines solve, update, gates,
 * spike detection and recording into device buffers. */
#ifndef NS_CABLE_CUDA_SIM_CUDA_H
#define NS_CABLE_CUDA_SIM_CUDA_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "cable/sim_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* No fault: the device fault key stays at this value. A fault stores
 * min(key, (step << 24) | local cell) (the step within the launch, < 2^40;
 * groups hold < 2^24 cells per launch, see sim_cuda.c). */
#define NS_SIM_FAULT_NONE 0xFFFFFFFFFFFFFFFFULL

typedef struct ns_sim_gpu_group {
    int32_t n;            /* compartments per cell */
    int64_t cells;        /* N, cells in the group */
    int32_t spike_node;
    /* shape constants (device) */
    const int32_t *parent;
    const double *a, *b, *cap, *stim_scale;
    const int8_t *region;
    /* state and scratch (device, interleaved) */
    double *v, *m, *h, *gn, *d, *rhs;
    /* stimuli per local cell (device CSR) */
    const int64_t *stim_begin; /* cells + 1 */
    const int32_t *stim_node;
    const double *stim_del, *stim_dur, *stim_amp;
    /* recordings per local cell (device CSR): node and global site index */
    const int64_t *rec_begin; /* cells + 1 */
    const int32_t *rec_node;
    const int32_t *rec_site;
    /* outputs of one launch (device) */
    double *traces;              /* rows x n_sites, row 0 = first sample of the launch */
    int32_t *spike_count;        /* cells */
    double *spike_t;             /* cells x spike_cap */
    unsigned long long *fault;   /* one key */
} ns_sim_gpu_group;

typedef struct ns_sim_gpu_run {
    double t0, dt, threshold, q10;
    int usetable;
    int64_t step0;          /* step count before the launch */
    int64_t steps;          /* steps in the launch */
    int64_t every, check;   /* record_every, check_every */
    int64_t first_sample;   /* global index of traces row 0 */
    int32_t n_sites;
    int32_t spike_cap;
    const ns_hh_table *table;   /* device */
    const sim_region *regions;  /* device, NS_REGION_COUNT */
} ns_sim_gpu_run;

cudaError_t ns_sim_launch_steps(const ns_sim_gpu_group *group, const ns_sim_gpu_run *run, int threads,
                                cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
