/* Private to the GPU loops' host side (sim/cuda/): the shape groups and their
 * state on the device (docs/simulation.md, "GPU loops"), made, initialised
 * and read by sim/cuda/layout.c, advanced in launches by the step in
 * sim/cuda/step.c (the CPU loop's: sim/cpu/layout.h). */
#ifndef NS_SIM_CUDA_LAYOUT_H
#define NS_SIM_CUDA_LAYOUT_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "sim/cuda/step.h"
#include "sim/cuda/policy.h"
#include "sim/cuda/mechanisms.h"
#include "sim/cuda/network.h"
#include "sim/cuda/fused.h"
#include "sim/cuda/step_graph.h"

#define PART_STEPS NS_SIM_GPU_LAUNCH_STEPS /* steps per launch */
#define SPIKE_CAP 128    /* spikes per cell per launch (more is an error) */
/* Shape groups run concurrently, group k on stream k % STREAMS: a
 * population of many morphologies with few cells each would otherwise run
 * one small kernel after another. */
#define STREAMS 16

typedef struct gpu_group {
    ns_sim_gpu_group g;
    int64_t *cell_id; /* host: global cell of each local cell */
    int32_t shape;            /* -1: the tree group (several shapes) */
    int onchip;               /* 1: onchip loop (oc) */
    int tree;                 /* 1: tree loop (layout, t) */
    ns_sim_onchip_group oc;
    ns_contract_dev layout;   /* tree: the solver's groups on the device */
    ns_sim_tree t;
    int64_t *cell_base;       /* tree (and onchip with a model), host: first node of each local cell (cells + 1) */
    gpu_model *model;         /* onchip: the model's mechanisms over the group's cells (sim/cuda/mechanisms.c),
                                 run by the onchip kernel (sim/cuda/fused.h) */
    int64_t *flat_of;         /* device: the Flat index of each state position (made by the first
                                 ns_sim_read_var / ns_sim_write_var) */
    int64_t *first;           /* onchip, host: first position of each local cell, j * n
                                 (ns_sim_state_part; made on first use) */
    void *allocs[24];     /* shape constants, state, outputs */
    int n_allocs;
    void *site_allocs[12]; /* stimulus and recording indexes (replaced when they change) */
    int n_site_allocs;
} gpu_group;

typedef struct gpu_state {
    gpu_group *groups;
    int32_t n_groups;
    double *traces;            /* device, rows x n_sites */
    int64_t trace_rows;
    int32_t *spike_count_host; /* per local cell of the largest group */
    double *spike_t_host;
    unsigned long long *fault;
    cudaStream_t streams[STREAMS];
    int n_streams;
    int host_current;          /* host arrays hold the device state */
    int64_t sites_stims;       /* stimuli and recordings in the uploaded indexes */
    int32_t sites_recs;
    /* a caller's stream touched the state (ns_sim_read_var / write_var):
     * recorded behind that work, waited for before the state changes again */
    cudaEvent_t external;
    int external_pending;
    gpu_model *model;          /* a model's mechanisms (sim->model) over the tree group's cells */
    gpu_net *net;              /* a network (sim->net, sim/cuda/network.c), on the tree group's stream */
    int64_t net_step;          /* the step within the network's interval */
    ns_sim_fused_state *fused; /* the model's built-in mechanisms in the tree kernel (sim/cuda/fused.h), or NULL */
    ns_sim_step_graph graph;   /* the per-step path's replayed step (sim/cuda/step_graph.h) */
} gpu_state;

/* Where the kernel finds compartment i: itself (tree) or its position (onchip). */
static inline int32_t node_index(const gpu_group *gr, int32_t i) {
    return gr->onchip ? gr->oc.plan.data[gr->oc.plan.pos_of_node + (size_t)i] : i;
}

/* Index of compartment i of local cell j in the group's device state. */
static inline size_t state_index(const gpu_group *gr, int64_t j, int32_t i) {
    if (gr->tree) return (size_t)gr->cell_base[j] + (size_t)i;
    return (size_t)j * (size_t)gr->g.n + (size_t)node_index(gr, i);
}

/* Positions of the group's state arrays. */
static inline size_t state_size(const gpu_group *gr) {
    const size_t N = (size_t)gr->g.cells;
    return gr->tree ? (size_t)gr->cell_base[N] : (size_t)gr->g.n * N;
}

/* Compartments of local cell j. */
static inline int32_t cell_size(const ns_sim_t *sim, const gpu_group *gr, int64_t j) {
    return sim->shapes[sim->cell_shape[gr->cell_id[j]]].n;
}

/* The backend's calls (sim_impl.h's sim_ops) on the groups (layout.c): make and free them,
 * finitialize, the host arrays from and into them, the state through a caller's stream, a
 * model's variables and the state's parts. */
ns_status ns_gpu_create(ns_sim_t *sim);
void ns_gpu_destroy(ns_sim_t *sim);
ns_status ns_gpu_init(ns_sim_t *sim);
ns_status ns_gpu_sync_state(ns_sim_t *sim);
ns_status ns_gpu_load_state(ns_sim_t *sim);
ns_status ns_gpu_read_var(ns_sim_t *sim, ns_sim_var var, double *flat, void *stream);
ns_status ns_gpu_write_var(ns_sim_t *sim, ns_sim_var var, const double *flat, void *stream);
ns_status ns_gpu_cell_var(ns_sim_t *sim, int64_t cell, int32_t mech, int32_t field, int32_t ion, int32_t q,
                          double *io, int write);
int64_t ns_gpu_state_parts(const ns_sim_t *sim);
ns_status ns_gpu_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out);
ns_status ns_gpu_state_done(ns_sim_t *sim, void *stream);
ns_status ns_gpu_state_field(ns_sim_t *sim, int64_t part, int32_t mech, int32_t field, int32_t ion, int32_t q,
                             ns_sim_field *out);
/* What the step needs of them: the host Flat v from (to_device 0) or into (1) a group's device v,
 * and the stimulus and recording indexes uploaded again when sites were added since. */
ns_status ns_gpu_transfer_state(ns_sim_t *sim, gpu_group *gr, int to_device);
ns_status ns_gpu_sync_sites(ns_sim_t *sim, gpu_state *s);

#endif
