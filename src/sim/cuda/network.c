/* A network on the GPU loop (docs/networks.md, "The GPU loop"): the
 * detectors, the interval's spike buffer, the connections by source and the
 * pending events live in device memory; net.c's interval loop and exchange
 * are the CPU loop's (sim/cuda/step.c's advance_net calls them).
 *
 * Per interval of len steps (ns_gpu_net_interval, all on the tree group's
 * stream, no host wait): the spikes that the exchange (and the trains of
 * ns_net_loop_next) queued on net->fan go up as (t, source, first sequence
 * number, slot in the pool); the fan-out kernel writes their events behind
 * the pending ones; every pending event gets the step j of the interval that
 * delivers it (the first with te <= t_j + dt/2, t_j and the bound computed
 * on the host as the CPU loop does) or "later"; one sort by (bucket = j *
 * point types + type, instance, time, sequence); the offsets of the buckets.
 * Step j then delivers bucket (j, type) with the type's generated
 * NET_RECEIVE launcher: an instance's events are adjacent, applied by one
 * thread in (time, sequence) order. After the interval (ns_gpu_net_collect,
 * after the loop's synchronisation): the spike count and the delivered
 * count (one 16-byte copy), the spikes (one copy), handed to net.c; the
 * delivered events are dropped at the next interval (the live ones moved to
 * the front). A step costs the detectors and its due events; an interval
 * costs its spikes' connections and the pending events (a sort): nothing
 * for connections whose source does not fire. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/mechanisms.h"
#include "sim/cuda/network.h"
#include "sim/network.h"
#include "core/cuda_check.h"
#include "core/error.h"

#define NS_NET_TEPS 1e-10 /* net.c's: NEURON's PreSyn check at t + teps */

typedef struct net_counters {
    unsigned long long spikes; /* appended since the last collect */
    int64_t consumed;          /* events the interval delivers (the sorted pool's first ones) */
    unsigned long long ev_spikes; /* net_event's, appended since the last collect */
} net_counters;

struct gpu_net {
    int32_t slots;
    /* detectors */
    int32_t n_det;
    int32_t *det_node;
    double *det_thr;
    unsigned char *det_above;
    int64_t *det_source;
    /* the spikes found since the last collect */
    ns_net_spike *spikes;
    int64_t cap_spikes;
    ns_net_spike *spikes_host;
    int64_t cap_spikes_host;
    net_counters *counters;
    /* connections by source */
    int64_t *out_begin;
    ns_gpu_conn *conn;
    /* the pending events: pool[cur][0 .. n_events), of which the first
     * `consumed` were delivered by the interval that ran */
    ns_gpu_event_key *keys[2];
    ns_mech_event *events[2];
    int64_t cap_events, n_events, consumed;
    int cur;
    ns_gpu_fan *fan;
    int64_t cap_fan;
    ns_gpu_fan *fan_host;
    int64_t cap_fan_host;
    double *until, *until_host;
    int64_t cap_until, cap_until_dev;
    int64_t *offsets;
    int64_t cap_offsets;
    void *temp;
    size_t cap_temp;
    int64_t len, max; /* the interval's steps; events in the pool after its fan-out */
    /* point processes' events (mechanism.h's ns_mech_dev_events): self: a
     * type sends self events (delivery and the steps' bounds every step);
     * net_event's spikes of an interval, room for cap_ev_spikes */
    int self;
    int64_t n_point_src;
    ns_mech_spike *ev_spikes;
    int64_t cap_ev_spikes;
};

void ns_gpu_net_free(gpu_net *gn) {
    if (!gn) return;
    cudaFree(gn->det_node);
    cudaFree(gn->det_thr);
    cudaFree(gn->det_above);
    cudaFree(gn->det_source);
    cudaFree(gn->spikes);
    cudaFree(gn->counters);
    cudaFree(gn->out_begin);
    cudaFree(gn->conn);
    for (int k = 0; k < 2; ++k) {
        cudaFree(gn->keys[k]);
        cudaFree(gn->events[k]);
    }
    cudaFree(gn->fan);
    cudaFree(gn->until);
    cudaFree(gn->offsets);
    cudaFree(gn->temp);
    cudaFree(gn->ev_spikes);
    free(gn->spikes_host);
    free(gn->fan_host);
    free(gn->until_host);
    free(gn);
}

static ns_status dev_alloc(void **p, size_t bytes, const char *what) {
    const cudaError_t e = cudaMalloc(p, bytes ? bytes : 8);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return ns_fail(e == cudaErrorMemoryAllocation ? NS_ERR_DEVICE_MEMORY : NS_ERR_CUDA,
                       "network: GPU memory for %s (%.3g MB): %s", what, (double)bytes / 1e6, cudaGetErrorString(e));
    }
    return NS_OK;
}

static ns_status up(void **p, const void *src, size_t bytes, const char *what) {
    ns_status st = dev_alloc(p, bytes, what);
    if (st == NS_OK && bytes) NS_CUDA_TRY(cudaMemcpy(*p, src, bytes, cudaMemcpyHostToDevice));
    return st;
}

/* Room for the spikes of `checks` detector checks before a collect: a
 * detector fires when above its threshold and not above at the previous
 * check, so at most once in two consecutive checks, ceil(checks / 2) times:
 * the buffer cannot overflow. */
static ns_status spike_room(gpu_net *gn, int64_t checks, cudaStream_t stream) {
    const int64_t need = (int64_t)gn->n_det * ((checks + 1) / 2);
    if (need <= gn->cap_spikes) return NS_OK;
    ns_net_spike *p = NULL;
    ns_status st = dev_alloc((void **)&p, (size_t)need * sizeof *p, "the interval's spikes");
    if (st != NS_OK) return st;
    if (gn->cap_spikes > 0) /* spikes not collected yet (those of the check at t = 0) */
        NS_CUDA_TRY(cudaMemcpyAsync(p, gn->spikes, (size_t)gn->cap_spikes * sizeof *p, cudaMemcpyDeviceToDevice,
                                    stream));
    NS_CUDA_TRY(cudaStreamSynchronize(stream));
    cudaFree(gn->spikes);
    gn->spikes = p;
    gn->cap_spikes = need;
    return NS_OK;
}

ns_status ns_gpu_net_create(ns_sim_t *sim, const int64_t *cell_id, const int64_t *cell_base, int64_t cells,
                            const int32_t *syn_slot, const int32_t *syn_inst, const int32_t *conn_w, int32_t slots,
                            const double *v, cudaStream_t stream, gpu_net **out) {
    *out = NULL;
    const sim_net *net = sim->net;
    gpu_net *gn = calloc(1, sizeof *gn);
    if (!gn) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU state");
    gn->slots = slots;
    for (int64_t q = 0; q < net->n_syns; ++q)
        gn->self |= (sim->model->descs[net->syns[q].desc]->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH)) != 0;
    for (int64_t q = 0; q < net->n_sources; ++q) gn->n_point_src += net->sources[q].point != 0;
    ns_status st = NS_OK;
    int64_t *local = malloc((size_t)sim->n_cells * sizeof *local);
    const int64_t n_src = net->n_sources;
    int32_t *node = malloc((size_t)(n_src + 1) * sizeof *node);
    double *thr = malloc((size_t)(n_src + 1) * sizeof *thr);
    int64_t *src = malloc((size_t)(n_src + 1) * sizeof *src);
    ns_gpu_conn *conn = malloc((size_t)(net->n_conns + 1) * sizeof *conn);
    if (!local || !node || !thr || !src || !conn) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU state");
    if (st == NS_OK) {
        for (int64_t c = 0; c < sim->n_cells; ++c) local[c] = -1;
        for (int64_t j = 0; j < cells; ++j) local[cell_id[j]] = j;
        int32_t n = 0;
        for (int64_t q = 0; q < n_src && st == NS_OK; ++q) {
            const net_source *s = &net->sources[q];
            if (s->cell < 0) continue;
            if (local[s->cell] < 0) {
                st = ns_fail(NS_ERR_INTERNAL, "network: the cell %lld of source %lld is not in the GPU tree group",
                             (long long)s->cell, (long long)q);
                break;
            }
            if (cell_base[local[s->cell]] + s->node >= INT32_MAX) {
                st = ns_fail(NS_ERR_SIZE, "network: detector %lld at node %lld of the GPU group (< 2^31 only)",
                             (long long)q, (long long)(cell_base[local[s->cell]] + s->node));
                break;
            }
            node[n] = (int32_t)(cell_base[local[s->cell]] + s->node);
            thr[n] = s->threshold;
            src[n] = q;
            ++n;
        }
        gn->n_det = n;
        for (int64_t q = 0; q < net->n_conns; ++q) {
            const net_conn *c = &net->conns[net->out_order[q]];
            conn[q] = (ns_gpu_conn){c->weight, c->delay, syn_slot[c->synapse], syn_inst[c->synapse],
                                    conn_w[net->out_order[q]], 0};
        }
    }
    if (st == NS_OK) st = up((void **)&gn->det_node, node, (size_t)gn->n_det * sizeof *node, "detectors");
    if (st == NS_OK) st = up((void **)&gn->det_thr, thr, (size_t)gn->n_det * sizeof *thr, "detectors");
    if (st == NS_OK) st = up((void **)&gn->det_source, src, (size_t)gn->n_det * sizeof *src, "detectors");
    if (st == NS_OK) st = dev_alloc((void **)&gn->det_above, (size_t)gn->n_det, "detectors");
    if (st == NS_OK && gn->n_det > 0) {
        /* NEURON's flag starts false: v_init above the threshold is a spike at 0 */
        const cudaError_t e = cudaMemset(gn->det_above, 0, (size_t)gn->n_det);
        if (e != cudaSuccess) st = ns_cuda_status(e, "cudaMemset", __FILE__, __LINE__);
    }
    if (st == NS_OK) st = up((void **)&gn->out_begin, net->out_begin, (size_t)(n_src + 1) * sizeof(int64_t), "connections");
    if (st == NS_OK) st = up((void **)&gn->conn, conn, (size_t)net->n_conns * sizeof *conn, "connections");
    if (st == NS_OK) st = dev_alloc((void **)&gn->counters, sizeof(net_counters), "counters");
    if (st == NS_OK) {
        const cudaError_t e = cudaMemset(gn->counters, 0, sizeof(net_counters));
        if (e != cudaSuccess) st = ns_cuda_status(e, "cudaMemset", __FILE__, __LINE__);
    }
    free(local), free(node), free(thr), free(src), free(conn);
    /* NEURON's first check_thresh, at t = 0 (v = v_init) */
    if (st == NS_OK) st = spike_room(gn, 1, stream);
    if (st == NS_OK) st = ns_gpu_net_detect(gn, v, 0.0, stream);
    if (st != NS_OK) {
        ns_gpu_net_free(gn);
        return st;
    }
    *out = gn;
    return NS_OK;
}

ns_status ns_gpu_net_detect(gpu_net *gn, const double *v, double t, cudaStream_t stream) {
    NS_CUDA_TRY(ns_gpu_launch_detect(v, gn->det_node, gn->det_thr, gn->det_above, gn->det_source, gn->n_det,
                                     t + NS_NET_TEPS, gn->spikes, &gn->counters->spikes, gn->cap_spikes, stream));
    return NS_OK;
}

/* Pool buffers for `need` events holding the live ones of the current pool
 * at the front: the delivered events dropped. */
static ns_status pool_room(gpu_net *gn, int64_t live, int64_t need, cudaStream_t stream) {
    const int from = gn->cur, to = 1 - gn->cur;
    if (need > gn->cap_events) {
        int64_t cap = gn->cap_events * 2 > need ? gn->cap_events * 2 : need;
        if (cap < 1024) cap = 1024;
        ns_gpu_event_key *k[2] = {NULL, NULL};
        ns_mech_event *e[2] = {NULL, NULL};
        ns_status st = NS_OK;
        for (int b = 0; b < 2 && st == NS_OK; ++b) {
            st = dev_alloc((void **)&k[b], (size_t)cap * sizeof **k, "pending events");
            if (st == NS_OK) st = dev_alloc((void **)&e[b], (size_t)cap * sizeof **e, "pending events");
        }
        if (st == NS_OK && live > 0) {
            const cudaError_t c1 = cudaMemcpyAsync(k[0], gn->keys[from] + gn->consumed, (size_t)live * sizeof **k,
                                                   cudaMemcpyDeviceToDevice, stream);
            const cudaError_t c2 = cudaMemcpyAsync(e[0], gn->events[from] + gn->consumed, (size_t)live * sizeof **e,
                                                   cudaMemcpyDeviceToDevice, stream);
            if (c1 != cudaSuccess || c2 != cudaSuccess)
                st = ns_cuda_status(c1 != cudaSuccess ? c1 : c2, "cudaMemcpyAsync", __FILE__, __LINE__);
        }
        if (st == NS_OK) {
            const cudaError_t c = cudaStreamSynchronize(stream); /* before the old pool goes */
            if (c != cudaSuccess) st = ns_cuda_status(c, "cudaStreamSynchronize", __FILE__, __LINE__);
        }
        if (st != NS_OK) {
            for (int b = 0; b < 2; ++b) cudaFree(k[b]), cudaFree(e[b]);
            return st;
        }
        for (int b = 0; b < 2; ++b) {
            cudaFree(gn->keys[b]);
            cudaFree(gn->events[b]);
            gn->keys[b] = k[b];
            gn->events[b] = e[b];
        }
        gn->cap_events = cap;
        gn->cur = 0;
    } else if (gn->consumed > 0 && live > 0) {
        NS_CUDA_TRY(cudaMemcpyAsync(gn->keys[to], gn->keys[from] + gn->consumed, (size_t)live * sizeof **gn->keys,
                                    cudaMemcpyDeviceToDevice, stream));
        NS_CUDA_TRY(cudaMemcpyAsync(gn->events[to], gn->events[from] + gn->consumed,
                                    (size_t)live * sizeof **gn->events, cudaMemcpyDeviceToDevice, stream));
        gn->cur = to;
    }
    gn->consumed = 0;
    gn->n_events = live;
    return NS_OK;
}

/* Grow a host or device array to n items of `size` bytes (contents dropped). */
static ns_status host_room(void **p, int64_t *cap, int64_t n, size_t size) {
    if (n <= *cap) return NS_OK;
    const int64_t c = n > 2 * *cap ? n : 2 * *cap;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld items", (long long)c);
    *p = q;
    *cap = c;
    return NS_OK;
}

static ns_status dev_room(void **p, int64_t *cap, int64_t n, size_t size, const char *what, cudaStream_t stream) {
    if (n <= *cap) return NS_OK;
    const int64_t c = n > 2 * *cap ? n : 2 * *cap;
    NS_CUDA_TRY(cudaStreamSynchronize(stream)); /* the old array may still be read */
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    ns_status st = dev_alloc(p, (size_t)c * size, what);
    if (st == NS_OK) *cap = c;
    return st;
}

ns_status ns_gpu_net_interval(ns_sim_t *sim, gpu_net *gn, int64_t len, cudaStream_t stream) {
    sim_net *net = sim->net;
    ns_status st = spike_room(gn, len + 1, stream); /* the interval's checks and a check at t = 0 */
    if (st != NS_OK) return st;
    /* the new events of the queued spikes, numbered as net.c numbered them */
    const int64_t live = gn->n_events - gn->consumed;
    int64_t add = 0;
    if ((st = host_room((void **)&gn->fan_host, &gn->cap_fan_host, net->n_fan, sizeof *gn->fan_host)) != NS_OK)
        return st;
    for (int64_t k = 0; k < net->n_fan; ++k) {
        const net_fan *f = &net->fan[k];
        gn->fan_host[k] = (ns_gpu_fan){f->t, f->source, f->seq, live + add};
        add += net->out_begin[f->source + 1] - net->out_begin[f->source];
    }
    if ((st = pool_room(gn, live, live + add, stream)) != NS_OK) return st;
    if (net->n_fan > 0) {
        if ((st = dev_room((void **)&gn->fan, &gn->cap_fan, net->n_fan, sizeof *gn->fan, "spikes to fan out",
                           stream)) != NS_OK)
            return st;
        /* pageable memory: the copy has taken the data when the call returns */
        NS_CUDA_TRY(cudaMemcpyAsync(gn->fan, gn->fan_host, (size_t)net->n_fan * sizeof *gn->fan,
                                    cudaMemcpyHostToDevice, stream));
        NS_CUDA_TRY(ns_gpu_launch_fanout(gn->fan, net->n_fan, gn->out_begin, gn->conn, gn->keys[gn->cur],
                                         gn->events[gn->cur], stream));
    }
    net->n_fan = 0;
    gn->n_events = live + add;
    gn->len = len;
    gn->max = gn->n_events;
    if (gn->n_point_src > 0) { /* net_event's spikes: a few per source and step at most, else an error */
        const int64_t need = gn->n_point_src * (len + 1 < 64 ? len + 1 : 64) + 1024;
        if ((st = dev_room((void **)&gn->ev_spikes, &gn->cap_ev_spikes, need, sizeof *gn->ev_spikes,
                           "net_event's spikes", stream)) != NS_OK)
            return st;
    }
    if (gn->n_events == 0 && !gn->self) { /* nothing pending: no step delivers */
        NS_CUDA_TRY(cudaMemsetAsync(&gn->counters->consumed, 0, sizeof gn->counters->consumed, stream));
        return NS_OK;
    }
    /* the steps' bounds t_j + dt/2, t_j by the CPU loop's arithmetic; then the t_j (WATCH's checks) */
    if ((st = host_room((void **)&gn->until_host, &gn->cap_until, 2 * len, sizeof *gn->until_host)) != NS_OK)
        return st;
    double t = sim->t;
    const double dt = sim->params.dt;
    for (int64_t j = 0; j < len; ++j) {
        gn->until_host[j] = t + .5 * dt; /* ns_net_deliver's `until` */
        gn->until_host[len + j] = t;
        t = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
    }
    if ((st = dev_room((void **)&gn->until, &gn->cap_until_dev, 2 * len, sizeof *gn->until, "step times", stream)) !=
        NS_OK)
        return st;
    NS_CUDA_TRY(cudaMemcpyAsync(gn->until, gn->until_host, (size_t)(2 * len) * sizeof *gn->until,
                                cudaMemcpyHostToDevice, stream));
    if (gn->n_events == 0) { /* self events only */
        NS_CUDA_TRY(cudaMemsetAsync(&gn->counters->consumed, 0, sizeof gn->counters->consumed, stream));
        return NS_OK;
    }
    const int64_t buckets = len * gn->slots;
    if ((st = dev_room((void **)&gn->offsets, &gn->cap_offsets, buckets + 1, sizeof *gn->offsets, "event offsets",
                       stream)) != NS_OK)
        return st;
    ns_gpu_event_key *keys = gn->keys[gn->cur];
    ns_mech_event *events = gn->events[gn->cur];
    NS_CUDA_TRY(ns_gpu_launch_bucket(keys, gn->n_events, gn->until, len, gn->slots, stream));
    size_t bytes = 0;
    NS_CUDA_TRY(ns_gpu_sort_events(NULL, &bytes, keys, events, gn->n_events, stream));
    if (bytes > gn->cap_temp) {
        NS_CUDA_TRY(cudaStreamSynchronize(stream));
        cudaFree(gn->temp);
        gn->temp = NULL;
        gn->cap_temp = 0;
        if ((st = dev_alloc(&gn->temp, 2 * bytes, "the event sort")) != NS_OK) return st;
        gn->cap_temp = 2 * bytes;
    }
    bytes = gn->cap_temp;
    NS_CUDA_TRY(ns_gpu_sort_events(gn->temp, &bytes, keys, events, gn->n_events, stream));
    NS_CUDA_TRY(ns_gpu_launch_offsets(keys, gn->n_events, buckets, gn->offsets, &gn->counters->consumed, stream));
    return NS_OK;
}

ns_status ns_gpu_net_deliver(const ns_sim_t *sim, gpu_net *gn, gpu_model *model, int64_t j, cudaStream_t stream) {
    if ((gn->max == 0 && !gn->self) || j >= gn->len) return NS_OK;
    for (int32_t slot = 0; slot < gn->slots; ++slot) {
        if (gn->max == 0 && !ns_gpu_model_point_self(model, slot)) continue;
        const ns_status st = ns_gpu_model_deliver(
            sim, model, slot, gn->events[gn->cur], gn->max > 0 ? gn->offsets + j * gn->slots + slot : NULL, gn->max,
            gn->until + j, gn->until + gn->len + j, gn->ev_spikes, &gn->counters->ev_spikes, gn->cap_ev_spikes,
            stream);
        if (st != NS_OK) return st;
    }
    return NS_OK;
}

void ns_gpu_net_view_of(const gpu_net *gn, ns_gpu_net_view *view) {
    memset(view, 0, sizeof *view);
    view->n_det = gn->n_det;
    view->det_node = gn->det_node;
    view->out.det_thr = gn->det_thr;
    view->out.det_above = gn->det_above;
    view->out.det_source = gn->det_source;
    view->out.spikes = gn->spikes;
    view->out.count = &gn->counters->spikes;
    view->out.cap = gn->cap_spikes;
    view->events = gn->events[gn->cur];
    view->offsets = gn->max > 0 ? gn->offsets : NULL;
    view->len = gn->len;
    view->out.teps = NS_NET_TEPS;
}

ns_status ns_gpu_net_collect(ns_sim_t *sim, gpu_net *gn) {
    net_counters c;
    NS_CUDA_TRY(cudaMemcpy(&c, gn->counters, sizeof c, cudaMemcpyDeviceToHost));
    if ((int64_t)c.spikes > gn->cap_spikes)
        return ns_fail(NS_ERR_INTERNAL, "network: %llu detector spikes in an interval, room for %lld",
                       (unsigned long long)c.spikes, (long long)gn->cap_spikes);
    gn->consumed = gn->n_events > 0 ? c.consumed : 0;
    /* net_event's (more than the room: the type's error, ns_gpu_model_events_check) */
    const int64_t ev = (int64_t)c.ev_spikes < gn->cap_ev_spikes ? (int64_t)c.ev_spikes : gn->cap_ev_spikes;
    if (c.spikes + (unsigned long long)ev == 0) return NS_OK;
    ns_status st = host_room((void **)&gn->spikes_host, &gn->cap_spikes_host, (int64_t)c.spikes + ev,
                             sizeof *gn->spikes_host);
    if (st != NS_OK) return st;
    if (c.spikes > 0)
        NS_CUDA_TRY(cudaMemcpy(gn->spikes_host, gn->spikes, (size_t)c.spikes * sizeof *gn->spikes_host,
                               cudaMemcpyDeviceToHost));
    if (ev > 0) /* ns_mech_spike and ns_net_spike: the same (t, source) */
        NS_CUDA_TRY(cudaMemcpy(gn->spikes_host + c.spikes, gn->ev_spikes, (size_t)ev * sizeof *gn->spikes_host,
                               cudaMemcpyDeviceToHost));
    NS_CUDA_TRY(cudaMemset(&gn->counters->spikes, 0, sizeof gn->counters->spikes));
    NS_CUDA_TRY(cudaMemset(&gn->counters->ev_spikes, 0, sizeof gn->counters->ev_spikes));
    return ns_net_add_spikes(sim->net, gn->spikes_host, (int64_t)c.spikes + ev);
}
