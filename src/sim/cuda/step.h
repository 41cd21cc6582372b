/* Private: the GPU simulation loops' launchers (sim/cuda/onchip.cu: a warp per
 * 32 / L cells of one shape with the state in shared memory; sim/cuda/tree.cu:
 * the tree-contraction groups of any shapes) and the data they read. Plain
 * C so that sim/cuda/layout.c and step.c can fill it.
 *
 * A group keeps its state in the layout of its kernel:
 *   onchip: position pos(i) of local cell j at [j * n + pos(i)] (Flat in
 *           the on-chip schedule's position order; stimulus, recording and
 *           spike compartments are positions too);
 *   tree:   Flat, the group's cells in order, each in its tree order.
 * Both kernels run many steps per launch with no host round trip: assembly,
 * mechanisms, stimulus, Hines solve, update, gates, spike detection and
 * recording into device buffers. */
#ifndef NS_CABLE_CUDA_SIM_CUDA_H
#define NS_CABLE_CUDA_SIM_CUDA_H

#include "sim/spike_rule.h"
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "sim/sim_impl.h"
#include "mech/builtin/builtin.h"
#include "hines/cuda/hines_kernels.h"
#include "hines/cuda/onchip_plan.h"
#include "hines/cuda/contract_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* No fault: the device fault key stays at this value. A fault stores
 * min(key, (step << 24) | local cell) (the step within the launch, < 2^40;
 * groups hold < 2^24 cells per launch, see sim/cuda/layout.c). */
#define NS_SIM_FAULT_NONE 0xFFFFFFFFFFFFFFFFULL

typedef struct ns_sim_gpu_group {
    int32_t n;            /* compartments per cell (onchip) */
    int64_t cells;        /* N, cells in the group */
    int32_t spike_node;   /* position (onchip; the tree loop has one per cell) */
    /* v (device, the group's layout) and the tree loop's scratch */
    double *v, *d, *rhs;
    /* stimuli per local cell (device CSR); stim_scale = 1e2 / area of the
     * stimulated node (nA -> mA/cm^2) */
    const int64_t *stim_begin; /* cells + 1 */
    const int32_t *stim_node;
    const double *stim_del, *stim_dur, *stim_amp, *stim_scale;
    /* recordings per local cell (device CSR): node and global site index */
    const int64_t *rec_begin; /* cells + 1 */
    const int32_t *rec_node;
    const int32_t *rec_site;
    /* outputs of one launch (device) */
    double *traces;              /* rows x n_sites, row 0 = first sample of the launch */
    int32_t *spike_count;        /* cells */
    double *spike_t;             /* cells x spike_cap */
    unsigned long long *fault;   /* one key */
    /* NULL, or the LFP's membrane currents (sim_impl.h's snap: rows of run.snap_ld, written at
     * snap_col of each position), snap_col and snap_g from this group's first position */
    double *snap;
    const int32_t *snap_col;
    const double *snap_g;
    /* NULL, or each position's part of the currents' sums of squares (sim_impl.h's snap_slot),
     * from this group's first position, snap_at (the group's first position in all) */
    const int32_t *snap_slot;
    int64_t snap_at;
} ns_sim_gpu_group;

/* The per-step path replayed as a CUDA graph (sim/cuda/step_graph.h): the
 * step that a replay runs, in device memory; the graph's last launch moves
 * it on to the next step. */
typedef struct ns_sim_gpu_clock {
    int64_t k;        /* the step within the part */
    double t;         /* its start [ms] */
    double tmid, tnew; /* its currents' time t + dt/2 and its states' t + dt */
} ns_sim_gpu_clock;

typedef struct ns_sim_gpu_run {
    double t0, dt, threshold;
    int netcon;             /* soma spikes by NetCon's rule (spike_rule.h) */
    int64_t step0;          /* step count before the launch */
    int64_t steps;          /* steps in the launch */
    int64_t every, check;   /* record_every, check_every */
    int64_t first_sample;   /* global index of traces row 0 */
    int32_t n_sites;
    int32_t spike_cap;
    /* a model's step (tree loop, one step per launch): */
    int preassembled;           /* 1: rhs and d hold the mechanisms' currents (phase A loads them) */
    int continued;              /* 1: spike counts go on from the group's spike_count */
    int64_t k0;                 /* steps of the part before this launch (fault keys) */
    const ns_sim_gpu_clock *clock; /* not NULL: the launch's step is clock->k further on (step0, k0,
                                      continued) and starts at clock->t, not t0 (a replayed graph) */
    /* group.snap: the membrane currents after every snap_every-th step into row step / snap_every - snap_first */
    int64_t snap_every, snap_first, snap_ld;
    int64_t snap_norm_at, snap_norm_ld; /* group.snap_slot: the parts' sums at snap + snap_norm_at, rows of snap_norm_ld */
} ns_sim_gpu_run;


/* ------------------------------------------------------------ onchip loop */

/* A shape's constants for the onchip loop, packed in position order:
 * doubles a, b, cap [n each]; the mechanisms' tuples (uint16 x 2 per
 * position: pas's tuple, hh's tuple; NS_SIM_ONCHIP_NONE where the
 * mechanism is not inserted) [2 n];
 * int32 parent position (-1 at the root) [n], child_begin [n + 1], child
 * positions grouped by parent in increasing compartment order
 * [max(n - 1, 1)]; int8 region [n]; zero padding to a multiple of 16 bytes. */
static inline size_t ns_sim_onchip_const_bytes(int32_t n) {
    const size_t bytes = 3 * (size_t)n * sizeof(double) + 2 * (size_t)n * sizeof(uint16_t) +
                         (2 * (size_t)n + 1 + (size_t)(n > 1 ? n - 1 : 1)) * sizeof(int32_t) + (size_t)n;
    return (bytes + 15) / 16 * 16;
}

#define NS_SIM_ONCHIP_NONE 0xFFFF

/* A model's built-in mechanism in the onchip loop (sim/cuda/fused.c): its
 * distinct parameter tuples (NP parameters, then e per ion), its fields
 * (n_fields arrays of `count`: the states are loaded at the start of a
 * launch and stored at its end, the assigned variables stored in its last
 * step), `per_cell` instances per cell (the group's cells in order, each
 * cell's in compartment order). */
typedef struct ns_sim_onchip_mech {
    const double *sets;
    double *fields;
    int64_t count;
    int32_t per_cell;
} ns_sim_onchip_mech;

typedef struct ns_sim_onchip_model {
    ns_sim_onchip_mech pas, hh;
    const uint16_t *local;   /* device, 2 per position: pas's and hh's instance within the cell
                                (NS_SIM_ONCHIP_NONE: absent); read at a launch's start, end and
                                last step only, so not in shared memory */
    const double *hh_global; /* device, hh's n_globals (<= NS_FUSED_HH_GLOBALS, mech/builtin/builtin.h) */
    const double *hh_table;  /* device, NS_FUSED_HH_TABLE doubles */
    int32_t hh_globals;
    double celsius;
} ns_sim_onchip_model;

typedef struct ns_sim_onchip {
    const void *consts;  /* device, ns_sim_onchip_const_bytes(n) */
    int32_t const_words; /* 16-byte words of consts */
    int32_t warps;       /* warps per CUDA block */
    int32_t in_shared;   /* 1: the images fit a block's shared memory; 0: they do not (the
                            shape runs in the tree loop) */
    ns_sim_onchip_model mech; /* the membrane: the model's built-in pas and hh (generated code) */
} ns_sim_onchip;

/* Doubles of shared memory per cell: v, hh's states m, h, n per position, d,
 * rhs and one of padding (cells an odd number of doubles apart: different
 * banks). */
NS_HOST_DEVICE static inline int ns_sim_onchip_cell_doubles(int32_t n) { return 6 * n + 1; }

/* Static shared memory of the onchip kernel [bytes]: hh's TABLE (its GLOBALs
 * are in registers), plus alignment slack. */
#define NS_SIM_ONCHIP_STATIC_BYTES (NS_FUSED_HH_TABLE * sizeof(double) + 64)

/* Dynamic shared memory of one block [bytes]: the schedule's core, the
 * constants, the warps' cells. */
static inline size_t ns_sim_onchip_block_bytes(int32_t n, int32_t lanes, int32_t core, int32_t const_words,
                                               int warps) {
    return ((size_t)core * sizeof(int32_t) + 15) / 16 * 16 + (size_t)const_words * 16 +
           (size_t)warps * (size_t)(NS_ONCHIP_LANES / lanes) * (size_t)ns_sim_onchip_cell_doubles(n) *
               sizeof(double);
}

/* A shape group's onchip preparation (sim/cuda/onchip_prep.c). */
typedef struct ns_sim_onchip_group {
    ns_onchip_plan plan;    /* host; plan.data NULL: not prepared */
    int32_t *plan_dev;      /* device copy of plan.data */
    void *consts_dev;       /* device, packed constants */
    double *sets_dev[2];    /* a model: pas's and hh's tuples (device) */
    uint16_t *local_dev;    /* a model: launch.mech.local (device) */
    ns_onchip_sched sched;  /* bound to plan_dev */
    ns_sim_onchip launch;
} ns_sim_onchip_group;

/* Plan, pack and upload a shape for the onchip loop with `lanes` lanes per
 * cell (0: automatic; more lanes when the choice does not fit); a shape
 * whose image fits no block's shared memory gets launch.in_shared = 0 (the
 * tree loop runs it). *fits = 0 (and NS_OK) only beyond the schedule's size
 * limit (NS_ONCHIP_MAX_N). The constants keep room for the mechanisms' map
 * (ns_sim_onchip_set_map fills it). */
ns_status ns_sim_onchip_prepare(const sim_shape *shape, int32_t lanes, ns_sim_onchip_group *out, int *fits);
/* A model's tuples (2 n uint16, position order: ns_sim_onchip_const_bytes)
 * into the group's uploaded constants. */
ns_status ns_sim_onchip_set_map(ns_sim_onchip_group *group, const uint16_t *map);
void ns_sim_onchip_release(ns_sim_onchip_group *group);

/* Allow the lane count's kernel the dynamic shared memory that `optin` bytes
 * per block leave beside its static memory (NS_SIM_ONCHIP_STATIC_BYTES) and
 * prefer shared memory over L1 (once per device; sim/cuda/onchip_prep.c
 * passes the device's opt-in). */
cudaError_t ns_sim_onchip_setup(int lanes, size_t optin);
/* Resident blocks per SM of the lane count's kernel. */
cudaError_t ns_sim_onchip_occupancy(int lanes, int warps, size_t bytes, int *blocks);
cudaError_t ns_sim_launch_onchip(const ns_onchip_sched *sched, const ns_sim_onchip *onchip,
                                 const ns_sim_gpu_group *group, const ns_sim_gpu_run *run, cudaStream_t stream);

/* ------------------------------------------------------------ tree loop */

/* Threads of a block of the tree loop; a group holds at most this many
 * cells (one thread per cell in the per-cell phases). */
#define NS_SIM_TREE_THREADS 512

/* The cells that the tree loop runs (sim/cuda/tree.cu): the group's
 * ns_sim_gpu_group holds their state Flat (cells in order) plus d and rhs;
 * these are the per-node constants (Flat), the per-cell bases and the
 * solver's scratch. Parents and children are local to the node's group. */
typedef struct ns_sim_tree {
    const double *a, *b, *cap;
    const int8_t *region;
    const int32_t *parent;      /* group-local, -1 at a cell's root */
    const int32_t *child_begin; /* nodes + 1, into child */
    const int32_t *child;       /* group-local, increasing per node */
    const int64_t *cell_base;   /* cells + 1: first node of each cell */
    const int32_t *spike_node;  /* per cell, cell-local */
    const int32_t *g_cell0;     /* groups + 1: first cell of each group */
    double *up, *down, *lo;     /* the solve's scratch, Flat */
    unsigned long long *flags;  /* 2 per big group: pivot key and stop flag of a cluster */
} ns_sim_tree;

/* Allow the shared-memory kernel `bytes` of dynamic shared memory. */
cudaError_t ns_sim_tree_setup(size_t bytes);
/* Blocks of the small-group kernel (fused or not: the fewer) resident on
 * one SM with `shared_bytes` of dynamic shared memory each (after
 * ns_sim_tree_setup with at least that many bytes). */
cudaError_t ns_sim_tree_resident(size_t shared_bytes, int *blocks_per_sm);
/* Launch the three kinds of group (several cells, one cell in shared memory,
 * one cell in device memory) on the three streams. */
cudaError_t ns_sim_launch_tree(const ns_sim_tree *tree, const ns_contract_dev *layout,
                               const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                               const cudaStream_t streams[3]);

/* ------------------------------------------------------------ state access */

/* Copy `count` values between a group's state array in its layout and the
 * caller's Flat array through flat_of (the Flat index of each layout
 * position): to_flat 1 gathers into flat, 0 scatters from it (sim/cuda/state.cu). */
cudaError_t ns_sim_launch_state_copy(double *state, const int64_t *flat_of, int64_t count, double *flat, int to_flat,
                                     cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
