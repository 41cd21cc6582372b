/* Private: the fused loops of a model whose mechanisms are all built-in
 * density mechanisms (pas, hh). The onchip loop runs them in its kernel where
 * a shape runs onchip (ns_sim_fused_onchip below; sim/cuda/onchip.cu). The
 * fused tree loop: their generated per-instance functions
 * (src/mech/builtin/pas.h, hh.h) run inside the tree kernel's phases
 * (sim/cuda/tree.cu), many steps per launch, instead of a launch per mechanism
 * and phase around one-step tree launches (sim/cuda/mechanisms.c's per-step
 * path). Both paths use the same device storage (sim/cuda/mechanisms.c: the
 * fields, ions, globals and tables of each mechanism), so a simulation can
 * take either at any advance. A network whose synapse types are the built-in
 * ExpSyn and Exp2Syn runs in the same kernel (ns_sim_fused_net below). The
 * rule that picks one: sim/policy.h, ns_sim_gpu_mechanisms_rule;
 * docs/simulation.md, "Models: the fused loop"; docs/networks.md, "The GPU
 * loop".
 *
 * What the fused kernel stores per step: each mechanism's STATE variables
 * (hh: m, h, n). Its RANGE assigned variables (hh: ina, ik, il, gna, gk,
 * minf, ..., ntau; pas: i) live in registers and are stored in the last step
 * of each launch only, so that ns_sim_get_model_var reads after a run what
 * the per-step path leaves there (no assigned variable of pas or hh is read
 * before it is written within a phase: none carries over from one phase or
 * step to the next). */
#ifndef NS_CABLE_CUDA_SIM_FUSED_H
#define NS_CABLE_CUDA_SIM_FUSED_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "mech/builtin/builtin.h"
#include "sim/cuda/step.h"
#include "sim/cuda/mechanisms.h"
#include "sim/cuda/network.h"
#include "sim/policy.h"

#ifdef __cplusplus
extern "C" {
#endif


/* One built-in mechanism as the fused kernel reads it (device pointers).
 * Its parameters and the e of its ions (fixed: no concentration writer)
 * are constant per instance and repeat from cell to cell of a shape (and
 * often within one): the distinct tuples (NP parameters, then e per ion)
 * are stored once, in `sets`, and each node names its instance and its
 * tuple in one 8-byte load (the hand-written loop reads its region's
 * parameters from a small table the same way). */
typedef struct ns_sim_fused_mech {
    const int32_t *inst;  /* per node of the tree group (Flat), 2 each: its instance (-1 where the
                             mechanism is not inserted) and its tuple in `sets`; NULL: the model
                             does not insert it */
    const double *sets;   /* the distinct tuples, NP + ions doubles each */
    double *fields;       /* n_fields arrays of `count` (field f of instance q at [f * count + q]);
                             the states (and assigned variables) are read and written here */
    int64_t count;        /* instances */
    double *global;       /* the globals (hh: usetable_rates) */
    const double *table;  /* TABLE storage (built on the host at init) */
} ns_sim_fused_mech;

/* The network's synapse types the fused kernel runs (the built-in point
 * processes: their generated functions, field layouts as compiled here). */
#define NS_FUSED_POINT_SLOTS 2
enum { NS_FUSED_EXPSYN = 1, NS_FUSED_EXP2SYN = 2 };
#define NS_FUSED_EXPSYN_PARAMS 2
#define NS_FUSED_EXPSYN_STATES 1
#define NS_FUSED_EXPSYN_FIELDS 4
#define NS_FUSED_EXP2SYN_PARAMS 3
#define NS_FUSED_EXP2SYN_STATES 2
#define NS_FUSED_EXP2SYN_FIELDS 8

/* A network inside the fused kernel (docs/networks.md, "The GPU loop"):
 * per step, NET_RECEIVE of the step's due events (the buckets that
 * sim/cuda/network.c sorts before each interval), the synapses' currents and
 * states at their nodes, and the detectors, all in the launch that runs the
 * interval's steps. slots 0: no network. */
typedef struct ns_sim_fused_net {
    int32_t slots;                           /* the network's point types (gpu_model's slots), all before
                                                hh in NEURON's type order (pas, ExpSyn, Exp2Syn, hh) */
    int32_t kind[NS_FUSED_POINT_SLOTS];      /* NS_FUSED_EXPSYN, NS_FUSED_EXP2SYN per slot */
    ns_mech_ppack pp[NS_FUSED_POINT_SLOTS];  /* each type's device storage (sim/cuda/mechanisms.c)... */
    double *fields[NS_FUSED_POINT_SLOTS];    /* ...its fields (field f of instance q at [f * pp.n + q]) */
    const int32_t *inst0[NS_FUSED_POINT_SLOTS];  /* per tree group cell + 1: its first instance */
    const int32_t *snode_of[NS_FUSED_POINT_SLOTS]; /* per instance: its synapse node (below) */
    /* the synapse nodes (nodes with synapses) of the tree group, by node: their node, and their
     * synapses [snode_begin[k], snode_begin[k + 1]) of syn; syn_flag marks them per node */
    int32_t n_snodes;
    const int32_t *snode_node, *snode_begin;
    const unsigned char *syn_flag;
    const int32_t *syn;                      /* slot << 28 | instance, by node, then type, then instance */
    /* this launch's share of the interval: its first step is step j0 of
     * the interval's len; bucket j * slots + slot is [offsets[b],
     * offsets[b + 1]) of events (offsets NULL: no event is due) */
    const ns_mech_event *events;
    const int64_t *offsets;
    int64_t j0, len;
    /* the detectors (sim/cuda/network.c's arrays) by node: det_node ascending,
     * det_index the detector of each */
    int32_t n_det;
    const int32_t *det_node, *det_index;
    ns_gpu_net_out out; /* what they write (sim/cuda/network.h) */
} ns_sim_fused_net;

typedef struct ns_sim_fused {
    ns_sim_fused_mech pas; /* NEURON's type order: pas before IClamp... */
    ns_sim_fused_mech hh;  /* ...hh after it */
    double celsius;        /* [degC] */
    ns_sim_fused_net net;
} ns_sim_fused;

/* The fused loop of a simulation's tree group (sim/cuda/fused.c). */
typedef struct ns_sim_fused_state ns_sim_fused_state;

/* At create, after ns_gpu_model_create: apply the rule (a FUSED request the
 * rule refuses: NS_ERR_UNSUPPORTED naming why), set sim->gpu_mechanisms and,
 * when fused, build the instance maps over the group's nodes (*out NULL
 * otherwise). */
ns_status ns_sim_fused_create(ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                              int64_t cells, ns_sim_fused_state **out);
void ns_sim_fused_free(ns_sim_fused_state *s);
/* ns_sim_state_field handed out a parameter's or an ion's array: the
 * kernel's copies (the tuples) may be stale, so the rule takes the per-step
 * path from the next advance on (ns_sim_fused_pick). */
void ns_sim_fused_expose(ns_sim_fused_state *s);
/* At init, after ns_gpu_net_create: the network's maps (its synapses by
 * node, the detectors by node) where the rule fuses the network; none
 * otherwise (the network then runs per step). */
ns_status ns_sim_fused_net_build(ns_sim_t *sim, ns_sim_fused_state *s, const gpu_model *g, const gpu_net *gn,
                                 const int64_t *cell_base, int64_t cells);
/* Before a launch of the fused kernel with a network: the interval's events,
 * offsets and spike buffer (sim/cuda/network.c's, which move between
 * intervals), the launch's first step j0 of the interval. */
void ns_sim_fused_net_bind(ns_sim_fused *f, const gpu_net *gn, int64_t j0);
/* At each advance: the rule again (a network that the fused kernel does not
 * run goes per step); *fused is what ns_sim_launch_tree_fused takes, NULL for
 * the per-step path. */
ns_status ns_sim_fused_pick(ns_sim_t *sim, const ns_sim_fused_state *s, const ns_sim_fused **fused);

/* Whether the onchip loop runs the simulation's model (ns_sim_onchip_model_rule
 * on its facts at create, and the built-in hh's TABLE and GLOBALs as the
 * onchip kernel keeps them); sets nothing. */
int ns_sim_fused_onchip_ok(const ns_sim_t *sim);
/* The onchip group `oc` (prepared with a model, one shape) of the model's
 * device storage g (ns_gpu_model_create over the group's cells): the
 * mechanisms' map into its constants, their tuples, fields, hh's TABLE and
 * GLOBALs into oc->launch.mech. */
ns_status ns_sim_fused_onchip(const ns_sim_t *sim, const gpu_model *g, int32_t shape, ns_sim_onchip_group *oc);

/* The tree loop's launch (ns_sim_launch_tree) with the fused mechanisms. */
cudaError_t ns_sim_launch_tree_fused(const ns_sim_tree *tree, const ns_contract_dev *layout,
                                     const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                     const ns_sim_fused *fused, const cudaStream_t streams[3]);

#ifdef __cplusplus
}
#endif
#endif
