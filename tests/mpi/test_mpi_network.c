/* Networks across MPI processes (docs/networks.md, "MPI"):
 *   1. the networks of tests/data/neuron_network/ (a ring of 8 CA1 cells,
 *      the ring with delays of 0.01 to 0.22 ms, a random network of 16 cells
 *      of two morphologies: NEURON 9.0.2's rasters), built with the
 *      ns_sim calls in global numbers over the cells ns_sim_create
 *      spreads: every source's raster, every cell's soma spikes and a soma
 *      trace of every cell identical to the bit with the single-process
 *      ns_sim run made here (on every process), and NEURON's raster (same
 *      spikes, times within 0.05 ms); gathered to every process and to one;
 *   2. more processes than cells (3 passive cells passing a spike on; under
 *      np 4 one process has no cell and takes part in every exchange);
 *   3. bad input: the same status and message on every process, never a
 *      hang: an unknown cell, compartment, synapse or source, a delay <= 0
 *      (at once everywhere, and again at ns_sim_init); an unknown
 *      mechanism (on the owner at once, everywhere at init); arguments that
 *      differ between processes; a run without ns_sim_init after a
 *      change; a NaN on one process in the middle of a run. */
#ifdef NS_HAVE_MPI
#include "net_ref.h"
#include "neurosolve/device.h"
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

/* The reference networks on `backend`: the CPU loop, or the GPU loop (every
 * process on the current device). */
static ns_sim_options options_on(ns_sim_model_t *model, ns_backend backend) {
    ns_sim_options o = cpu_options(model);
    if (backend == NS_BACKEND_CUDA) {
        o.backend = NS_BACKEND_CUDA;
        o.method = NS_HINES_AUTO;
    }
    return o;
}

/* The single-process run of r: its raster, soma spikes and soma traces. */
typedef struct result {
    raster ras;                   /* every source */
    int64_t n_spikes[MAX_ITEMS];  /* soma spikes per cell */
    double spikes[MAX_ITEMS][MAX_PER];
    double *traces;               /* samples x cells */
    int64_t samples;
} result;

static void run_single(const ref *r, ns_cell_t *const *shapes, int32_t *spike_compartment, ns_backend backend,
                       result *out) {
    memset(out, 0, sizeof *out);
    ns_sim_model_t *model = model_of("all.insert = hh\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = r->dt;
    ns_sim_options o = options_on(model, backend);
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(r->n_shapes, (const ns_cell_t *const *)shapes, r->n_cells, r->cell_shape, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    for (int c = 0; c < r->n_cells; ++c) spike_compartment[c] = ns_sim_spike_compartment(sim, c);
    build_net(r, shapes, spike_compartment, sim);
    for (int c = 0; c < r->n_cells; ++c) {
        int32_t site = -1;
        CHECK_OK(ns_sim_add_recording(sim, c, spike_compartment[c], &site));
    }
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, r->tstop);
    CHECK_OK(ns_sim_advance(sim, steps / 3));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 3));
    for (int q = 0; q < r->n_cells + r->n_trains && q < MAX_SOURCES; ++q) {
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, q, &n);
        out->ras.count[q] = n;
        for (int64_t k = 0; k < n && k < MAX_PER; ++k) out->ras.t[q * MAX_PER + k] = x[k];
    }
    for (int c = 0; c < r->n_cells; ++c) {
        int64_t n = 0;
        const double *x = ns_sim_spikes(sim, c, &n);
        out->n_spikes[c] = n;
        for (int64_t k = 0; k < n && k < MAX_PER; ++k) out->spikes[c][k] = x[k];
    }
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &out->samples, &sites);
    out->traces = malloc((size_t)(out->samples * sites) * sizeof *out->traces);
    if (tr && out->traces) memcpy(out->traces, tr, (size_t)(out->samples * sites) * sizeof *tr);
    ns_sim_destroy(sim);
}

static void test_reference(const char *file, ns_backend backend) {
    const char *on = backend == NS_BACKEND_CUDA ? " (GPU loop)" : "";
    char path[1024];
    snprintf(path, sizeof path, "%s/neuron_network/%s", NS_TEST_DATA, file);
    ref *r = malloc(sizeof *r);
    result *single = malloc(sizeof *single);
    if (!r || !single || read_ref(path, r) != 0) {
        CHECK_MSG(0, "cannot read %s", path);
        free(r);
        free(single);
        return;
    }
    ns_cell_t *shapes[MAX_SHAPES] = {NULL};
    int ok = 1;
    for (int k = 0; k < r->n_shapes; ++k) ok &= (shapes[k] = load_cell(r->shape_file[k])) != NULL;
    int32_t spike_compartment[MAX_ITEMS];
    if (ok) run_single(r, shapes, spike_compartment, backend, single);

    ns_sim_model_t *model = model_of("all.insert = hh\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = r->dt;
    ns_sim_options o = options_on(model, backend);
    ns_sim_t *ms = NULL;
    if (ok)
        CHECK_OK(dist_sim_create(r->n_shapes, (const ns_cell_t *const *)shapes, r->n_cells,
                                   r->cell_shape, &p, &o, &ms));
    ns_sim_model_destroy(model);
    if (ms) {
        build_net(r, shapes, spike_compartment, ms);
        CHECK(ns_sim_synapses(ms) == r->n_syns && ns_sim_sources(ms) == r->n_cells + r->n_trains &&
              ns_sim_connections(ms) == r->n_conns);
        /* the spikes cross processes: connections between cells of different owners */
        int remote = 0;
        for (int k = 0; k < r->n_conns; ++k)
            if (r->conn_src[k] < r->n_cells)
                remote += ns_sim_cell_owner(ms, r->conn_src[k]) != ns_sim_cell_owner(ms, r->syn[r->conn_syn[k]].cell);
        CHECK_MSG(mpi_size == 1 || remote > 0, "%s: no connection between processes", file);
        for (int c = 0; c < r->n_cells; ++c) {
            int32_t site = -1;
            CHECK_OK(ns_sim_add_recording(ms, c, spike_compartment[c], &site));
        }
        CHECK_OK(ns_sim_init(ms));
        const int64_t steps = ns_sim_steps_for(ms, r->tstop);
        CHECK_OK(ns_sim_advance(ms, steps / 3));
        CHECK_OK(ns_sim_advance(ms, steps - steps / 3));
        for (int root = -1; root < (mpi_size > 1 ? 2 : 1); root += mpi_size > 1 ? 2 : 1) {
            CHECK_OK(ns_sim_gather(ms, root));
            const int receiver = root < 0 || root == mpi_rank;
            if (!receiver) {
                int64_t n = -1;
                CHECK(ns_sim_source_spikes(ms, 0, &n) == NULL && n == 0);
                continue;
            }
            raster *mr = calloc(1, sizeof *mr);
            if (!mr) break;
            int bits = 1;
            for (int q = 0; q < r->n_cells + r->n_trains && q < MAX_SOURCES; ++q) {
                int64_t n = 0;
                const double *x = ns_sim_source_spikes(ms, q, &n);
                mr->count[q] = n;
                for (int64_t k = 0; k < n && k < MAX_PER; ++k) mr->t[q * MAX_PER + k] = x[k];
            }
            bits &= memcmp(mr->count, single->ras.count, sizeof mr->count) == 0;
            bits &= memcmp(mr->t, single->ras.t, sizeof mr->t) == 0;
            CHECK_MSG(bits, "%s%s (root %d): the raster differs from one process's", file, on, root);
            int64_t total = 0;
            const double worst = check_against_neuron(file, r, mr, &total);
            CHECK_MSG(worst <= 1e-12, "%s: largest difference %g ms", file, worst);
            for (int c = 0; c < r->n_cells; ++c) {
                int64_t n = 0;
                const double *x = ns_sim_spikes(ms, c, &n);
                CHECK_MSG(n == single->n_spikes[c] && (n == 0 || memcmp(x, single->spikes[c], (size_t)n * sizeof *x) == 0),
                          "%s%s: cell %d's soma spikes differ from one process's", file, on, c);
            }
            int64_t samples = 0;
            int32_t sites = 0;
            const double *tr = ns_sim_traces(ms, &samples, &sites);
            CHECK(samples == single->samples && sites == r->n_cells && samples == steps + 1);
            CHECK_MSG(tr && single->traces && samples == single->samples &&
                          memcmp(tr, single->traces, (size_t)(samples * sites) * sizeof *tr) == 0,
                      "%s%s: the soma traces differ from one process's", file, on);
            if (mpi_rank == 0 && root < 0)
                printf("%s%s on %d processes: %lld spikes, the single-process run's to the bit, NEURON's within "
                       "%.3g ms; %d connections between processes\n",
                       file, on, mpi_size, (long long)total, worst, remote);
            free(mr);
        }
    }
    ns_sim_destroy(ms);
    free(single->traces);
    for (int k = 0; k < r->n_shapes; ++k) ns_cell_destroy(shapes[k]);
    free(r);
    free(single);
}

static ns_sim_t *passive_mpi(const ns_cell_t *cell, int64_t n_cells) {
    ns_sim_model_t *model = model_of("all.insert = pas\nall.e_pas = -65\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o = cpu_options(model);
    ns_sim_t *ms = NULL;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(dist_sim_create(1, shapes, n_cells, NULL, &p, &o, &ms));
    ns_sim_model_destroy(model);
    return ms;
}

/* The same passive cells in one ns_sim (the reference run). */
static ns_sim_t *passive_sim(const ns_cell_t *cell, int64_t n_cells) {
    ns_sim_model_t *model = model_of("all.insert = pas\nall.e_pas = -65\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o = cpu_options(model);
    ns_sim_t *sim = NULL;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, n_cells, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    return sim;
}

/* A run's end, one process (ms NULL) or several: a recording at compartment
 * 0 of each of `cells` cells, init, `steps` steps, gather; v at the end per
 * cell, and per source its spike count and first `cap` times. */
static void finish_run(ns_sim_t *sim, ns_sim_t *ms, int cells, int sources, int64_t steps, double *v_end,
                       int64_t *counts, double *times, int cap) {
    for (int c = 0; c < cells; ++c) {
        int32_t site = -1;
        CHECK_OK(ms ? ns_sim_add_recording(ms, c, 0, &site) : ns_sim_add_recording(sim, c, 0, &site));
    }
    CHECK_OK(ms ? ns_sim_init(ms) : ns_sim_init(sim));
    CHECK_OK(ms ? ns_sim_advance(ms, steps) : ns_sim_advance(sim, steps));
    if (ms) CHECK_OK(ns_sim_gather(ms, -1));
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ms ? ns_sim_traces(ms, &samples, &sites) : ns_sim_traces(sim, &samples, &sites);
    for (int c = 0; c < cells; ++c) v_end[c] = tr && sites == cells ? tr[(samples - 1) * cells + c] : NAN;
    for (int q = 0; q < sources; ++q) {
        int64_t n = 0;
        const double *x = ms ? ns_sim_source_spikes(ms, q, &n) : ns_sim_source_spikes(sim, q, &n);
        counts[q] = n;
        for (int k = 0; k < cap; ++k) times[(int64_t)q * cap + k] = k < n ? x[k] : NAN;
    }
}

/* 3 passive cells: a train drives cell 0, whose detector (-64 mV) drives
 * cell 1, whose detector drives cell 2; one process and several alike. */
static void test_chain(const ns_cell_t *cell) {
    double v_end[2][3];
    int64_t counts[2][4];
    double first[2][4];
    for (int run = 0; run < 2; ++run) {
        ns_sim_t *sim = NULL;
        ns_sim_t *ms = NULL;
        ns_sim_t *target = NULL;
        if (run == 0) {
            sim = passive_sim(cell, 3);
            target = sim;
        } else {
            ms = passive_mpi(cell, 3);
            target = ms;
            /* under np 4 the last process has no cell */
            if (ms && mpi_size == 4) CHECK((ns_sim_local(ms) == NULL) == (mpi_rank == 3));
        }
        if (!target) return;
        const double times[2] = {1.0, 20.0};
        int64_t syn[3], det[3], train = -1;
        for (int c = 0; c < 3; ++c) CHECK_OK(ns_sim_add_synapse(target, c, 0, "ExpSyn", &syn[c]));
        for (int c = 0; c < 3; ++c) CHECK_OK(ns_sim_add_detector(target, c, 0, -64.0, &det[c]));
        CHECK_OK(ns_sim_add_spike_source(target, times, 2, &train));
        CHECK_OK(ns_sim_connect(target, train, syn[0], 0.01, 0.5));
        CHECK_OK(ns_sim_connect(target, det[0], syn[1], 0.01, 0.75));
        CHECK_OK(ns_sim_connect(target, det[1], syn[2], 0.01, 1.0));
        finish_run(sim, run ? ms : NULL, 3, 4, 1600, v_end[run], counts[run], first[run], 1);
        ns_sim_destroy(sim);
        ns_sim_destroy(ms);
    }
    /* the spike went round: every detector fired (twice: two train spikes) */
    for (int q = 0; q < 4; ++q) CHECK_MSG(counts[0][q] == 2, "chain: source %d fired %lld times", q, (long long)counts[0][q]);
    CHECK(memcmp(counts[0], counts[1], sizeof counts[0]) == 0);
    CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0);
    CHECK(memcmp(v_end[0], v_end[1], sizeof v_end[0]) == 0);
    CHECK(first[0][0] < first[0][1] && first[0][1] < first[0][2] && first[0][3] == 1.0);
}

/* Poisson sources on every process with cells (ns_sim_add_poisson_source):
 * 3 sources drive 4 passive cells whose detectors fire; the rasters of all
 * sources and v at the end are those of one process, to the bit. */
static void test_poisson(const ns_cell_t *cell) {
    enum { NS = 3 + 4 };
    double v_end[2][4];
    int64_t counts[2][NS];
    static double times[2][NS][64];
    for (int run = 0; run < 2; ++run) {
        ns_sim_t *sim = NULL;
        ns_sim_t *ms = NULL;
        if (run == 0) {
            if (!(sim = passive_sim(cell, 4))) return;
        } else if (!(ms = passive_mpi(cell, 4)))
            return;
        int64_t src[3], syn[4], det[4];
        for (int k = 0; k < 3; ++k)
            CHECK_OK(run ? ns_sim_add_poisson_source(ms, 150.0, 2.0, 45.0, 11 + (uint64_t)k, &src[k])
                         : ns_sim_add_poisson_source(sim, 150.0, 2.0, 45.0, 11 + (uint64_t)k, &src[k]));
        for (int c = 0; c < 4; ++c) {
            CHECK_OK(run ? ns_sim_add_synapse(ms, c, 0, "ExpSyn", &syn[c]) : ns_sim_add_synapse(sim, c, 0, "ExpSyn", &syn[c]));
            CHECK_OK(run ? ns_sim_add_detector(ms, c, 0, -64.8, &det[c])
                         : ns_sim_add_detector(sim, c, 0, -64.8, &det[c]));
        }
        for (int c = 0; c < 4; ++c)
            CHECK_OK(run ? ns_sim_connect(ms, src[c % 3], syn[c], 0.002, 0.5)
                         : ns_sim_connect(sim, src[c % 3], syn[c], 0.002, 0.5));
        finish_run(sim, run ? ms : NULL, 4, NS, 2000, v_end[run], counts[run], &times[run][0][0], 64);
        ns_sim_destroy(sim);
        ns_sim_destroy(ms);
    }
    /* about 6 spikes per source in 43 ms; the cells fired */
    for (int q = 0; q < NS; ++q)
        CHECK_MSG(counts[0][q] >= 1 && counts[0][q] < 64, "poisson: source %d: %lld spikes", q, (long long)counts[0][q]);
    CHECK(memcmp(counts[0], counts[1], sizeof counts[0]) == 0);
    CHECK(memcmp(times[0], times[1], sizeof times[0]) == 0);
    CHECK(memcmp(v_end[0], v_end[1], sizeof v_end[0]) == 0);
}

/* Equal times: cells 0 and 1 (identical, driven alike) spike at the same
 * time, and both reach cell 2's synapse after the same delay with weights
 * +1 and -1 uS; NET_RECEIVE adds them to g in delivery order, and
 * (g + 1) - 1 rounds g otherwise than (g - 1) + 1, which shows in v. The
 * order is the (time, global source) order on any number of processes,
 * though the connections are made so that the proxies of the two
 * detectors on cell 2's process are numbered the other way round (under np
 * 4 every cell has a process of its own). `swap` exchanges the weights:
 * the order shows in the bits. */
static void ties_run(const ns_cell_t *cell, int mpi, int swap, double *v) {
    ns_sim_t *sim = NULL;
    ns_sim_model_t *model = model_of("all.insert = pas\nall.e_pas = -65\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o = cpu_options(model);
    const ns_cell_t *shapes[1] = {cell};
    if (mpi) CHECK_OK(dist_sim_create(1, shapes, 4, NULL, &p, &o, &sim));
    else CHECK_OK(ns_sim_create(1, shapes, 4, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    const double times[1] = {1.0};
    int64_t syn[3], det[2], train = -1;
    for (int c = 0; c < 3; ++c) CHECK_OK(ns_sim_add_synapse(sim, c, 0, "ExpSyn", &syn[c]));
    CHECK_OK(ns_sim_synapse_set(sim, syn[2], "tau", 5.0));
    for (int c = 0; c < 2; ++c) CHECK_OK(ns_sim_add_detector(sim, c, 0, -64.0, &det[c]));
    CHECK_OK(ns_sim_add_spike_source(sim, times, 1, &train));
    CHECK_OK(ns_sim_connect(sim, det[1], syn[2], swap ? 1.0 : -1.0, 0.5)); /* det 1's proxy first */
    CHECK_OK(ns_sim_connect(sim, det[0], syn[2], swap ? -1.0 : 1.0, 0.5));
    CHECK_OK(ns_sim_connect(sim, train, syn[0], 0.01, 0.5));
    CHECK_OK(ns_sim_connect(sim, train, syn[1], 0.01, 0.5));
    CHECK_OK(ns_sim_connect(sim, train, syn[2], 0.1, 0.5));
    int32_t site = -1;
    CHECK_OK(ns_sim_add_recording(sim, 2, 0, &site));
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, 200));
    CHECK_OK(ns_sim_gather(sim, -1)); /* one process: nothing to do */
    int64_t samples = 0;
    const double *tr = ns_sim_traces(sim, &samples, NULL);
    CHECK(samples == 201);
    for (int64_t k = 0; k < 201; ++k) v[k] = tr && samples == 201 ? tr[k] : NAN;
    int64_t n0 = 0, n1 = 0;
    const double *t0 = ns_sim_source_spikes(sim, det[0], &n0);
    const double *t1 = ns_sim_source_spikes(sim, det[1], &n1);
    CHECK_MSG(n0 == 1 && n1 == 1 && t0[0] == t1[0], "cells 0 and 1: %lld and %lld spikes", (long long)n0,
              (long long)n1);
    ns_sim_destroy(sim);
}

static void test_ties(const ns_cell_t *cell) {
    static double one[201], swapped[201], many[201];
    ties_run(cell, 0, 0, one);
    ties_run(cell, 0, 1, swapped);
    ties_run(cell, 1, 0, many);
    CHECK_MSG(memcmp(one, swapped, sizeof one) != 0, "the order of equal-time events does not show in v");
    CHECK_MSG(memcmp(one, many, sizeof one) == 0, "equal-time events: v differs from one process's");
}

#define EXPECT_ALL(expr, status, ...)                                                                      \
    do {                                                                                                   \
        CHECK_FAILS(expr, status, __VA_ARGS__);                                                            \
        CHECK_MSG(same_text_everywhere(ns_last_error()), "%s: the message differs between processes: %s", #expr,   \
                  ns_last_error());                                                                        \
    } while (0)

static void test_errors(const ns_cell_t *cell) {
    char tag[64];
    /* checks every process makes: at once everywhere, and at init */
    {
        ns_sim_t *ms = passive_mpi(cell, 4);
        if (!ms) return;
        int64_t syn = -1, src = -1;
        EXPECT_ALL(ns_sim_add_synapse(ms, 4, 0, "ExpSyn", &syn), NS_ERR_INVALID_ARGUMENT, "cell 4",
                   "not in the simulation");
        CHECK(syn == -1);
        EXPECT_ALL(ns_sim_add_synapse(ms, 3, 9, "ExpSyn", &syn), NS_ERR_INVALID_ARGUMENT, "compartment 9",
                   "cell 3");
        CHECK_OK(ns_sim_add_synapse(ms, 3, 0, "ExpSyn", &syn));
        EXPECT_ALL(ns_sim_add_detector(ms, -1, 0, -20.0, &src), NS_ERR_INVALID_ARGUMENT, "cell -1");
        EXPECT_ALL(ns_sim_add_detector(ms, 0, 0, NAN, &src), NS_ERR_INVALID_ARGUMENT, "threshold");
        CHECK_OK(ns_sim_add_detector(ms, 0, 0, -20.0, &src));
        CHECK(syn == 0 && src == 0);
        EXPECT_ALL(ns_sim_connect(ms, src, syn, 0.01, 0.0), NS_ERR_INVALID_ARGUMENT, "delay 0", "source 0",
                   "synapse 0");
        EXPECT_ALL(ns_sim_connect(ms, src, syn, 0.01, -1.0), NS_ERR_INVALID_ARGUMENT, "delay -1");
        EXPECT_ALL(ns_sim_connect(ms, 1, syn, 0.01, 1.0), NS_ERR_INVALID_ARGUMENT, "source 1 does not exist");
        EXPECT_ALL(ns_sim_connect(ms, src, 2, 0.01, 1.0), NS_ERR_INVALID_ARGUMENT, "synapse 2 does not exist");
        EXPECT_ALL(ns_sim_synapse_set(ms, 5, "tau", 1.0), NS_ERR_INVALID_ARGUMENT, "synapse 5");
        /* the first of them, on every process, with rank 0's number */
        snprintf(tag, sizeof tag, "rank 0 of %d: ", mpi_size);
        EXPECT_ALL(ns_sim_init(ms), NS_ERR_INVALID_ARGUMENT, tag, "cell 4");
        /* reported once: the network as it is now runs */
        CHECK_OK(ns_sim_connect(ms, src, syn, 0.01, 1.0));
        EXPECT_ALL(ns_sim_advance(ms, 10), NS_ERR_INVALID_ARGUMENT, "ns_sim_init");
        CHECK_OK(ns_sim_init(ms));
        CHECK_OK(ns_sim_advance(ms, 10));
        ns_sim_destroy(ms);
    }
    /* checks of the owner: at once there, everywhere at init */
    {
        ns_sim_t *ms = passive_mpi(cell, 4);
        if (!ms) return;
        const int owner = ns_sim_cell_owner(ms, 2);
        int64_t syn = -1;
        const ns_status st = ns_sim_add_synapse(ms, 2, 0, "AMPA", &syn);
        if (mpi_rank == owner)
            CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "AMPA") &&
                          strstr(ns_last_error(), "synapse 0 (global; cell 2"),
                      "%s", ns_last_error());
        else
            CHECK(st == NS_OK && syn == 0);
        CHECK_OK(ns_sim_add_synapse(ms, 1, 0, "Exp2Syn", &syn));
        CHECK(syn == 1);
        const ns_status set = ns_sim_synapse_set(ms, 1, "tau", 2.0);
        CHECK(mpi_rank == ns_sim_cell_owner(ms, 1) ? set == NS_ERR_INVALID_ARGUMENT : set == NS_OK);
        /* the lowest failing process's first failure */
        const int first = owner < ns_sim_cell_owner(ms, 1) ? owner : ns_sim_cell_owner(ms, 1);
        snprintf(tag, sizeof tag, "rank %d of %d: ", first, mpi_size);
        EXPECT_ALL(ns_sim_init(ms), NS_ERR_INVALID_ARGUMENT, tag, first == owner ? "'AMPA'" : "'tau'", "Exp2Syn");
        ns_sim_destroy(ms);
    }
    /* arguments that differ between processes */
    {
        ns_sim_t *ms = passive_mpi(cell, 4);
        if (!ms) return;
        int64_t syn = -1, src = -1;
        const double t = 1.0;
        CHECK_OK(ns_sim_add_synapse(ms, 1, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(ms, &t, 1, &src));
        CHECK_OK(ns_sim_connect(ms, src, syn, 0.01 * (1 + mpi_rank), 1.0));
        if (mpi_size == 1)
            CHECK_OK(ns_sim_init(ms));
        else
            EXPECT_ALL(ns_sim_init(ms), NS_ERR_INVALID_ARGUMENT, "differs between ranks", "network");
        ns_sim_destroy(ms);
    }
    /* a NaN on one process in the middle of a run: every process stops at
     * the next exchange with its message (a hang fails by the timeout) */
    {
        ns_sim_t *ms = passive_mpi(cell, 4);
        if (!ms) return;
        const int owner = ns_sim_cell_owner(ms, 3);
        int64_t syn[4], det[4], src = -1;
        const double t = 2.0;
        for (int c = 0; c < 4; ++c) {
            CHECK_OK(ns_sim_add_synapse(ms, c, 0, "ExpSyn", &syn[c]));
            CHECK_OK(ns_sim_add_detector(ms, c, 0, -64.0, &det[c]));
        }
        CHECK_OK(ns_sim_add_spike_source(ms, &t, 1, &src));
        CHECK_OK(ns_sim_connect(ms, src, syn[3], 0.01, 0.5));
        /* cell 3's v overflows (a synapse's conductance cannot: it is implicit) */
        CHECK_OK(ns_sim_add_iclamp(ms, 3, 0, 3.0, 1.0, 1e308));
        for (int c = 0; c < 3; ++c) CHECK_OK(ns_sim_connect(ms, det[c], syn[(c + 1) % 3], 0.01, 0.3));
        CHECK_OK(ns_sim_init(ms));
        snprintf(tag, sizeof tag, "rank %d of %d: ", owner, mpi_size);
        EXPECT_ALL(ns_sim_advance(ms, 400), NS_ERR_NOT_FINITE, tag, "NaN");
        MPI_Barrier(MPI_COMM_WORLD);
        ns_sim_destroy(ms);
    }
}

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    static const char *const refs[3] = {"ring8_ca1_ko20x-07.csv", "ring8_short_delays.csv", "random16_ca1.csv"};
    for (int k = 0; k < 3; ++k) test_reference(refs[k], NS_BACKEND_CPU);
    /* the GPU loop over processes (every process on its current device), when
     * every process has a GPU */
    int gpus = 0, usable, all = 0;
    usable = ns_cuda_device_count(&gpus) == NS_OK && gpus > 0;
    MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all)
        for (int k = 0; k < 3; ++k) test_reference(refs[k], NS_BACKEND_CUDA);
    else if (mpi_rank == 0)
        printf("SKIPPED part: no GPU on some process (the networks on the GPU loop under MPI)\n");
    ns_cell_t *cell = test_cylinder();
    if (cell) {
        test_chain(cell);
        test_poisson(cell);
        test_ties(cell);
        test_errors(cell);
    }
    ns_cell_destroy(cell);
    return mpi_test_finish("test_mpi_network");
}
#else
#include "check.h"
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
