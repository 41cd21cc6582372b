/* NEURON's event statements in NMODL (docs/mechanisms.md, "Events"): which
 * calls there are and where a file may make them, as nocmodl has it:
 * net_send(delay, flag) in INITIAL and NET_RECEIVE (a self event at t +
 * delay, delivered to NET_RECEIVE with `flag`), net_event(t) and net_move(t)
 * in NET_RECEIVE only (a spike of the point process at t; the pending flag-1
 * self event moved to t). The translator's parser checks the calls with
 * these, its back end writes them as mechanism.h's ns_mech_net_* calls, and
 * the network (src/net/events.c) queues what they send. */
#include <string.h>

#include "nmodl/nmodl_impl.h"

int nm_event_call(const char *name, int *arity, unsigned *flag) {
    static const struct {
        const char *name;
        int arity;
        unsigned flag;
    } CALLS[] = {{"net_send", 2, NS_MECH_EV_SEND}, {"net_event", 1, NS_MECH_EV_EVENT}, {"net_move", 1, NS_MECH_EV_MOVE}};
    for (size_t k = 0; k < sizeof CALLS / sizeof *CALLS; k++)
        if (!strcmp(CALLS[k].name, name)) {
            if (arity) *arity = CALLS[k].arity;
            if (flag) *flag = CALLS[k].flag;
            return 1;
        }
    return 0;
}

const char *nm_event_misplaced(const char *name, int ctx) {
    if (!strcmp(name, "net_send"))
        return ctx == NM_EV_INITIAL || ctx == NM_EV_RECEIVE
                   ? NULL
                   : "is allowed only in the INITIAL and NET_RECEIVE blocks (as nocmodl)";
    return ctx == NM_EV_RECEIVE ? NULL : "is allowed only in the NET_RECEIVE block (as nocmodl)";
}
