/* The POINTERs of a block's point processes (ns_sim_set_pointer, sim/network.c):
 * each instance's address of each POINTER, resolved when the network's
 * instances are built (ns_net_build, at ns_sim_init).
 *
 * A target in the synapse's own lane block is read and written in place:
 * in the current phase the block's v is still the step's start, as NEURON
 * reads it (a gap junction's vgap: the other cell's v before the solve).
 * The CPU loop runs other blocks on their own (a whole minimum-delay
 * interval without waiting), so a target in another block is read through
 * a copy made at the start of each step, between the intervals, which are
 * then one step long (the same values as in place: every cell's v at the
 * step's start; writes through such a POINTER do not reach the target). */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "net/net_impl.h"

int64_t ns_net_instance_at(const sim_mech_shape *ms, int32_t node) {
    int32_t lo = 0, hi = ms->n;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (ms->node[mid] < node) lo = mid + 1;
        else hi = mid;
    }
    return lo < ms->n && ms->node[lo] == node ? lo : -1;
}

ns_status ns_net_pointer_of(const sim_net *net, const ns_mech_desc *d, int64_t syn, int k, const net_ptr **to) {
    const net_syn *sy = &net->syns[syn];
    *to = sy->ptr_at >= 0 ? &net->ptrs[sy->ptr_at + k] : NULL;
    if (!*to || (*to)->cell < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "network: synapse %lld (%s, cell %lld): POINTER %s is not connected "
                       "(ns_sim_set_pointer; NEURON's setpointer)",
                       (long long)syn, d->name, (long long)sy->cell, d->pointer_names[k]);
    return NS_OK;
}

void ns_net_pointer_snapshot(sim_net *net) {
    for (int64_t j = 0; j < net->n_snap; ++j) net->snap_val[j] = *net->snap_src[j];
}
