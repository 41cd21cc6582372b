/* A simulation's network through the facade (docs/networks.md): the public
 * calls that add synapses, sources and connections to the handle's network
 * (net/net_impl.h's sim_net), the questions about it, and the interval loop
 * that runs the backend for at most the minimum delay and exchanges the
 * spikes between intervals (net/net.c, "The loop"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/network.h"
#include "sim/dist_impl.h"
#include "core/error.h"

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

/* NS_ERR_INVALID_ARGUMENT unless the network has synapse `synapse`. */
static ns_status check_synapse(const sim_net *net, const char *fn, int64_t synapse) {
    if (synapse < 0 || synapse >= net->n_syns)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                       (long long)synapse, (long long)net->n_syns);
    return NS_OK;
}

/* The network of sim, its synapse `synapse` and that one's descriptor; fn: the call, for the errors. */
static ns_status synapse_of(ns_sim_t *sim, const char *fn, int64_t synapse, sim_net **net, net_syn **s,
                            const ns_mech_desc **d) {
    ns_status st = net_of(sim, fn, net);
    if (st == NS_OK) st = check_synapse(*net, fn, synapse);
    if (st != NS_OK) return st;
    *s = &(*net)->syns[synapse];
    *d = sim->model->descs[(*s)->desc];
    return NS_OK;
}

/* names[0 .. n) into list as "a, b, c" (while the next one surely fits); returns its length. */
static size_t name_list(char *list, size_t size, const char *const *names, int n) {
    size_t used = 0;
    list[0] = 0;
    for (int q = 0; q < n && used + 40 < size; ++q)
        used += (size_t)snprintf(list + used, size - used, "%s%s", q ? ", " : "", names[q]);
    return used;
}

ns_status ns_sim_add_synapse(ns_sim_t *sim, int64_t cell, int32_t compartment, const char *mechanism,
                             int64_t *synapse) {
    const char *fn = "ns_sim_add_synapse";
    if (sim && sim->dist) return ns_dist_sim_add_synapse(sim->dist, cell, compartment, mechanism, synapse);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (!mechanism) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: mechanism is NULL", fn);
    st = ns_sim_check_site(sim, "synapse", cell, compartment);
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
    if (ns_net_grow((void **)&net->syns, net->n_syns, &net->cap_syns, sizeof *net->syns) != 0)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    const int n_rand = d->has_random > 1 ? 4 * (d->has_random - 1) : 0; /* RANDOM variables' ids, position */
    while (net->n_params + d->n_params + n_rand > net->cap_params)
        if (ns_net_grow((void **)&net->params, net->cap_params, &net->cap_params, sizeof *net->params) != 0)
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
    net_syn *s = NULL;
    const ns_mech_desc *d = NULL;
    const ns_status st = synapse_of(sim, fn, synapse, &net, &s, &d);
    if (st != NS_OK) return st;
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
    size_t used = name_list(list, sizeof list, d->field_names, d->n_params);
    for (int q = 1; q < d->has_random && used + 60 < sizeof list; ++q) { /* __ran_R_id1: R.id1 .. R.seq */
        const char *f = d->field_names[d->random_field + 4 * q] + 6;
        const int nr = (int)strlen(f) - 4;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%.*s.id1, .id2, .id3, .seq", used ? ", " : "",
                                 nr, f);
    }
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld (%s) has no parameter '%s' (it has: %s)", fn,
                   (long long)synapse, d->name, name, used ? list : "none");
}

/* A POINTER's target: `var` ("v", an ion's variable or a density mechanism's
 * field, ns_sim_get_model_var's names) at compartment `compartment` of `cell`. */
static ns_status pointer_target(const ns_sim_t *sim, const char *fn, int64_t cell, int32_t compartment,
                                const char *var, net_ptr *to) {
    ns_status st = ns_sim_check_site(sim, "pointer target", cell, compartment);
    if (st != NS_OK) return st;
    *to = (net_ptr){cell, compartment, -1, -1, -1, -1};
    if (strcmp(var, "v") == 0) return NS_OK;
    st = ns_sim_model_var_lookup(sim->model, var, &to->mech, &to->field, &to->ion, &to->q);
    if (st != NS_OK) {
        ns_error_prefix(fn);
        return st;
    }
    if (to->mech >= 0 && sim->model->mechs[to->mech].desc->kind != NS_MECH_DENSITY)
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: %s: a point process's variable (only v, ions and density "
                       "mechanisms' fields)", fn, var);
    return NS_OK;
}

ns_status ns_sim_set_pointer(ns_sim_t *sim, int64_t synapse, const char *pointer, int64_t cell, int32_t compartment,
                             const char *var) {
    const char *fn = "ns_sim_set_pointer";
    if (sim && sim->dist) return ns_dist_sim_refuse(fn);
    sim_net *net = NULL;
    net_syn *s = NULL;
    const ns_mech_desc *d = NULL;
    ns_status st = synapse_of(sim, fn, synapse, &net, &s, &d);
    if (st != NS_OK) return st;
    if (!pointer || !var) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: pointer or var is NULL", fn);
    int k = -1;
    for (int q = 0; q < d->n_pointers; ++q)
        if (strcmp(d->pointer_names[q], pointer) == 0) k = q;
    if (k < 0) {
        char list[256];
        const size_t used = name_list(list, sizeof list, d->pointer_names, d->n_pointers);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld (%s) has no POINTER '%s' (it has: %s)", fn,
                       (long long)synapse, d->name, pointer, used ? list : "none");
    }
    net_ptr to;
    st = pointer_target(sim, fn, cell, compartment, var, &to);
    if (st != NS_OK) return st;
    if (s->ptr_at < 0) {
        while (net->n_ptrs + d->n_pointers > net->cap_ptrs)
            if (ns_net_grow((void **)&net->ptrs, net->cap_ptrs, &net->cap_ptrs, sizeof *net->ptrs) != 0)
                return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
        s->ptr_at = net->n_ptrs;
        for (int q = 0; q < d->n_pointers; ++q) net->ptrs[net->n_ptrs + q] = (net_ptr){-1, 0, -1, -1, -1, -1};
        net->n_ptrs += d->n_pointers;
    }
    net->ptrs[s->ptr_at + k] = to;
    net->dirty = 1;
    return NS_OK;
}

/* Model mechanism k and its POINTER q named "POINTER_MECH" (pv_dipole); -1 and the error where none. */
static int32_t model_pointer(const sim_model *m, const char *fn, const char *name, int *q) {
    char list[512];
    size_t used = 0;
    list[0] = 0;
    for (int32_t k = 0; m && k < m->n_mechs; ++k) {
        const ns_mech_desc *d = m->mechs[k].desc;
        const size_t ln = strlen(d->name);
        for (int p = 0; p < d->n_pointers; ++p) {
            const size_t lp = strlen(d->pointer_names[p]);
            if (strlen(name) == lp + 1 + ln && strncmp(name, d->pointer_names[p], lp) == 0 && name[lp] == '_' &&
                strcmp(name + lp + 1, d->name) == 0) {
                *q = p;
                return k;
            }
            if (used + lp + ln + 4 < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s_%s", used ? ", " : "",
                                         d->pointer_names[p], d->name);
        }
    }
    ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: no density mechanism's POINTER '%s' in the model (it has: %s)", fn, name,
            used ? list : "none");
    return -1;
}

ns_status ns_sim_set_model_pointer(ns_sim_t *sim, int64_t cell, int32_t compartment, const char *pointer,
                                   int64_t target_cell, int32_t target_compartment, const char *var) {
    const char *fn = "ns_sim_set_model_pointer";
    if (sim && sim->dist) return ns_dist_sim_refuse(fn);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    if (!pointer || !var) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: pointer or var is NULL", fn);
    int q = -1;
    const int32_t k = model_pointer(sim->model, fn, pointer, &q);
    if (k < 0) return NS_ERR_INVALID_ARGUMENT;
    st = ns_sim_check_site(sim, fn, cell, compartment);
    if (st != NS_OK) return st;
    const sim_model *m = sim->model;
    if (ns_net_instance_at(&m->per_shape[(size_t)sim->cell_shape[cell] * m->n_mechs + k], compartment) < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is not inserted at compartment %d of cell %lld", fn,
                       m->mechs[k].desc->name, (int)compartment, (long long)cell);
    net_ptr to;
    st = pointer_target(sim, fn, target_cell, target_compartment, var, &to);
    if (st != NS_OK) return st;
    if (to.mech >= 0 &&
        ns_net_instance_at(&m->per_shape[(size_t)sim->cell_shape[target_cell] * m->n_mechs + to.mech],
                           target_compartment) < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: %s is not inserted at compartment %d of cell %lld", fn, var,
                       m->mechs[to.mech].desc->name, (int)target_compartment, (long long)target_cell);
    if (ns_net_grow((void **)&net->dptrs, net->n_dptrs, &net->cap_dptrs, sizeof *net->dptrs) != 0)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    net->dptrs[net->n_dptrs++] = (net_dptr){cell, compartment, k, q, to};
    net->dirty = 1;
    return NS_OK;
}

static net_source *new_source(sim_net *net) {
    if (ns_net_grow((void **)&net->sources, net->n_sources, &net->cap_sources, sizeof *net->sources) != 0) return NULL;
    net_source *s = &net->sources[net->n_sources];
    memset(s, 0, sizeof *s);
    return s;
}

/* The source new_source gave, filled in, counted: its index into *source
 * (unless NULL). */
static ns_status count_source(sim_net *net, int64_t *source) {
    if (source) *source = net->n_sources;
    net->n_sources++;
    net->dirty = 1;
    return NS_OK;
}

ns_status ns_sim_add_detector(ns_sim_t *sim, int64_t cell, int32_t compartment, double threshold, int64_t *source) {
    const char *fn = "ns_sim_add_detector";
    if (sim && sim->dist) return ns_dist_sim_add_detector(sim->dist, cell, compartment, threshold, source);
    sim_net *net = NULL;
    ns_status st = net_of(sim, fn, &net);
    if (st != NS_OK) return st;
    st = ns_sim_check_site(sim, "detector", cell, compartment);
    if (st != NS_OK) return st;
    if (!isfinite(threshold))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: threshold %g mV (cell %lld) is not finite", fn, threshold,
                       (long long)cell);
    net_source *s = new_source(net);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    s->cell = cell;
    s->node = compartment;
    s->threshold = threshold;
    return count_source(net, source);
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
    return count_source(net, source);
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
    return count_source(net, source);
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
    if ((st = check_synapse(net, fn, synapse)) != NS_OK) return st;
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
    if (ns_net_grow((void **)&net->conns, net->n_conns, &net->cap_conns, sizeof *net->conns) != 0)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    /* its weight vector: NET_RECEIVE's arguments, the weight then 0 (net/events.c) */
    const int nw = sim->model->descs[net->syns[synapse].desc]->n_weights;
    const int64_t w_at = net->n_wvec;
    for (int k = 0; k < (nw > 1 ? nw : 1); ++k) {
        if (ns_net_grow((void **)&net->wvec, net->n_wvec, &net->cap_wvec, sizeof *net->wvec) != 0)
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

int64_t ns_sim_source_cell(const ns_sim_t *sim, int64_t source) {
    if (sim && sim->dist) /* a detector's global cell, -1 for a train */
        return source >= 0 && source < sim->dist->net.n_srcs ? sim->dist->net.src_cell[source] : -2;
    if (!sim || !sim->net || source < 0 || source >= sim->net->n_sources) return -2;
    return sim->net->sources[source].cell;
}

/* A point process's net_event as a spike source (NEURON: a NetCon whose
 * source is the point process, e.g. an IntFire1 or a NetStim). */
ns_status ns_sim_add_point_source(ns_sim_t *sim, int64_t synapse, int64_t *source) {
    const char *fn = "ns_sim_add_point_source";
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    if (sim->dist) return ns_dist_sim_refuse(fn);
    sim_net *net = sim->net;
    if (!net || synapse < 0 || synapse >= net->n_syns)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                       (long long)synapse, (long long)(net ? net->n_syns : 0));
    for (int64_t s = 0; s < net->n_sources; ++s)
        if (net->sources[s].point == synapse + 1)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld is already source %lld", fn, (long long)synapse,
                           (long long)s);
    net_source *s = new_source(net);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    s->cell = -1;
    s->node = -1;
    s->point = synapse + 1;
    return count_source(net, source);
}

/* ---------------------------------------------------------------- the interval loop */

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
        if (*st == NS_OK) *st = ns_net_exchange(net);
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
    *st = ns_net_emit_trains(net, t1);
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
