/* Private: the one step skeleton (docs/architecture.md, "How a step flows").
 *
 * One step of NEURON's fixed-step method, t -> t + dt with the currents at
 * t + dt/2, is this ordered list of phases; every loop runs them in this
 * order and names its functions after them (phase_events, phase_currents,
 * ...): the CPU loop per lane block (sim/cpu/step.c, run_block), the GPU
 * loop's per-step path on the host (sim/cuda/step_graph.c, ns_sim_gpu_step_phases), and
 * the GPU kernels (sim/cuda/tree.cu, onchip.cu), which run the phases inside
 * one launch per part (the reasons they differ: docs/architecture.md).
 *
 *   events     the network's due events delivered (NET_RECEIVE) at t, the
 *              WATCH conditions
 *   currents   rhs and d from zero; the BEFORE BREAKPOINT blocks; every
 *              mechanism's current and its slope in NEURON's type order, the
 *              synapses' currents, the current clamps
 *   assembly   the capacitance, and the axial terms (those of d are
 *              constants folded in with the capacitance; those of rhs are
 *              added by the solve's elimination, node by node)
 *   solve      the Hines solve and v += x, t += dt; the pivot and NaN/Inf
 *              checks
 *   states     every mechanism's and synapse's states from the new v; then
 *              LONGITUDINAL_DIFFUSION (CPU loop, mech/ldifus.c); the
 *              AFTER SOLVE and BEFORE STEP blocks; a mechanism's error
 *   detection  threshold crossings: the network's detectors and the spike
 *              compartment of every cell (into sim_spike_out)
 *   recording  the recorded sites every record_every steps
 *
 * A backend reads the handle's inputs and writes its outputs: the traces
 * (sim->traces, rows grown by the facade before the call), the spikes
 * (sim->spikes, a sim_spike_out) and the fault; it never calls the facade
 * (sim/sim.c). */
#ifndef NS_SIM_STEP_PHASES_H
#define NS_SIM_STEP_PHASES_H

#include <stdint.h>
#include <stdlib.h>

/* The phases in order (X-macro: X(name) for each). */
#define NS_STEP_PHASES(X) X(events) X(currents) X(assembly) X(solve) X(states) X(detection) X(recording)

typedef enum ns_step_phase {
#define NS_STEP_PHASE_ENUM(name) NS_STEP_##name,
    NS_STEP_PHASES(NS_STEP_PHASE_ENUM)
#undef NS_STEP_PHASE_ENUM
    NS_STEP_PHASE_COUNT
} ns_step_phase;

/* The detection phase's output: the spike times of every cell, in the order
 * found (a cell's spikes come from the one thread or launch that runs it).
 * The facade reads them (ns_sim_spikes), trims them after a fault and
 * clears them at ns_sim_init. */
typedef struct sim_spike_out {
    double **t;      /* per cell */
    int64_t *n, *cap;
} sim_spike_out;

/* Append spike time t of cell `cell`: 0, or -1 when out of memory. */
static inline int ns_spike_out_push(sim_spike_out *o, int64_t cell, double t) {
    if (o->n[cell] == o->cap[cell]) {
        const int64_t cap = o->cap[cell] ? 2 * o->cap[cell] : 8;
        double *grown = (double *)realloc(o->t[cell], (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        o->t[cell] = grown;
        o->cap[cell] = cap;
    }
    o->t[cell][o->n[cell]++] = t;
    return 0;
}

#endif
