/* Private: the simulation handle, its per-shape constants and the backend
 * table that the CPU loop (sim/cpu/step.c) and the CUDA loop (cuda/) fill. */
#ifndef NS_CABLE_SIM_IMPL_H
#define NS_CABLE_SIM_IMPL_H

#include "mech/model_impl.h"
#include "sim/step_phases.h"
#include "core/registry.h"
#include "neurosolve/cable.h"
#include "sim/snap.h"

/* Constants of one shape, shared by all its cells (NEURON's per-node data). */
typedef struct sim_shape {
    int32_t n;
    int32_t *parent;
    double *a, *b;        /* NEURON's connection coefficients [S/cm^2; uS at zero-area nodes] */
    double *cap;          /* (1e-3/dt) * cm [S/cm^2]; 0 at zero-area nodes (no capacitance) */
    double *stim_scale;   /* 1e2 / area [1/um^2 * 1e2]; area 100 at zero-area nodes, as NEURON */
    int8_t *region;       /* ns_region of the node, -1 at zero-area nodes (no membrane) */
    int32_t *section;     /* for error messages */
    double *x;
    int32_t spike_node;   /* root section at x = 0.5 */
} sim_shape;

typedef struct sim_stim {
    int64_t cell;
    int32_t node;
    double del, dur, amp; /* [ms], [ms], [nA] */
} sim_stim;

typedef struct sim_rec {
    int64_t cell;
    int32_t node;
} sim_rec;

/* A failure found during a run: the earliest step, then the lowest cell. */
typedef struct sim_fault {
    int64_t step; /* step count after which v was not finite; INT64_MAX: none */
    int64_t cell;
    int32_t node;
    double value;
    const ns_mech_error *mech; /* not NULL: a mechanism's error stopped the step, not v */
} sim_fault;

/* A mechanism's error (ns_mech_ppack.error) as the status that the call returns:
 * NS_ERR_MECHANISM, "FILE:LINE: mechanism NAME: message", with the time t [ms] and step
 * of the step it stopped (step < 0: at finitialize) */
ns_status ns_sim_mech_error(const ns_mech_error *e, double t, int64_t step);
/* "on NaN/Inf", "on a mechanism's error" or "on an error": what stopped the last run (sim->failed) */
const char *ns_sim_failed_what(const ns_sim_t *sim);

typedef struct sim_ops sim_ops;
struct net_loop;

struct ns_sim {
    ns_sim_params params;
    ns_sim_options options;
    ns_backend backend;
    ns_hines_method method;
    int device;            /* CUDA: the GPU (options.device resolved); -1 on the CPU */
    int32_t gpu_lanes;     /* set by the CUDA loop: see ns_sim_gpu_lanes */
    ns_sim_gpu_mechanisms gpu_mechanisms; /* set by the CUDA loop for a model: FUSED or PER_STEP */
    int gpu_graph;                        /* the GPU's per-step path ran its last part as a replayed CUDA
                                             graph (sim/cuda/step_graph.h)... */
    char gpu_graph_why[200];              /* ...or why CUDA refused its capture ("": it did not) */
    const sim_ops *ops;
    void *backend_state;

    int32_t n_shapes;
    sim_shape *shapes;
    int32_t max_n;
    int64_t n_cells;
    int32_t *cell_shape;   /* n_cells */
    int64_t *cell_offset;  /* n_cells + 1: Flat layout of the state */
    int64_t n_comp;

    /* v, Flat layout (host copy; the CUDA loop keeps its own on the device);
     * the mechanisms' states are the model's */
    double *v;

    sim_model *model;      /* ns_sim_options.model, or the params' membrane keys' (ns_sim_params_model) */
    struct sim_net *net;   /* synapses, sources, connections (net.c); NULL: none */

    /* stimuli and recordings as added, and per-cell indexes of them (CSR over
     * cells, rebuilt when `dirty`) */
    sim_stim *stims;
    int64_t n_stims, cap_stims;
    sim_rec *recs;
    int32_t n_recs, cap_recs;
    int64_t *stim_begin; /* n_cells + 1 into stim_order */
    int64_t *stim_order;
    int64_t *rec_begin;  /* n_cells + 1 into rec_order (site indices) */
    int32_t *rec_order;
    int dirty;

    /* results */
    double *traces; /* samples x n_recs */
    int64_t samples, cap_samples;
    sim_spike_out spikes; /* the detection phase's output (step_phases.h) */

    double t;        /* [ms] */
    int64_t steps;
    double elapsed_ms;
    ns_status failed; /* what stopped the last run (NaN/Inf, a mechanism's error, ...; NS_OK: none): ns_sim_init is needed */
    int creating;    /* ns_sim_create's own ns_sim_init: a density mechanism's POINTERs may be unconnected */
    int ptr_unset;   /* such a POINTER was unconnected at the last init: ns_sim_advance refuses */
    int state_set;   /* ns_sim_set_state changed the host copy: push it before the next step */

    /* A sampler run after every sample_every-th step (the LFP, src/lfp):
     * ns_sim_advance cuts its steps there and passes the sampled step's
     * midpoint time and whether it is the advance's last sample. NULL: none. */
    ns_status (*sample)(ns_sim_t *sim, void *ctx, double t_mid, int last);
    void *sample_ctx;
    int64_t sample_every;
    /* The sampler inside the GPU loop instead (a CUDA simulation's LFP:
     * src/lfp/cuda; `sample` is then NULL): after every sample_every-th step
     * the loop writes the membrane current [nA] of every state position that
     * has a column (the parts of ns_sim_state_part in order, each from the
     * sum of the sizes before it; snap_stride positions in all) into
     * snap[row * snap_ld + snap_col[position]] (row: step / sample_every -
     * first; first: the launch's first sampled step's): Kirchhoff at the node
     * with the step's new v, snap_g[position] the axial conductance to its
     * parent [uS] (the children's theirs), plus the clamps on at the step's
     * midpoint; snap_col[position] < 0: nothing written (no membrane). snap,
     * snap_col and snap_g are device memory, snap_rows rows; each launch
     * holds at most snap_rows samples, and sample_flush is called after each
     * launch (its work finished) with the launch's first step, start time
     * and steps (sample_flush may point snap at another buffer of as many
     * rows for the next launch). */
    double *snap;
    const int32_t *snap_col;
    const double *snap_g;
    int64_t snap_stride, snap_rows, snap_ld;
    /* With snap_slot (device, per state position; NULL: none), each sample's
     * sums of squares of the currents, by parts: the positions cut at every
     * multiple of NS_SIM_SNAP_WINDOW and where a cell starts or ends; the
     * loop writes each part's sum (in a fixed order) at snap[snap_norm_at +
     * row * snap_norm_ld + snap_slot[q]], q any position of the part
     * (snap_slot[q] < 0: none). A cell's norm is then the sum of its parts,
     * which the reduction reads instead of the currents (src/lfp/cuda). */
    const int32_t *snap_slot;
    int64_t snap_norm_at, snap_norm_ld;
#define NS_SIM_GPU_LAUNCH_STEPS 2000 /* the GPU loop's steps per launch at most (sim/cuda/step.c) */
    ns_status (*sample_flush)(ns_sim_t *sim, void *ctx, int64_t step0, double t0, int64_t steps);
    /* sample_flush leaves a launch's reduction running beside the next
     * launch; sample_finish (at the end of every ns_sim_advance, whatever
     * its status) completes the last one. NULL: none. */
    ns_status (*sample_finish)(ns_sim_t *sim, void *ctx);
    struct sim_dist *dist; /* spread over processes (ns_sim_options.dist, sim/dist_impl.h); NULL: one */
};

struct sim_ops {
    const char *name;
    ns_status (*create)(ns_sim_t *sim);
    void (*destroy)(ns_sim_t *sim);
    /* finitialize from the host arrays (the facade has set v = v_init): the
     * mechanisms' INITIAL, the network's blocks */
    ns_status (*init)(ns_sim_t *sim);
    /* advance `steps` steps from sim->steps; record into sim->traces (grown by
     * the caller for the new samples) and append spikes; fill *fault */
    ns_status (*advance)(ns_sim_t *sim, int64_t steps, sim_fault *fault);
    /* bring the state of the host arrays up to date (NULL: they always are) */
    ns_status (*sync_state)(ns_sim_t *sim);
    /* make the backend's state that of the host arrays, after ns_sim_set_state
     * (NULL: the host arrays are the state) */
    ns_status (*load_state)(ns_sim_t *sim);
    /* ns_sim_read_var / ns_sim_write_var on the backend's own memory (NULL:
     * the host arrays, after sync_state); sim.c has checked the arguments
     * except the pointer and stream, which belong to the backend */
    ns_status (*read_var)(ns_sim_t *sim, ns_sim_var var, double *flat, void *stream);
    ns_status (*write_var)(ns_sim_t *sim, ns_sim_var var, const double *flat, void *stream);
    /* ns_sim_get_model_var (write 0) / ns_sim_set_model_var (write 1): field
     * `field` of the model's mechanism `mech` (read: NaN where it is not
     * inserted; write: those entries ignored), or (mech < 0) array q (0 e,
     * 1 ci, 2 co, 3 i) of ion `ion`, of one cell, from or into `io` (host) */
    ns_status (*model_var)(ns_sim_t *sim, int64_t cell, int32_t mech, int32_t field, int32_t ion, int32_t q,
                           double *io, int write);
    /* a network's interval loop (net_impl.h, ns_net_loop_next; NULL: no
     * networks on this backend) */
    ns_status (*advance_net)(ns_sim_t *sim, struct net_loop *loop, sim_fault *fault);
    /* ns_sim_state_parts / ns_sim_state_part / ns_sim_state_done: the loop's
     * own arrays (sim.c has checked `part` and, for state_done, that a CPU
     * simulation got no stream; the stream's device is the backend's) */
    int64_t (*state_parts)(const ns_sim_t *sim);
    ns_status (*state_part)(ns_sim_t *sim, int64_t part, ns_sim_part *out);
    ns_status (*state_done)(ns_sim_t *sim, void *stream);
    /* ns_sim_state_field: field `field` of mechanism `mech`, or (mech < 0)
     * array q of ion `ion` (ns_sim_model_var_lookup's answer), in part `part` */
    ns_status (*state_field)(ns_sim_t *sim, int64_t part, int32_t mech, int32_t field, int32_t ion, int32_t q,
                             ns_sim_field *out);
};

const sim_ops *ns_sim_cpu_ops(void);
/* The family's implementations (core/registry.h), in sim.c. */
ns_impl_table ns_sim_impls(void);
const sim_ops *ns_sim_cuda_ops(void); /* NULL without CUDA */

/* The model that the params' membrane keys (hh, pas and their values per
 * region, usetable_hh) stand for: the built-in hh and pas of the catalogue
 * (params.c); every simulation without ns_sim_options.model runs it. */
ns_status ns_sim_params_model(const ns_sim_params *params, ns_sim_model_t **out);

/* Room for trace samples [0, upto) (checkpoint.c restores them). */
ns_status ns_sim_grow_traces(ns_sim_t *sim, int64_t upto);

/* Rebuild the per-cell stimulus and recording indexes if needed. */
ns_status ns_sim_index(ns_sim_t *sim);

/* NS_ERR_INVALID_ARGUMENT naming `what` unless compartment `node` of `cell` exists (the stimuli's,
 * recordings' and the network's sites). */
ns_status ns_sim_check_site(const ns_sim_t *sim, const char *what, int64_t cell, int32_t node);

/* NEURON's time after k half steps from t (t += 0.5 * dt each). */
static inline double ns_sim_half_step(double t, double dt) { return t + .5 * dt; }
/* NEURON's nrn_cap_jacob factor: cap = this x cm */
static inline double ns_sim_cap_factor(const ns_sim_t *sim) { return .001 / sim->params.dt; }

#endif
