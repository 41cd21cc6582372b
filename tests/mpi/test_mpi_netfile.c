/* Network files over MPI processes (docs/networks.md, "MPI"):
 *   1. the .net files of tests/data/neuron_network/ (NEURON 9.0.2's ring,
 *      the ring with short delays, the random network of two morphologies)
 *      applied with ns_network_apply over the cells ns_sim_create
 *      spreads: counts and every source's cell as the single-process
 *      ns_network_apply's; every source's raster, every cell's soma spikes
 *      and a soma trace of every cell identical to the bit with the
 *      single-process run made here; NEURON's raster (same spikes, within
 *      0.05 ms);
 *   2. a file with Poisson sources and a `p=` connect line (drawn when
 *      applied): the same to the bit;
 *   3. bad input: a failure only the owner of a cell can see (an unknown
 *      mechanism) on the last process, and a later one every process sees
 *      (a section the cell does not have): every process returns the first
 *      in the file, with the same message, as the single-process apply
 *      does; a simulation with other cells. */
#ifdef NS_HAVE_MPI
#include "net_ref.h"
#include "neurosolve/mpi.h"
#include "test_mpi_common.h"

static ns_sim_options cpu_options(ns_sim_model_t *model) {
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.method = NS_HINES_OPENMP;
    o.threads = 1;
    o.model = model;
    return o;
}

/* The network's morphologies, discretised as ns_network_create_sim does
 * (default options, the default Ra). */
static int load_shapes(const ns_network_t *net, ns_cell_t **shapes) {
    int ok = 1;
    for (int32_t k = 0; k < ns_network_morphologies(net); ++k) {
        ns_morph_t *m = NULL;
        shapes[k] = NULL;
        CHECK_OK(ns_swc_read(ns_network_morphology(net, k), NULL, &m));
        if (m) CHECK_OK(ns_discretize(m, NULL, &shapes[k]));
        ns_morph_destroy(m);
        ok &= shapes[k] != NULL;
    }
    return ok;
}

/* One run's results: every source's raster, the soma spikes and soma traces. */
typedef struct run {
    int64_t n_src, n_syn, n_conn;
    int64_t *src_cell;
    int32_t *spike_comp; /* each cell's soma(0.5), recorded */
    int64_t *offset; /* sources + 1 */
    double *times;
    int64_t *spike_offset; /* cells + 1 */
    double *spikes;
    double *traces;
    int64_t samples;
    int32_t sites;
} run;

static void run_free(run *r) {
    free(r->src_cell);
    free(r->spike_comp);
    free(r->offset);
    free(r->times);
    free(r->spike_offset);
    free(r->spikes);
    free(r->traces);
    memset(r, 0, sizeof *r);
}

/* Copy per-item lists (items x get(item)) into offset/values. */
typedef const double *(*list_fn)(const void *sim, int64_t item, int64_t *n);
static void copy_lists(const void *sim, int64_t n, list_fn get, int64_t **offset, double **values) {
    *offset = calloc((size_t)n + 1, sizeof **offset);
    if (!*offset) return;
    for (int64_t k = 0; k < n; ++k) {
        int64_t c = 0;
        get(sim, k, &c);
        (*offset)[k + 1] = (*offset)[k] + c;
    }
    *values = malloc((size_t)((*offset)[n] + 1) * sizeof **values);
    for (int64_t k = 0; k < n && *values; ++k) {
        int64_t c = 0;
        const double *x = get(sim, k, &c);
        if (c) memcpy(*values + (*offset)[k], x, (size_t)c * sizeof *x);
    }
}
static const double *sim_src(const void *s, int64_t k, int64_t *n) { return ns_sim_source_spikes(s, k, n); }
static const double *sim_spk(const void *s, int64_t k, int64_t *n) { return ns_sim_spikes(s, k, n); }
static const double *mpi_src(const void *s, int64_t k, int64_t *n) { return ns_sim_source_spikes(s, k, n); }
static const double *mpi_spk(const void *s, int64_t k, int64_t *n) { return ns_sim_spikes(s, k, n); }

/* The single-process run: ns_network_apply on one ns_sim. */
static void run_single(const ns_network_t *net, ns_cell_t *const *shapes, double dt, double tstop,
                       ns_sim_model_t *model, run *out) {
    memset(out, 0, sizeof *out);
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = dt;
    ns_sim_options o = cpu_options(model);
    ns_sim_t *sim = NULL;
    const int64_t n_cells = ns_network_cells(net);
    CHECK_OK(ns_sim_create(ns_network_morphologies(net), (const ns_cell_t *const *)shapes, n_cells,
                           ns_network_cell_morphology(net), &p, &o, &sim));
    if (!sim) return;
    CHECK_OK(ns_network_apply(net, sim, (const ns_cell_t *const *)shapes));
    out->spike_comp = malloc((size_t)n_cells * sizeof *out->spike_comp);
    for (int64_t c = 0; c < n_cells && out->spike_comp; ++c) {
        int32_t site = -1;
        out->spike_comp[c] = ns_sim_spike_compartment(sim, c);
        CHECK_OK(ns_sim_add_recording(sim, c, out->spike_comp[c], &site));
    }
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, tstop);
    CHECK_OK(ns_sim_advance(sim, steps / 3));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 3));
    out->n_src = ns_sim_sources(sim);
    out->n_syn = ns_sim_synapses(sim);
    out->n_conn = ns_sim_connections(sim);
    out->src_cell = malloc((size_t)(out->n_src + 1) * sizeof *out->src_cell);
    for (int64_t q = 0; q < out->n_src && out->src_cell; ++q) out->src_cell[q] = ns_sim_source_cell(sim, q);
    copy_lists(sim, out->n_src, sim_src, &out->offset, &out->times);
    copy_lists(sim, n_cells, sim_spk, &out->spike_offset, &out->spikes);
    const double *tr = ns_sim_traces(sim, &out->samples, &out->sites);
    out->traces = malloc((size_t)(out->samples * out->sites + 1) * sizeof *out->traces);
    if (tr && out->traces) memcpy(out->traces, tr, (size_t)(out->samples * out->sites) * sizeof *tr);
    ns_sim_destroy(sim);
}

/* The same network over the processes (ns_network_apply on a distributed simulation), gathered to
 * every process (root -1) or to rank 0; the receivers compare with one. */
static void run_mpi(const char *name, const ns_network_t *net, ns_cell_t *const *shapes, double dt, double tstop,
                    ns_sim_model_t *model, const run *one, const ref *neuron) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = dt;
    ns_sim_options o = cpu_options(model);
    ns_sim_t *ms = NULL;
    const int64_t n_cells = ns_network_cells(net);
    CHECK_OK(dist_sim_create(ns_network_morphologies(net), (const ns_cell_t *const *)shapes,
                               n_cells, ns_network_cell_morphology(net), &p, &o, &ms));
    if (!ms) return;
    CHECK_OK(ns_network_apply(net, ms, (const ns_cell_t *const *)shapes));
    CHECK_MSG(ns_sim_synapses(ms) == one->n_syn && ns_sim_sources(ms) == one->n_src &&
                  ns_sim_connections(ms) == one->n_conn && one->n_src == ns_network_sources(net) &&
                  one->n_syn == ns_network_synapses(net),
              "%s: %lld synapses, %lld sources, %lld connections; one process %lld, %lld, %lld", name,
              (long long)ns_sim_synapses(ms), (long long)ns_sim_sources(ms),
              (long long)ns_sim_connections(ms), (long long)one->n_syn, (long long)one->n_src,
              (long long)one->n_conn);
    int cells_ok = 1, remote = 0;
    for (int64_t q = 0; q < one->n_src && one->src_cell; ++q) {
        cells_ok &= ns_sim_source_cell(ms, q) == one->src_cell[q];
        /* detectors whose spikes another process needs: counted from the raster's cells */
        if (one->src_cell[q] >= 0) remote += ns_sim_cell_owner(ms, one->src_cell[q]) != 0;
    }
    CHECK_MSG(cells_ok, "%s: a source's cell differs from one process's", name);
    CHECK(ns_sim_source_cell(ms, one->n_src) == -2 && ns_sim_source_cell(ms, -1) == -2);
    CHECK_MSG(mpi_size == 1 || remote > 0, "%s: every detector on rank 0", name);
    for (int64_t c = 0; c < n_cells && one->spike_comp; ++c) {
        int32_t site = -1;
        CHECK_OK(ns_sim_add_recording(ms, c, one->spike_comp[c], &site));
    }
    CHECK_OK(ns_sim_init(ms));
    const int64_t steps = ns_sim_steps_for(ms, tstop);
    CHECK_OK(ns_sim_advance(ms, steps / 3));
    CHECK_OK(ns_sim_advance(ms, steps - steps / 3));
    for (int root = -1; root < (mpi_size > 1 ? 2 : 1); root += mpi_size > 1 ? 2 : 1) {
        CHECK_OK(ns_sim_gather(ms, root));
        if (!(root < 0 || root == mpi_rank)) continue;
        run got;
        memset(&got, 0, sizeof got);
        copy_lists(ms, one->n_src, mpi_src, &got.offset, &got.times);
        copy_lists(ms, n_cells, mpi_spk, &got.spike_offset, &got.spikes);
        int same = got.offset && one->offset && got.times && one->times &&
                   memcmp(got.offset, one->offset, (size_t)(one->n_src + 1) * sizeof *got.offset) == 0 &&
                   memcmp(got.times, one->times, (size_t)one->offset[one->n_src] * sizeof *got.times) == 0;
        CHECK_MSG(same, "%s (root %d): the raster differs from one process's", name, root);
        same = got.spike_offset && one->spike_offset && got.spikes && one->spikes &&
               memcmp(got.spike_offset, one->spike_offset, (size_t)(n_cells + 1) * sizeof *got.spike_offset) == 0 &&
               memcmp(got.spikes, one->spikes, (size_t)one->spike_offset[n_cells] * sizeof *got.spikes) == 0;
        CHECK_MSG(same, "%s (root %d): the soma spikes differ from one process's", name, root);
        int64_t samples = 0;
        int32_t sites = 0;
        const double *tr = ns_sim_traces(ms, &samples, &sites);
        CHECK_MSG(tr && samples == one->samples && sites == one->sites && sites == n_cells && samples == steps + 1 &&
                      memcmp(tr, one->traces, (size_t)(samples * sites) * sizeof *tr) == 0,
                  "%s (root %d): the soma traces differ from one process's", name, root);
        const int64_t total = one->offset ? one->offset[one->n_src] : 0;
        if (neuron && got.offset && got.times) {
            /* NEURON's raster: sources in the reference's numbering (the file's) */
            raster *mr = calloc(1, sizeof *mr);
            CHECK(one->n_src <= MAX_SOURCES);
            for (int64_t q = 0; mr && q < one->n_src && q < MAX_SOURCES; ++q) {
                mr->count[q] = got.offset[q + 1] - got.offset[q];
                for (int64_t k = 0; k < mr->count[q] && k < MAX_PER; ++k)
                    mr->t[q * MAX_PER + k] = got.times[got.offset[q] + k];
            }
            int64_t n_ref = 0;
            const double worst = mr ? check_against_neuron(name, neuron, mr, &n_ref) : 1.0;
            CHECK_MSG(worst <= TOL && n_ref == total, "%s: %lld spikes, NEURON %lld; largest difference %g ms", name,
                      (long long)total, (long long)n_ref, worst);
            if (mpi_rank == 0 && root < 0)
                printf("%s on %d processes: %lld spikes, one process's to the bit, NEURON's within %.3g ms\n", name,
                       mpi_size, (long long)total, worst);
            free(mr);
        } else if (mpi_rank == 0 && root < 0)
            printf("%s on %d processes: %lld spikes, one process's to the bit\n", name, mpi_size, (long long)total);
        run_free(&got);
    }
    ns_sim_destroy(ms);
}

/* A .net file of tests/data/neuron_network/ and NEURON's raster (the .csv beside it). */
static void test_file(const char *stem) {
    char path[1024], csv[1024];
    snprintf(path, sizeof path, "%s/neuron_network/%s.net", NS_TEST_DATA, stem);
    snprintf(csv, sizeof csv, "%s/neuron_network/%s.csv", NS_TEST_DATA, stem);
    ns_network_t *net = NULL;
    ref *neuron = malloc(sizeof *neuron);
    CHECK_OK(ns_network_read(path, &net));
    CHECK_MSG(neuron && read_ref(csv, neuron) == 0, "cannot read %s", csv);
    ns_cell_t *shapes[MAX_SHAPES] = {NULL};
    ns_sim_model_t *model = NULL;
    if (net) CHECK_OK(ns_network_model(net, NULL, &model));
    if (net && model && neuron && ns_network_morphologies(net) <= MAX_SHAPES && load_shapes(net, shapes)) {
        CHECK(ns_network_cells(net) == neuron->n_cells);
        run one;
        run_single(net, shapes, neuron->dt, neuron->tstop, model, &one);
        run_mpi(stem, net, shapes, neuron->dt, neuron->tstop, model, &one, neuron);
        run_free(&one);
    }
    for (int k = 0; k < MAX_SHAPES; ++k) ns_cell_destroy(shapes[k]);
    ns_sim_model_destroy(model);
    ns_network_destroy(net);
    free(neuron);
}

/* Poisson sources (the same times on every process) and a p= line (drawn
 * at apply: the same pairs everywhere), with a ring of detectors. */
static void test_poisson(void) {
    static const char text[] = "cells c 6 ca1_h10.swc\n"
                               "model: all.insert = hh\n"
                               "synapse s c soma ExpSyn tau=3\n"
                               "synapse e c sec:5(0.3) Exp2Syn tau1=0.5 tau2=4\n"
                               "detector d c soma -20\n"
                               "poisson bg 12 150 0 inf 3\n"
                               "train kick 2\n"
                               "connect bg s 0.004 1 p=0.4 seed=9\n"
                               "connect d[0-4] e[1-5] 0.02 1.5\n"
                               "connect d[5] e[0] 0.02 1.5\n"
                               "connect kick e[0] 0.05 1\n";
    ns_network_t *net = NULL;
    CHECK_OK(ns_network_parse(text, strlen(text), "poisson.net", NS_MORPHOLOGIES, &net));
    ns_cell_t *shapes[MAX_SHAPES] = {NULL};
    ns_sim_model_t *model = NULL;
    if (net) CHECK_OK(ns_network_model(net, NULL, &model));
    if (net && model && load_shapes(net, shapes)) {
        run one;
        run_single(net, shapes, 0.025, 60.0, model, &one);
        /* the p= line kept some pairs and not all; the background fired */
        CHECK_MSG(one.n_conn > 6 + 1 + 6 && one.n_conn < 6 + 1 + 72, "%lld connections", (long long)one.n_conn);
        int64_t bg = 0, cells = 0;
        for (int64_t q = 0; one.offset && q < one.n_src; ++q) {
            const int64_t n = one.offset[q + 1] - one.offset[q];
            if (one.src_cell[q] >= 0) cells += n;
            else bg += n;
        }
        CHECK_MSG(bg > 50 && cells > 0, "%lld background spikes, %lld of the cells", (long long)bg, (long long)cells);
        run_mpi("poisson.net", net, shapes, 0.025, 60.0, model, &one, NULL);
        run_free(&one);
    }
    for (int k = 0; k < MAX_SHAPES; ++k) ns_cell_destroy(shapes[k]);
    ns_sim_model_destroy(model);
    ns_network_destroy(net);
}

/* Bad input: every process fails with the first failure in the file. */
static void test_errors(void) {
    ns_network_t *probe = NULL;
    static const char head[] = "cells c 4 ca1_h10.swc\nmodel: all.insert = hh\n";
    CHECK_OK(ns_network_parse(head, strlen(head), "probe.net", NS_MORPHOLOGIES, &probe));
    ns_cell_t *shapes[MAX_SHAPES] = {NULL};
    ns_sim_model_t *model = NULL;
    if (probe) CHECK_OK(ns_network_model(probe, NULL, &model));
    if (!probe || !model || !load_shapes(probe, shapes)) {
        ns_network_destroy(probe);
        ns_sim_model_destroy(model);
        for (int k = 0; k < MAX_SHAPES; ++k) ns_cell_destroy(shapes[k]);
        return;
    }
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o = cpu_options(model);
    ns_sim_t *ms = NULL;
    CHECK_OK(dist_sim_create(1, (const ns_cell_t *const *)shapes, 4, ns_network_cell_morphology(probe),
                               &p, &o, &ms));
    if (!ms) return;
    /* a cell of the last process: its unknown mechanism is seen there only */
    int64_t cell = 0;
    for (int64_t c = 0; c < 4; ++c)
        if (ns_sim_cell_owner(ms, c) == mpi_size - 1) cell = c;
    char text[512];
    snprintf(text, sizeof text,
             "%ssynapse ok c soma ExpSyn\nsynapse bad c[%lld] soma AMPA\ndetector d c[0] sec:999 -20\n", head,
             (long long)cell);
    ns_network_t *net = NULL;
    CHECK_OK(ns_network_parse(text, strlen(text), "bad.net", NS_MORPHOLOGIES, &net));
    /* one process: the mechanism's line (4) */
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, (const ns_cell_t *const *)shapes, 4, ns_network_cell_morphology(probe), &p, &o, &sim));
    if (sim && net) {
        CHECK_FAILS(ns_network_apply(net, sim, (const ns_cell_t *const *)shapes), NS_ERR_INVALID_ARGUMENT,
                    "bad.net:4: ", "no mechanism 'AMPA'");
    }
    ns_sim_destroy(sim);
    if (net) {
        /* the owner's message names the synapse and cell in global numbers (then its own cell number) */
        char rank[64], owner[128];
        snprintf(rank, sizeof rank, "rank %d of %d: bad.net:4: ", mpi_size - 1, mpi_size);
        snprintf(owner, sizeof owner, "synapse 4 (global; cell %lld, rank %d's cell", (long long)cell, mpi_size - 1);
        CHECK_FAILS(ns_network_apply(net, ms, (const ns_cell_t *const *)shapes), NS_ERR_INVALID_ARGUMENT, rank,
                    owner, "no mechanism 'AMPA'");
        CHECK_MSG(!strstr(ns_last_error(), "999"), "a later failure reported: %s", ns_last_error());
        CHECK_MSG(same_text_everywhere(ns_last_error()), "the message differs between processes: %s", ns_last_error());
    }
    ns_sim_destroy(ms);
    ns_network_destroy(net);
    /* a failure every process sees: the same message as one process's */
    static const char late[] = "cells c 4 ca1_h10.swc\nmodel: all.insert = hh\nsynapse s c sec:999 ExpSyn\n";
    net = NULL;
    CHECK_OK(ns_network_parse(late, strlen(late), "late.net", NS_MORPHOLOGIES, &net));
    ms = NULL;
    CHECK_OK(dist_sim_create(1, (const ns_cell_t *const *)shapes, 4, ns_network_cell_morphology(probe),
                               &p, &o, &ms));
    if (net && ms) {
        CHECK_FAILS(ns_network_apply(net, ms, (const ns_cell_t *const *)shapes), NS_ERR_INVALID_ARGUMENT,
                    "rank 0 of", "late.net:3: cell 0", "no section 999");
        CHECK(same_text_everywhere(ns_last_error()));
    }
    ns_sim_destroy(ms);
    /* a simulation of other cells: 3, not the file's 4 */
    ms = NULL;
    CHECK_OK(dist_sim_create(1, (const ns_cell_t *const *)shapes, 3, ns_network_cell_morphology(probe),
                               &p, &o, &ms));
    if (net && ms) {
        CHECK_FAILS(ns_network_apply(net, ms, (const ns_cell_t *const *)shapes), NS_ERR_INVALID_ARGUMENT,
                    "late.net: 4 cells, the simulation has 3");
        CHECK(same_text_everywhere(ns_last_error()));
        CHECK(ns_network_apply(net, NULL, (const ns_cell_t *const *)shapes) == NS_ERR_INVALID_ARGUMENT);
    }
    ns_sim_destroy(ms);
    ns_network_destroy(net);
    ns_network_destroy(probe);
    ns_sim_model_destroy(model);
    for (int k = 0; k < MAX_SHAPES; ++k) ns_cell_destroy(shapes[k]);
}

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    (void)build_net, (void)model_of, (void)load_cell; /* net_ref.h's builders: the files build here */
    test_file("ring8_ca1_ko20x-07");
    test_file("ring8_short_delays");
    test_file("random16_ca1");
    test_poisson();
    test_errors();
    return mpi_test_finish("test_mpi_netfile");
}
#else
#include "check.h"
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
