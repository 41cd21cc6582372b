/* Private: the one traversal of a network description (netfile.c) that
 * creates its synapses, sources and connections through a table of calls,
 * (ns_network_apply: the ns_sim_* calls, which a simulation spread over
 * processes answers in global numbers, docs/networks.md "MPI"). */
#ifndef NS_CABLE_NETFILE_APPLY_H
#define NS_CABLE_NETFILE_APPLY_H

#include <stdint.h>

#include "neurosolve/network.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The calls of a target, with its own first argument; each as the
 * ns_sim_* call of the same name (cable.h), ids in the target's numbering. */
typedef struct ns_network_calls {
    ns_status (*add_synapse)(void *target, int64_t cell, int32_t compartment, const char *mechanism,
                             int64_t *synapse);
    ns_status (*synapse_set)(void *target, int64_t synapse, const char *name, double value);
    ns_status (*add_detector)(void *target, int64_t cell, int32_t compartment, double threshold, int64_t *source);
    ns_status (*add_spike_source)(void *target, const double *times, int64_t count, int64_t *source);
    ns_status (*add_poisson_source)(void *target, double rate_hz, double start, double stop, uint64_t seed,
                                    int64_t *source);
    ns_status (*connect)(void *target, int64_t source, int64_t synapse, double weight, double delay);
    /* the target's cells, a cell's compartments, and its synapses and sources so far */
    int64_t (*cells)(const void *target);
    int64_t (*cell_compartments)(const void *target, int64_t cell);
    int64_t (*synapses)(const void *target);
    int64_t (*sources)(const void *target);
    /* ns_sim_set_pointer; NULL where the target has none (MPI: refused naming the line) */
    ns_status (*set_pointer)(void *target, int64_t synapse, const char *pointer, int64_t cell, int32_t compartment,
                             const char *var);
    /* ns_sim_add_point_source (a network file's `source`); NULL where the target has none (MPI:
     * refused naming the line) */
    ns_status (*add_point_source)(void *target, int64_t synapse, int64_t *source);
    /* ns_sim_set_model_pointer (a density mechanism's `pointer`); NULL where the target has none */
    ns_status (*set_model_pointer)(void *target, int64_t cell, int32_t compartment, const char *pointer,
                                   int64_t target_cell, int32_t target_compartment, const char *var);
} ns_network_calls;

/* Where a traversal stopped: the statement (in file order; -1: the checks
 * before the first) and the item within it (a member of its cells, a
 * Poisson source, a connection in the order they are made). Processes that
 * fail at different places agree on the first (sim/dist_impl.h). */
typedef struct ns_network_failure {
    int64_t statement, item;
} ns_network_failure;

/* ns_network_apply's work for any target: the checks (cell count and every
 * cell's compartment count against `shapes`), then every statement's calls
 * in file order; stops at the first failure, with "FILE:LINE" and the
 * element in the detail. *failed (may be NULL) receives the place of the
 * failure (unchanged on success). */
ns_status ns_network_apply_calls(const ns_network_t *net, const ns_network_calls *calls, void *target,
                                        const ns_cell_t *const *shapes, ns_network_failure *failed);

#ifdef __cplusplus
}
#endif
#endif
