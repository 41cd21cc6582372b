/* Private: the interface between a simulation's network (net.c) and a
 * simulation spread over processes (sim/dist_net.c, docs/networks.md
 * "MPI"): the spike exchange that ends each interval of the loop, replaced
 * by one over the processes. */
#ifndef NS_CABLE_NET_EXCHANGE_H
#define NS_CABLE_NET_EXCHANGE_H

#include <stdint.h>

#include "neurosolve/cable.h"
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A spike of a source at time t [ms]. */
typedef struct ns_net_spike {
    double t;
    int64_t source;
} ns_net_spike;

/* Called once per interval, after the blocks ran it: `mine` holds this
 * simulation's spikes of the interval (its own source numbers, any order;
 * the callee may overwrite them). Answers in *all (memory the callee keeps
 * until its next call) the spikes to record and deliver here, numbered by
 * this simulation's sources, in delivery order: the order the event
 * sequence numbers follow, which must not depend on how the cells are
 * spread. A failure stops the run: ns_sim_advance returns it. */
typedef ns_status (*ns_net_exchange_fn)(void *context, ns_net_spike *mine, int64_t n, const ns_net_spike **all,
                                        int64_t *n_all);

/* Give a CPU simulation of a model an exchange (fn NULL: its own again).
 * min_delay [ms] (> 0; INFINITY when no process has a connection) replaces
 * the simulation's own minimum delay in the interval length, so that every
 * process runs the same intervals. Creates the simulation's (empty) network
 * when it has none, so that every interval calls fn; takes effect at the
 * next ns_sim_init. */
ns_status ns_sim_set_exchange(ns_sim_t *sim, ns_net_exchange_fn fn, void *context, double min_delay);

/* The interval of the loop [steps] for a call of `steps` > 0 steps of dt:
 * floor(min_delay/dt + 1/4), at least 1, at most steps (all of them when
 * min_delay is INFINITY: no connections). docs/networks.md says why. */
int64_t ns_net_interval(double min_delay, double dt, int64_t steps);

#ifdef __cplusplus
}
#endif
#endif
