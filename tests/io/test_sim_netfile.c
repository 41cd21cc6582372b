/* Network files and Poisson sources (docs/networks.md):
 *   1. a ring of 1,000 one-compartment hh cells in a few lines (ranges,
 *      groups, pairs), against the same ring built call by call: identical
 *      rasters, the wave going round in order; groups, broadcast, `all` and
 *      p= connection counts (p=: within 5 sd of the binomial mean, the same
 *      draws for a seed);
 *   2. bad input: parse errors and apply errors, each naming FILE:LINE and
 *      the element, nothing created;
 *   3. Poisson sources: inter-spike intervals against the exponential
 *      distribution (Kolmogorov-Smirnov at alpha = 0.001, mean and variance
 *      within 5 standard errors), counts within (start, stop), the same
 *      times for a seed with 1 or 2 threads, any ns_sim_advance chunks and
 *      after ns_sim_init; other seeds other times; spikes delivered; bad
 *      arguments. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"

static ns_sim_t *make_sim_dt(const ns_cell_t *cell, int64_t n, const char *model_text, int threads, double dt) {
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    if (m) CHECK_OK(ns_sim_model_parse(m, model_text, strlen(model_text), "test.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = dt;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.method = threads ? NS_HINES_OPENMP : NS_HINES_SEQUENTIAL;
    o.threads = threads;
    o.model = m;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, &cell, n, NULL, &p, &o, &sim));
    ns_sim_model_destroy(m);
    return sim;
}

static ns_sim_t *make_sim(const ns_cell_t *cell, int64_t n, const char *model_text, int threads) {
    return make_sim_dt(cell, n, model_text, threads, 0.025);
}

static ns_network_t *parse(const char *text) {
    ns_network_t *net = NULL;
    CHECK_MSG(ns_network_parse(text, strlen(text), "t.net", NULL, &net) == NS_OK, "%s", ns_last_error());
    return net;
}

#define RING 1000

static void test_ring(const ns_cell_t *cell) {
    /* the file: cell i drives cell i+1 (the last cell drives none: one round) */
    const char *text = "# a ring of 1000 cells\n"
                       "cells ring 1000 cylinder.swc\n"
                       "synapse exc ring soma(0.5) ExpSyn tau=2 e=0   # synapse i on cell i\n"
                       "detector spk ring soma -20\n"
                       "train kick 1\n"
                       "connect spk[0-998] exc[1-999] 0.05 1.5\n"
                       "connect kick exc[0] 0.05 0.5\n";
    ns_network_t *net = parse(text);
    if (!net) return;
    CHECK(ns_network_cells(net) == RING && ns_network_morphologies(net) == 1 && ns_network_synapses(net) == RING &&
          ns_network_sources(net) == RING + 1 && ns_network_fixed_connections(net) == RING);
    CHECK(strcmp(ns_network_morphology(net, 0), "cylinder.swc") == 0 && ns_network_cell_morphology(net)[999] == 0);
    ns_sim_t *a = make_sim(cell, RING, "all.insert = hh\n", 2);
    ns_sim_t *b = make_sim(cell, RING, "all.insert = hh\n", 2);
    if (!a || !b) goto out;
    CHECK_OK(ns_network_apply(net, a, &cell));
    /* the same ring, call by call */
    for (int64_t c = 0; c < RING; ++c) {
        int64_t id = -1;
        CHECK_OK(ns_sim_add_synapse(b, c, 0, "ExpSyn", &id));
        CHECK_OK(ns_sim_synapse_set(b, id, "tau", 2.0));
    }
    for (int64_t c = 0; c < RING; ++c) CHECK_OK(ns_sim_add_detector(b, c, 0, -20.0, NULL));
    const double kick = 1.0;
    CHECK_OK(ns_sim_add_spike_source(b, &kick, 1, NULL));
    for (int64_t c = 0; c + 1 < RING; ++c) CHECK_OK(ns_sim_connect(b, c, c + 1, 0.05, 1.5));
    CHECK_OK(ns_sim_connect(b, RING, 0, 0.05, 0.5));
    CHECK(ns_sim_synapses(a) == RING && ns_sim_sources(a) == RING + 1 && ns_sim_connections(a) == RING);
    CHECK_OK(ns_sim_init(a));
    CHECK_OK(ns_sim_init(b));
    /* about 1.8 ms per cell: some 80 cells in 150 ms */
    const int64_t steps = ns_sim_steps_for(a, 150.0);
    CHECK_OK(ns_sim_advance(a, steps));
    CHECK_OK(ns_sim_advance(b, steps));
    int64_t reached = 0, same = 1, ordered = 1;
    double last = 0.0;
    for (int64_t s = 0; s < RING; ++s) {
        int64_t na = 0, nb = 0;
        const double *xa = ns_sim_source_spikes(a, s, &na);
        const double *xb = ns_sim_source_spikes(b, s, &nb);
        same &= na == nb && (na == 0 || memcmp(xa, xb, (size_t)na * sizeof *xa) == 0);
        if (na > 0) {
            ordered &= na == 1 && xa[0] > last + 1.5 && s == reached; /* one spike each, cell after cell */
            last = xa[0];
            reached++;
        }
    }
    printf("ring of %d cells from a 7-line file: the wave reached %lld cells in 150 ms\n", RING, (long long)reached);
    CHECK_MSG(same, "the file's ring and the ring of calls differ");
    CHECK_MSG(ordered && reached > 30 && reached < RING, "%lld cells reached, in order: %lld", (long long)reached,
              (long long)ordered);
out:
    ns_sim_destroy(a);
    ns_sim_destroy(b);
    ns_network_destroy(net);
}

static void test_groups(const ns_cell_t *cell) {
    const char *text = "cells a 3 x.swc\n"
                       "cells b 2 y.swc\n"
                       "cells a 1 x.swc      # a now has 4 cells: 0 1 2 5\n"
                       "model: all.insert = pas\n"
                       "synapse s a[1-3]+b soma ExpSyn tau=3\n"     /* cells 1 2 5 3 4: synapses 0..4 */
                       "synapse s cell[0] c0 Exp2Syn tau2=4\n"     /* synapse 5 */
                       "detector d a c0 -30\n"                      /* sources 0..3 */
                       "poisson p 3 10 0 100 7\n"                   /* sources 4..6 */
                       "train t 5 1 3\n"                            /* source 7: 1, 3, 5 ms */
                       "connect t s 0.01 1\n"                       /* 6 (broadcast) */
                       "connect d[0,2] s[4,5] 0.01 2\n"             /* 2 pairs */
                       "connect p s 0.01 3 all\n"                   /* 18 */
                       "connect d s 0.01 4 p=0.5 seed=3\n";         /* 24 pairs, about 12 */
    ns_network_t *net = parse(text);
    if (!net) return;
    CHECK(ns_network_cells(net) == 6 && ns_network_morphologies(net) == 2 && ns_network_synapses(net) == 6 &&
          ns_network_sources(net) == 8 && ns_network_fixed_connections(net) == 26);
    const int32_t *cm = ns_network_cell_morphology(net);
    CHECK(cm[0] == 0 && cm[2] == 0 && cm[3] == 1 && cm[4] == 1 && cm[5] == 0);
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_network_model(net, NULL, &model));
    CHECK(model != NULL);
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    const ns_cell_t *shapes[2] = {cell, cell};
    int64_t n_conns[2] = {0, 0};
    for (int rep = 0; rep < 2; ++rep) {
        ns_sim_t *sim = NULL;
        CHECK_OK(ns_sim_create(2, shapes, 6, cm, &p, &o, &sim));
        if (!sim) break;
        CHECK_OK(ns_network_apply(net, sim, shapes));
        CHECK(ns_sim_synapses(sim) == 6 && ns_sim_sources(sim) == 8);
        n_conns[rep] = ns_sim_connections(sim) - 26;
        /* the synapse parameters went where the file says: the pas cell moves
         * only through its synapses, so set one and check it is accepted */
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 400));
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, 7, &n);
        CHECK(n == 3 && x && x[0] == 1.0 && x[1] == 3.0 && x[2] == 5.0); /* the train, sorted */
        ns_sim_destroy(sim);
    }
    /* p = 0.5 over 24 pairs: binomial mean 12, sd sqrt(6); the same for the seed */
    CHECK_MSG(n_conns[0] == n_conns[1] && fabs((double)n_conns[0] - 12.0) <= 5.0 * sqrt(6.0), "%lld, %lld",
              (long long)n_conns[0], (long long)n_conns[1]);
    ns_sim_model_destroy(model);
    ns_network_destroy(net);
    /* steps in ranges, and a reference of 3,000 items (over any line buffer) */
    {
        char *t = malloc(20000);
        if (t) {
            int w = snprintf(t, 20000, "cells a 10 x.swc\nsynapse s a[1-9:4] soma ExpSyn\nsynapse u a[");
            for (int k = 0; k < 3000; ++k) w += snprintf(t + w, (size_t)(20000 - w), "%s%d", k ? "," : "", k % 10);
            snprintf(t + w, (size_t)(20000 - w), "] c0 ExpSyn\n");
            ns_network_t *g = parse(t);
            CHECK(g && ns_network_synapses(g) == 3 + 3000);
            ns_sim_t *gs = g ? make_sim(cell, 10, "all.insert = pas\n", 0) : NULL;
            if (gs) {
                CHECK_OK(ns_network_apply(g, gs, &cell));
                CHECK(ns_sim_synapses(gs) == 3003);
            }
            ns_sim_destroy(gs);
            ns_network_destroy(g);
            free(t);
        }
    }
    /* p= at scale: 400 x 500 pairs at p = 0.01 */
    char big[512];
    snprintf(big, sizeof big, "cells a 500 x.swc\nsynapse s a soma ExpSyn\ndetector d a[0-399] soma 0\n"
                              "connect d s 0.001 1 p=0.01 seed=11\n");
    net = parse(big);
    ns_sim_t *sim = net ? make_sim(cell, 500, "all.insert = pas\n", 0) : NULL;
    if (sim) {
        CHECK_OK(ns_network_apply(net, sim, &cell));
        const double mean = 200000 * 0.01, sd = sqrt(200000 * 0.01 * 0.99);
        const int64_t got = ns_sim_connections(sim);
        CHECK_MSG(fabs((double)got - mean) <= 5.0 * sd, "p=0.01: %lld connections of 200000 pairs", (long long)got);
    }
    ns_sim_destroy(sim);
    ns_network_destroy(net);
}

/* A parse that fails with `status`, the message holding each of the strings. */
#define BAD_PARSE(text, ...)                                                                                    \
    do {                                                                                                        \
        ns_network_t *n_ = (ns_network_t *)1;                                                                   \
        CHECK_FAILS(ns_network_parse(text, strlen(text), "bad.net", NULL, &n_), NS_ERR_PARSE, __VA_ARGS__);          \
        CHECK(n_ == NULL);                                                                                      \
    } while (0)

static void test_errors(const ns_cell_t *cell) {
    const char *head = "cells c 2 x.swc\n";
    char t[1024];
#define WITH(line) (snprintf(t, sizeof t, "%s%s", head, line), t)
    BAD_PARSE(WITH("synapses s c soma ExpSyn\n"), "bad.net:2:", "unknown statement 'synapses'");
    BAD_PARSE(WITH("synapse s d soma ExpSyn\n"), "bad.net:2:", "no cells named 'd'");
    BAD_PARSE(WITH("synapse s c[2] soma ExpSyn\n"), "bad.net:2:", "index 2 is outside c (2 cells)");
    BAD_PARSE(WITH("synapse s c[1-0] soma ExpSyn\n"), "bad.net:2:", "not a range");
    BAD_PARSE(WITH("synapse s c[x] soma ExpSyn\n"), "bad.net:2:", "'x'", "not an index");
    BAD_PARSE(WITH("synapse s c[0-1:0] soma ExpSyn\n"), "bad.net:2:", "step '0'");
    BAD_PARSE(WITH("synapse s c sec:1(1.5) ExpSyn\n"), "bad.net:2:", "x '1.5' is not a number in [0, 1]");
    BAD_PARSE(WITH("synapse s c dend ExpSyn\n"), "bad.net:2:", "location 'dend'");
    BAD_PARSE(WITH("synapse s c soma ExpSyn tau\n"), "bad.net:2:", "'tau': expected PARAM=VALUE");
    BAD_PARSE(WITH("synapse s c soma ExpSyn tau=nan\n"), "bad.net:2:", "synapse s: tau: 'nan' is not a decimal number");
    BAD_PARSE(WITH("synapse c c soma ExpSyn\n"), "bad.net:2:", "'c' names cells (line 1), not synapses");
    BAD_PARSE(WITH("synapse cell c soma ExpSyn\n"), "bad.net:2:", "'cell' is reserved");
    BAD_PARSE(WITH("detector d c soma\n"), "bad.net:2:", "detector NAME CELLS LOC THRESHOLD");
    BAD_PARSE(WITH("train t 1 -2\n"), "bad.net:2:", "train t: time 2 [ms]: '-2' is out of range: below 0");
    /* the one number reader (issue 47: train times, like --record, took hex) */
    BAD_PARSE(WITH("train t 0x10\n"), "bad.net:2:", "train t: time 1 [ms]: '0x10' is not a decimal number");
    BAD_PARSE(WITH("train t 1e-320\n"), "bad.net:2:", "'1e-320' is too close to 0 for a double");
    BAD_PARSE(WITH("synapse s c c-0 ExpSyn\n"), "bad.net:2:", "location 'c-0'");
    BAD_PARSE(WITH("poisson p 1 -5 0 10 1\n"), "bad.net:2:", "poisson p: rate [Hz]: '-5' is out of range: not in [0, 1e+06]");
    BAD_PARSE(WITH("poisson p 1 2e6 0 10 1\n"), "bad.net:2:", "poisson p: rate [Hz]: '2e6' is out of range");
    BAD_PARSE(WITH("poisson p 1 5 10 3 1\n"), "bad.net:2:", "poisson p: stop [ms] (>= start or inf): '3' is out of range: below 10");
    BAD_PARSE(WITH("poisson p 0 5 0 10 1\n"), "bad.net:2:", "poisson p: COUNT: '0' is out of range");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ndetector d c soma 0\nconnect d s 0.1 0\n"), "bad.net:4:",
              "connect d s: delay '0' must be a number > 0");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ndetector d c soma 0\nconnect d s 0.1 -1\n"), "bad.net:4:", "delay '-1'");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ndetector d c soma 0\nconnect d s inf 1\n"), "bad.net:4:", "connect d s: weight: 'inf' is not a decimal number");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ndetector d c soma 0\nconnect s d 0.1 1\n"), "bad.net:4:",
              "'s' names synapses (line 2), not sources");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ndetector d c soma 0\nconnect d s[0] 0.1 1 p=2\n"), "bad.net:4:",
              "connect d s[0]: p: '2' is out of range: not in [0, 1]");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ndetector d c soma 0\nconnect d s[0] 0.1 1 seed=2\n"), "bad.net:4:",
              "seed= without p=");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\ntrain t 1\ntrain t 2\ntrain t 3\nconnect t s 0.1 1\n"), "bad.net:6:",
              "3 sources and 2 synapses");
    BAD_PARSE(WITH("model a.model\nmodel b.model\n"), "bad.net:3:", "a second model file (the first on line 2)");
    /* source NAME SYNAPSES: point sources of synapses (from_neuron's NetCons from IntFires) */
    BAD_PARSE(WITH("synapse s c soma ExpSyn\nsource p s extra\n"), "bad.net:3:", "expected: source NAME SYNAPSES");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\nsource p q\n"), "bad.net:3:", "no synapses named 'q'");
    BAD_PARSE(WITH("synapse s c soma ExpSyn\nsource s s\n"), "bad.net:3:", "'s' names synapses (line 2), not sources");
    BAD_PARSE("# nothing\n", "bad.net: no cells");
    BAD_PARSE("cells c 0 x.swc\n", "bad.net:1:", "COUNT '0'");
    {
        const char nul[] = "cells c 1 x.swc\n\0";
        ns_network_t *n = NULL;
        CHECK_FAILS(ns_network_parse(nul, sizeof nul - 1, "bad.net", NULL, &n), NS_ERR_PARSE, "NUL");
    }
    ns_network_t *n = NULL;
    CHECK_FAILS(ns_network_read("/nonexistent/x.net", &n), NS_ERR_IO, "/nonexistent/x.net");
    /* apply errors: FILE:LINE and the element, from the simulation's checks */
    const char *model = "all.insert = pas\n";
    struct {
        const char *text;
        const char *want[3];
    } apply_bad[] = {
        {"cells c 2 x.swc\nsynapse s c soma AMPA\n", {"t.net:2", "no mechanism 'AMPA'", "ExpSyn, Exp2Syn"}},
        {"cells c 2 x.swc\nsynapse s c soma ExpSyn tau=1 taux=2\n", {"t.net:2", "no parameter 'taux'", "tau, e"}},
        {"cells c 2 x.swc\nsynapse s c sec:3 ExpSyn\n", {"t.net:2", "cell 0", "no section 3"}},
        {"cells c 2 x.swc\nsynapse s c[1] swc:9 ExpSyn\n", {"t.net:2", "cell 1", "no section starts at SWC id 9"}},
        {"cells c 2 x.swc\ndetector d c c5 -20\n", {"t.net:2", "compartment 5 is outside the cell"}},
        {"cells c 3 x.swc\n", {"t.net: 3 cells, the simulation has 2"}},
    };
    for (size_t k = 0; k < sizeof apply_bad / sizeof *apply_bad; ++k) {
        ns_network_t *net = parse(apply_bad[k].text);
        ns_sim_t *sim = make_sim(cell, 2, model, 0);
        if (net && sim) {
            const ns_status st = ns_network_apply(net, sim, &cell);
            CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT, "case %zu: %s", k, ns_status_string(st));
            for (int w = 0; w < 3 && apply_bad[k].want[w]; ++w)
                CHECK_MSG(strstr(ns_last_error(), apply_bad[k].want[w]) != NULL, "case %zu: '%s' not in '%s'", k,
                          apply_bad[k].want[w], ns_last_error());
        }
        ns_sim_destroy(sim);
        ns_network_destroy(net);
    }
    /* the model line's errors name the network file's line */
    ns_network_t *net = parse("cells c 1 x.swc\n\nmodel: all.insert = hh kdr\n");
    ns_sim_model_t *m = NULL;
    if (net) CHECK_FAILS(ns_network_model(net, NULL, &m), NS_ERR_INVALID_ARGUMENT, "t.net:3:", "no mechanism 'kdr'");
    CHECK(m == NULL);
    /* create_sim: no model at all; a morphology that is not there */
    ns_network_destroy(net);
    net = parse("cells c 1 /nonexistent/cell.swc\n");
    ns_sim_t *sim = NULL;
    if (net) CHECK_FAILS(ns_network_create_sim(net, NULL, NULL, NULL, NULL, &sim), NS_ERR_INVALID_ARGUMENT, "no model");
    ns_network_destroy(net);
    net = parse("cells c 1 /nonexistent/cell.swc\nmodel: all.insert = pas\n");
    if (net) {
        const ns_status st = ns_network_create_sim(net, NULL, NULL, NULL, NULL, &sim);
        CHECK_MSG(st == NS_ERR_IO && strstr(ns_last_error(), "/nonexistent/cell.swc"), "%s: %s", ns_status_string(st),
                  ns_last_error());
    }
    CHECK(sim == NULL);
    ns_network_destroy(net);
#undef WITH
}

/* ------------------------------------------------------------ Poisson */

#define N_POISSON 8
#define MAX_P 8192

typedef struct pois_run {
    int64_t n[N_POISSON];
    double t[N_POISSON][MAX_P];
} pois_run;

/* N_POISSON sources of rate [Hz] on (start, stop), seeds seed0 + k, one cell;
 * advanced to tstop in `chunks` calls. */
static void poisson_run(const ns_cell_t *cell, double rate, double start, double stop, uint64_t seed0, double tstop,
                        int threads, int chunks, int reinit, pois_run *out) {
    memset(out, 0, sizeof *out);
    /* dt 0.25 ms: the spikes do not depend on dt (only the intervals of the loop do) */
    ns_sim_t *sim = make_sim_dt(cell, 2, "all.insert = pas\n", threads, 0.25);
    if (!sim) return;
    for (int k = 0; k < N_POISSON; ++k) {
        int64_t id = -1;
        CHECK_OK(ns_sim_add_poisson_source(sim, rate, start, stop, seed0 + (uint64_t)k, &id));
        CHECK(id == k);
    }
    /* a connection, so that the loop runs in intervals of the delay */
    int64_t syn = -1;
    CHECK_OK(ns_sim_add_synapse(sim, 1, 0, "ExpSyn", &syn));
    CHECK_OK(ns_sim_connect(sim, 0, syn, 1e-4, 5.0));
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, tstop);
    if (reinit) { /* a first run, then ns_sim_init: the spikes start again */
        CHECK_OK(ns_sim_advance(sim, steps / 2));
        CHECK_OK(ns_sim_init(sim));
    }
    for (int c = 0; c < chunks; ++c) CHECK_OK(ns_sim_advance(sim, steps / chunks + (c < steps % chunks)));
    for (int k = 0; k < N_POISSON; ++k) {
        const double *x = ns_sim_source_spikes(sim, k, &out->n[k]);
        CHECK_MSG(out->n[k] <= MAX_P, "%lld spikes", (long long)out->n[k]);
        if (x && out->n[k] <= MAX_P) memcpy(out->t[k], x, (size_t)out->n[k] * sizeof *x);
    }
    ns_sim_destroy(sim);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_poisson(const ns_cell_t *cell) {
    const double rate = 200.0, start = 50.0, stop = 4050.0; /* [Hz], [ms]: 800 spikes per source expected */
    static pois_run r0, r1, r2, r3;
    poisson_run(cell, rate, start, stop, 42, 4100.0, 1, 1, 0, &r0);
    /* statistics of the pooled intervals (the first of each source from start) */
    double *isi = malloc(sizeof(double) * N_POISSON * MAX_P);
    int64_t n = 0, total = 0;
    int inside = 1;
    for (int k = 0; isi && k < N_POISSON; ++k) {
        double prev = start;
        for (int64_t q = 0; q < r0.n[k]; ++q) {
            inside &= r0.t[k][q] > start && r0.t[k][q] < stop && r0.t[k][q] > prev - 1e-300;
            isi[n++] = r0.t[k][q] - prev;
            prev = r0.t[k][q];
        }
        total += r0.n[k];
        /* each source's count: Poisson with mean rate * T = 800 */
        const double mu = rate * (stop - start) / 1000.0;
        CHECK_MSG(fabs((double)r0.n[k] - mu) <= 5.0 * sqrt(mu), "source %d: %lld spikes, expected %g", k,
                  (long long)r0.n[k], mu);
    }
    CHECK_MSG(inside, "a spike outside (start, stop) or out of order");
    if (isi && n > 100) {
        const double mean_ref = 1000.0 / rate; /* [ms] */
        double sum = 0.0, sq = 0.0;
        for (int64_t q = 0; q < n; ++q) sum += isi[q];
        const double mean = sum / (double)n;
        for (int64_t q = 0; q < n; ++q) sq += (isi[q] - mean) * (isi[q] - mean);
        const double var = sq / (double)(n - 1);
        /* exponential: sd of the mean = mean/sqrt(n); of the variance ~ mean^2 sqrt(8/n) (fourth moment 9 mean^4) */
        CHECK_MSG(fabs(mean - mean_ref) <= 5.0 * mean_ref / sqrt((double)n), "mean ISI %g ms, expected %g", mean,
                  mean_ref);
        CHECK_MSG(fabs(var - mean_ref * mean_ref) <= 5.0 * mean_ref * mean_ref * sqrt(8.0 / (double)n),
                  "ISI variance %g ms^2, expected %g", var, mean_ref * mean_ref);
        /* Kolmogorov-Smirnov against 1 - exp(-x/mean_ref): D sqrt(n) < 1.949 at alpha = 0.001 */
        qsort(isi, (size_t)n, sizeof *isi, cmp_d);
        double d = 0.0;
        for (int64_t q = 0; q < n; ++q) {
            const double f = 1.0 - exp(-isi[q] / mean_ref);
            const double lo = f - (double)q / (double)n, hi = (double)(q + 1) / (double)n - f;
            if (lo > d) d = lo;
            if (hi > d) d = hi;
        }
        printf("Poisson: %lld spikes of %d sources at %g Hz: mean ISI %.4f ms (%.4f), variance %.4f (%.4f), "
               "KS D sqrt(n) = %.3f\n",
               (long long)total, N_POISSON, rate, mean, mean_ref, var, mean_ref * mean_ref, d * sqrt((double)n));
        CHECK_MSG(d * sqrt((double)n) < 1.949, "KS statistic %g (n = %lld)", d, (long long)n);
        /* the same statistic fails for the wrong rate: the test can tell */
        double dw = 0.0;
        for (int64_t q = 0; q < n; ++q) {
            const double f = 1.0 - exp(-isi[q] / (1.1 * mean_ref));
            const double lo = f - (double)q / (double)n, hi = (double)(q + 1) / (double)n - f;
            if (lo > dw) dw = lo;
            if (hi > dw) dw = hi;
        }
        CHECK_MSG(dw * sqrt((double)n) > 1.949, "KS does not see a rate 10%% off: %g", dw * sqrt((double)n));
    }
    free(isi);
    /* the same seed: 2 threads, 7 advance calls, after a re-init */
    poisson_run(cell, rate, start, stop, 42, 4100.0, 2, 7, 0, &r1);
    poisson_run(cell, rate, start, stop, 42, 4100.0, 1, 3, 1, &r2);
    CHECK(memcmp(&r0, &r1, sizeof r0) == 0);
    CHECK(memcmp(&r0, &r2, sizeof r0) == 0);
    /* other seeds: other times; source k of seed 43 is source k+1 of seed 42 */
    poisson_run(cell, rate, start, stop, 43, 4100.0, 1, 1, 0, &r3);
    CHECK(r3.n[0] != r0.n[0] || memcmp(r3.t[0], r0.t[0], (size_t)r0.n[0] * sizeof(double)) != 0);
    CHECK(r3.n[0] == r0.n[1] && memcmp(r3.t[0], r0.t[1], (size_t)r0.n[1] * sizeof(double)) == 0);
    /* delivered: a Poisson source drives a synapse of a cell at rest */
    {
        ns_sim_t *sim = make_sim(cell, 1, "all.insert = pas\nall.e_pas = -65\n", 0);
        if (sim) {
            int64_t src = -1, syn = -1;
            int32_t site = -1;
            CHECK_OK(ns_sim_add_poisson_source(sim, 100.0, 0.0, INFINITY, 5, &src));
            CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
            CHECK_OK(ns_sim_connect(sim, src, syn, 0.001, 1.0));
            CHECK_OK(ns_sim_add_recording(sim, 0, 0, &site));
            CHECK_OK(ns_sim_init(sim));
            CHECK_OK(ns_sim_advance(sim, 4000));
            int64_t ns = 0, samples = 0;
            const double *x = ns_sim_source_spikes(sim, src, &ns);
            const double *tr = ns_sim_traces(sim, &samples, NULL);
            /* v stays at rest exactly until the first event (first spike + delay) */
            int64_t first = -1;
            for (int64_t j = 1; tr && j < samples && first < 0; ++j)
                if (tr[j] != -65.0) first = j;
            CHECK_MSG(ns > 3 && x && first > 0 && fabs(first * 0.025 - (x[0] + 1.0)) <= 0.05,
                      "%lld spikes, first at %g ms, v moves at %g ms", (long long)ns, x ? x[0] : NAN, first * 0.025);
        }
        ns_sim_destroy(sim);
    }
    /* bad arguments */
    ns_sim_t *sim = make_sim(cell, 1, "all.insert = pas\n", 0);
    if (sim) {
        int64_t id = -1;
        CHECK_FAILS(ns_sim_add_poisson_source(sim, -1.0, 0, 10, 1, &id), NS_ERR_INVALID_ARGUMENT, "rate -1");
        CHECK_FAILS(ns_sim_add_poisson_source(sim, NAN, 0, 10, 1, &id), NS_ERR_INVALID_ARGUMENT, "rate");
        CHECK_FAILS(ns_sim_add_poisson_source(sim, 2e6, 0, 10, 1, &id), NS_ERR_INVALID_ARGUMENT, "rate 2e+06", "1e6");
        CHECK_FAILS(ns_sim_add_poisson_source(sim, 10, -1, 10, 1, &id), NS_ERR_INVALID_ARGUMENT, "start -1");
        CHECK_FAILS(ns_sim_add_poisson_source(sim, 10, 5, 4, 1, &id), NS_ERR_INVALID_ARGUMENT, "stop 4");
        CHECK_FAILS(ns_sim_add_poisson_source(sim, 10, 5, NAN, 1, &id), NS_ERR_INVALID_ARGUMENT, "stop");
        CHECK_FAILS(ns_sim_add_poisson_source(NULL, 10, 5, 6, 1, &id), NS_ERR_INVALID_ARGUMENT, "sim is NULL");
        CHECK(ns_sim_sources(sim) == 0);
        /* rate 0: a source without spikes */
        CHECK_OK(ns_sim_add_poisson_source(sim, 0.0, 0, INFINITY, 1, &id));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 100));
        int64_t cnt = -1;
        ns_sim_source_spikes(sim, id, &cnt);
        CHECK(cnt == 0);
    }
    ns_sim_destroy(sim);
}

int main(void) {
    ns_cell_t *cell = test_cylinder();
    if (cell) {
        test_ring(cell);
        test_groups(cell);
        test_errors(cell);
        test_poisson(cell);
    }
    ns_cell_destroy(cell);
    return check_summary("test_sim_netfile");
}
