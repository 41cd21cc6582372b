/* Networks across processes (ns_sim_options.dist; docs/networks.md, "MPI"): synapses, sources
 * and connections in global numbers, and the spike exchange of every
 * interval of the loop, over the processes, as NEURON and Arbor do it.
 *
 * Every process makes the same calls. The owner of a cell creates its
 * synapses and detectors in its own simulation; every process with cells
 * holds every train (given times: it emits them itself); a connection is
 * kept only by the owner of its synapse, from the local copy of its source,
 * which for a detector of another process is a proxy: an empty train whose
 * spikes come from the exchange.
 *
 * The exchange (net.c calls it through net/exchange.h after every
 * interval), through the distribution's gather (core/dist_impl.h; MPI:
 * MPI_Allgatherv): the counts of every process's new spikes (a negative
 * count announces a failure, which every process then agrees on), their
 * (time, global source) pairs, sorted by
 * (time, global source) on every process and given back in local numbers,
 * without the sources of which the process has no copy. The local sources
 * are numbered in an order other than the global one (proxies come when a
 * connection needs them), so that sort is the global order; the event
 * sequence numbers follow it, and the connections of a source keep their
 * global order: a block's queue sees its events in the order of one
 * process, for any number of processes, and the results are the same to
 * the bit. Every process runs the same intervals: the minimum delay is the
 * smallest over all processes (an allreduce). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "sim/dist_impl.h"

void ns_dist_net_free(dist_net *x) {
    free(x->syn_cell);
    free(x->syn_local);
    free(x->src_cell);
    free(x->src_local);
    free(x->src_global);
    free(x->counts);
    free(x->recv);
    free(x->raster_offset);
    free(x->raster_times);
    memset(x, 0, sizeof *x);
}

/* Room for one more in each of two int64 arrays of n items (capacity *cap). */
static int grow2(int64_t **a, int64_t **b, int64_t n, int64_t *cap) {
    if (n < *cap) return 0;
    const int64_t c = *cap ? 2 * *cap : 16;
    int64_t *p = realloc(*a, (size_t)c * sizeof *p);
    if (p) *a = p;
    int64_t *q = p ? realloc(*b, (size_t)c * sizeof *q) : NULL;
    if (q) *b = q;
    if (!p || !q) return -1;
    *cap = c;
    return 0;
}

/* Every call's kind and arguments go into the hash that ns_sim_init
 * compares between the processes. */
static void hash_call(dist_net *x, int kind, const double *d, size_t nd, const int64_t *i, size_t ni,
                      const char *text) {
    const int64_t k = kind;
    x->hash = ns_fnv1a(x->hash, &k, sizeof k);
    if (nd) x->hash = ns_fnv1a(x->hash, d, nd * sizeof *d);
    if (ni) x->hash = ns_fnv1a(x->hash, i, ni * sizeof *i);
    if (text) x->hash = ns_fnv1a(x->hash, text, strlen(text) + 1);
    x->dirty = 1;
}

/* The checks every process makes alike: a global cell and a compartment of it. */
static ns_status check_site(const sim_dist *s, const char *fn, int64_t cell, int32_t compartment) {
    if (cell < 0 || cell >= s->n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld is not in the simulation (%lld cells)", fn,
                       (long long)cell, (long long)s->n_cells);
    const int64_t n = s->global_offset[cell + 1] - s->global_offset[cell];
    if (compartment < 0 || compartment >= n)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: compartment %d is outside cell %lld (%lld compartments)", fn,
                       (int)compartment, (long long)cell, (long long)n);
    return NS_OK;
}

/* A failure of the owner's local call names local numbers: say which global ones. */
static void name_global(const sim_dist *s, const char *what, int64_t global, int64_t cell) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s %lld (global; cell %lld, rank %d's cell %lld)", what, (long long)global,
             (long long)cell, s->rank, (long long)ns_dist_sim_local_cell(s, cell));
    ns_error_prefix(prefix);
}

/* A new local source on this process, numbered g globally. */
static ns_status map_local(dist_net *x, int64_t local, int64_t g) {
    while (local >= x->cap_local) {
        const int64_t c = x->cap_local ? 2 * x->cap_local : 16;
        int64_t *p = realloc(x->src_global, (size_t)c * sizeof *p);
        if (!p) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld local sources", (long long)c);
        x->src_global = p;
        x->cap_local = c;
    }
    x->src_global[local] = g;
    if (local >= x->n_local) x->n_local = local + 1;
    x->src_local[g] = local;
    return NS_OK;
}

ns_status ns_dist_sim_add_synapse(sim_dist *s, int64_t cell, int32_t compartment, const char *mechanism,
                                 int64_t *synapse) {
    const char *fn = "ns_sim_add_synapse";
    if (synapse) *synapse = -1;
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    dist_net *x = &s->net;
    ns_status st = check_site(s, fn, cell, compartment);
    if (st == NS_OK && !mechanism) st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: mechanism is NULL", fn);
    if (st == NS_OK && grow2(&x->syn_cell, &x->syn_local, x->n_syns, &x->cap_syns) != 0)
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld synapses", fn, (long long)x->n_syns);
    if (st != NS_OK) return ns_dist_sim_defer(s, st);
    const int64_t g = x->n_syns++, site[2] = {cell, compartment};
    hash_call(x, 1, NULL, 0, site, 2, mechanism);
    x->syn_cell[g] = cell;
    x->syn_local[g] = -1;
    if (s->owner[cell] == s->rank) {
        int64_t id = -1;
        st = ns_sim_add_synapse(s->local, ns_dist_sim_local_cell(s, cell), compartment, mechanism, &id);
        if (st != NS_OK) name_global(s, "synapse", g, cell);
        else x->syn_local[g] = id;
    }
    if (st == NS_OK && synapse) *synapse = g;
    return ns_dist_sim_defer(s, st);
}

ns_status ns_dist_sim_synapse_set(sim_dist *s, int64_t synapse, const char *name, double value) {
    const char *fn = "ns_sim_synapse_set";
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    dist_net *x = &s->net;
    ns_status st = NS_OK;
    if (synapse < 0 || synapse >= x->n_syns)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                     (long long)synapse, (long long)x->n_syns);
    else if (!name)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: name is NULL", fn);
    if (st != NS_OK) return ns_dist_sim_defer(s, st);
    hash_call(x, 2, &value, 1, &synapse, 1, name);
    if (x->syn_local[synapse] >= 0) {
        st = ns_sim_synapse_set(s->local, x->syn_local[synapse], name, value);
        if (st != NS_OK) name_global(s, "synapse", synapse, x->syn_cell[synapse]);
    }
    return ns_dist_sim_defer(s, st);
}

/* A new global source (cell -1: a train); *g receives its number. */
static ns_status new_source(sim_dist *s, const char *fn, int64_t cell, int64_t *g) {
    dist_net *x = &s->net;
    if (grow2(&x->src_cell, &x->src_local, x->n_srcs, &x->cap_srcs) != 0)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld sources", fn, (long long)x->n_srcs);
    *g = x->n_srcs++;
    x->src_cell[*g] = cell;
    x->src_local[*g] = -1;
    return NS_OK;
}

ns_status ns_dist_sim_add_detector(sim_dist *s, int64_t cell, int32_t compartment, double threshold,
                                  int64_t *source) {
    const char *fn = "ns_sim_add_detector";
    if (source) *source = -1;
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    dist_net *x = &s->net;
    ns_status st = check_site(s, fn, cell, compartment);
    if (st == NS_OK && !isfinite(threshold))
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: threshold %g mV (cell %lld) is not finite", fn, threshold,
                     (long long)cell);
    int64_t g = -1;
    if (st == NS_OK) st = new_source(s, fn, cell, &g);
    if (st != NS_OK) return ns_dist_sim_defer(s, st);
    const int64_t site[2] = {cell, compartment};
    hash_call(x, 3, &threshold, 1, site, 2, NULL);
    if (s->owner[cell] == s->rank) {
        int64_t id = -1;
        st = ns_sim_add_detector(s->local, ns_dist_sim_local_cell(s, cell), compartment, threshold, &id);
        if (st != NS_OK) name_global(s, "source", g, cell);
        else st = map_local(x, id, g);
    }
    if (st == NS_OK && source) *source = g;
    return ns_dist_sim_defer(s, st);
}

ns_status ns_dist_sim_add_spike_source(sim_dist *s, const double *times, int64_t count, int64_t *source) {
    const char *fn = "ns_sim_add_spike_source";
    if (source) *source = -1;
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    dist_net *x = &s->net;
    ns_status st = NS_OK;
    if (count < 0 || (count > 0 && !times))
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %lld times%s", fn, (long long)count,
                     count > 0 ? " from a NULL array" : "");
    int64_t g = -1;
    if (st == NS_OK) st = new_source(s, fn, -1, &g);
    if (st != NS_OK) return ns_dist_sim_defer(s, st);
    hash_call(x, 4, times, (size_t)count, &count, 1, NULL);
    /* every process with cells holds the train (the times are checked there) */
    if (s->local) {
        int64_t id = -1;
        st = ns_sim_add_spike_source(s->local, times, count, &id);
        if (st == NS_OK) st = map_local(x, id, g);
    }
    if (st == NS_OK && source) *source = g;
    return ns_dist_sim_defer(s, st);
}

ns_status ns_dist_sim_add_poisson_source(sim_dist *s, double rate_hz, double start, double stop, uint64_t seed,
                                        int64_t *source) {
    const char *fn = "ns_sim_add_poisson_source";
    if (source) *source = -1;
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    dist_net *x = &s->net;
    ns_status st = NS_OK;
    if (!(rate_hz >= 0.0 && rate_hz <= 1e6))
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: rate %g Hz (0 to 1e6 Hz only)", fn, rate_hz);
    else if (!isfinite(start) || start < 0.0 || isnan(stop) || stop < start)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: start %g ms, stop %g ms (0 <= start <= stop, start finite)", fn,
                     start, stop);
    int64_t g = -1;
    if (st == NS_OK) st = new_source(s, fn, -1, &g);
    if (st != NS_OK) return ns_dist_sim_defer(s, st);
    const double args[3] = {rate_hz, start, stop};
    const int64_t sd = (int64_t)seed;
    hash_call(x, 6, args, 3, &sd, 1, NULL);
    /* every process with cells holds the source: the same times from the same seed */
    if (s->local) {
        int64_t id = -1;
        st = ns_sim_add_poisson_source(s->local, rate_hz, start, stop, seed, &id);
        if (st == NS_OK) st = map_local(x, id, g);
    }
    if (st == NS_OK && source) *source = g;
    return ns_dist_sim_defer(s, st);
}

ns_status ns_dist_sim_connect(sim_dist *s, int64_t source, int64_t synapse, double weight, double delay) {
    const char *fn = "ns_sim_connect";
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", fn);
    dist_net *x = &s->net;
    ns_status st = NS_OK;
    if (source < 0 || source >= x->n_srcs)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld does not exist (%lld sources)", fn, (long long)source,
                     (long long)x->n_srcs);
    else if (synapse < 0 || synapse >= x->n_syns)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: synapse %lld does not exist (%lld synapses)", fn,
                     (long long)synapse, (long long)x->n_syns);
    else if (!(delay > 0.0) || !isfinite(delay))
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld -> synapse %lld: delay %g ms must be > 0 and finite",
                     fn, (long long)source, (long long)synapse, delay);
    else if (!isfinite(weight))
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: source %lld -> synapse %lld: weight %g is not finite", fn,
                     (long long)source, (long long)synapse, weight);
    if (st != NS_OK) return ns_dist_sim_defer(s, st);
    const double wd[2] = {weight, delay};
    const int64_t ends[2] = {source, synapse};
    hash_call(x, 5, wd, 2, ends, 2, NULL);
    x->n_conns++;
    const int64_t syn = x->syn_local[synapse];
    if (syn < 0) return NS_OK; /* another process's synapse (or its creation failed here, which is pending) */
    if (x->src_local[source] < 0) {
        /* a detector of another process: its proxy here */
        int64_t id = -1;
        st = ns_sim_add_spike_source(s->local, NULL, 0, &id);
        if (st == NS_OK) st = map_local(x, id, source);
    }
    if (st == NS_OK) st = ns_sim_connect(s->local, x->src_local[source], syn, weight, delay);
    if (st != NS_OK) name_global(s, "connection to synapse", synapse, x->syn_cell[synapse]);
    else if (x->n_kept++ == 0 || delay < x->min_delay)
        x->min_delay = delay;
    return ns_dist_sim_defer(s, st);
}


/* ------------------------------------------------------------ exchange */

static int cmp_spike(const void *a, const void *b) {
    const ns_net_spike *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->source > y->source) - (x->source < y->source);
}

/* Collective: one interval's exchange. local: this process's status (a
 * failure is announced, and every process then agrees on the lowest
 * failing rank's); mine: its n spikes in global source numbers. On
 * success x->recv holds every process's spikes sorted by (time, global
 * source), *n_all of them. The decisions depend only on the counts, which
 * every process has alike, so none leaves the others waiting. */
static ns_status exchange(sim_dist *s, ns_status local, const ns_net_spike *mine, int64_t n, int64_t *n_all) {
    dist_net *x = &s->net;
    const int size = s->size;
    *n_all = 0;
    x->exchanges++;
    const int64_t count = local == NS_OK ? n : -1;
    ns_status st = ns_dist_gather(s->dist, -1, &count, sizeof count, x->counts, s->one_bytes, s->one_displs);
    if (st != NS_OK) return st;
    int64_t total = 0;
    int failed = 0;
    for (int r = 0; r < size; ++r) {
        if (x->counts[r] < 0) failed = 1;
        else total += x->counts[r];
    }
    if (failed) {
        x->failed = 1;
        return ns_dist_agree(s->dist, local);
    }
    if (total > (int64_t)(INT_MAX / sizeof(ns_net_spike))) {
        x->failed = 1; /* the same on every process */
        return ns_fail(NS_ERR_SIZE, "network: %lld spikes in one interval exceed the transport's int counts", (long long)total);
    }
    if (total > x->cap_recv) {
        /* every process grows at the same exchange: agree on it */
        const int64_t cap = total > 2 * x->cap_recv ? total : 2 * x->cap_recv;
        ns_net_spike *p = realloc(x->recv, (size_t)cap * sizeof *p);
        if (p) {
            x->recv = p;
            x->cap_recv = cap;
        }
        st = ns_dist_agree(
            s->dist, p ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld spikes of an interval", (long long)total));
        if (st != NS_OK) {
            x->failed = 1;
            return st;
        }
    }
    int64_t off = 0;
    for (int r = 0; r < size; ++r) {
        s->bytes[r] = x->counts[r] * (int64_t)sizeof(ns_net_spike);
        s->displs[r] = off;
        off += s->bytes[r];
    }
    static const ns_net_spike none = {0.0, 0};
    if (total > 0) {
        st = ns_dist_gather(s->dist, -1, n ? (const void *)mine : (const void *)&none, n * (int64_t)sizeof *mine,
                            x->recv, s->bytes, s->displs);
        if (st != NS_OK) return st;
    }
    if (total > 1) qsort(x->recv, (size_t)total, sizeof *x->recv, cmp_spike);
    *n_all = total;
    return NS_OK;
}

/* The local simulation's exchange (net/exchange.h): local numbers in and out. */
static ns_status exchange_local(void *context, ns_net_spike *mine, int64_t n, const ns_net_spike **all,
                                int64_t *n_all) {
    sim_dist *s = context;
    dist_net *x = &s->net;
    for (int64_t k = 0; k < n; ++k) mine[k].source = x->src_global[mine[k].source];
    int64_t total = 0;
    const ns_status st = exchange(s, NS_OK, mine, n, &total);
    if (st != NS_OK) return st;
    /* the spikes of the sources held here, in the global order */
    int64_t m = 0;
    for (int64_t k = 0; k < total; ++k) {
        const int64_t l = x->src_local[x->recv[k].source];
        if (l >= 0) x->recv[m++] = (ns_net_spike){x->recv[k].t, l};
    }
    *all = x->recv;
    *n_all = m;
    return NS_OK;
}

ns_status ns_dist_net_init(sim_dist *s) {
    dist_net *x = &s->net;
    const int size = s->size;
    ns_status st = ns_dist_check_same(s->dist, x->hash,
                                     "the network (the calls that add synapses, sources and connections, and their "
                                     "arguments)");
    if (st != NS_OK) return st;
    double all = x->n_kept > 0 ? x->min_delay : INFINITY;
    st = ns_dist_allreduce(s->dist, &all, 1, NS_DIST_DOUBLE, NS_DIST_MIN);
    if (st != NS_OK) return st;
    x->agreed_min_delay = all;
    /* the same on every process: the calls are */
    /* on only once everything below succeeded: a failed init leaves no half-set exchange that a
     * later advance would run (it refuses to run anyway: the network is still dirty) */
    x->on = 0;
    if (x->n_syns == 0 && x->n_srcs == 0) return NS_OK;
    /* The CPU loop runs the intervals in one OpenMP region and calls the exchange from its
     * master thread between barriers: the transport must allow that (MPI: MPI_THREAD_FUNNELED). */
    if (!s->dist->ops.funneled(s->dist->context))
        return ns_fail(NS_ERR_UNSUPPORTED, "network: the transport cannot be called from the master thread of an "
                       "OpenMP region (MPI initialised with MPI_Init): networks exchange spikes from the master thread "
                       "of the OpenMP loop: initialise MPI with MPI_Init_thread(..., MPI_THREAD_FUNNELED, ...)");
    if (!x->counts) {
        x->counts = malloc((size_t)size * sizeof *x->counts);
        if (!x->counts) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %d ranks", size);
    }
    st = s->local ? ns_sim_set_exchange(s->local, exchange_local, s, all) : NS_OK;
    x->on = st == NS_OK;
    return st;
}

int64_t ns_dist_net_begin(sim_dist *s, int64_t steps) {
    dist_net *x = &s->net;
    x->exchanges = 0;
    x->failed = 0;
    if (!x->on || steps <= 0) return 0;
    const int64_t len = ns_net_interval(x->agreed_min_delay, s->params.dt, steps);
    return (steps + len - 1) / len;
}

ns_status ns_dist_net_end(sim_dist *s, int64_t intervals, ns_status local) {
    dist_net *x = &s->net;
    /* without cells: every exchange, with no spikes; after a failure here:
     * one, which announces it */
    while (x->exchanges < intervals && !x->failed) {
        int64_t total = 0;
        local = exchange(s, local, NULL, 0, &total);
    }
    return local;
}

/* ------------------------------------------------------------- rasters */

/* A detector's raster from the owner of its cell, a train's from the owner
 * of cell 0 (which has cells, so it holds every train). */
static int32_t source_holder(const sim_dist *s, int64_t g) {
    const int64_t cell = s->net.src_cell[g];
    return s->owner[cell >= 0 ? cell : 0];
}

static const double *source_spikes(const sim_dist *s, int64_t g, int64_t *n) {
    return ns_sim_source_spikes(s->local, s->net.src_local[g], n);
}

ns_status ns_dist_net_gather(sim_dist *s, int32_t root, int receiver) {
    dist_net *x = &s->net;
    if (!x->on) return NS_OK;
    x->n_raster = 0;
    const ns_status st = ns_dist_gather_lists(s, root, receiver, x->n_srcs, source_holder,
                                              source_spikes, &x->raster_offset, &x->raster_times);
    if (st == NS_OK && receiver) x->n_raster = x->n_srcs;
    return st;
}

const double *ns_dist_sim_source_spikes(const sim_dist *s, int64_t source, int64_t *count) {
    if (count) *count = 0;
    if (!s || !s->gathered || !s->net.raster_offset || source < 0 || source >= s->net.n_raster)
        return NULL;
    if (count) *count = s->net.raster_offset[source + 1] - s->net.raster_offset[source];
    return s->net.raster_times + s->net.raster_offset[source];
}

/* ------------------------------------------------------- network files */

ns_status ns_dist_sim_first_failure(sim_dist *s, ns_status st, int64_t statement, int64_t item) {
    /* A process stops at its first failure; the checks that need no cell
     * fail alike everywhere, those of a cell's owner (a mechanism or a
     * parameter name) there only. Every process then reports the failure
     * that comes first in the file (statement, then item), as one process
     * would: the lowest rank that has it (the same message where several do). */
    int64_t first = st == NS_OK ? INT64_MAX : statement;
    ns_status rst = ns_dist_allreduce(s->dist, &first, 1, NS_DIST_INT64, NS_DIST_MIN);
    if (rst != NS_OK) return rst;
    const int here = st != NS_OK && statement == first;
    int64_t first_item = here ? item : INT64_MAX;
    rst = ns_dist_allreduce(s->dist, &first_item, 1, NS_DIST_INT64, NS_DIST_MIN);
    if (rst != NS_OK) return rst;
    return ns_dist_agree(s->dist, here && item == first_item ? st : NS_OK);
}
