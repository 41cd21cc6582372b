/* What the backends (cpu/step.c, cuda/) share of the handle, below sim.c so
 * that no backend calls the facade: the initial state of the host array,
 * a cell's spike list, and the mechanisms' path chosen by the rule
 * (sim_impl.h declares them). */
#include <stdlib.h>

#include "sim/sim_impl.h"
#include "sim/policy.h"
#include "core/error.h"

void ns_sim_init_host(ns_sim_t *sim) {
    /* v at v_init; the mechanisms' states are their INITIAL's (the model's) */
    for (int64_t i = 0; i < sim->n_comp; ++i) sim->v[i] = sim->params.v_init;
}

int ns_sim_push_spike(ns_sim_t *sim, int64_t cell, double t) {
    if (sim->n_spikes[cell] == sim->cap_spikes[cell]) {
        int64_t cap = sim->cap_spikes[cell] ? 2 * sim->cap_spikes[cell] : 8;
        double *grown = realloc(sim->spikes[cell], (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        sim->spikes[cell] = grown;
        sim->cap_spikes[cell] = cap;
    }
    sim->spikes[cell][sim->n_spikes[cell]++] = t;
    return 0;
}

ns_status ns_sim_mechanisms_path(ns_sim_t *sim, const ns_sim_mech_facts *f, const char *loop) {
    const int path = ns_sim_gpu_mechanisms_rule(f);
    if (path < 0)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "simulation: gpu_mechanisms = fused, but %s runs the built-in pas and hh (with hh's rate "
                       "table) and a network of the built-in ExpSyn and Exp2Syn only (%s): use auto or per-step",
                       loop,
                       !f->builtin_only           ? "the model has other mechanisms, or hh without its table"
                       : f->writes_concentration  ? "a mechanism writes a concentration"
                       : f->parameters_exposed    ? "ns_sim_state_field handed out a parameter's or an ion's array, and "
                                                    "the fused loop reads the copies it made at create"
                                                  : "the network has synapse types it does not run");
    sim->gpu_mechanisms = (ns_sim_gpu_mechanisms)path;
    return NS_OK;
}
