/* Private to the CPU loop (sim/cpu/): its lane blocks and their layout
 * (docs/simulation.md, "CPU loop"): made, initialised and read by
 * sim/cpu/layout.c, advanced by the step's phases in sim/cpu/step.c. */
#ifndef NS_SIM_CPU_LAYOUT_H
#define NS_SIM_CPU_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "sim/cpu/policy.h"
#include "sim/network.h"
#include "sim/sim_impl.h"

#define ALIGN 64           /* [bytes] block arrays start on a cache line */
#define LOG2_LANES_MAX 3   /* widths 1, 2, 4, 8 */


/* A narrow block's elimination and back substitution as independent
 * chains interleaved: the tree cut for SOLVE_STREAMS streams (ns_cpu_cut
 * with as many "threads" and 2 pieces each); stream s eliminates the cut
 * subtrees of range s, one node of each stream in turn, so that the
 * divisions of different subtrees overlap; then the top (docs/simulation.md,
 * "The narrow blocks' solve streams"; blocks of 1 and 2 lanes take them,
 * wider blocks fill the divider with lanes). 4 streams: with the shape's
 * part read as one sequence (solve_entry), the 2-lane solve was faster
 * with 4 than with 8 and the 1-lane one the same (bench/README.md at 01b826c, "The
 * solve in one pass, the rate table as rows"; -DSOLVE_STREAMS=N for another
 * count). */
#ifndef SOLVE_STREAMS
#define SOLVE_STREAMS 4
#endif
#ifndef SOLVE_STREAMS_W_MAX
#define SOLVE_STREAMS_W_MAX 2
#endif

/* A node of a narrow block's solve streams: what its elimination and back
 * substitution read of the shape, in the streams' order (cpu_shape.order),
 * so that the streams read the shape in one sequence. */
typedef struct solve_entry {
    int32_t at, parent; /* the node's position and its parent's (-1: past the stream's end) */
    double a, b;        /* the node's a and b */
} solve_entry;

typedef struct cpu_shape {
    int32_t *pos;  /* the node order (ns_cpu_reorder): node i's position in the block's arrays; NULL:
                      position i */
    int32_t *ppar; /* with pos: pos[parent[i]] (node 0: 0) */
    int32_t n_top, *top;  /* ns_cpu_cut's top entries */
    int32_t n_order;      /* SOLVE_STREAMS x the longest stream */
    solve_entry *order;   /* order[k * SOLVE_STREAMS + s]: stream s's k-th node to eliminate (its cut
                             subtrees' nodes below their roots, each subtree from its last node) */
    double *cap[LOG2_LANES_MAX + 1]; /* cap repeated over w = 1, 2, 4, 8 lanes (those used) */
} cpu_shape;

typedef struct cpu_block {
    int32_t shape, w;
    int32_t split;                  /* 1: one cell run by every thread (split_front, split_top, split_back) */
    int64_t cell[NS_CPU_LANES_MAX]; /* the cells in lane order (ascending) */
    double *v;                      /* n * w, v[pos(node) * w + lane] */
    model_block *mech;              /* the model's mechanisms (sim->model) */
    net_block *net;                 /* its synapses, events and detectors (sim->net's, net.c), else NULL */
} cpu_block;

/* A thread's next block, on a cache line of its own (other threads take
 * from it once their own blocks are done). */
typedef struct cpu_cursor {
    _Alignas(ALIGN) atomic_llong q;
} cpu_cursor;

typedef struct cpu_state {
    int32_t threads;       /* threads that run (<= blocks) */
    int64_t n_blocks;
    cpu_block *blocks;
    int64_t *thread_begin; /* threads + 1 into `order` */
    int64_t *order;        /* blocks, thread by thread, each thread's longest first */
    cpu_cursor *next;      /* per thread: its next block in `order` (taken by any thread, below) */
    int64_t *lane_of;      /* n_cells: block * NS_CPU_LANES_MAX + lane */
    cpu_shape *shapes;
    model_tables *tables;  /* the model's TABLEs, one copy for every block (mech/blocks.h) */
    double *store;         /* the blocks' state */
    int64_t max_nw;        /* largest n * w (scratch per thread) */
    int64_t n_split;       /* blocks run by every thread, one after the other */
    int64_t *split;        /* their indices */
    int64_t *split_at;     /* each one's offset in the shared scratch */
    double *split_d, *split_rhs; /* their shared scratch (d, rhs) */
    int *split_stopped;    /* per split cell: stopped by a fault in this call */
    ns_cpu_cut *split_cut; /* per split block: its subtrees and node ranges per thread */
    atomic_int *split_bad; /* per split block: a bad pivot in a cut subtree this step */
    atomic_int *split_nan; /* per split block: v not finite in a node range at the last step */
    int *split_spike_top;  /* per split block: its spike node is a node of the top */
    int64_t *part_flat;    /* ns_sim_state_part: the Flat index of each block position, block by block
                              (n_comp, made on first use) */
    int64_t *part_base;    /* n_blocks + 1 into part_flat */
} cpu_state;

/* Node i's position in its block's arrays (cpu_shape.pos). */
static inline int32_t pos_of(const int32_t *pos, int32_t i) { return pos ? pos[i] : i; }

static inline int log2w(int32_t w) { return w >= 8 ? 3 : w >= 4 ? 2 : w >= 2 ? 1 : 0; }

/* `bytes` from a cache line (ALIGN); free with free() */
void *ns_cpu_aligned(size_t bytes);

/* The backend's calls (sim_impl.h's sim_ops) on the lane blocks (layout.c): make and free them,
 * finitialize, the host arrays from and into them, a model's variables and the state's parts. */
ns_status ns_cpu_create(ns_sim_t *sim);
void ns_cpu_destroy(ns_sim_t *sim);
ns_status ns_cpu_init(ns_sim_t *sim);
ns_status ns_cpu_sync_state(ns_sim_t *sim);
ns_status ns_cpu_load_state(ns_sim_t *sim);
ns_status ns_cpu_model_var(ns_sim_t *sim, int64_t cell, int32_t mech, int32_t field, int32_t ion, int32_t q,
                           double *io, int write);
int64_t ns_cpu_state_parts(const ns_sim_t *sim);
ns_status ns_cpu_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out);
ns_status ns_cpu_state_field(ns_sim_t *sim, int64_t part, int32_t mech, int32_t field, int32_t ion, int32_t q,
                             ns_sim_field *out);
/* How the loop runs a model's mechanisms (fused or per step), set on sim: at create, and at each
 * advance with the network's synapse types. */
ns_status ns_cpu_mechanisms(ns_sim_t *sim, const cpu_state *st);

#endif
