/* Private: a simulation's network on the handle (sim/network.c: the public
 * calls and the interval loop; sim/network_build.c: finitialize's instances
 * per block): the calls of net/net_impl.h that need the simulation. */
#ifndef NS_SIM_NETWORK_H
#define NS_SIM_NETWORK_H

#include "net/net_impl.h"
#include "sim/sim_impl.h"

/* the error of a POINTER k whose target mechanism is not inserted at its compartment */
ns_status ns_net_pointer_absent(const ns_sim_t *sim, int64_t syn, const ns_mech_desc *d, int k, const net_ptr *to);

/* the addresses of the POINTERs of a block's instances of one point type
 * (pt->desc, the synapses syns[i]) */
ns_status ns_net_point_pointers(const ns_sim_t *sim, const net_block_in *in, const int64_t *syns, int32_t cnt,
                                net_point *pt);

/* The density mechanisms' POINTERs of the blocks (sim->net NULL: none
 * set): each instance's address, a target on another cell through the copy
 * of each step's start; an error naming an unconnected one. Before the
 * blocks' INITIALs. */
ns_status ns_net_density_pointers(ns_sim_t *sim, int64_t n_blocks, const net_block_in *in);
/* Whether every instance of a density mechanism with POINTERs has each connected
 * (ns_sim_init, before the backend's init): the error naming the first that is not; during
 * ns_sim_create's initialisation none, sim->ptr_unset set instead (the backends point those at
 * a placeholder; ns_sim_advance refuses). */
ns_status ns_net_density_unset(ns_sim_t *sim);
/* NEURON's finitialize for the network: the synapses' instances per block
 * (rebuilt), their INITIAL, the detectors' state from v, no events, no
 * spikes, trains from their start. */
ns_status ns_net_build(ns_sim_t *sim, int64_t n_blocks, const net_block_in *in);
/* The same for a device loop: no blocks (the backend holds the instances and
 * detectors), spikes fanned out on the device (net->fan). */
ns_status ns_net_build_device(ns_sim_t *sim);

/* Advance `steps` steps in intervals of at most the minimum delay, the
 * spikes of each interval exchanged after it (sim.c's ns_sim_advance):
 * the backend's advance_net runs the intervals that ns_net_loop_next gives. */
ns_status ns_net_advance(ns_sim_t *sim, int64_t steps, sim_fault *fault);

/* The interval loop (sim/network.c), for a backend's advance_net: one thread calls
 * ns_net_loop_next between intervals (none running): it finishes the
 * interval that ran (its spikes exchanged, sim->steps and sim->t moved to
 * its end; not after a fault or an error) and prepares the next (the trains'
 * and Poisson sources' spikes due by its end into the queues), returning its
 * length: the backend then advances every block by that many steps from
 * sim->steps. 0: done, or stopped (*st says why, else the fault). */
typedef struct net_loop {
    int64_t steps, interval, done, len;
    int64_t steps0;
    double t0, t1;
} net_loop;
void ns_net_loop_begin(ns_sim_t *sim, int64_t steps, net_loop *L);
int64_t ns_net_loop_next(ns_sim_t *sim, net_loop *L, const sim_fault *fault, ns_status *st);

/* the connections' NET_RECEIVE INITIAL at finitialize, connection by connection in creation order
 * (net/events.c) */
void ns_net_events_init(ns_sim_t *sim);

#endif
