/* Networks (docs/networks.md): synapses, spike sources, connections with
 * NEURON's NetCon semantics: the blocks' queues, what a block runs in a step,
 * and the exchange of an interval's spikes that the interval loop
 * (sim/network.c) calls between intervals.
 *
 * The loop: ns_sim_advance runs the backend over intervals of at most the
 * minimum delay (in whole steps, L = floor(min_delay / dt + 1/4), at least
 * 1). A spike found in an interval [T0, T0 + L dt] (at T0 at the earliest,
 * the check at t = 0) has an event at ts + delay >= T0 + min_delay,
 * delivered at the start of the first step from t = T0 + j dt with
 * ts + delay <= t + dt/2, so j >= ceil(min_delay/dt - 1/2) >= L: in a later
 * interval. After each interval the blocks' spikes are gathered,
 * sorted by (time, source), appended to the sources' rasters and turned into
 * events, connection by connection of each source, with one sequence number
 * each: the block queues order equal times by it, so the order of delivery
 * does not depend on the blocks (nor the threads); a distributed
 * simulation (src/mpi/sim_net.c) makes the gathering and sorting one over
 * the processes (net/exchange.h), so that it depends on the processes
 * neither. Trains put their spikes
 * of the interval (ts <= its end) into the queues before it starts. A
 * step costs the detectors of a block and the events due; connections
 * whose source does not fire cost nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_impl.h"
#include "core/error.h"

void ns_net_free(sim_net *net);

static void block_free(net_block *nb) {
    if (!nb) return;
    for (int32_t k = 0; k < nb->n_points; ++k) { /* NEURON's DESTRUCTOR: no v, no time */
        net_point *pt = &nb->points[k];
        if (pt->constructed && pt->desc->hooks[NS_MECH_DESTRUCTOR]) {
            pt->p.v = NULL;
            pt->desc->hooks[NS_MECH_DESTRUCTOR](&pt->p);
        }
    }
    for (int32_t k = 0; k < nb->n_points; ++k) {
        free(nb->points[k].store);
        free(nb->points[k].field);
        free(nb->points[k].node_index);
        free(nb->points[k].weight);
        free(nb->points[k].ptr_store);
        free(nb->points[k].ptr);
        ns_net_point_free(&nb->points[k]);
    }
    free(nb->points);
    free(nb->heap);
    free(nb->det_source);
    free(nb->det_at);
    free(nb->det_thr);
    free(nb->det_above);
    free(nb->out);
    free(nb);
}

void ns_net_free_built(sim_net *net) {
    for (int64_t b = 0; net->blocks && b < net->n_blocks; ++b) block_free(net->blocks[b]);
    free(net->blocks);
    free(net->out_begin);
    free(net->out_order);
    free(net->syn_block);
    free(net->syn_slot);
    free(net->syn_inst);
    free(net->syn_src);
    free(net->sc_begin);
    free(net->sc_order);
    net->syn_src = net->sc_begin = net->sc_order = NULL;
    free(net->emit);
    net->emit = NULL;
    net->n_emit = 0;
    net->blocks = NULL;
    net->n_blocks = 0;
    net->out_begin = net->out_order = net->syn_block = NULL;
    net->syn_slot = net->syn_inst = NULL;
    net->n_snap = net->n_dsnap; /* the synapses' copies; the arrays: ns_net_density_pointers */
}

void ns_net_free(sim_net *net) {
    if (!net) return;
    ns_net_free_built(net);
    for (int64_t s = 0; s < net->n_sources; ++s) {
        free(net->sources[s].times);
        free(net->sources[s].spikes);
    }
    free(net->sources);
    free(net->syns);
    free(net->params);
    free(net->ptrs);
    free(net->dptrs);
    free(net->snap_src);
    free(net->snap_val);
    free(net->conns);
    free(net->wvec);
    free(net->gather);
    free(net->ext);
    free(net->fan);
    free(net);
}

/* Room for one more of n items of `size` bytes in *p (capacity *cap). */
int ns_net_grow(void **p, int64_t n, int64_t *cap, size_t size) {
    if (n < *cap) return 0;
    const int64_t c = *cap ? 2 * *cap : 16;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

void ns_net_syn_random(const sim_net *net, const ns_mech_desc *d, int64_t syn, int q, double out[4]) {
    const net_syn *sy = &net->syns[syn];
    ns_mech_random_stream(d, q, sy->cell, syn, out);
    for (int k = 0; q > 0 && k < 4; ++k) {
        const double given = net->params[sy->param_at + d->n_params + 4 * (q - 1) + k];
        if (!isnan(given)) out[k] = given;
    }
}

ns_status ns_net_add_spikes(sim_net *net, const net_spike *spikes, int64_t n) {
    if (net->n_ext + n > net->cap_ext) {
        const int64_t c = net->n_ext + n > 2 * net->cap_ext ? net->n_ext + n : 2 * net->cap_ext;
        net_spike *q = realloc(net->ext, (size_t)c * sizeof *q);
        if (!q) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld spikes", (long long)(net->n_ext + n));
        net->ext = q;
        net->cap_ext = c;
    }
    if (n > 0) memcpy(net->ext + net->n_ext, spikes, (size_t)n * sizeof *spikes);
    net->n_ext += n;
    return NS_OK;
}

/* ---------------------------------------------------------------- queues */

static int before(const net_event *a, const net_event *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

int ns_net_queue_push(net_block *nb, const net_event *e) {
    if (ns_net_grow((void **)&nb->heap, nb->n_heap, &nb->cap_heap, sizeof *nb->heap) != 0) return -1;
    int64_t i = nb->n_heap++;
    while (i > 0) {
        const int64_t p = (i - 1) / 2;
        if (!before(e, &nb->heap[p])) break;
        nb->heap[i] = nb->heap[p];
        i = p;
    }
    nb->heap[i] = *e;
    return 0;
}

void ns_net_queue_remove(net_block *nb, int64_t i) {
    const net_event last = nb->heap[--nb->n_heap];
    if (i == nb->n_heap) return;
    while (i > 0 && before(&last, &nb->heap[(i - 1) / 2])) { /* up, where `last` is earlier than i's parent */
        nb->heap[i] = nb->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= nb->n_heap) break;
        if (c + 1 < nb->n_heap && before(&nb->heap[c + 1], &nb->heap[c])) ++c;
        if (!before(&nb->heap[c], &last)) break;
        nb->heap[i] = nb->heap[c];
        i = c;
    }
    nb->heap[i] = last;
}

void ns_net_deliver(net_block *nb, double *v, double t, double dt, double celsius) {
    const double until = t + .5 * dt; /* NEURON: events due by t + dt/2 */
    ns_net_watch(nb, v, t, dt, celsius); /* before, as NEURON's check_thresh (net/events.c) */
    while (nb->n_heap > 0 && nb->heap[0].t <= until) {
        const net_event e = nb->heap[0];
        ns_net_queue_remove(nb, 0);
        net_point *pt = &nb->points[e.slot];
        pt->p.v = v;
        pt->p.t = e.t;
        pt->p.dt = dt;
        pt->p.celsius = celsius;
        if (pt->tq[e.inst] == e.seq) pt->tq[e.inst] = -1; /* net_move's event delivered */
        double *w = e.w;
        if (!w) { /* a self event sent from INITIAL: no weight vector (NEURON's NULL) */
            memset(pt->zeros, 0, (size_t)(pt->desc->n_weights > 0 ? pt->desc->n_weights : 1) * sizeof *w);
            w = pt->zeros;
        }
        pt->desc->net_receive_w(&pt->p, e.inst, w, e.flag);
    }
}

void ns_net_current(net_block *nb, int32_t slot, double *v, double *rhs, double *d, double t, double dt,
                    double celsius) {
    net_point *pt = &nb->points[slot];
    ns_mech_ppack_bind(&pt->p, v, rhs, d, t, dt, celsius);
    pt->desc->current(&pt->p);
}

void ns_net_states(net_block *nb, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < nb->n_points; ++k) {
        net_point *pt = &nb->points[k];
        ns_mech_ppack_bind(&pt->p, v, NULL, NULL, t, dt, celsius);
        pt->desc->state(&pt->p);
    }
}

void ns_net_hook(net_block *nb, int h, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < nb->n_points; ++k) {
        net_point *pt = &nb->points[k];
        if (pt->p.n == 0 || !pt->desc->hooks[h]) continue;
        ns_mech_ppack_bind(&pt->p, v, NULL, NULL, t, dt, celsius);
        pt->desc->hooks[h](&pt->p);
    }
}

/* NEURON's PreSyn check: a spike at the step time plus teps = 1e-10 ms
 * (netcvode.cpp, check_thresh: ps->check(nt, nt->_t, 1e-10), then
 * send(tt + teps)): the recorded time and the events' base. */
#define NS_NET_TEPS 1e-10

int ns_net_detect(net_block *nb, const double *v, double t) {
    for (int32_t k = 0; k < nb->n_det; ++k) {
        const int above = v[nb->det_at[k]] > nb->det_thr[k];
        if (above && !nb->det_above[k]) {
            if (ns_net_grow((void **)&nb->out, nb->n_out, &nb->cap_out, sizeof *nb->out) != 0) return -1;
            nb->out[nb->n_out++] = (net_spike){t + NS_NET_TEPS, nb->det_source[k]};
        }
        nb->det_above[k] = (unsigned char)above;
    }
    return 0;
}

/* ---------------------------------------------------------------- exchange */

static int cmp_spike(const void *a, const void *b) {
    const net_spike *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->source > y->source) - (x->source < y->source);
}

static int record(net_source *s, double t) {
    if (ns_net_grow((void **)&s->spikes, s->n_spikes, &s->cap_spikes, sizeof *s->spikes) != 0) return -1;
    s->spikes[s->n_spikes++] = t;
    return 0;
}

/* The events of one spike of source `src` at time t: into the block queues,
 * or for a device loop onto the list it fans out (the same numbering). */
static int fan_out(sim_net *net, int64_t src, double t) {
    if (net->device_fan) {
        if (net->out_begin[src] == net->out_begin[src + 1]) return 0;
        if (ns_net_grow((void **)&net->fan, net->n_fan, &net->cap_fan, sizeof *net->fan) != 0) return -1;
        net->fan[net->n_fan++] = (net_fan){t, src, net->seq};
        net->seq += net->out_begin[src + 1] - net->out_begin[src];
        return 0;
    }
    for (int64_t q = net->out_begin[src]; q < net->out_begin[src + 1]; ++q) {
        const net_conn *c = &net->conns[net->out_order[q]];
        const net_event e = {t + c->delay, net->seq++, net->syn_slot[c->synapse], net->syn_inst[c->synapse],
                             net->wvec + c->w_at, 0.0};
        if (ns_net_queue_push(net->blocks[net->syn_block[c->synapse]], &e) != 0) return -1;
    }
    return 0;
}

/* The detectors' spikes of the interval, into the rasters and the queues:
 * sorted by (time, source), or in the order a distributed simulation's
 * exchange gives (every process's spikes, net/exchange.h), which it calls
 * at every interval, with or without spikes. */
ns_status ns_net_exchange(sim_net *net) {
    int64_t n = net->n_ext; /* a device loop's */
    for (int64_t b = 0; b < net->n_blocks; ++b) n += net->blocks[b]->n_out;
    if (n == 0 && !net->exchange_fn) return NS_OK;
    if (n > net->cap_gather) {
        net_spike *g = realloc(net->gather, (size_t)n * sizeof *g);
        if (!g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld spikes", (long long)n);
        net->gather = g;
        net->cap_gather = n;
    }
    if (net->n_ext) memcpy(net->gather, net->ext, (size_t)net->n_ext * sizeof *net->ext);
    n = net->n_ext;
    net->n_ext = 0;
    for (int64_t b = 0; b < net->n_blocks; ++b) {
        net_block *nb = net->blocks[b];
        if (nb->n_out) memcpy(net->gather + n, nb->out, (size_t)nb->n_out * sizeof *nb->out);
        n += nb->n_out;
        nb->n_out = 0;
    }
    const net_spike *all = net->gather;
    int64_t n_all = n;
    if (net->exchange_fn) {
        const ns_status st = net->exchange_fn(net->exchange_context, net->gather, n, &all, &n_all);
        if (st != NS_OK) return st;
    } else
        qsort(net->gather, (size_t)n, sizeof *net->gather, cmp_spike);
    for (int64_t k = 0; k < n_all; ++k) {
        const net_spike *s = &all[k];
        if (record(&net->sources[s->source], s->t) != 0 || fan_out(net, s->source, s->t) != 0)
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: events of %lld spikes", (long long)n_all);
    }
    return NS_OK;
}

/* The trains' and Poisson sources' spikes at or before `upto`, into the rasters and the queues. */
ns_status ns_net_emit_trains(sim_net *net, double upto) {
    for (int64_t e = 0; e < net->n_emit; ++e) {
        const int64_t s = net->emit[e];
        net_source *src = &net->sources[s];
        while (src->cursor < src->n_times && src->times[src->cursor] <= upto) {
            const double t = src->times[src->cursor++];
            if (record(src, t) != 0 || fan_out(net, s, t) != 0)
                return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: events of spike source %lld", (long long)s);
        }
        /* a Poisson source: its spikes drawn ahead, interval by interval, in one
         * sequence per seed (whatever the intervals, blocks or threads) */
        while (src->poisson && src->next <= upto) {
            const double t = src->next;
            ns_net_poisson_draw(src);
            if (record(src, t) != 0 || fan_out(net, s, t) != 0)
                return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: events of Poisson source %lld", (long long)s);
        }
    }
    return NS_OK;
}

int64_t ns_net_interval(double min_delay, double dt, int64_t steps) {
    if (!(min_delay < INFINITY)) return steps;
    const double l = floor(min_delay / dt + .25); /* <= min_delay/dt + 1/2: see the top */
    return l < 1.0 ? 1 : l > (double)steps ? steps : (int64_t)l;
}
