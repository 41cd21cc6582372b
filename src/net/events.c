/* NMODL's events in a network (docs/networks.md, "Events"), NEURON's rules
 * (netcvode.cpp): net_send(delay, flag) puts a self event for the point
 * process on its block's queue at t + delay, delivered to NET_RECEIVE with
 * that flag and the weight vector of the event that sent it (none from
 * INITIAL); a flag-1 self event is the one net_move moves (nrn_net_send's
 * tqitem: the latest); net_event(t) is a spike of the point process at t
 * (no 1e-10 ms: PreSyn::send at t), recorded and fanned out at the next
 * exchange as a detector's; a connection's NET_RECEIVE INITIAL runs at
 * finitialize after every INITIAL, connection by connection in creation
 * order (NetCvode::init_events). Each connection has a weight vector of
 * NET_RECEIVE's arguments (net.c's sim_net.wvec): the weight, then its
 * per-connection state, which NET_RECEIVE reads and writes.
 *
 * Self events order after a connection's at the same time (seq from
 * NS_NET_SELF_SEQ, by the block's count), so that an instance sees its events
 * in an order that depends on neither the blocks nor the threads. A call
 * that NEURON refuses (a time before t, net_move with no flag-1 event
 * pending) stops the run with the block's first such error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_impl.h"
#include "core/error.h"

static void ev_error(net_point *pt, int inst, const char *what, double t) {
    if (pt->nb->ev_error[0]) return;
    snprintf(pt->nb->ev_error, sizeof pt->nb->ev_error, "%s instance %d at t = %.17g ms: %s (t %.17g ms)",
             pt->desc->name, inst, pt->p.t, what, t);
}

static void ev_send(void *ev, int inst, double t, double flag, double *w) {
    net_point *pt = ev;
    if (!(t >= pt->p.t)) { /* NEURON: "net_send delay < 0" */
        ev_error(pt, inst, "net_send with a negative delay", t);
        return;
    }
    net_block *nb = pt->nb;
    const net_event e = {t, NS_NET_SELF_SEQ + nb->self_seq++, pt->slot, inst, w, flag};
    if (ns_net_queue_push(nb, &e) != 0) {
        ev_error(pt, inst, "out of memory for a self event", t);
        return;
    }
    if (flag == 1.0) pt->tq[inst] = e.seq;
}

static void ev_move(void *ev, int inst, double t) {
    net_point *pt = ev;
    net_block *nb = pt->nb;
    if (!(t >= pt->p.t)) {
        ev_error(pt, inst, "net_move to a time before t", t);
        return;
    }
    int64_t at = -1;
    for (int64_t k = 0; pt->tq[inst] >= 0 && k < nb->n_heap && at < 0; ++k)
        if (nb->heap[k].seq == pt->tq[inst]) at = k;
    if (at < 0) { /* NEURON: "No event with flag=1 for net_move" */
        ev_error(pt, inst, "net_move with no self event of flag 1 pending", t);
        return;
    }
    net_event e = nb->heap[at];
    ns_net_queue_remove(nb, at);
    e.t = t;
    (void)ns_net_queue_push(nb, &e); /* the room of the one removed */
}

static void ev_event(void *ev, int inst, double t) {
    net_point *pt = ev;
    if (!(t >= pt->p.t)) {
        ev_error(pt, inst, "net_event at a time before t", t);
        return;
    }
    const int64_t src = pt->src[inst];
    if (src < 0) return; /* no connection from it: NEURON's point process without a PreSyn */
    net_block *nb = pt->nb;
    if (nb->n_out == nb->cap_out) {
        const int64_t c = nb->cap_out ? 2 * nb->cap_out : 16;
        net_spike *q = realloc(nb->out, (size_t)c * sizeof *q);
        if (!q) {
            ev_error(pt, inst, "out of memory for a spike", t);
            return;
        }
        nb->out = q;
        nb->cap_out = c;
    }
    nb->out[nb->n_out++] = (net_spike){t, src};
}

/* WATCH k of an instance, from its NET_RECEIVE: the first WATCH of a call
 * ends the instance's others (_nrn_watch_activate with r 0); a condition
 * that holds already (value >= -hoc_epsilon, 1e-11) waits until it has not
 * (WatchCondition::activate) */
static void ev_watch(void *ev, int inst, int k, double flag, int first) {
    net_point *pt = ev;
    const int nw = pt->desc->n_watch;
    if (first) memset(pt->w_on + (size_t)inst * nw, 0, (size_t)nw);
    const size_t at = (size_t)inst * nw + k;
    pt->w_on[at] = 1;
    pt->w_flag[at] = flag;
    pt->w_above[at] = pt->desc->watch_value(&pt->p, inst, k) >= -1e-11;
}

void ns_net_watch(net_block *nb, double *v, double t, double dt, double celsius) {
    for (int32_t s = 0; s < nb->n_points; ++s) {
        net_point *pt = &nb->points[s];
        const int nw = pt->desc->n_watch;
        if (!nw) continue;
        pt->p.v = v;
        pt->p.t = t;
        pt->p.dt = dt;
        pt->p.celsius = celsius;
        for (int i = 0; i < pt->p.n; ++i)
            for (int k = 0; k < nw; ++k) {
                const size_t at = (size_t)i * nw + k;
                if (!pt->w_on[at]) continue;
                if (!(pt->desc->watch_value(&pt->p, i, k) > 0.0)) { /* ConditionEvent::check */
                    pt->w_above[at] = 0;
                    continue;
                }
                if (pt->w_above[at]) continue;
                pt->w_above[at] = 1;
                const net_event e = {t, NS_NET_SELF_SEQ + nb->self_seq++, s, i, NULL, pt->w_flag[at]};
                if (ns_net_queue_push(nb, &e) != 0) ev_error(pt, i, "out of memory for a WATCH event", t);
            }
    }
}

/* FOR_NETCONS: connection q of the instance (creation order), NULL past the last */
static double *ev_netcon(void *ev, int inst, int q) {
    const net_point *pt = ev;
    const sim_net *net = pt->net;
    const int64_t syn = pt->syn_id[inst], at = net->sc_begin[syn] + q;
    if (q < 0 || at >= net->sc_begin[syn + 1]) return NULL;
    return net->wvec + net->conns[net->sc_order[at]].w_at;
}

ns_status ns_net_events_index(sim_net *net, double dt) {
    free(net->syn_src);
    free(net->sc_begin);
    free(net->sc_order);
    net->syn_src = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_src);
    net->sc_begin = calloc((size_t)net->n_syns + 2, sizeof *net->sc_begin);
    net->sc_order = malloc((size_t)(net->n_conns + 1) * sizeof *net->sc_order);
    if (!net->syn_src || !net->sc_begin || !net->sc_order)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld synapses", (long long)net->n_syns);
    for (int64_t k = 0; k < net->n_conns; ++k) net->sc_begin[net->conns[k].synapse + 2]++;
    for (int64_t s = 0; s < net->n_syns; ++s) net->sc_begin[s + 2] += net->sc_begin[s + 1];
    for (int64_t k = 0; k < net->n_conns; ++k) net->sc_order[net->sc_begin[net->conns[k].synapse + 1]++] = k;
    for (int64_t k = 0; k < net->n_syns; ++k) net->syn_src[k] = -1;
    net->has_points = 0;
    for (int64_t s = 0; s < net->n_sources; ++s)
        if (net->sources[s].point) {
            net->syn_src[net->sources[s].point - 1] = s;
            net->has_points = 1;
        }
    /* a net_event's spike reaches the queues at the interval's end: its events
     * are on time where they fall after the step it came in (delay >= dt) */
    for (int64_t k = 0; k < net->n_conns; ++k)
        if (net->sources[net->conns[k].source].point && net->conns[k].delay < dt)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "network: connection %lld from point source %lld (synapse %lld): delay %g ms is below dt "
                           "(%g ms); a net_event's connections need delay >= dt",
                           (long long)k, (long long)net->conns[k].source,
                           (long long)(net->sources[net->conns[k].source].point - 1), net->conns[k].delay, dt);
    return NS_OK;
}

ns_status ns_net_events_attach(sim_net *net, net_point *pt, const int64_t *syns, int32_t cnt) {
    const ns_mech_desc *d = pt->desc;
    pt->tq = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *pt->tq);
    pt->src = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *pt->src);
    pt->zeros = calloc((size_t)(d->n_weights > 0 ? d->n_weights : 1), sizeof *pt->zeros);
    const size_t nw = (size_t)(cnt > 0 ? cnt : 1) * (size_t)(d->n_watch > 0 ? d->n_watch : 1);
    pt->w_on = calloc(nw, 1);
    pt->w_above = calloc(nw, 1);
    pt->w_flag = calloc(nw, sizeof *pt->w_flag);
    pt->syn_id = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *pt->syn_id);
    if (!pt->tq || !pt->src || !pt->zeros || !pt->w_on || !pt->w_above || !pt->w_flag || !pt->syn_id)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: events of %d synapses", (int)cnt);
    for (int32_t i = 0; i < cnt; ++i) {
        pt->tq[i] = -1;
        pt->src[i] = net->syn_src[syns[i]];
        pt->syn_id[i] = syns[i];
    }
    pt->net = net;
    pt->p.ev = pt;
    pt->p.ev_send = ev_send;
    pt->p.ev_event = ev_event;
    pt->p.ev_move = ev_move;
    pt->p.ev_watch = ev_watch;
    pt->p.ev_netcon = ev_netcon;
    return NS_OK;
}

void ns_net_point_free(net_point *pt) {
    free(pt->tq);
    free(pt->src);
    free(pt->zeros);
    free(pt->w_on);
    free(pt->w_above);
    free(pt->w_flag);
    free(pt->syn_id);
}

ns_status ns_net_events_check(const sim_net *net) {
    for (int64_t b = 0; b < net->n_blocks; ++b)
        if (net->blocks[b]->ev_error[0]) return ns_fail(NS_ERR_INVALID_ARGUMENT, "network: %s", net->blocks[b]->ev_error);
    return NS_OK;
}
