/* Simulations spread over processes (ns_sim_options.dist, docs/mpi.md):
 * each process simulates the cells LPT gives it (an ns_sim_t of its own),
 * stimuli and recordings go to the owner of their cell, and spikes and
 * traces are gathered to one process (or all) by ns_sim_gather. Without a
 * network the cells do not interact, so a run exchanges nothing but one
 * status agreement per ns_sim_advance call; with one, the spikes of every
 * interval (net/dist_net.c). Every communication goes through the
 * distribution's table: this file has no transport of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/population.h"
#include "core/timer.h"
#include "sim/dist_impl.h"
#include "sim/sim_impl.h"

void ns_dist_sim_destroy(sim_dist *s) {
    if (!s) return;
    free(s->owner);
    free(s->cell_shape);
    free(s->global_offset);
    free(s->local_cells);
    ns_sim_destroy(s->local);
    free(s->site_owner);
    free(s->site_local);
    free(s->bytes);
    free(s->displs);
    free(s->one_bytes);
    free(s->one_displs);
    free(s->traces);
    free(s->spike_offset);
    free(s->spike_times);
    ns_dist_net_free(&s->net);
    free(s->sim);
    free(s);
}

ns_status ns_dist_sim_refuse(const char *what) {
    return ns_fail(NS_ERR_UNSUPPORTED, "%s: not on a simulation spread over processes (ns_sim_options.dist); each "
                                       "process's own cells: ns_sim_local",
                   what);
}

static uint64_t hash_membrane(uint64_t h, const ns_membrane *m) {
    /* field by field: the struct has padding, whose bytes are undefined */
    const double d[] = {m->cm, m->gnabar, m->gkbar, m->gl, m->el, m->ena, m->ek, m->g_pas, m->e_pas};
    const int i[] = {m->hh, m->pas};
    h = ns_fnv1a(h, d, sizeof d);
    return ns_fnv1a(h, i, sizeof i);
}

/* Everything that decides the results: the trees and membrane areas, the
 * cells, the parameters. */
static uint64_t hash_population(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                                const int32_t *cell_shape, const ns_sim_params *p) {
    uint64_t h = ns_fnv1a(NS_FNV_OFFSET, &n_shapes, sizeof n_shapes);
    for (int32_t k = 0; k < n_shapes; ++k) {
        const ns_tree_t *t = ns_cell_tree(shapes[k]);
        const int32_t n = ns_tree_size(t);
        h = ns_fnv1a(h, &n, sizeof n);
        h = ns_fnv1a(h, ns_tree_parent(t), (size_t)n * sizeof(int32_t));
        h = ns_fnv1a(h, ns_cell_area(shapes[k]), (size_t)n * sizeof(double));
    }
    h = ns_fnv1a(h, &n_cells, sizeof n_cells);
    const int has_map = cell_shape != NULL;
    h = ns_fnv1a(h, &has_map, sizeof has_map);
    if (cell_shape) h = ns_fnv1a(h, cell_shape, (size_t)n_cells * sizeof *cell_shape);
    for (int r = 0; r < NS_REGION_COUNT; ++r) h = hash_membrane(h, &p->region[r]);
    const double d[] = {p->celsius, p->v_init, p->dt, p->spike_threshold, p->Ra, p->tstop};
    h = ns_fnv1a(h, d, sizeof d);
    return ns_fnv1a(h, &p->usetable, sizeof p->usetable);
}

static ns_status check_args(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                            const int32_t *cell_shape, const ns_sim_params *params) {
    if (!params) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: params is NULL");
    ns_status st = ns_population_check("ns_sim_create", n_shapes, shapes != NULL, n_cells, cell_shape);
    for (int32_t s = 0; st == NS_OK && s < n_shapes; ++s)
        if (!shapes[s]) st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: shape %d is NULL", (int)s);
    return st == NS_OK ? ns_sim_params_check(params) : st;
}

/* The cells given to the ranks by ns_partition_cells (local: no
 * communication; every process computes the same). */
static ns_status partition(sim_dist *s, int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                           const int32_t *cell_shape, int32_t **local_shape) {
    const size_t n = (size_t)n_cells, r = (size_t)s->size;
    int64_t *shape_size = malloc((size_t)n_shapes * sizeof *shape_size);
    s->cell_shape = malloc(n * sizeof *s->cell_shape);
    s->bytes = malloc(r * sizeof *s->bytes);
    s->displs = malloc(r * sizeof *s->displs);
    s->one_bytes = malloc(r * sizeof *s->one_bytes);
    s->one_displs = malloc(r * sizeof *s->one_displs);
    ns_status st = shape_size && s->cell_shape && s->bytes && s->displs && s->one_bytes && s->one_displs
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "partition of %lld cells", (long long)n_cells);
    ns_cells_partition part;
    memset(&part, 0, sizeof part);
    if (st == NS_OK) {
        for (int32_t k = 0; k < n_shapes; ++k) shape_size[k] = ns_tree_size(ns_cell_tree(shapes[k]));
        for (int64_t c = 0; c < n_cells; ++c) s->cell_shape[c] = cell_shape ? cell_shape[c] : (int32_t)(c % n_shapes);
        for (int32_t k = 0; k < s->size; ++k) s->one_bytes[k] = sizeof(int64_t), s->one_displs[k] = k * 8;
        st = ns_partition_cells(n_shapes, shape_size, n_cells, cell_shape, s->size, s->rank, &part);
    }
    free(shape_size);
    if (st == NS_OK) { /* the handle takes over the partition's arrays */
        s->n_cells = n_cells;
        s->n_comp = part.n_comp;
        s->owner = part.owner;
        s->global_offset = part.global_offset;
        s->local_cells = part.local_cells;
        s->n_local = part.n_local;
        *local_shape = part.local_shape;
        free(part.part_comp);
    }
    return st;
}

ns_status ns_dist_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                             const int32_t *cell_shape, const ns_sim_params *params, const ns_sim_options *options,
                             ns_sim_t **out) {
    const ns_dist_t *d = options->dist;
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: out is NULL");
    *out = NULL;
    ns_status st = check_args(n_shapes, shapes, n_cells, cell_shape, params);
    st = ns_dist_agree_same(d, st, hash_population(n_shapes, shapes, n_cells, cell_shape, params),
                            "the population (morphologies, cells, parameters)");
    if (st != NS_OK) return st;
    sim_dist *s = calloc(1, sizeof *s);
    ns_sim_t *sim = s ? calloc(1, sizeof *sim) : NULL;
    int32_t *local_shape = NULL;
    if (!sim) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_create");
    else {
        s->sim = sim;
        s->dist = d;
        s->rank = d->rank;
        s->size = d->size;
        s->params = *params;
        st = partition(s, n_shapes, shapes, n_cells, cell_shape, &local_shape);
    }
    if (st == NS_OK && s->n_local > 0) {
        ns_sim_options o = *options;
        o.dist = NULL; /* this process's own cells */
        st = ns_sim_create(n_shapes, shapes, s->n_local, local_shape, params, &o, &s->local);
    }
    free(local_shape);
    st = ns_dist_agree(d, st);
    if (st != NS_OK) {
        ns_dist_sim_destroy(s);
        return st;
    }
    /* The handle the caller holds: global figures; what a process's own
     * simulation decided (backend, method) where it has cells. */
    sim->dist = s;
    sim->params = *params;
    sim->options = *options;
    sim->n_cells = s->n_cells;
    sim->n_comp = s->n_comp;
    sim->device = -1;
    sim->backend = s->local ? ns_sim_backend(s->local) : NS_BACKEND_AUTO;
    sim->method = s->local ? ns_sim_method(s->local) : NS_HINES_AUTO;
    sim->gpu_lanes = ns_sim_gpu_lanes(s->local);
    sim->gpu_mechanisms = s->local ? ns_sim_gpu_mechanisms_of(s->local) : NS_SIM_GPU_MECHANISMS_AUTO;
    *out = sim;
    return NS_OK;
}

int64_t ns_dist_sim_local_cell(const sim_dist *s, int64_t cell) {
    if (!s || cell < 0 || cell >= s->n_cells || s->owner[cell] != s->rank) return -1;
    int64_t lo = 0, hi = s->n_local - 1; /* local_cells is increasing */
    while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (s->local_cells[mid] == cell) return mid;
        if (s->local_cells[mid] < cell) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int32_t ns_dist_sim_spike_compartment(const sim_dist *s, int64_t cell) {
    /* the local simulation has every shape */
    if (!s->local || cell < 0 || cell >= s->n_cells) return -1;
    return s->local->shapes[s->cell_shape[cell]].spike_node;
}

ns_status ns_dist_sim_defer(sim_dist *s, ns_status st) {
    if (st != NS_OK && s->pending == NS_OK) {
        s->pending = st;
        snprintf(s->pending_detail, sizeof s->pending_detail, "%s", ns_last_error());
    }
    return st;
}

static ns_status take_pending(sim_dist *s) {
    if (s->pending == NS_OK) return NS_OK;
    ns_status st = ns_fail(s->pending, "%s", s->pending_detail);
    s->pending = NS_OK;
    return st;
}

static ns_status check_cell(const sim_dist *s, const char *what, int64_t cell) {
    if (cell < 0 || cell >= s->n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld is outside [0, %lld)", what, (long long)cell,
                       (long long)s->n_cells);
    return NS_OK;
}

ns_status ns_dist_sim_add_iclamp(sim_dist *s, int64_t cell, int32_t compartment, double delay, double duration,
                                 double amplitude) {
    ns_status st = check_cell(s, "iclamp", cell);
    if (st == NS_OK && s->owner[cell] == s->rank) {
        st = ns_sim_add_iclamp(s->local, ns_dist_sim_local_cell(s, cell), compartment, delay, duration, amplitude);
        if (st != NS_OK) ns_error_prefix("iclamp");
    }
    return ns_dist_sim_defer(s, st);
}

ns_status ns_dist_sim_add_recording(sim_dist *s, int64_t cell, int32_t compartment, int32_t *site) {
    ns_status st = check_cell(s, "recording", cell);
    int32_t local_site = -1;
    if (st == NS_OK && s->n_sites == s->cap_sites) {
        const int32_t cap = s->cap_sites ? 2 * s->cap_sites : 16;
        int32_t *o = realloc(s->site_owner, (size_t)cap * sizeof *o);
        if (o) s->site_owner = o;
        int32_t *l = o ? realloc(s->site_local, (size_t)cap * sizeof *l) : NULL;
        if (l) s->site_local = l;
        if (!o || !l || s->cap_sites > INT32_MAX / 4) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "recording: %d sites", (int)cap);
        else s->cap_sites = cap;
    }
    const int32_t owner = st == NS_OK ? s->owner[cell] : -1;
    if (st == NS_OK && owner == s->rank)
        st = ns_sim_add_recording(s->local, ns_dist_sim_local_cell(s, cell), compartment, &local_site);
    if (st == NS_OK) {
        /* every process numbers the site, owner or not */
        s->site_owner[s->n_sites] = owner;
        s->site_local[s->n_sites] = local_site;
        if (site) *site = s->n_sites;
        s->n_sites++;
    }
    return ns_dist_sim_defer(s, st);
}

ns_status ns_dist_sim_init(sim_dist *s) {
    ns_status st = ns_dist_agree(s->dist, take_pending(s));
    if (st == NS_OK) st = ns_dist_net_init(s);
    if (st == NS_OK && s->local) st = ns_sim_init(s->local);
    s->gathered = 0;
    s->wall_ms = 0.0;
    st = ns_dist_agree(s->dist, st);
    s->sim->t = 0.0;
    s->sim->steps = 0;
    s->sim->elapsed_ms = 0.0;
    if (st == NS_OK) s->net.dirty = 0;
    else s->net.on = 0; /* the same on every process: no exchange set up halfway */
    return st;
}

ns_status ns_dist_sim_advance(sim_dist *s, int64_t steps) {
    const double t0 = ns_time_ms();
    ns_status st = take_pending(s);
    if (st == NS_OK && s->net.dirty)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_advance: synapses, sources or connections changed since "
                                              "ns_sim_init: call it (they take effect there)");
    const int64_t intervals = ns_dist_net_begin(s, steps);
    if (st == NS_OK && s->local) {
        st = ns_sim_advance(s->local, steps);
        /* A NaN names a local cell: say which global cell it is (a failure
         * that an exchange brought from another process names its own). */
        if (st != NS_OK && !s->net.failed) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "(cell numbers local to rank %d)", (int)s->rank);
            ns_error_prefix(prefix);
        }
    }
    if (st == NS_OK && !s->local && steps < 0)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_advance: steps = %lld", (long long)steps);
    st = ns_dist_net_end(s, intervals, st);
    s->gathered = 0;
    st = ns_dist_agree(s->dist, st);
    s->wall_ms += ns_time_ms() - t0;
    if (st == NS_OK && steps > 0) {
        /* ns_sim_advance's clock, also on processes without cells */
        s->sim->steps += steps;
        for (int64_t k = 0; k < steps; ++k)
            s->sim->t = ns_sim_half_step(ns_sim_half_step(s->sim->t, s->params.dt), s->params.dt);
    }
    s->sim->elapsed_ms = s->wall_ms;
    return st;
}

/* Byte counts and displacements of a gather of per-rank lengths len[r] of
 * `size`-byte elements; *total receives the elements. */
static void set_counts(sim_dist *s, const int64_t *len, size_t size, int64_t *total) {
    *total = 0;
    for (int32_t r = 0; r < s->size; ++r) {
        s->bytes[r] = len[r] * (int64_t)size;
        s->displs[r] = *total * (int64_t)size;
        *total += len[r];
    }
}

/* Traces: every process sends its samples x local-sites block; receivers
 * place column j of rank r's block at its global site. */
static ns_status gather_traces(sim_dist *s, int32_t root, int receiver) {
    const int32_t size = s->size;
    int64_t samples = 0;
    int32_t local_sites = 0;
    const double *tr = s->local ? ns_sim_traces(s->local, &samples, &local_sites) : NULL;
    ns_status st = ns_dist_allreduce(s->dist, &samples, 1, NS_DIST_INT64, NS_DIST_MAX);
    if (st != NS_OK) return st;
    const int64_t all_samples = samples;
    int32_t *sites_of = calloc((size_t)size, sizeof *sites_of), *next = calloc((size_t)size, sizeof *next);
    int64_t *len = calloc((size_t)size, sizeof *len);
    double *buf = NULL;
    int64_t total = 0;
    st = sites_of && next && len ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "trace gather");
    for (int32_t k = 0; st == NS_OK && k < s->n_sites; ++k) sites_of[s->site_owner[k]]++;
    for (int32_t r = 0; st == NS_OK && r < size; ++r) len[r] = all_samples * sites_of[r];
    if (st == NS_OK) set_counts(s, len, sizeof(double), &total);
    free(s->traces);
    s->traces = NULL;
    if (st == NS_OK && receiver) {
        buf = malloc((size_t)(total > 0 ? total : 1) * sizeof *buf);
        s->traces = malloc((size_t)(all_samples * s->n_sites > 0 ? all_samples * s->n_sites : 1) * sizeof *s->traces);
        if (!buf || !s->traces) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "traces: %lld samples x %d sites",
                                             (long long)all_samples, (int)s->n_sites);
    }
    st = ns_dist_agree(s->dist, st);
    if (st == NS_OK) {
        static const double none = 0.0;
        st = ns_dist_gather(s->dist, root, tr ? tr : &none, s->bytes[s->rank], buf, s->bytes, s->displs);
    }
    if (st == NS_OK && receiver) {
        /* The receiver may not own a site: the owner numbered its sites in
         * call order, which is the global order restricted to its sites. */
        for (int32_t k = 0; k < s->n_sites; ++k) {
            const int32_t r = s->site_owner[k];
            const int64_t j = next[r]++, w = sites_of[r], at = s->displs[r] / (int64_t)sizeof(double);
            for (int64_t q = 0; q < all_samples; ++q) s->traces[q * s->n_sites + k] = buf[at + q * w + j];
        }
        s->samples = all_samples;
    }
    free(next);
    free(sites_of);
    free(len);
    free(buf);
    return st;
}

ns_status ns_dist_gather_lists(sim_dist *s, int32_t root, int receiver, int64_t n_items, ns_dist_holder_fn holder,
                               ns_dist_list_fn list, int64_t **offset, double **values) {
    const int32_t size = s->size;
    int64_t n_held = 0;
    for (int64_t g = 0; g < n_items; ++g) n_held += holder(s, g) == s->rank;
    int64_t *mine = malloc((size_t)(n_held > 0 ? n_held : 1) * sizeof *mine);
    int64_t *all_counts = NULL;
    double *vals = NULL, *all_vals = NULL;
    int64_t n_mine = 0, total = 0;
    /* Everything that can fail locally is allocated before the first
     * agreement, so that no process skips a collective the others enter. */
    int64_t *len = calloc((size_t)size, sizeof *len);
    int64_t *item_at = calloc((size_t)size, sizeof *item_at);  /* rank r's items start here in all_counts */
    int64_t *item_cursor = calloc((size_t)size, sizeof *item_cursor);
    int64_t *val_at = calloc((size_t)size, sizeof *val_at);    /* rank r's values start here in all_vals */
    int64_t *val_cursor = calloc((size_t)size, sizeof *val_cursor);
    ns_status st = mine && len && item_at && item_cursor && val_at && val_cursor
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "gather of %lld lists", (long long)n_items);
    /* the items this process holds, in increasing global number */
    for (int64_t g = 0, k = 0; st == NS_OK && g < n_items; ++g)
        if (holder(s, g) == s->rank) {
            list(s, g, &mine[k]);
            n_mine += mine[k++];
        }
    if (st == NS_OK && !(vals = malloc((size_t)(n_mine > 0 ? n_mine : 1) * sizeof *vals)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%lld values", (long long)n_mine);
    for (int64_t g = 0, o = 0; st == NS_OK && g < n_items; ++g)
        if (holder(s, g) == s->rank) {
            int64_t n = 0;
            const double *t = list(s, g, &n);
            if (n) memcpy(vals + o, t, (size_t)n * sizeof *vals);
            o += n;
        }
    /* 1. the length of every item's list, in each rank's item order */
    for (int64_t g = 0; st == NS_OK && g < n_items; ++g) len[holder(s, g)]++;
    if (st == NS_OK) {
        set_counts(s, len, sizeof(int64_t), &total);
        for (int32_t r = 0; r < size; ++r) item_at[r] = s->displs[r] / (int64_t)sizeof(int64_t);
    }
    if (st == NS_OK && receiver && !(all_counts = malloc((size_t)(n_items > 0 ? n_items : 1) * sizeof *all_counts)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "list lengths of %lld items", (long long)n_items);
    st = ns_dist_agree(s->dist, st);
    if (st == NS_OK) st = ns_dist_gather(s->dist, root, mine, s->bytes[s->rank], all_counts, s->bytes, s->displs);
    /* 2. the values, which are as many as the lengths say; senders know
     * only their own total: share the per-rank totals */
    if (st == NS_OK) st = ns_dist_gather(s->dist, -1, &n_mine, sizeof n_mine, len, s->one_bytes, s->one_displs);
    int64_t n_values = 0;
    if (st == NS_OK) {
        set_counts(s, len, sizeof(double), &n_values);
        for (int32_t r = 0; r < size; ++r) val_at[r] = s->displs[r] / (int64_t)sizeof(double);
    }
    if (st == NS_OK && receiver && !(all_vals = malloc((size_t)(n_values > 0 ? n_values : 1) * sizeof *all_vals)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%lld values", (long long)n_values);
    if (st == NS_OK) {
        free(*offset);
        free(*values);
        *values = NULL;
        *offset = receiver ? malloc((size_t)(n_items + 1) * sizeof **offset) : NULL;
        if (receiver && (!*offset || !(*values = malloc((size_t)(n_values > 0 ? n_values : 1) * sizeof(double)))))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%lld values", (long long)n_values);
    }
    st = ns_dist_agree(s->dist, st);
    if (st == NS_OK) st = ns_dist_gather(s->dist, root, vals, s->bytes[s->rank], all_vals, s->bytes, s->displs);
    if (st == NS_OK && receiver) {
        /* global offsets, then each item's values from its holder's block */
        (*offset)[0] = 0;
        for (int64_t g = 0; g < n_items; ++g) {
            const int32_t r = holder(s, g);
            const int64_t n = all_counts[item_at[r] + item_cursor[r]++];
            memcpy(*values + (*offset)[g], all_vals + val_at[r] + val_cursor[r], (size_t)n * sizeof(double));
            val_cursor[r] += n;
            (*offset)[g + 1] = (*offset)[g] + n;
        }
    }
    free(len);
    free(item_at);
    free(item_cursor);
    free(val_at);
    free(val_cursor);
    free(mine);
    free(vals);
    free(all_counts);
    free(all_vals);
    return st;
}

/* Every cell's spike times, from its owner. */
static int32_t cell_holder(const sim_dist *s, int64_t cell) { return s->owner[cell]; }
static const double *cell_spikes(const sim_dist *s, int64_t cell, int64_t *n) {
    return ns_sim_spikes(s->local, ns_dist_sim_local_cell(s, cell), n);
}

ns_status ns_dist_sim_gather(sim_dist *s, int32_t root) {
    ns_status st = take_pending(s);
    if (st == NS_OK && root >= s->size)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_gather: root %d is not a rank (%d processes)", (int)root,
                     (int)s->size);
    st = ns_dist_agree(s->dist, st);
    const int receiver = root < 0 || s->rank == root;
    s->gathered = 0;
    if (st == NS_OK) st = gather_traces(s, root, receiver);
    if (st == NS_OK)
        st = ns_dist_gather_lists(s, root, receiver, s->n_cells, cell_holder, cell_spikes, &s->spike_offset,
                                  &s->spike_times);
    if (st == NS_OK) st = ns_dist_net_gather(s, root, receiver);
    if (st == NS_OK) s->gathered = receiver;
    return st;
}

const double *ns_dist_sim_traces(const sim_dist *s, int64_t *samples, int32_t *sites) {
    const int ok = s->gathered;
    if (samples) *samples = ok ? s->samples : 0;
    if (sites) *sites = ok ? s->n_sites : 0;
    return ok ? s->traces : NULL;
}

const double *ns_dist_sim_spikes(const sim_dist *s, int64_t cell, int64_t *count) {
    if (!s->gathered || cell < 0 || cell >= s->n_cells) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = s->spike_offset[cell + 1] - s->spike_offset[cell];
    return s->spike_times + s->spike_offset[cell];
}

/* ------------------------------------------- public, for any simulation */

ns_status ns_sim_gather(ns_sim_t *sim, int32_t root) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_gather: sim is NULL");
    if (sim->dist) return ns_dist_sim_gather(sim->dist, root);
    if (root > 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_gather: root %d is not a rank (1 process)", (int)root);
    return NS_OK;
}

ns_sim_t *ns_sim_local(ns_sim_t *sim) { return sim && sim->dist ? sim->dist->local : sim; }

int64_t ns_sim_local_cell(const ns_sim_t *sim, int64_t cell) {
    if (sim && sim->dist) return ns_dist_sim_local_cell(sim->dist, cell);
    return sim && cell >= 0 && cell < sim->n_cells ? cell : -1;
}

int32_t ns_sim_cell_owner(const ns_sim_t *sim, int64_t cell) {
    if (!sim || cell < 0 || cell >= sim->n_cells) return -1;
    return sim->dist ? sim->dist->owner[cell] : 0;
}

ns_status ns_sim_network_failure(ns_sim_t *sim, ns_status st, int64_t statement, int64_t item) {
    return sim && sim->dist ? ns_dist_sim_first_failure(sim->dist, st, statement, item) : st;
}
