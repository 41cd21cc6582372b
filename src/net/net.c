/* Networks (docs/networks.md): synapses, spike sources, connections with
 * NEURON's NetCon semantics, and the interval loop that exchanges spikes.
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
#include "sim/dist_impl.h"
#include "sim/sim_impl.h"
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

static void free_built(sim_net *net) {
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
    free(net->snap_src);
    free(net->snap_val);
    net->snap_src = NULL;
    net->snap_val = NULL;
    net->n_snap = 0;
}

void ns_net_free(sim_net *net) {
    if (!net) return;
    free_built(net);
    for (int64_t s = 0; s < net->n_sources; ++s) {
        free(net->sources[s].times);
        free(net->sources[s].spikes);
    }
    free(net->sources);
    free(net->syns);
    free(net->params);
    free(net->ptrs);
    free(net->conns);
    free(net->wvec);
    free(net->gather);
    free(net->ext);
    free(net->fan);
    free(net);
}

/* Room for one more of n items of `size` bytes in *p (capacity *cap). */
static int grow(void **p, int64_t n, int64_t *cap, size_t size) {
    if (n < *cap) return 0;
    const int64_t c = *cap ? 2 * *cap : 16;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The network of a simulation, made at its first synapse, source or connection. */
static ns_status net_of(ns_sim_t *sim, const char *fn, sim_net **out) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    if (!sim->net) {
        sim->net = calloc(1, sizeof *sim->net);
        if (!sim->net) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    }
    *out = sim->net;
    return NS_OK;
}

static ns_status check_site(const ns_sim_t *sim, const char *what, int64_t cell, int32_t node) {
    if (cell < 0 || cell >= sim->n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld is not in the simulation (%lld cells)", what,
                       (long long)cell, (long long)sim->n_cells);
    const int32_t n = sim->shapes[sim->cell_shape[cell]].n;
    if (node < 0 || node >= n)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: compartment %d is outside cell %lld (%d compartments)", what,
                       (int)node, (long long)cell, (int)n);
    return NS_OK;
}

ns_status ns_sim_add_synapse(ns_sim_t *sim, int64_t cell, int32_t compartment, const char *mechanism,
                             int64_t *synapse) {
    const char *fn = "ns_sim_add_synapse";
    if (sim && sim->dist) return ns_dist_sim_add_synapse(sim->dist, cell, compartment, mechanism, synapse);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (!mechanism) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: mechanism is NULL", fn);
    st = check_site(sim, "synapse", cell, compartment);
    if (st != NS_OK) return st;
    const sim_model *m = sim->model;
    const int32_t k = ns_sim_model_find(m, mechanism);
    /* any POINT_PROCESS: with NET_RECEIVE (a synapse), POINTERs (a gap junction) or neither (an
     * electrode such as NEURON's SEClamp: placed, never a connection's target) */
    if (k < 0 || m->descs[k]->kind != NS_MECH_POINT) {
        char list[512];
        size_t used = 0;
        list[0] = 0;
        for (int32_t q = 0; q < m->n_descs && used + 40 < sizeof list; ++q) {
            const ns_mech_desc *d = m->descs[q];
            if (d->kind == NS_MECH_POINT && d->has_net_receive && d->net_receive)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", d->name);
        }
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "%s: %s '%s' (cell %lld, compartment %d): the synapses of the model's catalogue are: %s", fn,
                       k < 0 ? "no mechanism" : "not a POINT_PROCESS:", mechanism, (long long)cell,
                       (int)compartment, used ? list : "(none)");
    }
    const ns_mech_desc *d = m->descs[k];
    if (grow((void **)&net->syns, net->n_syns, &net->cap_syns, sizeof *net->syns) != 0)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    const int n_rand = d->has_random > 1 ? 4 * (d->has_random - 1) : 0; /* RANDOM variables' ids, position */
    while (net->n_params + d->n_params + n_rand > net->cap_params)
        if (grow((void **)&net->params, net->cap_params, &net->cap_params, sizeof *net->params) != 0)
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    net_syn *s = &net->syns[net->n_syns];
    s->cell = cell;
    s->node = compartment;
    s->desc = k;
    s->param_at = net->n_params;
    s->ptr_at = -1;
    for (int p = 0; p < d->n_params; ++p) net->params[net->n_params + p] = d->field_defaults[p];
    for (int p = 0; p < n_rand; ++p) net->params[net->n_params + d->n_params + p] = NAN;
    net->n_params += d->n_params + n_rand;
    if (synapse) *synapse = net->n_syns;
    net->n_syns++;
    net->dirty = 1;
    return NS_OK;
}

ns_status ns_sim_synapse_set(ns_sim_t *sim, int64_t synapse, const char *name, double value) {
    const char *fn = "ns_sim_synapse_set";
    if (sim && sim->dist) return ns_dist_sim_synapse_set(sim->dist, synapse, name, value);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (synapse < 0 || synapse >= net->n_syns)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                       (long long)synapse, (long long)net->n_syns);
    const net_syn *s = &net->syns[synapse];
    const ns_mech_desc *d = sim->model->descs[s->desc];
    if (!name) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: name is NULL", fn);
    for (int p = 0; p < d->n_params; ++p)
        if (strcmp(d->field_names[p], name) == 0) {
            if (!isfinite(value))
                return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld (%s): %s = %g is not finite", fn,
                               (long long)synapse, d->name, name, value);
            net->params[s->param_at + p] = value;
            net->dirty = 1;
            return NS_OK;
        }
    /* R.id1, R.id2, R.id3, R.seq: RANDOM variable R's nrnran123 stream (NEURON's NMODLRandom ids
     * and seq, seq4which = 4 seq + which), the hidden fields __ran_R_id1 ... */
    const char *dot = strchr(name, '.');
    for (int q = 1; dot && q < d->has_random; ++q)
        for (int k = 0; k < 4; ++k) {
            const char *f = d->field_names[d->random_field + 4 * q + k]; /* __ran_R_id1 */
            const size_t nr = (size_t)(dot - name), nf = strlen(f);
            if (strncmp(f, "__ran_", 6) != 0 || nf < 6 + nr + 1 || strncmp(f + 6, name, nr) != 0 || f[6 + nr] != '_' ||
                strcmp(f + 7 + nr, dot + 1) != 0)
                continue;
            const double top = k < 3 ? 4294967296.0 : 17179869184.0; /* ids: 32 bits; seq4which: 34 */
            if (!(value >= 0.0 && value < top && value == floor(value)))
                return ns_fail(NS_ERR_INVALID_ARGUMENT,
                               "%s: synapse %lld (%s): %s = %g: an integer in [0, %.0f) (NEURON's nrnran123 %s)", fn,
                               (long long)synapse, d->name, name, value, top, k < 3 ? "id" : "seq * 4 + which");
            net->params[s->param_at + d->n_params + 4 * (q - 1) + k] = value;
            net->dirty = 1;
            return NS_OK;
        }
    char list[256];
    size_t used = 0;
    list[0] = 0;
    for (int p = 0; p < d->n_params && used + 40 < sizeof list; ++p)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", p ? ", " : "", d->field_names[p]);
    for (int q = 1; q < d->has_random && used + 60 < sizeof list; ++q) { /* __ran_R_id1: R.id1 .. R.seq */
        const char *f = d->field_names[d->random_field + 4 * q] + 6;
        const int nr = (int)strlen(f) - 4;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%.*s.id1, .id2, .id3, .seq", used ? ", " : "",
                                 nr, f);
    }
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld (%s) has no parameter '%s' (it has: %s)", fn,
                   (long long)synapse, d->name, name, used ? list : "none");
}

ns_status ns_sim_set_pointer(ns_sim_t *sim, int64_t synapse, const char *pointer, int64_t cell, int32_t compartment,
                             const char *var) {
    const char *fn = "ns_sim_set_pointer";
    if (sim && sim->dist) return ns_dist_sim_refuse(fn);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (synapse < 0 || synapse >= net->n_syns)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                       (long long)synapse, (long long)net->n_syns);
    if (!pointer || !var) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: pointer or var is NULL", fn);
    net_syn *s = &net->syns[synapse];
    const ns_mech_desc *d = sim->model->descs[s->desc];
    int k = -1;
    for (int q = 0; q < d->n_pointers; ++q)
        if (strcmp(d->pointer_names[q], pointer) == 0) k = q;
    if (k < 0) {
        char list[256];
        size_t used = 0;
        list[0] = 0;
        for (int q = 0; q < d->n_pointers && used + 40 < sizeof list; ++q)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", q ? ", " : "", d->pointer_names[q]);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld (%s) has no POINTER '%s' (it has: %s)", fn,
                       (long long)synapse, d->name, pointer, used ? list : "none");
    }
    st = check_site(sim, "pointer target", cell, compartment);
    if (st != NS_OK) return st;
    net_ptr to = {cell, compartment, -1, -1, -1, -1};
    if (strcmp(var, "v") != 0) {
        st = ns_sim_model_var_lookup(sim->model, var, &to.mech, &to.field, &to.ion, &to.q);
        if (st != NS_OK) {
            ns_error_prefix(fn);
            return st;
        }
        if (to.mech >= 0 && sim->model->mechs[to.mech].desc->kind != NS_MECH_DENSITY)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: %s: a point process's variable (only v, ions and density "
                           "mechanisms' fields)", fn, var);
    }
    if (s->ptr_at < 0) {
        while (net->n_ptrs + d->n_pointers > net->cap_ptrs)
            if (grow((void **)&net->ptrs, net->cap_ptrs, &net->cap_ptrs, sizeof *net->ptrs) != 0)
                return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
        s->ptr_at = net->n_ptrs;
        for (int q = 0; q < d->n_pointers; ++q) net->ptrs[net->n_ptrs + q] = (net_ptr){-1, 0, -1, -1, -1, -1};
        net->n_ptrs += d->n_pointers;
    }
    net->ptrs[s->ptr_at + k] = to;
    net->dirty = 1;
    return NS_OK;
}

static net_source *new_source(sim_net *net) {
    if (grow((void **)&net->sources, net->n_sources, &net->cap_sources, sizeof *net->sources) != 0) return NULL;
    net_source *s = &net->sources[net->n_sources];
    memset(s, 0, sizeof *s);
    return s;
}

ns_status ns_sim_add_detector(ns_sim_t *sim, int64_t cell, int32_t compartment, double threshold, int64_t *source) {
    const char *fn = "ns_sim_add_detector";
    if (sim && sim->dist) return ns_dist_sim_add_detector(sim->dist, cell, compartment, threshold, source);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    st = check_site(sim, "detector", cell, compartment);
    if (st != NS_OK) return st;
    if (!isfinite(threshold))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: threshold %g mV (cell %lld) is not finite", fn, threshold,
                       (long long)cell);
    net_source *s = new_source(net);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    s->cell = cell;
    s->node = compartment;
    s->threshold = threshold;
    if (source) *source = net->n_sources;
    net->n_sources++;
    net->dirty = 1;
    return NS_OK;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ns_status ns_sim_add_spike_source(ns_sim_t *sim, const double *times, int64_t count, int64_t *source) {
    const char *fn = "ns_sim_add_spike_source";
    if (sim && sim->dist) return ns_dist_sim_add_spike_source(sim->dist, times, count, source);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (count < 0 || (count > 0 && !times))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %lld times%s", fn, (long long)count,
                       count > 0 ? " from a NULL array" : "");
    for (int64_t k = 0; k < count; ++k)
        if (!isfinite(times[k]) || times[k] < 0.0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: time %lld is %g ms (finite and >= 0 only)", fn, (long long)k,
                           times[k]);
    double *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof *copy);
    if (!copy) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld times", fn, (long long)count);
    if (count > 0) memcpy(copy, times, (size_t)count * sizeof *copy);
    qsort(copy, (size_t)count, sizeof *copy, cmp_double);
    net_source *s = new_source(net);
    if (!s) {
        free(copy);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    }
    s->cell = -1;
    s->node = -1;
    s->times = copy;
    s->n_times = count;
    if (source) *source = net->n_sources;
    net->n_sources++;
    net->dirty = 1;
    return NS_OK;
}

ns_status ns_sim_add_poisson_source(ns_sim_t *sim, double rate_hz, double start, double stop, uint64_t seed,
                                    int64_t *source) {
    const char *fn = "ns_sim_add_poisson_source";
    if (sim && sim->dist) return ns_dist_sim_add_poisson_source(sim->dist, rate_hz, start, stop, seed, source);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    /* at most 1 MHz: the intervals (mean 1e-3 ms) stay far above the spacing of doubles near any t */
    if (!(rate_hz >= 0.0 && rate_hz <= 1e6))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: rate %g Hz (0 to 1e6 Hz only)", fn, rate_hz);
    if (!isfinite(start) || start < 0.0 || isnan(stop) || stop < start)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: start %g ms, stop %g ms (0 <= start <= stop, start finite)", fn,
                       start, stop);
    net_source *s = new_source(net);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    s->cell = -1;
    s->node = -1;
    s->poisson = 1;
    s->rate = rate_hz;
    s->start = start;
    s->stop = stop;
    s->seed = seed;
    ns_net_poisson_reset(s);
    if (source) *source = net->n_sources;
    net->n_sources++;
    net->dirty = 1;
    return NS_OK;
}

ns_status ns_sim_connect(ns_sim_t *sim, int64_t source, int64_t synapse, double weight, double delay) {
    const char *fn = "ns_sim_connect";
    if (sim && sim->dist) return ns_dist_sim_connect(sim->dist, source, synapse, weight, delay);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (source < 0 || source >= net->n_sources)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld does not exist (%lld sources)", fn,
                       (long long)source, (long long)net->n_sources);
    if (synapse < 0 || synapse >= net->n_syns)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                       (long long)synapse, (long long)net->n_syns);
    if (!(delay > 0.0) || !isfinite(delay))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld -> synapse %lld: delay %g ms must be > 0 and finite",
                       fn, (long long)source, (long long)synapse, delay);
    if (!isfinite(weight))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld -> synapse %lld: weight %g is not finite", fn,
                       (long long)source, (long long)synapse, weight);
    const ns_mech_desc *target = sim->model->descs[net->syns[synapse].desc];
    if (!target->has_net_receive || !target->net_receive)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld -> synapse %lld: %s has no NET_RECEIVE", fn,
                       (long long)source, (long long)synapse, target->name);
    if (grow((void **)&net->conns, net->n_conns, &net->cap_conns, sizeof *net->conns) != 0)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    /* its weight vector: NET_RECEIVE's arguments, the weight then 0 (net/events.c) */
    const int nw = sim->model->descs[net->syns[synapse].desc]->n_weights;
    const int64_t w_at = net->n_wvec;
    for (int k = 0; k < (nw > 1 ? nw : 1); ++k) {
        if (grow((void **)&net->wvec, net->n_wvec, &net->cap_wvec, sizeof *net->wvec) != 0)
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
        net->wvec[net->n_wvec++] = k ? 0.0 : weight;
    }
    net->conns[net->n_conns++] = (net_conn){source, synapse, weight, delay, w_at};
    net->dirty = 1;
    return NS_OK;
}

const double *ns_sim_source_spikes(const ns_sim_t *sim, int64_t source, int64_t *count) {
    if (sim && sim->dist) return ns_dist_sim_source_spikes(sim->dist, source, count);
    if (count) *count = 0;
    if (!sim || !sim->net || source < 0 || source >= sim->net->n_sources) return NULL;
    const net_source *s = &sim->net->sources[source];
    if (count) *count = s->n_spikes;
    return s->spikes;
}

int64_t ns_sim_synapses(const ns_sim_t *sim) {
    return !sim ? 0 : sim->dist ? sim->dist->net.n_syns : sim->net ? sim->net->n_syns : 0;
}
int64_t ns_sim_sources(const ns_sim_t *sim) {
    return !sim ? 0 : sim->dist ? sim->dist->net.n_srcs : sim->net ? sim->net->n_sources : 0;
}
int64_t ns_sim_connections(const ns_sim_t *sim) {
    return !sim ? 0 : sim->dist ? sim->dist->net.n_conns : sim->net ? sim->net->n_conns : 0;
}

/* ---------------------------------------------------------------- build */

static int cmp_key(const void *a, const void *b) {
    const int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return (x > y) - (x < y);
}

void ns_net_syn_random(const sim_net *net, const ns_mech_desc *d, int64_t syn, int q, double out[4]) {
    const net_syn *sy = &net->syns[syn];
    ns_mech_random_stream(d, q, sy->cell, syn, out);
    for (int k = 0; q > 0 && k < 4; ++k) {
        const double given = net->params[sy->param_at + d->n_params + 4 * (q - 1) + k];
        if (!isnan(given)) out[k] = given;
    }
}

/* The instances of the block's synapses of catalogue entry `desc`. */
static ns_status point_create(ns_sim_t *sim, const net_block_in *in, int32_t desc, const int64_t *syns, int32_t cnt,
                              const int32_t *lane, net_point *pt) {
    const sim_model *m = sim->model;
    const ns_mech_desc *d = m->descs[desc];
    sim_net *net = sim->net;
    pt->desc = d;
    pt->key = ns_sim_model_key(m, desc);
    ns_status fst = ns_sim_model_ftables_given(m, desc);
    if (fst != NS_OK) return fst;
    const size_t doubles = (size_t)d->n_fields * (size_t)cnt + (size_t)d->n_globals + (size_t)d->table_size + 1;
    pt->store = calloc(doubles, sizeof(double));
    pt->field = malloc((size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *pt->field);
    pt->node_index = malloc((size_t)cnt * sizeof *pt->node_index);
    pt->weight = malloc((size_t)cnt * sizeof *pt->weight);
    if (!pt->store || !pt->field || !pt->node_index || !pt->weight)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %d synapses of a block", (int)cnt);
    for (int f = 0; f < d->n_fields; ++f) pt->field[f] = pt->store + (size_t)f * (size_t)cnt;
    double *globals = pt->store + (size_t)d->n_fields * (size_t)cnt;
    /* the mod file's GLOBALs (a model's global statements name inserted density mechanisms) */
    for (int g = 0; g < d->n_globals; ++g) globals[g] = d->global_defaults[g];
    const sim_shape *s = &sim->shapes[in->shape];
    for (int32_t i = 0; i < cnt; ++i) {
        const net_syn *sy = &net->syns[syns[i]];
        pt->node_index[i] = (in->pos ? in->pos[sy->node] : sy->node) * in->w + lane[i];
        pt->weight[i] = s->stim_scale[sy->node]; /* 1e2 / area, area 100 at zero-area nodes */
        for (int p = 0; p < d->n_params; ++p) pt->field[p][i] = net->params[sy->param_at + p];
        for (int q = 0; q < d->has_random; ++q) {
            double r[4];
            ns_net_syn_random(net, d, syns[i], q, r);
            for (int k = 0; k < 4; ++k) pt->field[d->random_field + 4 * q + k][i] = r[k];
        }
    }
    for (int j = 0; j < d->n_ions; ++j) {
        int32_t ion = -1;
        for (int32_t q = 0; q < m->n_ions; ++q)
            if (strcmp(m->ions[q].name, d->ions[j].name) == 0) ion = q;
        if (ion < 0)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "network: synapse type %s uses the ion %s, which no mechanism of the model uses", d->name,
                           d->ions[j].name);
        double *base = ns_model_block_ion_data(in->mech, ion);
        const int64_t nw = (int64_t)s->n * in->w;
        const int keep = m->ions[ion].read_i;
        pt->ions[j] = (ns_mech_ion_view){base, base + nw, base + 2 * nw, keep ? base + 3 * nw : NULL,
                                         keep ? base + 4 * nw : NULL, NULL};
    }
    ns_status pst = ns_net_point_pointers(sim, in, syns, cnt, pt);
    if (pst != NS_OK) return pst;
    memset(&pt->p, 0, sizeof pt->p);
    pt->p.pointer = (double *const *const *)pt->ptr;
    pt->p.n = cnt;
    pt->p.node_index = pt->node_index;
    pt->p.field = pt->field;
    pt->p.ftable = m->ftables ? m->ftables[desc] : NULL;
    pt->p.global = globals;
    pt->p.table = globals + d->n_globals;
    pt->p.weight = pt->weight;
    pt->p.ion = pt->ions;
    if (in->mech) { /* area/diam in a mechanism: the block's, as its density mechanisms' */
        pt->p.area = ns_model_block_geom(in->mech);
        pt->p.diam = pt->p.area + (int64_t)s->n * in->w;
        pt->p.error = ns_model_block_error(in->mech);
    }
    return NS_OK;
}

static ns_status block_build(ns_sim_t *sim, const net_block_in *in, const int64_t *syn_begin,
                             const int64_t *syn_order, const int64_t *det_begin, const int64_t *det_order, int64_t b,
                             net_block **out) {
    sim_net *net = sim->net;
    const sim_model *m = sim->model;
    net_block *nb = calloc(1, sizeof *nb);
    if (!nb) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    *out = nb;
    /* synapses of the block's cells, by type (key order), then lane, then id */
    int64_t cnt = 0, dets = 0;
    for (int32_t j = 0; j < in->w; ++j) {
        cnt += syn_begin[in->cell[j] + 1] - syn_begin[in->cell[j]];
        dets += det_begin[in->cell[j] + 1] - det_begin[in->cell[j]];
    }
    int32_t *keys = malloc((size_t)(2 * (cnt > 0 ? cnt : 1)) * sizeof *keys); /* (key, desc) pairs */
    int64_t *ids = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *ids);
    int32_t *lane = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *lane);
    ns_status st = keys && ids && lane ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    int32_t n_types = 0;
    /* the distinct types, sorted by key */
    for (int32_t j = 0; j < in->w && st == NS_OK; ++j)
        for (int64_t q = syn_begin[in->cell[j]]; q < syn_begin[in->cell[j] + 1]; ++q) {
            const int32_t desc = net->syns[syn_order[q]].desc;
            int seen = 0;
            for (int32_t t = 0; t < n_types; ++t) seen |= keys[2 * t + 1] == desc;
            if (!seen) {
                keys[2 * n_types] = ns_sim_model_key(m, desc);
                keys[2 * n_types + 1] = desc;
                n_types++;
            }
        }
    if (st == NS_OK) qsort(keys, (size_t)n_types, 2 * sizeof *keys, cmp_key);
    if (st == NS_OK && n_types > 0) {
        nb->points = calloc((size_t)n_types, sizeof *nb->points);
        if (!nb->points) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    }
    for (int32_t t = 0; t < n_types && st == NS_OK; ++t) {
        const int32_t desc = keys[2 * t + 1];
        int32_t c = 0;
        for (int32_t j = 0; j < in->w; ++j)
            for (int64_t q = syn_begin[in->cell[j]]; q < syn_begin[in->cell[j] + 1]; ++q) {
                const int64_t id = syn_order[q];
                if (net->syns[id].desc != desc) continue;
                ids[c] = id;
                lane[c] = j;
                net->syn_block[id] = b;
                net->syn_slot[id] = t;
                net->syn_inst[id] = c;
                ++c;
            }
        st = point_create(sim, in, desc, ids, c, lane, &nb->points[t]);
        nb->n_points = t + 1;
        nb->points[t].nb = nb;
        nb->points[t].slot = t;
        if (st == NS_OK) st = ns_net_events_attach(net, &nb->points[t], ids, c);
    }
    free(keys);
    free(ids);
    free(lane);
    if (st != NS_OK) return st;
    /* detectors */
    nb->n_det = (int32_t)dets;
    nb->det_source = malloc((size_t)(dets > 0 ? dets : 1) * sizeof *nb->det_source);
    nb->det_at = malloc((size_t)(dets > 0 ? dets : 1) * sizeof *nb->det_at);
    nb->det_thr = malloc((size_t)(dets > 0 ? dets : 1) * sizeof *nb->det_thr);
    nb->det_above = malloc((size_t)(dets > 0 ? dets : 1));
    if (!nb->det_source || !nb->det_at || !nb->det_thr || !nb->det_above)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    int32_t k = 0;
    for (int32_t j = 0; j < in->w; ++j)
        for (int64_t q = det_begin[in->cell[j]]; q < det_begin[in->cell[j] + 1]; ++q, ++k) {
            const net_source *s = &net->sources[det_order[q]];
            nb->det_source[k] = det_order[q];
            nb->det_at[k] = (int64_t)(in->pos ? in->pos[s->node] : s->node) * in->w + j;
            nb->det_thr[k] = s->threshold;
            nb->det_above[k] = 0; /* NEURON's flag starts false: v_init above the threshold is a spike at 0 */
        }
    return NS_OK;
}

/* Counting sort of items by cell: begin[n_cells + 1], order (ascending ids within a cell). */
static ns_status by_cell(int64_t n_cells, int64_t n, const int64_t *cell, int64_t **begin, int64_t **order) {
    *begin = calloc((size_t)n_cells + 1, sizeof **begin);
    *order = malloc((size_t)(n > 0 ? n : 1) * sizeof **order);
    int64_t *fill = malloc((size_t)n_cells * sizeof *fill);
    if (!*begin || !*order || !fill) {
        free(fill);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: index of %lld items", (long long)n);
    }
    for (int64_t k = 0; k < n; ++k)
        if (cell[k] >= 0) (*begin)[cell[k] + 1]++;
    for (int64_t c = 0; c < n_cells; ++c) (*begin)[c + 1] += (*begin)[c];
    memcpy(fill, *begin, (size_t)n_cells * sizeof *fill);
    for (int64_t k = 0; k < n; ++k)
        if (cell[k] >= 0) (*order)[fill[cell[k]]++] = k;
    free(fill);
    return NS_OK;
}

ns_status ns_net_build(ns_sim_t *sim, int64_t n_blocks, const net_block_in *in) {
    sim_net *net = sim->net;
    free_built(net);
    const int64_t nc = sim->n_cells;
    ns_status st = NS_OK;
    int64_t *cells = malloc((size_t)((net->n_syns > net->n_sources ? net->n_syns : net->n_sources) + 1) *
                            sizeof *cells);
    int64_t *syn_begin = NULL, *syn_order = NULL, *det_begin = NULL, *det_order = NULL;
    net->blocks = calloc((size_t)(n_blocks > 0 ? n_blocks : 1), sizeof *net->blocks);
    net->syn_block = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_block);
    net->syn_slot = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_slot);
    net->syn_inst = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_inst);
    net->out_begin = calloc((size_t)net->n_sources + 1, sizeof *net->out_begin);
    net->out_order = malloc((size_t)(net->n_conns + 1) * sizeof *net->out_order);
    net->emit = malloc((size_t)(net->n_sources + 1) * sizeof *net->emit);
    net->snap_src = malloc((size_t)(net->n_ptrs + 1) * sizeof *net->snap_src);
    net->snap_val = malloc((size_t)(net->n_ptrs + 1) * sizeof *net->snap_val);
    net->build_in = in;
    net->build_n = n_blocks;
    if (!cells || !net->blocks || !net->syn_block || !net->syn_slot || !net->syn_inst || !net->out_begin ||
        !net->out_order || !net->emit || !net->snap_src || !net->snap_val)
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld synapses", (long long)net->n_syns);
    if (st == NS_OK) {
        net->n_emit = 0; /* a loop interval visits these, not every detector */
        for (int64_t k = 0; k < net->n_sources; ++k)
            if (net->sources[k].cell < 0 && !net->sources[k].point) net->emit[net->n_emit++] = k;
        net->n_blocks = n_blocks;
        for (int64_t k = 0; k < net->n_syns; ++k) cells[k] = net->syns[k].cell;
        st = by_cell(nc, net->n_syns, cells, &syn_begin, &syn_order);
    }
    if (st == NS_OK) st = ns_net_events_index(net, sim->params.dt);
    if (st == NS_OK) {
        for (int64_t k = 0; k < net->n_sources; ++k) cells[k] = net->sources[k].cell;
        st = by_cell(nc, net->n_sources, cells, &det_begin, &det_order);
    }
    for (int64_t b = 0; b < n_blocks && st == NS_OK; ++b)
        st = block_build(sim, &in[b], syn_begin, syn_order, det_begin, det_order, b, &net->blocks[b]);
    net->build_in = NULL;
    if (st == NS_OK) ns_net_pointer_snapshot(net);
    /* connections by source, in order of creation; the minimum delay */
    if (st == NS_OK) {
        net->min_delay = INFINITY;
        for (int64_t k = 0; k < net->n_conns; ++k) {
            net->out_begin[net->conns[k].source + 1]++;
            if (net->conns[k].delay < net->min_delay) net->min_delay = net->conns[k].delay;
        }
        for (int64_t s = 0; s < net->n_sources; ++s) net->out_begin[s + 1] += net->out_begin[s];
        int64_t *fill = cells; /* reused: n_sources + 1 entries at least */
        memcpy(fill, net->out_begin, (size_t)net->n_sources * sizeof *fill);
        for (int64_t k = 0; k < net->n_conns; ++k) net->out_order[fill[net->conns[k].source]++] = k;
    }
    free(cells);
    free(syn_begin);
    free(syn_order);
    free(det_begin);
    free(det_order);
    if (st != NS_OK) {
        free_built(net);
        return st;
    }
    /* finitialize: the synapses' INITIAL in type order, no spikes, no events */
    for (int64_t b = 0; b < n_blocks; ++b) {
        net_block *nb = net->blocks[b];
        for (int32_t t = 0; t < nb->n_points; ++t) {
            net_point *pt = &nb->points[t];
            pt->p.v = in[b].v;
            pt->p.rhs = pt->p.d = NULL;
            pt->p.t = 0.0;
            pt->p.dt = sim->params.dt;
            pt->p.celsius = sim->params.celsius;
            if (pt->p.n > 0 && pt->desc->hooks[NS_MECH_CONSTRUCTOR]) { /* once per instance: made here */
                pt->p.v = NULL;
                pt->desc->hooks[NS_MECH_CONSTRUCTOR](&pt->p);
                pt->p.v = in[b].v;
            }
            pt->constructed = 1;
        }
        ns_net_hook(nb, NS_MECH_BEFORE_INITIAL, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
        for (int32_t t = 0; t < nb->n_points; ++t)
            if (nb->points[t].p.n > 0) nb->points[t].desc->init(&nb->points[t].p);
        ns_net_hook(nb, NS_MECH_AFTER_INITIAL, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
        ns_net_hook(nb, NS_MECH_BEFORE_BREAKPOINT, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
        ns_net_hook(nb, NS_MECH_BEFORE_STEP, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
    }
    ns_net_events_init(sim); /* the connections' NET_RECEIVE INITIAL */
    for (int64_t s = 0; s < net->n_sources; ++s) {
        net->sources[s].n_spikes = 0;
        net->sources[s].cursor = 0;
        if (net->sources[s].poisson) ns_net_poisson_reset(&net->sources[s]);
    }
    /* NEURON's first check_thresh, at t = 0 (v = v_init) */
    for (int64_t b = 0; b < n_blocks; ++b)
        if (ns_net_detect(net->blocks[b], in[b].v, 0.0) != 0) {
            free_built(net);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: spikes at t = 0");
        }
    net->seq = 0;
    net->dirty = 0;
    net->device_fan = 0;
    net->n_ext = net->n_fan = 0;
    return NS_OK;
}

ns_status ns_net_build_device(ns_sim_t *sim) {
    const ns_status st = ns_net_build(sim, 0, NULL);
    if (st == NS_OK) sim->net->device_fan = 1;
    return st;
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
    if (grow((void **)&nb->heap, nb->n_heap, &nb->cap_heap, sizeof *nb->heap) != 0) return -1;
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
    pt->p.v = v;
    pt->p.rhs = rhs;
    pt->p.d = d;
    pt->p.t = t;
    pt->p.dt = dt;
    pt->p.celsius = celsius;
    pt->desc->current(&pt->p);
}

void ns_net_states(net_block *nb, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < nb->n_points; ++k) {
        net_point *pt = &nb->points[k];
        pt->p.v = v;
        pt->p.rhs = pt->p.d = NULL;
        pt->p.t = t;
        pt->p.dt = dt;
        pt->p.celsius = celsius;
        pt->desc->state(&pt->p);
    }
}

void ns_net_hook(net_block *nb, int h, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < nb->n_points; ++k) {
        net_point *pt = &nb->points[k];
        if (pt->p.n == 0 || !pt->desc->hooks[h]) continue;
        pt->p.v = v;
        pt->p.rhs = pt->p.d = NULL;
        pt->p.t = t;
        pt->p.dt = dt;
        pt->p.celsius = celsius;
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
            if (grow((void **)&nb->out, nb->n_out, &nb->cap_out, sizeof *nb->out) != 0) return -1;
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
    if (grow((void **)&s->spikes, s->n_spikes, &s->cap_spikes, sizeof *s->spikes) != 0) return -1;
    s->spikes[s->n_spikes++] = t;
    return 0;
}

/* The events of one spike of source `src` at time t: into the block queues,
 * or for a device loop onto the list it fans out (the same numbering). */
static int fan_out(sim_net *net, int64_t src, double t) {
    if (net->device_fan) {
        if (net->out_begin[src] == net->out_begin[src + 1]) return 0;
        if (grow((void **)&net->fan, net->n_fan, &net->cap_fan, sizeof *net->fan) != 0) return -1;
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
static ns_status exchange(sim_net *net) {
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
static ns_status emit_trains(sim_net *net, double upto) {
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

ns_status ns_sim_set_exchange(ns_sim_t *sim, ns_net_exchange_fn fn, void *context, double min_delay) {
    sim_net *net = NULL;
    ns_status st = net_of(sim, "ns_sim_set_exchange", &net);
    if (st != NS_OK) return st;
    if (!(min_delay > 0.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_set_exchange: minimum delay %g ms", min_delay);
    net->exchange_fn = fn;
    net->exchange_context = context;
    net->exchange_min_delay = min_delay;
    net->dirty = 1;
    return NS_OK;
}

void ns_net_loop_begin(ns_sim_t *sim, int64_t steps, net_loop *L) {
    sim_net *net = sim->net;
    double min_delay = net->exchange_fn ? net->exchange_min_delay : net->n_conns > 0 ? net->min_delay : INFINITY;
    /* a net_event's spike is at a delivered event's time, up to dt/2 before the
     * interval's start (a detector's at a step's end): the interval shorter by
     * dt/2 keeps its events in a later interval (net/events.c) */
    if (net->has_points) min_delay -= .5 * sim->params.dt;
    L->steps = steps;
    L->interval = ns_net_interval(min_delay, sim->params.dt, steps);
    if (net->n_snap > 0 && L->interval > 1) L->interval = 1; /* POINTERs into other blocks: a copy per step */
    L->done = 0;
    L->len = 0;
    L->steps0 = sim->steps;
    L->t0 = sim->t;
    L->t1 = sim->t;
}

int64_t ns_net_loop_next(ns_sim_t *sim, net_loop *L, const sim_fault *fault, ns_status *st) {
    sim_net *net = sim->net;
    if (L->len > 0) { /* the interval that ran: its spikes, and the clock to its end */
        if (*st != NS_OK || fault->step != INT64_MAX) return 0;
        *st = ns_net_events_check(net);
        if (*st == NS_OK) *st = exchange(net);
        sim->steps += L->len;
        sim->t = L->t1;
        L->done += L->len;
        L->len = 0;
        if (*st != NS_OK) return 0;
    }
    if (*st != NS_OK || L->done >= L->steps) return 0;
    const int64_t len = L->steps - L->done < L->interval ? L->steps - L->done : L->interval;
    double t1 = sim->t;
    for (int64_t k = 0; k < len; ++k) t1 = ns_sim_half_step(ns_sim_half_step(t1, sim->params.dt), sim->params.dt);
    *st = emit_trains(net, t1);
    if (*st != NS_OK) return 0;
    ns_net_pointer_snapshot(net);
    L->len = len;
    L->t1 = t1;
    return len;
}

ns_status ns_net_advance(ns_sim_t *sim, int64_t steps, sim_fault *fault) {
    if (!sim->ops->advance_net)
        return ns_fail(NS_ERR_UNSUPPORTED, "networks: the %s loop has none", sim->ops->name);
    net_loop L;
    ns_net_loop_begin(sim, steps, &L);
    const ns_status st = sim->ops->advance_net(sim, &L, fault);
    /* the caller (ns_sim_advance) accounts for the steps */
    sim->steps = L.steps0;
    sim->t = L.t0;
    return st;
}
