/* Private: which GPU loop runs a shape group of the simulation (`auto`),
 * as a pure function of what the loops' planning measured, so that the
 * decision is unit-tested without a GPU (tests/core/test_policy.c). The rule and
 * the measurements behind it: docs/simulation.md, "GPU loops". */
#ifndef NS_CABLE_SIM_POLICY_H
#define NS_CABLE_SIM_POLICY_H

#include <stdint.h>
#include "neurosolve/backend.h"
#include "neurosolve/cable.h"

enum { NS_SIM_LOOP_ONCHIP = 1, NS_SIM_LOOP_TREE = 2 };

/* Onchip only for shapes whose schedule's critical path (backward plus
 * forward node updates on the busiest lanes) is at most this... */
#define NS_SIM_AUTO_ONCHIP_MAX_PATH 128
/* ...and with at least this many cells per SM; the tree loop otherwise. */
#define NS_SIM_AUTO_ONCHIP_MIN_CELLS_PER_SM 16

typedef struct ns_sim_loop_facts {
    int64_t cells;       /* cells of the shape */
    int32_t sms;         /* multiprocessors of the GPU */
    int onchip_fits;     /* the onchip schedule describes the shape */
    int onchip_shared;   /* ... with its images in shared memory */
    int64_t onchip_path; /* its critical path [node updates] */
    int model;           /* the simulation's membrane is a model of mechanisms */
    int model_onchip;    /* ... that the onchip kernel runs (ns_sim_onchip_model_rule) */
} ns_sim_loop_facts;

/* The loop `auto` takes for one shape group. */
int ns_sim_auto_loop(const ns_sim_loop_facts *facts);

/* The simulation's backend under NS_BACKEND_AUTO: CUDA whenever a GPU is
 * usable and the model's mechanisms (if any) have CUDA code, else the CPU
 * (the rule since the GPU loop landed; the loops are compared in
 * bench/README.md, "Mixed populations"; a library built without --cuda
 * runs on the CPU instead of failing). */
ns_backend ns_sim_auto_backend(int usable_gpus, int mechanisms_have_cuda);
/* The backend of a network (simulate --network) under `auto`: the CPU, GPU
 * or not, until the GPU network loop is measured faster on the busyring
 * benchmark (bench/README.md, "Networks"; docs/networks.md, "The GPU loop"):
 * `--backend cuda` asks for it. */
ns_backend ns_sim_auto_network_backend(int usable_gpus);

/* How the GPU tree loop runs a model's mechanisms (ns_sim_options.
 * gpu_mechanisms; docs/simulation.md, "Models: the fused loop"). */
typedef struct ns_sim_mech_facts {
    int requested;            /* ns_sim_gpu_mechanisms of the options */
    int builtin_only;         /* every mechanism is one the fused kernel has (the built-in pas and
                                 hh, with the field layout it was compiled for) */
    int writes_concentration; /* a mechanism writes an ion's concentration (e by Nernst) */
    int network;              /* the simulation has a network (synapses, sources, connections) */
    int network_fused;        /* ...whose synapse types the fused kernel has (the built-in ExpSyn and
                                 Exp2Syn, with the field layouts it was compiled for) */
    int parameters_exposed;   /* a parameter's or an ion's array was handed out (ns_sim_state_field) to
                                 a loop whose fused kernel reads copies made at create (the GPU's) */
} ns_sim_mech_facts;

/* NS_SIM_GPU_MECHANISMS_FUSED or NS_SIM_GPU_MECHANISMS_PER_STEP; -1 when
 * FUSED is requested and the facts rule it out. Fused when asked for or
 * AUTO, with built-in mechanisms only, no concentration writer, no
 * network or one of built-in synapses, and no parameter array handed out
 * to a kernel that reads copies; per step otherwise (measured:
 * bench/README.md, "Generated hh against the hand-written hh" and
 * "Networks: busyring"). */
int ns_sim_gpu_mechanisms_rule(const ns_sim_mech_facts *facts);

/* The rule's path for facts f into *path (a backend sets it on the handle);
 * `fused` asked for where `loop` ("the CPU loop's fused pass", "the GPU's
 * fused loop") cannot run it: NS_ERR_UNSUPPORTED naming why. */
ns_status ns_sim_mechanisms_choose(const ns_sim_mech_facts *f, const char *loop, ns_sim_gpu_mechanisms *path);

/* Whether the GPU's per-step path runs the model's library mechanisms in
 * their library's fused launches (mechanism ABI 6: one launch per phase for
 * all of them, docs/simulation.md "Models: the fused loop"): only when
 * requested (ns_sim_gpu_mechanisms) is PER_STEP (auto: not yet, until a
 * GPU run has measured and checked them); members: the model's
 * mechanisms that have them (ns_mech_desc.cuda_fused_current); one_library:
 * every member has the same launches. */
int ns_sim_library_fused_rule(int requested, int32_t members, int one_library);

/* Whether the GPU's per-step path runs a part of `steps` steps as one
 * captured step replayed (a CUDA graph, sim/cuda/step_graph.h): only when
 * requested is PER_STEP (as the fused launches), not with a network, or where a mechanism outside
 * its library's fused launches may read t (time_free 0), and only for parts
 * of at least NS_SIM_STEP_GRAPH_MIN_STEPS steps. */
#define NS_SIM_STEP_GRAPH_MIN_STEPS 8
int ns_sim_step_graph_rule(int requested, int network, int time_free, int64_t steps);

/* The GPU loop's error channel of n mechanisms (a model's density mechanisms, or a network's
 * point types; docs/mechanisms.md, "Errors in a mechanism"), from each one's
 * ns_mech_desc.cuda_errors (NS_MECH_CUDA_ERRORS_*): an error record for each that may record an
 * error on the device, none for one that cannot (NONE: the loop reads nothing for it). The
 * records of those that do not set the channel's one-word flag (UNKNOWN, or any other value: a
 * library built before the field) come first, and the loop reads them with the flag after every
 * interval; the FLAGGED ones' only when the flag is set. slot[k]: mechanism k's record, -1 none.
 * Returns the number of records, *unflagged how many of them come first. */
int32_t ns_sim_gpu_error_slots(const int *cuda_errors, int32_t n, int32_t *slot, int32_t *unflagged);

/* Whether the onchip loop runs a model's mechanisms (the generated functions
 * of the built-in pas and hh inside its kernel, as the fused tree loop):
 * when the mechanisms rule fuses them (ns_sim_gpu_mechanisms_rule) and
 * there is no network (a network runs in the tree loop: docs/networks.md,
 * "The GPU loop"). Otherwise the model's cells take the tree loop. */
int ns_sim_onchip_model_rule(const ns_sim_mech_facts *facts);

/* Whether `auto` needs the onchip facts at all (it does not for shapes with
 * too few cells: they take the tree loop whatever their schedule). */
int ns_sim_auto_needs_onchip(int64_t cells, int32_t sms);

/* The minimum bytes a step must move per compartment (docs/simulation.md,
 * "Bytes per compartment-step"), a pure function of counts so that the
 * model is unit-tested without a GPU. Per compartment: v read and written
 * (16), the matrix's constant coefficients a, b and the diagonal's constant
 * part read (24); the right-hand side and the diagonal's step part live on
 * chip. Per mechanism instance: each state read and written (16 each), each
 * RANGE parameter read (8 each); assigned variables stay in registers (the
 * fused kernel's). Per ion slot (a node where some mechanism uses the ion),
 * from the OR of its users' flags: e read (8) when read; ci, co read (8)
 * when read or written and written (8) when written, e then written (8) by
 * Nernst; e written (8) when a mechanism writes it; the ion current and its
 * slope stay on chip. Stimuli, synapses and recordings are not counted. */
typedef struct ns_sim_bytes_mech {
    int32_t n_params, n_states;
    int64_t instances;
} ns_sim_bytes_mech;
typedef struct ns_sim_bytes_ion {
    int64_t slots;
    unsigned flags; /* NS_MECH_ION_* of every mechanism using the ion, or-ed */
} ns_sim_bytes_ion;
/* Bytes per compartment-step (0 when compartments < 1). */
double ns_sim_min_bytes(int64_t compartments, int32_t n_mechs, const ns_sim_bytes_mech *mechs, int32_t n_ions,
                        const ns_sim_bytes_ion *ions);

#endif
