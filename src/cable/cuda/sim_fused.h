/* Private: the fused tree loop of a model whose mechanisms are all built-in
 * density mechanisms (pas, hh): their generated per-instance functions
 * (src/cable/builtin/pas.h, hh.h) run inside the tree kernel's phases
 * (sim_tree.cu), many steps per launch, instead of a launch per mechanism
 * and phase around one-step tree launches (sim_model_cuda.c's per-step
 * path). Both paths use the same device storage (sim_model_cuda.c: the
 * fields, ions, globals and tables of each mechanism), so a simulation can
 * take either at any advance. The rule that picks one: sim_policy.h,
 * ns_sim_gpu_mechanisms_rule; docs/simulation.md, "Models: the fused loop".
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

#include "cable/cuda/sim_cuda.h"
#include "cable/cuda/sim_model_cuda.h"
#include "cable/sim_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The field layout the fused kernel is compiled for (parameters, assigned,
 * states: the generated descriptors' counts; sim_fused_cuda.c refuses to
 * fuse a descriptor that differs, e.g. after a translator change). */
#define NS_FUSED_PAS_PARAMS 2
#define NS_FUSED_PAS_FIELDS 3
#define NS_FUSED_HH_PARAMS 4
#define NS_FUSED_HH_STATES 3
#define NS_FUSED_HH_FIELDS 18

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

typedef struct ns_sim_fused {
    ns_sim_fused_mech pas; /* NEURON's type order: pas before IClamp... */
    ns_sim_fused_mech hh;  /* ...hh after it */
    double celsius;        /* [degC] */
} ns_sim_fused;

/* The fused loop of a simulation's tree group (sim_fused_cuda.c). */
typedef struct ns_sim_fused_state ns_sim_fused_state;

/* The facts of ns_sim_gpu_mechanisms_rule for the simulation's model. */
void ns_sim_fused_facts(const ns_sim_t *sim, ns_sim_mech_facts *facts);
/* At create, after ns_gpu_model_create: apply the rule (a FUSED request the
 * rule refuses: NS_ERR_UNSUPPORTED naming why), set sim->gpu_mechanisms and,
 * when fused, build the instance maps over the group's nodes (*out NULL
 * otherwise). */
ns_status ns_sim_fused_create(ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                              int64_t cells, ns_sim_fused_state **out);
void ns_sim_fused_free(ns_sim_fused_state *s);
/* At each advance: the rule again (a network added since runs per step);
 * *fused is what ns_sim_launch_tree_fused takes, NULL for the per-step path. */
ns_status ns_sim_fused_pick(ns_sim_t *sim, const ns_sim_fused_state *s, const ns_sim_fused **fused);

/* The tree loop's launch (ns_sim_launch_tree) with the fused mechanisms. */
cudaError_t ns_sim_launch_tree_fused(const ns_sim_tree *tree, const ns_contract_dev *layout,
                                     const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                     const ns_sim_fused *fused, const cudaStream_t streams[3]);

#ifdef __cplusplus
}
#endif
#endif
