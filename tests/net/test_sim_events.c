/* NMODL's events in a network (docs/networks.md, "Events"; src/net/events.c):
 *   1. NEURON's IntFire1, IntFire2 and IntFire4 (data/mechanisms/events/, the
 *      .mod files of NEURON's source: ARTIFICIAL_CELL, net_send with flags,
 *      net_move, net_event, self events from INITIAL) and NetStim without
 *      noise (NEURON 9.0.2's netstim.mod there: RANDOM, VERBATIM) driven by
 *      trains, their spikes driving an ExpSyn on a one-compartment hh cell,
 *      which also has an FDSyn (data/mechanisms/events/fdsyn.mod: per-connection
 *      state in NET_RECEIVE's arguments, NET_RECEIVE's INITIAL), an STDPSyn
 *      (stdpsyn.mod: FOR_NETCONS at a WATCH of v) and a WatchCount
 *      (data/mechanisms/events/watchcount.mod: WATCH on v, a net_event at each
 *      crossing), against NEURON
 *      9.0.2 (tests/data/neuron_events/events.csv, validation/neuron_events.py):
 *      every source's spikes (the artificial cells' at their exact times, the
 *      WATCH's and the cell's to the step) and v. Four copies of the network on four cells,
 *      run with 1, 2 and 4 threads: every copy NEURON's, the runs identical to the bit;
 *   2. the descriptors (weight vector length, artificial, event flags, no
 *      CUDA entry points) and the errors: a point source twice, a connection
 *      from one with a delay below dt, the translator's refusals (file:line);
 *   3. the GPU loop's refusal of FOR_NETCONS (where a GPU runs), naming the
 *      mod file, the line and the construct (ns_mech_desc.cuda_why_not);
 *   5. events on the GPU (`test_sim_events cuda`, ctest test_sim_events_cuda:
 *      skips without a GPU or CUDA), the library built with nvcc: IntFire1,
 *      IntFire2 and IntFire4 (self events, net_move, net_event, ARTIFICIAL_CELL)
 *      driven by trains, their spikes into an ExpSyn, a WatchCount (WATCH on
 *      v, a self event from INITIAL, net_event) and an FDSyn (weight
 *      vectors written back by NET_RECEIVE, NET_RECEIVE's INITIAL) driven by
 *      trains and by the other cells' detectors, on the GPU loop against the
 *      CPU loop: every spike within 1e-9 ms (the artificial cells') or 1e-6 ms,
 *      v within 1e-6 mV (the CPU run itself is checked here on every host);
 *   6. (in 5.) NEURON 9's netstim.mod built with nvcc (its VERBATIM C only in what hoc
 *      calls): noisy and regular NetStims into ExpSyns on the GPU loop against the CPU
 *      loop, the trains' spikes within 1e-9 ms, the cells' within 1e-6 ms, v 1e-6 mV;
 *   7. (in 5.) a point process's hoc_execerror in VERBATIM C (vberr.mod) stops the GPU
 *      run with NS_ERR_MECHANISM naming the file, line, mechanism and message, as the CPU's;
 *   8. (in 5.) a point process's BEFORE/AFTER blocks on the GPU (BaSyn below: each block's
 *      effect reaches its current) against the CPU loop: v within 1e-9 mV;
 *   9. (in 5.) a point process's CONSTRUCTOR and DESTRUCTOR, which the GPU loop runs on the
 *      host around the device's copy (CtorSyn, tests/data/nmodl_gpu/ctorgpu.mod), against
 *      the CPU loop: v within 1e-9 mV;
 *   4. NEURON's netstim.mod (data/mechanisms/events: RANDOM ranvar, VERBATIM) with
 *      noise 1: its spike times are start + interval e0, then + interval e_k, e_k
 *      the negexp draws of NEURON's nrnran123 stream (written out below from
 *      NEURON's nrnran123.cpp) of the ids ns_sim_synapse_set gave ("ranvar.id1"
 *      ...; "ranvar.seq": the stream's position), or of the default ids (the
 *      cell, the synapse, the mechanism's key + 1); the errors of those names.
 * Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define DT 0.025
#define TSTOP 100.0
#define COPIES 4
#define MAXS 64

/* validation/neuron_events.py's network */
static const double T1[] = {2.0, 4.1, 6.3, 20.2, 21.7, 23.3, 24.9, 50.6, 52.2, 53.9};
static const double T2[] = {10.35, 30.8, 31.9, 60.4, 61.5, 62.6, 63.7};
static const double T3[] = {70.15};
static const char *ART_MECH[4] = {"IntFire1", "IntFire2", "IntFire4", "NetStim"};
typedef struct pset { const char *who, *name; double value; } pset;
static const pset PARAMS[] = {{"a", "tau", 10}, {"a", "refrac", 5}, {"b", "taus", 20}, {"b", "taum", 10},
                              {"b", "ib", 0.5}, {"c", "taue", 5}, {"c", "taui1", 10}, {"c", "taui2", 20},
                              {"c", "taum", 50}, {"s", "start", 5}, {"s", "interval", 7.3}, {"s", "number", 4},
                              {"s", "noise", 0},  {"syn0", "tau", 2}, {"syn0", "e", 0}};
typedef struct conn { const char *src, *tgt; double w, d; } conn;
static const conn NET[] = {{"T1", "a", 0.45, 1.0},    {"T2", "a", 0.5, 1.0},     {"T1", "b", 0.6, 1.2},
                           {"T2", "b", 0.8, 1.0},     {"T1", "c", 0.6, 1.0},     {"T2", "c", -0.3, 1.3},
                           {"T3", "s", 1.0, 1.0},     {"a", "syn0", 0.02, 1.0},  {"b", "syn0", 0.02, 1.5},
                           {"c", "syn0", 0.02, 2.0},  {"s", "syn0", 0.015, 1.0}, {"T1", "syn1", 0.004, 1.5},
                           {"T2", "syn1", 0.006, 2.0},  {"T1", "syn2", 0.002, 1.5},  {"T2", "syn2", 0.002, 2.0}};

/* names: a b c s syn0 syn1 w syn2 (synapses 0..7 of a copy) */
static int syn_index(const char *n) {
    static const char *names[8] = {"a", "b", "c", "s", "syn0", "syn1", "w", "syn2"};
    for (int k = 0; k < 8; ++k)
        if (!strcmp(names[k], n)) return k;
    return -1;
}

typedef struct ref {
    int n[6];           /* spikes of a, b, c, s, w, cell */
    double t[6][MAXS];
    int rows;
    double *tv;         /* t, v */
} ref;

static int read_ref(ref *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(NS_TEST_DATA "/neuron_events/events.csv", "r");
    if (!f) return -1;
    char line[8192];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (!strncmp(line, "spikes,", 7)) {
            char *p = line + 7, *comma = strchr(p, ',');
            const char *who[6] = {"a", "b", "c", "s", "w", "cell"};
            int k = -1;
            for (int q = 0; q < 6; ++q)
                if ((size_t)(comma ? comma - p : (long)strcspn(p, "\n")) == strlen(who[q]) &&
                    !strncmp(p, who[q], strlen(who[q])))
                    k = q;
            if (k < 0) continue;
            while (comma && r->n[k] < MAXS) {
                r->t[k][r->n[k]++] = strtod(comma + 1, &p);
                comma = strchr(p, ',');
            }
            continue;
        }
        if (r->rows == cap) {
            cap = cap ? 2 * cap : 1024;
            double *q = realloc(r->tv, (size_t)cap * 2 * sizeof *q);
            if (!q) break;
            r->tv = q;
        }
        if (sscanf(line, "%lf,%lf", &r->tv[2 * r->rows], &r->tv[2 * r->rows + 1]) == 2) r->rows++;
    }
    fclose(f);
    return r->rows > 0 ? 0 : -1;
}

typedef struct run_out {
    int64_t n[COPIES][6];
    double t[COPIES][6][MAXS];
    double *trace; /* samples x COPIES */
    int64_t samples;
} run_out;

/* One copy of the network per cell; sources per copy: T1 T2 T3, then a b c s w, then the cell's detector. */
/* COPIES copies of the cell with hh everywhere on backend (threads: 0 for the default), and the
 * node of its soma(0.5); NULL after a failed check */
static ns_sim_t *copies_sim(ns_mech_library_t *lib, const ns_cell_t *cell, ns_backend backend, int threads,
                            int32_t *node) {
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) return NULL;
    static const char *text = "all.insert = hh\n";
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "events.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = DT;
    p.celsius = 6.3;
    p.v_init = -65;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.threads = threads;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, COPIES, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    *node = -1;
    if (sim) CHECK_OK(ns_cell_locate(cell, 0, 0.5, node));
    return sim;
}

static void run(ns_mech_library_t *lib, const ns_cell_t *cell, int threads, run_out *out) {
    memset(out, 0, sizeof *out);
    int32_t node = -1;
    ns_sim_t *sim = copies_sim(lib, cell, NS_BACKEND_CPU, threads, &node);
    if (!sim) return;
    int64_t src[COPIES][9];
    for (int c = 0; c < COPIES; ++c) {
        int64_t syn[8];
        for (int k = 0; k < 4; ++k) CHECK_OK(ns_sim_add_synapse(sim, c, node, ART_MECH[k], &syn[k]));
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "ExpSyn", &syn[4]));
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "FDSyn", &syn[5]));
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "WatchCount", &syn[6]));
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "STDPSyn", &syn[7]));
        for (size_t q = 0; q < sizeof PARAMS / sizeof *PARAMS; ++q)
            CHECK_OK(ns_sim_synapse_set(sim, syn[syn_index(PARAMS[q].who)], PARAMS[q].name, PARAMS[q].value));
        CHECK_OK(ns_sim_add_spike_source(sim, T1, sizeof T1 / sizeof *T1, &src[c][0]));
        CHECK_OK(ns_sim_add_spike_source(sim, T2, sizeof T2 / sizeof *T2, &src[c][1]));
        CHECK_OK(ns_sim_add_spike_source(sim, T3, 1, &src[c][2]));
        for (int k = 0; k < 4; ++k) CHECK_OK(ns_sim_add_point_source(sim, syn[k], &src[c][3 + k]));
        CHECK_OK(ns_sim_add_point_source(sim, syn[6], &src[c][7]));
        CHECK_OK(ns_sim_add_detector(sim, c, node, 0.0, &src[c][8]));
        for (size_t q = 0; q < sizeof NET / sizeof *NET; ++q) {
            const char *s = NET[q].src;
            const int64_t from = s[0] == 'T' ? src[c][s[1] - '1'] : src[c][3 + syn_index(s)];
            CHECK_OK(ns_sim_connect(sim, from, syn[syn_index(NET[q].tgt)], NET[q].w, NET[q].d));
        }
        CHECK_OK(ns_sim_add_recording(sim, c, node, NULL));
    }
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, TSTOP);
    CHECK_OK(ns_sim_advance(sim, steps / 3)); /* in two calls: the queues carry over */
    CHECK_OK(ns_sim_advance(sim, steps - steps / 3));
    for (int c = 0; c < COPIES; ++c)
        for (int k = 0; k < 6; ++k) {
            int64_t n = 0;
            const double *x = ns_sim_source_spikes(sim, src[c][3 + k], &n);
            out->n[c][k] = n;
            for (int64_t j = 0; j < n && j < MAXS; ++j) out->t[c][k][j] = x[j];
        }
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &out->samples, &sites);
    CHECK(tr && sites == COPIES && out->samples == steps + 1);
    if (tr && sites == COPIES) {
        out->trace = malloc((size_t)out->samples * COPIES * sizeof *out->trace);
        if (out->trace) memcpy(out->trace, tr, (size_t)out->samples * COPIES * sizeof *tr);
    }
    ns_sim_destroy(sim);
}

static void against_neuron(ns_mech_library_t *lib, const ns_cell_t *cell) {
    ref r;
    CHECK_MSG(read_ref(&r) == 0, "cannot read tests/data/neuron_events/events.csv");
    if (!r.rows) return;
    /* the reference exercises what it should: every cell fires, IntFire2 often */
    CHECK(r.n[0] >= 3 && r.n[1] >= 10 && r.n[2] >= 3 && r.n[3] == 8 && r.n[4] >= 5 && r.n[5] >= 3);
    static run_out runs[3];
    const int threads[3] = {1, 2, 4};
    for (int q = 0; q < 3; ++q) run(lib, cell, threads[q], &runs[q]);
    const char *who[6] = {"IntFire1", "IntFire2", "IntFire4", "NetStim", "WatchCount", "the cell"};
    double worst_art = 0.0, worst_cell = 0.0;
    for (int c = 0; c < COPIES; ++c)
        for (int k = 0; k < 6; ++k) {
            CHECK_MSG(runs[0].n[c][k] == r.n[k], "copy %d, %s: %lld spikes, NEURON %d", c, who[k],
                      (long long)runs[0].n[c][k], r.n[k]);
            for (int j = 0; j < r.n[k] && j < runs[0].n[c][k]; ++j) {
                const double d = fabs(runs[0].t[c][k][j] - r.t[k][j]);
                if (k < 4 && !(d <= worst_art)) worst_art = d;
                if (k >= 4 && !(d <= worst_cell)) worst_cell = d;
            }
        }
    printf("spike times against NEURON: artificial cells max |dt| %.3e ms, WATCH's and the cell's %.3e ms\n", worst_art,
           worst_cell);
    CHECK_MSG(worst_art <= 1e-9, "an artificial cell's spike differs from NEURON's by %g ms", worst_art);
    CHECK_MSG(worst_cell <= 1e-9, "a WATCH's or the cell's spike differs from NEURON's by %g ms (not the same step)",
              worst_cell);
    if (runs[0].trace) {
        double sum = 0.0, worst = 0.0;
        for (int c = 0; c < COPIES; ++c)
            for (int j = 0; j < r.rows; ++j) {
                const long s = lround(r.tv[2 * j] / DT);
                if (s >= runs[0].samples) continue;
                const double dv = runs[0].trace[s * COPIES + c] - r.tv[2 * j + 1];
                sum += dv * dv;
                if (!(fabs(dv) <= worst)) worst = fabs(dv);
            }
        const double rms = sqrt(sum / (COPIES * r.rows));
        printf("v against NEURON: RMS %.3e mV, max %.3e mV over %d samples x %d copies\n", rms, worst, r.rows, COPIES);
        CHECK_MSG(rms <= 1e-6 && worst <= 1e-4, "v differs from NEURON's: RMS %g mV, max %g mV", rms, worst);
    }
    for (int q = 1; q < 3; ++q) {
        int same = runs[q].samples == runs[0].samples && runs[q].trace && runs[0].trace &&
                   memcmp(runs[q].trace, runs[0].trace, (size_t)runs[0].samples * COPIES * sizeof(double)) == 0;
        same &= memcmp(runs[q].n, runs[0].n, sizeof runs[0].n) == 0 && memcmp(runs[q].t, runs[0].t, sizeof runs[0].t) == 0;
        CHECK_MSG(same, "%d threads: not identical to the bit to 1 thread's run", threads[q]);
    }
    for (int q = 0; q < 3; ++q) free(runs[q].trace);
    free(r.tv);
}

/* 2. descriptors and errors */
static void descriptors_and_errors(ns_mech_library_t *lib, const ns_cell_t *cell) {
    const ns_mech_desc *d = NULL;
    CHECK_OK(ns_mech_library_find(lib, "FDSyn", &d));
    /* per-connection state and NET_RECEIVE's INITIAL have CUDA code (none in this host build); why a
     * mechanism has none: the first construct that keeps it on the CPU loop, FILE:LINE */
    CHECK(d && d->n_weights == 4 && !d->artificial && d->events == NS_MECH_EV_INIT && d->net_init &&
          d->net_receive_w && !d->cuda_init && !d->cuda_net_receive && !d->cuda_why_not);
    CHECK_OK(ns_mech_library_find(lib, "IntFire2", &d));
    CHECK(d && d->n_weights == 1 && d->artificial &&
          d->events == (NS_MECH_EV_SEND | NS_MECH_EV_EVENT | NS_MECH_EV_MOVE) && !d->net_init && !d->cuda_state);
    /* self events, net_event, net_move and ARTIFICIAL_CELL have CUDA code: no reason for none */
    CHECK_MSG(d && !d->cuda_why_not, "IntFire2: %s", d && d->cuda_why_not ? d->cuda_why_not : "");
    CHECK_OK(ns_mech_library_find(lib, "NetStim", &d));
    CHECK(d && d->artificial && d->events == (NS_MECH_EV_SEND | NS_MECH_EV_EVENT));
    /* its VERBATIM C is only in the PROCEDUREs hoc calls: nothing keeps it off the GPU */
    CHECK_MSG(d && !d->cuda_why_not, "NetStim: %s", d && d->cuda_why_not ? d->cuda_why_not : "");
    CHECK_OK(ns_mech_library_find(lib, "WatchCount", &d));
    CHECK(d && !d->artificial && d->n_watch == 3 && d->watch_value &&
          d->events == (NS_MECH_EV_SEND | NS_MECH_EV_EVENT | NS_MECH_EV_WATCH) && !d->cuda_init);
    CHECK_MSG(d && !d->cuda_why_not, "WatchCount: %s", d && d->cuda_why_not ? d->cuda_why_not : "");
    CHECK_OK(ns_mech_library_find(lib, "STDPSyn", &d));
    CHECK(d && d->n_weights == 3 &&
          d->events == (NS_MECH_EV_SEND | NS_MECH_EV_INIT | NS_MECH_EV_WATCH | NS_MECH_EV_NETCONS));
    CHECK_MSG(d && d->cuda_why_not && strstr(d->cuda_why_not, "stdpsyn.mod:60: FOR_NETCONS"), "STDPSyn: %s",
              d && d->cuda_why_not ? d->cuda_why_not : "(none)");

    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    int64_t a = -1, e = -1, s = -1;
    CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "IntFire1", &a));
    CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &e));
    CHECK_OK(ns_sim_add_point_source(sim, a, &s));
    CHECK(ns_sim_source_cell(sim, s) == -1);
    ns_status st = ns_sim_add_point_source(sim, a, NULL);
    CHECK(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "already source"));
    st = ns_sim_add_point_source(sim, 7, NULL);
    CHECK(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "synapse 7 does not exist"));
    CHECK_OK(ns_sim_connect(sim, s, e, 0.01, DT / 2));
    st = ns_sim_init(sim);
    CHECK_MSG(st == NS_ERR_UNSUPPORTED && strstr(ns_last_error(), "delay 0.0125 ms is below dt"), "%s",
              ns_last_error());
    ns_sim_destroy(sim);

    /* the translator: where nocmodl refuses, with the file and line */
    static const struct { const char *text, *want; ns_status st; } BAD[] = {
        {"NEURON { POINT_PROCESS x }\nPROCEDURE p() {\n  net_send(1, 1)\n}\nNET_RECEIVE(w) { }\n",
         "bad.mod:3: net_send is allowed only in the INITIAL and NET_RECEIVE blocks", NS_ERR_INVALID_ARGUMENT},
        {"NEURON { POINT_PROCESS x }\nNET_RECEIVE(w, y, w) { }\n", "bad.mod:2: NET_RECEIVE: argument 'w' twice",
         NS_ERR_PARSE},
        {"NEURON { POINT_PROCESS x }\nNET_RECEIVE(w, y) {\n  INITIAL { y = 1 }\n  INITIAL { y = 2 }\n}\n",
         "bad.mod:4: a second INITIAL in NET_RECEIVE", NS_ERR_PARSE},
        {"NEURON { POINT_PROCESS x }\nNET_RECEIVE(w, y) {\n  INITIAL {\n    net_send(1, 1)\n  }\n}\n",
         "bad.mod:4: net_send is allowed only", NS_ERR_INVALID_ARGUMENT},
        {"NEURON { POINT_PROCESS x }\nNET_RECEIVE(w) {\n  net_move(t, 1)\n}\n", "bad.mod:3: net_move takes 1 argument",
         NS_ERR_INVALID_ARGUMENT},
        {"NEURON { SUFFIX x }\nINITIAL {\n  net_send(1, 1)\n}\n", "bad.mod:3: net_send in a density mechanism",
         NS_ERR_INVALID_ARGUMENT},
        {"NEURON { POINT_PROCESS x }\nINITIAL {\n  WATCH (v > 1) 2\n}\nNET_RECEIVE(w) { }\n",
         "bad.mod:3: WATCH is allowed only in the NET_RECEIVE block", NS_ERR_INVALID_ARGUMENT},
        {"NEURON { POINT_PROCESS x }\nNET_RECEIVE(w) {\n  WATCH (v + 1) 2\n}\n",
         "bad.mod:3: WATCH needs a condition a > b or a < b", NS_ERR_INVALID_ARGUMENT},
        {"NEURON { ARTIFICIAL_CELL x }\nNET_RECEIVE(w) {\n  FOR_NETCONS (y, z) { }\n}\n",
         "bad.mod:3: FOR_NETCONS names 2 arguments, NET_RECEIVE has 1", NS_ERR_INVALID_ARGUMENT},
        {"NEURON { ARTIFICIAL_CELL x }\nINITIAL {\n  FOR_NETCONS (y) { }\n}\nNET_RECEIVE(w) { }\n",
         "bad.mod:3: FOR_NETCONS is allowed only in the NET_RECEIVE block", NS_ERR_INVALID_ARGUMENT},
    };
    /* NEURON 9's state_discontinuity(x, e) is x = e; at_time(te) its fixed-step test */
    {
        ns_nmodl_t *m = NULL;
        char *h = NULL;
        CHECK_OK(ns_nmodl_parse_string("NEURON { POINT_PROCESS sd RANGE n }\nASSIGNED { n }\nSTATE { g }\n"
                                       "BREAKPOINT { if (at_time(5)) { n = n + 1 } }\n"
                                       "NET_RECEIVE(w) { state_discontinuity(g, g + w) }\n",
                                       "sd.mod", &m));
        if (m) CHECK_OK(ns_nmodl_emit(m, NS_NMODL_HEADER, &h));
        CHECK(h && strstr(h, "(*F1_) = ((*F1_) + A_w);") && strstr(h, "if (nsm_at_time(p->t, p->dt, 5.0)) {") &&
              strstr(h, "const double x = te - 1e-11;\n    return (x <= t && x > t - dt) ? 1.0 : 0.0;"));
        ns_nmodl_free(h);
        ns_nmodl_destroy(m);
    }
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; ++k) {
        ns_nmodl_t *m = NULL;
        st = ns_nmodl_parse_string(BAD[k].text, "bad.mod", &m);
        CHECK_MSG(st == BAD[k].st && strstr(ns_last_error(), BAD[k].want), "case %zu: %d %s (want %s)", k, (int)st,
                  st ? ns_last_error() : "success", BAD[k].want);
        ns_nmodl_destroy(m);
    }
}

/* 3. the GPU loop refuses a network of event mechanisms, naming the CPU
 * backend (checked where a GPU runs: the CUDA build on a GPU host) */
static void gpu_refuses(ns_mech_library_t *lib, const ns_cell_t *cell) {
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CUDA;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    ns_status st = ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim);
    ns_sim_model_destroy(model);
    if (st != NS_OK) {
        printf("the GPU loop's refusal not checked here: %s\n", ns_last_error());
        return;
    }
    int64_t a = -1, t = -1;
    const double times[1] = {1.0};
    CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "STDPSyn", &a));
    CHECK_OK(ns_sim_add_spike_source(sim, times, 1, &t));
    CHECK_OK(ns_sim_connect(sim, t, a, 2.0, 1.0));
    st = ns_sim_init(sim);
    CHECK_MSG(st == NS_ERR_UNSUPPORTED && strstr(ns_last_error(), "STDPSyn") &&
                  strstr(ns_last_error(), "stdpsyn.mod:60: FOR_NETCONS") && strstr(ns_last_error(), "CPU backend"),
              "%d %s", (int)st, ns_last_error());
    printf("the GPU loop refuses STDPSyn: %s\n", ns_last_error());
    ns_sim_destroy(sim);
}

/* 4. NetStim's trains: NEURON's nrnran123 (nrnran123.cpp): word `which` of Philox4x32-10 of
 * {seq, id3, id1, id2} under the key {0, 0}; negexp -log((u + 1) / (2^32 + 1)) */
static double nrnran123_negexp(const uint32_t id[3], uint64_t *pos) {
    uint32_t c[4] = {(uint32_t)(*pos >> 2), id[2], id[0], id[1]};
    const uint32_t key[2] = {0, 0};
    for (int r = 0; r < 10; ++r) { /* Philox4x32-10 (Salmon et al. 2011), as Random123 */
        const uint32_t k0 = key[0] + (uint32_t)r * 0x9E3779B9u, k1 = key[1] + (uint32_t)r * 0xBB67AE85u;
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t x0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, x2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = x0;
        c[2] = x2;
    }
    const uint32_t u = c[*pos & 3];
    ++*pos;
    return -log(((double)u + 1.0) * (1.0 / 4294967297.0)) * 1.0;
}

static void netstim_streams(ns_mech_library_t *lib, const ns_cell_t *cell) {
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    /* three trains: ids (7, 3, 11), the same put at word 5 (NetStim's INITIAL calls seed(0),
     * random_setseq(ranvar, 0): back at word 0, as in NEURON), the defaults */
    const double start = 2.0, interval = 4.0;
    int64_t syn[3], src[3];
    for (int k = 0; k < 3; ++k) {
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "NetStim", &syn[k]));
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "noise", 1.0));
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "start", start));
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "interval", interval));
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "number", 1e9));
        CHECK_OK(ns_sim_add_point_source(sim, syn[k], &src[k]));
    }
    for (int k = 0; k < 2; ++k) {
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "ranvar.id1", 7));
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "ranvar.id2", 3));
        CHECK_OK(ns_sim_synapse_set(sim, syn[k], "ranvar.id3", 11));
    }
    CHECK_OK(ns_sim_synapse_set(sim, syn[1], "ranvar.seq", 5));
    /* the names' errors */
    ns_status st = ns_sim_synapse_set(sim, syn[0], "ranvar.id1", -1);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "ranvar.id1 = -1") &&
                  strstr(ns_last_error(), "nrnran123 id"),
              "%s", ns_last_error());
    st = ns_sim_synapse_set(sim, syn[0], "ranvar.id2", 1.5);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "an integer in [0, 4294967296)"), "%s",
              ns_last_error());
    st = ns_sim_synapse_set(sim, syn[0], "ranvar.seq", 17179869184.0);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "seq * 4 + which"), "%s", ns_last_error());
    st = ns_sim_synapse_set(sim, syn[0], "ranvar.id4", 1);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "no parameter 'ranvar.id4'") &&
                  strstr(ns_last_error(), "ranvar.id1, .id2, .id3, .seq"),
              "%s", ns_last_error());
    st = ns_sim_synapse_set(sim, syn[0], "other.id1", 1);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "no parameter 'other.id1'"), "%s",
              ns_last_error());
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, 60.0)));
    /* the default ids: the cell, the synapse's index, FNV-1a("NetStim") + 1 (RANDOM ranvar's stream) */
    uint32_t fnv = 2166136261u;
    for (const char *c = "NetStim"; *c; c++) fnv = (fnv ^ (unsigned char)*c) * 16777619u;
    const uint32_t ids[3][3] = {{7, 3, 11}, {7, 3, 11}, {0, (uint32_t)syn[2], fnv + 1u}};
    for (int k = 0; k < 3; ++k) {
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, src[k], &n);
        uint64_t pos = 0;
        double t = start + interval * nrnran123_negexp(ids[k], &pos), worst = 0.0;
        int64_t want = 0;
        for (; t <= 60.0; t = t + interval * nrnran123_negexp(ids[k], &pos), ++want)
            if (want < n) worst = fmax(worst, fabs(x[want] - t));
        CHECK_MSG(n == want && n >= 8 && worst <= 1e-9, "NetStim %d: %lld spikes (want %lld), largest difference %g ms",
                  k, (long long)n, (long long)want, worst);
        printf("NetStim %d (noise 1): %lld spikes as NEURON's nrnran123 stream draws them (largest difference %.1e ms)\n",
               k, (long long)n, worst);
    }
    ns_sim_destroy(sim);
}

/* 5. per copy c: IntFire1, IntFire2, IntFire4 driven by the trains as in
 * part 1, their spikes into an ExpSyn on cell c, a WatchCount on it; an FDSyn on it driven by T1
 * and T2 and by the detector of cell c - 1 (two connections from one source
 * into one instance: two weight vectors); spikes of the three and of the
 * cells, v of each */
#define FD_STEPS 4000 /* 100 ms */
typedef struct fd_out {
    int64_t n[COPIES][5]; /* IntFire1, IntFire2, IntFire4, the cell, WatchCount */
    double t[COPIES][5][MAXS];
    double *trace;
    int64_t samples;
} fd_out;

static void fdsyn_run(ns_mech_library_t *lib, const ns_cell_t *cell, ns_backend backend, fd_out *out) {
    memset(out, 0, sizeof *out);
    int32_t node = -1;
    ns_sim_t *sim = copies_sim(lib, cell, backend, 0, &node);
    if (!sim) return;
    int64_t syn[COPIES], det[COPIES], src[COPIES][4], t1 = -1, t2 = -1, t3 = -1;
    CHECK_OK(ns_sim_add_spike_source(sim, T1, sizeof T1 / sizeof *T1, &t1));
    CHECK_OK(ns_sim_add_spike_source(sim, T2, sizeof T2 / sizeof *T2, &t2));
    CHECK_OK(ns_sim_add_spike_source(sim, T3, 1, &t3));
    for (int c = 0; c < COPIES; ++c) {
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "FDSyn", &syn[c]));
        CHECK_OK(ns_sim_synapse_set(sim, syn[c], "tauF", 20.0 + 10.0 * c)); /* each copy its own */
        CHECK_OK(ns_sim_add_detector(sim, c, node, 0.0, &det[c]));
        CHECK_OK(ns_sim_add_recording(sim, c, node, NULL));
        int64_t art[5]; /* a b c, syn0 (ExpSyn) */
        for (int k = 0; k < 3; ++k) CHECK_OK(ns_sim_add_synapse(sim, c, node, ART_MECH[k], &art[k]));
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "ExpSyn", &art[4]));
        for (size_t q = 0; q < sizeof PARAMS / sizeof *PARAMS; ++q) {
            const int k = syn_index(PARAMS[q].who);
            if (k < 3 || k == 4) CHECK_OK(ns_sim_synapse_set(sim, art[k], PARAMS[q].name, PARAMS[q].value));
        }
        for (int k = 0; k < 3; ++k) CHECK_OK(ns_sim_add_point_source(sim, art[k], &src[c][k]));
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "WatchCount", &art[3]));
        CHECK_OK(ns_sim_add_point_source(sim, art[3], &src[c][3]));
        for (size_t q = 0; q < sizeof NET / sizeof *NET; ++q) {
            const int to = syn_index(NET[q].tgt), from = syn_index(NET[q].src);
            if (!(to < 3 || to == 4) || (NET[q].src[0] != 'T' && from >= 3)) continue; /* not NetStim's */
            const int64_t s0 = NET[q].src[0] == 'T' ? (NET[q].src[1] == '1' ? t1 : NET[q].src[1] == '2' ? t2 : t3)
                                                    : src[c][from];
            CHECK_OK(ns_sim_connect(sim, s0, art[to], NET[q].w, NET[q].d));
        }
    }
    for (int c = 0; c < COPIES; ++c) {
        CHECK_OK(ns_sim_connect(sim, t1, syn[c], 0.03 + 0.005 * c, 1.0));
        CHECK_OK(ns_sim_connect(sim, t2, syn[c], 0.04, 1.5));
        CHECK_OK(ns_sim_connect(sim, det[(c + COPIES - 1) % COPIES], syn[c], 0.02, 2.0));
        CHECK_OK(ns_sim_connect(sim, det[(c + COPIES - 1) % COPIES], syn[c], 0.01, 3.0));
    }
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, FD_STEPS / 3)); /* in two calls: the weight vectors carry over */
    CHECK_OK(ns_sim_advance(sim, FD_STEPS - FD_STEPS / 3));
    for (int c = 0; c < COPIES; ++c)
        for (int k = 0; k < 5; ++k) {
            const double *x = ns_sim_source_spikes(sim, k < 3 ? src[c][k] : k == 3 ? det[c] : src[c][3], &out->n[c][k]);
            for (int64_t j = 0; j < out->n[c][k] && j < MAXS; ++j) out->t[c][k][j] = x[j];
        }
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &out->samples, &sites);
    CHECK(tr && sites == COPIES && out->samples == FD_STEPS + 1);
    if (tr && sites == COPIES && (out->trace = malloc((size_t)out->samples * COPIES * sizeof *tr)))
        memcpy(out->trace, tr, (size_t)out->samples * COPIES * sizeof *tr);
    ns_sim_destroy(sim);
}

/* The CPU run exercises what the GPU comparison needs: every cell fires, and
 * the connections' state matters (copies differ only in tauF: their spikes differ) */
static void fdsyn_cpu(ns_mech_library_t *lib, const ns_cell_t *cell, fd_out *cpu) {
    fdsyn_run(lib, cell, NS_BACKEND_CPU, cpu);
    int differ = 0;
    for (int c = 0; c < COPIES; ++c) {
        for (int k = 0; k < 5; ++k)
            CHECK_MSG(cpu->n[c][k] >= 3 && cpu->n[c][k] <= MAXS, "events network, copy %d, source %d: %lld spikes", c,
                      k, (long long)cpu->n[c][k]);
        const int64_t n = cpu->n[c][3], n0 = cpu->n[0][3];
        differ |= n != n0 || (n > 0 && cpu->t[c][3][n - 1] != cpu->t[0][3][n0 - 1]);
    }
    CHECK_MSG(differ, "events network: tauF changes no spike (the facilitation is not exercised)");
    printf("events network on the CPU: IntFire1 %lld, IntFire2 %lld, IntFire4 %lld, WatchCount %lld spikes; cells "
           "%lld, %lld, %lld, %lld\n", (long long)cpu->n[0][0], (long long)cpu->n[0][1], (long long)cpu->n[0][2],
           (long long)cpu->n[0][4], (long long)cpu->n[0][3], (long long)cpu->n[1][3], (long long)cpu->n[2][3],
           (long long)cpu->n[3][3]);
}

#ifdef NS_NVCC
/* 6. NEURON 9's netstim.mod on the GPU (its VERBATIM C is only in what hoc calls): per copy c
 * three NetStims, noise 1 (ids 7, 3 + c, 11), noise 0.5 (the default ids) and noise 0, into an
 * ExpSyn on cell c; the trains' and the cells' spikes and v */
#define NS_STEPS 4000 /* 100 ms */
typedef struct ns_out {
    int64_t n[COPIES][4]; /* the three NetStims, the cell */
    double t[COPIES][4][MAXS];
    double *trace;
    int64_t samples;
} ns_out;
static void netstim_run(ns_mech_library_t *lib, const ns_cell_t *cell, ns_backend backend, ns_out *out) {
    memset(out, 0, sizeof *out);
    int32_t node = -1;
    ns_sim_t *sim = copies_sim(lib, cell, backend, 0, &node);
    if (!sim) return;
    int64_t src[COPIES][4];
    static const double noise[3] = {1.0, 0.5, 0.0}, interval[3] = {4.0, 6.0, 9.0};
    for (int c = 0; c < COPIES; ++c) {
        int64_t syn = -1;
        CHECK_OK(ns_sim_add_synapse(sim, c, node, "ExpSyn", &syn));
        CHECK_OK(ns_sim_synapse_set(sim, syn, "tau", 2.0));
        for (int k = 0; k < 3; ++k) {
            int64_t a = -1;
            CHECK_OK(ns_sim_add_synapse(sim, c, node, "NetStim", &a));
            CHECK_OK(ns_sim_synapse_set(sim, a, "noise", noise[k]));
            CHECK_OK(ns_sim_synapse_set(sim, a, "start", 3.0 + c));
            CHECK_OK(ns_sim_synapse_set(sim, a, "interval", interval[k]));
            CHECK_OK(ns_sim_synapse_set(sim, a, "number", 1e9));
            if (k == 0) {
                CHECK_OK(ns_sim_synapse_set(sim, a, "ranvar.id1", 7));
                CHECK_OK(ns_sim_synapse_set(sim, a, "ranvar.id2", 3 + c));
                CHECK_OK(ns_sim_synapse_set(sim, a, "ranvar.id3", 11));
            }
            CHECK_OK(ns_sim_add_point_source(sim, a, &src[c][k]));
            CHECK_OK(ns_sim_connect(sim, src[c][k], syn, 0.004 + 0.002 * k, 1.0 + 0.25 * k));
        }
        CHECK_OK(ns_sim_add_detector(sim, c, node, 0.0, &src[c][3]));
        CHECK_OK(ns_sim_add_recording(sim, c, node, NULL));
    }
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, NS_STEPS));
    for (int c = 0; c < COPIES; ++c)
        for (int k = 0; k < 4; ++k) {
            const double *x = ns_sim_source_spikes(sim, src[c][k], &out->n[c][k]);
            for (int64_t j = 0; j < out->n[c][k] && j < MAXS; ++j) out->t[c][k][j] = x[j];
        }
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &out->samples, &sites);
    CHECK(tr && sites == COPIES && out->samples == NS_STEPS + 1);
    if (tr && sites == COPIES && (out->trace = malloc((size_t)out->samples * COPIES * sizeof *tr)))
        memcpy(out->trace, tr, (size_t)out->samples * COPIES * sizeof *tr);
    ns_sim_destroy(sim);
}
static void netstim_gpu(ns_mech_library_t *lib, const ns_cell_t *cell) {
    static ns_out cpu, gpu;
    netstim_run(lib, cell, NS_BACKEND_CPU, &cpu);
    netstim_run(lib, cell, NS_BACKEND_CUDA, &gpu);
    double worst_s = 0.0, worst_t = 0.0, worst_v = 0.0;
    for (int c = 0; c < COPIES; ++c)
        for (int k = 0; k < 4; ++k) {
            /* every train fires, the noisy ones differ between copies, and the cells fire */
            CHECK_MSG(cpu.n[c][k] >= (k < 3 ? 8 : 2) && cpu.n[c][k] <= MAXS, "NetStim network, copy %d, source %d: "
                      "%lld spikes", c, k, (long long)cpu.n[c][k]);
            CHECK_MSG(gpu.n[c][k] == cpu.n[c][k], "NetStim copy %d, source %d: %lld spikes on the GPU, %lld on the CPU",
                      c, k, (long long)gpu.n[c][k], (long long)cpu.n[c][k]);
            for (int64_t j = 0; j < cpu.n[c][k] && j < gpu.n[c][k] && j < MAXS; ++j) {
                const double d = fabs(gpu.t[c][k][j] - cpu.t[c][k][j]);
                if (k < 3) worst_s = fmax(worst_s, d);
                else worst_t = fmax(worst_t, d);
            }
        }
    CHECK_MSG(cpu.t[0][0][1] != cpu.t[1][0][1], "the noise-1 trains of copies 0 and 1 are the same");
    for (int64_t k = 0; cpu.trace && gpu.trace && k < cpu.samples * COPIES; ++k)
        worst_v = fmax(worst_v, fabs(gpu.trace[k] - cpu.trace[k]));
    CHECK(cpu.trace && gpu.trace);
    printf("NetStim network, GPU against CPU: NetStims' spikes %.3e ms, the cells' %.3e ms, v %.3e mV at most "
           "(copy 0: %lld, %lld, %lld train spikes, %lld cell spikes)\n", worst_s, worst_t, worst_v,
           (long long)cpu.n[0][0], (long long)cpu.n[0][1], (long long)cpu.n[0][2], (long long)cpu.n[0][3]);
    CHECK_MSG(worst_s <= 1e-9 && worst_t <= 1e-6 && worst_v <= 1e-6, "GPU against CPU: %g ms, %g ms, %g mV", worst_s,
              worst_t, worst_v);
    free(cpu.trace);
    free(gpu.trace);
}

/* 7. a point process's hoc_execerror in VERBATIM C on the GPU loop (vberr.mod, written by
 * gpu_events: an ARTIFICIAL_CELL whose NET_RECEIVE stops the run at an event after terr): the
 * run returns NS_ERR_MECHANISM naming the file, line, mechanism and message, as the CPU loop's */
static void vberr_run(ns_mech_library_t *lib, const ns_cell_t *cell, ns_backend backend) {
    int32_t node = -1;
    ns_sim_t *sim = copies_sim(lib, cell, backend, 0, &node);
    if (!sim) return;
    int64_t a = -1, t1 = -1;
    CHECK_OK(ns_sim_add_spike_source(sim, T1, sizeof T1 / sizeof *T1, &t1));
    CHECK_OK(ns_sim_add_synapse(sim, 1, node, "VbErr", &a));
    CHECK_OK(ns_sim_synapse_set(sim, a, "terr", 10.0));
    CHECK_OK(ns_sim_connect(sim, t1, a, 1.0, 1.0));
    CHECK_OK(ns_sim_init(sim));
    const ns_status st = ns_sim_advance(sim, NS_STEPS);
    CHECK_MSG(st == NS_ERR_MECHANISM && strstr(ns_last_error(), "vberr.mod:8: mechanism VbErr: VbErr event after terr"),
              "%s: %d %s", backend == NS_BACKEND_CUDA ? "GPU" : "CPU", (int)st, ns_last_error());
    printf("VbErr's hoc_execerror on the %s loop: %s\n", backend == NS_BACKEND_CUDA ? "GPU" : "CPU", ns_last_error());
    ns_sim_destroy(sim);
}

/* 8. BaSyn: an exponential synapse whose current carries each BEFORE/AFTER block's effect (a block
 * run at the wrong time, too often or not at all changes v): BEFORE INITIAL's v sets INITIAL's g,
 * BEFORE BREAKPOINT counts the steps into the conductance and a ramp, AFTER SOLVE keeps the new v
 * for the next step, BEFORE STEP (also at finitialize's end) against AFTER SOLVE */
static const char BASYN[] =
    "NEURON { POINT_PROCESS BaSyn RANGE tau, e, i NONSPECIFIC_CURRENT i }\n"
    "PARAMETER { tau = 3 (ms) e = 0 (mV) }\n"
    "ASSIGNED { v (mV) i (nA) gb nbb nas nbs vas vbi vai }\nSTATE { g (uS) }\n"
    "BEFORE INITIAL { nbb = 0 nas = 0 nbs = 0 vbi = v }\n"
    "INITIAL { g = 1e-3 * (1 + (vbi + 65)) }\n"
    "AFTER INITIAL { vas = v vai = g }\n"
    "BEFORE BREAKPOINT { nbb = nbb + 1 gb = g * (1 + 0.3 * sin(nbb / 40)) }\n"
    "BREAKPOINT {\n SOLVE state METHOD cnexp\n"
    " i = gb * (v - e) + 1e-5 * nbb + 1e-3 * (v - vas) + 1e-3 * (nbs - nas - 1) + (vai - 1e-3)\n}\n"
    "DERIVATIVE state { g' = -g / tau }\n"
    "AFTER SOLVE { nas = nas + 1 vas = v }\nBEFORE STEP { nbs = nbs + 1 }\n"
    "NET_RECEIVE (w (uS)) { g = g + w }\n";
/* COPIES cells, each with a synapse `name` whose `param` is base + step * c, driven by T1 and T2; the
 * traces of v (NULL on failure) */
static double *syn_run(ns_mech_library_t *lib, const ns_cell_t *cell, ns_backend backend, const char *name,
                       const char *param, double base, double step) {
    int32_t node = -1;
    ns_sim_t *sim = copies_sim(lib, cell, backend, 0, &node);
    if (!sim) return NULL;
    int64_t t1 = -1, t2 = -1;
    CHECK_OK(ns_sim_add_spike_source(sim, T1, sizeof T1 / sizeof *T1, &t1));
    CHECK_OK(ns_sim_add_spike_source(sim, T2, sizeof T2 / sizeof *T2, &t2));
    for (int c = 0; c < COPIES; ++c) {
        int64_t syn = -1;
        CHECK_OK(ns_sim_add_synapse(sim, c, node, name, &syn));
        CHECK_OK(ns_sim_synapse_set(sim, syn, param, base + step * c));
        CHECK_OK(ns_sim_connect(sim, t1, syn, 0.02, 1.0));
        CHECK_OK(ns_sim_connect(sim, t2, syn, 0.03, 1.5));
        CHECK_OK(ns_sim_add_recording(sim, c, node, NULL));
    }
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, NS_STEPS));
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    double *out = NULL;
    CHECK(tr && sites == COPIES && samples == NS_STEPS + 1);
    if (tr && sites == COPIES && samples == NS_STEPS + 1 && (out = malloc((size_t)samples * COPIES * sizeof *tr)))
        memcpy(out, tr, (size_t)samples * COPIES * sizeof *tr);
    ns_sim_destroy(sim);
    return out;
}
/* syn_run of `name` on both loops: v within 1e-9 mV, the copies apart (param differs) */
static void syn_gpu_cpu(ns_mech_library_t *lib, const ns_cell_t *cell, const char *name, const char *param,
                        double base, double step, const char *what) {
    double *cpu = syn_run(lib, cell, NS_BACKEND_CPU, name, param, base, step);
    double *gpu = syn_run(lib, cell, NS_BACKEND_CUDA, name, param, base, step);
    double worst = 0.0, spread = 0.0;
    for (int64_t k = 0; cpu && gpu && k < (int64_t)(NS_STEPS + 1) * COPIES; ++k) {
        worst = fmax(worst, fabs(gpu[k] - cpu[k]));
        spread = fmax(spread, fabs(cpu[k] - cpu[k - k % COPIES])); /* the copies differ (param) */
    }
    printf("%s's %s, GPU against CPU: v %.3e mV at most (copies apart by %.3g mV)\n", name, what, worst, spread);
    CHECK(cpu && gpu);
    CHECK_MSG(worst <= 1e-9 && spread > 1e-3, "%s: GPU against CPU %g mV, copies apart %g mV", name, worst, spread);
    free(cpu);
    free(gpu);
}

static void basyn_gpu(ns_mech_library_t *lib, const ns_cell_t *cell) {
    const ns_mech_desc *d = NULL;
    CHECK_OK(ns_mech_library_find(lib, "BaSyn", &d));
    CHECK(d && d->cuda_hooks[NS_MECH_BEFORE_BREAKPOINT] && d->cuda_hooks[NS_MECH_AFTER_SOLVE] &&
          d->cuda_hooks[NS_MECH_BEFORE_INITIAL] && d->cuda_hooks[NS_MECH_AFTER_INITIAL] &&
          d->cuda_hooks[NS_MECH_BEFORE_STEP] && !d->cuda_why_not);
    syn_gpu_cpu(lib, cell, "BaSyn", "tau", 2.0, 1.0, "BEFORE/AFTER blocks");
}

/* 9. CtorSyn (tests/data/nmodl_gpu/ctorgpu.mod): a synapse whose CONSTRUCTOR keeps a structure of its
 * own in a POINTER slot, as netrand.inc's (ModelDB 136095), and sets the conductance scale from gmax;
 * the GPU loop runs it on the host before the device's copy, and the DESTRUCTOR on the host over the
 * copy brought back (at each rebuild and at ns_sim_destroy). v against the CPU loop's. */
static void ctorsyn_gpu(ns_mech_library_t *lib, const ns_cell_t *cell) {
    const ns_mech_desc *d = NULL;
    CHECK_OK(ns_mech_library_find(lib, "CtorSyn", &d));
    CHECK_MSG(d && d->cuda_init && d->cuda_net_receive && d->hooks[NS_MECH_CONSTRUCTOR] &&
              !d->cuda_hooks[NS_MECH_CONSTRUCTOR] && d->hooks[NS_MECH_DESTRUCTOR] && !d->cuda_why_not,
              "CtorSyn: %s", d && d->cuda_why_not ? d->cuda_why_not : "");
    syn_gpu_cpu(lib, cell, "CtorSyn", "gmax", 0.002, 0.002, "host CONSTRUCTOR");
}

static int gpu_events(ns_cell_t *cell) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) {
        printf("SKIP: no GPU\n");
        return 77;
    }
    ns_mechanisms_build_options bo = {0};
    bo.nvcc = NS_NVCC;
    bo.cuda_arch = NS_CUDA_ARCH;
    int skip = 0;
    char *dir = tmp("modgpu");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cd %s/events && cp fdsyn.mod intfire1.mod intfire2.mod intfire4.mod "
             "watchcount.mod stdpsyn.mod netstim.mod %s/", dir, MECH_DIR, dir);
    CHECK(system(cmd) == 0);
    static const char vberr[] = "NEURON { ARTIFICIAL_CELL VbErr RANGE terr, n }\nPARAMETER { terr = 5 (ms) }\n"
                                "ASSIGNED { n }\nINITIAL { n = 0 }\nNET_RECEIVE (w) {\nVERBATIM\n    n += 1;\n"
                                "    if (t > terr) hoc_execerror(\"VbErr\", \"event after terr\");\nENDVERBATIM\n}\n";
    snprintf(cmd, sizeof cmd, "%s/vberr.mod", dir);
    FILE *f = fopen(cmd, "w");
    CHECK(f && fputs(vberr, f) >= 0);
    if (f) fclose(f);
    snprintf(cmd, sizeof cmd, "cp %s/nmodl_gpu/ctorgpu.mod %s/", NS_TEST_DATA, dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/basyn.mod", dir);
    f = fopen(cmd, "w");
    CHECK(f && fputs(BASYN, f) >= 0);
    if (f) fclose(f);
    ns_mech_library_t *lib = test_mech_build(dir, "libevents_cuda.so", &bo, &skip);
    if (skip) return 77;
    const ns_mech_desc *d = NULL;
    CHECK_OK(ns_mech_library_find(lib, "FDSyn", &d));
    CHECK(d && d->cuda_net_receive && d->cuda_net_init && !d->cuda_why_not);
    CHECK_OK(ns_mech_library_find(lib, "IntFire2", &d));
    CHECK(d && d->cuda_net_receive && d->cuda_init && !d->cuda_why_not);
    CHECK_OK(ns_mech_library_find(lib, "WatchCount", &d));
    CHECK(d && d->cuda_net_receive && !d->cuda_why_not);
    CHECK_OK(ns_mech_library_find(lib, "NetStim", &d)); /* VERBATIM C only where hoc calls: device code */
    CHECK(d && d->cuda_net_receive && d->cuda_init && !d->cuda_why_not);
    CHECK_OK(ns_mech_library_find(lib, "VbErr", &d)); /* hoc_execerror in a point process: device C */
    CHECK_MSG(d && d->cuda_net_receive && !d->cuda_why_not, "VbErr: %s", d && d->cuda_why_not ? d->cuda_why_not : "");
    if (lib) netstim_gpu(lib, cell);
    if (lib) vberr_run(lib, cell, NS_BACKEND_CPU);
    if (lib) vberr_run(lib, cell, NS_BACKEND_CUDA);
    if (lib) basyn_gpu(lib, cell);
    if (lib) ctorsyn_gpu(lib, cell);
    if (lib) {
        static fd_out cpu, gpu;
        fdsyn_cpu(lib, cell, &cpu);
        fdsyn_run(lib, cell, NS_BACKEND_CUDA, &gpu);
        double worst_art = 0.0, worst_t = 0.0, worst_v = 0.0;
        for (int c = 0; c < COPIES; ++c)
            for (int k = 0; k < 5; ++k) {
                CHECK_MSG(gpu.n[c][k] == cpu.n[c][k], "copy %d, source %d: %lld spikes on the GPU, %lld on the CPU", c,
                          k, (long long)gpu.n[c][k], (long long)cpu.n[c][k]);
                for (int64_t j = 0; j < cpu.n[c][k] && j < gpu.n[c][k] && j < MAXS; ++j) {
                    const double dt_ = fabs(gpu.t[c][k][j] - cpu.t[c][k][j]);
                    if (k < 3) worst_art = fmax(worst_art, dt_);
                    else worst_t = fmax(worst_t, dt_);
                }
            }
        for (int64_t k = 0; cpu.trace && gpu.trace && k < cpu.samples * COPIES; ++k)
            worst_v = fmax(worst_v, fabs(gpu.trace[k] - cpu.trace[k]));
        CHECK(cpu.trace && gpu.trace);
        printf("events network, GPU against CPU: artificial cells' spikes %.3e ms, the cells' %.3e ms, v %.3e mV at "
               "most\n", worst_art, worst_t, worst_v);
        CHECK_MSG(worst_art <= 1e-9 && worst_t <= 1e-6 && worst_v <= 1e-6, "GPU against CPU: %g ms, %g ms, %g mV",
                  worst_art, worst_t, worst_v);
        free(cpu.trace);
        free(gpu.trace);
        gpu_refuses(lib, cell);
    }
    ns_mech_library_close(lib);
    return 0;
}
#endif

int main(int argc, char **argv) {
    if (tmpdir_make("ns_sim_events")) return 1;
    if (argc > 1 && !strcmp(argv[1], "cuda")) { /* the GPU variant (5.) */
#ifdef NS_NVCC
        ns_cell_t *cell = test_cylinder();
        const int rc = cell ? gpu_events(cell) : 1;
        ns_cell_destroy(cell);
        tmpdir_remove();
        return rc == 77 ? 77 : check_summary("test_sim_events cuda");
#else
        printf("SKIP: built without CUDA\n");
        tmpdir_remove();
        return 77;
#endif
    }
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(
        MECH_DIR "/events/intfire1.mod " MECH_DIR "/events/intfire2.mod " MECH_DIR "/events/intfire4.mod " MECH_DIR
        "/events/fdsyn.mod " MECH_DIR "/events/watchcount.mod " MECH_DIR
        "/events/stdpsyn.mod " MECH_DIR "/events/netstim.mod", "libevents.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_cell_t *cell = test_cylinder();
    if (lib && cell) {
        descriptors_and_errors(lib, cell);
        gpu_refuses(lib, cell);
        against_neuron(lib, cell);
        netstim_streams(lib, cell);
        static fd_out cpu;
        fdsyn_cpu(lib, cell, &cpu);
        free(cpu.trace);
    }
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_sim_events");
}
