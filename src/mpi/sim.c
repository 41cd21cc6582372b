/* Distributed simulations: each process simulates the cells LPT gives it
 * (an ns_sim_t of its own), stimuli and recordings go to the owner of their
 * cell, and spikes and traces are gathered to one process (or all) at the
 * end. Without a network the cells do not interact, so a run exchanges
 * nothing but one status agreement per ns_mpi_sim_advance call; with one,
 * the spikes of every interval (sim_net.c). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "mpi/sim_impl.h"

void ns_mpi_sim_destroy(ns_mpi_sim_t *s) {
    if (!s) return;
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    ns_mpi_cells_free(&s->cells);
    ns_sim_destroy(s->local);
    free(s->site_owner);
    free(s->site_local);
    free(s->traces);
    free(s->spike_offset);
    free(s->spike_times);
    ns_mpi_net_free(&s->net);
    free(s);
}

static uint64_t hash_membrane(uint64_t h, const ns_membrane *m) {
    /* field by field: the struct has padding, whose bytes are undefined */
    const double d[] = {m->cm, m->gnabar, m->gkbar, m->gl, m->el, m->ena, m->ek, m->g_pas, m->e_pas};
    const int i[] = {m->hh, m->pas};
    h = ns_mpi_hash(h, d, sizeof d);
    return ns_mpi_hash(h, i, sizeof i);
}

static uint64_t hash_params(uint64_t h, const ns_sim_params *p) {
    for (int r = 0; r < NS_REGION_COUNT; ++r) h = hash_membrane(h, &p->region[r]);
    const double d[] = {p->celsius, p->v_init, p->dt, p->spike_threshold, p->Ra, p->tstop};
    h = ns_mpi_hash(h, d, sizeof d);
    return ns_mpi_hash(h, &p->usetable, sizeof p->usetable);
}

static ns_status check_args(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                            const int32_t *cell_shape, const ns_sim_params *params) {
    if (n_shapes < 1 || !shapes || !params)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_create: %d shapes, params %p", (int)n_shapes,
                       (const void *)params);
    for (int32_t s = 0; s < n_shapes; ++s)
        if (!shapes[s]) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_create: shape %d is NULL", (int)s);
    if (n_cells < 1) return ns_fail(NS_ERR_EMPTY, "ns_mpi_sim_create: %lld cells", (long long)n_cells);
    for (int64_t c = 0; cell_shape && c < n_cells; ++c)
        if (cell_shape[c] < 0 || cell_shape[c] >= n_shapes)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "cell_shape[%lld] = %d is outside [0, %d)", (long long)c,
                           (int)cell_shape[c], (int)n_shapes);
    return ns_sim_params_check(params);
}

ns_status ns_mpi_sim_create(MPI_Comm comm, int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                            const int32_t *cell_shape, const ns_sim_params *params,
                            const ns_sim_options *options, ns_mpi_sim_t **out) {
    if (out) *out = NULL;
    ns_status st = out ? check_args(n_shapes, shapes, n_cells, cell_shape, params)
                       : ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_create: out is NULL");
    const ns_tree_t **trees = NULL;
    if (st == NS_OK && !(trees = malloc((size_t)n_shapes * sizeof *trees)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_mpi_sim_create: %d shapes", (int)n_shapes);
    st = ns_mpi_agree(comm, st);
    if (st != NS_OK) {
        free(trees);
        return st;
    }
    /* Everything that decides the results must be the same everywhere:
     * the trees and membrane areas, the cells, the parameters. */
    uint64_t h = NS_MPI_HASH_INIT;
    for (int32_t s = 0; s < n_shapes; ++s) {
        trees[s] = ns_cell_tree(shapes[s]);
        h = ns_mpi_hash(h, ns_cell_area(shapes[s]), (size_t)ns_tree_size(trees[s]) * sizeof(double));
    }
    h = ns_mpi_hash_trees(h, n_shapes, trees, n_cells, cell_shape);
    h = hash_params(h, params);
    st = ns_mpi_check_same(comm, h, "the population (morphologies, cells, parameters)");
    if (st != NS_OK) {
        free(trees);
        return st;
    }
    ns_mpi_sim_t *s = calloc(1, sizeof *s);
    if (!s) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_mpi_sim_create");
    else {
        s->comm = MPI_COMM_NULL;
        s->params = *params;
        if (MPI_Comm_dup(comm, &s->comm) != MPI_SUCCESS) st = ns_fail(NS_ERR_IO, "MPI_Comm_dup failed");
    }
    if (st == NS_OK) st = ns_mpi_cells_partition(comm, n_shapes, trees, n_cells, cell_shape, &s->cells);
    free(trees);
    if (st == NS_OK && s->cells.n_local > 0)
        st = ns_sim_create(n_shapes, shapes, s->cells.n_local, s->cells.local_shape, params, options, &s->local);
    st = ns_mpi_agree(comm, st);
    if (st != NS_OK) {
        ns_mpi_sim_destroy(s);
        return st;
    }
    *out = s;
    return NS_OK;
}

int64_t ns_mpi_sim_local_cell(const ns_mpi_sim_t *s, int64_t cell) {
    if (!s || cell < 0 || cell >= s->cells.n_cells || s->cells.owner[cell] != s->cells.rank) return -1;
    int64_t lo = 0, hi = s->cells.n_local - 1; /* local_cells is increasing */
    while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (s->cells.local_cells[mid] == cell) return mid;
        if (s->cells.local_cells[mid] < cell) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int32_t ns_mpi_sim_owner(const ns_mpi_sim_t *s, int64_t cell) {
    return s && cell >= 0 && cell < s->cells.n_cells ? s->cells.owner[cell] : -1;
}

ns_status ns_mpi_sim_defer(ns_mpi_sim_t *s, ns_status st) {
    if (st != NS_OK && s->pending == NS_OK) {
        s->pending = st;
        snprintf(s->pending_detail, sizeof s->pending_detail, "%s", ns_last_error());
    }
    return st;
}

static ns_status take_pending(ns_mpi_sim_t *s) {
    if (s->pending == NS_OK) return NS_OK;
    ns_status st = ns_fail(s->pending, "%s", s->pending_detail);
    s->pending = NS_OK;
    return st;
}

static ns_status check_cell(const ns_mpi_sim_t *s, const char *what, int64_t cell) {
    if (cell < 0 || cell >= s->cells.n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld is outside [0, %lld)", what, (long long)cell,
                       (long long)s->cells.n_cells);
    return NS_OK;
}

ns_status ns_mpi_sim_add_iclamp(ns_mpi_sim_t *s, int64_t cell, int32_t compartment, double delay,
                                double duration, double amplitude) {
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_add_iclamp: sim is NULL");
    ns_status st = check_cell(s, "iclamp", cell);
    if (st == NS_OK && s->cells.owner[cell] == s->cells.rank) {
        st = ns_sim_add_iclamp(s->local, ns_mpi_sim_local_cell(s, cell), compartment, delay, duration, amplitude);
        if (st != NS_OK) ns_error_prefix("iclamp");
    }
    return ns_mpi_sim_defer(s, st);
}

ns_status ns_mpi_sim_add_recording(ns_mpi_sim_t *s, int64_t cell, int32_t compartment, int32_t *site) {
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_add_recording: sim is NULL");
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
    const int owner = st == NS_OK ? s->cells.owner[cell] : -1;
    if (st == NS_OK && owner == s->cells.rank)
        st = ns_sim_add_recording(s->local, ns_mpi_sim_local_cell(s, cell), compartment, &local_site);
    if (st == NS_OK) {
        /* every process numbers the site, owner or not */
        s->site_owner[s->n_sites] = owner;
        s->site_local[s->n_sites] = local_site;
        if (site) *site = s->n_sites;
        s->n_sites++;
    }
    return ns_mpi_sim_defer(s, st);
}

ns_status ns_mpi_sim_init(ns_mpi_sim_t *s) {
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_init: sim is NULL");
    ns_status st = ns_mpi_agree(s->comm, take_pending(s));
    if (st == NS_OK) st = ns_mpi_net_init(s);
    if (st == NS_OK && s->local) st = ns_sim_init(s->local);
    s->gathered = 0;
    s->wall_ms = 0.0;
    st = ns_mpi_agree(s->comm, st);
    if (st == NS_OK) s->net.dirty = 0;
    else s->net.on = 0; /* the same on every process: no exchange set up halfway */
    return st;
}

ns_status ns_mpi_sim_advance(ns_mpi_sim_t *s, int64_t steps) {
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_advance: sim is NULL");
    const double t0 = MPI_Wtime();
    ns_status st = take_pending(s);
    if (st == NS_OK && s->net.dirty)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_advance: synapses, sources or connections changed since "
                                              "ns_mpi_sim_init: call it (they take effect there)");
    const int64_t intervals = ns_mpi_net_begin(s, steps);
    if (st == NS_OK && s->local) {
        st = ns_sim_advance(s->local, steps);
        /* A NaN names a local cell: say which global cell it is (a failure
         * that an exchange brought from another process names its own). */
        if (st != NS_OK && !s->net.failed) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "(cell numbers local to rank %d)", s->cells.rank);
            ns_error_prefix(prefix);
        }
    }
    if (st == NS_OK && !s->local && steps < 0)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_advance: steps = %lld", (long long)steps);
    st = ns_mpi_net_end(s, intervals, st);
    s->gathered = 0;
    st = ns_mpi_agree(s->comm, st);
    s->wall_ms += (MPI_Wtime() - t0) * 1e3;
    return st;
}

/* Gather int64 or double blocks of varying length per rank (root < 0: to
 * all). counts/displs are in elements. */
static int gatherv(const void *send, int n, void *recv, const int *counts, const int *displs, MPI_Datatype type,
                   int root, MPI_Comm comm) {
    return root < 0 ? MPI_Allgatherv(send, n, type, recv, counts, displs, type, comm)
                    : MPI_Gatherv(send, n, type, recv, counts, displs, type, root, comm);
}

static ns_status counts_of(const int64_t *len, int size, int *counts, int *displs, int64_t *total) {
    *total = 0;
    for (int r = 0; r < size; ++r) {
        if (len[r] > INT_MAX || *total + len[r] > INT_MAX)
            return ns_fail(NS_ERR_SIZE, "gather: %lld values from rank %d exceed MPI's int counts",
                           (long long)len[r], r);
        counts[r] = (int)len[r];
        displs[r] = (int)*total;
        *total += len[r];
    }
    return NS_OK;
}

/* Traces: every process sends its samples x local-sites block; receivers
 * place column j of rank r's block at its global site. */
static ns_status gather_traces(ns_mpi_sim_t *s, int root, int receiver, int *counts, int *displs,
                               int64_t *len) {
    const int size = s->cells.size;
    int64_t samples = 0, all_samples = 0;
    int32_t local_sites = 0;
    const double *tr = s->local ? ns_sim_traces(s->local, &samples, &local_sites) : NULL;
    if (MPI_Allreduce(&samples, &all_samples, 1, MPI_INT64_T, MPI_MAX, s->comm) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "MPI_Allreduce of the sample count failed");
    int32_t *sites_of = calloc((size_t)size, sizeof *sites_of), *next = calloc((size_t)size, sizeof *next);
    double *buf = NULL;
    int64_t total = 0;
    ns_status st = sites_of && next ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "trace gather");
    for (int32_t k = 0; st == NS_OK && k < s->n_sites; ++k) sites_of[s->site_owner[k]]++;
    for (int r = 0; st == NS_OK && r < size; ++r) len[r] = all_samples * sites_of[r];
    if (st == NS_OK) st = counts_of(len, size, counts, displs, &total);
    free(s->traces);
    s->traces = NULL;
    if (st == NS_OK && receiver) {
        buf = malloc((size_t)(total > 0 ? total : 1) * sizeof *buf);
        s->traces = malloc((size_t)(all_samples * s->n_sites > 0 ? all_samples * s->n_sites : 1) * sizeof *s->traces);
        if (!buf || !s->traces) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "traces: %lld samples x %d sites",
                                             (long long)all_samples, (int)s->n_sites);
    }
    st = ns_mpi_agree(s->comm, st);
    if (st == NS_OK) {
        static const double none = 0.0;
        if (gatherv(tr ? tr : &none, counts[s->cells.rank], buf, counts, displs, MPI_DOUBLE, root, s->comm) !=
            MPI_SUCCESS)
            st = ns_fail(NS_ERR_IO, "MPI gather of the traces failed");
    }
    if (st == NS_OK && receiver) {
        /* The receiver may not own a site: the owner numbered its sites in
         * call order, which is the global order restricted to its sites. */
        for (int32_t k = 0; k < s->n_sites; ++k) {
            const int r = s->site_owner[k];
            const int32_t j = next[r]++, w = sites_of[r];
            for (int64_t q = 0; q < all_samples; ++q)
                s->traces[q * s->n_sites + k] = buf[displs[r] + q * w + j];
        }
        s->samples = all_samples;
    }
    free(next);
    free(sites_of);
    free(buf);
    return st;
}

ns_status ns_mpi_gather_lists(ns_mpi_sim_t *s, int root, int receiver, int *counts, int *displs, int64_t *len,
                              int64_t n_items, ns_mpi_holder_fn holder, ns_mpi_list_fn list, int64_t **offset,
                              double **values) {
    const ns_mpi_cells *c = &s->cells;
    const int size = c->size;
    int64_t n_held = 0;
    for (int64_t g = 0; g < n_items; ++g) n_held += holder(s, g) == c->rank;
    int64_t *mine = malloc((size_t)(n_held > 0 ? n_held : 1) * sizeof *mine);
    int64_t *all_counts = NULL;
    double *vals = NULL, *all_vals = NULL;
    int64_t n_mine = 0, total = 0;
    /* Everything that can fail locally is allocated before the first
     * agreement, so that no process skips a collective the others enter. */
    int64_t *spr = calloc((size_t)size, sizeof *spr);
    int64_t *item_cursor = calloc((size_t)size, sizeof *item_cursor);
    int64_t *val_cursor = calloc((size_t)size, sizeof *val_cursor);
    int *tcounts = malloc((size_t)size * sizeof *tcounts), *tdispls = malloc((size_t)size * sizeof *tdispls);
    ns_status st = mine && spr && tcounts && tdispls && item_cursor && val_cursor
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "gather of %lld lists", (long long)n_items);
    /* the items this process holds, in increasing global number */
    for (int64_t g = 0, k = 0; st == NS_OK && g < n_items; ++g)
        if (holder(s, g) == c->rank) {
            list(s, g, &mine[k]);
            n_mine += mine[k++];
        }
    if (st == NS_OK && !(vals = malloc((size_t)(n_mine > 0 ? n_mine : 1) * sizeof *vals)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%lld values", (long long)n_mine);
    for (int64_t g = 0, o = 0; st == NS_OK && g < n_items; ++g)
        if (holder(s, g) == c->rank) {
            int64_t n = 0;
            const double *t = list(s, g, &n);
            if (n) memcpy(vals + o, t, (size_t)n * sizeof *vals);
            o += n;
        }
    /* 1. the length of every item's list, in each rank's item order */
    for (int r = 0; r < size; ++r) len[r] = 0;
    for (int64_t g = 0; g < n_items; ++g) len[holder(s, g)]++;
    if (st == NS_OK) st = counts_of(len, size, counts, displs, &total);
    if (st == NS_OK && receiver && !(all_counts = malloc((size_t)(n_items > 0 ? n_items : 1) * sizeof *all_counts)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "list lengths of %lld items", (long long)n_items);
    st = ns_mpi_agree(s->comm, st);
    if (st == NS_OK && gatherv(mine, (int)n_held, all_counts, counts, displs, MPI_INT64_T, root, s->comm) !=
                           MPI_SUCCESS)
        st = ns_fail(NS_ERR_IO, "MPI gather of the list lengths failed");
    /* 2. the values, which are as many as the lengths say */
    int64_t n_values = 0;
    /* senders know only their own total: share the per-rank totals */
    if (st == NS_OK && MPI_Allgather(&n_mine, 1, MPI_INT64_T, spr, 1, MPI_INT64_T, s->comm) != MPI_SUCCESS)
        st = ns_fail(NS_ERR_IO, "MPI_Allgather of list totals failed");
    for (int r = 0; st == NS_OK && r < size; ++r) len[r] = spr[r], n_values += spr[r];
    int64_t tt = 0;
    if (st == NS_OK) st = counts_of(len, size, tcounts, tdispls, &tt);
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
    st = ns_mpi_agree(s->comm, st);
    if (st == NS_OK && gatherv(vals, (int)n_mine, all_vals, tcounts, tdispls, MPI_DOUBLE, root, s->comm) !=
                           MPI_SUCCESS)
        st = ns_fail(NS_ERR_IO, "MPI gather of the lists failed");
    if (st == NS_OK && receiver) {
        /* global offsets, then each item's values from its holder's block */
        (*offset)[0] = 0;
        for (int64_t g = 0; g < n_items; ++g) {
            const int r = holder(s, g);
            const int64_t n = all_counts[displs[r] + item_cursor[r]++];
            memcpy(*values + (*offset)[g], all_vals + tdispls[r] + val_cursor[r], (size_t)n * sizeof(double));
            val_cursor[r] += n;
            (*offset)[g + 1] = (*offset)[g] + n;
        }
    }
    free(item_cursor);
    free(val_cursor);
    free(spr);
    free(tcounts);
    free(tdispls);
    free(mine);
    free(vals);
    free(all_counts);
    free(all_vals);
    return st;
}

/* Every cell's spike times, from its owner. */
static int32_t cell_holder(const ns_mpi_sim_t *s, int64_t cell) { return s->cells.owner[cell]; }
static const double *cell_spikes(const ns_mpi_sim_t *s, int64_t cell, int64_t *n) {
    return ns_sim_spikes(s->local, ns_mpi_sim_local_cell(s, cell), n);
}

ns_status ns_mpi_sim_gather(ns_mpi_sim_t *s, int root) {
    if (!s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_gather: sim is NULL");
    const int size = s->cells.size, rank = s->cells.rank;
    ns_status st = take_pending(s);
    if (st == NS_OK && root >= size)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_sim_gather: root %d is not a rank (%d processes)", root, size);
    int *counts = malloc((size_t)size * sizeof *counts), *displs = malloc((size_t)size * sizeof *displs);
    int64_t *len = malloc((size_t)size * sizeof *len);
    if (st == NS_OK && (!counts || !displs || !len)) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gather counts");
    st = ns_mpi_agree(s->comm, st);
    const int receiver = root < 0 || rank == root;
    s->gathered = 0;
    if (st == NS_OK) st = gather_traces(s, root, receiver, counts, displs, len);
    if (st == NS_OK)
        st = ns_mpi_gather_lists(s, root, receiver, counts, displs, len, s->cells.n_cells, cell_holder, cell_spikes,
                                 &s->spike_offset, &s->spike_times);
    if (st == NS_OK) st = ns_mpi_net_gather(s, root, receiver, counts, displs, len);
    free(counts);
    free(displs);
    free(len);
    if (st == NS_OK) s->gathered = receiver;
    return st;
}

const double *ns_mpi_sim_traces(const ns_mpi_sim_t *s, int64_t *samples, int32_t *sites) {
    const int ok = s && s->gathered;
    if (samples) *samples = ok ? s->samples : 0;
    if (sites) *sites = ok ? s->n_sites : 0;
    return ok ? s->traces : NULL;
}

const double *ns_mpi_sim_spikes(const ns_mpi_sim_t *s, int64_t cell, int64_t *count) {
    if (!s || !s->gathered || cell < 0 || cell >= s->cells.n_cells) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = s->spike_offset[cell + 1] - s->spike_offset[cell];
    return s->spike_times + s->spike_offset[cell];
}

ns_sim_t *ns_mpi_sim_local(ns_mpi_sim_t *s) { return s ? s->local : NULL; }
int64_t ns_mpi_sim_cells(const ns_mpi_sim_t *s) { return s ? s->cells.n_cells : 0; }
int64_t ns_mpi_sim_compartments(const ns_mpi_sim_t *s) { return s ? s->cells.n_comp : 0; }
int64_t ns_mpi_sim_steps_for(const ns_mpi_sim_t *s, double tstop) {
    /* ns_sim_steps_for's rule, here also on processes without cells */
    if (!s || !(tstop > 0.0)) return 0;
    int64_t steps = 0;
    return ns_sim_count_steps(tstop, s->params.dt, &steps) == NS_OK ? steps : -1;
}
double ns_mpi_sim_elapsed_ms(const ns_mpi_sim_t *s) { return s ? s->wall_ms : 0.0; }
ns_backend ns_mpi_sim_backend(const ns_mpi_sim_t *s) {
    return s && s->local ? ns_sim_backend(s->local) : NS_BACKEND_AUTO;
}
ns_hines_method ns_mpi_sim_method(const ns_mpi_sim_t *s) {
    return s && s->local ? ns_sim_method(s->local) : NS_HINES_AUTO;
}
