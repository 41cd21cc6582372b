/* Distribution as a context (ns_sim_options.dist, neurosolve/dist.h) without
 * MPI: a transport written here drives the distributed path of libneurosolve
 * (partition, global numbers, deferred failures, gathers, the network's
 * exchange) in one process, against the same calls on a simulation without
 * a distribution (dist = NULL), which must give the same bits:
 *   - a loopback of one process (rank 0 of 1), hh cells with a clamp each;
 *   - rank 0 of 2 where the other process owns no cell (its part of every
 *     collective is the identity: an allreduce leaves the values, a gather
 *     brings zeros), with a network driven by a train: rasters, soma spikes,
 *     traces;
 * and the decisions: ns_sim_traces only after ns_sim_gather, the calls that
 * need a process's own simulation refused naming ns_sim_local, a network
 * refused by a transport that cannot run from the OpenMP master thread,
 * ns_dist_create's argument checks, ns_sim_gather on one process. The MPI
 * transport is tested over 1, 2 and 4 processes by tests/mpi. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"

/* ------------------------------------------------ a transport in-process */

typedef struct fake {
    int32_t size;  /* 1, or 2: a second process that owns no cell */
    int funneled;
    int released;
    long gathers;
} fake;

static ns_status f_agree(void *c, ns_status local) {
    (void)c;
    return local; /* one process: its own status (the detail is already set) */
}
static ns_status f_check_same(void *c, uint64_t hash, const char *what) {
    (void)c, (void)hash, (void)what;
    return NS_OK; /* the other process passes the same inputs */
}
static ns_status f_allreduce(void *c, void *values, int64_t count, ns_dist_type type, ns_dist_reduce op) {
    (void)c, (void)values, (void)count, (void)type, (void)op;
    return NS_OK; /* the other process's values (none, INFINITY, INT64_MAX, 0 samples) change nothing */
}
static ns_status f_gather(void *c, int32_t root, const void *send, int64_t bytes, void *recv, const int64_t *bytes_of,
                          const int64_t *displs) {
    fake *f = c;
    f->gathers++;
    CHECK(bytes == bytes_of[0]);
    if (root > 0) return NS_OK; /* rank 0 is not the receiver */
    if (bytes) memcpy((char *)recv + displs[0], send, (size_t)bytes);
    for (int32_t r = 1; r < f->size; ++r) /* the idle process: zero counts */
        if (bytes_of[r]) memset((char *)recv + displs[r], 0, (size_t)bytes_of[r]);
    return NS_OK;
}
static int f_funneled(void *c) { return ((fake *)c)->funneled; }
static void f_release(void *c) { ((fake *)c)->released++; }

static const ns_dist_ops FAKE_OPS = {f_agree, f_check_same, f_allreduce, f_gather, f_funneled, f_release};

/* ------------------------------------------------------------ the runs */

typedef struct run {
    double *traces;
    int64_t samples;
    int32_t sites;
    int64_t n_spikes[4];
    double spikes[4][64];
    int64_t n_raster[4];
    double raster[4][64];
    double t;
} run;

static ns_sim_model_t *model_of(const char *text) {
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    if (m) CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "test.model"));
    return m;
}

/* n_cells cylinders of the model `text` on the CPU, spread by `dist`. */
static ns_sim_t *create(const ns_cell_t *cell, int64_t n_cells, const ns_dist_t *dist, const char *text) {
    ns_sim_model_t *model = model_of(text);
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    o.dist = dist;
    ns_sim_t *sim = NULL;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, n_cells, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    return sim;
}

/* n_cells cylinders of hh, a clamp on each but the last (driven through
 * the network when `network`), recorded; a gather where distributed. */
static void simulate(const ns_cell_t *cell, int64_t n_cells, const ns_dist_t *dist, int network, run *out) {
    memset(out, 0, sizeof *out);
    ns_sim_t *sim = create(cell, n_cells, dist, "all.insert = hh\n");
    if (!sim) return;
    CHECK(ns_sim_cells(sim) == n_cells && ns_sim_compartments(sim) == n_cells);
    for (int64_t c = 0; c < n_cells; ++c) {
        if (!network || c + 1 < n_cells) CHECK_OK(ns_sim_add_iclamp(sim, c, 0, 1.0, 30.0, 0.1 + 0.05 * (double)c));
        int32_t site = -1;
        CHECK_OK(ns_sim_add_recording(sim, c, 0, &site));
        CHECK(site == c);
    }
    if (network) {
        /* a train and cell 0's detector drive the last cell's synapse */
        const double times[3] = {2.0, 9.0, 9.0};
        int64_t syn = -1, det = -1, train = -1;
        CHECK_OK(ns_sim_add_synapse(sim, n_cells - 1, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_synapse_set(sim, syn, "tau", 3.0));
        CHECK_OK(ns_sim_add_detector(sim, 0, 0, -20.0, &det));
        CHECK_OK(ns_sim_add_spike_source(sim, times, 3, &train));
        CHECK_OK(ns_sim_connect(sim, train, syn, 0.02, 1.0));
        CHECK_OK(ns_sim_connect(sim, det, syn, 0.05, 2.5));
        CHECK(ns_sim_source_cell(sim, det) == 0 && ns_sim_source_cell(sim, train) == -1);
        CHECK(ns_sim_synapses(sim) == 1 && ns_sim_sources(sim) == 2 && ns_sim_connections(sim) == 2);
    }
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, 40.0);
    CHECK_OK(ns_sim_advance(sim, steps / 3));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 3));
    out->t = ns_sim_time(sim);
    CHECK(ns_sim_step_count(sim) == steps);
    if (dist) {
        int64_t s = -1;
        CHECK(ns_sim_traces(sim, &s, NULL) == NULL && s == 0); /* results come with the gather */
        CHECK(ns_sim_local(sim) != NULL && ns_sim_local(sim) != sim);
        CHECK(ns_sim_local_cell(sim, n_cells - 1) == n_cells - 1 && ns_sim_cell_owner(sim, 0) == 0);
        CHECK(ns_sim_cell_owner(sim, n_cells) == -1);
        double v = 0.0;
        CHECK_FAILS(ns_sim_get_state(sim, 0, &v), NS_ERR_UNSUPPORTED, "ns_sim_local");
        CHECK_FAILS(ns_sim_get_model_var(sim, 0, "m_hh", &v), NS_ERR_UNSUPPORTED, "ns_sim_get_model_var");
        CHECK_FAILS(ns_sim_set_model_var(sim, 0, "m_hh", &v), NS_ERR_UNSUPPORTED, "ns_sim_set_model_var");
        CHECK_FAILS(ns_sim_save_state(sim, "never.ckpt"), NS_ERR_UNSUPPORTED, "ns_sim_save_state");
        CHECK(ns_sim_state_parts(sim) == -1);
        CHECK_FAILS(ns_sim_gather(sim, 2), NS_ERR_INVALID_ARGUMENT, "root 2");
    } else {
        CHECK(ns_sim_local(sim) == sim && ns_sim_local_cell(sim, 0) == 0 && ns_sim_cell_owner(sim, 0) == 0);
        CHECK_FAILS(ns_sim_gather(sim, 1), NS_ERR_INVALID_ARGUMENT, "root 1");
    }
    CHECK_OK(ns_sim_gather(sim, 0));
    const double *tr = ns_sim_traces(sim, &out->samples, &out->sites);
    CHECK(tr && out->samples == steps + 1 && out->sites == n_cells);
    out->traces = malloc((size_t)(out->samples * out->sites) * sizeof *out->traces);
    if (tr && out->traces) memcpy(out->traces, tr, (size_t)(out->samples * out->sites) * sizeof *tr);
    for (int64_t c = 0; c < n_cells && c < 4; ++c) {
        const double *sp = ns_sim_spikes(sim, c, &out->n_spikes[c]);
        for (int64_t k = 0; k < out->n_spikes[c] && k < 64; ++k) out->spikes[c][k] = sp[k];
    }
    for (int64_t q = 0; q < ns_sim_sources(sim) && q < 4; ++q) {
        const double *x = ns_sim_source_spikes(sim, q, &out->n_raster[q]);
        for (int64_t k = 0; k < out->n_raster[q] && k < 64; ++k) out->raster[q][k] = x[k];
    }
    ns_sim_destroy(sim);
}

static void compare(const char *what, const run *a, const run *b, int64_t n_cells) {
    CHECK_MSG(a->samples == b->samples && a->sites == b->sites && a->traces && b->traces &&
                  memcmp(a->traces, b->traces, (size_t)(a->samples * a->sites) * sizeof(double)) == 0,
              "%s: traces differ from the simulation without a distribution", what);
    CHECK_MSG(memcmp(a->n_spikes, b->n_spikes, sizeof a->n_spikes) == 0 &&
                  memcmp(a->spikes, b->spikes, sizeof a->spikes) == 0,
              "%s: soma spikes differ", what);
    CHECK_MSG(memcmp(a->n_raster, b->n_raster, sizeof a->n_raster) == 0 &&
                  memcmp(a->raster, b->raster, sizeof a->raster) == 0,
              "%s: rasters differ", what);
    CHECK(a->t == b->t);
    int64_t total = 0;
    for (int64_t c = 0; c < n_cells; ++c) total += a->n_spikes[c];
    CHECK_MSG(total >= n_cells, "%s: %lld spikes in %lld cells: the comparison needs spikes", what, (long long)total,
              (long long)n_cells);
}

int main(void) {
    ns_cell_t *cell = test_cylinder();
    if (!cell) return check_summary("test_sim_dist");

    /* the table's checks */
    ns_dist_t *d = NULL;
    fake one = {1, 1, 0, 0}, two = {2, 1, 0, 0}, serial = {1, 0, 0, 0};
    ns_dist_ops partial = FAKE_OPS;
    partial.gather = NULL;
    CHECK_FAILS(ns_dist_create(&partial, &one, 0, 1, &d), NS_ERR_INVALID_ARGUMENT, "gather");
    CHECK_FAILS(ns_dist_create(&FAKE_OPS, &one, 1, 1, &d), NS_ERR_INVALID_ARGUMENT, "rank 1 of 1");
    CHECK(d == NULL && ns_dist_rank(NULL) == 0 && ns_dist_size(NULL) == 1);

    /* one process: the distributed path against none */
    run plain, spread;
    simulate(cell, 3, NULL, 0, &plain);
    CHECK_OK(ns_dist_create(&FAKE_OPS, &one, 0, 1, &d));
    if (d) {
        CHECK(ns_dist_rank(d) == 0 && ns_dist_size(d) == 1);
        simulate(cell, 3, d, 0, &spread);
        compare("loopback", &spread, &plain, 3);
        CHECK(one.gathers > 0);
        free(spread.traces);
        ns_dist_destroy(d);
        CHECK(one.released == 1);
    }
    free(plain.traces);

    /* rank 0 of 2, the other process without cells: a network through the exchange */
    simulate(cell, 1, NULL, 1, &plain);
    CHECK_MSG(plain.n_raster[0] >= 1 && plain.n_raster[1] == 3, "network: detector %lld, train %lld spikes",
              (long long)plain.n_raster[0], (long long)plain.n_raster[1]);
    d = NULL;
    CHECK_OK(ns_dist_create(&FAKE_OPS, &two, 0, 2, &d));
    if (d) {
        const long before = two.gathers;
        simulate(cell, 1, d, 1, &spread);
        compare("rank 0 of 2", &spread, &plain, 1);
        /* 40 ms in intervals of the 1 ms minimum delay: a gather of the counts each */
        CHECK_MSG(two.gathers - before >= 40, "%ld gathers: the exchange of every interval goes through the table",
                  two.gathers - before);
        free(spread.traces);
        ns_dist_destroy(d);
    }
    free(plain.traces);

    /* a transport that cannot run from the OpenMP master thread: a network is refused, a run without one runs */
    d = NULL;
    CHECK_OK(ns_dist_create(&FAKE_OPS, &serial, 0, 1, &d));
    if (d) {
        ns_sim_t *sim = create(cell, 2, d, "all.insert = pas\n");
        if (sim) {
            CHECK_OK(ns_sim_advance(sim, 10));
            int64_t syn = -1, train = -1;
            const double t[1] = {0.1};
            CHECK_OK(ns_sim_add_synapse(sim, 1, 0, "ExpSyn", &syn));
            CHECK_OK(ns_sim_add_spike_source(sim, t, 1, &train));
            CHECK_OK(ns_sim_connect(sim, train, syn, 0.01, 1.0));
            CHECK_FAILS(ns_sim_init(sim), NS_ERR_UNSUPPORTED, "MPI_THREAD_FUNNELED");
            /* a failure of a non-collective call comes with the next collective one */
            CHECK_FAILS(ns_sim_add_iclamp(sim, 5, 0, 1.0, 1.0, 1.0), NS_ERR_INVALID_ARGUMENT, "cell 5");
            CHECK_FAILS(ns_sim_gather(sim, 0), NS_ERR_INVALID_ARGUMENT, "cell 5");
            ns_sim_destroy(sim);
        }
        ns_dist_destroy(d);
    }
    ns_cell_destroy(cell);
    return check_summary("test_sim_dist");
}
