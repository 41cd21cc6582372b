/* neurosolve: gradients of a simulation with respect to its parameters, by
 * the discrete adjoint of the fixed step (docs/gradients.md).
 *
 * A gradient handle is made from a simulation (ns_sim_create with a model,
 * ns_sim_options.model): its cells, their shapes and mechanisms, the current
 * clamps and the recorded sites. It runs its own forward pass from
 * finitialize (the step of the simulation's loop, cell by cell) and the
 * reverse sweep, and returns the loss and its derivative with respect to
 * each parameter added with ns_grad_add_param. The simulation's own state
 * and results are not touched; it must outlive the handle.
 *
 * Each parameter belongs to one cell, so that a batch of cells is a batch of
 * independent fits (each cell its own values). The loss is over the
 * simulation's recorded samples (ns_sim_add_recording, record_every): sample
 * s of site k is v after step s * record_every (sample 0: v_init), in the
 * row-major order of ns_sim_traces (samples x sites). */
#ifndef NEUROSOLVE_GRAD_H
#define NEUROSOLVE_GRAD_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/cable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_grad ns_grad_t;

/* ns_grad_options.tape_bytes by default: 256 MiB */
#define NS_GRAD_TAPE_BYTES ((size_t)256 << 20)

typedef struct ns_grad_options {
    int64_t checkpoint_every; /* steps between stored states (the reverse sweep recomputes the
                                 steps between them); >= steps: the forward pass keeps every
                                 step's tape and nothing is recomputed (memory: steps x the
                                 tape's record); 0: that where it fits tape_bytes, else about
                                 sqrt(steps). The gradient is the same bits whatever the value. */
    size_t tape_bytes;        /* with checkpoint_every 0: the most bytes of stored states per
                                 thread for the whole run's tape; 0: NS_GRAD_TAPE_BYTES */
    int32_t threads;          /* cells at once (OpenMP); 0: OpenMP's default. The results are the
                                 same bits whatever the count. */
    ns_backend backend;       /* the sweep's (docs/gradients.md, "On the GPU"): NS_BACKEND_AUTO (0)
                                 the GPU sweep for a simulation on CUDA whose model it supports,
                                 else the CPU's; NS_BACKEND_CUDA the GPU's (a model outside its
                                 scope is refused, NS_ERR_UNSUPPORTED naming what); NS_BACKEND_CPU */
} ns_grad_options;

NS_API void ns_grad_options_init(ns_grad_options *options);

/* A gradient handle for `sim` (a model simulation; with a network, its event
 * times are fixed: found by each run's forward pass, docs/gradients.md
 * "Synapses, weights and events"; Poisson sources, point processes' net_event,
 * synapse types with ions, POINTERs, random numbers, per-connection state or
 * NET_RECEIVE the translator did not differentiate are refused, naming them).
 * The ions whose concentration a mechanism writes or whose current one reads
 * are part of the differentiated state (docs/gradients.md, "Ions").
 * Mechanisms that write an ion's reversal potential, draw random numbers or
 * have POINTERs are refused (NS_ERR_UNSUPPORTED naming the mechanism and what
 * it does), and those of a library built for mechanism ABI 7 or before that
 * use such an ion. options may be NULL (defaults). */
NS_API ns_status ns_grad_create(const ns_sim_t *sim, const ns_grad_options *options, ns_grad_t **out);
NS_API void ns_grad_destroy(ns_grad_t *grad);

/* A parameter of cell `cell`: `name` is
 *   cm                specific capacitance [uF/cm^2] of the compartments `where` selects
 *   Ra                the axial resistivity [ohm cm] of the whole cell (every section's
 *                     resistivity scaled together; `where` must be "all")
 *   v_init            the initial potential [mV] (`where` must be "all")
 *   NAME_MECH         a RANGE PARAMETER of a density mechanism (gnabar_hh, g_pas) at the
 *                     compartments `where` selects where MECH is inserted
 *                     or a GLOBAL PARAMETER of it (one value per cell: `where` "all"; not
 *                     usetable_MECH)
 *   weight            the weights of the connections onto cell `cell`'s synapses that
 *                     `where` selects: all, conn:K (connection K), syn:K (those onto
 *                     synapse K) or a synapse type (Exp2Syn)
 *   NAME_MECH         of a synapse type (tau2_Exp2Syn): a RANGE PARAMETER of the cell's
 *                     point processes of that type, `where` all or syn:K (synapse K)
 * and otherwise `where` a region selector (soma, axon, basal, apical, other, dend, all), a
 * section (sec:K) or a compartment (cN). The parameter is one value given to all
 * the compartments it selects: until ns_grad_set_param, they keep the model's
 * values, and its derivative is the sum of theirs. *index: the parameter's place
 * in the gradient (0, 1, ... in the order added). Errors name the name and
 * `where`. */
NS_API ns_status ns_grad_add_param(ns_grad_t *grad, int64_t cell, const char *where, const char *name,
                                   int32_t *index);
NS_API int32_t ns_grad_params(const ns_grad_t *grad);
/* Give parameter `index` the value (every compartment it selects). */
NS_API ns_status ns_grad_set_param(ns_grad_t *grad, int32_t index, double value);
/* Its value: the one set, or the model's value at its first compartment. */
NS_API ns_status ns_grad_get_param(const ns_grad_t *grad, int32_t index, double *value);

/* The loss over the recorded samples y (samples x sites, row-major):
 *   dldy given:      L = sum dldy * y (the caller's loss linearised: the
 *                    gradient is the vector-Jacobian product dldy^T dy/dtheta)
 *   else:            L = sum weight * (y - target)^2 (weight NULL: 1) */
typedef struct ns_grad_loss {
    const double *target; /* samples x sites; needed unless dldy is given */
    const double *weight; /* samples x sites, or NULL */
    const double *dldy;   /* samples x sites, or NULL */
} ns_grad_loss;

/* Run `steps` steps from finitialize and the reverse sweep: *value the loss,
 * grad[k] its derivative with respect to parameter k (ns_grad_params entries),
 * traces (NULL, or samples x sites) the recorded samples of the forward pass,
 * where samples = steps / record_every + 1. A NaN or Inf in v stops the run
 * with NS_ERR_NOT_FINITE naming the step, cell and compartment. */
NS_API ns_status ns_grad_run(ns_grad_t *grad, int64_t steps, const ns_grad_loss *loss, double *value, double *grad_out,
                             double *traces);

/* The shape of a run's recorded samples (ns_grad_run's traces and the
 * loss's arrays): samples = steps / record_every + 1 rows of sites (the
 * simulation's recordings). */
NS_API int64_t ns_grad_samples(const ns_grad_t *grad, int64_t steps);
NS_API int32_t ns_grad_sites(const ns_grad_t *grad);

/* Bytes of the last run's stored states (checkpoints and one segment's
 * tape per thread at work; on the CPU the handle keeps these buffers for its
 * next run, at the largest size a run needed, until ns_grad_destroy) and of
 * the handle's per-cell copies; on the GPU
 * (ns_grad_backend), the device memory the sweep held. */
NS_API size_t ns_grad_bytes(const ns_grad_t *grad);
/* The backend the handle's sweep runs on: NS_BACKEND_CPU or NS_BACKEND_CUDA (ns_grad_options.backend) */
NS_API ns_backend ns_grad_backend(const ns_grad_t *grad);

#ifdef __cplusplus
}
#endif
#endif
