/* A network's synapses on the GPU loop (sim/cuda/mechanisms.h, ns_gpu_model_points_build): the
 * point types present in NEURON's type order, their instances in the tree group's cell order with
 * their fields, POINTERs, TABLEs, self events and spike sources on the device, the connections'
 * weight vectors; delivery of their events and the errors their code recorded. The model's
 * density mechanisms: sim/cuda/mechanisms.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/mechanisms_impl.h"
#include "sim/network.h"

void ns_gpu_points_free(gpu_model *g) {
    for (int32_t k = 0; g->pt && k < g->n_points; ++k) {
        if (g->pt[k].constructed) ns_gpu_destruct(g, g->pt_desc[k], &g->pt[k]); /* at each rebuild, as the CPU loop */
        for (int a = 0; a < g->pt[k].n_allocs; ++a) cudaFree(g->pt[k].allocs[a]);
    }
    free(g->pt);
    free(g->pt_desc);
    free(g->pt_key);
    ns_gpu_errors_free(&g->pt_err);
    g->pt = NULL;
    g->pt_desc = NULL;
    g->pt_key = NULL;
    g->n_points = 0;
}

int32_t ns_gpu_model_points(const gpu_model *g) { return g->n_points; }

void ns_gpu_model_point(const gpu_model *g, int32_t slot, const ns_mech_desc **desc, int32_t *key,
                        ns_mech_ppack *pp, double **fields) {
    *desc = g->pt_desc[slot];
    *key = g->pt_key[slot];
    *pp = g->pt[slot].p;
    *fields = g->pt[slot].fields;
}

ns_status ns_gpu_model_deliver(const ns_sim_t *sim, gpu_model *g, int32_t slot, const ns_mech_event *events,
                               const int64_t *range, int64_t max, const double *until, const double *t_step,
                               ns_mech_spike *spikes, unsigned long long *spikes_n, int64_t spikes_cap,
                               cudaStream_t stream) {
    if (max <= 0 && !ns_gpu_model_point_self(g, slot)) return NS_OK;
    if (!g->pt_desc[slot]->cuda_net_receive) /* ns_sim_connect never makes it a target */
        return ns_fail(NS_ERR_INTERNAL, "network: events for %s, which has no NET_RECEIVE", g->pt_desc[slot]->name);
    gpu_mech *gm = &g->pt[slot];
    set_time(gm, 0.0, sim); /* each event sets t */
    gm->p.dev.until = until;
    gm->p.dev.t_step = t_step;
    gm->p.dev.spikes = spikes;
    gm->p.dev.spikes_n = spikes_n;
    gm->p.dev.spikes_cap = spikes_cap;
    return launched(g->pt_desc[slot]->cuda_net_receive(&gm->p, events, range, max, stream), "NET_RECEIVE",
                    g->pt_desc[slot]->name);
}

static int cmp_pair(const void *a, const void *b) {
    const int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return (x > y) - (x < y);
}

/* what the device versions of net_send, net_event and net_move need (mechanism.h) */
#define DEV_EVENTS (NS_MECH_EV_SEND | NS_MECH_EV_EVENT | NS_MECH_EV_MOVE | NS_MECH_EV_WATCH)
#define DEV_SLOTS 4 /* self events an instance may have pending on the GPU loop */

typedef struct dev_error {
    int code, inst;
    double t;
} dev_error;

/* A point type's self-event slots (free), numbers, flag-1 numbers (none),
 * sources and error, in one device allocation (ns_mech_dev_events); the
 * spike buffer and the step's bound are set per delivery. */
static ns_status dev_events(gpu_mech *gm, const ns_mech_desc *d, int64_t cnt, const int64_t *src_h) {
    const size_t n = (size_t)(cnt > 0 ? cnt : 1), q = n * DEV_SLOTS;
    const size_t nw = n * (size_t)d->n_watch;
    const size_t bytes = sizeof(dev_error) + q * (2 * sizeof(double) + sizeof(int64_t) + sizeof(int32_t)) +
                         n * 3 * sizeof(int64_t) + nw * (sizeof(double) + 2) + 64;
    unsigned char *blk = NULL;
    ns_status st = alloc_up(gm, (void **)&blk, NULL, bytes);
    if (st != NS_OK) return st;
    ns_mech_dev_events *e = &gm->p.dev;
    dev_error *err = (dev_error *)blk;
    size_t at = sizeof *err;
    e->q_t = (double *)(blk + at), at += q * sizeof(double);
    e->q_flag = (double *)(blk + at), at += q * sizeof(double);
    e->q_seq = (int64_t *)(blk + at), at += q * sizeof(int64_t);
    e->next_seq = (int64_t *)(blk + at), at += n * sizeof(int64_t);
    e->tq = (int64_t *)(blk + at), at += n * sizeof(int64_t);
    int64_t *src = (int64_t *)(blk + at);
    e->source = src, at += n * sizeof(int64_t);
    if (nw > 0) e->w_flag = (double *)(blk + at), at += nw * sizeof(double);
    e->q_conn = (int32_t *)(blk + at), at += q * sizeof(int32_t);
    if (nw > 0) {
        e->n_watch = d->n_watch;
        e->w_on = blk + at, at += nw;
        e->w_above = blk + at;
    }
    e->slots = DEV_SLOTS;
    e->n_weights = d->n_weights > 0 ? d->n_weights : 1;
    e->error = &err->code;
    e->error_inst = &err->inst;
    e->error_t = &err->t;
    cudaError_t c = cudaMemset(blk, 0, bytes);
    if (c == cudaSuccess) c = cudaMemset(e->q_seq, 0xFF, q * sizeof(int64_t)); /* -1: free */
    if (c == cudaSuccess) c = cudaMemset(e->tq, 0xFF, n * sizeof(int64_t));
    if (c == cudaSuccess && cnt > 0) c = cudaMemcpy(src, src_h, (size_t)cnt * sizeof *src, cudaMemcpyHostToDevice);
    return c == cudaSuccess ? NS_OK : ns_cuda_status(c, "network: GPU events", __FILE__, __LINE__);
}

int ns_gpu_model_point_self(const gpu_model *g, int32_t slot) {
    return (g->pt_desc[slot]->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH)) != 0;
}

/* a point type's descriptor (ns_gpu_errors_create, ns_gpu_errors_read) */
static const ns_mech_desc *point_desc(const gpu_model *g, int32_t k) { return g->pt_desc[k]; }

/* The first error that a point type's VERBATIM C recorded on the device (ns_gpu_errors_read); when: where */
static ns_status points_errors(gpu_model *g, const char *when) {
    return g ? ns_gpu_errors_read(&g->pt_err, g, point_desc, when) : NS_OK;
}

ns_status ns_gpu_model_events_check(gpu_model *g) {
    const ns_status est = points_errors(g, "on the GPU loop: the run stops at the end of the interval");
    if (est != NS_OK) return est;
    for (int32_t k = 0; g && k < g->n_points; ++k) {
        if (!g->pt[k].p.dev.error) continue;
        dev_error e;
        NS_CUDA_TRY(cudaMemcpy(&e, g->pt[k].p.dev.error, sizeof e, cudaMemcpyDeviceToHost));
        static const char *const what[] = {"", "a self event with its instance's slots all taken (the GPU loop keeps "
                                               "4 pending per instance; use the CPU backend)",
                                           "net_send with a negative delay",
                                           "net_move with no self event of flag 1 pending, or to a time before t",
                                           "net_event at a time before t",
                                           "more net_event spikes in one interval than the GPU loop's buffer holds "
                                           "(use the CPU backend)"};
        if (e.code != 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "network: %s instance %d at t = %.17g ms: %s", g->pt_desc[k]->name,
                           e.inst, e.t, e.code > 0 && e.code <= 5 ? what[e.code] : "an unknown error");
    }
    return NS_OK;
}

double *ns_gpu_pointer_target(const ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id,
                              const int64_t *cell_base, int64_t j, const net_ptr *to) {
    const sim_model *model = g->model;
    const int64_t node = node_at(g, cell_base, j, to->node);
    if (to->ion >= 0) return g->ion + (size_t)(5 * to->ion + to->q) * (size_t)g->nodes + (size_t)node;
    if (to->mech < 0) return g->v + node;
    const int32_t shape = sim->cell_shape[to->cell];
    const int64_t inst = ns_net_instance_at(&model->per_shape[(size_t)shape * model->n_mechs + to->mech], to->node);
    if (inst < 0) return NULL;
    int64_t first = 0; /* the cell's instances follow those of the group's cells before it */
    for (int64_t c = 0; c < j; ++c)
        first += model->per_shape[(size_t)sim->cell_shape[cell_id[c]] * model->n_mechs + to->mech].n;
    const gpu_mech *tm = &g->m[to->mech];
    return tm->fields + (size_t)to->field * (size_t)tm->p.n + (size_t)(first + inst);
}

/* The POINTERs of a point type's cnt instances (synapses ids[i]; local: the
 * group's cell of each cell) as device addresses: a cell's v, an ion's
 * variable or another mechanism's field at a compartment of a cell in the
 * group, read and written in place (as the CPU loop's in-block POINTERs: in
 * the current phase every v is the step's start). *out: n_pointers device
 * arrays of cnt addresses (ns_mech_ppack.pointer). */
static ns_status points_pointers(const ns_sim_t *sim, const gpu_model *g, gpu_mech *gm, const ns_mech_desc *d,
                                 const int64_t *ids, int64_t cnt, const int64_t *local, const int64_t *cell_id,
                                 const int64_t *cell_base, double ****out) {
    const sim_net *net = sim->net;
    const size_t np = (size_t)d->n_pointers, n = (size_t)(cnt > 0 ? cnt : 1);
    double **addr = malloc(np * n * sizeof *addr);
    double ***rows = malloc(np * sizeof *rows);
    if (!addr || !rows) {
        free(addr), free(rows);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: POINTERs of %s", d->name);
    }
    ns_status st = NS_OK;
    for (int64_t i = 0; st == NS_OK && i < cnt; ++i)
        for (int k = 0; st == NS_OK && k < d->n_pointers; ++k) {
            const net_ptr *to = NULL;
            if ((st = ns_net_pointer_of(net, d, ids[i], k, &to)) != NS_OK) break;
            const int64_t j = local[to->cell];
            if (j < 0) {
                st = ns_fail(NS_ERR_INTERNAL, "network: synapse %lld (%s): POINTER %s: cell %lld is not in the GPU "
                             "tree group", (long long)ids[i], d->name, d->pointer_names[k], (long long)to->cell);
                break;
            }
            double *a = ns_gpu_pointer_target(sim, g, cell_id, cell_base, j, to);
            if (!a) {
                st = ns_net_pointer_absent(sim, ids[i], d, k, to);
                break;
            }
            addr[(size_t)k * n + (size_t)i] = a;
        }
    double **addr_d = NULL;
    if (st == NS_OK) st = alloc_up(gm, (void **)&addr_d, addr, np * n * sizeof *addr);
    for (size_t k = 0; st == NS_OK && k < np; ++k) rows[k] = addr_d + k * n;
    double ***rows_d = NULL;
    if (st == NS_OK) st = alloc_up(gm, (void **)&rows_d, rows, np * sizeof *rows);
    free(addr);
    free(rows);
    *out = st == NS_OK ? rows_d : NULL;
    return st;
}

/* The connections' weight vectors of each point type (NET_RECEIVE's arguments:
 * the weight, then per-connection state), conn_w[k] connection k's within
 * its type's in creation order, from net.c's (the CPU loop's sim_net.wvec);
 * then NET_RECEIVE's INITIAL of each connection (events.c's
 * ns_net_events_init): per instance in creation order, after every INITIAL. */
static ns_status points_wvec(const ns_sim_t *sim, gpu_model *g, const int32_t *syn_slot, const int32_t *syn_inst,
                             int32_t *conn_w, cudaStream_t stream) {
    const sim_net *net = sim->net;
    int64_t *count = calloc((size_t)g->n_points + 1, sizeof *count);
    if (!count) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU weight vectors");
    ns_status st = NS_OK;
    for (int64_t k = 0; k < net->n_conns; ++k) {
        const int32_t t = syn_slot[net->conns[k].synapse];
        if (count[t] >= INT32_MAX) {
            st = ns_fail(NS_ERR_SIZE, "network: %lld connections to %s (the GPU loop takes < 2^31 per type)",
                         (long long)count[t], g->pt_desc[t]->name);
            break;
        }
        conn_w[k] = (int32_t)count[t]++;
    }
    for (int32_t t = 0; st == NS_OK && t < g->n_points; ++t) {
        const ns_mech_desc *d = g->pt_desc[t];
        gpu_mech *gm = &g->pt[t];
        const int nw = d->n_weights > 0 ? d->n_weights : 1;
        const int64_t n = count[t];
        double *w_h = malloc((size_t)(n > 0 ? n : 1) * (size_t)nw * sizeof *w_h);
        ns_mech_event *ev_h = d->cuda_net_init ? malloc((size_t)(n > 0 ? n : 1) * sizeof *ev_h) : NULL;
        int64_t *begin = d->cuda_net_init ? calloc((size_t)gm->p.n + 1, sizeof *begin) : NULL;
        if (!w_h || (d->cuda_net_init && (!ev_h || !begin))) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU weight vectors");
        for (int64_t k = 0; st == NS_OK && k < net->n_conns; ++k) {
            const net_conn *c = &net->conns[k];
            if (syn_slot[c->synapse] != t) continue;
            for (int a = 0; a < nw; ++a)
                w_h[(size_t)conn_w[k] * (size_t)nw + (size_t)a] = d->n_weights > 0 ? net->wvec[c->w_at + a] : c->weight;
            if (begin) begin[syn_inst[c->synapse] + 1]++;
        }
        double *w_d = NULL;
        if (st == NS_OK) st = alloc_up(gm, (void **)&w_d, w_h, (size_t)n * (size_t)nw * sizeof *w_h);
        gm->p.wvec = w_d;
        gm->p.dev.wvec_len = n * nw;
        if (st == NS_OK && begin && n > 0) { /* by instance, stable in creation order */
            for (int32_t i = 0; i < gm->p.n; ++i) begin[i + 1] += begin[i];
            for (int64_t k = 0; k < net->n_conns; ++k) {
                const net_conn *c = &net->conns[k];
                if (syn_slot[c->synapse] == t)
                    ev_h[begin[syn_inst[c->synapse]]++] = (ns_mech_event){0.0, c->weight, syn_inst[c->synapse], conn_w[k]};
            }
            const int64_t range[2] = {0, n};
            ns_mech_event *ev_d = NULL;
            int64_t *range_d = NULL;
            cudaError_t e = cudaMalloc((void **)&ev_d, (size_t)n * sizeof *ev_d);
            if (e == cudaSuccess) e = cudaMalloc((void **)&range_d, sizeof range);
            if (e == cudaSuccess) e = cudaMemcpy(ev_d, ev_h, (size_t)n * sizeof *ev_d, cudaMemcpyHostToDevice);
            if (e == cudaSuccess) e = cudaMemcpy(range_d, range, sizeof range, cudaMemcpyHostToDevice);
            if (e != cudaSuccess) st = ns_cuda_status(e, "network: NET_RECEIVE's INITIAL", __FILE__, __LINE__);
            set_time(gm, 0.0, sim);
            if (st == NS_OK) st = launched(d->cuda_net_init(&gm->p, ev_d, range_d, n, stream), "NET_RECEIVE's INITIAL", d->name);
            if (st == NS_OK) {
                e = cudaStreamSynchronize(stream); /* before the event list goes */
                if (e != cudaSuccess) st = ns_cuda_status(e, "cudaStreamSynchronize", __FILE__, __LINE__);
            }
            cudaFree(ev_d);
            cudaFree(range_d);
        }
        free(w_h);
        free(ev_h);
        free(begin);
    }
    free(count);
    return st;
}

/* The network's point types (pairs: their (NEURON type key, desc) in key order) and the local
 * cell of each global cell (-1: not in the group). */
static ns_status point_types(const ns_sim_t *sim, const sim_model *model, const int64_t *cell_id, int64_t cells,
                             int64_t *local, int32_t *pairs, int32_t *n_types) {
    const sim_net *net = sim->net;
    *n_types = 0;
    for (int64_t c = 0; c < sim->n_cells; ++c) local[c] = -1;
    for (int64_t j = 0; j < cells; ++j) local[cell_id[j]] = j;
    for (int64_t q = 0; q < net->n_syns; ++q) {
        if (local[net->syns[q].cell] < 0)
            return ns_fail(NS_ERR_INTERNAL, "network: the cell %lld of synapse %lld is not in the GPU tree group",
                           (long long)net->syns[q].cell, (long long)q);
        int seen = 0;
        for (int32_t t = 0; t < *n_types; ++t) seen |= pairs[2 * t + 1] == net->syns[q].desc;
        if (!seen) {
            pairs[2 * *n_types] = ns_sim_model_key(model, net->syns[q].desc);
            pairs[2 * *n_types + 1] = net->syns[q].desc;
            (*n_types)++;
        }
    }
    qsort(pairs, (size_t)*n_types, 2 * sizeof *pairs, cmp_pair);
    return NS_OK;
}

/* Why point type d cannot run on the GPU loop, or NS_OK. */
static ns_status point_refused(const ns_mech_desc *d) {
    if (d->events & NS_MECH_EV_NETCONS) /* host-only: src/net/events.c */
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "network: synapse type %s: %s (FOR_NETCONS runs on the CPU loop): use the CPU backend "
                       "(docs/networks.md, \"Events\")",
                       d->name, d->cuda_why_not ? d->cuda_why_not : "uses FOR_NETCONS");
    if (host_hooks(d)) return host_hooks_refused(d);
    if (!d->cuda_init || !d->cuda_current || !d->cuda_state || (d->has_net_receive && !d->cuda_net_receive) ||
        (d->net_init && !d->cuda_net_init))
        /* an electrode (no NET_RECEIVE: SEClamp) is placed but never a target (ns_sim_connect) */
        return ns_gpu_no_cuda_code("network: synapse type", d);
    return NS_OK;
}

/* A point type's instances on the host (by local cell, then synapse id: a counting pass): their
 * synapses (ids), nodes, weights (1e2 / area) and fields (parameters and RANDOM streams); each
 * synapse's slot t and index within it into syn_slot / syn_inst. */
typedef struct point_host {
    int64_t cnt;
    int64_t *ids;
    int32_t *nodes;
    double *w, *f;
} point_host;

static void point_host_free(point_host *h) {
    free(h->ids), free(h->nodes), free(h->w), free(h->f);
    h->ids = NULL, h->nodes = NULL, h->w = NULL, h->f = NULL;
}

static ns_status point_instances(const ns_sim_t *sim, const gpu_model *g, int32_t t, int32_t di, int64_t cells,
                                 const int64_t *local, const int64_t *cell_base, int32_t *syn_slot,
                                 int32_t *syn_inst, point_host *h) {
    const sim_net *net = sim->net;
    const ns_mech_desc *d = g->model->descs[di];
    int64_t cnt = 0;
    for (int64_t q = 0; q < net->n_syns; ++q) cnt += net->syns[q].desc == di;
    if (cnt >= INT32_MAX)
        return ns_fail(NS_ERR_SIZE, "network: %lld synapses of %s (the GPU loop takes < 2^31)", (long long)cnt,
                       d->name);
    h->cnt = cnt;
    /* by local cell, stable in synapse id */
    int64_t *begin = calloc((size_t)cells + 1, sizeof *begin);
    h->ids = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *h->ids);
    h->nodes = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *h->nodes);
    h->w = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *h->w);
    h->f = calloc((size_t)d->n_fields * (size_t)cnt + 1, sizeof *h->f);
    if (!begin || !h->ids || !h->nodes || !h->w || !h->f) {
        free(begin);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU synapses");
    }
    for (int64_t q = 0; q < net->n_syns; ++q)
        if (net->syns[q].desc == di) begin[local[net->syns[q].cell] + 1]++;
    for (int64_t j = 0; j < cells; ++j) begin[j + 1] += begin[j];
    for (int64_t q = 0; q < net->n_syns; ++q)
        if (net->syns[q].desc == di) h->ids[begin[local[net->syns[q].cell]]++] = q;
    free(begin);
    for (int64_t i = 0; i < cnt; ++i) {
        const net_syn *sy = &net->syns[h->ids[i]];
        const int64_t j = local[sy->cell];
        h->nodes[i] = (int32_t)node_at(g, cell_base, j, sy->node);
        h->w[i] = sim->shapes[sim->cell_shape[sy->cell]].stim_scale[sy->node]; /* 1e2 / area, as the CPU */
        for (int p = 0; p < d->n_params; ++p) h->f[(size_t)p * (size_t)cnt + (size_t)i] = net->params[sy->param_at + p];
        for (int r = 0; r < d->has_random; ++r) { /* the streams, as the CPU loop's (ns_net_syn_random) */
            double v[4];
            ns_net_syn_random(net, d, h->ids[i], r, v);
            for (int u = 0; u < 4; ++u) h->f[(size_t)(d->random_field + 4 * r + u) * (size_t)cnt + (size_t)i] = v[u];
        }
        syn_slot[h->ids[i]] = t;
        syn_inst[h->ids[i]] = (int32_t)i;
    }
    return NS_OK;
}

/* The mod file's TABLE of point type d (its GLOBALs as the table's update leaves them) into the
 * device's table_d and globals_d. */
static ns_status point_table(const ns_sim_t *sim, const ns_mech_desc *d, double *globals_d, double *table_d) {
    ns_status st = NS_OK;
    double *table = calloc((size_t)d->table_size, sizeof *table);
    double *glob = malloc((size_t)(d->n_globals > 0 ? d->n_globals : 1) * sizeof *glob);
    if (!table || !glob) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: TABLE of %s", d->name);
    if (st == NS_OK) {
        memcpy(glob, d->global_defaults, (size_t)d->n_globals * sizeof *glob);
        ns_mech_ppack hp;
        memset(&hp, 0, sizeof hp);
        hp.dt = sim->params.dt;
        hp.celsius = sim->params.celsius;
        hp.global = glob;
        hp.table = table;
        if (d->table_update(&hp)) {
            if (cudaMemcpy(table_d, table, (size_t)d->table_size * sizeof *table, cudaMemcpyHostToDevice) !=
                cudaSuccess)
                st = ns_fail(NS_ERR_CUDA, "network: TABLE upload of %s", d->name);
            if (st == NS_OK && d->n_globals > 0 &&
                cudaMemcpy(globals_d, glob, (size_t)d->n_globals * sizeof *glob, cudaMemcpyHostToDevice) !=
                    cudaSuccess)
                st = ns_fail(NS_ERR_CUDA, "network: globals of %s", d->name);
        }
    }
    free(table);
    free(glob);
    return st;
}

/* Point type d's ions: the model's arrays of the ions it names (views, desc->ions order). */
static ns_status point_ions(const gpu_model *g, const ns_mech_desc *d, ns_mech_ion_view *views) {
    const sim_model *model = g->model;
    for (int j = 0; j < d->n_ions; ++j) {
        int32_t ion = -1;
        for (int32_t q = 0; q < model->n_ions; ++q)
            if (strcmp(model->ions[q].name, d->ions[j].name) == 0) ion = q;
        if (ion < 0)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "network: synapse type %s uses the ion %s, which no mechanism of the model uses", d->name,
                           d->ions[j].name);
        double *base = g->ion + (size_t)5 * (size_t)ion * (size_t)g->nodes;
        const size_t z = (size_t)g->nodes;
        const int keep = model->ions[ion].read_i;
        views[j] = (ns_mech_ion_view){base, base + z, base + 2 * z, keep ? base + 3 * z : NULL, NULL, NULL};
    }
    return NS_OK;
}

/* Point type t (the model's desc di): its instances, arrays and ppack on the device, then its
 * INITIAL (finitialize: in type order, after the density mechanisms'; its net_send into the slots). */
static ns_status point_type_build(const ns_sim_t *sim, gpu_model *g, int32_t t, int32_t di, int32_t key,
                                  int64_t cells, const int64_t *local, const int64_t *cell_id,
                                  const int64_t *cell_base, int32_t *syn_slot, int32_t *syn_inst,
                                  cudaStream_t stream) {
    const sim_net *net = sim->net;
    const sim_model *model = g->model;
    const ns_mech_desc *d = model->descs[di];
    g->pt_desc[t] = d;
    g->pt_key[t] = key;
    g->n_points = t + 1;
    gpu_mech *gm = &g->pt[t];
    ns_status st = point_refused(d);
    if (st != NS_OK) return st;
    point_host h = {0, NULL, NULL, NULL, NULL};
    if ((st = point_instances(sim, g, t, di, cells, local, cell_base, syn_slot, syn_inst, &h)) != NS_OK) {
        point_host_free(&h);
        return st;
    }
    const int64_t cnt = h.cnt;
    const int nf = d->n_fields;
    double *fields_d = NULL, **fptr_d = NULL, *globals_d = NULL, *table_d = NULL, *w_d = NULL;
    int32_t *nodes_d = NULL;
    ns_mech_ion_view *ions_d = NULL;
    double *fptr_h[256];
    ns_mech_ion_view views[NS_SIM_MECH_IONS_MAX];
    if (nf > 256) st = ns_fail(NS_ERR_UNSUPPORTED, "network: %s has %d fields (GPU loop: at most 256)", d->name, nf);
    if (d->n_ions > NS_SIM_MECH_IONS_MAX)
        st = ns_fail(NS_ERR_UNSUPPORTED, "network: %s uses %d ions (at most %d)", d->name, d->n_ions,
                     NS_SIM_MECH_IONS_MAX);
    /* NEURON's CONSTRUCTOR once per instance, on the host before the fields go to the device (as
     * NEURON with CoreNEURON; its C may keep host memory there, which device C never reaches: nmodl_cuda_verbatim.c) */
    const int ctor = st == NS_OK && cnt > 0 && d->hooks[NS_MECH_CONSTRUCTOR];
    const gpu_host_set hs = {h.f, cnt, d->global_defaults, h.nodes, 0, sim->params.dt, sim->params.celsius};
    if (ctor) st = ns_gpu_host_hook(g, d, NS_MECH_CONSTRUCTOR, &hs, "at finitialize");
    if (st == NS_OK) st = alloc_up(gm, (void **)&fields_d, h.f, (size_t)nf * (size_t)cnt * sizeof(double));
    gm->fields = fields_d;
    gm->constructed = ctor && st == NS_OK;
    gm->p.n = (int)cnt; /* ns_gpu_destruct's count until ppack_bind */
    if (ctor && !gm->constructed && d->hooks[NS_MECH_DESTRUCTOR]) /* its fields never reached the device */
        (void)ns_gpu_host_hook(g, d, NS_MECH_DESTRUCTOR, &hs, "freeing the instances");
    if (st == NS_OK) st = alloc_up(gm, (void **)&nodes_d, h.nodes, (size_t)cnt * sizeof(int32_t));
    if (st == NS_OK) st = alloc_up(gm, (void **)&w_d, h.w, (size_t)cnt * sizeof(double));
    for (int f = 0; st == NS_OK && f < nf; ++f) fptr_h[f] = fields_d + (size_t)f * (size_t)cnt;
    if (st == NS_OK) st = alloc_up(gm, (void **)&fptr_d, fptr_h, (size_t)nf * sizeof(double *));
    /* the mod file's GLOBALs, as the CPU loop's synapses */
    if (st == NS_OK)
        st = alloc_up(gm, (void **)&globals_d, d->global_defaults, (size_t)d->n_globals * sizeof(double));
    if (st == NS_OK) st = alloc_up(gm, (void **)&table_d, NULL, (size_t)d->table_size * sizeof(double));
    if (st == NS_OK && d->table_update && d->table_size > 0) st = point_table(sim, d, globals_d, table_d);
    if (st == NS_OK) st = point_ions(g, d, views);
    if (st == NS_OK)
        st = alloc_up(gm, (void **)&ions_d, views, (size_t)d->n_ions * sizeof(ns_mech_ion_view));
    double ***ptr_d = NULL;
    if (st == NS_OK && d->n_pointers > 0)
        st = points_pointers(sim, g, gm, d, h.ids, cnt, local, cell_id, cell_base, &ptr_d);
    const ns_mech_ftable *ftab_d = NULL;
    if (st == NS_OK) st = ns_gpu_ftables_up(gm, d, model->ftables ? model->ftables[di] : NULL, &ftab_d);
    /* net_event's spike source of each instance (-1: none) */
    int64_t *src_h = d->events & DEV_EVENTS ? malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *src_h) : NULL;
    if (st == NS_OK && (d->events & DEV_EVENTS) && !src_h) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: events");
    for (int64_t i = 0; src_h && i < cnt; ++i) src_h[i] = net->syn_src[h.ids[i]];
    point_host_free(&h);
    if (st != NS_OK) {
        free(src_h);
        return st;
    }
    ppack_bind(gm, g, cnt, nodes_d, fptr_d, globals_d, table_d, ions_d, ftab_d);
    gm->p.weight = w_d;
    gm->p.pointer = (double *const *const *)ptr_d;
    if (src_h) st = dev_events(gm, d, cnt, src_h);
    free(src_h);
    return st;
}

/* finitialize of the point types: BEFORE INITIAL, INITIAL in type order, after the density
 * mechanisms' (its net_send into the slots), AFTER INITIAL, BEFORE BREAKPOINT, BEFORE STEP, as the
 * CPU loop (network_build.c) */
static ns_status points_initial(const ns_sim_t *sim, gpu_model *g, cudaStream_t stream) {
    ns_status st = ns_gpu_hooks_run(sim, g, NS_MECH_BEFORE_INITIAL, 0.0, 0, 1, stream);
    for (int32_t t = 0; t < g->n_points && st == NS_OK; ++t) {
        set_time(&g->pt[t], 0.0, sim);
        st = launched(g->pt_desc[t]->cuda_init(&g->pt[t].p, stream), "INITIAL", g->pt_desc[t]->name);
    }
    static const int after[] = {NS_MECH_AFTER_INITIAL, NS_MECH_BEFORE_BREAKPOINT, NS_MECH_BEFORE_STEP};
    for (int q = 0; q < 3 && st == NS_OK; ++q) st = ns_gpu_hooks_run(sim, g, after[q], 0.0, 0, 1, stream);
    return st;
}

ns_status ns_gpu_model_points_build(const ns_sim_t *sim, gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                                    int64_t cells, int32_t *syn_slot, int32_t *syn_inst, int32_t *conn_w,
                                    cudaStream_t stream) {
    ns_gpu_points_free(g);
    const sim_net *net = sim->net;
    if (!net || net->n_syns == 0) return NS_OK;
    int64_t *local = malloc((size_t)sim->n_cells * sizeof *local);
    int32_t *pairs = malloc((size_t)(2 * (net->n_syns + 1)) * sizeof *pairs); /* (key, desc) of the types */
    ns_status st = local && pairs ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU synapses");
    int32_t n_types = 0;
    if (st == NS_OK) st = point_types(sim, g->model, cell_id, cells, local, pairs, &n_types);
    if (st == NS_OK) {
        g->pt = calloc((size_t)(n_types > 0 ? n_types : 1), sizeof *g->pt);
        g->pt_desc = calloc((size_t)(n_types > 0 ? n_types : 1), sizeof *g->pt_desc);
        g->pt_key = calloc((size_t)(n_types > 0 ? n_types : 1), sizeof *g->pt_key);
        if (!g->pt || !g->pt_desc || !g->pt_key) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU synapses");
    }
    for (int32_t t = 0; t < n_types && st == NS_OK; ++t)
        st = point_type_build(sim, g, t, pairs[2 * t + 1], pairs[2 * t], cells, local, cell_id, cell_base, syn_slot,
                              syn_inst, stream);
    /* the types' errors, none yet: records only for those whose device code can fail */
    if (st == NS_OK) st = ns_gpu_errors_create(&g->pt_err, g, n_types, point_desc);
    for (int32_t t = 0; t < n_types && st == NS_OK; ++t) g->pt[t].p.error = ns_gpu_errors_record(&g->pt_err, t);
    free(local);
    free(pairs);
    if (st == NS_OK) st = points_initial(sim, g, stream);
    if (st == NS_OK) st = points_wvec(sim, g, syn_slot, syn_inst, conn_w, stream);
    if (st == NS_OK) NS_CUDA_TRY(cudaStreamSynchronize(stream));
    if (st == NS_OK) st = points_errors(g, "at finitialize");
    if (st != NS_OK) ns_gpu_points_free(g);
    return st;
}
